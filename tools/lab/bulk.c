/*
 * Region operations in chunks, several commands in flight: what a host
 * (or its data mover) does to fill, copy, zero, unmap or check a range of
 * blocks. One call runs one operation over one region on one session and
 * reports the time, the commands, the data carried and the TCP bytes that
 * crossed the connection.
 *
 * DESIGN: qd slots, each with its own chunk buffer and lab_io; a slot takes
 * the next chunk when its command completes, so up to qd commands are in
 * flight until the region is done (lab_run_until). A host copy's slot
 * reads its chunk and then writes it before taking the next one.
 */
#include "config.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "tools/lab/lab.h"

struct bulk_job;

struct bulk_slot {
	struct bulk_job *job;
	struct lab_io io;
	uint8_t *buf;
	uint64_t off;           /* block offset of the chunk in the region */
	uint32_t n;
	bool writing;           /* host copy: the write half */
	uint8_t list[96];       /* EXTENDED COPY parameter list */
};

struct bulk_job {
	const struct bulk_args *a;
	struct lab_sess *s;
	struct bulk_result *r;
	struct bulk_slot *slots;
	uint64_t next;          /* next block offset to hand out */
	unsigned active;
	const uint8_t *zeroes;  /* a zeroed chunk */
	uint8_t naa[16];
};

