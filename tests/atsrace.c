/*
 * atsrace: VAAI integration client for targetd (libiscsi), one subcommand
 * per check; exits 0 when everything held, 1 with a message otherwise.
 *
 *   atsrace race URL SESSIONS ACQUISITIONS
 *       SESSIONS sessions (threads) use COMPARE AND WRITE on one block as a
 *       lock (free = zeroes, held = the owner's block) and, while holding
 *       it, increment a counter in another block with READ + WRITE. After
 *       ACQUISITIONS acquisitions in total the counter must have grown by
 *       exactly that (no lost update), every COMPARE AND WRITE must have
 *       ended GOOD or MISCOMPARE (with the offset of the first differing
 *       byte), and every release must have found the lock still ours.
 *       URL may be a comma-separated list (gateways exporting one LUN): the
 *       sessions take its URLs in turn.
 *   atsrace miscompare URL LBA
 *       COMPARE AND WRITE at LBA whose compare data differs from the block
 *       at one byte (several positions): each must give MISCOMPARE with
 *       that byte's offset in INFORMATION and leave the block unchanged;
 *       then a matching one writes it.
 *   atsrace abort URL ROUNDS
 *       COMPARE AND WRITE commands aborted (ABORT TASK) right after being
 *       sent: afterwards the block holds either the old or the new image,
 *       whole, and a COMPARE AND WRITE with the right image succeeds (no
 *       false miscompare after an abort).
 *   atsrace xcopy URL_A URL_B URL_OTHER
 *       EXTENDED COPY with several segments within LUN A and from A to B
 *       (another LUN of the same target), data verified; then one naming
 *       URL_OTHER's LUN (another target) must be refused with COPY ABORTED
 *       and copy nothing.
 *   atsrace fill URL LBA BLOCKS          write a pattern (1 MiB writes)
 *   atsrace unmap URL LBA BLOCKS         UNMAP within the VPD B0 limits
 *   atsrace wsunmap URL LBA BLOCKS       WRITE SAME(16) UNMAP=1, zero block
 *   atsrace lbastatus URL LBA mapped|deallocated BLOCKS
 *       GET LBA STATUS from LBA must report BLOCKS blocks with that status
 *   atsrace copy URL_A URL_B MIB         EXTENDED COPY of MIB MiB, A to B
 *   atsrace writeperf URL QD SECONDS     4 KiB random WRITE IOPS (a measurement)
 *   atsrace bench URL_A URL_B MIB
 *       not a test: times EXTENDED COPY of MIB MiB from A to B against a
 *       host-side copy (READ + WRITE), and WRITE SAME zeroing against
 *       writing zero buffers, with the bytes each sends over the network.
 *
 * DESIGN: "race" runs one thread per session, each with its own libiscsi
 * context (libiscsi contexts are not shared between threads); the threads
 * share only atomic counters. Every other subcommand is single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define AR_INITIATOR "iqn.2026-11.org.targetd:atsrace"
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#define AR_LOCK_LBA 64
#define AR_COUNTER_LBA 128

static void ar_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void ar_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "atsrace: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double ar_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct ar_conn {
	struct iscsi_context *ctx;
	int lun;
	uint32_t bs;
	uint64_t nblocks;
};

static void ar_connect(struct ar_conn *c, const char *url)
{
	struct iscsi_url *u;
	struct scsi_task *t;
	int i;

	c->ctx = iscsi_create_context(AR_INITIATOR);
	if (!c->ctx)
		ar_fail("iscsi_create_context");
	u = iscsi_parse_full_url(c->ctx, url);
	if (!u)
		ar_fail("bad URL %s: %s", url, iscsi_get_error(c->ctx));
	iscsi_set_session_type(c->ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(c->ctx, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	iscsi_set_targetname(c->ctx, u->target);
	if (iscsi_full_connect_sync(c->ctx, u->portal, u->lun) != 0)
		ar_fail("login to %s: %s", url, iscsi_get_error(c->ctx));
	c->lun = u->lun;
	iscsi_destroy_url(u);
	/* the first commands report POWER ON etc.: clear them */
	for (i = 0; i < 8; i++) {
		t = iscsi_testunitready_sync(c->ctx, c->lun);
		if (t && t->status == SCSI_STATUS_GOOD) {
			scsi_free_scsi_task(t);
			break;
		}
		if (t)
			scsi_free_scsi_task(t);
	}
	t = iscsi_readcapacity16_sync(c->ctx, c->lun);
	if (!t || t->status != SCSI_STATUS_GOOD)
		ar_fail("READ CAPACITY(16) on %s failed", url);
	{
		struct scsi_readcapacity16 *rc = scsi_datain_unmarshall(t);

		if (!rc)
			ar_fail("READ CAPACITY(16) data");
		c->bs = rc->block_length;
		c->nblocks = rc->returned_lba + 1;
	}
	scsi_free_scsi_task(t);
}

static void ar_disconnect(struct ar_conn *c)
{
	iscsi_logout_sync(c->ctx);
	iscsi_destroy_context(c->ctx);
	c->ctx = NULL;
}

static void ar_write(struct ar_conn *c, uint64_t lba, const void *buf, uint32_t len)
{
	struct scsi_task *t = iscsi_write16_sync(c->ctx, c->lun, lba, (unsigned char *)buf, len,
						 (int)c->bs, 0, 0, 0, 0, 0);

	if (!t || t->status != SCSI_STATUS_GOOD)
		ar_fail("WRITE(16) LBA %" PRIu64 " len %u: %s", lba, len,
			t ? iscsi_get_error(c->ctx) : "no task");
	scsi_free_scsi_task(t);
}

static void ar_read(struct ar_conn *c, uint64_t lba, void *buf, uint32_t len)
{
	struct scsi_task *t = iscsi_read16_sync(c->ctx, c->lun, lba, len, (int)c->bs,
						0, 0, 0, 0, 0);

	if (!t || t->status != SCSI_STATUS_GOOD || t->datain.size < (int)len)
		ar_fail("READ(16) LBA %" PRIu64 " len %u: %s", lba, len,
			t ? iscsi_get_error(c->ctx) : "no task");
	memcpy(buf, t->datain.data, len);
	scsi_free_scsi_task(t);
}

