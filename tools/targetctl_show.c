/*
 * targetctl: what the questions print. Tables go through libsmartcols:
 * they fit the terminal (paths are truncated first; an IQN is never cut),
 * and are plain text, full width, when standard output is not a terminal.
 * Sizes are shown in units (KiB, MiB, GiB, TiB).
 *
 * `top` queries the terminal's width (TIOCGWINSZ) on every screen and
 * draws with ANSI escapes; a key column too wide for the terminal puts
 * the numbers on the next line rather than cutting a name. It quits on q,
 * after -n screens, or, when standard output is not a terminal, after one
 * plain screen (two samples -d apart, so that it has rates).
 *
 * DESIGN: one thread. top puts the terminal in non-canonical mode and
 * restores it on every way out (q, -n, a signal).
 */
#include "config.h"
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <libsmartcols.h>
#include "common/util.h"
#include "scsi/stats.h"
#include "tools/targetctl.h"

/* ---- tables ---------------------------------------------------------------- */

struct libscols_table *tc_table(const struct tc_col *cols, size_t n)
{
	struct libscols_table *tb = scols_new_table();

	if (!tb)
		tc_die("out of memory");
	if (!isatty(STDOUT_FILENO))
		scols_table_enable_noencoding(tb, 1);
	for (size_t i = 0; i < n; i++)
		if (!scols_table_new_column(tb, cols[i].name, cols[i].whint, cols[i].flags))
			tc_die("out of memory");
	return tb;
}

struct libscols_line *tc_row(struct libscols_table *tb)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);

	if (!ln)
		tc_die("out of memory");
	return ln;
}

void tc_cell(struct libscols_line *ln, size_t col, const char *s)
{
	scols_line_set_data(ln, col, s && *s ? s : "-");
}

void tc_cellf(struct libscols_line *ln, size_t col, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	scols_line_set_data(ln, col, buf);
}

void tc_print_table(struct libscols_table *tb)
{
	scols_print_table(tb);
	scols_unref_table(tb);
}

/* 1073741824 -> "1 GiB", 1610612736 -> "1.5 GiB", 1000 -> "1000 B". */
const char *tc_size(uint64_t b, char *buf, size_t cap)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	unsigned i = 0;

	while (v >= 1024 && i + 1 < sizeof(u) / sizeof(u[0])) {
		v /= 1024;
		i++;
	}
	if (i == 0 || v == (double)(uint64_t)v)
		snprintf(buf, cap, "%.0f %s", v, u[i]);
	else
		snprintf(buf, cap, "%.1f %s", v, u[i]);
	return buf;
}

/* ---- status, targets, LUNs, sessions ---------------------------------------------- */

void tc_show_status(struct json_object *r)
{
	printf("targetd %s, pid %s, up %llus, control protocol %llu\n", tc_gets(r, "version"),
	       tc_gets(r, "pid"), (unsigned long long)tc_getu(r, "uptime_s"),
	       (unsigned long long)tc_getu(r, "protocol_version"));
	printf("  threads   %llu\n", (unsigned long long)tc_getu(r, "threads"));
	printf("  targets   %llu\n", (unsigned long long)tc_getu(r, "targets"));
	printf("  LUNs      %llu\n", (unsigned long long)tc_getu(r, "luns"));
	printf("  sessions  %llu\n", (unsigned long long)tc_getu(r, "sessions"));
	printf("  config    %s (%llu reloads)\n", tc_gets(r, "config"),
	       (unsigned long long)tc_getu(r, "reloads"));
	printf("  control   %s\n", tc_gets(r, "control_socket"));
	if (tc_get(r, "metrics_listen"))
		printf("  metrics   http://%s/metrics\n", tc_gets(r, "metrics_listen"));
	else
		printf("  metrics   off\n");
}

