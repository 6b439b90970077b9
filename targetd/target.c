/*
 * Configuration -> runtime: targets, LUNs (backstores opened here), portals
 * and the limits the login code negotiates with. See target.h.
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "backstore/backstore.h"
#include "scsi/pr.h"
#include "targetd/fault.h"
#include "targetd/pr_abort.h"
#include "targetd/target.h"

struct targetd_runtime *target_runtime;

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static pthread_rwlock_t target_acl_lock = PTHREAD_RWLOCK_INITIALIZER;
/* Where APTPL reservation state lives (conf state_dir). */
static const char *target_pr_dir;
/* pool_soft_threshold of the running configuration (for LUNs opened later) */
static unsigned target_pool_threshold;
/* thresholds: least time between two looks at a LUN's space */
#define TARGET_SPACE_SAMPLE_NS (100ull * 1000 * 1000)

/* SPC-4 5.15: one ALUA target port group per portal group tag, in the
 * state the configuration gives it (active/optimized otherwise). */
static int target_alua_init(struct targetd_runtime *r, struct iscsi_target *t)
{
	struct alua_group_conf g[ALUA_MAX_GROUPS];
	unsigned n = 0;

	for (unsigned i = 0; i < r->n_portals; i++) {
		uint16_t tpgt = r->portals[i].tpgt;
		unsigned k;

		if (__atomic_load_n(&r->portals[i].closing, __ATOMIC_ACQUIRE))
			continue;

		for (k = 0; k < n && g[k].tpgt != tpgt; k++)
			;
		if (k < n)
			continue;
		if (n == ALUA_MAX_GROUPS) {
			log_err("more than %u portal groups", ALUA_MAX_GROUPS);
			return -1;
		}
		g[n].tpgt = tpgt;
		g[n].state = ALUA_ACTIVE_OPTIMIZED;
		g[n].preferred = false;
		g[n].remote = false;
		for (k = 0; r->conf && k < r->conf->n_portal_groups; k++) {
			const struct conf_portal_group *pg = &r->conf->portal_groups[k];

			if (pg->tpgt == tpgt) {
				g[n].state = (enum alua_state)pg->state;
				g[n].preferred = pg->preferred;
			}
		}
		n++;
	}
	/* the port groups of the other gateways of shared LUNs */
	for (unsigned k = 0; r->conf && k < r->conf->n_portal_groups; k++) {
		const struct conf_portal_group *pg = &r->conf->portal_groups[k];

		if (!pg->remote)
			continue;
		if (n == ALUA_MAX_GROUPS) {
			log_err("more than %u portal groups", ALUA_MAX_GROUPS);
			return -1;
		}
		g[n] = (struct alua_group_conf){ .tpgt = (uint16_t)pg->tpgt,
						 .state = (enum alua_state)pg->state,
						 .preferred = pg->preferred, .remote = true };
		n++;
	}
	/* by tag, so that every gateway reports the groups in one order */
	for (unsigned i = 1; i < n; i++)
		for (unsigned k = i; k > 0 && g[k - 1].tpgt > g[k].tpgt; k--) {
			struct alua_group_conf tmp = g[k];

			g[k] = g[k - 1];
			g[k - 1] = tmp;
		}
	if (n && alua_target_init(&t->st, g, n)) {
		log_err("target %s: cannot set up the target port groups", t->iqn);
		return -1;
	}
	return 0;
}

/* Reload: bring every target's port groups to the states nc gives them
 * (active/optimized for groups it does not list). A changed group
 * establishes ASYMMETRIC ACCESS STATE CHANGED for every session. Returns how
 * many group states changed. */
