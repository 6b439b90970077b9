/*
 * Fault injection: the control methods (targetctl fault ...), the rules of
 * the configuration, and the Prometheus samples.
 *
 *   fault.add   {"target":IQN,["lun":N,]"rule":{"action":"medium-error","lba":"100-199"}}
 *   fault.list  {["target":IQN[,"lun":N]]}
 *   fault.stats {["target":IQN[,"lun":N]]}
 *   fault.clear {["target":IQN[,"lun":N]][,"id":N | "name":NAME]}
 *
 * They are entries of the control socket's method table (control.c); a
 * rule refused answers JSON-RPC error 2 (CTL_E_INVALID) with one
 * "key: message" per fault in data.errors. A rule's values are read by
 * conf/fault.c, the same vocabulary as the configuration's `faults`
 * lists. A rule for SCSI commands goes on its LUN (or on every LUN of the
 * target when it names none), a connection rule into
 * targetd/fault_conn.c. Rules armed at runtime are not written to the
 * configuration file: they last until cleared, or until the daemon stops.
 * Every rule carries its origin (spec.origin): a reload whose faults
 * lists changed disarms the rules of the old file's list and arms the new
 * ones (fault_reload_*), never those armed at runtime.
 *
 * DESIGN (threads): the control thread (and the main thread while the
 * configuration is built or reloaded) changes rules, one at a time under
 * ctl_lock; every change of a LUN's rule set waits for a grace period
 * (net_synchronize) before the old set is freed (scsi/fault.h). Readers
 * of targets and LUNs hold reload_read_lock() like the other methods.
 */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <json-c/json.h>
#include "conf/fault.h"
#include "scsi/fault.h"
#include "scsi/pr.h"
#include "scsi/stats.h"
#include "targetd/reload.h"
#include "targetd/control_int.h"
#include "targetd/fault.h"
#include "targetd/net.h"
#include "targetd/target.h"

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned next_id = 1;

static struct scsi_lun *lun_of(struct iscsi_target *t, unsigned k)
{
	return scsi_target_lun(&t->st, k);
}

/* Count the SCSI rules that need the transport, over every LUN. */
static void count_xrule(const struct scsi_fault_rule *r, void *arg)
{
	struct { unsigned ids[SCSI_MAX_LUNS * 4]; unsigned n; } *seen = arg;

	if (!fault_spec_needs_transport(scsi_fault_rule_spec(r)))
		return;
	for (unsigned i = 0; i < seen->n; i++)
		if (seen->ids[i] == scsi_fault_rule_id(r))
			return;
	if (seen->n < ARRAY_SIZE(seen->ids))
		seen->ids[seen->n++] = scsi_fault_rule_id(r);
}

static void transport_refresh(void)
{
	struct { unsigned ids[SCSI_MAX_LUNS * 4]; unsigned n; } *seen = calloc(1, sizeof(*seen));

	if (!seen)
		return;
	for (unsigned i = 0; i < ctl_n_targets(); i++)
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = lun_of(&target_runtime->targets[i], k);

			if (lun && scsi_fault_armed(lun))
				scsi_fault_for_each(lun, count_xrule, seen);
		}
	fault_conn_scsi_rules(seen->n);
	free(seen);
}

/* Free old rule sets once no network thread can still read them. */
static void retire(struct scsi_fault_retired *ret)
{
	if (!ret->n)
		return;
	net_synchronize();
	scsi_fault_retired_free(ret);
}

/* ---- arming a rule ----------------------------------------------------- */

/* SCSI rules scope a path by its target portal group: a portal becomes
 * the tag of its group. */
static int portal_to_tpgt(struct fault_spec *s, char *err, size_t errlen)
{
	if (!s->portal[0])
		return 0;
	for (unsigned i = 0; i < target_runtime->n_portals; i++) {
		char name[80];

		fault_portal_name(&target_runtime->portals[i], name, sizeof(name));
		if (strcmp(name, s->portal))
			continue;
		if (s->tpgt >= 0 && s->tpgt != target_runtime->portals[i].tpgt) {
			snprintf(err, errlen, "portal %s is in portal group %u, not tpgt %d", s->portal,
				 target_runtime->portals[i].tpgt, s->tpgt);
			return -1;
		}
		s->tpgt = target_runtime->portals[i].tpgt;
		return 0;
	}
	snprintf(err, errlen, "portal %s is not one this daemon listens on", s->portal);
	return -1;
}

/* Arm a checked rule on target t: on lun (or every LUN, or the first for
 * an ALUA switch), or as a connection rule. Returns its id, 0 on error.
 * With ctl_lock held. */
static unsigned arm_locked(struct iscsi_target *t, struct conf_fault *f, char *err, size_t errlen,
			   struct json_object *luns_out)
{
	struct fault_spec s = f->spec;
	struct scsi_fault_retired ret = { .n = 0 };
	struct scsi_lun *done[SCSI_MAX_LUNS];
	unsigned n_done = 0, id = next_id;
	struct scsi_fault_rule *r;
	char text[512];
	const char *action = conf_fault_action_name(&s);

