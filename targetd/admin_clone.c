/*
 * Clones and snapshots of whole LUNs (targetctl lun clone, lun snapshot,
 * lun revert): the control methods lun.clone, lun.snapshot, lun.revert.
 *
 *   clone     a new writable LUN whose file is a clone of the source's
 *             (reflink: O(1); --copy: a copy that keeps holes)
 *   snapshot  the same, read-only, remembered as a snapshot of its LUN
 *             (the keys snapshot_of, snapshot_name, snapshot_time)
 *   revert    the LUN's blocks become the snapshot's again
 *
 * Point in time: the source's writers are held back while its file is
 * cloned (scsi_lun_freeze(): the exclusive range lock over every LBA,
 * taken once the writes in flight completed; then fdatasync, FICLONE,
 * release). So a clone holds every write acknowledged before the command
 * and none sent after it returned.
 *
 * Where the files go: --path FILE (relative: to the source file's
 * directory), else next to the source file, named after it: a clone of
 * vm.img as LUN 3 is vm-lun3.img, its snapshot "monday" vm@monday.img.
 * An existing file is never used (O_EXCL): the command is refused.
 *
 * The new LUN is then added to the configuration like `targetctl lun
 * add` (admin_change_locked(): validated, applied, written back
 * atomically); if that is refused, the file just created is removed
 * again, and nothing else changed.
 *
 * Revert, so that the LUN's blocks are never lost half way: the snapshot
 * is cloned to a temporary file next to the LUN's (PATH.targetd-revert),
 * synced; the LUN goes offline (NOT READY) and every command on it is let
 * to finish; the current file is kept as PATH.targetd-old (a hard link),
 * the temporary one renamed over PATH and the directory synced; the
 * backstore opens PATH again in place of the old file (backstore_reopen);
 * only then is PATH.targetd-old removed. A failure before the reopen puts
 * the old file back under PATH. Unit attentions: scsi_lun_content_replaced().
 *
 * DESIGN (threads): every method runs on the control thread and holds
 * reload_lock() throughout, so the LUNs it looks at stay (no reload or
 * other change runs meanwhile). Network threads are only held back
 * through the range lock and the offline flag, which they read.
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
#include "scsi/stats.h"
#include "targetd/control_int.h"
#include "targetd/reload.h"
#include "targetd/net.h"
#include "targetd/target.h"

#define CLONE_DRAIN_MS 30000   /* revert: commands in flight may take this long */

/* What a method works on, found under reload_lock(). */
struct clone_src {
	struct iscsi_target *t;
	struct scsi_lun *lun;            /* the running source LUN */
	const struct conf_lun *cl;       /* its configuration */
	const struct conf_target *ct;
};

static const struct conf_lun *clone_conf_lun(const struct conf_target *ct, unsigned id)
{
	for (unsigned i = 0; ct && i < ct->n_luns; i++)
		if (ct->luns[i].lun == id)
			return &ct->luns[i];
	return NULL;
}

/* The target named by "target", or the only one there is. */
static const char *clone_target_name(struct json_object *p, struct ctl_err *err)
{
	const char *iqn = NULL;
	unsigned live = 0;

	if (ctl_str(p, "target", false, &iqn, err))
		return iqn;
	if (ctl_failed(err))
		return NULL;
	for (unsigned i = 0; i < ctl_n_targets(); i++)
		if (ctl_target_live(&target_runtime->targets[i])) {
			live++;
			iqn = target_runtime->targets[i].iqn;
		}
	if (live == 1)
		return iqn;
	ctl_fail(err, CTL_E_PARAMS, "the daemon serves %u targets: name one (--target IQN)", live);
	return NULL;
}

/* The source LUN of param key ("lun") and its configuration. */
static bool clone_find(struct json_object *p, const char *key, struct clone_src *s,
		       struct ctl_err *err)
{
	const char *iqn = clone_target_name(p, err);
	uint64_t id = 0;

