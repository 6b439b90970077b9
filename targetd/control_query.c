/*
 * The control socket's questions: status, targets, luns, sessions, stats,
 * reset, reload (control.c dispatches to these; targetctl(8) documents
 * the results).
 *
 * DESIGN (threads): these run on the control thread. They read targets
 * and LUNs under reload_read_lock(); sessions by asking each network
 * thread to describe the ones it owns (net_call_all); counters through
 * scsi_stats_snapshot().
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "backstore/backstore.h"
#include "scsi/stats.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/control_int.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"
#include "targetd/reload.h"

/* ---- JSON helpers ------------------------------------------------------- */

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

/* One latency histogram (log2 buckets of microseconds) with its median
 * and 99th percentile. */
static struct json_object *hist_json(const uint64_t *lat, uint64_t sum_ns)
{
	struct json_object *o = json_object_new_object();
	struct json_object *b = json_object_new_array();
	uint64_t count = 0;

	for (unsigned i = 0; i < SCSI_STATS_LAT_BUCKETS; i++) {
		struct json_object *e = json_object_new_object();
		uint64_t le = scsi_stats_bucket_le_us(i);

		count += lat[i];
		if (le == UINT64_MAX)
			jadd(e, "le_us", json_object_new_string("+Inf"));
		else
			jadd(e, "le_us", ju64(le));
		jadd(e, "count", ju64(lat[i]));
		json_object_array_add(b, e);
	}
	jadd(o, "count", ju64(count));
	jadd(o, "sum_us", json_object_new_double((double)sum_ns / 1000.0));
	jadd(o, "p50_us", json_object_new_double(scsi_stats_quantile_us(lat, 0.50)));
	jadd(o, "p99_us", json_object_new_double(scsi_stats_quantile_us(lat, 0.99)));
	jadd(o, "buckets", b);
	return o;
}

static struct json_object *latency_json(const struct scsi_stats_counters *c, unsigned cls)
{
	return hist_json(c->lat[cls], c->lat_sum_ns[cls]);
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

/* The VAAI primitives' counters of one LUN's statistics. */
static struct json_object *vaai_json(const struct scsi_stats_counters *c)
{
	struct json_object *x = json_object_new_object(), *y;

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
	return x;
}

/* Reservations: RESERVE/RELEASE, conflicts by opcode, PR IN/OUT by service action. */
static struct json_object *reservations_json(const struct scsi_stats_counters *c)
{
	struct json_object *x = json_object_new_object(), *y = json_object_new_object(), *l;
	uint64_t total;

	jadd(x, "reserve", ju64(c->reserve));
	jadd(x, "release", ju64(c->release));
	l = opcode_list(c->conflicts, &total);
	jadd(y, "total", ju64(total));
	jadd(y, "by_opcode", l);
	jadd(x, "conflicts", y);
	jadd(x, "pr_in", sa_list(c->pr_in));
	jadd(x, "pr_out", sa_list(c->pr_out));
	return x;
}

/* Task management functions received, by function, and the tasks they aborted. */
static struct json_object *tmf_json(const struct scsi_stats_counters *c)
{
	struct json_object *x = json_object_new_object(), *y = json_object_new_object();

	for (unsigned i = 0; i < 16; i++) {
		const char *n = scsi_stats_tmf_name((uint8_t)i);

		if (n && c->tmf[i])
			jadd(y, n, ju64(c->tmf[i]));
	}
	jadd(x, "by_function", y);
	jadd(x, "aborts", ju64(c->aborts));
	return x;
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
	y = json_object_new_object();
	jadd(y, "read", hist_json(c->lat_bs[STATS_LAT_READ], c->lat_bs_sum_ns[STATS_LAT_READ]));
	jadd(y, "write", hist_json(c->lat_bs[STATS_LAT_WRITE], c->lat_bs_sum_ns[STATS_LAT_WRITE]));
	jadd(y, "vaai", hist_json(c->lat_bs[STATS_LAT_VAAI], c->lat_bs_sum_ns[STATS_LAT_VAAI]));
	jadd(x, "backstore", y);
	jadd(o, "latency", x);