	conf_fault_format(f, text, sizeof(text));
	if (!fault_spec_is_scsi(&s)) {
		if (!fault_conn_add(t, &s, id, text, action, err, errlen))
			return 0;
		next_id++;
		return id;
	}
	if (portal_to_tpgt(&s, err, errlen))
		return 0;
	if (s.lun >= 0 && !lun_of(t, (unsigned)s.lun)) {
		snprintf(err, errlen, "target %s has no LUN %d", t->iqn, s.lun);
		return 0;
	}
	r = scsi_fault_rule_new(&s, id, text, action);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return 0;
	}
	for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
		struct scsi_lun *lun = lun_of(t, k);

		if (!lun || (s.lun >= 0 && (unsigned)s.lun != k))
			continue;
		if (ret.n == ARRAY_SIZE(ret.sets))
			retire(&ret);
		if (scsi_fault_add(lun, r, &ret, err, errlen))
			break;
		done[n_done++] = lun;
		if (luns_out)
			json_object_array_add(luns_out, json_object_new_int((int)k));
		if (s.action == FAULT_ALUA)
			break;   /* a target port group is the whole target's */
	}
	if (!n_done || err[0]) {
		/* refused somewhere: take it back from where it went */
		for (unsigned i = 0; i < n_done; i++) {
			if (ret.n == ARRAY_SIZE(ret.sets))
				retire(&ret);
			scsi_fault_remove(done[i], NULL, NULL, &ret);
		}
		retire(&ret);
		if (!n_done) {
			if (!err[0])
				snprintf(err, errlen, "target %s has no LUN", t->iqn);
			scsi_fault_rule_drop(r);
		}
		return 0;
	}
	retire(&ret);
	next_id++;
	if (fault_spec_needs_transport(&s))
		transport_refresh();
	return id;
}

/* The rule matched by id or label (clear). */
struct clear_sel {
	unsigned id;
	const char *name;
	const struct iscsi_target *t;
};

static bool clear_match(const struct scsi_fault_rule *r, void *arg)
{
	const struct clear_sel *sel = arg;

	if (sel->id && scsi_fault_rule_id(r) != sel->id)
		return false;
	return !sel->name || !strcmp(sel->name, scsi_fault_rule_label(r));
}

static bool clear_conn_match(unsigned id, const char *label, const struct iscsi_target *t,
			     const struct fault_spec *s, void *arg)
{
	const struct clear_sel *sel = arg;

	(void)s;
	if (sel->t && t && t != sel->t)
		return false;
	if (sel->id && id != sel->id)
		return false;
	return !sel->name || !strcmp(sel->name, label);
}

/* ---- the configuration -------------------------------------------------- */

static int config_arm(struct iscsi_target *t, struct conf_fault *fs, unsigned n)
{
	int rc = 0;

	pthread_mutex_lock(&ctl_lock);
	for (unsigned i = 0; i < n; i++) {
		char err[512] = "";

		if (!arm_locked(t, &fs[i], err, sizeof(err), NULL)) {
			log_err("%s:%d: faults: %s", target_runtime->conf && target_runtime->conf->file ? target_runtime->conf->file : "config",
				fs[i].spec.line, err);
			rc = -1;
		}
	}
	pthread_mutex_unlock(&ctl_lock);
	return rc;
}

/* Arm the rules of a LUN's faults list on lun; published: other threads
 * may already read it (old sets then wait for a grace period). Returns
 * how many could not be armed (logged as FILE:LINE: faults: ...). With
 * ctl_lock held. */
static unsigned arm_lun_locked(struct iscsi_target *t, struct scsi_lun *lun, const struct conf_lun *cl,
			       bool published)
{
	unsigned failed = 0;

	for (unsigned i = 0; i < cl->n_faults; i++) {
		struct conf_fault *f = &cl->faults[i];
		struct scsi_fault_retired ret = { .n = 0 };
		struct scsi_fault_rule *r;
		struct fault_spec s = f->spec;
		char text[512], err[512] = "";

		conf_fault_format(f, text, sizeof(text));
		if (portal_to_tpgt(&s, err, sizeof(err)) ||
		    !(r = scsi_fault_rule_new(&s, next_id, text, conf_fault_action_name(&s)))) {
			log_err("%s:%d: faults: %s", target_runtime->conf->file, s.line, err[0] ? err : "out of memory");
			failed++;
			continue;
		}
		if (scsi_fault_add(lun, r, &ret, err, sizeof(err))) {
			log_err("%s:%d: faults: target %s LUN %u: %s", target_runtime->conf->file, s.line, t->iqn, lun->id,
				err);
			scsi_fault_rule_drop(r);
			failed++;
		} else {
			next_id++;
		}
		if (published)
			retire(&ret);
		else
			scsi_fault_retired_free(&ret);   /* nobody reads an unpublished LUN */
	}
	return failed;
}

