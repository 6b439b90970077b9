/*
 * Fault injection in the SCSI layer: the per-LUN rule sets and the
 * after-parse seam. DESIGN (threads, sets, grace periods, determinism):
 * see scsi/fault.h.
 */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include "scsi/scsi_int.h"
#include "scsi/fault.h"
#include "scsi/pr.h"
#include "scsi/stats.h"

struct scsi_fault_rule {
	unsigned id;
	unsigned sets;                  /* sets holding it, under fault_lock */
	bool loose;                     /* still the creator's (never added) */
	struct fault_spec spec;
	char text[512];
	char label[FAULT_NAME_MAX];     /* name, or "rule<id>" */
	char action[32];
	uint64_t armed_ns;              /* when it was first added */
	_Atomic uint64_t matched;
	_Atomic uint64_t injected;
	_Atomic uint64_t bytes;
	/* FAULT_ALUA: the state to give back (under fault_lock) */
	struct scsi_target *alua_target;
	uint8_t alua_prev;
};

struct scsi_fault_set {
	uint32_t withdrawn;             /* FAULT_CAP_* of the withdraw rules */
	bool per_command;               /* any rule looks at commands */
	/* the LUN as it was before the first rule that changed it */
	bool saved;
	uint64_t orig_nblocks;
	bool orig_tpc;
	unsigned n;
	struct scsi_fault_rule *r[];    /* in id order */
};

static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- rules ------------------------------------------------------------ */

struct scsi_fault_rule *scsi_fault_rule_new(const struct fault_spec *s, unsigned id,
					    const char *text, const char *action)
{
	struct scsi_fault_rule *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->id = id;
	r->loose = true;
	r->spec = *s;
	snprintf(r->text, sizeof(r->text), "%s", text ? text : "");
	snprintf(r->action, sizeof(r->action), "%s", action ? action : "fault");
	if (s->name[0])
		snprintf(r->label, sizeof(r->label), "%s", s->name);
	else
		snprintf(r->label, sizeof(r->label), "rule%u", id);
	r->armed_ns = scsi_stats_now_ns();
	return r;
}

void scsi_fault_rule_drop(struct scsi_fault_rule *r)
{
	if (r && r->loose && !r->sets)
		free(r);
}

unsigned scsi_fault_rule_id(const struct scsi_fault_rule *r) { return r->id; }
const char *scsi_fault_rule_label(const struct scsi_fault_rule *r) { return r->label; }
const char *scsi_fault_rule_text(const struct scsi_fault_rule *r) { return r->text; }
const struct fault_spec *scsi_fault_rule_spec(const struct scsi_fault_rule *r) { return &r->spec; }

void scsi_fault_rule_counts(const struct scsi_fault_rule *r, struct scsi_fault_counts *c)
{
	c->matched = atomic_load_explicit(&r->matched, memory_order_relaxed);
	c->injected = atomic_load_explicit(&r->injected, memory_order_relaxed);
	c->bytes = atomic_load_explicit(&r->bytes, memory_order_relaxed);
}

/* ---- sets ------------------------------------------------------------- */

static struct scsi_fault_set *set_load(const struct scsi_lun *lun)
{
	return atomic_load_explicit(&((struct scsi_lun *)lun)->faults, memory_order_acquire);
}

static struct scsi_fault_set *set_alloc(unsigned n)
{
	return calloc(1, sizeof(struct scsi_fault_set) + (n ? n : 1) * sizeof(struct scsi_fault_rule *));
}

/* Under fault_lock: the set's rules lose a holder; the last one frees. */
static void set_free_locked(struct scsi_fault_set *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->n; i++)
		if (--s->r[i]->sets == 0)
			free(s->r[i]);
	free(s);
}

void scsi_fault_retired_free(struct scsi_fault_retired *ret)
{
	pthread_mutex_lock(&fault_lock);
	for (unsigned i = 0; i < ret->n; i++)
		set_free_locked(ret->sets[i]);
	ret->n = 0;
	pthread_mutex_unlock(&fault_lock);
}

