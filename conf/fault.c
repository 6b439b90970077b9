/*
 * Fault-injection rules: parsing and validation of one rule's KEY = VALUE
 * pairs into a struct fault_spec (conf/fault.h, targetd-faults(7)).
 *
 * One table lists every key with its parser; a second one every action
 * name with what it means (a sense triple, a status, a kind of fault) and
 * the operation codes it applies to when the rule says none; a third one
 * the named scenarios, each a set of defaults that the rule's own keys
 * override. conf_fault_finish() then refuses keys that the action does not
 * use, so that a rule never silently means less than it says.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf_int.h"
#include "conf/config.h"
#include "conf/fault.h"
#include "common/util.h"

/* ---- operation codes ------------------------------------------------- */

static const uint8_t op_read[] = { 0x08, 0x28, 0xa8, 0x88 };
static const uint8_t op_write[] = { 0x0a, 0x2a, 0xaa, 0x8a, 0x2e, 0xae, 0x8e, 0x9c };
static const uint8_t op_caw[] = { 0x89 };
static const uint8_t op_xcopy[] = { 0x83, 0x84 };
static const uint8_t op_unmap[] = { 0x42 };
static const uint8_t op_ws[] = { 0x41, 0x93 };
static const uint8_t op_vaai[] = { 0x89, 0x83, 0x84, 0x42, 0x41, 0x93 };
static const uint8_t op_verify[] = { 0x2f, 0xaf, 0x8f };
static const uint8_t op_sync[] = { 0x35, 0x91 };
static const uint8_t op_tur[] = { 0x00 };
static const uint8_t op_inquiry[] = { 0x12 };
static const uint8_t op_report_luns[] = { 0xa0 };
static const uint8_t op_request_sense[] = { 0x03 };
static const uint8_t op_read_capacity[] = { 0x25, 0x9e };
static const uint8_t op_reservation[] = { 0x16, 0x17, 0x56, 0x57, 0x5e, 0x5f };

static const struct {
	const char *name;
	const uint8_t *ops;
	size_t n;
} op_groups[] = {
	{ "read", op_read, sizeof(op_read) },
	{ "write", op_write, sizeof(op_write) },
	{ "caw", op_caw, sizeof(op_caw) },
	{ "xcopy", op_xcopy, sizeof(op_xcopy) },
	{ "unmap", op_unmap, sizeof(op_unmap) },
	{ "write-same", op_ws, sizeof(op_ws) },
	{ "vaai", op_vaai, sizeof(op_vaai) },
	{ "verify", op_verify, sizeof(op_verify) },
	{ "sync", op_sync, sizeof(op_sync) },
	{ "tur", op_tur, sizeof(op_tur) },
	{ "inquiry", op_inquiry, sizeof(op_inquiry) },
	{ "report-luns", op_report_luns, sizeof(op_report_luns) },
	{ "request-sense", op_request_sense, sizeof(op_request_sense) },
	{ "read-capacity", op_read_capacity, sizeof(op_read_capacity) },
	{ "reservation", op_reservation, sizeof(op_reservation) },
};

static void ops_set(uint8_t *bm, uint8_t op, bool on)
{
	if (on)
		bm[op >> 3] |= (uint8_t)(1u << (op & 7));
	else
		bm[op >> 3] &= (uint8_t)~(1u << (op & 7));
}

/* "read,write,0x28,!inquiry": groups and codes, "!" takes away; "any" is
 * every code. Applied left to right on an empty set. */
static int parse_ops(const char *v, uint8_t *bm, char *err, size_t errlen)
{
	char buf[256], *save = NULL;

	if (strlen(v) >= sizeof(buf)) {
		snprintf(err, errlen, "too long");
		return -1;
	}
	memset(bm, 0, 32);
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		bool on = true;
		size_t i;

		if (*tok == '!') {
			on = false;
			tok++;
		}
		if (!strcasecmp(tok, "any") || !strcasecmp(tok, "all")) {
			memset(bm, on ? 0xff : 0, 32);
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(op_groups); i++)
			if (!strcasecmp(tok, op_groups[i].name))
				break;
		if (i < ARRAY_SIZE(op_groups)) {
			for (size_t k = 0; k < op_groups[i].n; k++)
				ops_set(bm, op_groups[i].ops[k], on);
			continue;
		}
		{
			char *end;
			unsigned long n;

			errno = 0;
			n = strtoul(tok, &end, 0);
			if (!*tok || *end || errno || n > 0xff) {
				snprintf(err, errlen,
					 "\"%s\" is neither an operation code (0x00 to 0xff) nor one of any, read, "
					 "write, caw, xcopy, unmap, write-same, vaai, verify, sync, tur, inquiry, "
					 "report-luns, request-sense, read-capacity, reservation",
					 tok);
				return -1;
			}
			ops_set(bm, (uint8_t)n, on);
		}
	}
	for (unsigned i = 0; i < 32; i++)
		if (bm[i])
			return 0;
	snprintf(err, errlen, "\"%s\" leaves no operation code", v);
	return -1;
}

/* ---- values ---------------------------------------------------------- */

static int parse_u64(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	char *end;
	unsigned long long n;

	errno = 0;
	if (!isdigit((unsigned char)*v)) {
		snprintf(err, errlen, "\"%s\" is not a number", v);
		return -1;
	}
	n = strtoull(v, &end, 0);
	if (*end || errno) {
		snprintf(err, errlen, "\"%s\" is not a number", v);
		return -1;
	}
	if (n < min || n > max) {
		snprintf(err, errlen, "%llu is out of range (%llu to %llu)", n, (unsigned long long)min,
			 (unsigned long long)max);
		return -1;
	}
	*out = n;
	return 0;
}

