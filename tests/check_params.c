/*
 * iSCSI text keys: key=value parsing, the response buffer, and operational
 * negotiation (RFC 7143 sections 6 and 13), mostly as tables of cases.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "targetd/params.h"
#include "tests/check_suites.h"

/* ---- limits used by the cases ----------------------------------------- */

static const struct iscsi_limits lim_def = {
	.max_recv_dsl = 65536,
	.max_burst = 1048576,
	.first_burst = 262144,
	.max_outstanding_r2t = 8,
	.max_connections = 4,
	.immediate_data = true,
	.initial_r2t = false,
	.allow_crc32c = true,
	.require_crc32c = false,
};

/* No digests offered. */
static const struct iscsi_limits lim_nocrc = {
	.max_recv_dsl = 65536, .max_burst = 1048576, .first_burst = 262144,
	.max_outstanding_r2t = 8, .max_connections = 4,
	.immediate_data = true, .initial_r2t = false,
	.allow_crc32c = false, .require_crc32c = false,
};

/* Digests mandatory. */
static const struct iscsi_limits lim_crc = {
	.max_recv_dsl = 65536, .max_burst = 1048576, .first_burst = 262144,
	.max_outstanding_r2t = 8, .max_connections = 4,
	.immediate_data = true, .initial_r2t = false,
	.allow_crc32c = true, .require_crc32c = true,
};

/* A conservative target: R2T for everything, no immediate data, small
 * bursts. */
static const struct iscsi_limits lim_strict = {
	.max_recv_dsl = 8192, .max_burst = 65536, .first_burst = 16384,
	.max_outstanding_r2t = 1, .max_connections = 1,
	.immediate_data = false, .initial_r2t = true,
	.allow_crc32c = true, .require_crc32c = false,
};

/* Unconfigured numbers (zero) must still give answers in range. */
static const struct iscsi_limits lim_zero = {
	.max_recv_dsl = 8192,
	.allow_crc32c = false,
};

/* ---- field accessors -------------------------------------------------- */

enum field {
	F_NONE,
	F_HDIG, F_DDIG, F_MRDSL_I, F_MRDSL_T, F_MAX_BURST, F_FIRST_BURST, F_MAX_R2T,
	F_MAX_CONN, F_IMM, F_IR2T, F_PDU_ORDER, F_SEQ_ORDER, F_T2W, F_T2R, F_ERL,
	F_IFM, F_OFM, F_LEVEL,
};

static uint32_t field_get(const struct iscsi_params *p, enum field f)
{
	switch (f) {
	case F_HDIG: return p->header_digest;
	case F_DDIG: return p->data_digest;
	case F_MRDSL_I: return p->max_recv_dsl_initiator;
	case F_MRDSL_T: return p->max_recv_dsl_target;
	case F_MAX_BURST: return p->max_burst;
	case F_FIRST_BURST: return p->first_burst;
	case F_MAX_R2T: return p->max_outstanding_r2t;
	case F_MAX_CONN: return p->max_connections;
	case F_IMM: return p->immediate_data;
	case F_IR2T: return p->initial_r2t;
	case F_PDU_ORDER: return p->data_pdu_in_order;
	case F_SEQ_ORDER: return p->data_seq_in_order;
	case F_T2W: return p->default_time2wait;
	case F_T2R: return p->default_time2retain;
	case F_ERL: return p->error_recovery_level;
	case F_IFM: return p->if_marker;
	case F_OFM: return p->of_marker;
	case F_LEVEL: return p->protocol_level;
	case F_NONE: break;
	}
	return 0;
}

/* Every negotiated parameter equal (struct padding is not compared). */
static bool params_same(const struct iscsi_params *a, const struct iscsi_params *b)
{
	for (enum field f = F_HDIG; f <= F_LEVEL; f++)
		if (field_get(a, f) != field_get(b, f))
			return false;
	return true;
}

/* ---- iscsi_params_init ------------------------------------------------ */

START_TEST(test_init_defaults)
{
	struct iscsi_params p;

	memset(&p, 0xa5, sizeof(p));
	iscsi_params_init(&p, &lim_def);
	/* RFC 7143 section 13 defaults. */
	ck_assert(!p.header_digest);
	ck_assert(!p.data_digest);
	ck_assert_uint_eq(p.max_recv_dsl_initiator, 8192);
	ck_assert_uint_eq(p.max_burst, 262144);
	ck_assert_uint_eq(p.first_burst, 65536);
	ck_assert_uint_eq(p.max_outstanding_r2t, 1);
	ck_assert_uint_eq(p.max_connections, 1);
	ck_assert(p.immediate_data);
	ck_assert(p.initial_r2t);
	ck_assert(p.data_pdu_in_order);
	ck_assert(p.data_seq_in_order);
	ck_assert_uint_eq(p.default_time2wait, 2);
	ck_assert_uint_eq(p.default_time2retain, 20);
	ck_assert_uint_eq(p.error_recovery_level, 0);
	ck_assert(!p.if_marker);
	ck_assert(!p.of_marker);
	ck_assert_uint_eq(p.protocol_level, 0);
	ck_assert_uint_eq(p.seen, 0);
	/* Except what we declare ourselves. */
	ck_assert_uint_eq(p.max_recv_dsl_target, 65536);
	iscsi_params_init(&p, &lim_strict);
	ck_assert_uint_eq(p.max_recv_dsl_target, 8192);
}
END_TEST

/* ---- one key at a time ------------------------------------------------ */

struct neg_case {
	const char *key, *value;
	const struct iscsi_limits *lim;
	bool leading, discovery;
	enum iscsi_neg ret;
	const char *answer;     /* our value for key in the response; NULL: none */
	enum field field;       /* the parameter to look at afterwards */
	uint32_t expect;
};

#define L true, false           /* leading connection of a normal session */
#define NL false, false         /* a further connection of a normal session */
#define DISC true, true         /* discovery session */

