/*
 * Check suite for the VAAI primitives and the LBA range lock: the lock's
 * conflict rules, FIFO order and cross-thread grants (real io_engines, no
 * backstore); CDB and parameter-list validation of COMPARE AND WRITE,
 * WRITE SAME, UNMAP, GET LBA STATUS, EXTENDED COPY and RECEIVE COPY
 * RESULTS on memory LUNs; what VPD B0/B2/8F and READ CAPACITY(16)
 * advertise; and COMPARE AND WRITE against a WRITE in flight, with a fake
 * asynchronous backstore that completes requests only when the test says.
 */
#include "config.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/check_suites.h"
#include "tests/scsi_harness.h"
#include "scsi/scsi.h"
#include "scsi/rangelock.h"
#include "backstore/backstore.h"
#include "backstore/io_engine.h"
#include "common/util.h"

/* ================================================================ range lock */

struct waiter {
	struct rangelock_req req;
	struct bs_io io;
	int *order;                 /* where to record the grant */
	int *norder;
	int id;
	bool granted;
};

static void waiter_granted(struct bs_io *io)
{
	struct waiter *w = io->priv;

	w->granted = true;
	if (w->order)
		w->order[(*w->norder)++] = w->id;
}

static bool take(struct rangelock *rl, struct io_engine *e, struct waiter *w, int id,
		 uint64_t lba, uint64_t n, enum rangelock_mode mode, int *order, int *norder)
{
	memset(w, 0, sizeof(*w));
	w->id = id;
	w->order = order;
	w->norder = norder;
	w->io.done = waiter_granted;
	w->io.priv = w;
	w->granted = rangelock_acquire(rl, &w->req, lba, n, mode, e, &w->io);
	return w->granted;
}

/* Run the engine's completions without blocking. */
static void drain(struct io_engine *e)
{
	while (io_engine_poll(e) > 0)
		;
}

START_TEST(rl_shared_and_exclusive)
{
	struct rangelock rl;
	struct io_engine *e = io_engine_create(8, false);
	struct waiter a, b, c, d;

	rangelock_init(&rl);
	/* shared writers overlap freely */
	ck_assert(take(&rl, e, &a, 1, 0, 10, RL_SHARED, NULL, NULL));
	ck_assert(take(&rl, e, &b, 2, 5, 10, RL_SHARED, NULL, NULL));
	/* an exclusive request waits for both */
	ck_assert(!take(&rl, e, &c, 3, 8, 1, RL_EXCL, NULL, NULL));
	/* a disjoint exclusive one does not */
	ck_assert(take(&rl, e, &d, 4, 100, 1, RL_EXCL, NULL, NULL));
	rangelock_release(&a.req);
	drain(e);
	ck_assert(!c.granted);             /* b still overlaps */
	rangelock_release(&b.req);
	io_engine_wait(e);
	ck_assert(c.granted);
	ck_assert(rangelock_held(&c.req));
	/* n = 0 touches nothing; ranges are half-open */
	ck_assert(take(&rl, e, &a, 5, 9, 5, RL_EXCL, NULL, NULL));
	rangelock_release(&a.req);
	ck_assert(take(&rl, e, &a, 6, 7, 1, RL_SHARED, NULL, NULL));
	rangelock_release(&a.req);
	rangelock_release(&c.req);
	rangelock_release(&d.req);
	ck_assert_uint_eq(io_engine_inflight(e), 0);
	io_engine_destroy(e);
	rangelock_destroy(&rl);
}
END_TEST

START_TEST(rl_fifo_no_starvation)
{
	struct rangelock rl;
	struct io_engine *e = io_engine_create(8, false);
	struct waiter h, x, s1, s2, s3, x2;
	int order[8], n = 0;

	rangelock_init(&rl);
	ck_assert(take(&rl, e, &h, 1, 0, 8, RL_SHARED, order, &n));
	/* a COMPARE AND WRITE queues behind the write in flight */
	ck_assert(!take(&rl, e, &x, 2, 4, 1, RL_EXCL, order, &n));
	/* later writes of the same LBAs queue behind it: no starvation */
	ck_assert(!take(&rl, e, &s1, 3, 0, 8, RL_SHARED, order, &n));
	ck_assert(!take(&rl, e, &s2, 4, 4, 1, RL_SHARED, order, &n));
	/* writes elsewhere are not held up */
	ck_assert(take(&rl, e, &s3, 5, 50, 8, RL_SHARED, order, &n));
	/* a second exclusive one queues behind everything it overlaps */
	ck_assert(!take(&rl, e, &x2, 6, 0, 1, RL_EXCL, order, &n));
	rangelock_release(&s3.req);
	rangelock_release(&h.req);
	io_engine_wait(e);
	drain(e);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(order[0], 2);      /* the exclusive one first */
	rangelock_release(&x.req);
	io_engine_wait(e);
	drain(e);
	ck_assert_int_eq(n, 3);             /* then both shared ones */
	ck_assert(s1.granted && s2.granted);
	ck_assert(!x2.granted);
	rangelock_release(&s2.req);
	drain(e);
	ck_assert(!x2.granted);             /* s1 still overlaps x2 */
	rangelock_release(&s1.req);
	io_engine_wait(e);
	ck_assert(x2.granted);
	ck_assert_int_eq(order[3], 6);
	rangelock_release(&x2.req);
	io_engine_destroy(e);
	rangelock_destroy(&rl);
}
END_TEST

/* Threads with their own engines race exclusive and shared requests on a
 * small range; an owner table catches any overlap the lock allowed. */
#define RL_THREADS 4
#define RL_ITERS 20000
#define RL_BLOCKS 16
static struct rangelock stress_rl;
static _Atomic int stress_owner[RL_BLOCKS];     /* >0 exclusive owner, <0 shared count */
static _Atomic unsigned stress_waits;
static atomic_bool stress_bad;

static void *rl_stress_thread(void *arg)
{
	struct io_engine *e = io_engine_create(8, false);
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
	int me = (int)(uintptr_t)arg + 1;
	struct waiter w;
	int i;
	uint64_t b;

	for (i = 0; i < RL_ITERS; i++) {
		uint64_t lba, n;
		bool excl;

		seed = seed * 1103515245u + 12345u;
		lba = (seed >> 8) % RL_BLOCKS;
		n = 1 + (seed >> 20) % 3;
		if (lba + n > RL_BLOCKS)
			n = RL_BLOCKS - lba;
		excl = (seed >> 4) & 1;
		if (!take(&stress_rl, e, &w, me, lba, n, excl ? RL_EXCL : RL_SHARED, NULL, NULL)) {
			atomic_fetch_add(&stress_waits, 1);
			while (!w.granted)
				io_engine_wait(e);
		}
		for (b = lba; b < lba + n; b++) {
			int v;

			if (excl) {
				v = 0;
				if (!atomic_compare_exchange_strong(&stress_owner[b], &v, me))
					atomic_store(&stress_bad, true);
			} else {
				v = atomic_fetch_sub(&stress_owner[b], 1);
				if (v > 0)
					atomic_store(&stress_bad, true);
			}
		}
		/* stay a moment, so that the others meet the range held */
		sched_yield();
		for (b = lba; b < lba + n; b++) {
			if (excl)
				atomic_store(&stress_owner[b], 0);
			else
				atomic_fetch_add(&stress_owner[b], 1);
		}
		rangelock_release(&w.req);
	}
	io_engine_destroy(e);
	return NULL;
}

