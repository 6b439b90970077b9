/*
 * vaai-lab locking: why ATS matters. H "hosts" (sessions with their own
 * initiator names) run a VMFS-like metadata update loop on a lock area of
 * the LUN — take the lock, read-modify-write the file's metadata block,
 * give the lock back — while a "VM" session runs sequential I/O on another
 * region and retries its own RESERVATION CONFLICTs like an initiator.
 *
 *   none     no lock commands: the same read-modify-write (the baseline)
 *   reserve  RESERVE(6) of the whole LUN around the update, RELEASE(6)
 *            after it; a RESERVATION CONFLICT is retried after a growing,
 *            jittered back-off (lab_backoff_ns), as ESXi does
 *   ats      COMPARE AND WRITE on the file's lock sector (free -> ours,
 *            ours -> free), as VMFS does; on MISCOMPARE the host reads the
 *            sector, retries at once if the lock is free, backs off if
 *            another host holds it
 *   pr       PERSISTENT RESERVE OUT RESERVE (Write Exclusive) / RELEASE,
 *            each host registered with its own key
 *
 * Lock area (from the region's start, one block each): lock sectors of
 * the files, then their metadata blocks. A lock sector holds "VLABLOCK",
 * the file number, the owner (0 = free; byte 16) and a generation
 * (byte 24) bumped by every acquisition. A metadata block holds
 * "VLABMETA", the file number and an update counter: after each phase the
 * counters must have grown by the updates done (lost updates otherwise).
 * The VM region follows the lock area.
 *
 * DESIGN: one thread, one loop (session.c). Each host is a state machine
 * stepped by its command completions and its timer (back-off, think time);
 * each VM slot likewise. A phase stops after --seconds (a timer) or when
 * --updates updates are done; then no new update or VM command starts, a
 * host that holds a lock finishes its update (releasing the lock), and the
 * phase ends when nothing is in flight. Only then are targetd's counters
 * read, so the client's counts and the daemon's deltas cover the same
 * commands.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/lab/locking.h"

#define LOCK_MAGIC 0x4b434f4c42414c56ull    /* "VLABLOCK" */
#define META_MAGIC 0x4154454d42414c56ull    /* "VLABMETA" */
#define LOCK_AREA_BYTES (1u << 20)
#define LOCK_PR_KEY 0x766c616200000000ull   /* "vlab" + host number */
#define LOCK_DRAIN_S 120.0

enum hstep { H_IDLE, H_ACQUIRE, H_LOCK_READ, H_META_READ, H_META_WRITE, H_RELEASE, H_WAIT, H_DONE };
enum hafter { AFTER_ACQUIRE, AFTER_LOCK_READ, AFTER_NEXT };

struct lock_run;

struct lock_host {
	struct lock_run *run;
	struct lab_sess *s;
	unsigned id;                    /* 1..H */
	unsigned k;                     /* updates started: picks the file */
	unsigned file;
	enum hstep step;
	enum hafter after;
	struct lab_io io;
	struct lab_timer timer;
	unsigned attempt;
	unsigned burst_left;
	uint64_t t_update;
	uint8_t *caw;                   /* 2 blocks: compare, then write */
	uint8_t *blk;                   /* lock sector or metadata block */
	uint64_t *gen;                  /* per file: free generation last seen */
};

struct vm_slot {
	struct lock_run *run;
	struct lab_io io;
	struct lab_timer timer;
	uint8_t *buf;
	uint64_t lba;
	uint64_t t_first;
	unsigned attempt;
	bool idle;
};

struct lock_run {
	const struct lab_opts *o;
	struct lock_host *hosts;
	struct lab_sess *vm;
	struct vm_slot *slots;
	unsigned files;
	uint64_t lock_lba, meta_lba, vm_lba, vm_blocks;
	uint32_t vm_nblk;
	uint64_t vm_next;
	enum lock_mode mode;
	bool stopping;
	uint64_t t0, t_stop;
	uint64_t started, completed;    /* updates in this phase */
	uint64_t *expect;               /* per file: counter expected */
	struct lab_timer stop_timer;
	struct lock_phase *ph;
};

