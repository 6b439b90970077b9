/*
 * Reservations: SPC-2 RESERVE/RELEASE (SPC-2 7.21, 7.24 and the
 * compatibility rules of SPC-4 5.13.3) and SPC-4 persistent reservations
 * (SPC-4 5.13, PERSISTENT RESERVE IN 6.15, PERSISTENT RESERVE OUT 6.16).
 *
 * DESIGN (threads and locks):
 *  - All reservation state of a LUN is one struct pr_lun (lun->priv_pr),
 *    shared by every session and every network thread. p->lock (a mutex)
 *    guards all of it. PERSISTENT RESERVE OUT, RESERVE, RELEASE, resets and
 *    nexus loss change it under the lock; PERSISTENT RESERVE IN reads it
 *    under the lock.
 *  - The data path: pr_check() first reads p->active, an atomic mirror of
 *    "some reservation is held" (SPC-2 or persistent). With no reservation
 *    (the common case, registrations alone restrict nothing) it returns
 *    without a lock. Otherwise it takes p->lock to decide. p->active is
 *    written only under p->lock, after the state it summarises.
 *  - Unit attentions go to nexuses found on the target's nexus list, which
 *    is walked under target->lock. Lock order: p->lock, then target->lock
 *    (lun.c never takes a pr lock while holding target->lock).
 *  - PREEMPT AND ABORT hands the preempted nexuses to the transport's abort
 *    handler while both locks are held (the nexuses cannot go away); the
 *    handler only posts messages to the threads owning them.
 *  - APTPL: when the last APTPL bit received was one, every change is
 *    written to the state file (scsi/pr_file.c) before the command
 *    completes, still under p->lock; if that fails the change is rolled
 *    back and the command fails, so what the initiator was told is always
 *    what a restart finds.
 *
 * Registrations are named by initiator port and relative target port
 * identifier, not by nexus pointer: a registration outlives its I_T nexus
 * (SPC-4 5.13.5.1), and a restored APTPL registration is matched by the
 * nexus that logs in later with the same names. An ALL_TG_PT registration
 * is kept as one entry that matches every target port.
 */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include "common/iscsi_name.h"
#include "scsi/scsi_int.h"
#include "scsi/vaai.h"
#include "scsi/pr_int.h"

static pr_abort_fn pr_abort_handler;

void pr_set_abort_handler(pr_abort_fn fn)
{
	pr_abort_handler = fn;
}

int pr_lun_init(struct scsi_lun *lun)
{
	struct pr_lun *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	atomic_init(&p->active, 0);
	p->holder = -1;
	lun->priv_pr = p;
	return 0;
}

void pr_lun_free(struct scsi_lun *lun)
{
	struct pr_lun *p = lun->priv_pr;

	if (!p)
		return;
	pr_shared_detach(p);
	pthread_mutex_destroy(&p->lock);
	free(p->regs);
	free(p->path);
	free(p);
	lun->priv_pr = NULL;
}

/* Under p->lock: republish the fast-path summary. */
void pr_publish(struct pr_lun *p)
{
	unsigned a = (p->spc2 ? PR_ACT_SPC2 : 0) | (p->resv ? PR_ACT_PR : 0);

	atomic_store_explicit(&p->active, a, memory_order_release);
}

void pr_get_status(struct scsi_lun *lun, struct pr_status *st)
{
	struct pr_lun *p = lun->priv_pr;

	memset(st, 0, sizeof(*st));
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	st->generation = p->generation;
	st->n_regs = p->n;
	st->pr_held = p->resv;
	st->type = p->resv ? p->type : 0;
	st->spc2_held = p->spc2;
	st->spc2_nexus = p->spc2_nexus;
	st->aptpl = p->aptpl;
	pthread_mutex_unlock(&p->lock);
}

/* --- registrations ---------------------------------------------------- */

static bool pr_reg_match(const struct pr_reg *r, const struct scsi_nexus *n)
{
	if (!r->all_tg_pt && r->rtpi != n->rel_tport_id)
		return false;
	if (r->name_only)
		return !strcasecmp(r->port, n->initiator_name);
	return !strcasecmp(r->port, n->initiator_port);
}

/* The registration of a nexus, or -1. */
static int pr_reg_find(const struct pr_lun *p, const struct scsi_nexus *n)
{
	for (unsigned i = 0; i < p->n; i++)
		if (pr_reg_match(&p->regs[i], n))
			return (int)i;
	return -1;
}

/* Do two registrations name a common I_T nexus? */
static bool pr_reg_overlap(const struct pr_reg *a, const struct pr_reg *b)
{
	size_t la, lb;
	const struct pr_reg *nm, *pt;

	if (!a->all_tg_pt && !b->all_tg_pt && a->rtpi != b->rtpi)
		return false;
	if (a->name_only == b->name_only)
		return !strcasecmp(a->port, b->port);
	nm = a->name_only ? a : b;
	pt = a->name_only ? b : a;
	la = strlen(nm->port);
	lb = strlen(pt->port);
	return lb > la && !strncasecmp(nm->port, pt->port, la) && pt->port[la] == ',';
}

static bool pr_is_holder(const struct pr_lun *p, int r)
{
	if (!p->resv || r < 0)
		return false;
	return pr_type_all_reg(p->type) || p->holder == r;
}

static int pr_reg_add(struct pr_lun *p, const struct pr_reg *r)
{
	if (p->n >= PR_MAX_REGS)
		return -1;
	if (p->n == p->cap) {
		unsigned cap = p->cap ? p->cap * 2 : 8;
		struct pr_reg *nr = realloc(p->regs, cap * sizeof(*nr));

		if (!nr)
			return -1;
		p->regs = nr;
		p->cap = cap;
	}
	p->regs[p->n++] = *r;
	return 0;
}

/* Remove registration i, keeping the holder index right. Removing the
 * holder of a non-all-registrants reservation releases it. */
static void pr_reg_del(struct pr_lun *p, unsigned i)
{
	if (p->resv && !pr_type_all_reg(p->type)) {
		if (p->holder == (int)i) {
			p->resv = false;
			p->holder = -1;
		} else if (p->holder > (int)i) {
			p->holder--;
		}
	}
	memmove(&p->regs[i], &p->regs[i + 1], (p->n - i - 1) * sizeof(p->regs[0]));
	p->n--;
	/* SPC-4 5.13.10: an all-registrants reservation ends with the last
	 * registration. */
	if (p->resv && pr_type_all_reg(p->type) && p->n == 0)
		p->resv = false;
}

