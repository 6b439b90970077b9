/*
 * ftest: the initiator side of the fault-injection tests (tests/faults.sh,
 * targetd-faults(7)). A libiscsi client; each subcommand does one thing
 * and checks exactly what came back (status, sense bytes, INFORMATION,
 * residuals, data), exits 1 naming what was expected and what came back.
 *
 *   ftest [-i INITIATOR] [-x SHELL] expect URL CMD LBA NBLOCKS WANT [CMD LBA NBLOCKS WANT]...
 *         CMD: tur read write caw ws unmap inquiry rc16 sync
 *         WANT: good busy task-set-full reservation-conflict KEY/ASC/ASCQ[@INFO]
 *         (-x: run SHELL once logged in, before the commands: arm a rule
 *         with the session established, so that it sees the unit
 *         attentions a change brings)
 *   ftest fill URL LBA NBLOCKS SEED         write the pattern of SEED
 *   ftest check URL LBA NBLOCKS SEED        the blocks hold it (data intact)
 *   ftest stall URL LBA abort|lun-reset     a READ gets no answer; the TMF ends it
 *   ftest held URL LBA MS                   a READ is answered (GOOD) after MS at least
 *   ftest lat URL COUNT                     COUNT 4 KiB READs one at a time: latency figures
 *   ftest vaai URL offered|withdrawn        INQUIRY 3PC, VPD B0/B2, RSOC, the commands
 *   ftest -x SHELL capacity URL BLOCKS      CAPACITY DATA HAS CHANGED, then READ CAPACITY
 *   ftest dropped URL LBA                   a READ there loses the connection
 *   ftest no-r2t URL LBA SEED               a WRITE gets no R2T; ABORT TASK; data untouched
 *   ftest seq URL COUNT SEED                COUNT READs at LBAs from SEED: one line each
 *   ftest oos URL MIB                       1 MiB WRITEs fail after MIB with 7/27/07
 *   ftest rtpg URL TPGT STATE               REPORT TARGET PORT GROUPS says so
 *   ftest nops URL SECONDS                  the session works through a NOP-In storm
 *
 * URL is iscsi://host:port/iqn/lun. DESIGN: single-threaded; the stall
 * and R2T subcommands drive libiscsi's asynchronous API from a poll loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define FT_BS 512u

static const char *ft_initiator = "iqn.2026-11.org.targetd.test:ftest";
static const char *ft_cmd = "ftest";
static const char *ft_after_login;   /* -x */

struct ft {
	struct iscsi_context *iscsi;
	struct iscsi_url *url;
	int lun;
};

static void ft_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void ft_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ftest %s: FAIL: ", ft_cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(NULL);
	_exit(1);
}

#define CHECK(c, ...) do { if (!(c)) ft_fail(__VA_ARGS__); } while (0)

