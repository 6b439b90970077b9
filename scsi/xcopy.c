/*
 * EXTENDED COPY (LID1) and RECEIVE COPY RESULTS (SPC-4 6.4, 6.18), and the
 * Third-party Copy VPD page (SPC-4 7.8.17): the copy manager of a LUN.
 *
 * DESIGN (threads and async)
 *  - An EXTENDED COPY runs on its network thread. Its parameter list is
 *    validated whole (header, lengths, every CSCD and segment descriptor,
 *    every LBA range) before one byte moves. The state of the copy lives
 *    in one allocation per command (cmd->xcopy), and every end of the
 *    command goes through xcopy_end() (cmd->on_end): XCOPY is not a
 *    per-block command.
 *  - CSCD descriptors (0xE4 identification) are matched against the NAA
 *    designators (VPD 0x83) of the LUNs of the target the command's I_T
 *    nexus is logged in to, and nothing else: a LUN of another target can
 *    never be named (the CVE-2020-28374 class of bug); it reads as COPY
 *    TARGET DEVICE NOT REACHABLE. So does a source or destination that
 *    this nexus could not READ or WRITE because of a reservation.
 *  - Data never crosses the network nor this thread: each segment is copied
 *    by backstore COPY requests (a reflink, FICLONERANGE, where the file
 *    system shares blocks (XFS, btrfs), else a bounce buffer on a worker;
 *    reflinked blocks are counted) of at most XCOPY_CHUNK bytes, one
 *    after another, each holding the destination range's RL_SHARED lock,
 *    so a 1 GiB clone neither starves other commands of the worker pool
 *    nor holds off a COMPARE AND WRITE for long. An abort is honoured
 *    between chunks. A destination whose write cache is disabled (WCE=0)
 *    is flushed after the last segment, before GOOD.
 *  - A segment whose destination overlaps its source further on, on the
 *    same backstore, is copied from its end backward, chunk by chunk (and
 *    the backstore copies each chunk in the safe direction too), so the
 *    result is what the source held before the copy, like memmove.
 *  - Results for RECEIVE COPY RESULTS are kept per LUN, keyed by I_T nexus
 *    and list identifier, in a small table (XCOPY_HELD_RESULTS entries,
 *    oldest finished one reused) under xcopy_lun.xc_lock: touched twice per
 *    EXTENDED COPY and once per RECEIVE COPY RESULTS, never per block.
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "scsi/vaai.h"
#include "scsi/stats.h"
#include "scsi/pr.h"
#include "backstore/io_engine.h"

/* COPY MANAGER STATUS (SPC-4 6.18.3) */
#define XC_RUNNING 0x00
#define XC_DONE_OK 0x01
#define XC_DONE_ERR 0x02

struct xcopy_held {
	bool used;
	uint64_t nexus_id;
	uint8_t list_id;
	uint8_t state;                /* XC_* */
	uint16_t segments;            /* segments processed */
	uint64_t bytes;               /* bytes copied */
	uint64_t seq;                 /* age, for reuse */
	uint8_t status;               /* SCSI status of the command */
	uint8_t sense_len;
	uint8_t sense[SCSI_SENSE_BUF];
};

struct xcopy_seg {
	struct scsi_lun *src, *dst;
	uint64_t src_off, dst_off, len;   /* bytes */
	bool backward;                    /* chunks from the end (overlap) */
};

struct xcopy_job {
	unsigned nseg, cur;
	uint64_t seg_done;                /* bytes of segment cur copied */
	uint64_t total;                   /* bytes copied */
	uint64_t chunk;                   /* bytes of the request in flight */
	unsigned flush_seg;               /* WCE=0: next segment whose destination
	                                   * may need a FLUSH (xcopy_flush_next) */
	struct xcopy_held *held;          /* NULL: results not held */
	uint64_t held_seq;                /* to find it again safely */
	unsigned nluns;                   /* other LUNs held (scsi/stats.h) */
	struct scsi_lun *luns[XCOPY_MAX_TARGET_DESC];
	struct xcopy_seg seg[XCOPY_MAX_SEGMENT_DESC];
};

