/*
 * The control socket: a UNIX stream socket (mode 0600) speaking JSON lines,
 * version 1, documented in targetctl(8).
 *
 *   request:  {"version":1,"command":"stats","target":"iqn...","lun":0}
 *   reply:    {"version":1,"ok":true,"result":...}
 *             {"version":1,"ok":false,"error":"...","errors":["..."]}
 *
 * Commands: status, targets, luns, sessions, stats, reset, reload.
 *
 * DESIGN (threads): one control thread, not a network thread. It polls the
 * listening socket, up to CONTROL_MAX_CLIENTS clients and a stop eventfd,
 * and answers each complete line in order. It reads the runtime (targets,
 * LUNs) under reload_read_lock(); it reads sessions by asking every
 * network thread to describe its own (net_call_all), so it never touches a
 * connection another thread owns; counters come from scsi_stats_snapshot()
 * (lock-free for the data path). A reload asked here runs on this thread
 * (clients wait for it, which is what `targetctl reload` wants).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "scsi/stats.h"
#include "targetd/conn.h"
#include "targetd/control.h"
#include "targetd/control_observe.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"

#define CONTROL_MAX_CLIENTS 16
#define CONTROL_LINE_MAX 65536

struct control_client {
	int fd;
	char *buf;
	size_t len;
};

static pthread_t control_tid;
static bool control_running;
static int control_fd = -1;
static int control_stop_fd = -1;
static char control_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static struct control_client clients[CONTROL_MAX_CLIENTS];
static time_t control_started;

/* ---- JSON helpers ------------------------------------------------------- */

static void jadd(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}

static struct json_object *ju64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* The space of a LUN (target_lun_space()) into o. */
static void space_json(struct json_object *o, const struct target_space *sp)
{
	jadd(o, "provisioned_bytes", ju64(sp->provisioned));
	jadd(o, "allocated_bytes", ju64(sp->allocated));
	jadd(o, "shared_bytes", ju64(sp->shared));
	jadd(o, "saved_bytes", ju64(sp->saved));
	jadd(o, "saved_percent", json_object_new_double(
		sp->provisioned ? 100.0 * (double)sp->saved / (double)sp->provisioned : 0.0));
	jadd(o, "pool_size_bytes", ju64(sp->pool_size));
	jadd(o, "pool_free_bytes", ju64(sp->pool_free));
	if (sp->shared_partial)
		jadd(o, "shared_partial", json_object_new_boolean(true));
}

static const char *const status_names[STATS_ST__COUNT] = {
	[STATS_ST_GOOD] = "good",
	[STATS_ST_CHECK_CONDITION] = "check_condition",
	[STATS_ST_CONDITION_MET] = "condition_met",
	[STATS_ST_BUSY] = "busy",
	[STATS_ST_RESERVATION_CONFLICT] = "reservation_conflict",
	[STATS_ST_TASK_SET_FULL] = "task_set_full",
	[STATS_ST_ACA_ACTIVE] = "aca_active",
	[STATS_ST_TASK_ABORTED] = "task_aborted",
	[STATS_ST_OTHER] = "other",
};

static struct json_object *opcode_list(const uint64_t *v, uint64_t *total)
{
	struct json_object *a = json_object_new_array();

	*total = 0;
	for (unsigned i = 0; i < 256; i++) {
		struct json_object *e;
		const char *name;
		char hex[8];

		if (!v[i])
			continue;
		*total += v[i];
		e = json_object_new_object();
		snprintf(hex, sizeof(hex), "0x%02x", i);
		name = scsi_stats_opcode_name((uint8_t)i);
		jadd(e, "opcode", json_object_new_int((int)i));
		jadd(e, "hex", json_object_new_string(hex));
		jadd(e, "name", json_object_new_string(name ? name : hex));
		jadd(e, "count", ju64(v[i]));
		json_object_array_add(a, e);
	}
	return a;
}

static struct json_object *latency_json(const struct scsi_stats_counters *c, unsigned cls)
{
	struct json_object *o = json_object_new_object();
	struct json_object *b = json_object_new_array();
	uint64_t count = 0;

