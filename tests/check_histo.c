/*
 * Check suite for scsi/histo.c: the bucket edges (table-driven), a known
 * command mix through the real SCSI layer (memory backstore) giving the
 * expected buckets of every histogram, outstanding counts from commands
 * held in flight, interarrival times from given arrival stamps, backstore
 * latency only for commands that used the backstore, the switch, reset by
 * baseline, initiator sets, and shards written by several threads summed
 * exactly.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "tests/check_suites.h"
#include "backstore/backstore.h"
#include "backstore/io_engine.h"
#include "scsi/scsi.h"
#include "scsi/histo.h"
#include "scsi/stats.h"

#define HI_IQN "iqn.2026-01.org.example:histo"
#define HI_INIT_A "iqn.2026-01.org.example:host-a"
#define HI_INIT_B "iqn.2026-01.org.example:host-b"
#define HI_BLOCKS 8192u

static struct scsi_target tgt;
static struct scsi_nexus nx_a, nx_b;
static struct io_engine *eng;
static struct backstore *membs;
static struct scsi_lun *lun;
static int completed;

static void setup(void)
{
	struct bs_params bp = { .type = "memory", .size = (uint64_t)HI_BLOCKS * 512, .block_size = 512 };
	struct scsi_lun_params lp = { .id = 0, .block_size = 512, .nblocks = HI_BLOCKS };
	char err[128];

	eng = io_engine_create(64, false);
	ck_assert_ptr_nonnull(eng);
	ck_assert_int_eq(backstore_open(&membs, &bp, err, sizeof(err)), 0);
	scsi_target_init(&tgt, HI_IQN, 0);
	ck_assert_int_eq(scsi_lun_create(&lun, &tgt, &lp, membs), 0);
	ck_assert_ptr_nonnull(lun->priv_histo);
	tgt.luns[0] = lun;
	memset(&nx_a, 0, sizeof(nx_a));
	nx_a.id = 1;
	strcpy(nx_a.initiator_name, HI_INIT_A);
	memset(&nx_b, 0, sizeof(nx_b));
	nx_b.id = 2;
	strcpy(nx_b.initiator_name, HI_INIT_B);
	scsi_nexus_attach(&tgt, &nx_a);
	scsi_nexus_attach(&tgt, &nx_b);
	scsi_ua_clear(&nx_a, 0);   /* POWER ON: not what these tests are about */
	scsi_ua_clear(&nx_b, 0);
}

static void teardown(void)
{
	scsi_nexus_detach(&nx_a);
	scsi_nexus_detach(&nx_b);
	scsi_lun_destroy(lun);
	scsi_target_destroy(&tgt);
	io_engine_destroy(eng);
	backstore_close(membs);
}

static void on_complete(struct scsi_cmd *cmd)
{
	(void)cmd;
	completed++;
}

static void cdb_rw(uint8_t *cdb, uint8_t op, uint64_t lba, uint32_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	if (op == 0x88 || op == 0x8a) {
		for (int i = 0; i < 8; i++)
			cdb[2 + i] = (uint8_t)(lba >> (56 - 8 * i));
		for (int i = 0; i < 4; i++)
			cdb[10 + i] = (uint8_t)(n >> (24 - 8 * i));
	} else {
		for (int i = 0; i < 4; i++)
			cdb[2 + i] = (uint8_t)(lba >> (24 - 8 * i));
		cdb[7] = (uint8_t)(n >> 8);
		cdb[8] = (uint8_t)n;
	}
}

/* A command as the transport starts it: parsed (the arrival hook) at
 * arrival time at_ns, not yet executed. */
static struct scsi_cmd *arrive(struct scsi_nexus *nx, const uint8_t *cdb, uint64_t at_ns)
{
	struct scsi_cmd *c = calloc(1, sizeof(*c));

