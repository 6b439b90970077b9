/*
 * LUNs, targets, I_T nexuses and unit attentions.
 *
 * DESIGN (threads and locks):
 *  - struct scsi_lun: identity fields are immutable after scsi_lun_create();
 *    mode pages and medium/prevent state change under lun->lock, and the
 *    bits the data path reads are mirrored into atomics (wce, d_sense, swp,
 *    medium_present, stopped, sanitizing, nblocks).
 *  - struct scsi_target: luns[] pointers are read with acquire loads
 *    (scsi_target_lun()) and published with release stores
 *    (scsi_target_set_lun()); nexus_list is
 *    walked and changed under target->lock only.
 *  - Unit attentions: nexus->ua[lun] is an atomic bitmask. Establishing
 *    sets bits (atomic or) while holding target->lock so the nexus cannot
 *    go away; reporting clears one bit with atomic and (scsi.c), lock-free.
 *  - Lock order: target->lock, then lun->lock.
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "scsi/scsi_int.h"
#include "scsi/pr.h"
#include "scsi/space.h"
#include "scsi/vaai.h"
#include "scsi/stats.h"
#include "scsi/histo.h"
#include "scsi/fault.h"
#include "backstore/io_engine.h"

void scsi_mode_defaults(struct scsi_mode_state *m)
{
	memset(m, 0, sizeof(*m));
	m->wce = true;
	m->rcd = false;
	m->d_sense = false;
	m->swp = false;
	m->qerr = 0;
	m->tas = 0;
	m->mrie = 0;
	m->dexcpt = true;
	m->perf = false;
}

/* Copy the data-path bits of lun->mode into the atomics (lun->lock held). */
void scsi_mode_publish(struct scsi_lun *lun)
{
	atomic_store(&lun->wce, lun->mode.wce);
	atomic_store(&lun->d_sense, lun->mode.d_sense);
	atomic_store(&lun->swp, lun->mode.swp);
}

#define LUN_NAA_COMPANY_ID 0x02a5e7ull

/* log2(backstore physical block / logical block); 0 when not larger. */
static uint8_t lun_lbppb_exp(const struct scsi_lun *lun)
{
	uint32_t phys = backstore_phys_block_size(lun->bs);
	uint8_t e = 0;

	if (phys & (phys - 1) || phys > (1u << 20))
		return 0;
	while ((lun->block_size << e) < phys && e < 15)
		e++;
	return e;
}

