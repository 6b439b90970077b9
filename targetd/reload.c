/*
 * Configuration reload (targetctl reload, SIGHUP): re-read the file the
 * daemon was started with, validate it whole, and apply the difference
 * without disturbing what did not change.
 *
 *   targets added          built and published (discovery and login see them)
 *   targets removed        hidden from login and discovery, their sessions
 *                          closed, their LUNs removed as below
 *   LUN added              published; REPORTED LUNS DATA HAS CHANGED for
 *                          every I_T nexus of the target
 *   LUN removed            unpublished (REPORTED LUNS DATA HAS CHANGED),
 *                          freed once nothing can still use it
 *   LUN grown (size)       backstore grown (a file is extended, never cut;
 *                          an RBD image is grown where it is shorter),
 *                          CAPACITY DATA HAS CHANGED for every nexus
 *   LUN shrunk (size)      refused: a reload never shrinks a LUN nor cuts
 *                          its file (targetctl lun resize --shrink --force
 *                          is the one way, and says it destroys data)
 *   LUN faults changed     the LUN stays (not reopened): the rules its old
 *                          faults list armed are disarmed, the new ones armed
 *   target faults changed  the same for the target's own faults list
 *                          (rules armed with `targetctl fault add` stay)
 *   LUN otherwise changed  replaced: removed and added under the same id
 *   ACL / CHAP / alias     changed for new logins; sessions of initiators no
 *                          longer allowed are closed
 *   global keys            reported as needing a restart
 *
 * DESIGN (threads): reloads are serialised by reload_mutex (SIGHUP runs on
 * the main thread, `targetctl reload` on the control thread). Everything
 * that can fail (parsing, validation, opening new backstores, growing
 * files) happens before the first change; then the changes are made under
 * the write side of runtime_lock, which the control and metrics threads
 * take for reading while they walk the targets. Network threads never take
 * it: they read LUN pointers with acquire loads, and a removed LUN is freed
 * only after (1) it is unpublished, (2) every network thread passed a
 * quiescent point (net_synchronize: nobody still holds a pointer loaded
 * before), and (3) no command holds it any more (scsi_stats_lun_busy: each
 * command holds its LUN from parse until its task is released, its last
 * transmit slot sent). A LUN still busy after
 * RELOAD_DRAIN_MS is left allocated (logged) rather than freed under a
 * command. Old configurations are freed after net_synchronize too (ACL
 * strings point into them; logins read them under the ACL lock).
 */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include "backstore/backstore.h"
#include "scsi/stats.h"
#include "targetd/session.h"
#include "targetd/fault.h"
#include "targetd/reload.h"
#include "targetd/net.h"
#include "targetd/target.h"

#define RELOAD_DRAIN_MS 30000

static pthread_mutex_t reload_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t runtime_lock = PTHREAD_RWLOCK_INITIALIZER;
static const char *reload_file;
static struct conf *conf_running;      /* what target_runtime->conf points to */
static struct conf *conf_allocated;    /* conf_running if reload allocated it */
static char *running_text;             /* the text conf_running was built from */
static struct conf_overrides overrides; /* the command line's, put over every file */
static unsigned reloads;

void reload_read_lock(void) { pthread_rwlock_rdlock(&runtime_lock); }
void reload_read_unlock(void) { pthread_rwlock_unlock(&runtime_lock); }
unsigned reload_count(void) { return __atomic_load_n(&reloads, __ATOMIC_RELAXED); }
const char *reload_config_file(void) { return reload_file; }
void reload_lock(void) { pthread_mutex_lock(&reload_mutex); }
void reload_unlock(void) { pthread_mutex_unlock(&reload_mutex); }
const char *reload_running_text(void) { return running_text; }
const struct conf *reload_running_conf(void) { return conf_running; }
const struct conf_overrides *reload_overrides(void) { return &overrides; }

void reload_set_running_text(char *text)
{
	free(running_text);
	running_text = text;
}

void reload_init(const char *config_file, struct conf *running, char *text,
		 const struct conf_overrides *ov)
{
	static char abs_path[4096];

	/* absolute: the daemon's working directory is / once detached */
	if (config_file && realpath(config_file, abs_path))
		config_file = abs_path;
	reload_file = config_file;
	conf_running = running;
	running_text = text;
	if (ov)
		overrides = *ov;
}

static void rep_add(struct reload_report *rep, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rep_add(struct reload_report *rep, const char *fmt, ...)
{
	char **n = realloc(rep->msgs, (rep->n + 1) * sizeof(*n));
	va_list ap;
	char *s;

	if (!n)
		return;
	rep->msgs = n;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s)
		rep->msgs[rep->n++] = s;
}

