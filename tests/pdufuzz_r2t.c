/*
 * pdufuzz cases around a task whose R2T still sits in the target's
 * transmit ring: the initiator does not read its socket, so everything the
 * target queues for it stays queued, and then the task ends before its R2T
 * has left (ABORT TASK, LUN RESET, a Data-Out at a wrong offset, or all of
 * the data sent early, the Target Transfer Tag guessed). When the
 * initiator reads again, the R2T goes out for a task that is gone; the
 * daemon must not free that task a second time (which corrupted the
 * session's task lists: spinning network threads, logins timing out,
 * SIGTERM ignored).
 *
 * How the R2T is kept in the ring: the initiator's receive buffer is made
 * small before connecting, then it sends NOP-Outs with data and reads
 * none of the echoes, more bytes than the target's socket send buffer can
 * hold (net.ipv4.tcp_wmem's maximum), so the rest of the echoes wait in
 * the target's own queue; the WRITE's R2T is queued behind them.
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

/* Bytes the target's kernel send buffer can hold at most. */
static size_t tcp_wmem_max(void)
{
	unsigned long a, b, c;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
	int n = f ? fscanf(f, "%lu %lu %lu", &a, &b, &c) : 0;

	if (f)
		fclose(f);
	return n == 3 ? (size_t)c : (size_t)16 << 20;
}

/* Open and log in with a tiny receive buffer, then send NOP-Outs with data
 * (immediate, each asking for an echo) and read nothing: afterwards the
 * target holds `extra` bytes of echoes it cannot send. Returns how many
 * NOP-Ins the initiator must read back. */
unsigned pf_stall_conn(struct pf_conn *c, const char *label, size_t extra)
{
	struct pf_login_opts lo = { .initiator = CLIENT_NAME };
	size_t total = tcp_wmem_max() + extra, sent = 0;
	uint32_t len;
	uint8_t *data;
	unsigned n = 0;

	pf_conn_open_rcvbuf(c, label, 4096);
	pf_login_ok(c, &lo);
	/* the unit attention of a new nexus is reported to its first
	 * command: not to the WRITE of the test (the task TEST UNIT READY
	 * used is the next one handed out again) */
	pf_tur_ok(c, "after login");
	len = c->mrdsl < MY_MRDSL ? c->mrdsl : MY_MRDSL;
	data = malloc(len);
	if (!data)
		pf_fail("out of memory");
	memset(data, 0x4e, len);
	/* The target lays out at most 32 PDUs ahead (its transmit ring); the
	 * R2T must land there, not in the queue behind it. */
	if (total > (size_t)28 * len)
		total = (size_t)28 * len;
	while (sent < total) {
		uint8_t b[BHS_LEN];

		pf_bhs_init(b, OP_NOP_OUT | F_IMMEDIATE, F_FINAL, c);
		pf_put32(b + 16, 0x70000000u + n);
		pf_put32(b + 20, RSVD_TAG);
		pf_put32(b + 24, c->cmdsn);
		if (pf_send_pdu(c, b, NULL, 0, data, len, 0))
			pf_fail("%s: the target closed the connection after %zu bytes of NOP-Out data", label, sent);
		sent += len;
		n++;
	}
	free(data);
	return n;
}

/* WRITE(10) of nblocks at lba with no immediate and no unsolicited data:
 * the target must solicit all of it with an R2T. */
static void send_write_no_data(struct pf_conn *c, uint32_t itt, uint32_t lba, uint16_t nblocks)
{
	uint8_t b[BHS_LEN];

	pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 0x20 | 1, c);
	pf_scsi_lun0(b);
	pf_put32(b + 16, itt);
	pf_put32(b + 20, nblocks * LUN_BLOCK);
	pf_put32(b + 24, c->cmdsn++);
	pf_rw10_cdb(b + 32, 0x2a, lba, nblocks);
	if (pf_send_pdu(c, b, NULL, 0, NULL, 0, 0))
		pf_fail("%s: connection closed while sending the WRITE", c->label);
}