/* The copy manager of one LUN: results held for RECEIVE COPY RESULTS. */
struct xcopy_lun {
	pthread_mutex_t xc_lock;              /* held results, not the data path */
	struct xcopy_held *held;              /* XCOPY_HELD_RESULTS entries */
	_Atomic unsigned xc_active;           /* EXTENDED COPY commands running */
};

static _Atomic uint64_t xcopy_seq;

int xcopy_lun_init(struct scsi_lun *lun)
{
	struct xcopy_lun *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	v->held = calloc(XCOPY_HELD_RESULTS, sizeof(*v->held));
	if (!v->held) {
		free(v);
		return -ENOMEM;
	}
	pthread_mutex_init(&v->xc_lock, NULL);
	atomic_init(&v->xc_active, 0);
	lun->priv_xcopy = v;
	return 0;
}

void xcopy_lun_fini(struct scsi_lun *lun)
{
	struct xcopy_lun *v = lun->priv_xcopy;

	if (!v)
		return;
	pthread_mutex_destroy(&v->xc_lock);
	free(v->held);
	free(v);
	lun->priv_xcopy = NULL;
}

static struct xcopy_lun *xcopy_state(struct scsi_cmd *cmd)
{
	return cmd->lun->priv_xcopy;
}

/* Entry of (nexus, list id), or NULL. xc_lock held. */
static struct xcopy_held *xcopy_find_locked(struct xcopy_lun *v, uint64_t nexus, uint8_t id)
{
	unsigned i;

	for (i = 0; i < XCOPY_HELD_RESULTS; i++)
		if (v->held[i].used && v->held[i].nexus_id == nexus && v->held[i].list_id == id)
			return &v->held[i];
	return NULL;
}

/*
 * SPC-4 6.4.3.2: a list identifier may not name a copy still running for
 * this I_T nexus. Claims an entry for the new copy (reusing the nexus's
 * previous one for this list id, else a free or the oldest finished one).
 * hold: results are kept for RECEIVE COPY RESULTS; otherwise only the
 * "in use" mark is, and it goes away at the end.
 */
static enum sense_reason xcopy_claim(struct scsi_cmd *cmd, struct xcopy_job *job, uint8_t id)
{
	struct xcopy_lun *v = xcopy_state(cmd);
	struct xcopy_held *e, *best = NULL;
	unsigned i;

	pthread_mutex_lock(&v->xc_lock);
	e = xcopy_find_locked(v, cmd->nexus->id, id);
	if (e && e->state == XC_RUNNING) {
		pthread_mutex_unlock(&v->xc_lock);
		return SR_OPERATION_IN_PROGRESS;
	}
	if (!e) {
		for (i = 0; i < XCOPY_HELD_RESULTS; i++) {
			struct xcopy_held *c = &v->held[i];

			if (!c->used) {
				best = c;
				break;
			}
			if (c->state != XC_RUNNING && (!best || c->seq < best->seq))
				best = c;
		}
		e = best;
	}
	if (!e) {
		/* every entry is a running copy: as many as we run at once */
		pthread_mutex_unlock(&v->xc_lock);
		return SR_BUSY;
	}
	memset(e, 0, sizeof(*e));
	e->used = true;
	e->nexus_id = cmd->nexus->id;
	e->list_id = id;
	e->state = XC_RUNNING;
	e->seq = atomic_fetch_add(&xcopy_seq, 1) + 1;
	job->held = e;
	job->held_seq = e->seq;
	pthread_mutex_unlock(&v->xc_lock);
	return SR_OK;
}

/* Record the outcome in the held entry (after the result is set). */
static void xcopy_settle(struct scsi_cmd *cmd, struct xcopy_job *job, bool hold)
{
	struct xcopy_lun *v = xcopy_state(cmd);
	struct xcopy_held *e = job->held;

	if (!e)
		return;
	pthread_mutex_lock(&v->xc_lock);
	if (e->used && e->seq == job->held_seq) {
		if (!hold) {
			e->used = false;
		} else {
			e->state = cmd->status == SAM_STAT_GOOD ? XC_DONE_OK : XC_DONE_ERR;
			e->segments = (uint16_t)job->cur;
			e->bytes = job->total;
			e->status = cmd->status;
			e->sense_len = cmd->sense_len;
			memcpy(e->sense, cmd->sense, cmd->sense_len);
		}
	}
	pthread_mutex_unlock(&v->xc_lock);
}

