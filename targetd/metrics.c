/*
 * GET /metrics in the Prometheus text exposition format (version 0.0.4),
 * served by libmicrohttpd on metrics_listen.
 *
 * DESIGN (threads): libmicrohttpd runs its own polling thread; a request
 * renders a fresh text from scsi_stats_snapshot() of every LUN under
 * reload_read_lock() (readers never slow the data path: the counters are
 * per-thread shards summed here). Counters end in _total; the latency
 * histograms are in seconds (log2 buckets of microseconds) with
 * _bucket/_sum/_count; labels are target, lun and op (and the few that a
 * counter needs: status, sense_key, function, result...).
 */
#include "config.h"
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <microhttpd.h>
#include "scsi/stats.h"
#include "targetd/conn.h"
#include "targetd/histo_out.h"
#include "targetd/http.h"
#include "targetd/control.h"
#include "targetd/limits.h"
#include "targetd/target.h"

static struct MHD_Daemon *metrics_daemon;

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

	if (n)
		return n;
	snprintf(buf, cap, "0x%02x", op);
	return buf;
}

static void render_hist(FILE *f, const struct lun_snap *s, unsigned n)
{
	static const char *const cls[STATS_LAT__COUNT] = { "read", "write", "vaai" };
	const char *name = "targetd_command_latency_seconds";

	family(f, name, "histogram",
	       "Latency from command receipt to status (reads, writes, VAAI primitives).");
	for (unsigned i = 0; i < n; i++) {
		for (unsigned k = 0; k < STATS_LAT__COUNT; k++) {
			uint64_t cum = 0;

			for (unsigned b = 0; b < SCSI_STATS_LAT_BUCKETS; b++) {
				uint64_t le = scsi_stats_bucket_le_us(b);

				cum += s[i].c.lat[k][b];
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
				(double)s[i].c.lat_sum_ns[k] / 1e9);
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

static void render(FILE *f)
{
	static const char *const st_names[STATS_ST__COUNT] = {
		"GOOD", "CHECK CONDITION", "CONDITION MET", "BUSY", "RESERVATION CONFLICT",
		"TASK SET FULL", "ACA ACTIVE", "TASK ABORTED", "OTHER",
	};
	struct lun_snap *s = NULL;
	unsigned n = 0, cap = 0, nt;
	struct scsi_stats_global g;
	char buf[16];

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

	family(f, "targetd_commands_total", "counter", "SCSI commands completed, by operation code.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned op = 0; op < 256; op++)
			if (s[i].c.ops[op])
				sample(f, "targetd_commands_total", s[i].iqn, s[i].lun->id, "op",
				       op_label(op, buf, sizeof(buf)), s[i].c.ops[op]);
	family(f, "targetd_command_status_total", "counter", "SCSI commands completed, by status.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < STATS_ST__COUNT; k++)
			sample(f, "targetd_command_status_total", s[i].iqn, s[i].lun->id, "status",
			       st_names[k], s[i].c.status[k]);
	family(f, "targetd_sense_key_total", "counter", "CHECK CONDITION results, by sense key.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 16; k++)
			if (s[i].c.sense_key[k])
				sample(f, "targetd_sense_key_total", s[i].iqn, s[i].lun->id, "sense_key",
				       scsi_sense_key_name(k), s[i].c.sense_key[k]);

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
		sample(f, "targetd_compare_and_write_total", s[i].iqn, s[i].lun->id, "result", "success",
		       s[i].c.ats_ok);
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
#undef SIMPLE
	family(f, "targetd_reservation_conflicts_total", "counter",
	       "RESERVATION CONFLICT status returned, by operation code.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned op = 0; op < 256; op++)
			if (s[i].c.conflicts[op])
				sample(f, "targetd_reservation_conflicts_total", s[i].iqn, s[i].lun->id, "op",
				       op_label(op, buf, sizeof(buf)), s[i].c.conflicts[op]);
	family(f, "targetd_persistent_reserve_total", "counter",
	       "PERSISTENT RESERVE IN/OUT operations that succeeded, by service action.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned sa = 0; sa < 32; sa++)
			for (unsigned dir = 0; dir < 2; dir++) {
				uint64_t v = dir ? s[i].c.pr_out[sa] : s[i].c.pr_in[sa];

				if (!v)
					continue;
				snprintf(buf, sizeof(buf), "%s 0x%02x", dir ? "OUT" : "IN", sa);
				sample(f, "targetd_persistent_reserve_total", s[i].iqn, s[i].lun->id, "op",
				       buf, v);
			}
	family(f, "targetd_lun_task_management_total", "counter",
	       "Task management functions addressed to a LUN, by function.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 16; k++)
			if (s[i].c.tmf[k] && scsi_stats_tmf_name((uint8_t)k))
				sample(f, "targetd_lun_task_management_total", s[i].iqn, s[i].lun->id,
				       "function", scsi_stats_tmf_name((uint8_t)k), s[i].c.tmf[k]);
	render_hist(f, s, n);
	render_workload(f, s, n);

	scsi_stats_global_snapshot(&g);
	family(f, "targetd_task_management_total", "counter",
	       "Task management functions received, by function.");
	for (unsigned k = 0; k < 16; k++)
		if (scsi_stats_tmf_name((uint8_t)k)) {
			fprintf(f, "targetd_task_management_total{function=\"%s\"} %llu\n",
				scsi_stats_tmf_name((uint8_t)k), (unsigned long long)g.tmf[k]);
		}
	reload_read_unlock();
	free(s);
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
