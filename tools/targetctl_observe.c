/*
 * targetctl histo and targetctl trace (targetctl(8)): the workload
 * histograms as text charts, and command traces started, stopped and
 * printed. trace dump reads the file itself (common/trace_format.h).
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common/trace_format.h"
#include "scsi/stats.h"
#include "tools/targetctl_observe.h"

static const char *const classes[] = { "read", "write", "all" };

static int usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "targetctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see targetctl --help)\n");
	return 2;
}

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* An edge for people: 4K, 1M; 10us, 5ms; plain numbers otherwise. */
static const char *edge_text(int64_t v, const char *unit, char *buf, size_t cap)
{
	if (!strcmp(unit, "bytes") && v >= 1024 && v % 1024 == 0)
		snprintf(buf, cap, v >= 1048576 && v % 1048576 == 0 ? "%" PRId64 "M" : "%" PRId64 "K",
			 v >= 1048576 && v % 1048576 == 0 ? v / 1048576 : v / 1024);
	else if (!strcmp(unit, "us") && v >= 1000 && v % 1000 == 0)
		snprintf(buf, cap, "%" PRId64 "ms", v / 1000);
	else if (!strcmp(unit, "us"))
		snprintf(buf, cap, "%" PRId64 "us", v);
	else
		snprintf(buf, cap, "%" PRId64, v);
	return buf;
}

static uint64_t bucket(struct json_object *h, unsigned c, size_t i)
{
	struct json_object *b = jget(jget(h, classes[c]), "buckets");

	return b && i < json_object_array_length(b) ?
	       (uint64_t)json_object_get_int64(json_object_array_get_idx(b, i)) : 0;
}

static void chart(const char *name, struct json_object *h)
{
	struct json_object *edges = jget(h, "edges");
	const char *unit = json_object_get_string(jget(h, "unit"));
	size_t n = edges ? json_object_array_length(edges) + 1 : 0, first = n, last = 0;
	uint64_t max = 0;
	char e[32];

	printf("%s (%s, %s)\n", json_object_get_string(jget(h, "title")), unit, name);
	for (size_t i = 0; i < n; i++)
		for (unsigned c = 0; c < 3; c++)
			if (bucket(h, c, i)) {
				first = i < first ? i : first;
				last = i > last ? i : last;
				max = bucket(h, 2, i) > max ? bucket(h, 2, i) : max;
			}
	if (first == n) {
		printf("  (no commands)\n\n");
		return;
	}
	printf("  %10s %12s %12s %12s\n", "", "read", "write", "all");
	for (size_t i = first; i <= last; i++) {
		uint64_t all = bucket(h, 2, i);
		int bar = max ? (int)((all * 30 + max - 1) / max) : 0;
		char label[40];

		if (i + 1 == n)
			snprintf(label, sizeof(label), "> %s",
				 edge_text(json_object_get_int64(json_object_array_get_idx(edges, i - 1)),
					   unit, e, sizeof(e)));
		else
			snprintf(label, sizeof(label), "<= %s",
				 edge_text(json_object_get_int64(json_object_array_get_idx(edges, i)),
					   unit, e, sizeof(e)));
		printf("  %10s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "  %.*s\n", label,
		       bucket(h, 0, i), bucket(h, 1, i), all, bar,
		       "##############################");
	}
	printf("  %10s", "count");
	for (unsigned c = 0; c < 3; c++)
		printf(" %12" PRId64, json_object_get_int64(jget(jget(h, classes[c]), "count")));
	printf("\n");
	if (jget(jget(h, "all"), "p50")) {
		printf("  %10s", "p50/p99");
		for (unsigned c = 0; c < 3; c++) {
			struct json_object *k = jget(h, classes[c]);
			char cell[32] = "-";

			if (jget(k, "p50"))
				snprintf(cell, sizeof(cell), "%.0f/%.0f", json_object_get_double(jget(k, "p50")),
					 json_object_get_double(jget(k, "p99")));
			printf(" %12s", cell);
		}
		printf("  us\n");
	}
	printf("\n");
}

