/* Check suite for the iSCSI PDU helpers, the CmdSN window and the
 * per-thread buffer pool (targetd/pdu.c, session.c, bufpool.c). */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/bufpool.h"
#include "targetd/session.h"
#include "targetd/iscsi_pdu.h"
#include "tests/check_suites.h"

static const struct {
	uint8_t lun[8];
	uint64_t want;
} lun_cases[] = {
	{ { 0x00, 0x00 }, 0 },
	{ { 0x00, 0x05 }, 5 },
	{ { 0x00, 0xff }, 255 },
	{ { 0x40, 0x00 }, 0 },                   /* flat addressing */
	{ { 0x41, 0x23 }, 0x123 },
	{ { 0x7f, 0xff }, 0x3fff },
	{ { 0x01, 0x05 }, UINT64_MAX },          /* peripheral with a bus id */
	{ { 0x80, 0x01 }, UINT64_MAX },          /* logical unit addressing */
	{ { 0xc0, 0x01 }, UINT64_MAX },          /* extended addressing */
	{ { 0x00, 0x01, 0x00, 0x01 }, UINT64_MAX }, /* second level */
	{ { 0x00, 0x01, 0, 0, 0, 0, 0, 1 }, UINT64_MAX },
};

START_TEST(test_lun_decode)
{
	ck_assert_uint_eq(iscsi_lun_decode(lun_cases[_i].lun), lun_cases[_i].want);
}
END_TEST

START_TEST(test_lun_roundtrip)
{
	uint8_t raw[8];

	for (uint64_t l = 0; l < 0x4000; l++) {
		iscsi_lun_encode(raw, l);
		ck_assert_uint_eq(iscsi_lun_decode(raw), l);
		if (l < 256)
			ck_assert_uint_eq(raw[0], 0);   /* peripheral addressing */
		else
			ck_assert_uint_eq(raw[0] >> 6, 1);
	}
}
END_TEST

static const struct {
	uint8_t opcode;
	int full_feature;
	int want;
} bhs_cases[] = {
	{ ISCSI_OP_LOGIN_REQ, 0, 0 },
	{ ISCSI_OP_SCSI_CMD, 0, ISCSI_REJECT_PROTOCOL_ERROR },
	{ ISCSI_OP_NOP_OUT, 0, ISCSI_REJECT_PROTOCOL_ERROR },
	{ ISCSI_OP_TEXT_REQ, 0, ISCSI_REJECT_PROTOCOL_ERROR },
	{ 0x3f, 0, ISCSI_REJECT_PROTOCOL_ERROR },
	{ ISCSI_OP_NOP_OUT, 1, 0 },
	{ ISCSI_OP_SCSI_CMD, 1, 0 },
	{ ISCSI_OP_TMF_REQ, 1, 0 },
	{ ISCSI_OP_TEXT_REQ, 1, 0 },
	{ ISCSI_OP_DATA_OUT, 1, 0 },
	{ ISCSI_OP_LOGOUT_REQ, 1, 0 },
	{ ISCSI_OP_SNACK_REQ, 1, ISCSI_REJECT_CMD_NOT_SUPPORTED },
	{ ISCSI_OP_LOGIN_REQ, 1, ISCSI_REJECT_PROTOCOL_ERROR },
	{ 0x07, 1, ISCSI_REJECT_CMD_NOT_SUPPORTED },
	{ 0x1c, 1, ISCSI_REJECT_CMD_NOT_SUPPORTED },  /* vendor specific */
	{ ISCSI_OP_SCSI_RSP, 1, ISCSI_REJECT_CMD_NOT_SUPPORTED },  /* target opcode */
};

START_TEST(test_bhs_check)
{
	uint8_t bhs[ISCSI_BHS_LEN] = { 0 };

	bhs[0] = bhs_cases[_i].opcode;
	ck_assert_int_eq(iscsi_bhs_check(bhs, bhs_cases[_i].full_feature), bhs_cases[_i].want);
	bhs[0] |= ISCSI_FLAG_IMMEDIATE;   /* the I bit is not part of the opcode */
	ck_assert_int_eq(iscsi_bhs_check(bhs, bhs_cases[_i].full_feature), bhs_cases[_i].want);
}
END_TEST

START_TEST(test_bhs_fields)
{
	uint8_t bhs[ISCSI_BHS_LEN] = { 0x41, 0x80, 0, 0, 3, 0x01, 0x02, 0x03 };

	put_be32(bhs + 16, 0xdeadbeef);
	ck_assert_uint_eq(bhs_opcode(bhs), ISCSI_OP_SCSI_CMD);
	ck_assert_int_eq(bhs_immediate(bhs), 1);
	ck_assert_uint_eq(bhs_ahs_len(bhs), 12);
	ck_assert_uint_eq(bhs_dlen(bhs), 0x010203);
	ck_assert_uint_eq(bhs_itt(bhs), 0xdeadbeef);
	bhs_set_dlen(bhs, 0xfffffe);
	ck_assert_uint_eq(bhs_dlen(bhs), 0xfffffe);
	ck_assert_uint_eq(bhs[4], 3);   /* TotalAHSLength untouched */
}
END_TEST

