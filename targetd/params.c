/*
 * iSCSI text keys: the key=value data segment format (RFC 7143 6.1), a
 * response builder, and the target side of operational text negotiation
 * (RFC 7143 6.2, keys in section 13). Pure code: no I/O, no sessions, no
 * shared state; login.c feeds it one key at a time.
 *
 * Negotiation in brief (RFC 7143 6.2):
 *  - list keys (HeaderDigest, DataDigest, TaskReporting): answer the first
 *    value of the initiator's list that we support, or "Reject";
 *  - numerical keys: answer the result function (Minimum or Maximum) of the
 *    offer and our value; an offer out of the key's range gets "Reject";
 *  - Boolean keys: answer offer OR ours / offer AND ours; anything other
 *    than exactly "Yes" or "No" gets "Reject";
 *  - declarative MaxRecvDataSegmentLength: record the initiator's value and
 *    declare ours; an out-of-range declaration is a protocol error;
 *  - leading-only keys on a non-leading connection, and session keys marked
 *    "Irrelevant when: SessionType=Discovery" in a discovery session, get
 *    "Irrelevant" and change nothing;
 *  - X- and X# extension keys get "NotUnderstood";
 *  - negotiating a key twice is a protocol error (RFC 7143 6.2: "An attempt
 *    to renegotiate/redeclare parameters not specifically allowed MUST be
 *    detected ... the target MUST respond with a Login reject (initiator
 *    error)"). MaxRecvDataSegmentLength may be declared again (Use: ALL):
 *    the new value replaces the old one.
 */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "targetd/params.h"
#include "common/util.h"

/* ---- key=value parsing (RFC 7143 6.1) ---------------------------------- */

/* standard-label characters: letters, digits, '.', '-', '+', '@', '_'. A key
 * starts with a letter (RFC 7143 says a capital one, but the standard key
 * iSCSIProtocolLevel of RFC 7144 does not); "X#" opens an IANA-registered
 * extension key (RFC 7143 13.5.4, from RFC 4850). */
static bool iscsi_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '+' || c == '@' || c == '_';
}

