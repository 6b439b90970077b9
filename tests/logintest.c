/*
 * logintest: login and name checks against the real daemon, with Login
 * Requests laid out by hand (the raw client of tests/pdufuzz_io.c), so
 * that the test can send what no iSCSI library would: names with spaces,
 * newlines and bytes >= 0x7f, a session type that changes, a 1-byte CHAP
 * challenge, a login paused in the middle while the daemon reloads.
 *
 * usage: logintest -a HOST:PORT -t TARGET CASE [ARGS]
 *   names                    bad InitiatorName/TargetName refused with
 *                            Initiator error (0x0200), missing ones with
 *                            Missing parameter (0x0207); an upper-case
 *                            spelling of a good name logs in
 *   session-type             a discovery login whose second request says
 *                            SessionType=Normal is refused (0x0200)
 *   reinstate                two spellings of one initiator name with one
 *                            ISID: the second login reinstates the first
 *                            session (its connection is closed)
 *   mutual-short USER SECRET mutual CHAP with a 1-byte challenge from the
 *                            initiator is refused (0x0201); a 16-byte one
 *                            logs in
 *   paused INITIATOR STATUS  first request passes, then "paused" is printed
 *                            and a line is read from stdin (the test
 *                            reloads meanwhile); the final request must get
 *                            STATUS (e.g. 0x0202, 0x0201, 0 for success)
 *   spec-i-pt                PERSISTENT RESERVE OUT REGISTER with SPEC_I_PT
 *                            and APTPL: TransportIDs with a space, a
 *                            newline (a forged line behind it) or 0xff are
 *                            refused with INVALID FIELD IN PARAMETER LIST;
 *                            then a good one registers this nexus and the
 *                            TransportID's (APTPL: 2 registrations in the
 *                            state file)
 * Exit status 0, or 1 with "FAIL: why".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>
#include "tests/pdufuzz.h"

#define LT_NAME "iqn.2026-11.org.targetd.test:logintest"

/* ---- Login Requests by hand ------------------------------------------ */

struct lt_text {
	char buf[4096];
	size_t len;
};

static void lt_add(struct lt_text *t, const char *key, const char *value)
{
	int n = snprintf(t->buf + t->len, sizeof(t->buf) - t->len, "%s=%s", key, value);

	if (n < 0 || (size_t)n + 1 >= sizeof(t->buf) - t->len)
		pf_fail("login text too long");
	t->len += (size_t)n + 1;    /* the NUL delimiter */
}

/* Send one Login Request (flags: T, CSG, NSG) and read its response.
 * Returns the status (class << 8 | detail), -1 if the connection closed
 * without a response. */
static int lt_login_pdu(struct pf_conn *c, uint8_t flags, const struct lt_text *t, struct pf_rx *r)
{
	uint8_t b[BHS_LEN];
	int rc;

	pf_login_bhs(c, b, flags);
	if (pf_send_pdu(c, b, NULL, 0, (const uint8_t *)t->buf, (uint32_t)t->len, SEND_NO_DIGESTS))
		return -1;
	rc = pf_recv_pdu(c, r, pf_opt.tmo);
	if (rc != RX_GOT)
		return -1;
	if ((r->bhs[0] & 0x3f) != OP_LOGIN_RSP)
		pf_fail("%s: expected a Login Response, got opcode %#04x", c->label, r->bhs[0]);
	if ((r->bhs[1] & 0x80) && (r->bhs[1] & 3) == 3 && !r->bhs[36] && !r->bhs[37]) {
		c->tsih = pf_get16(r->bhs + 14);
		c->cmdsn = pf_get32(r->bhs + 28);
		c->maxcmdsn = pf_get32(r->bhs + 32);
	}
	c->itt++;
	return r->bhs[36] << 8 | r->bhs[37];
}

static void lt_normal_keys(struct lt_text *t, const char *initiator, const char *target)
{
	if (initiator)
		lt_add(t, "InitiatorName", initiator);
	if (target)
		lt_add(t, "TargetName", target);
	lt_add(t, "SessionType", "Normal");
}

/* The operational keys of a full feature session (pdufuzz's client reads
 * its own defaults). */
static void lt_operational_keys(struct lt_text *t)
{
	lt_add(t, "HeaderDigest", "None");
	lt_add(t, "DataDigest", "None");
	lt_add(t, "MaxRecvDataSegmentLength", "262144");
	lt_add(t, "ImmediateData", "Yes");
	lt_add(t, "InitialR2T", "No");
	lt_add(t, "MaxBurstLength", "262144");
	lt_add(t, "FirstBurstLength", "65536");
	lt_add(t, "ErrorRecoveryLevel", "0");
}

