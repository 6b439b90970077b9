/*
 * itest subcommands for LUN clones and snapshots (see tests/clones.sh):
 *
 *   clone-write STATE NBLOCKS URL CLONE-URL CMD [ARG...]
 *       fill blocks 0..NBLOCKS-1 of URL with an "old" pattern, then write
 *       one pass of a new pattern over them (shuffled extents of 1..64
 *       blocks, each block once, 32 writes in flight, WRITE(10) and (16)
 *       mixed). Once 64 writes are acknowledged, CMD (the clone or
 *       snapshot command) is started and the writes go on while it runs,
 *       but for the last quarter of the pass, which is written once CMD
 *       has exited (status 0 required). STATE is then the state durable-check reads, for
 *       CLONE-URL: the extents acknowledged before CMD started must hold
 *       the new pattern in the clone, those sent while it ran either
 *       pattern, and those sent after it returned the old one (they are
 *       left out of STATE: unsent). STATE.origin is the same for URL with
 *       every extent acknowledged (the whole pass must be there).
 *
 *   write-protected URL
 *       WRITE(10) and WRITE(16) are refused with DATA PROTECT, WRITE
 *       PROTECTED (07/27/00); MODE SENSE(6) and (10) have the WP bit set;
 *       READ works.
 *
 *   ua-after URL ASCQ[,ASCQ...] CMD [ARG...]
 *       a session logged in to URL (its unit attentions cleared) while CMD
 *       runs (status 0 required); then TEST UNIT READY reports exactly the
 *       given unit attentions (ASC/ASCQ as four hex digits, "2809"), in
 *       any order, and then GOOD.
 *
 * DESIGN: single-threaded; clone-write drives its session with libiscsi's
 * asynchronous API from one poll(2) loop and watches CMD with waitpid
 * (WNOHANG) between iterations, so "acknowledged before CMD started" and
 * "sent after it returned" are exact.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/itest.h"

extern char **environ;

#define CL_MAX_EXTENT 64
#define CL_START_AFTER 64     /* acknowledged writes before CMD starts */
#define CL_CHUNK_BYTES (1u << 20)

/* When an extent was sent and acknowledged, relative to CMD. */
enum cl_phase { CL_UNSENT = 0, CL_BEFORE, CL_DURING, CL_AFTER };

struct cl_extent {
	uint64_t lba;
	uint32_t nblocks;
	uint8_t sent, acked;      /* enum cl_phase */
};

struct cl_run {
	struct itest_conn c;
	struct itest_geom g;
	uint64_t nblocks, seed_old, seed_new;
	unsigned char *data;      /* the new pattern over the region */
	struct cl_extent *ext;
	size_t n_ext, next;
	int inflight;
	enum cl_phase phase;      /* where CMD is: before, running, returned */
	uint64_t acked;
	unsigned sent_during, sent_after, acked_during;
};

static void cl_plan(struct cl_run *r)
{
	uint32_t maxe = CL_MAX_EXTENT;

	if (r->g.max_xfer_blocks && maxe > r->g.max_xfer_blocks)
		maxe = r->g.max_xfer_blocks;
	r->ext = calloc((size_t)r->nblocks, sizeof(*r->ext));
	r->data = malloc((size_t)r->nblocks * r->g.bs);
	CHECK(r->ext && r->data, "out of memory");
	for (uint64_t lba = 0; lba < r->nblocks;) {
		uint32_t n = 1 + (uint32_t)(itest_rand() % maxe);

		if (n > r->nblocks - lba)
			n = (uint32_t)(r->nblocks - lba);
		r->ext[r->n_ext++] = (struct cl_extent){ .lba = lba, .nblocks = n };
		lba += n;
	}
	for (size_t i = r->n_ext; i > 1; i--) {
		size_t j = (size_t)(itest_rand() % i);
		struct cl_extent x = r->ext[i - 1];

		r->ext[i - 1] = r->ext[j];
		r->ext[j] = x;
	}
	itest_fill(r->data, 0, (uint32_t)r->nblocks, r->g.bs, r->seed_new);
}