	ck_assert_ptr_nonnull(c);
	c->buf = aligned_alloc(4096, 1u << 20);
	ck_assert_ptr_nonnull(c->buf);
	c->buf_cap = 1u << 20;
	scsi_cmd_reset(c);
	c->nexus = nx;
	c->lun_id = 0;
	memcpy(c->cdb, cdb, 16);
	c->eng = eng;
	c->complete = on_complete;
	c->start_ns = at_ns;
	ck_assert_int_eq(scsi_cmd_parse(c), SR_OK);
	return c;
}

/* Execute, send the status, free: what the transport does next. */
static void finish(struct scsi_cmd *c, bool execute)
{
	int before = completed;

	if (execute) {
		c->exp_xfer_len = c->xfer_len;
		if (c->dir == SCSI_DIR_WRITE) {
			c->buf_len = c->xfer_len;
			memset(c->buf, 0x5a, c->buf_len);
		}
		if (scsi_cmd_execute(c))
			while (completed == before)
				io_engine_wait(eng);
		ck_assert_uint_eq(c->status, SAM_STAT_GOOD);
	}
	scsi_histo_sent(c);
	scsi_histo_end(c);
	ck_assert_uint_eq(c->histo_sets, 0);
	scsi_stats_release(c);
	free(c->buf);
	free(c);
}

static void one(struct scsi_nexus *nx, uint8_t op, uint64_t lba, uint32_t n, uint64_t at_ns)
{
	uint8_t cdb[16];

	cdb_rw(cdb, op, lba, n);
	finish(arrive(nx, cdb, at_ns), true);
}

static uint64_t bucket(const struct scsi_histo_snap *s, enum scsi_histo_kind k,
		       enum scsi_histo_class c, int64_t v)
{
	return s->b[k][c][scsi_histo_bucket(k, v)];
}