	for (unsigned i = 0; i < SCSI_STATS_LAT_BUCKETS; i++) {
		struct json_object *e = json_object_new_object();
		uint64_t le = scsi_stats_bucket_le_us(i);

		count += c->lat[cls][i];
		if (le == UINT64_MAX)
			jadd(e, "le_us", json_object_new_string("+Inf"));
		else
			jadd(e, "le_us", ju64(le));
		jadd(e, "count", ju64(c->lat[cls][i]));
		json_object_array_add(b, e);
	}
	jadd(o, "count", ju64(count));
	jadd(o, "sum_us", json_object_new_double((double)c->lat_sum_ns[cls] / 1000.0));
	jadd(o, "p50_us", json_object_new_double(scsi_stats_quantile_us(c->lat[cls], 0.50)));
	jadd(o, "p99_us", json_object_new_double(scsi_stats_quantile_us(c->lat[cls], 0.99)));
	jadd(o, "buckets", b);
	return o;
}

static struct json_object *sa_list(const uint64_t *v)
{
	struct json_object *a = json_object_new_array();

	for (unsigned i = 0; i < 32; i++) {
		struct json_object *e;

		if (!v[i])
			continue;
		e = json_object_new_object();
		jadd(e, "service_action", json_object_new_int((int)i));
		jadd(e, "count", ju64(v[i]));
		json_object_array_add(a, e);
	}
	return a;
}

struct json_object *control_lun_stats_json(const char *iqn, struct scsi_lun *lun)
{
	struct scsi_stats_counters *c = malloc(sizeof(*c));
	struct json_object *o, *x, *y;
	uint64_t total;

	if (!c)
		return NULL;
	scsi_stats_snapshot(lun, c);
	o = json_object_new_object();
	jadd(o, "target", json_object_new_string(iqn));
	jadd(o, "lun", json_object_new_int(lun->id));

	x = json_object_new_object();
	y = opcode_list(c->ops, &total);
	jadd(x, "total", ju64(total));
	jadd(x, "by_opcode", y);
	jadd(o, "commands", x);

	x = json_object_new_object();
	for (unsigned i = 0; i < STATS_ST__COUNT; i++)
		jadd(x, status_names[i], ju64(c->status[i]));
	jadd(o, "status", x);

	x = json_object_new_object();
	for (unsigned i = 0; i < 16; i++)
		if (c->sense_key[i])
			jadd(x, scsi_sense_key_name(i), ju64(c->sense_key[i]));
	jadd(o, "sense_keys", x);

	x = json_object_new_object();
	jadd(x, "commands", ju64(c->read_cmds));
	jadd(x, "bytes", ju64(c->read_bytes));
	jadd(o, "read", x);
	x = json_object_new_object();
	jadd(x, "commands", ju64(c->write_cmds));
	jadd(x, "bytes", ju64(c->write_bytes));
	jadd(o, "write", x);

	x = json_object_new_object();
	jadd(x, "read", latency_json(c, STATS_LAT_READ));
	jadd(x, "write", latency_json(c, STATS_LAT_WRITE));
	jadd(x, "vaai", latency_json(c, STATS_LAT_VAAI));
	jadd(o, "latency", x);

	x = json_object_new_object();
	y = json_object_new_object();
	jadd(y, "success", ju64(c->ats_ok));
	jadd(y, "miscompare", ju64(c->ats_miscompare));
	jadd(x, "compare_and_write", y);
	y = json_object_new_object();
	jadd(y, "commands", ju64(c->xcopy_cmds));
	jadd(y, "segments", ju64(c->xcopy_segments));
	jadd(y, "bytes", ju64(c->xcopy_bytes));
	jadd(y, "reflink_blocks", ju64(c->xcopy_reflink_blocks));
	jadd(x, "extended_copy", y);
	y = json_object_new_object();
	jadd(y, "commands", ju64(c->ws_cmds));
	jadd(y, "blocks", ju64(c->ws_blocks));
	jadd(x, "write_same", y);
	y = json_object_new_object();
	jadd(y, "commands", ju64(c->unmap_cmds));
	jadd(y, "blocks", ju64(c->unmap_blocks));
	jadd(x, "unmap", y);
	jadd(o, "vaai", x);
	x = json_object_new_object();
	jadd(x, "commands", ju64(c->zero_detect_cmds));
	jadd(x, "bytes", ju64(c->zero_detect_bytes));
	jadd(o, "zero_detect", x);

