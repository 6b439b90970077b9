/*
 * pdufuzz's raw iSCSI initiator: sockets with deadlines, PDU layout with
 * digests (RFC 7143 11.1), login, SCSI commands with Data-In/R2T/Data-Out,
 * logout, and the healthy-session check run after every case.
 *
 * DESIGN: single-threaded and blocking, with poll() deadlines on every read
 * and write, so a hung target shows up as a failure, never as a hung test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "tests/pdufuzz.h"

/* ---- options and failure reporting --------------------------------- */

struct pf_opts pf_opt = {
	.target = DEFAULT_TARGET,
	.login_timeout = 2,
	.seed = 20261129,
	.count = 4000,
	.tmo = 30000,   /* a deadline only a fault reaches, on a loaded machine too */
	.quiet_ms = 400,
};

const char *pf_cur_case = "setup";

void pf_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "pdufuzz: %s: FAIL: ", pf_cur_case);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void pf_note(const char *fmt, ...)
{
	va_list ap;

	printf("pdufuzz: %s: ", pf_cur_case);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

uint64_t pf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- byte order, serial numbers, PRNG, CRC32C ----------------------- */


uint64_t pf_rng_state;

uint64_t pf_rnd(void)
{
	/* xorshift64* */
	uint64_t x = pf_rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	pf_rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint32_t pf_rndn(uint32_t n) { return n ? (uint32_t)(pf_rnd() % n) : 0; }
void pf_rnd_fill(uint8_t *p, size_t n) { for (size_t i = 0; i < n; i++) p[i] = (uint8_t)pf_rnd(); }

static uint32_t pf_crc_table[256];

void pf_crc32c_init_table(void)
{
	/* Castagnoli polynomial, reflected (RFC 7143 appendix B). */
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		pf_crc_table[i] = c;
	}
}

static uint32_t pf_crc32c_run(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = pf_crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* The digest goes on the wire least significant byte first. */
void pf_crc32c_put(uint8_t *out, const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	uint32_t c = pf_crc32c_run(0xffffffffu, a, an);

	c = ~pf_crc32c_run(c, b, bn);
	out[0] = (uint8_t)c; out[1] = (uint8_t)(c >> 8); out[2] = (uint8_t)(c >> 16); out[3] = (uint8_t)(c >> 24);
}

/* ---- sockets with deadlines ------------------------------------------ */

static int pf_tcp_connect(int rcvbuf)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai;
	int fd, one = 1, rc;

	rc = getaddrinfo(pf_opt.host, pf_opt.port, &hints, &ai);
	if (rc)
		pf_fail("address %s:%s: %s", pf_opt.host, pf_opt.port, gai_strerror(rc));
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		pf_fail("socket: %s", strerror(errno));
	/* before connect(): the window announced to the target follows it */
	if (rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		pf_fail("SO_RCVBUF: %s", strerror(errno));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen))
		pf_fail("connect to %s:%s: %s (is the daemon still running?)", pf_opt.host, pf_opt.port, strerror(errno));
	freeaddrinfo(ai);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Write everything. 0 ok, -1 the peer is gone (EPIPE/ECONNRESET). */
int pf_send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t deadline = pf_now_ms() + (uint64_t)pf_opt.tmo * 4;

	while (len) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			return -1;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			pf_fail("send: %s", strerror(errno));
		uint64_t now = pf_now_ms();
		if (now >= deadline)
			pf_fail("the target stopped reading: %zu bytes unsent after %d ms", len, pf_opt.tmo * 4);
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		poll(&pf, 1, (int)(deadline - now));
	}
	return 0;
}


/* Read exactly len bytes before the deadline. */
static int pf_recv_full(int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		uint64_t now = pf_now_ms();
		if (now >= deadline)
			return RX_TMO;
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int n = poll(&pf, 1, (int)(deadline - now));
		if (n <= 0)
			continue;
		ssize_t r = recv(fd, p, len, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return RX_EOF;
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			pf_fail("recv: %s", strerror(errno));
		}
		p += r;
		len -= (size_t)r;
	}
	return RX_GOT;
}

/* ---- connections ------------------------------------------------------ */



static unsigned pf_isid_counter;

void pf_conn_open(struct pf_conn *c, const char *label)
{
	pf_conn_open_rcvbuf(c, label, 0);
}