unsigned target_alua_reload(struct targetd_runtime *r, const struct conf *nc)
{
	unsigned n = __atomic_load_n(&r->n_targets, __ATOMIC_ACQUIRE), changed = 0;

	for (unsigned i = 0; i < n; i++) {
		struct iscsi_target *t = &r->targets[i];

		/* remote groups (another gateway's) take the state nc says */
		for (unsigned j = 0; j < nc->n_portal_groups; j++) {
			const struct conf_portal_group *pg = &nc->portal_groups[j];

			if (pg->remote &&
			    alua_get_state(&t->st, (uint16_t)pg->tpgt) != (enum alua_state)pg->state &&
			    !alua_set_state(&t->st, (uint16_t)pg->tpgt, (enum alua_state)pg->state,
					    NULL)) {
				log_info("target %s: remote portal group %u now %s", t->iqn, pg->tpgt,
					 alua_state_name((enum alua_state)pg->state));
				changed++;
			}
		}
		for (unsigned k = 0; k < r->n_portals; k++) {
			uint16_t tpgt = r->portals[k].tpgt;
			enum alua_state st = ALUA_ACTIVE_OPTIMIZED;

			for (unsigned j = 0; j < nc->n_portal_groups; j++)
				if (nc->portal_groups[j].tpgt == tpgt)
					st = (enum alua_state)nc->portal_groups[j].state;
			if (alua_get_state(&t->st, tpgt) != st &&
			    !alua_set_state(&t->st, tpgt, st, NULL)) {
				log_info("target %s: portal group %u now %s", t->iqn, tpgt,
					 alua_state_name(st));
				changed++;
			}
		}
	}
	return changed;
}

void target_acl_wrlock(void) { pthread_rwlock_wrlock(&target_acl_lock); }
void target_acl_unlock(void) { pthread_rwlock_unlock(&target_acl_lock); }

bool target_lun_space(struct scsi_lun *lun, struct target_space *out)
{
	struct bs_space sp;
	uint64_t own;

	memset(out, 0, sizeof(*out));
	if (!lun->bs || backstore_space(lun->bs, &sp, BS_SPACE_POOL | BS_SPACE_SHARED) < 0)
		return false;
	out->provisioned = scsi_lun_nblocks(lun) << lun->block_shift;
	out->allocated = sp.allocated;
	out->shared = sp.shared;
	out->shared_partial = sp.shared_partial;
	own = sp.allocated - MIN(sp.shared, sp.allocated);
	out->saved = out->provisioned > own ? out->provisioned - own : 0;
	out->pool_size = sp.pool_size;
	out->pool_free = sp.pool_free;
	return true;
}

int target_lun_open(struct iscsi_target *t, const struct conf_lun *cl, struct scsi_lun **out)
{
	struct bs_params bp = {
		.type = cl->backstore,
		.path = cl->path,
		.size = cl->size,
		.block_size = cl->block_size ? cl->block_size : 512,
		.thin = cl->thin,
		.read_only = cl->read_only,
		.direct = cl->direct,
		.create = cl->size != 0,
		.rbd = { .pool = cl->rbd_pool, .image = cl->rbd_image, .conf = cl->rbd_conf,
			 .client = cl->rbd_client },
	};
	struct scsi_lun_params lp = {
		.id = (uint16_t)cl->lun,
		.block_size = bp.block_size,
		.read_only = cl->read_only,
		.removable = cl->removable,
		.thin = cl->thin,
		.sanitize = cl->sanitize,
		.zero_detect = cl->zero_detect == CONF_ZD_UNMAP ? SCSI_ZD_UNMAP
			       : cl->zero_detect == CONF_ZD_ON ? SCSI_ZD_ON : SCSI_ZD_OFF,
		.serial = cl->serial,
		.vendor = cl->vendor,
		.product = cl->product,
	};
	struct backstore *bs;
	struct scsi_lun *lun;
	char err[1024] = "";
	int rc;

	rc = backstore_open(&bs, &bp, err, sizeof(err));
	if (rc) {
		log_err("target %s LUN %u: %s%s", t->iqn, cl->lun, err[0] ? err : strerror(-rc),
			rc == -EROFS && getenv("INVOCATION_ID")
				? " (under systemd the unit's ProtectSystem=strict makes it read-only: "
				  "add its directory to ReadWritePaths= with `systemctl edit targetd`)"
				: "");
		return -1;
	}
	if (bs->size < bp.block_size) {
		log_err("target %s LUN %u: backstore smaller than one block", t->iqn, cl->lun);
		backstore_close(bs);
		return -1;
	}
	if (!strcmp(cl->backstore, "file") && cl->size) {
		struct stat st;

		if (!fstat(bs->fd, &st) && (uint64_t)st.st_size > bs->size)
			log_warn("target %s LUN %u: %s is %llu bytes, longer than size %llu: the LUN is "
				 "its first %llu bytes, the rest of the file is kept as it is",
				 t->iqn, cl->lun, cl->path, (unsigned long long)st.st_size,
				 (unsigned long long)bs->size, (unsigned long long)bs->size);
	}
	lp.nblocks = bs->size / bp.block_size;
	lp.hard_limit = conf_space_bytes(&cl->hard_limit, lp.nblocks * bp.block_size);
	lp.soft_threshold = conf_space_bytes(&cl->soft_threshold, lp.nblocks * bp.block_size);
	lp.pool_threshold_pct = (uint8_t)(bs->ops == &bs_file_ops ? target_pool_threshold : 0);
	lp.space_sample_ns = TARGET_SPACE_SAMPLE_NS;
	if (scsi_lun_create(&lun, &t->st, &lp, bs)) {
		log_err("target %s LUN %u: cannot create the logical unit", t->iqn, cl->lun);
		backstore_close(bs);
		return -1;
	}
	if (lp.zero_detect != SCSI_ZD_OFF && lun->zero_detect == SCSI_ZD_OFF)
		log_warn("target %s LUN %u: zero_detect is off: the %s backstore %s cannot "
			 "deallocate blocks that read back as zeroes", t->iqn, cl->lun,
			 cl->backstore, cl->path ? cl->path : "");

	atomic_store(&lun->offline, cl->offline);
	/* APTPL persistent reservations: a damaged state file costs only
	 * this LUN its registrations (and APTPL); the file is kept */
	rc = pr_lun_load(lun, target_pr_dir, err, sizeof(err));
	if (rc == PR_LOAD_BAD)
		log_err("target %s LUN %u: %s", t->iqn, cl->lun, err);
	else if (rc) {
		log_err("target %s LUN %u: %s", t->iqn, cl->lun, err);
		scsi_lun_destroy(lun);
		backstore_close(bs);
		return -1;
	}
	if (fault_config_lun(t, lun, cl)) {   /* its `faults` (targetd-faults(7)) */
		scsi_lun_destroy(lun);
		backstore_close(bs);
		return -1;
	}
	*out = lun;
	return 0;
}