static void host_next(struct lock_host *h);
static void host_acquire(struct lock_host *h);
static void vm_send(struct vm_slot *v);
static void vm_issue(struct vm_slot *v);

/* ---- records ---------------------------------------------------------------- */

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static void lock_image(uint8_t *p, uint32_t bs, unsigned file, unsigned owner, uint64_t gen)
{
	memset(p, 0, bs);
	put64(p, LOCK_MAGIC);
	put64(p + 8, file);
	put64(p + 16, owner);
	put64(p + 24, gen);
}

static void meta_image(uint8_t *p, uint32_t bs, unsigned file, uint64_t counter, unsigned host)
{
	memset(p, 0, bs);
	put64(p, META_MAGIC);
	put64(p + 8, file);
	put64(p + 16, counter);
	put64(p + 24, host);
}

/* Make room for at least n seconds in the phase's series. */
static void series_grow(struct lock_phase *ph, unsigned n)
{
	struct lock_sample *ns;

	if (n <= ph->nsec)
		return;
	n += 16;
	ns = realloc(ph->series, n * sizeof(*ns));
	if (!ns)
		lab_die("out of memory");
	memset(ns + ph->nsec, 0, (n - ph->nsec) * sizeof(*ns));
	ph->series = ns;
	ph->nsec = n;
}

static struct lock_sample *sample(struct lock_run *r)
{
	unsigned sec = (unsigned)((lab_now_ns() - r->t0) / LAB_NS);

	series_grow(r->ph, sec + 1);
	return &r->ph->series[sec];
}

static void verbose_event(const struct lab_io *io, const struct scsi_task *t, const char *then,
			  uint64_t *shown)
{
	char buf[120];

	if (!lab_verbose || *shown >= 5)
		return;
	(*shown)++;
	lab_note("%s: %s LBA %" PRIu64 ": %s%s", io->s->name, io->what, io->lba,
		 lab_status_text(io->status, t, buf, sizeof(buf)), then);
}

/* ---- stopping ---------------------------------------------------------------- */

static void lock_stop(struct lock_run *r)
{
	if (r->stopping)
		return;
	r->stopping = true;
	r->t_stop = lab_now_ns();
	lab_timer_cancel(&r->stop_timer);
	for (unsigned i = 0; i < r->o->hosts; i++) {
		struct lock_host *h = &r->hosts[i];

		if (h->step == H_WAIT) {       /* waiting hosts hold no lock */
			lab_timer_cancel(&h->timer);
			h->step = H_DONE;
		}
	}
	for (unsigned i = 0; i < r->o->vm_qd; i++) {
		if (lab_timer_armed(&r->slots[i].timer)) {
			lab_timer_cancel(&r->slots[i].timer);
			r->slots[i].idle = true;
		}
	}
}

static void stop_timer_fired(struct lab_timer *t)
{
	lock_stop(t->arg);
}

static bool phase_drained(void *arg)
{
	struct lock_run *r = arg;

	if (!r->stopping)
		return false;
	for (unsigned i = 0; i < r->o->hosts; i++)
		if (r->hosts[i].step != H_DONE || r->hosts[i].s->inflight)
			return false;
	return !r->vm->inflight;
}

/* ---- hosts --------------------------------------------------------------------- */

static void host_wait(struct lock_host *h, enum hafter after, uint64_t ns)
{
	h->step = H_WAIT;
	h->after = after;
	lab_timer_arm(&h->timer, ns);
}

