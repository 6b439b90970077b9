/* Check suite for Data-Out and R2T sequencing (targetd/cmd.c, RFC 7143
 * 11.7-11.8 and 7.1.4): solicited bursts and their R2TSN, offsets and
 * TTTs, MaxOutstandingR2T, unsolicited data up to FirstBurstLength,
 * residuals, and what happens to out-of-sequence data. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "tests/check_suites.h"
#include "tests/iscsi_harness.h"

#define F ISCSI_FLAG_FINAL
#define W ISCSI_CMD_WRITE

static struct ih h;
static const uint8_t tur[6];

struct r2t {
	uint32_t itt, ttt, r2tsn, offset, len;
};

static void r2t_of(const struct ih_pdu *p, struct r2t *r)
{
	ck_assert_uint_eq(bhs_opcode(p->bhs), ISCSI_OP_R2T);
	r->itt = bhs_itt(p->bhs);
	r->ttt = get_be32(p->bhs + 20);
	r->r2tsn = get_be32(p->bhs + 36);
	r->offset = get_be32(p->bhs + 40);
	r->len = get_be32(p->bhs + 44);
}

/* The R2Ts ci sent before the answer to a ping (at most max). */
static unsigned r2ts_before_ping(unsigned ci, struct r2t *out, unsigned max)
{
	uint32_t ping = ih_ping(&h, ci);
	struct ih_pdu p;
	unsigned n = 0;

	ih_run(&h);
	while (ih_next(&h, ci, &p)) {
		if (bhs_opcode(p.bhs) == ISCSI_OP_NOP_IN && bhs_itt(p.bhs) == ping)
			return n;
		ck_assert_msg(bhs_opcode(p.bhs) == ISCSI_OP_R2T, "unexpected opcode %#x", bhs_opcode(p.bhs));
		ck_assert_uint_lt(n, max);
		r2t_of(&p, &out[n++]);
	}
	ck_abort_msg("no answer to the ping");
	return 0;
}

static void data_out(unsigned ci, uint32_t itt, uint32_t ttt, uint32_t datasn, uint32_t off,
		     const uint8_t *data, uint32_t len, bool final)
{
	uint8_t b[ISCSI_BHS_LEN];

	ih_bhs_data_out(b, itt, ttt, datasn, off, final, 0);
	ih_send(&h, ci, b, data, len);
}

static void expect_status(unsigned ci, uint32_t itt, uint8_t status, struct ih_pdu *out)
{
	struct ih_pdu p;

	ih_expect(&h, ci, itt, ISCSI_OP_SCSI_RSP, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(ih_status(&p), status);
	if (out)
		*out = p;
}

static uint8_t *pattern(uint32_t len, uint8_t seed)
{
	uint8_t *d = malloc(len);

	ck_assert_ptr_nonnull(d);
	for (uint32_t i = 0; i < len; i++)
		d[i] = (uint8_t)(seed + i * 13 + (i >> 9));
	return d;
}

/* InitialR2T=Yes, MaxBurstLength 4096, MaxOutstandingR2T 2: a 16 KiB
 * WRITE is solicited as four bursts, two at a time, in order. */
START_TEST(test_r2t_bursts)
{
	struct ih_opts o = { .initial_r2t = true, .no_immediate_data = true, .max_burst = 4096,
			     .first_burst = 4096, .max_r2t = 2 };
	uint8_t cdb[10];
	uint8_t *d = pattern(16384, 1);
	struct r2t r[8];
	uint32_t itt;

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 64, 32);
	itt = ih_cmd(&h, 0, cdb, 10, F | W | 1, 16384, 0, NULL, 0);
	ck_assert_uint_eq(r2ts_before_ping(0, r, 8), 2);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_uint_eq(r[i].itt, itt);
		ck_assert_uint_eq(r[i].r2tsn, i);
		ck_assert_uint_eq(r[i].offset, 4096 * i);
		ck_assert_uint_eq(r[i].len, 4096);
		ck_assert_uint_ne(r[i].ttt, ISCSI_RSVD_TAG);
	}
	ck_assert_uint_ne(r[0].ttt, r[1].ttt);
	/* burst 0 in two PDUs (DataSN 0, 1): the third R2T follows */
	data_out(0, itt, r[0].ttt, 0, 0, d, 2048, false);
	ck_assert_uint_eq(r2ts_before_ping(0, r + 2, 6), 0);
	data_out(0, itt, r[0].ttt, 1, 2048, d + 2048, 2048, true);
	ck_assert_uint_eq(r2ts_before_ping(0, r + 2, 6), 1);
	ck_assert_uint_eq(r[2].r2tsn, 2);
	ck_assert_uint_eq(r[2].offset, 8192);
	data_out(0, itt, r[1].ttt, 0, 4096, d + 4096, 4096, true);
	ck_assert_uint_eq(r2ts_before_ping(0, r + 3, 5), 1);
	ck_assert_uint_eq(r[3].r2tsn, 3);
	ck_assert_uint_eq(r[3].offset, 12288);
	ck_assert_uint_ne(r[2].ttt, r[3].ttt);
	data_out(0, itt, r[2].ttt, 0, 8192, d + 8192, 4096, true);
	data_out(0, itt, r[3].ttt, 0, 12288, d + 12288, 4096, true);
	expect_status(0, itt, SAM_STAT_GOOD, NULL);
	ck_assert_mem_eq(h.mem->mem_base + 64 * 512, d, 16384);
	free(d);
	ih_stop(&h);
}
END_TEST