static bool iscsi_key_valid(const char *k, size_t n)
{
	size_t i = 1;

	if (n == 0 || n > ISCSI_KEY_MAX)
		return false;
	if (!((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z')))
		return false;
	if (n >= 2 && k[0] == 'X' && k[1] == '#')
		i = 2;
	for (; i < n; i++)
		if (!iscsi_key_char(k[i]))
			return false;
	return true;
}

int iscsi_kv_parse(char *buf, size_t len, struct iscsi_kv *out, int max)
{
	size_t pos = 0;
	int n = 0;

	if (len > ISCSI_TEXT_MAX || (len && !buf))
		return -1;
	while (pos < len) {
		char *entry = buf + pos, *end, *eq;
		size_t klen, vlen;

		if (*entry == '\0') {
			/* Only padding may follow an empty entry. */
			for (size_t i = pos; i < len; i++)
				if (buf[i] != '\0')
					return -1;
			break;
		}
		/* RFC 7143 6.1: every pair, the last one included, is
		 * followed by a NUL delimiter. */
		end = memchr(entry, '\0', len - pos);
		if (!end)
			return -1;
		eq = memchr(entry, '=', (size_t)(end - entry));
		if (!eq)
			return -1;
		klen = (size_t)(eq - entry);
		vlen = (size_t)(end - eq - 1);
		if (!iscsi_key_valid(entry, klen) || vlen > ISCSI_VALUE_MAX)
			return -1;
		if (n >= max)
			return -1;
		*eq = '\0';
		out[n].key = entry;
		out[n].value = eq + 1;
		n++;
		pos = (size_t)(end - buf) + 1;
	}
	return n;
}

/* ---- response buffer -------------------------------------------------- */

int iscsi_text_add(struct iscsi_text *t, const char *key, const char *fmt, ...)
{
	size_t klen = strlen(key), need;
	va_list ap;
	int vlen;

	va_start(ap, fmt);
	vlen = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (vlen < 0)
		return -1;
	need = t->len + klen + 1 + (size_t)vlen + 1;
	if (need > ISCSI_TEXT_MAX)
		return -1;
	if (need > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		char *d;

		while (cap < need)
			cap *= 2;
		d = realloc(t->data, cap);
		if (!d)
			return -1;
		t->data = d;
		t->cap = cap;
	}
	memcpy(t->data + t->len, key, klen);
	t->data[t->len + klen] = '=';
	va_start(ap, fmt);
	vsnprintf(t->data + t->len + klen + 1, (size_t)vlen + 1, fmt, ap);
	va_end(ap);
	t->len = need;
	return 0;
}

void iscsi_text_free(struct iscsi_text *t)
{
	free(t->data);
	t->data = NULL;
	t->len = t->cap = 0;
}

const char *iscsi_text_find(const struct iscsi_text *t, const char *key)
{
	size_t klen = strlen(key), pos = 0;

	while (pos < t->len) {
		const char *e = t->data + pos;
		size_t elen = strnlen(e, t->len - pos);

		if (elen > klen && e[klen] == '=' && memcmp(e, key, klen) == 0)
			return e + klen + 1;
		pos += elen + 1;
	}
	return NULL;
}

/* ---- operational keys (RFC 7143 section 13) --------------------------- */

enum iscsi_key_id {
	IK_HEADER_DIGEST,
	IK_DATA_DIGEST,
	IK_MAX_RECV_DSL,
	IK_MAX_BURST,
	IK_FIRST_BURST,
	IK_MAX_OUTSTANDING_R2T,
	IK_MAX_CONNECTIONS,
	IK_INITIAL_R2T,
	IK_IMMEDIATE_DATA,
	IK_DATA_PDU_IN_ORDER,
	IK_DATA_SEQ_IN_ORDER,
	IK_TIME2WAIT,
	IK_TIME2RETAIN,
	IK_ERL,
	IK_IF_MARKER,
	IK_OF_MARKER,
	IK_IF_MARK_INT,
	IK_OF_MARK_INT,
	IK_TASK_REPORTING,
	IK_PROTOCOL_LEVEL,
	IK_COUNT
};

/* A bit of iscsi_params.seen that is not a key: we declared our
 * MaxRecvDataSegmentLength already. */
#define IK_SEEN_TARGET_MRDSL (1ull << 63)

enum iscsi_key_kind {
	KIND_DIGEST,      /* list: CRC32C, None */
	KIND_LIST_TR,     /* list: RFC3720, ResponseFence, FastAbort */
	KIND_MIN,         /* numerical, result function Minimum */
	KIND_MAX,         /* numerical, result function Maximum */
	KIND_OR,          /* Boolean, result function OR */
	KIND_AND,         /* Boolean, result function AND */
	KIND_DECLARE,     /* declarative number */
	KIND_MARKER,      /* obsolete Boolean (RFC 7143 13.26) */
	KIND_MARKINT,     /* obsolete range (RFC 7143 13.26) */
};

struct iscsi_key_desc {
	const char *name;
	enum iscsi_key_kind kind;
	bool leading_only;          /* Use: LO */
	bool discovery_irrelevant;  /* Irrelevant when: SessionType=Discovery */
	uint32_t lo, hi;            /* admissible range of a numerical value */
};

static const struct iscsi_key_desc iscsi_keys[IK_COUNT] = {
	/* 13.1 */
	[IK_HEADER_DIGEST] = { .name = "HeaderDigest", .kind = KIND_DIGEST },
	[IK_DATA_DIGEST] = { .name = "DataDigest", .kind = KIND_DIGEST },
	/* 13.12 */
	[IK_MAX_RECV_DSL] = { .name = "MaxRecvDataSegmentLength", .kind = KIND_DECLARE,
			      .lo = 512, .hi = 16777215 },
	/* 13.13 */
	[IK_MAX_BURST] = { .name = "MaxBurstLength", .kind = KIND_MIN, .leading_only = true,
			   .discovery_irrelevant = true, .lo = 512, .hi = 16777215 },
	/* 13.14 */
	[IK_FIRST_BURST] = { .name = "FirstBurstLength", .kind = KIND_MIN, .leading_only = true,
			     .discovery_irrelevant = true, .lo = 512, .hi = 16777215 },
	/* 13.17 */
	[IK_MAX_OUTSTANDING_R2T] = { .name = "MaxOutstandingR2T", .kind = KIND_MIN,
				     .leading_only = true, .discovery_irrelevant = true,
				     .lo = 1, .hi = 65535 },
	/* 13.2 */
	[IK_MAX_CONNECTIONS] = { .name = "MaxConnections", .kind = KIND_MIN, .leading_only = true,
				 .discovery_irrelevant = true, .lo = 1, .hi = 65535 },
	/* 13.10 */
	[IK_INITIAL_R2T] = { .name = "InitialR2T", .kind = KIND_OR, .leading_only = true,
			     .discovery_irrelevant = true },
	/* 13.11 */
	[IK_IMMEDIATE_DATA] = { .name = "ImmediateData", .kind = KIND_AND, .leading_only = true,
				.discovery_irrelevant = true },
	/* 13.18 */
	[IK_DATA_PDU_IN_ORDER] = { .name = "DataPDUInOrder", .kind = KIND_OR, .leading_only = true,
				   .discovery_irrelevant = true },
	/* 13.19 */
	[IK_DATA_SEQ_IN_ORDER] = { .name = "DataSequenceInOrder", .kind = KIND_OR,
				   .leading_only = true, .discovery_irrelevant = true },
	/* 13.15, 13.16, 13.20: relevant in discovery sessions too */
	[IK_TIME2WAIT] = { .name = "DefaultTime2Wait", .kind = KIND_MAX, .leading_only = true,
			   .lo = 0, .hi = 3600 },
	[IK_TIME2RETAIN] = { .name = "DefaultTime2Retain", .kind = KIND_MIN, .leading_only = true,
			     .lo = 0, .hi = 3600 },
	[IK_ERL] = { .name = "ErrorRecoveryLevel", .kind = KIND_MIN, .leading_only = true,
		     .lo = 0, .hi = 2 },
	/* 13.26: obsoleted keys */
	[IK_IF_MARKER] = { .name = "IFMarker", .kind = KIND_MARKER },
	[IK_OF_MARKER] = { .name = "OFMarker", .kind = KIND_MARKER },
	[IK_IF_MARK_INT] = { .name = "IFMarkInt", .kind = KIND_MARKINT },
	[IK_OF_MARK_INT] = { .name = "OFMarkInt", .kind = KIND_MARKINT },
	/* 13.23 */
	[IK_TASK_REPORTING] = { .name = "TaskReporting", .kind = KIND_LIST_TR,
				.leading_only = true, .discovery_irrelevant = true },
	/* 13.24 and RFC 7144 */
	[IK_PROTOCOL_LEVEL] = { .name = "iSCSIProtocolLevel", .kind = KIND_MIN,
				.leading_only = true, .discovery_irrelevant = true,
				.lo = 0, .hi = 31 },
};

/* RFC 7143 13.24: an implementation of that document (and nothing newer)
 * uses iSCSIProtocolLevel 1. */
#define ISCSI_OUR_PROTOCOL_LEVEL 1u

static uint32_t iscsi_clamp(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* RFC 7143 6.1: decimal-constant (no leading zero unless it is "0") or
 * hex-constant ("0x"/"0X" and hex digits), an unsigned integer below 2**64. */
static bool iscsi_parse_number(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		if (!*s)
			return false;
		for (; *s; s++) {
			int d;

			if (*s >= '0' && *s <= '9')
				d = *s - '0';
			else if (*s >= 'a' && *s <= 'f')
				d = *s - 'a' + 10;
			else if (*s >= 'A' && *s <= 'F')
				d = *s - 'A' + 10;
			else
				return false;
			if (v >> 60)
				return false;
			v = v << 4 | (uint64_t)d;
		}
		*out = v;
		return true;
	}
	if (s[0] == '0' && s[1])
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

static bool iscsi_parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "Yes") == 0) {
		*out = true;
		return true;
	}
	if (strcmp(s, "No") == 0) {
		*out = false;
		return true;
	}
	return false;
}

/* The first element of the comma-separated list that accept() takes, or
 * NULL. Elements we do not understand are skipped (RFC 7143 6.2.1). */
static const char *iscsi_list_pick(const char *list, const char *const *ours, size_t nours)
{
	const char *p = list;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		for (size_t i = 0; i < nours; i++)
			if (strlen(ours[i]) == n && memcmp(ours[i], p, n) == 0)
				return ours[i];
		if (!comma)
			return NULL;
		p = comma + 1;
	}
}