/* The same with the socket's receive buffer set to rcvbuf bytes (0: the
 * system's default), for an initiator that reads slowly. */
void pf_conn_open_rcvbuf(struct pf_conn *c, const char *label, int rcvbuf)
{
	memset(c, 0, sizeof(*c));
	c->fd = pf_tcp_connect(rcvbuf);
	c->label = label;
	/* ISID type "random" (RFC 7143 11.12.5); unique per connection of
	 * this process so no login reinstates another session. */
	c->isid[0] = 0x80;
	c->isid[1] = (uint8_t)(getpid() >> 8);
	c->isid[2] = (uint8_t)getpid();
	pf_put16(c->isid + 3, (uint16_t)++pf_isid_counter);
	c->isid[5] = 0x5a;
	c->itt = 0x1000;
	c->cmdsn = 1;
	c->mrdsl = 8192;
	c->rcap = MY_MRDSL + 4096;
	c->rbuf = malloc(c->rcap);
	if (!c->rbuf)
		pf_fail("out of memory");
}

void pf_conn_close(struct pf_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->rbuf);
	c->rbuf = NULL;
}


/* Lay out and send one PDU: BHS, AHS, header digest, data, pad, data
 * digest (RFC 7143 11.1). Returns 0, or -1 if the target has gone. */
int pf_send_pdu(struct pf_conn *c, uint8_t *bhs, const uint8_t *ahs, uint32_t ahslen,
		    const uint8_t *data, uint32_t dlen, unsigned flags)
{
	uint32_t pad = (4 - (dlen & 3)) & 3;
	size_t total = BHS_LEN + ahslen + 4 + dlen + pad + 4;
	uint8_t *buf = malloc(total);
	size_t n = 0;
	bool hd = c->hdigest && !(flags & SEND_NO_DIGESTS), dd = c->ddigest && !(flags & SEND_NO_DIGESTS);
	int rc;

	if (!buf)
		pf_fail("out of memory");
	if (!(flags & SEND_KEEP_LEN)) {
		bhs[4] = (uint8_t)(ahslen / 4);
		pf_put24(bhs + 5, dlen);
	}
	memcpy(buf, bhs, BHS_LEN);
	n = BHS_LEN;
	if (ahslen) {
		memcpy(buf + n, ahs, ahslen);
		n += ahslen;
	}
	if (hd) {
		pf_crc32c_put(buf + n, buf, n, NULL, 0);
		if (flags & SEND_BAD_HDIGEST)
			buf[n] ^= 0x01;
		n += 4;
	}
	if (dlen) {
		memcpy(buf + n, data, dlen);
		memset(buf + n + dlen, 0, pad);
		if (dd) {
			pf_crc32c_put(buf + n + dlen + pad, buf + n, dlen + pad, NULL, 0);
			if (flags & SEND_BAD_DDIGEST)
				buf[n + dlen + pad] ^= 0x80;
		}
		n += dlen + pad + (dd ? 4 : 0);
	}
	rc = pf_send_all(c->fd, buf, n);
	free(buf);
	return rc;
}

void pf_bhs_init(uint8_t *b, uint8_t op, uint8_t flags, struct pf_conn *c)
{
	memset(b, 0, BHS_LEN);
	b[0] = op;
	b[1] = flags;
	pf_put32(b + 28, c->expstatsn);
}

/* Track StatSN and the command window from a target PDU (RFC 7143 4.2.2). */
static void pf_note_sn(struct pf_conn *c, const uint8_t *b)
{
	uint8_t op = b[0] & 0x3f;
	bool has_statsn = op == OP_SCSI_RSP || op == OP_TMF_RSP || op == OP_TEXT_RSP ||
			  op == OP_LOGOUT_RSP || op == OP_REJECT || op == OP_LOGIN_RSP ||
			  (op == OP_DATA_IN && (b[1] & 0x01)) || (op == OP_NOP_IN && pf_get32(b + 16) != RSVD_TAG);

	if (has_statsn && !pf_sn_gt(c->expstatsn, pf_get32(b + 24) + 1))
		c->expstatsn = pf_get32(b + 24) + 1;
	if (op != OP_LOGIN_RSP || b[36] == 0) {
		uint32_t exp = pf_get32(b + 28);
		if (pf_sn_gt(exp, c->cmdsn))
			c->cmdsn = exp;
		c->maxcmdsn = pf_get32(b + 32);
	}
}