/* The old pattern over the region, synchronously. */
static void cl_prepare(struct cl_run *r)
{
	uint32_t chunk = CL_CHUNK_BYTES / r->g.bs;
	unsigned char *buf = malloc(CL_CHUNK_BYTES);

	CHECK(buf, "out of memory");
	if (r->g.max_xfer_blocks && chunk > r->g.max_xfer_blocks)
		chunk = r->g.max_xfer_blocks;
	for (uint64_t lba = 0; lba < r->nblocks;) {
		uint32_t k = r->nblocks - lba < chunk ? (uint32_t)(r->nblocks - lba) : chunk;
		struct scsi_task *t;

		itest_fill(buf, lba, k, r->g.bs, r->seed_old);
		t = iscsi_write16_sync(r->c.iscsi, r->c.lun, lba, buf, k * r->g.bs, r->g.bs, 0, 0, 0, 0, 0);
		itest_expect_good(r->c.iscsi, t, "WRITE(16) of the old pattern");
		scsi_free_scsi_task(t);
		lba += k;
	}
	free(buf);
}

struct cl_tag {
	struct cl_run *r;
	struct cl_extent *e;
};

static void cl_issue(struct cl_run *r);
static void cl_send(struct cl_run *r, struct cl_extent *e);

static void cl_write_cb(struct iscsi_context *iscsi, int status, void *data, void *priv)
{
	struct cl_tag *tag = priv;
	struct cl_run *r = tag->r;
	struct scsi_task *t = data;

	r->inflight--;
	if (status == SCSI_STATUS_CHECK_CONDITION && t && t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
		/* the new LUN's REPORTED LUNS DATA HAS CHANGED: not executed,
		 * sent again (as sent now) */
		scsi_free_scsi_task(t);
		cl_send(r, tag->e);
		free(tag);
		cl_issue(r);
		return;
	}
	if (status != SCSI_STATUS_GOOD)
		itest_fail("WRITE of %u blocks at LBA %" PRIu64 " failed: %s", tag->e->nblocks,
			   tag->e->lba, itest_task_str(iscsi, t));
	tag->e->acked = (uint8_t)r->phase;
	r->acked++;
	r->acked_during += r->phase == CL_DURING;
	scsi_free_scsi_task(t);
	free(tag);
	cl_issue(r);
}

/* A quarter of the extents waits until CMD has returned: however fast
 * the writes go, some are sent after it. */
static void cl_issue(struct cl_run *r)
{
	size_t limit = r->phase == CL_AFTER ? r->n_ext : r->n_ext - r->n_ext / 4;

	while (r->inflight < ITEST_QD && r->next < limit)
		cl_send(r, &r->ext[r->next++]);
}

static void cl_send(struct cl_run *r, struct cl_extent *e)
{
	struct cl_tag *tag = malloc(sizeof(*tag));
	unsigned char *p = r->data + (size_t)e->lba * r->g.bs;
	struct scsi_task *t;

	CHECK(tag, "out of memory");
	tag->r = r;
	tag->e = e;
	e->sent = (uint8_t)r->phase;
	r->sent_during += r->phase == CL_DURING;
	r->sent_after += r->phase == CL_AFTER;
	if (itest_rand() & 1)
		t = iscsi_write16_task(r->c.iscsi, r->c.lun, e->lba, p, e->nblocks * r->g.bs, r->g.bs,
				       0, 0, 0, 0, 0, cl_write_cb, tag);
	else
		t = iscsi_write10_task(r->c.iscsi, r->c.lun, (uint32_t)e->lba, p, e->nblocks * r->g.bs,
				       r->g.bs, 0, 0, 0, 0, 0, cl_write_cb, tag);
	CHECK(t, "cannot queue a WRITE: %s", iscsi_get_error(r->c.iscsi));
	r->inflight++;
}

/* STATE for durable-check: all = every sent extent counts as acknowledged
 * (the origin, after the pass); else as the clone must hold them. */
static void cl_write_state(const char *path, const struct cl_run *r, const char *url, bool all)
{
	FILE *f = fopen(path, "w");

	CHECK(f, "cannot create %s: %s", path, strerror(errno));
	fprintf(f, "lun %s %u %" PRIu64 " 0x%" PRIx64 " 0x%" PRIx64 " pass=1\n", url, r->g.bs,
		r->nblocks, r->seed_old, r->seed_new);
	for (size_t k = 0; k < r->n_ext; k++) {
		const struct cl_extent *e = &r->ext[k];

		if (all || e->acked == CL_BEFORE)
			fprintf(f, "ext %" PRIu64 " %u acked\n", e->lba, e->nblocks);
		else if (e->sent == CL_BEFORE || e->sent == CL_DURING)
			fprintf(f, "ext %" PRIu64 " %u sent\n", e->lba, e->nblocks);
		/* sent after CMD returned: not in the clone (unsent for the check) */
	}
	CHECK(fclose(f) == 0, "cannot write %s: %s", path, strerror(errno));
}