int target_lun_build(struct iscsi_target *t, const struct conf_lun *cl)
{
	struct scsi_lun *lun;

	if (target_lun_open(t, cl, &lun))
		return -1;
	t->bs[cl->lun] = lun->bs;
	scsi_target_set_lun(&t->st, (uint16_t)cl->lun, lun);
	return 0;
}

int target_runtime_build(struct targetd_runtime *r, struct conf *c)
{
	memset(r, 0, sizeof(*r));
	r->conf = c;
	r->queue_depth = c->queue_depth ? c->queue_depth : 128;
	r->nop_interval = c->nop_interval;
	r->nop_timeout = c->nop_timeout ? c->nop_timeout : 30;
	r->login_timeout = c->login_timeout ? c->login_timeout : 15;
	r->res = c->limits;
	r->limits.max_recv_dsl = c->max_recv_data_segment_length;
	r->limits.max_burst = c->max_burst_length;
	r->limits.first_burst = c->first_burst_length;
	r->limits.max_outstanding_r2t = c->max_outstanding_r2t ? c->max_outstanding_r2t : 1;
	r->limits.max_connections = 8;
	r->limits.immediate_data = c->immediate_data;
	r->limits.initial_r2t = c->initial_r2t;
	r->limits.allow_crc32c = true;
	r->limits.require_crc32c = false;

	if (c->discovery_chap) {
		struct iscsi_target *d = &r->discovery_auth;

		d->chap = true;
		d->chap_user = xstrdup(c->discovery_chap->user);
		d->chap_secret = xstrdup(c->discovery_chap->secret);
		d->chap_mutual_user = xstrdup(c->discovery_chap->mutual_user);
		d->chap_mutual_secret = xstrdup(c->discovery_chap->mutual_secret);
	}
	target_pr_dir = c->state_dir;
	target_pool_threshold = c->pool_soft_threshold;
	pr_set_abort_handler(iscsi_pr_abort);
	/* Room for portals added at runtime: connections point at theirs. */
	r->cap_portals = MAX(c->n_listen * 2, 32u);
	r->portals = calloc(r->cap_portals, sizeof(*r->portals));
	/* Room for targets added by reload: a session keeps a pointer to its
	 * target, so the array never moves. */
	r->cap_targets = MAX(c->n_targets * 2, 64u);
	r->targets = calloc(r->cap_targets, sizeof(*r->targets));
	if (!r->portals || !r->targets)
		return -1;
	r->n_portals = c->n_listen;
	for (unsigned i = 0; i < c->n_listen; i++) {
		snprintf(r->portals[i].host, sizeof(r->portals[i].host), "%s", c->listen[i].host);
		snprintf(r->portals[i].port, sizeof(r->portals[i].port), "%s", c->listen[i].port);
		r->portals[i].tpgt = (uint16_t)(c->listen[i].tpgt ? c->listen[i].tpgt : 1);
		r->portals[i].fd = -1;
	}
	for (unsigned i = 0; i < c->n_targets; i++)
		if (target_add(r, &c->targets[i]))
			return -1;
	return 0;
}

