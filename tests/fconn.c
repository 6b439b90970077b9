/*
 * fconn: the connection-level side of the fault-injection tests
 * (tests/faults.sh), over raw iSCSI PDUs (the client of tests/pdufuzz_io.c):
 * libiscsi neither negotiates a data digest nor shows NOP-Ins, login
 * statuses or a connection dropped at one exact PDU.
 *
 *   fconn HOST PORT TARGET INITIATOR drop-after N   the Nth PDU after login is not answered: EOF
 *   fconn HOST PORT TARGET INITIATOR digest         with CRC32C digests: the first READ's data
 *                                                   digest is wrong, its data right (same as the
 *                                                   second READ's, which is intact)
 *   fconn HOST PORT TARGET INITIATOR login-refused STATUS
 *   fconn HOST PORT TARGET INITIATOR portal-down    the connection is closed before any login
 *   fconn HOST PORT TARGET INITIATOR nop-storm SECONDS MIN
 *                                                   at least MIN unsolicited NOP-Ins in SECONDS
 *
 * Exits 1 (pf_fail) naming what was expected and what came back.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "tests/pdufuzz.h"

static const char *initiator;

static struct pf_login_opts login_opts(bool digests)
{
	struct pf_login_opts lo = { .initiator = initiator, .digests = digests };

	return lo;
}

/* One SCSI Command PDU with no data-out; returns its ITT. */
static uint32_t send_cmd(struct pf_conn *c, const uint8_t *cdb, uint32_t edtl, bool read)
{
	uint8_t b[BHS_LEN];
	uint32_t itt = c->itt++;

	pf_bhs_init(b, OP_SCSI_CMD, (uint8_t)(F_FINAL | (read ? 0x40 : 0) | 0x01), c);
	pf_scsi_lun0(b);
	pf_put32(b + 16, itt);
	pf_put32(b + 20, edtl);
	pf_put32(b + 24, c->cmdsn++);
	memcpy(b + 32, cdb, 16);
	if (pf_send_pdu(c, b, NULL, 0, NULL, 0, 0))
		pf_fail("the target closed the connection while a command was sent");
	return itt;
}

static int recv_exact(int fd, uint8_t *p, size_t n, int tmo)
{
	uint64_t deadline = pf_now_ms() + (uint64_t)tmo;

	while (n) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (pf_now_ms() >= deadline)
			return RX_TMO;
		if (poll(&pfd, 1, (int)(deadline - pf_now_ms())) <= 0)
			continue;
		r = recv(fd, p, n, MSG_DONTWAIT);
		if (r == 0)
			return RX_EOF;
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return RX_EOF;
		}
		p += r;
		n -= (size_t)r;
	}
	return RX_GOT;
}

/* drop-after N: TEST UNIT READYs after login; the Nth is never answered. */
static int case_drop_after(int n)
{
	struct pf_conn c;
	struct pf_login_opts lo = login_opts(false);
	uint8_t tur[16] = { 0 };

	pf_cur_case = "drop-after";
	pf_conn_open(&c, "drop-after");
	pf_login_ok(&c, &lo);
	for (int i = 1; i <= n; i++) {
		struct pf_rx r;
		int rc;

		send_cmd(&c, tur, 0, false);
		rc = pf_recv_reply(&c, &r, pf_opt.tmo);
		if (i < n) {
			/* the first one reports the new nexus's unit attention */
			if (rc != RX_GOT || (r.bhs[0] & 0x3f) != OP_SCSI_RSP || (i > 1 && r.bhs[3] != 0))
				pf_fail("PDU %d of %d: expected a SCSI Response, got %s", i, n,
					rc == RX_EOF ? "a closed connection" : rc == RX_TMO ? "nothing" : "another PDU");
			continue;
		}
		if (rc != RX_EOF)
			pf_fail("PDU %d: expected the connection to be dropped, got %s", n,
				rc == RX_TMO ? "silence" : "an answer");
	}
	pf_note("%d PDUs after login: the first %d answered, the connection dropped at PDU %d", n, n - 1, n);
	pf_conn_close(&c);
	return 0;
}

/* Read one PDU with a data segment and its data digest, computed here. */
static void read_data_pdu(struct pf_conn *c, struct pf_rx *r, bool *digest_ok)
{
	uint8_t dig[4], want[4];
	uint32_t pad;
	int rc;

	for (;;) {
		rc = pf_recv_pdu(c, r, pf_opt.tmo);   /* c->ddigest is off: the digest stays unread */
		if (rc != RX_GOT)
			pf_fail("no Data-In (%s)", rc == RX_EOF ? "connection closed" : "timeout");
		if ((r->bhs[0] & 0x3f) == OP_NOP_IN && !r->dlen)
			continue;
		break;
	}
	if (!r->dlen) {
		*digest_ok = true;
		return;
	}
	if (recv_exact(c->fd, dig, 4, pf_opt.tmo) != RX_GOT)
		pf_fail("no data digest after the data segment");
	pad = (4 - (r->dlen & 3)) & 3;
	pf_crc32c_put(want, r->data, r->dlen + pad, NULL, 0);
	*digest_ok = !memcmp(dig, want, 4);
}