/* Has the command exited? Its status must be 0. */
static bool cl_cmd_done(pid_t pid)
{
	int st;
	pid_t w = waitpid(pid, &st, WNOHANG);

	CHECK(w >= 0, "waitpid: %s", strerror(errno));
	if (w == 0)
		return false;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the command failed (status 0x%x)", st);
	return true;
}

/* Drive the writes until the pass is over, starting CMD on the way. */
static void cl_run_loop(struct cl_run *r, char **cmd)
{
	double t0 = itest_now();
	pid_t pid = 0;

	cl_issue(r);
	while (r->next < r->n_ext || r->inflight) {
		struct pollfd pfd = { .fd = iscsi_get_fd(r->c.iscsi),
				      .events = (short)iscsi_which_events(r->c.iscsi) };

		if (r->phase == CL_BEFORE && r->acked >= CL_START_AFTER) {
			int e = posix_spawnp(&pid, cmd[0], NULL, NULL, cmd, environ);

			CHECK(e == 0, "cannot start %s: %s", cmd[0], strerror(e));
			r->phase = CL_DURING;
		}
		if (r->phase == CL_DURING && cl_cmd_done(pid)) {
			r->phase = CL_AFTER;
			cl_issue(r);
		}
		if (poll(&pfd, 1, r->phase == CL_DURING ? 2 : 200) < 0 && errno != EINTR)
			itest_fail("poll: %s", strerror(errno));
		if (iscsi_service(r->c.iscsi, pfd.revents) < 0)
			itest_fail("the session failed: %s", iscsi_get_error(r->c.iscsi));
		if (itest_now() - t0 > ITEST_TIMEOUT_S)
			itest_fail("timed out after %d s", ITEST_TIMEOUT_S);
	}
}

int itest_clone_write(int argc, char **argv)
{
	struct cl_run r;
	uint64_t want;
	size_t before = 0;
	char origin[4096];

	CHECK(argc >= 5, "usage: clone-write STATE NBLOCKS URL CLONE-URL CMD [ARG...]");
	memset(&r, 0, sizeof(r));
	want = strtoull(argv[1], NULL, 0);
	CHECK(want >= 16 * CL_MAX_EXTENT, "NBLOCKS must be at least %d", 16 * CL_MAX_EXTENT);
	itest_open(&r.c, argv[2], ITEST_R2T_DEFAULT);
	itest_geometry(&r.c, &r.g);
	r.nblocks = want < r.g.nblocks ? want : r.g.nblocks;
	r.seed_old = itest_rand();
	do
		r.seed_new = itest_rand();
	while (r.seed_new == r.seed_old);
	cl_prepare(&r);
	cl_plan(&r);
	r.phase = CL_BEFORE;
	cl_run_loop(&r, argv + 4);
	for (size_t k = 0; k < r.n_ext; k++)
		before += r.ext[k].acked == CL_BEFORE;
	itest_note("%zu extents: %zu acknowledged before the command, %u sent while it ran (%u "
		   "acknowledged then), %u sent after it returned", r.n_ext, before, r.sent_during,
		   r.acked_during, r.sent_after);
	CHECK(before >= CL_START_AFTER, "only %zu writes acknowledged before the command", before);
	CHECK(r.sent_after > 0, "no write was sent after the command returned: the pass of %zu "
	      "extents was over (use more blocks)", r.n_ext);
	cl_write_state(argv[0], &r, argv[3], false);
	snprintf(origin, sizeof(origin), "%s.origin", argv[0]);
	cl_write_state(origin, &r, argv[2], true);
	itest_close(&r.c);
	free(r.ext);
	free(r.data);
	itest_note("ok: states in %s and %s", argv[0], origin);
	return 0;
}

/* ------------------------------------------------------- write-protected */

static void cl_expect_wp(struct iscsi_context *iscsi, struct scsi_task *t, const char *what)
{
	CHECK(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
	      t->sense.key == SCSI_SENSE_DATA_PROTECTION && t->sense.ascq == 0x2700,
	      "%s: expected CHECK CONDITION, DATA PROTECT, WRITE PROTECTED (07/27/00), got %s",
	      what, itest_task_str(iscsi, t));
	scsi_free_scsi_task(t);
}

