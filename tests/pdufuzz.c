/*
 * pdufuzz: a raw-TCP iSCSI initiator that feeds targetd malformed input and
 * checks what comes back. Every PDU is laid out by hand from RFC 7143
 * section 11 (no iSCSI library), so the test can say things no well-behaved
 * initiator would.
 *
 * The contract under test: a malformed PDU gets a Reject or a clean drop of
 * that connection only; never a crash, never harm to another session.
 * Oversized login/text keys are refused; a client that connects and says
 * nothing is timed out.
 *
 * Each case is a subcommand. Before a case runs, a "healthy" session logs
 * in and answers a TEST UNIT READY; after the case that session must still
 * answer TEST UNIT READY and READ(10), and a fresh connection must log in,
 * write and read back a block and log out. A case prints what it does and
 * exits 0, or prints "FAIL: why" and exits 1.
 *
 * usage: pdufuzz -a HOST:PORT [-t TARGET] [-T LOGIN_TIMEOUT] [-s SEED]
 *                [-n COUNT] [-S] [-v] CASE...      (pdufuzz -l lists cases)
 *
 * The client itself (PDU layout, login, SCSI commands) is pdufuzz_io.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "tests/pdufuzz.h"

/* ---- cases --------------------------------------------------------------- */

/* RFC 7143 6 (login phase): before login only a Login Request is
 * acceptable; the target ends the connection on anything else. */
static void case_nonlogin_first(void)
{
	static const uint8_t ops[] = { OP_SCSI_CMD, OP_NOP_OUT | F_IMMEDIATE, OP_TEXT_REQ | F_IMMEDIATE,
				       OP_LOGOUT_REQ | F_IMMEDIATE, OP_DATA_OUT, OP_TMF_REQ | F_IMMEDIATE,
				       OP_SNACK };

	for (size_t i = 0; i < sizeof(ops); i++) {
		struct pf_conn c;
		uint8_t b[BHS_LEN];
		char what[64];

		pf_conn_open(&c, "pre-login");
		pf_bhs_init(b, ops[i], F_FINAL, &c);
		pf_put32(b + 16, 0x42);
		pf_put32(b + 20, (ops[i] & 0x3f) == OP_DATA_OUT ? RSVD_TAG : 0);
		if ((ops[i] & 0x3f) == OP_TEXT_REQ) {
			static const char st[] = "SendTargets=All";
			pf_put32(b + 20, RSVD_TAG);
			pf_send_pdu(&c, b, NULL, 0, (const uint8_t *)st, sizeof(st), 0);
		} else {
			pf_send_pdu(&c, b, NULL, 0, NULL, 0, 0);
		}
		snprintf(what, sizeof(what), "opcode %#04x before login", ops[i]);
		pf_expect_quick_drop(&c, what);
		pf_conn_close(&c);
		pf_note("%s: dropped", what);
	}
}

static void case_garbage(void)
{
	static const char http[] = "GET / HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n";
	uint8_t junk[4096];
	struct pf_conn c;
	uint64_t ms;

	/* A long HTTP request: its bytes 4 ('/' = 47 words of AHS) are read
	 * as an AHS, then the opcode (0x07) is refused at once. */
	memset(junk, 0, sizeof(junk));
	ms = (uint64_t)snprintf((char *)junk, sizeof(junk), "GET / HTTP/1.1\r\nHost: localhost\r\n"
				"User-Agent: pdufuzz/1.0 (a web client at the wrong port; padded so the "
				"request is longer than the 48-byte header plus the 188 bytes its fifth "
				"byte announces as additional header segments)\r\nAccept: */*\r\n\r\n");
	pf_conn_open(&c, "garbage");
	pf_send_all(c.fd, junk, (size_t)ms);
	pf_expect_quick_drop(&c, "a long HTTP request");
	pf_conn_close(&c);
	pf_note("a long HTTP request: dropped");

	/* A short one stops inside the announced AHS: the reader cannot see
	 * the opcode check before those bytes, so the login timer ends it. */
	pf_conn_open(&c, "garbage");
	pf_send_all(c.fd, http, sizeof(http) - 1);
	ms = pf_expect_drop_within(&c, "a short HTTP request", NULL, pf_opt.login_timeout * 1000 + pf_opt.tmo);
	pf_conn_close(&c);
	pf_note("a short HTTP request: dropped after %llu ms%s", (unsigned long long)ms,
	     ms + 300 >= (uint64_t)pf_opt.login_timeout * 1000 ? " (by the login timer)" : "");

	for (int v = 0; v < 4; v++) {
		pf_rnd_fill(junk, sizeof(junk));
		if (v == 1)
			memset(junk, 0xff, sizeof(junk));
		if ((junk[0] & 0x3f) == OP_LOGIN_REQ)
			junk[0] ^= 0x01;
		if (v == 2)
			memset(junk, 0, BHS_LEN);   /* a NOP-Out of zeros before login */
		if (v == 3)
			junk[4] = 0xff;   /* with maximal AHS */
		pf_conn_open(&c, "garbage");
		pf_send_all(c.fd, junk, sizeof(junk));
		pf_expect_quick_drop(&c, "4 KiB of garbage");
		pf_conn_close(&c);
	}
	pf_note("4 KiB of random, 0xff and zero bytes: dropped");
}

/* A Login Request whose data segment exceeds the 8192 bytes every target
 * accepts during login (RFC 7143 13.12: MaxRecvDataSegmentLength default). */
static void case_login_oversize(void)
{
	static const uint32_t lens[] = { 8196, 65536, 0xffffff };
	uint8_t fill[BHS_LEN + 1024];

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(fill, 'A', sizeof(fill));
		struct pf_conn c;
		uint8_t b[BHS_LEN];
		char what[64];

		pf_conn_open(&c, "login");
		pf_login_bhs(&c, b, F_FINAL | (1 << 2) | 3);
		pf_put24(b + 5, lens[i]);
		memcpy(fill, b, BHS_LEN);   /* header and the start of the data in one write */
		pf_send_all(c.fd, fill, sizeof(fill));
		snprintf(what, sizeof(what), "Login with DataSegmentLength %u", lens[i]);
		pf_expect_quick_drop(&c, what);
		pf_conn_close(&c);
		pf_note("%s: refused", what);
	}

	/* The boundary: exactly 8192 bytes (keys padded with NULs) is fine. */
	{
		struct pf_conn c;
		uint8_t b[BHS_LEN], text[8192];
		size_t n;
		struct pf_rx r;

		pf_conn_open(&c, "login");
		memset(text, 0, sizeof(text));
		n = (size_t)snprintf((char *)text, sizeof(text), "InitiatorName=%s", CLIENT_NAME) + 1;
		n += (size_t)snprintf((char *)text + n, sizeof(text) - n, "TargetName=%s", pf_opt.target) + 1;
		snprintf((char *)text + n, sizeof(text) - n, "SessionType=Normal");
		pf_login_bhs(&c, b, F_FINAL | (1 << 2) | 3);
		pf_send_pdu(&c, b, NULL, 0, text, sizeof(text), 0);
		if (pf_recv_pdu(&c, &r, pf_opt.tmo) != RX_GOT || (r.bhs[0] & 0x3f) != OP_LOGIN_RSP)
			pf_fail("Login with an 8192-byte data segment: no Login Response");
		if (r.bhs[36] != 0)
			pf_fail("Login with an 8192-byte data segment refused with status %#04x%02x", r.bhs[36], r.bhs[37]);
		pf_conn_close(&c);
		pf_note("Login with exactly 8192 bytes of text: accepted");
	}
}

