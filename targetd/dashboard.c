/*
 * The dashboard (http_listen, targetd.conf(5)): one static page
 * (targetd/dashboard.html, built into the daemon) that polls /api/luns,
 * and /metrics as on metrics_listen. Off unless configured.
 *
 * DESIGN (threads): libmicrohttpd's own polling thread answers; a request
 * reads the runtime under reload_read_lock() and the counters and
 * histograms through their snapshots (per-thread shards summed, nothing
 * on the data path waits). At most 16 connections, 10 s idle timeout.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include "common/log.h"
#include "scsi/stats.h"
#include "targetd/metrics.h"
#include "targetd/reload.h"
#include "targetd/dashboard.h"
#include "targetd/histo_out.h"
#include "targetd/http.h"
#include "targetd/target.h"

extern const unsigned char dashboard_page[];
extern const size_t dashboard_page_len;

static struct MHD_Daemon *dash_daemon;

static struct json_object *lun_json(const struct iscsi_target *t, struct scsi_lun *lun,
				    struct scsi_stats_counters *c)
{
	struct json_object *o = json_object_new_object(), *h;
	uint64_t conflicts = 0;

	scsi_stats_snapshot(lun, c);
	for (unsigned i = 0; i < 256; i++)
		conflicts += c->conflicts[i];
	json_object_object_add(o, "target", json_object_new_string(t->iqn));
	json_object_object_add(o, "lun", json_object_new_int(lun->id));
	json_object_object_add(o, "block_size", json_object_new_int64(lun->block_size));
	json_object_object_add(o, "read_cmds", json_object_new_uint64(c->read_cmds));
	json_object_object_add(o, "write_cmds", json_object_new_uint64(c->write_cmds));
	json_object_object_add(o, "read_bytes", json_object_new_uint64(c->read_bytes));
	json_object_object_add(o, "write_bytes", json_object_new_uint64(c->write_bytes));
	json_object_object_add(o, "ats_ok", json_object_new_uint64(c->ats_ok));
	json_object_object_add(o, "ats_miscompare", json_object_new_uint64(c->ats_miscompare));
	json_object_object_add(o, "conflicts", json_object_new_uint64(conflicts));
	json_object_object_add(o, "xcopy_bytes", json_object_new_uint64(c->xcopy_bytes));
	json_object_object_add(o, "write_same_bytes",
			       json_object_new_uint64(c->ws_blocks * lun->block_size));
	json_object_object_add(o, "unmap_bytes", json_object_new_uint64(c->unmap_blocks * lun->block_size));
	h = histo_lun_json(t->iqn, lun, NULL);
	if (h) {
		struct json_object *hs = NULL;

		if (json_object_object_get_ex(h, "histograms", &hs))
			json_object_object_add(o, "histograms", json_object_get(hs));
		json_object_put(h);
	}
	return o;
}

/* {"time": s, "version": ..., "luns": [...]} */
char *dashboard_json(void)
{
	struct json_object *r = json_object_new_object(), *a = json_object_new_array();
	struct scsi_stats_counters *c = malloc(sizeof(*c));
	unsigned nt;
	char *text;

	if (!c) {
		json_object_put(r);
		json_object_put(a);
		return NULL;
	}
	reload_read_lock();
	nt = __atomic_load_n(&target_runtime->n_targets, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < nt; i++) {
		struct iscsi_target *t = &target_runtime->targets[i];

		if (__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE))
			continue;
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++) {
			struct scsi_lun *lun = scsi_target_lun(&t->st, k);

			if (lun)
				json_object_array_add(a, lun_json(t, lun, c));
		}
	}
	reload_read_unlock();
	free(c);
	json_object_object_add(r, "time", json_object_new_double((double)scsi_stats_now_ns() / 1e9));
	json_object_object_add(r, "version", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(r, "luns", a);
	text = strdup(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
	json_object_put(r);
	return text;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *type,
			     struct MHD_Response *rsp)
{
	enum MHD_Result ret;

	if (!rsp)
		return MHD_NO;
	MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(rsp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(conn, code, rsp);
	MHD_destroy_response(rsp);
	return ret;
}

static enum MHD_Result dash_request(void *cls, struct MHD_Connection *conn, const char *url,
				    const char *method, const char *version, const char *upload_data,
				    size_t *upload_size, void **req_cls)
{
	static const char not_found[] = "targetd: the dashboard is at /, its data at /api/luns, "
					"the metrics at /metrics\n";
	char *text;
	size_t len;

	(void)cls;
	(void)version;
	(void)upload_data;
	(void)upload_size;
	(void)req_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char msg[] = "only GET\n";

		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			     MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
							     MHD_RESPMEM_PERSISTENT));
	}
	if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
		return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
			     MHD_create_response_from_buffer(dashboard_page_len, (void *)dashboard_page,
							     MHD_RESPMEM_PERSISTENT));
	if (!strcmp(url, "/api/luns")) {
		text = dashboard_json();
		if (!text)
			return MHD_NO;
		return reply(conn, MHD_HTTP_OK, "application/json",
			     MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE));
	}
	if (!strcmp(url, "/metrics")) {
		text = metrics_render(&len);
		if (!text)
			return MHD_NO;
		return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
			     MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE));
	}
	return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain",
		     MHD_create_response_from_buffer(sizeof(not_found) - 1, (void *)not_found,
						     MHD_RESPMEM_PERSISTENT));
}

int dashboard_start(const char *listen)
{
	if (!listen)
		return 0;
	dash_daemon = http_serve("http_listen", listen, dash_request);
	if (!dash_daemon)
		return -1;
	log_info("dashboard on http://%s/", listen);
	return 0;
}

void dashboard_stop(void)
{
	if (dash_daemon) {
		MHD_stop_daemon(dash_daemon);
		dash_daemon = NULL;
	}
}