static void ft_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ft_note(const char *fmt, ...)
{
	va_list ap;

	printf("ftest %s: ", ft_cmd);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static double ft_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void ft_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void ft_put64(uint8_t *p, uint64_t v)
{
	ft_put32(p, (uint32_t)(v >> 32));
	ft_put32(p + 4, (uint32_t)v);
}

static uint32_t ft_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---------------------------------------------------------------- login */

static int ft_open_mode(struct ft *c, const char *url, bool r2t_only, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->iscsi = iscsi_create_context(ft_initiator);
	CHECK(c->iscsi, "cannot create a libiscsi context");
	c->url = iscsi_parse_full_url(c->iscsi, url);
	CHECK(c->url, "bad URL %s: %s", url, iscsi_get_error(c->iscsi));
	iscsi_set_targetname(c->iscsi, c->url->target);
	iscsi_set_session_type(c->iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(c->iscsi, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_noautoreconnect(c->iscsi, 1);
	iscsi_set_timeout(c->iscsi, 60);
	if (r2t_only) {
		iscsi_set_immediate_data(c->iscsi, ISCSI_IMMEDIATE_DATA_NO);
		iscsi_set_initial_r2t(c->iscsi, ISCSI_INITIAL_R2T_YES);
	}
	c->lun = c->url->lun;
	if (iscsi_full_connect_sync(c->iscsi, c->url->portal, c->url->lun)) {
		snprintf(err, errlen, "%s", iscsi_get_error(c->iscsi));
		return -1;
	}
	return 0;
}

/* Log in and take the unit attentions a new nexus has (POWER ON). */
static void ft_open(struct ft *c, const char *url, bool r2t_only)
{
	char err[512];

	if (ft_open_mode(c, url, r2t_only, err, sizeof(err)))
		ft_fail("login to %s failed: %s", url, err);
	for (int i = 0; i < 8; i++) {
		struct scsi_task *t = iscsi_testunitready_sync(c->iscsi, c->lun);
		bool ua = t && t->status == SCSI_STATUS_CHECK_CONDITION &&
			  t->sense.key == SCSI_SENSE_UNIT_ATTENTION;

		if (t)
			scsi_free_scsi_task(t);
		if (!ua)
			break;
	}
	if (ft_after_login) {
		int rc = system(ft_after_login);

		CHECK(rc == 0, "'%s' failed (%d)", ft_after_login, rc);
		ft_after_login = NULL;
	}
}

static void ft_close(struct ft *c)
{
	if (!c->iscsi)
		return;
	iscsi_logout_sync(c->iscsi);
	iscsi_destroy_url(c->url);
	iscsi_destroy_context(c->iscsi);
	c->iscsi = NULL;
}

/* ----------------------------------------------------------- the pattern */

static void ft_fill(uint8_t *buf, uint64_t lba, uint32_t n, uint64_t seed)
{
	for (uint32_t b = 0; b < n; b++) {
		uint64_t x = (lba + b) * 0x9e3779b97f4a7c15ull ^ seed;
		uint8_t *p = buf + (size_t)b * FT_BS;

		ft_put64(p, lba + b);
		ft_put64(p + 8, seed);
		for (uint32_t i = 16; i < FT_BS; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			p[i] = (uint8_t)x;
		}
	}
}

/* ------------------------------------------------------- commands, sense */

enum ft_op { OP_TUR, OP_READ, OP_WRITE, OP_CAW, OP_WS, OP_UNMAP, OP_INQUIRY, OP_RC16, OP_SYNC };

static const struct { const char *name; enum ft_op op; } ft_ops[] = {
	{ "tur", OP_TUR }, { "read", OP_READ }, { "write", OP_WRITE }, { "caw", OP_CAW },
	{ "ws", OP_WS }, { "unmap", OP_UNMAP }, { "inquiry", OP_INQUIRY }, { "rc16", OP_RC16 },
	{ "sync", OP_SYNC },
};

/* The sense bytes a CHECK CONDITION carried (libiscsi keeps the SCSI
 * Response data segment, a 2-byte length and the sense, in datain). */
static const uint8_t *ft_sense(const struct scsi_task *t, unsigned *len)
{
	if (t->status != SCSI_STATUS_CHECK_CONDITION || t->datain.size < 4) {
		*len = 0;
		return NULL;
	}
	*len = (unsigned)t->datain.size - 2;
	return t->datain.data + 2;
}

/* KEY, ASC, ASCQ and INFORMATION (has_info) from fixed or descriptor sense. */
static void ft_sense_fields(const uint8_t *s, unsigned len, unsigned *key, unsigned *asc,
			    unsigned *ascq, bool *has_info, uint64_t *info)
{
	*has_info = false;
	*info = 0;
	*key = *asc = *ascq = 0;
	if (len < 8)
		return;
	if ((s[0] & 0x7f) == 0x72 || (s[0] & 0x7f) == 0x73) {
		*key = s[1] & 0xf;
		*asc = s[2];
		*ascq = s[3];
		for (unsigned off = 8; off + 2 <= len && off + 2 + s[off + 1] <= len; off += 2u + s[off + 1])
			if (s[off] == 0x00 && s[off + 1] >= 0x0a && (s[off + 2] & 0x80)) {
				*has_info = true;
				*info = (uint64_t)ft_get32(s + off + 4) << 32 | ft_get32(s + off + 8);
			}
		return;
	}
	*key = s[2] & 0xf;
	if (len >= 14) {
		*asc = s[12];
		*ascq = s[13];
	}
	if (s[0] & 0x80) {
		*has_info = true;
		*info = ft_get32(s + 3);
	}
}

static const char *ft_status_name(int st)
{
	switch (st) {
	case SCSI_STATUS_GOOD: return "GOOD";
	case SCSI_STATUS_CHECK_CONDITION: return "CHECK CONDITION";
	case SCSI_STATUS_BUSY: return "BUSY";
	case SCSI_STATUS_RESERVATION_CONFLICT: return "RESERVATION CONFLICT";
	case SCSI_STATUS_TASK_SET_FULL: return "TASK SET FULL";
	case SCSI_STATUS_TASK_ABORTED: return "TASK ABORTED";
	case SCSI_STATUS_CANCELLED: return "CANCELLED";
	case SCSI_STATUS_TIMEOUT: return "TIMEOUT";
	default: return "ERROR (transport)";
	}
}

/* "GOOD", "CHECK CONDITION 3/11/00 info=100 [70 00 03 ...]" */
static void ft_describe(const struct scsi_task *t, char *buf, size_t len)
{
	unsigned sl, key, asc, ascq;
	const uint8_t *s = ft_sense(t, &sl);
	bool has_info;
	uint64_t info;
	size_t off;

	if (!s) {
		snprintf(buf, len, "%s", ft_status_name(t->status));
		return;
	}
	ft_sense_fields(s, sl, &key, &asc, &ascq, &has_info, &info);
	off = (size_t)snprintf(buf, len, "CHECK CONDITION %x/%02x/%02x", key, asc, ascq);
	if (has_info && off < len)
		off += (size_t)snprintf(buf + off, len - off, " info=%" PRIu64, info);
	if (off < len)
		off += (size_t)snprintf(buf + off, len - off, " [");
	for (unsigned i = 0; i < sl && i < 32 && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%02x", i ? " " : "", s[i]);
	if (off < len)
		snprintf(buf + off, len - off, "]");
}

/* Build and run one command. data/dlen: data-out. */
static struct scsi_task *ft_run(struct ft *c, enum ft_op op, uint64_t lba, uint32_t n,
				uint8_t *data, uint32_t dlen)
{
	uint8_t cdb[16] = { 0 };
	int clen = 16, dir = SCSI_XFER_NONE, xfer = 0;
	struct iscsi_data d = { dlen, data };
	struct scsi_task *t;

	switch (op) {
	case OP_TUR:
		clen = 6;
		break;
	case OP_READ:
		cdb[0] = 0x88;
		ft_put64(cdb + 2, lba);
		ft_put32(cdb + 10, n);
		dir = SCSI_XFER_READ;
		xfer = (int)(n * FT_BS);
		break;
	case OP_WRITE:
		cdb[0] = 0x8a;
		ft_put64(cdb + 2, lba);
		ft_put32(cdb + 10, n);
		dir = SCSI_XFER_WRITE;
		xfer = (int)(n * FT_BS);
		break;
	case OP_CAW:
		cdb[0] = 0x89;
		ft_put64(cdb + 2, lba);
		cdb[13] = (uint8_t)n;
		dir = SCSI_XFER_WRITE;
		xfer = (int)(2 * n * FT_BS);
		break;
	case OP_WS:
		cdb[0] = 0x93;
		ft_put64(cdb + 2, lba);
		ft_put32(cdb + 10, n);
		dir = SCSI_XFER_WRITE;
		xfer = FT_BS;
		break;
	case OP_UNMAP:
		cdb[0] = 0x42;
		clen = 10;
		cdb[8] = 24;
		dir = SCSI_XFER_WRITE;
		xfer = 24;
		break;
	case OP_INQUIRY:
		cdb[0] = 0x12;
		cdb[4] = 96;
		clen = 6;
		dir = SCSI_XFER_READ;
		xfer = 96;
		break;
	case OP_RC16:
		cdb[0] = 0x9e;
		cdb[1] = 0x10;
		cdb[13] = 32;
		dir = SCSI_XFER_READ;
		xfer = 32;
		break;
	case OP_SYNC:
		cdb[0] = 0x91;
		ft_put64(cdb + 2, lba);
		ft_put32(cdb + 10, n);
		break;
	}
	t = scsi_create_task(clen, cdb, dir, xfer);
	CHECK(t, "out of memory");
	t = iscsi_scsi_command_sync(c->iscsi, c->lun, t, dir == SCSI_XFER_WRITE ? &d : NULL);
	return t;
}

/* Data-out for op (the caller frees it): the pattern for WRITE, the blocks
 * as they are (read first) twice for COMPARE AND WRITE, zeros for WRITE
 * SAME, one descriptor for UNMAP. */
static uint8_t *ft_dataout(struct ft *c, enum ft_op op, uint64_t lba, uint32_t n, uint32_t *len)
{
	uint8_t *b = NULL;

	*len = 0;
	if (op == OP_WRITE) {
		*len = n * FT_BS;
		b = malloc(*len);
		CHECK(b, "out of memory");
		ft_fill(b, lba, n, 7);
	} else if (op == OP_CAW) {
		struct scsi_task *t = iscsi_read16_sync(c->iscsi, c->lun, lba, n * FT_BS, FT_BS, 0, 0, 0, 0, 0);

		CHECK(t && t->status == SCSI_STATUS_GOOD, "READ before COMPARE AND WRITE failed");
		*len = 2 * n * FT_BS;
		b = malloc(*len);
		CHECK(b, "out of memory");
		memcpy(b, t->datain.data, n * FT_BS);
		memcpy(b + n * FT_BS, t->datain.data, n * FT_BS);
		scsi_free_scsi_task(t);
	} else if (op == OP_WS) {
		*len = FT_BS;
		b = calloc(1, FT_BS);
	} else if (op == OP_UNMAP) {
		*len = 24;
		b = calloc(1, 24);
		CHECK(b, "out of memory");
		b[1] = 22;
		b[3] = 16;
		ft_put64(b + 8, lba);
		ft_put32(b + 16, n);
	}
	return b;
}

/* WANT against what came back. */
static void ft_expect(const struct scsi_task *t, const char *want, const char *what, uint32_t xfer)
{
	char got[256];

	CHECK(t, "%s: no answer (transport error)", what);
	ft_describe(t, got, sizeof(got));
	if (!strcasecmp(want, "good")) {
		CHECK(t->status == SCSI_STATUS_GOOD, "%s: expected GOOD, got %s", what, got);
	} else if (!strcasecmp(want, "busy")) {
		CHECK(t->status == SCSI_STATUS_BUSY, "%s: expected BUSY, got %s", what, got);
	} else if (!strcasecmp(want, "task-set-full")) {
		CHECK(t->status == SCSI_STATUS_TASK_SET_FULL, "%s: expected TASK SET FULL, got %s", what, got);
	} else if (!strcasecmp(want, "reservation-conflict")) {
		CHECK(t->status == SCSI_STATUS_RESERVATION_CONFLICT, "%s: expected RESERVATION CONFLICT, got %s",
		      what, got);
	} else {
		unsigned wk, wa, wq, key, asc, ascq, sl;
		unsigned long long wi = 0;
		const uint8_t *s = ft_sense(t, &sl);
		bool has_info, want_info;
		uint64_t info;
		const char *at = strchr(want, '@');

		CHECK(sscanf(want, "%x/%x/%x", &wk, &wa, &wq) == 3, "bad WANT '%s'", want);
		want_info = at && sscanf(at + 1, "%llu", &wi) == 1;
		CHECK(s, "%s: expected CHECK CONDITION %s, got %s", what, want, got);
		ft_sense_fields(s, sl, &key, &asc, &ascq, &has_info, &info);
		CHECK(key == wk && asc == wa && ascq == wq, "%s: expected sense %x/%02x/%02x, got %s", what,
		      wk, wa, wq, got);
		if (want_info)
			CHECK(has_info && info == wi, "%s: expected INFORMATION %llu (VALID), got %s", what, wi,
			      got);
		/* a failed command moves no data: the whole transfer is residual */
		if (xfer)
			CHECK(t->residual_status == SCSI_RESIDUAL_UNDERFLOW && t->residual == xfer,
			      "%s: a failed command must transfer nothing (residual %zu of %u)", what,
			      t->residual, xfer);
	}
	ft_note("%s -> %s", what, got);
}

static int ft_expect_cmd(int argc, char **argv)
{
	struct ft c;

	CHECK(argc >= 5 && (argc - 1) % 4 == 0, "usage: expect URL CMD LBA NBLOCKS WANT [CMD LBA NBLOCKS WANT]...");
	ft_open(&c, argv[0], false);
	for (int k = 1; k + 4 <= argc; k += 4) {
		enum ft_op op = OP_TUR;
		bool found = false;
		uint64_t lba = strtoull(argv[k + 1], NULL, 0);
		uint32_t n = (uint32_t)strtoul(argv[k + 2], NULL, 0), dlen;
		uint8_t *d;
		struct scsi_task *t;
		char what[96];

		for (size_t i = 0; i < sizeof(ft_ops) / sizeof(ft_ops[0]); i++)
			if (!strcmp(argv[k], ft_ops[i].name)) {
				op = ft_ops[i].op;
				found = true;
			}
		CHECK(found, "unknown command %s", argv[k]);
		d = ft_dataout(&c, op, lba, n, &dlen);
		t = ft_run(&c, op, lba, n, d, dlen);
		snprintf(what, sizeof(what), "%s LBA %" PRIu64 "+%u", argv[k], lba, n);
		ft_expect(t, argv[k + 3], what, op == OP_READ ? n * FT_BS : 0);
		if (t)
			scsi_free_scsi_task(t);
		free(d);
	}
	ft_close(&c);
	return 0;
}

/* ------------------------------------------------------------ pattern I/O */

static int ft_fill_cmd(int argc, char **argv)
{
	struct ft c;
	uint64_t lba, seed;
	uint32_t n;
	uint8_t *b;
	struct scsi_task *t;

	CHECK(argc == 4, "usage: fill URL LBA NBLOCKS SEED");
	lba = strtoull(argv[1], NULL, 0);
	n = (uint32_t)strtoul(argv[2], NULL, 0);
	seed = strtoull(argv[3], NULL, 0);
	b = malloc((size_t)n * FT_BS);
	CHECK(b, "out of memory");
	ft_fill(b, lba, n, seed);
	ft_open(&c, argv[0], false);
	t = iscsi_write16_sync(c.iscsi, c.lun, lba, b, n * FT_BS, FT_BS, 0, 0, 0, 0, 0);
	ft_expect(t, "good", "WRITE of the pattern", 0);
	scsi_free_scsi_task(t);
	free(b);
	ft_close(&c);
	return 0;
}

static int ft_check_cmd(int argc, char **argv)
{
	struct ft c;
	uint64_t lba, seed;
	uint32_t n;
	uint8_t *b;
	struct scsi_task *t;

	CHECK(argc == 4, "usage: check URL LBA NBLOCKS SEED");
	lba = strtoull(argv[1], NULL, 0);
	n = (uint32_t)strtoul(argv[2], NULL, 0);
	seed = strtoull(argv[3], NULL, 0);
	b = malloc((size_t)n * FT_BS);
	CHECK(b, "out of memory");
	ft_fill(b, lba, n, seed);
	ft_open(&c, argv[0], false);
	t = iscsi_read16_sync(c.iscsi, c.lun, lba, n * FT_BS, FT_BS, 0, 0, 0, 0, 0);
	ft_expect(t, "good", "READ of the pattern", 0);
	CHECK(t->datain.size == (int)(n * FT_BS), "READ returned %d bytes, not %u", t->datain.size, n * FT_BS);
	for (uint32_t i = 0; i < n; i++)
		CHECK(!memcmp(t->datain.data + (size_t)i * FT_BS, b + (size_t)i * FT_BS, FT_BS),
		      "LBA %" PRIu64 " does not hold the pattern of seed %" PRIu64, lba + i, seed);
	ft_note("LBA %" PRIu64 "+%u hold the pattern of seed %" PRIu64, lba, n, seed);
	scsi_free_scsi_task(t);
	free(b);
	ft_close(&c);
	return 0;
}

/* ---------------------------------------------------------------- async */

struct ft_io {
	struct scsi_task *task;
	bool done;
	int status;
	double t_done;
};

static void ft_io_cb(struct iscsi_context *iscsi, int status, void *data, void *priv)
{
	struct ft_io *io = priv;

	(void)iscsi;
	(void)data;
	io->status = status;
	io->done = true;
	io->t_done = ft_now();
}

struct ft_tmf {
	bool done;
	int status;
	uint32_t response;
};

static void ft_tmf_cb(struct iscsi_context *iscsi, int status, void *data, void *priv)
{
	struct ft_tmf *w = priv;

	(void)iscsi;
	w->status = status;
	if (status == SCSI_STATUS_GOOD && data)
		w->response = *(uint32_t *)data;
	w->done = true;
}

/* Serve the connection until *flag or the deadline; false at the deadline. */
static bool ft_run_until(struct ft *c, const bool *flag, double deadline)
{
	while (!*flag) {
		struct pollfd pf = { .fd = iscsi_get_fd(c->iscsi), .events = (short)iscsi_which_events(c->iscsi) };
		double left = deadline - ft_now();
		int rc;

		if (left <= 0)
			return false;
		rc = poll(&pf, 1, (int)(left * 1000) + 1);
		CHECK(rc >= 0 || errno == EINTR, "poll: %s", strerror(errno));
		if (rc > 0 || pf.revents)
			CHECK(iscsi_service(c->iscsi, pf.revents) == 0, "connection lost: %s",
			      iscsi_get_error(c->iscsi));
		else
			iscsi_service(c->iscsi, 0);
	}
	return true;
}

static struct ft_io *ft_read_async(struct ft *c, uint64_t lba, uint32_t n)
{
	struct ft_io *io = calloc(1, sizeof(*io));

	CHECK(io, "out of memory");
	io->task = iscsi_read16_task(c->iscsi, c->lun, lba, n * FT_BS, FT_BS, 0, 0, 0, 0, 0, ft_io_cb, io);
	CHECK(io->task, "cannot queue READ(16): %s", iscsi_get_error(c->iscsi));
	return io;
}

/* A stalled READ: nothing for a second, then ABORT TASK or LUN RESET
 * ends it with Function Complete, and the session goes on. */
static int ft_stall_cmd(int argc, char **argv)
{
	struct ft c;
	struct ft_io *io;
	struct ft_tmf w = { 0 };
	bool reset;
	double t0;

	CHECK(argc == 3, "usage: stall URL LBA abort|lun-reset");
	reset = !strcmp(argv[2], "lun-reset");
	ft_open(&c, argv[0], false);
	io = ft_read_async(&c, strtoull(argv[1], NULL, 0), 8);
	t0 = ft_now();
	CHECK(!ft_run_until(&c, &io->done, t0 + 1.0), "the READ was answered (%s) although it should stall",
	      ft_status_name(io->status));
	ft_note("READ stalled: no answer for %.1f s", ft_now() - t0);
	if (reset)
		CHECK(iscsi_task_mgmt_lun_reset_async(c.iscsi, (uint32_t)c.lun, ft_tmf_cb, &w) == 0,
		      "cannot send LUN RESET: %s", iscsi_get_error(c.iscsi));
	else
		CHECK(iscsi_task_mgmt_abort_task_async(c.iscsi, io->task, ft_tmf_cb, &w) == 0,
		      "cannot send ABORT TASK: %s", iscsi_get_error(c.iscsi));
	t0 = ft_now();
	CHECK(ft_run_until(&c, &w.done, t0 + 10), "no answer to %s within 10 s", argv[2]);
	CHECK(w.status == SCSI_STATUS_GOOD && w.response == ISCSI_TMR_FUNC_COMPLETE,
	      "%s: expected Function Complete, got status %s response %u", argv[2], ft_status_name(w.status),
	      w.response);
	ft_note("%s -> Function Complete after %.0f ms; the READ %s", reset ? "LUN RESET" : "ABORT TASK",
		(ft_now() - t0) * 1000, io->done ? "was cancelled" : "never answered");
	if (!io->done)
		iscsi_scsi_cancel_task(c.iscsi, io->task);
	scsi_free_scsi_task(io->task);
	free(io);
	{
		/* the session works after it (a LUN RESET leaves a unit attention) */
		struct scsi_task *t = iscsi_testunitready_sync(c.iscsi, c.lun);

		if (reset && t && t->status == SCSI_STATUS_CHECK_CONDITION) {
			ft_expect(t, "6/29/03", "TEST UNIT READY after LUN RESET", 0);
			scsi_free_scsi_task(t);
			t = iscsi_testunitready_sync(c.iscsi, c.lun);
		}
		ft_expect(t, "good", "TEST UNIT READY after the stall", 0);
		scsi_free_scsi_task(t);
	}
	ft_close(&c);
	return 0;
}

/* A READ held (stall with a timeout, or latency) is answered GOOD, later. */
static int ft_held_cmd(int argc, char **argv)
{
	struct ft c;
	struct ft_io *io;
	double t0, ms, want;

	CHECK(argc == 3, "usage: held URL LBA MS");
	want = atof(argv[2]);
	ft_open(&c, argv[0], false);
	io = ft_read_async(&c, strtoull(argv[1], NULL, 0), 8);
	t0 = ft_now();
	CHECK(ft_run_until(&c, &io->done, t0 + want / 1000 + 30), "no answer within %.0f ms", want + 30000);
	ms = (io->t_done - t0) * 1000;
	CHECK(io->status == SCSI_STATUS_GOOD, "held READ: expected GOOD, got %s", ft_status_name(io->status));
	CHECK(ms >= want, "held READ answered after %.1f ms, before the %.0f ms it must wait", ms, want);
	ft_note("READ answered GOOD after %.1f ms (held for at least %.0f ms)", ms, want);
	scsi_free_scsi_task(io->task);
	free(io);
	ft_close(&c);
	return 0;
}

static int ft_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Benchmark-style: latencies of COUNT 4 KiB reads, one at a time. */
static int ft_lat_cmd(int argc, char **argv)
{
	struct ft c;
	int n;
	double *v, sum = 0;

	CHECK(argc == 2, "usage: lat URL COUNT");
	n = atoi(argv[1]);
	CHECK(n > 0 && n < 1000000, "COUNT 1 to 999999");
	v = calloc((size_t)n, sizeof(*v));
	CHECK(v, "out of memory");
	ft_open(&c, argv[0], false);
	for (int i = 0; i < n; i++) {
		double t0 = ft_now();
		struct scsi_task *t = iscsi_read16_sync(c.iscsi, c.lun, (uint64_t)(i % 1024) * 8, 4096, FT_BS, 0, 0,
							0, 0, 0);

		CHECK(t && t->status == SCSI_STATUS_GOOD, "READ %d failed", i);
		v[i] = (ft_now() - t0) * 1e6;
		sum += v[i];
		scsi_free_scsi_task(t);
	}
	qsort(v, (size_t)n, sizeof(*v), ft_cmp_double);
	printf("reads=%d mean_us=%.0f p50_us=%.0f p90_us=%.0f min_us=%.0f max_us=%.0f\n", n, sum / n,
	       v[n / 2], v[(n * 9) / 10], v[0], v[n - 1]);
	free(v);
	ft_close(&c);
	return 0;
}

/* ------------------------------------------------------------------ VAAI */

static struct scsi_task *ft_vpd(struct ft *c, int page)
{
	struct scsi_task *t = iscsi_inquiry_sync(c->iscsi, c->lun, 1, page, 255);

	CHECK(t && t->status == SCSI_STATUS_GOOD, "INQUIRY VPD %#x failed", page);
	return t;
}

static bool ft_rsoc_has(const struct scsi_task *t, uint8_t op)
{
	const uint8_t *d = t->datain.data;
	uint32_t len = ft_get32(d);

	for (uint32_t off = 4; off + 8 <= 4 + len && off + 8 <= (uint32_t)t->datain.size;
	     off += 8 + ((d[off + 5] & 0x02) ? 12 : 0))
		if (d[off] == op)
			return true;
	return false;
}

static int ft_vaai_cmd(int argc, char **argv)
{
	struct ft c;
	struct scsi_task *t;
	bool want = true;
	static const uint8_t ops[] = { 0x89, 0x83, 0x42, 0x41, 0x93 };
	uint8_t cdb[12] = { 0xa3, 0x0c, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0 };

	CHECK(argc == 2 && (!strcmp(argv[1], "offered") || !strcmp(argv[1], "withdrawn")),
	      "usage: vaai URL offered|withdrawn");
	want = !strcmp(argv[1], "offered");
	ft_open(&c, argv[0], false);
	t = iscsi_inquiry_sync(c.iscsi, c.lun, 0, 0, 96);
	CHECK(t && t->status == SCSI_STATUS_GOOD && t->datain.size > 5, "standard INQUIRY failed");
	CHECK(!!(t->datain.data[5] & 0x08) == want, "INQUIRY 3PC is %d", !!(t->datain.data[5] & 0x08));
	scsi_free_scsi_task(t);
	t = ft_vpd(&c, 0xb0);
	CHECK((t->datain.data[5] != 0) == want, "VPD B0 MAXIMUM COMPARE AND WRITE LENGTH is %u",
	      t->datain.data[5]);
	CHECK((ft_get32(t->datain.data + 20) != 0) == want, "VPD B0 MAXIMUM UNMAP LBA COUNT is %u",
	      ft_get32(t->datain.data + 20));
	CHECK((ft_get32(t->datain.data + 40) != 0) == want, "VPD B0 MAXIMUM WRITE SAME LENGTH is %u",
	      ft_get32(t->datain.data + 40));
	scsi_free_scsi_task(t);
	t = ft_vpd(&c, 0xb2);
	CHECK(((t->datain.data[5] & 0xe0) == 0xe0) == want && (want || !(t->datain.data[5] & 0xe0)),
	      "VPD B2 LBPU/LBPWS/LBPWS10 bits are %#x", t->datain.data[5] & 0xe0);
	scsi_free_scsi_task(t);
	t = scsi_create_task(12, cdb, SCSI_XFER_READ, 4096);
	ft_put32(t->cdb + 6, 4096);
	t = iscsi_scsi_command_sync(c.iscsi, c.lun, t, NULL);
	CHECK(t && t->status == SCSI_STATUS_GOOD, "REPORT SUPPORTED OPERATION CODES failed");
	for (size_t i = 0; i < sizeof(ops); i++)
		CHECK(ft_rsoc_has(t, ops[i]) == want, "REPORT SUPPORTED OPERATION CODES %s %#04x",
		      want ? "lacks" : "still lists", ops[i]);
	scsi_free_scsi_task(t);
	{
		/* and the commands themselves */
		static const enum ft_op run[] = { OP_CAW, OP_WS, OP_UNMAP };

		for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++) {
			uint32_t dlen;
			uint8_t *d = ft_dataout(&c, run[i], 2048, 1, &dlen);

			t = ft_run(&c, run[i], 2048, 1, d, dlen);
			ft_expect(t, want ? "good" : "5/20/00", ft_ops[run[i]].name, 0);
			scsi_free_scsi_task(t);
			free(d);
		}
	}
	ft_note("VAAI %s: INQUIRY 3PC, VPD B0 and B2, REPORT SUPPORTED OPERATION CODES and the commands agree",
		argv[1]);
	ft_close(&c);
	return 0;
}

/* --------------------------------------------------------- capacity, ALUA */

static int ft_capacity_cmd(int argc, char **argv)
{
	struct ft c;
	struct scsi_task *t;
	struct scsi_readcapacity16 *rc;
	uint64_t want;

	CHECK(argc == 2 && ft_after_login, "usage: -x SHELL capacity URL BLOCKS");
	want = strtoull(argv[1], NULL, 0);
	ft_open(&c, argv[0], false);   /* -x changes the capacity under this session */
	t = iscsi_testunitready_sync(c.iscsi, c.lun);
	ft_expect(t, "6/2a/09", "TEST UNIT READY after the change", 0);
	scsi_free_scsi_task(t);
	t = iscsi_readcapacity16_sync(c.iscsi, c.lun);
	CHECK(t && t->status == SCSI_STATUS_GOOD, "READ CAPACITY(16) failed");
	rc = scsi_datain_unmarshall(t);
	CHECK(rc && rc->returned_lba + 1 == want, "READ CAPACITY(16): %" PRIu64 " blocks, expected %" PRIu64,
	      rc ? rc->returned_lba + 1 : 0, want);
	ft_note("READ CAPACITY(16) -> %" PRIu64 " blocks", want);
	scsi_free_scsi_task(t);
	t = ft_run(&c, OP_READ, want, 1, NULL, 0);
	ft_expect(t, "5/21/00", "READ past the end", FT_BS);
	scsi_free_scsi_task(t);
	ft_close(&c);
	return 0;
}

static int ft_rtpg_cmd(int argc, char **argv)
{
	struct ft c;
	struct scsi_task *t;
	unsigned tpgt, state;
	uint32_t len;
	bool found = false;

	CHECK(argc == 3, "usage: rtpg URL TPGT STATE");
	tpgt = (unsigned)atoi(argv[1]);
	state = (unsigned)strtoul(argv[2], NULL, 0);
	ft_open(&c, argv[0], false);
	{
		uint8_t cdb[12] = { 0xa3, 0x0a };

		ft_put32(cdb + 6, 1024);
		t = scsi_create_task(12, cdb, SCSI_XFER_READ, 1024);
		t = iscsi_scsi_command_sync(c.iscsi, c.lun, t, NULL);
	}
	CHECK(t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 4, "REPORT TARGET PORT GROUPS failed");
	len = ft_get32(t->datain.data);
	for (uint32_t off = 4; off + 8 <= 4 + len && off + 8 <= (uint32_t)t->datain.size;
	     off += 8 + 4u * t->datain.data[off + 7]) {
		const uint8_t *g = t->datain.data + off;

		if ((unsigned)(g[2] << 8 | g[3]) == tpgt) {
			found = true;
			CHECK((g[0] & 0x0f) == state, "group %u is in state %#x, expected %#x", tpgt, g[0] & 0xf,
			      state);
		}
	}
	CHECK(found, "REPORT TARGET PORT GROUPS has no group %u", tpgt);
	ft_note("REPORT TARGET PORT GROUPS: group %u in state %#x", tpgt, state);
	scsi_free_scsi_task(t);
	ft_close(&c);
	return 0;
}

/* ------------------------------------------------------------ transport */

static int ft_dropped_cmd(int argc, char **argv)
{
	struct ft c;
	struct scsi_task *t;

	CHECK(argc == 2, "usage: dropped URL LBA");
	ft_open(&c, argv[0], false);
	t = iscsi_read16_sync(c.iscsi, c.lun, strtoull(argv[1], NULL, 0), 4096, FT_BS, 0, 0, 0, 0, 0);
	CHECK(!t || t->status < 0 || t->status == SCSI_STATUS_ERROR || t->status == SCSI_STATUS_CANCELLED,
	      "READ answered %s; the connection should have been dropped", t ? ft_status_name(t->status) : "?");
	ft_note("READ -> connection dropped (%s)", iscsi_get_error(c.iscsi));
	if (t)
		scsi_free_scsi_task(t);
	iscsi_destroy_url(c.url);
	iscsi_destroy_context(c.iscsi);
	return 0;
}

/* A WRITE that needs R2T gets none: no answer, then ABORT TASK, and the
 * blocks are what they were (the pattern of SEED). */
static int ft_nor2t_cmd(int argc, char **argv)
{
	struct ft c;
	struct ft_io io = { 0 };
	struct ft_tmf w = { 0 };
	uint64_t lba;
	uint8_t *b;
	const uint32_t n = 128;   /* 64 KiB */

	CHECK(argc == 3, "usage: no-r2t URL LBA SEED");
	lba = strtoull(argv[1], NULL, 0);
	b = malloc(n * FT_BS);
	CHECK(b, "out of memory");
	ft_fill(b, lba, n, 99);
	ft_open(&c, argv[0], true);
	io.task = iscsi_write16_task(c.iscsi, c.lun, lba, b, n * FT_BS, FT_BS, 0, 0, 0, 0, 0, ft_io_cb, &io);
	CHECK(io.task, "cannot queue WRITE(16)");
	CHECK(!ft_run_until(&c, &io.done, ft_now() + 1.0), "the WRITE was answered (%s): an R2T came",
	      ft_status_name(io.status));
	ft_note("WRITE(16) of 64 KiB: no R2T, no answer for 1 s");
	CHECK(iscsi_task_mgmt_abort_task_async(c.iscsi, io.task, ft_tmf_cb, &w) == 0, "cannot send ABORT TASK");
	CHECK(ft_run_until(&c, &w.done, ft_now() + 10), "no answer to ABORT TASK");
	CHECK(w.status == SCSI_STATUS_GOOD && w.response == ISCSI_TMR_FUNC_COMPLETE,
	      "ABORT TASK: expected Function Complete, got %u", w.response);
	ft_note("ABORT TASK -> Function Complete");
	if (!io.done)
		iscsi_scsi_cancel_task(c.iscsi, io.task);
	scsi_free_scsi_task(io.task);
	free(b);
	ft_close(&c);
	{
		char *args[] = { argv[0], argv[1], "128", argv[2] };

		return ft_check_cmd(4, args);
	}
}

/* The same commands every run: one line per answer (determinism). */
static int ft_seq_cmd(int argc, char **argv)
{
	struct ft c;
	int n;
	uint64_t x;

	CHECK(argc == 3, "usage: seq URL COUNT SEED");
	n = atoi(argv[1]);
	x = strtoull(argv[2], NULL, 0) | 1;
	ft_open(&c, argv[0], false);
	for (int i = 0; i < n; i++) {
		struct scsi_task *t;
		uint64_t lba;
		char got[256];

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		lba = x % 8192;
		t = ft_run(&c, OP_READ, lba, 8, NULL, 0);
		CHECK(t, "READ %d: no answer", i);
		ft_describe(t, got, sizeof(got));
		printf("%d READ(16) LBA %" PRIu64 "+8 -> %s\n", i, lba, got);
		scsi_free_scsi_task(t);
	}
	ft_close(&c);
	return 0;
}

/* A thin LUN that fills up: 1 MiB WRITEs, the one past MIB fails with
 * SPACE ALLOCATION FAILED WRITE PROTECT, nothing of it is written. */
static int ft_oos_cmd(int argc, char **argv)
{
	struct ft c;
	unsigned mib, i;
	const uint32_t n = 2048;   /* 1 MiB of 512-byte blocks */
	uint8_t *b = malloc(n * FT_BS), *before = malloc(n * FT_BS);
	struct scsi_task *t;

	CHECK(argc == 2 && b && before, "usage: oos URL MIB");
	mib = (unsigned)atoi(argv[1]);
	ft_open(&c, argv[0], false);
	t = iscsi_read16_sync(c.iscsi, c.lun, (uint64_t)mib * n, n * FT_BS, FT_BS, 0, 0, 0, 0, 0);
	ft_expect(t, "good", "READ of the MiB that will not fit", 0);
	memcpy(before, t->datain.data, n * FT_BS);
	scsi_free_scsi_task(t);
	for (i = 0; i <= mib + 2; i++) {
		char what[64];

		ft_fill(b, (uint64_t)i * n, n, 5);
		t = iscsi_write16_sync(c.iscsi, c.lun, (uint64_t)i * n, b, n * FT_BS, FT_BS, 0, 0, 0, 0, 0);
		snprintf(what, sizeof(what), "WRITE of MiB %u", i);
		ft_expect(t, i < mib ? "good" : "7/27/07", what, 0);
		scsi_free_scsi_task(t);
	}
	/* a failed write is not applied: the MiB past the limit is as it was */
	t = iscsi_read16_sync(c.iscsi, c.lun, (uint64_t)mib * n, n * FT_BS, FT_BS, 0, 0, 0, 0, 0);
	ft_expect(t, "good", "READ of the MiB that did not fit", 0);
	CHECK(!memcmp(before, t->datain.data, n * FT_BS), "MiB %u changed although its WRITE failed", mib);
	scsi_free_scsi_task(t);
	for (i = 0; i < mib; i++) {
		ft_fill(b, (uint64_t)i * n, n, 5);
		t = iscsi_read16_sync(c.iscsi, c.lun, (uint64_t)i * n, n * FT_BS, FT_BS, 0, 0, 0, 0, 0);
		CHECK(t && t->status == SCSI_STATUS_GOOD && !memcmp(b, t->datain.data, n * FT_BS),
		      "MiB %u does not hold what was written", i);
		scsi_free_scsi_task(t);
	}
	ft_close(&c);
	free(b);
	free(before);
	ft_note("the first %u MiB were written and read back, every WRITE after them failed with 7/27/07 "
		"and changed nothing", mib);
	return 0;
}

/* The session survives a NOP-In storm: commands keep working. */
static int ft_nops_cmd(int argc, char **argv)
{
	struct ft c;
	double end;
	int n = 0;

	CHECK(argc == 2, "usage: nops URL SECONDS");
	ft_open(&c, argv[0], false);
	end = ft_now() + atof(argv[1]);
	while (ft_now() < end) {
		struct scsi_task *t = iscsi_testunitready_sync(c.iscsi, c.lun);

		ft_expect(t, "good", "TEST UNIT READY during the storm", 0);
		scsi_free_scsi_task(t);
		n++;
		usleep(100000);
	}
	ft_note("%d TEST UNIT READY answered GOOD through the NOP-In storm", n);
	ft_close(&c);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
		{ "expect", ft_expect_cmd }, { "fill", ft_fill_cmd }, { "check", ft_check_cmd },
		{ "stall", ft_stall_cmd }, { "held", ft_held_cmd }, { "lat", ft_lat_cmd },
		{ "vaai", ft_vaai_cmd }, { "capacity", ft_capacity_cmd }, { "dropped", ft_dropped_cmd },
		{ "no-r2t", ft_nor2t_cmd }, { "seq", ft_seq_cmd }, { "oos", ft_oos_cmd },
		{ "rtpg", ft_rtpg_cmd }, { "nops", ft_nops_cmd },
	};
	int i = 1;

	while (i + 1 < argc && (!strcmp(argv[i], "-i") || !strcmp(argv[i], "-x"))) {
		if (argv[i][1] == 'i')
			ft_initiator = argv[i + 1];
		else
			ft_after_login = argv[i + 1];
		i += 2;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: ftest [-i INITIATOR] COMMAND ARGS (see tests/ftest.c)\n");
		return 2;
	}
	ft_cmd = argv[i];
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++)
		if (!strcmp(argv[i], cmds[k].name))
			return cmds[k].fn(argc - i - 1, argv + i + 1);
	fprintf(stderr, "ftest: unknown command %s\n", argv[i]);
	return 2;
}