START_TEST(rl_threads)
{
	pthread_t t[RL_THREADS];
	uintptr_t i;

	rangelock_init(&stress_rl);
	atomic_store(&stress_bad, false);
	atomic_store(&stress_waits, 0);
	for (i = 0; i < RL_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, rl_stress_thread, (void *)i), 0);
	for (i = 0; i < RL_THREADS; i++)
		pthread_join(t[i], NULL);
	ck_assert(!atomic_load(&stress_bad));
	/* the test is only worth something if requests really waited and were
	 * granted from other threads */
	ck_assert_uint_gt(atomic_load(&stress_waits), 100);
	rangelock_destroy(&stress_rl);
}
END_TEST

/* ========================================================= SCSI fixture */

#define V_NAME "iqn.2026-01.org.example:vaai-test"
#define V_OTHER "iqn.2026-01.org.example:other"
#define MEM_BLOCKS 16384u               /* 8 MiB of 512-byte blocks */
#define BUF_CAP (4u * 1024 * 1024)

static struct scsi_target tgt, other;
static struct scsi_nexus nx, nxo;
static struct backstore *thin_bs, *thick_bs, *other_bs, *thin2_bs;
static struct sh_fake fake;             /* LUN 2: holds requests until released */
static struct scsi_lun *lun_thin, *lun_thick, *lun_fake, *lun_other, *lun_thin2;

static void setup(void)
{
	struct scsi_lun_params lp = { .id = 0, .block_size = 512, .nblocks = MEM_BLOCKS,
				      .thin = true };

	sh_setup(BUF_CAP);
	thin_bs = sh_memory_bs((uint64_t)MEM_BLOCKS * 512, true);
	thin2_bs = sh_memory_bs((uint64_t)MEM_BLOCKS * 512, true);
	thick_bs = sh_memory_bs((uint64_t)MEM_BLOCKS * 512, false);
	other_bs = sh_memory_bs((uint64_t)MEM_BLOCKS * 512, true);
	sh_fake_init(&fake, (uint64_t)MEM_BLOCKS * 512);

	scsi_target_init(&tgt, V_NAME, 1);
	scsi_target_init(&other, V_OTHER, 2);
	ck_assert_int_eq(scsi_lun_create(&lun_thin, &tgt, &lp, thin_bs), 0);
	lp.id = 1;
	lp.thin = false;
	ck_assert_int_eq(scsi_lun_create(&lun_thick, &tgt, &lp, thick_bs), 0);
	lp.id = 2;
	ck_assert_int_eq(scsi_lun_create(&lun_fake, &tgt, &lp, &fake.bs), 0);
	lp.id = 3;
	lp.thin = true;
	ck_assert_int_eq(scsi_lun_create(&lun_thin2, &tgt, &lp, thin2_bs), 0);
	lp.id = 0;
	ck_assert_int_eq(scsi_lun_create(&lun_other, &other, &lp, other_bs), 0);
	tgt.luns[0] = lun_thin;
	tgt.luns[1] = lun_thick;
	tgt.luns[2] = lun_fake;
	tgt.luns[3] = lun_thin2;
	other.luns[0] = lun_other;
	sh_nexus_attach(&tgt, &nx, 1);
	sh_nexus_attach(&other, &nxo, 2);
}

static void teardown(void)
{
	scsi_nexus_detach(&nx);
	scsi_nexus_detach(&nxo);
	scsi_lun_destroy(lun_thin);
	scsi_lun_destroy(lun_thin2);
	scsi_lun_destroy(lun_thick);
	scsi_lun_destroy(lun_fake);
	scsi_lun_destroy(lun_other);
	scsi_target_destroy(&tgt);
	scsi_target_destroy(&other);
	sh_teardown();
	backstore_close(thin_bs);
	backstore_close(thin2_bs);
	backstore_close(thick_bs);
	backstore_close(other_bs);
}

/* LUN 2's oldest request succeeds; READs read fill. */
static struct bs_io *fake_release(uint8_t fill)
{
	return sh_fake_release(&fake, 0, fill);
}

/* A 16-byte CDB on a LUN of nx's target (tests/scsi_harness.h). */
static void run(struct sh_run *r, struct scsi_nexus *n, uint64_t lun, const uint8_t *cdb,
		const void *out, uint32_t out_len)
{
	sh_run(r, n, lun, cdb, 16, out, out_len);
}

static void cdb16(uint8_t *cdb, uint8_t op, uint8_t b1, uint64_t lba, uint32_t len)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	cdb[1] = b1;
	put_be64(cdb + 2, lba);
	put_be32(cdb + 10, len);
}

static void mem_write(struct scsi_lun *l, uint64_t lba, const uint8_t *data, uint32_t len)
{
	struct sh_run r;
	uint8_t cdb[16];

	cdb16(cdb, 0x8a, 0, lba, len / 512);
	run(&r, &nx, l->id, cdb, data, len);
	sh_expect_good(&r.cmd);
}

static void mem_read(struct scsi_lun *l, uint64_t lba, uint8_t *out, uint32_t len)
{
	struct sh_run r;
	uint8_t cdb[16];

	cdb16(cdb, 0x88, 0, lba, len / 512);
	run(&r, &nx, l->id, cdb, NULL, 0);
	sh_expect_good(&r.cmd);
	memcpy(out, sh_buf, len);
}

static void caw_cdb(uint8_t *cdb, uint8_t b1, uint64_t lba, uint8_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = 0x89;
	cdb[1] = b1;
	put_be64(cdb + 2, lba);
	cdb[13] = n;
}

/* ===================================================== COMPARE AND WRITE */

START_TEST(caw_validation)
{
	struct sh_run r;
	uint8_t cdb[16], data[2048];

	memset(data, 0, sizeof(data));
	/* NUMBER OF LOGICAL BLOCKS 0 with data-out: INVALID FIELD IN CDB */
	caw_cdb(cdb, 0, 0, 0);
	run(&r, &nx, 0, cdb, data, 1024);
	ck_assert(r.parse_failed);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x24, 0x00);
	/* ... and without: nothing to do, GOOD */
	run(&r, &nx, 0, cdb, NULL, 0);
	sh_expect_good(&r.cmd);
	/* data-out not 2 x NUMBER blocks */
	caw_cdb(cdb, 0, 0, 1);
	run(&r, &nx, 0, cdb, data, 2048);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x24, 0x00);
	/* past the end */
	caw_cdb(cdb, 0, MEM_BLOCKS - 1, 2);
	run(&r, &nx, 0, cdb, data, 2048);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x21, 0x00);
	/* WRPROTECT: no protection information */
	caw_cdb(cdb, 0x20, 0, 1);
	run(&r, &nx, 0, cdb, data, 1024);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x24, 0x00);
	/* DPO and FUA are accepted */
	caw_cdb(cdb, 0x18, 0, 1);
	run(&r, &nx, 0, cdb, data, 1024);
	sh_expect_good(&r.cmd);
}
END_TEST