static const struct neg_case neg_cases[] = {
	/* 13.1 HeaderDigest / DataDigest: list, first one we support. */
	{ "HeaderDigest", "CRC32C,None", &lim_def, L, NEG_DONE, "CRC32C", F_HDIG, 1 },
	{ "HeaderDigest", "None,CRC32C", &lim_def, L, NEG_DONE, "None", F_HDIG, 0 },
	{ "DataDigest", "CRC32C", &lim_def, L, NEG_DONE, "CRC32C", F_DDIG, 1 },
	{ "DataDigest", "None", &lim_def, L, NEG_DONE, "None", F_DDIG, 0 },
	{ "HeaderDigest", "CRC32C,None", &lim_nocrc, L, NEG_DONE, "None", F_HDIG, 0 },
	{ "HeaderDigest", "CRC32C", &lim_nocrc, L, NEG_DONE, "Reject", F_HDIG, 0 },
	{ "HeaderDigest", "None", &lim_crc, L, NEG_DONE, "Reject", F_HDIG, 0 },
	{ "DataDigest", "None,CRC32C", &lim_crc, L, NEG_DONE, "CRC32C", F_DDIG, 1 },
	{ "HeaderDigest", "SHA1,CRC32C", &lim_def, L, NEG_DONE, "CRC32C", F_HDIG, 1 },
	{ "HeaderDigest", "crc32c", &lim_def, L, NEG_DONE, "Reject", F_HDIG, 0 },
	{ "DataDigest", "", &lim_def, L, NEG_DONE, "Reject", F_DDIG, 0 },
	{ "DataDigest", "CRC32C,", &lim_def, L, NEG_DONE, "CRC32C", F_DDIG, 1 },
	/* connection-only keys: fine on any connection and in discovery */
	{ "HeaderDigest", "CRC32C,None", &lim_def, NL, NEG_DONE, "CRC32C", F_HDIG, 1 },
	{ "DataDigest", "CRC32C,None", &lim_def, DISC, NEG_DONE, "CRC32C", F_DDIG, 1 },

	/* 13.12 MaxRecvDataSegmentLength: declarative, 512..2**24-1; we
	 * record it and declare ours. */
	{ "MaxRecvDataSegmentLength", "262144", &lim_def, L, NEG_DONE, "65536", F_MRDSL_I, 262144 },
	{ "MaxRecvDataSegmentLength", "0x1000", &lim_def, L, NEG_DONE, "65536", F_MRDSL_I, 4096 },
	{ "MaxRecvDataSegmentLength", "512", &lim_def, L, NEG_DONE, "65536", F_MRDSL_I, 512 },
	{ "MaxRecvDataSegmentLength", "16777215", &lim_strict, L, NEG_DONE, "8192", F_MRDSL_I, 16777215 },
	{ "MaxRecvDataSegmentLength", "8192", &lim_def, L, NEG_DONE, "65536", F_MRDSL_T, 65536 },
	{ "MaxRecvDataSegmentLength", "8192", &lim_def, NL, NEG_DONE, "65536", F_MRDSL_I, 8192 },
	{ "MaxRecvDataSegmentLength", "32768", &lim_def, DISC, NEG_DONE, "65536", F_MRDSL_I, 32768 },
	{ "MaxRecvDataSegmentLength", "511", &lim_def, L, NEG_FATAL, NULL, F_MRDSL_I, 8192 },
	{ "MaxRecvDataSegmentLength", "16777216", &lim_def, L, NEG_FATAL, NULL, F_MRDSL_I, 8192 },
	{ "MaxRecvDataSegmentLength", "0", &lim_def, L, NEG_FATAL, NULL, F_MRDSL_I, 8192 },
	{ "MaxRecvDataSegmentLength", "big", &lim_def, L, NEG_FATAL, NULL, F_MRDSL_I, 8192 },
	{ "MaxRecvDataSegmentLength", "", &lim_def, L, NEG_FATAL, NULL, F_MRDSL_I, 8192 },

	/* 13.13 MaxBurstLength: Minimum, 512..2**24-1, LO, not in discovery */
	{ "MaxBurstLength", "262144", &lim_def, L, NEG_DONE, "262144", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "16777215", &lim_def, L, NEG_DONE, "1048576", F_MAX_BURST, 1048576 },
	{ "MaxBurstLength", "0x100000", &lim_def, L, NEG_DONE, "1048576", F_MAX_BURST, 1048576 },
	{ "MaxBurstLength", "0X200", &lim_def, L, NEG_DONE, "512", F_MAX_BURST, 512 },
	{ "MaxBurstLength", "511", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "16777216", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "0262144", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "-1", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "1e6", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", " 8192", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "0x", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "18446744073709551616", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "0x10000000000000000", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "0bAAEAAA==", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "Irrelevant", &lim_def, L, NEG_DONE, "Reject", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "262144", &lim_def, NL, NEG_DONE, "Irrelevant", F_MAX_BURST, 262144 },
	{ "MaxBurstLength", "65536", &lim_def, DISC, NEG_DONE, "Irrelevant", F_MAX_BURST, 262144 },

	/* 13.14 FirstBurstLength: Minimum, never above our MaxBurstLength */
	{ "FirstBurstLength", "65536", &lim_def, L, NEG_DONE, "65536", F_FIRST_BURST, 65536 },
	{ "FirstBurstLength", "16777215", &lim_def, L, NEG_DONE, "262144", F_FIRST_BURST, 262144 },
	{ "FirstBurstLength", "262144", &lim_strict, L, NEG_DONE, "16384", F_FIRST_BURST, 16384 },
	{ "FirstBurstLength", "100", &lim_def, L, NEG_DONE, "Reject", F_FIRST_BURST, 65536 },
	{ "FirstBurstLength", "65536", &lim_def, DISC, NEG_DONE, "Irrelevant", F_FIRST_BURST, 65536 },
	{ "FirstBurstLength", "65536", &lim_def, NL, NEG_DONE, "Irrelevant", F_FIRST_BURST, 65536 },

	/* 13.17 MaxOutstandingR2T: Minimum, 1..65535 */
	{ "MaxOutstandingR2T", "16", &lim_def, L, NEG_DONE, "8", F_MAX_R2T, 8 },
	{ "MaxOutstandingR2T", "1", &lim_def, L, NEG_DONE, "1", F_MAX_R2T, 1 },
	{ "MaxOutstandingR2T", "0", &lim_def, L, NEG_DONE, "Reject", F_MAX_R2T, 1 },
	{ "MaxOutstandingR2T", "65536", &lim_def, L, NEG_DONE, "Reject", F_MAX_R2T, 1 },
	{ "MaxOutstandingR2T", "4", &lim_def, DISC, NEG_DONE, "Irrelevant", F_MAX_R2T, 1 },

	/* 13.2 MaxConnections: Minimum, 1..65535 */
	{ "MaxConnections", "1", &lim_def, L, NEG_DONE, "1", F_MAX_CONN, 1 },
	{ "MaxConnections", "8", &lim_def, L, NEG_DONE, "4", F_MAX_CONN, 4 },
	{ "MaxConnections", "65535", &lim_def, L, NEG_DONE, "4", F_MAX_CONN, 4 },
	{ "MaxConnections", "0", &lim_def, L, NEG_DONE, "Reject", F_MAX_CONN, 1 },
	{ "MaxConnections", "65536", &lim_def, L, NEG_DONE, "Reject", F_MAX_CONN, 1 },
	{ "MaxConnections", "4", &lim_def, NL, NEG_DONE, "Irrelevant", F_MAX_CONN, 1 },
	{ "MaxConnections", "4", &lim_def, DISC, NEG_DONE, "Irrelevant", F_MAX_CONN, 1 },
	{ "MaxConnections", "4", &lim_zero, L, NEG_DONE, "1", F_MAX_CONN, 1 },
	{ "MaxBurstLength", "4096", &lim_zero, L, NEG_DONE, "512", F_MAX_BURST, 512 },

	/* 13.15 DefaultTime2Wait: Maximum, 0..3600, relevant in discovery */
	{ "DefaultTime2Wait", "0", &lim_def, L, NEG_DONE, "2", F_T2W, 2 },
	{ "DefaultTime2Wait", "10", &lim_def, L, NEG_DONE, "10", F_T2W, 10 },
	{ "DefaultTime2Wait", "3600", &lim_def, L, NEG_DONE, "3600", F_T2W, 3600 },
	{ "DefaultTime2Wait", "3601", &lim_def, L, NEG_DONE, "Reject", F_T2W, 2 },
	{ "DefaultTime2Wait", "5", &lim_def, DISC, NEG_DONE, "5", F_T2W, 5 },
	{ "DefaultTime2Wait", "5", &lim_def, NL, NEG_DONE, "Irrelevant", F_T2W, 2 },

	/* 13.16 DefaultTime2Retain: Minimum, 0..3600 */
	{ "DefaultTime2Retain", "0", &lim_def, L, NEG_DONE, "0", F_T2R, 0 },
	{ "DefaultTime2Retain", "60", &lim_def, L, NEG_DONE, "20", F_T2R, 20 },
	{ "DefaultTime2Retain", "3601", &lim_def, L, NEG_DONE, "Reject", F_T2R, 20 },
	{ "DefaultTime2Retain", "0", &lim_def, DISC, NEG_DONE, "0", F_T2R, 0 },

	/* 13.20 ErrorRecoveryLevel: Minimum, 0..2; we do level 0 */
	{ "ErrorRecoveryLevel", "2", &lim_def, L, NEG_DONE, "0", F_ERL, 0 },
	{ "ErrorRecoveryLevel", "0", &lim_def, L, NEG_DONE, "0", F_ERL, 0 },
	{ "ErrorRecoveryLevel", "3", &lim_def, L, NEG_DONE, "Reject", F_ERL, 0 },
	{ "ErrorRecoveryLevel", "1", &lim_def, DISC, NEG_DONE, "0", F_ERL, 0 },

	/* 13.10 InitialR2T: OR */
	{ "InitialR2T", "Yes", &lim_def, L, NEG_DONE, "Yes", F_IR2T, 1 },
	{ "InitialR2T", "No", &lim_def, L, NEG_DONE, "No", F_IR2T, 0 },
	{ "InitialR2T", "No", &lim_strict, L, NEG_DONE, "Yes", F_IR2T, 1 },
	{ "InitialR2T", "yes", &lim_def, L, NEG_DONE, "Reject", F_IR2T, 1 },
	{ "InitialR2T", "", &lim_def, L, NEG_DONE, "Reject", F_IR2T, 1 },
	{ "InitialR2T", "No", &lim_def, NL, NEG_DONE, "Irrelevant", F_IR2T, 1 },
	{ "InitialR2T", "No", &lim_def, DISC, NEG_DONE, "Irrelevant", F_IR2T, 1 },

	/* 13.11 ImmediateData: AND */
	{ "ImmediateData", "Yes", &lim_def, L, NEG_DONE, "Yes", F_IMM, 1 },
	{ "ImmediateData", "No", &lim_def, L, NEG_DONE, "No", F_IMM, 0 },
	{ "ImmediateData", "Yes", &lim_strict, L, NEG_DONE, "No", F_IMM, 0 },
	{ "ImmediateData", "1", &lim_def, L, NEG_DONE, "Reject", F_IMM, 1 },
	{ "ImmediateData", "Yes ", &lim_def, L, NEG_DONE, "Reject", F_IMM, 1 },
	{ "ImmediateData", "No", &lim_def, DISC, NEG_DONE, "Irrelevant", F_IMM, 1 },

	/* 13.18, 13.19: OR, and we want Yes */
	{ "DataPDUInOrder", "No", &lim_def, L, NEG_DONE, "Yes", F_PDU_ORDER, 1 },
	{ "DataPDUInOrder", "Yes", &lim_def, L, NEG_DONE, "Yes", F_PDU_ORDER, 1 },
	{ "DataPDUInOrder", "Maybe", &lim_def, L, NEG_DONE, "Reject", F_PDU_ORDER, 1 },
	{ "DataPDUInOrder", "No", &lim_def, DISC, NEG_DONE, "Irrelevant", F_PDU_ORDER, 1 },
	{ "DataSequenceInOrder", "No", &lim_def, L, NEG_DONE, "Yes", F_SEQ_ORDER, 1 },
	{ "DataSequenceInOrder", "Yes", &lim_strict, L, NEG_DONE, "Yes", F_SEQ_ORDER, 1 },
	{ "DataSequenceInOrder", "No", &lim_def, DISC, NEG_DONE, "Irrelevant", F_SEQ_ORDER, 1 },
	{ "DataSequenceInOrder", "No", &lim_def, NL, NEG_DONE, "Irrelevant", F_SEQ_ORDER, 1 },

	/* 13.26 obsoleted markers: No for the Booleans, Reject for the
	 * intervals; never NotUnderstood. */
	{ "IFMarker", "No", &lim_def, L, NEG_DONE, "No", F_IFM, 0 },
	{ "IFMarker", "Yes", &lim_def, L, NEG_DONE, "No", F_IFM, 0 },
	{ "OFMarker", "Yes", &lim_def, L, NEG_DONE, "No", F_OFM, 0 },
	{ "OFMarker", "No", &lim_def, DISC, NEG_DONE, "No", F_OFM, 0 },
	{ "OFMarker", "foo", &lim_def, L, NEG_DONE, "Reject", F_OFM, 0 },
	{ "IFMarkInt", "2048~8192", &lim_def, L, NEG_DONE, "Reject", F_NONE, 0 },
	{ "OFMarkInt", "2048", &lim_def, NL, NEG_DONE, "Reject", F_NONE, 0 },

	/* 13.23 TaskReporting: list, we do RFC3720 only */
	{ "TaskReporting", "ResponseFence,RFC3720", &lim_def, L, NEG_DONE, "RFC3720", F_NONE, 0 },
	{ "TaskReporting", "RFC3720", &lim_def, L, NEG_DONE, "RFC3720", F_NONE, 0 },
	{ "TaskReporting", "FastAbort", &lim_def, L, NEG_DONE, "Reject", F_NONE, 0 },
	{ "TaskReporting", "RFC3720", &lim_def, DISC, NEG_DONE, "Irrelevant", F_NONE, 0 },

	/* 13.24 / RFC 7144 iSCSIProtocolLevel: Minimum with our level 1 */
	{ "iSCSIProtocolLevel", "2", &lim_def, L, NEG_DONE, "1", F_LEVEL, 1 },
	{ "iSCSIProtocolLevel", "1", &lim_def, L, NEG_DONE, "1", F_LEVEL, 1 },
	{ "iSCSIProtocolLevel", "0", &lim_def, L, NEG_DONE, "0", F_LEVEL, 0 },
	{ "iSCSIProtocolLevel", "31", &lim_def, L, NEG_DONE, "1", F_LEVEL, 1 },
	{ "iSCSIProtocolLevel", "32", &lim_def, L, NEG_DONE, "Reject", F_LEVEL, 0 },
	{ "iSCSIProtocolLevel", "2", &lim_def, NL, NEG_DONE, "Irrelevant", F_LEVEL, 0 },

	/* extension keys (13.5.2 X-, 13.5.4 X#) */
	{ "X-com.example.Feature", "Yes", &lim_def, L, NEG_DONE, "NotUnderstood", F_NONE, 0 },
	{ "X#NodeArchitecture", "ExampleOS/1.0", &lim_def, DISC, NEG_DONE, "NotUnderstood", F_NONE, 0 },
	/* not operational keys: the caller's business */
	{ "InitiatorName", "iqn.1994-05.com.example:host", &lim_def, L, NEG_UNKNOWN, NULL, F_NONE, 0 },
	{ "SessionType", "Normal", &lim_def, L, NEG_UNKNOWN, NULL, F_NONE, 0 },
	{ "AuthMethod", "CHAP,None", &lim_def, L, NEG_UNKNOWN, NULL, F_NONE, 0 },
	{ "CHAP_A", "5", &lim_def, L, NEG_UNKNOWN, NULL, F_NONE, 0 },
	{ "NoSuchKey", "1", &lim_def, L, NEG_UNKNOWN, NULL, F_NONE, 0 },
	{ "Xcom.example", "1", &lim_def, L, NEG_UNKNOWN, NULL, F_NONE, 0 },
	{ "maxburstlength", "8192", &lim_def, L, NEG_UNKNOWN, NULL, F_NONE, 0 },
};

START_TEST(test_negotiate_table)
{
	const struct neg_case *c = &neg_cases[_i];
	struct iscsi_text resp = { 0 };
	struct iscsi_params p, before;
	enum iscsi_neg r;
	const char *got;

	iscsi_params_init(&p, c->lim);
	before = p;
	r = iscsi_params_negotiate(&p, c->lim, c->leading, c->discovery, c->key, c->value, &resp);
	ck_assert_msg(r == c->ret, "case %d %s=%s: returned %d, want %d",
		      _i, c->key, c->value, r, c->ret);
	got = iscsi_text_find(&resp, c->key);
	if (c->answer) {
		ck_assert_msg(got && strcmp(got, c->answer) == 0,
			      "case %d %s=%s: answered %s, want %s",
			      _i, c->key, c->value, got ? got : "(nothing)", c->answer);
		/* Exactly one pair was added. */
		ck_assert_uint_eq(resp.len, strlen(c->key) + 1 + strlen(c->answer) + 1);
	} else {
		ck_assert_msg(resp.len == 0, "case %d %s=%s: unexpected answer",
			      _i, c->key, c->value);
	}
	if (c->field != F_NONE)
		ck_assert_msg(field_get(&p, c->field) == c->expect,
			      "case %d %s=%s: field %d is %u, want %u", _i, c->key, c->value,
			      c->field, field_get(&p, c->field), c->expect);
	/* Irrelevant, Reject and unknown keys change no parameter. */
	if (c->answer && (!strcmp(c->answer, "Irrelevant") || !strcmp(c->answer, "Reject") ||
			  !strcmp(c->answer, "NotUnderstood"))) {
		ck_assert(params_same(&p, &before));
	}
	if (c->ret == NEG_UNKNOWN) {
		ck_assert(params_same(&p, &before));
		ck_assert_uint_eq(p.seen, before.seen);
	}
	iscsi_text_free(&resp);
}
END_TEST

/* ---- sequences ---------------------------------------------------------- */

static int count_pairs(const struct iscsi_text *t, const char *key)
{
	size_t klen = strlen(key), pos = 0;
	int n = 0;

	while (pos < t->len) {
		const char *e = t->data + pos;

		if (!strncmp(e, key, klen) && e[klen] == '=')
			n++;
		pos += strlen(e) + 1;
	}
	return n;
}

/* RFC 7143 6.2: a key negotiated twice is a protocol error, whatever the
 * first answer was. */
START_TEST(test_repeat_fatal)
{
	static const struct {
		const char *key, *v1, *v2;
		bool leading, discovery;
	} rep[] = {
		{ "MaxBurstLength", "65536", "65536", L },
		{ "HeaderDigest", "None", "CRC32C", L },
		{ "InitialR2T", "Yes", "Yes", L },
		{ "ErrorRecoveryLevel", "0", "0", DISC },
		{ "MaxBurstLength", "65536", "65536", DISC },    /* Irrelevant first */
		{ "MaxConnections", "5000000", "1", L },           /* Rejected first */
		{ "IFMarker", "No", "No", L },
		{ "TaskReporting", "RFC3720", "RFC3720", L },
	};

	for (size_t i = 0; i < sizeof(rep) / sizeof(rep[0]); i++) {
		struct iscsi_text resp = { 0 };
		struct iscsi_params p;
		size_t len;

		iscsi_params_init(&p, &lim_def);
		ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, rep[i].leading, rep[i].discovery,
							rep[i].key, rep[i].v1, &resp), NEG_DONE);
		len = resp.len;
		ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, rep[i].leading, rep[i].discovery,
							rep[i].key, rep[i].v2, &resp), NEG_FATAL);
		ck_assert_uint_eq(resp.len, len);
		/* Other keys still negotiate. */
		ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
							"DataDigest", "None", &resp), NEG_DONE);
		iscsi_text_free(&resp);
	}
}
END_TEST