	x = json_object_new_object();
	jadd(x, "reserve", ju64(c->reserve));
	jadd(x, "release", ju64(c->release));
	y = json_object_new_object();
	{
		struct json_object *l = opcode_list(c->conflicts, &total);

		jadd(y, "total", ju64(total));
		jadd(y, "by_opcode", l);
	}
	jadd(x, "conflicts", y);
	jadd(x, "pr_in", sa_list(c->pr_in));
	jadd(x, "pr_out", sa_list(c->pr_out));
	jadd(o, "reservations", x);

	x = json_object_new_object();
	y = json_object_new_object();
	for (unsigned i = 0; i < 16; i++) {
		const char *n = scsi_stats_tmf_name((uint8_t)i);

		if (n && c->tmf[i])
			jadd(y, n, ju64(c->tmf[i]));
	}
	jadd(x, "by_function", y);
	jadd(x, "aborts", ju64(c->aborts));
	jadd(o, "task_management", x);
	jadd(o, "unit_attentions", ju64(c->ua));
	{
		/* The space the LUN holds (st_blocks for a file): what thin
		 * provisioning, UNMAP, zero detection and shared-block copies
		 * change; and the rest of the df -s view in "space". */
		struct target_space sp;

		if (target_lun_space(lun, &sp)) {
			struct json_object *spo = json_object_new_object();

			jadd(o, "allocated_bytes", ju64(sp.allocated));
			space_json(spo, &sp);
			jadd(o, "space", spo);
		}
	}
	free(c);
	return o;
}

/* ---- commands ----------------------------------------------------------- */

static struct json_object *reply_ok(struct json_object *result)
{
	struct json_object *r = json_object_new_object();

	jadd(r, "version", json_object_new_int(CONTROL_PROTOCOL_VERSION));
	jadd(r, "ok", json_object_new_boolean(1));
	jadd(r, "result", result ? result : json_object_new_object());
	return r;
}

static struct json_object *reply_err(const char *msg, struct json_object *errors)
{
	struct json_object *r = json_object_new_object();

	jadd(r, "version", json_object_new_int(CONTROL_PROTOCOL_VERSION));
	jadd(r, "ok", json_object_new_boolean(0));
	jadd(r, "error", json_object_new_string(msg));
	if (errors)
		jadd(r, "errors", errors);
	return r;
}

static unsigned runtime_n_targets(void)
{
	return __atomic_load_n(&target_runtime->n_targets, __ATOMIC_ACQUIRE);
}

static bool target_live(const struct iscsi_target *t)
{
	return !__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE);
}

static struct scsi_lun *target_lun(struct iscsi_target *t, unsigned id)
{
	return scsi_target_lun(&t->st, id);
}

static struct json_object *cmd_status(void)
{
	struct json_object *o = json_object_new_object();
	unsigned nt = 0, nl = 0;

	reload_read_lock();
	for (unsigned i = 0; i < runtime_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (!target_live(t))
			continue;
		nt++;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++)
			nl += target_lun(t, k) != NULL;
	}
	jadd(o, "version", json_object_new_string(VERSION));
	jadd(o, "pid", json_object_new_int((int)getpid()));
	jadd(o, "uptime_s", json_object_new_int64((int64_t)(time(NULL) - control_started)));
	jadd(o, "threads", json_object_new_int((int)target_runtime->n_threads));
	jadd(o, "targets", json_object_new_int((int)nt));
	jadd(o, "luns", json_object_new_int((int)nl));
	jadd(o, "sessions", json_object_new_int((int)iscsi_session_count()));
	jadd(o, "config", reload_config_file() ? json_object_new_string(reload_config_file())
					      : json_object_new_string("<embedded>"));
	jadd(o, "control_socket", json_object_new_string(control_path));
	jadd(o, "metrics_listen", target_runtime->conf->metrics_listen
					  ? json_object_new_string(target_runtime->conf->metrics_listen)
					  : NULL);
	jadd(o, "reloads", json_object_new_int((int)reload_count()));
	reload_read_unlock();
	return o;
}

