/*
 * Runtime administration: the control methods that change what the daemon
 * serves (target, lun, acl, chap, portal, session close) and show its
 * configuration (config.show, config.diff).
 *
 * Source of truth: the configuration file. Every change is made to the
 * text the running configuration was built from (a libconfig document,
 * conf/edit.c), validated whole exactly like the file (conf_load_text:
 * the same messages, FILE:LINE included), applied by the reload engine
 * (reload_apply: the same diff, the same refusals, a LUN is never shrunk
 * unless asked), and only then written back to the file: atomically (a
 * temporary file in the same directory, fsync, rename, fsync of the
 * directory), the previous version kept as FILE.bak. So a restart serves
 * what targetctl set, `targetctl reload` of an unchanged file is a no-op,
 * and the file is never half-written. libconfig keeps no comments: the
 * first change drops the file's comments (FILE.bak keeps them), and says
 * so in a header.
 *
 * Refused, with nothing changed: a file edited since the daemon read it
 * (`targetctl reload` it first; `targetctl config diff` shows it), a file
 * that uses @include (targetd does not rewrite those), the embedded
 * default (no file to keep the change in), portals given with -l.
 *
 * DESIGN (threads): every method runs on the control thread and holds
 * reload_lock() from reading the running text to storing the new one, so
 * changes, reloads and SIGHUP never interleave. Session listing and
 * closing run on the network threads that own the sessions
 * (net_call_all).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "backstore/backstore.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/control_int.h"
#include "targetd/net.h"
#include "targetd/target.h"
#include "targetd/reload.h"

/* ---- writing the file back ---------------------------------------------- */

static int fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int fd, rc = -1;

	if (!copy)
		return -1;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		rc = fsync(fd);
		close(fd);
	}
	free(copy);
	return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Replace path by text atomically, keeping the old one as path.bak. The
 * new file has the old one's mode and owner. 0, or -1 with err. */