static void host_timer_fired(struct lab_timer *t)
{
	struct lock_host *h = t->arg;

	if (h->run->stopping) {
		h->step = H_DONE;
		return;
	}
	switch (h->after) {
	case AFTER_ACQUIRE: host_acquire(h); break;
	case AFTER_LOCK_READ:
		h->step = H_LOCK_READ;
		lab_read16(&h->io, h->run->lock_lba + h->file, 1, h->blk);
		break;
	case AFTER_NEXT: host_next(h); break;
	}
}

static void host_complete(struct lock_host *h)
{
	struct lock_run *r = h->run;
	const struct lab_opts *o = r->o;

	r->ph->updates++;
	r->completed++;
	r->expect[h->file]++;
	sample(r)->updates++;
	lab_hist_add(&r->ph->upd_lat, lab_now_ns() - h->t_update);
	if (o->updates && r->completed >= o->updates)
		lock_stop(r);
	if (r->stopping) {
		h->step = H_DONE;
		return;
	}
	if (o->snapshots) {
		if (--h->burst_left == 0) {
			h->burst_left = o->burst;
			host_wait(h, AFTER_NEXT, (uint64_t)(o->pause_ms * 1e6));
			return;
		}
	} else if (o->think_ms > 0) {
		host_wait(h, AFTER_NEXT, (uint64_t)(o->think_ms * 1e6));
		return;
	}
	host_next(h);
}

static void host_release(struct lock_host *h)
{
	struct lock_run *r = h->run;
	uint32_t bs = h->s->bs;

	h->step = H_RELEASE;
	switch (r->mode) {
	case LOCK_NONE:
		host_complete(h);
		break;
	case LOCK_RESERVE:
		lab_release6(&h->io);
		break;
	case LOCK_PR:
		lab_pr_out(&h->io, SCSI_PERSISTENT_RESERVE_RELEASE, SCSI_PERSISTENT_RESERVE_TYPE_WRITE_EXCLUSIVE,
			   LOCK_PR_KEY | h->id, 0);
		break;
	case LOCK_ATS:
		lock_image(h->caw, bs, h->file, h->id, h->gen[h->file] + 1);
		lock_image(h->caw + bs, bs, h->file, 0, h->gen[h->file] + 1);
		lab_caw(&h->io, r->lock_lba + h->file, h->caw);
		break;
	case LOCK__NMODE:
		break;
	}
}

/* The lock sector was read after a MISCOMPARE: retry at once if it is
 * free, back off while another host holds it. */
static void host_lock_seen(struct lock_host *h)
{
	struct lock_run *r = h->run;

	if (get64(h->blk) != LOCK_MAGIC || get64(h->blk + 8) != h->file)
		lab_die("%s: LBA %" PRIu64 " does not hold the lock sector of file %u any more: "
			"something else writes the lock area", h->s->name, r->lock_lba + h->file, h->file);
	if (get64(h->blk + 16) == 0) {
		h->gen[h->file] = get64(h->blk + 24);
		if (r->stopping)
			h->step = H_DONE;
		else
			host_acquire(h);
		return;
	}
	r->ph->lock_busy++;
	if (r->stopping)
		h->step = H_DONE;
	else
		host_wait(h, AFTER_LOCK_READ, lab_backoff_ns(r->o, h->attempt++));
}

static void host_acquired_or_not(struct lock_host *h, struct scsi_task *t)
{
	struct lock_run *r = h->run;
	static uint64_t shown_conflicts, shown_miscompares;

	if (h->io.status == SCSI_STATUS_GOOD) {
		h->step = H_META_READ;
		lab_read16(&h->io, r->meta_lba + h->file, 1, h->blk);
		return;
	}
	if (h->io.status == SCSI_STATUS_RESERVATION_CONFLICT && r->mode != LOCK_ATS) {
		r->ph->host_conflicts++;
		sample(r)->conflicts++;
		verbose_event(&h->io, t, ", retrying after a back-off", &shown_conflicts);
		if (r->stopping)
			h->step = H_DONE;
		else
			host_wait(h, AFTER_ACQUIRE, lab_backoff_ns(r->o, h->attempt++));
		return;
	}
	if (r->mode == LOCK_ATS && lab_is_miscompare(h->io.status, t, NULL)) {
		r->ph->miscompares++;
		sample(r)->miscompares++;
		verbose_event(&h->io, t, ", reading the lock", &shown_miscompares);
		h->step = H_LOCK_READ;
		lab_read16(&h->io, r->lock_lba + h->file, 1, h->blk);
		return;
	}
	if (lab_is_unit_attention(h->io.status, t)) {
		host_acquire(h);
		return;
	}
	lab_die_status(&h->io, t);
}