void reload_report_free(struct reload_report *rep)
{
	for (unsigned i = 0; i < rep->n; i++)
		free(rep->msgs[i]);
	free(rep->msgs);
	rep->msgs = NULL;
	rep->n = 0;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static const struct conf_target *conf_find_target(const struct conf *c, const char *iqn)
{
	for (unsigned i = 0; i < c->n_targets; i++)
		if (!strcasecmp(c->targets[i].iqn, iqn))
			return &c->targets[i];
	return NULL;
}

static const struct conf_lun *conf_find_lun(const struct conf_target *ct, unsigned id)
{
	for (unsigned i = 0; ct && i < ct->n_luns; i++)
		if (ct->luns[i].lun == id)
			return &ct->luns[i];
	return NULL;
}

/* Same LUN apart from its size and its faults? */
static bool lun_same_but_size(const struct conf_lun *a, const struct conf_lun *b)
{
	return str_eq(a->backstore, b->backstore) && str_eq(a->path, b->path) &&
	       (a->block_size ? a->block_size : 512) == (b->block_size ? b->block_size : 512) &&
	       a->thin == b->thin && a->read_only == b->read_only && a->removable == b->removable &&
	       a->sanitize == b->sanitize && a->direct == b->direct &&
	       a->zero_detect == b->zero_detect &&
	       a->hard_limit.bytes == b->hard_limit.bytes && a->hard_limit.pct == b->hard_limit.pct &&
	       a->soft_threshold.bytes == b->soft_threshold.bytes &&
	       a->soft_threshold.pct == b->soft_threshold.pct && str_eq(a->serial, b->serial) &&
	       str_eq(a->vendor, b->vendor) && str_eq(a->product, b->product) &&
	       str_eq(a->rbd_pool, b->rbd_pool) && str_eq(a->rbd_image, b->rbd_image) &&
	       str_eq(a->rbd_conf, b->rbd_conf) && str_eq(a->rbd_client, b->rbd_client);
}

static bool acl_equal(const struct conf_target *a, const struct conf_target *b)
{
	bool ha = a->has_acl || a->n_initiators, hb = b->has_acl || b->n_initiators;

	if (ha != hb || a->n_initiators != b->n_initiators)
		return false;
	for (unsigned i = 0; i < a->n_initiators; i++)
		if (strcasecmp(a->initiators[i], b->initiators[i]))
			return false;
	return true;
}

static bool chap_equal(const struct conf_chap *a, const struct conf_chap *b)
{
	if (!a || !b)
		return a == b;
	return str_eq(a->user, b->user) && str_eq(a->secret, b->secret) &&
	       str_eq(a->mutual_user, b->mutual_user) && str_eq(a->mutual_secret, b->mutual_secret);
}

/* One planned change of a LUN. */
enum lun_action { LA_ADD, LA_REMOVE, LA_REPLACE, LA_RESIZE };
struct lun_change {
	enum lun_action action;
	struct iscsi_target *t;           /* NULL: a target being added */
	const struct conf_lun *cl;        /* new config (not for REMOVE) */
	struct scsi_lun *new_lun;         /* ADD/REPLACE: prepared, unpublished */
	struct scsi_lun *old_lun;         /* REMOVE/REPLACE/RESIZE */
	uint64_t new_blocks;              /* RESIZE */
	bool shrink;                      /* RESIZE: asked for (--shrink --force) */
};

struct plan {
	struct lun_change *ch;
	unsigned n, cap;
	struct iscsi_target **gone;       /* targets to remove */
	unsigned n_gone;
	const struct conf_target **added; /* targets to add */
	unsigned n_added;
	struct fault_reload *fr;          /* targets that stay, whose rules of the file change */
	unsigned n_fr;
};

static struct lun_change *plan_push(struct plan *p)
{
	if (p->n == p->cap) {
		unsigned cap = p->cap ? p->cap * 2 : 16;
		struct lun_change *n = realloc(p->ch, cap * sizeof(*n));

		if (!n)
			return NULL;
		p->ch = n;
		p->cap = cap;
	}
	memset(&p->ch[p->n], 0, sizeof(p->ch[0]));
	return &p->ch[p->n++];
}

static void plan_free(struct plan *p)
{
	free(p->ch);
	free(p->gone);
	free(p->added);
	free(p->fr);
	memset(p, 0, sizeof(*p));
}

struct close_scan {
	struct iscsi_target *t;
	bool all;
	unsigned n;
};

/* Under the registry lock: reads only what does not change after login,
 * and asks the owning network thread to close the session. */
static void close_one(struct iscsi_session *s, void *arg)
{
	struct close_scan *cs = arg;

	if (s->closing || s->target != cs->t || s->discovery)
		return;
	if (!cs->all && target_initiator_allowed(cs->t, s->initiator))
		return;
	net_send(s->thread, MSG_CLOSE_SESSION, -1, NULL, s->id);
	cs->n++;
}

/* Close the sessions of target t (every session if all, else only those
 * whose initiator the target no longer allows). Returns how many. */
static unsigned close_sessions(struct iscsi_target *t, bool all)
{
	struct close_scan cs = { .t = t, .all = all };

	iscsi_session_registry_lock();
	iscsi_session_for_each(close_one, &cs);
	iscsi_session_registry_unlock();
	return cs.n;
}

static void lun_dispose(struct iscsi_target *t, struct scsi_lun *lun, uint64_t deadline_ms)
{
	struct backstore *bs = lun->bs;

	while (scsi_stats_lun_busy(lun) && net_now_ms() < deadline_ms) {
		struct timespec ts = { 0, 10 * 1000000 };
		nanosleep(&ts, NULL);
	}
	if (scsi_stats_lun_busy(lun)) {
		log_warn("target %s LUN %u: commands still hold it after %u ms; left allocated",
			 t ? t->iqn : "?", lun->id, RELOAD_DRAIN_MS);
		return;
	}
	if (bs && !bs->read_only) {
		struct bs_io io = { .bs = bs, .op = BS_OP_FLUSH };

		if (backstore_sync_io(&io) < 0)
			log_warn("flush of a removed LUN failed");
	}
	scsi_lun_destroy(lun);
	if (bs)
		backstore_close(bs);
}

/* A smaller size in the file: the LUN keeps its size and its data. */
static void refuse_shrink(struct reload_report *rep, const struct conf *nc, const struct conf_lun *cl,
			  const struct iscsi_target *t, uint64_t want, uint64_t cur)
{
	rep_add(rep, "%s:%d: target %s LUN %u: size %llu is smaller than the LUN's %llu bytes: "
		"a reload never shrinks a LUN (the data past the new end would be lost); "
		"put the size back, or shrink on purpose with "
		"`targetctl lun resize %s %u %llu --shrink --force` (destroys that data)",
		nc->file, cl->line, t->iqn, cl->lun, (unsigned long long)want,
		(unsigned long long)cur, t->iqn, cl->lun, (unsigned long long)want);
}

/* The rules of the file for target t, which stays (ct: its new
 * configuration, index its place in the file): the target's own list
 * changed, or the list of a LUN that otherwise stays (such a LUN is not
 * reopened: only its rules are swapped). */
static int plan_faults(struct plan *p, struct iscsi_target *t, const struct conf_target *ct,
		       unsigned index)
{
	const struct conf_target *ot = conf_find_target(conf_running, t->iqn);
	struct fault_reload *fr, *n;
	bool any;

	if (!ot)
		return 0;
	n = realloc(p->fr, (p->n_fr + 1) * sizeof(*n));
	if (!n)
		return -1;
	p->fr = n;
	fr = &p->fr[p->n_fr];
	memset(fr, 0, sizeof(*fr));
	fr->t = t;
	fr->ct = ct;
	fr->ct_index = index;
	fr->target = !fault_config_equal(ot->faults, ot->n_faults, ct->faults, ct->n_faults);
	any = fr->target;
	for (unsigned j = 0; j < ct->n_luns; j++) {
		const struct conf_lun *nl = &ct->luns[j], *ol = conf_find_lun(ot, nl->lun);

		if (ol && scsi_target_lun(&t->st, nl->lun) && lun_same_but_size(ol, nl) &&
		    !fault_config_equal(ol->faults, ol->n_faults, nl->faults, nl->n_faults))
			any = fr->luns[nl->lun] = true;
	}
	if (any)
		p->n_fr++;
	return 0;
}

/* The difference between the running targets and nc, as changes. */
static int plan_diff(struct plan *p, const struct conf *nc, struct reload_report *rep)
{
	unsigned nt = __atomic_load_n(&target_runtime->n_targets, __ATOMIC_ACQUIRE);
	unsigned live = 0;

	for (unsigned i = 0; i < nt; i++) {
		struct iscsi_target *t = &target_runtime->targets[i];
		const struct conf_target *ct;

		if (t->removed)
			continue;
		live++;
		ct = conf_find_target(nc, t->iqn);
		if (!ct) {
			struct iscsi_target **g = realloc(p->gone, (p->n_gone + 1) * sizeof(*g));

			if (!g)
				return -1;
			p->gone = g;
			p->gone[p->n_gone++] = t;
			for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
				struct lun_change *c;

				if (!scsi_target_lun(&t->st, k))
					continue;
				c = plan_push(p);
				if (!c)
					return -1;
				c->action = LA_REMOVE;
				c->t = t;
				c->old_lun = scsi_target_lun(&t->st, k);
			}
			continue;
		}
		if (plan_faults(p, t, ct, (unsigned)(ct - nc->targets)))
			return -1;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			const struct conf_lun *ol = conf_find_lun(conf_find_target(conf_running, t->iqn), k);
			const struct conf_lun *nl = conf_find_lun(ct, k);
			struct scsi_lun *cur = scsi_target_lun(&t->st, k);
			struct lun_change *c;

			if (!cur && !nl)
				continue;
			if (cur && !nl) {
				c = plan_push(p);
				if (!c)
					return -1;
				c->action = LA_REMOVE;
				c->t = t;
				c->old_lun = cur;
				continue;
			}
			if (cur && ol && lun_same_but_size(ol, nl)) {
				uint64_t bytes = nl->size;

				if (!bytes || bytes == ol->size)
					continue;          /* unchanged */
				if (bytes < cur->block_size || bytes % cur->block_size) {
					rep_add(rep, "%s: target %s LUN %u: size %llu is not a multiple of the block size %u",
						nc->file, t->iqn, k, (unsigned long long)bytes, cur->block_size);
					return -1;
				}
				c = plan_push(p);
				if (!c)
					return -1;
				c->action = LA_RESIZE;
				c->t = t;
				c->cl = nl;
				c->old_lun = cur;
				c->new_blocks = bytes / cur->block_size;
				continue;
			}
			c = plan_push(p);
			if (!c)
				return -1;
			c->action = cur ? LA_REPLACE : LA_ADD;
			c->t = t;
			c->cl = nl;
			c->old_lun = cur;
		}
	}
	for (unsigned i = 0; i < nc->n_targets; i++) {
		const struct conf_target *ct = &nc->targets[i];

		if (!target_find(ct->iqn)) {
			const struct conf_target **a = realloc(p->added, (p->n_added + 1) * sizeof(*a));

			if (!a)
				return -1;
			p->added = a;
			p->added[p->n_added++] = ct;
		}
	}
	if (nt + p->n_added > target_runtime->cap_targets) {
		rep_add(rep, "%s: %u targets added, room for %u more until the daemon restarts",
			nc->file, p->n_added, target_runtime->cap_targets - nt);
		return -1;
	}
	(void)live;
	return 0;
}