/* Send login text across PDUs with the C bit (RFC 7143 11.12.2); returns
 * the first non-zero login status, or -1 if the target just closed. */
static int login_text(struct pf_conn *c, const uint8_t *text, size_t len)
{
	size_t off = 0;
	struct pf_rx r;

	for (;;) {
		size_t n = len - off > 8192 ? 8192 : len - off;
		bool last = off + n == len;
		uint8_t b[BHS_LEN];
		int rc;

		pf_login_bhs(c, b, last ? F_FINAL | (1 << 2) | 3 : 0x40 | (1 << 2));
		if (pf_send_pdu(c, b, NULL, 0, text + off, (uint32_t)n, 0))
			return -1;
		off += n;
		rc = pf_recv_pdu(c, &r, pf_opt.tmo);
		if (rc == RX_EOF)
			return -1;
		if (rc == RX_TMO)
			pf_fail("no Login Response after %zu of %zu bytes of login text", off, len);
		if ((r.bhs[0] & 0x3f) != OP_LOGIN_RSP)
			pf_fail("expected a Login Response, got opcode %#04x", r.bhs[0]);
		if (r.bhs[36] || r.bhs[37])
			return r.bhs[36] << 8 | r.bhs[37];
		if (last)
			return 0;
		if (r.dlen)
			pf_fail("a partial login (C bit) was answered with %u bytes of text", r.dlen);
	}
}

static void expect_login_refused(const char *what, const uint8_t *text, size_t len)
{
	struct pf_conn c;
	int st;

	pf_conn_open(&c, "login");
	st = login_text(&c, text, len);
	if (st == -1)
		pf_fail("%s: the target dropped the connection instead of answering Initiator Error", what);
	if (st == 0)
		pf_fail("%s: login accepted", what);
	if (st >> 8 != 2)
		pf_fail("%s: login status %#06x, expected class 2 (initiator error)", what, st);
	pf_expect_drop(&c, what, NULL);
	pf_conn_close(&c);
	pf_note("%s: refused with status %#06x", what, st);
}

static size_t base_text(uint8_t *buf, size_t cap)
{
	size_t n = (size_t)snprintf((char *)buf, cap, "InitiatorName=%s", CLIENT_NAME) + 1;

	n += (size_t)snprintf((char *)buf + n, cap - n, "TargetName=%s", pf_opt.target) + 1;
	n += (size_t)snprintf((char *)buf + n, cap - n, "SessionType=Normal") + 1;
	return n;
}

static void case_login_longkey(void)
{
	size_t cap = 200000, n;
	uint8_t *t = malloc(cap);

	if (!t)
		pf_fail("out of memory");
	/* a 70000-byte key */
	n = base_text(t, cap);
	memset(t + n, 'K', 70000);
	n += 70000;
	memcpy(t + n, "=1", 3);
	expect_login_refused("a 70000-byte key", t, n + 3);

	/* a 70000-byte value */
	n = base_text(t, cap);
	memcpy(t + n, "X-pdufuzz=", 10);
	memset(t + n + 10, 'v', 70000);
	t[n + 10 + 70000] = 0;
	expect_login_refused("a 70000-byte value", t, n + 10 + 70001);

	/* 9000-byte value of a known key, in two PDUs */
	n = base_text(t, cap);
	memcpy(t + n, "InitiatorAlias=", 15);
	memset(t + n + 15, 'a', 9000);
	t[n + 15 + 9000] = 0;
	expect_login_refused("a 9000-byte InitiatorAlias", t, n + 15 + 9001);

	/* a 64-byte key: one more than RFC 7143 6.1 allows */
	n = base_text(t, cap);
	memset(t + n, 'k', 64);
	memcpy(t + n + 64, "=v", 3);
	expect_login_refused("a 64-byte key", t, n + 67);

	/* no '=' */
	n = base_text(t, cap);
	memcpy(t + n, "HeaderDigest", 13);
	expect_login_refused("a key without '='", t, n + 13);

	/* text not NUL-terminated */
	n = base_text(t, cap);
	memcpy(t + n, "MaxConnections=1", 16);
	expect_login_refused("text without the final NUL", t, n + 16);

	/* a key that starts with '=' */
	n = base_text(t, cap);
	memcpy(t + n, "=Yes", 5);
	expect_login_refused("an empty key", t, n + 5);

	/* 80 KiB of short keys spread over PDUs */
	n = base_text(t, cap);
	for (int i = 0; n < 82000; i++)
		n += (size_t)snprintf((char *)t + n, cap - n, "X-k%d=%d", i, i) + 1;
	expect_login_refused("80 KiB of login text", t, n);
	free(t);
}

/* Text Requests in full feature phase (RFC 7143 11.10) with keys or
 * values over the limits, or without '=': refused with a Reject, or the
 * connection is dropped; never accepted, and never harm elsewhere. */
static void case_text_longkey(void)
{
	static const char *names[] = { "a 70000-byte key", "a 70000-byte value", "a key without '='",
				       "a 64-byte key", "text without the final NUL" };
	size_t cap = 80000;
	uint8_t *t = malloc(cap);

	if (!t)
		pf_fail("out of memory");
	for (int v = 0; v < 5; v++) {
		struct pf_conn c;
		uint8_t b[BHS_LEN], sent[BHS_LEN];
		struct pf_rx r;
		size_t n = 0;
		int rc;

		switch (v) {
		case 0:
			memset(t, 'K', 70000);
			memcpy(t + 70000, "=All", 5);
			n = 70005;
			break;
		case 1:
			memcpy(t, "SendTargets=", 12);
			memset(t + 12, 'v', 70000);
			t[70012] = 0;
			n = 70013;
			break;
		case 2:
			memcpy(t, "SendTargets", 12);
			n = 12;
			break;
		case 3:
			memset(t, 'k', 64);
			memcpy(t + 64, "=All", 5);
			n = 69;
			break;
		default:
			memcpy(t, "SendTargets=All", 15);
			n = 15;
			break;
		}
		pf_open_logged_in(&c, "text");
		pf_bhs_init(b, OP_TEXT_REQ | F_IMMEDIATE, F_FINAL, &c);
		pf_put32(b + 16, 0x8800 + (uint32_t)v);
		pf_put32(b + 20, RSVD_TAG);
		pf_put32(b + 24, c.cmdsn);
		if (pf_send_pdu(&c, b, NULL, 0, t, (uint32_t)n, 0))
			pf_fail("%s: connection closed while sending the Text Request", names[v]);
		memcpy(sent, b, BHS_LEN);
		rc = pf_recv_reply(&c, &r, pf_opt.tmo);
		if (rc == RX_TMO)
			pf_fail("Text Request with %s: neither an answer nor a drop", names[v]);
		if (rc == RX_EOF) {
			pf_note("Text Request with %s: dropped", names[v]);
		} else {
			if ((r.bhs[0] & 0x3f) != OP_REJECT)
				pf_fail("Text Request with %s: answered with opcode %#04x, expected a Reject", names[v],
					r.bhs[0]);
			if (r.bhs[2] != REJ_PROTOCOL && r.bhs[2] != REJ_INVALID_FIELD)
				pf_fail("Text Request with %s: Reject reason %#04x, expected 0x04 or 0x09", names[v],
					r.bhs[2]);
			if (r.dlen < BHS_LEN || memcmp(r.data + 16, sent + 16, 4))
				pf_fail("Text Request with %s: the Reject does not carry the rejected header", names[v]);
			pf_tur_ok(&c, "after a refused Text Request");
			pf_note("Text Request with %s: Reject %#04x, connection still works", names[v], r.bhs[2]);
			pf_logout_ok(&c);
		}
		pf_conn_close(&c);
	}
	free(t);

	/* An empty Text Request is well-formed: an empty final Text Response. */
	{
		struct pf_conn c;
		uint8_t b[BHS_LEN];
		struct pf_rx r;

		pf_open_logged_in(&c, "text");
		pf_bhs_init(b, OP_TEXT_REQ | F_IMMEDIATE, F_FINAL, &c);
		pf_put32(b + 16, 0x8880);
		pf_put32(b + 20, RSVD_TAG);
		pf_put32(b + 24, c.cmdsn);
		if (pf_send_pdu(&c, b, NULL, 0, NULL, 0, 0) || pf_recv_reply(&c, &r, pf_opt.tmo) != RX_GOT)
			pf_fail("empty Text Request: no answer");
		if ((r.bhs[0] & 0x3f) != OP_TEXT_RSP || !(r.bhs[1] & F_FINAL) || pf_get32(r.bhs + 16) != 0x8880)
			pf_fail("empty Text Request: answered with opcode %#04x flags %#04x", r.bhs[0], r.bhs[1]);
		pf_tur_ok(&c, "after an empty Text Request");
		pf_note("empty Text Request: Text Response with %u bytes, connection still works", r.dlen);
		pf_logout_ok(&c);
		pf_conn_close(&c);
	}
}