/* FNV-1a, 64 bits: stable across restarts and platforms. */
static uint64_t lun_hash(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static void lun_copy_ascii(char *dst, size_t cap, const char *src)
{
	size_t i, j = 0;

	for (i = 0; src[i] && j + 1 < cap; i++) {
		unsigned char c = (unsigned char)src[i];

		if (c >= 0x20 && c <= 0x7e)
			dst[j++] = (char)c;
	}
	dst[j] = '\0';
}

int scsi_lun_create(struct scsi_lun **out, struct scsi_target *t,
		    const struct scsi_lun_params *p, struct backstore *bs)
{
	struct scsi_lun *lun;
	uint64_t h;
	uint16_t id_be;

	*out = NULL;
	if (p->id >= SCSI_MAX_LUNS)
		return -EINVAL;
	if (p->block_size < 512 || p->block_size > 65536 ||
	    (p->block_size & (p->block_size - 1)))
		return -EINVAL;
	lun = calloc(1, sizeof(*lun));
	if (!lun)
		return -ENOMEM;
	lun->id = p->id;
	lun->target = t;
	lun->bs = bs;
	lun->block_size = p->block_size;
	lun->block_shift = (uint8_t)__builtin_ctz(p->block_size);
	atomic_init(&lun->nblocks, p->nblocks);
	lun->read_only = p->read_only || (bs && bs->read_only);
	lun->removable = p->removable;
	lun->thin = p->thin;
	lun->sanitize_ok = p->sanitize;
	lun->zero_detect = space_zero_detect_effective(lun, p->zero_detect);
	lun->hard_limit = lun->thin ? p->hard_limit : 0;
	lun->soft_threshold = lun->thin ? p->soft_threshold : 0;
	lun->pool_threshold_pct = lun->thin && p->pool_threshold_pct <= 100 ? p->pool_threshold_pct : 0;
	lun->space_sample_ns = p->space_sample_ns;
	lun->space_watch = lun->hard_limit || lun->soft_threshold || lun->pool_threshold_pct;
	lun->max_xfer_blocks = SCSI_MAX_XFER_BYTES >> lun->block_shift;

	if (p->serial && p->serial[0]) {
		lun_copy_ascii(lun->serial, sizeof(lun->serial), p->serial);
	} else if (bs && bs->identity) {
		/* shared storage (rbd): every gateway exporting it derives the
		 * same serial from the data's own identity, not the host's */
		h = lun_hash(0xcbf29ce484222325ull, bs->identity, strlen(bs->identity));
		snprintf(lun->serial, sizeof(lun->serial), "%016llx", (unsigned long long)h);
	} else {
		/* stable default: hash of the target name and LUN id */
		id_be = (uint16_t)(p->id << 8 | p->id >> 8);
		h = lun_hash(0xcbf29ce484222325ull, t->name, strlen(t->name));
		h = lun_hash(h, &id_be, sizeof(id_be));
		snprintf(lun->serial, sizeof(lun->serial), "%016llx",
			 (unsigned long long)h);
	}
	lun_copy_ascii(lun->vendor, sizeof(lun->vendor), p->vendor ? p->vendor : "TARGETD");
	lun_copy_ascii(lun->product, sizeof(lun->product),
		       p->product ? p->product : "VIRTUAL-DISK");
	lun_copy_ascii(lun->revision, sizeof(lun->revision), SCSI_PRODUCT_VERSION);

	/*
	 * NAA IEEE Registered Extended (SPC-4 7.8.6.6.5): NAA 6h, 24-bit
	 * IEEE company ID, 36-bit vendor specific identifier, 64-bit
	 * extension. This project has no IEEE registration, so the company
	 * ID is a fixed value with the locally administered (U/L) bit set,
	 * which no IEEE assignment can collide with; the rest is a hash of
	 * target name + LUN id + serial, stable across restarts and distinct
	 * per LUN.
	 */
	id_be = (uint16_t)(p->id << 8 | p->id >> 8);
	h = lun_hash(0xcbf29ce484222325ull, t->name, strlen(t->name));
	h = lun_hash(h, &id_be, sizeof(id_be));
	h = lun_hash(h, lun->serial, strlen(lun->serial));
	lun->naa = 0x6000000000000000ull | (LUN_NAA_COMPANY_ID << 36) | (h >> 28);
	lun->naa_ext = lun_hash(h ^ 0x5bd1e995u, lun->serial, strlen(lun->serial));

	pthread_mutex_init(&lun->lock, NULL);
	rangelock_init(&lun->rangelock);
	scsi_mode_defaults(&lun->mode);
	scsi_mode_publish(lun);
	atomic_init(&lun->medium_present, true);
	atomic_init(&lun->stopped, false);
	atomic_init(&lun->prevent, 0);
	atomic_init(&lun->sanitizing, false);
	atomic_init(&lun->tpc, false);
	if (scsi_stats_lun_init(lun))
		log_warn("LUN %u: no memory for statistics", lun->id);
	if (scsi_histo_lun_init(lun))
		log_warn("LUN %u: no memory for workload histograms", lun->id);
	if (pr_lun_init(lun)) {
		scsi_lun_destroy(lun);
		return -ENOMEM;
	}
	if (t->priv_alua)
		lun->tpgs = 0x3;      /* implicit and explicit ALUA */
	lun->lbppb_exp = lun_lbppb_exp(lun);
	scsi_atomic_init(lun);
	if (xcopy_lun_init(lun)) {
		scsi_lun_destroy(lun);
		return -ENOMEM;
	}
	/* SPC-4 6.6.2: 3PC, EXTENDED COPY is offered on every LUN */
	atomic_store(&lun->tpc, true);
	*out = lun;
	return 0;
}

void scsi_lun_destroy(struct scsi_lun *lun)
{
	if (!lun)
		return;
	scsi_fault_lun_free(lun);
	scsi_stats_lun_free(lun);
	xcopy_lun_fini(lun);
	scsi_histo_lun_free(lun);
	pr_lun_free(lun);
	rangelock_destroy(&lun->rangelock);
	pthread_mutex_destroy(&lun->lock);
	free(lun);
}

void scsi_target_init(struct scsi_target *t, const char *name, uint16_t id)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->id = id;
	pthread_mutex_init(&t->lock, NULL);
	list_init(&t->nexus_list);
}

void scsi_target_destroy(struct scsi_target *t)
{
	alua_target_free(t);
	pthread_mutex_destroy(&t->lock);
}

void scsi_target_set_lun(struct scsi_target *t, uint16_t id, struct scsi_lun *lun)
{
	if (id >= SCSI_MAX_LUNS)
		return;
	atomic_store_explicit(&t->luns[id], lun, memory_order_release);
	/* SPC-4 6.33: REPORTED LUNS DATA HAS CHANGED on every LUN of every nexus */
	scsi_ua_establish_all_luns(t, UA_LUNS_CHANGED, NULL);
}