/* Our own value for a numerical key: what we would choose if we could. */
static uint32_t iscsi_our_value(enum iscsi_key_id id, const struct iscsi_params *p,
				const struct iscsi_limits *lim)
{
	const struct iscsi_key_desc *d = &iscsi_keys[id];

	switch (id) {
	case IK_MAX_BURST:
		return iscsi_clamp(lim->max_burst, d->lo, d->hi);
	case IK_FIRST_BURST: {
		/* FirstBurstLength MUST NOT exceed MaxBurstLength (13.14). */
		uint32_t mb = (p->seen & (1ull << IK_MAX_BURST)) ? p->max_burst
				: iscsi_clamp(lim->max_burst, d->lo, d->hi);

		return MIN(iscsi_clamp(lim->first_burst, d->lo, d->hi), mb);
	}
	case IK_MAX_OUTSTANDING_R2T:
		return iscsi_clamp(lim->max_outstanding_r2t, d->lo, d->hi);
	case IK_MAX_CONNECTIONS:
		return iscsi_clamp(lim->max_connections, d->lo, d->hi);
	case IK_TIME2WAIT:
		return 2;
	case IK_TIME2RETAIN:
		return 20;
	case IK_ERL:
		return 0;       /* no error recovery within a session */
	case IK_PROTOCOL_LEVEL:
		return ISCSI_OUR_PROTOCOL_LEVEL;
	default:
		return 0;
	}
}