START_TEST(test_bucket_edges)
{
	static const struct {
		enum scsi_histo_kind k;
		int64_t v;
		unsigned b;
	} cases[] = {
		{ HISTO_IO_LENGTH, 0, 0 }, { HISTO_IO_LENGTH, 512, 0 }, { HISTO_IO_LENGTH, 513, 1 },
		{ HISTO_IO_LENGTH, 4096, 3 }, { HISTO_IO_LENGTH, 4097, 4 },
		{ HISTO_IO_LENGTH, 524288, 10 }, { HISTO_IO_LENGTH, 524289, 11 },
		{ HISTO_IO_LENGTH, 1 << 30, 11 },
		{ HISTO_SEEK, -1000000, 0 }, { HISTO_SEEK, -500000, 0 }, { HISTO_SEEK, -499999, 1 },
		{ HISTO_SEEK, -1, 15 }, { HISTO_SEEK, 0, 16 }, { HISTO_SEEK, 1, 17 },
		{ HISTO_SEEK, 2, 18 }, { HISTO_SEEK, 3, 19 }, { HISTO_SEEK, 500000, 32 },
		{ HISTO_SEEK, 500001, 33 },
		{ HISTO_OUTSTANDING, 1, 0 }, { HISTO_OUTSTANDING, 2, 1 }, { HISTO_OUTSTANDING, 3, 2 },
		{ HISTO_OUTSTANDING, 32, 10 }, { HISTO_OUTSTANDING, 33, 11 },
		{ HISTO_OUTSTANDING, 65, 12 },
		{ HISTO_INTERARRIVAL, 999, 0 }, { HISTO_INTERARRIVAL, 1000, 0 },
		{ HISTO_INTERARRIVAL, 1001, 1 }, { HISTO_INTERARRIVAL, 100000001, 11 },
		{ HISTO_LATENCY, 250000, 4 }, { HISTO_LATENCY, 250001, 5 },
		{ HISTO_LATENCY, 200000000, 12 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(scsi_histo_bucket(cases[i].k, cases[i].v) == cases[i].b,
			      "%s %lld: bucket %u, expected %u", scsi_histo_desc(cases[i].k)->name,
			      (long long)cases[i].v, scsi_histo_bucket(cases[i].k, cases[i].v),
			      cases[i].b);
	for (unsigned k = 0; k < HISTO__KINDS; k++) {
		const struct scsi_histo_desc *d = scsi_histo_desc(k);

		ck_assert_uint_le(d->n_buckets, HISTO_MAX_BUCKETS);
		for (unsigned i = 1; i + 1 < d->n_buckets; i++)
			ck_assert_int_lt(d->edges[i - 1], d->edges[i]);
	}
}
END_TEST

/*
 * The mix, arrival times in microseconds from 1 s:
 *   t=0    READ(10)  LBA 0,    8 blocks  (4 KiB)
 *   t=5    READ(10)  LBA 8,    8 blocks  sequential: +1
 *   t=25   WRITE(10) LBA 100,  1 block   (512 B)
 *   t=225  READ(16)  LBA 1000, 256 blocks (128 KiB): +984 from LBA 15
 *   t=1225 READ(10)  LBA 16,   8 blocks: -1239 from 1255, closest +1 from 15
 *   t=1226 TEST UNIT READY (all only: length 0, no LBA)
 * The first four are held in flight together, the last two alone.
 */
START_TEST(test_known_mix)
{
	const uint64_t t0 = 1000000000ull;
	struct scsi_histo_snap *s = malloc(sizeof(*s));
	struct scsi_cmd *held[4];
	uint8_t cdb[16];

	cdb_rw(cdb, 0x28, 0, 8);
	held[0] = arrive(&nx_a, cdb, t0);
	cdb_rw(cdb, 0x28, 8, 8);
	held[1] = arrive(&nx_a, cdb, t0 + 5000);
	cdb_rw(cdb, 0x2a, 100, 1);
	held[2] = arrive(&nx_a, cdb, t0 + 25000);
	cdb_rw(cdb, 0x88, 1000, 256);
	held[3] = arrive(&nx_a, cdb, t0 + 225000);
	for (int i = 0; i < 4; i++)
		finish(held[i], true);
	one(&nx_a, 0x28, 16, 8, t0 + 1225000);
	memset(cdb, 0, sizeof(cdb));
	finish(arrive(&nx_a, cdb, t0 + 1226000), false);

	ck_assert_int_eq(scsi_histo_snapshot(lun, NULL, s), 0);
	/* I/O length */
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_READ], 4);
	ck_assert_uint_eq(bucket(s, HISTO_IO_LENGTH, HISTO_READ, 4096), 3);
	ck_assert_uint_eq(bucket(s, HISTO_IO_LENGTH, HISTO_READ, 131072), 1);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_WRITE], 1);
	ck_assert_uint_eq(bucket(s, HISTO_IO_LENGTH, HISTO_WRITE, 512), 1);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_ALL], 6);
	ck_assert_uint_eq(s->b[HISTO_IO_LENGTH][HISTO_ALL][0], 2);   /* 512 B and 0 B */
	ck_assert_int_eq(s->sum[HISTO_IO_LENGTH][HISTO_ALL], 3 * 4096 + 512 + 131072);
	/* seek distance: reads 0 -> 8 (+1), 8 -> 1000 (+985), 1000 -> 16 (-1239) */
	ck_assert_uint_eq(s->count[HISTO_SEEK][HISTO_READ], 3);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK, HISTO_READ, 1), 1);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK, HISTO_READ, 985), 1);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK, HISTO_READ, -1239), 1);
	ck_assert_int_eq(s->sum[HISTO_SEEK][HISTO_READ], 1 + 985 - 1239);
	ck_assert_uint_eq(s->count[HISTO_SEEK][HISTO_WRITE], 0);   /* one write: no previous */
	/* all: 0 -> 8 (+1), 15 -> 100 (+85), 100 -> 1000 (+900), 1255 -> 16 (-1239) */
	ck_assert_uint_eq(s->count[HISTO_SEEK][HISTO_ALL], 4);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK, HISTO_ALL, 85), 1);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK, HISTO_ALL, 900), 1);
	ck_assert_int_eq(s->sum[HISTO_SEEK][HISTO_ALL], 1 + 85 + 900 - 1239);
	/* closest of the recent: the last read is +1 from the second one */
	ck_assert_uint_eq(s->count[HISTO_SEEK_CLOSEST][HISTO_READ], 3);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK_CLOSEST, HISTO_READ, 1), 2);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK_CLOSEST, HISTO_READ, 985), 1);
	ck_assert_int_eq(s->sum[HISTO_SEEK_CLOSEST][HISTO_READ], 1 + 985 + 1);
	/* outstanding at arrival: reads 1, 2, 3 then 1; all 1, 2, 3, 4, 1, 1 */
	ck_assert_uint_eq(bucket(s, HISTO_OUTSTANDING, HISTO_READ, 1), 2);
	ck_assert_uint_eq(bucket(s, HISTO_OUTSTANDING, HISTO_READ, 2), 1);
	ck_assert_uint_eq(bucket(s, HISTO_OUTSTANDING, HISTO_READ, 3), 1);
	ck_assert_uint_eq(bucket(s, HISTO_OUTSTANDING, HISTO_WRITE, 1), 1);
	ck_assert_uint_eq(bucket(s, HISTO_OUTSTANDING, HISTO_ALL, 1), 3);
	ck_assert_uint_eq(bucket(s, HISTO_OUTSTANDING, HISTO_ALL, 2), 1);
	ck_assert_uint_eq(s->b[HISTO_OUTSTANDING][HISTO_ALL][2], 2);   /* 3 and 4 */
	ck_assert_int_eq(s->sum[HISTO_OUTSTANDING][HISTO_ALL], 1 + 2 + 3 + 4 + 1 + 1);
	/* interarrival: reads 5, 220, 1000 us; all 5, 20, 200, 1000, 1 us */
	ck_assert_uint_eq(s->count[HISTO_INTERARRIVAL][HISTO_READ], 3);
	ck_assert_uint_eq(bucket(s, HISTO_INTERARRIVAL, HISTO_READ, 5000), 1);
	ck_assert_uint_eq(bucket(s, HISTO_INTERARRIVAL, HISTO_READ, 220000), 1);
	ck_assert_uint_eq(bucket(s, HISTO_INTERARRIVAL, HISTO_READ, 1000000), 1);
	ck_assert_int_eq(s->sum[HISTO_INTERARRIVAL][HISTO_READ], (5 + 220 + 1000) * 1000);
	ck_assert_uint_eq(s->count[HISTO_INTERARRIVAL][HISTO_ALL], 5);
	ck_assert_uint_eq(s->b[HISTO_INTERARRIVAL][HISTO_ALL][0], 1);   /* 1 us */
	ck_assert_uint_eq(s->b[HISTO_INTERARRIVAL][HISTO_ALL][1], 1);   /* 5 us */
	ck_assert_uint_eq(s->b[HISTO_INTERARRIVAL][HISTO_ALL][2], 1);   /* 20 us */
	ck_assert_int_eq(s->sum[HISTO_INTERARRIVAL][HISTO_ALL], (5 + 20 + 200 + 1000 + 1) * 1000);
	/* latency: every command; backstore: the five that used it */
	ck_assert_uint_eq(s->count[HISTO_LATENCY][HISTO_ALL], 6);
	ck_assert_uint_eq(s->count[HISTO_LATENCY][HISTO_READ], 4);
	ck_assert_uint_eq(s->count[HISTO_LATENCY][HISTO_WRITE], 1);
	ck_assert_uint_eq(s->count[HISTO_LATENCY_BS][HISTO_ALL], 5);
	ck_assert_uint_eq(s->count[HISTO_LATENCY_BS][HISTO_READ], 4);
	ck_assert_int_le(s->sum[HISTO_LATENCY_BS][HISTO_ALL], s->sum[HISTO_LATENCY][HISTO_ALL]);
	free(s);
}
END_TEST