/* --- unit attentions and aborts ---------------------------------------- */

/* Establish 'ua' for every attached nexus that one of regs[0..n) names,
 * except 'except'. Under p->lock. */
void pr_ua_regs(struct scsi_lun *lun, const struct pr_reg *regs, unsigned n, enum scsi_ua ua,
		const struct scsi_nexus *except)
{
	struct scsi_target *t = lun->target;
	struct list_head *pos;

	if (!n)
		return;
	pthread_mutex_lock(&t->lock);
	list_for_each(pos, &t->nexus_list) {
		struct scsi_nexus *nx = list_entry(pos, struct scsi_nexus, target_link);

		if (nx == except)
			continue;
		for (unsigned i = 0; i < n; i++) {
			if (pr_reg_match(&regs[i], nx)) {
				atomic_fetch_or(&nx->ua[lun->id], 1u << ua);
				break;
			}
		}
	}
	pthread_mutex_unlock(&t->lock);
}

/* PREEMPT AND ABORT (SPC-4 5.13.11.2.4): hand the nexuses that regs names
 * to the transport. Returns true when the command completes later. */
static bool pr_abort_regs(struct scsi_cmd *cmd, const struct pr_reg *regs, unsigned n)
{
	struct scsi_target *t = cmd->lun->target;
	struct scsi_nexus **v = NULL;
	struct list_head *pos;
	unsigned nv = 0, cap = 0;
	bool pending = false;

	if (!pr_abort_handler || !n)
		return false;
	pthread_mutex_lock(&t->lock);
	list_for_each(pos, &t->nexus_list)
		cap++;
	v = cap ? calloc(cap, sizeof(*v)) : NULL;
	if (v) {
		list_for_each(pos, &t->nexus_list) {
			struct scsi_nexus *nx = list_entry(pos, struct scsi_nexus, target_link);

			if (nx == cmd->nexus)
				continue;
			for (unsigned i = 0; i < n; i++) {
				if (pr_reg_match(&regs[i], nx)) {
					v[nv++] = nx;
					break;
				}
			}
		}
		if (nv)
			pending = pr_abort_handler(cmd, v, nv, cmd->lun->id);
	} else if (cap) {
		log_err("PREEMPT AND ABORT: out of memory, tasks of preempted nexuses not aborted");
	}
	pthread_mutex_unlock(&t->lock);
	free(v);
	return pending;
}

/* --- access rules ------------------------------------------------------ */

/* How a command stands in SPC-4 table 63 / SBC-4 table 13 ("commands that
 * are allowed in the presence of various reservations"). */
enum pr_class {
	PRC_ALLOWED,   /* Allowed in every column */
	PRC_READ,      /* Allowed under Write Exclusive; Conflict under Exclusive Access */
	PRC_WRITE,     /* Conflict unless registered (registrants-only and
	                * all-registrants types) */
};

static enum pr_class pr_classify(const uint8_t *cdb)
{
	uint8_t sa = cdb[1] & 0x1f;

	switch (cdb[0]) {
	case 0x00: /* TEST UNIT READY */
	case 0x03: /* REQUEST SENSE */
	case 0x12: /* INQUIRY */
	case 0x25: /* READ CAPACITY(10) */
	case 0x4d: /* LOG SENSE */
	case 0x5e: /* PERSISTENT RESERVE IN */
	case 0x5f: /* PERSISTENT RESERVE OUT: its own rules (6.16) */
	case 0xa0: /* REPORT LUNS */
		return PRC_ALLOWED;
	case 0x1b: /* START STOP UNIT: START=1, POWER CONDITION=0 only */
		return (cdb[4] & 0x01) && !(cdb[4] & 0xf0) ? PRC_ALLOWED : PRC_WRITE;
	case 0x1e: /* PREVENT ALLOW MEDIUM REMOVAL: PREVENT=0 only */
		return (cdb[4] & 0x03) ? PRC_WRITE : PRC_ALLOWED;
	case 0x9e: /* SERVICE ACTION IN(16) */
		if (sa == 0x10)                  /* READ CAPACITY(16) */
			return PRC_ALLOWED;
		if (sa == 0x12 || sa == 0x13)    /* GET LBA STATUS, REPORT REFERRALS */
			return PRC_READ;
		return PRC_WRITE;
	case 0xa3: /* MAINTENANCE IN: the REPORT ... commands */
		switch (sa) {
		case 0x05: case 0x0a: case 0x0b: case 0x0c: case 0x0d: case 0x0e: case 0x0f:
			return PRC_ALLOWED;
		}
		return PRC_WRITE;
	case 0xab: /* READ MEDIA SERIAL NUMBER */
		return sa == 0x01 ? PRC_ALLOWED : PRC_WRITE;
	case 0x08: case 0x28: case 0xa8: case 0x88:  /* READ */
	case 0x2f: case 0xaf: case 0x8f:             /* VERIFY */
	case 0x34: case 0x90:                        /* PRE-FETCH */
	case 0x37: case 0xb7:                        /* READ DEFECT DATA */
		return PRC_READ;
	case 0x7f: { /* variable length: READ(32), VERIFY(32) */
		uint16_t vsa = get_be16(cdb + 8);
		return vsa == 0x0009 || vsa == 0x000a ? PRC_READ : PRC_WRITE;
	}
	default:
		return PRC_WRITE;
	}
}

/* SPC-4 5.13.1 / table 63: may nexus registration r send a command of
 * class c while the persistent reservation of p exists? */
static bool pr_allowed(const struct pr_lun *p, int r, enum pr_class c)
{
	if (c == PRC_ALLOWED || pr_is_holder(p, r))
		return true;
	switch (p->type) {
	case PR_TYPE_WE:
		return c == PRC_READ;
	case PR_TYPE_EA:
		return false;
	case PR_TYPE_WE_RO:
	case PR_TYPE_WE_AR:
		return r >= 0 || c == PRC_READ;
	case PR_TYPE_EA_RO:
	case PR_TYPE_EA_AR:
		return r >= 0;
	default:
		return false;
	}
}

/* SPC-2 5.5.1 (and SPC-4 5.13.3): what another initiator may still send
 * while an SPC-2 reservation is held. PERSISTENT RESERVE IN/OUT conflict. */