/* Progress for COPY STATUS while the copy runs. */
static void xcopy_progress(struct scsi_cmd *cmd, struct xcopy_job *job)
{
	struct xcopy_lun *v = xcopy_state(cmd);
	struct xcopy_held *e = job->held;

	if (!e)
		return;
	pthread_mutex_lock(&v->xc_lock);
	if (e->used && e->seq == job->held_seq) {
		e->segments = (uint16_t)job->cur;
		e->bytes = job->total;
	}
	pthread_mutex_unlock(&v->xc_lock);
}

/* --- EXTENDED COPY (LID1) (SPC-4 6.4) --- */

/* The end of every EXTENDED COPY that got a job (cmd->on_end, result
 * set): result held for RECEIVE COPY RESULTS, statistics, the other LUNs
 * let go. */
static void xcopy_end(struct scsi_cmd *cmd)
{
	struct xcopy_job *job = cmd->xcopy;
	bool hold = ((cmd->buf[1] >> 3) & 3) == 0;   /* LIST ID USAGE 00b */
	unsigned i;

	xcopy_settle(cmd, job, hold);
	/* what was really copied, also when a segment failed half way */
	if (cmd->status == SAM_STAT_GOOD || job->total)
		scsi_stats_xcopy(cmd, job->cur, job->total);
	for (i = 0; i < job->nluns; i++)
		scsi_stats_lun_put(job->luns[i]);
	atomic_fetch_sub(&xcopy_state(cmd)->xc_active, 1);
	free(job);
	cmd->xcopy = NULL;
}

static enum sense_reason xcopy_next(struct scsi_cmd *cmd);
static enum sense_reason xcopy_flush_next(struct scsi_cmd *cmd);

/* A failed COPY or FLUSH request: the sense of a failed segment. */
static enum sense_reason xcopy_io_error(int64_t result)
{
	return result == -ENOSPC || result == -EDQUOT ? SR_SPACE_ALLOC_FAILED : SR_COPY_ABORTED;
}

static void xcopy_flush_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	enum sense_reason r;

	if (io->result < 0) {
		scsi_cmd_done(cmd, xcopy_io_error(io->result));
		return;
	}
	r = xcopy_flush_next(cmd);
	if (r != SR_PENDING)
		scsi_cmd_done(cmd, r);
}

/* With the write cache of a destination disabled (WCE=0), what was copied
 * there is durable before GOOD, as a WRITE would be: a COPY request is a
 * reflink or a bounce copy, not a write through, so each such destination
 * is flushed once, one after another, after the last segment. */
static enum sense_reason xcopy_flush_next(struct scsi_cmd *cmd)
{
	struct xcopy_job *job = cmd->xcopy;

	while (job->flush_seg < job->nseg) {
		unsigned i = job->flush_seg++, k;
		struct scsi_lun *d = job->seg[i].dst;

		if (!job->seg[i].len || !scsi_lun_write_through(d))
			continue;
		for (k = 0; k < i && !(job->seg[k].len && job->seg[k].dst == d); k++)
			;
		if (k < i)
			continue;                   /* flushed for an earlier segment */
		scsi_submit(cmd, &(struct scsi_io){
			.lun = d, .op = BS_OP_FLUSH, .done = xcopy_flush_done,
		});
		return SR_PENDING;
	}
	return SR_OK;
}

static void xcopy_chunk_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	struct xcopy_job *job = cmd->xcopy;
	struct xcopy_seg *s = &job->seg[job->cur];
	enum sense_reason r;

	scsi_rl_unlock(cmd);
	if (io->result < 0) {
		scsi_cmd_done(cmd, xcopy_io_error(io->result));
		return;
	}
	if (io->reflinked)
		scsi_stats_xcopy_reflink(cmd, io->reflinked >> s->dst->block_shift);
	job->seg_done += job->chunk;
	job->total += job->chunk;
	if (job->seg_done >= s->len) {
		job->cur++;
		job->seg_done = 0;
	}
	xcopy_progress(cmd, job);
	r = xcopy_next(cmd);
	if (r != SR_PENDING)
		scsi_cmd_done(cmd, r);
}