void tc_show_targets(struct json_object *r)
{
	static const struct tc_col cols[] = {
		{ "TARGET", 0, 0 }, { "ALIAS", 0.1, SCOLS_FL_TRUNC }, { "LUNS", 0, 0 },
		{ "INITIATORS", 0.3, SCOLS_FL_WRAP }, { "CHAP", 0, 0 },
	};
	struct libscols_table *tb = tc_table(cols, sizeof(cols) / sizeof(cols[0]));

	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *t = json_object_array_get_idx(r, i), *l = tc_get(t, "luns"),
				   *a = tc_get(t, "initiators");
		struct libscols_line *ln = tc_row(tb);
		char luns[1024] = "", ini[4096] = "";
		size_t o = 0;

		for (size_t k = 0; l && k < json_object_array_length(l) && o + 8 < sizeof(luns); k++)
			o += (size_t)snprintf(luns + o, sizeof(luns) - o, "%s%d", k ? "," : "",
					      json_object_get_int(json_object_array_get_idx(l, k)));
		o = 0;
		for (size_t k = 0; a && k < json_object_array_length(a) && o + 230 < sizeof(ini); k++)
			o += (size_t)snprintf(ini + o, sizeof(ini) - o, "%s%s", k ? " " : "",
					      json_object_get_string(json_object_array_get_idx(a, k)));
		tc_cell(ln, 0, tc_gets(t, "iqn"));
		tc_cell(ln, 1, tc_gets(t, "alias"));
		tc_cell(ln, 2, luns[0] ? luns : "none");
		tc_cell(ln, 3, a ? (ini[0] ? ini : "nobody") : "any");
		tc_cell(ln, 4, json_object_get_boolean(tc_get(t, "chap")) ? "yes" : "no");
	}
	tc_print_table(tb);
}

/* The snapshots of each LUN (targetctl lun snapshot), if there are any:
 * what each holds, and what of it is its own (not shared by reflink). */
static void show_snapshots(struct json_object *r)
{
	static const struct tc_col cols[] = {
		{ "TARGET", 0, 0 }, { "OF LUN", 0, SCOLS_FL_RIGHT }, { "SNAPSHOT", 0, 0 },
		{ "LUN", 0, SCOLS_FL_RIGHT }, { "TAKEN", 0, 0 }, { "SIZE", 0, SCOLS_FL_RIGHT },
		{ "ALLOCATED", 0, SCOLS_FL_RIGHT }, { "SHARED", 0, SCOLS_FL_RIGHT },
		{ "OWN", 0, SCOLS_FL_RIGHT },
	};
	struct libscols_table *tb = NULL;
	char a[32], b[32], c[32], d[32];

	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *l = json_object_array_get_idx(r, i), *ss = tc_get(l, "snapshots");

		for (size_t k = 0; ss && k < json_object_array_length(ss); k++) {
			struct json_object *s = json_object_array_get_idx(ss, k);
			struct libscols_line *ln;

			if (!tb)
				tb = tc_table(cols, sizeof(cols) / sizeof(cols[0]));
			ln = tc_row(tb);
			tc_cell(ln, 0, tc_gets(l, "target"));
			tc_cellf(ln, 1, "%llu", (unsigned long long)tc_getu(l, "lun"));
			tc_cell(ln, 2, tc_gets(s, "name"));
			tc_cellf(ln, 3, "%llu", (unsigned long long)tc_getu(s, "lun"));
			tc_cell(ln, 4, tc_get(s, "time") ? tc_gets(s, "time") : "-");
			tc_cell(ln, 5, tc_size(tc_getu(s, "size_bytes"), a, sizeof(a)));
			tc_cell(ln, 6, tc_get(s, "allocated_bytes")
					    ? tc_size(tc_getu(s, "allocated_bytes"), b, sizeof(b)) : "-");
			tc_cell(ln, 7, tc_get(s, "shared_bytes")
					    ? tc_size(tc_getu(s, "shared_bytes"), c, sizeof(c)) : "-");
			tc_cell(ln, 8, tc_get(s, "own_bytes") ? tc_size(tc_getu(s, "own_bytes"), d, sizeof(d))
							   : "-");
		}
	}
	if (tb) {
		printf("\n");
		tc_print_table(tb);
	}
}