START_TEST(caw_compare_and_miscompare)
{
	struct sh_run r;
	uint8_t cdb[16], data[4 * 512], medium[2 * 512];

	memset(medium, 'A', sizeof(medium));
	mem_write(lun_thin, 10, medium, sizeof(medium));
	/* 2 blocks: compare A..., write B... */
	memset(data, 'A', 1024);
	memset(data + 1024, 'B', 1024);
	caw_cdb(cdb, 0, 10, 2);
	run(&r, &nx, 0, cdb, data, 2048);
	sh_expect_good(&r.cmd);
	mem_read(lun_thin, 10, medium, 1024);
	ck_assert_uint_eq(medium[0], 'B');
	ck_assert_uint_eq(medium[1023], 'B');
	/* miscompare at byte 700: INFORMATION 700 (VALID), nothing written */
	memset(data, 'B', 1024);
	data[700] = 'x';
	memset(data + 1024, 'C', 1024);
	run(&r, &nx, 0, cdb, data, 2048);
	sh_expect_fixed_sense(&r.cmd, SK_MISCOMPARE, 0x1d, 0x00);
	ck_assert_uint_eq(r.cmd.sense[0] & 0x80, 0x80);
	ck_assert_uint_eq(get_be32(r.cmd.sense + 3), 700);
	mem_read(lun_thin, 10, medium, 1024);
	ck_assert_uint_eq(medium[0], 'B');
	ck_assert_uint_eq(medium[700], 'B');
	ck_assert_uint_eq(medium[1023], 'B');
}
END_TEST

/* COMPARE AND WRITE waits for a WRITE in flight on its LBA, then reads. */
START_TEST(caw_waits_for_write)
{
	struct sh_run w, c;
	uint8_t cdb[16], data[1024];
	struct bs_io *io;

	memset(data, 0x11, sizeof(data));
	cdb16(cdb, 0x8a, 0, 5, 1);
	run(&w, &nx, 2, cdb, data, 512);
	ck_assert(w.pending);
	ck_assert_int_eq(fake.npending, 1);
	/* its own buffer: the command keeps pointing into it */
	{
		static uint8_t buf2[BUF_CAP] __attribute__((aligned(4096)));
		uint8_t *save = sh_buf;

		sh_buf = buf2;
		memset(data, 0x11, 512);
		memset(data + 512, 0x22, 512);
		caw_cdb(cdb, 0, 5, 1);
		run(&c, &nx, 2, cdb, data, 1024);
		sh_buf = save;
	}
	ck_assert(c.pending);
	/* queued on the range lock: no backstore request yet */
	ck_assert_int_eq(fake.npending, 1);
	io = fake_release(0);
	ck_assert_int_eq(io->op, BS_OP_WRITE);
	ck_assert_int_eq(sh_completed, 1);
	io_engine_wait(sh_eng);        /* the grant arrives through the engine */
	ck_assert_int_eq(fake.npending, 1);
	ck_assert_int_eq(fake.pending[0]->op, BS_OP_READ);
	fake_release(0x11);         /* compare data matches */
	ck_assert_int_eq(fake.npending, 1);
	ck_assert_int_eq(fake.pending[0]->op, BS_OP_WRITE);
	fake_release(0);
	ck_assert_int_eq(sh_completed, 2);
	sh_expect_good(&c.cmd);
}
END_TEST

/* An abort seen before the write is submitted: nothing written. */
START_TEST(caw_abort_before_write)
{
	struct sh_run c;
	uint8_t cdb[16], data[1024];

	memset(data, 0x11, 512);
	memset(data + 512, 0x22, 512);
	caw_cdb(cdb, 0, 7, 1);
	run(&c, &nx, 2, cdb, data, 1024);
	ck_assert(c.pending);
	ck_assert_int_eq(fake.pending[0]->op, BS_OP_READ);
	atomic_store(&c.cmd.aborted, true);
	fake_release(0x11);
	ck_assert_int_eq(fake.npending, 0);         /* no WRITE */
	ck_assert_int_eq(sh_completed, 1);
	ck_assert_uint_eq(c.cmd.status, SAM_STAT_TASK_ABORTED);
	/* and the lock was released: another COMPARE AND WRITE proceeds */
	run(&c, &nx, 2, cdb, data, 1024);
	ck_assert_int_eq(fake.npending, 1);
	fake_release(0x11);
	fake_release(0);
	sh_expect_good(&c.cmd);
}
END_TEST

/* SCSI-2 RESERVE waits for the write in flight; a COMPARE AND WRITE queued
 * behind it then meets the reservation: RESERVATION CONFLICT, nothing read
 * or written. */
START_TEST(caw_against_reserve)
{
	static uint8_t buf2[BUF_CAP] __attribute__((aligned(4096)));
	static uint8_t buf3[BUF_CAP] __attribute__((aligned(4096)));
	struct scsi_nexus nx2;
	struct sh_run w, rv, c;
	uint8_t cdb[16], data[1024], *save = sh_buf;

	sh_nexus_attach(&tgt, &nx2, 3);
	memset(data, 0x11, sizeof(data));
	cdb16(cdb, 0x8a, 0, 5, 1);
	run(&w, &nx, 2, cdb, data, 512);
	ck_assert(w.pending);
	memset(cdb, 0, 16);
	cdb[0] = 0x16;                       /* RESERVE(6) from another nexus */
	sh_buf = buf2;
	run(&rv, &nx2, 2, cdb, NULL, 0);
	ck_assert(rv.pending);               /* waits for the WRITE */
	caw_cdb(cdb, 0, 5, 1);
	sh_buf = buf3;
	run(&c, &nx, 2, cdb, data, 1024);
	sh_buf = save;
	ck_assert(c.pending);
	ck_assert_int_eq(fake.npending, 1);
	fake_release(0);                     /* the WRITE ends */
	while (sh_completed < 3)
		io_engine_wait(sh_eng);
	sh_expect_good(&rv.cmd);
	ck_assert_uint_eq(c.cmd.status, SAM_STAT_RESERVATION_CONFLICT);
	ck_assert_int_eq(fake.npending, 0);  /* no READ, no WRITE */
	memset(cdb, 0, 16);
	cdb[0] = 0x17;
	run(&rv, &nx2, 2, cdb, NULL, 0);
	sh_expect_good(&rv.cmd);
	scsi_nexus_detach(&nx2);
}
END_TEST

/* =========================================================== WRITE SAME */