static void iscsi_store_number(struct iscsi_params *p, enum iscsi_key_id id, uint32_t v)
{
	switch (id) {
	case IK_MAX_BURST: p->max_burst = v; break;
	case IK_FIRST_BURST: p->first_burst = v; break;
	case IK_MAX_OUTSTANDING_R2T: p->max_outstanding_r2t = v; break;
	case IK_MAX_CONNECTIONS: p->max_connections = v; break;
	case IK_TIME2WAIT: p->default_time2wait = v; break;
	case IK_TIME2RETAIN: p->default_time2retain = v; break;
	case IK_ERL: p->error_recovery_level = v; break;
	case IK_PROTOCOL_LEVEL: p->protocol_level = v; break;
	default: break;
	}
}

static bool iscsi_our_bool(enum iscsi_key_id id, const struct iscsi_limits *lim)
{
	switch (id) {
	case IK_INITIAL_R2T: return lim->initial_r2t;
	case IK_IMMEDIATE_DATA: return lim->immediate_data;
	/* We only place data in order: DataPDUInOrder and
	 * DataSequenceInOrder=Yes (OR: the result is Yes whatever the offer). */
	case IK_DATA_PDU_IN_ORDER: return true;
	case IK_DATA_SEQ_IN_ORDER: return true;
	default: return false;
	}
}

static void iscsi_store_bool(struct iscsi_params *p, enum iscsi_key_id id, bool v)
{
	switch (id) {
	case IK_INITIAL_R2T: p->initial_r2t = v; break;
	case IK_IMMEDIATE_DATA: p->immediate_data = v; break;
	case IK_DATA_PDU_IN_ORDER: p->data_pdu_in_order = v; break;
	case IK_DATA_SEQ_IN_ORDER: p->data_seq_in_order = v; break;
	case IK_IF_MARKER: p->if_marker = v; break;
	case IK_OF_MARKER: p->of_marker = v; break;
	default: break;
	}
}