/* One request straight to full feature phase; returns the status. */
static int lt_login_once(const char *label, const char *initiator, const char *target)
{
	struct lt_text t = { .len = 0 };
	struct pf_conn c;
	struct pf_rx r;
	int st;

	pf_conn_open(&c, label);
	lt_normal_keys(&t, initiator, target);
	lt_operational_keys(&t);
	st = lt_login_pdu(&c, F_FINAL | (1 << 2) | 3, &t, &r);
	pf_conn_close(&c);
	return st;
}

static void lt_expect(int got, int want, const char *what)
{
	if (got != want)
		pf_fail("%s: login status %#06x, want %#06x", what, (unsigned)got, (unsigned)want);
	pf_note("%s: status %#06x", what, (unsigned)got);
}

/* ---- cases ------------------------------------------------------------- */

static void case_names(void)
{
	static const struct {
		const char *name, *what;
	} bad[] = {
		{ "iqn.2026-11.org.targetd.test:a b", "InitiatorName with a space" },
		{ "iqn.2026-11.org.targetd.test:x\nreg 00000000000000ff 1 1 0 iqn.x", "InitiatorName with a newline" },
		{ "iqn.2026-11.org.targetd.test:\xff\x7f", "InitiatorName with bytes 0xff and 0x7f" },
		{ "iqn.2026-11.org.targetd.test:a_b", "InitiatorName with '_'" },
		{ "iqn.", "InitiatorName \"iqn.\"" },
		{ "host1", "InitiatorName without iqn./eui./naa." },
		{ "eui.0123", "InitiatorName eui. with 4 hex digits" },
	};
	char upper[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		lt_expect(lt_login_once("names", bad[i].name, pf_opt.target), 0x0200, bad[i].what);
	lt_expect(lt_login_once("names", LT_NAME, "iqn.2026-11.org.targetd.test:t x"), 0x0200,
		  "TargetName with a space");
	lt_expect(lt_login_once("names", NULL, pf_opt.target), 0x0207, "no InitiatorName");
	lt_expect(lt_login_once("names", LT_NAME, NULL), 0x0207, "no TargetName");
	/* iSCSI names are case-insensitive: an upper-case spelling is the
	 * same name (and the same target) */
	snprintf(upper, sizeof(upper), "%s", pf_opt.target);
	for (char *p = upper; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	lt_expect(lt_login_once("names", "IQN.2026-11.ORG.TARGETD.TEST:LoginTest", upper), 0,
		  "upper-case InitiatorName and TargetName");
}

static void case_session_type(void)
{
	struct lt_text t = { .len = 0 };
	struct pf_conn c;
	struct pf_rx r;

	pf_conn_open(&c, "session-type");
	lt_add(&t, "InitiatorName", LT_NAME);
	lt_add(&t, "SessionType", "Discovery");
	lt_add(&t, "AuthMethod", "None");
	lt_expect(lt_login_pdu(&c, F_FINAL | (0 << 2) | 1, &t, &r), 0, "discovery: security stage");
	t.len = 0;
	lt_add(&t, "SessionType", "Normal");
	lt_expect(lt_login_pdu(&c, F_FINAL | (1 << 2) | 3, &t, &r), 0x0200,
		  "discovery login, then SessionType=Normal");
	pf_conn_close(&c);
}

/* Log in with a given initiator name and ISID. */
static void lt_login_isid(struct pf_conn *c, const char *label, const char *initiator,
			  const uint8_t isid[6])
{
	struct lt_text t = { .len = 0 };
	struct pf_rx r;

	pf_conn_open(c, label);
	memcpy(c->isid, isid, 6);
	lt_normal_keys(&t, initiator, pf_opt.target);
	lt_operational_keys(&t);
	lt_expect(lt_login_pdu(c, F_FINAL | (1 << 2) | 3, &t, &r), 0, label);
}

static void case_reinstate(void)
{
	const uint8_t isid[6] = { 0x80, (uint8_t)(getpid() >> 8), (uint8_t)getpid(), 0x77, 0x01, 0xa5 };
	struct pf_conn a, b;

	lt_login_isid(&a, "first spelling", "iqn.2026-11.org.targetd.test:CaseTest", isid);
	pf_tur_ok(&a, "first session");
	lt_login_isid(&b, "second spelling", "iqn.2026-11.org.targetd.test:casetest", isid);
	/* RFC 7143 6.3.5: the new session reinstates the old one, whose
	 * connection the target closes */
	pf_expect_drop(&a, "the first session, reinstated by the second spelling", NULL);
	pf_tur_ok(&b, "second session");
	pf_conn_close(&a);
	pf_conn_close(&b);
	pf_note("one initiator, two spellings: reinstated");
}

static void lt_md5(uint8_t id, const char *secret, const uint8_t *chal, size_t n, uint8_t out[16])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int len = 0;

	if (!ctx || EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, &id, 1) != 1 || EVP_DigestUpdate(ctx, secret, strlen(secret)) != 1 ||
	    EVP_DigestUpdate(ctx, chal, n) != 1 || EVP_DigestFinal_ex(ctx, out, &len) != 1 || len != 16)
		pf_fail("MD5 failed");
	EVP_MD_CTX_free(ctx);
}