	memset(s, 0, sizeof(*s));
	ctl_uint(p, key, true, SCSI_MAX_LUNS - 1, &id, err);
	if (ctl_failed(err))
		return false;
	s->t = target_find(iqn);
	s->lun = s->t ? ctl_target_lun(s->t, (unsigned)id) : NULL;
	for (unsigned i = 0; s->lun && i < reload_running_conf()->n_targets; i++)
		if (!strcasecmp(reload_running_conf()->targets[i].iqn, s->t->iqn))
			s->ct = &reload_running_conf()->targets[i];
	s->cl = clone_conf_lun(s->ct, (unsigned)id);
	if (!s->lun || !s->cl) {
		ctl_fail(err, CTL_E_NOT_FOUND, "no LUN %u in target %s (targetctl luns lists them)",
			 (unsigned)id, iqn);
		return false;
	}
	if (strcmp(s->cl->backstore, "file") || !s->lun->bs) {
		ctl_fail(err, CTL_E_REFUSED, "target %s LUN %u is a %s LUN: only file LUNs are "
			 "cloned (their file, by reflink or copy)", s->t->iqn, s->lun->id,
			 s->cl->backstore);
		return false;
	}
	return true;
}

/* The LUN number for the new LUN: param key, or the lowest free one. */
static bool clone_new_id(struct json_object *p, const char *key, const struct clone_src *s,
			 unsigned *out, struct ctl_err *err)
{
	uint64_t id;

	if (ctl_uint(p, key, false, SCSI_MAX_LUNS - 1, &id, err)) {
		if (ctl_target_lun(s->t, (unsigned)id) || clone_conf_lun(s->ct, (unsigned)id)) {
			ctl_fail(err, CTL_E_EXISTS, "target %s has a LUN %u already", s->t->iqn,
				 (unsigned)id);
			return false;
		}
		*out = (unsigned)id;
		return true;
	}
	if (ctl_failed(err))
		return false;
	for (unsigned i = 0; i < SCSI_MAX_LUNS; i++)
		if (!ctl_target_lun(s->t, i) && !clone_conf_lun(s->ct, i)) {
			*out = i;
			return true;
		}
	ctl_fail(err, CTL_E_REFUSED, "target %s has no free LUN number", s->t->iqn);
	return false;
}

/* The new file's path (malloc'ed): given (relative: to the source file's
 * directory), or the source's, with tag before its extension. */
static char *clone_path(const char *src, const char *given, const char *tag)
{
	char *dir = strdup(src), *base = strdup(src), *out = NULL;
	const char *b, *d, *dot;

	if (!dir || !base)
		goto out;
	d = dirname(dir);
	b = basename(base);
	if (given) {
		if (given[0] == '/' || asprintf(&out, "%s/%s", d, given) < 0)
			out = given[0] == '/' ? strdup(given) : NULL;
		goto out;
	}
	dot = strrchr(b, '.');
	if (!dot || dot == b)
		dot = b + strlen(b);
	if (asprintf(&out, "%s/%.*s%s%s", d, (int)(dot - b), b, tag, dot) < 0)
		out = NULL;
out:
	free(dir);
	free(base);
	return out;
}

/* Clone s's file to path at one point in time (writers held back). */
static bool clone_file(const struct clone_src *s, const char *path, bool copy,
		       struct bs_clone_result *r, struct ctl_err *err)
{
	struct scsi_lun_freeze f;
	char msg[1024];
	int rc;

	if (scsi_lun_freeze(s->lun, &f)) {
		ctl_fail(err, CTL_E_INTERNAL, "out of memory");
		return false;
	}
	rc = backstore_clone(s->lun->bs, path, copy ? BS_CLONE_COPY : 0, r, msg, sizeof(msg));
	scsi_lun_thaw(&f);
	if (rc)
		ctl_fail(err, rc == -EOPNOTSUPP ? CTL_E_REFUSED : rc == -EEXIST ? CTL_E_EXISTS
			 : CTL_E_FAILED, "%s", msg);
	return !rc;
}

/* The new LUN's keys: the source's block size, size, thin and direct;
 * an identity of its own (serial, NAA from the target and LUN number). */
static void clone_spec(const struct clone_src *s, unsigned id, const char *path, char *size,
		       size_t cap, struct admin_lun_arg *a)
{
	memset(a, 0, sizeof(*a));
	conf_format_size(scsi_lun_nblocks(s->lun) << s->lun->block_shift, size, cap);
	a->iqn = s->t->iqn;
	a->lun = id;
	a->spec.lun = id;
	a->spec.backstore = "file";
	a->spec.path = path;
	a->spec.size = size;
	a->spec.block_size = s->lun->block_size;
	a->spec.thin = s->cl->thin ? -1 : 0;
	a->spec.read_only = -1;
	a->spec.removable = -1;
	a->spec.direct = s->cl->direct ? 1 : -1;
}