/* InitialR2T=No: immediate data plus unsolicited Data-Out up to
 * FirstBurstLength, then R2Ts for the rest (none before the unsolicited
 * burst is over). */
START_TEST(test_unsolicited_then_r2t)
{
	struct ih_opts o = { .first_burst = 1024, .max_burst = 4096 };
	uint8_t cdb[10];
	uint8_t *d = pattern(4096, 7);
	struct r2t r[4];
	uint32_t itt;

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 100, 8);
	itt = ih_cmd(&h, 0, cdb, 10, W | 1, 4096, 0, d, 512);    /* F=0: unsolicited Data-Out follows */
	ck_assert_uint_eq(r2ts_before_ping(0, r, 4), 0);
	data_out(0, itt, ISCSI_RSVD_TAG, 0, 512, d + 512, 512, true);
	ck_assert_uint_eq(r2ts_before_ping(0, r, 4), 1);
	ck_assert_uint_eq(r[0].offset, 1024);
	ck_assert_uint_eq(r[0].len, 3072);
	ck_assert_uint_eq(r[0].r2tsn, 0);
	data_out(0, itt, r[0].ttt, 0, 1024, d + 1024, 3072, true);
	expect_status(0, itt, SAM_STAT_GOOD, NULL);
	ck_assert_mem_eq(h.mem->mem_base + 100 * 512, d, 4096);
	free(d);
	ih_stop(&h);
}
END_TEST

/* With F=1 and no immediate data nothing is unsolicited: R2T at once. */
START_TEST(test_final_means_no_unsolicited)
{
	struct ih_opts o = { .first_burst = 65536 };
	uint8_t cdb[10];
	struct r2t r[4];

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 0, 2);
	ih_cmd(&h, 0, cdb, 10, F | W | 1, 1024, 0, NULL, 0);
	ck_assert_uint_eq(r2ts_before_ping(0, r, 4), 1);
	ck_assert_uint_eq(r[0].offset, 0);
	ck_assert_uint_eq(r[0].len, 1024);
	ih_stop(&h);
}
END_TEST

/* RFC 7143 7.1.4.1 at ERL 0: Data-Out with the wrong DataSN or offset
 * ends the command with ABORTED COMMAND (4B/00, DATA PHASE ERROR); the
 * connection goes on; the rest of that command's data is dropped. */
START_TEST(test_dataout_out_of_sequence)
{
	struct ih_opts o = { .initial_r2t = true };
	uint8_t cdb[10], key, asc, ascq;
	uint8_t *d = pattern(1024, 3);
	struct ih_pdu p;
	struct r2t r[2];
	uint32_t itt, t, ping;
	unsigned n;
	uint8_t ops[8];

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 200, 2);
	itt = ih_cmd(&h, 0, cdb, 10, F | W | 1, 1024, 0, NULL, 0);
	ck_assert_uint_eq(r2ts_before_ping(0, r, 2), 1);
	if (_i == 0)
		data_out(0, itt, r[0].ttt, 1, 0, d, 512, false);         /* DataSN 1, want 0 */
	else
		data_out(0, itt, r[0].ttt, 0, 512, d, 512, false);       /* offset 512, want 0 */
	expect_status(0, itt, SAM_STAT_CHECK_CONDITION, &p);
	ih_sense(&p, &key, &asc, &ascq);
	ck_assert_uint_eq(key, SK_ABORTED_COMMAND);
	ck_assert_uint_eq(asc, 0x4b);
	ck_assert_uint_eq(ascq, 0);
	/* the rest of its data is dropped without a word */
	data_out(0, itt, r[0].ttt, 1, 512, d + 512, 512, true);
	ping = ih_ping(&h, 0);
	ih_expect(&h, 0, ping, ISCSI_OP_NOP_IN, NULL, NULL, ops, 8, &n);
	ck_assert_uint_eq(n, 0);
	t = ih_cmd(&h, 0, tur, 6, F | 1, 0, 0, NULL, 0);
	expect_status(0, t, SAM_STAT_GOOD, NULL);
	ck_assert_uint_eq(h.mem->mem_base[200 * 512], 0);   /* nothing written */
	free(d);
	ih_stop(&h);
}
END_TEST