static struct json_object *cmd_targets(void)
{
	struct json_object *a = json_object_new_array();

	reload_read_lock();
	for (unsigned i = 0; i < runtime_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];
		struct json_object *o, *luns, *acl;

		if (!target_live(t))
			continue;
		o = json_object_new_object();
		luns = json_object_new_array();
		jadd(o, "iqn", json_object_new_string(t->iqn));
		jadd(o, "alias", json_object_new_string(t->alias));
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++)
			if (target_lun(t, k))
				json_object_array_add(luns, json_object_new_int((int)k));
		jadd(o, "luns", luns);
		target_acl_wrlock();   /* a short, consistent look at the ACL */
		if (t->has_acl) {
			acl = json_object_new_array();
			for (unsigned k = 0; k < t->n_initiators; k++)
				json_object_array_add(acl, json_object_new_string(t->initiators[k]));
		} else {
			acl = NULL;
		}
		jadd(o, "chap", json_object_new_boolean(t->chap));
		target_acl_unlock();
		jadd(o, "initiators", acl);
		json_object_array_add(a, o);
	}
	reload_read_unlock();
	return a;
}

static struct json_object *lun_json(const struct iscsi_target *t, struct scsi_lun *lun)
{
	struct json_object *o = json_object_new_object();
	const struct backstore *bs = lun->bs;
	struct target_space sp;
	char naa[40];

	snprintf(naa, sizeof(naa), "%016llx%016llx", (unsigned long long)lun->naa,
		 (unsigned long long)lun->naa_ext);
	jadd(o, "target", json_object_new_string(t->iqn));
	jadd(o, "lun", json_object_new_int(lun->id));
	jadd(o, "backstore", json_object_new_string(bs && bs->ops ? bs->ops->name : "?"));
	jadd(o, "path", bs && bs->path ? json_object_new_string(bs->path) : NULL);
	jadd(o, "block_size", json_object_new_int((int)lun->block_size));
	jadd(o, "blocks", ju64(scsi_lun_nblocks(lun)));
	jadd(o, "size_bytes", ju64(scsi_lun_nblocks(lun) << lun->block_shift));
	jadd(o, "read_only", json_object_new_boolean(lun->read_only));
	jadd(o, "thin", json_object_new_boolean(lun->thin));
	jadd(o, "hard_limit_bytes", ju64(lun->hard_limit));
	jadd(o, "soft_threshold_bytes", ju64(lun->soft_threshold));
	jadd(o, "pool_soft_threshold_percent", json_object_new_int(lun->pool_threshold_pct));
	jadd(o, "soft_threshold_reached", json_object_new_boolean(atomic_load(&lun->soft_reached)));
	if (target_lun_space(lun, &sp))
		space_json(o, &sp);
	jadd(o, "zero_detect", json_object_new_string(lun->zero_detect == SCSI_ZD_UNMAP ? "unmap"
						      : lun->zero_detect == SCSI_ZD_ON ? "on"
						      : "off"));
	jadd(o, "serial", json_object_new_string(lun->serial));
	jadd(o, "naa", json_object_new_string(naa));
	return o;
}

static struct json_object *cmd_luns(void)
{
	struct json_object *a = json_object_new_array();

	reload_read_lock();
	for (unsigned i = 0; i < runtime_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (!target_live(t))
			continue;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = target_lun(t, k);

			if (lun)
				json_object_array_add(a, lun_json(t, lun));
		}
	}
	reload_read_unlock();
	return a;
}

/* --- sessions: each network thread describes the sessions it owns --- */

struct sess_collect {
	pthread_mutex_t lock;
	struct json_object *arr;
};

static void isid_hex(const uint8_t *isid, char *out, size_t cap)
{
	snprintf(out, cap, "0x%02x%02x%02x%02x%02x%02x", isid[0], isid[1], isid[2], isid[3],
		 isid[4], isid[5]);
}