/* MaxRecvDataSegmentLength may be declared again: the last value counts,
 * and we declare ours once. */
START_TEST(test_mrdsl_redeclared)
{
	struct iscsi_text resp = { 0 };
	struct iscsi_params p;

	iscsi_params_init(&p, &lim_def);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"MaxRecvDataSegmentLength", "8192", &resp), NEG_DONE);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"MaxRecvDataSegmentLength", "131072", &resp), NEG_DONE);
	ck_assert_uint_eq(p.max_recv_dsl_initiator, 131072);
	ck_assert_int_eq(count_pairs(&resp, "MaxRecvDataSegmentLength"), 1);
	iscsi_params_finish(&p, &lim_def, false, &resp);
	ck_assert_int_eq(count_pairs(&resp, "MaxRecvDataSegmentLength"), 1);
	ck_assert_str_eq(iscsi_text_find(&resp, "MaxRecvDataSegmentLength"), "65536");
	/* An invalid re-declaration is still fatal and changes nothing. */
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"MaxRecvDataSegmentLength", "100", &resp), NEG_FATAL);
	ck_assert_uint_eq(p.max_recv_dsl_initiator, 131072);
	iscsi_text_free(&resp);
}
END_TEST

/* 13.14: FirstBurstLength never exceeds MaxBurstLength, in either order. */
START_TEST(test_first_burst_vs_max_burst)
{
	struct iscsi_text resp = { 0 };
	struct iscsi_params p;

	/* MaxBurstLength first: FirstBurstLength answered below it. */
	iscsi_params_init(&p, &lim_def);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"MaxBurstLength", "16384", &resp), NEG_DONE);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"FirstBurstLength", "65536", &resp), NEG_DONE);
	ck_assert_str_eq(iscsi_text_find(&resp, "FirstBurstLength"), "16384");
	ck_assert_uint_eq(p.first_burst, 16384);
	iscsi_text_free(&resp);

	/* FirstBurstLength first, then a smaller MaxBurstLength: finish()
	 * brings FirstBurstLength down. */
	iscsi_params_init(&p, &lim_def);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"FirstBurstLength", "65536", &resp), NEG_DONE);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"MaxBurstLength", "4096", &resp), NEG_DONE);
	ck_assert_uint_eq(p.first_burst, 65536);
	iscsi_params_finish(&p, &lim_def, false, &resp);
	ck_assert_uint_eq(p.max_burst, 4096);
	ck_assert_uint_eq(p.first_burst, 4096);
	iscsi_text_free(&resp);

	/* Only MaxBurstLength, below the default FirstBurstLength. */
	iscsi_params_init(&p, &lim_def);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"MaxBurstLength", "1024", &resp), NEG_DONE);
	iscsi_params_finish(&p, &lim_def, false, &resp);
	ck_assert_uint_eq(p.first_burst, 1024);
	iscsi_text_free(&resp);
}
END_TEST