/* Where in its segment the chunk in flight starts: a segment is copied
 * chunk by chunk from its start, or from its end when its destination
 * overlaps its source further on (memmove semantics: a chunk never reads
 * what an earlier chunk of the same segment wrote). */
static uint64_t xcopy_chunk_at(const struct xcopy_job *job, const struct xcopy_seg *s)
{
	return s->backward ? s->len - job->seg_done - job->chunk : job->seg_done;
}

/* The chunk's destination range is locked: copy it. */
static enum sense_reason xcopy_locked(struct scsi_cmd *cmd)
{
	struct xcopy_job *job = cmd->xcopy;
	struct xcopy_seg *s = &job->seg[job->cur];
	uint64_t at = xcopy_chunk_at(job, s);

	scsi_submit(cmd, &(struct scsi_io){
		.lun = s->dst, .op = BS_OP_COPY, .offset = s->dst_off + at,
		.len = job->chunk, .src = s->src, .src_offset = s->src_off + at,
		.done = xcopy_chunk_done,
	});
	return SR_PENDING;
}

/* Start the next chunk, or end (after the flushes WCE=0 asks for). */
static enum sense_reason xcopy_next(struct scsi_cmd *cmd)
{
	struct xcopy_job *job = cmd->xcopy;
	struct xcopy_seg *s;
	uint8_t shift;

	while (job->cur < job->nseg && job->seg[job->cur].len == 0)
		job->cur++;
	if (job->cur >= job->nseg)
		return xcopy_flush_next(cmd);
	if (atomic_load_explicit(&cmd->aborted, memory_order_acquire))
		return SR_TASK_ABORTED;
	s = &job->seg[job->cur];
	shift = s->dst->block_shift;
	job->chunk = MIN((uint64_t)XCOPY_CHUNK, s->len - job->seg_done);
	return scsi_rl_lock(cmd, s->dst, (s->dst_off + xcopy_chunk_at(job, s)) >> shift,
			    job->chunk >> shift, RL_SHARED, xcopy_locked);
}

/* SPC-4 6.4.6.4: the CSCD a 0xE4 identification descriptor names, among
 * the LUNs of this nexus's target only. */
static struct scsi_lun *xcopy_find_lun(struct scsi_cmd *cmd, const uint8_t *desig)
{
	struct scsi_target *t = cmd->nexus->target;
	uint8_t type = desig[1] & 0x0f, assoc = (desig[1] >> 4) & 3, len = desig[3];
	uint64_t hi, lo;
	unsigned i;

	if ((desig[0] & 0x0f) != 0x01 || type != 0x03 || assoc != 0 || len != 16)
		return NULL;       /* only the binary NAA designator of a LU (VPD 0x83) */
	hi = get_be64(desig + 4);
	lo = get_be64(desig + 12);
	for (i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lun *l = scsi_target_lun(t, i);

		if (l && l->naa == hi && l->naa_ext == lo)
			return l;
	}
	return NULL;
}

/* SPC-4 5.13: the copy reads and writes other LUNs on behalf of this I_T
 * nexus, so their reservations apply as if it sent READ or WRITE there. */
static bool xcopy_pr_allows(struct scsi_cmd *cmd, struct scsi_lun *l, bool write)
{
	struct scsi_cmd probe;

	memset(&probe, 0, sizeof(probe));
	probe.nexus = cmd->nexus;
	probe.lun = l;
	probe.lun_id = l->id;
	probe.cdb[0] = write ? 0x8a : 0x88;   /* WRITE(16) / READ(16) */
	probe.cdb_len = 16;
	return pr_check(&probe) == SR_OK;
}

/* A LUN able to take part in a copy now (SBC-4 4.x medium states). */
static bool xcopy_lun_ready(const struct scsi_lun *l)
{
	if (atomic_load(&l->sanitizing) || atomic_load(&l->stopped))
		return false;
	if (l->removable && !atomic_load(&l->medium_present))
		return false;
	return l->bs != NULL;
}

