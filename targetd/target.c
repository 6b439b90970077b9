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
#include "backstore/backstore.h"
#include "targetd/target.h"

struct targetd_runtime *rt;

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int build_lun(struct iscsi_target *t, const struct conf_lun *cl)
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
	};
	struct scsi_lun_params lp = {
		.id = (uint16_t)cl->lun,
		.block_size = bp.block_size,
		.read_only = cl->read_only,
		.removable = cl->removable,
		.thin = cl->thin,
		.sanitize = cl->sanitize,
		.serial = cl->serial,
		.vendor = cl->vendor,
		.product = cl->product,
	};
	struct backstore *bs;
	struct scsi_lun *lun;
	char err[256] = "";
	int rc;

	rc = backstore_open(&bs, &bp, err, sizeof(err));
	if (rc) {
		log_err("target %s LUN %u: %s", t->iqn, cl->lun, err[0] ? err : strerror(-rc));
		return -1;
	}
	if (bs->size < bp.block_size) {
		log_err("target %s LUN %u: backstore smaller than one block", t->iqn, cl->lun);
		backstore_close(bs);
		return -1;
	}
	lp.nblocks = bs->size / bp.block_size;
	if (scsi_lun_create(&lun, &t->st, &lp, bs)) {
		log_err("target %s LUN %u: cannot create the logical unit", t->iqn, cl->lun);
		backstore_close(bs);
		return -1;
	}
	t->bs[cl->lun] = bs;
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
	r->limits.max_recv_dsl = c->max_recv_data_segment_length;
	r->limits.max_burst = c->max_burst_length;
	r->limits.first_burst = c->first_burst_length;
	r->limits.max_outstanding_r2t = c->max_outstanding_r2t ? c->max_outstanding_r2t : 1;
	r->limits.max_connections = 8;
	r->limits.immediate_data = c->immediate_data;
	r->limits.initial_r2t = c->initial_r2t;
	r->limits.allow_crc32c = true;
	r->limits.require_crc32c = false;

	r->portals = calloc(c->n_listen, sizeof(*r->portals));
	r->targets = calloc(c->n_targets ? c->n_targets : 1, sizeof(*r->targets));
	if (!r->portals || !r->targets)
		return -1;
	r->n_portals = c->n_listen;
	for (unsigned i = 0; i < c->n_listen; i++) {
		snprintf(r->portals[i].host, sizeof(r->portals[i].host), "%s", c->listen[i].host);
		snprintf(r->portals[i].port, sizeof(r->portals[i].port), "%s", c->listen[i].port);
		r->portals[i].tpgt = (uint16_t)(c->listen[i].tpgt ? c->listen[i].tpgt : 1);
		r->portals[i].fd = -1;
	}
	for (unsigned i = 0; i < c->n_targets; i++) {
		const struct conf_target *ct = &c->targets[i];
		struct iscsi_target *t = &r->targets[i];

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
		r->n_targets++;
		for (unsigned k = 0; k < ct->n_luns; k++)
			if (build_lun(t, &ct->luns[k]))
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
				log_warn("flush of %s failed", bs->path ? bs->path : "memory LUN");
		}
	}
}

void target_runtime_free(struct targetd_runtime *r)
{
	for (unsigned i = 0; i < r->n_targets; i++) {
		struct iscsi_target *t = &r->targets[i];
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = t->st.luns[k];
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
	memset(r, 0, sizeof(*r));
}

struct iscsi_target *target_find(const char *iqn)
{
	for (unsigned i = 0; i < rt->n_targets; i++)
		if (!strcasecmp(rt->targets[i].iqn, iqn))
			return &rt->targets[i];
	return NULL;
}

bool target_initiator_allowed(const struct iscsi_target *t, const char *initiator)
{
	if (!t->has_acl)
		return true;
	for (unsigned i = 0; i < t->n_initiators; i++)
		if (!strcasecmp(t->initiators[i], initiator))
			return true;
	return false;
}
