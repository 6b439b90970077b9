/*
 * itest durability subcommands (see tests/durability.sh):
 *
 *   write-zeros URL LBA NBLOCKS
 *       write zeros over NBLOCKS blocks from LBA with WRITE(16).
 *
 *   durable-write DAEMON-PID STATE NBLOCKS URL[,wce-off|,atomic|,cache]...
 *       on each LUN: fill blocks 0..NBLOCKS-1 with an "old" pattern and
 *       SYNCHRONIZE CACHE; then write over the same blocks, pass after
 *       pass, until the kill: each pass writes a pattern of its own (its
 *       seed) in shuffled extents of 1..64 blocks, each block once, 32
 *       commands in flight per LUN, WRITE(10) and WRITE(16) mixed; the
 *       next pass starts when every write of the last one is acknowledged,
 *       so a block never has two writes in flight. A plain URL gets FUA=1
 *       writes; ",wce-off" first turns the Caching page's WCE off with
 *       MODE SELECT(10) and then writes with FUA=0; ",cache" leaves the
 *       write cache on and writes with FUA=0 (nothing asks for more than
 *       the kernel's page cache, which a process kill does not lose: the
 *       daemon's inline page-cache writes, backstore/bs_file.c); ",atomic" sends WRITE
 *       ATOMIC(16) with FUA=1 instead, in extents the LUN's atomic limits
 *       allow (multiples of ATOMIC TRANSFER LENGTH GRANULARITY, aligned to
 *       it, of any length up to the largest power of two within MAXIMUM
 *       ATOMIC TRANSFER LENGTH and 32 granules, none crossing a multiple
 *       of that size). Once every LUN has 64 writes acknowledged, one of
 *       them in its current pass, and commands in flight, DAEMON-PID is
 *       sent SIGKILL; responses still on their way are collected until the
 *       connections drop. The kill is set by progress (acknowledgements),
 *       never by time: however fast or slow each LUN is, the writes go on
 *       until the condition holds. With ITEST_DURABLE_PASSES=N in the
 *       environment the kill also waits until every LUN is in its Nth pass
 *       (default 1), so that the data of a whole earlier pass is checked
 *       too. STATE then lists, per LUN, the seed of the pattern before the
 *       current pass (the old pattern, or the last pass's, every write of
 *       which was acknowledged), the current pass's seed, and every extent
 *       of the current pass that was sent, acknowledged (GOOD) or not.
 *
 *   durable-check STATE
 *       after the daemon was restarted on the same files: read every block
 *       back. A block acknowledged in the current pass must hold its
 *       pattern, a block of an extent sent but not acknowledged the
 *       pattern before or the current one (never anything else), a block
 *       not yet written in the current pass the pattern before it (the
 *       old one, or the one the last pass wrote and had acknowledged). On
 *       an ",atomic" LUN an extent in flight at the kill must hold the
 *       pattern before or the new one as a whole: a mix is a torn atomic
 *       write.
 *
 * DESIGN: single-threaded; all LUNs' sessions are driven from one poll(2)
 * loop with libiscsi's asynchronous API, so "in flight at the kill" is
 * exact: the kill is sent between two iterations of that loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "tests/itest.h"

#define DUR_MAX_LUNS 8
#define DUR_MAX_EXTENT 64           /* blocks per write */
#define DUR_KILL_AFTER 64           /* acknowledged writes per LUN before the kill */
#define DUR_CHUNK_BYTES (1u << 20)  /* prep writes and check reads */

enum dur_state { DUR_UNSENT = 0, DUR_SENT, DUR_ACKED };

struct dur_extent {
	uint64_t lba;
	uint32_t nblocks;
	enum dur_state state;
};