/* After the file was made: add the LUN; on refusal remove the file. */
static struct json_object *clone_commit(const char *what, struct admin_lun_arg *a,
					const char *path, const struct bs_clone_result *r,
					struct ctl_err *err)
{
	struct json_object *res = admin_change_locked(what, admin_edit_lun_add, a, NULL, err);

	if (!res) {
		if (unlink(path) < 0)   /* created by this command (O_EXCL) */
			log_warn("%s: cannot remove it after the refusal: %m", path);
		return NULL;
	}
	jadd(res, "lun", json_object_new_int((int)a->lun));
	jadd(res, "path", json_object_new_string(path));
	jadd(res, "reflinked", json_object_new_boolean(r->reflinked));
	jadd(res, "file_bytes", ju64(r->file_bytes));
	jadd(res, "copied_bytes", ju64(r->copied));
	log_event(LOG_LVL_INFO, "lun_cloned", KV_S("target", a->iqn), KV_U("lun", a->lun),
		  KV_S("path", path), KV_S("how", r->reflinked ? "reflink" : "copy"),
		  KV_U("copied_bytes", r->copied), KV_S("by", what));
	return res;
}

struct json_object *admin_lun_clone(struct json_object *p, struct ctl_err *err)
{
	struct json_object *res = NULL;
	struct bs_clone_result r;
	struct admin_lun_arg a;
	struct clone_src s;
	const char *given = NULL;
	char tag[16], size[32], *path = NULL;
	bool copy = false;
	unsigned id;

	ctl_str(p, "path", false, &given, err);
	ctl_bool(p, "copy", &copy, err);
	if (ctl_failed(err))
		return NULL;
	reload_lock();
	if (!admin_change_possible(err) || !clone_find(p, "lun", &s, err) ||
	    !clone_new_id(p, "new", &s, &id, err))
		goto out;
	snprintf(tag, sizeof(tag), "-lun%u", id);
	path = clone_path(s.cl->path, given, tag);
	if (!path) {
		ctl_fail(err, CTL_E_INTERNAL, "out of memory");
		goto out;
	}
	if (!clone_file(&s, path, copy, &r, err))
		goto out;
	clone_spec(&s, id, path, size, sizeof(size), &a);
	res = clone_commit(copy ? "lun clone --copy" : "lun clone", &a, path, &r, err);
out:
	reload_unlock();
	free(path);
	return res;
}

struct json_object *admin_lun_snapshot(struct json_object *p, struct ctl_err *err)
{
	struct json_object *res = NULL;
	struct bs_clone_result r;
	struct admin_lun_arg a;
	struct clone_src s;
	const char *given = NULL, *name = NULL, *why;
	char tag[CONF_SNAPSHOT_NAME_MAX + 2], size[32], stamp[32], *path = NULL;
	bool copy = false;
	time_t now = time(NULL);
	struct tm tm;
	unsigned id;

	ctl_str(p, "name", true, &name, err);
	ctl_str(p, "path", false, &given, err);
	ctl_bool(p, "copy", &copy, err);
	if (ctl_failed(err))
		return NULL;
	if ((why = conf_snapshot_name_error(name)))
		return ctl_fail(err, CTL_E_PARAMS, "snapshot name \"%s\" %s", name, why);
	reload_lock();
	if (!admin_change_possible(err) || !clone_find(p, "lun", &s, err) ||
	    !clone_new_id(p, "new", &s, &id, err))
		goto out;
	if (conf_lun_is_snapshot(s.cl)) {
		ctl_fail(err, CTL_E_REFUSED, "target %s LUN %u is a snapshot itself (of LUN %d): "
			 "snapshot LUN %d, or clone this one first", s.t->iqn, s.lun->id,
			 s.cl->snapshot_of, s.cl->snapshot_of);
		goto out;
	}
	for (unsigned i = 0; i < s.ct->n_luns; i++)
		if (conf_lun_is_snapshot(&s.ct->luns[i]) &&
		    (unsigned)s.ct->luns[i].snapshot_of == s.lun->id &&
		    !strcmp(s.ct->luns[i].snapshot_name, name)) {
			ctl_fail(err, CTL_E_EXISTS, "target %s LUN %u has a snapshot \"%s\" already "
				 "(LUN %u)", s.t->iqn, s.lun->id, name, s.ct->luns[i].lun);
			goto out;
		}
	snprintf(tag, sizeof(tag), "@%s", name);
	path = clone_path(s.cl->path, given, tag);
	if (!path) {
		ctl_fail(err, CTL_E_INTERNAL, "out of memory");
		goto out;
	}
	if (!clone_file(&s, path, copy, &r, err))
		goto out;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	clone_spec(&s, id, path, size, sizeof(size), &a);
	a.spec.read_only = 1;
	a.spec.snapshot_of = s.lun->id;
	a.spec.snapshot_name = name;
	a.spec.snapshot_time = stamp;
	res = clone_commit(copy ? "lun snapshot --copy" : "lun snapshot", &a, path, &r, err);
	if (res)
		jadd(res, "snapshot_time", json_object_new_string(stamp));
out:
	reload_unlock();
	free(path);
	return res;
}