static struct json_object *params_json(const struct iscsi_params *p)
{
	struct json_object *o = json_object_new_object();

	jadd(o, "HeaderDigest", json_object_new_string(p->header_digest ? "CRC32C" : "None"));
	jadd(o, "DataDigest", json_object_new_string(p->data_digest ? "CRC32C" : "None"));
	jadd(o, "MaxRecvDataSegmentLength", json_object_new_int64(p->max_recv_dsl_target));
	jadd(o, "InitiatorMaxRecvDataSegmentLength", json_object_new_int64(p->max_recv_dsl_initiator));
	jadd(o, "MaxBurstLength", json_object_new_int64(p->max_burst));
	jadd(o, "FirstBurstLength", json_object_new_int64(p->first_burst));
	jadd(o, "MaxOutstandingR2T", json_object_new_int64(p->max_outstanding_r2t));
	jadd(o, "MaxConnections", json_object_new_int64(p->max_connections));
	jadd(o, "ImmediateData", json_object_new_boolean(p->immediate_data));
	jadd(o, "InitialR2T", json_object_new_boolean(p->initial_r2t));
	jadd(o, "DataPDUInOrder", json_object_new_boolean(p->data_pdu_in_order));
	jadd(o, "DataSequenceInOrder", json_object_new_boolean(p->data_seq_in_order));
	jadd(o, "DefaultTime2Wait", json_object_new_int64(p->default_time2wait));
	jadd(o, "DefaultTime2Retain", json_object_new_int64(p->default_time2retain));
	jadd(o, "ErrorRecoveryLevel", json_object_new_int64(p->error_recovery_level));
	return o;
}

/* Runs on network thread t: only its own connections and sessions. */
static void sessions_on_thread(struct net_thread *t, void *arg)
{
	struct sess_collect *sc = arg;
	struct json_object *mine = json_object_new_array();
	struct list_head *pos;

	list_for_each(pos, &t->conns) {
		struct iscsi_conn *c = list_entry(pos, struct iscsi_conn, thread_link);
		struct iscsi_session *s = c->sess;
		struct json_object *o, *conns;
		struct list_head *p2;
		char isid[20];
		bool first = true;

		if (!s || s->closing)
			continue;
		/* describe each session once: at its first connection */
		list_for_each(p2, &s->conns) {
			first = list_entry(p2, struct iscsi_conn, sess_link) == c;
			break;
		}
		if (!first)
			continue;
		o = json_object_new_object();
		isid_hex(s->isid, isid, sizeof(isid));
		jadd(o, "initiator", json_object_new_string(s->initiator));
		jadd(o, "isid", json_object_new_string(isid));
		jadd(o, "tsih", json_object_new_int(s->tsih));
		jadd(o, "target", s->discovery || !s->target ? NULL
							 : json_object_new_string(s->target->iqn));
		jadd(o, "discovery", json_object_new_boolean(s->discovery));
		jadd(o, "thread", json_object_new_int((int)t->idx));
		conns = json_object_new_array();
		list_for_each(p2, &s->conns) {
			struct iscsi_conn *x = list_entry(p2, struct iscsi_conn, sess_link);
			struct json_object *co = json_object_new_object();

			jadd(co, "cid", json_object_new_int(x->cid));
			jadd(co, "peer", json_object_new_string(x->peer));
			jadd(co, "portal", json_object_new_string(x->local));
			jadd(co, "tpgt", json_object_new_int(x->tpgt));
			jadd(co, "header_digest", json_object_new_boolean(x->hdigest));
			jadd(co, "data_digest", json_object_new_boolean(x->ddigest));
			json_object_array_add(conns, co);
		}
		jadd(o, "connections", conns);
		jadd(o, "parameters", params_json(&s->params));
		{
			struct json_object *st = json_object_new_object();

			/* read here, on the thread that writes them */
			jadd(st, "commands", ju64(s->stat_cmds));
			jadd(st, "not_good", ju64(s->stat_not_good));
			jadd(st, "data_in_bytes", ju64(s->stat_in_bytes));
			jadd(st, "data_out_bytes", ju64(s->stat_out_bytes));
			jadd(o, "statistics", st);
		}
		json_object_array_add(mine, o);
	}
	pthread_mutex_lock(&sc->lock);
	for (size_t i = 0; i < json_object_array_length(mine); i++)
		json_object_array_add(sc->arr, json_object_get(json_object_array_get_idx(mine, i)));
	pthread_mutex_unlock(&sc->lock);
	json_object_put(mine);
}

