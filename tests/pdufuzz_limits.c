/*
 * pdufuzz cases for the resource limits (targetd.conf(5), RESOURCE
 * LIMITS). They expect the daemon that tests/limits.sh starts, configured
 * with the LIM_* values of pdufuzz.h, and its process id in TARGETD_PID
 * (to read its resident memory from /proc/PID/status and its CPU time
 * from /proc/PID/stat). Each case drives one limit and checks the answer
 * the initiator gets and that the daemon's memory stays bounded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "tests/pdufuzz.h"

#define MIB (1024u * 1024u)

static long daemon_pid(void)
{
	const char *p = getenv("TARGETD_PID");

	if (!p || atol(p) <= 0)
		pf_fail("TARGETD_PID is not set (run the limit cases through tests/limits.sh)");
	return atol(p);
}

/* The daemon's resident set (VmRSS), in bytes. */
static uint64_t daemon_rss(void)
{
	char path[64], line[256];
	uint64_t kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", daemon_pid());
	f = fopen(path, "r");
	if (!f)
		pf_fail("%s: %s (is the daemon running?)", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu kB", (unsigned long *)&kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* CPU time the daemon has used (user + system), in clock ticks. */
static uint64_t daemon_cpu_ticks(void)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", daemon_pid());
	f = fopen(path, "r");
	if (!f)
		pf_fail("%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	/* after "pid (comm)": state ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime stime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		pf_fail("cannot parse %s", path);
	return (uint64_t)ut + st;
}

/* RSS figures mean nothing under AddressSanitizer (its quarantine keeps
 * freed memory): tests/limits.sh sets PF_RSS_CHECKS=0 there, and
 * LeakSanitizer checks for leaks at exit instead. */
static bool rss_checks(void)
{
	const char *e = getenv("PF_RSS_CHECKS");

	return !e || strcmp(e, "0");
}

static void open_as(struct pf_conn *c, const char *label, const char *initiator, int rcvbuf)
{
	struct pf_login_opts lo = { .initiator = initiator };

	pf_conn_open_rcvbuf(c, label, rcvbuf);
	pf_login_ok(c, &lo);
	pf_tur_ok(c, "after login");
}

/* ---- max_pending_tx_per_connection (NOP-In echoes) -------------------- */

/* Send NOP-Outs with data and read nothing: the daemon must stop reading
 * once LIM_PENDING_TX bytes of echoes wait, not queue all of them; then,
 * when the initiator reads again, every echo comes and the connection
 * goes on. */
void pf_case_limit_pending_tx(void)
{
	const size_t total = 96u * MIB;
	struct pf_conn c;
	uint32_t len;
	uint8_t *pdu;
	size_t sent = 0, pdu_len, off = 0;
	unsigned nops = 0, echoes = 0;
	uint64_t rss0, rss1, last_progress;
	bool blocked = false;

	open_as(&c, "NOP flood", "iqn.2026-11.org.targetd.test:lim-nop", 4096);
	len = c.mrdsl < MY_MRDSL ? c.mrdsl : MY_MRDSL;
	pdu_len = BHS_LEN + len;
	pdu = calloc(1, pdu_len);
	if (!pdu)
		pf_fail("out of memory");
	memset(pdu + BHS_LEN, 0x4e, len);
	rss0 = daemon_rss();
	last_progress = pf_now_ms();
	/* Phase 1: send without reading until the daemon stops reading. */
	while (sent < total) {
		if (off == 0) {
			pf_bhs_init(pdu, OP_NOP_OUT | F_IMMEDIATE, F_FINAL, &c);
			pf_put24(pdu + 5, len);
			pf_put32(pdu + 16, 0x71000000u + nops);
			pf_put32(pdu + 20, RSVD_TAG);
			pf_put32(pdu + 24, c.cmdsn);
		}
		ssize_t w = send(c.fd, pdu + off, pdu_len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			off += (size_t)w;
			sent += (size_t)w;
			last_progress = pf_now_ms();
			if (off == pdu_len) {
				off = 0;
				nops++;
			}
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			pf_fail("send: %s after %zu bytes", strerror(errno), sent);
		if (pf_now_ms() - last_progress > 1500) {
			blocked = true;
			break;
		}
		struct pollfd p = { .fd = c.fd, .events = POLLOUT };
		poll(&p, 1, 100);
	}
	rss1 = daemon_rss();
	if (!blocked)
		pf_fail("sent %zu bytes of NOP-Out data without reading and the daemon read them all "
			"(no backpressure)", sent);
	pf_note("the daemon stopped reading after %zu MiB of NOP-Out data (%u NOPs); RSS %+lld KiB",
		sent / MIB, nops, (long long)(rss1 - rss0) / 1024);
	if (rss_checks() && rss1 > rss0 + LIM_RSS_SLACK)
		pf_fail("the daemon's RSS grew by %llu KiB while the initiator did not read (limit %u KiB "
			"of pending output + %u KiB slack)", (unsigned long long)(rss1 - rss0) / 1024,
			LIM_PENDING_TX / 1024, LIM_RSS_SLACK / 1024);
	/* Phase 2: read echoes while finishing the PDU in progress. */
	while (off) {
		struct pf_rx r;
		ssize_t w = send(c.fd, pdu + off, pdu_len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			off += (size_t)w;
			if (off == pdu_len) {
				off = 0;
				nops++;
			}
			continue;
		}
		if (pf_recv_pdu(&c, &r, pf_opt.tmo) != RX_GOT)
			pf_fail("no echo while finishing the last NOP-Out");
		if ((r.bhs[0] & 0x3f) == OP_NOP_IN && pf_get32(r.bhs + 16) != RSVD_TAG)
			echoes++;
	}
	while (echoes < nops) {
		struct pf_rx r;
		int rc = pf_recv_pdu(&c, &r, pf_opt.tmo);
		if (rc != RX_GOT)
			pf_fail("%u of %u NOP-In echoes, then %s", echoes, nops, rc == RX_EOF ? "a close" : "silence");
		if ((r.bhs[0] & 0x3f) == OP_NOP_IN && pf_get32(r.bhs + 16) != RSVD_TAG) {
			if (r.dlen != len)
				pf_fail("NOP-In echo of %u bytes, sent %u", r.dlen, len);
			echoes++;
		}
	}
	free(pdu);
	pf_tur_ok(&c, "after reading every echo");
	pf_logout_ok(&c);
	pf_conn_close(&c);
	pf_note("all %u echoes arrived once the initiator read; the connection goes on", nops);
}

/* ---- data buffers, Data-Out timeout, queue depth --------------------- */

static void send_write(struct pf_conn *c, uint32_t itt, uint32_t lba, uint32_t nblocks, bool immediate)
{
	uint8_t b[BHS_LEN];

	pf_bhs_init(b, OP_SCSI_CMD | (immediate ? F_IMMEDIATE : 0), F_FINAL | 0x20 | 1, c);
	pf_scsi_lun0(b);
	pf_put32(b + 16, itt);
	pf_put32(b + 20, nblocks * LUN_BLOCK);
	pf_put32(b + 24, immediate ? c->cmdsn : c->cmdsn++);
	memset(b + 32, 0, 16);
	b[32] = 0x8a;   /* WRITE(16) */
	pf_put32(b + 32 + 6, lba);
	pf_put32(b + 32 + 10, nblocks);
	if (pf_send_pdu(c, b, NULL, 0, NULL, 0, 0))
		pf_fail("%s: connection closed while sending a WRITE", c->label);
}

/* Answer R2Ts for itt until all but the last block has been sent: the
 * buffer is filled (resident) and the WRITE keeps waiting. */
static void fill_but_last_block(struct pf_conn *c, uint32_t itt, uint32_t edtl)
{
	static uint8_t data[MY_MRDSL];
	uint32_t done = 0;

	memset(data, 0xab, sizeof(data));
	while (done < edtl - LUN_BLOCK) {
		struct pf_rx r;
		int rc = pf_recv_reply(c, &r, pf_opt.tmo);
		if (rc != RX_GOT)
			pf_fail("%s: no R2T for ITT %#x after %u bytes", c->label, itt, done);
		if ((r.bhs[0] & 0x3f) != OP_R2T || pf_get32(r.bhs + 16) != itt)
			pf_fail("%s: waiting for an R2T of ITT %#x, got opcode %#04x ITT %#x status %#04x",
				c->label, itt, r.bhs[0], pf_get32(r.bhs + 16), r.bhs[3]);
		uint32_t ttt = pf_get32(r.bhs + 20), off = pf_get32(r.bhs + 40), want = pf_get32(r.bhs + 44);
		uint32_t end = off + want, dsn = 0;
		bool last_burst = end >= edtl;
		if (last_burst)
			end = edtl - LUN_BLOCK;
		while (off < end) {
			uint32_t n = end - off < c->mrdsl ? end - off : c->mrdsl;
			uint8_t d[BHS_LEN];
			pf_bhs_init(d, OP_DATA_OUT, (!last_burst && off + n == end) ? F_FINAL : 0, c);
			pf_scsi_lun0(d);
			pf_put32(d + 16, itt);
			pf_put32(d + 20, ttt);
			pf_put32(d + 36, dsn++);
			pf_put32(d + 40, off);
			if (pf_send_pdu(c, d, NULL, 0, data, n, 0))
				pf_fail("%s: connection closed while sending Data-Out", c->label);
			off += n;
		}
		done = end;
	}
}

/* Responses that came while waiting for another one (a held WRITE whose
 * data_out_timeout ran out first on a slow machine): kept for later. */
static struct early_rsp {
	struct pf_conn *c;
	uint32_t itt;
	uint8_t status;
	uint32_t sense;
} early[16];
static unsigned n_early;

static uint32_t rsp_sense(const struct pf_rx *r)
{
	if (r->dlen >= 2 + 14) {
		const uint8_t *sd = r->data + 2;
		if ((sd[0] & 0x7f) >= 0x72)
			return (uint32_t)(sd[1] & 0x0f) << 16 | (uint32_t)sd[2] << 8 | sd[3];
		return (uint32_t)(sd[2] & 0x0f) << 16 | (uint32_t)sd[12] << 8 | sd[13];
	}
	return 0;
}

/* The SCSI Response for itt: its status, and the sense key/ASC/ASCQ. */
static uint8_t wait_response(struct pf_conn *c, uint32_t itt, int tmo, uint32_t *sense)
{
	for (unsigned i = 0; i < n_early; i++) {
		if (early[i].c == c && early[i].itt == itt) {
			uint8_t st = early[i].status;
			if (sense)
				*sense = early[i].sense;
			early[i] = early[--n_early];
			return st;
		}
	}
	for (;;) {
		struct pf_rx r;
		int rc = pf_recv_reply(c, &r, tmo);
		if (rc != RX_GOT)
			pf_fail("%s: no SCSI Response for ITT %#x within %d ms (%s)", c->label, itt, tmo,
				rc == RX_EOF ? "closed" : "silence");
		if ((r.bhs[0] & 0x3f) == OP_R2T)
			continue;
		if ((r.bhs[0] & 0x3f) == OP_SCSI_RSP && pf_get32(r.bhs + 16) != itt && n_early < 16) {
			early[n_early++] = (struct early_rsp){ c, pf_get32(r.bhs + 16), r.bhs[3], rsp_sense(&r) };
			continue;
		}
		if ((r.bhs[0] & 0x3f) != OP_SCSI_RSP || pf_get32(r.bhs + 16) != itt)
			pf_fail("%s: waiting for the response of ITT %#x, got opcode %#04x ITT %#x", c->label, itt,
				r.bhs[0], pf_get32(r.bhs + 16));
		if (sense)
			*sense = rsp_sense(&r);
		return r.bhs[3];
	}
}

/* Two 8 MiB WRITEs, filled to the last block, hold a connection's whole
 * allowance (LIM_CONN_BUFFER): a third command gets TASK SET FULL; two
 * such connections hold the daemon-wide allowance (LIM_TOTAL_BUFFER): a
 * third connection's WRITE gets TASK SET FULL. After data_out_timeout
 * the waiting WRITEs end with CHECK CONDITION, ABORTED COMMAND 4B/06,
 * and a WRITE works again. */
void pf_case_limit_buffers(void)
{
	const uint32_t big = 8 * MIB / LUN_BLOCK;
	static const char *names[3] = { "iqn.2026-11.org.targetd.test:lim-buf1",
					"iqn.2026-11.org.targetd.test:lim-buf2",
					"iqn.2026-11.org.targetd.test:lim-buf3" };
	struct pf_conn c[3];
	uint64_t rss0 = daemon_rss(), rss1, t0;
	uint32_t sense;
	uint8_t st;

	for (int i = 0; i < 3; i++)
		open_as(&c[i], "buffers", names[i], 0);
	t0 = pf_now_ms();
	for (int i = 0; i < 2; i++) {
		for (uint32_t k = 0; k < 2; k++) {
			send_write(&c[i], 0x6100 + k, 1000 + (uint32_t)i * 40000 + k * big, big, false);
			fill_but_last_block(&c[i], 0x6100 + k, big * LUN_BLOCK);
		}
		send_write(&c[i], 0x6102, 200, 8, false);
		st = wait_response(&c[i], 0x6102, pf_opt.tmo, NULL);
		if (st != 0x28)
			pf_fail("connection %d holding %u MiB of WRITE buffers: a third WRITE got status %#04x, "
				"expected TASK SET FULL", i + 1, 16, st);
	}
	pf_note("max_buffer_per_connection: two waiting 8 MiB WRITEs, then TASK SET FULL");
	send_write(&c[2], 0x6100, 90000, big, false);
	st = wait_response(&c[2], 0x6100, pf_opt.tmo, NULL);
	if (st != 0x28)
		pf_fail("with %u MiB of buffers held by two connections, a third connection's WRITE got "
			"status %#04x, expected TASK SET FULL", LIM_TOTAL_BUFFER / MIB, st);
	pf_note("max_buffer_total: a third connection's WRITE gets TASK SET FULL");
	rss1 = daemon_rss();
	if (rss_checks() && rss1 > rss0 + LIM_TOTAL_BUFFER + LIM_RSS_SLACK)
		pf_fail("RSS grew by %llu KiB with the buffer limits at %u MiB in total",
			(unsigned long long)(rss1 - rss0) / 1024, LIM_TOTAL_BUFFER / MIB);
	/* data_out_timeout: the four waiting WRITEs end. */
	for (int i = 0; i < 2; i++) {
		for (uint32_t k = 0; k < 2; k++) {
			st = wait_response(&c[i], 0x6100 + k, (LIM_DATA_OUT_TIMEOUT + 5) * 1000, &sense);
			if (st != 0x02 || sense != 0x0b4b06)
				pf_fail("a WRITE without its last block: status %#04x sense %06x, expected CHECK "
					"CONDITION 0b/4b/06 (INITIATOR RESPONSE TIMEOUT)", st, sense);
		}
	}
	uint64_t waited = pf_now_ms() - t0;
	if (waited + 500 < LIM_DATA_OUT_TIMEOUT * 1000u)
		pf_fail("the WRITEs ended after %llu ms, before data_out_timeout (%u s)",
			(unsigned long long)waited, LIM_DATA_OUT_TIMEOUT);
	pf_note("data_out_timeout: the waiting WRITEs ended after %llu ms with CHECK CONDITION 0B/4B/06",
		(unsigned long long)waited);
	for (int i = 0; i < 3; i++) {
		uint8_t w[8 * LUN_BLOCK];
		memset(w, i, sizeof(w));
		pf_write10_ok(&c[i], 300 + (uint32_t)i * 8, 8, w);
		pf_logout_ok(&c[i]);
		pf_conn_close(&c[i]);
	}
	pf_note("buffers given back: WRITEs work again on every connection");
}

/* queue_depth (LIM_QUEUE_DEPTH): the CmdSN window closes after that many
 * commands; immediate commands beyond the session's task table get TASK
 * SET FULL. */
void pf_case_limit_queue_depth(void)
{
	struct pf_conn c;
	uint8_t b[BHS_LEN];
	struct pf_rx r;
	unsigned full = 0;
	const unsigned imm = 2 * LIM_QUEUE_DEPTH + 16 + 4;

	open_as(&c, "queue depth", "iqn.2026-11.org.targetd.test:lim-qd", 0);
	for (unsigned i = 0; i < LIM_QUEUE_DEPTH; i++)
		send_write(&c, 0x6200 + i, 400 + i, 1, false);
	/* an immediate NOP-Out tells the window */
	pf_bhs_init(b, OP_NOP_OUT | F_IMMEDIATE, F_FINAL, &c);
	pf_put32(b + 16, 0x62ff);
	pf_put32(b + 20, RSVD_TAG);
	pf_put32(b + 24, c.cmdsn);
	pf_send_pdu(&c, b, NULL, 0, NULL, 0, 0);
	for (;;) {
		if (pf_recv_reply(&c, &r, pf_opt.tmo) != RX_GOT)
			pf_fail("no NOP-In");
		if ((r.bhs[0] & 0x3f) == OP_NOP_IN)
			break;
		if ((r.bhs[0] & 0x3f) != OP_R2T)
			pf_fail("unexpected opcode %#04x", r.bhs[0]);
	}
	if (pf_get32(r.bhs + 32) != pf_get32(r.bhs + 28) - 1)
		pf_fail("%u WRITEs waiting with queue_depth %u: ExpCmdSN %u MaxCmdSN %u, the window should be "
			"closed", LIM_QUEUE_DEPTH, LIM_QUEUE_DEPTH, pf_get32(r.bhs + 28), pf_get32(r.bhs + 32));
	pf_note("queue_depth %u: the CmdSN window is closed (MaxCmdSN = ExpCmdSN - 1)", LIM_QUEUE_DEPTH);
	for (unsigned i = 0; i < imm; i++)
		send_write(&c, 0x6300 + i, 500 + i, 1, true);
	for (;;) {
		int rc = pf_recv_reply(&c, &r, 1000);
		if (rc != RX_GOT)
			break;
		if ((r.bhs[0] & 0x3f) == OP_SCSI_RSP && r.bhs[3] == 0x28)
			full++;
	}
	if (!full)
		pf_fail("%u immediate WRITEs beyond the task table: no TASK SET FULL", imm);
	pf_note("immediate commands beyond the session's tasks: %u TASK SET FULL", full);
	pf_conn_close(&c);
}

/* ---- connections and sessions ------------------------------------------ */

/* Close connections so that the daemon is known to have seen the closes:
 * shut down the sending side, wait for the daemon's own close (its end of
 * the connection gone, its slot with it), then close. A sleep would guess,
 * and on a loaded machine guess wrong. */
static void close_and_settle(struct pf_conn *c, unsigned n)
{
	uint64_t deadline = pf_now_ms() + (uint64_t)pf_opt.tmo;

	for (unsigned i = 0; i < n; i++)
		if (c[i].fd >= 0)
			shutdown(c[i].fd, SHUT_WR);
	for (unsigned i = 0; i < n; i++) {
		uint8_t junk[4096];

		while (c[i].fd >= 0) {
			struct pollfd p = { .fd = c[i].fd, .events = POLLIN };
			uint64_t now = pf_now_ms();
			ssize_t r;

			if (now >= deadline)
				pf_fail("the daemon did not close its end of %u connections within %d ms "
					"after they were shut down", n, pf_opt.tmo);
			if (poll(&p, 1, (int)(deadline - now)) <= 0)
				continue;
			r = recv(c[i].fd, junk, sizeof(junk), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno == ECONNRESET))
				break;
			if (r < 0 && errno != EAGAIN && errno != EINTR)
				pf_fail("recv: %s", strerror(errno));
		}
		pf_conn_close(&c[i]);
	}
}

/* A discovery login on a new connection, under a name of its own (so
 * that no session limit applies, and no login timer runs once it is in
 * full feature phase): true when admitted, false when the daemon closed
 * the connection without answering (max_connections). The answer or the
 * close is waited for, never guessed from a short window; any other
 * outcome fails. */
static bool connection_admitted(struct pf_conn *c, unsigned i)
{
	char text[512];
	size_t n = 0;
	uint8_t b[BHS_LEN];
	struct pf_rx r;
	int rc;

	pf_conn_open(c, "connections");
	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "InitiatorName=iqn.2026-11.org.targetd.test:lim-conn%u", i) + 1;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "SessionType=Discovery") + 1;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "HeaderDigest=None") + 1;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "DataDigest=None") + 1;
	pf_login_bhs(c, b, F_FINAL | (1 << 2) | 3);
	if (pf_send_pdu(c, b, NULL, 0, (uint8_t *)text, (uint32_t)n, 0))
		return false;
	rc = pf_recv_pdu(c, &r, pf_opt.tmo);
	if (rc == RX_EOF)
		return false;
	if (rc != RX_GOT)
		pf_fail("connection %u: neither a Login Response nor a close within %d ms", i + 1, pf_opt.tmo);
	if ((r.bhs[0] & 0x3f) != OP_LOGIN_RSP || r.bhs[36] || !(r.bhs[1] & F_FINAL))
		pf_fail("connection %u: discovery login answered with opcode %#04x status %#04x%02x", i + 1,
			r.bhs[0], r.bhs[36], r.bhs[37]);
	return true;
}