static bool pr_spc2_allowed(const struct scsi_cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;

	switch (cdb[0]) {
	case 0x17: case 0x57:   /* RELEASE: completes, releases nothing */
	case 0x4d:              /* LOG SENSE */
		return true;
	case 0x1e:              /* PREVENT ALLOW MEDIUM REMOVAL with PREVENT=0 */
		return !(cdb[4] & 0x03);
	case 0xa3:              /* REPORT TARGET PORT GROUPS */
		if ((cdb[1] & 0x1f) == 0x0a)
			return true;
		break;
	}
	return cmd->op && (cmd->op->flags & OPF_CONFLICT_OK);
}

enum sense_reason pr_check(struct scsi_cmd *cmd)
{
	struct pr_lun *p = cmd->lun->priv_pr;
	enum sense_reason r = SR_OK;
	unsigned act;

	if (!p)
		return SR_OK;
	if (unlikely(pr_shared_stale(p))) {
		/* a shared LUN whose notes may have been missed */
		pthread_mutex_lock(&p->lock);
		pr_shared_sync(p);
		pthread_mutex_unlock(&p->lock);
	}
	act = atomic_load_explicit(&p->active, memory_order_acquire);
	if (likely(!act))
		return SR_OK;
	pthread_mutex_lock(&p->lock);
	if (p->spc2) {
		if (p->spc2_nexus != cmd->nexus->id && !pr_spc2_allowed(cmd))
			r = SR_RESERVATION_CONFLICT;
	} else if (p->resv) {
		if (!pr_allowed(p, pr_reg_find(p, cmd->nexus), pr_classify(cmd->cdb)))
			r = SR_RESERVATION_CONFLICT;
	}
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* --- events ------------------------------------------------------------ */

/* Under p->lock, on a shared LUN, after the SPC-2 reservation was released
 * by an event (nexus loss, reset): write that to the record. True when
 * another gateway changed the record first (the working copy is reloaded:
 * look again). */
static bool pr_spc2_event_commit(struct pr_lun *p, struct pr_note *note)
{
	int e;

	if (!p->shared)
		return false;
	e = pr_shared_commit(p, NULL, 0, UA_POWER_ON, false, note);
	if (e == -ECANCELED)
		return true;
	if (e)
		log_event(LOG_LVL_ERR, "pr_shared_release_failed", KV_S("error", strerror(-e)),
			  KV_S("effect", "the other gateways still see the SPC-2 reservation"),
			  KV_S("fix", "a LOGICAL UNIT RESET through any gateway releases it"));
	return false;
}

/* Release the SPC-2 reservation if nexus (or anyone: nexus == NULL) holds
 * it, on every gateway of a shared LUN. */
static void pr_spc2_drop(struct scsi_lun *lun, struct pr_lun *p, const struct scsi_nexus *nexus)
{
	struct pr_note note = { 0 };

	pthread_mutex_lock(&p->lock);
	if (!nexus && p->shared && pr_shared_ua_note(p, UA_LUN_RESET, &note) == 0) {
		/* a reset: the other gateways' nexuses get its unit attention
		 * too (SAM-5 6.3.3), and the release travels with the next note */
		pthread_mutex_unlock(&p->lock);
		pr_shared_announce(lun, &note);
		pthread_mutex_lock(&p->lock);
	}
	pr_shared_sync(p);
	for (unsigned t = 0; t < PR_SHARED_TRIES; t++) {
		if (!p->spc2 || (nexus && p->spc2_nexus != nexus->id))
			break;
		p->spc2 = false;
		if (!pr_spc2_event_commit(p, &note))
			break;
	}
	pr_publish(p);
	pthread_mutex_unlock(&p->lock);
	pr_shared_announce(lun, &note);
}

/* SPC-2 7.21.1 / SAM-5 6.3: I_T nexus loss releases its SPC-2 reservation. */
void pr_nexus_loss(struct scsi_target *t, const struct scsi_nexus *n)
{
	for (unsigned i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lun *lun = scsi_target_lun(t, i);
		struct pr_lun *p = lun ? lun->priv_pr : NULL;

		if (!p || !(atomic_load(&p->active) & PR_ACT_SPC2))
			continue;
		pr_spc2_drop(lun, p, n);
	}
}

/* SPC-2 5.5.1: a LOGICAL UNIT RESET or target reset releases the SPC-2
 * reservation. SPC-4 5.13.1: persistent reservations are not affected. */
void pr_lun_reset(struct scsi_lun *lun)
{
	struct pr_lun *p = lun->priv_pr;

	if (!p)
		return;
	pr_spc2_drop(lun, p, NULL);
}

/* SPC-4 5.13.4: without APTPL, registrations and the reservation do not
 * survive a power on; with it they stay as the state file has them. */
void pr_lun_power_on(struct scsi_lun *lun)
{
	struct pr_lun *p = lun->priv_pr;

	if (!p)
		return;
	if (p->shared) {
		/* a power on of one gateway is not one of the logical unit,
		 * whose state the other gateways keep serving */
		pr_spc2_drop(lun, p, NULL);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->spc2 = false;
	if (!p->aptpl) {
		p->n = 0;
		p->resv = false;
		p->holder = -1;
		p->generation = 0;
	}
	pr_publish(p);
	pthread_mutex_unlock(&p->lock);
}

/* --- RESERVE / RELEASE (SPC-2 7.21, 7.24; SPC-4 5.13.3) ---------------- */

/* Under p->lock, on a shared LUN, after RESERVE or RELEASE changed the
 * SPC-2 reservation: write it. 0; -ECANCELED: another gateway first, the
 * working copy is reloaded (decide again); other -errno: undo the change. */
static int pr_spc2_commit(struct pr_lun *p, struct pr_note *note)
{
	return p->shared ? pr_shared_commit(p, NULL, 0, UA_POWER_ON, false, note) : 0;
}

static enum sense_reason pr_exec_reserve_locked(struct scsi_cmd *cmd)
{
	struct pr_lun *p = cmd->lun->priv_pr;
	struct pr_note note = { 0 };
	enum sense_reason r;
	unsigned tries = 0;
	int e;

	pthread_mutex_lock(&p->lock);
	pr_shared_sync(p);
again:
	r = SR_OK;
	if (p->resv && pr_is_holder(p, pr_reg_find(p, cmd->nexus))) {
		/* SPC-4 5.13.3 (CRH=1): the persistent reservation holder gets
		 * GOOD and no SPC-2 reservation. */
	} else if (p->n || p->resv) {
		/* registrations exist: RESERVE conflicts */
		r = SR_RESERVATION_CONFLICT;
	} else if (p->spc2 && p->spc2_nexus != cmd->nexus->id) {
		r = SR_RESERVATION_CONFLICT;
	} else if (!p->spc2) {
		p->spc2 = true;
		p->spc2_nexus = cmd->nexus->id;
		e = pr_spc2_commit(p, &note);
		if (e == -ECANCELED && ++tries < PR_SHARED_TRIES)
			goto again;
		if (e) {
			if (e != -ECANCELED)
				p->spc2 = false;
			r = SR_INTERNAL_ERROR;
		}
		pr_publish(p);
	}
	pthread_mutex_unlock(&p->lock);
	pr_shared_announce(cmd->lun, &note);
	return r;
}

/* RESERVE takes effect after every write in flight, COMPARE AND WRITE
 * among them, has ended: it holds the whole LUN's exclusive LBA range lock
 * while it changes the reservation (scsi/rangelock.c), so an ATS is atomic
 * against it; a COMPARE AND WRITE that waited checks again (scsi/vaai.c). */
static enum sense_reason pr_exec_reserve(struct scsi_cmd *cmd)
{
	return scsi_rl_lock(cmd, cmd->lun, 0, UINT64_MAX, RL_EXCL, pr_exec_reserve_locked);
}

static enum sense_reason pr_exec_release(struct scsi_cmd *cmd)
{
	struct pr_lun *p = cmd->lun->priv_pr;
	struct pr_note note = { 0 };
	enum sense_reason r;
	unsigned tries = 0;
	int e;

	pthread_mutex_lock(&p->lock);
	pr_shared_sync(p);
again:
	r = SR_OK;
	if (p->resv && pr_is_holder(p, pr_reg_find(p, cmd->nexus))) {
		/* SPC-4 5.13.3: GOOD, the persistent reservation stays */
	} else if (p->n || p->resv) {
		r = SR_RESERVATION_CONFLICT;
	} else if (p->spc2 && p->spc2_nexus == cmd->nexus->id) {
		p->spc2 = false;
		e = pr_spc2_commit(p, &note);
		if (e == -ECANCELED && ++tries < PR_SHARED_TRIES)
			goto again;
		if (e) {
			if (e != -ECANCELED)
				p->spc2 = true;
			r = SR_INTERNAL_ERROR;
		}
		pr_publish(p);
	}
	/* SPC-2 7.24: a RELEASE from a nexus that holds nothing is GOOD */
	pthread_mutex_unlock(&p->lock);
	pr_shared_announce(cmd->lun, &note);
	return r;
}

/* SPC-2 7.21 RESERVE(6)/(10). The third-party and extent forms are
 * refused by the usage map (INVALID FIELD IN CDB): an iSCSI initiator has
 * no SCSI device ID to name a third party with. */
enum sense_reason pr_parse_reserve(struct scsi_cmd *cmd)
{
	if (!cmd->lun->priv_pr)
		return SR_INTERNAL_ERROR;
	cmd->execute = pr_exec_reserve;
	return SR_OK;
}

/* SPC-2 7.24 RELEASE(6)/(10) */
enum sense_reason pr_parse_release(struct scsi_cmd *cmd)
{
	if (!cmd->lun->priv_pr)
		return SR_INTERNAL_ERROR;
	cmd->execute = pr_exec_release;
	return SR_OK;
}

/* --- PERSISTENT RESERVE IN (SPC-4 6.15) -------------------------------- */

#define PRIN_MAX 65535u

/* SPC-4 7.6.4.6: iSCSI TransportID of a registration; returns its length
 * (a multiple of 4, at least 24). */
static uint32_t pr_transport_id(const struct pr_reg *r, uint8_t *d)
{
	size_t n = strlen(r->port) + 1;
	uint32_t len = (uint32_t)ALIGN_UP(n, 4);

	if (len < 20)
		len = 20;
	memset(d, 0, 4 + len);
	d[0] = (uint8_t)((r->name_only ? 0x00 : 0x40) | 0x05);
	put_be16(d + 2, (uint16_t)len);
	memcpy(d + 4, r->port, n - 1);
	return 4 + len;
}

static enum sense_reason pr_exec_in(struct scsi_cmd *cmd)
{
	struct pr_lun *p = cmd->lun->priv_pr;
	uint8_t sa = cmd->cdb[1] & 0x1f;
	uint8_t *d = calloc(1, 8 + (size_t)PR_MAX_REGS * (24 + 4 + PR_PORT_MAX));
	uint32_t off = 8;

	if (!d)
		return SR_INTERNAL_ERROR;
	pthread_mutex_lock(&p->lock);
	put_be32(d, p->generation);
	switch (sa) {
	case 0x00: /* 6.15.2 READ KEYS */
		for (unsigned i = 0; i < p->n; i++, off += 8)
			put_be64(d + off, p->regs[i].key);
		put_be32(d + 4, off - 8);
		break;
	case 0x01: /* 6.15.3 READ RESERVATION */
		if (p->resv) {
			uint64_t key = 0;

			if (!pr_type_all_reg(p->type) && p->holder >= 0)
				key = p->regs[p->holder].key;
			put_be64(d + 8, key);
			d[21] = (uint8_t)(p->scope << 4 | p->type);
			off += 16;
		}
		put_be32(d + 4, off - 8);
		break;
	case 0x02: /* 6.15.4 REPORT CAPABILITIES */
		put_be16(d, 8);
		/* CRH, SIP_C, ATP_C, PTPL_C */
		d[2] = 0x10 | 0x08 | 0x04 | (p->path ? 0x01 : 0x00);
		/* TMV, ALLOW COMMANDS 001b (TEST UNIT READY passes WE and EA),
		 * PTPL_A */
		d[3] = 0x80 | 0x10 | (p->aptpl ? 0x01 : 0x00);
		/* every type: WR_EX_AR, EX_AC_RO, WR_EX_RO, EX_AC, WR_EX; EX_AC_AR */
		d[4] = 0x80 | 0x40 | 0x20 | 0x08 | 0x02;
		d[5] = 0x01;
		off = 8;
		break;
	case 0x03: /* 6.15.5 READ FULL STATUS */
		for (unsigned i = 0; i < p->n; i++) {
			const struct pr_reg *r = &p->regs[i];
			uint8_t *e = d + off;
			uint32_t tl;

			put_be64(e, r->key);
			if (r->all_tg_pt)
				e[12] |= 0x02;
			if (pr_is_holder(p, (int)i)) {
				e[12] |= 0x01;
				e[13] = (uint8_t)(p->scope << 4 | p->type);
			}
			put_be16(e + 18, r->all_tg_pt ? 0 : r->rtpi);
			tl = pr_transport_id(r, e + 24);
			put_be32(e + 20, tl);
			off += 24 + tl;
		}
		put_be32(d + 4, off - 8);
		break;
	}
	pthread_mutex_unlock(&p->lock);
	/* the ADDITIONAL LENGTH stays whole when the allocation length cuts
	 * the list (6.15.2) */
	scsi_datain(cmd, d, off);
	free(d);
	return SR_OK;
}

enum sense_reason pr_parse_in(struct scsi_cmd *cmd)
{
	if (!cmd->lun->priv_pr)
		return SR_INTERNAL_ERROR;
	scsi_set_alloc(cmd, get_be16(cmd->cdb + 7), PRIN_MAX);
	cmd->execute = pr_exec_in;
	return SR_OK;
}

/* --- PERSISTENT RESERVE OUT (SPC-4 6.16) ------------------------------- */

/* Service actions (6.16.2, table 168). */
enum {
	PRO_REGISTER = 0x00,
	PRO_RESERVE = 0x01,
	PRO_RELEASE = 0x02,
	PRO_CLEAR = 0x03,
	PRO_PREEMPT = 0x04,
	PRO_PREEMPT_ABORT = 0x05,
	PRO_REGISTER_IGNORE = 0x06,
	PRO_REGISTER_MOVE = 0x07,
};

/* What a service action does besides changing state, applied once the
 * change is durable. */
struct pr_effects {
	struct pr_reg *removed;     /* registrations removed by another nexus */
	unsigned n_removed;
	enum scsi_ua removed_ua;    /* their unit attention */
	bool released_ua;           /* RESERVATIONS RELEASED to the other registrants */
	bool abort;                 /* PREEMPT AND ABORT */
};

/* Saved state for rolling back a change the state file could not take. */
struct pr_snap {
	struct pr_reg *regs;
	unsigned n;
	uint32_t generation;
	bool resv, aptpl;
	uint8_t type, scope;
	int holder;
};

static int pr_snap_take(const struct pr_lun *p, struct pr_snap *s)
{
	s->regs = NULL;
	if (p->n) {
		s->regs = malloc(p->n * sizeof(*s->regs));
		if (!s->regs)
			return -1;
		memcpy(s->regs, p->regs, p->n * sizeof(*s->regs));
	}
	s->n = p->n;
	s->generation = p->generation;
	s->resv = p->resv;
	s->aptpl = p->aptpl;
	s->type = p->type;
	s->scope = p->scope;
	s->holder = p->holder;
	return 0;
}

static void pr_snap_restore(struct pr_lun *p, struct pr_snap *s)
{
	if (s->n)
		memcpy(p->regs, s->regs, s->n * sizeof(*s->regs));
	p->n = s->n;
	p->generation = s->generation;
	p->resv = s->resv;
	p->aptpl = s->aptpl;
	p->type = s->type;
	p->scope = s->scope;
	p->holder = s->holder;
}

static int pr_effect_removed(struct pr_effects *fx, const struct pr_reg *r)
{
	struct pr_reg *nr = realloc(fx->removed, (fx->n_removed + 1) * sizeof(*nr));

	if (!nr)
		return -1;
	fx->removed = nr;
	fx->removed[fx->n_removed++] = *r;
	return 0;
}

/* The registration this nexus would get (no key yet). */
static void pr_reg_of_nexus(struct pr_reg *r, const struct scsi_nexus *n, bool all_tg_pt)
{
	memset(r, 0, sizeof(*r));
	r->rtpi = n->rel_tport_id;
	r->all_tg_pt = all_tg_pt;
	snprintf(r->port, sizeof(r->port), "%s", n->initiator_port);
}

/*
 * SPC-4 7.6.4.6: parse one iSCSI TransportID at d (len bytes available)
 * into r->port: the iSCSI name (format 00b) or "name,i,0x<ISID>" (01b).
 * The name must be a valid iSCSI name (common/iscsi_name.h) and is kept
 * normalised, the ISID as 12 lower-case hex digits, as the nexus names
 * itself (targetd/login.c). Returns its length, or 0 if it is not a valid
 * iSCSI TransportID (the caller answers INVALID FIELD IN PARAMETER LIST).
 */
static uint32_t pr_parse_tid(const uint8_t *d, uint32_t len, struct pr_reg *r)
{
	uint8_t fmt = d[0] >> 6;
	uint32_t alen, n;
	char text[PR_PORT_MAX], name[ISCSI_NAME_MAX + 1];
	const char *sep = NULL;

	if (len < 4 || (d[0] & 0x0f) != 0x05 || fmt > 1)
		return 0;
	alen = get_be16(d + 2);
	if (alen < 4 || alen % 4 || 4 + alen > len)
		return 0;
	n = (uint32_t)strnlen((const char *)d + 4, alen);
	if (n == 0 || n == alen || n >= PR_PORT_MAX)
		return 0;               /* empty, not null terminated, too long */
	memcpy(text, d + 4, n);
	text[n] = '\0';
	if (fmt == 1) {
		/* "name,i,0x<12 hex digits>" */
		sep = strstr(text, ",i,0x");
		if (!sep || sep == text || strlen(sep + 5) != 12 ||
		    strspn(sep + 5, "0123456789abcdefABCDEF") != 12)
			return 0;
		text[sep - text] = '\0';
	}
	if (iscsi_name_normalize(text, name))
		return 0;
	memset(r, 0, sizeof(*r));
	r->name_only = fmt == 0;
	if (fmt == 0) {
		snprintf(r->port, sizeof(r->port), "%s", name);
	} else {
		char isid[13];

		for (int i = 0; i < 12; i++)
			isid[i] = (char)tolower((unsigned char)sep[5 + i]);
		isid[12] = '\0';
		snprintf(r->port, sizeof(r->port), "%s,i,0x%s", name, isid);
	}
	return 4 + alen;
}

/* REGISTER, REGISTER AND IGNORE EXISTING KEY (5.13.6, 6.16.3) */
static enum sense_reason pr_register(struct scsi_cmd *cmd, struct pr_lun *p, bool ignore,
				     struct pr_effects *fx)
{
	const uint8_t *d = cmd->buf;
	uint64_t rk = get_be64(d), sark = get_be64(d + 8);
	bool spec_i_pt = d[20] & 0x08, all_tg_pt = d[20] & 0x04, aptpl = d[20] & 0x01;
	int r = pr_reg_find(p, cmd->nexus);
	uint32_t len = cmd->xfer_len;

	if (!spec_i_pt && len != 24)
		return SR_PARAM_LIST_LENGTH_ERROR;
	if (aptpl && !p->path)
		return scsi_invalid_param(cmd, 20, 0);   /* PTPL_C is zero */

	if (r < 0) {
		if (!ignore && rk != 0)
			return SR_RESERVATION_CONFLICT;
		if (sark == 0)
			return SR_OK;   /* unregistering an unregistered nexus: nothing */
	} else {
		if (!ignore && rk != p->regs[r].key)
			return SR_RESERVATION_CONFLICT;
		if (spec_i_pt)
			return scsi_invalid_param(cmd, 20, 3);
	}
	if (ignore && spec_i_pt)
		return scsi_invalid_param(cmd, 20, 3);

	if (r >= 0) {
		if (sark == 0) {
			/* 5.13.11.3: unregister; a registrants-only holder
			 * releases, and the others hear of it */
			bool was_holder = pr_is_holder(p, r);
			uint8_t type = p->type;

			pr_reg_del(p, (unsigned)r);
			if (was_holder && !p->resv &&
			    (type == PR_TYPE_WE_RO || type == PR_TYPE_EA_RO))
				fx->released_ua = true;
		} else {
			p->regs[r].key = sark;
		}
	} else {
		struct pr_reg self;
		struct pr_reg *extra = NULL;
		unsigned n_extra = 0;

		pr_reg_of_nexus(&self, cmd->nexus, all_tg_pt);
		self.key = sark;
		if (spec_i_pt) {
			/* 6.16.3: TRANSPORTID PARAMETER DATA LENGTH, then the
			 * TransportIDs; all or nothing */
			uint32_t tl, off;

			if (len < 28)
				return SR_PARAM_LIST_LENGTH_ERROR;
			tl = get_be32(d + 24);
			if (28 + (uint64_t)tl != len)
				return SR_PARAM_LIST_LENGTH_ERROR;
			extra = calloc(PR_MAX_REGS, sizeof(*extra));
			if (!extra)
				return SR_INTERNAL_ERROR;
			for (off = 28; off < len;) {
				struct pr_reg t;
				uint32_t used = pr_parse_tid(d + off, len - off, &t);
				bool dup = false;

				if (!used || n_extra >= PR_MAX_REGS) {
					free(extra);
					return used ? SR_INSUFFICIENT_REGISTRATION_RESOURCES
						    : scsi_invalid_param(cmd, (uint16_t)off, -1);
				}
				t.key = sark;
				t.rtpi = cmd->nexus->rel_tport_id;
				t.all_tg_pt = all_tg_pt;
				/* a TransportID naming the issuer, or one
				 * already registered, is an error (6.16.3) */
				dup = pr_reg_overlap(&t, &self);
				for (unsigned i = 0; !dup && i < p->n; i++)
					dup = pr_reg_overlap(&t, &p->regs[i]);
				for (unsigned i = 0; !dup && i < n_extra; i++)
					dup = pr_reg_overlap(&t, &extra[i]);
				if (dup) {
					free(extra);
					return scsi_invalid_param(cmd, (uint16_t)off, -1);
				}
				extra[n_extra++] = t;
				off += used;
			}
		}
		if (p->n + 1 + n_extra > PR_MAX_REGS) {
			free(extra);
			return SR_INSUFFICIENT_REGISTRATION_RESOURCES;
		}
		if (pr_reg_add(p, &self)) {
			free(extra);
			return SR_INSUFFICIENT_REGISTRATION_RESOURCES;
		}
		for (unsigned i = 0; i < n_extra; i++) {
			if (pr_reg_add(p, &extra[i])) {
				free(extra);
				return SR_INSUFFICIENT_REGISTRATION_RESOURCES;
			}
		}
		free(extra);
	}
	/* 6.16.3: the APTPL bit of the last REGISTER governs */
	p->aptpl = aptpl;
	p->generation++;
	return SR_OK;
}

/* RESERVE (5.13.7) */
static enum sense_reason pr_reserve(struct scsi_cmd *cmd, struct pr_lun *p, int r,
				    uint8_t type)
{
	if (p->resv) {
		if (!pr_is_holder(p, r))
			return SR_RESERVATION_CONFLICT;
		/* the holder may repeat the same reservation, nothing else */
		return p->type == type ? SR_OK : SR_RESERVATION_CONFLICT;
	}
	if (p->spc2)
		return SR_RESERVATION_CONFLICT;
	p->resv = true;
	p->type = type;
	p->scope = 0;
	p->holder = pr_type_all_reg(type) ? -1 : r;
	return SR_OK;
}

/* RELEASE (5.13.11.2) */
static enum sense_reason pr_release(struct scsi_cmd *cmd, struct pr_lun *p, int r,
				    uint8_t type, struct pr_effects *fx)
{
	if (!p->resv || !pr_is_holder(p, r))
		return SR_OK;       /* nothing to release: GOOD */
	if (p->type != type)
		return SR_INVALID_RELEASE_OF_PR;
	p->resv = false;
	p->holder = -1;
	/* 5.13.11.2.2: RESERVATIONS RELEASED to the other registrants for
	 * the registrants-only and all-registrants types */
	if (type != PR_TYPE_WE && type != PR_TYPE_EA)
		fx->released_ua = true;
	return SR_OK;
}

/* CLEAR (5.13.11.2.6) */
static enum sense_reason pr_clear(struct scsi_cmd *cmd, struct pr_lun *p, int r,
				  struct pr_effects *fx)
{
	for (unsigned i = 0; i < p->n; i++)
		if ((int)i != r && pr_effect_removed(fx, &p->regs[i]))
			return SR_INTERNAL_ERROR;
	fx->removed_ua = UA_RESERVATIONS_PREEMPTED;
	p->n = 0;
	p->resv = false;
	p->holder = -1;
	p->generation++;
	return SR_OK;
}

/* Remove every registration with key 'key' except the issuer's (index r).
 * Returns how many registrations had that key (issuer included). */
static int pr_remove_key(struct pr_lun *p, int *r, uint64_t key, struct pr_effects *fx)
{
	int matched = 0;

	for (unsigned i = 0; i < p->n;) {
		if (p->regs[i].key != key) {
			i++;
			continue;
		}
		matched++;
		if ((int)i == *r) {
			i++;
			continue;
		}
		if (pr_effect_removed(fx, &p->regs[i]))
			return -1;
		pr_reg_del(p, i);
		if (*r > (int)i)
			(*r)--;
	}
	return matched;
}

/* PREEMPT, PREEMPT AND ABORT (5.13.11.2.3 - 5.13.11.2.4) */
static enum sense_reason pr_preempt(struct scsi_cmd *cmd, struct pr_lun *p, int r,
				    uint8_t type, struct pr_effects *fx)
{
	uint64_t sark = get_be64(cmd->buf + 8);
	int m;

	fx->removed_ua = UA_REGISTRATIONS_PREEMPTED;
	if (!p->resv || pr_type_all_reg(p->type)) {
		if (p->resv && sark == 0) {
			/* all-registrants reservation, key 0: remove every
			 * other registration and take a new reservation */
			for (unsigned i = 0; i < p->n;) {
				if ((int)i == r) {
					i++;
					continue;
				}
				if (pr_effect_removed(fx, &p->regs[i]))
					return SR_INTERNAL_ERROR;
				memmove(&p->regs[i], &p->regs[i + 1],
					(p->n - i - 1) * sizeof(p->regs[0]));
				p->n--;
				if (r > (int)i)
					r--;
			}
			p->resv = true;
			p->type = type;
			p->scope = 0;
			p->holder = pr_type_all_reg(type) ? -1 : r;
			p->generation++;
			return SR_OK;
		}
		if (sark == 0)
			return scsi_invalid_param(cmd, 8, -1);
		/* no reservation, or all-registrants and a key: remove the
		 * registrations with that key */
		m = pr_remove_key(p, &r, sark, fx);
		if (m < 0)
			return SR_INTERNAL_ERROR;
		if (m == 0)
			return SR_RESERVATION_CONFLICT;
		p->generation++;
		return SR_OK;
	}

	/* a reservation of a single holder */
	if (sark == p->regs[p->holder].key) {
		uint8_t old_type = p->type;

		m = pr_remove_key(p, &r, sark, fx);
		if (m < 0)
			return SR_INTERNAL_ERROR;
		/* the issuer becomes the holder, with the new type */
		p->resv = true;
		p->type = type;
		p->scope = 0;
		p->holder = pr_type_all_reg(type) ? -1 : r;
		if (old_type != type)
			fx->released_ua = true;
		p->generation++;
		return SR_OK;
	}
	if (sark == 0)
		return scsi_invalid_param(cmd, 8, -1);
	m = pr_remove_key(p, &r, sark, fx);
	if (m < 0)
		return SR_INTERNAL_ERROR;
	if (m == 0)
		return SR_RESERVATION_CONFLICT;
	p->generation++;
	return SR_OK;
}

/* REGISTER AND MOVE (5.13.9, 6.16.4) */
static enum sense_reason pr_register_move(struct scsi_cmd *cmd, struct pr_lun *p, int r)
{
	const uint8_t *d = cmd->buf;
	uint64_t sark = get_be64(d + 8);
	bool unreg = d[17] & 0x02, aptpl = d[17] & 0x01;
	uint16_t rtpi = get_be16(d + 18);
	uint32_t tl = get_be32(d + 20), used;
	struct pr_reg dst;
	int dr;

	if (cmd->xfer_len < 24 || 24 + (uint64_t)tl > cmd->xfer_len)
		return SR_PARAM_LIST_LENGTH_ERROR;
	if (!p->resv || pr_type_all_reg(p->type) || !pr_is_holder(p, r))
		return SR_RESERVATION_CONFLICT;
	if (aptpl && !p->path)
		return scsi_invalid_param(cmd, 17, 0);
	if (sark == 0)
		return scsi_invalid_param(cmd, 8, -1);
	used = pr_parse_tid(d + 24, tl, &dst);
	if (!used)
		return scsi_invalid_param(cmd, 24, -1);
	if (!alua_port_exists(cmd->lun->target, rtpi))
		return scsi_invalid_param(cmd, 18, -1);
	dst.rtpi = rtpi;
	dst.key = sark;
	/* the destination may not be the issuing I_T nexus */
	{
		struct pr_reg self;

		pr_reg_of_nexus(&self, cmd->nexus, false);
		if (pr_reg_overlap(&dst, &self))
			return scsi_invalid_param(cmd, 24, -1);
	}
	dr = -1;
	for (unsigned i = 0; i < p->n; i++)
		if (pr_reg_overlap(&dst, &p->regs[i]))
			dr = (int)i;
	if (dr < 0) {
		if (pr_reg_add(p, &dst))
			return SR_INSUFFICIENT_REGISTRATION_RESOURCES;
		dr = (int)p->n - 1;
	} else {
		p->regs[dr].key = sark;
	}
	p->holder = dr;
	if (unreg) {
		pr_reg_del(p, (unsigned)r);   /* not the holder any more: keeps resv */
	}
	p->aptpl = aptpl;
	p->generation++;
	return SR_OK;
}

/* After a change: make it durable when APTPL says so. */
static int pr_persist(struct pr_lun *p, bool was_aptpl)
{
	char err[256];

	if (!p->path)
		return 0;
	if (p->aptpl) {
		if (pr_file_save(p, err, sizeof(err))) {
			log_err("persistent reservations: %s", err);
			return -1;
		}
	} else if (was_aptpl) {
		if (pr_file_remove(p, err, sizeof(err))) {
			log_err("persistent reservations: %s", err);
			return -1;
		}
	}
	return 0;
}

static enum sense_reason pr_exec_out(struct scsi_cmd *cmd)
{
	struct pr_lun *p = cmd->lun->priv_pr;
	uint8_t sa = cmd->cdb[1] & 0x1f;
	uint8_t scope = cmd->cdb[2] >> 4, type = cmd->cdb[2] & 0x0f;
	struct pr_effects fx = { 0 };
	struct pr_note note = { 0 };
	struct pr_snap snap;
	enum sense_reason r;
	bool pending = false, was_aptpl, reloaded = false;
	unsigned tries = 0;
	int reg, e;

	if (cmd->xfer_len < 24)
		return SR_PARAM_LIST_LENGTH_ERROR;
	switch (sa) {
	case PRO_RESERVE:
	case PRO_RELEASE:
	case PRO_PREEMPT:
	case PRO_PREEMPT_ABORT:
		if (scope != 0)
			return scsi_invalid_cdb(cmd, 2, 7);
		if (!pr_type_valid(type))
			return scsi_invalid_cdb(cmd, 2, 3);
		break;
	case PRO_REGISTER_MOVE:
		if (!pr_type_valid(type))
			return scsi_invalid_cdb(cmd, 2, 3);
		break;
	}
	/* 6.16.3: only REGISTER with SPEC_I_PT and REGISTER AND MOVE carry
	 * more than the basic 24 bytes */
	if (sa != PRO_REGISTER && sa != PRO_REGISTER_MOVE && cmd->xfer_len != 24)
		return SR_PARAM_LIST_LENGTH_ERROR;

	pthread_mutex_lock(&p->lock);
	pr_shared_sync(p);
again:
	if (p->spc2 && p->spc2_nexus != cmd->nexus->id) {
		r = SR_RESERVATION_CONFLICT;
		goto out;
	}
	if (pr_snap_take(p, &snap)) {
		r = SR_INTERNAL_ERROR;
		goto out;
	}
	was_aptpl = p->aptpl;
	reg = pr_reg_find(p, cmd->nexus);
	if (sa != PRO_REGISTER && sa != PRO_REGISTER_IGNORE) {
		/* 5.13.1: every other service action needs the nexus
		 * registered with the key in RESERVATION KEY */
		if (reg < 0 || p->regs[reg].key != get_be64(cmd->buf)) {
			r = SR_RESERVATION_CONFLICT;
			goto out_snap;
		}
		/* 6.16.3: SPEC_I_PT, ALL_TG_PT and APTPL are ignored by the
		 * service actions that do not register */
	}
	switch (sa) {
	case PRO_REGISTER:
		r = pr_register(cmd, p, false, &fx);
		break;
	case PRO_REGISTER_IGNORE:
		r = pr_register(cmd, p, true, &fx);
		break;
	case PRO_RESERVE:
		r = pr_reserve(cmd, p, reg, type);
		break;
	case PRO_RELEASE:
		r = pr_release(cmd, p, reg, type, &fx);
		break;
	case PRO_CLEAR:
		r = pr_clear(cmd, p, reg, &fx);
		break;
	case PRO_PREEMPT:
		r = pr_preempt(cmd, p, reg, type, &fx);
		break;
	case PRO_PREEMPT_ABORT:
		r = pr_preempt(cmd, p, reg, type, &fx);
		fx.abort = true;
		break;
	case PRO_REGISTER_MOVE:
		r = pr_register_move(cmd, p, reg);
		break;
	default:
		r = scsi_invalid_cdb(cmd, 1, 4);
		break;
	}
	if (r == SR_OK && pr_persist(p, was_aptpl)) {
		r = SR_INTERNAL_ERROR;
		fx.n_removed = 0;
		fx.released_ua = false;
		fx.abort = false;
	}
	if (r == SR_OK && p->shared) {
		/* a shared LUN: the change counts once the record has it */
		e = pr_shared_commit(p, fx.removed, fx.n_removed, fx.removed_ua, fx.released_ua,
				     &note);
		if (e == -ECANCELED && ++tries < PR_SHARED_TRIES) {
			/* the working copy holds another gateway's change */
			free(snap.regs);
			free(fx.removed);
			memset(&fx, 0, sizeof(fx));
			goto again;
		}
		if (e) {
			log_event(LOG_LVL_ERR, "pr_shared_write_failed", KV_U("lun", cmd->lun->id),
				  KV_S("command", "persistent_reserve_out"), KV_S("error", strerror(-e)));
			reloaded = e == -ECANCELED;
			r = SR_INTERNAL_ERROR;
			fx.n_removed = 0;
			fx.released_ua = false;
			fx.abort = false;
		}
	}
	if (r != SR_OK && !reloaded)
		pr_snap_restore(p, &snap);
	pr_publish(p);
	if (r == SR_OK) {
		/* SPC-4 5.13.11.2.x: unit attentions to the nexuses concerned */
		if (fx.n_removed)
			pr_ua_regs(cmd->lun, fx.removed, fx.n_removed, fx.removed_ua, cmd->nexus);
		if (fx.released_ua)
			pr_ua_regs(cmd->lun, p->regs, p->n, UA_RESERVATIONS_RELEASED, cmd->nexus);
		if (fx.abort)
			pending = pr_abort_regs(cmd, fx.removed, fx.n_removed);
	}
out_snap:
	free(snap.regs);
out:
	pthread_mutex_unlock(&p->lock);
	pr_shared_announce(cmd->lun, &note);
	free(fx.removed);
	return pending ? SR_PENDING : r;
}

/* Largest PERSISTENT RESERVE OUT parameter list: the basic 24 bytes plus a
 * TransportID list of one full set of registrations. */
#define PROUT_MAX (28u + PR_MAX_REGS * (4u + PR_PORT_MAX))

enum sense_reason pr_parse_out(struct scsi_cmd *cmd)
{
	uint32_t len = get_be32(cmd->cdb + 5);

	if (!cmd->lun->priv_pr)
		return SR_INTERNAL_ERROR;
	/* 6.16.3: anything shorter than the basic parameter list, or longer
	 * than any list we could act on, is a PARAMETER LIST LENGTH ERROR */
	if (len < 24 || len > PROUT_MAX)
		return SR_PARAM_LIST_LENGTH_ERROR;
	scsi_set_dataout(cmd, len);
	cmd->execute = pr_exec_out;
	return SR_OK;
}

/* --- APTPL binding ------------------------------------------------------ */

int pr_lun_load(struct scsi_lun *lun, const char *dir, char *err, size_t errlen)
{
	struct pr_lun *p = lun->priv_pr;
	size_t used;
	int rc;

	if (!p) {
		snprintf(err, errlen, "no reservation state");
		return -1;
	}
	if (lun->bs && lun->bs->ops->shared) {
		/* several gateways: the state lives in the store, not in a
		 * file of this host (scsi/pr_shared.c) */
		return pr_shared_attach(lun, err, errlen) ? -1 : 0;
	}
	if (!dir)
		return 0;
	free(p->path);
	if (asprintf(&p->path, "%s/pr-%s-lun%u.state", dir, lun->target->name, lun->id) < 0) {
		p->path = NULL;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_lock(&p->lock);
	rc = pr_file_load(p, err, errlen);
	if (rc == PR_LOAD_BAD) {
		/* Only this LUN pays: it starts without the file's
		 * registrations, and without APTPL so that nothing
		 * overwrites the file before the operator has looked. */
		free(p->path);
		p->path = NULL;
		used = strnlen(err, errlen);
		snprintf(err + used, errlen - used,
			 "; the LUN starts without the persistent reservations of that file and "
			 "without APTPL (PTPL_C=0); the file is kept as it is: repair or remove it, "
			 "then restart the daemon (removing it drops the reservations it holds)");
	}
	pr_publish(p);
	pthread_mutex_unlock(&p->lock);
	return rc;
}