START_TEST(ws_validation)
{
	struct sh_run r;
	uint8_t cdb[16], blk[512];

	memset(blk, 0, sizeof(blk));
	/* UNMAP on a thick LUN: LBPWS is 0 */
	cdb16(cdb, 0x93, 0x08, 0, 8);
	run(&r, &nx, 1, cdb, blk, 512);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x24, 0x00);
	/* ANCHOR: ANC_SUP is 0 */
	cdb16(cdb, 0x93, 0x18, 0, 8);
	run(&r, &nx, 0, cdb, blk, 512);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x24, 0x00);
	/* past the end, and LBA past the end with 0 blocks */
	cdb16(cdb, 0x93, 0, MEM_BLOCKS - 1, 2);
	run(&r, &nx, 0, cdb, blk, 512);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x21, 0x00);
	cdb16(cdb, 0x93, 0, MEM_BLOCKS, 0);
	run(&r, &nx, 0, cdb, blk, 512);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x21, 0x00);
	/* data-out other than one block */
	cdb16(cdb, 0x93, 0, 0, 2);
	run(&r, &nx, 0, cdb, blk, 256);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x24, 0x00);
	/* WRITE SAME(10): the same, 0 blocks = to the end (8 MiB < max) */
	memset(cdb, 0, 16);
	cdb[0] = 0x41;
	put_be32(cdb + 2, MEM_BLOCKS - 4);
	run(&r, &nx, 0, cdb, blk, 512);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.nblocks, 4);
}
END_TEST

START_TEST(ws_pattern_and_zero)
{
	struct sh_run r;
	uint8_t cdb[16], blk[512], *rd = malloc(3000 * 512);
	unsigned i;

	ck_assert_ptr_nonnull(rd);
	for (i = 0; i < 512; i++)
		blk[i] = (uint8_t)(i * 3 + 1);
	/* 3000 blocks: more than one vectored request (1024 blocks each) */
	cdb16(cdb, 0x93, 0, 100, 3000);
	run(&r, &nx, 0, cdb, blk, 512);
	sh_expect_good(&r.cmd);
	mem_read(lun_thin, 100, rd, 3000 * 512);
	for (i = 0; i < 3000; i++)
		ck_assert_int_eq(memcmp(rd + (size_t)i * 512, blk, 512), 0);
	mem_read(lun_thin, 99, rd, 512);
	ck_assert_uint_eq(rd[0], 0);
	/* NDOB: zeroes, no data-out */
	cdb16(cdb, 0x93, 0x01, 200, 50);
	run(&r, &nx, 0, cdb, NULL, 0);
	sh_expect_good(&r.cmd);
	mem_read(lun_thin, 200, rd, 50 * 512);
	for (i = 0; i < 50 * 512; i++)
		ck_assert_uint_eq(rd[i], 0);
	mem_read(lun_thin, 250, rd, 512);
	ck_assert_int_eq(memcmp(rd, blk, 512), 0);
	free(rd);
}
END_TEST

/* ============================================== UNMAP and GET LBA STATUS */

static uint32_t unmap_list(uint8_t *p, const uint64_t *lba, const uint32_t *n, unsigned k)
{
	unsigned i;

	memset(p, 0, 8 + 16 * k);
	put_be16(p, (uint16_t)(6 + 16 * k));
	put_be16(p + 2, (uint16_t)(16 * k));
	for (i = 0; i < k; i++) {
		put_be64(p + 8 + 16 * i, lba[i]);
		put_be32(p + 8 + 16 * i + 8, n[i]);
	}
	return 8 + 16 * k;
}

static void lba_status(uint64_t lba, uint8_t *st, uint32_t *nblk)
{
	struct sh_run r;
	uint8_t cdb[16];

	cdb16(cdb, 0x9e, 0x12, lba, 64);
	run(&r, &nx, 0, cdb, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_ge(r.cmd.data_len, 24);
	ck_assert_uint_eq(get_be64(sh_buf + 8), lba);
	*nblk = get_be32(sh_buf + 16);
	*st = sh_buf[20] & 0x0f;
}

START_TEST(unmap_validation)
{
	struct sh_run r;
	uint8_t cdb[16], list[8 + 16 * 300];
	uint64_t lba[300];
	uint32_t n[300], len;
	unsigned i;

	memset(cdb, 0, 16);
	cdb[0] = 0x42;
	/* a thick LUN has no UNMAP at all */
	put_be16(cdb + 7, 24);
	lba[0] = 0;
	n[0] = 8;
	len = unmap_list(list, lba, n, 1);
	run(&r, &nx, 1, cdb, list, len);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x20, 0x00);
	/* parameter list shorter than its header */
	put_be16(cdb + 7, 6);
	run(&r, &nx, 0, cdb, list, 6);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x1a, 0x00);
	/* ANCHOR */
	cdb[1] = 0x01;
	put_be16(cdb + 7, 24);
	run(&r, &nx, 0, cdb, list, 24);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x24, 0x00);
	cdb[1] = 0;
	/* more descriptors than advertised (256) */
	for (i = 0; i < 257; i++) {
		lba[i] = i * 8;
		n[i] = 8;
	}
	len = unmap_list(list, lba, n, 257);
	put_be16(cdb + 7, (uint16_t)len);
	run(&r, &nx, 0, cdb, list, len);
	ck_assert_uint_eq(r.cmd.status, SAM_STAT_CHECK_CONDITION);
	ck_assert_uint_eq(r.cmd.sense[2] & 0x0f, SK_ILLEGAL_REQUEST);
	/* one descriptor past the end: LBA OUT OF RANGE, nothing unmapped */
	{
		uint8_t pat[8 * 512];

		memset(pat, 0x77, sizeof(pat));
		mem_write(lun_thin, 0, pat, sizeof(pat));
		lba[0] = 0;
		n[0] = 8;
		lba[1] = MEM_BLOCKS - 4;
		n[1] = 8;
		len = unmap_list(list, lba, n, 2);
		put_be16(cdb + 7, (uint16_t)len);
		run(&r, &nx, 0, cdb, list, len);
		sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x21, 0x00);
		mem_read(lun_thin, 0, pat, 512);
		ck_assert_uint_eq(pat[0], 0x77);
	}
	/* UNMAP DATA LENGTH shorter than the descriptors it carries */
	len = unmap_list(list, lba, n, 1);
	put_be16(list, 4);
	put_be16(cdb + 7, (uint16_t)len);
	run(&r, &nx, 0, cdb, list, len);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x00);
	/* an empty list is not an error */
	put_be16(cdb + 7, 0);
	run(&r, &nx, 0, cdb, NULL, 0);
	sh_expect_good(&r.cmd);
}
END_TEST

START_TEST(unmap_deallocates)
{
	struct sh_run r;
	uint8_t cdb[16], list[64], pat[64 * 512], st;
	uint64_t lba[2] = { 64, 256 };
	uint32_t n[2] = { 64, 8 }, len, nb;
	unsigned i;

	memset(pat, 0x55, sizeof(pat));
	mem_write(lun_thin, 64, pat, sizeof(pat));
	mem_write(lun_thin, 256, pat, 8 * 512);
	lba_status(64, &st, &nb);
	ck_assert_uint_eq(st, 0);                     /* mapped */
	memset(cdb, 0, 16);
	cdb[0] = 0x42;
	len = unmap_list(list, lba, n, 2);
	put_be16(cdb + 7, (uint16_t)len);
	run(&r, &nx, 0, cdb, list, len);
	sh_expect_good(&r.cmd);
	mem_read(lun_thin, 64, pat, sizeof(pat));
	for (i = 0; i < sizeof(pat); i++)
		ck_assert_uint_eq(pat[i], 0);         /* LBPRZ */
	lba_status(64, &st, &nb);
	ck_assert_uint_eq(st, 1);                     /* deallocated */
	ck_assert_uint_ge(nb, 64);
	lba_status(256, &st, &nb);
	ck_assert_uint_eq(st, 1);
	/* WRITE SAME UNMAP=1 deallocates too */
	mem_write(lun_thin, 512, pat, 16 * 512);
	memset(pat, 0, 512);
	cdb16(cdb, 0x93, 0x08, 512, 16);
	run(&r, &nx, 0, cdb, pat, 512);
	sh_expect_good(&r.cmd);
	lba_status(512, &st, &nb);
	ck_assert_uint_eq(st, 1);
	/* GET LBA STATUS past the end */
	cdb16(cdb, 0x9e, 0x12, MEM_BLOCKS, 64);
	run(&r, &nx, 0, cdb, NULL, 0);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x21, 0x00);
}
END_TEST