int fault_config_lun(struct iscsi_target *t, struct scsi_lun *lun, const struct conf_lun *cl)
{
	unsigned failed;

	if (!cl->n_faults)
		return 0;
	/* the LUN is not published yet: arm on it directly */
	pthread_mutex_lock(&ctl_lock);
	failed = arm_lun_locked(t, lun, cl, false);
	pthread_mutex_unlock(&ctl_lock);
	return failed ? -1 : 0;
}

int fault_config_target(struct iscsi_target *t, const struct conf_target *ct)
{
	int rc = ct->n_faults ? config_arm(t, ct->faults, ct->n_faults) : 0;
	bool any = ct->n_faults;

	for (unsigned k = 0; k < ct->n_luns; k++)
		any |= ct->luns[k].n_faults != 0;
	if (any) {
		pthread_mutex_lock(&ctl_lock);
		transport_refresh();
		pthread_mutex_unlock(&ctl_lock);
	}
	return rc;
}

bool fault_config_equal(const struct conf_fault *a, unsigned na, const struct conf_fault *b, unsigned nb)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++) {
		char x[512], y[512];

		conf_fault_format(&a[i], x, sizeof(x));
		conf_fault_format(&b[i], y, sizeof(y));
		if (strcmp(x, y))
			return false;
	}
	return true;
}

/* ---- reload --------------------------------------------------------- */

static bool origin_match(const struct scsi_fault_rule *r, void *arg)
{
	return scsi_fault_rule_spec(r)->origin == *(const enum fault_origin *)arg;
}

struct conn_origin {
	const struct iscsi_target *t;
	enum fault_origin origin;
};

static bool conn_origin_match(unsigned id, const char *label, const struct iscsi_target *t,
			      const struct fault_spec *s, void *arg)
{
	const struct conn_origin *o = arg;

	(void)id;
	(void)label;
	return t == o->t && s->origin == o->origin;
}

struct origin_count {
	int origin;         /* enum fault_origin, -1: every rule */
	unsigned n;
};

static void count_origin(const struct scsi_fault_rule *r, void *arg)
{
	struct origin_count *c = arg;

	c->n += c->origin < 0 || (int)scsi_fault_rule_spec(r)->origin == c->origin;
}

/* Rules on lun from origin (-1: all). */
static unsigned lun_rules(struct scsi_lun *lun, int origin)
{
	struct origin_count c = { origin, 0 };

	scsi_fault_for_each(lun, count_origin, &c);
	return c.n;
}

static bool portal_listened(const char *portal)
{
	for (unsigned i = 0; i < target_runtime->n_portals; i++) {
		char name[80];

		fault_portal_name(&target_runtime->portals[i], name, sizeof(name));
		if (!strcmp(name, portal))
			return true;
	}
	return false;
}

/* Could rule f of the file (at key) be armed on fr->t once the reload is
 * applied? Counts into added[k] the rules each LUN gets. 0, or -1 with
 * err = "FILE:LINE: KEY: message" (what arm_locked() would refuse). */
static int check_rule(const struct fault_reload *fr, const struct conf_fault *f, const char *key,
		      const char *file, unsigned *added, char *err, size_t errlen)
{
	struct fault_spec s = f->spec;
	const struct scsi_target *st = &fr->t->st;
	const char *bad = NULL;
	char msg[400] = "";
	bool any = false;

	if (!fault_spec_is_scsi(&s)) {
		if (s.portal[0] && !portal_listened(s.portal)) {
			snprintf(msg, sizeof(msg), "portal %s is not one this daemon listens on", s.portal);
			bad = "portal";
		}
	} else if (portal_to_tpgt(&s, msg, sizeof(msg))) {
		bad = "portal";
	}
	for (unsigned k = 0; fault_spec_is_scsi(&s) && !msg[0] && k < SCSI_MAX_LUNS; k++) {
		struct scsi_lun *lun = fr->after[k];

		if (!lun || (s.lun >= 0 && (unsigned)s.lun != k))
			continue;
		any = true;
		if (s.action == FAULT_CAPACITY &&
		    (!(s.size_bytes >> lun->block_shift) || (lun->bs && s.size_bytes > lun->bs->size))) {
			snprintf(msg, sizeof(msg), "%llu bytes: from one block (%u bytes) up to LUN %u's %llu bytes",
				 (unsigned long long)s.size_bytes, lun->block_size, k,
				 (unsigned long long)(lun->bs ? lun->bs->size : 0));
			bad = "size";
			break;
		}
		added[k]++;
		if (s.action != FAULT_ALUA)
			continue;
		if (!st->priv_alua)
			snprintf(msg, sizeof(msg), "target %s has no ALUA port groups (portal_groups in "
				 "targetd.conf(5))", fr->t->iqn);
		else if (!alua_group_exists(st, s.alua_tpgt))
			snprintf(msg, sizeof(msg), "target %s has no target port group %u", fr->t->iqn,
				 s.alua_tpgt);
		bad = msg[0] ? "tpgt" : NULL;
		break;   /* a target port group is the whole target's */
	}
	if (fault_spec_is_scsi(&s) && !any && !msg[0]) {
		if (s.lun >= 0)
			snprintf(msg, sizeof(msg), "target %s has no LUN %d", fr->t->iqn, s.lun);
		else
			snprintf(msg, sizeof(msg), "target %s has no LUN", fr->t->iqn);
		bad = s.lun >= 0 && s.origin == FAULT_FROM_TARGET ? "lun" : NULL;
	}
	if (!msg[0])
		return 0;
	snprintf(err, errlen, "%s:%d: %s%s%s: %s", file, s.line, key, bad ? "." : "", bad ? bad : "", msg);
	return -1;
}

