/*
 * Per-LUN statistics. DESIGN (threads, shards, reset, LUN lifetime): see
 * scsi/stats.h.
 */
#include "config.h"
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "scsi/scsi_int.h"
#include "scsi/stats.h"

#define STATS_WORDS (sizeof(struct scsi_stats_counters) / sizeof(uint64_t))
_Static_assert(sizeof(struct scsi_stats_counters) % sizeof(uint64_t) == 0,
	       "counters are words");
#define STATS_GLOBAL_WORDS (sizeof(struct scsi_stats_global) / sizeof(uint64_t))
_Static_assert(sizeof(struct scsi_stats_global) % sizeof(uint64_t) == 0,
	       "global counters are words");
/* Index of a counter (a field of struct scsi_stats_counters, array
 * elements included) among the words of a shard. */
#define CNT(field) (offsetof(struct scsi_stats_counters, field) / sizeof(uint64_t))
#define CNT_GLOBAL(field) (offsetof(struct scsi_stats_global, field) / sizeof(uint64_t))

/* One thread's counters, alone on its cache lines: the words of a struct
 * scsi_stats_counters, as atomics. */
struct stats_shard {
	_Atomic uint64_t c[STATS_WORDS];
	_Atomic int64_t held;            /* commands/handlers holding the LUN */
} __attribute__((aligned(64)));

struct scsi_lun_stats {
	pthread_mutex_t lock;            /* base */
	struct scsi_stats_counters base; /* subtracted by snapshots (reset) */
	unsigned n;                      /* shards: n - 1 threads + shared */
	struct stats_shard *shards;
};

static unsigned stats_threads;           /* network threads (shards - 1) */
static __thread int stats_tidx = -1;

static _Atomic uint64_t stats_global[STATS_GLOBAL_WORDS];
static pthread_mutex_t stats_global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct scsi_stats_global stats_global_base;

void scsi_stats_configure(unsigned n_net_threads)
{
	stats_threads = n_net_threads;
}

void scsi_stats_thread_init(unsigned idx)
{
	stats_tidx = (int)idx;
}

uint64_t scsi_stats_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int scsi_stats_lun_init(struct scsi_lun *lun)
{
	struct scsi_lun_stats *s = calloc(1, sizeof(*s));
	size_t bytes;

	if (!s)
		return -ENOMEM;
	s->n = stats_threads + 1;
	bytes = s->n * sizeof(struct stats_shard);
	s->shards = aligned_alloc(64, bytes);
	if (!s->shards) {
		free(s);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->n; i++) {
		for (size_t k = 0; k < STATS_WORDS; k++)
			atomic_init(&s->shards[i].c[k], 0);
		atomic_init(&s->shards[i].held, 0);
	}
	pthread_mutex_init(&s->lock, NULL);
	lun->priv_stats = s;
	return 0;
}

void scsi_stats_lun_free(struct scsi_lun *lun)
{
	struct scsi_lun_stats *s = lun->priv_stats;

	if (!s)
		return;
	lun->priv_stats = NULL;
	pthread_mutex_destroy(&s->lock);
	free(s->shards);
	free(s);
}

/* The writer's view of a LUN's counters on this thread. */
struct stats_w {
	struct stats_shard *sh;
	bool shared;
};

static inline bool stats_writer(struct scsi_lun *lun, struct stats_w *w)
{
	struct scsi_lun_stats *s = lun ? lun->priv_stats : NULL;

	if (!s)
		return false;
	if (stats_tidx >= 0 && (unsigned)stats_tidx + 1 < s->n) {
		w->sh = &s->shards[stats_tidx];
		w->shared = false;
	} else {
		w->sh = &s->shards[s->n - 1];
		w->shared = true;
	}
	return true;
}

/* Only the owner writes its shard: a relaxed load and store is enough (no
 * locked instruction); the shared shard needs a real atomic add. */
static inline void cnt_add(const struct stats_w *w, size_t idx, uint64_t v)
{
	_Atomic uint64_t *p = &w->sh->c[idx];

	if (w->shared)
		atomic_fetch_add_explicit(p, v, memory_order_relaxed);
	else
		atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + v,
				      memory_order_relaxed);
}

static inline void held_add(const struct stats_w *w, int64_t v)
{
	_Atomic int64_t *p = &w->sh->held;

	if (w->shared)
		atomic_fetch_add_explicit(p, v, memory_order_release);
	else
		atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + v,
				      memory_order_release);
}