START_TEST(test_switch_and_reset)
{
	struct scsi_histo_snap *s = malloc(sizeof(*s));
	struct scsi_cmd *c;
	uint8_t cdb[16];

	ck_assert(scsi_histo_enabled(lun));
	cdb_rw(cdb, 0x28, 0, 1);
	c = arrive(&nx_a, cdb, 1000);            /* counted, then the switch */
	scsi_histo_set_enabled(lun, false);
	ck_assert(!scsi_histo_enabled(lun));
	one(&nx_a, 0x28, 1, 1, 2000);             /* not counted */
	finish(c, true);                          /* still finished: latency, balance */
	ck_assert_int_eq(scsi_histo_snapshot(lun, NULL, s), 0);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_READ], 1);
	ck_assert_uint_eq(s->count[HISTO_LATENCY][HISTO_READ], 1);
	scsi_histo_set_enabled(lun, true);
	one(&nx_a, 0x28, 2, 1, 3000);             /* alone in flight: nothing leaked */
	ck_assert_int_eq(scsi_histo_snapshot(lun, NULL, s), 0);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_READ], 2);
	ck_assert_uint_eq(s->b[HISTO_OUTSTANDING][HISTO_READ][0], 2);
	ck_assert_int_eq(scsi_histo_reset(lun, NULL), 0);
	ck_assert_int_eq(scsi_histo_snapshot(lun, NULL, s), 0);
	for (unsigned k = 0; k < HISTO__KINDS; k++)
		for (unsigned cl = 0; cl < HISTO__CLASSES; cl++) {
			ck_assert_uint_eq(s->count[k][cl], 0);
			ck_assert_int_eq(s->sum[k][cl], 0);
		}
	one(&nx_a, 0x28, 3, 1, 4000);
	ck_assert_int_eq(scsi_histo_snapshot(lun, NULL, s), 0);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_READ], 1);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK, HISTO_READ, 1), 1);   /* the stream lives on */
	free(s);
}
END_TEST