/* The connection rules and each LUN's rules, with the file's new ones in
 * place of the old ones: within FAULT_MAX_RULES? */
static int check_room(const struct fault_reload *fr, const char *file, const unsigned *added,
		      char *err, size_t errlen)
{
	const struct conf_target *ct = fr->ct;
	unsigned conn = 0;

	for (unsigned i = 0; fr->target && i < ct->n_faults; i++)
		conn += !fault_spec_is_scsi(&ct->faults[i].spec);
	if (conn) {
		struct conn_origin o = { fr->t, FAULT_FROM_TARGET };
		unsigned stay = fault_conn_count(NULL, NULL) - fault_conn_count(conn_origin_match, &o);

		if (stay + conn > FAULT_MAX_RULES) {
			snprintf(err, errlen, "%s:%d: targets[%u].faults: %u connection rules with the %u armed "
				 "now; at most %d (targetctl fault clear)", file, ct->line, fr->ct_index,
				 conn, stay, FAULT_MAX_RULES);
			return -1;
		}
	}
	for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
		struct scsi_lun *lun = fr->after[k];
		unsigned stay;

		if (!lun || !added[k])
			continue;
		stay = lun_rules(lun, -1);
		if (fr->target)
			stay -= lun_rules(lun, FAULT_FROM_TARGET);
		if (fr->luns[k])
			stay -= lun_rules(lun, FAULT_FROM_LUN);
		if (stay + added[k] > FAULT_MAX_RULES) {
			snprintf(err, errlen, "%s:%d: targets[%u].faults: LUN %u would have %u rules with the "
				 "%u armed now; at most %d (targetctl fault clear)", file, ct->line,
				 fr->ct_index, k, added[k], stay, FAULT_MAX_RULES);
			return -1;
		}
	}
	return 0;
}

int fault_reload_check(const struct fault_reload *fr, const char *file, char *err, size_t errlen)
{
	const struct conf_target *ct = fr->ct;
	unsigned *added = calloc(SCSI_MAX_LUNS, sizeof(*added));
	char key[128];
	int rc = 0;

	if (!added) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_lock(&ctl_lock);
	for (unsigned i = 0; fr->target && !rc && i < ct->n_faults; i++) {
		snprintf(key, sizeof(key), "targets[%u].faults[%u]", fr->ct_index, i);
		rc = check_rule(fr, &ct->faults[i], key, file, added, err, errlen);
	}
	for (unsigned j = 0; !rc && j < ct->n_luns; j++) {
		const struct conf_lun *cl = &ct->luns[j];

		for (unsigned i = 0; fr->luns[cl->lun] && !rc && i < cl->n_faults; i++) {
			snprintf(key, sizeof(key), "targets[%u].luns[%u].faults[%u]", fr->ct_index, j, i);
			rc = check_rule(fr, &cl->faults[i], key, file, added, err, errlen);
		}
	}
	if (!rc)
		rc = check_room(fr, file, added, err, errlen);
	pthread_mutex_unlock(&ctl_lock);
	free(added);
	return rc;
}

/* The ids of the rules from one origin (a target-wide rule is on every
 * LUN: counted once). */
struct id_collect {
	enum fault_origin o;
	unsigned *ids;
	unsigned n, cap;
};

static void collect_origin(const struct scsi_fault_rule *r, void *arg)
{
	struct id_collect *c = arg;
	unsigned id = scsi_fault_rule_id(r);

	if (scsi_fault_rule_spec(r)->origin != c->o)
		return;
	for (unsigned i = 0; i < c->n; i++)
		if (c->ids[i] == id)
			return;
	if (c->n < c->cap)
		c->ids[c->n++] = id;
}

void fault_reload_lun(struct iscsi_target *t, struct scsi_lun *lun, const struct conf_lun *cl,
		      struct fault_reload_result *res)
{
	const enum fault_origin o = FAULT_FROM_LUN;
	struct scsi_fault_retired ret = { .n = 0 };