int itest_write_protected(int argc, char **argv)
{
	struct itest_conn c;
	struct itest_geom g;
	struct scsi_task *t;
	unsigned char *buf;

	CHECK(argc == 1, "usage: write-protected URL");
	itest_open(&c, argv[0], ITEST_R2T_DEFAULT);
	itest_geometry(&c, &g);
	buf = calloc(8, g.bs);
	CHECK(buf, "out of memory");
	cl_expect_wp(c.iscsi, iscsi_write10_sync(c.iscsi, c.lun, 0, buf, 8 * g.bs, g.bs, 0, 0, 0, 0, 0),
		     "WRITE(10)");
	cl_expect_wp(c.iscsi, iscsi_write16_sync(c.iscsi, c.lun, 8, buf, 8 * g.bs, g.bs, 0, 0, 0, 0, 0),
		     "WRITE(16)");
	/* SBC-4 6.5.1: the WP bit of the device-specific parameter */
	t = iscsi_modesense6_sync(c.iscsi, c.lun, 1, SCSI_MODESENSE_PC_CURRENT,
				  SCSI_MODEPAGE_RETURN_ALL_PAGES, 0, 255);
	itest_expect_good(c.iscsi, t, "MODE SENSE(6)");
	CHECK(t->datain.size >= 4 && (t->datain.data[2] & 0x80), "MODE SENSE(6): WP is not set "
	      "(device-specific parameter 0x%02x)", t->datain.size >= 4 ? t->datain.data[2] : 0);
	scsi_free_scsi_task(t);
	t = iscsi_modesense10_sync(c.iscsi, c.lun, 0, 1, SCSI_MODESENSE_PC_CURRENT,
				   SCSI_MODEPAGE_RETURN_ALL_PAGES, 0, 255);
	itest_expect_good(c.iscsi, t, "MODE SENSE(10)");
	CHECK(t->datain.size >= 8 && (t->datain.data[3] & 0x80), "MODE SENSE(10): WP is not set");
	scsi_free_scsi_task(t);
	t = iscsi_read16_sync(c.iscsi, c.lun, 0, 8 * g.bs, g.bs, 0, 0, 0, 0, 0);
	itest_expect_good(c.iscsi, t, "READ(16) of a write-protected LUN");
	scsi_free_scsi_task(t);
	free(buf);
	itest_close(&c);
	itest_note("ok: WRITE refused with 07/27/00, WP set, READ works");
	return 0;
}

/* ------------------------------------------------------------- ua-after */

int itest_ua_after(int argc, char **argv)
{
	unsigned want[8], n_want = 0, seen = 0;
	struct itest_conn c;
	char *list, *tok, *save = NULL;
	pid_t pid;
	int st, e;

	CHECK(argc >= 3, "usage: ua-after URL ASCQ[,ASCQ...] CMD [ARG...]");
	list = strdup(argv[1]);
	CHECK(list, "out of memory");
	for (tok = strtok_r(list, ",", &save); tok && n_want < 8; tok = strtok_r(NULL, ",", &save))
		want[n_want++] = (unsigned)strtoul(tok, NULL, 16);
	free(list);
	itest_open(&c, argv[0], ITEST_R2T_DEFAULT);
	e = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
	CHECK(e == 0, "cannot start %s: %s", argv[2], strerror(e));
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the command failed (status 0x%x)", st);
	for (unsigned i = 0; i <= n_want; i++) {
		struct scsi_task *t = iscsi_testunitready_sync(c.iscsi, c.lun);
		unsigned k;

		if (i == n_want) {
			itest_expect_good(c.iscsi, t, "TEST UNIT READY after the unit attentions");
			scsi_free_scsi_task(t);
			break;
		}
		CHECK(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
		      t->sense.key == SCSI_SENSE_UNIT_ATTENTION, "TEST UNIT READY %u: expected a "
		      "UNIT ATTENTION, got %s", i + 1, itest_task_str(c.iscsi, t));
		for (k = 0; k < n_want && (want[k] != (unsigned)t->sense.ascq || (seen & (1u << k))); k++)
			;
		CHECK(k < n_want, "unexpected unit attention %04x (%s)", t->sense.ascq,
		      scsi_sense_ascq_str(t->sense.ascq));
		seen |= 1u << k;
		itest_note("unit attention %04x %s", t->sense.ascq, scsi_sense_ascq_str(t->sense.ascq));
		scsi_free_scsi_task(t);
	}
	itest_close(&c);
	itest_note("ok: %u unit attention(s) as expected, then GOOD", n_want);
	return 0;
}