/* May this change shrink its LUN (targetctl lun resize --shrink --force)? */
static bool shrink_allowed(const struct reload_opts *o, const struct lun_change *c)
{
	return o && o->shrink_iqn && !strcasecmp(o->shrink_iqn, c->t->iqn) &&
	       o->shrink_lun == c->old_lun->id;
}

/* Does the replacing LUN serve the replaced one's data (the same file or
 * device, the same RBD image)? Then a smaller size would cut it. */
static bool lun_same_data(const struct lun_change *c)
{
	const struct conf_lun *ol = conf_find_lun(conf_find_target(conf_running, c->t->iqn),
						  c->old_lun->id);

	if (!c->old_lun->bs)
		return false;
	if (ol && str_eq(ol->backstore, "rbd"))
		return str_eq(c->cl->backstore, "rbd") && str_eq(ol->rbd_pool, c->cl->rbd_pool) &&
		       str_eq(ol->rbd_image, c->cl->rbd_image);
	return str_eq(c->old_lun->bs->path, c->cl->path);
}

/* Prepare: everything that can fail (opening backstores, growing files).
 * On error the messages go to rep and the caller undoes the plan. */
static int plan_build(struct plan *p, const struct conf *nc, const struct reload_opts *o,
		      struct reload_report *rep)
{
	if (plan_diff(p, nc, rep))
		return -1;
	/* Open the backstores of new and replaced LUNs; grow files. */
	for (unsigned i = 0; i < p->n; i++) {
		struct lun_change *c = &p->ch[i];

		if (c->action == LA_REPLACE && c->cl->size && lun_same_data(c) &&
		    c->cl->size < (scsi_lun_nblocks(c->old_lun) << c->old_lun->block_shift)) {
			refuse_shrink(rep, nc, c->cl, c->t, c->cl->size,
				      scsi_lun_nblocks(c->old_lun) << c->old_lun->block_shift);
			return -1;
		}
		if (c->action == LA_ADD || c->action == LA_REPLACE) {
			if (target_lun_open(c->t, c->cl, &c->new_lun)) {
				rep_add(rep, "%s:%d: target %s LUN %u: cannot open its backstore (see the log)",
					nc->file, c->cl->line, c->t->iqn, c->cl->lun);
				return -1;
			}
		} else if (c->action == LA_RESIZE) {
			struct backstore *bs = c->old_lun->bs;
			uint64_t cur = scsi_lun_nblocks(c->old_lun);
			int e;

			if (!bs || !bs->ops->resize) {
				rep_add(rep, "%s:%d: target %s LUN %u: a %s backstore cannot be resized",
					nc->file, c->cl->line, c->t->iqn, c->cl->lun,
					bs ? bs->ops->name : "missing");
				return -1;
			}
			if (c->new_blocks < cur && shrink_allowed(o, c)) {
				c->shrink = true;   /* cut after the capacity changed */
				continue;
			}
			if (c->new_blocks < cur) {
				refuse_shrink(rep, nc, c->cl, c->t, c->new_blocks << c->old_lun->block_shift,
					      cur << c->old_lun->block_shift);
				return -1;
			}
			e = bs->ops->resize(bs, c->new_blocks << c->old_lun->block_shift, 0);
			if (e) {
				rep_add(rep, "%s:%d: target %s LUN %u: cannot grow to %llu bytes: %s",
					nc->file, c->cl->line, c->t->iqn, c->cl->lun,
					(unsigned long long)(c->new_blocks << c->old_lun->block_shift),
					strerror(-e));
				return -1;
			}
		}
	}
	/* Rules of the file that change: each must be armable on the LUNs
	 * the target will have. */
	for (unsigned i = 0; i < p->n_fr; i++) {
		struct fault_reload *fr = &p->fr[i];
		char err[768];

		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++)
			fr->after[k] = scsi_target_lun(&fr->t->st, k);
		for (unsigned j = 0; j < p->n; j++)
			if (p->ch[j].t == fr->t && p->ch[j].action != LA_RESIZE)
				fr->after[p->ch[j].old_lun ? p->ch[j].old_lun->id : p->ch[j].cl->lun] =
					p->ch[j].new_lun;
		if (fault_reload_check(fr, nc->file, err, sizeof(err))) {
			rep_add(rep, "%s", err);
			return -1;
		}
	}
	/* New targets: their backstores must open too (tried, closed again;
	 * the target is built when applied). */
	for (unsigned i = 0; i < p->n_added; i++) {
		const struct conf_target *ct = p->added[i];
		struct iscsi_target *probe = calloc(1, sizeof(*probe));

		if (!probe)
			return -1;
		snprintf(probe->iqn, sizeof(probe->iqn), "%s", ct->iqn);
		scsi_target_init(&probe->st, probe->iqn, 0);
		for (unsigned k = 0; k < ct->n_luns; k++) {
			struct scsi_lun *lun;
			struct backstore *bs;

			if (target_lun_open(probe, &ct->luns[k], &lun)) {
				rep_add(rep, "%s:%d: target %s LUN %u: cannot open its backstore (see the log)",
					nc->file, ct->luns[k].line, ct->iqn, ct->luns[k].lun);
				scsi_target_destroy(&probe->st);
				free(probe);
				return -1;
			}
			bs = lun->bs;
			scsi_lun_destroy(lun);
			backstore_close(bs);
		}
		scsi_target_destroy(&probe->st);
		free(probe);
	}
	return 0;
}

