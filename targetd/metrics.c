/*
 * GET /metrics in the Prometheus text exposition format (version 0.0.4),
 * served by libmicrohttpd on metrics_listen.
 *
 * What is measured (targetctl(8), PROMETHEUS):
 *   targetd_command_latency_seconds  command PDU received to its status
 *                                    sent on the socket (what the initiator
 *                                    sees, less the wire), by class
 *   targetd_backstore_latency_seconds the command's backstore request,
 *                                    submitted to completed
 *   per LUN counters (commands by op, statuses and sense keys that
 *   happened, bytes, VAAI, reservations), per target logins and
 *   authentication failures, per session and per initiator series,
 *   resource limits, process metrics (CPU, memory, descriptors) and
 *   targetd_build_info.
 * Label values are snake_case (op="test_unit_ready", status="good"); a
 * status, sense key or function that never happened has no series.
 *
 * DESIGN (threads): libmicrohttpd runs its own polling thread; a request
 * renders a fresh text from scsi_stats_snapshot() of every LUN under
 * reload_read_lock() (readers never slow the data path: the counters are
 * per-thread shards summed here); sessions are described by the network
 * threads that own them (net_call_all). Login counters are atomics that
 * the login code bumps.
 */
#include "config.h"
#include <ctype.h>
#include <dirent.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>
#include "scsi/stats.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/http.h"
#include "targetd/fault.h"
#include "targetd/metrics.h"
#include "targetd/reload.h"
#include "targetd/histo_out.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"

static struct MHD_Daemon *metrics_daemon;

/* ---- login counters (bumped by the login code) --------------------------- */

enum { FAIL_AUTH, FAIL_ACL, FAIL_OTHER, FAIL__COUNT };
static const char *const fail_names[FAIL__COUNT] = { "authentication", "acl", "other" };
static uint64_t discovery_logins;
static uint64_t login_failures[FAIL__COUNT];   /* every refused login, by reason */

void metrics_count_login(struct iscsi_target *t, bool discovery)
{
	if (discovery || !t)
		__atomic_add_fetch(&discovery_logins, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&t->n_logins, 1, __ATOMIC_RELAXED);
}

void metrics_count_login_failure(struct iscsi_target *t, uint16_t status)
{
	int r = status == 0x0201 ? FAIL_AUTH : status == 0x0202 ? FAIL_ACL : FAIL_OTHER;

	__atomic_add_fetch(&login_failures[r], 1, __ATOMIC_RELAXED);
	if (t && r == FAIL_AUTH)
		__atomic_add_fetch(&t->n_auth_failures, 1, __ATOMIC_RELAXED);
	else if (t && r == FAIL_ACL)
		__atomic_add_fetch(&t->n_acl_refusals, 1, __ATOMIC_RELAXED);
}

/* ---- the text format -------------------------------------------------------- */

/* Prometheus label value: escape backslash, double quote and newline. */
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

