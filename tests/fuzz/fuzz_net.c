/*
 * The transport harnesses' bench: see fuzz_net.h for what it sets up and
 * checks.
 *
 * DESIGN (threads): none of its own. The network thread's state is a
 * static struct net_thread turned by the caller; the daemon's worker pool
 * is not used (memory LUNs complete on the owning thread).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "backstore/io_engine.h"
#include "common/crc32c.h"
#include "conf/config.h"
#include "scsi/histo.h"
#include "scsi/stats.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"
#include "tests/fuzz/fuzz_net.h"

#define FZ_TARGET "iqn.2025-01.org.targetd.fuzz:target"
#define FZ_INITIATOR "iqn.2025-01.org.targetd.fuzz:initiator"
#define FZ_QUEUE_DEPTH 8
#define FZ_SEND_CAP (256u << 10)    /* data segment bytes written at most */
#define FZ_END_TURNS 10000

struct fz_state fz;

static struct {
	bool ready;
	int trace;                 /* FUZZ_VERBOSE=2: every PDU on stderr */
	char state_dir[4096];
	struct conf conf;
	struct targetd_runtime runtime;
	struct net_thread thr;
	uint64_t clock;
	struct fz_conn *parsing;   /* whose output check_pdu() is reading */
} B;

/* Commands in flight by ITT, for the checks of Data-In, R2T and status. */
struct fz_task {
	uint32_t itt;
	unsigned count;            /* commands with this ITT not answered */
	bool mixed;                /* two were outstanding at once: which is
				    * answered is not known until none is */
	bool read, write;
	uint32_t edtl;
	uint32_t in_off, in_datasn, r2tsn;
};
#define FZ_TASKS 64
static struct fz_task tasks[FZ_TASKS];
static unsigned n_tasks;

static uint64_t fz_clock(void)
{
	return B.clock;
}