/* Open connections, each logged in, until the daemon closes one without
 * a byte: max_connections. Returns how many were admitted. */
static unsigned open_until_refused(struct pf_conn *c, unsigned max)
{
	for (unsigned i = 0; i < max; i++) {
		if (!connection_admitted(&c[i], i)) {
			pf_conn_close(&c[i]);
			return i;
		}
	}
	return max;
}

void pf_case_limit_connections(void)
{
	struct pf_conn c[64];
	unsigned n = open_until_refused(c, 64);

	/* the healthy session holds one */
	if (n + 1 != LIM_CONNECTIONS)
		pf_fail("%u connections stayed open (+1 healthy), max_connections is %u", n, LIM_CONNECTIONS);
	close_and_settle(c, n);
	pf_note("max_connections %u: the next connection is closed at once; after closing them logins work",
		LIM_CONNECTIONS);
}

static int login_status(const char *initiator, const char *target, struct pf_conn *c)
{
	struct pf_login_opts lo = { .initiator = initiator };
	const char *saved = pf_opt.target;
	int st;

	pf_conn_open(c, "login");
	pf_opt.target = target;
	st = pf_login(c, &lo);
	pf_opt.target = saved;
	return st;
}

void pf_case_limit_sessions(void)
{
	struct pf_conn c[8];
	char name[96];
	int st;

	/* max_connections_per_target on target B, each from its own initiator */
	for (unsigned i = 0; i < LIM_CONNS_PER_TARGET; i++) {
		snprintf(name, sizeof(name), "iqn.2026-11.org.targetd.test:lim-t%u", i);
		st = login_status(name, LIM_TARGET_B, &c[i]);
		if (st)
			pf_fail("login %u of %u to %s refused with %#06x", i + 1, LIM_CONNS_PER_TARGET, LIM_TARGET_B, st);
	}
	st = login_status("iqn.2026-11.org.targetd.test:lim-tx", LIM_TARGET_B, &c[LIM_CONNS_PER_TARGET]);
	if (st != 0x0302)
		pf_fail("login beyond max_connections_per_target: status %#06x, expected 0x0302 (out of resources)",
			st);
	close_and_settle(c, LIM_CONNS_PER_TARGET + 1);
	pf_note("max_connections_per_target %u: the next login is refused with 0x0302", LIM_CONNS_PER_TARGET);

	/* max_sessions_per_initiator, across targets */
	for (unsigned i = 0; i < LIM_SESSIONS_PER_INITIATOR; i++) {
		st = login_status("iqn.2026-11.org.targetd.test:lim-one", i % 2 ? LIM_TARGET_B : pf_opt.target, &c[i]);
		if (st)
			pf_fail("session %u of the initiator refused with %#06x", i + 1, st);
	}
	st = login_status("iqn.2026-11.org.targetd.test:lim-one", pf_opt.target, &c[LIM_SESSIONS_PER_INITIATOR]);
	if (st != 0x0302)
		pf_fail("session beyond max_sessions_per_initiator: status %#06x, expected 0x0302", st);
	close_and_settle(c, LIM_SESSIONS_PER_INITIATOR + 1);
	pf_note("max_sessions_per_initiator %u: the next session is refused with 0x0302",
		LIM_SESSIONS_PER_INITIATOR);
}