/* After login, a Reject of reason want (or any reason if want < 0) must
 * come back carrying the rejected header. */
static void expect_reject(struct pf_conn *c, const uint8_t *sent, int want, const char *what)
{
	struct pf_rx r;
	int rc = pf_recv_reply(c, &r, pf_opt.tmo);

	if (rc != RX_GOT)
		pf_fail("%s: expected a Reject, got %s", what, rc == RX_EOF ? "a closed connection" : "nothing");
	if ((r.bhs[0] & 0x3f) != OP_REJECT)
		pf_fail("%s: expected a Reject, got opcode %#04x", what, r.bhs[0]);
	if (want >= 0 && r.bhs[2] != want)
		pf_fail("%s: Reject reason %#04x, expected %#04x", what, r.bhs[2], want);
	if (pf_get32(r.bhs + 16) != RSVD_TAG)
		pf_fail("%s: Reject with ITT %#x, must be 0xffffffff", what, pf_get32(r.bhs + 16));
	if (r.dlen < BHS_LEN || memcmp(r.data, sent, 4) || memcmp(r.data + 16, sent + 16, 4))
		pf_fail("%s: the Reject does not carry the rejected header", what);
}

/* RFC 7143 11.17.1: an opcode the target does not support gets a Reject
 * with reason 0x05 and the connection goes on. */
static void case_unknown_opcode(void)
{
	static const uint8_t ops[] = { 0x07, 0x0d, 0x1c, 0x1e, 0x2a, 0x3f };
	struct pf_conn c;
	uint8_t data[300];

	pf_open_logged_in(&c, "unknown opcode");
	memset(data, 0xa5, sizeof(data));
	for (size_t i = 0; i < sizeof(ops); i++) {
		uint8_t b[BHS_LEN], sent[BHS_LEN];
		char what[64];

		pf_bhs_init(b, ops[i] | F_IMMEDIATE, F_FINAL, &c);
		pf_put32(b + 16, 0x7000 + (uint32_t)i);
		pf_put32(b + 24, c.cmdsn);
		if (pf_send_pdu(&c, b, NULL, 0, data, i % 2 ? sizeof(data) : 0, 0))
			pf_fail("connection closed while sending opcode %#04x", ops[i]);
		memcpy(sent, b, BHS_LEN);
		snprintf(what, sizeof(what), "opcode %#04x%s", ops[i], i % 2 ? " with 300 bytes of data" : "");
		expect_reject(&c, sent, REJ_NOT_SUPPORTED, what);
		pf_tur_ok(&c, "after the Reject");
		pf_note("%s: Reject 0x05, connection still works", what);
	}
	pf_logout_ok(&c);
	pf_conn_close(&c);
}

/* SNACK at ErrorRecoveryLevel 0 (RFC 7143 11.16): Rejected. */
static void case_snack(void)
{
	for (uint8_t type = 0; type < 4; type++) {
		struct pf_conn c;
		uint8_t b[BHS_LEN], sent[BHS_LEN];
		struct pf_rx r;
		int rc;

		pf_open_logged_in(&c, "SNACK");
		pf_tur_ok(&c, "before the SNACK");
		pf_bhs_init(b, OP_SNACK, F_FINAL | type, &c);
		pf_put32(b + 16, type == 1 ? RSVD_TAG : c.itt - 1);
		pf_put32(b + 20, RSVD_TAG);
		pf_put32(b + 40, 0);
		pf_put32(b + 44, 0);
		if (pf_send_pdu(&c, b, NULL, 0, NULL, 0, 0))
			pf_fail("connection closed while sending a SNACK");
		memcpy(sent, b, BHS_LEN);
		rc = pf_recv_reply(&c, &r, pf_opt.tmo);
		if (rc != RX_GOT || (r.bhs[0] & 0x3f) != OP_REJECT)
			pf_fail("SNACK type %u: expected a Reject, got %s", type,
			     rc == RX_EOF ? "a closed connection" : rc == RX_TMO ? "nothing" : "another PDU");
		if (r.bhs[2] != REJ_NOT_SUPPORTED && r.bhs[2] != REJ_PROTOCOL)
			pf_fail("SNACK type %u: Reject reason %#04x, expected 0x04 or 0x05", type, r.bhs[2]);
		if (r.bhs[2] == REJ_PROTOCOL) {
			/* a protocol error may end the connection */
			uint8_t cdb[16] = { 0 };
			struct pf_scsi_result sr;
			if (pf_scsi_cmd(&c, cdb, NULL, NULL, 0, &sr) == RX_EOF) {
				pf_note("SNACK type %u: Reject 0x04 and drop", type);
				pf_conn_close(&c);
				continue;
			}
		}
		pf_tur_ok(&c, "after the SNACK Reject");
		pf_note("SNACK type %u: Reject %#04x, connection still works", type, r.bhs[2]);
		pf_logout_ok(&c);
		pf_conn_close(&c);
	}
}

/* A data segment longer than the target's MaxRecvDataSegmentLength is a
 * protocol error (RFC 7143 13.12): Reject, then the connection ends. */