/* ---- LUN holds --------------------------------------------------------- */

void scsi_stats_lun_get(struct scsi_lun *lun)
{
	struct stats_w w;

	if (stats_writer(lun, &w))
		held_add(&w, 1);
}

void scsi_stats_lun_put(struct scsi_lun *lun)
{
	struct stats_w w;

	if (stats_writer(lun, &w))
		held_add(&w, -1);
}

void scsi_stats_hold(struct scsi_cmd *cmd)
{
	if (!cmd->lun || (cmd->stats_flags & SCSI_STATS_HELD))
		return;
	cmd->stats_flags = SCSI_STATS_HELD;
	scsi_stats_lun_get(cmd->lun);
}

void scsi_stats_release(struct scsi_cmd *cmd)
{
	if (!(cmd->stats_flags & SCSI_STATS_HELD))
		return;
	cmd->stats_flags &= (uint8_t)~SCSI_STATS_HELD;
	/* the last touch of the LUN by this command */
	scsi_stats_lun_put(cmd->lun);
}

bool scsi_stats_lun_busy(struct scsi_lun *lun)
{
	struct scsi_lun_stats *s = lun->priv_stats;
	int64_t sum = 0;

	if (!s)
		return false;
	for (unsigned i = 0; i < s->n; i++)
		sum += atomic_load_explicit(&s->shards[i].held, memory_order_acquire);
	return sum != 0;
}

/* ---- the per-command hook ---------------------------------------------- */

static bool op_is_read(uint8_t op)
{
	return op == 0x08 || op == 0x28 || op == 0xa8 || op == 0x88;
}

static bool op_is_write(uint8_t op)
{
	switch (op) {
	case 0x0a: case 0x2a: case 0xaa: case 0x8a:   /* WRITE */
	case 0x9c:                                    /* WRITE ATOMIC */
	case 0x2e: case 0xae: case 0x8e:              /* WRITE AND VERIFY */
		return true;
	default:
		return false;
	}
}

static bool cmd_is_vaai(const struct scsi_cmd *cmd)
{
	switch (cmd->cdb[0]) {
	case 0x89: case 0x83: case 0x41: case 0x93: case 0x42:
		return true;
	case 0x7f:   /* WRITE SAME(32) */
		return get_be16(cmd->cdb + 8) == 0x000d;
	default:
		return false;
	}
}

static unsigned status_index(uint8_t status)
{
	switch (status) {
	case SAM_STAT_GOOD: return STATS_ST_GOOD;
	case SAM_STAT_CHECK_CONDITION: return STATS_ST_CHECK_CONDITION;
	case SAM_STAT_CONDITION_MET: return STATS_ST_CONDITION_MET;
	case SAM_STAT_BUSY: return STATS_ST_BUSY;
	case SAM_STAT_RESERVATION_CONFLICT: return STATS_ST_RESERVATION_CONFLICT;
	case SAM_STAT_TASK_SET_FULL: return STATS_ST_TASK_SET_FULL;
	case SAM_STAT_ACA_ACTIVE: return STATS_ST_ACA_ACTIVE;
	case SAM_STAT_TASK_ABORTED: return STATS_ST_TASK_ABORTED;
	default: return STATS_ST_OTHER;
	}
}

/* SPC-4 4.5: sense key from the sense data built (fixed or descriptor),
 * else from the reason. */
static uint8_t cmd_sense_key(const struct scsi_cmd *cmd)
{
	uint8_t key = 0;

	if (cmd->sense_len >= 3 && ((cmd->sense[0] & 0x7f) == 0x70 || (cmd->sense[0] & 0x7f) == 0x71))
		return cmd->sense[2] & 0x0f;
	if (cmd->sense_len >= 2 && ((cmd->sense[0] & 0x7f) == 0x72 || (cmd->sense[0] & 0x7f) == 0x73))
		return cmd->sense[1] & 0x0f;
	scsi_reason_info(cmd->reason, NULL, &key, NULL, NULL);
	return key & 0x0f;
}

static unsigned lat_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b;

	if (!us)
		return 0;
	b = 64u - (unsigned)__builtin_clzll(us);
	return b < SCSI_STATS_LAT_BUCKETS - 1 ? b : SCSI_STATS_LAT_BUCKETS - 1;
}

uint64_t scsi_stats_bucket_le_us(unsigned i)
{
	if (i >= SCSI_STATS_LAT_BUCKETS - 1)
		return UINT64_MAX;
	return 1ull << i;
}