/* 13.14: FirstBurstLength is irrelevant with InitialR2T=Yes and
 * ImmediateData=No. */
START_TEST(test_first_burst_irrelevant)
{
	struct iscsi_text resp = { 0 };
	struct iscsi_params p;

	iscsi_params_init(&p, &lim_strict);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_strict, true, false,
						"InitialR2T", "No", &resp), NEG_DONE);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_strict, true, false,
						"ImmediateData", "Yes", &resp), NEG_DONE);
	ck_assert_str_eq(iscsi_text_find(&resp, "InitialR2T"), "Yes");
	ck_assert_str_eq(iscsi_text_find(&resp, "ImmediateData"), "No");
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_strict, true, false,
						"FirstBurstLength", "8192", &resp), NEG_DONE);
	ck_assert_str_eq(iscsi_text_find(&resp, "FirstBurstLength"), "Irrelevant");
	ck_assert_uint_eq(p.first_burst, 65536);
	iscsi_text_free(&resp);

	/* With immediate data it matters. */
	iscsi_params_init(&p, &lim_def);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"InitialR2T", "Yes", &resp), NEG_DONE);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"ImmediateData", "Yes", &resp), NEG_DONE);
	ck_assert_int_eq(iscsi_params_negotiate(&p, &lim_def, true, false,
						"FirstBurstLength", "8192", &resp), NEG_DONE);
	ck_assert_str_eq(iscsi_text_find(&resp, "FirstBurstLength"), "8192");
	ck_assert_uint_eq(p.first_burst, 8192);
	iscsi_text_free(&resp);
}
END_TEST