static void lt_hex(const uint8_t *in, size_t n, char *out)
{
	*out++ = '0';
	*out++ = 'x';
	for (size_t i = 0; i < n; i++)
		out += sprintf(out, "%02x", in[i]);
}

/* CHAP up to the initiator's answer, which carries CHAP_C=challenge_hex. */
static int lt_mutual(const char *user, const char *secret, const char *challenge_hex)
{
	struct lt_text t = { .len = 0 };
	uint8_t chal[1024], md[16];
	char hex[64];
	const char *v;
	struct pf_conn c;
	struct pf_rx r;
	size_t n = 0;
	int st, id;

	pf_conn_open(&c, "mutual CHAP");
	lt_normal_keys(&t, LT_NAME, pf_opt.target);
	lt_add(&t, "AuthMethod", "CHAP");
	if ((st = lt_login_pdu(&c, F_FINAL | (0 << 2) | 1, &t, &r)))
		pf_fail("mutual CHAP: AuthMethod refused (%#06x)", (unsigned)st);
	t.len = 0;
	lt_add(&t, "CHAP_A", "5");
	if ((st = lt_login_pdu(&c, F_FINAL | (0 << 2) | 1, &t, &r)))
		pf_fail("mutual CHAP: CHAP_A refused (%#06x)", (unsigned)st);
	v = pf_text_value(r.data, r.dlen, "CHAP_I");
	id = v ? atoi(v) : -1;
	v = pf_text_value(r.data, r.dlen, "CHAP_C");
	if (id < 0 || !v || strncmp(v, "0x", 2))
		pf_fail("mutual CHAP: no CHAP_I/CHAP_C from the target");
	for (v += 2; v[0] && v[1] && n < sizeof(chal); v += 2) {
		unsigned x;

		sscanf(v, "%2x", &x);
		chal[n++] = (uint8_t)x;
	}
	lt_md5((uint8_t)id, secret, chal, n, md);
	lt_hex(md, 16, hex);
	t.len = 0;
	lt_add(&t, "CHAP_N", user);
	lt_add(&t, "CHAP_R", hex);
	lt_add(&t, "CHAP_I", "9");
	lt_add(&t, "CHAP_C", challenge_hex);
	st = lt_login_pdu(&c, F_FINAL | (0 << 2) | 1, &t, &r);
	pf_conn_close(&c);
	return st;
}

static void case_mutual_short(const char *user, const char *secret)
{
	lt_expect(lt_mutual(user, secret, "0x01"), 0x0201, "mutual CHAP, 1-byte initiator challenge");
	lt_expect(lt_mutual(user, secret, "0x000102030405060708090a0b0c0d0e"), 0x0201,
		  "mutual CHAP, 15-byte initiator challenge");
	lt_expect(lt_mutual(user, secret, "0x000102030405060708090a0b0c0d0e0f"), 0,
		  "mutual CHAP, 16-byte initiator challenge");
}