static void host_done(struct lab_io *io, struct scsi_task *t)
{
	struct lock_host *h = io->priv;
	struct lock_run *r = h->run;

	if (h->step == H_ACQUIRE) {
		host_acquired_or_not(h, t);
		return;
	}
	if (io->status != SCSI_STATUS_GOOD) {
		if (lab_is_unit_attention(io->status, t)) {
			/* resend the same command */
			if (h->step == H_LOCK_READ || h->step == H_META_READ)
				lab_read16(&h->io, io->lba, 1, h->blk);
			else if (h->step == H_META_WRITE)
				lab_write16(&h->io, io->lba, 1, h->blk);
			else
				host_release(h);
			return;
		}
		if (h->step == H_RELEASE && r->mode == LOCK_ATS && lab_is_miscompare(io->status, t, NULL))
			lab_die("%s: the lock of file %u was not ours any more at release (%s): "
				"COMPARE AND WRITE did not keep it", h->s->name, h->file,
				lab_status_text(io->status, t, (char[120]){ 0 }, 120));
		lab_die_status(io, t);
	}
	switch (h->step) {
	case H_LOCK_READ:
		host_lock_seen(h);
		break;
	case H_META_READ:
		if (get64(h->blk) != META_MAGIC || get64(h->blk + 8) != h->file)
			lab_die("%s: LBA %" PRIu64 " does not hold the metadata of file %u any more: "
				"something else writes the lock area", h->s->name, io->lba, h->file);
		meta_image(h->blk, h->s->bs, h->file, get64(h->blk + 16) + 1, h->id);
		h->step = H_META_WRITE;
		lab_write16(&h->io, io->lba, 1, h->blk);
		break;
	case H_META_WRITE:
		host_release(h);
		break;
	case H_RELEASE:
		if (r->mode == LOCK_ATS)
			h->gen[h->file]++;
		host_complete(h);
		break;
	default:
		lab_die("internal error: %s completed in step %d", h->s->name, (int)h->step);
	}
}

static void host_acquire(struct lock_host *h)
{
	struct lock_run *r = h->run;
	uint32_t bs = h->s->bs;

	h->step = H_ACQUIRE;
	switch (r->mode) {
	case LOCK_NONE:
		h->io.status = SCSI_STATUS_GOOD;
		host_acquired_or_not(h, NULL);
		break;
	case LOCK_RESERVE:
		lab_reserve6(&h->io);
		break;
	case LOCK_PR:
		lab_pr_out(&h->io, SCSI_PERSISTENT_RESERVE_RESERVE, SCSI_PERSISTENT_RESERVE_TYPE_WRITE_EXCLUSIVE,
			   LOCK_PR_KEY | h->id, 0);
		break;
	case LOCK_ATS:
		lock_image(h->caw, bs, h->file, 0, h->gen[h->file]);
		lock_image(h->caw + bs, bs, h->file, h->id, h->gen[h->file] + 1);
		lab_caw(&h->io, r->lock_lba + h->file, h->caw);
		break;
	case LOCK__NMODE:
		break;
	}
}

