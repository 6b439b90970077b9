/* Check suite for task management (targetd/tmf.c, RFC 7143 11.5-11.6,
 * SAM-5 7): ABORT TASK in each state a task can be in, of a task that
 * never arrived and of none; ABORT TASK SET with tasks in the backstore
 * and dormant ones; the functions answered without effect; an abort from
 * another connection while the task's data is half received. LUN 1 holds
 * its backstore requests until the test releases them. */
#include "config.h"
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "tests/check_suites.h"
#include "tests/iscsi_harness.h"

#define F ISCSI_FLAG_FINAL
#define W ISCSI_CMD_WRITE
#define R ISCSI_CMD_READ

static struct ih h;
static const uint8_t tur[6];

static void setup(void)
{
	struct ih_opts o = { .conns = 2, .initial_r2t = true };

	ih_start(&h, &o);
}

static void teardown(void)
{
	ih_stop(&h);
}

/* Send a TMF on ci; returns its ITT. */
static uint32_t tmf(unsigned ci, uint8_t function, uint16_t lun, uint32_t ref_itt, uint32_t ref_cmdsn)
{
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t itt = ih_bhs_tmf(&h, b, function, h.cmdsn, lun, ref_itt, ref_cmdsn);

	ih_send(&h, ci, b, NULL, 0);
	return itt;
}

/* The TMF response's Response field, or -1 if none came before a ping's
 * answer (the TMF still waits for something). */
static int tmf_response(unsigned ci, uint32_t itt)
{
	uint32_t itts[16], ping = ih_ping(&h, ci);
	uint8_t ops[16];
	struct ih_pdu p;

	ih_run(&h);
	while (ih_next(&h, ci, &p)) {
		if (bhs_opcode(p.bhs) == ISCSI_OP_TMF_RSP && bhs_itt(p.bhs) == itt) {
			int r = p.bhs[2];
			unsigned n;
			ih_expect(&h, ci, ping, ISCSI_OP_NOP_IN, NULL, itts, ops, 16, &n);
			return r;
		}
		if (bhs_opcode(p.bhs) == ISCSI_OP_NOP_IN && bhs_itt(p.bhs) == ping)
			return -1;
	}
	ck_abort_msg("no answer to the ping");
	return -1;
}

/* Nothing but the answer to a ping arrives on ci. */
static void expect_silence(unsigned ci)
{
	uint32_t itts[16];
	uint8_t ops[16];
	unsigned n;

	ih_expect(&h, ci, ih_ping(&h, ci), ISCSI_OP_NOP_IN, NULL, itts, ops, 16, &n);
	ck_assert_msg(n == 0, "%u unexpected PDUs, the first opcode %#x ITT %#x", n, ops[0], itts[0]);
}

static uint32_t r2t_ttt(unsigned ci, uint32_t itt)
{
	struct ih_pdu p;

	ih_expect(&h, ci, itt, ISCSI_OP_R2T, &p, NULL, NULL, 0, NULL);
	return get_be32(p.bhs + 20);
}

/* ABORT TASK of a WRITE waiting for its data: answered at once, the WRITE
 * never answered, its Data-Out dropped silently. */
START_TEST(test_abort_task_data_out)
{
	uint8_t cdb[10], b[ISCSI_BHS_LEN], d[512];
	uint32_t itt, ttt, t;

	memset(d, 0x77, sizeof(d));
	ih_cdb_rw10(cdb, true, 20, 1);
	itt = ih_cmd(&h, 0, cdb, 10, F | W | 1, 512, 0, NULL, 0);
	ttt = r2t_ttt(0, itt);
	t = tmf(0, ISCSI_TMF_ABORT_TASK, 0, itt, h.cmdsn - 1);
	ck_assert_int_eq(tmf_response(0, t), ISCSI_TMF_RSP_COMPLETE);
	ih_bhs_data_out(b, itt, ttt, 0, 0, true, 0);
	ih_send(&h, 0, b, d, 512);
	expect_silence(0);
	ck_assert_uint_eq(h.mem->mem_base[20 * 512], 0);
}
END_TEST

/* ABORT TASK of a READ in the backstore: the TMF response waits until the
 * backstore is done with it, and the READ is never answered. */
START_TEST(test_abort_task_exec)
{
	uint8_t cdb[10];
	uint32_t itt, t;

	ih_cdb_rw10(cdb, false, 0, 1);
	itt = ih_cmd(&h, 0, cdb, 10, F | R | 1, 512, 1, NULL, 0);
	ih_run(&h);
	ck_assert_uint_eq(ih_held(&h), 1);
	t = tmf(0, ISCSI_TMF_ABORT_TASK, 1, itt, h.cmdsn - 1);
	ck_assert_int_eq(tmf_response(0, t), -1);
	ih_release(&h, 1);
	ck_assert_int_eq(tmf_response(0, t), ISCSI_TMF_RSP_COMPLETE);
	expect_silence(0);
}
END_TEST