	pthread_mutex_lock(&ctl_lock);
	res->disarmed = scsi_fault_remove(lun, origin_match, (void *)&o, &ret);
	retire(&ret);
	res->failed = arm_lun_locked(t, lun, cl, true);
	res->armed = cl->n_faults - res->failed;
	transport_refresh();
	pthread_mutex_unlock(&ctl_lock);
}

void fault_reload_target(struct iscsi_target *t, const struct conf_target *ct,
			 struct fault_reload_result *res)
{
	const enum fault_origin o = FAULT_FROM_TARGET;
	struct conn_origin co = { t, FAULT_FROM_TARGET };
	unsigned ids[FAULT_MAX_RULES * 4], n_ids = 0;

	memset(res, 0, sizeof(*res));
	pthread_mutex_lock(&ctl_lock);
	for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
		struct scsi_lun *l = lun_of(t, k);
		struct scsi_fault_retired ret = { .n = 0 };
		struct id_collect c = { o, ids, n_ids, ARRAY_SIZE(ids) };

		if (!l || !scsi_fault_armed(l))
			continue;
		scsi_fault_for_each(l, collect_origin, &c);
		n_ids = c.n;
		scsi_fault_remove(l, origin_match, (void *)&o, &ret);
		retire(&ret);
	}
	res->disarmed = n_ids + fault_conn_remove(conn_origin_match, &co);
	for (unsigned i = 0; i < ct->n_faults; i++) {
		char err[512] = "";

		if (arm_locked(t, &ct->faults[i], err, sizeof(err), NULL)) {
			res->armed++;
		} else {
			log_err("%s:%d: faults: %s", target_runtime->conf && target_runtime->conf->file ?
				target_runtime->conf->file : "config", ct->faults[i].spec.line, err);
			res->failed++;
		}
	}
	transport_refresh();
	pthread_mutex_unlock(&ctl_lock);
}

/* ---- listing -------------------------------------------------------- */

struct list_ctx {
	struct json_object *arr;
	const char *iqn;
	unsigned lun;
	bool counts_only;
};

static struct json_object *find_id(struct json_object *arr, unsigned id)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *o = json_object_array_get_idx(arr, i), *v;

		if (json_object_object_get_ex(o, "id", &v) && (unsigned)json_object_get_int(v) == id)
			return o;
	}
	return NULL;
}

static void list_one(const struct scsi_fault_rule *r, void *arg)
{
	struct list_ctx *x = arg;
	struct json_object *o = find_id(x->arr, scsi_fault_rule_id(r)), *luns;
	struct scsi_fault_counts c;

	if (o) {
		/* a target-wide rule: one entry, every LUN it is on */
		if (json_object_object_get_ex(o, "luns", &luns))
			json_object_array_add(luns, json_object_new_int((int)x->lun));
		return;
	}
	scsi_fault_rule_counts(r, &c);
	o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int((int)scsi_fault_rule_id(r)));
	json_object_object_add(o, "name", json_object_new_string(scsi_fault_rule_label(r)));
	json_object_object_add(o, "target", json_object_new_string(x->iqn));
	luns = json_object_new_array();
	json_object_array_add(luns, json_object_new_int((int)x->lun));
	json_object_object_add(o, "luns", luns);
	json_object_object_add(o, "kind", json_object_new_string("scsi"));
	if (!x->counts_only)
		json_object_object_add(o, "rule", json_object_new_string(scsi_fault_rule_text(r)));
	json_object_object_add(o, "matched", json_object_new_uint64(c.matched));
	json_object_object_add(o, "injected", json_object_new_uint64(c.injected));
	if (scsi_fault_rule_spec(r)->after_bytes)
		json_object_object_add(o, "bytes", json_object_new_uint64(c.bytes));
	json_object_array_add(x->arr, o);
}

struct conn_list_ctx {
	struct json_object *arr;
	const struct iscsi_target *t;
	bool counts_only;
};

static void list_conn_one(unsigned id, const char *label, const char *text, const struct iscsi_target *t,
			  uint64_t matched, uint64_t injected, void *arg)
{
	struct conn_list_ctx *x = arg;
	struct json_object *o;

	if (x->t && t != x->t)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int((int)id));
	json_object_object_add(o, "name", json_object_new_string(label));
	json_object_object_add(o, "target", t ? json_object_new_string(t->iqn) : NULL);
	json_object_object_add(o, "kind", json_object_new_string("connection"));
	if (!x->counts_only)
		json_object_object_add(o, "rule", json_object_new_string(text));
	json_object_object_add(o, "matched", json_object_new_uint64(matched));
	json_object_object_add(o, "injected", json_object_new_uint64(injected));
	json_object_array_add(x->arr, o);
}