static void case_cmd_oversize(void)
{
	for (int v = 0; v < 4; v++) {
		static const char *names[] = { "SCSI Command", "Data-Out", "NOP-Out", "Text Request" };
		struct pf_conn c;
		uint8_t b[BHS_LEN], fill[BHS_LEN + 512];
		uint32_t big;
		int reason;
		char what[96];

		pf_open_logged_in(&c, "oversize");
		big = c.mrdsl + 512;
		memset(fill, 0x33, sizeof(fill));
		switch (v) {
		case 0:
			pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 0x20 | 1, &c);
			pf_put32(b + 20, big);
			pf_put32(b + 24, c.cmdsn);
			pf_rw10_cdb(b + 32, 0x2a, 0, (uint16_t)(big / LUN_BLOCK));
			break;
		case 1:
			pf_bhs_init(b, OP_DATA_OUT, F_FINAL, &c);
			pf_put32(b + 20, RSVD_TAG);
			break;
		case 2:
			pf_bhs_init(b, OP_NOP_OUT | F_IMMEDIATE, F_FINAL, &c);
			pf_put32(b + 20, RSVD_TAG);
			pf_put32(b + 24, c.cmdsn);
			break;
		default:
			pf_bhs_init(b, OP_TEXT_REQ | F_IMMEDIATE, F_FINAL, &c);
			pf_put32(b + 20, RSVD_TAG);
			pf_put32(b + 24, c.cmdsn);
			break;
		}
		pf_put32(b + 16, 0x6000 + (uint32_t)v);
		pf_put24(b + 5, big);
		memcpy(fill, b, BHS_LEN);   /* header and the start of the data in one write */
		pf_send_all(c.fd, fill, sizeof(fill));
		snprintf(what, sizeof(what), "%s with DataSegmentLength %u > MaxRecvDataSegmentLength %u",
			 names[v], big, c.mrdsl);
		pf_expect_drop(&c, what, &reason);
		if (reason < 0)
			pf_fail("%s: dropped without a Reject", what);
		if (reason != REJ_PROTOCOL && reason != REJ_INVALID_FIELD)
			pf_fail("%s: Reject reason %#04x, expected 0x04 or 0x09", what, reason);
		pf_note("%s: Reject %#04x and drop", what, reason);
		pf_conn_close(&c);
	}
}

/* Malformed AHS (RFC 7143 11.2.1.3): whatever the target makes of it, it
 * answers (SCSI Response or Reject) or drops this connection. */
static void case_ahs(void)
{
	for (int v = 0; v < 6; v++) {
		static const char *names[] = {
			"1020 bytes of 0xff AHS", "an AHS of AHSLength 0", "an extended-CDB AHS running past TotalAHSLength",
			"1020 bytes of random AHS", "a bidirectional AHS on a TEST UNIT READY",
			"an extended-CDB AHS with AHSLength 65535",
		};
		struct pf_conn c;
		uint8_t b[BHS_LEN], ahs[1020];
		uint32_t ahslen = 0;
		struct pf_rx r;
		int rc;

		pf_open_logged_in(&c, "AHS");
		memset(ahs, 0, sizeof(ahs));
		switch (v) {
		case 0:
			memset(ahs, 0xff, sizeof(ahs));
			ahslen = 1020;
			break;
		case 1:
			ahs[2] = 1;
			ahslen = 4;
			break;
		case 2:
			/* a padding AHS up to offset 1016, then an extended CDB
			 * whose AHSLength (17) claims 16 bytes beyond the end */
			pf_put16(ahs, 1013);
			ahs[2] = 0x3f;
			pf_put16(ahs + 1016, 17);
			ahs[1018] = 1;
			ahslen = 1020;
			break;
		case 3:
			pf_rnd_fill(ahs, sizeof(ahs));
			ahslen = 1020;
			break;
		case 4:
			pf_put16(ahs, 5);
			ahs[2] = 2;
			pf_put32(ahs + 4, 0xffffffff);
			ahslen = 8;
			break;
		default:
			pf_put16(ahs, 0xffff);
			ahs[2] = 1;
			memset(ahs + 4, 0xee, 16);
			ahslen = 20;
			break;
		}
		pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 1, &c);
		pf_put32(b + 16, 0x5000 + (uint32_t)v);
		pf_put32(b + 24, c.cmdsn++);
		if (pf_send_pdu(&c, b, ahs, ahslen, NULL, 0, 0))
			pf_fail("%s: connection closed while sending", names[v]);
		rc = pf_recv_reply(&c, &r, pf_opt.tmo);
		if (rc == RX_TMO)
			pf_fail("%s: neither an answer nor a drop within %d ms", names[v], pf_opt.tmo);
		if (rc == RX_EOF) {
			pf_note("%s: dropped", names[v]);
		} else {
			uint8_t op = r.bhs[0] & 0x3f;
			if (op != OP_SCSI_RSP && op != OP_REJECT)
				pf_fail("%s: answered with opcode %#04x", names[v], r.bhs[0]);
			if (op == OP_SCSI_RSP && pf_get32(r.bhs + 16) != 0x5000u + (uint32_t)v)
				pf_fail("%s: SCSI Response for ITT %#x", names[v], pf_get32(r.bhs + 16));
			if (op == OP_REJECT)
				c.cmdsn--;   /* a rejected command does not take its CmdSN */
			/* Still open? Then it must still work. */
			uint8_t cdb[16] = { 0 };
			struct pf_scsi_result sr;
			if (pf_scsi_cmd(&c, cdb, NULL, NULL, 0, &sr) == RX_EOF) {
				pf_note("%s: %s, then drop", names[v], op == OP_REJECT ? "Reject" : "SCSI Response");
			} else {
				if (sr.status != 0 && !(sr.status == 2 && pf_sense_key(&sr) == 6))
					pf_fail("%s: TEST UNIT READY afterwards: status %#04x", names[v], sr.status);
				pf_note("%s: %s (status %#04x), connection still works", names[v],
				     op == OP_REJECT ? "Reject" : "SCSI Response", op == OP_REJECT ? r.bhs[2] : r.bhs[3]);
			}
		}
		pf_conn_close(&c);
	}
}

/* RFC 7143 11.7: Data-Out for a task that does not exist is dropped. */
static void case_dataout_unknown(void)
{
	struct pf_conn c;
	uint8_t b[BHS_LEN], data[2048];

	pf_open_logged_in(&c, "Data-Out");
	memset(data, 0x5c, sizeof(data));
	for (int v = 0; v < 3; v++) {
		pf_bhs_init(b, OP_DATA_OUT, v == 2 ? 0 : F_FINAL, &c);
		pf_scsi_lun0(b);
		pf_put32(b + 16, 0x55aa0000u + (uint32_t)v);
		pf_put32(b + 20, v == 0 ? RSVD_TAG : 0x00010000u);
		pf_put32(b + 36, (uint32_t)v);
		pf_put32(b + 40, v * 512u);
		if (pf_send_pdu(&c, b, NULL, 0, data, v == 2 ? sizeof(data) : 512, 0))
			pf_fail("connection closed by a Data-Out for an unknown ITT");
	}
	pf_expect_silence(&c, "Data-Out for unknown ITTs");
	pf_tur_ok(&c, "after Data-Out for unknown ITTs");
	pf_note("Data-Out for unknown ITTs: ignored, connection still works");
	pf_logout_ok(&c);
	pf_conn_close(&c);
}

/* RFC 7143 4.2.2.1: a non-immediate command outside [ExpCmdSN, MaxCmdSN]
 * is silently ignored. */
static void case_cmdsn_window(void)
{
	struct pf_conn c;
	uint8_t b[BHS_LEN];

	pf_open_logged_in(&c, "CmdSN");
	pf_tur_ok(&c, "first");
	uint32_t bad[] = { c.cmdsn + 0x40000000u, c.cmdsn - 1, c.cmdsn - 1000, c.maxcmdsn + 1, c.cmdsn + 0x80000000u };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 1, &c);
		pf_put32(b + 16, 0x4400 + (uint32_t)i);
		pf_put32(b + 24, bad[i]);
		if (pf_send_pdu(&c, b, NULL, 0, NULL, 0, 0))
			pf_fail("connection closed by CmdSN %u", bad[i]);
		/* and a non-immediate NOP-Out that asks for an answer */
		pf_bhs_init(b, OP_NOP_OUT, F_FINAL, &c);
		pf_put32(b + 16, 0x4500 + (uint32_t)i);
		pf_put32(b + 20, RSVD_TAG);
		pf_put32(b + 24, bad[i]);
		if (pf_send_pdu(&c, b, NULL, 0, NULL, 0, 0))
			pf_fail("connection closed by a NOP-Out with CmdSN %u", bad[i]);
	}
	pf_expect_silence(&c, "commands outside the CmdSN window");
	pf_tur_ok(&c, "after commands outside the CmdSN window");
	pf_note("CmdSN far ahead, behind and just past MaxCmdSN: ignored, connection still works");
	pf_logout_ok(&c);
	pf_conn_close(&c);
}