/* ABORT TASK of a task the target never saw and cannot expect. */
START_TEST(test_abort_task_unknown)
{
	uint32_t t = tmf(0, ISCSI_TMF_ABORT_TASK, 0, 0x4242, 0);

	ck_assert_int_eq(tmf_response(0, t), ISCSI_TMF_RSP_NO_TASK);
}
END_TEST

/* RFC 7143 11.5.1 b): ABORT TASK of a command not arrived yet: it counts
 * as received (ExpCmdSN moves) and is dropped when it arrives. */
START_TEST(test_abort_task_not_arrived)
{
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t lost, t;

	lost = ih_bhs_cmd(&h, b, h.cmdsn++, tur, 6, F | 1, 0, 0);
	t = tmf(0, ISCSI_TMF_ABORT_TASK, 0, lost, h.cmdsn - 1);
	ck_assert_int_eq(tmf_response(0, t), ISCSI_TMF_RSP_COMPLETE);
	ck_assert_uint_eq(h.s->exp_cmdsn, h.cmdsn);
	ih_send(&h, 1, b, NULL, 0);                  /* it arrives, late */
	expect_silence(1);
	t = ih_cmd(&h, 1, tur, 6, F | 1, 0, 0, NULL, 0);
	ih_expect(&h, 1, t, ISCSI_OP_SCSI_RSP, NULL, NULL, NULL, 0, NULL);
}
END_TEST

/* ABORT TASK SET on LUN 1: the TMF response waits for the task in the
 * backstore; the dormant ones never start; nothing is answered for any of
 * them; a task on LUN 0 is untouched. */