void iscsi_params_init(struct iscsi_params *p, const struct iscsi_limits *lim)
{
	*p = (struct iscsi_params){
		.header_digest = false,
		.data_digest = false,
		.max_recv_dsl_initiator = 8192,
		.max_recv_dsl_target = lim->max_recv_dsl,
		.max_burst = 262144,
		.first_burst = 65536,
		.max_outstanding_r2t = 1,
		.max_connections = 1,
		.immediate_data = true,
		.initial_r2t = true,
		.data_pdu_in_order = true,
		.data_seq_in_order = true,
		.default_time2wait = 2,
		.default_time2retain = 20,
		.error_recovery_level = 0,
		.if_marker = false,
		.of_marker = false,
		.protocol_level = 0,
		.seen = 0,
	};
}

static enum iscsi_neg iscsi_answer(struct iscsi_text *resp, const char *key, const char *value)
{
	return iscsi_text_add(resp, key, "%s", value) ? NEG_FATAL : NEG_DONE;
}

static enum iscsi_neg iscsi_declare_mrdsl(struct iscsi_params *p, const struct iscsi_limits *lim,
					  struct iscsi_text *resp)
{
	if (p->seen & IK_SEEN_TARGET_MRDSL)
		return NEG_DONE;
	if (iscsi_text_add(resp, "MaxRecvDataSegmentLength", "%u", lim->max_recv_dsl))
		return NEG_FATAL;
	p->seen |= IK_SEEN_TARGET_MRDSL;
	p->max_recv_dsl_target = lim->max_recv_dsl;
	return NEG_DONE;
}

/* The answer to one key the initiator may offer here (looked up and
 * checked by iscsi_params_negotiate), by the kind of value it has
 * (RFC 7143 13: lists, numbers taken as the minimum or maximum, booleans
 * OR-ed or AND-ed, declarations, markers). */
static enum iscsi_neg iscsi_params_answer(struct iscsi_params *p, const struct iscsi_limits *lim,
					  const struct iscsi_key_desc *d, enum iscsi_key_id id,
					  const char *key, const char *value,
					  struct iscsi_text *resp)
{
	uint64_t num;
	bool b;