/* An unsupported descriptor: its reason with a field pointer into the
 * parameter list. */
static enum sense_reason xcopy_bad_desc(struct scsi_cmd *cmd, uint32_t byte, int bit,
					enum sense_reason r)
{
	cmd->field_valid = true;
	cmd->field_in_cdb = false;
	cmd->field_byte = (uint16_t)byte;
	cmd->field_bit = (int8_t)bit;
	return r;
}

/* SPC-4 6.4.6.4: the ntd CSCD descriptors (32 bytes each, 0xE4 only) at
 * byte 16 of the list, into cscd[]. A LUN other than the command's is held
 * against a reload that removes it, for as long as the copy runs. */
static enum sense_reason xcopy_parse_cscds(struct scsi_cmd *cmd, struct xcopy_job *job,
					   uint32_t ntd, struct scsi_lun **cscd)
{
	const uint8_t *p = cmd->buf;
	unsigned i, k;

	for (i = 0; i < ntd; i++) {
		const uint8_t *d = p + 16 + 32 * i;

		if (d[0] != 0xe4)
			return xcopy_bad_desc(cmd, 16 + 32 * i, -1, SR_UNSUPPORTED_TARGET_DESCRIPTOR);
		/* byte 1: LU ID TYPE and NUL are ignored for 0xE4 (SPC-4);
		 * PERIPHERAL DEVICE TYPE: block devices only */
		if ((d[1] & 0x1f) != 0x00)
			return xcopy_bad_desc(cmd, 16 + 32 * i + 1, 4,
					      SR_UNSUPPORTED_TARGET_DESCRIPTOR);
		cscd[i] = xcopy_find_lun(cmd, d + 4);
		if (!cscd[i] || !xcopy_lun_ready(cscd[i]))
			return SR_COPY_TARGET_DEVICE_NOT_REACHABLE;
		/* another LUN used across PENDING returns (scsi/stats.h) */
		if (cscd[i] != cmd->lun) {
			for (k = 0; k < job->nluns && job->luns[k] != cscd[i]; k++)
				;
			if (k == job->nluns) {
				scsi_stats_lun_get(cscd[i]);
				job->luns[job->nluns++] = cscd[i];
			}
		}
		/* SBC-4 6.x block device type specific parameters: DISK BLOCK
		 * LENGTH must be the LUN's */
		if (get_be24(d + 29) != cscd[i]->block_size)
			return scsi_invalid_param(cmd, (uint16_t)(16 + 32 * i + 29), -1);
	}
	return SR_OK;
}

/* The segment descriptors in [off, end) of the list: their number, once
 * every one is known to be a block -> block descriptor (02h) of its size. */
static enum sense_reason xcopy_count_segments(struct scsi_cmd *cmd, uint32_t off, uint32_t end,
					      uint32_t *nsd)
{
	const uint8_t *p = cmd->buf;

	*nsd = 0;
	while (off < end) {
		uint32_t dl;

		if (end - off < 4)
			return SR_PARAM_LIST_LENGTH_ERROR;
		dl = 4u + get_be16(p + off + 2);
		if (p[off] != 0x02)
			return xcopy_bad_desc(cmd, off, -1, SR_UNSUPPORTED_SEGMENT_DESCRIPTOR);
		if (dl != 0x1c)
			return scsi_invalid_param(cmd, (uint16_t)(off + 2), -1);
		if (end - off < dl)
			return SR_PARAM_LIST_LENGTH_ERROR;
		if (++*nsd > XCOPY_MAX_SEGMENT_DESC)
			return SR_TOO_MANY_SEGMENT_DESCRIPTORS;
		off += dl;
	}
	return SR_OK;
}

/* SPC-4 6.4.5.5: one block -> block segment descriptor at byte off of the
 * list, between the ntd CSCDs of cscd[], into s: indexes, lengths, ranges,
 * write protection and reservations. */
static enum sense_reason xcopy_parse_segment(struct scsi_cmd *cmd, uint32_t off,
					     struct scsi_lun *const *cscd, uint32_t ntd,
					     struct xcopy_seg *s)
{
	const uint8_t *d = cmd->buf + off;
	uint16_t si = get_be16(d + 4), di = get_be16(d + 6);
	uint32_t nb = get_be16(d + 10);
	bool dc = d[1] & 0x02;
	uint64_t src_lba = get_be64(d + 12), dst_lba = get_be64(d + 20), len;