static void fz_fail(const char *what, const uint8_t *bhs)
{
	fprintf(stderr, "fuzz_net: the target %s", what);
	if (bhs) {
		fprintf(stderr, " (PDU header:");
		for (int i = 0; i < 48; i++)
			fprintf(stderr, " %02x", bhs[i]);
		fprintf(stderr, ")");
	}
	fprintf(stderr, "\n");
	abort();
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

static void clean_state_dir(void)
{
	nftw(B.state_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void remove_state_dir(void)
{
	clean_state_dir();
	rmdir(B.state_dir);
}

static void bench_setup(void)
{
	struct conf_errors errs = { 0 };
	char *text = NULL;
	const char *v = getenv("FUZZ_VERBOSE"), *tmp = getenv("TMPDIR");

	log_level = v && *v >= '1' ? LOG_LVL_DEBUG : LOG_LVL_ERR;
	B.trace = v && *v >= '2';
	signal(SIGPIPE, SIG_IGN);
	crc32c_setup();
	/* a killed or crashed harness leaves it behind: run.sh points TMPDIR
	 * into its scratch directory */
	snprintf(B.state_dir, sizeof(B.state_dir), "%s/targetd-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(B.state_dir)) {
		fprintf(stderr, "fuzz_net: cannot create %s: %s (set TMPDIR to a writable directory)\n",
			B.state_dir, strerror(errno));
		abort();
	}
	atexit(remove_state_dir);
	/* Small limits, so that a short input reaches each of them. */
	if (asprintf(&text,
		     "listen = [ \"127.0.0.1:3260\" ];\n"
		     "threads = 1;\n"
		     "io_uring = false;\n"
		     "state_dir = \"%s\";\n"
		     "queue_depth = %u;\n"
		     "nop_interval = 5;\n"
		     "nop_timeout = 5;\n"
		     "login_timeout = 10;\n"
		     "data_out_timeout = 5;\n"
		     "max_pending_tx_per_connection = 65536;\n"
		     "max_text_response = 8192;\n"
		     "max_buffer_per_connection = \"16M\";\n"
		     "max_buffer_total = \"16M\";\n"
		     "max_recv_data_segment_length = 8192;\n"
		     "max_burst_length = 65536;\n"
		     "first_burst_length = 16384;\n"
		     "max_outstanding_r2t = 4;\n"
		     "targets = (\n"
		     "  { iqn = \"" FZ_TARGET "\"; luns = (\n"
		     "      { lun = 0; backstore = \"memory\"; size = \"4M\"; },\n"
		     "      { lun = 1; backstore = \"memory\"; size = \"1M\"; block_size = 4096; } ); },\n"
		     "  { iqn = \"" FZ_TARGET "-acl\"; initiators = [ \"iqn.2025-01.org.targetd.fuzz:other\" ];\n"
		     "    luns = ( { lun = 0; backstore = \"memory\"; size = \"64K\"; } ); }\n"
		     ");\n",
		     B.state_dir, FZ_QUEUE_DEPTH) < 0)
		abort();
	if (conf_load_string(&B.conf, text, "fuzz_net.conf", &errs)) {
		for (unsigned i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", errs.msgs[i]);
		fprintf(stderr, "fuzz_net: the bench's configuration is refused\n");
		abort();
	}
	free(text);
	scsi_stats_configure(1);
	scsi_histo_configure(1);
	if (net_thread_init(&B.thr, 0, false))
		abort();
	B.clock = 1000000;
	B.thr.clock_ms = fz_clock;
	B.thr.now_ms = B.clock;
	net_self = &B.thr;
	scsi_stats_thread_init(0);
	scsi_histo_thread_init(0);
	B.ready = true;
}

void fz_login_decode(struct fz_login *l, const uint8_t *b)
{
	static const uint32_t mrdsl[4] = { 512, 4096, 8192, 65536 };
	static const uint32_t burst[4][2] = { { 16384, 8192 }, { 512, 512 }, { 4096, 4096 }, { 65536, 16384 } };

	memset(l, 0, sizeof(*l));
	l->immediate_data = !(b[0] & 1);
	l->initial_r2t = b[0] & 2;
	l->hdigest = b[0] & 4;
	l->ddigest = b[0] & 8;
	l->mrdsl = mrdsl[(b[0] >> 4) & 3];
	l->max_burst = burst[b[0] >> 6][0];
	l->first_burst = burst[b[0] >> 6][1];
	l->max_r2t = 1u << (b[1] & 3);
	l->slow_reader = b[1] & 4;
	l->no_login = b[1] & 8;
}

/* ---- the target's output --------------------------------------------- */

static struct fz_task *task_find(uint32_t itt)
{
	for (unsigned i = 0; i < n_tasks; i++)
		if (tasks[i].itt == itt)
			return &tasks[i];
	return NULL;
}

/* A SCSI Command goes out: what its answers may be. */
static void task_sent(const uint8_t *bhs)
{
	uint32_t itt = fz_be32(bhs + 16);
	struct fz_task *t = task_find(itt);

	if (!t) {
		if (n_tasks == FZ_TASKS)
			return;   /* not followed: no check fails for it */
		t = &tasks[n_tasks++];
		memset(t, 0, sizeof(*t));
		t->itt = itt;
	}
	if (t->count++ == 0) {
		t->mixed = false;
		t->read = bhs[1] & 0x40;
		t->write = bhs[1] & 0x20;
		t->edtl = fz_be32(bhs + 20);
		t->in_off = t->in_datasn = t->r2tsn = 0;
	} else {
		t->mixed = true;
	}
}

/* The checks of a status (SCSI Response, or Data-In with S). */
static void check_status(const uint8_t *b, struct fz_task *t)
{
	bool o = b[1] & 0x04, u = b[1] & 0x02;
	uint32_t resid = fz_be32(b + 44);

	if (o && u)
		fz_fail("set both overflow and underflow", b);
	if (!o && !u && resid)
		fz_fail("gave a residual count without overflow or underflow", b);
	if (fz.untracked)
		return;
	if (!t || !t->count)
		fz_fail("sent a status for a task that has none outstanding", b);
	if (!t->mixed && t->read && !t->write && b[3] == 0) {
		/* a good READ: what was sent and the residual add up (RFC 7143 11.4.5) */
		if (u && (uint64_t)t->in_off + resid != t->edtl)
			fz_fail("sent a residual underflow that does not match the data sent", b);
		if (!o && !u && t->in_off != t->edtl)
			fz_fail("sent less data than the expected length without underflow", b);
	}
	t->count--;
	t->in_off = t->in_datasn = t->r2tsn = 0;
}

static void check_data_in(const uint8_t *b, uint32_t dlen)
{
	struct fz_task *t = task_find(fz_be32(b + 16));

	if (fz.untracked) {
		t = NULL;
	} else if (!t || !t->count) {
		fz_fail("sent Data-In for a task that has none outstanding", b);
	}
	if (t && !t->mixed) {
		if (!t->read)
			fz_fail("sent Data-In for a command without the R bit", b);
		if (fz_be32(b + 36) != t->in_datasn)
			fz_fail("sent Data-In out of DataSN order", b);
		if (fz_be32(b + 40) != t->in_off)
			fz_fail("sent Data-In at an offset out of order", b);
		if ((uint64_t)t->in_off + dlen > t->edtl)
			fz_fail("sent more Data-In than the Expected Data Transfer Length", b);
		t->in_datasn++;
		t->in_off += dlen;
	}
	if (b[1] & 0x01) {
		if (!(b[1] & 0x80))
			fz_fail("sent Data-In with S but without F", b);
		check_status(b, t);
	}
}

static void check_r2t(const uint8_t *b)
{
	struct fz_task *t = task_find(fz_be32(b + 16));
	uint32_t off = fz_be32(b + 40), len = fz_be32(b + 44);
	struct fz_r2t *r;

	if (fz.untracked)
		t = NULL;
	else if (!t || !t->count)
		fz_fail("sent an R2T for a task that has none outstanding", b);
	if (!len || len > fz.login.max_burst)
		fz_fail("sent an R2T for zero bytes or more than MaxBurstLength", b);
	if (t && !t->mixed) {
		if (!t->write)
			fz_fail("sent an R2T for a command without the W bit", b);
		if ((uint64_t)off + len > t->edtl)
			fz_fail("solicited data beyond the Expected Data Transfer Length", b);
		if (fz_be32(b + 36) != t->r2tsn)
			fz_fail("sent R2Ts out of R2TSN order", b);
		t->r2tsn++;
	}
	r = &fz.r2t[fz.n_r2t++ % FZ_R2TS];
	r->itt = fz_be32(b + 16);
	r->ttt = fz_be32(b + 20);
	r->r2tsn = fz_be32(b + 36);
	r->off = off;
	r->len = len;
	memcpy(r->lun, b + 8, 8);
}

/* StatSN (RFC 7143 4.2.2.2) and the CmdSN window of one PDU. */
static void check_sn(const uint8_t *b, uint8_t op)
{
	uint32_t statsn = fz_be32(b + 24), exp = fz_be32(b + 28), max = fz_be32(b + 32);
	bool advances = !(op == ISCSI_OP_R2T || (op == ISCSI_OP_NOP_IN && fz_be32(b + 16) == ISCSI_RSVD_TAG));

	if (op == ISCSI_OP_DATA_IN && !(b[1] & 0x01)) {
		/* no StatSN without status */
	} else if (statsn != B.parsing->exp_statsn) {
		fz_fail("sent a StatSN out of order", b);
	} else if (advances) {
		B.parsing->exp_statsn++;
	}
	if (sn_lt(max, exp - 1))
		fz_fail("announced a MaxCmdSN below ExpCmdSN - 1", b);
	if (max - exp + 1 > FZ_QUEUE_DEPTH)
		fz_fail("opened a CmdSN window wider than queue_depth", b);
}

static void check_login_rsp(const uint8_t *b, const uint8_t *data, uint32_t dlen)
{
	uint16_t status = (uint16_t)(b[36] << 8 | b[37]);

	struct fz_conn *c = B.parsing;

	(void)data;
	(void)dlen;
	if (c->ffp)
		fz_fail("sent a Login Response in full feature phase", b);
	if (status) {
		if (c == &fz.conn[0]) {
			fprintf(stderr, "fuzz_net: login refused with status %#06x\n", status);
			abort();
		}
		return;   /* joining a session that ended: the target closes */
	}
	if ((b[1] & 0x80) && (b[1] & 3) == ISCSI_STAGE_FULL_FEATURE) {
		c->ffp = true;
		c->exp_statsn = fz_be32(b + 24) + 1;
		c->out_digests = true;   /* digests start with the next PDU */
		if (c == &fz.conn[0])
			fz.tsih = (uint16_t)(b[14] << 8 | b[15]);
	}
}

static const char *op_name(uint8_t op)
{
	switch (op) {
	case ISCSI_OP_NOP_IN: return "NOP-In";
	case ISCSI_OP_SCSI_RSP: return "SCSI Response";
	case ISCSI_OP_TMF_RSP: return "TMF Response";
	case ISCSI_OP_LOGIN_RSP: return "Login Response";
	case ISCSI_OP_TEXT_RSP: return "Text Response";
	case ISCSI_OP_DATA_IN: return "Data-In";
	case ISCSI_OP_LOGOUT_RSP: return "Logout Response";
	case ISCSI_OP_R2T: return "R2T";
	case ISCSI_OP_ASYNC_MSG: return "Async Message";
	case ISCSI_OP_REJECT: return "Reject";
	default: return iscsi_opcode_name(op);
	}
}

static void trace_pdu(const char *dir, const uint8_t *b)
{
	fprintf(stderr, "fz: %s %-24s ITT %#x F20 %#x SN %u/%u/%u F36 %u F40 %u F44 %u flags %#x b2 %#x b3 %#x dlen %u\n",
		dir, op_name(b[0] & 0x3f), fz_be32(b + 16), fz_be32(b + 20), fz_be32(b + 24),
		fz_be32(b + 28), fz_be32(b + 32), fz_be32(b + 36), fz_be32(b + 40), fz_be32(b + 44), b[1], b[2],
		b[3], (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7]);
}

static void check_pdu(const uint8_t *b, const uint8_t *data, uint32_t dlen)
{
	uint8_t op = b[0] & 0x3f;

	if (B.trace)
		trace_pdu("<-", b);
	if (b[0] & 0xc0)
		fz_fail("set the reserved bits of byte 0", b);
	if (b[4])
		fz_fail("sent an AHS", b);
	switch (op) {
	case ISCSI_OP_NOP_IN: case ISCSI_OP_SCSI_RSP: case ISCSI_OP_TMF_RSP:
	case ISCSI_OP_LOGIN_RSP: case ISCSI_OP_TEXT_RSP: case ISCSI_OP_DATA_IN:
	case ISCSI_OP_LOGOUT_RSP: case ISCSI_OP_R2T: case ISCSI_OP_ASYNC_MSG:
	case ISCSI_OP_REJECT:
		break;
	default:
		fz_fail("sent an opcode no target sends", b);
	}
	if (fz.login.no_login)
		return;   /* what the input negotiated is not known here */
	if (op == ISCSI_OP_LOGIN_RSP) {
		if (dlen > 8192)
			fz_fail("sent a Login Response longer than 8192 bytes", b);
		check_login_rsp(b, data, dlen);
		return;
	}
	if (!B.parsing->ffp)
		fz_fail("sent a PDU other than a Login Response before login completed", b);
	if (dlen > fz.login.mrdsl)
		fz_fail("sent a data segment over the initiator's MaxRecvDataSegmentLength", b);
	check_sn(b, op);
	switch (op) {
	case ISCSI_OP_SCSI_RSP:
		if (!(b[1] & 0x80) || b[2] > 1)
			fz_fail("sent a SCSI Response without F or with a bad response code", b);
		if (dlen && (dlen < 2 || (uint32_t)(data[0] << 8 | data[1]) + 2 > dlen))
			fz_fail("sent sense data longer than its data segment", b);
		check_status(b, task_find(fz_be32(b + 16)));
		break;
	case ISCSI_OP_DATA_IN:
		check_data_in(b, dlen);
		break;
	case ISCSI_OP_R2T:
		if (dlen)
			fz_fail("sent an R2T with a data segment", b);
		check_r2t(b);
		break;
	case ISCSI_OP_REJECT:
		if (dlen != 48)
			fz_fail("sent a Reject without the rejected header", b);
		break;
	default:
		break;
	}
}

/* Parse every complete PDU in c's output buffer. */
static void parse_out(struct fz_conn *c)
{
	size_t pos = 0;

	B.parsing = c;
	for (;;) {
		const uint8_t *b = c->out + pos;
		size_t left = c->out_len - pos;
		bool hd = c->out_digests && fz.login.hdigest, dd = c->out_digests && fz.login.ddigest;
		size_t hl = 48 + (hd ? 4 : 0), dl;
		uint32_t dlen;

		if (left < hl)
			break;
		hl += (size_t)b[4] * 4;
		dlen = (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
		dl = dlen ? ((dlen + 3u) & ~3u) + (dd ? 4 : 0) : 0;
		if (left < hl + dl)
			break;
		if (hd && crc32c_get(b + hl - 4) != crc32c(b, hl - 4))
			fz_fail("sent a wrong header digest", b);
		if (dd && dlen && crc32c_get(b + hl + dl - 4) != crc32c(b + hl, (dlen + 3u) & ~3u))
			fz_fail("sent a wrong data digest", b);
		check_pdu(b, b + hl, dlen);
		pos += hl + dl;
	}
	memmove(c->out, c->out + pos, c->out_len - pos);
	c->out_len -= pos;
}

static size_t drain_conn(struct fz_conn *c, size_t max)
{
	size_t got = 0;

	while (c->peer >= 0 && (!max || got < max)) {
		size_t want = max ? max - got : 65536;
		ssize_t r;

		if (c->out_cap - c->out_len < want) {
			size_t cap = c->out_len + want + 65536;
			uint8_t *n = realloc(c->out, cap);
			if (!n)
				abort();
			c->out = n;
			c->out_cap = cap;
		}
		r = recv(c->peer, c->out + c->out_len, want, MSG_DONTWAIT);
		if (r <= 0)
			break;
		got += (size_t)r;
		fz.out_bytes += (uint64_t)r;
		if (fz.login.no_login)
			continue;   /* the input negotiated digests the bench does not know */
		c->out_len += (size_t)r;
		parse_out(c);
	}
	return got;
}

size_t fz_drain(size_t max)
{
	return drain_conn(FZ_CUR, max);
}

void fz_drain_all(void)
{
	unsigned quiet = 0;

	for (unsigned i = 0; i < 4096 && quiet < 2; i++) {
		size_t n = 0;
		for (unsigned k = 0; k < FZ_CONNS; k++)
			n += drain_conn(&fz.conn[k], 0);
		fz_turns(1);
		quiet = n ? 0 : quiet + 1;
	}
}

/* ---- the initiator's input -------------------------------------------- */

void fz_turns(unsigned n)
{
	while (n--)
		if (net_thread_turn(&B.thr, 0) < 0)
			abort();
}

void fz_advance(uint64_t ms)
{
	B.clock += ms;
	fz_turns(1);
}

void fz_send_raw(const void *buf, size_t len)
{
	fz.untracked = true;
	fz_send(buf, len);
}

void fz_send(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	unsigned stuck = 0;

	while (len && !FZ_CUR->closed && stuck < 64) {
		ssize_t w = send(FZ_CUR->peer, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			len -= (size_t)w;
			stuck = 0;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			fz.untracked = true;   /* the target closed the connection */
			return;
		}
		/* Its socket is full: let it read; if it does not (it stopped
		 * reading until its output is read), read that. */
		fz_turns(1);
		if (++stuck % 4 == 0)
			fz_drain(0);
	}
	if (len)
		fz.untracked = true;   /* given up: the rest never goes */
}

void fz_send_pdu(const uint8_t bhs[48], const uint8_t *ahs, size_t ahs_len,
		 const uint8_t *data, size_t data_len, bool bad_ddigest)
{
	static uint8_t zeros[4096];
	uint8_t hdr[48 + 1024 + 4], trail[8];
	uint32_t dlen = (uint32_t)bhs[5] << 16 | (uint32_t)bhs[6] << 8 | bhs[7];
	uint32_t send_len = dlen < FZ_SEND_CAP ? dlen : FZ_SEND_CAP;

	if (send_len < dlen)
		fz.untracked = true;
	uint32_t pad = (4 - (dlen & 3)) & 3, crc;
	size_t hl = 48 + (ahs_len > 1024 ? 1024 : ahs_len);

	if (B.trace)
		trace_pdu("->", bhs);
	if ((bhs[0] & 0x3f) == ISCSI_OP_SCSI_CMD)
		task_sent(bhs);
	memcpy(hdr, bhs, 48);
	if (hl > 48)
		memcpy(hdr + 48, ahs, hl - 48);
	if (FZ_CUR->ffp && fz.login.hdigest) {
		crc32c_put(hdr + hl, crc32c(hdr, hl));
		hl += 4;
	}
	fz_send(hdr, hl);
	if (!dlen)
		return;
	crc = crc32c_init();
	for (uint32_t off = 0; off < send_len;) {
		const uint8_t *src = off < data_len ? data + off : zeros;
		uint32_t n = off < data_len ? (uint32_t)MIN(data_len - off, send_len - off)
					    : MIN((uint32_t)sizeof(zeros), send_len - off);
		crc = crc32c_update(crc, src, n);
		fz_send(src, n);
		off += n;
	}
	memset(trail, 0, sizeof(trail));
	crc = crc32c_final(crc32c_update(crc, trail, pad));
	if (bad_ddigest)
		crc ^= 1;
	crc32c_put(trail + pad, crc);
	fz_send(trail, pad + (FZ_CUR->ffp && fz.login.ddigest ? 4u : 0u));
}

void fz_shut_wr(void)
{
	if (FZ_CUR->peer >= 0)
		shutdown(FZ_CUR->peer, SHUT_WR);
}

/* ---- an input's life ---------------------------------------------------- */

static void add_key(char *text, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_key(char *text, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text + *len, 1024 - *len, fmt, ap);
	va_end(ap);
	*len += (size_t)n + 1;   /* keys end with a NUL */
}

/* One Login Request from the operational stage straight to full feature
 * phase (no authentication: the target has no CHAP): the leading login of
 * the session (connection 0), or connection k joining it with its TSIH. */
static void login(const struct fz_login *l, unsigned k)
{
	char text[1024];
	size_t len = 0;
	uint8_t bhs[48] = { 0 };

	add_key(text, &len, "InitiatorName=%s", FZ_INITIATOR);
	add_key(text, &len, "TargetName=%s", FZ_TARGET);
	add_key(text, &len, "SessionType=Normal");
	add_key(text, &len, "HeaderDigest=%s", l->hdigest ? "CRC32C" : "None");
	add_key(text, &len, "DataDigest=%s", l->ddigest ? "CRC32C" : "None");
	add_key(text, &len, "MaxRecvDataSegmentLength=%u", l->mrdsl);
	if (k == 0) {   /* leading only (RFC 7143 13) */
		add_key(text, &len, "ImmediateData=%s", l->immediate_data ? "Yes" : "No");
		add_key(text, &len, "InitialR2T=%s", l->initial_r2t ? "Yes" : "No");
		add_key(text, &len, "MaxBurstLength=%u", l->max_burst);
		add_key(text, &len, "FirstBurstLength=%u", l->first_burst);
		add_key(text, &len, "MaxOutstandingR2T=%u", l->max_r2t);
		add_key(text, &len, "MaxConnections=%u", FZ_CONNS);
		add_key(text, &len, "ErrorRecoveryLevel=0");
	}
	bhs[0] = ISCSI_OP_LOGIN_REQ | ISCSI_FLAG_IMMEDIATE;
	bhs[1] = ISCSI_LOGIN_TRANSIT | ISCSI_STAGE_OPERATIONAL << 2 | ISCSI_STAGE_FULL_FEATURE;
	bhs[5] = (uint8_t)(len >> 16);
	bhs[6] = (uint8_t)(len >> 8);
	bhs[7] = (uint8_t)len;
	bhs[8] = 0x80;   /* ISID: random qualifier */
	bhs[13] = 0x01;
	bhs[14] = (uint8_t)(fz.tsih >> 8);
	bhs[15] = (uint8_t)fz.tsih;
	fz_put_be32(bhs + 16, 0x10000 + k);   /* ITT */
	bhs[21] = (uint8_t)k;                  /* CID */
	fz_put_be32(bhs + 24, fz.cmdsn);
	fz_send_pdu(bhs, NULL, 0, (const uint8_t *)text, len, false);
	for (unsigned i = 0; i < 8 && !FZ_CUR->ffp; i++) {
		fz_turns(1);
		fz_drain(0);
	}
	if (k == 0 && !FZ_CUR->ffp) {
		fprintf(stderr, "fuzz_net: no final Login Response\n");
		abort();
	}
	/* The target's values (RFC 7143 13: the lower of the two offers). */
	fz.login.max_burst = MIN(fz.login.max_burst, B.conf.max_burst_length);
	fz.target_mrdsl = B.conf.max_recv_data_segment_length;
}

/* Connection k: a socketpair whose one end the network thread adopts. */
static void open_conn(unsigned k)
{
	struct fz_conn *fc = &fz.conn[k];
	struct iscsi_conn *c;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		abort();
	if (fz.login.slow_reader) {
		int one = 1;
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &one, sizeof(one));
	}
	fc->peer = sv[1];
	fc->closed = false;
	limit_conn_opened();   /* as the acceptor counts it */
	c = net_thread_add_conn(&B.thr, sv[0], &target_runtime->portals[0]);
	if (!c)
		abort();
	snprintf(c->peer, sizeof(c->peer), "fuzz-%u", k);
}

void fz_begin(const struct fz_login *l)
{
	uint8_t *out[FZ_CONNS];
	size_t cap[FZ_CONNS];

	if (!B.ready)
		bench_setup();
	clean_state_dir();
	target_runtime = &B.runtime;
	if (target_runtime_build(target_runtime, &B.conf)) {
		fprintf(stderr, "fuzz_net: the runtime cannot be built\n");
		abort();
	}
	for (unsigned k = 0; k < FZ_CONNS; k++) {   /* the buffers stay */
		out[k] = fz.conn[k].out;
		cap[k] = fz.conn[k].out_cap;
	}
	memset(&fz, 0, sizeof(fz));
	for (unsigned k = 0; k < FZ_CONNS; k++) {
		fz.conn[k].out = out[k];
		fz.conn[k].out_cap = cap[k];
		fz.conn[k].peer = -1;
		fz.conn[k].closed = true;
	}
	fz.login = *l;
	fz.cmdsn = 1;
	n_tasks = 0;
	B.thr.last_tick = B.clock;
	open_conn(0);
	if (!l->no_login)
		login(l, 0);
}

void fz_switch(void)
{
	fz.cur = (fz.cur + 1) % FZ_CONNS;
	if (FZ_CUR->peer < 0 && !fz.login.no_login) {
		open_conn(fz.cur);
		login(&fz.login, fz.cur);
	}
}

void fz_end(void)
{
	unsigned i;

	for (unsigned k = 0; k < FZ_CONNS; k++) {
		if (fz.conn[k].peer >= 0)
			close(fz.conn[k].peer);
		fz.conn[k].peer = -1;
		fz.conn[k].closed = true;
	}
	for (i = 0; i < FZ_END_TURNS; i++) {
		if (!B.thr.n_conns && list_empty(&B.thr.graveyard) && !io_engine_inflight(B.thr.eng) &&
		    !iscsi_session_count())
			break;
		fz_turns(1);
	}
	if (i == FZ_END_TURNS)
		fz_fail("kept a connection, a session or an I/O after its initiator closed", NULL);
	if (limit_buffer_used())
		fz_fail("still accounts data buffers with no connection left", NULL);
	if (limit_conn_count())
		fz_fail("still counts a connection after closing them all", NULL);
	target_runtime_free(target_runtime);
	target_runtime = NULL;
}