/* Read one PDU. RX_GOT, RX_EOF (the target closed) or RX_TMO. */
int pf_recv_pdu(struct pf_conn *c, struct pf_rx *r, int tmo)
{
	uint64_t deadline = pf_now_ms() + (uint64_t)tmo;
	uint8_t ahs[1024], dig[4], want[4];
	uint32_t ahslen, pad;
	int rc;

	rc = pf_recv_full(c->fd, r->bhs, BHS_LEN, deadline);
	if (rc != RX_GOT)
		return rc;
	ahslen = r->bhs[4] * 4u;
	r->dlen = pf_get24(r->bhs + 5);
	if (ahslen && (rc = pf_recv_full(c->fd, ahs, ahslen, deadline)) != RX_GOT)
		return rc;
	if (c->hdigest) {
		if ((rc = pf_recv_full(c->fd, dig, 4, deadline)) != RX_GOT)
			return rc;
		uint8_t hdr[BHS_LEN + 1024];
		memcpy(hdr, r->bhs, BHS_LEN);
		memcpy(hdr + BHS_LEN, ahs, ahslen);
		pf_crc32c_put(want, hdr, BHS_LEN + ahslen, NULL, 0);
		if (memcmp(dig, want, 4))
			pf_fail("%s: header digest error in a PDU from the target (opcode %#x)", c->label, r->bhs[0]);
	}
	pad = (4 - (r->dlen & 3)) & 3;
	if (r->dlen + pad > c->rcap)
		pf_fail("%s: the target sent a %u-byte data segment, more than our MaxRecvDataSegmentLength %u",
		     c->label, r->dlen, MY_MRDSL);
	r->data = c->rbuf;
	if (r->dlen) {
		if ((rc = pf_recv_full(c->fd, c->rbuf, r->dlen + pad, deadline)) != RX_GOT)
			return rc;
		if (c->ddigest) {
			if ((rc = pf_recv_full(c->fd, dig, 4, deadline)) != RX_GOT)
				return rc;
			pf_crc32c_put(want, c->rbuf, r->dlen + pad, NULL, 0);
			if (memcmp(dig, want, 4))
				pf_fail("%s: data digest error in a PDU from the target (opcode %#x)", c->label, r->bhs[0]);
		}
	}
	if (pf_opt.verbose)
		fprintf(stderr, "  %s <- op %#04x flags %#04x itt %#x dlen %u\n", c->label, r->bhs[0],
			r->bhs[1], pf_get32(r->bhs + 16), r->dlen);
	pf_note_sn(c, r->bhs);
	return RX_GOT;
}

/* Read the next PDU that is not a NOP-In ping or an Async Message
 * (answering pings as RFC 7143 11.18/11.19 require). */
int pf_recv_reply(struct pf_conn *c, struct pf_rx *r, int tmo)
{
	for (;;) {
		int rc = pf_recv_pdu(c, r, tmo);
		uint8_t op = r->bhs[0] & 0x3f;

		if (rc != RX_GOT)
			return rc;
		if (op == OP_NOP_IN && pf_get32(r->bhs + 16) == RSVD_TAG) {
			if (pf_get32(r->bhs + 20) != RSVD_TAG) {
				uint8_t b[BHS_LEN];
				pf_bhs_init(b, OP_NOP_OUT | F_IMMEDIATE, F_FINAL, c);
				memcpy(b + 8, r->bhs + 8, 8);
				pf_put32(b + 16, RSVD_TAG);
				pf_put32(b + 20, pf_get32(r->bhs + 20));
				pf_put32(b + 24, c->cmdsn);
				if (pf_send_pdu(c, b, NULL, 0, NULL, 0, 0))
					return RX_EOF;
			}
			continue;
		}
		if (op == OP_ASYNC)
			continue;
		return RX_GOT;
	}
}

/* Nothing may arrive for quiet_ms (a PDU the target must ignore). */
void pf_expect_silence(struct pf_conn *c, const char *what)
{
	struct pf_rx r;
	int rc = pf_recv_reply(c, &r, pf_opt.quiet_ms);

	if (rc == RX_GOT)
		pf_fail("%s: expected no answer, got opcode %#04x (reason/status byte %#04x, ITT %#x)", what,
		     r.bhs[0], r.bhs[2], pf_get32(r.bhs + 16));
	if (rc == RX_EOF)
		pf_fail("%s: expected no answer, but the target closed the connection", what);
}