void tc_observe_histo_print(struct json_object *r)
{
	struct json_object *inits = jget(r, "initiators"), *hs = jget(r, "histograms");
	const char *who = jget(r, "initiator") ? json_object_get_string(jget(r, "initiator")) : NULL;

	printf("%s LUN %d: histograms %s; %s", json_object_get_string(jget(r, "target")),
	       json_object_get_int(jget(r, "lun")),
	       json_object_get_boolean(jget(r, "enabled")) ? "on" : "off",
	       who ? "initiator " : "all initiators");
	if (who)
		printf("%s", who);
	if (inits && json_object_array_length(inits)) {
		printf(" (sets kept for");
		for (size_t i = 0; i < json_object_array_length(inits); i++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(inits, i)));
		printf(")");
	}
	printf("\n\n");
	json_object_object_foreach(hs, name, h)
		chart(name, h);
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* [TARGET] [LUN] into params; need_lun: LUN is required. */
static int target_lun_args(char **pos, int n, bool need_lun, struct json_object *p)
{
	int li = -1;

	if (n > 2)
		return usage("too many words: %s", pos[2]);
	if (n == 2) {
		json_object_object_add(p, "target", json_object_new_string(pos[0]));
		li = 1;
	} else if (n == 1) {
		if (all_digits(pos[0]))
			li = 0;
		else if (need_lun)
			return usage("%s: a LUN number is needed after the target", pos[0]);
		else
			json_object_object_add(p, "target", json_object_new_string(pos[0]));
	} else if (need_lun) {
		return usage("%s", "histo needs a LUN: histo [on|off|reset] [TARGET] LUN");
	}
	if (li >= 0) {
		if (!all_digits(pos[li]) || atoi(pos[li]) > 255)
			return usage("%s: not a LUN number (0..255)", pos[li]);
		json_object_object_add(p, "lun", json_object_new_int(atoi(pos[li])));
	}
	return 0;
}

int tc_observe_histo(int argc, char **argv, const struct tc_observe *io)
{
	struct json_object *p = json_object_new_object(), *r;
	const char *method = "histo";
	char *pos[8];
	int n = 0, rc;
	bool json = io->json;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			json = true;
		} else if (!strcmp(argv[i], "--initiator")) {
			if (++i >= argc)
				return usage("%s needs a value", "--initiator");
			json_object_object_add(p, "initiator", json_object_new_string(argv[i]));
		} else if (argv[i][0] == '-') {
			return usage("histo: unknown option %s", argv[i]);
		} else if (n == 0 && (!strcmp(argv[i], "on") || !strcmp(argv[i], "off") ||
				      !strcmp(argv[i], "reset")) && method[5] == 0) {
			method = !strcmp(argv[i], "on") ? "histo.on" : !strcmp(argv[i], "off") ? "histo.off"
											  : "histo.reset";
		} else if (n < 8) {
			pos[n++] = argv[i];
		}
	}
	rc = target_lun_args(pos, n, true, p);
	if (rc) {
		json_object_put(p);
		return rc;
	}
	r = io->call(method, p);
	if (json)
		puts(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	else if (!strcmp(method, "histo"))
		tc_observe_histo_print(r);
	else
		printf("%s LUN %d: histograms %s\n", json_object_get_string(jget(r, "target")),
		       json_object_get_int(jget(r, "lun")),
		       json_object_get_boolean(jget(r, "enabled")) ? "on" : "off");
	json_object_put(r);
	return 0;
}

/* ---- trace -------------------------------------------------------------- */

static void trace_status_print(struct json_object *r)
{
	if (!json_object_get_boolean(jget(r, "active")) && !jget(r, "file")) {
		printf("no trace runs\n");
		return;
	}
	printf("trace %s: %s\n", json_object_get_boolean(jget(r, "active")) ? "running" : "stopped",
	       json_object_get_string(jget(r, "file")));
	printf("  target %s, LUN %s, initiator %s%s\n", json_object_get_string(jget(r, "target")),
	       jget(r, "lun") ? json_object_get_string(jget(r, "lun")) : "all",
	       jget(r, "initiator") ? json_object_get_string(jget(r, "initiator")) : "any",
	       json_object_get_boolean(jget(r, "data")) ? ", data CRC32C" : "");
	printf("  %" PRId64 " commands, %" PRId64 " dropped (writer behind), %" PRId64
	       " dropped (file full), %" PRId64 " of at most %" PRId64 " bytes\n",
	       json_object_get_int64(jget(r, "commands")), json_object_get_int64(jget(r, "dropped")),
	       json_object_get_int64(jget(r, "dropped_file_full")),
	       json_object_get_int64(jget(r, "bytes")), json_object_get_int64(jget(r, "max_bytes")));
}

/* An absolute path for the daemon (whose directory is not ours). */
static char *absolute(const char *f)
{
	char cwd[PATH_MAX], *out;

	if (f[0] == '/')
		return strdup(f);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	if (asprintf(&out, "%s/%s", cwd, f) < 0)
		return NULL;
	return out;
}