START_TEST(test_serial_arithmetic)
{
	ck_assert(sn_lt(1, 2));
	ck_assert(!sn_lt(2, 1));
	ck_assert(sn_lt(0xfffffff0u, 5));     /* wraps */
	ck_assert(!sn_lt(5, 0xfffffff0u));
	ck_assert(sn_le(7, 7));
	ck_assert(!sn_lt(7, 7));
}
END_TEST

/* CmdSN window (RFC 7143 4.2.2.1): MaxCmdSN follows free task slots and
 * ExpCmdSN jumps over commands that arrived ahead of a gap. */
START_TEST(test_cmdsn_window)
{
	struct iscsi_session s;

	memset(&s, 0, sizeof(s));
	s.queue_depth = 4;
	s.exp_cmdsn = 100;
	ck_assert_int_eq(iscsi_cmdsn_init(&s), 0);
	ck_assert_uint_eq(iscsi_session_max_cmdsn(&s), 103);
	s.active = 3;
	ck_assert_uint_eq(iscsi_session_max_cmdsn(&s), 100);
	s.active = 4;
	ck_assert_uint_eq(iscsi_session_max_cmdsn(&s), 99);   /* window closed */
	s.active = 9;
	ck_assert_uint_eq(iscsi_session_max_cmdsn(&s), 99);
	s.active = 0;

	iscsi_cmdsn_received(&s, 100);
	ck_assert_uint_eq(s.exp_cmdsn, 101);
	iscsi_cmdsn_received(&s, 103);          /* ahead of a gap */
	iscsi_cmdsn_received(&s, 102);
	ck_assert_uint_eq(s.exp_cmdsn, 101);
	iscsi_cmdsn_received(&s, 101);          /* gap filled: jumps to 104 */
	ck_assert_uint_eq(s.exp_cmdsn, 104);
	ck_assert_uint_eq(s.cmdsn.held, 0);

	s.exp_cmdsn = 0xffffffffu;        /* wrap-around */
	iscsi_cmdsn_received(&s, 0xffffffffu);
	ck_assert_uint_eq(s.exp_cmdsn, 0);
	ck_assert_uint_eq(iscsi_session_max_cmdsn(&s), 3);
	iscsi_cmdsn_destroy(&s);
}
END_TEST

START_TEST(test_bufpool)
{
	struct bufpool p;
	struct bufpool_buf *a, *b, *c, *big;

	bufpool_init(&p, 1u << 20);
	a = bufpool_get(&p, 1);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(a->cap, 4096);
	ck_assert_uint_eq((uintptr_t)a->data % 4096, 0);
	b = bufpool_get(&p, 4097);
	ck_assert_uint_eq(b->cap, 8192);
	memset(b->data, 0xa5, b->cap);      /* writable to the end */
	bufpool_put(&p, a);
	c = bufpool_get(&p, 100);
	ck_assert_ptr_eq(c, a);             /* reused, not reallocated */
	bufpool_put(&p, b);
	bufpool_put(&p, c);
	ck_assert_uint_eq(p.cached_bytes, 4096 + 8192);

	big = bufpool_get(&p, (32u << 20) + 1);   /* beyond the largest class */
	ck_assert_ptr_nonnull(big);
	ck_assert_int_eq(big->cls, -1);
	ck_assert_uint_ge(big->cap, (32u << 20) + 1);
	bufpool_put(&p, big);               /* freed, not cached */
	ck_assert_uint_eq(p.cached_bytes, 4096 + 8192);

	/* The cache limit holds. */
	a = bufpool_get(&p, 1u << 20);
	b = bufpool_get(&p, 1u << 20);
	bufpool_put(&p, a);
	bufpool_put(&p, b);
	ck_assert_uint_le(p.cached_bytes, 1u << 20);
	bufpool_destroy(&p);
	ck_assert_uint_eq(p.cached_bytes, 0);
}
END_TEST

Suite *pdu_suite(void)
{
	Suite *s = suite_create("pdu");
	TCase *tc = tcase_create("pdu");

	tcase_add_loop_test(tc, test_lun_decode, 0, (int)ARRAY_SIZE(lun_cases));
	tcase_add_test(tc, test_lun_roundtrip);
	tcase_add_loop_test(tc, test_bhs_check, 0, (int)ARRAY_SIZE(bhs_cases));
	tcase_add_test(tc, test_bhs_fields);
	tcase_add_test(tc, test_serial_arithmetic);
	tcase_add_test(tc, test_cmdsn_window);
	tcase_add_test(tc, test_bufpool);
	suite_add_tcase(s, tc);
	return s;
}