/* "READ(16)" -> "read_16", "ABORT TASK SET" -> "abort_task_set". */
static const char *snake(const char *in, char *buf, size_t cap)
{
	size_t o = 0;
	bool sep = false;

	for (; *in && o + 2 < cap; in++) {
		if (isalnum((unsigned char)*in)) {
			if (sep && o)
				buf[o++] = '_';
			buf[o++] = (char)tolower((unsigned char)*in);
			sep = false;
		} else {
			sep = true;
		}
	}
	buf[o] = 0;
	return buf;
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{target="...",lun="N"[,extra]} value */
static void sample(FILE *f, const char *name, const char *iqn, unsigned lun, const char *extra_k,
		   const char *extra_v, uint64_t v)
{
	fprintf(f, "%s{target=\"", name);
	put_label(f, iqn);
	fprintf(f, "\",lun=\"%u\"", lun);
	if (extra_k) {
		fprintf(f, ",%s=\"", extra_k);
		put_label(f, extra_v);
		fputc('"', f);
	}
	fprintf(f, "} %llu\n", (unsigned long long)v);
}

struct lun_snap {
	const char *iqn;
	struct scsi_lun *lun;
	uint64_t capacity;
	struct scsi_stats_counters c;
};

static const char *op_label(unsigned op, char *buf, size_t cap)
{
	const char *n = scsi_stats_opcode_name((uint8_t)op);
	char hex[8];

	if (n)
		return snake(n, buf, cap);
	snprintf(hex, sizeof(hex), "0x%02x", op);
	snprintf(buf, cap, "%s", hex);
	return buf;
}

static void render_hist(FILE *f, const struct lun_snap *s, unsigned n, bool backstore)
{
	static const char *const cls[STATS_LAT__COUNT] = { "read", "write", "vaai" };
	const char *name = backstore ? "targetd_backstore_latency_seconds"
				     : "targetd_command_latency_seconds";

	family(f, name, "histogram",
	       backstore ? "Latency of the command's backstore request, submitted to completed."
			 : "Latency from the command PDU's arrival to its status leaving the socket.");
	for (unsigned i = 0; i < n; i++) {
		for (unsigned k = 0; k < STATS_LAT__COUNT; k++) {
			const uint64_t *b = backstore ? s[i].c.lat_bs[k] : s[i].c.lat[k];
			uint64_t sum = backstore ? s[i].c.lat_bs_sum_ns[k] : s[i].c.lat_sum_ns[k];
			uint64_t cum = 0;

			for (unsigned j = 0; j < SCSI_STATS_LAT_BUCKETS; j++) {
				uint64_t le = scsi_stats_bucket_le_us(j);

				cum += b[j];
				fprintf(f, "%s_bucket{target=\"", name);
				put_label(f, s[i].iqn);
				fprintf(f, "\",lun=\"%u\",op=\"%s\",le=\"", s[i].lun->id, cls[k]);
				if (le == UINT64_MAX)
					fputs("+Inf", f);
				else
					fprintf(f, "%.6g", (double)le / 1e6);
				fprintf(f, "\"} %llu\n", (unsigned long long)cum);
			}
			fprintf(f, "%s_sum{target=\"", name);
			put_label(f, s[i].iqn);
			fprintf(f, "\",lun=\"%u\",op=\"%s\"} %.9f\n", s[i].lun->id, cls[k],
				(double)sum / 1e9);
			fprintf(f, "%s_count{target=\"", name);
			put_label(f, s[i].iqn);
			fprintf(f, "\",lun=\"%u\",op=\"%s\"} %llu\n", s[i].lun->id, cls[k],
				(unsigned long long)cum);
		}
	}
}

/* The workload histograms (targetd/histo_out.c). */
static void render_workload(FILE *f, const struct lun_snap *s, unsigned n)
{
	struct histo_lun_ref *refs = calloc(n ? n : 1, sizeof(*refs));

	if (!refs)
		return;
	for (unsigned i = 0; i < n; i++)
		refs[i] = (struct histo_lun_ref){ .iqn = s[i].iqn, .lun = s[i].lun };
	histo_prometheus(f, refs, n);
	free(refs);
}

/* Statuses, sense keys, opcodes and functions: only those that happened. */
static void render_outcomes(FILE *f, const struct lun_snap *s, unsigned n)
{
	static const char *const st_names[STATS_ST__COUNT] = {
		"good", "check_condition", "condition_met", "busy", "reservation_conflict",
		"task_set_full", "aca_active", "task_aborted", "other",
	};
	char buf[64];

	family(f, "targetd_commands_total", "counter", "SCSI commands completed, by operation code.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned op = 0; op < 256; op++)
			if (s[i].c.ops[op])
				sample(f, "targetd_commands_total", s[i].iqn, s[i].lun->id, "op",
				       op_label(op, buf, sizeof(buf)), s[i].c.ops[op]);
	family(f, "targetd_command_status_total", "counter", "SCSI commands completed, by status.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < STATS_ST__COUNT; k++)
			if (s[i].c.status[k])
				sample(f, "targetd_command_status_total", s[i].iqn, s[i].lun->id,
				       "status", st_names[k], s[i].c.status[k]);
	family(f, "targetd_sense_key_total", "counter", "CHECK CONDITION results, by sense key.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 16; k++)
			if (s[i].c.sense_key[k])
				sample(f, "targetd_sense_key_total", s[i].iqn, s[i].lun->id, "sense_key",
				       snake(scsi_sense_key_name(k), buf, sizeof(buf)), s[i].c.sense_key[k]);
	family(f, "targetd_reservation_conflicts_by_op_total", "counter",
	       "RESERVATION CONFLICT status returned, by operation code.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned op = 0; op < 256; op++)
			if (s[i].c.conflicts[op])
				sample(f, "targetd_reservation_conflicts_by_op_total", s[i].iqn,
				       s[i].lun->id, "op", op_label(op, buf, sizeof(buf)),
				       s[i].c.conflicts[op]);
	family(f, "targetd_persistent_reserve_total", "counter",
	       "PERSISTENT RESERVE IN/OUT operations that succeeded, by service action.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned sa = 0; sa < 32; sa++)
			for (unsigned dir = 0; dir < 2; dir++) {
				uint64_t v = dir ? s[i].c.pr_out[sa] : s[i].c.pr_in[sa];

				if (!v)
					continue;
				snprintf(buf, sizeof(buf), "%s_0x%02x", dir ? "out" : "in", sa);
				sample(f, "targetd_persistent_reserve_total", s[i].iqn, s[i].lun->id,
				       "op", buf, v);
			}
	family(f, "targetd_lun_task_management_total", "counter",
	       "Task management functions addressed to a LUN, by function.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 16; k++)
			if (s[i].c.tmf[k] && scsi_stats_tmf_name((uint8_t)k))
				sample(f, "targetd_lun_task_management_total", s[i].iqn, s[i].lun->id,
				       "function", snake(scsi_stats_tmf_name((uint8_t)k), buf, sizeof(buf)),
				       s[i].c.tmf[k]);
}

static void render_counters(FILE *f, const struct lun_snap *s, unsigned n)
{
	family(f, "targetd_lun_capacity_bytes", "gauge", "Size of each LUN.");
	for (unsigned i = 0; i < n; i++)
		sample(f, "targetd_lun_capacity_bytes", s[i].iqn, s[i].lun->id, NULL, NULL, s[i].capacity);
	{
		/* space: the df -s view of each LUN (target_lun_space()) */
		static const char *const names[6] = {
			"targetd_lun_allocated_bytes", "targetd_lun_shared_bytes",
			"targetd_lun_saved_bytes", "targetd_pool_size_bytes", "targetd_pool_free_bytes",
		};
		static const char *const help[6] = {
			"Bytes the LUN's backstore holds.",
			"Of those, bytes shared with other files by reflink.",
			"Bytes of the LUN that take no space of their own (thin, UNMAP, zero detection, reflink).",
			"Size of the file system (pool) under the LUN.",
			"Free space of the file system (pool) under the LUN.",
		};
		struct target_space *sp = calloc(n ? n : 1, sizeof(*sp));
		bool *ok = calloc(n ? n : 1, sizeof(*ok));

		for (unsigned i = 0; sp && ok && i < n; i++)
			ok[i] = target_lun_space(s[i].lun, &sp[i]);
		for (unsigned k = 0; sp && ok && names[k]; k++) {
			family(f, names[k], "gauge", help[k]);
			for (unsigned i = 0; i < n; i++) {
				const uint64_t v[5] = { sp[i].allocated, sp[i].shared, sp[i].saved,
							sp[i].pool_size, sp[i].pool_free };

				if (ok[i])
					sample(f, names[k], s[i].iqn, s[i].lun->id, NULL, NULL, v[k]);
			}
		}
		free(sp);
		free(ok);
	}
	family(f, "targetd_lun_offline", "gauge", "1 while the LUN is offline (targetctl lun offline).");
	for (unsigned i = 0; i < n; i++)
		sample(f, "targetd_lun_offline", s[i].iqn, s[i].lun->id, NULL, NULL,
		       atomic_load(&s[i].lun->offline));
#define SIMPLE(name, field, help) \
	do { \
		family(f, name, "counter", help); \
		for (unsigned i = 0; i < n; i++) \
			sample(f, name, s[i].iqn, s[i].lun->id, NULL, NULL, s[i].c.field); \
	} while (0)
	SIMPLE("targetd_read_bytes_total", read_bytes, "Bytes read by READ commands that succeeded.");
	SIMPLE("targetd_written_bytes_total", write_bytes, "Bytes written by WRITE commands that succeeded.");
	SIMPLE("targetd_read_commands_total", read_cmds, "READ commands that succeeded.");
	SIMPLE("targetd_write_commands_total", write_cmds, "WRITE commands that succeeded.");
	family(f, "targetd_compare_and_write_total", "counter",
	       "COMPARE AND WRITE (ATS) results: success or miscompare.");
	for (unsigned i = 0; i < n; i++) {
		if (s[i].c.ats_ok)
			sample(f, "targetd_compare_and_write_total", s[i].iqn, s[i].lun->id, "result",
			       "success", s[i].c.ats_ok);
		if (s[i].c.ats_miscompare)
			sample(f, "targetd_compare_and_write_total", s[i].iqn, s[i].lun->id, "result",
			       "miscompare", s[i].c.ats_miscompare);
	}
	SIMPLE("targetd_xcopy_commands_total", xcopy_cmds, "EXTENDED COPY commands that succeeded.");
	SIMPLE("targetd_xcopy_segments_total", xcopy_segments, "EXTENDED COPY segments processed.");
	SIMPLE("targetd_xcopy_bytes_total", xcopy_bytes, "Bytes copied inside the array by EXTENDED COPY.");
	SIMPLE("targetd_xcopy_reflink_blocks_total", xcopy_reflink_blocks,
	       "Blocks EXTENDED COPY shared by reflink instead of copying.");
	SIMPLE("targetd_write_same_commands_total", ws_cmds, "WRITE SAME commands that succeeded.");
	SIMPLE("targetd_write_same_blocks_total", ws_blocks, "Blocks written by WRITE SAME.");
	SIMPLE("targetd_unmap_commands_total", unmap_cmds, "UNMAP commands that succeeded.");
	SIMPLE("targetd_unmap_blocks_total", unmap_blocks, "Blocks deallocated by UNMAP.");
	SIMPLE("targetd_zero_detect_commands_total", zero_detect_cmds,
	       "Writes of zeroes that zero detection deallocated or zeroed in place.");
	SIMPLE("targetd_zero_detect_bytes_total", zero_detect_bytes,
	       "Bytes of zeroes zero detection did not write.");
	SIMPLE("targetd_reserve_total", reserve, "SPC-2 RESERVE commands that succeeded.");
	SIMPLE("targetd_release_total", release, "SPC-2 RELEASE commands that succeeded.");
	SIMPLE("targetd_aborts_total", aborts, "Commands ended by task management.");
	SIMPLE("targetd_unit_attentions_total", ua, "Unit attention conditions reported.");
	SIMPLE("targetd_lun_faults_injected_total", faults,
	       "Fault injections into the LUN's commands, and rules that changed its state (targetd-faults(7)).");
#undef SIMPLE
	family(f, "targetd_reservation_conflicts_total", "counter",
	       "RESERVATION CONFLICT status returned (all operation codes).");
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = 0;

		for (unsigned op = 0; op < 256; op++)
			t += s[i].c.conflicts[op];
		sample(f, "targetd_reservation_conflicts_total", s[i].iqn, s[i].lun->id, NULL, NULL, t);
	}
}

/* ---- sessions and initiators (from the network threads) ------------------------ */

struct sess_row {
	char target[224], initiator[224], isid[16];
	unsigned tsih;
	uint64_t cmds, not_good, in_bytes, out_bytes;
};

struct sess_rows {
	pthread_mutex_t lock;
	struct sess_row *v;
	unsigned n, cap;
};

static void sessions_on_thread(struct net_thread *t, void *arg)
{
	struct sess_rows *r = arg;
	struct list_head *pos;

	list_for_each(pos, &t->conns) {
		struct iscsi_conn *c = list_entry(pos, struct iscsi_conn, thread_link);
		struct iscsi_session *s = c->sess;
		struct sess_row row;

		ASSERT_OWNER(c);
		/* a session once, at its first connection; normal sessions only */
		if (!s || s->closing || s->discovery || !s->target ||
		    list_entry(s->conns.next, struct iscsi_conn, sess_link) != c)
			continue;
		snprintf(row.target, sizeof(row.target), "%s", s->target->iqn);
		snprintf(row.initiator, sizeof(row.initiator), "%s", s->initiator);
		snprintf(row.isid, sizeof(row.isid), "0x%02x%02x%02x%02x%02x%02x", s->isid[0],
			 s->isid[1], s->isid[2], s->isid[3], s->isid[4], s->isid[5]);
		row.tsih = s->tsih;
		row.cmds = s->stat_cmds;
		row.not_good = s->stat_not_good;
		row.in_bytes = s->stat_in_bytes;
		row.out_bytes = s->stat_out_bytes;
		pthread_mutex_lock(&r->lock);
		if (r->n == r->cap) {
			unsigned cap = r->cap ? r->cap * 2 : 16;
			struct sess_row *v = realloc(r->v, cap * sizeof(*v));

			if (v) {
				r->v = v;
				r->cap = cap;
			}
		}
		if (r->n < r->cap)
			r->v[r->n++] = row;
		pthread_mutex_unlock(&r->lock);
	}
}

static void sess_labels(FILE *f, const char *name, const struct sess_row *r)
{
	fprintf(f, "%s{target=\"", name);
	put_label(f, r->target);
	fputs("\",initiator=\"", f);
	put_label(f, r->initiator);
	fprintf(f, "\",isid=\"%s\",tsih=\"%u\"}", r->isid, r->tsih);
}

static void render_sessions(FILE *f)
{
	struct sess_rows r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	static const struct {
		const char *name, *help;
		size_t off;
	} per[] = {
		{ "targetd_session_commands_total", "SCSI commands answered in the session.",
		  offsetof(struct sess_row, cmds) },
		{ "targetd_session_not_good_total", "Commands of the session that did not end GOOD.",
		  offsetof(struct sess_row, not_good) },
		{ "targetd_session_read_bytes_total", "Data-In bytes sent to the session.",
		  offsetof(struct sess_row, in_bytes) },
		{ "targetd_session_written_bytes_total", "Data-Out bytes received from the session.",
		  offsetof(struct sess_row, out_bytes) },
	};

	net_call_all(sessions_on_thread, &r);
	for (size_t k = 0; k < sizeof(per) / sizeof(per[0]); k++) {
		family(f, per[k].name, "counter", per[k].help);
		for (unsigned i = 0; i < r.n; i++) {
			sess_labels(f, per[k].name, &r.v[i]);
			fprintf(f, " %llu\n",
				(unsigned long long)*(const uint64_t *)((const char *)&r.v[i] + per[k].off));
		}
	}
	/* per initiator and target: sessions now, commands in them */
	family(f, "targetd_initiator_sessions", "gauge",
	       "Sessions an initiator has with a target now.");
	for (unsigned i = 0; i < r.n; i++) {
		unsigned count = 0;
		bool first = true;

		for (unsigned j = 0; j < r.n; j++) {
			bool same = !strcmp(r.v[j].target, r.v[i].target) &&
				    !strcmp(r.v[j].initiator, r.v[i].initiator);

			if (same && j < i)
				first = false;
			count += same;
		}
		if (!first)
			continue;
		fputs("targetd_initiator_sessions{target=\"", f);
		put_label(f, r.v[i].target);
		fputs("\",initiator=\"", f);
		put_label(f, r.v[i].initiator);
		fprintf(f, "\"} %u\n", count);
	}
	free(r.v);
}

/* ---- the process -------------------------------------------------------------------- */

static void render_process(FILE *f)
{
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	unsigned long long utime = 0, stime = 0, start = 0, vsize = 0;
	long long rss = 0;
	char buf[1024];
	struct rlimit rl;
	FILE *st = fopen("/proc/self/stat", "re");
	unsigned fds = 0;
	DIR *d;

	family(f, "targetd_build_info", "gauge", "The version of targetd that runs (value 1).");
	fprintf(f, "targetd_build_info{version=\"%s\"} 1\n", VERSION);
	if (st && fgets(buf, sizeof(buf), st)) {
		/* after "pid (comm) ": fields 3.. of proc(5); comm may hold spaces */
		const char *p = strrchr(buf, ')');

		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
				"%*d %*d %*d %*d %llu %llu %lld", &utime, &stime, &start, &vsize,
				&rss) == 5) {
			FILE *up = fopen("/proc/stat", "re");
			unsigned long long btime = 0;

			while (up && fgets(buf, sizeof(buf), up))
				if (sscanf(buf, "btime %llu", &btime) == 1)
					break;
			if (up)
				fclose(up);
			family(f, "process_cpu_seconds_total", "counter",
			       "User and system CPU time spent, in seconds.");
			fprintf(f, "process_cpu_seconds_total %.2f\n", (double)(utime + stime) / (double)tick);
			family(f, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
			fprintf(f, "process_resident_memory_bytes %lld\n", rss * page);
			family(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
			fprintf(f, "process_virtual_memory_bytes %llu\n", vsize);
			if (btime) {
				family(f, "process_start_time_seconds", "gauge",
				       "Start time of the process since the epoch, in seconds.");
				fprintf(f, "process_start_time_seconds %.2f\n",
					(double)btime + (double)start / (double)tick);
			}
		}
	}
	if (st)
		fclose(st);
	d = opendir("/proc/self/fd");
	if (d) {
		while (readdir(d))
			fds++;
		closedir(d);
		family(f, "process_open_fds", "gauge", "Open file descriptors.");
		fprintf(f, "process_open_fds %u\n", fds > 3 ? fds - 3 : 0);   /* ., .., the dir's own */
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY) {
		family(f, "process_max_fds", "gauge", "Limit of open file descriptors.");
		fprintf(f, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
	}
}

/* Targets: logins and refusals. */
static void render_logins(FILE *f)
{
	unsigned nt = __atomic_load_n(&target_runtime->n_targets, __ATOMIC_ACQUIRE);
	static const struct {
		const char *name, *help;
		size_t off;
	} per[] = {
		{ "targetd_logins_total", "Logins to the target that reached full feature phase.",
		  offsetof(struct iscsi_target, n_logins) },
		{ "targetd_auth_failures_total", "Logins to the target refused by CHAP.",
		  offsetof(struct iscsi_target, n_auth_failures) },
		{ "targetd_acl_refusals_total", "Logins to the target refused by its allow-list.",
		  offsetof(struct iscsi_target, n_acl_refusals) },
	};

	for (size_t k = 0; k < sizeof(per) / sizeof(per[0]); k++) {
		family(f, per[k].name, "counter", per[k].help);
		for (unsigned i = 0; i < nt; i++) {
			struct iscsi_target *t = &target_runtime->targets[i];

			if (__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE))
				continue;
			fputs(per[k].name, f);
			fputs("{target=\"", f);
			put_label(f, t->iqn);
			fprintf(f, "\"} %llu\n", (unsigned long long)__atomic_load_n(
							 (uint64_t *)((char *)t + per[k].off), __ATOMIC_RELAXED));
		}
	}
	family(f, "targetd_discovery_logins_total", "counter", "Discovery sessions logged in.");
	fprintf(f, "targetd_discovery_logins_total %llu\n",
		(unsigned long long)__atomic_load_n(&discovery_logins, __ATOMIC_RELAXED));
	family(f, "targetd_login_failures_total", "counter",
	       "Logins refused, by reason (authentication: CHAP; acl: not on the allow-list; other).");
	for (unsigned k = 0; k < FAIL__COUNT; k++)
		fprintf(f, "targetd_login_failures_total{reason=\"%s\"} %llu\n", fail_names[k],
			(unsigned long long)__atomic_load_n(&login_failures[k], __ATOMIC_RELAXED));
}

static void render(FILE *f)
{
	struct lun_snap *s = NULL;
	unsigned n = 0, cap = 0, nt;
	struct scsi_stats_global g;
	char buf[64];

	render_process(f);
	reload_read_lock();
	nt = __atomic_load_n(&target_runtime->n_targets, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < nt; i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE))
			continue;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = scsi_target_lun(&t->st, k);

			if (!lun)
				continue;
			if (n == cap) {
				struct lun_snap *x = realloc(s, (cap ? cap * 2 : 8) * sizeof(*x));

				if (!x)
					break;
				s = x;
				cap = cap ? cap * 2 : 8;
			}
			s[n].iqn = t->iqn;
			s[n].lun = lun;
			s[n].capacity = scsi_lun_nblocks(lun) << lun->block_shift;
			scsi_stats_snapshot(lun, &s[n].c);
			n++;
		}
	}

	family(f, "targetd_sessions", "gauge", "iSCSI sessions logged in.");
	fprintf(f, "targetd_sessions %u\n", iscsi_session_count());
	family(f, "targetd_connections", "gauge", "TCP connections open on the portals.");
	fprintf(f, "targetd_connections %u\n", limit_conn_count());
	family(f, "targetd_data_buffer_bytes", "gauge", "Data buffer bytes held by commands.");
	fprintf(f, "targetd_data_buffer_bytes %llu\n", (unsigned long long)limit_buffer_used());
	family(f, "targetd_limit_reached_total", "counter",
	       "Times a resource limit was reached, by configuration key (targetd.conf(5)).");
	for (unsigned k = 0; k < LIM__COUNT; k++)
		fprintf(f, "targetd_limit_reached_total{limit=\"%s\"} %llu\n", limit_name(k),
			(unsigned long long)limit_count(k));
	render_logins(f);
	render_counters(f, s, n);
	render_outcomes(f, s, n);
	render_hist(f, s, n, false);
	render_hist(f, s, n, true);
	render_workload(f, s, n);
	fault_metrics(f);

	scsi_stats_global_snapshot(&g);
	family(f, "targetd_task_management_total", "counter",
	       "Task management functions received, by function.");
	for (unsigned k = 0; k < 16; k++)
		if (scsi_stats_tmf_name((uint8_t)k) && g.tmf[k])
			fprintf(f, "targetd_task_management_total{function=\"%s\"} %llu\n",
				snake(scsi_stats_tmf_name((uint8_t)k), buf, sizeof(buf)),
				(unsigned long long)g.tmf[k]);
	reload_read_unlock();
	free(s);
	render_sessions(f);
}

char *metrics_render(size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	if (!f)
		return NULL;
	render(f);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

static enum MHD_Result metrics_request(void *cls, struct MHD_Connection *conn, const char *url,
				       const char *method, const char *version,
				       const char *upload_data, size_t *upload_size, void **req_cls)
{
	struct MHD_Response *rsp;
	enum MHD_Result ret;
	unsigned code = MHD_HTTP_OK;
	char *text;
	size_t len;

	(void)cls;
	(void)version;
	(void)upload_data;
	(void)upload_size;
	(void)req_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char msg[] = "only GET\n";
		rsp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		static const char msg[] = "targetd: see /metrics\n";
		rsp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_NOT_FOUND;
	} else {
		text = metrics_render(&len);
		if (!text)
			return MHD_NO;
		rsp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		if (rsp)
			MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE,
						"text/plain; version=0.0.4; charset=utf-8");
	}
	if (!rsp)
		return MHD_NO;
	ret = MHD_queue_response(conn, code, rsp);
	MHD_destroy_response(rsp);
	return ret;
}

struct MHD_Daemon *http_serve(const char *key, const char *listen,
			      MHD_AccessHandlerCallback handler)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	char *host = NULL, *port = NULL;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	struct MHD_Daemon *d;
	int rc;

	if (conf_parse_listen(listen, &host, &port)) {
		log_err("%s %s: not HOST:PORT", key, listen);
		return NULL;
	}
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		log_err("%s %s: %s", key, listen, gai_strerror(rc));
		free(host);
		free(port);
		return NULL;
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	d = MHD_start_daemon(flags, (uint16_t)atoi(port), NULL, NULL, handler, NULL,
			     MHD_OPTION_SOCK_ADDR, ai->ai_addr,
			     MHD_OPTION_CONNECTION_LIMIT, 16u,
			     MHD_OPTION_CONNECTION_TIMEOUT, 10u,
			     MHD_OPTION_END);
	freeaddrinfo(ai);
	free(host);
	free(port);
	if (!d)
		log_err("%s %s: cannot serve HTTP there (in use?)", key, listen);
	return d;
}

int metrics_start(const char *listen)
{
	if (!listen)
		return 0;
	metrics_daemon = http_serve("metrics_listen", listen, metrics_request);
	if (!metrics_daemon)
		return -1;
	log_info("metrics on http://%s/metrics", listen);
	return 0;
}

void metrics_stop(void)
{
	if (metrics_daemon) {
		MHD_stop_daemon(metrics_daemon);
		metrics_daemon = NULL;
	}
}