int conf_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v;
	double mul;

	if (!s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || v < 0 || !isfinite(v))
		return -1;
	if (!*end) {
		if (v != 0)
			return -1;    /* a unit is required */
		mul = 0;
	} else if (!strcmp(end, "ns")) {
		mul = 1;
	} else if (!strcmp(end, "us")) {
		mul = 1e3;
	} else if (!strcmp(end, "ms")) {
		mul = 1e6;
	} else if (!strcmp(end, "s")) {
		mul = 1e9;
	} else if (!strcmp(end, "m") || !strcmp(end, "min")) {
		mul = 60e9;
	} else if (!strcmp(end, "h")) {
		mul = 3600e9;
	} else {
		return -1;
	}
	if (v * mul > 30.0 * 24 * 3600e9)   /* a month is more than anyone waits */
		return -1;
	*ns = (uint64_t)(v * mul + 0.5);
	return 0;
}

static int parse_dur(const char *v, uint64_t *out, char *err, size_t errlen)
{
	if (conf_parse_duration(v, out)) {
		snprintf(err, errlen, "\"%s\" is not a duration (a number with ns, us, ms, s, m or h, "
			 "up to 30 days)", v);
		return -1;
	}
	return 0;
}

static int parse_prob(const char *v, double *out, char *err, size_t errlen)
{
	char *end;
	double p;

	errno = 0;
	p = strtod(v, &end);
	if (end != v && *end == '%' && !end[1]) {
		p /= 100;
		end++;
	}
	if (end == v || *end || errno || !(p >= 0 && p <= 1)) {
		snprintf(err, errlen, "\"%s\" is not a probability (0 to 1, or 0%% to 100%%)", v);
		return -1;
	}
	*out = p;
	return 0;
}