/* The target must close the connection within the answer timeout; it may
 * first send a Reject or a Login Response with a failure status. Returns
 * the milliseconds it took; *rejected tells whether a Reject came. */
uint64_t pf_expect_drop_within(struct pf_conn *c, const char *what, int *reject_reason, int limit)
{
	uint64_t t0 = pf_now_ms();
	struct pf_rx r;

	if (reject_reason)
		*reject_reason = -1;
	for (;;) {
		uint64_t spent = pf_now_ms() - t0;
		int rc;

		if (spent >= (uint64_t)limit)
			pf_fail("%s: expected the target to drop the connection; still open after %d ms", what, limit);
		rc = pf_recv_pdu(c, &r, limit - (int)spent);
		if (rc == RX_EOF)
			return pf_now_ms() - t0;
		if (rc == RX_TMO)
			continue;
		uint8_t op = r.bhs[0] & 0x3f;
		if (op == OP_REJECT) {
			if (reject_reason)
				*reject_reason = r.bhs[2];
			continue;
		}
		if (op == OP_LOGIN_RSP && r.bhs[36] != 0)
			continue;
		if (op == OP_NOP_IN || op == OP_ASYNC)
			continue;
		pf_fail("%s: expected a drop (or Reject), got opcode %#04x status %#04x", what, r.bhs[0],
		     op == OP_LOGIN_RSP ? r.bhs[36] : r.bhs[3]);
	}
}

uint64_t pf_expect_drop(struct pf_conn *c, const char *what, int *reject_reason)
{
	return pf_expect_drop_within(c, what, reject_reason, pf_opt.tmo);
}

/* Drop before the login timer could have fired: the reader itself said no. */
void pf_expect_quick_drop(struct pf_conn *c, const char *what)
{
	uint64_t ms = pf_expect_drop(c, what, NULL);

	if (!pf_opt.slow && ms + 300 >= (uint64_t)pf_opt.login_timeout * 1000)
		pf_fail("%s: dropped only after %llu ms, which looks like the login timer, not the PDU check",
		     what, (unsigned long long)ms);
}

/* ---- login (RFC 7143 6, 11.12, 11.13) -------------------------------- */


static void pf_text_add(char *buf, size_t cap, size_t *len, const char *kv)
{
	size_t n = strlen(kv) + 1;

	if (*len + n > cap)
		pf_fail("login text overflow");
	memcpy(buf + *len, kv, n);
	*len += n;
}

const char *pf_text_value(const uint8_t *data, uint32_t len, const char *key)
{
	size_t kl = strlen(key);
	uint32_t i = 0;

	while (i < len) {
		const char *e = (const char *)data + i;
		size_t el = strnlen(e, len - i);
		if (el > kl && !strncmp(e, key, kl) && e[kl] == '=')
			return e + kl + 1;
		i += (uint32_t)el + 1;
	}
	return NULL;
}

void pf_login_bhs(struct pf_conn *c, uint8_t *b, uint8_t flags)
{
	pf_bhs_init(b, OP_LOGIN_REQ | F_IMMEDIATE, flags, c);
	memcpy(b + 8, c->isid, 6);
	pf_put16(b + 14, c->tsih);
	pf_put32(b + 16, c->itt);
	pf_put16(b + 20, c->cid);
	pf_put32(b + 24, c->cmdsn);
}

/* A normal login straight to full feature phase: CSG=1 NSG=3 T=1.
 * Returns the login status (class << 8 | detail), 0 on success. */