static void send_tmf(struct pf_conn *c, uint8_t func, uint32_t itt, uint32_t rtt, uint32_t refcmdsn)
{
	uint8_t b[BHS_LEN];

	pf_bhs_init(b, OP_TMF_REQ | F_IMMEDIATE, (uint8_t)(F_FINAL | func), c);
	pf_scsi_lun0(b);
	pf_put32(b + 16, itt);
	pf_put32(b + 20, rtt);
	pf_put32(b + 24, c->cmdsn);
	pf_put32(b + 32, refcmdsn);
	if (pf_send_pdu(c, b, NULL, 0, NULL, 0, 0))
		pf_fail("%s: connection closed while sending the task management request", c->label);
}

/* Data-Out for the first task of a fresh session: its R2T's TTT is
 * (task index 0 + 1) << 16 | R2TSN 0 -- guessable, as a hostile initiator
 * would. */
static void send_data_out(struct pf_conn *c, uint32_t itt, uint32_t off, uint32_t len)
{
	uint8_t b[BHS_LEN], *d = malloc(len);

	if (!d)
		pf_fail("out of memory");
	memset(d, 0xd0, len);
	pf_bhs_init(b, OP_DATA_OUT, F_FINAL, c);
	pf_scsi_lun0(b);
	pf_put32(b + 16, itt);
	pf_put32(b + 20, 0x00010000u);
	pf_put32(b + 36, 0);
	pf_put32(b + 40, off);
	if (pf_send_pdu(c, b, NULL, 0, d, len, 0))
		pf_fail("%s: connection closed while sending the Data-Out", c->label);
	free(d);
}

/* Read everything back: the NOP-In echoes, the R2T (for a task that may be
 * gone: not answered), and the answer awaited (a TMF Response for tmf_itt,
 * or a SCSI Response for the WRITE). Returns that answer's status/response
 * byte. */
static int drain_until(struct pf_conn *c, unsigned nops, uint8_t want_op, uint32_t want_itt)
{
	unsigned echoes = 0;
	int answer = -1;
	struct pf_rx r;

	while (echoes < nops || answer < 0) {
		int rc = pf_recv_pdu(c, &r, pf_opt.tmo * 2);
		uint8_t op;

		if (rc == RX_TMO)
			pf_fail("%s: after reading %u of %u NOP-In echoes%s, the target sent nothing for %d ms",
				c->label, echoes, nops, answer < 0 ? " and no answer yet" : "", pf_opt.tmo * 2);
		if (rc == RX_EOF)
			pf_fail("%s: the target closed the connection after %u of %u NOP-In echoes", c->label,
				echoes, nops);
		op = r.bhs[0] & 0x3f;
		if (op == OP_NOP_IN && pf_get32(r.bhs + 16) != RSVD_TAG) {
			echoes++;
			continue;
		}
		if (op == OP_NOP_IN || op == OP_ASYNC || op == OP_R2T)
			continue;
		if (op == want_op && pf_get32(r.bhs + 16) == want_itt) {
			answer = want_op == OP_TMF_RSP ? r.bhs[2] : r.bhs[3];
			continue;
		}
		if (op == OP_SCSI_RSP)
			continue;   /* the WRITE ended by the TMF may still be answered */
		pf_fail("%s: unexpected opcode %#04x (ITT %#x)", c->label, r.bhs[0], pf_get32(r.bhs + 16));
	}
	return answer;
}

/* n READ(10)s sent back to back, then every answer read: each ITT must be
 * answered once, with GOOD and its data. A session whose task table has
 * been corrupted (one task handed out twice) fails here, or hangs. */