static int sort_by_id(const void *a, const void *b)
{
	struct json_object *const *x = a, *const *y = b, *u, *v;

	json_object_object_get_ex(*x, "id", &u);
	json_object_object_get_ex(*y, "id", &v);
	return json_object_get_int(u) - json_object_get_int(v);
}

/* The request's target (required: need_t) and LUN (-1: none); false with
 * err set when they are not there. */
static bool req_scope(struct json_object *p, bool need_t, struct iscsi_target **t, int *lun,
		      struct ctl_err *err)
{
	const char *iqn = NULL;
	uint64_t l;

	*t = NULL;
	*lun = -1;
	if (ctl_str(p, "target", need_t, &iqn, err) && !(*t = target_find(iqn))) {
		ctl_fail(err, CTL_E_NOT_FOUND, "no target %s (targetctl targets lists them)", iqn);
		return false;
	}
	if (ctl_failed(err))
		return false;
	if (!ctl_uint(p, "lun", false, SCSI_MAX_LUNS - 1, &l, err))
		return !ctl_failed(err);
	if (!*t) {
		ctl_fail(err, CTL_E_PARAMS, "parameter \"lun\" needs \"target\"");
		return false;
	}
	if (!lun_of(*t, (unsigned)l)) {
		ctl_fail(err, CTL_E_NOT_FOUND, "target %s has no LUN %llu", (*t)->iqn,
			 (unsigned long long)l);
		return false;
	}
	*lun = (int)l;
	return true;
}

/* Every rule of the scope, sorted by id. Under reload_read_lock(). */
static struct json_object *rules_json(struct iscsi_target *only, int lun, bool counts_only)
{
	struct json_object *arr = json_object_new_array();

	for (unsigned i = 0; i < ctl_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (!ctl_target_live(t) || (only && t != only))
			continue;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *l = lun_of(t, k);
			struct list_ctx x = { arr, t->iqn, k, counts_only };

			if (l && (lun < 0 || (unsigned)lun == k))
				scsi_fault_for_each(l, list_one, &x);
		}
	}
	if (lun < 0) {
		struct conn_list_ctx cx = { arr, only, counts_only };

		fault_conn_for_each(list_conn_one, &cx);
	}
	json_object_array_sort(arr, sort_by_id);
	return arr;
}

struct json_object *fault_list(struct json_object *p, struct ctl_err *err)
{
	struct iscsi_target *only;
	struct json_object *arr = NULL;
	int lun;

	reload_read_lock();
	if (req_scope(p, false, &only, &lun, err))
		arr = rules_json(only, lun, false);
	reload_read_unlock();
	return arr;
}

/* Per LUN of the scope: the faults its statistics counted. */
static struct json_object *luns_json(struct iscsi_target *only, int lun)
{
	struct json_object *luns = json_object_new_array();
	struct scsi_stats_counters *c = malloc(sizeof(*c));

	for (unsigned i = 0; c && i < ctl_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (!ctl_target_live(t) || (only && t != only))
			continue;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *l = lun_of(t, k);
			struct json_object *o;

			if (!l || (lun >= 0 && (unsigned)lun != k))
				continue;
			scsi_stats_snapshot(l, c);
			o = json_object_new_object();
			jadd(o, "target", json_object_new_string(t->iqn));
			jadd(o, "lun", json_object_new_int((int)k));
			jadd(o, "faults_injected", ju64(c->faults));
			json_object_array_add(luns, o);
		}
	}
	free(c);
	return luns;
}

struct json_object *fault_stats(struct json_object *p, struct ctl_err *err)
{
	struct iscsi_target *only;
	struct json_object *res = NULL;
	int lun;

	reload_read_lock();
	if (req_scope(p, false, &only, &lun, err)) {
		res = json_object_new_object();
		jadd(res, "rules", rules_json(only, lun, true));
		jadd(res, "held", json_object_new_int((int)scsi_fault_held()));
		jadd(res, "luns", luns_json(only, lun));
	}
	reload_read_unlock();
	return res;
}

/* A JSON value as the text conf/fault.c reads. */
static const char *value_text(struct json_object *v, char *buf, size_t len)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
		return json_object_get_string(v);
	case json_type_int:
		snprintf(buf, len, "%lld", (long long)json_object_get_int64(v));
		return buf;
	case json_type_double:
		snprintf(buf, len, "%.17g", json_object_get_double(v));
		return buf;
	default:
		return NULL;
	}
}

/* Read the rule object into f; false with the reasons in errors. */
static bool rule_read(struct json_object *rule, int lun, struct conf_fault *f,
		      struct json_object *errors)
{
	char msg[600], e[512] = "", n[16];
	const char *bad;