int pf_login(struct pf_conn *c, const struct pf_login_opts *lo)
{
	char text[2048], kv[512];
	size_t len = 0;
	uint8_t b[BHS_LEN];
	struct pf_rx r;
	int rc;

	snprintf(kv, sizeof(kv), "InitiatorName=%s", lo->initiator);
	pf_text_add(text, sizeof(text), &len, kv);
	snprintf(kv, sizeof(kv), "TargetName=%s", pf_opt.target);
	pf_text_add(text, sizeof(text), &len, kv);
	pf_text_add(text, sizeof(text), &len, "SessionType=Normal");
	pf_text_add(text, sizeof(text), &len, lo->digests ? "HeaderDigest=CRC32C" : "HeaderDigest=None");
	pf_text_add(text, sizeof(text), &len, lo->digests ? "DataDigest=CRC32C" : "DataDigest=None");
	snprintf(kv, sizeof(kv), "MaxRecvDataSegmentLength=%u", MY_MRDSL);
	pf_text_add(text, sizeof(text), &len, kv);
	pf_text_add(text, sizeof(text), &len, "ImmediateData=Yes");
	pf_text_add(text, sizeof(text), &len, "InitialR2T=No");
	pf_text_add(text, sizeof(text), &len, "MaxBurstLength=262144");
	pf_text_add(text, sizeof(text), &len, "FirstBurstLength=65536");
	pf_text_add(text, sizeof(text), &len, lo->mcs ? "MaxConnections=2" : "MaxConnections=1");
	pf_text_add(text, sizeof(text), &len, "MaxOutstandingR2T=1");
	pf_text_add(text, sizeof(text), &len, "DataPDUInOrder=Yes");
	pf_text_add(text, sizeof(text), &len, "DataSequenceInOrder=Yes");
	pf_text_add(text, sizeof(text), &len, "ErrorRecoveryLevel=0");
	pf_text_add(text, sizeof(text), &len, "DefaultTime2Wait=0");
	pf_text_add(text, sizeof(text), &len, "DefaultTime2Retain=0");

	c->initial_r2t = true;
	c->immediate_data = true;
	c->first_burst = 65536;
	c->max_burst = 262144;
	for (int round = 0; round < 4; round++) {
		pf_login_bhs(c, b, F_FINAL | (1 << 2) | 3);   /* T=1, CSG=1, NSG=3 */
		if (pf_send_pdu(c, b, NULL, 0, (uint8_t *)text, (uint32_t)len, SEND_NO_DIGESTS))
			pf_fail("%s: the target closed the connection during login", c->label);
		rc = pf_recv_pdu(c, &r, pf_opt.tmo);
		if (rc != RX_GOT)
			pf_fail("%s: no Login Response (%s)", c->label, rc == RX_EOF ? "connection closed" : "timeout");
		if ((r.bhs[0] & 0x3f) != OP_LOGIN_RSP)
			pf_fail("%s: expected a Login Response, got opcode %#04x", c->label, r.bhs[0]);
		if (pf_get32(r.bhs + 16) != c->itt)
			pf_fail("%s: Login Response ITT %#x, sent %#x", c->label, pf_get32(r.bhs + 16), c->itt);
		if (r.bhs[36] || r.bhs[37])
			return r.bhs[36] << 8 | r.bhs[37];
		const char *v;
		if ((v = pf_text_value(r.data, r.dlen, "MaxRecvDataSegmentLength")))
			c->mrdsl = (uint32_t)strtoul(v, NULL, 10);
		if ((v = pf_text_value(r.data, r.dlen, "HeaderDigest")))
			c->hdigest = !strcmp(v, "CRC32C");
		if ((v = pf_text_value(r.data, r.dlen, "DataDigest")))
			c->ddigest = !strcmp(v, "CRC32C");
		if ((v = pf_text_value(r.data, r.dlen, "ImmediateData")))
			c->immediate_data = !strcmp(v, "Yes");
		if ((v = pf_text_value(r.data, r.dlen, "InitialR2T")))
			c->initial_r2t = !strcmp(v, "Yes");
		if ((v = pf_text_value(r.data, r.dlen, "FirstBurstLength")))
			c->first_burst = (uint32_t)strtoul(v, NULL, 10);
		if ((v = pf_text_value(r.data, r.dlen, "MaxBurstLength")))
			c->max_burst = (uint32_t)strtoul(v, NULL, 10);
		len = 0;   /* later rounds carry no keys */
		if ((r.bhs[1] & 0x80) && (r.bhs[1] & 3) == 3) {
			c->tsih = pf_get16(r.bhs + 14);
			if (!c->tsih)
				pf_fail("%s: successful final Login Response with TSIH 0", c->label);
			c->cmdsn = pf_get32(r.bhs + 28);
			c->maxcmdsn = pf_get32(r.bhs + 32);
			c->itt++;
			if (lo->digests && (!c->hdigest || !c->ddigest))
				pf_fail("%s: asked for CRC32C digests only, target did not select them", c->label);
			return 0;
		}
	}
	pf_fail("%s: the target did not reach full feature phase in 4 login rounds", c->label);
}

void pf_login_ok(struct pf_conn *c, const struct pf_login_opts *lo)
{
	int st = pf_login(c, lo);

	if (st)
		pf_fail("%s: login refused with status %#06x", c->label, st);
}