/* ---- revert ------------------------------------------------------------------ */

/* Take the LUN offline and wait until no command holds it (every command
 * that could touch its backstore has ended; new ones answer NOT READY). */
static bool revert_drain(struct scsi_lun *lun, struct ctl_err *err)
{
	uint64_t deadline;

	atomic_store(&lun->offline, true);
	net_synchronize();   /* a command parsed before the store has its hold counted */
	deadline = net_now_ms() + CLONE_DRAIN_MS;
	while (scsi_stats_lun_busy(lun)) {
		struct timespec ts = { 0, 5 * 1000000 };

		if (net_now_ms() > deadline) {
			ctl_fail(err, CTL_E_REFUSED, "LUN %u: commands still hold it after %u ms; "
				 "nothing was changed (try again when it is idle)", lun->id,
				 CLONE_DRAIN_MS);
			return false;
		}
		nanosleep(&ts, NULL);
	}
	return true;
}

/* The snapshot of LUN s named name (its configuration and running LUN). */
static bool revert_find_snapshot(const struct clone_src *s, const char *name,
				 struct clone_src *snap, struct ctl_err *err)
{
	*snap = *s;
	snap->cl = NULL;
	for (unsigned i = 0; i < s->ct->n_luns; i++)
		if (conf_lun_is_snapshot(&s->ct->luns[i]) &&
		    (unsigned)s->ct->luns[i].snapshot_of == s->lun->id &&
		    !strcmp(s->ct->luns[i].snapshot_name, name))
			snap->cl = &s->ct->luns[i];
	snap->lun = snap->cl ? ctl_target_lun(s->t, snap->cl->lun) : NULL;
	if (!snap->lun || !snap->lun->bs) {
		ctl_fail(err, CTL_E_NOT_FOUND, "target %s LUN %u has no snapshot \"%s\" "
			 "(targetctl luns lists them)", s->t->iqn, s->lun->id, name);
		return false;
	}
	if (snap->lun->block_size != s->lun->block_size) {
		ctl_fail(err, CTL_E_REFUSED, "snapshot \"%s\" has %u-byte blocks, LUN %u %u-byte ones",
			 name, snap->lun->block_size, s->lun->id, s->lun->block_size);
		return false;
	}
	return true;
}

/*
 * The swap itself, LUN drained and offline, tmp holding the snapshot's
 * blocks: keep the current file as old, rename tmp over the LUN's path,
 * sync the directory, reopen. Any failure before the reopen succeeded
 * puts the old file back. 0, or -1 with err.
 */
static int revert_swap(struct scsi_lun *lun, const char *path, const char *tmp, const char *old,
		       uint64_t bytes, struct ctl_err *err)
{
	char msg[512], *dir = strdup(path);
	int fd, e;

	unlink(old);   /* a leftover of an interrupted revert: ours by its name */
	if (link(path, old) < 0) {
		e = errno;
		free(dir);
		ctl_fail(err, CTL_E_FAILED, "cannot keep %s as %s: %s; nothing was changed", path, old,
			 strerror(e));
		return -1;
	}
	if (rename(tmp, path) < 0) {
		e = errno;
		unlink(old);
		free(dir);
		ctl_fail(err, CTL_E_FAILED, "cannot rename %s to %s: %s; nothing was changed", tmp,
			 path, strerror(e));
		return -1;
	}
	fd = dir ? open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd < 0 || fsync(fd) < 0)
		log_warn("%s: cannot sync its directory: %m", path);
	if (fd >= 0)
		close(fd);
	free(dir);
	if (backstore_reopen(lun->bs, bytes, msg, sizeof(msg))) {
		if (rename(old, path) < 0)
			log_err("%s: revert failed and the old file could not be put back: it is %s "
				"(rename it to %s by hand)", path, old, path);
		ctl_fail(err, CTL_E_FAILED, "%s; the LUN keeps its blocks", msg);
		return -1;
	}
	if (unlink(old) < 0)
		log_warn("%s: cannot remove it after the revert: %m", old);
	return 0;
}

