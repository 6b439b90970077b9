/*
 * Workload histograms per LUN. DESIGN (what is measured, threads, shards,
 * switching, initiator sets): see scsi/histo.h.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "scsi/scsi_int.h"
#include "scsi/histo.h"
#include "scsi/stats.h"

#define US 1000   /* edges of the time kinds are microseconds, values ns */

static const int64_t len_edges[] = {
	512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288,
};
static const int64_t seek_edges[] = {
	-500000, -100000, -50000, -10000, -5000, -1000, -500, -128, -64, -32, -16, -8,
	-6, -4, -2, -1, 0, 1, 2, 4, 6, 8, 16, 32, 64, 128, 500, 1000, 5000, 10000,
	50000, 100000, 500000,
};
static const int64_t out_edges[] = { 1, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32, 64 };
static const int64_t iat_edges[] = {
	1 * US, 10 * US, 50 * US, 100 * US, 500 * US, 1000 * US, 5000 * US, 15000 * US,
	30000 * US, 50000 * US, 100000 * US,
};
static const int64_t lat_edges[] = {
	1 * US, 10 * US, 50 * US, 100 * US, 250 * US, 500 * US, 1000 * US, 5000 * US,
	15000 * US, 30000 * US, 50000 * US, 100000 * US,
};

#define DESC(n, t, u, e) { n, t, u, ARRAY_SIZE(e) + 1, e }
static const struct scsi_histo_desc descs[HISTO__KINDS] = {
	[HISTO_IO_LENGTH] = DESC("io_length", "I/O length", "bytes", len_edges),
	[HISTO_SEEK] = DESC("seek_distance", "seek distance from the previous command", "blocks",
			    seek_edges),
	[HISTO_SEEK_CLOSEST] = DESC("seek_closest", "seek distance from the closest of the last 16",
				    "blocks", seek_edges),
	[HISTO_OUTSTANDING] = DESC("outstanding", "outstanding commands at arrival", "commands",
				   out_edges),
	[HISTO_INTERARRIVAL] = DESC("interarrival", "interarrival time", "ns", iat_edges),
	[HISTO_LATENCY] = DESC("latency", "latency, PDU received to status sent", "ns", lat_edges),
	[HISTO_LATENCY_BS] = DESC("latency_backstore", "latency in the backstore", "ns", lat_edges),
};
_Static_assert(ARRAY_SIZE(seek_edges) + 1 == HISTO_MAX_BUCKETS, "seek has the most buckets");

/* What one class of one shard compares the next command against. */
struct histo_stream {
	uint64_t last_ns;                /* arrival of the previous command */
	uint64_t recent[HISTO_RECENT];   /* last block of the previous commands */
	unsigned n_recent, pos;          /* recent[pos - 1] is the newest */
	bool have_ns;
};

/* One thread's counters of one set, alone on its cache lines. */
struct histo_shard {
	uint64_t b[HISTO__KINDS][HISTO__CLASSES][HISTO_MAX_BUCKETS];
	uint64_t sum[HISTO__KINDS][HISTO__CLASSES];
	struct histo_stream st[HISTO__CLASSES];   /* the owner's alone */
} __attribute__((aligned(64)));

/* Commands in flight, by class: read by every thread at each arrival. */
struct histo_inflight {
	int64_t n[HISTO__CLASSES];
} __attribute__((aligned(64)));

struct histo_base {
	uint64_t b[HISTO__KINDS][HISTO__CLASSES][HISTO_MAX_BUCKETS];
	uint64_t sum[HISTO__KINDS][HISTO__CLASSES];
};

struct histo_set {
	char iqn[224];                   /* "" for the all-initiators set */
	_Atomic bool active;
	struct histo_shard *shards;      /* n: threads, then the shared one */
	struct histo_inflight *inflight; /* n */
	struct histo_base base;          /* under h->lock */
};

struct scsi_lun_histo {
	_Atomic bool on;
	_Atomic unsigned n_init;         /* active initiator sets */
	unsigned n;                      /* shards per set */
	pthread_mutex_t lock;            /* add, remove, reset, base */
	struct histo_set *_Atomic sets[1 + HISTO_MAX_INITIATORS];
};

static unsigned histo_threads;
static __thread int histo_tidx = -1;
static pthread_mutex_t histo_shared_lock = PTHREAD_MUTEX_INITIALIZER;

const struct scsi_histo_desc *scsi_histo_desc(enum scsi_histo_kind k)
{
	return (unsigned)k < HISTO__KINDS ? &descs[k] : NULL;
}