/* One READ(10) of 8 blocks: its Data-In data, and whether the digest held. */
static void read8(struct pf_conn *c, uint8_t *out, bool *digest_ok)
{
	uint8_t cdb[16] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 8, 0 };
	uint32_t got = 0;

	send_cmd(c, cdb, 8 * LUN_BLOCK, true);
	*digest_ok = true;
	while (got < 8 * LUN_BLOCK) {
		struct pf_rx r;
		bool ok;

		read_data_pdu(c, &r, &ok);
		if ((r.bhs[0] & 0x3f) != OP_DATA_IN)
			pf_fail("expected Data-In, got opcode %#04x status %#04x", r.bhs[0], r.bhs[3]);
		memcpy(out + pf_get32(r.bhs + 40), r.data, r.dlen);
		got += r.dlen;
		*digest_ok &= ok;
		if (r.bhs[1] & 0x01) {
			if (r.bhs[3] != 0)
				pf_fail("READ ended with status %#04x", r.bhs[3]);
			return;
		}
	}
	{
		struct pf_rx r;
		bool ok;

		read_data_pdu(c, &r, &ok);
		if ((r.bhs[0] & 0x3f) != OP_SCSI_RSP || r.bhs[3] != 0)
			pf_fail("READ: expected a GOOD SCSI Response");
	}
}

static int case_digest(void)
{
	struct pf_conn c;
	struct pf_login_opts lo = login_opts(true);
	uint8_t a[8 * LUN_BLOCK], b[8 * LUN_BLOCK];
	bool ok_a, ok_b;

	pf_cur_case = "digest";
	pf_conn_open(&c, "digest");
	pf_login_ok(&c, &lo);
	if (!c.ddigest || !c.hdigest)
		pf_fail("CRC32C digests were not negotiated");
	c.ddigest = false;   /* received data digests are checked here */
	{
		/* the unit attention of the new nexus goes to a TEST UNIT READY */
		uint8_t tur[16] = { 0 };
		struct pf_rx r;
		bool ok;

		send_cmd(&c, tur, 0, false);
		read_data_pdu(&c, &r, &ok);
	}
	read8(&c, a, &ok_a);
	read8(&c, b, &ok_b);
	if (ok_a)
		pf_fail("the first READ's data digest is right; the rule should have spoiled it");
	if (!ok_b)
		pf_fail("the second READ's data digest is wrong too (the rule asks for one)");
	if (memcmp(a, b, sizeof(a)))
		pf_fail("the data under the wrong digest differs from the data read again");
	pf_note("first READ: data digest wrong, data intact; second READ: digest right, same data");
	pf_conn_close(&c);
	return 0;
}

static int case_login_refused(unsigned want)
{
	struct pf_conn c;
	struct pf_login_opts lo = login_opts(false);
	int st;

	pf_cur_case = "login-refused";
	pf_conn_open(&c, "login-refused");
	st = pf_login(&c, &lo);
	if ((unsigned)st != want)
		pf_fail("login: expected status %#06x, got %#06x", want, st);
	pf_note("login refused with status %#06x", st);
	pf_conn_close(&c);
	return 0;
}

static int case_portal_down(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai;
	uint8_t x;
	int fd, rc;

	pf_cur_case = "portal-down";
	if (getaddrinfo(pf_opt.host, pf_opt.port, &hints, &ai))
		pf_fail("bad address");
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		pf_fail("socket: %s", strerror(errno));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		pf_note("connection refused (%s)", strerror(errno));
		freeaddrinfo(ai);
		close(fd);
		return 0;
	}
	freeaddrinfo(ai);
	rc = recv_exact(fd, &x, 1, pf_opt.tmo);
	close(fd);
	if (rc != RX_EOF)
		pf_fail("the portal should be down: the connection %s", rc == RX_TMO ? "stayed open" : "sent data");
	pf_note("connection closed by the target before any login");
	return 0;
}

static int case_nop_storm(int seconds, int min)
{
	struct pf_conn c;
	struct pf_login_opts lo = login_opts(false);
	uint64_t end;
	int nops = 0;

	pf_cur_case = "nop-storm";
	pf_conn_open(&c, "nop-storm");
	pf_login_ok(&c, &lo);
	end = pf_now_ms() + (uint64_t)seconds * 1000;
	while (pf_now_ms() < end) {
		struct pf_rx r;
		int rc = pf_recv_pdu(&c, &r, (int)(end - pf_now_ms()) + 1);

		if (rc == RX_EOF)
			pf_fail("the connection closed during the storm");
		if (rc != RX_GOT)
			continue;
		if ((r.bhs[0] & 0x3f) == OP_NOP_IN && pf_get32(r.bhs + 16) == RSVD_TAG &&
		    pf_get32(r.bhs + 20) == RSVD_TAG)
			nops++;
	}
	if (nops < min)
		pf_fail("%d unsolicited NOP-Ins in %d s, expected at least %d", nops, seconds, min);
	pf_roundtrip_ok(&c);
	pf_note("%d unsolicited NOP-Ins in %d s; the connection still answers", nops, seconds);
	pf_conn_close(&c);
	return 0;
}

int main(int argc, char **argv)
{
	const char *what;

	if (argc < 6) {
		fprintf(stderr, "usage: fconn HOST PORT TARGET INITIATOR CASE [ARGS] (see tests/fconn.c)\n");
		return 2;
	}
	snprintf(pf_opt.host, sizeof(pf_opt.host), "%s", argv[1]);
	snprintf(pf_opt.port, sizeof(pf_opt.port), "%s", argv[2]);
	pf_opt.target = argv[3];
	initiator = argv[4];
	what = argv[5];
	pf_crc32c_init_table();
	if (!strcmp(what, "drop-after") && argc == 7)
		return case_drop_after(atoi(argv[6]));
	if (!strcmp(what, "digest"))
		return case_digest();
	if (!strcmp(what, "login-refused") && argc == 7)
		return case_login_refused((unsigned)strtoul(argv[6], NULL, 0));
	if (!strcmp(what, "portal-down"))
		return case_portal_down();
	if (!strcmp(what, "nop-storm") && argc == 8)
		return case_nop_storm(atoi(argv[6]), atoi(argv[7]));
	fprintf(stderr, "fconn: unknown case %s\n", what);
	return 2;
}