/* ========================================================= advertising */

static void inquiry(uint64_t lun, uint8_t page, bool evpd)
{
	struct sh_run r;
	uint8_t cdb[16];

	memset(cdb, 0, 16);
	cdb[0] = 0x12;
	cdb[1] = evpd ? 1 : 0;
	cdb[2] = page;
	put_be16(cdb + 3, 512);
	run(&r, &nx, lun, cdb, NULL, 0);
	sh_expect_good(&r.cmd);
}

START_TEST(advertised)
{
	struct sh_run r;
	uint8_t cdb[16];
	unsigned off, len;
	bool seen02 = false, seenE4 = false, seen83 = false;

	inquiry(0, 0, false);
	ck_assert_uint_eq(sh_buf[5] & 0x08, 0x08);          /* 3PC */
	inquiry(0, 0xb0, true);
	ck_assert_uint_eq(sh_buf[5], 255);                  /* MAXIMUM COMPARE AND WRITE LENGTH */
	ck_assert_uint_gt(get_be32(sh_buf + 20), 0);        /* MAXIMUM UNMAP LBA COUNT */
	ck_assert_uint_eq(get_be32(sh_buf + 24), 256);      /* descriptors */
	ck_assert_uint_le(get_be32(sh_buf + 28) * 512u, 1u << 20); /* OPTIMAL UNMAP GRANULARITY */
	ck_assert_uint_eq(get_be64(sh_buf + 36), 65535);    /* MAXIMUM WRITE SAME LENGTH */
	inquiry(1, 0xb0, true);
	ck_assert_uint_eq(get_be32(sh_buf + 20), 0);        /* thick: no UNMAP */
	inquiry(0, 0xb2, true);
	ck_assert_uint_eq(sh_buf[5] & 0xe0, 0xe0);          /* LBPU LBPWS LBPWS10 */
	ck_assert_uint_eq(sh_buf[5] & 0x1c, 0x04);          /* LBPRZ */
	inquiry(1, 0xb2, true);
	ck_assert_uint_eq(sh_buf[5], 0);
	cdb16(cdb, 0x9e, 0x10, 0, 32);
	run(&r, &nx, 0, cdb, NULL, 0);
	ck_assert_uint_eq(sh_buf[14] & 0xc0, 0xc0);         /* LBPME LBPRZ */
	run(&r, &nx, 1, cdb, NULL, 0);
	ck_assert_uint_eq(sh_buf[14] & 0xc0, 0x00);
	/* supported VPD pages list 8F; the page lists the descriptors */
	inquiry(0, 0x00, true);
	ck_assert_ptr_nonnull(memchr(sh_buf + 4, 0x8f, sh_buf[3]));
	inquiry(0, 0x8f, true);
	len = get_be16(sh_buf + 2) + 4u;
	for (off = 4; off + 4 <= len; off += 4u + get_be16(sh_buf + off + 2)) {
		uint16_t type = get_be16(sh_buf + off);

		if (type == 0x0001)
			seen83 = sh_buf[off + 5] == 0x83;
		if (type == 0x0008) {
			seen02 = memchr(sh_buf + off + 5, 0x02, sh_buf[off + 4]) != NULL;
			seenE4 = memchr(sh_buf + off + 5, 0xe4, sh_buf[off + 4]) != NULL;
		}
	}
	ck_assert(seen83 && seen02 && seenE4);
}
END_TEST

/* ======================================================== EXTENDED COPY */

static uint32_t xc_cscd(uint8_t *p, const struct scsi_lun *l)
{
	memset(p, 0, 32);
	p[0] = 0xe4;
	p[4] = 0x01;
	p[5] = 0x03;
	p[7] = 16;
	put_be64(p + 8, l->naa);
	put_be64(p + 16, l->naa_ext);
	put_be24(p + 29, l->block_size);
	return 32;
}

static uint32_t xc_seg(uint8_t *p, uint16_t si, uint16_t di, uint16_t nb, uint64_t s, uint64_t d)
{
	memset(p, 0, 28);
	p[0] = 0x02;
	p[3] = 0x18;
	put_be16(p + 4, si);
	put_be16(p + 6, di);
	put_be16(p + 10, nb);
	put_be64(p + 12, s);
	put_be64(p + 20, d);
	return 28;
}

static uint32_t xc_list(uint8_t *p, uint8_t id, uint8_t usage, uint32_t tdl, uint32_t sdl)
{
	p[0] = id;
	p[1] = (uint8_t)(usage << 3);
	put_be16(p + 2, (uint16_t)tdl);
	put_be32(p + 8, sdl);
	put_be32(p + 12, 0);
	return 16 + tdl + sdl;
}

static void xcopy(struct sh_run *r, uint64_t lun, const uint8_t *list, uint32_t len)
{
	uint8_t cdb[16];

	memset(cdb, 0, 16);
	cdb[0] = 0x83;
	put_be32(cdb + 10, len);
	run(r, &nx, lun, cdb, len ? list : NULL, len);
}

static void rcr(struct sh_run *r, uint8_t sa, uint8_t id)
{
	uint8_t cdb[16];

	memset(cdb, 0, 16);
	cdb[0] = 0x84;
	cdb[1] = sa;
	cdb[2] = id;
	put_be32(cdb + 10, 1024);
	run(r, &nx, 0, cdb, NULL, 0);
}