void tc_show_luns(struct json_object *r)
{
	static const struct tc_col cols[] = {
		{ "TARGET", 0, 0 }, { "LUN", 0, SCOLS_FL_RIGHT }, { "STORE", 0, 0 },
		{ "SIZE", 0, SCOLS_FL_RIGHT }, { "BLOCK", 0, SCOLS_FL_RIGHT }, { "RO", 0, 0 },
		{ "STATE", 0, 0 }, { "ALLOCATED", 0, SCOLS_FL_RIGHT }, { "POOL FREE", 0, SCOLS_FL_RIGHT },
		{ "ZERO", 0, 0 }, { "PATH", 0.3, SCOLS_FL_TRUNC },
	};
	struct libscols_table *tb = tc_table(cols, sizeof(cols) / sizeof(cols[0]));
	char sz[32], al[32], pf[32];

	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *l = json_object_array_get_idx(r, i);
		struct libscols_line *ln = tc_row(tb);

		tc_cell(ln, 0, tc_gets(l, "target"));
		tc_cellf(ln, 1, "%llu", (unsigned long long)tc_getu(l, "lun"));
		tc_cell(ln, 2, tc_gets(l, "backstore"));
		tc_cell(ln, 3, tc_size(tc_getu(l, "size_bytes"), sz, sizeof(sz)));
		tc_cellf(ln, 4, "%llu", (unsigned long long)tc_getu(l, "block_size"));
		tc_cell(ln, 5, json_object_get_boolean(tc_get(l, "read_only")) ? "yes" : "no");
		tc_cell(ln, 6, json_object_get_boolean(tc_get(l, "offline")) ? "offline" : "online");
		/* space: what the LUN holds, what its pool has left */
		tc_cell(ln, 7, tc_get(l, "allocated_bytes")
				    ? tc_size(tc_getu(l, "allocated_bytes"), al, sizeof(al)) : "-");
		tc_cell(ln, 8, tc_get(l, "pool_free_bytes")
				    ? tc_size(tc_getu(l, "pool_free_bytes"), pf, sizeof(pf)) : "-");
		tc_cell(ln, 9, tc_get(l, "zero_detect") ? tc_gets(l, "zero_detect") : "-");
		tc_cell(ln, 10, tc_get(l, "path")    ? tc_gets(l, "path")
				: tc_get(l, "image") ? tc_gets(l, "image") : "-");
	}
	tc_print_table(tb);
	show_snapshots(r);
}

void tc_show_sessions(struct json_object *r)
{
	static const struct tc_col cols[] = {
		{ "INITIATOR", 0, 0 }, { "TARGET", 0, 0 }, { "TSIH", 0, SCOLS_FL_RIGHT },
		{ "ISID", 0, 0 }, { "CONN", 0, SCOLS_FL_RIGHT }, { "PEER", 0, 0 },
		{ "DIGESTS", 0, 0 }, { "MAXBURST", 0, SCOLS_FL_RIGHT }, { "CMDS", 0, SCOLS_FL_RIGHT },
		{ "READ", 0, SCOLS_FL_RIGHT }, { "WRITTEN", 0, SCOLS_FL_RIGHT },
	};
	struct libscols_table *tb;
	char a[32], b[32];

	if (!json_object_array_length(r)) {
		printf("no sessions\n");
		return;
	}
	tb = tc_table(cols, sizeof(cols) / sizeof(cols[0]));
	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *s = json_object_array_get_idx(r, i), *c = tc_get(s, "connections");
		struct json_object *c0 = c && json_object_array_length(c) ? json_object_array_get_idx(c, 0)
									 : NULL;
		struct libscols_line *ln = tc_row(tb);

		tc_cell(ln, 0, tc_gets(s, "initiator"));
		tc_cell(ln, 1, tc_get(s, "target") ? tc_gets(s, "target") : "(discovery)");
		tc_cellf(ln, 2, "%llu", (unsigned long long)tc_getu(s, "tsih"));
		tc_cell(ln, 3, tc_gets(s, "isid"));
		tc_cellf(ln, 4, "%zu", c ? json_object_array_length(c) : (size_t)0);
		tc_cell(ln, 5, c0 ? tc_gets(c0, "peer") : "-");
		tc_cellf(ln, 6, "%s/%s", strcmp(tc_gets(s, "parameters.HeaderDigest"), "None") ? "H" : "-",
		      strcmp(tc_gets(s, "parameters.DataDigest"), "None") ? "D" : "-");
		tc_cell(ln, 7, tc_size(tc_getu(s, "parameters.MaxBurstLength"), a, sizeof(a)));
		tc_cellf(ln, 8, "%llu", (unsigned long long)tc_getu(s, "statistics.commands"));
		tc_cell(ln, 9, tc_size(tc_getu(s, "statistics.data_in_bytes"), a, sizeof(a)));
		tc_cell(ln, 10, tc_size(tc_getu(s, "statistics.data_out_bytes"), b, sizeof(b)));
	}
	tc_print_table(tb);
}

/* ---- stats ------------------------------------------------------------------------- */