	jadd(o, "vaai", vaai_json(c));
	x = json_object_new_object();
	jadd(x, "commands", ju64(c->zero_detect_cmds));
	jadd(x, "bytes", ju64(c->zero_detect_bytes));
	jadd(o, "zero_detect", x);
	jadd(o, "reservations", reservations_json(c));
	jadd(o, "task_management", tmf_json(c));
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
	jadd(o, "faults_injected", ju64(c->faults));
	free(c);
	return o;
}

/* ---- commands ----------------------------------------------------------- */

struct json_object *query_status(struct json_object *p, struct ctl_err *err)
{
	struct json_object *o = json_object_new_object();
	unsigned nt = 0, nl = 0;

	reload_read_lock();
	for (unsigned i = 0; i < ctl_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (!ctl_target_live(t))
			continue;
		nt++;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++)
			nl += ctl_target_lun(t, k) != NULL;
	}
	jadd(o, "version", json_object_new_string(VERSION));
	jadd(o, "protocol_version", json_object_new_int(CONTROL_PROTOCOL_VERSION));
	jadd(o, "pid", json_object_new_int((int)getpid()));
	jadd(o, "uptime_s", json_object_new_int64((int64_t)(time(NULL) - control_start_time())));
	jadd(o, "threads", json_object_new_int((int)target_runtime->n_threads));
	jadd(o, "targets", json_object_new_int((int)nt));
	jadd(o, "luns", json_object_new_int((int)nl));
	jadd(o, "sessions", json_object_new_int((int)iscsi_session_count()));
	jadd(o, "config", reload_config_file() ? json_object_new_string(reload_config_file())
					      : json_object_new_string("<embedded>"));
	jadd(o, "control_socket", json_object_new_string(control_socket_path()));
	jadd(o, "metrics_listen", target_runtime->conf->metrics_listen
					  ? json_object_new_string(target_runtime->conf->metrics_listen)
					  : NULL);
	jadd(o, "reloads", json_object_new_int((int)reload_count()));
	reload_read_unlock();
	return o;
}

struct json_object *query_targets(struct json_object *p, struct ctl_err *err)
{
	struct json_object *a = json_object_new_array();

	reload_read_lock();
	for (unsigned i = 0; i < ctl_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];
		struct json_object *o, *luns, *acl;

		if (!ctl_target_live(t))
			continue;
		o = json_object_new_object();
		luns = json_object_new_array();
		jadd(o, "iqn", json_object_new_string(t->iqn));
		jadd(o, "alias", json_object_new_string(t->alias));
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++)
			if (ctl_target_lun(t, k))
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
	if (bs && bs->location)
		jadd(o, "image", json_object_new_string(bs->location));
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

	jadd(o, "offline", json_object_new_boolean(atomic_load(&lun->offline)));
	jadd(o, "serial", json_object_new_string(lun->serial));
	jadd(o, "naa", json_object_new_string(naa));
	return o;
}

/* The configuration of target iqn (the running one: under the read lock). */
static const struct conf_target *conf_target_of(const char *iqn)
{
	const struct conf *c = target_runtime->conf;

	for (unsigned i = 0; c && i < c->n_targets; i++)
		if (!strcasecmp(c->targets[i].iqn, iqn))
			return &c->targets[i];
	return NULL;
}

/* Snapshots (targetctl lun snapshot): on a snapshot what it is of; on a
 * LUN with snapshots their list, with the space each holds. */
static void snapshots_json(struct json_object *o, struct iscsi_target *t, struct scsi_lun *lun)
{
	const struct conf_target *ct = conf_target_of(t->iqn);
	struct json_object *a = NULL;

	for (unsigned i = 0; ct && i < ct->n_luns; i++) {
		const struct conf_lun *cl = &ct->luns[i];
		struct scsi_lun *sl;
		struct json_object *so;
		struct target_space sp;

		if (cl->lun == lun->id && conf_lun_is_snapshot(cl)) {
			jadd(o, "snapshot_of", json_object_new_int(cl->snapshot_of));
			jadd(o, "snapshot_name", json_object_new_string(cl->snapshot_name));
			jadd(o, "snapshot_time", cl->snapshot_time
				? json_object_new_string(cl->snapshot_time) : NULL);
		}
		if (!conf_lun_is_snapshot(cl) || (unsigned)cl->snapshot_of != lun->id ||
		    !(sl = ctl_target_lun(t, cl->lun)))
			continue;
		so = json_object_new_object();
		jadd(so, "name", json_object_new_string(cl->snapshot_name));
		jadd(so, "lun", json_object_new_int((int)cl->lun));
		jadd(so, "time", cl->snapshot_time ? json_object_new_string(cl->snapshot_time) : NULL);
		jadd(so, "path", sl->bs && sl->bs->path ? json_object_new_string(sl->bs->path) : NULL);
		jadd(so, "size_bytes", ju64(scsi_lun_nblocks(sl) << sl->block_shift));
		if (target_lun_space(sl, &sp)) {
			jadd(so, "allocated_bytes", ju64(sp.allocated));
			jadd(so, "shared_bytes", ju64(sp.shared));
			jadd(so, "own_bytes", ju64(sp.allocated - MIN(sp.shared, sp.allocated)));
		}
		if (!a)
			a = json_object_new_array();
		json_object_array_add(a, so);
	}
	jadd(o, "snapshots", a ? a : json_object_new_array());
}