	conf_fault_init(f);
	json_object_object_foreach(rule, k, v) {
		char buf[64];
		const char *val = value_text(v, buf, sizeof(buf));

		if (!val)
			snprintf(e, sizeof(e), "must be a string or a number");
		else if (!conf_fault_set(f, k, val, e, sizeof(e)))
			continue;
		snprintf(msg, sizeof(msg), "%s: %s", k, e);
		json_object_array_add(errors, json_object_new_string(msg));
	}
	if (lun >= 0 && !json_object_array_length(errors)) {
		snprintf(n, sizeof(n), "%d", lun);
		if (conf_fault_has_key(f, "lun"))
			json_object_array_add(errors, json_object_new_string(
							      "lun: given twice (as a parameter and in the rule)"));
		else if (conf_fault_set(f, "lun", n, e, sizeof(e)))
			json_object_array_add(errors, json_object_new_string(e));
	}
	if (!json_object_array_length(errors) && conf_fault_finish(f, e, sizeof(e), &bad)) {
		snprintf(msg, sizeof(msg), "%s%s%s", bad ? bad : "", bad ? ": " : "", e);
		json_object_array_add(errors, json_object_new_string(msg));
	}
	return !json_object_array_length(errors);
}

/* Fail with the reasons a rule was refused (data.errors). */
static struct json_object *refuse(struct ctl_err *err, int code, struct json_object *errors)
{
	struct json_object *data = json_object_new_object();
	size_t n = json_object_array_length(errors);

	ctl_fail(err, code, "the rule was refused (%zu problem%s; targetd-faults(7)):", n, n == 1 ? "" : "s");
	jadd(data, "errors", errors);
	if (err->code == code && !err->data)
		err->data = data;
	else
		json_object_put(data);
	return NULL;
}

struct json_object *fault_add(struct json_object *p, struct ctl_err *err)
{
	struct json_object *rule = NULL, *errors, *res, *luns;
	struct iscsi_target *t;
	struct conf_fault f;
	char msg[600], e[512] = "";
	unsigned id;
	int lun;

	if (!json_object_object_get_ex(p, "rule", &rule) || !json_object_is_type(rule, json_type_object))
		return ctl_fail(err, CTL_E_PARAMS,
				"parameter \"rule\" is required: an object {KEY: VALUE, ...} "
				"(targetd-faults(7))");
	reload_read_lock();
	if (!req_scope(p, true, &t, &lun, err)) {
		reload_read_unlock();
		return NULL;
	}
	errors = json_object_new_array();
	if (!rule_read(rule, lun, &f, errors)) {
		reload_read_unlock();
		return refuse(err, CTL_E_INVALID, errors);
	}
	luns = json_object_new_array();
	pthread_mutex_lock(&ctl_lock);
	id = arm_locked(t, &f, e, sizeof(e), luns);
	pthread_mutex_unlock(&ctl_lock);
	reload_read_unlock();
	if (!id) {
		json_object_put(luns);
		json_object_array_add(errors, json_object_new_string(e));
		return refuse(err, CTL_E_REFUSED, errors);
	}
	json_object_put(errors);
	conf_fault_format(&f, msg, sizeof(msg));
	res = json_object_new_object();
	jadd(res, "id", json_object_new_int((int)id));
	if (f.spec.name[0]) {
		jadd(res, "name", json_object_new_string(f.spec.name));
	} else {
		snprintf(e, sizeof(e), "rule%u", id);
		jadd(res, "name", json_object_new_string(e));
	}
	jadd(res, "target", json_object_new_string(t->iqn));
	if (json_object_array_length(luns))
		jadd(res, "luns", luns);
	else
		json_object_put(luns);
	jadd(res, "rule", json_object_new_string(msg));
	return res;
}

/* Remember the ids of lun's rules that sel matches (a target-wide rule is
 * on many LUNs: counted once). */
static void clear_collect(struct scsi_lun *l, const char *iqn, unsigned k, const struct clear_sel *sel,
			  unsigned *ids, unsigned *n, unsigned cap)
{
	struct json_object *arr = json_object_new_array();
	struct list_ctx x = { arr, iqn, k, true };

	scsi_fault_for_each(l, list_one, &x);
	for (size_t j = 0; j < json_object_array_length(arr); j++) {
		struct json_object *o = json_object_array_get_idx(arr, j), *idv, *nm;
		unsigned id;
		bool dup = false;

		json_object_object_get_ex(o, "id", &idv);
		json_object_object_get_ex(o, "name", &nm);
		id = (unsigned)json_object_get_int(idv);
		if ((sel->id && id != sel->id) || (sel->name && strcmp(sel->name, json_object_get_string(nm))))
			continue;
		for (unsigned q = 0; q < *n; q++)
			dup |= ids[q] == id;
		if (!dup && *n < cap)
			ids[(*n)++] = id;
	}
	json_object_put(arr);
}

struct json_object *fault_clear(struct json_object *p, struct ctl_err *err)
{
	struct json_object *res;
	struct clear_sel sel = { 0, NULL, NULL };
	struct iscsi_target *only;
	unsigned gone, seen_ids[FAULT_MAX_RULES * 4], n_seen = 0;
	uint64_t id;
	int lun;