struct dur_lun {
	struct itest_conn c;
	char url[1024];
	bool wce_off;
	bool cache;               /* ",cache": WCE on, FUA=0 */
	bool atomic;                  /* WRITE ATOMIC(16) */
	struct itest_geom g;
	uint64_t nblocks;             /* region: blocks 0..nblocks-1 */
	uint64_t seed_old, seed_new;  /* the pattern before this pass, this pass's */
	unsigned pass;                /* passes over the region begun, from 1 */
	unsigned char *data;          /* the region's pattern of this pass */
	struct dur_extent *ext;
	size_t next, next_max, n_ext;  /* next extent to send; how many extents */
	int inflight, inflight_at_kill;
	uint64_t acked, acked_blocks, acked_after_kill;  /* over all passes */
	uint64_t pass_acked;          /* writes acknowledged in this pass */
	bool dead;                    /* the connection is gone */
};

static bool dur_killed;
static unsigned dur_min_pass = 1;   /* ITEST_DURABLE_PASSES */

/* ------------------------------------------------------------ write-zeros */

static uint32_t dur_chunk_blocks(const struct itest_geom *g)
{
	uint32_t n = DUR_CHUNK_BYTES / g->bs;

	if (g->max_xfer_blocks && n > g->max_xfer_blocks)
		n = g->max_xfer_blocks;
	return n;
}

int itest_write_zeros(int argc, char **argv)
{
	struct itest_conn c;
	struct itest_geom g;
	uint64_t lba, n, end;
	uint32_t chunk;
	unsigned char *zero;

	CHECK(argc == 3, "usage: write-zeros URL LBA NBLOCKS");
	itest_open(&c, argv[0], ITEST_R2T_DEFAULT);
	itest_geometry(&c, &g);
	lba = strtoull(argv[1], NULL, 0);
	n = strtoull(argv[2], NULL, 0);
	CHECK(lba < g.nblocks && n <= g.nblocks - lba, "LBA %" PRIu64 " + %" PRIu64
	      " blocks is beyond the LUN's %" PRIu64 " blocks", lba, n, g.nblocks);
	chunk = dur_chunk_blocks(&g);
	zero = calloc(chunk, g.bs);
	CHECK(zero, "out of memory");
	for (end = lba + n; lba < end;) {
		uint32_t k = end - lba < chunk ? (uint32_t)(end - lba) : chunk;
		struct scsi_task *t = iscsi_write16_sync(c.iscsi, c.lun, lba, zero, k * g.bs, g.bs,
						       0, 0, 0, 0, 0);

		itest_expect_good(c.iscsi, t, "WRITE(16) of zeros");
		scsi_free_scsi_task(t);
		lba += k;
	}
	free(zero);
	itest_close(&c);
	itest_note("ok: %" PRIu64 " blocks zeroed", n);
	return 0;
}

/* ----------------------------------------------------------- preparation */

/* SBC-4 6.5.5 Caching mode page: turn WCE off and read it back. */
static void dur_wce_off(struct dur_lun *l)
{
	struct scsi_task *t;
	struct scsi_mode_sense *ms;
	struct scsi_mode_page *mp;

	for (int pass = 0; pass < 2; pass++) {
		t = iscsi_modesense10_sync(l->c.iscsi, l->c.lun, 0, 1, SCSI_MODESENSE_PC_CURRENT,
					   SCSI_MODEPAGE_CACHING, 0, 255);
		itest_expect_good(l->c.iscsi, t, "MODE SENSE(10) Caching page");
		ms = scsi_datain_unmarshall(t);
		CHECK(ms, "cannot decode MODE SENSE(10) data");
		mp = scsi_modesense_get_page(ms, SCSI_MODEPAGE_CACHING, 0);
		CHECK(mp, "MODE SENSE(10) returned no Caching page");
		if (pass == 1) {
			CHECK(mp->caching.wce == 0, "WCE still set after MODE SELECT cleared it");
			scsi_free_scsi_task(t);
			return;
		}
		CHECK(mp->caching.wce == 1, "WCE is already off: the test wants a LUN that "
		      "starts with its write cache on");
		mp->caching.wce = 0;
		mp->ps = 0;    /* SPC-4 7.5.7: PS is reserved in MODE SELECT */
		{
			struct scsi_task *s = iscsi_modeselect10_sync(l->c.iscsi, l->c.lun, 1, 0, mp);

			itest_expect_good(l->c.iscsi, s, "MODE SELECT(10) with WCE=0");
			scsi_free_scsi_task(s);
		}
		scsi_free_scsi_task(t);
	}
}