static uint32_t op_cap(uint8_t op)
{
	switch (op) {
	case 0x89: return FAULT_CAP_CAW;
	case 0x83: case 0x84: return FAULT_CAP_XCOPY;
	case 0x42: return FAULT_CAP_UNMAP;
	case 0x41: case 0x93: return FAULT_CAP_WRITE_SAME;
	default: return 0;
	}
}

uint32_t scsi_fault_withdrawn(const struct scsi_lun *lun)
{
	const struct scsi_fault_set *s = lun ? set_load(lun) : NULL;

	return s ? s->withdrawn : 0;
}

bool scsi_op_offered(const struct scsi_opcode *op, const struct scsi_lun *lun)
{
	return scsi_op_available(op, lun) && !(op_cap(op->opcode) & scsi_fault_withdrawn(lun));
}

bool scsi_fault_armed(struct scsi_lun *lun)
{
	return set_load(lun) != NULL;
}

/*
 * Under fault_lock: what the rules of s make of the LUN (withdrawn
 * commands, 3PC, the capacity), from the state saved before the first of
 * them. Capacity: the last capacity rule wins; none gives the saved one
 * back. Every change establishes its unit attention (scsi_lun_set_capacity).
 */
static void set_apply_state(struct scsi_lun *lun, struct scsi_fault_set *s, const struct scsi_fault_set *old)
{
	uint64_t want;
	bool tpc;

	if (old && old->saved) {
		s->saved = true;
		s->orig_nblocks = old->orig_nblocks;
		s->orig_tpc = old->orig_tpc;
	} else {
		s->saved = true;
		s->orig_nblocks = scsi_lun_nblocks(lun);
		s->orig_tpc = atomic_load(&lun->tpc);
	}
	s->withdrawn = 0;
	s->per_command = false;
	want = s->orig_nblocks;
	for (unsigned i = 0; i < s->n; i++) {
		const struct fault_spec *sp = &s->r[i]->spec;

		if (sp->action == FAULT_WITHDRAW)
			s->withdrawn |= sp->withdraw;
		if (sp->action == FAULT_CAPACITY)
			want = sp->size_bytes >> lun->block_shift;
		if (fault_spec_per_command(sp))
			s->per_command = true;
	}
	tpc = s->orig_tpc && !(s->withdrawn & FAULT_CAP_XCOPY);
	if (atomic_load(&lun->tpc) != tpc)
		atomic_store(&lun->tpc, tpc);
	if (scsi_lun_nblocks(lun) != want)
		scsi_lun_set_capacity(lun, want);
}

/* Publish s (NULL: nothing armed) and retire the old set. */
static void set_publish_locked(struct scsi_lun *lun, struct scsi_fault_set *s,
			       struct scsi_fault_retired *ret)
{
	struct scsi_fault_set *old = set_load(lun);

	if (s && !s->n) {
		free(s);
		s = NULL;
	}
	atomic_store_explicit(&lun->faults, s, memory_order_release);
	if (old)
		ret->sets[ret->n++] = old;
}

static int alua_arm_locked(struct scsi_lun *lun, struct scsi_fault_rule *r, char *err, size_t errlen)
{
	struct scsi_target *t = lun->target;

	if (r->alua_target)
		return 0;   /* armed through another LUN of the target */
	if (!t || !t->priv_alua) {
		snprintf(err, errlen, "target %s has no ALUA port groups (portal_groups in targetd.conf(5))",
			 t ? t->name : "?");
		return -1;
	}
	r->alua_prev = (uint8_t)alua_get_state(t, r->spec.alua_tpgt);
	if (alua_set_state(t, r->spec.alua_tpgt, (enum alua_state)r->spec.alua_state, NULL)) {
		snprintf(err, errlen, "target %s has no target port group %u", t->name, r->spec.alua_tpgt);
		return -1;
	}
	r->alua_target = t;
	return 0;
}