/* COMPARE AND WRITE of one block: 1 GOOD, 0 MISCOMPARE; anything else fails. */
static int ar_caw(struct ar_conn *c, uint64_t lba, const uint8_t *cmp, const uint8_t *wr,
		  uint8_t *scratch)
{
	struct scsi_task *t;
	int r;

	memcpy(scratch, cmp, c->bs);
	memcpy(scratch + c->bs, wr, c->bs);
	t = iscsi_compareandwrite_sync(c->ctx, c->lun, lba, scratch, 2 * c->bs, (int)c->bs,
				       0, 0, 0, 0, 0);
	if (!t)
		ar_fail("COMPARE AND WRITE: %s", iscsi_get_error(c->ctx));
	if (t->status == SCSI_STATUS_GOOD) {
		r = 1;
	} else if (t->status == SCSI_STATUS_CHECK_CONDITION &&
		   t->sense.key == SCSI_SENSE_MISCOMPARE &&
		   t->sense.ascq == SCSI_SENSE_ASCQ_MISCOMPARE_DURING_VERIFY) {
		r = 0;
	} else {
		ar_fail("COMPARE AND WRITE ended with status %d sense %x/%04x (%s)", t->status,
			t->sense.key, t->sense.ascq, iscsi_get_error(c->ctx));
	}
	scsi_free_scsi_task(t);
	return r;
}

/* ----------------------------------------------------------------- race */

struct race {
	char *urls[16];
	unsigned n_urls;
	unsigned target;
	atomic_uint claimed;
	atomic_ulong miscompares;
	atomic_ulong acquisitions;
};

struct race_thread {
	struct race *race;
	unsigned id;
	pthread_t tid;
};

static void *race_worker(void *arg)
{
	struct race_thread *rt = arg;
	struct race *race = rt->race;
	struct ar_conn c;
	uint8_t *zero, *mine, *scratch, *ctr;
	unsigned seq = 0;

	ar_connect(&c, race->urls[(rt->id - 1) % race->n_urls]);
	zero = calloc(1, c.bs);
	mine = malloc(c.bs);
	scratch = malloc(2 * (size_t)c.bs);
	ctr = malloc(c.bs);
	if (!zero || !mine || !scratch || !ctr)
		ar_fail("out of memory");
	while (atomic_fetch_add(&race->claimed, 1) < race->target) {
		uint64_t v;

		/* the owner's image: id and sequence, never all zeroes */
		memset(mine, 0xa0 + (int)rt->id, c.bs);
		memcpy(mine, &rt->id, sizeof(rt->id));
		memcpy(mine + 8, &seq, sizeof(seq));
		seq++;
		while (!ar_caw(&c, AR_LOCK_LBA, zero, mine, scratch))
			atomic_fetch_add(&race->miscompares, 1);
		/* critical section: read-modify-write of the counter */
		ar_read(&c, AR_COUNTER_LBA, ctr, c.bs);
		memcpy(&v, ctr, sizeof(v));
		v++;
		memcpy(ctr, &v, sizeof(v));
		ar_write(&c, AR_COUNTER_LBA, ctr, c.bs);
		atomic_fetch_add(&race->acquisitions, 1);
		/* release: the lock must still be exactly ours */
		if (!ar_caw(&c, AR_LOCK_LBA, mine, zero, scratch))
			ar_fail("session %u: the lock was not ours at release (seq %u)", rt->id, seq);
	}
	ar_disconnect(&c);
	free(zero);
	free(mine);
	free(scratch);
	free(ctr);
	return NULL;
}

static int cmd_race(int argc, char **argv)
{
	struct race race;
	struct race_thread *th;
	struct ar_conn c;
	unsigned n, i;
	uint8_t *blk;
	uint64_t before, after;
	double t0, dt;

	if (argc != 3)
		ar_fail("usage: race URL SESSIONS ACQUISITIONS");
	n = (unsigned)atoi(argv[1]);
	memset(&race, 0, sizeof(race));
	for (char *save = NULL, *u = strtok_r(argv[0], ",", &save); u && race.n_urls < 16;
	     u = strtok_r(NULL, ",", &save))
		race.urls[race.n_urls++] = u;
	race.target = (unsigned)atoi(argv[2]);
	if (n < 1 || race.target < 1 || !race.n_urls)
		ar_fail("SESSIONS and ACQUISITIONS must be positive, URL not empty");
	ar_connect(&c, race.urls[0]);
	blk = calloc(1, c.bs);
	if (!blk)
		ar_fail("out of memory");
	ar_write(&c, AR_LOCK_LBA, blk, c.bs);     /* lock free */
	ar_read(&c, AR_COUNTER_LBA, blk, c.bs);
	memcpy(&before, blk, sizeof(before));
	th = calloc(n, sizeof(*th));
	if (!th)
		ar_fail("out of memory");
	t0 = ar_now();
	for (i = 0; i < n; i++) {
		th[i].race = &race;
		th[i].id = i + 1;
		if (pthread_create(&th[i].tid, NULL, race_worker, &th[i]))
			ar_fail("pthread_create");
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i].tid, NULL);
	dt = ar_now() - t0;
	ar_read(&c, AR_COUNTER_LBA, blk, c.bs);
	memcpy(&after, blk, sizeof(after));
	printf("race: %u sessions over %u URL(s), %lu acquisitions, %lu miscompares while contended, "
	       "counter %" PRIu64 " -> %" PRIu64 ", %.2f s (%.0f acquisitions/s)\n",
	       n, race.n_urls, atomic_load(&race.acquisitions), atomic_load(&race.miscompares), before, after,
	       dt, atomic_load(&race.acquisitions) / dt);
	if (after - before != atomic_load(&race.acquisitions))
		ar_fail("lost updates: counter grew by %" PRIu64 ", %lu acquisitions",
			after - before, atomic_load(&race.acquisitions));
	ar_read(&c, AR_LOCK_LBA, blk, c.bs);
	for (i = 0; i < c.bs; i++)
		if (blk[i])
			ar_fail("the lock block is not free at the end");
	free(blk);
	free(th);
	ar_disconnect(&c);
	printf("race: OK\n");
	return 0;
}

/* ------------------------------------------------- EXTENDED COPY lists */