void pf_open_logged_in(struct pf_conn *c, const char *label)
{
	struct pf_login_opts lo = { .initiator = CLIENT_NAME };

	pf_conn_open(c, label);
	pf_login_ok(c, &lo);
}

/* ---- SCSI commands (RFC 7143 11.3, 11.4, 11.7, 11.8) ------------------ */


unsigned pf_sense_key(const struct pf_scsi_result *sr)
{
	if (sr->sense_len < 3)
		return 0;
	if ((sr->sense[0] & 0x7f) >= 0x72)
		return sr->sense[1] & 0x0f;
	return sr->sense[2] & 0x0f;
}

void pf_scsi_lun0(uint8_t *b) { memset(b + 8, 0, 8); }

/* Run one command to completion. rd: Data-In buffer of edtl bytes;
 * wr: Data-Out data of edtl bytes. Returns RX_GOT or RX_EOF. */
int pf_scsi_cmd(struct pf_conn *c, const uint8_t *cdb, uint8_t *rd, const uint8_t *wr, uint32_t edtl,
		    struct pf_scsi_result *sr)
{
	uint8_t b[BHS_LEN];
	uint32_t itt = c->itt++;
	uint32_t imm = 0, sent;
	uint32_t expect_datasn = 0;
	struct pf_rx r;
	int rc;

	memset(sr, 0, sizeof(*sr));
	pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 0x01 /* SIMPLE */, c);
	if (rd && edtl)
		b[1] |= 0x40;
	if (wr && edtl) {
		b[1] |= 0x20;
		if (c->immediate_data)
			imm = edtl < c->first_burst ? edtl : c->first_burst;
		if (imm > c->mrdsl)
			imm = c->mrdsl;
	}
	pf_scsi_lun0(b);
	pf_put32(b + 16, itt);
	pf_put32(b + 20, edtl);
	pf_put32(b + 24, c->cmdsn++);
	memcpy(b + 32, cdb, 16);
	sent = imm;
	if (wr && edtl && !c->initial_r2t && imm < edtl && imm < c->first_burst)
		b[1] &= (uint8_t)~F_FINAL;   /* unsolicited Data-Out follows */
	if (pf_send_pdu(c, b, NULL, 0, wr, imm, 0))
		return RX_EOF;
	if (!(b[1] & F_FINAL)) {
		/* Unsolicited Data-Out up to FirstBurstLength (RFC 7143 11.7). */
		uint32_t end = edtl < c->first_burst ? edtl : c->first_burst, dsn = 0;
		while (sent < end) {
			uint32_t n = end - sent < c->mrdsl ? end - sent : c->mrdsl;
			uint8_t d[BHS_LEN];
			pf_bhs_init(d, OP_DATA_OUT, sent + n == end ? F_FINAL : 0, c);
			pf_scsi_lun0(d);
			pf_put32(d + 16, itt);
			pf_put32(d + 20, RSVD_TAG);
			pf_put32(d + 36, dsn++);
			pf_put32(d + 40, sent);
			if (pf_send_pdu(c, d, NULL, 0, wr + sent, n, 0))
				return RX_EOF;
			sent += n;
		}
	}
	for (;;) {
		rc = pf_recv_reply(c, &r, pf_opt.tmo);
		if (rc == RX_TMO)
			pf_fail("%s: no answer to CDB %#04x (ITT %#x) within %d ms", c->label, cdb[0], itt, pf_opt.tmo);
		if (rc == RX_EOF)
			return RX_EOF;
		uint8_t op = r.bhs[0] & 0x3f;
		if (op == OP_REJECT)
			pf_fail("%s: CDB %#04x answered with Reject reason %#04x", c->label, cdb[0], r.bhs[2]);
		if (pf_get32(r.bhs + 16) != itt)
			pf_fail("%s: unexpected PDU opcode %#04x with ITT %#x while waiting for ITT %#x", c->label,
			     r.bhs[0], pf_get32(r.bhs + 16), itt);
		if (op == OP_DATA_IN) {
			uint32_t off = pf_get32(r.bhs + 40);
			if (!rd || (uint64_t)off + r.dlen > edtl)
				pf_fail("%s: Data-In at offset %u length %u outside EDTL %u", c->label, off, r.dlen, edtl);
			if (pf_get32(r.bhs + 36) != expect_datasn)
				pf_fail("%s: Data-In DataSN %u, expected %u", c->label, pf_get32(r.bhs + 36), expect_datasn);
			expect_datasn++;
			memcpy(rd + off, r.data, r.dlen);
			sr->got += r.dlen;
			if (r.bhs[1] & 0x01) {
				sr->status = r.bhs[3];
				sr->resid = pf_get32(r.bhs + 44);
				return RX_GOT;
			}
		} else if (op == OP_R2T) {
			uint32_t ttt = pf_get32(r.bhs + 20), off = pf_get32(r.bhs + 40), want = pf_get32(r.bhs + 44);
			uint32_t dsn = 0;
			if (!wr || (uint64_t)off + want > edtl)
				pf_fail("%s: R2T for offset %u length %u outside EDTL %u", c->label, off, want, edtl);
			while (want) {
				uint32_t n = want < c->mrdsl ? want : c->mrdsl;
				uint8_t d[BHS_LEN];
				pf_bhs_init(d, OP_DATA_OUT, n == want ? F_FINAL : 0, c);
				pf_scsi_lun0(d);
				pf_put32(d + 16, itt);
				pf_put32(d + 20, ttt);
				pf_put32(d + 36, dsn++);
				pf_put32(d + 40, off);
				if (pf_send_pdu(c, d, NULL, 0, wr + off, n, 0))
					return RX_EOF;
				off += n;
				want -= n;
			}
		} else if (op == OP_SCSI_RSP) {
			if (r.bhs[2] != 0)
				pf_fail("%s: SCSI Response with iSCSI response %#04x", c->label, r.bhs[2]);
			sr->status = r.bhs[3];
			sr->resid = pf_get32(r.bhs + 44);
			if (r.dlen >= 2) {
				uint32_t sl = pf_get16(r.data);
				if (sl > sizeof(sr->sense) || sl + 2 > r.dlen)
					pf_fail("%s: SCSI Response sense length %u in a %u-byte segment", c->label, sl, r.dlen);
				memcpy(sr->sense, r.data + 2, sl);
				sr->sense_len = sl;
			}
			return RX_GOT;
		} else {
			pf_fail("%s: unexpected opcode %#04x for a SCSI command", c->label, r.bhs[0]);
		}
	}
}