struct json_object *query_luns(struct json_object *p, struct ctl_err *err)
{
	struct json_object *a = json_object_new_array();

	reload_read_lock();
	for (unsigned i = 0; i < ctl_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (!ctl_target_live(t))
			continue;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = ctl_target_lun(t, k);
			struct json_object *o;

			if (!lun)
				continue;
			o = lun_json(t, lun);
			snapshots_json(o, t, lun);
			json_object_array_add(a, o);
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

		ASSERT_OWNER(c);
		if (!s || s->closing)
			continue;
		ASSERT_OWNER(s);
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

struct json_object *query_sessions(struct json_object *p, struct ctl_err *err)
{
	struct sess_collect sc = { .arr = json_object_new_array() };

	pthread_mutex_init(&sc.lock, NULL);
	net_call_all(sessions_on_thread, &sc);
	pthread_mutex_destroy(&sc.lock);
	return sc.arr;
}

/* Select LUNs by the optional "target" and "lun" parameters and call fn
 * on each. Returns the number selected, -1 (err set) if the target or LUN
 * is unknown. */
static int for_selected_luns(struct json_object *p,
			     void (*fn)(struct iscsi_target *t, struct scsi_lun *lun, void *arg),
			     void *arg, struct ctl_err *err)
{
	const char *want_t = NULL;
	uint64_t want_l = 0;
	bool has_l, target_found = false;
	int n = 0;

	ctl_str(p, "target", false, &want_t, err);
	has_l = ctl_uint(p, "lun", false, SCSI_MAX_LUNS - 1, &want_l, err);
	if (ctl_failed(err))
		return -1;
	for (unsigned i = 0; i < ctl_n_targets(); i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (!ctl_target_live(t) || (want_t && strcasecmp(want_t, t->iqn)))
			continue;
		target_found = true;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = ctl_target_lun(t, k);

			if (!lun || (has_l && want_l != k))
				continue;
			fn(t, lun, arg);
			n++;
		}
	}
	if (want_t && !target_found) {
		ctl_fail(err, CTL_E_NOT_FOUND, "no such target or LUN: no target %s", want_t);
		return -1;
	}
	if (has_l && !n) {
		ctl_fail(err, CTL_E_NOT_FOUND, "no such target or LUN: no LUN %llu%s%s",
			 (unsigned long long)want_l, want_t ? " in " : "", want_t ? want_t : "");
		return -1;
	}
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

static struct json_object *stats_or_reset(struct json_object *p, bool reset, struct ctl_err *err)
{
	struct json_object *a = json_object_new_array(), *o;
	int n;

	reload_read_lock();
	n = for_selected_luns(p, reset ? reset_one : stats_one, a, err);
	if (reset && n >= 0 && !json_object_object_get_ex(p, "target", NULL))
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

struct json_object *query_stats(struct json_object *p, struct ctl_err *err)
{
	return stats_or_reset(p, false, err);
}

struct json_object *query_reset(struct json_object *p, struct ctl_err *err)
{
	return stats_or_reset(p, true, err);
}

struct json_object *query_reload(struct json_object *p, struct ctl_err *err)
{
	struct reload_report rep = { 0 };
	struct json_object *msgs, *r;
	int rc = reload_config(&rep);

	(void)p;
	if (rc) {
		ctl_fail_list(err, rep.unavailable ? CTL_E_UNAVAILABLE : CTL_E_REFUSED, rep.msgs, rep.n,
			      "the new configuration was refused; the running one is kept");
		reload_report_free(&rep);
		return NULL;
	}
	msgs = json_object_new_array();
	for (unsigned i = 0; i < rep.n; i++)
		json_object_array_add(msgs, json_object_new_string(rep.msgs[i]));
	reload_report_free(&rep);
	r = json_object_new_object();
	jadd(r, "changes", msgs);
	return r;
}