static void host_next(struct lock_host *h)
{
	struct lock_run *r = h->run;

	if (r->stopping || (r->o->updates && r->started >= r->o->updates)) {
		h->step = H_DONE;
		return;
	}
	r->started++;
	h->file = (h->id - 1 + r->o->hosts * h->k++) % r->files;
	h->t_update = lab_now_ns();
	h->attempt = 0;
	host_acquire(h);
}

/* ---- the VM ---------------------------------------------------------------------- */

static void vm_timer_fired(struct lab_timer *t)
{
	struct vm_slot *v = t->arg;

	if (v->run->stopping)
		v->idle = true;
	else
		vm_send(v);
}

static void vm_done(struct lab_io *io, struct scsi_task *t)
{
	struct vm_slot *v = io->priv;
	struct lock_run *r = v->run;
	static uint64_t shown;

	if (io->status == SCSI_STATUS_GOOD) {
		if (!r->stopping) {
			r->ph->vm_ios++;
			r->ph->vm_bytes += (uint64_t)r->vm_nblk * io->s->bs;
			lab_hist_add(&r->ph->vm_lat, lab_now_ns() - v->t_first);
			sample(r)->vm_ios++;
		}
		vm_issue(v);
		return;
	}
	if (io->status == SCSI_STATUS_RESERVATION_CONFLICT) {
		r->ph->vm_conflicts++;
		sample(r)->conflicts++;
		verbose_event(io, t, ", retrying after a back-off", &shown);
		if (r->stopping)
			v->idle = true;
		else
			lab_timer_arm(&v->timer, lab_backoff_ns(r->o, v->attempt++));
		return;
	}
	if (lab_is_unit_attention(io->status, t)) {
		r->ph->vm_retries_ua++;
		vm_send(v);
		return;
	}
	lab_die_status(io, t);
}

static void vm_send(struct vm_slot *v)
{
	if (v->run->o->vm_write)
		lab_write16(&v->io, v->lba, v->run->vm_nblk, v->buf);
	else
		lab_read16(&v->io, v->lba, v->run->vm_nblk, v->buf);
}

static void vm_issue(struct vm_slot *v)
{
	struct lock_run *r = v->run;
	uint64_t span = r->vm_blocks - r->vm_blocks % r->vm_nblk;

	if (r->stopping) {
		v->idle = true;
		return;
	}
	v->idle = false;
	v->lba = r->vm_lba + r->vm_next;
	r->vm_next = (r->vm_next + r->vm_nblk) % span;
	v->attempt = 0;
	v->t_first = lab_now_ns();
	vm_send(v);
}

/* ---- phases ------------------------------------------------------------------------ */

static void pr_sync(struct lab_sess *s, int sa, int type, uint64_t key, uint64_t sa_key)
{
	struct scsi_persistent_reserve_out_basic b = {
		.reservation_key = key,
		.service_action_reservation_key = sa_key,
	};
	struct scsi_task *t = iscsi_persistent_reserve_out_sync(s->ctx, s->lun, sa,
							       SCSI_PERSISTENT_RESERVE_SCOPE_LU, type, &b);
	char buf[120];

	if (!t || t->status != SCSI_STATUS_GOOD)
		lab_die("%s: PERSISTENT RESERVE OUT (service action %d): %s", s->name, sa,
			t ? lab_status_text(t->status, t, buf, sizeof(buf)) : iscsi_get_error(s->ctx));
	scsi_free_scsi_task(t);
}

static void release_sync(struct lab_sess *s)
{
	struct scsi_task *t = iscsi_release6_sync(s->ctx, s->lun);

	if (t)
		scsi_free_scsi_task(t);
}

/* Read the lock area: every host learns each lock's generation, and the
 * metadata counters become what the phase's updates must add to. */