const char *scsi_histo_class_name(enum scsi_histo_class c)
{
	static const char *const names[HISTO__CLASSES] = { "read", "write", "all" };

	return (unsigned)c < HISTO__CLASSES ? names[c] : NULL;
}

unsigned scsi_histo_bucket(enum scsi_histo_kind k, int64_t v)
{
	const struct scsi_histo_desc *d = &descs[k];
	unsigned lo = 0, hi = d->n_buckets - 1;

	/* the first edge >= v; the last bucket when there is none */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (d->edges[mid] >= v)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

void scsi_histo_configure(unsigned n_net_threads)
{
	histo_threads = n_net_threads;
}

void scsi_histo_thread_init(unsigned idx)
{
	histo_tidx = (int)idx;
}

static void set_free(struct histo_set *s)
{
	if (!s)
		return;
	free(s->shards);
	free(s->inflight);
	free(s);
}

static struct histo_set *set_new(unsigned n, const char *iqn)
{
	struct histo_set *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->shards = aligned_alloc(64, n * sizeof(*s->shards));
	s->inflight = aligned_alloc(64, n * sizeof(*s->inflight));
	if (!s->shards || !s->inflight) {
		set_free(s);
		return NULL;
	}
	memset(s->shards, 0, n * sizeof(*s->shards));
	memset(s->inflight, 0, n * sizeof(*s->inflight));
	snprintf(s->iqn, sizeof(s->iqn), "%s", iqn ? iqn : "");
	atomic_store_explicit(&s->active, true, memory_order_relaxed);
	return s;
}

int scsi_histo_lun_init(struct scsi_lun *lun)
{
	struct scsi_lun_histo *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->n = histo_threads + 1;
	h->sets[0] = set_new(h->n, NULL);
	if (!h->sets[0]) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	atomic_store(&h->on, true);
	lun->priv_histo = h;
	return 0;
}

void scsi_histo_lun_free(struct scsi_lun *lun)
{
	struct scsi_lun_histo *h = lun->priv_histo;

	if (!h)
		return;
	lun->priv_histo = NULL;
	for (unsigned k = 0; k <= HISTO_MAX_INITIATORS; k++)
		set_free(h->sets[k]);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* ---- the data path ------------------------------------------------------ */

static int cmd_class(const struct scsi_cmd *cmd)
{
	switch (cmd->cdb[0]) {
	case 0x08: case 0x28: case 0xa8: case 0x88:   /* READ */
		return HISTO_READ;
	case 0x0a: case 0x2a: case 0xaa: case 0x8a:   /* WRITE */
	case 0x2e: case 0xae: case 0x8e:              /* WRITE AND VERIFY */
		return HISTO_WRITE;
	default:
		return -1;
	}
}

/* Commands whose CDB addresses blocks (parsing set lba and nblocks). */
static bool cmd_has_lba(const struct scsi_cmd *cmd)
{
	switch (cmd->cdb[0]) {
	case 0x08: case 0x28: case 0xa8: case 0x88:   /* READ */
	case 0x0a: case 0x2a: case 0xaa: case 0x8a:   /* WRITE */
	case 0x2e: case 0xae: case 0x8e:              /* WRITE AND VERIFY */
	case 0x2f: case 0xaf: case 0x8f:              /* VERIFY */
	case 0x34: case 0x90:                         /* PRE-FETCH */
	case 0x89:                                    /* COMPARE AND WRITE */
	case 0x41: case 0x93:                         /* WRITE SAME */
		return true;
	default:
		return false;
	}
}

/* Only the owner (or a holder of histo_shared_lock) writes a shard. */
static inline void put(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static inline void count(struct histo_shard *sh, unsigned k, unsigned c, int64_t v)
{
	put(&sh->b[k][c][scsi_histo_bucket(k, v)], 1);
	put(&sh->sum[k][c], (uint64_t)v);
}

static int64_t inflight_sum(const struct histo_set *s, unsigned n, unsigned c)
{
	int64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += __atomic_load_n(&s->inflight[i].n[c], __ATOMIC_RELAXED);
	return sum;
}

static void inflight_add(struct histo_set *s, unsigned si, unsigned c, int64_t v)
{
	int64_t *p = &s->inflight[si].n[c];

	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/* Seek distances of a command to the stream's last command and to the
 * closest of its recent ones; then it becomes the newest. */
static void stream_seek(struct histo_shard *sh, struct histo_stream *st, unsigned c,
			const struct scsi_cmd *cmd)
{
	uint64_t last = cmd->lba + (cmd->nblocks ? cmd->nblocks : 1) - 1;

	if (st->n_recent) {
		int64_t d = (int64_t)(cmd->lba - st->recent[(st->pos + HISTO_RECENT - 1) % HISTO_RECENT]);
		int64_t best = d;

		for (unsigned i = 0; i < st->n_recent; i++) {
			int64_t x = (int64_t)(cmd->lba - st->recent[i]);

			if ((x < 0 ? -x : x) < (best < 0 ? -best : best))
				best = x;
		}
		count(sh, HISTO_SEEK, c, d);
		count(sh, HISTO_SEEK_CLOSEST, c, best);
	}
	st->recent[st->pos] = last;
	st->pos = (st->pos + 1) % HISTO_RECENT;
	if (st->n_recent < HISTO_RECENT)
		st->n_recent++;
}

static void set_arrive(struct histo_set *s, unsigned n, unsigned si, const struct scsi_cmd *cmd,
		       int cls, uint64_t now)
{
	struct histo_shard *sh = &s->shards[si];
	unsigned cs[2] = { HISTO_ALL, (unsigned)cls };
	unsigned nc = cls >= 0 ? 2 : 1;
	bool lba = cmd_has_lba(cmd);

	for (unsigned i = 0; i < nc; i++) {
		unsigned c = cs[i];
		struct histo_stream *st = &sh->st[c];

		count(sh, HISTO_IO_LENGTH, c, cmd->xfer_len);
		inflight_add(s, si, c, 1);
		count(sh, HISTO_OUTSTANDING, c, inflight_sum(s, n, c));
		if (st->have_ns)
			count(sh, HISTO_INTERARRIVAL, c, now > st->last_ns ? (int64_t)(now - st->last_ns) : 0);
		st->last_ns = now;
		st->have_ns = true;
		if (lba)
			stream_seek(sh, st, c, cmd);
	}
}

static inline unsigned shard_index(const struct scsi_lun_histo *h, bool *shared)
{
	*shared = !(histo_tidx >= 0 && (unsigned)histo_tidx + 1 < h->n);
	return *shared ? h->n - 1 : (unsigned)histo_tidx;
}

static inline struct scsi_lun_histo *cmd_histo(const struct scsi_cmd *cmd)
{
	return cmd->lun ? cmd->lun->priv_histo : NULL;
}

void scsi_histo_arrive(struct scsi_cmd *cmd)
{
	struct scsi_lun_histo *h = cmd_histo(cmd);
	uint64_t now;
	unsigned si, sets = 1;
	bool shared;
	int cls;

	cmd->histo_sets = 0;
	if (!h || !atomic_load_explicit(&h->on, memory_order_relaxed))
		return;
	si = shard_index(h, &shared);
	cls = cmd_class(cmd);
	now = cmd->start_ns ? cmd->start_ns : scsi_stats_now_ns();
	if (shared)
		pthread_mutex_lock(&histo_shared_lock);
	set_arrive(h->sets[0], h->n, si, cmd, cls, now);
	if (atomic_load_explicit(&h->n_init, memory_order_acquire) && cmd->nexus) {
		for (unsigned k = 1; k <= HISTO_MAX_INITIATORS; k++) {
			struct histo_set *s = atomic_load_explicit(&h->sets[k], memory_order_acquire);

			if (s && atomic_load_explicit(&s->active, memory_order_acquire) &&
			    !strcasecmp(s->iqn, cmd->nexus->initiator_name)) {
				set_arrive(s, h->n, si, cmd, cls, now);
				sets |= 1u << k;
			}
		}
	}
	if (shared)
		pthread_mutex_unlock(&histo_shared_lock);
	cmd->histo_sets = (uint8_t)sets;
}

void scsi_histo_sent(struct scsi_cmd *cmd)
{
	struct scsi_lun_histo *h = cmd_histo(cmd);
	unsigned sets = cmd->histo_sets, si;
	uint64_t now, lat, bs = 0;
	bool shared, have_bs;
	int cls;

	if (!h || !(sets & ~HISTO_SENT) || (sets & HISTO_SENT))
		return;
	cmd->histo_sets = (uint8_t)(sets | HISTO_SENT);
	si = shard_index(h, &shared);
	cls = cmd_class(cmd);
	now = scsi_stats_now_ns();
	lat = now > cmd->start_ns ? now - cmd->start_ns : 0;
	/* a request of this command, not one left in cmd->io by the
	 * command that used this slot before */
	have_bs = cmd->io.submit_ns && cmd->io.submit_ns >= cmd->start_ns &&
		  cmd->io.done_ns >= cmd->io.submit_ns;
	if (have_bs)
		bs = cmd->io.done_ns - cmd->io.submit_ns;
	if (shared)
		pthread_mutex_lock(&histo_shared_lock);
	for (unsigned k = 0; k <= HISTO_MAX_INITIATORS; k++) {
		struct histo_shard *sh;

		if (!(sets & (1u << k)))
			continue;
		sh = &atomic_load_explicit(&h->sets[k], memory_order_acquire)->shards[si];
		count(sh, HISTO_LATENCY, HISTO_ALL, (int64_t)lat);
		if (cls >= 0)
			count(sh, HISTO_LATENCY, (unsigned)cls, (int64_t)lat);
		if (have_bs) {
			count(sh, HISTO_LATENCY_BS, HISTO_ALL, (int64_t)bs);
			if (cls >= 0)
				count(sh, HISTO_LATENCY_BS, (unsigned)cls, (int64_t)bs);
		}
	}
	if (shared)
		pthread_mutex_unlock(&histo_shared_lock);
}

void scsi_histo_end(struct scsi_cmd *cmd)
{
	struct scsi_lun_histo *h = cmd_histo(cmd);
	unsigned sets = cmd->histo_sets & ~HISTO_SENT, si;
	bool shared;
	int cls;

	cmd->histo_sets = 0;
	if (!h || !sets)
		return;
	si = shard_index(h, &shared);
	cls = cmd_class(cmd);
	if (shared)
		pthread_mutex_lock(&histo_shared_lock);
	for (unsigned k = 0; k <= HISTO_MAX_INITIATORS; k++) {
		struct histo_set *s;

		if (!(sets & (1u << k)))
			continue;
		s = atomic_load_explicit(&h->sets[k], memory_order_acquire);
		inflight_add(s, si, HISTO_ALL, -1);
		if (cls >= 0)
			inflight_add(s, si, (unsigned)cls, -1);
	}
	if (shared)
		pthread_mutex_unlock(&histo_shared_lock);
}

/* ---- control ------------------------------------------------------------ */

void scsi_histo_set_enabled(struct scsi_lun *lun, bool on)
{
	struct scsi_lun_histo *h = lun->priv_histo;

	if (h)
		atomic_store_explicit(&h->on, on, memory_order_relaxed);
}

bool scsi_histo_enabled(struct scsi_lun *lun)
{
	struct scsi_lun_histo *h = lun->priv_histo;

	return h && atomic_load_explicit(&h->on, memory_order_relaxed);
}

/* Set k (>= 1) of an initiator, under h->lock; 0 when none. */
static unsigned find_initiator(struct scsi_lun_histo *h, const char *iqn)
{
	for (unsigned k = 1; k <= HISTO_MAX_INITIATORS; k++) {
		struct histo_set *s = h->sets[k];

		if (s && atomic_load(&s->active) && !strcasecmp(s->iqn, iqn))
			return k;
	}
	return 0;
}

static void set_sum(const struct histo_set *s, unsigned n, struct histo_base *out)
{
	uint64_t *o = (uint64_t *)out;

	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < n; i++) {
		const uint64_t *b = &s->shards[i].b[0][0][0];
		const uint64_t *sum = &s->shards[i].sum[0][0];
		size_t nb = sizeof(out->b) / sizeof(uint64_t);

		for (size_t j = 0; j < nb; j++)
			o[j] += __atomic_load_n(&b[j], __ATOMIC_RELAXED);
		for (size_t j = 0; j < sizeof(out->sum) / sizeof(uint64_t); j++)
			o[nb + j] += __atomic_load_n(&sum[j], __ATOMIC_RELAXED);
	}
}
_Static_assert(offsetof(struct histo_base, sum) ==
	       sizeof(((struct histo_base *)0)->b), "base is b then sum, words");

int scsi_histo_add_initiator(struct scsi_lun *lun, const char *iqn)
{
	struct scsi_lun_histo *h = lun->priv_histo;
	unsigned free_k = 0;
	int rc = 0;

	if (!h)
		return -ENOMEM;
	pthread_mutex_lock(&h->lock);
	if (find_initiator(h, iqn)) {
		rc = -EEXIST;
		goto out;
	}
	for (unsigned k = 1; k <= HISTO_MAX_INITIATORS && !free_k; k++)
		if (!h->sets[k] || !atomic_load(&h->sets[k]->active))
			free_k = k;
	if (!free_k) {
		rc = -ENOSPC;
		goto out;
	}
	if (!h->sets[free_k]) {
		struct histo_set *s = set_new(h->n, iqn);

		if (!s) {
			rc = -ENOMEM;
			goto out;
		}
		atomic_store_explicit(&h->sets[free_k], s, memory_order_release);
	} else {
		/* a slot used before: its counts become the baseline; the
		 * name changes while it is inactive (a racing reader compared
		 * against a name only while active was set) */
		struct histo_set *s = h->sets[free_k];

		snprintf(s->iqn, sizeof(s->iqn), "%s", iqn);
		set_sum(s, h->n, &s->base);
		atomic_store_explicit(&s->active, true, memory_order_release);
	}
	atomic_fetch_add(&h->n_init, 1);
out:
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int scsi_histo_remove_initiator(struct scsi_lun *lun, const char *iqn)
{
	struct scsi_lun_histo *h = lun->priv_histo;
	unsigned k;

	if (!h)
		return -ENOENT;
	pthread_mutex_lock(&h->lock);
	k = find_initiator(h, iqn);
	if (k) {
		atomic_store_explicit(&h->sets[k]->active, false, memory_order_release);
		atomic_fetch_sub(&h->n_init, 1);
	}
	pthread_mutex_unlock(&h->lock);
	return k ? 0 : -ENOENT;
}

const char *scsi_histo_initiator(struct scsi_lun *lun, unsigned k)
{
	struct scsi_lun_histo *h = lun->priv_histo;
	struct histo_set *s;

	if (!h || k >= HISTO_MAX_INITIATORS)
		return NULL;
	s = atomic_load_explicit(&h->sets[k + 1], memory_order_acquire);
	return s && atomic_load(&s->active) ? s->iqn : NULL;
}

int scsi_histo_reset(struct scsi_lun *lun, const char *iqn)
{
	struct scsi_lun_histo *h = lun->priv_histo;
	int rc = 0;

	if (!h)
		return -ENOENT;
	pthread_mutex_lock(&h->lock);
	if (iqn) {
		unsigned k = find_initiator(h, iqn);

		if (k)
			set_sum(h->sets[k], h->n, &h->sets[k]->base);
		else
			rc = -ENOENT;
	} else {
		for (unsigned k = 0; k <= HISTO_MAX_INITIATORS; k++)
			if (h->sets[k])
				set_sum(h->sets[k], h->n, &h->sets[k]->base);
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int scsi_histo_snapshot(struct scsi_lun *lun, const char *iqn, struct scsi_histo_snap *out)
{
	struct scsi_lun_histo *h = lun->priv_histo;
	struct histo_base now;
	struct histo_set *s;
	unsigned k = 0;

	memset(out, 0, sizeof(*out));
	if (!h)
		return iqn ? -ENOENT : 0;
	pthread_mutex_lock(&h->lock);
	if (iqn && !(k = find_initiator(h, iqn))) {
		pthread_mutex_unlock(&h->lock);
		return -ENOENT;
	}
	s = h->sets[k];
	set_sum(s, h->n, &now);
	for (unsigned i = 0; i < HISTO__KINDS; i++)
		for (unsigned c = 0; c < HISTO__CLASSES; c++) {
			for (unsigned b = 0; b < descs[i].n_buckets; b++) {
				uint64_t v = now.b[i][c][b], base = s->base.b[i][c][b];

				out->b[i][c][b] = v >= base ? v - base : 0;
				out->count[i][c] += out->b[i][c][b];
			}
			out->sum[i][c] = (int64_t)(now.sum[i][c] - s->base.sum[i][c]);
		}
	pthread_mutex_unlock(&h->lock);
	return 0;
}

double scsi_histo_quantile(const struct scsi_histo_snap *s, enum scsi_histo_kind k,
			   enum scsi_histo_class c, double q)
{
	const struct scsi_histo_desc *d = &descs[k];
	uint64_t total = s->count[k][c], cum = 0;
	double target = q * (double)total;

	if (!total)
		return 0;
	for (unsigned i = 0; i < d->n_buckets; i++) {
		uint64_t n = s->b[k][c][i];
		double lo, hi;

		if (!n || (double)(cum + n) < target) {
			cum += n;
			continue;
		}
		if (i == d->n_buckets - 1)
			return (double)d->edges[i - 1];
		hi = (double)d->edges[i];
		lo = i ? (double)d->edges[i - 1] : (d->edges[0] > 0 ? 0 : hi);
		return lo + (hi - lo) * (target - (double)cum) / (double)n;
	}
	return (double)d->edges[d->n_buckets - 2];
}