/*
 * SPC-4 6.4.3 EXTENDED COPY (LID1) parameter list: count the segment
 * descriptors and the bytes of block-to-block segments (type 02h: NUMBER
 * OF BLOCKS of the source CSCD's DISK BLOCK LENGTH, 6.4.5.x; CSCD
 * descriptors are 32 bytes, the block length in bytes 29..31 of the
 * identification descriptor E4h and the other block-device ones).
 */
static void xcopy_derive(const struct scsi_cmd *cmd, uint64_t *segments, uint64_t *bytes)
{
	const uint8_t *p = cmd->buf;
	uint32_t len = MIN(cmd->buf_len, cmd->xfer_len);
	uint32_t cscd_len, seg_len, off, end, n_cscd;

	*segments = 0;
	*bytes = 0;
	if (!p || len < 16)
		return;
	cscd_len = get_be16(p + 2);
	seg_len = get_be32(p + 8);
	if (16u + cscd_len > len)
		return;
	n_cscd = cscd_len / 32;
	off = 16 + cscd_len;
	end = (uint32_t)MIN((uint64_t)len, (uint64_t)off + seg_len);
	while (off + 4 <= end) {
		uint32_t dlen = get_be16(p + off + 2);

		if (off + 4 + dlen > end)
			break;
		(*segments)++;
		if (p[off] == 0x02 && dlen >= 24) {
			uint16_t src = get_be16(p + off + 4);
			uint32_t nb = get_be16(p + off + 10);
			uint32_t bs = cmd->lun->block_size;

			if (src < n_cscd) {
				const uint8_t *d = p + 16 + 32u * src;
				uint32_t dbs = get_be24(d + 29);

				if (d[0] >= 0xe0 && dbs)
					bs = dbs;
			}
			*bytes += (uint64_t)nb * bs;
		}
		off += 4 + dlen;
	}
}

/* SBC-4 5.30.2 UNMAP parameter list: 16-byte block descriptors from byte 8. */
static uint64_t unmap_derive(const struct scsi_cmd *cmd)
{
	const uint8_t *p = cmd->buf;
	uint32_t len = MIN(cmd->buf_len, cmd->xfer_len);
	uint64_t blocks = 0;
	uint32_t bd_len, off, end;

	if (!p || len < 8)
		return 0;
	bd_len = get_be16(p + 2);
	end = (uint32_t)MIN((uint64_t)len, 8ull + bd_len);
	for (off = 8; off + 16 <= end; off += 16)
		blocks += get_be32(p + off + 8);
	return blocks;
}

/* SBC-4 5.48/5.49/5.50 WRITE SAME: NUMBER OF LOGICAL BLOCKS, 0 = to the end
 * of the medium. */
static uint64_t ws_derive(const struct scsi_cmd *cmd)
{
	uint64_t lba, n, cap = scsi_lun_nblocks(cmd->lun);

	switch (cmd->cdb[0]) {
	case 0x41:
		lba = get_be32(cmd->cdb + 2);
		n = get_be16(cmd->cdb + 7);
		break;
	case 0x93:
		lba = get_be64(cmd->cdb + 2);
		n = get_be32(cmd->cdb + 10);
		break;
	default:
		lba = get_be64(cmd->cdb + 12);
		n = get_be32(cmd->cdb + 28);
		break;
	}
	if (!n && lba < cap)
		n = cap - lba;
	return n;
}

static int lat_class(const struct scsi_cmd *cmd)
{
	uint8_t op = cmd->cdb[0];

	return op_is_read(op) ? STATS_LAT_READ : op_is_write(op) ? STATS_LAT_WRITE
	       : cmd_is_vaai(cmd) ? STATS_LAT_VAAI : -1;
}

void scsi_stats_cmd_sent(struct scsi_cmd *cmd)
{
	struct stats_w w;
	int cls = lat_class(cmd);
	uint64_t now, ns;

	if (cls < 0 || !cmd->start_ns || !(cmd->stats_flags & SCSI_STATS_COUNTED) ||
	    !stats_writer(cmd->lun, &w))
		return;
	now = scsi_stats_now_ns();
	ns = now > cmd->start_ns ? now - cmd->start_ns : 0;
	cnt_add(&w, CNT(lat[cls][lat_bucket(ns)]), 1);
	cnt_add(&w, CNT(lat_sum_ns[cls]), ns);
}