/* Set the LUN's size key to the snapshot's when it has one that differs
 * (so a restart serves the same size). */
static struct json_object *revert_commit(const struct clone_src *s, uint64_t bytes,
					 struct ctl_err *err)
{
	struct admin_lun_arg a = { .iqn = s->t->iqn, .lun = s->lun->id, .key = "size" };
	char canon[32];

	if (!s->cl->size || s->cl->size == bytes) {
		struct json_object *res = json_object_new_object();

		jadd(res, "changes", json_object_new_array());
		return res;
	}
	conf_format_size(bytes, canon, sizeof(canon));
	a.str = canon;
	return admin_change_locked("lun revert", admin_edit_lun_set, &a, NULL, err);
}

/* Revert, once the source and snapshot are found (reload_lock held). */
static struct json_object *revert_locked(const struct clone_src *s, const struct clone_src *snap,
					 bool copy, struct ctl_err *err)
{
	uint64_t bytes = scsi_lun_nblocks(snap->lun) << snap->lun->block_shift;
	bool was_offline = atomic_load(&s->lun->offline);
	struct json_object *res = NULL;
	struct bs_clone_result r;
	char *tmp = NULL, *old = NULL;

	if (s->cl->size && s->cl->size != bytes && !admin_change_possible(err))
		return NULL;
	if (asprintf(&tmp, "%s.targetd-revert", s->cl->path) < 0 ||
	    asprintf(&old, "%s.targetd-old", s->cl->path) < 0) {
		free(tmp);
		return ctl_fail(err, CTL_E_INTERNAL, "out of memory");
	}
	unlink(tmp);   /* a leftover of an interrupted revert: ours by its name */
	if (!clone_file(snap, tmp, copy, &r, err))
		goto out;
	if (!revert_drain(s->lun, err)) {
		unlink(tmp);
		goto out;
	}
	if (revert_swap(s->lun, s->cl->path, tmp, old, bytes, err)) {
		unlink(tmp);
		goto out;
	}
	scsi_lun_content_replaced(s->lun, bytes >> s->lun->block_shift);
	atomic_store(&s->lun->offline, was_offline);
	log_event(LOG_LVL_WARN, "lun_reverted", KV_S("target", s->t->iqn), KV_U("lun", s->lun->id),
		  KV_S("snapshot", snap->cl->snapshot_name), KV_U("snapshot_lun", snap->lun->id),
		  KV_U("size_bytes", bytes), KV_S("how", r.reflinked ? "reflink" : "copy"),
		  KV_S("by", "lun revert"));
	res = revert_commit(s, bytes, err);
	if (res) {
		jadd(res, "lun", json_object_new_int(s->lun->id));
		jadd(res, "snapshot_lun", json_object_new_int(snap->lun->id));
		jadd(res, "size_bytes", ju64(bytes));
		jadd(res, "reflinked", json_object_new_boolean(r.reflinked));
	}
out:
	atomic_store(&s->lun->offline, was_offline);
	free(tmp);
	free(old);
	return res;
}

struct json_object *admin_lun_revert(struct json_object *p, struct ctl_err *err)
{
	struct json_object *res = NULL;
	struct clone_src s, snap;
	const char *name = NULL;
	bool copy = false;

	ctl_str(p, "snapshot", true, &name, err);
	ctl_bool(p, "copy", &copy, err);
	if (ctl_failed(err))
		return NULL;
	reload_lock();
	if (clone_find(p, "lun", &s, err) && revert_find_snapshot(&s, name, &snap, err)) {
		if (conf_lun_is_snapshot(s.cl))
			ctl_fail(err, CTL_E_REFUSED, "target %s LUN %u is a snapshot: it is never "
				 "written, so there is nothing to revert", s.t->iqn, s.lun->id);
		else
			res = revert_locked(&s, &snap, copy, err);
	}
	reload_unlock();
	return res;
}