/* The 16-byte NAA designator of the LU (VPD 0x83). */
static void ar_naa(struct ar_conn *c, uint8_t naa[16])
{
	struct scsi_task *t = iscsi_inquiry_sync(c->ctx, c->lun, 1, 0x83, 255);
	struct scsi_inquiry_device_identification *di;
	struct scsi_inquiry_device_designator *d;

	if (!t || t->status != SCSI_STATUS_GOOD)
		ar_fail("INQUIRY VPD 0x83");
	di = scsi_datain_unmarshall(t);
	if (!di)
		ar_fail("VPD 0x83 data");
	for (d = di->designators; d; d = d->next) {
		if (d->designator_type == SCSI_DESIGNATOR_TYPE_NAA && d->association == 0 &&
		    d->designator_length == 16) {
			memcpy(naa, d->designator, 16);
			scsi_free_scsi_task(t);
			return;
		}
	}
	ar_fail("no 16-byte NAA designator of the LU in VPD 0x83");
}

static size_t xc_cscd(uint8_t *p, const uint8_t naa[16], uint32_t bs)
{
	memset(p, 0, 32);
	p[0] = 0xe4;
	p[4] = 0x01;          /* binary */
	p[5] = 0x03;          /* LU, NAA */
	p[7] = 16;
	memcpy(p + 8, naa, 16);
	p[29] = (uint8_t)(bs >> 16);
	p[30] = (uint8_t)(bs >> 8);
	p[31] = (uint8_t)bs;
	return 32;
}

static size_t xc_seg(uint8_t *p, uint16_t si, uint16_t di, uint16_t nb, uint64_t s, uint64_t d)
{
	int i;

	memset(p, 0, 28);
	p[0] = 0x02;
	p[3] = 0x18;
	p[4] = (uint8_t)(si >> 8); p[5] = (uint8_t)si;
	p[6] = (uint8_t)(di >> 8); p[7] = (uint8_t)di;
	p[10] = (uint8_t)(nb >> 8); p[11] = (uint8_t)nb;
	for (i = 0; i < 8; i++) {
		p[12 + i] = (uint8_t)(s >> (56 - 8 * i));
		p[20 + i] = (uint8_t)(d >> (56 - 8 * i));
	}
	return 28;
}

/* The parameter list header: LIST ID USAGE 11b, no inline data. */
static void xc_header(uint8_t *list, size_t tdl, size_t sdl)
{
	memset(list, 0, 16);
	list[0] = 0;
	list[1] = 3 << 3;     /* LIST ID USAGE 11b: nothing held */
	list[2] = (uint8_t)(tdl >> 8);
	list[3] = (uint8_t)tdl;
	list[8] = (uint8_t)(sdl >> 24);
	list[9] = (uint8_t)(sdl >> 16);
	list[10] = (uint8_t)(sdl >> 8);
	list[11] = (uint8_t)sdl;
}

/* Send an EXTENDED COPY; returns the task (caller frees). */
static struct scsi_task *xc_send(struct ar_conn *c, uint8_t *list, size_t tdl, size_t sdl)
{
	struct iscsi_data data = { .size = (int)(16 + tdl + sdl), .data = list };

	xc_header(list, tdl, sdl);
	return iscsi_extended_copy_sync(c->ctx, c->lun, &data);
}

/* ---------------------------------------------------------------- abort */

struct abort_state {
	int done;
	int status;
	uint32_t response;            /* task management response */
};

static void abort_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct abort_state *st = priv;

	(void)ctx;
	st->status = status;
	st->done = 1;
	(void)data;
}

static void abort_tmf_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct abort_state *st = priv;

	(void)ctx;
	st->status = status;
	st->response = data ? *(uint32_t *)data : 0;
	st->done = 1;
}

static void ar_service_until(struct ar_conn *c, int *flag)
{
	while (!*flag) {
		struct pollfd pfd = { .fd = iscsi_get_fd(c->ctx), .events = (short)iscsi_which_events(c->ctx) };

		if (poll(&pfd, 1, 5000) <= 0)
			ar_fail("no answer from the target");
		if (iscsi_service(c->ctx, pfd.revents) < 0)
			ar_fail("iscsi_service: %s", iscsi_get_error(c->ctx));
	}
}

