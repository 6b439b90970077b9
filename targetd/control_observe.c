/*
 * Control methods for workload histograms and command traces; see
 * targetd/control_observe.h. Runs on the control thread.
 */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "common/iscsi_name.h"
#include "scsi/histo.h"
#include "targetd/reload.h"
#include "targetd/control_observe.h"
#include "targetd/histo_out.h"
#include "targetd/target.h"
#include "targetd/trace.h"

static struct json_object *fail(struct observe_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static struct json_object *fail(struct observe_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return NULL;
}

/* A string parameter: true when present (and a string). */
static bool pstr(struct json_object *p, const char *k, const char **out, struct observe_err *e)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(p, k, &v) || !v)
		return false;
	if (!json_object_is_type(v, json_type_string)) {
		fail(e, OBS_E_PARAMS, "\"%s\" must be a string", k);
		return false;
	}
	*out = json_object_get_string(v);
	return true;
}

/* An integer parameter in [0, max]: true when present and valid. */
static bool pint(struct json_object *p, const char *k, int64_t max, int64_t *out,
		 struct observe_err *e)
{
	struct json_object *v;

	if (!json_object_object_get_ex(p, k, &v) || !v)
		return false;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
	    json_object_get_int64(v) > max) {
		fail(e, OBS_E_PARAMS, "\"%s\" must be an integer from 0 to %lld", k, (long long)max);
		return false;
	}
	*out = json_object_get_int64(v);
	return true;
}

/* The target a request names, or the only one (under reload_read_lock). */
static struct iscsi_target *find_target(struct json_object *p, struct observe_err *e)
{
	struct iscsi_target *only = NULL;
	unsigned n = __atomic_load_n(&target_runtime->n_targets, __ATOMIC_ACQUIRE), live = 0;
	const char *iqn;

	pstr(p, "target", &iqn, e);
	if (e->code)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE))
			continue;
		if (iqn && !strcasecmp(iqn, t->iqn))
			return t;
		live++;
		only = t;
	}
	if (iqn)
		fail(e, OBS_E_NOT_FOUND, "no target %s (targetctl targets lists them)", iqn);
	else if (live != 1)
		fail(e, OBS_E_PARAMS, "%u targets: say which (\"target\")", live);
	return iqn || live != 1 ? NULL : only;
}

static struct scsi_lun *find_lun(struct json_object *p, struct iscsi_target **tp,
				 struct observe_err *e)
{
	struct iscsi_target *t = find_target(p, e);
	struct scsi_lun *lun;
	int64_t id;

	if (!t)
		return NULL;
	if (!pint(p, "lun", SCSI_MAX_LUNS - 1, &id, e)) {
		if (!e->code)
			fail(e, OBS_E_PARAMS, "\"lun\" is required");
		return NULL;
	}
	lun = scsi_target_lun(&t->st, (uint64_t)id);
	if (!lun)
		fail(e, OBS_E_NOT_FOUND, "target %s has no LUN %lld", t->iqn, (long long)id);
	*tp = t;
	return lun;
}

/* The optional initiator parameter, checked as an iSCSI name. */
static bool initiator_param(struct json_object *p, const char **out, struct observe_err *e)
{
	static __thread char norm[ISCSI_NAME_MAX + 1];
	const char *why;

	if (!pstr(p, "initiator", out, e))
		return !e->code;
	why = iscsi_name_normalize(*out, norm);
	if (why) {
		fail(e, OBS_E_PARAMS, "initiator %s: %s", *out, why);
		return false;
	}
	*out = norm;
	return true;
}

struct json_object *observe_histo(struct json_object *p, struct observe_err *e)
{
	struct iscsi_target *t = NULL;
	struct json_object *r = NULL;
	const char *who = NULL;
	struct scsi_lun *lun;

	if (!initiator_param(p, &who, e))
		return NULL;
	reload_read_lock();
	lun = find_lun(p, &t, e);
	if (lun) {
		r = histo_lun_json(t->iqn, lun, who);
		if (!r)
			fail(e, OBS_E_NOT_FOUND, "LUN %u keeps no histograms for %s (histo on ... "
			     "--initiator adds them)", lun->id, who ? who : "all initiators");
	}
	reload_read_unlock();
	return r;
}

static struct json_object *histo_change(struct json_object *p, struct observe_err *e, int what)
{
	struct iscsi_target *t = NULL;
	const char *who = NULL;
	struct scsi_lun *lun;
	int rc = 0;