/* The old pattern over the region, made durable before the test starts. */
static void dur_prepare(struct dur_lun *l)
{
	uint32_t chunk = dur_chunk_blocks(&l->g);
	unsigned char *buf = malloc((size_t)chunk * l->g.bs);
	struct scsi_task *t;

	CHECK(buf, "out of memory");
	for (uint64_t lba = 0; lba < l->nblocks;) {
		uint32_t k = l->nblocks - lba < chunk ? (uint32_t)(l->nblocks - lba) : chunk;

		itest_fill(buf, lba, k, l->g.bs, l->seed_old);
		t = iscsi_write16_sync(l->c.iscsi, l->c.lun, lba, buf, k * l->g.bs, l->g.bs,
				       0, 0, 0, 0, 0);
		itest_expect_good(l->c.iscsi, t, "WRITE(16) of the old pattern");
		scsi_free_scsi_task(t);
		lba += k;
	}
	free(buf);
	t = iscsi_synchronizecache16_sync(l->c.iscsi, l->c.lun, 0, 0, 0, 0);
	itest_expect_good(l->c.iscsi, t, "SYNCHRONIZE CACHE(16)");
	scsi_free_scsi_task(t);
}

/* The unit of an atomic LUN's plan: a power of two number of blocks, at
 * most MAXIMUM ATOMIC TRANSFER LENGTH and 32 granules; extents never cross
 * a multiple of it. */
static uint32_t dur_atomic_chunk(const struct dur_lun *l)
{
	uint32_t c = l->g.atomic_gran * 32;

	while (c > l->g.atomic_max)
		c >>= 1;
	return c;
}

/* A new pass: extents covering the region, in a shuffled order (1..64
 * blocks; on an atomic LUN multiples of the granularity within one
 * chunk), and the pass's pattern. Called when nothing is in flight: the
 * pattern buffer is free to be rewritten. */
static void dur_plan(struct dur_lun *l)
{
	uint32_t maxe = DUR_MAX_EXTENT, gran = 1, chunk = 0;
	size_t cap = (size_t)l->nblocks;

	if (l->g.max_xfer_blocks && maxe > l->g.max_xfer_blocks)
		maxe = l->g.max_xfer_blocks;
	if (l->atomic) {
		gran = l->g.atomic_gran;
		chunk = dur_atomic_chunk(l);
		maxe = chunk / gran;
	}
	if (!l->ext) {
		l->ext = calloc(cap, sizeof(*l->ext));
		l->data = malloc((size_t)l->nblocks * l->g.bs);
		CHECK(l->ext && l->data, "out of memory");
	}
	if (l->pass > 0) {
		/* every write of the last pass was acknowledged: its
		 * pattern is now the one the region holds */
		l->seed_old = l->seed_new;
		do
			l->seed_new = itest_rand();
		while (l->seed_new == l->seed_old);
	}
	l->pass++;
	l->pass_acked = 0;
	l->n_ext = 0;
	for (uint64_t lba = 0; lba < l->nblocks;) {
		uint32_t n = (1 + (uint32_t)(itest_rand() % maxe)) * gran;
		uint64_t end = chunk ? (lba / chunk + 1) * chunk : l->nblocks;

		if (end > l->nblocks)
			end = l->nblocks;
		if (n > end - lba)
			n = (uint32_t)(end - lba);
		l->ext[l->n_ext++] = (struct dur_extent){ .lba = lba, .nblocks = n };
		lba += n;
	}
	for (size_t i = l->n_ext; i > 1; i--) {
		size_t j = (size_t)(itest_rand() % i);
		struct dur_extent x = l->ext[i - 1];

		l->ext[i - 1] = l->ext[j];
		l->ext[j] = x;
	}
	l->next = 0;
	l->next_max = l->n_ext;
	itest_fill(l->data, 0, (uint32_t)l->nblocks, l->g.bs, l->seed_new);
}