static int store_file(const char *path, const char *text, char *err, size_t cap)
{
	char tmp[4200], bak[4200];
	struct stat st;
	int fd;

	if (stat(path, &st) < 0) {
		snprintf(err, cap, "%s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.targetd-new", path);
	snprintf(bak, sizeof(bak), "%s.bak", path);
	unlink(tmp);   /* one left by a crash; ours alone (the name is ours) */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, st.st_mode & 07777);
	if (fd < 0) {
		snprintf(err, cap, "cannot create %.400s: %s", tmp, strerror(errno));
		return -1;
	}
	if (fchown(fd, st.st_uid, st.st_gid) < 0 && errno != EPERM)
		log_warn("%s: cannot keep the owner of %s: %m", tmp, path);
	if (write_all(fd, text, strlen(text)) || fsync(fd) || close(fd)) {
		snprintf(err, cap, "cannot write %.400s: %s", tmp, strerror(errno));
		unlink(tmp);
		return -1;
	}
	/* the previous version, as a hard link (no copy, no window without a file) */
	unlink(bak);
	if (link(path, bak) < 0)
		log_warn("cannot keep %s as %s: %m", path, bak);
	if (rename(tmp, path) < 0) {
		snprintf(err, cap, "cannot rename %.200s to %.200s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	if (fsync_dir_of(path) < 0)
		log_warn("cannot sync the directory of %s: %m", path);
	return 0;
}

/* What the daemon writes: a header, then libconfig's text of the document. */
static char *with_header(const char *body, const char *what)
{
	char stamp[64], *out = NULL;
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S %z", &tm);
	if (asprintf(&out,
		     "# targetd configuration, written by targetd %s on %s after\n"
		     "# `targetctl %s`. targetd rewrites this file when targetctl changes\n"
		     "# what it serves; comments are not kept (the version before the last\n"
		     "# change is %s.bak). See targetd.conf(5).\n\n%s",
		     VERSION, stamp, what, reload_config_file(), body) < 0)
		return NULL;
	return out;
}

/* ---- one change ------------------------------------------------------------- */

static int edit_code(int rc)
{
	return rc == CONF_EDIT_NOT_FOUND ? CTL_E_NOT_FOUND
	       : rc == CONF_EDIT_EXISTS  ? CTL_E_EXISTS
					 : CTL_E_INVALID;
}

/* Can a change be kept in the file? NULL, or why not (err set). */
static bool change_possible(const char *text, struct ctl_err *err)
{
	const char *file = reload_config_file();

	struct conf_errors errs = { 0 };
	char *now;
	bool same;

	if (!file || !text) {
		ctl_fail(err, CTL_E_UNAVAILABLE,
			 "the daemon runs the embedded default configuration: a change could not "
			 "survive a restart. Start it with a configuration file (targetd -c FILE); "
			 "targetd.conf(5) has an example");
		return false;
	}
	if (strstr(text, "@include")) {
		ctl_fail(err, CTL_E_UNAVAILABLE,
			 "%s uses @include: targetd does not rewrite such a file; edit the files "
			 "and run `targetctl reload`", file);
		return false;
	}
	now = conf_read_file(file, &errs);
	if (!now) {
		ctl_fail_list(err, CTL_E_FAILED, errs.msgs, errs.n, "cannot read %s", file);
		conf_errors_free(&errs);
		return false;
	}
	same = !strcmp(now, text);
	free(now);
	if (!same) {
		ctl_fail(err, CTL_E_REFUSED,
			 "%s was changed since the daemon read it: `targetctl reload` applies it "
			 "first (`targetctl config diff` shows the difference); nothing was changed",
			 file);
		return false;
	}
	return true;
}

bool admin_change_possible(struct ctl_err *err)
{
	return change_possible(reload_running_text(), err);
}

struct json_object *admin_change(const char *what, admin_edit_fn edit, void *arg,
				 const struct reload_opts *opts, struct ctl_err *err)
{
	struct json_object *res;

	reload_lock();
	res = admin_change_locked(what, edit, arg, opts, err);
	reload_unlock();
	return res;
}

struct json_object *admin_change_locked(const char *what, admin_edit_fn edit, void *arg,
					const struct reload_opts *opts, struct ctl_err *err)
{
	struct reload_opts o = opts ? *opts : (struct reload_opts){ 0 };
	struct reload_report rep = { 0 };
	struct conf_errors errs = { 0 };
	struct conf_doc *doc = NULL;
	struct conf *nc = NULL;
	struct json_object *res = NULL, *ch;
	char msg[512], *body = NULL, *text = NULL;
	const char *file;
	int rc;

	file = reload_config_file();
	if (!change_possible(reload_running_text(), err))
		goto out;
	doc = conf_doc_parse(reload_running_text(), file, msg, sizeof(msg));
	if (!doc) {
		ctl_fail(err, CTL_E_FAILED, "%s", msg);
		goto out;
	}
	rc = edit(doc, arg, msg, sizeof(msg));
	if (rc) {
		ctl_fail(err, edit_code(rc), "%s", msg);
		goto out;
	}
	body = conf_doc_text(doc);
	text = body ? with_header(body, what) : NULL;
	nc = text ? calloc(1, sizeof(*nc)) : NULL;
	if (!nc) {
		ctl_fail(err, CTL_E_INTERNAL, "out of memory");
		goto out;
	}
	/* the same validation as the file; the lines are those of the
	 * changed text (`targetctl config show` after a change shows it) */
	snprintf(msg, sizeof(msg), "%s (as changed)", file);
	if (conf_load_text(nc, text, msg, 0, &errs)) {
		ctl_fail_list(err, CTL_E_INVALID, errs.msgs, errs.n,
			      "the change would make the configuration invalid; nothing was changed");
		free(nc);
		nc = NULL;
		goto out;
	}
	if (conf_apply_overrides(nc, reload_overrides(), msg, sizeof(msg))) {
		ctl_fail(err, CTL_E_FAILED, "%s", msg);
		goto out;
	}
	o.why = what;
	rc = reload_apply(nc, &o, &rep);
	nc = NULL;   /* taken over */
	if (rc) {
		ctl_fail_list(err, CTL_E_REFUSED, rep.msgs, rep.n, "the change was refused; nothing was changed");
		goto out;
	}
	res = json_object_new_object();
	ch = json_object_new_array();
	for (unsigned i = 0; i < rep.n; i++)
		json_object_array_add(ch, json_object_new_string(rep.msgs[i]));
	jadd(res, "changes", ch);
	jadd(res, "file", json_object_new_string(file));
	if (store_file(file, text, msg, sizeof(msg))) {
		/* live, but not kept: say so loudly, and keep the running text
		 * as the file is, so the next change is refused until fixed */
		log_event(LOG_LVL_ERR, "config_not_saved", KV_S("file", file), KV_S("error", msg),
			  KV_S("by", what));
		jadd(res, "persisted", json_object_new_boolean(false));
		jadd(res, "warning", json_object_new_string(msg));
	} else {
		jadd(res, "persisted", json_object_new_boolean(true));
		reload_set_running_text(text);
		text = NULL;
		log_event(LOG_LVL_INFO, "config_saved", KV_S("file", file), KV_S("by", what));
	}
out:
	reload_report_free(&rep);
	conf_errors_free(&errs);
	conf_doc_free(doc);
	if (nc) {
		conf_free(nc);
		free(nc);
	}
	free(body);
	free(text);
	return res;
}

/* ---- targets ---------------------------------------------------------------- */

struct target_arg {
	const char *iqn, *alias;
};

static int edit_target_add(struct conf_doc *d, void *arg, char *err, size_t cap)
{
	const struct target_arg *a = arg;

	return conf_doc_target_add(d, a->iqn, a->alias, err, cap);
}

static int edit_target_remove(struct conf_doc *d, void *arg, char *err, size_t cap)
{
	const struct target_arg *a = arg;

	return conf_doc_target_remove(d, a->iqn, err, cap);
}

struct json_object *admin_target_add(struct json_object *p, struct ctl_err *err)
{
	struct target_arg a = { 0 };

	ctl_str(p, "iqn", true, &a.iqn, err);
	ctl_str(p, "alias", false, &a.alias, err);
	if (ctl_failed(err))
		return NULL;
	return admin_change("target add", edit_target_add, &a, NULL, err);
}

/* Sessions (not discovery) logged in to target iqn right now. */
struct count_arg {
	const char *iqn;
	unsigned n;
};

static void count_one(struct iscsi_session *s, void *arg)
{
	struct count_arg *c = arg;

	if (!s->closing && !s->discovery && s->target && !strcasecmp(s->target->iqn, c->iqn))
		c->n++;
}

static unsigned target_sessions(const char *iqn)
{
	struct count_arg c = { .iqn = iqn };

	iscsi_session_registry_lock();
	iscsi_session_for_each(count_one, &c);
	iscsi_session_registry_unlock();
	return c.n;
}

/* Refuse to disturb logged-in initiators unless force. */
static bool sessions_allow(const char *iqn, bool force, const char *what, struct ctl_err *err)
{
	unsigned n = target_sessions(iqn);

	if (!n || force)
		return true;
	ctl_fail(err, CTL_E_REFUSED, "target %s has %u session%s: %s would take %s away from %s; "
		 "force (--force) does it anyway", iqn, n, n == 1 ? "" : "s", what,
		 strstr(what, "lun") ? "a disk" : "the target", n == 1 ? "it" : "them");
	return false;
}

struct json_object *admin_target_remove(struct json_object *p, struct ctl_err *err)
{
	struct target_arg a = { 0 };
	bool force = false;

	ctl_str(p, "iqn", true, &a.iqn, err);
	ctl_bool(p, "force", &force, err);
	if (ctl_failed(err) || !sessions_allow(a.iqn, force, "target remove", err))
		return NULL;
	return admin_change("target remove", edit_target_remove, &a, NULL, err);
}

/* ---- LUNs ------------------------------------------------------------------------ */

int admin_edit_lun_add(struct conf_doc *d, void *arg, char *err, size_t cap)
{
	struct admin_lun_arg *a = arg;

	return conf_doc_lun_add(d, a->iqn, &a->spec, err, cap);
}

static int edit_lun_remove(struct conf_doc *d, void *arg, char *err, size_t cap)
{
	struct admin_lun_arg *a = arg;

	return conf_doc_lun_remove(d, a->iqn, a->lun, err, cap);
}

int admin_edit_lun_set(struct conf_doc *d, void *arg, char *err, size_t cap)
{
	struct admin_lun_arg *a = arg;

	return conf_doc_lun_set(d, a->iqn, a->lun, a->key, a->str, a->boolean, err, cap);
}

static bool lun_params(struct json_object *p, struct admin_lun_arg *a, struct ctl_err *err)
{
	uint64_t v = 0;

	ctl_str(p, "target", true, &a->iqn, err);
	if (ctl_uint(p, "lun", true, SCSI_MAX_LUNS - 1, &v, err))
		a->lun = (unsigned)v;
	return !ctl_failed(err);
}

static int opt_bool(struct json_object *p, const char *key, struct ctl_err *err)
{
	bool b;

	return ctl_bool(p, key, &b, err) ? b : -1;
}

struct json_object *admin_lun_add(struct json_object *p, struct ctl_err *err)
{
	struct admin_lun_arg a = { 0 };
	uint64_t bs = 0;

	if (!lun_params(p, &a, err))
		return NULL;
	a.spec.lun = a.lun;
	ctl_str(p, "backstore", true, &a.spec.backstore, err);
	ctl_str(p, "path", false, &a.spec.path, err);
	ctl_str(p, "size", false, &a.spec.size, err);
	if (ctl_uint(p, "block_size", false, 4096, &bs, err))
		a.spec.block_size = (unsigned)bs;
	a.spec.thin = opt_bool(p, "thin", err);
	a.spec.read_only = opt_bool(p, "read_only", err);
	a.spec.removable = opt_bool(p, "removable", err);
	a.spec.direct = opt_bool(p, "direct", err);
	ctl_str(p, "serial", false, &a.spec.serial, err);
	ctl_str(p, "vendor", false, &a.spec.vendor, err);
	ctl_str(p, "product", false, &a.spec.product, err);
	ctl_str(p, "pool", false, &a.spec.pool, err);
	ctl_str(p, "image", false, &a.spec.image, err);
	ctl_str(p, "conf", false, &a.spec.ceph_conf, err);
	ctl_str(p, "client", false, &a.spec.client, err);
	if (ctl_failed(err))
		return NULL;
	return admin_change("lun add", admin_edit_lun_add, &a, NULL, err);
}

struct json_object *admin_lun_remove(struct json_object *p, struct ctl_err *err)
{
	struct admin_lun_arg a = { 0 };
	bool force = false;

	if (!lun_params(p, &a, err))
		return NULL;
	ctl_bool(p, "force", &force, err);
	if (ctl_failed(err) || !sessions_allow(a.iqn, force, "lun remove", err))
		return NULL;
	return admin_change("lun remove", edit_lun_remove, &a, NULL, err);
}

/* The running LUN's size in bytes, 0 if there is no such LUN. */
static uint64_t lun_bytes(const char *iqn, unsigned id)
{
	struct iscsi_target *t;
	struct scsi_lun *lun;
	uint64_t n = 0;

	reload_read_lock();
	t = target_find(iqn);
	lun = t ? ctl_target_lun(t, id) : NULL;
	if (lun)
		n = scsi_lun_nblocks(lun) << lun->block_shift;
	reload_read_unlock();
	return n;
}

struct json_object *admin_lun_resize(struct json_object *p, struct ctl_err *err)
{
	struct admin_lun_arg a = { 0 };
	struct reload_opts o = { 0 };
	bool shrink = false, force = false;
	uint64_t want, cur;
	char canon[32];

	if (!lun_params(p, &a, err))
		return NULL;
	ctl_str(p, "size", true, &a.str, err);
	ctl_bool(p, "shrink", &shrink, err);
	ctl_bool(p, "force", &force, err);
	if (ctl_failed(err))
		return NULL;
	if (conf_parse_size(a.str, &want) || !want)
		return ctl_fail(err, CTL_E_PARAMS, "size \"%s\" is not a size (bytes, or a number "
				"with K, M, G or T)", a.str);
	cur = lun_bytes(a.iqn, a.lun);
	if (!cur)
		return ctl_fail(err, CTL_E_NOT_FOUND, "no LUN %u in target %s", a.lun, a.iqn);
	if (want == cur)
		return ctl_fail(err, CTL_E_EXISTS, "target %s LUN %u is %llu bytes already", a.iqn,
				a.lun, (unsigned long long)cur);
	if (want < cur && !(shrink && force))
		return ctl_fail(err, CTL_E_REFUSED,
				"target %s LUN %u is %llu bytes: %llu is smaller, and shrinking "
				"destroys the data past the new end (a file is cut). Nothing was "
				"changed; --shrink --force does it", a.iqn, a.lun,
				(unsigned long long)cur, (unsigned long long)want);
	if (want < cur) {
		o.shrink_iqn = a.iqn;
		o.shrink_lun = a.lun;
	}
	/* written exactly, in the largest unit that divides it */
	conf_format_size(want, canon, sizeof(canon));
	a.key = "size";
	a.str = canon;
	return admin_change(want < cur ? "lun resize --shrink --force" : "lun resize", admin_edit_lun_set,
			    &a, &o, err);
}

static struct json_object *lun_offline(struct json_object *p, bool off, struct ctl_err *err)
{
	struct admin_lun_arg a = { 0 };
	struct iscsi_target *t;
	bool have, now = false;

	if (!lun_params(p, &a, err))
		return NULL;
	reload_read_lock();
	t = target_find(a.iqn);
	have = t && ctl_target_lun(t, a.lun);
	if (have)
		now = atomic_load(&ctl_target_lun(t, a.lun)->offline);
	reload_read_unlock();
	if (!have)
		return ctl_fail(err, CTL_E_NOT_FOUND, "no LUN %u in target %s", a.lun, a.iqn);
	if (now == off)
		return ctl_fail(err, CTL_E_EXISTS, "target %s LUN %u is %s already", a.iqn, a.lun,
				off ? "offline" : "online");
	a.key = "offline";
	a.boolean = off;
	return admin_change(off ? "lun offline" : "lun online", admin_edit_lun_set, &a, NULL, err);
}

struct json_object *admin_lun_offline(struct json_object *p, struct ctl_err *err)
{
	return lun_offline(p, true, err);
}

struct json_object *admin_lun_online(struct json_object *p, struct ctl_err *err)
{
	return lun_offline(p, false, err);
}

/* ---- ACL and CHAP ------------------------------------------------------------------- */

struct acl_arg {
	const char *iqn, *initiator;
	bool add;
	struct conf_chap chap;
	bool chap_off;
};

static int edit_acl(struct conf_doc *d, void *arg, char *err, size_t cap)
{
	struct acl_arg *a = arg;

	return conf_doc_acl(d, a->iqn, a->initiator, a->add, err, cap);
}

static struct json_object *acl(struct json_object *p, bool add, struct ctl_err *err)
{
	struct acl_arg a = { .add = add };

	ctl_str(p, "target", true, &a.iqn, err);
	ctl_str(p, "initiator", true, &a.initiator, err);
	if (ctl_failed(err))
		return NULL;
	return admin_change(add ? "acl add" : "acl remove", edit_acl, &a, NULL, err);
}

struct json_object *admin_acl_add(struct json_object *p, struct ctl_err *err)
{
	return acl(p, true, err);
}

struct json_object *admin_acl_remove(struct json_object *p, struct ctl_err *err)
{
	return acl(p, false, err);
}

static int edit_chap(struct conf_doc *d, void *arg, char *err, size_t cap)
{
	struct acl_arg *a = arg;

	return conf_doc_chap(d, a->iqn, a->chap_off ? NULL : &a->chap, err, cap);
}

struct json_object *admin_chap_set(struct json_object *p, struct ctl_err *err)
{
	struct acl_arg a = { 0 };
	const char *s;

	ctl_str(p, "target", true, &a.iqn, err);
	ctl_bool(p, "off", &a.chap_off, err);
	if (!a.chap_off) {
		if (ctl_str(p, "user", true, &s, err))
			a.chap.user = (char *)s;
		if (ctl_str(p, "secret", true, &s, err))
			a.chap.secret = (char *)s;
		if (ctl_str(p, "mutual_user", false, &s, err))
			a.chap.mutual_user = (char *)s;
		if (ctl_str(p, "mutual_secret", false, &s, err))
			a.chap.mutual_secret = (char *)s;
	} else if (json_object_object_get_ex(p, "user", NULL) || json_object_object_get_ex(p, "secret", NULL)) {
		ctl_fail(err, CTL_E_PARAMS, "\"off\" takes no user or secret");
	}
	if (ctl_failed(err))
		return NULL;
	return admin_change(a.chap_off ? "chap set --off" : "chap set", edit_chap, &a, NULL, err);
}

/* ---- portals ------------------------------------------------------------------------- */

struct portal_arg {
	const char *addr;
	unsigned tpgt;
	bool add;
};

static int edit_portal(struct conf_doc *d, void *arg, char *err, size_t cap)
{
	struct portal_arg *a = arg;

	return conf_doc_portal(d, a->addr, a->tpgt, a->add, err, cap);
}

/* Open or close the runtime portals to match the running configuration
 * (after a portal change was applied and written). */
static int portals_follow(const struct conf *c, struct json_object *res, struct ctl_err *err)
{
	char msg[256];

	/* closed: portals no longer listed */
	for (unsigned i = 0; i < __atomic_load_n(&target_runtime->n_portals, __ATOMIC_ACQUIRE); i++) {
		struct iscsi_portal *p = &target_runtime->portals[i];
		bool listed = false;

		if (__atomic_load_n(&p->closing, __ATOMIC_ACQUIRE))
			continue;
		for (unsigned k = 0; k < c->n_listen && !listed; k++)
			listed = !strcmp(c->listen[k].host, p->host) && !strcmp(c->listen[k].port, p->port);
		if (listed)
			continue;
		net_portal_remove(p);
		log_event(LOG_LVL_INFO, "portal_removed", KV_S("host", p->host), KV_S("port", p->port),
			  KV_U("tpgt", p->tpgt), KV_S("by", "portal remove"));
	}
	/* opened: listed portals that are not open */
	for (unsigned k = 0; k < c->n_listen; k++) {
		unsigned n = __atomic_load_n(&target_runtime->n_portals, __ATOMIC_ACQUIRE), i;
		struct iscsi_portal *p;

		for (i = 0; i < n; i++)
			if (!__atomic_load_n(&target_runtime->portals[i].closing, __ATOMIC_ACQUIRE) &&
			    !strcmp(c->listen[k].host, target_runtime->portals[i].host) &&
			    !strcmp(c->listen[k].port, target_runtime->portals[i].port))
				break;
		if (i < n)
			continue;
		if (n >= target_runtime->cap_portals)
			return !ctl_fail(err, CTL_E_FAILED, "no room for more portals until the daemon restarts");
		p = &target_runtime->portals[n];
		memset(p, 0, sizeof(*p));
		snprintf(p->host, sizeof(p->host), "%s", c->listen[k].host);
		snprintf(p->port, sizeof(p->port), "%s", c->listen[k].port);
		p->tpgt = (uint16_t)(c->listen[k].tpgt ? c->listen[k].tpgt : 1);
		p->fd = -1;
		if (net_portal_add(p, msg, sizeof(msg))) {
			jadd(res, "warning", json_object_new_string(msg));
			log_event(LOG_LVL_ERR, "portal_failed", KV_S("host", p->host), KV_S("port", p->port),
				  KV_S("error", msg));
			continue;
		}
		__atomic_store_n(&target_runtime->n_portals, n + 1, __ATOMIC_RELEASE);
		log_event(LOG_LVL_INFO, "portal_added", KV_S("host", p->host), KV_S("port", p->port),
			  KV_U("tpgt", p->tpgt), KV_S("by", "portal add"));
	}
	return 0;
}

static struct json_object *portal(struct json_object *p, bool add, struct ctl_err *err)
{
	struct portal_arg a = { .add = add, .tpgt = 1 };
	const struct reload_opts o = { .no_global_notes = true };
	struct json_object *res;
	uint64_t tpgt = 1;
	char why[160];

	ctl_str(p, "address", true, &a.addr, err);
	if (ctl_uint(p, "tpgt", false, 65535, &tpgt, err))
		a.tpgt = (unsigned)tpgt;
	if (ctl_failed(err))
		return NULL;
	if (conf_listen_error(a.addr, why, sizeof(why)))
		return ctl_fail(err, CTL_E_PARAMS, "\"%s\"%s%s", a.addr, why[0] == 'i' ? " " : ": ", why);
	if (reload_overrides()->n_listen)
		return ctl_fail(err, CTL_E_UNAVAILABLE, "the daemon was started with -l: its portals "
				"come from the command line, not from the file");
	if (add && a.tpgt < 1)
		return ctl_fail(err, CTL_E_PARAMS, "tpgt must be 1 to 65535");
	if (add) {
		/* a new portal group would need a new ALUA target port group in
		 * every target: only at start-up */
		bool known = false;

		for (unsigned i = 0; i < target_runtime->n_portals; i++)
			known |= !target_runtime->portals[i].closing && target_runtime->portals[i].tpgt == a.tpgt;
		if (!known)
			return ctl_fail(err, CTL_E_REFUSED, "tpgt %u is no portal group of this daemon "
					"yet: a new group (an ALUA target port group) needs a restart; "
					"add it to the file and restart", a.tpgt);
	}
	res = admin_change(add ? "portal add" : "portal remove", edit_portal, &a, &o, err);
	if (res) {
		reload_lock();
		portals_follow(reload_running_conf(), res, err);
		reload_unlock();
	}
	return res;
}

struct json_object *admin_portal_add(struct json_object *p, struct ctl_err *err)
{
	return portal(p, true, err);
}

struct json_object *admin_portal_remove(struct json_object *p, struct ctl_err *err)
{
	return portal(p, false, err);
}

/* ---- sessions ------------------------------------------------------------------------- */

struct close_arg {
	uint16_t tsih;
	int cid;                 /* -1: every connection */
	pthread_mutex_t lock;
	unsigned closed;
	bool found;
};

/* On each network thread: close the connections of that session it owns. */
static void close_on_thread(struct net_thread *t, void *arg)
{
	struct close_arg *a = arg;
	struct list_head *pos, *tmp;
	unsigned n = 0;
	bool found = false;

	list_for_each_safe(pos, tmp, &t->conns) {
		struct iscsi_conn *c = list_entry(pos, struct iscsi_conn, thread_link);

		ASSERT_OWNER(c);
		if (!c->sess || c->dead || c->sess->tsih != a->tsih)
			continue;
		found = true;
		if (a->cid >= 0 && c->cid != (unsigned)a->cid)
			continue;
		iscsi_conn_close(c, "closed by targetctl session close");
		n++;
	}
	pthread_mutex_lock(&a->lock);
	a->closed += n;
	a->found |= found;
	pthread_mutex_unlock(&a->lock);
}

struct json_object *admin_session_close(struct json_object *p, struct ctl_err *err)
{
	struct close_arg a = { .cid = -1 };
	struct json_object *res;
	uint64_t v;

	if (ctl_uint(p, "tsih", true, 65535, &v, err))
		a.tsih = (uint16_t)v;
	if (ctl_uint(p, "cid", false, 65535, &v, err))
		a.cid = (int)v;
	if (ctl_failed(err))
		return NULL;
	pthread_mutex_init(&a.lock, NULL);
	net_call_all(close_on_thread, &a);
	pthread_mutex_destroy(&a.lock);
	if (!a.found)
		return ctl_fail(err, CTL_E_NOT_FOUND, "no session with TSIH %u (targetctl sessions "
				"lists them)", a.tsih);
	if (!a.closed)
		return ctl_fail(err, CTL_E_NOT_FOUND, "session %u has no connection %d", a.tsih, a.cid);
	log_event(LOG_LVL_INFO, "session_closed", KV_U("tsih", a.tsih),
		  KV_S("cid", a.cid < 0 ? "all" : NULL), KV_U("connections", a.closed),
		  KV_S("by", "session close"));
	res = json_object_new_object();
	jadd(res, "tsih", json_object_new_int(a.tsih));
	jadd(res, "connections_closed", json_object_new_int((int)a.closed));
	return res;
}

/* ---- the configuration ------------------------------------------------------------------ */

static struct json_object *overrides_json(void)
{
	const struct conf_overrides *o = reload_overrides();
	struct json_object *j = json_object_new_object();

	if (o->state_dir)
		jadd(j, "state_dir", json_object_new_string(o->state_dir));
	if (o->control_socket)
		jadd(j, "control_socket", json_object_new_string(o->control_socket));
	if (o->n_listen) {
		struct json_object *a = json_object_new_array();

		for (unsigned i = 0; i < o->n_listen; i++)
			json_object_array_add(a, json_object_new_string(o->listen[i]));
		jadd(j, "listen", a);
	}
	return j;
}

struct json_object *admin_config_show(struct json_object *p, struct ctl_err *err)
{
	struct json_object *res = json_object_new_object();
	const char *file;

	(void)p;
	(void)err;
	reload_lock();
	file = reload_config_file();
	jadd(res, "file", file ? json_object_new_string(file) : NULL);
	jadd(res, "text", reload_running_text() ? json_object_new_string(reload_running_text()) : NULL);
	jadd(res, "overrides", overrides_json());
	reload_unlock();
	return res;
}

struct json_object *admin_config_diff(struct json_object *p, struct ctl_err *err)
{
	struct conf_errors errs = { 0 };
	struct json_object *res;
	const char *file;
	char *now;

	(void)p;
	reload_lock();
	file = reload_config_file();
	if (!file || !reload_running_text()) {
		reload_unlock();
		return ctl_fail(err, CTL_E_UNAVAILABLE,
				"the daemon runs the embedded default configuration: no file to compare");
	}
	now = conf_read_file(file, &errs);
	res = json_object_new_object();
	jadd(res, "file", json_object_new_string(file));
	jadd(res, "running", json_object_new_string(reload_running_text()));
	jadd(res, "on_disk", now ? json_object_new_string(now) : NULL);
	jadd(res, "same", json_object_new_boolean(now && !strcmp(now, reload_running_text())));
	if (!now)
		jadd(res, "error", json_object_new_string(errs.n ? errs.msgs[0] : "cannot read"));
	jadd(res, "overrides", overrides_json());
	reload_unlock();
	free(now);
	conf_errors_free(&errs);
	return res;
}