static void put_be(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

/* SPC-4 6.4 EXTENDED COPY (LID1) parameter list: header, one
 * identification CSCD descriptor (0xE4, NAA of the LU, used as source and
 * destination), one block-to-block segment descriptor (0x02). */
static size_t xcopy_list(uint8_t *p, const uint8_t naa[16], uint32_t bs, uint32_t nblocks,
			 uint64_t src, uint64_t dst)
{
	uint8_t *cscd = p + 16, *seg = p + 48;

	memset(p, 0, 76);
	p[1] = 3 << 3;                  /* LIST ID USAGE 11b: no list identifier */
	put_be(p + 2, 32, 2);           /* CSCD descriptor list length */
	put_be(p + 8, 28, 4);           /* segment descriptor list length */
	cscd[0] = 0xe4;
	cscd[4] = 0x01;                 /* code set: binary */
	cscd[5] = 0x03;                 /* association LU, designator type NAA */
	cscd[7] = 16;
	memcpy(cscd + 8, naa, 16);
	put_be(cscd + 29, bs, 3);       /* disk block length */
	seg[0] = 0x02;
	put_be(seg + 2, 0x18, 2);
	put_be(seg + 4, 0, 2);          /* source CSCD 0 */
	put_be(seg + 6, 0, 2);          /* destination CSCD 0 */
	put_be(seg + 10, nblocks, 2);
	put_be(seg + 12, src, 8);
	put_be(seg + 20, dst, 8);
	return 76;
}

static void slot_check(struct bulk_slot *sl)
{
	const struct bulk_args *a = sl->job->a;
	struct bulk_result *r = sl->job->r;
	uint32_t bs = sl->job->s->bs;
	int64_t bad;

	if (a->op == BULK_VERIFY_PATTERN)
		bad = lab_pattern_check(sl->buf, sl->n, bs, a->src_lba + sl->off, a->gen, a->salt);
	else
		bad = lab_zero_check(sl->buf, (size_t)sl->n * bs);
	if (bad >= 0 && (r->mismatch_lba < 0 || a->lba + sl->off + (uint64_t)bad / bs <
				     (uint64_t)r->mismatch_lba)) {
		r->mismatch_lba = (int64_t)(a->lba + sl->off + (uint64_t)bad / bs);
		r->mismatch_byte = bad % bs;
	}
}

static void slot_issue(struct bulk_slot *sl);

static void slot_done(struct lab_io *io, struct scsi_task *t)
{
	struct bulk_slot *sl = io->priv;
	struct bulk_job *j = sl->job;
	enum bulk_op op = j->a->op;

	if (io->status != SCSI_STATUS_GOOD)
		lab_die_status(io, t);
	j->r->cmds++;
	if (op == BULK_HOST_COPY && !sl->writing) {
		j->r->payload += (uint64_t)sl->n * j->s->bs;
		sl->writing = true;
		lab_write16(&sl->io, j->a->lba + sl->off, sl->n, sl->buf);
		return;
	}
	if (op == BULK_FILL || op == BULK_WRITE_ZEROES || op == BULK_HOST_COPY ||
	    op == BULK_VERIFY_PATTERN || op == BULK_VERIFY_ZERO)
		j->r->payload += (uint64_t)sl->n * j->s->bs;
	else if (op == BULK_WRITE_SAME)
		j->r->payload += j->s->bs;
	if (op == BULK_VERIFY_PATTERN || op == BULK_VERIFY_ZERO)
		slot_check(sl);
	j->active--;
	slot_issue(sl);
}

static void slot_issue(struct bulk_slot *sl)
{
	struct bulk_job *j = sl->job;
	const struct bulk_args *a = j->a;
	uint64_t lba;
	size_t len;

	if (j->next >= a->blocks)
		return;
	sl->off = j->next;
	sl->n = (uint32_t)(a->blocks - j->next < a->chunk_blocks ? a->blocks - j->next : a->chunk_blocks);
	j->next += sl->n;
	j->active++;
	sl->writing = false;
	lba = a->lba + sl->off;
	switch (a->op) {
	case BULK_FILL:
		lab_pattern_fill(sl->buf, sl->n, j->s->bs, lba, a->gen, a->salt);
		lab_write16(&sl->io, lba, sl->n, sl->buf);
		break;
	case BULK_WRITE_ZEROES:
		lab_write16(&sl->io, lba, sl->n, j->zeroes);
		break;
	case BULK_WRITE_SAME:
		lab_writesame16(&sl->io, lba, sl->n, j->zeroes, false);
		break;
	case BULK_UNMAP:
		lab_unmap(&sl->io, lba, sl->n);
		break;
	case BULK_XCOPY:
		len = xcopy_list(sl->list, j->naa, j->s->bs, sl->n, a->src_lba + sl->off, lba);
		lab_xcopy(&sl->io, sl->list, len);
		sl->io.lba = lba;
		break;
	case BULK_HOST_COPY:
		lab_read16(&sl->io, a->src_lba + sl->off, sl->n, sl->buf);
		break;
	case BULK_VERIFY_PATTERN:
	case BULK_VERIFY_ZERO:
		lab_read16(&sl->io, lba, sl->n, sl->buf);
		break;
	}
}

static bool job_done(void *arg)
{
	const struct bulk_job *j = arg;

	return j->next >= j->a->blocks && !j->active;
}

void lab_bulk(struct lab_sess *s, const struct bulk_args *a, struct bulk_result *r)
{
	struct bulk_job j = { .a = a, .s = s, .r = r };
	bool bufs = a->op == BULK_FILL || a->op == BULK_HOST_COPY || a->op == BULK_VERIFY_PATTERN ||
		    a->op == BULK_VERIFY_ZERO;
	size_t chunk = (size_t)a->chunk_blocks * s->bs;
	uint64_t tx0 = 0, rx0 = 0, tx1, rx1, t0;
	uint8_t *zeroes = NULL;

	memset(r, 0, sizeof(*r));
	r->mismatch_lba = -1;
	r->mismatch_byte = -1;
	if (!a->chunk_blocks || !a->qd)
		lab_die("internal error: bulk chunk or depth 0");
	if (a->op == BULK_XCOPY) {
		if (a->chunk_blocks > 0xffff)
			lab_die("an EXTENDED COPY segment holds at most 65535 blocks (%u asked)",
				a->chunk_blocks);
		lab_sess_naa(s, j.naa);
	}
	if (a->op == BULK_WRITE_ZEROES || a->op == BULK_WRITE_SAME)
		zeroes = lab_xalloc_aligned(a->op == BULK_WRITE_SAME ? s->bs : chunk);
	j.zeroes = zeroes;
	j.slots = lab_xalloc(sizeof(*j.slots) * a->qd);
	for (unsigned i = 0; i < a->qd; i++) {
		j.slots[i].job = &j;
		j.slots[i].io.s = s;
		j.slots[i].io.done = slot_done;
		j.slots[i].io.priv = &j.slots[i];
		if (bufs)
			j.slots[i].buf = lab_xalloc_aligned(chunk);
	}
	r->have_net = lab_sess_net_bytes(s, &tx0, &rx0);
	t0 = lab_now_ns();
	for (unsigned i = 0; i < a->qd; i++)
		slot_issue(&j.slots[i]);
	lab_run_until(job_done, &j, 0, "the region operation");
	r->seconds = (double)(lab_now_ns() - t0) / 1e9;
	if (r->have_net && lab_sess_net_bytes(s, &tx1, &rx1)) {
		r->net_tx = tx1 - tx0;
		r->net_rx = rx1 - rx0;
	} else {
		r->have_net = false;
	}
	for (unsigned i = 0; i < a->qd; i++)
		free(j.slots[i].buf);
	free(j.slots);
	free(zeroes);
}