START_TEST(xcopy_validation)
{
	static uint8_t l[16 + 40 * 32 + 80 * 28];
	struct sh_run r;
	uint32_t tdl, sdl, i;

	/* parameter list length 0: nothing, GOOD */
	xcopy(&r, 0, l, 0);
	sh_expect_good(&r.cmd);
	/* shorter than the header */
	memset(l, 0, sizeof(l));
	xcopy(&r, 0, l, 12);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x1a, 0x00);
	/* lengths past the end of the list */
	tdl = xc_cscd(l + 16, lun_thin);
	sdl = xc_seg(l + 16 + tdl, 0, 0, 8, 0, 100);
	xc_list(l, 1, 0, tdl, sdl);
	xcopy(&r, 0, l, 16 + tdl + sdl - 1);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x1a, 0x00);
	/* too many CSCD descriptors (32 advertised) */
	for (i = 0, tdl = 0; i < 33; i++)
		tdl += xc_cscd(l + 16 + tdl, lun_thin);
	sdl = xc_seg(l + 16 + tdl, 0, 0, 8, 0, 100);
	xcopy(&r, 0, l, xc_list(l, 2, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x06);
	/* too many segment descriptors (64) */
	tdl = xc_cscd(l + 16, lun_thin);
	for (i = 0, sdl = 0; i < 65; i++)
		sdl += xc_seg(l + 16 + tdl + sdl, 0, 0, 1, 0, 100);
	xcopy(&r, 0, l, xc_list(l, 3, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x08);
	/* unsupported CSCD type (FC N_Port_Name) */
	tdl = xc_cscd(l + 16, lun_thin);
	l[16] = 0xe0;
	sdl = xc_seg(l + 16 + tdl, 0, 0, 8, 0, 100);
	xcopy(&r, 0, l, xc_list(l, 4, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x07);
	/* unsupported segment type (stream -> stream) */
	tdl = xc_cscd(l + 16, lun_thin);
	sdl = xc_seg(l + 16 + tdl, 0, 0, 8, 0, 100);
	l[16 + tdl] = 0x03;
	xcopy(&r, 0, l, xc_list(l, 5, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x09);
	/* LIST ID USAGE 01b is reserved; 11b needs LIST IDENTIFIER 0 */
	tdl = xc_cscd(l + 16, lun_thin);
	sdl = xc_seg(l + 16 + tdl, 0, 0, 8, 0, 100);
	xcopy(&r, 0, l, xc_list(l, 6, 1, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x00);
	xcopy(&r, 0, l, xc_list(l, 6, 3, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x00);
	/* inline data: none is accepted */
	xc_list(l, 7, 0, tdl, sdl);
	put_be32(l + 12, 4);
	xcopy(&r, 0, l, 16 + tdl + sdl + 4);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x00);
	/* DISK BLOCK LENGTH other than the LUN's */
	tdl = xc_cscd(l + 16, lun_thin);
	put_be24(l + 16 + 29, 4096);
	sdl = xc_seg(l + 16 + tdl, 0, 0, 8, 0, 100);
	xcopy(&r, 0, l, xc_list(l, 8, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x26, 0x00);
	/* a CSCD index past the descriptors */
	tdl = xc_cscd(l + 16, lun_thin);
	sdl = xc_seg(l + 16 + tdl, 0, 1, 8, 0, 100);
	xcopy(&r, 0, l, xc_list(l, 9, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_COPY_ABORTED, 0x0d, 0x02);
	/* a segment past the end of the destination */
	sdl = xc_seg(l + 16 + tdl, 0, 0, 8, 0, MEM_BLOCKS - 1);
	xcopy(&r, 0, l, xc_list(l, 10, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_COPY_ABORTED, 0x00, 0x00);
	/* FAILED SEGMENT DETAILS of that list: the sense it ended with */
	rcr(&r, 0x04, 10);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(sh_buf[56], SAM_STAT_CHECK_CONDITION);
	ck_assert_uint_ge(get_be16(sh_buf + 58), 14);
	ck_assert_uint_eq(sh_buf[60 + 2] & 0x0f, SK_COPY_ABORTED);
	/* COPY STATUS: completed with errors */
	rcr(&r, 0x00, 10);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(sh_buf[4] & 0x7f, 0x02);
	/* a list identifier never used */
	rcr(&r, 0x00, 200);
	sh_expect_fixed_sense(&r.cmd, SK_ILLEGAL_REQUEST, 0x24, 0x00);
}
END_TEST

START_TEST(xcopy_copies)
{
	static uint8_t l[16 + 64 + 4 * 28];
	uint8_t *pat = malloc(64 * 512), *rd = malloc(64 * 512);
	struct sh_run r;
	uint32_t tdl, sdl, i;

	ck_assert_ptr_nonnull(pat);
	ck_assert_ptr_nonnull(rd);
	for (i = 0; i < 64 * 512; i++)
		pat[i] = (uint8_t)(i * 7);
	mem_write(lun_thin, 1000, pat, 64 * 512);
	/* three segments: within LUN 0 (twice) and to LUN 3 */
	tdl = xc_cscd(l + 16, lun_thin);
	tdl += xc_cscd(l + 16 + tdl, lun_thin2);
	sdl = xc_seg(l + 16 + tdl, 0, 0, 32, 1000, 4000);
	sdl += xc_seg(l + 16 + tdl + sdl, 0, 0, 32, 1032, 3000);
	sdl += xc_seg(l + 16 + tdl + sdl, 0, 1, 64, 1000, 200);
	xcopy(&r, 0, l, xc_list(l, 1, 0, tdl, sdl));
	sh_expect_good(&r.cmd);
	mem_read(lun_thin, 4000, rd, 32 * 512);
	ck_assert_int_eq(memcmp(rd, pat, 32 * 512), 0);
	mem_read(lun_thin, 3000, rd, 32 * 512);
	ck_assert_int_eq(memcmp(rd, pat + 32 * 512, 32 * 512), 0);
	{
		struct sh_run rr;
		uint8_t cdb[16];

		cdb16(cdb, 0x88, 0, 200, 64);
		run(&rr, &nx, 3, cdb, NULL, 0);
		sh_expect_good(&rr.cmd);
		ck_assert_int_eq(memcmp(sh_buf, pat, 64 * 512), 0);
	}
	/* COPY STATUS: done, 3 segments, 128 blocks of bytes */
	rcr(&r, 0x00, 1);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(sh_buf[4] & 0x7f, 0x01);
	ck_assert_uint_eq(get_be16(sh_buf + 5), 3);
	ck_assert_uint_eq(sh_buf[7], 0);
	ck_assert_uint_eq(get_be32(sh_buf + 8), 128 * 512);
	/* OPERATING PARAMETERS: the limits enforced above */
	rcr(&r, 0x03, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be16(sh_buf + 8), 32);
	ck_assert_uint_eq(get_be16(sh_buf + 10), 64);
	ck_assert_uint_eq(get_be32(sh_buf + 20), 0);
	ck_assert_uint_eq(sh_buf[43], 2);
	/* a LUN of another target is never reachable (CVE-2020-28374) */
	mem_read(lun_thin, 5000, rd, 512);
	tdl = xc_cscd(l + 16, lun_thin);
	tdl += xc_cscd(l + 16 + tdl, lun_other);
	sdl = xc_seg(l + 16 + tdl, 1, 0, 8, 0, 5000);
	xcopy(&r, 0, l, xc_list(l, 2, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_COPY_ABORTED, 0x0d, 0x02);
	sdl = xc_seg(l + 16 + tdl, 0, 1, 8, 1000, 0);
	xcopy(&r, 0, l, xc_list(l, 3, 0, tdl, sdl));
	sh_expect_fixed_sense(&r.cmd, SK_COPY_ABORTED, 0x0d, 0x02);
	/* nor a LUN another initiator holds reserved (SPC-2 RESERVE) */
	{
		struct scsi_nexus nx2;
		uint8_t cdb[16];

		sh_nexus_attach(&tgt, &nx2, 3);
		memset(cdb, 0, 16);
		cdb[0] = 0x16;                      /* RESERVE(6) of LUN 3 */
		run(&r, &nx2, 3, cdb, NULL, 0);
		sh_expect_good(&r.cmd);
		tdl = xc_cscd(l + 16, lun_thin);
		tdl += xc_cscd(l + 16 + tdl, lun_thin2);
		sdl = xc_seg(l + 16 + tdl, 0, 1, 8, 1000, 0);
		xcopy(&r, 0, l, xc_list(l, 4, 0, tdl, sdl));
		sh_expect_fixed_sense(&r.cmd, SK_COPY_ABORTED, 0x0d, 0x02);
		sdl = xc_seg(l + 16 + tdl, 1, 0, 8, 0, 1000);
		xcopy(&r, 0, l, xc_list(l, 5, 0, tdl, sdl));
		sh_expect_fixed_sense(&r.cmd, SK_COPY_ABORTED, 0x0d, 0x02);
		cdb[0] = 0x17;                      /* RELEASE(6) */
		run(&r, &nx2, 3, cdb, NULL, 0);
		sh_expect_good(&r.cmd);
		sdl = xc_seg(l + 16 + tdl, 0, 1, 8, 1000, 0);
		xcopy(&r, 0, l, xc_list(l, 6, 0, tdl, sdl));
		sh_expect_good(&r.cmd);
		scsi_nexus_detach(&nx2);
	}
	free(pat);
	free(rd);
}
END_TEST

/* ================================== EXTENDED COPY over overlapping ranges */

#define OV_BLOCKS (32u * 2048)                 /* 32 MiB of 512-byte blocks */
#define OV_SEG_BLOCKS (12u * 2048)             /* 12 MiB: chunks of 8 MiB */
#define OV_PIECE (4u << 20)                    /* per WRITE/READ (BUF_CAP) */

/* Pattern byte of LUN byte offset off: a hash of the block number, so no
 * two blocks of the LUN hold the same bytes. */
static uint8_t ov_pat(uint64_t off)
{
	uint32_t h = (uint32_t)(off >> 9) * 2654435761u;

	return (uint8_t)((h >> 24) ^ (h >> 13) ^ (off & 511));
}

/* One segment of LUN id (block size 512) from src_lba to dst_lba over
 * OV_SEG_BLOCKS blocks, after filling [0, OV_BLOCKS / 2) with the pattern;
 * the destination must hold the source's former content (SPC-4 6.4: the
 * copy is of the data as it was, like memmove). */
static void ov_copy_and_check(uint64_t id, struct scsi_lun *l, uint64_t src_lba, uint64_t dst_lba)
{
	uint8_t list[16 + 32 + 28], cdb[16] = { 0x83 };
	uint64_t off, len = (uint64_t)OV_SEG_BLOCKS * 512;
	uint32_t tdl, sdl, xlen, i;
	struct sh_run r;

	for (off = 0; off < (uint64_t)OV_BLOCKS * 512 / 2; off += OV_PIECE) {
		for (i = 0; i < OV_PIECE; i++)
			sh_buf[i] = ov_pat(off + i);
		cdb16(cdb, 0x8a, 0, off >> 9, OV_PIECE >> 9);
		run(&r, &nx, id, cdb, NULL, 0);
		sh_expect_good(&r.cmd);
	}
	tdl = xc_cscd(list + 16, l);
	sdl = xc_seg(list + 16 + tdl, 0, 0, (uint16_t)OV_SEG_BLOCKS, src_lba, dst_lba);
	xlen = xc_list(list, 9, 0, tdl, sdl);
	memset(cdb, 0, 16);
	cdb[0] = 0x83;
	put_be32(cdb + 10, xlen);
	run(&r, &nx, id, cdb, list, xlen);
	sh_expect_good(&r.cmd);
	for (off = 0; off < len; off += OV_PIECE) {
		uint32_t n = (uint32_t)MIN((uint64_t)OV_PIECE, len - off);

		cdb16(cdb, 0x88, 0, dst_lba + (off >> 9), n >> 9);
		run(&r, &nx, id, cdb, NULL, 0);
		sh_expect_good(&r.cmd);
		for (i = 0; i < n; i++)
			if (sh_buf[i] != ov_pat((src_lba << 9) + off + i))
				break;
		ck_assert_msg(i == n, "copy %llu -> %llu: destination byte %llu differs",
			      (unsigned long long)src_lba, (unsigned long long)dst_lba,
			      (unsigned long long)(off + i));
	}
}

/* Issue 17 defect 9: an EXTENDED COPY forward within one LUN over ranges
 * that overlap, longer than one 8 MiB COPY request, must not copy data it
 * has already overwritten; on a memory LUN and on a file LUN. */
static void ov_run(struct backstore *bs)
{
	struct scsi_lun_params lp = { .id = 6, .block_size = 512, .nblocks = OV_BLOCKS };
	struct scsi_lun *l;

	ck_assert_int_eq(scsi_lun_create(&l, &tgt, &lp, bs), 0);
	tgt.luns[6] = l;
	ov_copy_and_check(6, l, 0, 2048);         /* forward by 1 MiB */
	ov_copy_and_check(6, l, 0, 8 * 2048 + 1); /* by just over one chunk */
	ov_copy_and_check(6, l, 2048, 0);         /* backward by 1 MiB */
	ov_copy_and_check(6, l, 100, 100);        /* onto itself */
	tgt.luns[6] = NULL;
	scsi_lun_destroy(l);
}

START_TEST(xcopy_overlap)
{
	struct backstore *mem = sh_memory_bs((uint64_t)OV_BLOCKS * 512, false);
	struct backstore *file;
	const char *tmp = getenv("TMPDIR");
	char path[256], err[128];
	struct bs_params bp = { .type = "file", .size = (uint64_t)OV_BLOCKS * 512,
				.block_size = 512, .thin = true, .create = true };

	ov_run(mem);
	backstore_close(mem);
	snprintf(path, sizeof(path), "%s/check-vaai-overlap.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_int_ge(close(mkstemp(path)), 0);
	bp.path = path;
	ck_assert_msg(backstore_open(&file, &bp, err, sizeof(err)) == 0, "%s", err);
	ov_run(file);
	backstore_close(file);
	unlink(path);
}
END_TEST

/* ============================================= durability with WCE=0 */

/*
 * With the write cache disabled (WCE=0) every command that modifies the
 * medium is durable when it returns GOOD (SBC-4 5.x, the Caching mode page):
 * its writes are FUA, or a FLUSH follows the requests that are not (discard,
 * write zeroes, copy) before the status. The commands run on a thin LUN on
 * its own fake backstore; the test answers each request and keeps the
 * sequence.
 */
struct dur_seq {
	enum bs_op op[16];
	unsigned flags[16];
	unsigned n;
};

static void dur_run(struct sh_run *r, struct sh_fake *f, struct dur_seq *q, uint64_t lun,
		    const uint8_t *cdb, const void *out, uint32_t out_len, uint8_t fill)
{
	memset(q, 0, sizeof(*q));
	run(r, &nx, lun, cdb, out, out_len);
	while (!r->done) {
		if (f->npending == 0) {
			io_engine_wait(sh_eng);     /* a range lock grant, a deferred step */
			continue;
		}
		ck_assert_uint_lt(q->n, 16);
		q->op[q->n] = f->pending[0]->op;
		q->flags[q->n] = f->pending[0]->flags;
		q->n++;
		sh_fake_release(f, 0, fill);
	}
	sh_expect_good(&r->cmd);
}

/* Every modifying request without FUA is followed by a FLUSH. */
static bool dur_durable(const struct dur_seq *q)
{
	bool dirty = false;

	for (unsigned i = 0; i < q->n; i++) {
		if (q->op[i] == BS_OP_FLUSH)
			dirty = false;
		else if (q->op[i] != BS_OP_READ && !(q->flags[i] & BS_IO_FUA))
			dirty = true;
	}
	return !dirty;
}

static bool dur_has(const struct dur_seq *q, enum bs_op op)
{
	for (unsigned i = 0; i < q->n; i++)
		if (q->op[i] == op)
			return true;
	return false;
}

/* Caching mode page of a LUN: WCE (byte 2, bit 2) off. */
static void wce_off(uint64_t lun)
{
	const uint8_t ms[16] = { 0x1a, 0x08, 0x08, 0, 255, 0 };
	uint8_t sel[16] = { 0x15, 0x10, 0, 0, 0, 0 }, page[64];
	struct sh_run r;
	uint32_t plen;

	run(&r, &nx, lun, ms, NULL, 0);
	sh_expect_good(&r.cmd);
	plen = 2u + sh_buf[5];
	memset(page, 0, 4);
	memcpy(page + 4, sh_buf + 4, plen);
	page[4] &= 0x7f;                        /* PS */
	page[4 + 2] &= (uint8_t)~0x04;
	sel[4] = (uint8_t)(4 + plen);
	run(&r, &nx, lun, sel, page, 4 + plen);
	sh_expect_good(&r.cmd);
}

START_TEST(wce_off_durable)
{
	static struct sh_fake f;
	struct scsi_lun_params lp = { .id = 5, .block_size = 512, .nblocks = MEM_BLOCKS,
				      .thin = true };
	const uint64_t um_lba[2] = { 20, 40 };
	const uint32_t um_n[2] = { 4, 4 };
	uint8_t cdb[16], um[16] = { 0x42 }, xc[16] = { 0x83 };
	uint8_t data[1024], list[16 + 32 + 28], ulist[8 + 32];
	uint32_t tdl, sdl, xlen, ulen;
	struct scsi_lun *l;
	struct dur_seq q;
	struct sh_run r;

	sh_fake_init(&f, (uint64_t)MEM_BLOCKS * 512);
	f.bs.thin = true;
	f.bs.discard_zeroes = true;
	ck_assert_int_eq(scsi_lun_create(&l, &tgt, &lp, &f.bs), 0);
	tgt.luns[5] = l;
	memset(data, 0, sizeof(data));
	ulen = unmap_list(ulist, um_lba, um_n, 2);
	put_be16(um + 7, (uint16_t)ulen);
	tdl = xc_cscd(list + 16, l);
	sdl = xc_seg(list + 16 + tdl, 0, 0, 8, 100, 200);
	xlen = xc_list(list, 1, 0, tdl, sdl);
	put_be32(xc + 10, xlen);

	for (int wce = 1; wce >= 0; wce--) {
		if (!wce) {
			wce_off(5);
			ck_assert(!atomic_load(&l->wce));
		}
		/* WRITE(16): FUA when WCE=0 */
		cdb16(cdb, 0x8a, 0, 10, 1);
		dur_run(&r, &f, &q, 5, cdb, data, 512, 0);
		ck_assert(wce || dur_durable(&q));
		/* WRITE SAME(16) of zeroes: WRITE ZEROES */
		cdb16(cdb, 0x93, 0, 10, 8);
		dur_run(&r, &f, &q, 5, cdb, data, 512, 0);
		ck_assert(dur_has(&q, BS_OP_WRITE_ZEROES));
		ck_assert(wce || dur_durable(&q));
		/* WRITE SAME(16) UNMAP=1: DISCARD */
		cdb16(cdb, 0x93, 0x08, 10, 8);
		dur_run(&r, &f, &q, 5, cdb, data, 512, 0);
		ck_assert(dur_has(&q, BS_OP_DISCARD));
		ck_assert(wce || dur_durable(&q));
		/* UNMAP of two ranges: a DISCARD each; with the write cache
		 * on, nothing is flushed */
		dur_run(&r, &f, &q, 5, um, ulist, ulen, 0);
		ck_assert(dur_has(&q, BS_OP_DISCARD));
		ck_assert(wce || dur_durable(&q));
		ck_assert(!wce || !dur_has(&q, BS_OP_FLUSH));
		/* EXTENDED COPY within the LUN: COPY */
		dur_run(&r, &f, &q, 5, xc, list, xlen, 0);
		ck_assert(dur_has(&q, BS_OP_COPY));
		ck_assert(wce || dur_durable(&q));
		ck_assert(!wce || !dur_has(&q, BS_OP_FLUSH));
		/* COMPARE AND WRITE: the medium reads 0x00, as the compare half */
		caw_cdb(cdb, 0, 30, 1);
		dur_run(&r, &f, &q, 5, cdb, data, 1024, 0x00);
		ck_assert(dur_has(&q, BS_OP_WRITE));
		ck_assert(wce || dur_durable(&q));
		/* ORWRITE(16): read, OR, write */
		cdb16(cdb, 0x8b, 0, 31, 1);
		dur_run(&r, &f, &q, 5, cdb, data, 512, 0);
		ck_assert(wce || dur_durable(&q));
		/* WRITE AND VERIFY(16): write through, read back */
		cdb16(cdb, 0x8e, 0, 32, 1);
		dur_run(&r, &f, &q, 5, cdb, data, 512, 0);
		ck_assert(dur_durable(&q));
	}
	tgt.luns[5] = NULL;
	scsi_lun_destroy(l);
}
END_TEST

Suite *vaai_suite(void)
{
	Suite *s = suite_create("vaai");
	TCase *lock = tcase_create("rangelock");
	TCase *cmds = tcase_create("commands");

	tcase_add_test(lock, rl_shared_and_exclusive);
	tcase_add_test(lock, rl_fifo_no_starvation);
	tcase_add_test(lock, rl_threads);
	tcase_set_timeout(lock, 60);
	suite_add_tcase(s, lock);

	tcase_add_checked_fixture(cmds, setup, teardown);
	tcase_add_test(cmds, caw_validation);
	tcase_add_test(cmds, caw_compare_and_miscompare);
	tcase_add_test(cmds, caw_waits_for_write);
	tcase_add_test(cmds, caw_abort_before_write);
	tcase_add_test(cmds, caw_against_reserve);
	tcase_add_test(cmds, ws_validation);
	tcase_add_test(cmds, ws_pattern_and_zero);
	tcase_add_test(cmds, unmap_validation);
	tcase_add_test(cmds, unmap_deallocates);
	tcase_add_test(cmds, advertised);
	tcase_add_test(cmds, xcopy_validation);
	tcase_add_test(cmds, xcopy_copies);
	tcase_add_test(cmds, wce_off_durable);
	tcase_add_test(cmds, xcopy_overlap);
	suite_add_tcase(s, cmds);
	return s;
}