/* "KEY/ASC/ASCQ", each hexadecimal ("3/11/0", "0x3/0x11/0x00"). */
static int parse_sense(const char *v, uint8_t *key, uint8_t *asc, uint8_t *ascq, char *err,
		       size_t errlen)
{
	unsigned long x[3];
	const char *p = v;

	for (int i = 0; i < 3; i++) {
		char *end;

		if (!isxdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		x[i] = strtoul(p, &end, 16);
		if (errno || x[i] > 0xff || (i == 0 && x[i] > 0xf))
			goto bad;
		if (i < 2 && *end != '/')
			goto bad;
		if (i == 2 && *end)
			goto bad;
		p = end + 1;
	}
	*key = (uint8_t)x[0];
	*asc = (uint8_t)x[1];
	*ascq = (uint8_t)x[2];
	return 0;
bad:
	snprintf(err, errlen, "\"%s\" is not KEY/ASC/ASCQ in hexadecimal (such as 3/11/0)", v);
	return -1;
}

/* "20ms", "10ms-50ms", "fixed:20ms", "uniform:10ms:50ms", "exp:20ms",
 * "spike:500ms:0.01". */
static int parse_delay(const char *v, struct fault_spec *s, char *err, size_t errlen)
{
	char buf[96], *a, *b;
	const char *form = "fixed";

	if (strlen(v) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", v);
	a = buf;
	if (isalpha((unsigned char)*a)) {
		char *colon = strchr(a, ':');

		if (!colon)
			goto bad;
		*colon = 0;
		form = a;
		a = colon + 1;
	}
	b = strchr(a, strcmp(form, "fixed") ? ':' : '-');
	if (b)
		*b++ = 0;
	if (!strcmp(form, "fixed") && b)
		form = "uniform";     /* "10ms-50ms" */
	s->delay_max_ns = 0;
	s->spike_p = 0;
	if (conf_parse_duration(a, &s->delay_ns))
		goto bad;
	if (!strcmp(form, "fixed") || !strcmp(form, "exp")) {
		if (b)
			goto bad;
		s->dist = !strcmp(form, "exp") ? FAULT_DIST_EXP : FAULT_DIST_FIXED;
		if (s->dist == FAULT_DIST_EXP && !s->delay_ns)
			goto bad;
		return 0;
	}
	if (!b)
		goto bad;
	if (!strcmp(form, "uniform")) {
		if (conf_parse_duration(b, &s->delay_max_ns) || s->delay_max_ns < s->delay_ns)
			goto bad;
		s->dist = FAULT_DIST_UNIFORM;
		return 0;
	}
	if (!strcmp(form, "spike")) {
		char tmp[8];

		if (parse_prob(b, &s->spike_p, tmp, sizeof(tmp)) || s->spike_p <= 0)
			goto bad;
		s->dist = FAULT_DIST_SPIKE;
		return 0;
	}
bad:
	snprintf(err, errlen,
		 "\"%s\" is not a delay: 20ms (fixed), 10ms-50ms or uniform:10ms:50ms, exp:20ms (mean), "
		 "spike:500ms:0.01 (that delay with that probability)",
		 v);
	return -1;
}

static int parse_withdraw(const char *v, uint32_t *out, char *err, size_t errlen)
{
	char buf[128], *save = NULL;

	if (strlen(v) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", v);
	*out = 0;
	for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		if (!strcasecmp(tok, "caw") || !strcasecmp(tok, "ats"))
			*out |= FAULT_CAP_CAW;
		else if (!strcasecmp(tok, "xcopy"))
			*out |= FAULT_CAP_XCOPY;
		else if (!strcasecmp(tok, "unmap"))
			*out |= FAULT_CAP_UNMAP;
		else if (!strcasecmp(tok, "write-same"))
			*out |= FAULT_CAP_WRITE_SAME;
		else if (!strcasecmp(tok, "vaai") || !strcasecmp(tok, "all"))
			*out |= FAULT_CAP_CAW | FAULT_CAP_XCOPY | FAULT_CAP_UNMAP | FAULT_CAP_WRITE_SAME;
		else
			goto bad;
	}
	if (*out)
		return 0;
bad:
	snprintf(err, errlen, "\"%s\": list caw, xcopy, unmap, write-same (or vaai for all four)", v);
	return -1;
}

static const struct {
	const char *name;
	uint8_t state;      /* enum alua_state of scsi/pr.h */
} alua_states[] = {
	{ "active/optimized", 0 }, { "ao", 0 }, { "active/non-optimized", 1 }, { "an", 1 },
	{ "standby", 2 }, { "s", 2 }, { "unavailable", 3 }, { "u", 3 }, { "transitioning", 0xf },
};

/* ---- actions and scenarios ------------------------------------------- */

struct fault_action_def {
	const char *name;
	enum fault_action action;
	uint8_t status;               /* FAULT_STATUS */
	uint8_t key, asc, ascq;       /* FAULT_SENSE */
	const char *ops;              /* operation codes when the rule names none */
};

static const struct fault_action_def actions[] = {
	{ "check-condition", FAULT_SENSE, 0, 0, 0, 0, "any" },
	{ "medium-error", FAULT_MEDIUM_ERROR, 0, 0x3, 0x11, 0x00, "read,write,verify" },
	{ "not-ready", FAULT_SENSE, 0, 0x2, 0x04, 0x00, "any,!inquiry,!report-luns,!request-sense" },
	{ "lun-not-supported", FAULT_SENSE, 0, 0x5, 0x25, 0x00, "any,!inquiry,!report-luns,!request-sense" },
	{ "aborted-command", FAULT_SENSE, 0, 0xb, 0x00, 0x00, "any" },
	{ "hardware-error", FAULT_SENSE, 0, 0x4, 0x44, 0x00, "any" },
	{ "space-allocation-failed", FAULT_SENSE, 0, 0x7, 0x27, 0x07, "write,write-same" },
	{ "write-protected", FAULT_SENSE, 0, 0x7, 0x27, 0x00, "write,write-same,caw,unmap,xcopy" },
	{ "invalid-opcode", FAULT_SENSE, 0, 0x5, 0x20, 0x00, "any" },
	{ "transitioning", FAULT_SENSE, 0, 0x2, 0x04, 0x0a, "any,!inquiry,!report-luns,!request-sense" },
	{ "standby", FAULT_SENSE, 0, 0x2, 0x04, 0x0b, "any,!inquiry,!report-luns,!request-sense" },
	{ "unavailable", FAULT_SENSE, 0, 0x2, 0x04, 0x0c, "any,!inquiry,!report-luns,!request-sense" },
	{ "power-on", FAULT_SENSE, 0, 0x6, 0x29, 0x00, "any,!inquiry,!report-luns,!request-sense" },
	{ "reset", FAULT_SENSE, 0, 0x6, 0x29, 0x03, "any,!inquiry,!report-luns,!request-sense" },
	{ "mode-changed", FAULT_SENSE, 0, 0x6, 0x2a, 0x01, "any,!inquiry,!report-luns,!request-sense" },
	{ "alua-changed", FAULT_SENSE, 0, 0x6, 0x2a, 0x06, "any,!inquiry,!report-luns,!request-sense" },
	{ "capacity-changed", FAULT_SENSE, 0, 0x6, 0x2a, 0x09, "any,!inquiry,!report-luns,!request-sense" },
	{ "luns-changed", FAULT_SENSE, 0, 0x6, 0x3f, 0x0e, "any,!inquiry,!report-luns,!request-sense" },
	{ "busy", FAULT_STATUS, 0x08, 0, 0, 0, "any" },
	{ "task-set-full", FAULT_STATUS, 0x28, 0, 0, 0, "any" },
	{ "reservation-conflict", FAULT_STATUS, 0x18, 0, 0, 0, "any" },
	{ "miscompare", FAULT_MISCOMPARE, 0, 0xe, 0x1d, 0x00, "caw" },
	{ "latency", FAULT_LATENCY, 0, 0, 0, 0, "any" },
	{ "stall", FAULT_STALL, 0, 0, 0, 0, "any" },
	{ "drop", FAULT_DROP, 0, 0, 0, 0, "any" },
	{ "withhold-r2t", FAULT_WITHHOLD_R2T, 0, 0, 0, 0, "any" },
	{ "corrupt-digest", FAULT_CORRUPT_DIGEST, 0, 0, 0, 0, "read" },
	{ "withdraw", FAULT_WITHDRAW, 0, 0, 0, 0, NULL },
	{ "capacity", FAULT_CAPACITY, 0, 0, 0, 0, NULL },
	{ "alua", FAULT_ALUA, 0, 0, 0, 0, NULL },
	{ "drop-after", FAULT_DROP_AFTER, 0, 0, 0, 0, NULL },
	{ "nop-storm", FAULT_NOP_STORM, 0, 0, 0, 0, NULL },
	{ "close-portal", FAULT_CLOSE_PORTAL, 0, 0, 0, 0, NULL },
	{ "refuse-login", FAULT_REFUSE_LOGIN, 0, 0, 0, 0, NULL },
};

/* A scenario: an action and defaults, as KEY=VALUE words. */
static const struct {
	const char *name;
	const char *action;
	const char *defaults;
} scenarios[] = {
	{ "apd", "stall", "op=any" },
	{ "pdl", "lun-not-supported", "op=any,!inquiry,!report-luns,!request-sense" },
	{ "path-flap", "close-portal", "period=30s down=10s" },
	{ "ats-heartbeat-miscompare", "miscompare", "op=caw count=1 offset=0" },
	{ "slow-disk", "latency", "op=read,write delay=exp:20ms" },
	{ "out-of-space", "space-allocation-failed", "op=write,write-same after_bytes=0" },
};

/* ---- the keys -------------------------------------------------------- */

/* Every key of a rule: X(ENUM, name), the parser of each is k_name(). */
#define FAULT_KEYS(X) \
	X(NAME, name) X(SCENARIO, scenario) X(ACTION, action) X(LUN, lun) \
	X(INITIATOR, initiator) X(PORTAL, portal) X(TPGT, tpgt) X(OP, op) \
	X(LBA, lba) X(EVERY, every) X(PROBABILITY, probability) X(SEED, seed) \
	X(COUNT, count) X(AFTER, after) X(DURATION, duration) X(AFTER_BYTES, after_bytes) \
	X(SENSE, sense) X(INFO, info) X(OFFSET, offset) X(DELAY, delay) \
	X(TIMEOUT, timeout) X(WHAT, what) X(SIZE, size) X(STATE, state) \
	X(PDUS, pdus) X(RATE, rate) X(PERIOD, period) X(DOWN, down) \
	X(LOGIN_STATUS, login_status)

enum key_id {
#define X(K, n) K_##K,
	FAULT_KEYS(X)
#undef X
	K__COUNT
};

typedef int (*key_fn)(struct conf_fault *f, const char *v, char *err, size_t errlen);

static int k_name(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	size_t n = strlen(v);

	if (!n || n >= FAULT_NAME_MAX) {
		snprintf(err, errlen, "1 to %d characters", FAULT_NAME_MAX - 1);
		return -1;
	}
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.') {
			snprintf(err, errlen, "\"%s\": letters, digits, '-', '_' and '.' only", v);
			return -1;
		}
	if (!strncmp(v, "rule", 4) && isdigit((unsigned char)v[4])) {
		snprintf(err, errlen, "\"%s\": names rule<N> are the daemon's own", v);
		return -1;
	}
	memcpy(f->spec.name, v, n + 1);
	return 0;
}

static int k_scenario(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++)
		if (!strcasecmp(v, scenarios[i].name)) {
			snprintf(f->spec.scenario, sizeof(f->spec.scenario), "%s", scenarios[i].name);
			return 0;
		}
	snprintf(err, errlen, "\"%s\" is not a scenario (apd, pdl, path-flap, ats-heartbeat-miscompare, "
		 "slow-disk, out-of-space)", v);
	return -1;
}