	if (d[1] & 0xfc)
		return scsi_invalid_param(cmd, (uint16_t)(off + 1), 7);
	if (si >= ntd || di >= ntd)
		return SR_COPY_TARGET_DEVICE_NOT_REACHABLE;
	s->src = cscd[si];
	s->dst = cscd[di];
	len = (uint64_t)nb << (dc ? s->dst->block_shift : s->src->block_shift);
	if (len > XCOPY_MAX_SEGMENT_BYTES)
		return scsi_invalid_param(cmd, (uint16_t)(off + 10), -1);
	/* whole blocks at both ends */
	if (len & (((uint64_t)1 << s->src->block_shift) - 1) ||
	    len & (((uint64_t)1 << s->dst->block_shift) - 1))
		return SR_COPY_ABORTED;
	if (src_lba + (len >> s->src->block_shift) < src_lba ||
	    src_lba + (len >> s->src->block_shift) > scsi_lun_nblocks(s->src) ||
	    dst_lba + (len >> s->dst->block_shift) < dst_lba ||
	    dst_lba + (len >> s->dst->block_shift) > scsi_lun_nblocks(s->dst))
		return SR_COPY_ABORTED;
	if (len && (s->dst->read_only || atomic_load(&s->dst->swp)))
		return SR_WRITE_PROTECTED;
	/* reserved by another initiator: not reachable for this copy */
	if (len && (!xcopy_pr_allows(cmd, s->src, false) || !xcopy_pr_allows(cmd, s->dst, true)))
		return SR_COPY_TARGET_DEVICE_NOT_REACHABLE;
	s->src_off = src_lba << s->src->block_shift;
	s->dst_off = dst_lba << s->dst->block_shift;
	s->len = len;
	/* one backstore, destination inside the source past its start */
	s->backward = s->src->bs == s->dst->bs && s->src_off < s->dst_off &&
		      s->dst_off < s->src_off + len;
	return SR_OK;
}

/* SPC-4 6.4.3: the whole parameter list into job, before anything moves. */
static enum sense_reason xcopy_parse_list(struct scsi_cmd *cmd, struct xcopy_job *job)
{
	const uint8_t *p = cmd->buf;
	uint32_t plen = cmd->xfer_len;
	struct scsi_lun *cscd[XCOPY_MAX_TARGET_DESC];
	uint32_t tdl, sdl, idl, off, ntd, nsd, i;
	uint8_t usage, id;
	enum sense_reason r;

	if (plen < 16)
		return SR_PARAM_LIST_LENGTH_ERROR;
	id = p[0];
	usage = (p[1] >> 3) & 3;
	tdl = get_be16(p + 2);
	sdl = get_be32(p + 8);
	idl = get_be32(p + 12);
	if (p[1] & 0xc0)
		return scsi_invalid_param(cmd, 1, 7);
	if (usage == 1)
		return scsi_invalid_param(cmd, 1, 4);     /* reserved */
	if (usage == 3 && id != 0)
		return scsi_invalid_param(cmd, 0, -1);    /* 11b: LIST IDENTIFIER zero */
	/* from here on, a failure is held for RECEIVE COPY RESULTS too */
	if (usage != 3) {
		r = xcopy_claim(cmd, job, id);
		if (r)
			return r;
	}
	/* SPC-4 6.4.3.1: lengths */
	if ((uint64_t)tdl + sdl > XCOPY_MAX_DESC_LIST_LEN)
		return SR_PARAM_LIST_LENGTH_ERROR;
	if (16ull + tdl + sdl + idl > plen)
		return SR_PARAM_LIST_LENGTH_ERROR;
	if (idl > 0)
		return scsi_invalid_param(cmd, 12, -1);   /* MAXIMUM INLINE DATA LENGTH 0 */
	if (tdl % 32)
		return SR_PARAM_LIST_LENGTH_ERROR;
	ntd = tdl / 32;
	if (ntd > XCOPY_MAX_TARGET_DESC)
		return SR_TOO_MANY_TARGET_DESCRIPTORS;
	r = xcopy_parse_cscds(cmd, job, ntd, cscd);
	if (!r)
		r = xcopy_count_segments(cmd, 16 + tdl, 16 + tdl + sdl, &nsd);
	if (r)
		return r;
	for (i = 0, off = 16 + tdl; i < nsd; i++, off += 0x1c) {
		job->cur = i;                  /* the segment a failure names */
		r = xcopy_parse_segment(cmd, off, cscd, ntd, &job->seg[i]);
		if (r)
			return r;
	}
	job->nseg = nsd;
	job->cur = 0;
	return SR_OK;
}