START_TEST(test_finish)
{
	struct iscsi_text resp = { 0 };
	struct iscsi_params p;

	/* The initiator never declared: we still declare ours, once. */
	iscsi_params_init(&p, &lim_strict);
	iscsi_params_finish(&p, &lim_strict, false, &resp);
	ck_assert_str_eq(iscsi_text_find(&resp, "MaxRecvDataSegmentLength"), "8192");
	ck_assert_uint_eq(p.max_recv_dsl_initiator, 8192);
	ck_assert_uint_eq(p.max_recv_dsl_target, 8192);
	iscsi_params_finish(&p, &lim_strict, false, &resp);
	ck_assert_int_eq(count_pairs(&resp, "MaxRecvDataSegmentLength"), 1);
	ck_assert_uint_eq(resp.len, strlen("MaxRecvDataSegmentLength=8192") + 1);
	iscsi_text_free(&resp);

	/* Discovery: the declaration, nothing about session keys. */
	iscsi_params_init(&p, &lim_def);
	p.max_burst = 1024;     /* would be clamped in a normal session */
	iscsi_params_finish(&p, &lim_def, true, &resp);
	ck_assert_str_eq(iscsi_text_find(&resp, "MaxRecvDataSegmentLength"), "65536");
	ck_assert_uint_eq(p.first_burst, 65536);
	ck_assert_int_eq(count_pairs(&resp, "MaxRecvDataSegmentLength"), 1);
	iscsi_text_free(&resp);

	/* Defaults are consistent: finish changes nothing. */
	iscsi_params_init(&p, &lim_def);
	iscsi_params_finish(&p, &lim_def, false, &resp);
	ck_assert_uint_eq(p.first_burst, 65536);
	ck_assert_uint_eq(p.max_burst, 262144);
	iscsi_text_free(&resp);
}
END_TEST