static struct json_object *cmd_sessions(void)
{
	struct sess_collect sc = { .arr = json_object_new_array() };

	pthread_mutex_init(&sc.lock, NULL);
	net_call_all(sessions_on_thread, &sc);
	pthread_mutex_destroy(&sc.lock);
	return sc.arr;
}

/* Select LUNs by the optional "target" and "lun" of a request and call fn
 * on each. Returns the number selected, -1 if the target or LUN is unknown. */
static int for_selected_luns(struct json_object *req,
			     void (*fn)(struct iscsi_target *t, struct scsi_lun *lun, void *arg),
			     void *arg)
{
	struct json_object *jt = NULL, *jl = NULL;
	const char *want_t = NULL;
	int want_l = -1, n = 0;
	bool target_found = false;

	if (json_object_object_get_ex(req, "target", &jt) && jt &&
	    json_object_is_type(jt, json_type_string))
		want_t = json_object_get_string(jt);
	if (json_object_object_get_ex(req, "lun", &jl) && jl)
		want_l = json_object_get_int(jl);
	for (unsigned i = 0; i < runtime_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (!target_live(t) || (want_t && strcasecmp(want_t, t->iqn)))
			continue;
		target_found = true;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = target_lun(t, k);

			if (!lun || (want_l >= 0 && (unsigned)want_l != k))
				continue;
			fn(t, lun, arg);
			n++;
		}
	}
	if (want_t && !target_found)
		return -1;
	if (want_l >= 0 && !n)
		return -1;
	return n;
}

static void stats_one(struct iscsi_target *t, struct scsi_lun *lun, void *arg)
{
	struct json_object *o = control_lun_stats_json(t->iqn, lun);

	if (o)
		json_object_array_add(arg, o);
}

static void reset_one(struct iscsi_target *t, struct scsi_lun *lun, void *arg)
{
	(void)t;
	(void)arg;
	scsi_stats_reset(lun);
}

static struct json_object *global_json(void)
{
	struct scsi_stats_global g;
	struct json_object *o = json_object_new_object(), *f = json_object_new_object();

	scsi_stats_global_snapshot(&g);
	for (unsigned i = 0; i < 16; i++) {
		const char *n = scsi_stats_tmf_name((uint8_t)i);

		if (n && g.tmf[i])
			jadd(f, n, ju64(g.tmf[i]));
	}
	jadd(o, "task_management", f);
	jadd(o, "sessions", json_object_new_int((int)iscsi_session_count()));
	f = json_object_new_object();
	for (unsigned k = 0; k < LIM__COUNT; k++)
		jadd(f, limit_name(k), ju64(limit_count(k)));
	jadd(o, "limits_reached", f);
	jadd(o, "connections", ju64(limit_conn_count()));
	jadd(o, "data_buffer_bytes", ju64(limit_buffer_used()));
	return o;
}

static struct json_object *cmd_stats(struct json_object *req, bool reset)
{
	struct json_object *a = json_object_new_array(), *o;
	int n;

	reload_read_lock();
	n = for_selected_luns(req, reset ? reset_one : stats_one, a);
	if (reset && n >= 0 && !json_object_object_get_ex(req, "target", NULL))
		scsi_stats_global_reset();
	reload_read_unlock();
	if (n < 0) {
		json_object_put(a);
		return NULL;
	}
	if (reset) {
		json_object_put(a);
		o = json_object_new_object();
		jadd(o, "reset", json_object_new_int(n));
		return o;
	}
	o = json_object_new_object();
	jadd(o, "time", json_object_new_double((double)scsi_stats_now_ns() / 1e9));
	jadd(o, "global", global_json());
	jadd(o, "luns", a);
	return o;
}