int scsi_fault_add(struct scsi_lun *lun, struct scsi_fault_rule *r, struct scsi_fault_retired *ret,
		   char *err, size_t errlen)
{
	struct scsi_fault_set *old, *s;
	unsigned k = 0;

	if (ret->n >= ARRAY_SIZE(ret->sets)) {
		snprintf(err, errlen, "too many changes at once");
		return -1;
	}
	if (r->spec.action == FAULT_CAPACITY) {
		uint64_t blocks = r->spec.size_bytes >> lun->block_shift;

		/* A larger capacity than the backstore holds would send writes
		 * past its end: only smaller (or equal) sizes are reported. */
		if (!blocks || (lun->bs && r->spec.size_bytes > lun->bs->size)) {
			snprintf(err, errlen, "size %llu: from one block (%u bytes) up to the LUN's %llu bytes",
				 (unsigned long long)r->spec.size_bytes, lun->block_size,
				 (unsigned long long)(lun->bs ? lun->bs->size : 0));
			return -1;
		}
	}
	pthread_mutex_lock(&fault_lock);
	old = set_load(lun);
	if (old && old->n >= FAULT_MAX_RULES) {
		pthread_mutex_unlock(&fault_lock);
		snprintf(err, errlen, "LUN %u has %d rules already", lun->id, FAULT_MAX_RULES);
		return -1;
	}
	if (r->spec.action == FAULT_ALUA && alua_arm_locked(lun, r, err, errlen)) {
		pthread_mutex_unlock(&fault_lock);
		return -1;
	}
	s = set_alloc((old ? old->n : 0) + 1);
	if (!s) {
		pthread_mutex_unlock(&fault_lock);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (unsigned i = 0; old && i < old->n; i++) {
		if (old->r[i]->id > r->id && k == i)
			s->r[k++] = r;
		s->r[k++] = old->r[i];
	}
	if (k == (old ? old->n : 0))
		s->r[k++] = r;
	s->n = k;
	for (unsigned i = 0; i < s->n; i++)
		s->r[i]->sets++;
	r->loose = false;
	set_apply_state(lun, s, old);
	set_publish_locked(lun, s, ret);
	pthread_mutex_unlock(&fault_lock);
	if (!fault_spec_per_command(&r->spec))
		scsi_stats_fault(lun);   /* a state rule takes effect once */
	log_event(LOG_LVL_INFO, "fault_armed", KV_S("rule", r->label),
		  KV_S("target", lun->target ? lun->target->name : NULL), KV_U("lun", lun->id),
		  KV_S("spec", r->text));
	return 0;
}

unsigned scsi_fault_remove(struct scsi_lun *lun, bool (*match)(const struct scsi_fault_rule *r, void *arg),
			   void *arg, struct scsi_fault_retired *ret)
{
	struct scsi_fault_set *old, *s;
	unsigned gone = 0;

	if (ret->n >= ARRAY_SIZE(ret->sets))
		return 0;
	pthread_mutex_lock(&fault_lock);
	old = set_load(lun);
	if (!old) {
		pthread_mutex_unlock(&fault_lock);
		return 0;
	}
	s = set_alloc(old->n);
	if (!s) {
		pthread_mutex_unlock(&fault_lock);
		return 0;
	}
	for (unsigned i = 0; i < old->n; i++) {
		struct scsi_fault_rule *r = old->r[i];

		if (match && !match(r, arg)) {
			s->r[s->n++] = r;
			r->sets++;
			continue;
		}
		gone++;
		if (r->spec.action == FAULT_ALUA && r->alua_target) {
			alua_set_state(r->alua_target, r->spec.alua_tpgt, (enum alua_state)r->alua_prev, NULL);
			r->alua_target = NULL;
		}
		log_event(LOG_LVL_INFO, "fault_cleared", KV_S("rule", r->label),
			  KV_S("target", lun->target ? lun->target->name : NULL), KV_U("lun", lun->id));
	}
	if (!gone) {
		set_free_locked(s);
		pthread_mutex_unlock(&fault_lock);
		return 0;
	}
	set_apply_state(lun, s, old);
	set_publish_locked(lun, s, ret);
	pthread_mutex_unlock(&fault_lock);
	scsi_fault_hold_release(lun);
	return gone;
}

void scsi_fault_lun_free(struct scsi_lun *lun)
{
	struct scsi_fault_set *s = set_load(lun);

	if (!s)
		return;
	atomic_store(&lun->faults, NULL);
	pthread_mutex_lock(&fault_lock);
	for (unsigned i = 0; i < s->n; i++) {
		struct scsi_fault_rule *r = s->r[i];

		/* an ALUA switch armed through this LUN goes with it */
		if (r->spec.action == FAULT_ALUA && r->alua_target && r->sets == 1) {
			alua_set_state(r->alua_target, r->spec.alua_tpgt, (enum alua_state)r->alua_prev, NULL);
			r->alua_target = NULL;
		}
	}
	set_free_locked(s);
	pthread_mutex_unlock(&fault_lock);
}

void scsi_fault_for_each(struct scsi_lun *lun, void (*fn)(const struct scsi_fault_rule *r, void *arg),
			 void *arg)
{
	struct scsi_fault_set *s;

	pthread_mutex_lock(&fault_lock);
	s = set_load(lun);
	for (unsigned i = 0; s && i < s->n; i++)
		fn(s->r[i], arg);
	pthread_mutex_unlock(&fault_lock);
}

/* ---- the after-parse seam -------------------------------------------- */

/* SplitMix64 of (seed, match number, purpose): the only source of chance. */
static uint64_t fault_mix(uint64_t seed, uint64_t n, uint64_t purpose)
{
	uint64_t z = seed + n * 0x9e3779b97f4a7c15ull + purpose * 0xd1b54a32d192ed03ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double fault_unit(uint64_t seed, uint64_t n, uint64_t purpose)
{
	return (double)(fault_mix(seed, n, purpose) >> 11) * 0x1.0p-53;   /* [0, 1) */
}

static uint64_t fault_delay(const struct fault_spec *s, uint64_t n)
{
	double u = fault_unit(s->seed, n, 2);

	switch (s->dist) {
	case FAULT_DIST_UNIFORM:
		return s->delay_ns + (uint64_t)(u * (double)(s->delay_max_ns - s->delay_ns));
	case FAULT_DIST_EXP: {
		double d = -(double)s->delay_ns * log1p(-u);

		return d > 3600e9 ? 3600000000000ull : (uint64_t)d;
	}
	case FAULT_DIST_SPIKE:
		return u < s->spike_p ? s->delay_ns : 0;
	case FAULT_DIST_FIXED:
	default:
		return s->delay_ns;
	}
}

/* Operation codes whose parse leaves an LBA range in cmd->lba/nblocks. */
static bool op_has_lba(uint8_t op)
{
	switch (op) {
	case 0x08: case 0x0a: case 0x28: case 0x2a: case 0x2e: case 0x2f: case 0x34: case 0x35:
	case 0x41: case 0x88: case 0x89: case 0x8a: case 0x8b: case 0x8e: case 0x8f: case 0x90:
	case 0x91: case 0x93: case 0x9c: case 0xa8: case 0xaa: case 0xae: case 0xaf:
		return true;
	default:
		return false;
	}
}

static bool lba_match(const struct scsi_cmd *cmd, const struct fault_spec *s)
{
	uint64_t last;

	if (!op_has_lba(cmd->cdb[0]))
		return false;
	last = cmd->lba + (cmd->nblocks ? cmd->nblocks : 1) - 1;
	if (last < cmd->lba)
		last = UINT64_MAX;
	return cmd->lba <= s->lba_last && last >= s->lba_first;
}

/* One more injection unless the rule has had its count. */
static bool take_injection(struct scsi_fault_rule *r, uint64_t *nth)
{
	uint64_t h = atomic_load_explicit(&r->injected, memory_order_relaxed);

	if (!r->spec.count) {
		*nth = atomic_fetch_add_explicit(&r->injected, 1, memory_order_relaxed) + 1;
		return true;
	}
	do {
		if (h >= r->spec.count)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&r->injected, &h, h + 1, memory_order_relaxed,
							 memory_order_relaxed));
	*nth = h + 1;
	return true;
}

/* Does rule r take this command? (Its counters move only for commands in
 * its scope; n is the command's number among them.) */
static bool rule_takes(struct scsi_fault_rule *r, const struct scsi_cmd *cmd, uint64_t *now,
		       uint64_t *n, uint64_t *nth)
{
	const struct fault_spec *s = &r->spec;

	if (!fault_spec_per_command(s) || !fault_spec_op(s, cmd->cdb[0]))
		return false;
	if (s->initiator[0] && strcasecmp(s->initiator, cmd->nexus->initiator_name))
		return false;
	if (s->tpgt >= 0 && cmd->nexus->tpgt != (uint16_t)s->tpgt)
		return false;
	if (s->has_lba && !lba_match(cmd, s))
		return false;
	if (s->after_ns || s->duration_ns) {
		uint64_t from = r->armed_ns + s->after_ns;

		if (!*now)
			*now = scsi_stats_now_ns();
		if (*now < from || (s->duration_ns && *now - from >= s->duration_ns))
			return false;
	}
	if (s->after_bytes) {
		/* out of space: the first after_bytes bytes go through */
		uint64_t len = op_has_lba(cmd->cdb[0]) ? (uint64_t)cmd->nblocks << cmd->lun->block_shift : 0;
		uint64_t before = atomic_fetch_add_explicit(&r->bytes, len, memory_order_relaxed);

		if (before + len <= s->after_bytes)
			return false;
		atomic_fetch_sub_explicit(&r->bytes, len, memory_order_relaxed);
	}
	*n = atomic_fetch_add_explicit(&r->matched, 1, memory_order_relaxed) + 1;
	if (s->every > 1 && *n % s->every)
		return false;
	if (s->has_probability && !(fault_unit(s->seed, *n, 1) < s->probability))
		return false;
	return take_injection(r, nth);
}

static enum sense_reason fault_sense(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq)
{
	cmd->fault_key = key;
	cmd->ua_asc = asc;
	cmd->ua_ascq = ascq;
	return SR_FAULT_SENSE;
}

/* The answer rule r gives cmd (SR_OK: none now, see cmd->xfault). */
static enum sense_reason rule_act(const struct scsi_fault_rule *r, struct scsi_cmd *cmd, uint64_t n,
				  uint64_t *delay, bool *stop)
{
	const struct fault_spec *s = &r->spec;

	*stop = true;
	switch (s->action) {
	case FAULT_SENSE:
		if (s->has_info) {
			cmd->info_valid = true;
			cmd->info = s->info;
		}
		return fault_sense(cmd, s->key, s->asc, s->ascq);
	case FAULT_MEDIUM_ERROR:
		/* SBC-4 4.18: the LBA of the first block that failed */
		if (op_has_lba(cmd->cdb[0])) {
			cmd->info_valid = true;
			cmd->info = s->has_lba && s->lba_first > cmd->lba ? s->lba_first : cmd->lba;
		}
		if (cmd->dir == SCSI_DIR_WRITE || (cmd->op && (cmd->op->flags & OPF_WRITES)))
			return fault_sense(cmd, SK_MEDIUM_ERROR, 0x0c, 0x00);   /* WRITE ERROR */
		return fault_sense(cmd, SK_MEDIUM_ERROR, 0x11, 0x00);           /* UNRECOVERED READ ERROR */
	case FAULT_STATUS:
		return s->status == SAM_STAT_BUSY ? SR_BUSY
		       : s->status == SAM_STAT_TASK_SET_FULL ? SR_TASK_SET_FULL : SR_RESERVATION_CONFLICT;
	case FAULT_MISCOMPARE:
		/* SBC-4 5.3: the offset of the first byte that differs */
		cmd->info_valid = true;
		cmd->info = s->offset;
		return SR_MISCOMPARE_VERIFY;
	case FAULT_STALL:
		cmd->xfault = (uint8_t)((cmd->xfault & ~SCSI_FAULT_X_DELAY) | SCSI_FAULT_X_STALL);
		cmd->fault_ns = s->timeout_ns;
		return SR_OK;
	case FAULT_DROP:
		/* the transport drops the connection before the command runs;
		 * held for good in case it ever gets there */
		cmd->xfault = (uint8_t)((cmd->xfault & ~SCSI_FAULT_X_DELAY) | SCSI_FAULT_X_DROP |
					SCSI_FAULT_X_STALL);
		cmd->fault_ns = 0;
		return SR_OK;
	case FAULT_LATENCY:
		*delay += fault_delay(s, n);
		break;
	case FAULT_WITHHOLD_R2T:
		cmd->xfault |= SCSI_FAULT_X_NO_R2T;
		break;
	case FAULT_CORRUPT_DIGEST:
		cmd->xfault |= SCSI_FAULT_X_DIGEST;
		break;
	default:
		break;
	}
	*stop = false;
	return SR_OK;
}

static void fault_log(const struct scsi_fault_rule *r, const struct scsi_cmd *cmd, uint64_t n,
		      uint64_t nth, uint64_t delay)
{
	const char *opname = cmd->op && cmd->op->name ? cmd->op->name : NULL;

	if (r->spec.action == FAULT_LATENCY)
		log_debug_event("fault_injected", KV_S("rule", r->label), KV_S("action", r->action),
				KV_U("delay_us", delay / 1000), KV_S("op", opname), KV_U("lba", cmd->lba),
				KV_U("blocks", cmd->nblocks), KV_U("lun", cmd->lun->id),
				KV_S("initiator", cmd->nexus->initiator_name), KV_U("match", n),
				KV_U("injection", nth));
	else
		log_debug_event("fault_injected", KV_S("rule", r->label), KV_S("action", r->action),
				KV_S("op", opname), KV_U("lba", cmd->lba), KV_U("blocks", cmd->nblocks),
				KV_U("lun", cmd->lun->id), KV_S("initiator", cmd->nexus->initiator_name),
				KV_U("match", n), KV_U("injection", nth));
}

enum sense_reason scsi_fault_refine(struct scsi_cmd *cmd, enum sense_reason r)
{
	const struct scsi_fault_set *set = set_load(cmd->lun);

	if (r == SR_UA || r == SR_INVALID_OPCODE || !set || !(op_cap(cmd->cdb[0]) & set->withdrawn))
		return r;
	cmd->field_valid = false;
	cmd->info_valid = false;
	return SR_INVALID_OPCODE;
}

enum sense_reason scsi_fault_parse(struct scsi_cmd *cmd)
{
	const struct scsi_fault_set *set = set_load(cmd->lun);
	uint64_t now = 0, delay = 0;
	bool stop = false;

	if (!set)
		return SR_OK;
	/* SPC-4 4.4.1: a withdrawn command is one the LUN does not have */
	if (set->withdrawn && (op_cap(cmd->cdb[0]) & set->withdrawn))
		return SR_INVALID_OPCODE;
	if (!set->per_command)
		return SR_OK;
	cmd->xfault = 0;
	cmd->fault_ns = 0;
	for (unsigned i = 0; i < set->n && !stop; i++) {
		struct scsi_fault_rule *r = set->r[i];
		uint64_t n = 0, nth = 0, before = delay;
		enum sense_reason reason;

		if (!rule_takes(r, cmd, &now, &n, &nth))
			continue;
		reason = rule_act(r, cmd, n, &delay, &stop);
		scsi_stats_fault(cmd->lun);
		fault_log(r, cmd, n, nth, delay - before);
		if (reason != SR_OK) {
			cmd->xfault = 0;
			return reason;
		}
	}
	if (delay && !(cmd->xfault & SCSI_FAULT_X_STALL)) {
		cmd->xfault |= SCSI_FAULT_X_DELAY;
		cmd->fault_ns = delay;
	}
	return SR_OK;
}

void scsi_fault_injected(struct scsi_lun *lun)
{
	scsi_stats_fault(lun);
}