/* Half a PDU, then the connection closes: the daemon forgets it. */
static void case_truncated(void)
{
	for (int v = 0; v < 6; v++) {
		struct pf_conn c;
		uint8_t b[BHS_LEN], data[4096];

		memset(data, 0x11, sizeof(data));
		if (v < 2) {
			pf_conn_open(&c, "truncated");
			pf_login_bhs(&c, b, F_FINAL | (1 << 2) | 3);
			if (v == 0) {
				pf_send_all(c.fd, b, 20);
			} else {
				pf_put24(b + 5, 1000);
				pf_send_all(c.fd, b, BHS_LEN);
				pf_send_all(c.fd, data, 100);
			}
		} else {
			struct pf_login_opts lo = { .initiator = CLIENT_NAME, .digests = v == 5 };
			pf_conn_open(&c, "truncated");
			pf_login_ok(&c, &lo);
			pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 0x20 | 1, &c);
			pf_put32(b + 16, 0x3300);
			pf_put32(b + 20, 8 * LUN_BLOCK);
			pf_put32(b + 24, c.cmdsn);
			pf_rw10_cdb(b + 32, 0x2a, 0, 8);
			if (v == 2) {
				pf_put24(b + 5, 4096);
				pf_send_all(c.fd, b, BHS_LEN);
				pf_send_all(c.fd, data, 1000);
			} else if (v == 3) {
				pf_send_all(c.fd, b, 30);
			} else if (v == 4) {
				b[1] &= (uint8_t)~F_FINAL;   /* unsolicited data promised */
				pf_send_pdu(&c, b, NULL, 0, NULL, 0, 0);
			} else {
				pf_send_all(c.fd, b, BHS_LEN);   /* header digest missing */
			}
		}
		pf_conn_close(&c);
	}
	/* give the daemon a moment to see the closes before the checks */
	usleep(100000);
	pf_note("six truncated PDUs followed by a close: daemon still serving");
}

/* RFC 7143 7.8: a header digest error cannot be recovered at ERL 0. */
static void case_hdigest(void)
{
	struct pf_login_opts lo = { .initiator = CLIENT_NAME, .digests = true };
	struct pf_conn c;
	uint8_t b[BHS_LEN], buf[16 * LUN_BLOCK];
	int reason;

	pf_conn_open(&c, "digests");
	pf_login_ok(&c, &lo);
	pf_tur_ok(&c, "with CRC32C digests");
	pf_roundtrip_ok(&c);
	pf_read10_ok(&c, 0, 16, buf);
	pf_note("CRC32C header and data digests negotiated; TEST UNIT READY, WRITE and READ work");

	/* bad data digest on immediate data: Reject 0x02, connection lives */
	{
		uint8_t sent[BHS_LEN];
		memset(buf, 0x77, LUN_BLOCK);
		pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 0x20 | 1, &c);
		pf_put32(b + 16, 0x2200);
		pf_put32(b + 20, LUN_BLOCK);
		pf_put32(b + 24, c.cmdsn);
		pf_rw10_cdb(b + 32, 0x2a, 120000, 1);
		if (pf_send_pdu(&c, b, NULL, 0, buf, LUN_BLOCK, SEND_BAD_DDIGEST))
			pf_fail("connection closed while sending a bad data digest");
		memcpy(sent, b, BHS_LEN);
		pf_put24(sent + 5, LUN_BLOCK);
		expect_reject(&c, sent, REJ_DATA_DIGEST, "immediate data with a bad data digest");
		pf_tur_ok(&c, "after a data digest error");
		pf_note("bad data digest on immediate data: Reject 0x02, connection still works");
	}

	pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 1, &c);
	pf_put32(b + 16, 0x2201);
	pf_put32(b + 24, c.cmdsn);
	if (pf_send_pdu(&c, b, NULL, 0, NULL, 0, SEND_BAD_HDIGEST))
		pf_fail("connection closed while sending a bad header digest");
	pf_expect_drop(&c, "a PDU with a bad header digest", &reason);
	pf_note("bad header digest: dropped%s", reason >= 0 ? " after a Reject" : "");
	pf_conn_close(&c);
}