	switch (d->kind) {
	case KIND_DIGEST: {
		const char *ours[2];
		size_t n = 0;
		const char *pick;

		if (lim->allow_crc32c)
			ours[n++] = "CRC32C";
		if (!lim->require_crc32c)
			ours[n++] = "None";
		pick = iscsi_list_pick(value, ours, n);
		if (!pick)
			return iscsi_answer(resp, key, "Reject");
		if (id == IK_HEADER_DIGEST)
			p->header_digest = pick[0] == 'C';
		else
			p->data_digest = pick[0] == 'C';
		return iscsi_answer(resp, key, pick);
	}
	case KIND_LIST_TR: {
		/* ResponseFence and FastAbort (RFC 7143 4.2.2.3.3) are not
		 * implemented: only the RFC 3720 behaviour. */
		static const char *const ours[] = { "RFC3720" };
		const char *pick = iscsi_list_pick(value, ours, ARRAY_SIZE(ours));

		return iscsi_answer(resp, key, pick ? pick : "Reject");
	}
	case KIND_MIN:
	case KIND_MAX: {
		uint32_t our, res;

		if (!iscsi_parse_number(value, &num) || num < d->lo || num > d->hi)
			return iscsi_answer(resp, key, "Reject");
		our = iscsi_our_value(id, p, lim);
		if (d->kind == KIND_MIN)
			res = MIN((uint32_t)num, our);
		else
			res = MAX((uint32_t)num, our);
		iscsi_store_number(p, id, res);
		return iscsi_text_add(resp, key, "%u", res) ? NEG_FATAL : NEG_DONE;
	}
	case KIND_OR:
	case KIND_AND: {
		bool res;

		if (!iscsi_parse_bool(value, &b))
			return iscsi_answer(resp, key, "Reject");
		if (d->kind == KIND_OR)
			res = b || iscsi_our_bool(id, lim);
		else
			res = b && iscsi_our_bool(id, lim);
		iscsi_store_bool(p, id, res);
		return iscsi_answer(resp, key, res ? "Yes" : "No");
	}
	case KIND_DECLARE:
		/* MaxRecvDataSegmentLength (13.12): what the initiator can
		 * receive, i.e. the largest data segment we may send it. */
		if (!iscsi_parse_number(value, &num) || num < d->lo || num > d->hi)
			return NEG_FATAL;
		p->max_recv_dsl_initiator = (uint32_t)num;
		return iscsi_declare_mrdsl(p, lim, resp);
	case KIND_MARKER:
		/* RFC 7143 13.26: SHOULD answer Reject, MAY answer No, MUST
		 * NOT answer NotUnderstood. "No" is what RFC 3720 initiators
		 * expect from a target without markers (AND with our No). */
		if (!iscsi_parse_bool(value, &b))
			return iscsi_answer(resp, key, "Reject");
		iscsi_store_bool(p, id, false);
		return iscsi_answer(resp, key, "No");
	case KIND_MARKINT:
		/* RFC 7143 13.26: IFMarkInt/OFMarkInt MUST be answered with
		 * Reject (never NotUnderstood). */
		return iscsi_answer(resp, key, "Reject");
	}
	return NEG_UNKNOWN;
}

enum iscsi_neg iscsi_params_negotiate(struct iscsi_params *p, const struct iscsi_limits *lim,
				      bool leading, bool discovery,
				      const char *key, const char *value,
				      struct iscsi_text *resp)
{
	const struct iscsi_key_desc *d = NULL;
	enum iscsi_key_id id;

	for (id = 0; id < IK_COUNT; id++) {
		if (strcmp(key, iscsi_keys[id].name) == 0) {
			d = &iscsi_keys[id];
			break;
		}
	}
	if (!d) {
		/* RFC 7143 13.5.2/13.5.4: private (X-) and public (X#)
		 * extension keys we do not implement. */
		if (key[0] == 'X' && (key[1] == '-' || key[1] == '#'))
			return iscsi_answer(resp, key, "NotUnderstood");
		return NEG_UNKNOWN;
	}

	if (p->seen & (1ull << id)) {
		if (id != IK_MAX_RECV_DSL)
			return NEG_FATAL;
	}
	p->seen |= 1ull << id;

	if ((d->leading_only && !leading) || (d->discovery_irrelevant && discovery))
		return iscsi_answer(resp, key, "Irrelevant");
	/* 13.14: FirstBurstLength is irrelevant when InitialR2T=Yes and
	 * ImmediateData=No; we can tell once both have been negotiated. */
	if (id == IK_FIRST_BURST &&
	    (p->seen & (1ull << IK_INITIAL_R2T)) && (p->seen & (1ull << IK_IMMEDIATE_DATA)) &&
	    p->initial_r2t && !p->immediate_data)
		return iscsi_answer(resp, key, "Irrelevant");

	return iscsi_params_answer(p, lim, d, id, key, value, resp);
}

void iscsi_params_finish(struct iscsi_params *p, const struct iscsi_limits *lim,
			 bool discovery, struct iscsi_text *resp)
{
	/* Declarative keys need no request: tell the initiator how much we
	 * accept even when it did not declare its own value. */
	(void)iscsi_declare_mrdsl(p, lim, resp);
	if (discovery)
		return;
	/* RFC 7143 13.14: FirstBurstLength MUST NOT exceed MaxBurstLength
	 * (both may have been left at defaults or negotiated in any order). */
	if (p->first_burst > p->max_burst)
		p->first_burst = p->max_burst;
}