static const struct fault_action_def *action_find(const char *v)
{
	for (size_t i = 0; i < ARRAY_SIZE(actions); i++)
		if (!strcasecmp(v, actions[i].name))
			return &actions[i];
	return NULL;
}

static int k_action(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	const struct fault_action_def *a = action_find(v);

	if (!a) {
		size_t off = (size_t)snprintf(err, errlen, "\"%s\" is not an action; one of", v);

		for (size_t i = 0; i < ARRAY_SIZE(actions) && off < errlen; i++)
			off += (size_t)snprintf(err + off, errlen - off, "%s %s", i ? "," : "",
						actions[i].name);
		return -1;
	}
	f->spec.action = a->action;
	f->spec.status = a->status;
	f->spec.key = a->key;
	f->spec.asc = a->asc;
	f->spec.ascq = a->ascq;
	return 0;
}

static int k_lun(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(v, 0, 255, &n, err, errlen))
		return -1;
	f->spec.lun = (int)n;
	return 0;
}

static int k_initiator(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	const char *why = conf_iscsi_name_error(v);

	if (why) {
		snprintf(err, errlen, "\"%s\": %s", v, why);
		return -1;
	}
	snprintf(f->spec.initiator, sizeof(f->spec.initiator), "%s", v);
	return 0;
}

static int k_portal(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	char host[48];
	unsigned port;
	bool has_port;

	if (conf_split_listen(v, host, sizeof(host), &port, &has_port, NULL) || port > 65535) {
		snprintf(err, errlen, "\"%s\" is not a portal (ADDRESS:PORT as in listen)", v);
		return -1;
	}
	if (strchr(host, ':'))
		snprintf(f->spec.portal, sizeof(f->spec.portal), "[%s]:%u", host, port);
	else
		snprintf(f->spec.portal, sizeof(f->spec.portal), "%s:%u", host, port);
	return 0;
}

static int k_tpgt(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(v, 1, 65535, &n, err, errlen))
		return -1;
	f->spec.tpgt = (int)n;
	return 0;
}

static int k_op(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	if (parse_ops(v, f->spec.ops, err, errlen))
		return -1;
	snprintf(f->op_text, sizeof(f->op_text), "%s", v);
	return 0;
}

/* "N", "N-M" (inclusive), "N+COUNT". */
static int k_lba(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	char buf[64], *sep;
	uint64_t a, b;
	char sepc = 0;

	if (strlen(v) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", v);
	sep = strpbrk(buf, "-+");
	if (sep) {
		sepc = *sep;
		*sep++ = 0;
	}
	if (parse_u64(buf, 0, UINT64_MAX, &a, err, errlen))
		goto bad;
	if (!sep) {
		b = a;
	} else if (parse_u64(sep, sepc == '+' ? 1 : 0, UINT64_MAX, &b, err, errlen)) {
		goto bad;
	} else if (sepc == '+') {
		if (a + b < a)
			goto bad;
		b = a + b - 1;
	}
	if (b < a)
		goto bad;
	f->spec.has_lba = true;
	f->spec.lba_first = a;
	f->spec.lba_last = b;
	return 0;
bad:
	snprintf(err, errlen, "\"%s\" is not an LBA range: LBA, FIRST-LAST or FIRST+COUNT", v);
	return -1;
}

static int k_every(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(v, 1, UINT32_MAX, &n, err, errlen))
		return -1;
	f->spec.every = (uint32_t)n;
	return 0;
}

static int k_probability(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	if (parse_prob(v, &f->spec.probability, err, errlen))
		return -1;
	f->spec.has_probability = true;
	return 0;
}

static int k_seed(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	return parse_u64(v, 0, UINT64_MAX, &f->spec.seed, err, errlen);
}

static int k_count(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	return parse_u64(v, 1, UINT64_MAX, &f->spec.count, err, errlen);
}

static int k_after(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	return parse_dur(v, &f->spec.after_ns, err, errlen);
}

static int k_duration(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	if (parse_dur(v, &f->spec.duration_ns, err, errlen))
		return -1;
	if (!f->spec.duration_ns) {
		snprintf(err, errlen, "must be more than 0 (leave it out for a rule without an end)");
		return -1;
	}
	return 0;
}

static int k_after_bytes(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	if (conf_parse_size(v, &f->spec.after_bytes)) {
		snprintf(err, errlen, "\"%s\" is not a size (bytes, or a number with K, M, G or T)", v);
		return -1;
	}
	return 0;
}

static int k_sense(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	return parse_sense(v, &f->spec.key, &f->spec.asc, &f->spec.ascq, err, errlen);
}