	if (ctl_uint(p, "id", false, UINT32_MAX, &id, err)) {
		if (!id)
			return ctl_fail(err, CTL_E_PARAMS,
					"parameter \"id\" must be a rule number (targetctl fault list)");
		sel.id = (unsigned)id;
	}
	if (!ctl_failed(err))
		ctl_str(p, "name", false, &sel.name, err);
	if (ctl_failed(err))
		return NULL;
	reload_read_lock();
	if (!req_scope(p, false, &only, &lun, err)) {
		reload_read_unlock();
		return NULL;
	}
	sel.t = only;
	pthread_mutex_lock(&ctl_lock);
	for (unsigned i = 0; i < ctl_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (only && t != only)
			continue;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *l = lun_of(t, k);
			struct scsi_fault_retired ret = { .n = 0 };

			if (!l || (lun >= 0 && (unsigned)lun != k) || !scsi_fault_armed(l))
				continue;
			clear_collect(l, t->iqn, k, &sel, seen_ids, &n_seen, ARRAY_SIZE(seen_ids));
			scsi_fault_remove(l, clear_match, &sel, &ret);
			retire(&ret);
		}
	}
	gone = n_seen;
	if (lun < 0)
		gone += fault_conn_remove(clear_conn_match, &sel);
	transport_refresh();
	pthread_mutex_unlock(&ctl_lock);
	reload_read_unlock();
	res = json_object_new_object();
	jadd(res, "cleared", json_object_new_int((int)gone));
	return res;
}

/* ---- metrics ------------------------------------------------------------ */

static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

struct metrics_ctx {
	FILE *f;
	const char *iqn;
	unsigned lun;
	unsigned ids[FAULT_MAX_RULES * 4];
	unsigned n;
};

/* targetd_faults_injected_total{target=IQN,rule=NAME,action=ACTION}: the
 * action in snake_case like every label value of /metrics
 * ("medium-error" -> "medium_error"); a connection rule of every target
 * has no target label. */
static void metric_sample(FILE *f, const char *iqn, const char *rule, const char *action,
			  uint64_t v)
{
	fputs("targetd_faults_injected_total{", f);
	if (iqn && *iqn) {
		fputs("target=\"", f);
		put_label(f, iqn);
		fputs("\",", f);
	}
	fputs("rule=\"", f);
	put_label(f, rule);
	fputs("\",action=\"", f);
	for (const char *a = action; *a; a++)
		fputc(*a == '-' ? '_' : *a, f);
	fprintf(f, "\"} %llu\n", (unsigned long long)v);
}

static void metric_one(const struct scsi_fault_rule *r, void *arg)
{
	struct metrics_ctx *m = arg;
	struct scsi_fault_counts c;

	for (unsigned i = 0; i < m->n; i++)
		if (m->ids[i] == scsi_fault_rule_id(r))
			return;   /* a target-wide rule: once */
	if (m->n < ARRAY_SIZE(m->ids))
		m->ids[m->n++] = scsi_fault_rule_id(r);
	scsi_fault_rule_counts(r, &c);
	metric_sample(m->f, m->iqn, scsi_fault_rule_label(r),
		      conf_fault_action_name(scsi_fault_rule_spec(r)), c.injected);
}

static void metric_conn(unsigned id, const char *label, const char *text, const struct iscsi_target *t,
			uint64_t matched, uint64_t injected, void *arg)
{
	struct metrics_ctx *m = arg;
	char action[64];
	const char *a = strstr(text, "action=");   /* names hold no '=' */

	(void)id;
	(void)matched;
	snprintf(action, sizeof(action), "%s", a ? a + 7 : "unknown");
	action[strcspn(action, " ")] = 0;
	metric_sample(m->f, t ? t->iqn : NULL, label, action, injected);
}

/* Called by metrics.c under reload_read_lock(). */
void fault_metrics(FILE *f)
{
	struct metrics_ctx *m = calloc(1, sizeof(*m));

	if (!m)
		return;
	m->f = f;
	fprintf(f, "# HELP targetd_faults_injected_total Fault injections, by rule (targetd-faults(7)).\n"
		   "# TYPE targetd_faults_injected_total counter\n");
	for (unsigned i = 0; i < ctl_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE))
			continue;
		m->iqn = t->iqn;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *l = lun_of(t, k);

			if (l && scsi_fault_armed(l))
				scsi_fault_for_each(l, metric_one, m);
		}
	}
	fault_conn_for_each(metric_conn, m);
	fprintf(f, "# HELP targetd_fault_commands_held Commands held by latency and stall rules now.\n"
		   "# TYPE targetd_fault_commands_held gauge\ntargetd_fault_commands_held %u\n",
		scsi_fault_held());
	free(m);
}