/* ---- Text Responses: max_text_response, and a half-fetched one ------- */

/* A discovery session (RFC 7143 appendix C) whose MaxRecvDataSegmentLength
 * is mrdsl. Returns false if the daemon refused or dropped the login. */
static bool discovery_login(struct pf_conn *c, const char *initiator, uint32_t mrdsl)
{
	char text[512];
	size_t n = 0;
	uint8_t b[BHS_LEN];
	struct pf_rx r;

	pf_conn_open(c, "discovery");
	n += (size_t)snprintf(text + n, sizeof(text) - n, "InitiatorName=%s", initiator) + 1;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "SessionType=Discovery") + 1;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "HeaderDigest=None") + 1;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "DataDigest=None") + 1;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "MaxRecvDataSegmentLength=%u", mrdsl) + 1;
	pf_login_bhs(c, b, F_FINAL | (1 << 2) | 3);
	if (pf_send_pdu(c, b, NULL, 0, (uint8_t *)text, (uint32_t)n, 0))
		return false;
	if (pf_recv_pdu(c, &r, pf_opt.tmo) != RX_GOT || (r.bhs[0] & 0x3f) != OP_LOGIN_RSP)
		return false;
	if (r.bhs[36]) {
		if (pf_opt.verbose)
			fprintf(stderr, "discovery login: status %#04x%02x\n", r.bhs[36], r.bhs[37]);
		return false;
	}
	if (!(r.bhs[1] & F_FINAL) || (r.bhs[1] & 3) != 3)
		pf_fail("discovery login: not in full feature phase after one round");
	c->cmdsn = pf_get32(r.bhs + 28);
	c->itt++;
	return true;
}