static int k_info(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	if (parse_u64(v, 0, UINT64_MAX, &f->spec.info, err, errlen))
		return -1;
	f->spec.has_info = true;
	return 0;
}

static int k_offset(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(v, 0, UINT32_MAX, &n, err, errlen))
		return -1;
	f->spec.offset = (uint32_t)n;
	return 0;
}

static int k_delay(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	return parse_delay(v, &f->spec, err, errlen);
}

static int k_timeout(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	return parse_dur(v, &f->spec.timeout_ns, err, errlen);
}

static int k_what(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	return parse_withdraw(v, &f->spec.withdraw, err, errlen);
}

static int k_size(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	if (conf_parse_size(v, &f->spec.size_bytes) || !f->spec.size_bytes) {
		snprintf(err, errlen, "\"%s\" is not a size (bytes, or a number with K, M, G or T)", v);
		return -1;
	}
	return 0;
}

static int k_state(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	for (size_t i = 0; i < ARRAY_SIZE(alua_states); i++)
		if (!strcasecmp(v, alua_states[i].name)) {
			f->spec.alua_state = alua_states[i].state;
			return 0;
		}
	snprintf(err, errlen, "\"%s\" is not an access state (active/optimized, active/non-optimized, "
		 "standby, unavailable, transitioning)", v);
	return -1;
}

static int k_pdus(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(v, 1, UINT32_MAX, &n, err, errlen))
		return -1;
	f->spec.pdus = (uint32_t)n;
	return 0;
}

static int k_rate(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(v, 1, FAULT_NOP_STORM_MAX, &n, err, errlen))
		return -1;
	f->spec.rate = (uint32_t)n;
	return 0;
}

static int k_period(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	if (parse_dur(v, &f->spec.period_ns, err, errlen))
		return -1;
	if (f->spec.period_ns < 1000000000ull) {
		snprintf(err, errlen, "at least 1s (portals are looked at once a second)");
		return -1;
	}
	return 0;
}

static int k_down(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	return parse_dur(v, &f->spec.down_ns, err, errlen);
}

static int k_login_status(struct conf_fault *f, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(v, 0x0300, 0x03ff, &n, err, errlen)) {
		snprintf(err, errlen, "\"%s\": a target error status, 0x0300 to 0x03ff (0x0301 service "
			 "unavailable, 0x0302 out of resources)", v);
		return -1;
	}
	f->spec.login_status = (uint16_t)n;
	return 0;
}

static const struct {
	const char *name;
	key_fn fn;
} keys[K__COUNT] = {
#define X(K, n) [K_##K] = { #n, k_##n },
	FAULT_KEYS(X)
#undef X
};

#define BIT(k) (1ull << (k))

static int key_find(const char *name)
{
	for (int i = 0; i < K__COUNT; i++)
		if (!strcmp(name, keys[i].name))
			return i;
	return -1;
}

void conf_fault_init(struct conf_fault *f)
{
	memset(f, 0, sizeof(*f));
	f->spec.lun = -1;
	f->spec.tpgt = -1;
	f->spec.seed = 1;
	f->spec.login_status = 0x0301;
}

bool conf_fault_has_key(const struct conf_fault *f, const char *key)
{
	int k = key_find(key);

	return k >= 0 && (f->given & BIT(k));
}

int conf_fault_set(struct conf_fault *f, const char *key, const char *value, char *err,
		   size_t errlen)
{
	int k = key_find(key);

	if (k < 0) {
		const char *best = NULL;
		unsigned best_d = UINT_MAX;

		for (int i = 0; i < K__COUNT; i++) {
			unsigned d = conf_distance(key, keys[i].name);

			if (d < best_d) {
				best_d = d;
				best = keys[i].name;
			}
		}
		if (best_d <= 2)
			snprintf(err, errlen, "unknown key (did you mean %s?)", best);
		else
			snprintf(err, errlen, "unknown key (see targetd-faults(7))");
		return -1;
	}
	if (f->given & BIT(k)) {
		snprintf(err, errlen, "given twice");
		return -1;
	}
	if (keys[k].fn(f, value, err, errlen))
		return -1;
	f->given |= BIT(k);
	return 0;
}

/* The keys each kind of action reads (beyond name, scenario, action). */
static uint64_t keys_for(enum fault_action a)
{
	const uint64_t scope = BIT(K_LUN) | BIT(K_INITIATOR) | BIT(K_PORTAL) | BIT(K_TPGT);
	const uint64_t trig = BIT(K_OP) | BIT(K_LBA) | BIT(K_EVERY) | BIT(K_PROBABILITY) |
			      BIT(K_SEED) | BIT(K_COUNT) | BIT(K_AFTER) | BIT(K_DURATION) |
			      BIT(K_AFTER_BYTES);
	const uint64_t conn = BIT(K_INITIATOR) | BIT(K_PORTAL) | BIT(K_AFTER) | BIT(K_DURATION);

	switch (a) {
	case FAULT_SENSE:
		return scope | trig | BIT(K_SENSE) | BIT(K_INFO);
	case FAULT_MEDIUM_ERROR:
	case FAULT_STATUS:
	case FAULT_DROP:
	case FAULT_WITHHOLD_R2T:
	case FAULT_CORRUPT_DIGEST:
		return scope | trig;
	case FAULT_MISCOMPARE:
		return scope | trig | BIT(K_OFFSET);
	case FAULT_LATENCY:
		return scope | trig | BIT(K_DELAY);
	case FAULT_STALL:
		return scope | trig | BIT(K_TIMEOUT);
	case FAULT_WITHDRAW:
		return BIT(K_LUN) | BIT(K_WHAT);
	case FAULT_CAPACITY:
		return BIT(K_LUN) | BIT(K_SIZE);
	case FAULT_ALUA:
		return BIT(K_TPGT) | BIT(K_STATE);
	case FAULT_DROP_AFTER:
		return conn | BIT(K_PDUS) | BIT(K_COUNT);
	case FAULT_NOP_STORM:
		return conn | BIT(K_RATE);
	case FAULT_CLOSE_PORTAL:
		return BIT(K_PORTAL) | BIT(K_AFTER) | BIT(K_DURATION) | BIT(K_PERIOD) | BIT(K_DOWN);
	case FAULT_REFUSE_LOGIN:
		return conn | BIT(K_COUNT) | BIT(K_LOGIN_STATUS);
	default:
		return 0;
	}
}