/* A connection that never completes login is closed after login_timeout. */
static void case_idle(void)
{
	struct pf_conn c[3];
	bool open[3] = { true, true, true };
	uint64_t t0 = pf_now_ms(), closed_at[3] = { 0 };
	uint64_t limit = (uint64_t)pf_opt.login_timeout * 1000 + (uint64_t)pf_opt.tmo;
	const char *names[] = { "a silent connection", "a connection stalled inside a BHS",
				"a connection stalled in the security stage" };

	pf_conn_open(&c[0], "idle");
	pf_conn_open(&c[1], "idle");
	pf_conn_open(&c[2], "idle");
	{
		uint8_t b[BHS_LEN];
		pf_login_bhs(&c[1], b, 0);
		pf_send_all(c[1].fd, b, 10);
	}
	{
		/* first Login Request, security stage, T=0: answered, then silence */
		uint8_t b[BHS_LEN], text[512];
		size_t n = base_text(text, sizeof(text));
		struct pf_rx r;
		n += (size_t)snprintf((char *)text + n, sizeof(text) - n, "AuthMethod=None") + 1;
		pf_login_bhs(&c[2], b, 0);
		pf_send_pdu(&c[2], b, NULL, 0, text, (uint32_t)n, 0);
		if (pf_recv_pdu(&c[2], &r, pf_opt.tmo) != RX_GOT || (r.bhs[0] & 0x3f) != OP_LOGIN_RSP || r.bhs[36])
			pf_fail("first Login Request of the stalled login: no successful Login Response");
	}
	while (open[0] || open[1] || open[2]) {
		struct pollfd pf[3];
		for (int i = 0; i < 3; i++) {
			pf[i].fd = open[i] ? c[i].fd : -1;
			pf[i].events = POLLIN;
		}
		uint64_t spent = pf_now_ms() - t0;
		if (spent > limit) {
			for (int i = 0; i < 3; i++)
				if (open[i])
					pf_fail("%s still open %llu ms after connect (login_timeout %d s)", names[i],
					     (unsigned long long)spent, pf_opt.login_timeout);
		}
		poll(pf, 3, 200);
		for (int i = 0; i < 3; i++) {
			uint8_t junk[256];
			if (!open[i] || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = recv(c[i].fd, junk, sizeof(junk), MSG_DONTWAIT);
			if (r > 0)
				pf_fail("%s: the target sent %zd bytes", names[i], r);
			if (r == 0 || (r < 0 && errno == ECONNRESET)) {
				open[i] = false;
				closed_at[i] = pf_now_ms() - t0;
			}
		}
	}
	for (int i = 0; i < 3; i++) {
		if (closed_at[i] + 1100 < (uint64_t)pf_opt.login_timeout * 1000)
			pf_fail("%s closed after %llu ms, well before login_timeout (%d s)", names[i],
			     (unsigned long long)closed_at[i], pf_opt.login_timeout);
		pf_note("%s: closed after %llu ms (login_timeout %d s)", names[i], (unsigned long long)closed_at[i],
		     pf_opt.login_timeout);
		pf_conn_close(&c[i]);
	}
}

/* ---- random PDUs --------------------------------------------------------- */

/* SCSI opcodes the random case may send: nothing that reserves, stops,
 * formats or writes above LBA 65536 (the blocks health_check uses). */
static bool opcode_unsafe(uint8_t op)
{
	switch (op) {
	case 0x04: /* FORMAT UNIT */
	case 0x15: case 0x55: /* MODE SELECT */
	case 0x16: case 0x17: case 0x56: case 0x57: /* RESERVE / RELEASE */
	case 0x1b: /* START STOP UNIT */
	case 0x1e: /* PREVENT ALLOW MEDIUM REMOVAL */
	case 0x48: /* SANITIZE */
	case 0x5f: /* PERSISTENT RESERVE OUT */
	case 0x0a: case 0x2a: case 0xaa: case 0x8a: /* WRITE */
	case 0x2e: case 0xae: case 0x8e: /* WRITE AND VERIFY */
	case 0x41: case 0x93: /* WRITE SAME */
	case 0x42: /* UNMAP */
	case 0x89: /* COMPARE AND WRITE */
	case 0x83: /* EXTENDED COPY */
	case 0x9e: case 0x9f: case 0xa3: case 0xa4: /* service actions */
	case 0x3b: /* WRITE BUFFER */
	case 0x35: case 0x91: /* SYNCHRONIZE CACHE (harmless, but slow on files) */
		return true;
	default:
		return false;
	}
}

static void random_cdb(uint8_t *cdb)
{
	static const uint8_t safe[] = { 0x00, 0x03, 0x12, 0x25, 0x28, 0x88, 0xa8, 0x08, 0x1a, 0x5a,
					0xa0, 0x2f, 0x8f, 0x34 };
	uint32_t k = pf_rndn(10);

	memset(cdb, 0, 16);
	if (k < 6) {
		cdb[0] = safe[pf_rndn(sizeof(safe))];
		switch (cdb[0]) {
		case 0x28: case 0x2f:
			pf_put32(cdb + 2, pf_rndn(4) ? pf_rndn(2000) : (uint32_t)pf_rnd());
			pf_put16(cdb + 7, (uint16_t)(pf_rndn(4) ? pf_rndn(64) : pf_rnd()));
			break;
		case 0x88: case 0x8f:
			pf_put32(cdb + 6, pf_rndn(4) ? pf_rndn(2000) : (uint32_t)pf_rnd());
			pf_put32(cdb + 10, pf_rndn(4) ? pf_rndn(64) : (uint32_t)pf_rnd());
			break;
		case 0x12: case 0x5a: case 0xa0:
			pf_put16(cdb + 3, (uint16_t)pf_rndn(4096));
			cdb[1] = (uint8_t)pf_rndn(2);
			cdb[2] = (uint8_t)pf_rnd();
			break;
		default:
			if (pf_rndn(3) == 0)
				pf_rnd_fill(cdb + 1, 15);
			break;
		}
	} else if (k < 8) {
		/* WRITE(10) below LBA 65536 */
		cdb[0] = 0x2a;
		pf_put32(cdb + 2, pf_rndn(60000));
		pf_put16(cdb + 7, (uint16_t)pf_rndn(40));
		cdb[1] = (uint8_t)(pf_rndn(4) ? 0 : pf_rnd());
	} else {
		pf_rnd_fill(cdb, 16);
		if (opcode_unsafe(cdb[0]))
			cdb[0] = 0x00;
	}
}

/* Drain whatever the target sent, without parsing (it may be mid-PDU). */
static bool drain(int fd)
{
	uint8_t junk[65536];

	for (;;) {
		ssize_t r = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (r > 0)
			continue;
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return false;
		return true;
	}
}

/* Send while draining answers, so neither side blocks on a full window. */
static bool fuzz_send(int fd, const uint8_t *p, size_t len)
{
	uint64_t deadline = pf_now_ms() + (uint64_t)pf_opt.tmo * 4;

	while (len) {
		if (!drain(fd))
			return false;
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			return false;
		if (pf_now_ms() > deadline)
			pf_fail("the target neither reads nor answers (%zu bytes unsent after %d ms)", len, pf_opt.tmo * 4);
		struct pollfd pf = { .fd = fd, .events = POLLIN | POLLOUT };
		poll(&pf, 1, 100);
	}
	return true;
}

/* One random PDU: mostly well-formed with random fields, sometimes a lie
 * about lengths, a wrong digest or plain noise. Returns false once the
 * target has closed the connection. */
static bool fuzz_one(struct pf_conn *c, uint32_t *itts, unsigned *nitt)
{
	uint8_t b[BHS_LEN], ahs[64], data[4096], pdu[BHS_LEN + 64 + 4 + 4096 + 8];
	uint32_t dlen = 0, ahslen = 0, itt;
	uint32_t k = pf_rndn(100);
	size_t n = 0;

	itt = *nitt && pf_rndn(3) == 0 ? itts[pf_rndn(*nitt)] : (pf_rndn(20) ? c->itt++ : (uint32_t)pf_rnd());
	if (*nitt < 64)
		itts[(*nitt)++] = itt;
	else
		itts[pf_rndn(64)] = itt;
	pf_bhs_init(b, 0, F_FINAL, c);
	pf_put32(b + 16, itt);
	pf_put32(b + 24, pf_rndn(10) ? c->cmdsn : (uint32_t)pf_rnd());
	if (k < 35) {
		/* SCSI Command */
		b[0] = OP_SCSI_CMD | (pf_rndn(8) ? 0 : F_IMMEDIATE);
		b[1] = (uint8_t)(F_FINAL | (pf_rndn(3) == 0 ? 0x20 : pf_rndn(2) ? 0x40 : 0) | pf_rndn(8));
		if (pf_rndn(10) == 0)
			b[1] = (uint8_t)pf_rnd();
		if (pf_rndn(10) == 0)
			pf_rnd_fill(b + 8, 8);
		random_cdb(b + 32);
		pf_put32(b + 20, pf_rndn(5) ? pf_rndn(65536) : (uint32_t)pf_rnd());
		if ((b[1] & 0x20) && pf_rndn(2))
			dlen = pf_rndn(4096);
		if (!(b[0] & F_IMMEDIATE))
			c->cmdsn++;
	} else if (k < 50) {
		/* Data-Out */
		b[0] = OP_DATA_OUT;
		b[1] = pf_rndn(3) ? F_FINAL : 0;
		pf_put32(b + 20, pf_rndn(2) ? RSVD_TAG : (pf_rndn(8) + 1) << 16 | pf_rndn(4));
		pf_put32(b + 24, 0);
		pf_put32(b + 36, pf_rndn(4));
		pf_put32(b + 40, pf_rndn(4) ? pf_rndn(8) * 512 : (uint32_t)pf_rnd());
		dlen = pf_rndn(4096);
	} else if (k < 60) {
		b[0] = OP_NOP_OUT | (pf_rndn(2) ? F_IMMEDIATE : 0);
		pf_put32(b + 20, RSVD_TAG);
		if (pf_rndn(4) == 0)
			pf_put32(b + 16, RSVD_TAG);
		dlen = pf_rndn(3) ? 0 : pf_rndn(2048);
		if (!(b[0] & F_IMMEDIATE))
			c->cmdsn++;
	} else if (k < 68) {
		b[0] = OP_TMF_REQ | F_IMMEDIATE;
		b[1] = (uint8_t)(F_FINAL | pf_rndn(12));
		pf_put32(b + 20, *nitt ? itts[pf_rndn(*nitt)] : RSVD_TAG);
		pf_put32(b + 32, c->cmdsn);
		if (pf_rndn(10) == 0)
			pf_rnd_fill(b + 8, 8);
	} else if (k < 76) {
		static const char *keys[] = { "SendTargets=All", "SendTargets=", "X-pdufuzz=1", "MaxBurstLength=512",
					      "HeaderDigest=CRC32C", "=", "novalue", "TargetAlias=x" };
		b[0] = OP_TEXT_REQ | (pf_rndn(2) ? F_IMMEDIATE : 0);
		b[1] = pf_rndn(6) ? F_FINAL : 0x40;
		pf_put32(b + 20, pf_rndn(6) ? RSVD_TAG : (uint32_t)pf_rnd());
		for (uint32_t i = pf_rndn(4); i > 0; i--) {
			const char *kv = keys[pf_rndn(sizeof(keys) / sizeof(keys[0]))];
			size_t l = strlen(kv) + 1;
			memcpy(data + dlen, kv, l);
			dlen += (uint32_t)l;
		}
		if (pf_rndn(5) == 0) {
			pf_rnd_fill(data, 200);
			dlen = 200;
		}
		if (!(b[0] & F_IMMEDIATE))
			c->cmdsn++;
	} else if (k < 78) {
		b[0] = OP_LOGOUT_REQ | F_IMMEDIATE;
		b[1] = (uint8_t)(F_FINAL | pf_rndn(4));
		pf_put16(b + 20, (uint16_t)pf_rndn(2));
	} else if (k < 81) {
		b[0] = OP_SNACK;
		b[1] = (uint8_t)(F_FINAL | pf_rndn(4));
		pf_rnd_fill(b + 36, 12);
	} else if (k < 84) {
		b[0] = (uint8_t)(0x07 + pf_rndn(9)) | F_IMMEDIATE;   /* reserved opcodes */
		dlen = pf_rndn(512);
	} else if (k < 86) {
		b[0] = OP_LOGIN_REQ | F_IMMEDIATE;
		b[1] = (uint8_t)pf_rnd();
	} else if (k < 90) {
		pf_rnd_fill(b, BHS_LEN);
		b[4] = 0;
		dlen = pf_rndn(512);
	} else {
		/* a valid READ(10) with one flipped bit */
		b[0] = OP_SCSI_CMD;
		b[1] = F_FINAL | 0x40 | 1;
		pf_put32(b + 20, LUN_BLOCK);
		pf_rw10_cdb(b + 32, 0x28, pf_rndn(1000), 1);
		b[pf_rndn(BHS_LEN)] ^= (uint8_t)(1u << pf_rndn(8));
		if ((b[0] & 0x3f) != OP_SCSI_CMD || (b[1] & 0x20)) {
			b[0] = OP_SCSI_CMD;   /* keep it a read */
			b[1] &= (uint8_t)~0x20;
		}
		if (!(b[0] & F_IMMEDIATE))
			c->cmdsn++;
	}
	if (pf_rndn(25) == 0) {
		ahslen = 4 * (1 + pf_rndn(16));
		pf_rnd_fill(ahs, ahslen);
	}
	if (dlen && (k >= 76 || k < 68))
		pf_rnd_fill(data, dlen);
	b[4] = (uint8_t)(ahslen / 4);
	pf_put24(b + 5, dlen);
	if (pf_rndn(30) == 0)
		pf_put24(b + 5, pf_rndn(2) ? dlen + 1 + pf_rndn(8) : (uint32_t)pf_rnd() & 0xffffff);   /* a lie */
	if ((b[32] == 0x2a || b[32] == 0x2e) && (b[0] & 0x3f) == OP_SCSI_CMD && pf_get32(b + 34) >= 60000)
		b[32] = 0x28;   /* never write where health_check writes */

	memcpy(pdu, b, BHS_LEN);
	n = BHS_LEN;
	memcpy(pdu + n, ahs, ahslen);
	n += ahslen;
	if (c->hdigest) {
		pf_crc32c_put(pdu + n, pdu, n, NULL, 0);
		if (pf_rndn(100) == 0)
			pdu[n] ^= 0x10;
		n += 4;
	}
	if (dlen) {
		uint32_t pad = (4 - (dlen & 3)) & 3;
		memcpy(pdu + n, data, dlen);
		memset(pdu + n + dlen, 0, pad);
		if (c->ddigest) {
			pf_crc32c_put(pdu + n + dlen + pad, data, dlen, pdu + n + dlen, pad);
			if (pf_rndn(50) == 0)
				pdu[n + dlen + pad] ^= 0x01;
			n += 4;
		}
		n += dlen + pad;
	}
	if (pf_rndn(200) == 0)
		n = pf_rndn((uint32_t)n) + 1;   /* cut short: the stream is out of step from here */
	return fuzz_send(c->fd, pdu, n);
}

static void case_random(void)
{
	uint32_t itts[64];
	unsigned sent = 0, conns = 0, drops = 0;
	const unsigned batch = 250;

	while (sent < pf_opt.count) {
		struct pf_login_opts lo = { .initiator = CLIENT_NAME, .digests = conns % 3 == 2 };
		struct pf_conn c;
		unsigned nitt = 0, i;
		bool alive = true;

		pf_conn_open(&c, "random");
		pf_login_ok(&c, &lo);
		conns++;
		for (i = 0; i < batch && sent < pf_opt.count && alive; i++, sent++)
			alive = fuzz_one(&c, itts, &nitt);
		if (!alive)
			drops++;
		pf_conn_close(&c);
		pf_health_check("a batch of random PDUs");
		if (pf_opt.verbose)
			pf_note("%u PDUs sent, %u connections", sent, conns);
	}
	pf_note("%u random PDUs (seed %llu) over %u connections, %u of them dropped by the target; "
	     "the daemon kept serving after every batch", sent, (unsigned long long)pf_opt.seed, conns, drops);
}

/* A second connection joins a session on a daemon with several network
 * threads, with a SCSI command pipelined right behind its final Login
 * Request (an initiator should wait for the Login Response, but a hostile
 * one need not). */
static void case_mcs_pipelined(void)
{
	for (int round = 0; round < 8; round++) {
		struct pf_login_opts lo = { .initiator = CLIENT_NAME, .mcs = true };
		struct pf_conn lead, c2;
		char text[1024];
		size_t len = 0;
		uint8_t b[BHS_LEN], cmd[BHS_LEN];

		pf_conn_open(&lead, "leading connection");
		pf_login_ok(&lead, &lo);
		pf_tur_ok(&lead, "on the leading connection");

		pf_conn_open(&c2, "second connection");
		memcpy(c2.isid, lead.isid, 6);
		c2.tsih = lead.tsih;
		c2.cid = 1;
		c2.cmdsn = lead.cmdsn;
		snprintf(text, sizeof(text), "InitiatorName=%s", CLIENT_NAME);
		len = strlen(text) + 1;
		len += (size_t)snprintf(text + len, sizeof(text) - len, "TargetName=%s", pf_opt.target) + 1;
		len += (size_t)snprintf(text + len, sizeof(text) - len, "SessionType=Normal") + 1;
		len += (size_t)snprintf(text + len, sizeof(text) - len, "MaxRecvDataSegmentLength=%u", MY_MRDSL) + 1;
		pf_login_bhs(&c2, b, F_FINAL | (1 << 2) | 3);
		pf_put24(b + 5, (uint32_t)len);
		/* the command rides in the same segment as the login */
		uint8_t pkt[BHS_LEN + 1024 + BHS_LEN];
		uint32_t padded = ((uint32_t)len + 3) & ~3u;
		memcpy(pkt, b, BHS_LEN);
		memset(pkt + BHS_LEN, 0, padded);
		memcpy(pkt + BHS_LEN, text, len);
		pf_bhs_init(cmd, OP_SCSI_CMD | F_IMMEDIATE, F_FINAL | 1, &c2);
		pf_put32(cmd + 16, 0x9900);
		pf_put32(cmd + 24, c2.cmdsn);
		memcpy(pkt + BHS_LEN + padded, cmd, BHS_LEN);
		pf_send_all(c2.fd, pkt, BHS_LEN + padded + BHS_LEN);
		/* Whatever happens to the second connection, the daemon and the
		 * leading connection must be fine. */
		struct pf_rx r;
		for (int k = 0; k < 3; k++)
			if (pf_recv_pdu(&c2, &r, pf_opt.quiet_ms) != RX_GOT)
				break;
		pf_conn_close(&c2);
		pf_tur_ok(&lead, "after a second connection pipelined a command behind its login");
		pf_conn_close(&lead);
	}
	pf_note("8 second connections with a command pipelined behind the final Login Request: daemon fine");
}

/* ---- main --------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
	const char *what;
} cases[] = {
	{ "nonlogin-first", case_nonlogin_first, "non-Login PDUs before login: drop" },
	{ "garbage", case_garbage, "HTTP, random, 0xff and zero bytes instead of a login: drop" },
	{ "login-oversize", case_login_oversize, "Login data segment > 8192: refused (8192 accepted)" },
	{ "login-longkey", case_login_longkey, "64 KiB+ keys/values, bad key syntax: login status class 2" },
	{ "text-longkey", case_text_longkey, "Text Request with oversized or malformed keys: Reject or drop" },
	{ "unknown-opcode", case_unknown_opcode, "reserved opcodes in full feature phase: Reject 0x05, goes on" },
	{ "snack", case_snack, "SNACK at ErrorRecoveryLevel 0: Reject" },
	{ "cmd-oversize", case_cmd_oversize, "data segment > MaxRecvDataSegmentLength: Reject + drop" },
	{ "ahs", case_ahs, "malformed AHS: an answer or a drop, never a crash" },
	{ "dataout-unknown", case_dataout_unknown, "Data-Out for unknown ITT: ignored, goes on" },
	{ "cmdsn-window", case_cmdsn_window, "CmdSN outside the window: ignored, goes on" },
	{ "truncated", case_truncated, "truncated PDUs then close: daemon survives" },
	{ "hdigest", case_hdigest, "CRC32C digests; bad data digest: Reject; bad header digest: drop" },
	{ "idle", case_idle, "connections that never log in: closed after login_timeout" },
	{ "random", case_random, "thousands of random PDUs after login, in batches" },
	{ "r2t-queued", pf_case_r2t_queued, "a task ends while its R2T waits in the transmit ring: no double free" },
	/* limit-*: only against the daemon tests/limits.sh configures */
	{ "limit-pending-tx", pf_case_limit_pending_tx, "NOP-Out flood, no reads: backpressure, RSS bounded" },
	{ "limit-buffers", pf_case_limit_buffers, "WRITEs held for Data-Out: TASK SET FULL, then timeout" },
	{ "limit-queue-depth", pf_case_limit_queue_depth, "CmdSN window closes; task table full: TASK SET FULL" },
	{ "limit-connections", pf_case_limit_connections, "max_connections: the next one closed at once" },
	{ "limit-sessions", pf_case_limit_sessions, "per target / per initiator: login 0x0302" },
	{ "limit-text", pf_case_limit_text, "max_text_response: Reject 0x0a" },
	{ "limit-text-leak", pf_case_limit_text_leak, "half-fetched SendTargets responses: no leak" },
	{ "limit-fd", pf_case_limit_fd, "at the descriptor limit: no busy loop, clean refusal" },
	{ "mcs-pipelined", case_mcs_pipelined, "a joining connection pipelines a command behind its login" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pdufuzz -a HOST:PORT [-t TARGET] [-T LOGIN_TIMEOUT] [-s SEED] [-n COUNT] [-S] [-v] CASE...\n"
		   "       pdufuzz -l\n"
		   "  -a HOST:PORT  the target portal (numeric; [v6]:port for IPv6)\n"
		   "  -t TARGET     target name (default %s)\n"
		   "  -T SECONDS    the daemon's login_timeout (default 2)\n"
		   "  -s SEED       seed of the random case (default 20261129)\n"
		   "  -n COUNT      PDUs in the random case (default 4000)\n"
		   "  -S            slow target (valgrind): longer timeouts\n"
		   "  -v            verbose\n"
		   "CASE is a name from -l, or 'all'.\n", DEFAULT_TARGET);
}