static struct json_object *cmd_reload(void)
{
	struct reload_report rep = { 0 };
	struct json_object *msgs = json_object_new_array(), *r;
	int rc = reload_config(&rep);

	for (unsigned i = 0; i < rep.n; i++)
		json_object_array_add(msgs, json_object_new_string(rep.msgs[i]));
	reload_report_free(&rep);
	if (rc)
		return reply_err("the new configuration was refused; the running one is kept", msgs);
	r = json_object_new_object();
	jadd(r, "changes", msgs);
	return reply_ok(r);
}

/* The observation methods (targetd/control_observe.h). */
static observe_fn observe_method(const char *cmd)
{
	static const struct {
		const char *name;
		observe_fn fn;
	} m[] = {
		{ "histo", observe_histo }, { "histo.on", observe_histo_on },
		{ "histo.off", observe_histo_off }, { "histo.reset", observe_histo_reset },
		{ "trace.start", observe_trace_start }, { "trace.stop", observe_trace_stop },
		{ "trace.status", observe_trace_status },
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (!strcmp(cmd, m[i].name))
			return m[i].fn;
	return NULL;
}

struct json_object *control_handle_line(const char *line)
{
	struct json_object *req = json_tokener_parse(line), *v = NULL, *res;
	const char *cmd;

	if (!req || !json_object_is_type(req, json_type_object)) {
		if (req)
			json_object_put(req);
		return reply_err("the request is not a JSON object", NULL);
	}
	if (!json_object_object_get_ex(req, "version", &v) || json_object_get_int(v) != 1) {
		json_object_put(req);
		return reply_err("unsupported protocol version (this daemon speaks version 1)", NULL);
	}
	if (!json_object_object_get_ex(req, "command", &v) || !json_object_is_type(v, json_type_string)) {
		json_object_put(req);
		return reply_err("no \"command\"", NULL);
	}
	cmd = json_object_get_string(v);
	if (!strcmp(cmd, "status")) {
		res = reply_ok(cmd_status());
	} else if (!strcmp(cmd, "targets")) {
		res = reply_ok(cmd_targets());
	} else if (!strcmp(cmd, "luns")) {
		res = reply_ok(cmd_luns());
	} else if (!strcmp(cmd, "sessions")) {
		res = reply_ok(cmd_sessions());
	} else if (!strcmp(cmd, "stats") || !strcmp(cmd, "reset")) {
		struct json_object *r = cmd_stats(req, !strcmp(cmd, "reset"));

		res = r ? reply_ok(r) : reply_err("no such target or LUN", NULL);
	} else if (!strcmp(cmd, "reload")) {
		res = cmd_reload();
	} else if (observe_method(cmd)) {
		struct observe_err e = { 0 };
		struct json_object *r = observe_method(cmd)(req, &e);

		res = r ? reply_ok(r) : reply_err(e.msg, NULL);
	} else {
		res = reply_err("unknown command (status, targets, luns, sessions, stats, reset, reload)",
				NULL);
	}
	json_object_put(req);
	return res;
}

/* ---- the socket --------------------------------------------------------- */

static void client_close(struct control_client *cl)
{
	close(cl->fd);
	free(cl->buf);
	cl->fd = -1;
	cl->buf = NULL;
	cl->len = 0;
}

/* Write all of it (the client reads as it likes; give up after 5 s). */
static int client_write(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };

			if (poll(&pf, 1, 5000) <= 0)
				return -1;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		return -1;
	}
	return 0;
}