/* ----------------------------------------------------- writes in flight */

struct dur_tag {
	struct dur_lun *l;
	struct dur_extent *e;
};

static void dur_issue(struct dur_lun *l);

static void dur_write_cb(struct iscsi_context *iscsi, int status, void *data, void *priv)
{
	struct dur_tag *tag = priv;
	struct dur_lun *l = tag->l;
	struct scsi_task *t = data;

	l->inflight--;
	if (status == SCSI_STATUS_GOOD) {
		tag->e->state = DUR_ACKED;
		l->acked++;
		l->pass_acked++;
		l->acked_blocks += tag->e->nblocks;
		if (dur_killed)
			l->acked_after_kill++;
	} else if (!dur_killed) {
		itest_fail("%s: WRITE of %u blocks at LBA %" PRIu64 " failed before the kill: %s",
			   l->url, tag->e->nblocks, tag->e->lba, itest_task_str(iscsi, t));
	}
	if (t)
		scsi_free_scsi_task(t);
	free(tag);
	if (dur_killed)
		return;
	/* the pass is over (every write acknowledged): begin the next one */
	if (l->next == l->next_max && l->inflight == 0)
		dur_plan(l);
	dur_issue(l);
}

static void dur_issue(struct dur_lun *l)
{
	while (l->inflight < ITEST_QD && l->next < l->next_max) {
		struct dur_extent *e = &l->ext[l->next++];
		struct dur_tag *tag = malloc(sizeof(*tag));
		unsigned char *p = l->data + (size_t)e->lba * l->g.bs;
		int fua = l->wce_off || l->cache ? 0 : 1;
		struct scsi_task *t;

		CHECK(tag, "out of memory");
		tag->l = l;
		tag->e = e;
		e->state = DUR_SENT;
		if (l->atomic)
			t = iscsi_writeatomic16_task(l->c.iscsi, l->c.lun, e->lba, p,
						     e->nblocks * l->g.bs, l->g.bs, 0, 0, 1, 0,
						     dur_write_cb, tag);
		else if (itest_rand() & 1)
			t = iscsi_write16_task(l->c.iscsi, l->c.lun, e->lba, p, e->nblocks * l->g.bs,
					       l->g.bs, 0, 0, fua, 0, 0, dur_write_cb, tag);
		else
			t = iscsi_write10_task(l->c.iscsi, l->c.lun, (uint32_t)e->lba, p,
					       e->nblocks * l->g.bs, l->g.bs, 0, 0, fua, 0, 0,
					       dur_write_cb, tag);
		CHECK(t, "%s: cannot queue a WRITE: %s", l->url, iscsi_get_error(l->c.iscsi));
		l->inflight++;
	}
}

static bool dur_ready_to_kill(struct dur_lun *ls, int n)
{
	for (int i = 0; i < n; i++)
		if (ls[i].acked < DUR_KILL_AFTER || ls[i].pass < dur_min_pass ||
		    ls[i].pass_acked == 0 || ls[i].inflight == 0)
			return false;
	return true;
}