/* A Target Transfer Tag the target never gave: Reject, connection ends. */
START_TEST(test_dataout_unknown_ttt)
{
	struct ih_opts o = { .initial_r2t = true };
	uint8_t cdb[10], d[512] = { 0 };
	struct ih_pdu p;
	struct r2t r[2];
	uint32_t itt;

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 0, 1);
	itt = ih_cmd(&h, 0, cdb, 10, F | W | 1, 512, 0, NULL, 0);
	ck_assert_uint_eq(r2ts_before_ping(0, r, 2), 1);
	data_out(0, itt, r[0].ttt ^ 0x00ff0000u, 0, 0, d, 512, true);
	ih_run(&h);
	ck_assert(ih_next(&h, 0, &p));
	ck_assert_uint_eq(bhs_opcode(p.bhs), ISCSI_OP_REJECT);
	ck_assert_uint_eq(p.bhs[2], ISCSI_REJECT_INVALID_FIELD);
	ck_assert(ih_closed(&h, 0));
	ih_stop(&h);
}
END_TEST

/* InitialR2T=Yes forbids unsolicited Data-Out: protocol error. */
START_TEST(test_dataout_unsolicited_forbidden)
{
	struct ih_opts o = { .initial_r2t = true };
	uint8_t cdb[10], d[512] = { 0 };
	struct ih_pdu p;
	uint32_t itt;

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 0, 1);
	itt = ih_cmd(&h, 0, cdb, 10, W | 1, 512, 0, NULL, 0);
	data_out(0, itt, ISCSI_RSVD_TAG, 0, 0, d, 512, true);
	ih_run(&h);
	ck_assert(ih_next(&h, 0, &p));
	if (bhs_opcode(p.bhs) == ISCSI_OP_R2T)
		ck_assert(ih_next(&h, 0, &p));
	ck_assert_uint_eq(bhs_opcode(p.bhs), ISCSI_OP_REJECT);
	ck_assert_uint_eq(p.bhs[2], ISCSI_REJECT_PROTOCOL_ERROR);
	ck_assert(ih_closed(&h, 0));
	ih_stop(&h);
}
END_TEST

/* A Data-Out PDU longer than MaxRecvDataSegmentLength ends the connection. */
START_TEST(test_dataout_too_long)
{
	struct ih_opts o = { .initial_r2t = true };
	uint8_t cdb[10], b[ISCSI_BHS_LEN];
	struct r2t r[2];
	uint32_t itt;

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 0, 32);
	itt = ih_cmd(&h, 0, cdb, 10, F | W | 1, 16384, 0, NULL, 0);
	ck_assert_uint_eq(r2ts_before_ping(0, r, 2), 1);
	ih_bhs_data_out(b, itt, r[0].ttt, 0, 0, true, 0);
	put_be24(b + 5, 8192 + 4);
	ih_feed(&h, 0, b, sizeof(b), 0);
	ck_assert(ih_closed(&h, 0));
	ih_stop(&h);
}
END_TEST

/* EDTL shorter than the CDB's transfer: a plain WRITE writes the whole
 * blocks sent and reports the overflow; EDTL longer: underflow. */
START_TEST(test_dataout_residuals)
{
	struct ih_opts o = { 0 };
	uint8_t cdb[10];
	uint8_t *d = pattern(1024, 9);
	struct ih_pdu p;
	uint32_t itt;

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 300, 2);
	itt = ih_cmd(&h, 0, cdb, 10, F | W | 1, 512, 0, d, 512);
	expect_status(0, itt, SAM_STAT_GOOD, &p);
	ck_assert_uint_eq(p.bhs[1] & (ISCSI_FLAG_OVERFLOW | ISCSI_FLAG_UNDERFLOW), ISCSI_FLAG_OVERFLOW);
	ck_assert_uint_eq(get_be32(p.bhs + 44), 512);
	ck_assert_mem_eq(h.mem->mem_base + 300 * 512, d, 512);
	ck_assert_uint_eq(h.mem->mem_base[301 * 512], 0);

	ih_cdb_rw10(cdb, true, 310, 1);
	itt = ih_cmd(&h, 0, cdb, 10, F | W | 1, 1024, 0, d, 512);
	expect_status(0, itt, SAM_STAT_GOOD, &p);
	ck_assert_uint_eq(p.bhs[1] & (ISCSI_FLAG_OVERFLOW | ISCSI_FLAG_UNDERFLOW), ISCSI_FLAG_UNDERFLOW);
	ck_assert_uint_eq(get_be32(p.bhs + 44), 512);
	free(d);
	ih_stop(&h);
}
END_TEST