/* SAM-5 6.3.x: a new I_T nexus starts with POWER ON on every LUN. */
void scsi_nexus_attach(struct scsi_target *t, struct scsi_nexus *n)
{
	unsigned i;

	n->target = t;
	for (i = 0; i < SCSI_MAX_LUNS; i++)
		atomic_store(&n->ua[i], 1u << UA_POWER_ON);
	for (i = 0; i < SCSI_MAX_LUNS / 32; i++)
		atomic_store(&n->prevent[i], 0);
	pthread_mutex_lock(&t->lock);
	list_add_tail(&n->target_link, &t->nexus_list);
	pthread_mutex_unlock(&t->lock);
}

/* What an I_T nexus loss ends: its SPC-2 reservations (SPC-2 7.21) and
 * its medium-removal preventions (SBC-4 5.13). Idempotent: a logout
 * calls it before its response is sent, so that a new session of the
 * same initiator never finds them (the nexus is detached later, when
 * the session's last task is gone). */
void scsi_nexus_release(struct scsi_nexus *n)
{
	struct scsi_target *t = n->target;
	unsigned i;

	if (!t)
		return;
	pr_nexus_loss(t, n);
	for (i = 0; i < SCSI_MAX_LUNS; i++) {
		uint32_t bit = 1u << (i % 32);

		if (atomic_fetch_and(&n->prevent[i / 32], ~bit) & bit) {
			struct scsi_lun *lun = scsi_target_lun(t, i);

			if (lun)
				atomic_fetch_sub(&lun->prevent, 1);
		}
	}
}

void scsi_nexus_detach(struct scsi_nexus *n)
{
	struct scsi_target *t = n->target;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	list_del(&n->target_link);
	pthread_mutex_unlock(&t->lock);
	scsi_nexus_release(n);
}

void scsi_ua_establish(struct scsi_target *t, uint16_t lun, enum scsi_ua ua,
		       const struct scsi_nexus *except)
{
	struct list_head *pos;

	if (lun >= SCSI_MAX_LUNS)
		return;
	pthread_mutex_lock(&t->lock);
	list_for_each(pos, &t->nexus_list) {
		struct scsi_nexus *n = list_entry(pos, struct scsi_nexus, target_link);

		if (n != except)
			atomic_fetch_or(&n->ua[lun], 1u << ua);
	}
	pthread_mutex_unlock(&t->lock);
}

void scsi_ua_establish_all_luns(struct scsi_target *t, enum scsi_ua ua,
				const struct scsi_nexus *except)
{
	struct list_head *pos;
	unsigned i;

	pthread_mutex_lock(&t->lock);
	list_for_each(pos, &t->nexus_list) {
		struct scsi_nexus *n = list_entry(pos, struct scsi_nexus, target_link);

		if (n == except)
			continue;
		for (i = 0; i < SCSI_MAX_LUNS; i++)
			atomic_fetch_or(&n->ua[i], 1u << ua);
	}
	pthread_mutex_unlock(&t->lock);
}

void scsi_ua_clear(struct scsi_nexus *n, uint16_t lun)
{
	if (lun < SCSI_MAX_LUNS)
		atomic_store(&n->ua[lun], 0);
}

/* Release every medium-removal prevention on a LUN (resets). */
static void lun_release_prevent(struct scsi_target *t, struct scsi_lun *lun)
{
	struct list_head *pos;
	uint32_t bit = 1u << (lun->id % 32);

	pthread_mutex_lock(&t->lock);
	list_for_each(pos, &t->nexus_list) {
		struct scsi_nexus *n = list_entry(pos, struct scsi_nexus, target_link);

		atomic_fetch_and(&n->prevent[lun->id / 32], ~bit);
	}
	atomic_store(&lun->prevent, 0);
	pthread_mutex_unlock(&t->lock);
}

/*
 * SAM-5 6.3 LOGICAL UNIT RESET: the logical unit clears its task set and
 * establishes a unit attention BUS DEVICE RESET FUNCTION OCCURRED (29/03)
 * for the initiator port of every I_T nexus, the requesting one included.
 * SBC-4 5.13: a LUN reset ends PREVENT ALLOW MEDIUM REMOVAL preventions.
 */