/* A whole operational request as a Linux initiator sends it, parsed and
 * negotiated key by key; the response is checked pair by pair, in order. */
START_TEST(test_full_login_request)
{
	static const char req[] =
		"HeaderDigest=None\0DataDigest=None\0"
		"ErrorRecoveryLevel=0\0InitialR2T=No\0ImmediateData=Yes\0"
		"MaxBurstLength=16776192\0FirstBurstLength=262144\0"
		"MaxConnections=1\0MaxRecvDataSegmentLength=262144\0"
		"MaxOutstandingR2T=1\0DataPDUInOrder=Yes\0DataSequenceInOrder=Yes\0"
		"DefaultTime2Wait=2\0DefaultTime2Retain=0\0IFMarker=No\0OFMarker=No\0"
		"InitiatorName=iqn.2004-10.com.example:host\0SessionType=Normal\0"
		"TargetName=iqn.2024-01.org.example:disk\0"
		"X-com.example.Hint=1\0\0\0";
	static const char *const want[][2] = {
		{ "HeaderDigest", "None" }, { "DataDigest", "None" },
		{ "ErrorRecoveryLevel", "0" }, { "InitialR2T", "No" }, { "ImmediateData", "Yes" },
		{ "MaxBurstLength", "1048576" }, { "FirstBurstLength", "262144" },
		{ "MaxConnections", "1" }, { "MaxRecvDataSegmentLength", "65536" },
		{ "MaxOutstandingR2T", "1" }, { "DataPDUInOrder", "Yes" },
		{ "DataSequenceInOrder", "Yes" }, { "DefaultTime2Wait", "2" },
		{ "DefaultTime2Retain", "0" }, { "IFMarker", "No" }, { "OFMarker", "No" },
		{ "X-com.example.Hint", "NotUnderstood" },
	};
	char buf[sizeof(req)];
	struct iscsi_kv kv[32];
	struct iscsi_text resp = { 0 };
	struct iscsi_params p;
	int n, unknown = 0;
	size_t pos = 0, w = 0;

	memcpy(buf, req, sizeof(req));
	n = iscsi_kv_parse(buf, sizeof(req) - 1, kv, 32);
	ck_assert_int_eq(n, 20);
	iscsi_params_init(&p, &lim_def);
	for (int i = 0; i < n; i++) {
		enum iscsi_neg r = iscsi_params_negotiate(&p, &lim_def, true, false,
							  kv[i].key, kv[i].value, &resp);

		ck_assert_int_ne(r, NEG_FATAL);
		if (r == NEG_UNKNOWN)
			unknown++;
	}
	ck_assert_int_eq(unknown, 3);
	iscsi_params_finish(&p, &lim_def, false, &resp);
	while (pos < resp.len) {
		const char *e = resp.data + pos;
		const char *eq = strchr(e, '=');

		ck_assert_uint_lt(w, sizeof(want) / sizeof(want[0]));
		ck_assert_ptr_nonnull(eq);
		ck_assert_uint_eq((size_t)(eq - e), strlen(want[w][0]));
		ck_assert(!strncmp(e, want[w][0], strlen(want[w][0])));
		ck_assert_str_eq(eq + 1, want[w][1]);
		pos += strlen(e) + 1;
		w++;
	}
	ck_assert_uint_eq(w, sizeof(want) / sizeof(want[0]));
	ck_assert(!p.header_digest && !p.data_digest);
	ck_assert_uint_eq(p.max_burst, 1048576);
	ck_assert_uint_eq(p.first_burst, 262144);
	ck_assert_uint_eq(p.max_recv_dsl_initiator, 262144);
	ck_assert_uint_eq(p.max_recv_dsl_target, 65536);
	ck_assert(!p.initial_r2t && p.immediate_data);
	ck_assert_uint_eq(p.default_time2retain, 0);
	iscsi_text_free(&resp);
}
END_TEST