static int cmd_abort(int argc, char **argv)
{
	struct ar_conn c, c2;
	uint8_t *cur, *next, *buf, *scratch, *tmp, naa[16], list[16 + 32 + 28];
	unsigned rounds, r, landed = 0, kept = 0, aborted = 0;

	if (argc != 2)
		ar_fail("usage: abort URL ROUNDS");
	rounds = (unsigned)atoi(argv[1]);
	ar_connect(&c, argv[0]);
	ar_connect(&c2, argv[0]);
	ar_naa(&c, naa);
	cur = malloc(c.bs);
	next = malloc(c.bs);
	buf = malloc(2 * (size_t)c.bs);
	scratch = malloc(2 * (size_t)c.bs);
	if (!cur || !next || !buf || !scratch)
		ar_fail("out of memory");
	memset(cur, 0x11, c.bs);
	ar_write(&c, AR_LOCK_LBA, cur, c.bs);
	for (r = 0; r < rounds; r++) {
		struct abort_state cmd_st = { 0, 0, 0 }, tmf_st = { 0, 0, 0 }, xc_state = { 0, 0, 0 };
		struct scsi_task *xt = NULL;
		struct iscsi_data data = { .size = 2 * c.bs, .data = buf };
		struct scsi_task *t;
		uint8_t v = (uint8_t)(0x33 + r * 7);

		if (v == cur[0])
			v++;
		memset(next, v, c.bs);
		/* On odd rounds another session first copies 16 MiB around the
		 * block onto itself (EXTENDED COPY: data unchanged, but it holds
		 * the range lock), so the COMPARE AND WRITE waits and the abort
		 * catches it in the middle. */
		xc_state.done = 1;
		if (r & 1) {
			size_t tdl = xc_cscd(list + 16, naa, c.bs);
			size_t sdl = xc_seg(list + 16 + tdl, 0, 0, (uint16_t)((16u << 20) / c.bs),
					    0, 0);
			struct iscsi_data xd = { .size = (int)(16 + tdl + sdl), .data = list };

			xc_header(list, tdl, sdl);
			xc_state.done = 0;
			xt = iscsi_extended_copy_task(c2.ctx, c2.lun, &xd, abort_cb, &xc_state);
			if (!xt)
				ar_fail("EXTENDED COPY not sent: %s", iscsi_get_error(c2.ctx));
			/* until the copy has started (a little past its first request) */
			usleep(300);
			iscsi_service(c2.ctx, POLLOUT);
		}
		memcpy(buf, cur, c.bs);
		memcpy(buf + c.bs, next, c.bs);
		t = scsi_cdb_compareandwrite(AR_LOCK_LBA, 2 * c.bs, (int)c.bs, 0, 0, 0, 0, 0);
		if (!t)
			ar_fail("out of memory");
		if (iscsi_scsi_command_async(c.ctx, c.lun, t, abort_cb, &data, &cmd_st) != 0)
			ar_fail("COMPARE AND WRITE not sent: %s", iscsi_get_error(c.ctx));
		/* out on the wire before the (immediate) ABORT TASK */
		while (iscsi_out_queue_length(c.ctx) > 0 &&
		       iscsi_service(c.ctx, POLLOUT) == 0)
			;
		usleep(50);
		if (iscsi_task_mgmt_abort_task_async(c.ctx, t, abort_tmf_cb, &tmf_st) != 0)
			ar_fail("ABORT TASK not sent: %s", iscsi_get_error(c.ctx));
		ar_service_until(&c, &tmf_st.done);
		if (tmf_st.response == 0) {
			/* Function complete: aborted, or it had ended already */
			aborted++;
			if (!cmd_st.done)
				iscsi_scsi_cancel_task(c.ctx, t);   /* no response comes */
		} else {
			/* not found: the command had not reached the task set; it
			 * runs normally, so wait for it like an initiator would */
			ar_service_until(&c, &cmd_st.done);
		}
		scsi_free_scsi_task(t);
		if (!xc_state.done) {
			ar_service_until(&c2, &xc_state.done);
			if (xc_state.status != SCSI_STATUS_GOOD)
				ar_fail("round %u: the EXTENDED COPY failed", r);
			scsi_free_scsi_task(xt);
		}
		/* whole old or whole new */
		ar_read(&c, AR_LOCK_LBA, scratch, c.bs);
		if (!memcmp(scratch, next, c.bs)) {
			landed++;
			tmp = cur;
			cur = next;
			next = tmp;
		} else if (!memcmp(scratch, cur, c.bs)) {
			kept++;
		} else {
			ar_fail("round %u: torn block after an aborted COMPARE AND WRITE", r);
		}
		/* and a COMPARE AND WRITE of what is there succeeds */
		if (!ar_caw(&c, AR_LOCK_LBA, cur, cur, buf))
			ar_fail("round %u: false miscompare after an aborted COMPARE AND WRITE", r);
	}
	printf("abort: %u rounds (%u ABORT TASK Function complete): %u writes landed whole, "
	       "%u not at all, no false miscompare\n", rounds, aborted, landed, kept);
	free(cur);
	free(next);
	free(buf);
	free(scratch);
	ar_disconnect(&c);
	ar_disconnect(&c2);
	printf("abort: OK\n");
	return 0;
}

/* ---------------------------------------------------------------- xcopy */

static void fill_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t v = seed ^ (i * 0x9e3779b97f4a7c15ull);

		memcpy(p + i, &v, MIN(8, len - i));
	}
}

static int cmd_xcopy(int argc, char **argv)
{
	struct ar_conn a, b, o;
	uint8_t naa_a[16], naa_b[16], naa_o[16], list[16 + 3 * 32 + 8 * 28];
	uint8_t *src, *chk, *before;
	const uint32_t nb = 64;    /* blocks per segment */
	struct scsi_task *t;
	size_t tdl, sdl;
	unsigned i;

	if (argc != 3)
		ar_fail("usage: xcopy URL_A URL_B URL_OTHER");
	ar_connect(&a, argv[0]);
	ar_connect(&b, argv[1]);
	ar_connect(&o, argv[2]);
	ar_naa(&a, naa_a);
	ar_naa(&b, naa_b);
	ar_naa(&o, naa_o);
	if (a.bs != b.bs)
		ar_fail("the two LUNs need one block size");
	src = malloc(4 * nb * a.bs);
	chk = malloc(4 * nb * a.bs);
	before = malloc(nb * a.bs);
	if (!src || !chk || !before)
		ar_fail("out of memory");
	/* source: 4 segments' worth at LBA 1000 of A */
	fill_pattern(src, 4 * nb * a.bs, 0x1234);
	ar_write(&a, 1000, src, 4 * nb * a.bs);

	/* within A: 4 segments, scattered destinations (several segments) */
	tdl = xc_cscd(list + 16, naa_a, a.bs);
	tdl += xc_cscd(list + 16 + tdl, naa_b, b.bs);
	sdl = 0;
	for (i = 0; i < 4; i++)
		sdl += xc_seg(list + 16 + tdl + sdl, 0, 0, (uint16_t)nb, 1000 + i * nb,
			      5000 + (3 - i) * 2 * nb);
	/* and from A to B: 4 more */
	for (i = 0; i < 4; i++)
		sdl += xc_seg(list + 16 + tdl + sdl, 0, 1, (uint16_t)nb, 1000 + i * nb,
			      3000 + i * nb);
	t = xc_send(&a, list, tdl, sdl);
	if (!t || t->status != SCSI_STATUS_GOOD)
		ar_fail("EXTENDED COPY (8 segments, 2 LUNs): status %d sense %x/%04x",
			t ? t->status : -1, t ? t->sense.key : 0, t ? t->sense.ascq : 0);
	scsi_free_scsi_task(t);
	for (i = 0; i < 4; i++) {
		ar_read(&a, 5000 + (3 - i) * 2 * nb, chk, nb * a.bs);
		if (memcmp(chk, src + (size_t)i * nb * a.bs, nb * a.bs))
			ar_fail("segment %u within the LUN: data differ", i);
	}
	ar_read(&b, 3000, chk, 4 * nb * b.bs);
	if (memcmp(chk, src, 4 * nb * b.bs))
		ar_fail("copy to the other LUN: data differ");
	printf("xcopy: 8 segments within LUN A and from A to B: data verified\n");

	/* naming a LUN of another target: COPY ABORTED, nothing copied */
	ar_read(&a, 7000, before, nb * a.bs);
	tdl = xc_cscd(list + 16, naa_a, a.bs);
	tdl += xc_cscd(list + 16 + tdl, naa_o, o.bs);
	sdl = xc_seg(list + 16 + tdl, 1, 0, (uint16_t)nb, 0, 7000);
	t = xc_send(&a, list, tdl, sdl);
	if (!t || t->status != SCSI_STATUS_CHECK_CONDITION || t->sense.key != SCSI_SENSE_COPY_ABORTED)
		ar_fail("EXTENDED COPY from another target's LUN: expected COPY ABORTED, got "
			"status %d sense %x/%04x", t ? t->status : -1, t ? t->sense.key : 0,
			t ? t->sense.ascq : 0);
	printf("xcopy: another target's LUN refused: COPY ABORTED %04x\n", t->sense.ascq);
	scsi_free_scsi_task(t);
	ar_read(&a, 7000, chk, nb * a.bs);
	if (memcmp(chk, before, nb * a.bs))
		ar_fail("the refused copy changed data");
	/* and as destination */
	sdl = xc_seg(list + 16 + tdl, 0, 1, (uint16_t)nb, 1000, 0);
	t = xc_send(&a, list, tdl, sdl);
	if (!t || t->status != SCSI_STATUS_CHECK_CONDITION || t->sense.key != SCSI_SENSE_COPY_ABORTED)
		ar_fail("EXTENDED COPY to another target's LUN: expected COPY ABORTED");
	scsi_free_scsi_task(t);
	printf("xcopy: another target's LUN refused as destination\n");
	free(src);
	free(chk);
	free(before);
	ar_disconnect(&a);
	ar_disconnect(&b);
	ar_disconnect(&o);
	printf("xcopy: OK\n");
	return 0;
}