/* Send a Text Request with the keys (NUL-separated, n bytes) and return
 * the first PDU of the answer in r. */
static void text_request(struct pf_conn *c, const char *keys, size_t n, struct pf_rx *r)
{
	uint8_t b[BHS_LEN];

	pf_bhs_init(b, OP_TEXT_REQ | F_IMMEDIATE, F_FINAL, c);
	pf_put32(b + 16, c->itt++);
	pf_put32(b + 20, RSVD_TAG);
	pf_put32(b + 24, c->cmdsn);
	if (pf_send_pdu(c, b, NULL, 0, (const uint8_t *)keys, (uint32_t)n, 0))
		pf_fail("%s: closed while sending a Text Request", c->label);
	if (pf_recv_reply(c, r, pf_opt.tmo) != RX_GOT)
		pf_fail("%s: no answer to a Text Request", c->label);
}

void pf_case_limit_text(void)
{
	static const char two[] = "SendTargets=All\0SendTargets=All";
	struct pf_conn c;
	struct pf_rx r;
	size_t total = 0;
	unsigned pdus = 1;

	if (!discovery_login(&c, "iqn.2026-11.org.targetd.test:lim-text", 512))
		pf_fail("discovery login refused");
	text_request(&c, "SendTargets=All", 16, &r);
	/* RFC 7143 11.11: a long response comes in pieces, each fetched by
	 * an empty Text Request carrying the Target Transfer Tag. */
	while ((r.bhs[0] & 0x3f) == OP_TEXT_RSP) {
		uint8_t b[BHS_LEN];
		total += r.dlen;
		if (r.bhs[1] & F_FINAL)
			break;
		pf_bhs_init(b, OP_TEXT_REQ | F_IMMEDIATE, F_FINAL, &c);
		pf_put32(b + 16, pf_get32(r.bhs + 16));
		pf_put32(b + 20, pf_get32(r.bhs + 20));
		pf_put32(b + 24, c.cmdsn);
		pf_send_pdu(&c, b, NULL, 0, NULL, 0, 0);
		if (pf_recv_reply(&c, &r, pf_opt.tmo) != RX_GOT)
			pf_fail("no next piece of the Text Response");
		pdus++;
	}
	if ((r.bhs[0] & 0x3f) != OP_TEXT_RSP || total <= 512 || total > LIM_TEXT_RESPONSE)
		pf_fail("SendTargets=All: opcode %#04x, %zu bytes (the test expects more than 512 and at most %u)",
			r.bhs[0], total, LIM_TEXT_RESPONSE);
	pf_note("SendTargets=All: %zu bytes in %u Text Responses", total, pdus);
	text_request(&c, two, sizeof(two), &r);
	if ((r.bhs[0] & 0x3f) != OP_REJECT || r.bhs[2] != 0x0a)
		pf_fail("a Text Response of about %zu bytes (max_text_response %u): opcode %#04x reason %#04x, "
			"expected Reject 0x0a", 2 * total, LIM_TEXT_RESPONSE, r.bhs[0], r.bhs[2]);
	pf_note("a Text Response beyond max_text_response: Reject 0x0a (out of resources)");
	pf_conn_close(&c);
}