static void dur_write_state(const char *path, struct dur_lun *ls, int n)
{
	FILE *f = fopen(path, "w");

	CHECK(f, "cannot create %s: %s", path, strerror(errno));
	for (int i = 0; i < n; i++) {
		struct dur_lun *l = &ls[i];

		fprintf(f, "lun %s %u %" PRIu64 " 0x%" PRIx64 " 0x%" PRIx64 " pass=%u%s\n", l->url,
			l->g.bs, l->nblocks, l->seed_old, l->seed_new, l->pass, l->atomic ? " atomic" : "");
		for (size_t k = 0; k < l->n_ext; k++)
			if (l->ext[k].state != DUR_UNSENT)
				fprintf(f, "ext %" PRIu64 " %u %s\n", l->ext[k].lba, l->ext[k].nblocks,
					l->ext[k].state == DUR_ACKED ? "acked" : "sent");
	}
	CHECK(fflush(f) == 0 && fsync(fileno(f)) == 0 && fclose(f) == 0, "cannot write %s: %s",
	      path, strerror(errno));
}

int itest_durable_write(int argc, char **argv)
{
	struct dur_lun ls[DUR_MAX_LUNS];
	pid_t pid;
	uint64_t want;
	int n;
	double t0, kill_at = 0;

	CHECK(argc >= 4 && argc - 3 <= DUR_MAX_LUNS,
	      "usage: durable-write DAEMON-PID STATE NBLOCKS URL[,wce-off|,atomic|,cache]... "
	      "(up to %d URLs)",
	      DUR_MAX_LUNS);
	pid = (pid_t)strtol(argv[0], NULL, 10);
	CHECK(pid > 1, "bad daemon pid %s", argv[0]);
	want = strtoull(argv[2], NULL, 0);
	CHECK(want >= 16 * DUR_MAX_EXTENT, "NBLOCKS must be at least %d", 16 * DUR_MAX_EXTENT);
	n = argc - 3;
	if (getenv("ITEST_DURABLE_PASSES")) {
		char *end;
		unsigned long v = strtoul(getenv("ITEST_DURABLE_PASSES"), &end, 10);

		CHECK(*end == '\0' && v >= 1 && v <= 1000, "ITEST_DURABLE_PASSES must be 1..1000");
		dur_min_pass = (unsigned)v;
	}
	memset(ls, 0, sizeof(ls));
	for (int i = 0; i < n; i++) {
		struct dur_lun *l = &ls[i];
		char *comma;

		snprintf(l->url, sizeof(l->url), "%s", argv[3 + i]);
		comma = strchr(l->url, ',');
		if (comma) {
			CHECK(strcmp(comma, ",wce-off") == 0 || strcmp(comma, ",atomic") == 0 ||
			      strcmp(comma, ",cache") == 0, "unknown URL suffix %s", comma);
			l->wce_off = strcmp(comma, ",wce-off") == 0;
			l->cache = strcmp(comma, ",cache") == 0;
			l->atomic = strcmp(comma, ",atomic") == 0;
			*comma = '\0';
		}
		/* every other session sends its data by R2T only */
		itest_open(&l->c, l->url, (i & 1) ? ITEST_R2T_ONLY : ITEST_R2T_DEFAULT);
		itest_geometry(&l->c, &l->g);
		l->nblocks = want < l->g.nblocks ? want : l->g.nblocks;
		if (l->atomic) {
			CHECK(l->g.atomic_max && l->g.atomic_gran, "%s: the LUN offers no atomic "
			      "writes (MAXIMUM ATOMIC TRANSFER LENGTH 0)", l->url);
			l->nblocks -= l->nblocks % dur_atomic_chunk(l);
		}
		l->seed_old = itest_rand();
		l->seed_new = itest_rand();
		if (l->wce_off)
			dur_wce_off(l);
		dur_prepare(l);
		dur_plan(l);
		itest_note("%s: %" PRIu64 " blocks of %u bytes, %zu extents, %s", l->url, l->nblocks,
			   l->g.bs, l->n_ext, l->wce_off ? "WCE off, FUA=0" :
			   l->cache ? "WCE on, FUA=0" :
			   l->atomic ? "WRITE ATOMIC(16), FUA=1" : "FUA=1");
	}

	t0 = itest_now();
	for (int i = 0; i < n; i++)
		dur_issue(&ls[i]);
	for (;;) {
		struct pollfd pfd[DUR_MAX_LUNS];
		int alive = 0;

		if (!dur_killed && dur_ready_to_kill(ls, n)) {
			CHECK(kill(pid, SIGKILL) == 0, "kill -9 %d: %s", (int)pid, strerror(errno));
			dur_killed = true;
			kill_at = itest_now();
			for (int i = 0; i < n; i++)
				ls[i].inflight_at_kill = ls[i].inflight;
		}
		for (int i = 0; i < n; i++) {
			pfd[i].fd = ls[i].dead ? -1 : iscsi_get_fd(ls[i].c.iscsi);
			pfd[i].events = ls[i].dead ? 0 : (short)iscsi_which_events(ls[i].c.iscsi);
			pfd[i].revents = 0;
			alive += !ls[i].dead;
		}
		if (!alive)
			break;
		if (poll(pfd, (nfds_t)n, 200) < 0 && errno != EINTR)
			itest_fail("poll: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			if (ls[i].dead)
				continue;
			if (iscsi_service(ls[i].c.iscsi, pfd[i].revents) < 0) {
				CHECK(dur_killed, "%s: the session failed before the kill: %s", ls[i].url,
				      iscsi_get_error(ls[i].c.iscsi));
				ls[i].dead = true;
			} else if (dur_killed && (pfd[i].revents & (POLLHUP | POLLERR))) {
				ls[i].dead = true;
			}
			if (!dur_killed && ls[i].inflight == 0)
				itest_fail("%s: no write in flight before the kill (pass %u, %zu of %zu "
					   "extents sent)", ls[i].url, ls[i].pass, ls[i].next, ls[i].n_ext);
		}
		if (!dur_killed && itest_now() - t0 > ITEST_TIMEOUT_S)
			itest_fail("timed out after %d s before the kill condition", ITEST_TIMEOUT_S);
		if (dur_killed && itest_now() - kill_at > 30)
			itest_fail("the connections were still up 30 s after kill -9 of the daemon");
	}

	dur_write_state(argv[1], ls, n);
	for (int i = 0; i < n; i++) {
		struct dur_lun *l = &ls[i];

		/* the connection is gone: only the context is left to free */
		iscsi_destroy_url(l->c.url);
		iscsi_destroy_context(l->c.iscsi);
		itest_note("%s: %" PRIu64 " writes (%" PRIu64 " blocks) acknowledged in %u pass%s, "
			   "%" PRIu64 " in the last; %d in flight at the kill, %" PRIu64 " of them "
			   "acknowledged after it", l->url, l->acked, l->acked_blocks, l->pass,
			   l->pass == 1 ? "" : "es", l->pass_acked, l->inflight_at_kill,
			   l->acked_after_kill);
		CHECK(l->inflight_at_kill > 0, "%s: no write was in flight at the kill", l->url);
		free(l->ext);
		free(l->data);
	}
	itest_note("ok: daemon %d killed with writes in flight; state in %s", (int)pid, argv[1]);
	return 0;
}