/* Undo a prepared plan that will not be applied. */
static void plan_abort(struct plan *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		struct lun_change *c = &p->ch[i];

		if (c->new_lun) {
			struct backstore *bs = c->new_lun->bs;

			scsi_lun_destroy(c->new_lun);
			if (bs)
				backstore_close(bs);
			c->new_lun = NULL;
		}
	}
}

static void note_global_changes(const struct conf *o, const struct conf *n, struct reload_report *rep)
{
	bool listen_same = o->n_listen == n->n_listen;

	for (unsigned i = 0; listen_same && i < o->n_listen; i++)
		listen_same = str_eq(o->listen[i].host, n->listen[i].host) &&
			      str_eq(o->listen[i].port, n->listen[i].port) &&
			      o->listen[i].tpgt == n->listen[i].tpgt;
#define GLOBAL(cond, key) \
	do { if (cond) rep_add(rep, "%s changed: takes effect after a restart", key); } while (0)
	GLOBAL(!listen_same, "listen");
	GLOBAL(o->threads != n->threads, "threads");
	GLOBAL(!str_eq(o->state_dir, n->state_dir), "state_dir");
	GLOBAL(!str_eq(o->control_socket, n->control_socket), "control_socket");
	GLOBAL(!str_eq(o->metrics_listen, n->metrics_listen), "metrics_listen");
	GLOBAL(!str_eq(o->http_listen, n->http_listen), "http_listen");
	GLOBAL(o->pool_soft_threshold != n->pool_soft_threshold, "pool_soft_threshold");
	GLOBAL(o->queue_depth != n->queue_depth, "queue_depth");
	GLOBAL(o->max_recv_data_segment_length != n->max_recv_data_segment_length,
	       "max_recv_data_segment_length");
	GLOBAL(o->max_burst_length != n->max_burst_length, "max_burst_length");
	GLOBAL(o->first_burst_length != n->first_burst_length, "first_burst_length");
	GLOBAL(o->immediate_data != n->immediate_data, "immediate_data");
	GLOBAL(o->initial_r2t != n->initial_r2t, "initial_r2t");
	GLOBAL(o->use_io_uring != n->use_io_uring, "io_uring");
	GLOBAL(memcmp(&o->limits, &n->limits, sizeof(o->limits)), "a resource limit (max_*, data_out_timeout)");
#undef GLOBAL
}