void scsi_stats_cmd_done(struct scsi_cmd *cmd)
{
	struct stats_w w;
	uint8_t op = cmd->cdb[0];
	uint8_t sa = cmd->cdb[1] & 0x1f;
	bool good = cmd->status == SAM_STAT_GOOD;
	int cls = -1;

	if ((cmd->stats_flags & SCSI_STATS_COUNTED) || !stats_writer(cmd->lun, &w))
		return;
	cmd->stats_flags |= SCSI_STATS_COUNTED;
	cnt_add(&w, CNT(ops[op]), 1);
	cnt_add(&w, CNT(status[status_index(cmd->status)]), 1);
	if (cmd->status == SAM_STAT_CHECK_CONDITION)
		cnt_add(&w, CNT(sense_key[cmd_sense_key(cmd)]), 1);
	else if (cmd->status == SAM_STAT_RESERVATION_CONFLICT)
		cnt_add(&w, CNT(conflicts[op]), 1);

	if (op_is_read(op)) {
		cls = STATS_LAT_READ;
		if (good) {
			cnt_add(&w, CNT(read_cmds), 1);
			cnt_add(&w, CNT(read_bytes), cmd->data_len);
		}
	} else if (op_is_write(op)) {
		cls = STATS_LAT_WRITE;
		if (good) {
			cnt_add(&w, CNT(write_cmds), 1);
			cnt_add(&w, CNT(write_bytes), cmd->xfer_len);
		}
	} else if (cmd_is_vaai(cmd)) {
		cls = STATS_LAT_VAAI;
	}
	if (cls >= 0 && cmd->io.submit_ns && cmd->io.done_ns >= cmd->io.submit_ns) {
		uint64_t ns = cmd->io.done_ns - cmd->io.submit_ns;

		cnt_add(&w, CNT(lat_bs[cls][lat_bucket(ns)]), 1);
		cnt_add(&w, CNT(lat_bs_sum_ns[cls]), ns);
	}
	/* the command's latency is counted when its status is sent */

	switch (op) {
	case 0x89:   /* SBC-4 5.3 COMPARE AND WRITE */
		if (good)
			cnt_add(&w, CNT(ats_ok), 1);
		else if (cmd->status == SAM_STAT_CHECK_CONDITION &&
			 cmd_sense_key(cmd) == SK_MISCOMPARE)
			cnt_add(&w, CNT(ats_miscompare), 1);
		break;
	case 0x83:   /* SPC-4 6.4 EXTENDED COPY */
		if ((cmd->stats_flags & SCSI_STATS_OWN_XCOPY) || !good || sa > 1)
			break;
		cnt_add(&w, CNT(xcopy_cmds), 1);
		if (sa == 0) {
			uint64_t segs, bytes;

			xcopy_derive(cmd, &segs, &bytes);
			cnt_add(&w, CNT(xcopy_segments), segs);
			cnt_add(&w, CNT(xcopy_bytes), bytes);
		}
		break;
	case 0x41: case 0x93: case 0x7f:   /* SBC-4 5.48-5.50 WRITE SAME */
		if (!good || !cmd_is_vaai(cmd))
			break;
		cnt_add(&w, CNT(ws_cmds), 1);
		cnt_add(&w, CNT(ws_blocks), ws_derive(cmd));
		break;
	case 0x42:   /* SBC-4 5.30 UNMAP */
		if (!good)
			break;
		cnt_add(&w, CNT(unmap_cmds), 1);
		cnt_add(&w, CNT(unmap_blocks), unmap_derive(cmd));
		break;
	case 0x16: case 0x56:   /* SPC-2 7.21 RESERVE(6/10) */
		if (good)
			cnt_add(&w, CNT(reserve), 1);
		break;
	case 0x17: case 0x57:   /* SPC-2 7.19 RELEASE(6/10) */
		if (good)
			cnt_add(&w, CNT(release), 1);
		break;
	case 0x5e:   /* SPC-4 6.15 PERSISTENT RESERVE IN */
		if (good)
			cnt_add(&w, CNT(pr_in[sa]), 1);
		break;
	case 0x5f:   /* SPC-4 6.16 PERSISTENT RESERVE OUT */
		if (good)
			cnt_add(&w, CNT(pr_out[sa]), 1);
		break;
	default:
		break;
	}
}

/* ---- explicit reports --------------------------------------------------- */