static void case_paused(const char *initiator, int want)
{
	struct lt_text t = { .len = 0 };
	struct pf_conn c;
	struct pf_rx r;
	char line[64];

	pf_conn_open(&c, "paused");
	lt_normal_keys(&t, initiator, pf_opt.target);
	lt_add(&t, "AuthMethod", "None");
	lt_expect(lt_login_pdu(&c, F_FINAL | (0 << 2) | 1, &t, &r), 0, "first request (security stage)");
	printf("paused\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		pf_fail("stdin closed while paused");
	t.len = 0;
	lt_operational_keys(&t);
	lt_expect(lt_login_pdu(&c, F_FINAL | (1 << 2) | 3, &t, &r), want,
		  "final request after the reload");
	if (want == 0)
		pf_tur_ok(&c, "the session");
	pf_conn_close(&c);
}

/* PERSISTENT RESERVE OUT REGISTER, SPEC_I_PT and APTPL, one TransportID. */
static void lt_spec_i_pt(struct pf_conn *c, const char *name, bool ok)
{
	uint8_t cdb[16] = { 0x5f, 0x00 }, p[28 + 256] = { 0 };
	size_t n = strlen(name) + 1;
	uint32_t tl = (uint32_t)((n < 20 ? 20 : n) + 3) / 4 * 4;
	struct pf_scsi_result sr;
	char what[128];

	pf_put32(p + 8, 0);
	pf_put32(p + 12, 0x7777);          /* SERVICE ACTION RESERVATION KEY */
	p[20] = 0x08 | 0x01;               /* SPEC_I_PT, APTPL */
	pf_put32(p + 24, 4 + tl);
	p[28] = 0x05;                      /* iSCSI, format 00b: name only */
	pf_put16(p + 30, (uint16_t)tl);
	memcpy(p + 32, name, n - 1);
	pf_put16(cdb + 7, (uint16_t)(32 + tl));   /* PARAMETER LIST LENGTH */
	if (pf_scsi_cmd(c, cdb, NULL, p, 32 + tl, &sr) != RX_GOT)
		pf_fail("PERSISTENT RESERVE OUT: the connection closed");
	snprintf(what, sizeof(what), "SPEC_I_PT TransportID %.60s", name);
	for (char *q = what; *q; q++)
		if ((unsigned char)*q < 0x20 || (unsigned char)*q >= 0x7f)
			*q = '?';
	if (ok) {
		if (sr.status != 0)
			pf_fail("%s: status %#x, want GOOD", what, sr.status);
	} else if (sr.status != 0x02 || pf_sense_key(&sr) != 5 || sr.sense_len < 14 ||
		   sr.sense[12] != 0x26 || sr.sense[13] != 0x00) {
		pf_fail("%s: status %#x sense %x/%02x/%02x, want CHECK CONDITION 5/26/00", what,
			sr.status, pf_sense_key(&sr), sr.sense_len >= 14 ? sr.sense[12] : 0,
			sr.sense_len >= 14 ? sr.sense[13] : 0);
	}
	pf_note("%s: %s", what, ok ? "GOOD" : "INVALID FIELD IN PARAMETER LIST");
}

static void case_spec_i_pt(void)
{
	static const char *const bad[] = {
		"iqn.2026-11.org.targetd.test:a b",
		"iqn.2026-11.org.targetd.test:x\nreg 00000000000000ff 1 1 0 iqn.2026-11.org.evil:x\nresv 3 0 0",
		"iqn.2026-11.org.targetd.test:\xff",
		"iqn.2026-11.org.targetd.test:a%0Ab",
	};
	struct pf_conn c;

	pf_open_logged_in(&c, "spec-i-pt");
	pf_tur_ok(&c, "after login (unit attentions cleared)");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		lt_spec_i_pt(&c, bad[i], false);
	/* all or nothing: the nexus is still unregistered, and registers */
	lt_spec_i_pt(&c, "IQN.2026-11.org.targetd.test:Other", true);
	pf_conn_close(&c);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: logintest -a HOST:PORT [-t TARGET] names | session-type | reinstate |\n"
		   "       mutual-short USER SECRET | paused INITIATOR STATUS | spec-i-pt\n");
}

int main(int argc, char **argv)
{
	char *colon;
	int o;

	while ((o = getopt(argc, argv, "a:t:h")) != -1) {
		switch (o) {
		case 'a':
			colon = strrchr(optarg, ':');
			if (!colon)
				pf_fail("-a wants HOST:PORT");
			snprintf(pf_opt.host, sizeof(pf_opt.host), "%.*s", (int)(colon - optarg), optarg);
			snprintf(pf_opt.port, sizeof(pf_opt.port), "%s", colon + 1);
			break;
		case 't': pf_opt.target = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc || !pf_opt.host[0]) {
		usage(stderr);
		return 2;
	}
	pf_cur_case = argv[optind];
	pf_crc32c_init_table();
	if (!strcmp(argv[optind], "names") && argc - optind == 1)
		case_names();
	else if (!strcmp(argv[optind], "session-type") && argc - optind == 1)
		case_session_type();
	else if (!strcmp(argv[optind], "reinstate") && argc - optind == 1)
		case_reinstate();
	else if (!strcmp(argv[optind], "mutual-short") && argc - optind == 3)
		case_mutual_short(argv[optind + 1], argv[optind + 2]);
	else if (!strcmp(argv[optind], "paused") && argc - optind == 3)
		case_paused(argv[optind + 1], (int)strtol(argv[optind + 2], NULL, 0));
	else if (!strcmp(argv[optind], "spec-i-pt") && argc - optind == 1)
		case_spec_i_pt();
	else {
		usage(stderr);
		return 2;
	}
	return 0;
}