static int trace_start_cmd(int argc, char **argv, const struct tc_observe *io)
{
	struct json_object *p = json_object_new_object(), *r;
	char *pos[8];
	int n = 0, rc;
	bool json = io->json;

	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json") || !strcmp(a, "-j")) {
			json = true;
		} else if (!strcmp(a, "--data")) {
			json_object_object_add(p, "data", json_object_new_boolean(1));
		} else if (!strcmp(a, "--initiator") || !strcmp(a, "--file") || !strcmp(a, "--max-mb")) {
			if (++i >= argc)
				return usage("%s needs a value", a);
			if (!strcmp(a, "--initiator")) {
				json_object_object_add(p, "initiator", json_object_new_string(argv[i]));
			} else if (!strcmp(a, "--file")) {
				char *f = absolute(argv[i]);

				if (!f)
					return usage("%s: cannot make it an absolute path", argv[i]);
				json_object_object_add(p, "file", json_object_new_string(f));
				free(f);
			} else {
				if (!all_digits(argv[i]) || atol(argv[i]) < 1 || atol(argv[i]) > 1048576)
					return usage("--max-mb %s: a number of MiB from 1 to 1048576", argv[i]);
				json_object_object_add(p, "max_mb", json_object_new_int64(atol(argv[i])));
			}
		} else if (a[0] == '-') {
			return usage("trace start: unknown option %s", a);
		} else if (n < 8) {
			pos[n++] = argv[i];
		}
	}
	rc = target_lun_args(pos, n, false, p);
	if (rc) {
		json_object_put(p);
		return rc;
	}
	r = io->call("trace.start", p);
	if (json)
		puts(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	else
		trace_status_print(r);
	json_object_put(r);
	return 0;
}