/* CHAP strings replaced by a reload: a login on a network thread may be
 * reading the old ones, so they are freed after net_synchronize(). */
struct stale_strings {
	char **v;
	unsigned n;
};

static void stale_add(struct stale_strings *st, char *p)
{
	char **n;

	if (!p)
		return;
	n = realloc(st->v, (st->n + 1) * sizeof(*n));
	if (!n)
		return;   /* leaked rather than freed under a reader */
	st->v = n;
	st->v[st->n++] = p;
}

static void stale_free(struct stale_strings *st)
{
	for (unsigned i = 0; i < st->n; i++)
		free(st->v[i]);
	free(st->v);
	st->v = NULL;
	st->n = 0;
}

/* Replace one credential. A login in progress may have decided to use
 * CHAP under the old settings and read these pointers in a later PDU: a
 * credential is never set to NULL once it existed (the old string stays
 * until a new one replaces it), and replaced strings are freed only after
 * net_synchronize(). */
static void swap_cred(char **slot, const char *v, struct stale_strings *stale)
{
	char *n;

	if (!v || (*slot && !strcmp(*slot, v)))
		return;
	n = strdup(v);
	if (!n)
		return;
	stale_add(stale, *slot);
	__atomic_store_n(slot, n, __ATOMIC_RELEASE);
}