/* ------------------------------------------------------------------ check */

struct dur_check {
	char url[1024];
	uint32_t bs;
	uint64_t nblocks, seed_old, seed_new;
	unsigned pass;
	uint8_t *state;               /* per block: enum dur_state */
	bool atomic;                  /* extents written with WRITE ATOMIC */
	struct dur_extent *sent;      /* atomic: the extents in flight at the kill */
	size_t n_sent;
};

static int dur_read_state(const char *path, struct dur_check *cs)
{
	FILE *f = fopen(path, "r");
	char line[2048];
	int n = 0, lineno = 0;

	CHECK(f, "cannot open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		struct dur_check *c = n ? &cs[n - 1] : NULL;
		uint64_t lba;
		uint32_t k;
		char what[16];

		lineno++;
		if (strncmp(line, "lun ", 4) == 0) {
			char flag[2][16] = { "", "" };

			CHECK(n < DUR_MAX_LUNS, "%s:%d: too many LUNs", path, lineno);
			c = &cs[n++];
			CHECK(sscanf(line, "lun %1023s %u %" SCNu64 " %" SCNx64 " %" SCNx64 " %15s %15s",
				     c->url, &c->bs, &c->nblocks, &c->seed_old, &c->seed_new, flag[0],
				     flag[1]) >= 5, "%s:%d: bad line", path, lineno);
			c->pass = 1;
			for (int fi = 0; fi < 2; fi++) {
				if (strcmp(flag[fi], "atomic") == 0)
					c->atomic = true;
				else if (strncmp(flag[fi], "pass=", 5) == 0)
					c->pass = (unsigned)strtoul(flag[fi] + 5, NULL, 10);
				else
					CHECK(!flag[fi][0], "%s:%d: unknown flag %s", path, lineno, flag[fi]);
			}
			c->state = calloc((size_t)c->nblocks, 1);
			c->sent = calloc((size_t)c->nblocks, sizeof(*c->sent));
			CHECK(c->state && c->sent, "out of memory");
		} else if (sscanf(line, "ext %" SCNu64 " %u %15s", &lba, &k, what) == 3) {
			CHECK(c && lba + k <= c->nblocks, "%s:%d: bad extent", path, lineno);
			for (uint32_t b = 0; b < k; b++)
				c->state[lba + b] = strcmp(what, "acked") == 0 ? DUR_ACKED : DUR_SENT;
			if (strcmp(what, "acked") != 0 && c->n_sent < c->nblocks)
				c->sent[c->n_sent++] = (struct dur_extent){ .lba = lba, .nblocks = k };
		} else {
			itest_fail("%s:%d: cannot parse '%s'", path, lineno, line);
		}
	}
	fclose(f);
	CHECK(n > 0, "%s lists no LUN", path);
	return n;
}