void scsi_lun_reset(struct scsi_lun *lun, const struct scsi_nexus *by)
{
	(void)by;
	lun_release_prevent(lun->target, lun);
	pr_lun_reset(lun);     /* SPC-2 5.5.1: releases the SPC-2 reservation */
	scsi_ua_establish(lun->target, lun->id, UA_LUN_RESET, NULL);
}

/*
 * iSCSI TARGET WARM RESET is SAM-2's TARGET RESET (RFC 7143 11.5.1): a
 * hard reset of every LUN; UA SCSI BUS RESET OCCURRED (29/02) for every
 * nexus. TARGET COLD RESET is a power cycle as well: UA POWER ON, RESET, OR
 * BUS DEVICE RESET OCCURRED (29/00), and mode parameters go back to their
 * defaults (we save none). Both release medium-removal preventions.
 */
void scsi_target_reset(struct scsi_target *t, const struct scsi_nexus *by, bool cold)
{
	unsigned i;

	for (i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lun *lun = scsi_target_lun(t, i);

		if (!lun)
			continue;
		lun_release_prevent(t, lun);
		if (cold)
			pr_lun_power_on(lun);
		else
			pr_lun_reset(lun);
		if (cold) {
			pthread_mutex_lock(&lun->lock);
			scsi_mode_defaults(&lun->mode);
			scsi_mode_publish(lun);
			pthread_mutex_unlock(&lun->lock);
		}
	}
	/* The nexus that asked for a warm reset learns of it from the TMF
	 * response; every other one gets the unit attention. A cold reset
	 * ends the requester's connections, so its next nexus is new. */
	scsi_ua_establish_all_luns(t, cold ? UA_POWER_ON : UA_BUS_RESET, cold ? NULL : by);
}

/* SBC-4 4.x / SPC-4 5.14: CAPACITY DATA HAS CHANGED for every nexus. */
void scsi_lun_set_capacity(struct scsi_lun *lun, uint64_t nblocks)
{
	atomic_store(&lun->nblocks, nblocks);
	scsi_ua_establish(lun->target, lun->id, UA_CAPACITY_CHANGED, NULL);
}

/* ---- whole-LUN operations from the control thread (lun clone, revert) --- */

static void scsi_lun_freeze_granted(struct bs_io *io)
{
	*(bool *)io->priv = true;
}

/*
 * The range lock over every LBA, exclusive, taken from a thread that owns
 * no network engine: a private engine receives the grant. Writers in
 * flight hold shared ranges until their last backstore request completed,
 * so the grant comes once every write acknowledged so far is in the
 * backstore; new writers queue behind it (an exclusive waiter holds every
 * later shared request back, scsi/rangelock.c) until scsi_lun_thaw().
 */
int scsi_lun_freeze(struct scsi_lun *lun, struct scsi_lun_freeze *f)
{
	bool granted = false;

	memset(f, 0, sizeof(*f));
	f->eng = io_engine_create(8, false);
	if (!f->eng)
		return -ENOMEM;
	f->notify.done = scsi_lun_freeze_granted;
	f->notify.priv = &granted;
	if (!rangelock_acquire(&lun->rangelock, &f->rl, 0, UINT64_MAX, RL_EXCL, f->eng, &f->notify))
		while (!granted)
			io_engine_wait(f->eng);
	return 0;
}

void scsi_lun_thaw(struct scsi_lun_freeze *f)
{
	if (f->rl.state == RL_HELD)
		rangelock_release(&f->rl);
	if (f->eng)
		io_engine_destroy(f->eng);
	f->eng = NULL;
}

/*
 * SPC-4 does not name a revert; what the initiator sees is this: the
 * logical unit went NOT READY (taken offline, 04/03) and comes back READY
 * with other blocks on it, which is what NOT READY TO READY CHANGE, MEDIUM
 * MAY HAVE CHANGED (28/00, SPC-4 table "ASC and ASCQ assignments") reports
 * (an initiator drops what it cached of the LUN and reads it again). The
 * inventory of LUNs did not change, so REPORTED LUNS DATA HAS CHANGED
 * (3F/0E) would send the initiator on a rescan for nothing; a size that
 * did change is CAPACITY DATA HAS CHANGED (2A/09, SBC-4 4.x) as for a
 * resize. Reservations and registrations are I_T nexus state, which
 * SPC-4 5.13 ends only on a reset, power loss or an explicit command, not
 * on a change of medium: they stay.
 */
void scsi_lun_content_replaced(struct scsi_lun *lun, uint64_t nblocks)
{
	if (nblocks != scsi_lun_nblocks(lun))
		scsi_lun_set_capacity(lun, nblocks);
	scsi_ua_establish(lun->target, lun->id, UA_MEDIUM_CHANGED, NULL);
}