static void show_lat(struct json_object *l, const char *path, const char *label)
{
	struct json_object *o = tc_get(l, path);
	uint64_t n = tc_getu(o, "count");

	if (!n)
		return;
	printf("  %-22s n=%llu  avg %.1f us  p50 %.1f us  p99 %.1f us\n", label,
	       (unsigned long long)n, json_object_get_double(tc_get(o, "sum_us")) / (double)n,
	       json_object_get_double(tc_get(o, "p50_us")), json_object_get_double(tc_get(o, "p99_us")));
}

/* One heading and its read/write/vaai lines, or the heading saying there
 * is nothing to show yet (a LUN that has seen no reads or writes). */
static void show_lat_group(struct json_object *l, const char *prefix, const char *what)
{
	static const char *const kinds[] = { "read", "write", "vaai" };
	char path[64];
	uint64_t any = 0;

	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		snprintf(path, sizeof(path), "%s.%s", prefix, kinds[k]);
		any += tc_getu(tc_get(l, path), "count");
	}
	printf("  latency: %s%s\n", what, any ? "" : ": no samples yet");
	for (size_t k = 0; any && k < ARRAY_SIZE(kinds); k++) {
		snprintf(path, sizeof(path), "%s.%s", prefix, kinds[k]);
		show_lat(l, path, kinds[k]);
	}
}

void tc_show_stats(struct json_object *r)
{
	struct json_object *luns = tc_get(r, "luns");
	char a[32], b[32];

	for (size_t i = 0; luns && i < json_object_array_length(luns); i++) {
		struct json_object *l = json_object_array_get_idx(luns, i), *ops = tc_get(l, "commands.by_opcode");
		struct json_object *sk = tc_get(l, "sense_keys"), *st = tc_get(l, "status");

		printf("%s LUN %llu\n", tc_gets(l, "target"), (unsigned long long)tc_getu(l, "lun"));
		printf("  commands       %llu\n", (unsigned long long)tc_getu(l, "commands.total"));
		for (size_t k = 0; ops && k < json_object_array_length(ops); k++) {
			struct json_object *o = json_object_array_get_idx(ops, k);

			printf("    %-36s %llu\n", tc_gets(o, "name"), (unsigned long long)tc_getu(o, "count"));
		}
		printf("  status        ");
		json_object_object_foreach(st, key, val)
			if (json_object_get_int64(val))
				printf(" %s=%s", key, json_object_get_string(val));
		printf("\n  sense keys    ");
		json_object_object_foreach(sk, key2, val2)
			printf(" %s=%s", key2, json_object_get_string(val2));
		printf("\n  read           %llu commands, %s\n", (unsigned long long)tc_getu(l, "read.commands"),
		       tc_size(tc_getu(l, "read.bytes"), a, sizeof(a)));
		printf("  write          %llu commands, %s\n", (unsigned long long)tc_getu(l, "write.commands"),
		       tc_size(tc_getu(l, "write.bytes"), b, sizeof(b)));
		show_lat_group(l, "latency", "from the command's arrival to its status sent");
		show_lat_group(l, "latency.backstore", "of the backstore request");
		printf("  ATS            %llu success, %llu miscompare\n",
		       (unsigned long long)tc_getu(l, "vaai.compare_and_write.success"),
		       (unsigned long long)tc_getu(l, "vaai.compare_and_write.miscompare"));
		printf("  XCOPY          %llu commands, %llu segments, %s\n",
		       (unsigned long long)tc_getu(l, "vaai.extended_copy.commands"),
		       (unsigned long long)tc_getu(l, "vaai.extended_copy.segments"),
		       tc_size(tc_getu(l, "vaai.extended_copy.bytes"), a, sizeof(a)));
		printf("  WRITE SAME     %llu commands, %llu blocks\n",
		       (unsigned long long)tc_getu(l, "vaai.write_same.commands"),
		       (unsigned long long)tc_getu(l, "vaai.write_same.blocks"));
		printf("  UNMAP          %llu commands, %llu blocks\n",
		       (unsigned long long)tc_getu(l, "vaai.unmap.commands"),
		       (unsigned long long)tc_getu(l, "vaai.unmap.blocks"));
		printf("  reservations   %llu reserve, %llu release, %llu conflicts\n",
		       (unsigned long long)tc_getu(l, "reservations.reserve"),
		       (unsigned long long)tc_getu(l, "reservations.release"),
		       (unsigned long long)tc_getu(l, "reservations.conflicts.total"));
		printf("  aborts         %llu, unit attentions %llu\n",
		       (unsigned long long)tc_getu(l, "task_management.aborts"),
		       (unsigned long long)tc_getu(l, "unit_attentions"));
	}
}