static void phase_read_area(struct lock_run *r, uint64_t *counters)
{
	struct lab_sess *s = r->hosts[0].s;
	uint32_t bs = s->bs;
	uint8_t *buf = lab_xalloc((size_t)r->files * bs);

	lab_sync_read(s, r->lock_lba, r->files, buf);
	for (unsigned f = 0; f < r->files; f++) {
		const uint8_t *p = buf + (size_t)f * bs;

		if (get64(p) != LOCK_MAGIC || get64(p + 8) != f || get64(p + 16) != 0)
			lab_die("the lock sector of file %u (LBA %" PRIu64 ") is not a free vaai-lab "
				"lock between phases: something else writes the lock area", f,
				r->lock_lba + f);
		for (unsigned i = 0; i < r->o->hosts; i++)
			r->hosts[i].gen[f] = get64(p + 24);
	}
	lab_sync_read(s, r->meta_lba, r->files, buf);
	for (unsigned f = 0; f < r->files; f++) {
		const uint8_t *p = buf + (size_t)f * bs;

		if (get64(p) != META_MAGIC || get64(p + 8) != f)
			lab_die("the metadata block of file %u (LBA %" PRIu64 ") was overwritten by "
				"something else", f, r->meta_lba + f);
		counters[f] = get64(p + 16);
	}
	free(buf);
}

static void phase_setup(struct lock_run *r, enum lock_mode mode)
{
	r->mode = mode;
	r->stopping = false;
	r->started = r->completed = 0;
	r->vm_next = 0;
	phase_read_area(r, r->expect);
	if (mode == LOCK_PR)
		for (unsigned i = 0; i < r->o->hosts; i++)
			pr_sync(r->hosts[i].s, SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY, 0, 0,
				LOCK_PR_KEY | r->hosts[i].id);
}

static void phase_teardown(struct lock_run *r, struct lock_phase *ph)
{
	uint64_t *now = lab_xalloc(sizeof(uint64_t) * r->files);

	lab_ctl_read(r->o, &ph->c1);
	if (r->mode == LOCK_PR)
		for (unsigned i = 0; i < r->o->hosts; i++)
			pr_sync(r->hosts[i].s, SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY, 0, 0, 0);
	if (r->mode == LOCK_RESERVE)
		for (unsigned i = 0; i < r->o->hosts; i++)
			release_sync(r->hosts[i].s);
	phase_read_area(r, now);
	for (unsigned f = 0; f < r->files; f++) {
		if (now[f] > r->expect[f])
			lab_die("the metadata counter of file %u grew by more than the updates done "
				"(%" PRIu64 " > %" PRIu64 ")", f, now[f], r->expect[f]);
		ph->lost_updates += r->expect[f] - now[f];
	}
	free(now);
}

static void phase_run(struct lock_run *r, struct lock_phase *ph)
{
	const struct lab_opts *o = r->o;
	double cpu0, tcpu0, tcpu1;

	memset(ph, 0, sizeof(*ph));
	ph->mode = r->mode;
	r->ph = ph;
	lab_ctl_read(o, &ph->c0);
	tcpu0 = lab_ctl_target_cpu(o);
	cpu0 = lab_cpu_seconds();
	r->t0 = lab_now_ns();
	sample(r);
	if (!o->updates)
		lab_timer_arm(&r->stop_timer, (uint64_t)(o->seconds * 1e9));
	for (unsigned i = 0; i < o->hosts; i++) {
		r->hosts[i].k = 0;
		r->hosts[i].burst_left = o->burst;
		host_next(&r->hosts[i]);
	}
	for (unsigned i = 0; i < o->vm_qd; i++)
		vm_issue(&r->slots[i]);
	lab_run_until(phase_drained, r, 0, "the phase");
	ph->seconds = (double)(r->t_stop - r->t0) / 1e9;
	ph->client_cpu = lab_cpu_seconds() - cpu0;
	tcpu1 = lab_ctl_target_cpu(o);
	ph->target_cpu = tcpu0 >= 0 && tcpu1 >= 0 ? tcpu1 - tcpu0 : -1;
	{
		/* whole seconds, and a last partial one if it is long enough to
		 * give a rate; what completed after the stop is not shown */
		unsigned n = (unsigned)ph->seconds;

		if (ph->seconds - n > 0.25 || !n)
			n++;
		series_grow(ph, n);
		ph->nsec = n;
	}
}