/* Each connection fetches the first piece of a SendTargets response and
 * closes: the rest must not stay allocated. */
static void half_fetch(unsigned i)
{
	char name[96];
	struct pf_conn c;
	struct pf_rx r;

	snprintf(name, sizeof(name), "iqn.2026-11.org.targetd.test:lim-half%u", i);
	for (int tries = 0; !discovery_login(&c, name, 512); tries++) {
		/* the daemon may not have seen the previous close yet */
		pf_conn_close(&c);
		if (tries > 100)
			pf_fail("discovery login %u refused 100 times", i);
		usleep(20000);
	}
	text_request(&c, "SendTargets=All", 16, &r);
	if ((r.bhs[0] & 0x3f) != OP_TEXT_RSP || (r.bhs[1] & F_FINAL))
		pf_fail("SendTargets=All with MaxRecvDataSegmentLength 512: not a partial Text Response");
	pf_conn_close(&c);
}

void pf_case_limit_text_leak(void)
{
	uint64_t rss0, rss1;

	for (unsigned i = 0; i < 200; i++)
		half_fetch(i);
	usleep(300000);
	rss0 = daemon_rss();
	for (unsigned i = 200; i < 1000; i++)
		half_fetch(i);
	usleep(300000);
	rss1 = daemon_rss();
	pf_note("800 connections that fetched part of a SendTargets response: RSS %+lld KiB",
		(long long)(rss1 - rss0) / 1024);
	if (rss_checks() && rss1 > rss0 + LIM_LEAK_SLACK)
		pf_fail("RSS grew by %llu KiB over 800 half-fetched Text Responses (a leak)",
			(unsigned long long)(rss1 - rss0) / 1024);
}