static void set_target_auth(struct iscsi_target *t, const struct conf_target *ct,
			    struct stale_strings *stale)
{
	const struct conf_chap *c = ct ? ct->chap : NULL;

	if (c) {
		swap_cred(&t->chap_user, c->user, stale);
		swap_cred(&t->chap_secret, c->secret, stale);
		swap_cred(&t->chap_mutual_user, c->mutual_user, stale);
		swap_cred(&t->chap_mutual_secret, c->mutual_secret, stale);
	}
	__atomic_store_n(&t->chap, c != NULL, __ATOMIC_RELEASE);
}

/* Apply, part 1: targets removed, LUNs removed, added, replaced, resized. */
static void apply_luns(struct plan *p, const char *why, struct reload_report *rep)
{
	for (unsigned i = 0; i < p->n_gone; i++) {
		struct iscsi_target *t = p->gone[i];
		unsigned n;

		__atomic_store_n(&t->removed, true, __ATOMIC_RELEASE);
		n = close_sessions(t, true);
		rep_add(rep, "target %s removed (%u sessions closed)", t->iqn, n);
		log_event(LOG_LVL_INFO, "target_removed", KV_S("target", t->iqn),
			  KV_U("sessions_closed", n), KV_S("by", why));
	}
	for (unsigned i = 0; i < p->n; i++) {
		struct lun_change *c = &p->ch[i];
		uint16_t id = c->old_lun ? c->old_lun->id : (uint16_t)c->cl->lun;

		switch (c->action) {
		case LA_REMOVE:
			scsi_target_set_lun(&c->t->st, id, NULL);
			c->t->bs[id] = NULL;
			rep_add(rep, "target %s LUN %u removed", c->t->iqn, id);
			log_event(LOG_LVL_INFO, "lun_removed", KV_S("target", c->t->iqn), KV_U("lun", id),
				  KV_S("by", why));
			break;
		case LA_ADD:
		case LA_REPLACE:
			c->t->bs[id] = c->new_lun->bs;
			scsi_target_set_lun(&c->t->st, id, c->new_lun);
			rep_add(rep, "target %s LUN %u %s", c->t->iqn, id,
				c->action == LA_ADD ? "added" : "replaced");
			log_event(LOG_LVL_INFO, c->action == LA_ADD ? "lun_added" : "lun_replaced",
				  KV_S("target", c->t->iqn), KV_U("lun", id),
				  KV_S("backstore", c->cl->backstore), KV_S("path", c->cl->path),
				  KV_U("size_bytes", scsi_lun_nblocks(c->new_lun) << c->new_lun->block_shift),
				  KV_U("block_size", c->new_lun->block_size),
				  KV_S("read_only", c->new_lun->read_only ? "yes" : "no"),
				  KV_S("offline", c->cl->offline ? "yes" : "no"), KV_S("by", why));
			break;
		case LA_RESIZE:
			scsi_lun_set_capacity(c->old_lun, c->new_blocks);
			rep_add(rep, "target %s LUN %u resized to %llu blocks", c->t->iqn, id,
				(unsigned long long)c->new_blocks);
			log_event(c->shrink ? LOG_LVL_WARN : LOG_LVL_INFO, "lun_resized",
				  KV_S("target", c->t->iqn), KV_U("lun", id), KV_U("blocks", c->new_blocks),
				  KV_U("size_bytes", c->new_blocks << c->old_lun->block_shift),
				  KV_S("shrunk", c->shrink ? "yes" : "no"), KV_S("by", why));
			break;
		}
	}
}

/* Apply, part 2: ACL, CHAP, alias and offline of the targets that stay;
 * every ACL pointer moves to nc (the old configuration is freed after). */