/* Collecting data does not wait for CmdSN order: a WRITE held behind a
 * hole gets its R2T and its data, and runs when the hole closes. */
START_TEST(test_dataout_behind_hole)
{
	struct ih_opts o = { .conns = 2, .initial_r2t = true };
	uint8_t cdb[10], b[ISCSI_BHS_LEN];
	uint8_t *d = pattern(1024, 5);
	struct r2t r[2];
	uint32_t itt, t1;
	uint8_t ops[8];
	unsigned n;

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 400, 2);
	itt = ih_bhs_cmd(&h, b, 2, cdb, 10, F | W | 1, 1024, 0);
	ih_send(&h, 1, b, NULL, 0);
	ck_assert_uint_eq(r2ts_before_ping(1, r, 2), 1);
	data_out(1, itt, r[0].ttt, 0, 0, d, 1024, true);
	ih_expect(&h, 1, ih_ping(&h, 1), ISCSI_OP_NOP_IN, NULL, NULL, ops, 8, &n);
	ck_assert_uint_eq(n, 0);                               /* not run: CmdSN 1 missing */
	ck_assert_uint_eq(h.mem->mem_base[400 * 512], 0);
	t1 = ih_bhs_cmd(&h, b, 1, tur, 6, F | 1, 0, 0);
	ih_send(&h, 0, b, NULL, 0);
	expect_status(0, t1, SAM_STAT_GOOD, NULL);
	expect_status(1, itt, SAM_STAT_GOOD, NULL);
	ck_assert_mem_eq(h.mem->mem_base + 400 * 512, d, 1024);
	free(d);
	ih_stop(&h);
}
END_TEST

/* Data that comes before its R2T was even laid out (the initiator
 * guessed the TTT) completes a WRITE that must still wait (behind a CmdSN
 * hole): the R2T it no longer needs is not sent, and nothing is answered
 * before the WRITE has run. */
START_TEST(test_dataout_early_data_behind_hole)
{
	struct ih_opts o = { .conns = 2, .initial_r2t = true };
	uint8_t cdb[10], b[ISCSI_BHS_LEN], pdu[2 * (ISCSI_BHS_LEN + 512)];
	uint8_t *d = pattern(512, 11);
	uint32_t itt, t1, ping;
	uint8_t ops[8];
	unsigned n;
	size_t len;

	ih_start(&h, &o);
	ih_cdb_rw10(cdb, true, 500, 1);
	itt = ih_bhs_cmd(&h, b, 2, cdb, 10, F | W | 1, 512, 0);
	len = ih_build(&h, pdu, b, NULL, 0, NULL, 0);
	/* the first task of the session has index 0: its first TTT is 1 << 16 */
	ih_bhs_data_out(b, itt, 1u << 16, 0, 0, true, 0);
	len += ih_build(&h, pdu + len, b, NULL, 0, d, 512);
	ih_feed(&h, 1, pdu, len, 0);                          /* both read before any flush */
	ping = ih_ping(&h, 1);
	ih_expect(&h, 1, ping, ISCSI_OP_NOP_IN, NULL, NULL, ops, 8, &n);
	ck_assert_msg(n == 0, "%u PDUs before the ping's answer, the first opcode %#x", n, ops[0]);
	t1 = ih_bhs_cmd(&h, b, 1, tur, 6, F | 1, 0, 0);
	ih_send(&h, 0, b, NULL, 0);
	expect_status(0, t1, SAM_STAT_GOOD, NULL);
	expect_status(1, itt, SAM_STAT_GOOD, NULL);
	ck_assert_mem_eq(h.mem->mem_base + 500 * 512, d, 512);
	free(d);
	ih_stop(&h);
}
END_TEST

Suite *iscsi_dataout_suite(void)
{
	Suite *s = suite_create("iscsi_dataout");
	TCase *tc = tcase_create("dataout");

	tcase_add_test(tc, test_r2t_bursts);
	tcase_add_test(tc, test_unsolicited_then_r2t);
	tcase_add_test(tc, test_final_means_no_unsolicited);
	tcase_add_loop_test(tc, test_dataout_out_of_sequence, 0, 2);   /* DataSN, offset */
	tcase_add_test(tc, test_dataout_unknown_ttt);
	tcase_add_test(tc, test_dataout_unsolicited_forbidden);
	tcase_add_test(tc, test_dataout_too_long);
	tcase_add_test(tc, test_dataout_residuals);
	tcase_add_test(tc, test_dataout_behind_hole);
	tcase_add_test(tc, test_dataout_early_data_behind_hole);
	suite_add_tcase(s, tc);
	return s;
}