/* ---- iscsi_kv_parse ----------------------------------------------------- */

struct kv_case {
	const char *data;
	size_t len;
	int max;
	int ret;
	const char *k0, *v0;    /* first pair when ret > 0 */
	const char *kl, *vl;    /* last pair when ret > 1 */
};

#define KV(s) s, sizeof(s) - 1

static const struct kv_case kv_cases[] = {
	{ KV("A=b\0"), 8, 1, "A", "b", NULL, NULL },
	{ KV("A=b\0C=d\0"), 8, 2, "A", "b", "C", "d" },
	{ KV("A=b\0\0\0\0"), 8, 1, "A", "b", NULL, NULL },          /* padding */
	{ KV(""), 8, 0, NULL, NULL, NULL, NULL },
	{ KV("\0\0\0\0"), 8, 0, NULL, NULL, NULL, NULL },
	{ KV("A=\0"), 8, 1, "A", "", NULL, NULL },                  /* empty value */
	{ KV("A=b=c\0"), 8, 1, "A", "b=c", NULL, NULL },            /* '=' in value */
	{ KV("TargetAlias=Disk one, \xc3\xa9t\xc3\xa9\0"), 8, 1, "TargetAlias",
	  "Disk one, \xc3\xa9t\xc3\xa9", NULL, NULL },                   /* UTF-8 value */
	{ KV("X#NodeArchitecture=x\0"), 8, 1, "X#NodeArchitecture", "x", NULL, NULL },
	{ KV("X-com.example.Key_1+2@3=v\0"), 8, 1, "X-com.example.Key_1+2@3", "v", NULL, NULL },
	{ KV("iSCSIProtocolLevel=1\0"), 8, 1, "iSCSIProtocolLevel", "1", NULL, NULL },
	{ KV("A=1\0B=2\0C=3\0"), 3, 3, "A", "1", "C", "3" },
	{ KV("A=1\0B=2\0C=3\0"), 2, -1, NULL, NULL, NULL, NULL },   /* too many */
	{ KV("A=1\0"), 0, -1, NULL, NULL, NULL, NULL },
	{ KV("A=b"), 8, -1, NULL, NULL, NULL, NULL },               /* no final NUL */
	{ KV("A=b\0C=d"), 8, -1, NULL, NULL, NULL, NULL },
	{ KV("Ab\0"), 8, -1, NULL, NULL, NULL, NULL },              /* no '=' */
	{ KV("=b\0"), 8, -1, NULL, NULL, NULL, NULL },              /* empty key */
	{ KV("A=b\0\0C=d\0"), 8, -1, NULL, NULL, NULL, NULL },      /* hole */
	{ KV("A b=c\0"), 8, -1, NULL, NULL, NULL, NULL },           /* bad key chars */
	{ KV("A,b=c\0"), 8, -1, NULL, NULL, NULL, NULL },
	{ KV("A:b=c\0"), 8, -1, NULL, NULL, NULL, NULL },
	{ KV("A\xc3\xa9=c\0"), 8, -1, NULL, NULL, NULL, NULL },
	{ KV("1A=b\0"), 8, -1, NULL, NULL, NULL, NULL },            /* starts with a digit */
	{ KV("-A=b\0"), 8, -1, NULL, NULL, NULL, NULL },
	{ KV("A#B=x\0"), 8, -1, NULL, NULL, NULL, NULL },           /* '#' only in X# */
	{ KV("X##=x\0"), 8, -1, NULL, NULL, NULL, NULL },
	{ KV("A=b\0C\0"), 8, -1, NULL, NULL, NULL, NULL },
};

START_TEST(test_kv_table)
{
	const struct kv_case *c = &kv_cases[_i];
	struct iscsi_kv kv[8];
	char *buf = malloc(c->len + 1);
	int n;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, c->data, c->len);
	n = iscsi_kv_parse(buf, c->len, kv, c->max);
	ck_assert_msg(n == c->ret, "kv case %d: %d pairs, want %d", _i, n, c->ret);
	if (n > 0) {
		ck_assert_str_eq(kv[0].key, c->k0);
		ck_assert_str_eq(kv[0].value, c->v0);
		/* Pointers into the caller's buffer: no copies. */
		ck_assert(kv[0].key >= buf && kv[0].key < buf + c->len);
	}
	if (n > 1) {
		ck_assert_str_eq(kv[n - 1].key, c->kl);
		ck_assert_str_eq(kv[n - 1].value, c->vl);
	}
	free(buf);
}
END_TEST

