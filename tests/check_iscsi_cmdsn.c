/* Check suite for CmdSN order and the start gate (targetd/cmdsn.c), and
 * the task attributes as the transport applies them: one session with two
 * connections (tests/iscsi_harness.c); LUN 1's backstore holds requests
 * until the test releases them. */
#include "config.h"
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <stdatomic.h>
#include <string.h>
#include "backstore/io_engine.h"
#include "tests/check_suites.h"
#include "tests/iscsi_harness.h"

static const uint8_t tur[6];
#define F ISCSI_FLAG_FINAL

static struct ih h;

/* A non-immediate command with an explicit CmdSN on ci. */
static uint32_t cmd_at(unsigned ci, uint32_t cmdsn, const uint8_t *cdb, unsigned len, uint8_t flags,
		       uint32_t edtl, uint16_t lun, const void *data, uint32_t dlen)
{
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t itt = ih_bhs_cmd(&h, b, cmdsn, cdb, len, flags, edtl, lun);

	ih_send(&h, ci, b, data, dlen);
	return itt;
}

/* The SCSI Responses ci sent before the answer to a ping. */
static unsigned answered_before_ping(unsigned ci, uint32_t *itts, unsigned max)
{
	uint8_t ops[32];
	uint32_t all[32];
	unsigned n, k = 0;

	ih_expect(&h, ci, ih_ping(&h, ci), ISCSI_OP_NOP_IN, NULL, all, ops, 32, &n);
	for (unsigned i = 0; i < n; i++)
		if (ops[i] == ISCSI_OP_SCSI_RSP && k < max)
			itts[k++] = all[i];
	return k;
}

static uint8_t status_of(unsigned ci, uint32_t itt)
{
	struct ih_pdu p;

	ih_expect(&h, ci, itt, ISCSI_OP_SCSI_RSP, &p, NULL, NULL, 0, NULL);
	return ih_status(&p);
}

static void setup2(void)
{
	struct ih_opts o = { .conns = 2, .queue_depth = 8 };

	ih_start(&h, &o);
}

static void teardown(void)
{
	ih_stop(&h);
}

/* RFC 7143 4.2.2.1: a command ahead of a hole waits; the hole closing on
 * the other connection delivers both, in CmdSN order. */
START_TEST(test_cmdsn_hole)
{
	uint32_t got[4];
	uint32_t late = cmd_at(1, 2, tur, 6, F | 1, 0, 0, NULL, 0);

	ck_assert_uint_eq(answered_before_ping(1, got, 4), 0);
	ck_assert_uint_eq(h.s->exp_cmdsn, 1);
	ck_assert_uint_eq(h.s->cmdsn.held, 1);
	uint32_t first = cmd_at(0, 1, tur, 6, F | 1, 0, 0, NULL, 0);
	ck_assert_uint_eq(status_of(0, first), SAM_STAT_GOOD);
	ck_assert_uint_eq(status_of(1, late), SAM_STAT_GOOD);
	ck_assert_uint_eq(h.s->exp_cmdsn, 3);
	ck_assert_uint_eq(h.s->cmdsn.held, 0);
}
END_TEST

/* Several held commands go out in CmdSN order, whatever order they came. */
START_TEST(test_cmdsn_reverse_arrival)
{
	uint8_t cdb[10];
	uint8_t data[512];
	uint32_t itt[6];

	/* CmdSN 6..2 on connection 1 (each WRITE is ORDERED: the data left
	 * is that of the highest CmdSN only if they ran in CmdSN order) */
	for (uint32_t sn = 6; sn >= 2; sn--) {
		memset(data, (int)sn, sizeof(data));
		ih_cdb_rw10(cdb, true, 7, 1);
		itt[sn - 1] = cmd_at(1, sn, cdb, 10, F | ISCSI_CMD_WRITE | 2, 512, 0, data, 512);
	}
	ck_assert_uint_eq(h.s->cmdsn.held, 5);
	memset(data, 1, sizeof(data));
	itt[0] = cmd_at(0, 1, cdb, 10, F | ISCSI_CMD_WRITE | 2, 512, 0, data, 512);
	ck_assert_uint_eq(status_of(0, itt[0]), SAM_STAT_GOOD);
	for (int i = 1; i < 6; i++)
		ck_assert_uint_eq(status_of(1, itt[i]), SAM_STAT_GOOD);
	ck_assert_uint_eq(h.s->exp_cmdsn, 7);
	ck_assert_uint_eq(h.mem->mem_base[7 * 512], 6);
	ck_assert_uint_eq(h.mem->mem_base[8 * 512 - 1], 6);
}
END_TEST