void scsi_stats_xcopy(struct scsi_cmd *cmd, unsigned segments, uint64_t bytes)
{
	struct stats_w w;

	if (!stats_writer(cmd->lun, &w))
		return;
	if (!(cmd->stats_flags & SCSI_STATS_OWN_XCOPY)) {
		cmd->stats_flags |= SCSI_STATS_OWN_XCOPY;
		cnt_add(&w, CNT(xcopy_cmds), 1);
	}
	cnt_add(&w, CNT(xcopy_segments), segments);
	cnt_add(&w, CNT(xcopy_bytes), bytes);
}

void scsi_stats_xcopy_reflink(struct scsi_cmd *cmd, uint64_t blocks)
{
	struct stats_w w;

	if (stats_writer(cmd->lun, &w))
		cnt_add(&w, CNT(xcopy_reflink_blocks), blocks);
}

void scsi_stats_zero_detect(struct scsi_cmd *cmd, uint64_t bytes)
{
	struct stats_w w;

	if (!stats_writer(cmd->lun, &w))
		return;
	cnt_add(&w, CNT(zero_detect_cmds), 1);
	cnt_add(&w, CNT(zero_detect_bytes), bytes);
}

void scsi_stats_tmf(struct scsi_lun *lun, uint8_t function, uint8_t response)
{
	struct stats_w w;

	atomic_fetch_add_explicit(&stats_global[CNT_GLOBAL(tmf[function & 0x0f])], 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&stats_global[CNT_GLOBAL(tmf_rsp[response])], 1,
				  memory_order_relaxed);
	if (stats_writer(lun, &w))
		cnt_add(&w, CNT(tmf[function & 0x0f]), 1);
}

void scsi_stats_aborted(struct scsi_cmd *cmd)
{
	struct stats_w w;

	if (stats_writer(cmd->lun, &w))
		cnt_add(&w, CNT(aborts), 1);
}

void scsi_stats_ua(struct scsi_lun *lun)
{
	struct stats_w w;

	if (stats_writer(lun, &w))
		cnt_add(&w, CNT(ua), 1);
}

void scsi_stats_fault(struct scsi_lun *lun)
{
	struct stats_w w;

	if (stats_writer(lun, &w))
		cnt_add(&w, CNT(faults), 1);
}

/* ---- readers ------------------------------------------------------------ */

static void stats_sum(const struct scsi_lun_stats *s, uint64_t *out)
{
	memset(out, 0, sizeof(struct scsi_stats_counters));
	for (unsigned i = 0; i < s->n; i++) {
		const _Atomic uint64_t *src = s->shards[i].c;

		for (size_t k = 0; k < STATS_WORDS; k++)
			out[k] += atomic_load_explicit(&src[k], memory_order_relaxed);
	}
}

void scsi_stats_snapshot(struct scsi_lun *lun, struct scsi_stats_counters *out)
{
	struct scsi_lun_stats *s = lun->priv_stats;
	uint64_t *o = (uint64_t *)out;
	const uint64_t *b;

	if (!s) {
		memset(out, 0, sizeof(*out));
		return;
	}
	stats_sum(s, o);
	pthread_mutex_lock(&s->lock);
	b = (const uint64_t *)&s->base;
	for (size_t k = 0; k < STATS_WORDS; k++)
		o[k] = o[k] >= b[k] ? o[k] - b[k] : 0;
	pthread_mutex_unlock(&s->lock);
}

void scsi_stats_reset(struct scsi_lun *lun)
{
	struct scsi_lun_stats *s = lun->priv_stats;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	stats_sum(s, (uint64_t *)&s->base);
	pthread_mutex_unlock(&s->lock);
}

void scsi_stats_global_snapshot(struct scsi_stats_global *out)
{
	const uint64_t *b = (const uint64_t *)&stats_global_base;
	uint64_t *o = (uint64_t *)out;

	pthread_mutex_lock(&stats_global_lock);
	for (size_t k = 0; k < STATS_GLOBAL_WORDS; k++) {
		uint64_t v = atomic_load_explicit(&stats_global[k], memory_order_relaxed);

		o[k] = v >= b[k] ? v - b[k] : 0;
	}
	pthread_mutex_unlock(&stats_global_lock);
}

void scsi_stats_global_reset(void)
{
	uint64_t *b = (uint64_t *)&stats_global_base;

	pthread_mutex_lock(&stats_global_lock);
	for (size_t k = 0; k < STATS_GLOBAL_WORDS; k++)
		b[k] = atomic_load_explicit(&stats_global[k], memory_order_relaxed);
	pthread_mutex_unlock(&stats_global_lock);
}