int target_add(struct targetd_runtime *r, const struct conf_target *ct)
{
	unsigned i = r->n_targets;
	struct iscsi_target *t;

	if (i >= r->cap_targets) {
		log_err("target %s: no room for more targets (restart the daemon)", ct->iqn);
		return -1;
	}
	t = &r->targets[i];
	{
		snprintf(t->iqn, sizeof(t->iqn), "%s", ct->iqn);
		snprintf(t->alias, sizeof(t->alias), "%s", ct->alias ? ct->alias : "");
		t->has_acl = ct->has_acl || ct->n_initiators;
		t->n_initiators = ct->n_initiators;
		t->initiators = ct->initiators;
		if (ct->chap) {
			t->chap = true;
			t->chap_user = xstrdup(ct->chap->user);
			t->chap_secret = xstrdup(ct->chap->secret);
			t->chap_mutual_user = xstrdup(ct->chap->mutual_user);
			t->chap_mutual_secret = xstrdup(ct->chap->mutual_secret);
		}
		scsi_target_init(&t->st, t->iqn, (uint16_t)i);
		if (target_alua_init(r, t))
			return -1;
		__atomic_store_n(&r->n_targets, i + 1, __ATOMIC_RELEASE);
		for (unsigned k = 0; k < ct->n_luns; k++)
			if (target_lun_build(t, &ct->luns[k]))
				return -1;
		if (fault_config_target(t, ct))
			return -1;
	}
	return 0;
}

void target_runtime_flush(struct targetd_runtime *r)
{
	for (unsigned i = 0; i < r->n_targets; i++) {
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct backstore *bs = r->targets[i].bs[k];
			if (!bs || bs->read_only)
				continue;
			struct bs_io io = { .bs = bs, .op = BS_OP_FLUSH };
			if (backstore_sync_io(&io) < 0)
				log_warn("flush of %s failed", bs->path       ? bs->path
							       : bs->location ? bs->location : "memory LUN");
		}
	}
}

void target_runtime_free(struct targetd_runtime *r)
{
	for (unsigned i = 0; i < r->n_targets; i++) {
		struct iscsi_target *t = &r->targets[i];
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = scsi_target_lun(&t->st, k);
			if (lun) {
				scsi_target_set_lun(&t->st, (uint16_t)k, NULL);
				scsi_lun_destroy(lun);
			}
			if (t->bs[k])
				backstore_close(t->bs[k]);
		}
		scsi_target_destroy(&t->st);
		free(t->chap_user);
		free(t->chap_secret);
		free(t->chap_mutual_user);
		free(t->chap_mutual_secret);
	}
	free(r->targets);
	free(r->portals);
	free(r->discovery_auth.chap_user);
	free(r->discovery_auth.chap_secret);
	free(r->discovery_auth.chap_mutual_user);
	free(r->discovery_auth.chap_mutual_secret);
	memset(r, 0, sizeof(*r));
}

struct iscsi_target *target_find(const char *iqn)
{
	unsigned n = __atomic_load_n(&target_runtime->n_targets, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n; i++)
		if (!__atomic_load_n(&target_runtime->targets[i].removed, __ATOMIC_ACQUIRE) &&
		    !strcasecmp(target_runtime->targets[i].iqn, iqn))
			return &target_runtime->targets[i];
	return NULL;
}

bool target_initiator_allowed(const struct iscsi_target *t, const char *initiator)
{
	bool ok = false;

	if (__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE))
		return false;
	pthread_rwlock_rdlock(&target_acl_lock);
	if (!t->has_acl)
		ok = true;
	for (unsigned i = 0; !ok && i < t->n_initiators; i++)
		if (!strcasecmp(t->initiators[i], initiator))
			ok = true;
	pthread_rwlock_unlock(&target_acl_lock);
	return ok;
}