/* ---- set-up ---------------------------------------------------------------------------- */

static void run_layout(struct lock_run *r, const struct lab_opts *o)
{
	struct lab_sess *s = r->vm;
	uint64_t area = LOCK_AREA_BYTES / s->bs, lba, blocks, vm_bytes;

	r->files = o->files ? o->files : o->hosts;
	if (2ull * r->files > area)
		lab_die("--files %u does not fit the 1 MiB lock area (at most %" PRIu64 " files with "
			"%u-byte blocks)", r->files, area / 2, s->bs);
	if (o->vm_bs % s->bs || !o->vm_bs)
		lab_die("--vm-bs %u is not a multiple of the LUN's %u-byte blocks", o->vm_bs, s->bs);
	r->vm_nblk = o->vm_bs / s->bs;
	vm_bytes = o->vm_size ? o->vm_size : 16u << 20;
	if (vm_bytes % o->vm_bs)
		lab_die("--vm-size must be a multiple of --vm-bs");
	/* in a --region without --vm-size, the VM gets what follows the lock
	 * area, up to 64 MiB */
	lab_region(o, s, area + (o->have_region && !o->vm_size ? r->vm_nblk : vm_bytes / s->bs), &lba,
		   &blocks);
	if (o->have_region && !o->vm_size) {
		vm_bytes = (blocks - area) * s->bs;
		if (vm_bytes > (64u << 20))
			vm_bytes = 64u << 20;
		vm_bytes -= vm_bytes % o->vm_bs;
	}
	r->lock_lba = lba;
	r->meta_lba = lba + r->files;
	r->vm_lba = lba + area;
	r->vm_blocks = vm_bytes / s->bs;
	if (r->vm_blocks < r->vm_nblk)
		lab_die("the VM region (%" PRIu64 " blocks) is smaller than one VM I/O", r->vm_blocks);
	if (s->max_caw_blocks == 0 && o->n_modes) {
		for (unsigned i = 0; i < o->n_modes; i++)
			if (o->modes[i] == LOCK_ATS)
				lab_die("the LUN reports no COMPARE AND WRITE (VPD B0 MAXIMUM COMPARE AND "
					"WRITE LENGTH is 0): leave ats out of --modes");
	}
}

static void run_open(struct lock_run *r, const struct lab_opts *o)
{
	char name[32];

	r->o = o;
	r->vm = lab_sess_open(o, "vm");
	run_layout(r, o);
	r->hosts = lab_xalloc(sizeof(*r->hosts) * o->hosts);
	for (unsigned i = 0; i < o->hosts; i++) {
		struct lock_host *h = &r->hosts[i];

		snprintf(name, sizeof(name), "host%u", i + 1);
		h->run = r;
		h->id = i + 1;
		h->s = lab_sess_open(o, name);
		if (h->s->bs != r->vm->bs)
			lab_die("%s sees %u-byte blocks, vm %u", name, h->s->bs, r->vm->bs);
		h->io.s = h->s;
		h->io.done = host_done;
		h->io.priv = h;
		lab_timer_init(&h->timer, host_timer_fired, h);
		h->caw = lab_xalloc_aligned(2 * (size_t)h->s->bs);
		h->blk = lab_xalloc_aligned(h->s->bs);
		h->gen = lab_xalloc(sizeof(uint64_t) * r->files);
	}
	r->slots = lab_xalloc(sizeof(*r->slots) * o->vm_qd);
	for (unsigned i = 0; i < o->vm_qd; i++) {
		struct vm_slot *v = &r->slots[i];

		v->run = r;
		v->io.s = r->vm;
		v->io.done = vm_done;
		v->io.priv = v;
		v->idle = true;
		lab_timer_init(&v->timer, vm_timer_fired, v);
		v->buf = lab_xalloc_aligned(o->vm_bs);
		lab_pattern_fill(v->buf, r->vm_nblk, r->vm->bs, i, 1, 0x766d);
	}
	r->expect = lab_xalloc(sizeof(uint64_t) * r->files);
	lab_timer_init(&r->stop_timer, stop_timer_fired, r);
}