double scsi_stats_quantile_us(const uint64_t *buckets, double q)
{
	uint64_t total = 0, cum = 0;
	double target;

	for (unsigned i = 0; i < SCSI_STATS_LAT_BUCKETS; i++)
		total += buckets[i];
	if (!total)
		return 0;
	target = q * (double)total;
	for (unsigned i = 0; i < SCSI_STATS_LAT_BUCKETS; i++) {
		double lo = i ? (double)(1ull << (i - 1)) : 0;
		double hi;

		if (!buckets[i] || (double)(cum + buckets[i]) < target) {
			cum += buckets[i];
			continue;
		}
		if (i == SCSI_STATS_LAT_BUCKETS - 1)
			return lo;
		hi = (double)(1ull << i);
		return lo + (hi - lo) * (target - (double)cum) / (double)buckets[i];
	}
	return (double)(1ull << (SCSI_STATS_LAT_BUCKETS - 2));
}

/* SPC-4 / SBC-4 operation code names (Annex / command tables). */
const char *scsi_stats_opcode_name(uint8_t opcode)
{
	static const char *const names[256] = {
		[0x00] = "TEST UNIT READY", [0x03] = "REQUEST SENSE",
		[0x04] = "FORMAT UNIT", [0x08] = "READ(6)", [0x0a] = "WRITE(6)",
		[0x12] = "INQUIRY", [0x15] = "MODE SELECT(6)", [0x16] = "RESERVE(6)",
		[0x17] = "RELEASE(6)", [0x1a] = "MODE SENSE(6)", [0x1b] = "START STOP UNIT",
		[0x1c] = "RECEIVE DIAGNOSTIC RESULTS", [0x1d] = "SEND DIAGNOSTIC",
		[0x1e] = "PREVENT ALLOW MEDIUM REMOVAL", [0x25] = "READ CAPACITY(10)",
		[0x28] = "READ(10)", [0x2a] = "WRITE(10)", [0x2b] = "SEEK(10)",
		[0x2e] = "WRITE AND VERIFY(10)", [0x2f] = "VERIFY(10)",
		[0x34] = "PRE-FETCH(10)", [0x35] = "SYNCHRONIZE CACHE(10)",
		[0x37] = "READ DEFECT DATA(10)", [0x3b] = "WRITE BUFFER",
		[0x3c] = "READ BUFFER", [0x41] = "WRITE SAME(10)", [0x42] = "UNMAP",
		[0x48] = "SANITIZE", [0x4c] = "LOG SELECT", [0x4d] = "LOG SENSE",
		[0x55] = "MODE SELECT(10)", [0x56] = "RESERVE(10)", [0x57] = "RELEASE(10)",
		[0x5a] = "MODE SENSE(10)", [0x5e] = "PERSISTENT RESERVE IN",
		[0x5f] = "PERSISTENT RESERVE OUT", [0x7f] = "VARIABLE LENGTH",
		[0x83] = "EXTENDED COPY", [0x84] = "RECEIVE COPY RESULTS",
		[0x86] = "ACCESS CONTROL IN", [0x87] = "ACCESS CONTROL OUT",
		[0x88] = "READ(16)", [0x89] = "COMPARE AND WRITE", [0x8a] = "WRITE(16)",
		[0x8b] = "ORWRITE(16)", [0x8e] = "WRITE AND VERIFY(16)",
		[0x8f] = "VERIFY(16)", [0x90] = "PRE-FETCH(16)",
		[0x91] = "SYNCHRONIZE CACHE(16)", [0x93] = "WRITE SAME(16)",
		[0x9e] = "SERVICE ACTION IN(16)", [0xa0] = "REPORT LUNS",
		[0xa3] = "MAINTENANCE IN", [0xa4] = "MAINTENANCE OUT",
		[0xa8] = "READ(12)", [0xaa] = "WRITE(12)", [0xae] = "WRITE AND VERIFY(12)",
		[0xaf] = "VERIFY(12)", [0xb7] = "READ DEFECT DATA(12)",
	};

	return names[opcode];
}

/* RFC 7143 11.5.1 task management function codes. */
const char *scsi_stats_tmf_name(uint8_t function)
{
	static const char *const names[16] = {
		[1] = "ABORT TASK", [2] = "ABORT TASK SET", [3] = "CLEAR ACA",
		[4] = "CLEAR TASK SET", [5] = "LOGICAL UNIT RESET",
		[6] = "TARGET WARM RESET", [7] = "TARGET COLD RESET",
		[8] = "TASK REASSIGN",
	};

	return names[function & 0x0f];
}