	if (!initiator_param(p, &who, e))
		return NULL;
	reload_read_lock();
	lun = find_lun(p, &t, e);
	if (!lun) {
		reload_read_unlock();
		return NULL;
	}
	switch (what) {
	case 'n':
		if (who)
			rc = scsi_histo_add_initiator(lun, who);
		scsi_histo_set_enabled(lun, true);
		break;
	case 'f':
		if (who)
			rc = scsi_histo_remove_initiator(lun, who);
		else
			scsi_histo_set_enabled(lun, false);
		break;
	default:
		rc = scsi_histo_reset(lun, who);
		break;
	}
	reload_read_unlock();
	if (rc == -EEXIST)
		return fail(e, OBS_E_REFUSED, "LUN %u keeps histograms for %s already", lun->id, who);
	if (rc == -ENOSPC)
		return fail(e, OBS_E_REFUSED, "LUN %u keeps histograms for %d initiators already; "
			    "histo off ... --initiator one of them first", lun->id, HISTO_MAX_INITIATORS);
	if (rc == -ENOENT)
		return fail(e, OBS_E_NOT_FOUND, "LUN %u keeps no histograms for %s", lun->id, who);
	if (rc)
		return fail(e, OBS_E_FAILED, "LUN %u: %s", lun->id, strerror(-rc));
	reload_read_lock();
	struct json_object *r = json_object_new_object();
	json_object_object_add(r, "target", json_object_new_string(t->iqn));
	json_object_object_add(r, "lun", json_object_new_int(lun->id));
	json_object_object_add(r, "enabled", json_object_new_boolean(scsi_histo_enabled(lun)));
	reload_read_unlock();
	return r;
}

struct json_object *observe_histo_on(struct json_object *p, struct observe_err *e)
{
	return histo_change(p, e, 'n');
}

struct json_object *observe_histo_off(struct json_object *p, struct observe_err *e)
{
	return histo_change(p, e, 'f');
}

struct json_object *observe_histo_reset(struct json_object *p, struct observe_err *e)
{
	return histo_change(p, e, 'r');
}

/* ---- traces ------------------------------------------------------------- */

static struct json_object *trace_json(const struct trace_status *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "active", json_object_new_boolean(s->active));
	if (!s->path[0])
		return o;
	json_object_object_add(o, "file", json_object_new_string(s->path));
	json_object_object_add(o, "target", json_object_new_string(s->target));
	json_object_object_add(o, "lun", s->lun < 0 ? NULL : json_object_new_int(s->lun));
	json_object_object_add(o, "initiator", s->initiator[0] ? json_object_new_string(s->initiator)
							      : NULL);
	json_object_object_add(o, "data", json_object_new_boolean(s->data));
	json_object_object_add(o, "max_bytes", json_object_new_uint64(s->max_bytes));
	json_object_object_add(o, "commands", json_object_new_uint64(s->commands));
	json_object_object_add(o, "dropped", json_object_new_uint64(s->dropped));
	json_object_object_add(o, "dropped_file_full", json_object_new_uint64(s->dropped_full));
	json_object_object_add(o, "bytes", json_object_new_uint64(s->bytes));
	json_object_object_add(o, "started", json_object_new_double((double)s->started_real_ns / 1e9));
	return o;
}

/* <state_dir>/trace-YYYYmmdd-HHMMSS.tdt */
static void default_trace_path(char *out, size_t cap)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	snprintf(out, cap, "%s/trace-%04d%02d%02d-%02d%02d%02d.tdt",
		 target_runtime->conf && target_runtime->conf->state_dir ? target_runtime->conf->state_dir
									  : ".",
		 tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

struct json_object *observe_trace_start(struct json_object *p, struct observe_err *e)
{
	struct trace_params tp = { .lun = -1 };
	struct trace_status st;
	struct json_object *v;
	char path[4096], why[512];
	const char *file = NULL;
	int64_t lun, mb;
	int rc;

	if (!initiator_param(p, &tp.initiator, e))
		return NULL;
	if (pstr(p, "file", &file, e) && file[0] != '/')
		return fail(e, OBS_E_PARAMS, "file %s: give an absolute path (the daemon's directory "
			    "is not yours)", file);
	if (e->code)
		return NULL;
	if (pint(p, "max_mb", 1 << 20, &mb, e))
		tp.max_bytes = (uint64_t)mb << 20;
	if (pint(p, "lun", SCSI_MAX_LUNS - 1, &lun, e))
		tp.lun = (int)lun;
	if (e->code)
		return NULL;
	if (json_object_object_get_ex(p, "data", &v) && v) {
		if (!json_object_is_type(v, json_type_boolean))
			return fail(e, OBS_E_PARAMS, "\"data\" must be true or false");
		tp.data = json_object_get_boolean(v);
	}
	if (file)
		snprintf(path, sizeof(path), "%s", file);
	else
		default_trace_path(path, sizeof(path));
	tp.path = path;
	tp.n_threads = target_runtime->n_threads;
	reload_read_lock();
	tp.target = find_target(p, e);
	if (tp.target && tp.lun >= 0 && !scsi_target_lun(&tp.target->st, (uint64_t)tp.lun))
		fail(e, OBS_E_NOT_FOUND, "target %s has no LUN %d", tp.target->iqn, tp.lun);
	rc = e->code ? -1 : trace_start(&tp, why, sizeof(why));
	reload_read_unlock();
	if (e->code)
		return NULL;
	if (rc)
		return fail(e, OBS_E_REFUSED, "%s", why);
	trace_get_status(&st);
	return trace_json(&st);
}

struct json_object *observe_trace_stop(struct json_object *p, struct observe_err *e)
{
	struct trace_status st;

	(void)p;
	if (trace_stop(&st))
		return fail(e, OBS_E_NOT_FOUND, "no trace runs");
	return trace_json(&st);
}

struct json_object *observe_trace_status(struct json_object *p, struct observe_err *e)
{
	struct trace_status st;

	(void)p;
	(void)e;
	trace_get_status(&st);
	return trace_json(&st);
}