/* Free locks and zeroed counters in the lock area. */
static void run_init_area(struct lock_run *r)
{
	struct lab_sess *s = r->hosts[0].s;
	uint8_t *buf = lab_xalloc_aligned((size_t)r->files * s->bs);

	for (unsigned f = 0; f < r->files; f++)
		lock_image(buf + (size_t)f * s->bs, s->bs, f, 0, 0);
	lab_sync_write(s, r->lock_lba, r->files, buf);
	for (unsigned f = 0; f < r->files; f++)
		meta_image(buf + (size_t)f * s->bs, s->bs, f, 0, 0);
	lab_sync_write(s, r->meta_lba, r->files, buf);
	free(buf);
}

static void run_close(struct lock_run *r)
{
	for (unsigned i = 0; i < r->o->hosts; i++) {
		lab_sess_close(r->hosts[i].s);
		free(r->hosts[i].caw);
		free(r->hosts[i].blk);
		free(r->hosts[i].gen);
	}
	for (unsigned i = 0; i < r->o->vm_qd; i++)
		free(r->slots[i].buf);
	lab_sess_close(r->vm);
	free(r->hosts);
	free(r->slots);
	free(r->expect);
}

int lab_locking(const struct lab_opts *o)
{
	unsigned n = o->n_modes * o->rounds;
	struct lock_phase *ph = lab_xalloc(sizeof(*ph) * n);
	struct lock_run r;
	char workload[256], per[64];

	memset(&r, 0, sizeof(r));
	run_open(&r, o);
	run_init_area(&r);
	if (o->updates)
		snprintf(per, sizeof(per), "%" PRIu64 " updates per mode", o->updates);
	else
		snprintf(per, sizeof(per), "%g s per mode", o->seconds);
	if (o->rounds > 1)
		snprintf(per + strlen(per), sizeof(per) - strlen(per), ", %u rounds", o->rounds);
	snprintf(workload, sizeof(workload),
		 "%u hosts (%s, %u files), VM: %u KiB sequential %s QD%u, %s", o->hosts,
		 o->snapshots ? "snapshots" : "touch", r.files, o->vm_bs / 1024,
		 o->vm_write ? "writes" : "reads", o->vm_qd, per);
	lab_note("locking: %s; lock area at LBA %" PRIu64 ", VM region LBA %" PRIu64 " + %" PRIu64,
		 workload, r.lock_lba, r.vm_lba, r.vm_blocks);
	for (unsigned i = 0; i < n; i++) {
		/* rounds alternate the order, so no mode always follows another */
		unsigned round = i / o->n_modes, k = i % o->n_modes;
		enum lock_mode mode = o->modes[round % 2 ? o->n_modes - 1 - k : k];

		phase_setup(&r, mode);
		phase_run(&r, &ph[i]);
		phase_teardown(&r, &ph[i]);
		ph[i].round = round + 1;
		lab_note("%-8s done: %" PRIu64 " VM I/Os, %" PRIu64 " updates, %" PRIu64
			 " conflicts, %" PRIu64 " miscompares in %.1f s", lab_mode_names[mode],
			 ph[i].vm_ios, ph[i].updates, lock_phase_conflicts(&ph[i]), ph[i].miscompares,
			 ph[i].seconds);
	}
	run_close(&r);
	lock_report(o, ph, n, workload);
	for (unsigned i = 0; i < n; i++)
		free(ph[i].series);
	free(ph);
	return 0;
}