static void hex(const uint8_t *p, unsigned n, char *out, size_t cap)
{
	size_t o = 0;

	out[0] = 0;
	for (unsigned i = 0; i < n && o + 3 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", p[i]);
}

static const char *status_name(uint8_t s)
{
	switch (s) {
	case 0x00: return "GOOD";
	case 0x02: return "CHECK_CONDITION";
	case 0x04: return "CONDITION_MET";
	case 0x08: return "BUSY";
	case 0x18: return "RESERVATION_CONFLICT";
	case 0x28: return "TASK_SET_FULL";
	case 0x30: return "ACA_ACTIVE";
	case 0x40: return "TASK_ABORTED";
	default: return "OTHER";
	}
}

/* Sense key, ASC, ASCQ of fixed or descriptor sense: "5/24/00" or "-". */
static const char *sense_text(const struct trace_cmd_info *c, char *buf, size_t cap)
{
	const uint8_t *s = c->sense;
	uint8_t rc = c->sense_len ? s[0] & 0x7f : 0;

	if ((rc == 0x70 || rc == 0x71) && c->sense_len >= 14)
		snprintf(buf, cap, "%x/%02x/%02x", s[2] & 0xf, s[12], s[13]);
	else if ((rc == 0x72 || rc == 0x73) && c->sense_len >= 4)
		snprintf(buf, cap, "%x/%02x/%02x", s[1] & 0xf, s[2], s[3]);
	else
		snprintf(buf, cap, "-");
	return buf;
}

static int cmp_arrival(const void *a, const void *b)
{
	const struct trace_cmd_info *x = a, *y = b;

	if (x->arrival_ns != y->arrival_ns)
		return x->arrival_ns < y->arrival_ns ? -1 : 1;
	return x < y ? -1 : x > y;   /* stable: file order */
}

static void dump_json(const struct trace_file *t)
{
	for (size_t i = 0; i < t->n_cmds; i++) {
		const struct trace_cmd_info *c = &t->cmds[i];
		struct json_object *o = json_object_new_object();
		const char *name = scsi_stats_opcode_name(c->cdb[0]);
		char buf[200];

		json_object_object_add(o, "arrival_ns", json_object_new_uint64(c->arrival_ns));
		json_object_object_add(o, "nexus", json_object_new_uint64(c->nexus));
		json_object_object_add(o, "lun", json_object_new_uint64(c->lun));
		json_object_object_add(o, "cmdsn", json_object_new_uint64(c->cmdsn));
		json_object_object_add(o, "itt", json_object_new_uint64(c->itt));
		hex(c->cdb, c->cdb_len, buf, sizeof(buf));
		json_object_object_add(o, "cdb", json_object_new_string(buf));
		json_object_object_add(o, "op", name ? json_object_new_string(name) : NULL);
		json_object_object_add(o, "exp_xfer_len", json_object_new_uint64(c->exp_xfer_len));
		json_object_object_add(o, "data_len", json_object_new_uint64(c->data_len));
		json_object_object_add(o, "sent", json_object_new_boolean(c->flags & TRACE_C_SENT));
		json_object_object_add(o, "status", json_object_new_int(c->status));
		hex(c->sense, c->sense_len, buf, sizeof(buf));
		json_object_object_add(o, "sense", json_object_new_string(buf));
		json_object_object_add(o, "latency_ns", json_object_new_uint64(c->latency_ns));
		if (c->flags & TRACE_C_CRC)
			json_object_object_add(o, "data_crc32c", json_object_new_uint64(c->data_crc));
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	}
}

static int trace_dump_cmd(int argc, char **argv, bool json)
{
	struct trace_file t;
	const char *file = NULL;
	char err[512];
	time_t start;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			json = true;
		else if (argv[i][0] == '-')
			return usage("trace dump: unknown option %s", argv[i]);
		else if (!file)
			file = argv[i];
		else
			return usage("trace dump: one file only (%s)", argv[i]);
	}
	if (!file)
		return usage("%s", "trace dump needs a FILE");
	if (trace_file_read(file, &t, err, sizeof(err))) {
		fprintf(stderr, "targetctl: %s\n", err);
		return 1;
	}
	qsort(t.cmds, t.n_cmds, sizeof(*t.cmds), cmp_arrival);
	if (json) {
		dump_json(&t);
	} else {
		start = (time_t)(t.hdr.start_real_ns / 1000000000u);
		printf("# %s: trace format %u, started %s", file, t.hdr.version, ctime(&start));
		printf("# %zu commands, %" PRIu64 " dropped%s%s%s\n", t.n_cmds, t.ended ? t.end_dropped : t.dropped,
		       t.ended ? "" : ", not stopped cleanly", t.error[0] ? ", " : "", t.error);
		for (unsigned i = 0; i < t.n_nexus; i++)
			printf("# nexus %" PRIu64 ": %s -> %s (portal group %u)\n", t.nexus[i].id,
			       t.nexus[i].initiator, t.nexus[i].target, t.nexus[i].tpgt);
		printf("# %12s %5s %3s %10s %10s %-22s %8s %8s %-20s %-9s %10s %s\n", "arrival_us",
		       "nexus", "lun", "cmdsn", "itt", "command", "exp_len", "data", "status", "sense",
		       "latency_us", "cdb");
		for (size_t i = 0; i < t.n_cmds; i++) {
			const struct trace_cmd_info *c = &t.cmds[i];
			const char *name = scsi_stats_opcode_name(c->cdb[0]);
			char cdb[80], sense[16], op[24];

			hex(c->cdb, c->cdb_len, cdb, sizeof(cdb));
			snprintf(op, sizeof(op), "%s", name ? name : "?");
			printf("  %12.3f %5" PRIu64 " %3" PRIu64 " %10u 0x%08x %-22s %8u %8u %-20s %-9s %10.1f %s",
			       (double)c->arrival_ns / 1000.0, c->nexus, c->lun, c->cmdsn, c->itt, op,
			       c->exp_xfer_len, c->data_len,
			       c->flags & TRACE_C_SENT ? status_name(c->status) : "(not sent)",
			       sense_text(c, sense, sizeof(sense)), (double)c->latency_ns / 1000.0, cdb);
			if (c->flags & TRACE_C_CRC)
				printf(" crc32c=%08x", c->data_crc);
			printf("\n");
		}
	}
	trace_file_free(&t);
	return 0;
}

int tc_observe_trace(int argc, char **argv, const struct tc_observe *io)
{
	struct json_object *r;
	bool json = io->json;
	const char *sub = argc > 1 ? argv[1] : "";

	if (!strcmp(sub, "start"))
		return trace_start_cmd(argc, argv, io);
	if (!strcmp(sub, "dump"))
		return trace_dump_cmd(argc, argv, json);
	if (strcmp(sub, "stop") && strcmp(sub, "status"))
		return usage("trace %s: start, stop, status or dump", sub);
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			json = true;
		else
			return usage("trace: unexpected %s", argv[i]);
	}
	r = io->call(!strcmp(sub, "stop") ? "trace.stop" : "trace.status", NULL);
	if (json)
		puts(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	else
		trace_status_print(r);
	json_object_put(r);
	return 0;
}