static void apply_targets(const struct conf *nc, const char *why, struct reload_report *rep,
			  struct stale_strings *stale)
{
	target_acl_wrlock();
	for (unsigned i = 0; i < target_runtime->n_targets; i++) {
		struct iscsi_target *t = &target_runtime->targets[i];
		const struct conf_target *ct = t->removed ? NULL : conf_find_target(nc, t->iqn);
		const struct conf_target *ot = t->removed ? NULL : conf_find_target(conf_running, t->iqn);

		if (!ct) {
			t->initiators = NULL;
			t->n_initiators = 0;
			t->has_acl = true;
			continue;
		}
		t->initiators = ct->initiators;
		t->n_initiators = ct->n_initiators;
		t->has_acl = ct->has_acl || ct->n_initiators;
		snprintf(t->alias, sizeof(t->alias), "%s", ct->alias ? ct->alias : "");
		if (ot && !chap_equal(ot->chap, ct->chap)) {
			set_target_auth(t, ct, stale);
			rep_add(rep, "target %s: CHAP settings changed (new logins)", t->iqn);
			log_event(LOG_LVL_INFO, "chap_changed", KV_S("target", t->iqn),
				  KV_S("chap", ct->chap ? (ct->chap->mutual_user ? "mutual" : "one-way")
							: "off"), KV_S("by", why));
		}
		if (ot && !acl_equal(ot, ct)) {
			rep_add(rep, "target %s: initiator ACL changed", t->iqn);
			log_event(LOG_LVL_INFO, "acl_changed", KV_S("target", t->iqn),
				  KV_U("initiators", ct->n_initiators),
				  KV_S("acl", ct->has_acl || ct->n_initiators ? "list" : "any"),
				  KV_S("by", why));
		}
	}
	if (!chap_equal(conf_running->discovery_chap, nc->discovery_chap)) {
		const struct conf_target pseudo = { .chap = nc->discovery_chap };

		set_target_auth(&target_runtime->discovery_auth, &pseudo, stale);
		rep_add(rep, "discovery CHAP %s (new discovery logins)",
			nc->discovery_chap ? "settings changed" : "turned off");
		log_event(LOG_LVL_INFO, "chap_changed", KV_S("target", "discovery"),
			  KV_S("chap", nc->discovery_chap ? (nc->discovery_chap->mutual_user ? "mutual"
							     : "one-way") : "off"), KV_S("by", why));
	}
	target_acl_unlock();
	for (unsigned i = 0; i < target_runtime->n_targets; i++) {
		struct iscsi_target *t = &target_runtime->targets[i];
		const struct conf_target *ct = t->removed ? NULL : conf_find_target(nc, t->iqn);
		const struct conf_target *ot = t->removed ? NULL : conf_find_target(conf_running, t->iqn);
		unsigned n;

		if (ct && ot && !acl_equal(ot, ct) && (n = close_sessions(t, false))) {
			rep_add(rep, "target %s: %u sessions of initiators no longer allowed closed",
				t->iqn, n);
			log_event(LOG_LVL_INFO, "sessions_closed", KV_S("target", t->iqn),
				  KV_U("sessions", n), KV_S("reason", "initiator no longer allowed"),
				  KV_S("by", why));
		}
		for (unsigned k = 0; ct && k < ct->n_luns; k++) {
			struct scsi_lun *lun = scsi_target_lun(&t->st, ct->luns[k].lun);
			bool off = ct->luns[k].offline;

			if (!lun || atomic_load(&lun->offline) == off)
				continue;
			atomic_store(&lun->offline, off);
			rep_add(rep, "target %s LUN %u %s", t->iqn, lun->id, off ? "offline" : "online");
			log_event(LOG_LVL_INFO, off ? "lun_offline" : "lun_online", KV_S("target", t->iqn),
				  KV_U("lun", lun->id), KV_S("by", why));
		}
	}
}

/* Apply, part 3: the rules of the file that changed (after part 1: a
 * target-wide rule goes on the LUNs the target has now). */
static void apply_faults(struct plan *p, const char *why, struct reload_report *rep)
{
	for (unsigned i = 0; i < p->n_fr; i++) {
		struct fault_reload *fr = &p->fr[i];
		struct fault_reload_result res;

		for (unsigned j = 0; j < fr->ct->n_luns; j++) {
			const struct conf_lun *cl = &fr->ct->luns[j];
			struct scsi_lun *lun = scsi_target_lun(&fr->t->st, cl->lun);

			if (!fr->luns[cl->lun] || !lun)
				continue;
			fault_reload_lun(fr->t, lun, cl, &res);
			rep_add(rep, "target %s LUN %u: faults of the file changed: %u rules disarmed, %u armed%s",
				fr->t->iqn, cl->lun, res.disarmed, res.armed,
				res.failed ? " (some could not be armed: see the log)" : "");
			log_event(res.failed ? LOG_LVL_WARN : LOG_LVL_INFO, "faults_changed",
				  KV_S("target", fr->t->iqn), KV_U("lun", cl->lun),
				  KV_U("disarmed", res.disarmed), KV_U("armed", res.armed),
				  KV_U("failed", res.failed), KV_S("by", why));
		}
		if (!fr->target)
			continue;
		fault_reload_target(fr->t, fr->ct, &res);
		rep_add(rep, "target %s: faults of the file changed: %u rules disarmed, %u armed%s",
			fr->t->iqn, res.disarmed, res.armed,
			res.failed ? " (some could not be armed: see the log)" : "");
		log_event(res.failed ? LOG_LVL_WARN : LOG_LVL_INFO, "faults_changed",
			  KV_S("target", fr->t->iqn), KV_U("disarmed", res.disarmed), KV_U("armed", res.armed),
			  KV_U("failed", res.failed), KV_S("by", why));
	}
}

/* After: free what nothing can reach any more; cut a file shrunk on
 * purpose once the commands that saw the old size are done. */
static void apply_after(struct plan *p, struct reload_report *rep)
{
	uint64_t deadline;

	net_synchronize();
	deadline = net_now_ms() + RELOAD_DRAIN_MS;
	for (unsigned i = 0; i < p->n; i++) {
		struct lun_change *c = &p->ch[i];

		if (c->action == LA_REMOVE || c->action == LA_REPLACE) {
			lun_dispose(c->t, c->old_lun, deadline);
		} else if (c->action == LA_RESIZE && c->shrink) {
			struct scsi_lun *lun = c->old_lun;
			int e;

			while (scsi_stats_lun_busy(lun) && net_now_ms() < deadline) {
				struct timespec ts = { 0, 10 * 1000000 };
				nanosleep(&ts, NULL);
			}
			e = lun->bs->ops->resize(lun->bs, c->new_blocks << lun->block_shift,
						 BS_RESIZE_SHRINK);
			if (e)
				rep_add(rep, "target %s LUN %u: the LUN is smaller but cutting its backstore "
					"failed: %s", c->t->iqn, lun->id, strerror(-e));
		}
	}
}