static enum sense_reason xcopy_exec(struct scsi_cmd *cmd)
{
	struct xcopy_job *job;
	enum sense_reason r;

	if (cmd->xfer_len == 0)
		return SR_OK;              /* SPC-4 6.4.1: no list, no copy */
	job = calloc(1, sizeof(*job));
	if (!job)
		return SR_INTERNAL_ERROR;
	cmd->xcopy = job;
	cmd->on_end = xcopy_end;
	atomic_fetch_add(&xcopy_state(cmd)->xc_active, 1);
	r = xcopy_parse_list(cmd, job);
	if (r == SR_OK) {
		job->cur = 0;
		r = xcopy_next(cmd);
	}
	return r;
}

enum sense_reason xcopy_parse_extended_copy(struct scsi_cmd *cmd)
{
	uint32_t plen = get_be32(cmd->cdb + 10);

	if (plen > 16 + XCOPY_MAX_DESC_LIST_LEN)
		return SR_PARAM_LIST_LENGTH_ERROR;
	scsi_set_dataout(cmd, plen);
	cmd->execute = xcopy_exec;
	return SR_OK;
}

/* --- RECEIVE COPY RESULTS (SPC-4 6.18) --- */

static uint32_t rcr_op_params(uint8_t *d)
{
	memset(d, 0, 48);
	put_be32(d, 46 - 4);                        /* AVAILABLE DATA */
	d[4] = 0x01;                                /* SNLID: list IDs are kept apart */
	put_be16(d + 8, XCOPY_MAX_TARGET_DESC);
	put_be16(d + 10, XCOPY_MAX_SEGMENT_DESC);
	put_be32(d + 12, XCOPY_MAX_DESC_LIST_LEN);
	put_be32(d + 16, XCOPY_MAX_SEGMENT_BYTES);  /* MAXIMUM SEGMENT LENGTH */
	put_be32(d + 20, 0);                        /* MAXIMUM INLINE DATA LENGTH */
	put_be32(d + 24, 0);                        /* HELD DATA LIMIT */
	put_be32(d + 28, 0);                        /* no stream devices */
	put_be16(d + 34, XCOPY_MAX_CONCURRENT);     /* TOTAL CONCURRENT COPIES */
	d[36] = XCOPY_MAX_CONCURRENT;               /* MAXIMUM CONCURRENT COPIES */
	d[37] = 9;                                  /* DATA SEGMENT GRANULARITY 2^9 */
	d[38] = 0;
	d[39] = 0;
	d[43] = 2;                                  /* implemented descriptor codes */
	d[44] = 0x02;
	d[45] = 0xe4;
	return 46;
}

static enum sense_reason rcr_exec(struct scsi_cmd *cmd)
{
	struct xcopy_lun *v = xcopy_state(cmd);
	uint8_t sa = cmd->cdb[1] & 0x1f, id = cmd->cdb[2];
	uint8_t d[64 + SCSI_SENSE_BUF];
	struct xcopy_held *e;
	uint32_t len = 0;