/* The window: ExpCmdSN to the highest MaxCmdSN advertised; a CmdSN
 * already received (held or marked) is not taken twice. */
START_TEST(test_cmdsn_window)
{
	struct iscsi_session *s = h.s;
	uint32_t max = iscsi_session_max_cmdsn(s);

	ck_assert_uint_eq(max, 8);                       /* queue depth 8 */
	ck_assert(!iscsi_cmdsn_acceptable(s, 0));
	ck_assert(iscsi_cmdsn_acceptable(s, 1));
	ck_assert(iscsi_cmdsn_acceptable(s, 8));
	ck_assert(!iscsi_cmdsn_acceptable(s, 9));
	ck_assert(!iscsi_cmdsn_acceptable(s, 0x80000001u));
	cmd_at(1, 3, tur, 6, F | 1, 0, 0, NULL, 0);       /* held */
	iscsi_cmdsn_received(s, 4);                             /* marked */
	ck_assert(!iscsi_cmdsn_acceptable(s, 3));
	ck_assert(!iscsi_cmdsn_acceptable(s, 4));
	ck_assert(iscsi_cmdsn_acceptable(s, 2));
	/* The held task uses a slot: the window the target would advertise
	 * now is smaller, but the initiator may still use what it was told. */
	ck_assert_uint_eq(iscsi_session_max_cmdsn(s), 7);
	ck_assert(iscsi_cmdsn_acceptable(s, 8));
	ck_assert(!iscsi_cmdsn_acceptable(s, 9));
	/* A command outside the window is ignored altogether. */
	uint32_t far = cmd_at(0, 9, tur, 6, F | 1, 0, 0, NULL, 0);
	uint32_t got[4];
	ck_assert_uint_eq(answered_before_ping(0, got, 4), 0);
	(void)far;
	iscsi_cmdsn_received(s, 1);
	iscsi_cmdsn_received(s, 2);                             /* hole closed: 3 runs, 4 passes */
	ih_run(&h);
	ck_assert_uint_eq(s->exp_cmdsn, 5);
}
END_TEST

/* Non-immediate NOP-Out (acted on at once) ahead of a hole: its CmdSN is
 * received, and ExpCmdSN passes it when the hole closes. */