/* Keys a scenario's defaults fill in (only where the rule wrote none). */
static int apply_scenario(struct conf_fault *f, char *err, size_t errlen, const char **bad_key)
{
	const char *action = NULL, *defs = NULL;
	char buf[256], *save = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++)
		if (!strcmp(f->spec.scenario, scenarios[i].name)) {
			action = scenarios[i].action;
			defs = scenarios[i].defaults;
		}
	if (!action)
		return 0;
	if (f->given & BIT(K_ACTION)) {
		*bad_key = "action";
		snprintf(err, errlen, "scenario %s sets the action itself (%s)", f->spec.scenario, action);
		return -1;
	}
	if (conf_fault_set(f, "action", action, err, errlen))
		return -1;
	snprintf(buf, sizeof(buf), "%s", defs);
	for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');

		*eq = 0;
		if (conf_fault_has_key(f, w))
			continue;
		if (conf_fault_set(f, w, eq + 1, err, errlen))
			return -1;
	}
	return 0;
}

int conf_fault_finish(struct conf_fault *f, char *err, size_t errlen, const char **bad_key)
{
	struct fault_spec *s = &f->spec;
	const struct fault_action_def *def = NULL;
	uint64_t extra;

	*bad_key = NULL;
	if (apply_scenario(f, err, errlen, bad_key))
		return -1;
	if (!(f->given & BIT(K_ACTION))) {
		*bad_key = "action";
		snprintf(err, errlen, "missing (what to inject, or a scenario; see targetd-faults(7))");
		return -1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(actions); i++)
		if (actions[i].action == s->action &&
		    (s->action != FAULT_SENSE || (actions[i].key == s->key && actions[i].asc == s->asc &&
						  actions[i].ascq == s->ascq)))
			def = &actions[i];
	extra = f->given & ~(BIT(K_NAME) | BIT(K_SCENARIO) | BIT(K_ACTION) | keys_for(s->action));
	if (extra) {
		int k = __builtin_ctzll(extra);

		*bad_key = keys[k].name;
		snprintf(err, errlen, "not used by action %s", conf_fault_action_name(s));
		return -1;
	}
	if (s->action == FAULT_SENSE && !s->key && !s->asc && !(f->given & BIT(K_SENSE))) {
		*bad_key = "sense";
		snprintf(err, errlen, "required by check-condition (KEY/ASC/ASCQ, such as 3/11/0)");
		return -1;
	}
	if (fault_spec_per_command(s) && !(f->given & BIT(K_OP))) {
		const char *ops = def && def->ops ? def->ops : "any";
		char tmp[8];

		parse_ops(ops, s->ops, tmp, sizeof(tmp));
		snprintf(f->op_text, sizeof(f->op_text), "%s", ops);
	}
	if (s->action == FAULT_LATENCY && !(f->given & BIT(K_DELAY))) {
		*bad_key = "delay";
		snprintf(err, errlen, "required by latency (such as 20ms, 10ms-50ms, exp:20ms, spike:500ms:0.01)");
		return -1;
	}
	if (s->action == FAULT_WITHDRAW && !(f->given & BIT(K_WHAT))) {
		*bad_key = "what";
		snprintf(err, errlen, "required by withdraw (caw, xcopy, unmap, write-same or vaai)");
		return -1;
	}
	if (s->action == FAULT_CAPACITY && !(f->given & BIT(K_SIZE))) {
		*bad_key = "size";
		snprintf(err, errlen, "required by capacity (the size the LUN then reports)");
		return -1;
	}
	if (s->action == FAULT_ALUA && (!(f->given & BIT(K_TPGT)) || !(f->given & BIT(K_STATE)))) {
		*bad_key = f->given & BIT(K_TPGT) ? "state" : "tpgt";
		snprintf(err, errlen, "alua needs tpgt (the target portal group) and state");
		return -1;
	}
	if (s->action == FAULT_DROP_AFTER && !(f->given & BIT(K_PDUS))) {
		*bad_key = "pdus";
		snprintf(err, errlen, "required by drop-after (how many PDUs a connection gets first)");
		return -1;
	}
	if (s->action == FAULT_NOP_STORM && !(f->given & BIT(K_RATE))) {
		*bad_key = "rate";
		snprintf(err, errlen, "required by nop-storm (NOP-In PDUs per second, 1 to %u)",
			 FAULT_NOP_STORM_MAX);
		return -1;
	}
	if (s->action == FAULT_CLOSE_PORTAL) {
		if (!strcmp(s->scenario, "path-flap") && !s->portal[0]) {
			*bad_key = "portal";
			snprintf(err, errlen, "path-flap needs the portal that flaps (ADDRESS:PORT)");
			return -1;
		}
		if ((f->given & BIT(K_DOWN)) && !s->period_ns) {
			*bad_key = "down";
			snprintf(err, errlen, "goes with period (down that long every period)");
			return -1;
		}
		if (s->period_ns && (s->down_ns < 1000000000ull || s->down_ns >= s->period_ns)) {
			*bad_key = "down";
			snprintf(err, errlen, "must be at least 1s and shorter than period");
			return -1;
		}
	}
	if (s->action == FAULT_ALUA) {
		s->alua_tpgt = (uint16_t)s->tpgt;   /* the group to switch, not a scope */
		s->tpgt = -1;
	}
	if (s->has_lba && !fault_spec_per_command(s)) {
		*bad_key = "lba";
		snprintf(err, errlen, "not used by action %s", conf_fault_action_name(s));
		return -1;
	}
	return 0;
}