/* ------------------------------------------------ fill, unmap, lbastatus */

static int cmd_fill(int argc, char **argv)
{
	struct ar_conn c;
	uint64_t lba, n, done = 0;
	uint8_t *buf;
	uint32_t chunk;

	if (argc != 3)
		ar_fail("usage: fill URL LBA BLOCKS");
	ar_connect(&c, argv[0]);
	lba = strtoull(argv[1], NULL, 0);
	n = strtoull(argv[2], NULL, 0);
	chunk = (1u << 20) / c.bs;
	buf = malloc((size_t)chunk * c.bs);
	if (!buf)
		ar_fail("out of memory");
	while (done < n) {
		uint32_t k = (uint32_t)MIN((uint64_t)chunk, n - done);

		fill_pattern(buf, (size_t)k * c.bs, lba + done + 1);
		ar_write(&c, lba + done, buf, k * c.bs);
		done += k;
	}
	free(buf);
	ar_disconnect(&c);
	return 0;
}

/*
 * fillfull URL LBA BLOCKS: write 1 MiB chunks of a pattern from LBA on
 * until a WRITE fails; it must fail with DATA PROTECT, SPACE ALLOCATION
 * FAILED WRITE PROTECT (07/27/07), before BLOCKS. Then the first chunk
 * must still read back right. Prints the blocks written.
 */
static int cmd_fillfull(int argc, char **argv)
{
	struct ar_conn c;
	uint64_t lba, n, done = 0;
	uint8_t *buf, *rd;
	uint32_t chunk;
	struct scsi_task *t;

	if (argc != 3)
		ar_fail("usage: fillfull URL LBA BLOCKS");
	ar_connect(&c, argv[0]);
	lba = strtoull(argv[1], NULL, 0);
	n = strtoull(argv[2], NULL, 0);
	chunk = (1u << 20) / c.bs;
	buf = malloc((size_t)chunk * c.bs);
	rd = malloc((size_t)chunk * c.bs);
	if (!buf || !rd)
		ar_fail("out of memory");
	for (;;) {
		uint32_t k = (uint32_t)MIN((uint64_t)chunk, n - done);

		if (done >= n)
			ar_fail("wrote %" PRIu64 " blocks and never ran out of space", done);
		fill_pattern(buf, (size_t)k * c.bs, lba + done + 1);
		t = iscsi_write16_sync(c.ctx, c.lun, lba + done, buf, k * c.bs, (int)c.bs,
				       0, 0, 0, 0, 0);
		if (!t)
			ar_fail("WRITE(16): %s", iscsi_get_error(c.ctx));
		if (t->status != SCSI_STATUS_GOOD) {
			if (t->status != SCSI_STATUS_CHECK_CONDITION ||
			    t->sense.key != SCSI_SENSE_DATA_PROTECTION ||
			    t->sense.ascq != 0x2707)
				ar_fail("WRITE(16) LBA %" PRIu64 ": %s, want 07/27/07",
					lba + done, iscsi_get_error(c.ctx));
			scsi_free_scsi_task(t);
			break;
		}
		scsi_free_scsi_task(t);
		done += k;
	}
	if (done) {
		uint32_t k = (uint32_t)MIN((uint64_t)chunk, done);

		fill_pattern(buf, (size_t)k * c.bs, lba + 1);
		ar_read(&c, lba, rd, k * c.bs);
		if (memcmp(rd, buf, (size_t)k * c.bs))
			ar_fail("LBA %" PRIu64 " does not read back what was written", lba);
	}
	printf("%" PRIu64 "\n", done);
	free(buf);
	free(rd);
	ar_disconnect(&c);
	return 0;
}