/* TEST UNIT READY until GOOD; a pending unit attention (another session's
 * reset, say) is reported once per cause, so a few retries are allowed. */
void pf_tur_ok(struct pf_conn *c, const char *when)
{
	uint8_t cdb[16] = { 0 };
	struct pf_scsi_result sr;

	for (int i = 0; i < 6; i++) {
		if (pf_scsi_cmd(c, cdb, NULL, NULL, 0, &sr) != RX_GOT)
			pf_fail("%s: connection dropped on TEST UNIT READY %s", c->label, when);
		if (sr.status == 0)
			return;
		if (sr.status == 0x02 && pf_sense_key(&sr) == 0x06)
			continue;
		pf_fail("%s: TEST UNIT READY %s: status %#04x sense key %#x", c->label, when, sr.status, pf_sense_key(&sr));
	}
	pf_fail("%s: TEST UNIT READY %s: still a unit attention after 6 tries", c->label, when);
}

void pf_rw10_cdb(uint8_t *cdb, uint8_t op, uint32_t lba, uint16_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	pf_put32(cdb + 2, lba);
	pf_put16(cdb + 7, n);
}

void pf_read10_ok(struct pf_conn *c, uint32_t lba, uint16_t n, uint8_t *buf)
{
	uint8_t cdb[16];
	struct pf_scsi_result sr;

	for (int i = 0; i < 6; i++) {
		pf_rw10_cdb(cdb, 0x28, lba, n);
		if (pf_scsi_cmd(c, cdb, buf, NULL, n * LUN_BLOCK, &sr) != RX_GOT)
			pf_fail("%s: connection dropped on READ(10)", c->label);
		if (sr.status == 0x02 && pf_sense_key(&sr) == 0x06)
			continue;
		if (sr.status != 0 || sr.got != n * LUN_BLOCK)
			pf_fail("%s: READ(10) of %u blocks at %u: status %#04x, %u bytes", c->label, n, lba, sr.status, sr.got);
		return;
	}
	pf_fail("%s: READ(10): still a unit attention after 6 tries", c->label);
}