static void dur_describe(const unsigned char *blk, char *out, size_t len)
{
	bool zero = true;

	for (size_t i = 0; i < 16; i++)
		zero = zero && blk[i] == 0;
	snprintf(out, len, zero ? "zeros at its start" : "tag lba=%" PRIu64 " seed=0x%" PRIx64,
		 scsi_get_uint64(blk), scsi_get_uint64(blk + 8));
}

int itest_durable_check(int argc, char **argv)
{
	struct dur_check cs[DUR_MAX_LUNS];
	int n;

	CHECK(argc == 1, "usage: durable-check STATE");
	memset(cs, 0, sizeof(cs));
	n = dur_read_state(argv[0], cs);
	for (int i = 0; i < n; i++) {
		struct dur_check *d = &cs[i];
		struct itest_conn c;
		struct itest_geom g;
		uint32_t chunk;
		unsigned char *old, *neu;
		uint64_t cnt[3][2] = { { 0 } };   /* [state][holds new] */
		uint8_t *is_new_at = calloc((size_t)d->nblocks, 1);
		size_t whole_new = 0;

		itest_open(&c, d->url, ITEST_R2T_DEFAULT);
		itest_geometry(&c, &g);
		CHECK(g.bs == d->bs && g.nblocks >= d->nblocks, "%s: geometry changed across the "
		      "restart (%u-byte blocks, %" PRIu64 " of them)", d->url, g.bs, g.nblocks);
		chunk = dur_chunk_blocks(&g);
		old = malloc((size_t)chunk * g.bs);
		neu = malloc((size_t)chunk * g.bs);
		CHECK(old && neu && is_new_at, "out of memory");
		for (uint64_t lba = 0; lba < d->nblocks;) {
			uint32_t k = d->nblocks - lba < chunk ? (uint32_t)(d->nblocks - lba) : chunk;
			struct scsi_task *t = iscsi_read16_sync(c.iscsi, c.lun, lba, k * g.bs, g.bs,
							      0, 0, 0, 0, 0);

			itest_expect_good(c.iscsi, t, "READ(16) after the restart");
			CHECK(t->datain.size == (int)(k * g.bs), "READ(16) returned %d bytes, expected %u",
			      t->datain.size, k * g.bs);
			itest_fill(old, lba, k, g.bs, d->seed_old);
			itest_fill(neu, lba, k, g.bs, d->seed_new);
			for (uint32_t b = 0; b < k; b++) {
				const unsigned char *got = t->datain.data + (size_t)b * g.bs;
				bool is_new = memcmp(got, neu + (size_t)b * g.bs, g.bs) == 0;
				bool is_old = memcmp(got, old + (size_t)b * g.bs, g.bs) == 0;
				uint8_t st = d->state[lba + b];
				char desc[128];

				dur_describe(got, desc, sizeof(desc));
				if (st == DUR_ACKED && !is_new)
					itest_fail("%s: LBA %" PRIu64 " was acknowledged GOOD (pass %u) but "
						   "lost its data: it holds %s%s", d->url, lba + b, d->pass,
						   is_old ? "the pattern before" : "neither pattern, ",
						   is_old ? "" : desc);
				if (st == DUR_SENT && !is_new && !is_old)
					itest_fail("%s: LBA %" PRIu64 " (write in flight at the kill) holds "
						   "garbage: neither the pattern before nor the new one, %s",
						   d->url, lba + b, desc);
				if (st == DUR_UNSENT && !is_old)
					itest_fail("%s: LBA %" PRIu64 " was not written in pass %u but no "
						   "longer holds the pattern %s: %s", d->url, lba + b, d->pass,
						   d->pass > 1 ? "of the pass before, every write of which "
						   "was acknowledged" : "written before the test",
						   is_new ? "it holds the new one" : desc);
				cnt[st][is_new]++;
				is_new_at[lba + b] = is_new;
			}
			scsi_free_scsi_task(t);
			lba += k;
		}
		free(old);
		free(neu);
		itest_close(&c);
		/* an atomic write in flight at the kill: all old or all new */
		for (size_t e = 0; d->atomic && e < d->n_sent; e++) {
			const struct dur_extent *x = &d->sent[e];
			uint32_t nnew = 0;

			for (uint32_t b = 0; b < x->nblocks; b++)
				nnew += is_new_at[x->lba + b];
			if (nnew && nnew != x->nblocks)
				itest_fail("%s: the WRITE ATOMIC of %u blocks at LBA %" PRIu64 " in "
					   "flight at the kill is torn: %u blocks new, %u as before",
					   d->url, x->nblocks, x->lba, nnew, x->nblocks - nnew);
			whole_new += nnew == x->nblocks;
		}
		if (d->atomic)
			itest_note("%s: %zu atomic writes in flight at the kill: %zu wholly new, "
				   "%zu wholly as before, none torn", d->url, d->n_sent, whole_new,
				   d->n_sent - whole_new);
		free(is_new_at);
		free(d->sent);
		itest_note("%s, pass %u: %" PRIu64 " acknowledged blocks hold the new data; of %"
			   PRIu64 " blocks in flight at the kill %" PRIu64 " hold the new data and %"
			   PRIu64 " the data before; %" PRIu64 " blocks not written in this pass hold "
			   "the data before it", d->url, d->pass, cnt[DUR_ACKED][1],
			   cnt[DUR_SENT][0] + cnt[DUR_SENT][1], cnt[DUR_SENT][1], cnt[DUR_SENT][0],
			   cnt[DUR_UNSENT][0]);
		CHECK(cnt[DUR_ACKED][1] > 0, "%s: no acknowledged block to check", d->url);
		free(d->state);
	}
	itest_note("ok: every acknowledged block survived kill -9 and restart");
	return 0;
}