/* ---- top ----------------------------------------------------------------------------- */

struct top_row {
	char key[300];
	uint64_t cmds, bytes, ats, mis, xcopy, conflicts;
	uint64_t lat[SCSI_STATS_LAT_BUCKETS], bs[SCSI_STATS_LAT_BUCKETS];
};

static struct termios saved_tio;
static bool tio_saved, top_tty;

static void tty_restore(void)
{
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	tio_saved = false;
	if (top_tty)
		fputs("\033[?25h", stdout);   /* cursor back */
	fflush(stdout);
}

static void on_signal(int sig)
{
	(void)sig;
	tty_restore();
	_exit(0);
}

static void sum_buckets(struct json_object *l, const char *fmt, uint64_t *out)
{
	static const char *const cls[] = { "read", "write", "vaai" };

	memset(out, 0, sizeof(uint64_t) * SCSI_STATS_LAT_BUCKETS);
	for (unsigned c = 0; c < 3; c++) {
		char path[64];
		struct json_object *b;

		snprintf(path, sizeof(path), fmt, cls[c]);
		b = tc_get(l, path);
		for (size_t i = 0; b && i < json_object_array_length(b) && i < SCSI_STATS_LAT_BUCKETS; i++)
			out[i] += tc_getu(json_object_array_get_idx(b, i), "count");
	}
}

static void row_from(struct json_object *l, struct top_row *r)
{
	snprintf(r->key, sizeof(r->key), "%s/%llu", tc_gets(l, "target"),
		 (unsigned long long)tc_getu(l, "lun"));
	r->cmds = tc_getu(l, "commands.total");
	r->bytes = tc_getu(l, "read.bytes") + tc_getu(l, "write.bytes");
	r->ats = tc_getu(l, "vaai.compare_and_write.success") +
		 tc_getu(l, "vaai.compare_and_write.miscompare");
	r->mis = tc_getu(l, "vaai.compare_and_write.miscompare");
	r->xcopy = tc_getu(l, "vaai.extended_copy.bytes");
	r->conflicts = tc_getu(l, "reservations.conflicts.total");
	sum_buckets(l, "latency.%s.buckets", r->lat);
	sum_buckets(l, "latency.backstore.%s.buckets", r->bs);
}

static unsigned term_width(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 0;   /* not a terminal: no limit */
}

#define TOP_NUMS "%9s %9s %8s %8s %8s %7s %7s %9s %8s"
#define TOP_NUMS_W 82