START_TEST(test_initiator_sets)
{
	struct scsi_histo_snap *s = malloc(sizeof(*s));
	static const char *const more[] = { "iqn.2026-01.org.example:c", "iqn.2026-01.org.example:d",
					    "iqn.2026-01.org.example:e" };

	ck_assert_int_eq(scsi_histo_snapshot(lun, HI_INIT_A, s), -ENOENT);
	ck_assert_int_eq(scsi_histo_add_initiator(lun, HI_INIT_A), 0);
	ck_assert_int_eq(scsi_histo_add_initiator(lun, "IQN.2026-01.org.example:HOST-A"), -EEXIST);
	ck_assert_str_eq(scsi_histo_initiator(lun, 0), HI_INIT_A);
	one(&nx_a, 0x2a, 0, 8, 1000);
	one(&nx_b, 0x2a, 8, 8, 2000);
	one(&nx_a, 0x28, 8, 8, 3000);
	ck_assert_int_eq(scsi_histo_snapshot(lun, HI_INIT_A, s), 0);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_ALL], 2);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_WRITE], 1);
	ck_assert_uint_eq(bucket(s, HISTO_SEEK, HISTO_ALL, 1), 1);   /* A's own stream: 7 -> 8 */
	ck_assert_uint_eq(bucket(s, HISTO_INTERARRIVAL, HISTO_ALL, 2000), 1);
	ck_assert_uint_eq(s->count[HISTO_LATENCY][HISTO_ALL], 2);
	ck_assert_int_eq(scsi_histo_snapshot(lun, NULL, s), 0);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_ALL], 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(scsi_histo_add_initiator(lun, more[i]), 0);
	ck_assert_int_eq(scsi_histo_add_initiator(lun, HI_INIT_B), -ENOSPC);
	ck_assert_int_eq(scsi_histo_remove_initiator(lun, HI_INIT_A), 0);
	ck_assert_int_eq(scsi_histo_remove_initiator(lun, HI_INIT_A), -ENOENT);
	ck_assert_ptr_null(scsi_histo_initiator(lun, 0));
	/* the slot again, for B: it starts from zero */
	ck_assert_int_eq(scsi_histo_add_initiator(lun, HI_INIT_B), 0);
	ck_assert_int_eq(scsi_histo_snapshot(lun, HI_INIT_B, s), 0);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_ALL], 0);
	one(&nx_b, 0x28, 0, 1, 4000);
	ck_assert_int_eq(scsi_histo_snapshot(lun, HI_INIT_B, s), 0);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_ALL], 1);
	ck_assert_int_eq(scsi_histo_reset(lun, HI_INIT_B), 0);
	ck_assert_int_eq(scsi_histo_reset(lun, HI_INIT_A), -ENOENT);
	ck_assert_int_eq(scsi_histo_snapshot(lun, HI_INIT_B, s), 0);
	ck_assert_uint_eq(s->count[HISTO_IO_LENGTH][HISTO_ALL], 0);
	free(s);
}
END_TEST