START_TEST(test_cmdsn_nop_mark)
{
	uint8_t b[ISCSI_BHS_LEN];
	struct ih_pdu p;
	uint32_t nop = ih_bhs_nop(&h, b, 2, false);

	ih_send(&h, 1, b, NULL, 0);
	ih_expect(&h, 1, nop, ISCSI_OP_NOP_IN, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(get_be32(p.bhs + 28), 1);        /* ExpCmdSN at the hole */
	uint32_t t3 = cmd_at(1, 3, tur, 6, F | 1, 0, 0, NULL, 0);
	uint32_t t1 = cmd_at(0, 1, tur, 6, F | 1, 0, 0, NULL, 0);
	ck_assert_uint_eq(status_of(0, t1), SAM_STAT_GOOD);
	ih_expect(&h, 1, t3, ISCSI_OP_SCSI_RSP, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(get_be32(p.bhs + 28), 4);
}
END_TEST

/* A held command whose connection ends is freed with it (ERL 0), and its
 * CmdSN stays received: the hole closing moves ExpCmdSN past it. */
START_TEST(test_cmdsn_held_conn_closes)
{
	cmd_at(1, 2, tur, 6, F | 1, 0, 0, NULL, 0);
	ih_run(&h);
	ck_assert_uint_eq(h.s->cmdsn.held, 1);
	iscsi_conn_close(h.p[1].c, "test: connection lost");
	ih_run(&h);
	ck_assert(ih_closed(&h, 1));
	ck_assert_uint_eq(h.s->cmdsn.held, 1);            /* still received */
	uint32_t t1 = cmd_at(0, 1, tur, 6, F | 1, 0, 0, NULL, 0);
	ck_assert_uint_eq(status_of(0, t1), SAM_STAT_GOOD);
	ck_assert_uint_eq(h.s->exp_cmdsn, 3);
	ck_assert_uint_eq(h.s->cmdsn.held, 0);
	uint32_t t3 = cmd_at(0, 3, tur, 6, F | 1, 0, 0, NULL, 0);
	ck_assert_uint_eq(status_of(0, t3), SAM_STAT_GOOD);
}
END_TEST

/* Immediate commands do not wait for the hole. */
START_TEST(test_cmdsn_immediate_bypass)
{
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t got[4];
	uint32_t held = cmd_at(1, 2, tur, 6, F | 1, 0, 0, NULL, 0);
	uint32_t imm = ih_bhs_cmd(&h, b, 1, tur, 6, F | 1, 0, 0);

	b[0] |= ISCSI_FLAG_IMMEDIATE;
	ih_send(&h, 1, b, NULL, 0);
	ck_assert_uint_eq(answered_before_ping(1, got, 4), 1);
	ck_assert_uint_eq(got[0], imm);
	ck_assert_uint_eq(h.s->exp_cmdsn, 1);
	cmd_at(0, 1, tur, 6, F | 1, 0, 0, NULL, 0);
	ck_assert_uint_eq(status_of(1, held), SAM_STAT_GOOD);
}
END_TEST

/* Serial number arithmetic across 2^32. */
START_TEST(test_cmdsn_wrap)
{
	uint32_t a, b, c;

	h.s->exp_cmdsn = 0xfffffffeu;
	b = cmd_at(1, 0xffffffffu, tur, 6, F | 1, 0, 0, NULL, 0);
	c = cmd_at(1, 0, tur, 6, F | 1, 0, 0, NULL, 0);
	ih_run(&h);
	ck_assert_uint_eq(h.s->cmdsn.held, 2);
	a = cmd_at(0, 0xfffffffeu, tur, 6, F | 1, 0, 0, NULL, 0);
	ck_assert_uint_eq(status_of(0, a), SAM_STAT_GOOD);
	ck_assert_uint_eq(status_of(1, b), SAM_STAT_GOOD);
	ck_assert_uint_eq(status_of(1, c), SAM_STAT_GOOD);
	ck_assert_uint_eq(h.s->exp_cmdsn, 1);
}
END_TEST

/* A command that ends while its PDU is still arriving (ABORT TASK from
 * the other connection in the middle of its immediate data) leaves no
 * hole: its CmdSN counts as received. */
START_TEST(test_cmdsn_abort_mid_pdu)
{
	uint8_t b[ISCSI_BHS_LEN], cdb[10], data[4096], pdu[ISCSI_BHS_LEN + 4096];
	uint32_t itt, tmf, t2;
	struct ih_pdu p;

	memset(data, 0xee, sizeof(data));
	ih_cdb_rw10(cdb, true, 60, 8);
	itt = ih_bhs_cmd(&h, b, 1, cdb, 10, F | ISCSI_CMD_WRITE | 1, 4096, 0);
	ih_build(&h, pdu, b, NULL, 0, data, 4096);
	ih_feed(&h, 1, pdu, ISCSI_BHS_LEN + 1000, 0);     /* header and a quarter of the data */
	ck_assert_uint_eq(h.s->exp_cmdsn, 1);
	tmf = ih_bhs_tmf(&h, b, ISCSI_TMF_ABORT_TASK, 2, 0, itt, 1);
	ih_send(&h, 0, b, NULL, 0);
	ih_expect(&h, 0, tmf, ISCSI_OP_TMF_RSP, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(p.bhs[2], ISCSI_TMF_RSP_COMPLETE);
	ck_assert_uint_eq(h.s->exp_cmdsn, 2);
	ih_feed(&h, 1, pdu + ISCSI_BHS_LEN + 1000, 4096 - 1000, 0);   /* the rest goes nowhere */
	t2 = cmd_at(0, 2, tur, 6, F | 1, 0, 0, NULL, 0);
	ck_assert_uint_eq(status_of(0, t2), SAM_STAT_GOOD);
	ck_assert_uint_eq(h.mem->mem_base[60 * 512], 0);
}
END_TEST

/* ---- task attributes through the transport (LUN 1 holds requests) ---- */

static uint32_t write_lun1(uint8_t attr, uint32_t lba, uint8_t fill)
{
	uint8_t cdb[10], data[512];

	memset(data, fill, sizeof(data));
	ih_cdb_rw10(cdb, true, lba, 1);
	return ih_cmd(&h, 0, cdb, 10, F | ISCSI_CMD_WRITE | attr, 512, 1, data, 512);
}

/* SIMPLE commands overlap: both writes are in the backstore at once. */
START_TEST(test_attr_simple_overlap)
{
	uint32_t a = write_lun1(1, 3, 0xa1), b = write_lun1(1, 3, 0xb2);

	ih_run(&h);
	ck_assert_uint_eq(ih_held(&h), 2);
	ih_release(&h, 2);
	ck_assert_uint_eq(status_of(0, a), SAM_STAT_GOOD);
	ck_assert_uint_eq(status_of(0, b), SAM_STAT_GOOD);
}
END_TEST

/* ORDERED waits for the SIMPLE command in the backstore; the SIMPLE one
 * after it waits for it; HEAD OF QUEUE passes both. */
START_TEST(test_attr_ordered_hoq)
{
	uint32_t got[8];
	uint32_t s1 = write_lun1(1, 5, 0x11);
	uint32_t o2 = write_lun1(2, 5, 0x22);
	uint32_t s3 = ih_cmd(&h, 0, tur, 6, F | 1, 0, 1, NULL, 0);
	uint32_t hq = ih_cmd(&h, 0, tur, 6, F | 3, 0, 1, NULL, 0);

	ck_assert_uint_eq(answered_before_ping(0, got, 8), 1);
	ck_assert_uint_eq(got[0], hq);
	ck_assert_uint_eq(ih_held(&h), 1);                /* only s1 reached the backstore */
	ih_release(&h, 1);
	ck_assert_uint_eq(status_of(0, s1), SAM_STAT_GOOD);
	ih_run(&h);
	ck_assert_uint_eq(ih_held(&h), 1);                /* now o2 */
	ck_assert_uint_eq(answered_before_ping(0, got, 8), 0);   /* s3 still waits */
	ih_release(&h, 1);
	ck_assert_uint_eq(status_of(0, o2), SAM_STAT_GOOD);
	ck_assert_uint_eq(status_of(0, s3), SAM_STAT_GOOD);
	ck_assert_uint_eq(h.mem->mem_base[5 * 512], 0x22);
}
END_TEST

/* A task set per LUN: ORDERED on LUN 0 does not wait for LUN 1. */
START_TEST(test_attr_per_lun)
{
	uint32_t s1 = write_lun1(1, 5, 0x11);
	uint32_t o = ih_cmd(&h, 0, tur, 6, F | 2, 0, 0, NULL, 0);

	ck_assert_uint_eq(status_of(0, o), SAM_STAT_GOOD);
	ck_assert_uint_eq(ih_held(&h), 1);
	ih_release(&h, 1);
	ck_assert_uint_eq(status_of(0, s1), SAM_STAT_GOOD);
}
END_TEST

/* ACA: CHECK CONDITION, ILLEGAL REQUEST, INVALID MESSAGE ERROR. */
START_TEST(test_attr_aca)
{
	struct ih_pdu p;
	uint8_t key, asc, ascq;
	uint32_t t = ih_cmd(&h, 0, tur, 6, F | 4, 0, 0, NULL, 0);

	ih_expect(&h, 0, t, ISCSI_OP_SCSI_RSP, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(ih_status(&p), SAM_STAT_CHECK_CONDITION);
	ih_sense(&p, &key, &asc, &ascq);
	ck_assert_uint_eq(key, SK_ILLEGAL_REQUEST);
	ck_assert_uint_eq(asc, 0x49);
	ck_assert_uint_eq(ascq, 0);
}
END_TEST

/* An aborted dormant task never reaches the backstore, and the tasks it
 * held back start after the abort, not inside it. */
START_TEST(test_attr_abort_dormant)
{
	uint8_t b[ISCSI_BHS_LEN];
	struct ih_pdu p;
	uint32_t s1 = write_lun1(1, 9, 0x11);
	uint32_t o2 = write_lun1(2, 9, 0x22);
	uint32_t s3 = write_lun1(1, 9, 0x33);
	uint32_t tmf;

	ih_run(&h);
	ck_assert_uint_eq(ih_held(&h), 1);
	tmf = ih_bhs_tmf(&h, b, ISCSI_TMF_ABORT_TASK, h.cmdsn, 1, o2, h.cmdsn - 2);
	ih_send(&h, 0, b, NULL, 0);
	ih_expect(&h, 0, tmf, ISCSI_OP_TMF_RSP, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(p.bhs[2], ISCSI_TMF_RSP_COMPLETE);
	/* o2 gone: s3 (SIMPLE) no longer waits, and started after the abort */
	ck_assert_uint_eq(ih_held(&h), 2);
	ih_release(&h, 2);
	ck_assert_uint_eq(status_of(0, s1), SAM_STAT_GOOD);
	ck_assert_uint_eq(status_of(0, s3), SAM_STAT_GOOD);
	ck_assert_uint_eq(h.mem->mem_base[9 * 512], 0x33);
}
END_TEST

/* The connection ends while a run of the queue is pending: the session
 * stays until the run is over (checked by sanitizers and valgrind). */
START_TEST(test_attr_close_while_run_pending)
{
	uint32_t s1 = write_lun1(1, 11, 0x11);

	write_lun1(2, 11, 0x22);
	ih_run(&h);
	(void)s1;
	ih_release(&h, 1);                 /* s1 completes at the next poll */
	io_engine_poll(h.thr.eng);         /* s1 leaves: o2 startable, run posted */
	ck_assert(iscsi_cmdsn_busy(h.s));
	iscsi_conn_close(h.p[0].c, "test: connection lost");
	iscsi_conn_close(h.p[1].c, "test: connection lost");
	ih_run(&h);
	ck_assert_uint_eq(ih_held(&h), 0); /* o2 was freed, never started */
}
END_TEST

#if !defined(NDEBUG) || defined(TARGETD_DEBUG)
/* ASSERT_OWNER (targetd/net.h): a connection's socket event handled on a
 * thread that is not its network thread, or a CmdSN arriving for a session
 * there, aborts the daemon (run in a forked test: SIGABRT expected). */
static void *event_elsewhere(void *arg)
{
	iscsi_conn_event(arg, EPOLLIN);
	return NULL;
}

static void *cmdsn_elsewhere(void *arg)
{
	iscsi_cmdsn_received(arg, 1);
	return NULL;
}

static void run_elsewhere(void *(*fn)(void *), void *arg)
{
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, fn, arg), 0);
	pthread_join(th, NULL);
}

START_TEST(test_owner_conn_event)
{
	run_elsewhere(event_elsewhere, h.p[0].c);
	ck_abort_msg("a connection's event on another thread was let through");
}
END_TEST

START_TEST(test_owner_session)
{
	run_elsewhere(cmdsn_elsewhere, h.p[0].c->sess);
	ck_abort_msg("a session touched by another thread was let through");
}
END_TEST
#endif

Suite *iscsi_cmdsn_suite(void)
{
	Suite *s = suite_create("iscsi_cmdsn");
	TCase *tc = tcase_create("cmdsn");

	tcase_add_checked_fixture(tc, setup2, teardown);
	tcase_add_test(tc, test_cmdsn_hole);
	tcase_add_test(tc, test_cmdsn_reverse_arrival);
	tcase_add_test(tc, test_cmdsn_window);
	tcase_add_test(tc, test_cmdsn_nop_mark);
	tcase_add_test(tc, test_cmdsn_held_conn_closes);
	tcase_add_test(tc, test_cmdsn_immediate_bypass);
	tcase_add_test(tc, test_cmdsn_wrap);
	tcase_add_test(tc, test_cmdsn_abort_mid_pdu);
	suite_add_tcase(s, tc);

	tc = tcase_create("task attributes");
	tcase_add_checked_fixture(tc, setup2, teardown);
	tcase_add_test(tc, test_attr_simple_overlap);
	tcase_add_test(tc, test_attr_ordered_hoq);
	tcase_add_test(tc, test_attr_per_lun);
	tcase_add_test(tc, test_attr_aca);
	tcase_add_test(tc, test_attr_abort_dormant);
	tcase_add_test(tc, test_attr_close_while_run_pending);
	suite_add_tcase(s, tc);

#if !defined(NDEBUG) || defined(TARGETD_DEBUG)
	tc = tcase_create("owner");
	tcase_add_checked_fixture(tc, setup2, teardown);
	tcase_add_test_raise_signal(tc, test_owner_conn_event, SIGABRT);
	tcase_add_test_raise_signal(tc, test_owner_session, SIGABRT);
	suite_add_tcase(s, tc);
#endif
	return s;
}