/* One screen: rows of cur against prev over dt seconds. */
static void top_screen(const struct top_row *cur, size_t n, const struct top_row *prev,
		       size_t n_prev, double dt, double interval)
{
	unsigned width = term_width();
	size_t keyw = 10;
	bool two_lines;
	time_t wall = time(NULL);
	char clock[16];

	for (size_t i = 0; i < n; i++)
		if (strlen(cur[i].key) > keyw)
			keyw = strlen(cur[i].key);
	/* never cut a name: too wide, and the numbers go on their own line */
	two_lines = width && keyw + 1 + TOP_NUMS_W > width;
	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&wall));
	if (top_tty)
		printf("\033[H\033[2J\033[?25l\033[1m");
	printf("targetd top  %s  %zu LUNs  interval %.1fs%s", clock, n, interval,
	       top_tty ? "  (q quits)" : "");
	printf("%s\nlatency: command arrival to status sent (LAT), backstore request (BS)\n\n",
	       top_tty ? "\033[0m" : "");
	if (top_tty)
		printf("\033[7m");
	if (two_lines)
		printf("%-*s\n", (int)(width ? width - 1 : keyw), "TARGET/LUN");
	else
		printf("%-*s ", (int)keyw, "TARGET/LUN");
	printf(TOP_NUMS, "IOPS", "MB/s", "LAT p50", "LAT p99", "BS p99", "ATS/s", "MISC/s",
	       "XCOPYMB/s", "CONFL/s");
	printf("%s\n", top_tty ? "\033[0m" : "");
	for (size_t i = 0; i < n; i++) {
		const struct top_row *p = NULL;
		uint64_t dl[SCSI_STATS_LAT_BUCKETS], db[SCSI_STATS_LAT_BUCKETS];
		char v[9][24];

		for (size_t k = 0; k < n_prev; k++)
			if (!strcmp(prev[k].key, cur[i].key))
				p = &prev[k];
		if (two_lines)
			printf("%s\n%*s", cur[i].key, 2, "");
		else
			printf("%-*s ", (int)keyw, cur[i].key);
		if (!p || dt <= 0) {
			printf(TOP_NUMS "\n", "-", "-", "-", "-", "-", "-", "-", "-", "-");
			continue;
		}
		for (unsigned b = 0; b < SCSI_STATS_LAT_BUCKETS; b++) {
			dl[b] = cur[i].lat[b] >= p->lat[b] ? cur[i].lat[b] - p->lat[b] : 0;
			db[b] = cur[i].bs[b] >= p->bs[b] ? cur[i].bs[b] - p->bs[b] : 0;
		}
#define RATE(f) ((double)(cur[i].f >= p->f ? cur[i].f - p->f : 0) / dt)
		snprintf(v[0], sizeof(v[0]), "%.0f", RATE(cmds));
		snprintf(v[1], sizeof(v[1]), "%.2f", RATE(bytes) / 1e6);
		snprintf(v[2], sizeof(v[2]), "%.0fus", scsi_stats_quantile_us(dl, 0.5));
		snprintf(v[3], sizeof(v[3]), "%.0fus", scsi_stats_quantile_us(dl, 0.99));
		{
			uint64_t nbs = 0;

			for (unsigned b = 0; b < SCSI_STATS_LAT_BUCKETS; b++)
				nbs += db[b];
			/* no backstore request (reads from the page cache): say so */
			if (nbs)
				snprintf(v[4], sizeof(v[4]), "%.0fus", scsi_stats_quantile_us(db, 0.99));
			else
				snprintf(v[4], sizeof(v[4]), "-");
		}
		snprintf(v[5], sizeof(v[5]), "%.1f", RATE(ats));
		snprintf(v[6], sizeof(v[6]), "%.1f", RATE(mis));
		snprintf(v[7], sizeof(v[7]), "%.2f", RATE(xcopy) / 1e6);
		snprintf(v[8], sizeof(v[8]), "%.1f", RATE(conflicts));
#undef RATE
		printf(TOP_NUMS "\n", v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
	}
	fflush(stdout);
}

/* Wait interval seconds; true when q was pressed. */
static bool top_wait(double interval, bool tty_in)
{
	struct pollfd pf = { .fd = tty_in ? STDIN_FILENO : -1, .events = POLLIN };
	struct timespec t0, t1;
	int total = (int)(interval * 1000), left = total;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (left > 0) {
		char ch;

		if (poll(&pf, 1, left) > 0 && read(STDIN_FILENO, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = total - (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
	}
	return false;
}

int tc_top(double interval, long count)
{
	struct top_row *prev = NULL, *cur;
	size_t n_prev = 0;
	double t_prev = 0;
	bool tty_in = isatty(STDIN_FILENO);

	top_tty = isatty(STDOUT_FILENO);
	if (!top_tty && count <= 0)
		count = 2;   /* not a terminal: one screen with rates, then exit */
	if (tty_in && top_tty) {
		struct termios t;

		tcgetattr(STDIN_FILENO, &saved_tio);
		tio_saved = true;
		t = saved_tio;
		t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &t);
	}
	atexit(tty_restore);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (long iter = 0; count <= 0 || iter < count; iter++) {
		struct json_object *rep = tc_request("stats", NULL, -1);
		struct json_object *res = tc_result(rep), *luns = tc_get(res, "luns");
		double now = json_object_get_double(tc_get(res, "time"));
		size_t n = luns ? json_object_array_length(luns) : 0;

		cur = calloc(n ? n : 1, sizeof(*cur));
		if (!cur)
			tc_die("out of memory");
		for (size_t i = 0; i < n; i++)
			row_from(json_object_array_get_idx(luns, i), &cur[i]);
		/* off a terminal the first sample only sets the rates' start */
		if (top_tty || iter > 0)
			top_screen(cur, n, prev, n_prev, t_prev ? now - t_prev : 0, interval);
		json_object_put(rep);
		free(prev);
		prev = cur;
		n_prev = n;
		t_prev = now;
		if (count > 0 && iter + 1 >= count)
			break;
		if (top_wait(interval, tty_in && top_tty))
			break;
	}
	free(prev);
	tty_restore();
	if (top_tty)
		putchar('\n');
	return 0;
}