static void parse_portal(const char *a)
{
	const char *colon;
	size_t hl;

	if (a[0] == '[') {
		const char *end = strchr(a, ']');
		if (!end || end[1] != ':')
			goto bad;
		hl = (size_t)(end - a - 1);
		a++;
		colon = end + 1;
	} else {
		colon = strrchr(a, ':');
		if (!colon)
			goto bad;
		hl = (size_t)(colon - a);
	}
	if (hl == 0 || hl >= sizeof(pf_opt.host) || strlen(colon + 1) >= sizeof(pf_opt.port) || !colon[1])
		goto bad;
	memcpy(pf_opt.host, a, hl);
	pf_opt.host[hl] = 0;
	strcpy(pf_opt.port, colon + 1);
	return;
bad:
	fprintf(stderr, "pdufuzz: bad portal '%s' (want HOST:PORT)\n", a);
	exit(2);
}

static void run_case(size_t i)
{
	pf_cur_case = cases[i].name;
	pf_rng_state = pf_opt.seed * 0x9e3779b97f4a7c15ull + i + 1;
	pf_healthy_open();
	cases[i].fn();
	pf_health_check(cases[i].name);
	pf_logout_ok(&pf_healthy);
	pf_conn_close(&pf_healthy);
	pf_note("PASS (%s)", cases[i].what);
}