struct worker_arg {
	struct scsi_lun *lun;
	int idx;
	unsigned n;
};

static void *worker(void *p)
{
	struct worker_arg *a = p;
	struct scsi_cmd c;

	if (a->idx >= 0)
		scsi_histo_thread_init((unsigned)a->idx);
	for (unsigned i = 0; i < a->n; i++) {
		memset(&c, 0, sizeof(c));
		c.lun = a->lun;
		c.cdb[0] = 0x28;
		c.lba = i * 8;
		c.nblocks = 8;
		c.xfer_len = 4096;
		c.start_ns = 1000000 + (uint64_t)i * 1000;
		scsi_histo_arrive(&c);
		scsi_histo_sent(&c);
		scsi_histo_end(&c);
	}
	return NULL;
}

START_TEST(test_shards_sum_exactly)
{
	struct scsi_lun_params lp = { .id = 1, .block_size = 512, .nblocks = 8 };
	struct scsi_histo_snap *s = malloc(sizeof(*s));
	struct worker_arg args[6];
	struct scsi_lun *l1;
	pthread_t th[6];

	scsi_histo_configure(4);
	ck_assert_int_eq(scsi_lun_create(&l1, &tgt, &lp, membs), 0);
	scsi_histo_configure(0);
	for (int i = 0; i < 6; i++) {
		args[i] = (struct worker_arg){ .lun = l1, .idx = i < 4 ? i : -1, .n = 20000 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker, &args[i]), 0);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(scsi_histo_snapshot(l1, NULL, s), 0);
	ck_assert_uint_eq(bucket(s, HISTO_IO_LENGTH, HISTO_READ, 4096), 6 * 20000);
	ck_assert_uint_eq(s->count[HISTO_LATENCY][HISTO_READ], 6 * 20000);
	/* each of the four thread streams is sequential; the two threads
	 * sharing the shared shard interleave, so only the total is known */
	ck_assert_uint_eq(s->count[HISTO_SEEK][HISTO_READ], 6 * 20000 - 5);
	ck_assert_uint_ge(bucket(s, HISTO_SEEK, HISTO_READ, 1), 4 * (20000 - 1));
	ck_assert_uint_eq(s->count[HISTO_OUTSTANDING][HISTO_READ], 6 * 20000);
	scsi_lun_destroy(l1);
	free(s);
}
END_TEST

START_TEST(test_quantile)
{
	struct scsi_histo_snap *s = calloc(1, sizeof(*s));

	ck_assert(scsi_histo_quantile(s, HISTO_LATENCY, HISTO_ALL, 0.5) == 0);
	/* 10 samples in (100, 250] us */
	s->b[HISTO_LATENCY][HISTO_ALL][4] = 10;
	s->count[HISTO_LATENCY][HISTO_ALL] = 10;
	ck_assert(scsi_histo_quantile(s, HISTO_LATENCY, HISTO_ALL, 0.5) == 175000);
	ck_assert(scsi_histo_quantile(s, HISTO_LATENCY, HISTO_ALL, 1.0) == 250000);
	free(s);
}
END_TEST

Suite *histo_suite(void)
{
	Suite *s = suite_create("histo");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_bucket_edges);
	tcase_add_test(tc, test_known_mix);
	tcase_add_test(tc, test_switch_and_reset);
	tcase_add_test(tc, test_initiator_sets);
	tcase_add_test(tc, test_shards_sum_exactly);
	tcase_add_test(tc, test_quantile);
	suite_add_tcase(s, tc);
	return s;
}