int reload_apply(struct conf *nc, const struct reload_opts *o, struct reload_report *rep)
{
	const char *why = o && o->why ? o->why : "reload";
	struct plan p = { 0 };
	struct conf *old_alloc;
	struct stale_strings stale = { 0 };

	if (plan_build(&p, nc, o, rep)) {
		if (!rep->n)
			rep_add(rep, "out of memory preparing the change");
		plan_abort(&p);
		plan_free(&p);
		conf_free(nc);
		free(nc);
		return -1;
	}
	/* ---- apply: nothing below fails ---- */
	pthread_rwlock_wrlock(&runtime_lock);
	apply_luns(&p, why, rep);
	apply_targets(nc, why, rep, &stale);
	apply_faults(&p, why, rep);
	for (unsigned i = 0; i < p.n_added; i++) {
		if (target_add(target_runtime, p.added[i]))
			rep_add(rep, "target %s: could not be built (see the log)", p.added[i]->iqn);
		else {
			rep_add(rep, "target %s added", p.added[i]->iqn);
			log_event(LOG_LVL_INFO, "target_added", KV_S("target", p.added[i]->iqn),
				  KV_U("luns", p.added[i]->n_luns), KV_S("by", why));
		}
	}
	if (!o || !o->no_global_notes)
		note_global_changes(conf_running, nc, rep);
	/* ALUA states of the portal groups (portal_groups) */
	if (target_alua_reload(target_runtime, nc))
		rep_add(rep, "portal group states changed (see the log)");
	old_alloc = conf_allocated;
	target_runtime->conf = nc;
	conf_running = nc;
	conf_allocated = nc;
	pthread_rwlock_unlock(&runtime_lock);

	apply_after(&p, rep);
	if (old_alloc) {
		conf_free(old_alloc);
		free(old_alloc);
	}
	stale_free(&stale);
	plan_free(&p);
	return 0;
}

int reload_config(struct reload_report *rep)
{
	const struct reload_opts o = { .why = "reload" };
	struct conf_errors errs = { 0 };
	struct conf *nc = NULL;
	char *text = NULL, err[256];
	int rc = -1;

	memset(rep, 0, sizeof(*rep));
	reload_lock();
	if (!reload_file) {
		rep_add(rep, "the daemon runs the embedded default configuration (no -c FILE): nothing to reload");
		rep->unavailable = true;
		reload_unlock();
		return -1;
	}
	sd_notifyf(0, "RELOADING=1\nSTATUS=reloading %s\nMONOTONIC_USEC=%llu", reload_file,
		   (unsigned long long)(scsi_stats_now_ns() / 1000));
	text = conf_read_file(reload_file, &errs);
	if (text) {
		nc = calloc(1, sizeof(*nc));
		if (!nc || conf_load_text(nc, text, reload_file, 0, &errs)) {
			free(nc);
			nc = NULL;
		}
	}
	if (nc && conf_apply_overrides(nc, &overrides, err, sizeof(err))) {
		rep_add(rep, "%s", err);
		conf_free(nc);
		free(nc);
		nc = NULL;
	}
	if (!nc) {
		for (unsigned i = 0; i < errs.n; i++)
			rep_add(rep, "%s", errs.msgs[i]);
		if (!rep->n)
			rep_add(rep, "out of memory");
		conf_errors_free(&errs);
		free(text);
		goto out;
	}
	if (reload_apply(nc, &o, rep)) {
		free(text);
		goto out;
	}
	reload_set_running_text(text);
	__atomic_add_fetch(&reloads, 1, __ATOMIC_RELAXED);
	log_event(LOG_LVL_INFO, "reload", KV_S("result", "applied"), KV_S("file", reload_file),
		  KV_U("changes", rep->n), KV_S("by", o.why));
	if (!rep->n)
		rep_add(rep, "no change");
	rc = 0;
out:
	if (rc) {
		for (unsigned i = 0; i < rep->n; i++)
			log_event(LOG_LVL_WARN, "reload", KV_S("result", "refused"),
				  KV_S("file", reload_file), KV_S("error", rep->msgs[i]), KV_S("by", o.why));
	}
	sd_notifyf(0, "READY=1\nSTATUS=serving (%u reloads)", reload_count());
	reload_unlock();
	return rc;
}

void reload_shutdown(void)
{
	free(running_text);
	running_text = NULL;
	if (conf_allocated) {
		if (target_runtime && target_runtime->conf == conf_allocated)
			target_runtime->conf = NULL;
		conf_free(conf_allocated);
		free(conf_allocated);
		conf_allocated = NULL;
	}
}