/* Length limits: 63-byte keys, ISCSI_VALUE_MAX-byte values, whole data. */
START_TEST(test_kv_limits)
{
	size_t cap = ISCSI_TEXT_MAX + 16;
	char *buf = malloc(cap);
	struct iscsi_kv kv[4];
	size_t len;

	ck_assert_ptr_nonnull(buf);
	/* A key of exactly 63 bytes, then 64. */
	for (size_t klen = 63; klen <= 64; klen++) {
		memset(buf, 'K', klen);
		memcpy(buf + klen, "=v", 3);
		ck_assert_int_eq(iscsi_kv_parse(buf, klen + 3, kv, 4), klen == 63 ? 1 : -1);
	}
	/* A value of exactly ISCSI_VALUE_MAX bytes, then one more. */
	for (size_t vlen = ISCSI_VALUE_MAX; vlen <= ISCSI_VALUE_MAX + 1; vlen++) {
		memcpy(buf, "CHAP_C=", 7);
		memset(buf + 7, 'a', vlen);
		buf[7 + vlen] = '\0';
		len = 7 + vlen + 1;
		ck_assert_int_eq(iscsi_kv_parse(buf, len, kv, 4), vlen == ISCSI_VALUE_MAX ? 1 : -1);
		if (vlen == ISCSI_VALUE_MAX)
			ck_assert_uint_eq(strlen(kv[0].value), ISCSI_VALUE_MAX);
	}
	/* More data than any login may carry, even if only padding. */
	memset(buf, 0, cap);
	ck_assert_int_eq(iscsi_kv_parse(buf, ISCSI_TEXT_MAX, kv, 4), 0);
	ck_assert_int_eq(iscsi_kv_parse(buf, ISCSI_TEXT_MAX + 1, kv, 4), -1);
	free(buf);
}
END_TEST

/* ---- iscsi_text ----------------------------------------------------------- */

START_TEST(test_text_build_find)
{
	struct iscsi_text t = { 0 };
	char key[32];

	ck_assert_ptr_null(iscsi_text_find(&t, "A"));
	ck_assert_int_eq(iscsi_text_add(&t, "A", "%d", 1), 0);
	ck_assert_int_eq(iscsi_text_add(&t, "MaxBurstLength", "%s", "xyz"), 0);
	ck_assert_int_eq(iscsi_text_add(&t, "Empty", "%s", ""), 0);
	ck_assert_uint_eq(t.len, sizeof("A=1\0MaxBurstLength=xyz\0Empty=") );
	ck_assert(memcmp(t.data, "A=1\0MaxBurstLength=xyz\0Empty=\0", t.len) == 0);
	ck_assert_str_eq(iscsi_text_find(&t, "A"), "1");
	ck_assert_str_eq(iscsi_text_find(&t, "MaxBurstLength"), "xyz");
	ck_assert_str_eq(iscsi_text_find(&t, "Empty"), "");
	ck_assert_ptr_null(iscsi_text_find(&t, "Max"));             /* a prefix */
	ck_assert_ptr_null(iscsi_text_find(&t, "MaxBurstLengthX"));
	ck_assert_ptr_null(iscsi_text_find(&t, "xyz"));             /* a value */
	/* Grow well past the first allocation; every pair stays findable. */
	for (int i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "Key%d", i);
		ck_assert_int_eq(iscsi_text_add(&t, key, "value-%d-%s", i, "padding-padding"), 0);
	}
	ck_assert_uint_ge(t.cap, t.len);
	for (int i = 0; i < 500; i += 7) {
		char want[64];

		snprintf(key, sizeof(key), "Key%d", i);
		snprintf(want, sizeof(want), "value-%d-padding-padding", i);
		ck_assert_str_eq(iscsi_text_find(&t, key), want);
	}
	ck_assert_str_eq(iscsi_text_find(&t, "A"), "1");
	iscsi_text_free(&t);
	ck_assert_ptr_null(t.data);
	ck_assert_uint_eq(t.len, 0);
	ck_assert_uint_eq(t.cap, 0);
	iscsi_text_free(&t);            /* twice is harmless */
}
END_TEST

/* The response never grows past ISCSI_TEXT_MAX; a refused add leaves the
 * buffer as it was. */
START_TEST(test_text_limit)
{
	struct iscsi_text t = { 0 };
	char *big = malloc(ISCSI_VALUE_MAX + 1);
	size_t len;
	int i;

	ck_assert_ptr_nonnull(big);
	memset(big, 'v', ISCSI_VALUE_MAX);
	big[ISCSI_VALUE_MAX] = '\0';
	for (i = 0; i < 100; i++)
		if (iscsi_text_add(&t, "K", "%s", big))
			break;
	ck_assert_int_lt(i, 100);
	ck_assert_uint_le(t.len, ISCSI_TEXT_MAX);
	len = t.len;
	ck_assert_int_eq(iscsi_text_add(&t, "K", "%s", big), -1);
	ck_assert_uint_eq(t.len, len);
	ck_assert_int_eq(iscsi_text_add(&t, "Small", "1"), 0);
	ck_assert_str_eq(iscsi_text_find(&t, "Small"), "1");
	iscsi_text_free(&t);
	free(big);
}
END_TEST

Suite *params_suite(void)
{
	Suite *s = suite_create("params");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, test_kv_table, 0, (int)(sizeof(kv_cases) / sizeof(kv_cases[0])));
	tcase_add_test(tc, test_kv_limits);
	tcase_add_test(tc, test_text_build_find);
	tcase_add_test(tc, test_text_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("negotiate");
	tcase_add_test(tc, test_init_defaults);
	tcase_add_loop_test(tc, test_negotiate_table, 0, (int)(sizeof(neg_cases) / sizeof(neg_cases[0])));
	tcase_add_test(tc, test_repeat_fatal);
	tcase_add_test(tc, test_mrdsl_redeclared);
	tcase_add_test(tc, test_first_burst_vs_max_burst);
	tcase_add_test(tc, test_first_burst_irrelevant);
	tcase_add_test(tc, test_finish);
	tcase_add_test(tc, test_full_login_request);
	suite_add_tcase(s, tc);
	return s;
}