/* ---- the file descriptor limit ------------------------------------------ */

/* Run against a daemon with a low descriptor limit (tests/limits.sh):
 * more connections than descriptors must not make the acceptor spin. */
void pf_case_limit_fd(void)
{
	static struct pf_conn c[LIM_FD_CONNS];
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t t0, cpu0, cpu1, ms;
	unsigned closed = 0;

	for (unsigned i = 0; i < LIM_FD_CONNS; i++)
		pf_conn_open(&c[i], "fd limit");
	usleep(300000);
	cpu0 = daemon_cpu_ticks();
	t0 = pf_now_ms();
	usleep(1500000);
	cpu1 = daemon_cpu_ticks();
	ms = pf_now_ms() - t0;
	for (unsigned i = 0; i < LIM_FD_CONNS; i++) {
		uint8_t x;
		struct pollfd p = { .fd = c[i].fd, .events = POLLIN };
		if (poll(&p, 1, 0) > 0 && recv(c[i].fd, &x, 1, MSG_DONTWAIT) <= 0)
			closed++;
	}
	pf_note("%u connections beyond the descriptor limit: the daemon used %llu ms of CPU in %llu ms; "
		"%u were closed by it", LIM_FD_CONNS, (unsigned long long)((cpu1 - cpu0) * 1000 / (uint64_t)hz),
		(unsigned long long)ms, closed);
	if ((cpu1 - cpu0) * 1000 / (uint64_t)hz > ms / 4)
		pf_fail("the daemon used %llu ms of CPU in %llu ms at the descriptor limit (a busy loop)",
			(unsigned long long)((cpu1 - cpu0) * 1000 / (uint64_t)hz), (unsigned long long)ms);
	if (!closed)
		pf_fail("no connection beyond the descriptor limit was refused (closed)");
	for (unsigned i = 0; i < LIM_FD_CONNS; i++)
		pf_conn_close(&c[i]);
	usleep(500000);
}