int main(int argc, char **argv)
{
	int o;

	while ((o = getopt(argc, argv, "a:t:T:s:n:Svlh")) != -1) {
		switch (o) {
		case 'a': parse_portal(optarg); break;
		case 't': pf_opt.target = optarg; break;
		case 'T': pf_opt.login_timeout = atoi(optarg); break;
		case 's': pf_opt.seed = strtoull(optarg, NULL, 0); break;
		case 'n': pf_opt.count = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'S': pf_opt.slow = true; break;
		case 'v': pf_opt.verbose = true; break;
		case 'l':
			for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
				printf("%-16s %s\n", cases[i].name, cases[i].what);
			return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!pf_opt.host[0] || optind >= argc || pf_opt.login_timeout < 1) {
		usage(stderr);
		return 2;
	}
	if (pf_opt.slow) {
		pf_opt.tmo *= 10;
		pf_opt.quiet_ms *= 5;
	}
	signal(SIGPIPE, SIG_IGN);
	pf_crc32c_init_table();
	for (int a = optind; a < argc; a++) {
		bool found = false;
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			if (!strcmp(argv[a], "all") || !strcmp(argv[a], cases[i].name)) {
				run_case(i);
				found = true;
			}
		}
		if (!found) {
			fprintf(stderr, "pdufuzz: unknown case '%s' (pdufuzz -l lists them)\n", argv[a]);
			return 2;
		}
	}
	return 0;
}