const char *conf_fault_action_name(const struct fault_spec *s)
{
	const char *any = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(actions); i++) {
		if (actions[i].action != s->action)
			continue;
		if (s->action != FAULT_SENSE && s->action != FAULT_STATUS)
			return actions[i].name;
		if (s->action == FAULT_STATUS && actions[i].status == s->status)
			return actions[i].name;
		if (s->action == FAULT_SENSE) {
			if (actions[i].key == s->key && actions[i].asc == s->asc &&
			    actions[i].ascq == s->ascq)
				return actions[i].name;
			if (!any)
				any = actions[i].name;   /* check-condition comes first */
		}
	}
	return any ? any : "none";
}

static void fmt_dur(char *out, size_t len, uint64_t ns)
{
	if (ns == 0)
		snprintf(out, len, "0");
	else if (ns % 3600000000000ull == 0)
		snprintf(out, len, "%lluh", (unsigned long long)(ns / 3600000000000ull));
	else if (ns % 60000000000ull == 0)
		snprintf(out, len, "%llum", (unsigned long long)(ns / 60000000000ull));
	else if (ns % 1000000000ull == 0)
		snprintf(out, len, "%llus", (unsigned long long)(ns / 1000000000ull));
	else if (ns % 1000000ull == 0)
		snprintf(out, len, "%llums", (unsigned long long)(ns / 1000000ull));
	else if (ns % 1000ull == 0)
		snprintf(out, len, "%lluus", (unsigned long long)(ns / 1000ull));
	else
		snprintf(out, len, "%lluns", (unsigned long long)ns);
}

struct fmt_buf {
	char *p;
	size_t len, off;
};