static int cmd_unmap(int argc, char **argv)
{
	struct ar_conn c;
	uint64_t lba, n;
	struct unmap_list l[64];
	struct scsi_task *t;
	struct scsi_inquiry_block_limits *bl;
	uint64_t max_lbas;
	uint32_t max_desc, per_desc;

	if (argc != 3)
		ar_fail("usage: unmap URL LBA BLOCKS");
	ar_connect(&c, argv[0]);
	lba = strtoull(argv[1], NULL, 0);
	n = strtoull(argv[2], NULL, 0);
	/* within the advertised limits (VPD B0), like an initiator */
	t = iscsi_inquiry_sync(c.ctx, c.lun, 1, 0xb0, 255);
	if (!t || t->status != SCSI_STATUS_GOOD || !(bl = scsi_datain_unmarshall(t)))
		ar_fail("INQUIRY VPD B0");
	max_lbas = bl->max_unmap ? bl->max_unmap : 0xffffffffu;
	max_desc = bl->max_unmap_bdc ? MIN(bl->max_unmap_bdc, 64u) : 64u;
	scsi_free_scsi_task(t);
	per_desc = (uint32_t)MIN(max_lbas, (uint64_t)((1ull << 30) / c.bs));
	while (n) {
		uint64_t in_cmd = 0;
		int k = 0;

		while (n && k < (int)max_desc && in_cmd < max_lbas) {
			uint32_t m = (uint32_t)MIN(MIN(n, (uint64_t)per_desc), max_lbas - in_cmd);

			l[k].lba = lba;
			l[k].num = m;
			lba += m;
			n -= m;
			in_cmd += m;
			k++;
		}
		t = iscsi_unmap_sync(c.ctx, c.lun, 0, 0, l, k);
		if (!t || t->status != SCSI_STATUS_GOOD)
			ar_fail("UNMAP: status %d sense %x/%04x", t ? t->status : -1,
				t ? t->sense.key : 0, t ? t->sense.ascq : 0);
		scsi_free_scsi_task(t);
	}
	ar_disconnect(&c);
	return 0;
}

static int cmd_wsunmap(int argc, char **argv)
{
	struct ar_conn c;
	uint64_t lba, n;
	uint8_t *zero;

	if (argc != 3)
		ar_fail("usage: wsunmap URL LBA BLOCKS");
	ar_connect(&c, argv[0]);
	lba = strtoull(argv[1], NULL, 0);
	n = strtoull(argv[2], NULL, 0);
	zero = calloc(1, c.bs);
	if (!zero)
		ar_fail("out of memory");
	while (n) {
		/* whole 4 KiB units per command (the OPTIMAL UNMAP GRANULARITY of
		 * 512-byte LUNs), within MAXIMUM WRITE SAME LENGTH */
		uint32_t m = (uint32_t)MIN(n, (uint64_t)65528);
		struct scsi_task *t = iscsi_writesame16_sync(c.ctx, c.lun, lba, zero, c.bs, m,
							     0, 1, 0, 0);

		if (!t || t->status != SCSI_STATUS_GOOD)
			ar_fail("WRITE SAME(16) UNMAP: status %d sense %x/%04x", t ? t->status : -1,
				t ? t->sense.key : 0, t ? t->sense.ascq : 0);
		scsi_free_scsi_task(t);
		lba += m;
		n -= m;
	}
	free(zero);
	ar_disconnect(&c);
	return 0;
}

static int cmd_lbastatus(int argc, char **argv)
{
	struct ar_conn c;
	uint64_t lba, want, seen = 0;
	bool mapped;
	struct scsi_task *t;

	if (argc != 4)
		ar_fail("usage: lbastatus URL LBA mapped|deallocated BLOCKS");
	ar_connect(&c, argv[0]);
	lba = strtoull(argv[1], NULL, 0);
	mapped = !strcmp(argv[2], "mapped");
	want = strtoull(argv[3], NULL, 0);
	while (seen < want) {
		struct scsi_get_lba_status *s;

		t = iscsi_get_lba_status_sync(c.ctx, c.lun, lba + seen, 1024);
		if (!t || t->status != SCSI_STATUS_GOOD)
			ar_fail("GET LBA STATUS at %" PRIu64, lba + seen);
		s = scsi_datain_unmarshall(t);
		if (!s || s->num_descriptors < 1)
			ar_fail("GET LBA STATUS data");
		if (s->descriptors[0].lba != lba + seen)
			ar_fail("GET LBA STATUS: first descriptor at %" PRIu64 ", asked %" PRIu64,
				s->descriptors[0].lba, lba + seen);
		if ((s->descriptors[0].provisioning == SCSI_PROVISIONING_TYPE_MAPPED) != mapped)
			ar_fail("GET LBA STATUS: LBA %" PRIu64 " (%u blocks) is %s, expected %s",
				lba + seen, s->descriptors[0].num_blocks,
				s->descriptors[0].provisioning == SCSI_PROVISIONING_TYPE_MAPPED ?
				"mapped" : "not mapped", argv[2]);
		seen += s->descriptors[0].num_blocks;
		scsi_free_scsi_task(t);
	}
	printf("lbastatus: %" PRIu64 " blocks from LBA %" PRIu64 " are %s\n", want, lba, argv[2]);
	ar_disconnect(&c);
	return 0;
}

/* ---------------------------------------------------------------- bench */

/* EXTENDED COPY of LBAs [0, blocks) of a to the same LBAs of b, 16 MiB
 * per command (ESXi's largest transfer size), one segment each. Returns
 * the bytes sent and received over the network for it (PDU headers,
 * parameter lists). */
static uint64_t xcopy_range(struct ar_conn *a, struct ar_conn *b, const uint8_t *naa_a,
			    const uint8_t *naa_b, uint64_t blocks)
{
	uint8_t list[16 + 64 + 28];
	uint64_t per_seg = MIN((uint64_t)65535, (uint64_t)(16u << 20) / a->bs), done, net = 0;

	for (done = 0; done < blocks;) {
		size_t tdl = xc_cscd(list + 16, naa_a, a->bs);
		uint16_t n = (uint16_t)MIN(per_seg, blocks - done);
		size_t sdl;
		struct scsi_task *t;

		tdl += xc_cscd(list + 16 + tdl, naa_b, b->bs);
		sdl = xc_seg(list + 16 + tdl, 0, 1, n, done, done);
		t = xc_send(a, list, tdl, sdl);
		if (!t || t->status != SCSI_STATUS_GOOD)
			ar_fail("EXTENDED COPY at LBA %" PRIu64 ": status %d sense %x/%04x", done,
				t ? t->status : -1, t ? t->sense.key : 0, t ? t->sense.ascq : 0);
		scsi_free_scsi_task(t);
		net += 48 + 16 + tdl + sdl + 48;   /* command PDU, data, response */
		done += n;
	}
	return net;
}