static void client_input(struct control_client *cl)
{
	char tmp[4096];
	ssize_t r = recv(cl->fd, tmp, sizeof(tmp), 0);
	char *nl;

	if (r <= 0) {
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		client_close(cl);
		return;
	}
	if (cl->len + (size_t)r > CONTROL_LINE_MAX) {
		client_close(cl);
		return;
	}
	{
		char *nb = realloc(cl->buf, cl->len + (size_t)r + 1);

		if (!nb) {
			client_close(cl);
			return;
		}
		cl->buf = nb;
	}
	memcpy(cl->buf + cl->len, tmp, (size_t)r);
	cl->len += (size_t)r;
	cl->buf[cl->len] = 0;
	while (cl->fd >= 0 && (nl = memchr(cl->buf, '\n', cl->len))) {
		struct json_object *rep;
		const char *s;
		size_t line_len = (size_t)(nl - cl->buf);

		*nl = 0;
		if (line_len) {
			rep = control_handle_line(cl->buf);
			s = json_object_to_json_string_ext(rep, JSON_C_TO_STRING_PLAIN);
			if (client_write(cl->fd, s, strlen(s)) || client_write(cl->fd, "\n", 1)) {
				json_object_put(rep);
				client_close(cl);
				return;
			}
			json_object_put(rep);
		}
		memmove(cl->buf, nl + 1, cl->len - line_len - 1);
		cl->len -= line_len + 1;
		cl->buf[cl->len] = 0;
	}
}

static void *control_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pf[2 + CONTROL_MAX_CLIENTS];
		int map[2 + CONTROL_MAX_CLIENTS];
		nfds_t n = 0;

		pf[n] = (struct pollfd){ .fd = control_stop_fd, .events = POLLIN };
		map[n++] = -2;
		pf[n] = (struct pollfd){ .fd = control_fd, .events = POLLIN };
		map[n++] = -1;
		for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
			if (clients[i].fd < 0)
				continue;
			pf[n] = (struct pollfd){ .fd = clients[i].fd, .events = POLLIN };
			map[n++] = i;
		}
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("control socket: poll: %m");
			break;
		}
		if (pf[0].revents)
			break;
		for (nfds_t i = 2; i < n; i++)
			if (pf[i].revents && clients[map[i]].fd >= 0)
				client_input(&clients[map[i]]);
		if (pf[1].revents & POLLIN) {
			int fd = accept4(control_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			int slot = -1;

			if (fd < 0)
				continue;
			for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
				if (clients[i].fd < 0) {
					slot = i;
					break;
				}
			if (slot < 0) {
				static const char busy[] =
					"{\"version\":1,\"ok\":false,\"error\":\"too many control clients\"}\n";
				client_write(fd, busy, sizeof(busy) - 1);
				close(fd);
				continue;
			}
			clients[slot].fd = fd;
		}
	}
	return NULL;
}

static int mkdir_parents(const char *path)
{
	char buf[sizeof(control_path)];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = 0;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

int control_start(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd;

	control_started = time(NULL);
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		clients[i].fd = -1;
	if (!path || !path[0])
		return 0;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("control socket %s: path too long", path);
		return -1;
	}
	snprintf(control_path, sizeof(control_path), "%s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (mkdir_parents(path)) {
		log_err("control socket %s: cannot create its directory: %m", path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		log_err("control socket: %m");
		return -1;
	}
	/* A socket file left by a daemon that died: replace it; a live one
	 * answers, and then this daemon must not steal its socket. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		log_err("control socket %s: another daemon is answering on it", path);
		close(fd);
		return -1;
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
		umask(old);
		log_err("control socket %s: %m", path);
		close(fd);
		return -1;
	}
	umask(old);
	if (chmod(path, 0600))
		log_warn("control socket %s: chmod: %m", path);
	control_fd = fd;
	control_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (control_stop_fd < 0 || pthread_create(&control_tid, NULL, control_main, NULL)) {
		log_err("control socket: cannot start its thread");
		close(control_fd);
		unlink(path);
		control_fd = -1;
		return -1;
	}
	control_running = true;
	return 0;
}

void control_stop(void)
{
	uint64_t one = 1;

	if (!control_running)
		return;
	if (write(control_stop_fd, &one, sizeof(one)) < 0)
		log_warn("control socket: eventfd: %m");
	pthread_join(control_tid, NULL);
	control_running = false;
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (clients[i].fd >= 0)
			client_close(&clients[i]);
	close(control_fd);
	close(control_stop_fd);
	control_fd = control_stop_fd = -1;
	unlink(control_path);
}