void pf_write10_ok(struct pf_conn *c, uint32_t lba, uint16_t n, const uint8_t *buf)
{
	uint8_t cdb[16];
	struct pf_scsi_result sr;

	for (int i = 0; i < 6; i++) {
		pf_rw10_cdb(cdb, 0x2a, lba, n);
		if (pf_scsi_cmd(c, cdb, NULL, buf, n * LUN_BLOCK, &sr) != RX_GOT)
			pf_fail("%s: connection dropped on WRITE(10)", c->label);
		if (sr.status == 0x02 && pf_sense_key(&sr) == 0x06)
			continue;
		if (sr.status != 0)
			pf_fail("%s: WRITE(10) of %u blocks at %u: status %#04x sense key %#x", c->label, n, lba,
			     sr.status, pf_sense_key(&sr));
		return;
	}
	pf_fail("%s: WRITE(10): still a unit attention after 6 tries", c->label);
}

/* Write a pattern and read it back; the random case never writes above
 * LBA 65536, so these blocks are ours. */
void pf_roundtrip_ok(struct pf_conn *c)
{
	static unsigned round;
	uint8_t w[8 * LUN_BLOCK], r[8 * LUN_BLOCK];
	uint32_t lba = 100000 + (round++ % 1000) * 8;

	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = (uint8_t)(i * 7 + round + (i >> 9));
	pf_write10_ok(c, lba, 8, w);
	pf_read10_ok(c, lba, 8, r);
	if (memcmp(w, r, sizeof(w)))
		pf_fail("%s: READ(10) after WRITE(10) at LBA %u returned other data", c->label, lba);
	/* 600 blocks: Data-In split into several PDUs, the write by R2T */
	static uint8_t big_w[600 * LUN_BLOCK], big_r[600 * LUN_BLOCK];
	for (size_t i = 0; i < sizeof(big_w); i++)
		big_w[i] = (uint8_t)(i ^ (i >> 11) ^ round);
	pf_write10_ok(c, 110000, 600, big_w);
	pf_read10_ok(c, 110000, 600, big_r);
	if (memcmp(big_w, big_r, sizeof(big_w)))
		pf_fail("%s: 600-block READ(10) after WRITE(10) returned other data", c->label);
}

void pf_logout_ok(struct pf_conn *c)
{
	uint8_t b[BHS_LEN];
	struct pf_rx r;
	int rc;

	pf_bhs_init(b, OP_LOGOUT_REQ | F_IMMEDIATE, F_FINAL | 0 /* close the session */, c);
	pf_put32(b + 16, c->itt++);
	pf_put16(b + 20, c->cid);
	pf_put32(b + 24, c->cmdsn);
	if (pf_send_pdu(c, b, NULL, 0, NULL, 0, 0))
		pf_fail("%s: connection dropped before Logout", c->label);
	rc = pf_recv_reply(c, &r, pf_opt.tmo);
	if (rc != RX_GOT || (r.bhs[0] & 0x3f) != OP_LOGOUT_RSP || r.bhs[2] != 0)
		pf_fail("%s: Logout: no successful Logout Response (rc %d, opcode %#04x, response %#04x)", c->label,
		     rc, rc == RX_GOT ? r.bhs[0] : 0, rc == RX_GOT ? r.bhs[2] : 0);
	pf_expect_drop(c, "after Logout", NULL);
}

/* ---- the pf_healthy session and the after-case check ---------------------- */

struct pf_conn pf_healthy;

void pf_healthy_open(void)
{
	struct pf_login_opts lo = { .initiator = HEALTHY_NAME };

	pf_conn_open(&pf_healthy, "healthy session");
	pf_login_ok(&pf_healthy, &lo);
	pf_tur_ok(&pf_healthy, "before the case");
}

/* Never harm to another session; the daemon is still serving. */
void pf_health_check(const char *after)
{
	uint8_t buf[LUN_BLOCK];
	struct pf_conn fresh;
	char when[128];

	snprintf(when, sizeof(when), "after %s", after);
	pf_tur_ok(&pf_healthy, when);
	pf_read10_ok(&pf_healthy, 0, 1, buf);
	pf_open_logged_in(&fresh, "fresh connection");
	pf_tur_ok(&fresh, when);
	pf_roundtrip_ok(&fresh);
	pf_logout_ok(&fresh);
	pf_conn_close(&fresh);
}