static int cmd_copy(int argc, char **argv)
{
	struct ar_conn a, b;
	uint8_t naa_a[16], naa_b[16], *x, *y;
	uint64_t blocks, net, lba;
	double t0;

	if (argc != 3)
		ar_fail("usage: copy URL_A URL_B MIB");
	ar_connect(&a, argv[0]);
	ar_connect(&b, argv[1]);
	ar_naa(&a, naa_a);
	ar_naa(&b, naa_b);
	blocks = (strtoull(argv[2], NULL, 0) << 20) / a.bs;
	t0 = ar_now();
	net = xcopy_range(&a, &b, naa_a, naa_b, blocks);
	printf("copy: %" PRIu64 " blocks by EXTENDED COPY in %.3f s, %" PRIu64 " bytes on the network\n",
	       blocks, ar_now() - t0, net);
	/* spot checks */
	x = malloc(a.bs);
	y = malloc(b.bs);
	if (!x || !y)
		ar_fail("out of memory");
	for (lba = 0; lba < blocks; lba += blocks / 16 + 1) {
		ar_read(&a, lba, x, a.bs);
		ar_read(&b, lba, y, b.bs);
		if (memcmp(x, y, a.bs))
			ar_fail("copy: LBA %" PRIu64 " differs", lba);
	}
	free(x);
	free(y);
	ar_disconnect(&a);
	ar_disconnect(&b);
	return 0;
}

static int cmd_bench(int argc, char **argv)
{
	struct ar_conn a, b;
	uint8_t naa_a[16], naa_b[16];
	uint64_t mib, blocks, done;
	uint8_t *buf;
	double t0, t_xcopy, t_host, t_ws, t_wz;
	uint64_t net_xcopy = 0, net_host = 0, net_ws = 0, net_wz = 0;
	uint32_t chunk;

	if (argc != 3)
		ar_fail("usage: bench URL_A URL_B MIB");
	ar_connect(&a, argv[0]);
	ar_connect(&b, argv[1]);
	ar_naa(&a, naa_a);
	ar_naa(&b, naa_b);
	mib = strtoull(argv[2], NULL, 0);
	blocks = (mib << 20) / a.bs;
	if (blocks > a.nblocks || blocks > b.nblocks)
		ar_fail("LUNs smaller than %" PRIu64 " MiB", mib);
	chunk = (8u << 20) / a.bs;
	buf = malloc((size_t)chunk * a.bs);
	if (!buf)
		ar_fail("out of memory");

	t0 = ar_now();
	net_xcopy = xcopy_range(&a, &b, naa_a, naa_b, blocks);
	t_xcopy = ar_now() - t0;

	/* host-side copy: READ then WRITE through the initiator */
	t0 = ar_now();
	for (done = 0; done < blocks;) {
		uint32_t n = (uint32_t)MIN((uint64_t)chunk, blocks - done);

		ar_read(&a, done, buf, n * a.bs);
		ar_write(&b, done, buf, n * a.bs);
		net_host += 2ull * n * a.bs;
		done += n;
	}
	t_host = ar_now() - t0;

	/* WRITE SAME zeroing (UNMAP=0) against writing zero buffers */
	memset(buf, 0, (size_t)chunk * a.bs);
	t0 = ar_now();
	for (done = 0; done < blocks;) {
		uint32_t n = (uint32_t)MIN((uint64_t)65535, blocks - done);
		struct scsi_task *t = iscsi_writesame16_sync(b.ctx, b.lun, done, buf, b.bs, n,
							     0, 0, 0, 0);

		if (!t || t->status != SCSI_STATUS_GOOD)
			ar_fail("WRITE SAME in the benchmark");
		scsi_free_scsi_task(t);
		net_ws += 48 + b.bs + 48;
		done += n;
	}
	t_ws = ar_now() - t0;
	t0 = ar_now();
	for (done = 0; done < blocks;) {
		uint32_t n = (uint32_t)MIN((uint64_t)chunk, blocks - done);

		ar_write(&b, done, buf, n * b.bs);
		net_wz += (uint64_t)n * b.bs;
		done += n;
	}
	t_wz = ar_now() - t0;
	printf("bench: %" PRIu64 " MiB\n", mib);
	printf("  EXTENDED COPY          %8.3f s  %10" PRIu64 " bytes over the network\n",
	       t_xcopy, net_xcopy);
	printf("  host copy (READ+WRITE) %8.3f s  %10" PRIu64 " bytes over the network\n",
	       t_host, net_host);
	printf("  WRITE SAME zeroing     %8.3f s  %10" PRIu64 " bytes over the network\n",
	       t_ws, net_ws);
	printf("  WRITE of zero buffers  %8.3f s  %10" PRIu64 " bytes over the network\n",
	       t_wz, net_wz);
	free(buf);
	ar_disconnect(&a);
	ar_disconnect(&b);
	return 0;
}

/* ------------------------------------------------------------ writeperf */

struct wp {
	struct ar_conn *c;
	uint8_t *data;
	uint64_t ops, seed, span;
	int inflight;
	bool stop;
};

static void wp_issue(struct wp *w);

static void wp_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct wp *w = priv;

	(void)ctx;
	if (status != SCSI_STATUS_GOOD)
		ar_fail("WRITE in writeperf: status %d", status);
	scsi_free_scsi_task(data);
	w->inflight--;
	w->ops++;
	if (!w->stop)
		wp_issue(w);
}

static void wp_issue(struct wp *w)
{
	uint64_t lba;

	w->seed = w->seed * 6364136223846793005ull + 1442695040888963407ull;
	lba = ((w->seed >> 20) % w->span) * (4096 / w->c->bs);
	if (!iscsi_write16_task(w->c->ctx, w->c->lun, lba, w->data, 4096, (int)w->c->bs,
				0, 0, 0, 0, 0, wp_cb, w))
		ar_fail("WRITE not queued: %s", iscsi_get_error(w->c->ctx));
	w->inflight++;
}

/* 4 KiB random writes at queue depth QD for SECONDS: a measurement of the
 * plain WRITE path (which takes the LBA range lock), not a test. */