static void put(struct fmt_buf *b, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void put(struct fmt_buf *b, const char *key, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->off >= b->len)
		return;
	n = snprintf(b->p + b->off, b->len - b->off, "%s%s=", b->off ? " " : "", key);
	if (n < 0)
		return;
	b->off += (size_t)n;
	if (b->off >= b->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->off, b->len - b->off, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->off += (size_t)n;
}

/* Formatting is one long list of "if this key is set, write it". */
void conf_fault_format(const struct conf_fault *f, char *buf, size_t len)
{
	const struct fault_spec *s = &f->spec;
	struct fmt_buf b = { buf, len, 0 };
	char d1[32], d2[32];

	buf[0] = 0;
	if (s->name[0])
		put(&b, "name", "%s", s->name);
	if (s->scenario[0])
		put(&b, "scenario", "%s", s->scenario);
	put(&b, "action", "%s", conf_fault_action_name(s));
	if (s->lun >= 0)
		put(&b, "lun", "%d", s->lun);
	if (s->initiator[0])
		put(&b, "initiator", "%s", s->initiator);
	if (s->portal[0])
		put(&b, "portal", "%s", s->portal);
	if (s->tpgt >= 0 && s->action != FAULT_ALUA)
		put(&b, "tpgt", "%d", s->tpgt);
	if (fault_spec_per_command(s))
		put(&b, "op", "%s", f->op_text[0] ? f->op_text : "any");
	if (s->has_lba)
		put(&b, "lba", "%llu-%llu", (unsigned long long)s->lba_first,
		    (unsigned long long)s->lba_last);
	if (s->every > 1)
		put(&b, "every", "%u", s->every);
	if (s->has_probability)
		put(&b, "probability", "%g", s->probability);
	if (s->has_probability || s->dist == FAULT_DIST_UNIFORM || s->dist == FAULT_DIST_EXP ||
	    s->dist == FAULT_DIST_SPIKE || (f->given & BIT(K_SEED)))
		put(&b, "seed", "%llu", (unsigned long long)s->seed);
	if (s->count)
		put(&b, "count", "%llu", (unsigned long long)s->count);
	if (s->after_ns) {
		fmt_dur(d1, sizeof(d1), s->after_ns);
		put(&b, "after", "%s", d1);
	}
	if (s->duration_ns) {
		fmt_dur(d1, sizeof(d1), s->duration_ns);
		put(&b, "duration", "%s", d1);
	}
	if (f->given & BIT(K_AFTER_BYTES))
		put(&b, "after_bytes", "%llu", (unsigned long long)s->after_bytes);
	if (s->action == FAULT_SENSE)
		put(&b, "sense", "%x/%02x/%02x", s->key, s->asc, s->ascq);
	if (s->has_info)
		put(&b, "info", "%llu", (unsigned long long)s->info);
	if (s->action == FAULT_MISCOMPARE)
		put(&b, "offset", "%u", s->offset);
	if (s->action == FAULT_LATENCY) {
		fmt_dur(d1, sizeof(d1), s->delay_ns);
		fmt_dur(d2, sizeof(d2), s->delay_max_ns);
		switch (s->dist) {
		case FAULT_DIST_FIXED: put(&b, "delay", "%s", d1); break;
		case FAULT_DIST_UNIFORM: put(&b, "delay", "uniform:%s:%s", d1, d2); break;
		case FAULT_DIST_EXP: put(&b, "delay", "exp:%s", d1); break;
		case FAULT_DIST_SPIKE: put(&b, "delay", "spike:%s:%g", d1, s->spike_p); break;
		}
	}
	if (s->action == FAULT_STALL && s->timeout_ns) {
		fmt_dur(d1, sizeof(d1), s->timeout_ns);
		put(&b, "timeout", "%s", d1);
	}
	if (s->action == FAULT_WITHDRAW)
		put(&b, "what", "%s%s%s%s", s->withdraw & FAULT_CAP_CAW ? "caw," : "",
		    s->withdraw & FAULT_CAP_XCOPY ? "xcopy," : "", s->withdraw & FAULT_CAP_UNMAP ? "unmap," : "",
		    s->withdraw & FAULT_CAP_WRITE_SAME ? "write-same," : "");
	if (s->action == FAULT_WITHDRAW && b.off && b.off <= len && buf[b.off - 1] == ',')
		buf[--b.off] = 0;
	if (s->action == FAULT_CAPACITY)
		put(&b, "size", "%llu", (unsigned long long)s->size_bytes);
	if (s->action == FAULT_ALUA) {
		const char *st = "?";

		for (size_t i = 0; i < ARRAY_SIZE(alua_states); i += 2)
			if (alua_states[i].state == s->alua_state)
				st = alua_states[i].name;
		if (s->alua_state == 0xf)
			st = "transitioning";
		put(&b, "tpgt", "%u", s->alua_tpgt);
		put(&b, "state", "%s", st);
	}
	if (s->action == FAULT_DROP_AFTER)
		put(&b, "pdus", "%u", s->pdus);
	if (s->action == FAULT_NOP_STORM)
		put(&b, "rate", "%u", s->rate);
	if (s->action == FAULT_CLOSE_PORTAL && s->period_ns) {
		fmt_dur(d1, sizeof(d1), s->period_ns);
		fmt_dur(d2, sizeof(d2), s->down_ns);
		put(&b, "period", "%s", d1);
		put(&b, "down", "%s", d2);
	}
	if (s->action == FAULT_REFUSE_LOGIN)
		put(&b, "login_status", "0x%04x", s->login_status);
}

/* ---- the configuration's `faults` lists ------------------------------ */

/* A libconfig value as the text conf_fault_set() reads. */
static bool setting_text(const config_setting_t *m, char *buf, size_t len)
{
	switch (config_setting_type(m)) {
	case CONFIG_TYPE_STRING:
		snprintf(buf, len, "%s", config_setting_get_string(m));
		return true;
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		snprintf(buf, len, "%lld", config_setting_get_int64(m));
		return true;
	case CONFIG_TYPE_FLOAT:
		snprintf(buf, len, "%.17g", config_setting_get_float(m));
		return true;
	default:
		return false;
	}
}

/* The walk of one rule's group (conf_walk, conf/parse.c): every key of
 * the vocabulary has this one handler, which hands the value as text to
 * conf_fault_set(); unknown keys are the walk's (with a suggestion). */
struct fault_walk {
	struct conf_fault *f;
	bool in_lun;
	bool ok;
};

static void conf_fault_key(struct conf_ctx *x, const config_setting_t *m, const char *key, void *obj)
{
	struct fault_walk *w = obj;
	const char *name = config_setting_name(m);
	char val[512], err[512];

	if (w->in_lun && !strcmp(name, "lun")) {
		conf_err(x, m, key, "a rule in a LUN's faults is that LUN's (leave lun out)");
		w->ok = false;
	} else if (!setting_text(m, val, sizeof(val))) {
		conf_err(x, m, key, "must be a string or a number");
		w->ok = false;
	} else if (conf_fault_set(w->f, name, val, err, sizeof(err))) {
		conf_err(x, m, key, "%s", err);
		w->ok = false;
	}
}

static const struct conf_field rule_fields[] = {
#define X(K, n) { #n, CONF_K_FUNC, 0, 0, 0, conf_fault_key },
	FAULT_KEYS(X)
#undef X
};

void conf_parse_faults(struct conf_ctx *x, const config_setting_t *s, const char *key, bool in_lun,
		       struct conf_fault **out, unsigned *n_out)
{
	int n;

	if (config_setting_type(s) != CONFIG_TYPE_LIST) {
		conf_err(x, s, key, "must be a list of groups: faults = ( { action = \"...\"; ... } );");
		return;
	}
	n = config_setting_length(s);
	if (n > FAULT_MAX_RULES) {
		conf_err(x, s, key, "%d rules; at most %d", n, FAULT_MAX_RULES);
		return;
	}
	*out = conf_xcalloc((size_t)(n ? n : 1), sizeof(**out));
	*n_out = 0;
	for (int i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(s, (unsigned)i);
		struct conf_fault *f = &(*out)[*n_out];
		char prefix[CONF_KEY_MAX], k[CONF_KEY_MAX], err[512];
		const char *bad = NULL;
		struct fault_walk w;
		unsigned before;

		conf_keyf(prefix, "%s[%d]", key, i);
		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			conf_err(x, g, prefix, "must be a group { action = \"...\"; ... }");
			continue;
		}
		conf_fault_init(f);
		f->spec.line = config_setting_source_line(g);
		f->spec.origin = in_lun ? FAULT_FROM_LUN : FAULT_FROM_TARGET;
		w = (struct fault_walk){ f, in_lun, true };
		before = x->n_err;
		conf_walk(x, g, prefix, rule_fields, ARRAY_SIZE(rule_fields), &w);
		if (!w.ok || x->n_err != before)
			continue;   /* said; the rule as a whole is not judged */
		if (conf_fault_finish(f, err, sizeof(err), &bad)) {
			const config_setting_t *m = bad ? config_setting_get_member(g, bad) : NULL;

			if (bad)
				conf_key(k, prefix, bad);
			conf_err(x, m ? m : g, bad ? k : prefix, "%s", err);
			continue;
		}
		if (in_lun && !fault_spec_is_scsi(&f->spec)) {
			conf_err(x, g, prefix, "%s is about connections, logins or portals: put it in the "
				 "target's faults", conf_fault_action_name(&f->spec));
			continue;
		}
		if (in_lun && f->spec.action == FAULT_ALUA) {
			conf_err(x, g, prefix, "alua switches a target port group of every LUN: put it in the "
				 "target's faults");
			continue;
		}
		(*n_out)++;
	}
}

void conf_check_fault_luns(struct conf_ctx *x, const config_setting_t *g, const char *prefix,
			   const struct conf_target *t)
{
	const config_setting_t *fs = config_setting_get_member(g, "faults");

	for (unsigned i = 0; fs && i < t->n_faults; i++) {
		const struct fault_spec *s = &t->faults[i].spec;
		bool found = s->lun < 0;
		char k[CONF_KEY_MAX];

		for (unsigned j = 0; !found && j < t->n_luns; j++)
			found = (int)t->luns[j].lun == s->lun;
		if (found)
			continue;
		conf_key(k, prefix, "faults");
		conf_err(x, fs, k, "the rule at line %d names LUN %d, which this target does not have",
			 s->line, s->lun);
	}
}