static void pipelined_reads_ok(struct pf_conn *c, unsigned n)
{
	bool seen[16] = { false };
	unsigned done = 0;
	struct pf_rx r;

	if (n > 16)
		n = 16;
	for (unsigned i = 0; i < n; i++) {
		uint8_t b[BHS_LEN];

		pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 0x40 | 1, c);
		pf_scsi_lun0(b);
		pf_put32(b + 16, 0x5300 + i);
		pf_put32(b + 20, 2 * LUN_BLOCK);
		pf_put32(b + 24, c->cmdsn++);
		pf_rw10_cdb(b + 32, 0x28, 2 * i, 2);
		if (pf_send_pdu(c, b, NULL, 0, NULL, 0, 0))
			pf_fail("%s: connection closed while sending pipelined READs", c->label);
	}
	while (done < n) {
		int rc = pf_recv_reply(c, &r, pf_opt.tmo);
		uint32_t itt = pf_get32(r.bhs + 16) - 0x5300;
		uint8_t op = r.bhs[0] & 0x3f;

		if (rc != RX_GOT)
			pf_fail("%s: %u of %u pipelined READs answered, then %s", c->label, done, n,
				rc == RX_EOF ? "the connection closed" : "nothing");
		if ((op != OP_DATA_IN && op != OP_SCSI_RSP) || itt >= n)
			pf_fail("%s: pipelined READs: unexpected opcode %#04x ITT %#x", c->label, r.bhs[0],
				pf_get32(r.bhs + 16));
		if (op == OP_DATA_IN && !(r.bhs[1] & 0x01))
			continue;
		if (seen[itt])
			pf_fail("%s: pipelined READ ITT %#x answered twice", c->label, 0x5300 + itt);
		if (r.bhs[3] != 0)
			pf_fail("%s: pipelined READ ITT %#x: status %#04x", c->label, 0x5300 + itt, r.bhs[3]);
		seen[itt] = true;
		done++;
	}
}

enum r2t_end { END_ABORT_TASK, END_LUN_RESET, END_BAD_OFFSET, END_EARLY_DATA };

static void r2t_queued_then(enum r2t_end how)
{
	static const char *names[] = { "ABORT TASK", "LUN RESET", "a Data-Out at a wrong offset",
				       "all the data before the R2T left" };
	const uint16_t nblocks = 16;
	const uint32_t witt = 0x5200, titt = 0x5201;
	struct pf_conn c;
	uint32_t wcmdsn;
	unsigned nops;
	int answer;

	nops = pf_stall_conn(&c, "stalled reader", (size_t)2 << 20);
	wcmdsn = c.cmdsn;
	send_write_no_data(&c, witt, 130000, nblocks);
	/* Let the target read the WRITE and queue its R2T before the end. */
	usleep(200000);
	switch (how) {
	case END_ABORT_TASK:
		send_tmf(&c, 1, titt, witt, wcmdsn);
		answer = drain_until(&c, nops, OP_TMF_RSP, titt);
		if (answer != 0)
			pf_fail("ABORT TASK of a WRITE waiting for its R2T: TMF response %d, expected 0", answer);
		break;
	case END_LUN_RESET:
		send_tmf(&c, 5, titt, RSVD_TAG, wcmdsn);
		answer = drain_until(&c, nops, OP_TMF_RSP, titt);
		if (answer != 0)
			pf_fail("LUN RESET: TMF response %d, expected 0", answer);
		break;
	case END_BAD_OFFSET:
		send_data_out(&c, witt, LUN_BLOCK, LUN_BLOCK);
		answer = drain_until(&c, nops, OP_SCSI_RSP, witt);
		if (answer != 0x02)
			pf_fail("Data-Out at a wrong offset: WRITE status %#04x, expected CHECK CONDITION", answer);
		break;
	default:
		send_data_out(&c, witt, 0, nblocks * LUN_BLOCK);
		answer = drain_until(&c, nops, OP_SCSI_RSP, witt);
		if (answer != 0)
			pf_fail("WRITE with all its data before the R2T left: status %#04x, expected GOOD", answer);
		break;
	}
	pf_tur_ok(&c, "on the connection afterwards");
	pipelined_reads_ok(&c, 8);
	pf_logout_ok(&c);
	pf_conn_close(&c);
	pf_note("R2T queued behind %u unread NOP-In echoes, then %s: answered, connection and daemon fine",
		nops, names[how]);
}

void pf_case_r2t_queued(void)
{
	for (enum r2t_end how = END_ABORT_TASK; how <= END_EARLY_DATA; how++) {
		r2t_queued_then(how);
		/* a new login must work after each */
		struct pf_conn fresh;
		pf_open_logged_in(&fresh, "fresh connection");
		pf_tur_ok(&fresh, "after the R2T case");
		pf_logout_ok(&fresh);
		pf_conn_close(&fresh);
	}
}