	memset(d, 0, sizeof(d));
	if (sa == 0x03) {
		scsi_datain(cmd, d, rcr_op_params(d));
		return SR_OK;
	}
	pthread_mutex_lock(&v->xc_lock);
	e = xcopy_find_locked(v, cmd->nexus->id, id);
	if (!e) {
		pthread_mutex_unlock(&v->xc_lock);
		return scsi_invalid_cdb(cmd, 2, -1);   /* no such list identifier */
	}
	if (sa == 0x00) {
		/* SPC-4 6.18.3 COPY STATUS */
		uint64_t count = e->bytes;
		uint8_t units = 0;

		while (count > 0xffffffffull) {         /* 00h bytes, 01h KiB, 02h MiB, ... */
			count >>= 10;
			units++;
		}
		put_be32(d, 8);
		d[4] = e->state;                        /* HDD 0: no held data */
		put_be16(d + 5, e->segments);
		d[7] = units;
		put_be32(d + 8, (uint32_t)count);
		len = 12;
	} else {
		/* SPC-4 6.18.5 FAILED SEGMENT DETAILS */
		if (e->state == XC_DONE_ERR) {
			put_be32(d, 56 + e->sense_len);
			d[56] = e->status;              /* COPY COMMAND STATUS */
			put_be16(d + 58, e->sense_len);
			memcpy(d + 60, e->sense, e->sense_len);
			len = 60u + e->sense_len;
		} else {
			/* running, or completed without error: nothing held */
			put_be32(d, 0);
			len = 4;
		}
	}
	pthread_mutex_unlock(&v->xc_lock);
	scsi_datain(cmd, d, len);
	return SR_OK;
}

enum sense_reason xcopy_parse_receive_copy_results(struct scsi_cmd *cmd)
{
	scsi_set_alloc(cmd, get_be32(cmd->cdb + 10), 64 + SCSI_SENSE_BUF);
	cmd->execute = rcr_exec;
	return SR_OK;
}

/* --- Third-party Copy VPD page (SPC-4 7.8.17) --- */

uint32_t xcopy_vpd_tpc(const struct scsi_lun *lun, uint8_t *d)
{
	uint32_t off = 4;

	(void)lun;
	/* Supported Commands (0001h): EXTENDED COPY(LID1); RECEIVE COPY
	 * STATUS, OPERATING PARAMETERS, FAILED SEGMENT DETAILS */
	put_be16(d + off, 0x0001);
	put_be16(d + off + 2, 12);
	d[off + 4] = 7;                     /* COMMANDS SUPPORTED LIST LENGTH */
	d[off + 5] = 0x83; d[off + 6] = 1; d[off + 7] = 0x00;
	d[off + 8] = 0x84; d[off + 9] = 3; d[off + 10] = 0x00; d[off + 11] = 0x03;
	d[off + 12] = 0x04;
	off += 16;                          /* 4 + 12, padded to 4 */
	/* Parameter Data (0004h) */
	put_be16(d + off, 0x0004);
	put_be16(d + off + 2, 0x1c);
	put_be16(d + off + 8, XCOPY_MAX_TARGET_DESC);
	put_be16(d + off + 10, XCOPY_MAX_SEGMENT_DESC);
	put_be32(d + off + 12, XCOPY_MAX_DESC_LIST_LEN);
	put_be32(d + off + 16, 0);          /* MAXIMUM INLINE DATA LENGTH */
	off += 32;
	/* Supported Descriptors (0008h): block -> block, identification CSCD */
	put_be16(d + off, 0x0008);
	put_be16(d + off + 2, 4);
	d[off + 4] = 2;
	d[off + 5] = 0x02;
	d[off + 6] = 0xe4;
	off += 8;
	/* Supported CSCD Descriptor IDs (000Ch): none */
	put_be16(d + off, 0x000c);
	put_be16(d + off + 2, 4);
	off += 8;
	/* General Copy Operations (8001h) */
	put_be16(d + off, 0x8001);
	put_be16(d + off + 2, 0x20);
	put_be32(d + off + 4, XCOPY_MAX_CONCURRENT);   /* TOTAL CONCURRENT COPIES */
	put_be32(d + off + 8, XCOPY_MAX_CONCURRENT);   /* MAXIMUM IDENTIFIED CONCURRENT COPIES */
	put_be32(d + off + 12, XCOPY_MAX_SEGMENT_BYTES);
	d[off + 16] = 9;                    /* DATA SEGMENT GRANULARITY 2^9 */
	d[off + 17] = 0;                    /* INLINE DATA GRANULARITY */
	off += 36;
	put_be16(d + 2, (uint16_t)(off - 4));
	return off;
}