START_TEST(test_abort_task_set)
{
	uint8_t cdb[10], d[512], b[ISCSI_BHS_LEN];
	uint32_t w0, ttt, t, s1, o2, s3;

	memset(d, 0x5c, sizeof(d));
	ih_cdb_rw10(cdb, true, 30, 1);
	w0 = ih_cmd(&h, 0, cdb, 10, F | W | 1, 512, 0, NULL, 0);     /* LUN 0, waits for data */
	ttt = r2t_ttt(0, w0);
	ih_cdb_rw10(cdb, false, 0, 1);
	s1 = ih_cmd(&h, 0, cdb, 10, F | R | 1, 512, 1, NULL, 0);
	o2 = ih_cmd(&h, 0, cdb, 10, F | R | 2, 512, 1, NULL, 0);
	s3 = ih_cmd(&h, 1, cdb, 10, F | R | 1, 512, 1, NULL, 0);
	ih_run(&h);
	ck_assert_uint_eq(ih_held(&h), 1);
	t = tmf(0, ISCSI_TMF_ABORT_TASK_SET, 1, ISCSI_RSVD_TAG, 0);
	ck_assert_int_eq(tmf_response(0, t), -1);
	ck_assert_uint_eq(ih_held(&h), 1);
	ih_release(&h, 1);
	ck_assert_int_eq(tmf_response(0, t), ISCSI_TMF_RSP_COMPLETE);
	ck_assert_uint_eq(ih_held(&h), 0);
	expect_silence(1);
	(void)s1;
	(void)o2;
	(void)s3;
	ih_bhs_data_out(b, w0, ttt, 0, 0, true, 0);
	ih_send(&h, 0, b, d, 512);
	ih_expect(&h, 0, w0, ISCSI_OP_SCSI_RSP, NULL, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(h.mem->mem_base[30 * 512], 0x5c);
	expect_silence(0);
}
END_TEST

/* CLEAR TASK SET with a task set per I_T nexus (TST 001b): this
 * session's tasks on the LUN go, another initiator's are not touched, so
 * it gets no COMMANDS CLEARED BY ANOTHER INITIATOR unit attention. */
START_TEST(test_clear_task_set)
{
	static struct scsi_nexus other;
	uint8_t cdb[10];
	uint32_t r, t, ua;

	memset(&other, 0, sizeof(other));
	snprintf(other.initiator_port, sizeof(other.initiator_port), "iqn.2026-11.org.targetd.test:other,i,0x1");
	scsi_nexus_attach(&h.tgt.st, &other);
	atomic_store(&other.ua[1], 0);
	ih_cdb_rw10(cdb, false, 0, 1);
	r = ih_cmd(&h, 0, cdb, 10, F | R | 1, 512, 1, NULL, 0);
	ih_run(&h);
	ck_assert_uint_eq(ih_held(&h), 1);
	t = tmf(0, ISCSI_TMF_CLEAR_TASK_SET, 1, ISCSI_RSVD_TAG, 0);
	ih_release(&h, 1);
	ck_assert_int_eq(tmf_response(0, t), ISCSI_TMF_RSP_COMPLETE);
	expect_silence(0);
	ua = atomic_load(&other.ua[1]);
	ck_assert_uint_eq(ua, 0);
	scsi_nexus_detach(&other);
	(void)r;
}
END_TEST

/* Functions answered without an effect. */
START_TEST(test_tmf_answers)
{
	ck_assert_int_eq(tmf_response(0, tmf(0, ISCSI_TMF_LUN_RESET, 5, ISCSI_RSVD_TAG, 0)),
			 ISCSI_TMF_RSP_NO_LUN);
	ck_assert_int_eq(tmf_response(0, tmf(0, ISCSI_TMF_ABORT_TASK_SET, 7, ISCSI_RSVD_TAG, 0)),
			 ISCSI_TMF_RSP_NO_LUN);
	ck_assert_int_eq(tmf_response(0, tmf(0, ISCSI_TMF_TASK_REASSIGN, 0, 1, 0)),
			 ISCSI_TMF_RSP_NO_REASSIGN);
	ck_assert_int_eq(tmf_response(0, tmf(0, ISCSI_TMF_CLEAR_ACA, 0, ISCSI_RSVD_TAG, 0)),
			 ISCSI_TMF_RSP_NOT_SUPPORTED);
	ck_assert_int_eq(tmf_response(0, tmf(0, 0x55, 0, ISCSI_RSVD_TAG, 0)), ISCSI_TMF_RSP_NOT_SUPPORTED);
}
END_TEST

/* LUN RESET with a task in the backstore: the response waits for it. */
START_TEST(test_lun_reset_waits)
{
	uint8_t cdb[10], d[512];
	uint32_t itt, t;

	memset(d, 1, sizeof(d));
	ih_cdb_rw10(cdb, true, 40, 1);
	itt = ih_cmd(&h, 1, cdb, 10, F | W | 1, 512, 1, d, 512);
	ih_run(&h);
	ck_assert_uint_eq(ih_held(&h), 1);
	t = tmf(0, ISCSI_TMF_LUN_RESET, 1, ISCSI_RSVD_TAG, 0);
	ck_assert_int_eq(tmf_response(0, t), -1);
	ih_release(&h, 1);
	ck_assert_int_eq(tmf_response(0, t), ISCSI_TMF_RSP_COMPLETE);
	expect_silence(1);
	(void)itt;
}
END_TEST

/* ABORT TASK from connection 0 while connection 1 is in the middle of
 * the task's Data-Out: the rest of that PDU goes nowhere and connection 1
 * reads on. */
START_TEST(test_abort_mid_data_out)
{
	uint8_t cdb[10], b[ISCSI_BHS_LEN], pdu[ISCSI_BHS_LEN + 1024], d[1024];
	uint32_t itt, ttt, t;
	size_t n;

	memset(d, 0x3c, sizeof(d));
	ih_cdb_rw10(cdb, true, 50, 2);
	itt = ih_cmd(&h, 1, cdb, 10, F | W | 1, 1024, 0, NULL, 0);
	ttt = r2t_ttt(1, itt);
	ih_bhs_data_out(b, itt, ttt, 0, 0, true, 0);
	n = ih_build(&h, pdu, b, NULL, 0, d, sizeof(d));
	ih_feed(&h, 1, pdu, ISCSI_BHS_LEN + 300, 0);
	t = tmf(0, ISCSI_TMF_ABORT_TASK, 0, itt, h.cmdsn - 1);
	ck_assert_int_eq(tmf_response(0, t), ISCSI_TMF_RSP_COMPLETE);
	ih_feed(&h, 1, pdu + ISCSI_BHS_LEN + 300, n - ISCSI_BHS_LEN - 300, 1);
	expect_silence(1);
	ck_assert_uint_eq(h.mem->mem_base[50 * 512], 0);
	t = ih_cmd(&h, 1, tur, 6, F | 1, 0, 0, NULL, 0);
	ih_expect(&h, 1, t, ISCSI_OP_SCSI_RSP, NULL, NULL, NULL, 0, NULL);
}
END_TEST

Suite *iscsi_tmf_suite(void)
{
	Suite *s = suite_create("iscsi_tmf");
	TCase *tc = tcase_create("tmf");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_abort_task_data_out);
	tcase_add_test(tc, test_abort_task_exec);
	tcase_add_test(tc, test_abort_task_unknown);
	tcase_add_test(tc, test_abort_task_not_arrived);
	tcase_add_test(tc, test_abort_task_set);
	tcase_add_test(tc, test_clear_task_set);
	tcase_add_test(tc, test_tmf_answers);
	tcase_add_test(tc, test_lun_reset_waits);
	tcase_add_test(tc, test_abort_mid_data_out);
	suite_add_tcase(s, tc);
	return s;
}