static int cmd_writeperf(int argc, char **argv)
{
	struct ar_conn c;
	struct wp w;
	double t0, secs;
	int qd, i;

	if (argc != 3)
		ar_fail("usage: writeperf URL QD SECONDS");
	ar_connect(&c, argv[0]);
	qd = atoi(argv[1]);
	secs = atof(argv[2]);
	memset(&w, 0, sizeof(w));
	w.c = &c;
	w.data = malloc(4096);
	if (!w.data)
		ar_fail("out of memory");
	memset(w.data, 0x5a, 4096);
	w.seed = 42;
	w.span = MIN(c.nblocks * c.bs / 4096, (uint64_t)(256u << 20) / 4096);
	for (i = 0; i < qd; i++)
		wp_issue(&w);
	t0 = ar_now();
	while (w.inflight > 0) {
		struct pollfd pfd = { .fd = iscsi_get_fd(c.ctx), .events = (short)iscsi_which_events(c.ctx) };

		if (!w.stop && ar_now() - t0 >= secs)
			w.stop = true;
		if (poll(&pfd, 1, 1000) < 0)
			ar_fail("poll");
		if (iscsi_service(c.ctx, pfd.revents) < 0)
			ar_fail("iscsi_service: %s", iscsi_get_error(c.ctx));
	}
	printf("writeperf: 4 KiB random writes, QD %d: %.0f IOPS\n", qd, w.ops / (ar_now() - t0));
	free(w.data);
	ar_disconnect(&c);
	return 0;
}

/* ----------------------------------------------------------- miscompare */

static uint32_t ar_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int cmd_miscompare(int argc, char **argv)
{
	static const unsigned at[] = { 0, 1, 100, 255, 511 };
	struct ar_conn c;
	uint8_t *blk, *buf, *back;
	uint64_t lba;
	unsigned i, k;

	if (argc != 2)
		ar_fail("usage: miscompare URL LBA");
	ar_connect(&c, argv[0]);
	lba = strtoull(argv[1], NULL, 0);
	blk = malloc(c.bs);
	back = malloc(c.bs);
	buf = malloc(2 * (size_t)c.bs);
	if (!blk || !buf || !back)
		ar_fail("out of memory");
	for (i = 0; i < c.bs; i++)
		blk[i] = (uint8_t)(i * 7 + 1);
	ar_write(&c, lba, blk, c.bs);
	for (k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		unsigned off = at[k] % c.bs;
		struct scsi_task *t;

		memcpy(buf, blk, c.bs);
		buf[off] ^= 0x5a;
		memset(buf + c.bs, 0xee, c.bs);
		t = iscsi_compareandwrite_sync(c.ctx, c.lun, lba, buf, 2 * c.bs, (int)c.bs,
					       0, 0, 0, 0, 0);
		if (!t || t->status != SCSI_STATUS_CHECK_CONDITION ||
		    t->sense.key != SCSI_SENSE_MISCOMPARE)
			ar_fail("LBA %" PRIu64 " byte %u: no MISCOMPARE (%s)", lba, off,
				iscsi_get_error(c.ctx));
		/* fixed-format sense after the 2-byte SenseLength: VALID (byte
		 * 0 bit 7) and INFORMATION (bytes 3..6) */
		if (t->datain.size < 2 + 7 || !(t->datain.data[2] & 0x80) ||
		    ar_be32(t->datain.data + 2 + 3) != off)
			ar_fail("LBA %" PRIu64 ": MISCOMPARE INFORMATION %s%u, the first differing "
				"byte is %u", lba,
				t->datain.size >= 9 && (t->datain.data[2] & 0x80) ? "" : "(not valid) ",
				t->datain.size >= 9 ? ar_be32(t->datain.data + 5) : 0, off);
		scsi_free_scsi_task(t);
		ar_read(&c, lba, back, c.bs);
		if (memcmp(back, blk, c.bs))
			ar_fail("LBA %" PRIu64 ": a miscompare wrote the block", lba);
	}
	memcpy(buf, blk, c.bs);
	memset(buf + c.bs, 0xee, c.bs);
	if (!ar_caw(&c, lba, blk, buf + c.bs, buf))
		ar_fail("LBA %" PRIu64 ": a matching COMPARE AND WRITE miscompared", lba);
	ar_read(&c, lba, back, c.bs);
	if (back[0] != 0xee || back[c.bs - 1] != 0xee)
		ar_fail("LBA %" PRIu64 ": a matching COMPARE AND WRITE did not write", lba);
	printf("miscompare: LBA %" PRIu64 ": offsets right, nothing written on a mismatch\n", lba);
	ar_disconnect(&c);
	free(blk);
	free(buf);
	free(back);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: atsrace race|miscompare|abort|xcopy|fill|fillfull|unmap|wsunmap|lbastatus|copy|writeperf|bench ...\n");
		return 2;
	}
	if (!strcmp(argv[1], "race"))
		return cmd_race(argc - 2, argv + 2);
	if (!strcmp(argv[1], "miscompare"))
		return cmd_miscompare(argc - 2, argv + 2);
	if (!strcmp(argv[1], "abort"))
		return cmd_abort(argc - 2, argv + 2);
	if (!strcmp(argv[1], "xcopy"))
		return cmd_xcopy(argc - 2, argv + 2);
	if (!strcmp(argv[1], "fill"))
		return cmd_fill(argc - 2, argv + 2);
	if (!strcmp(argv[1], "fillfull"))
		return cmd_fillfull(argc - 2, argv + 2);
	if (!strcmp(argv[1], "unmap"))
		return cmd_unmap(argc - 2, argv + 2);
	if (!strcmp(argv[1], "wsunmap"))
		return cmd_wsunmap(argc - 2, argv + 2);
	if (!strcmp(argv[1], "lbastatus"))
		return cmd_lbastatus(argc - 2, argv + 2);
	if (!strcmp(argv[1], "writeperf"))
		return cmd_writeperf(argc - 2, argv + 2);
	if (!strcmp(argv[1], "copy"))
		return cmd_copy(argc - 2, argv + 2);
	if (!strcmp(argv[1], "bench"))
		return cmd_bench(argc - 2, argv + 2);
	fprintf(stderr, "atsrace: unknown subcommand %s\n", argv[1]);
	return 2;
}
