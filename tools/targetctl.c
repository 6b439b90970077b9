/*
 * targetctl: the admin CLI of targetd. Talks to the daemon's control socket
 * (JSON-RPC 2.0 lines, control protocol version 2, targetctl(8)).
 *
 * The commands are the table `commands` near the end: one entry (words,
 * usage, summary, function) per command; `targetctl --help` prints it.
 *
 * DESIGN: one process, one thread; `top` loops: request "stats", compute
 * rates from the difference with the previous answer, draw with ANSI
 * escapes, wait for the next tick or a key (terminal in non-canonical
 * mode, restored on exit).
 */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "conf/config.h"
#include "scsi/stats.h"
#include "tools/targetctl.h"
#include "tools/targetctl_observe.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *sock_path;      /* -s, TARGETD_CONTROL, or the default */
static const char *sock_from;      /* where sock_path came from, for messages */
bool tc_json;              /* -j: print the daemon's JSON */
static int ctl_fd = -1;
static char *rx_buf;
static size_t rx_len;
static int rpc_id;

int tc_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int tc_die(const char *fmt, ...)
{
	va_list ap;

	fputs("targetctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

int tc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tc_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("targetctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see targetctl --help)\n", stderr);
	return 2;
}

static void ctl_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int e;

	if (strlen(sock_path) >= sizeof(sa.sun_path))
		tc_die("%s: path too long for a UNIX socket", sock_path);
	strcpy(sa.sun_path, sock_path);
	ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl_fd < 0)
		tc_die("socket: %s", strerror(errno));
	if (!connect(ctl_fd, (struct sockaddr *)&sa, sizeof(sa)))
		return;
	e = errno;
	fprintf(stderr, "targetctl: cannot reach targetd at %s (%s): %s\n", sock_path, sock_from,
		strerror(e));
	if (e == EACCES || e == EPERM)
		fprintf(stderr, "  the socket is mode 0600: run targetctl as the daemon's user (root)\n");
	else
		fprintf(stderr, "  is targetd running? Its control_socket key (targetd.conf(5)) names "
				"the socket;\n  point targetctl elsewhere with -s PATH or "
				"TARGETD_CONTROL=PATH\n");
	exit(1);
}

/* Send one request, return the answer object (caller puts it). */
static struct json_object *ctl_call(struct json_object *req)
{
	const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(s);
	struct json_object *rep;
	char *nl;

	if (ctl_fd < 0)
		ctl_connect();
	if (send(ctl_fd, s, n, MSG_NOSIGNAL) != (ssize_t)n || send(ctl_fd, "\n", 1, MSG_NOSIGNAL) != 1)
		tc_die("writing to %s: %s", sock_path, strerror(errno));
	while (!(nl = rx_buf ? memchr(rx_buf, '\n', rx_len) : NULL)) {
		char tmp[65536];
		ssize_t r = recv(ctl_fd, tmp, sizeof(tmp), 0);
		char *nb;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			tc_die("the daemon closed the control connection (%s)", sock_path);
		nb = realloc(rx_buf, rx_len + (size_t)r + 1);
		if (!nb)
			tc_die("out of memory");
		rx_buf = nb;
		memcpy(rx_buf + rx_len, tmp, (size_t)r);
		rx_len += (size_t)r;
		rx_buf[rx_len] = 0;
	}
	*nl = 0;
	rep = json_tokener_parse(rx_buf);
	rx_len -= (size_t)(nl + 1 - rx_buf);
	memmove(rx_buf, nl + 1, rx_len);
	rx_buf[rx_len] = 0;
	if (!rep || !json_object_is_type(rep, json_type_object))
		tc_die("the daemon's answer is not a JSON-RPC response");
	return rep;
}

/* Call method with params (consumed; NULL = none); the answer object. */
struct json_object *tc_rpc(const char *method, struct json_object *params)
{
	struct json_object *req = json_object_new_object(), *rep;

	json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(req, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(req, "params", params);
	json_object_object_add(req, "id", json_object_new_int(++rpc_id));
	rep = ctl_call(req);
	json_object_put(req);
	return rep;
}

/* The old shape of a request: a method with an optional target and LUN. */
struct json_object *tc_request(const char *method, const char *target, int lun)
{
	struct json_object *p = json_object_new_object();

	if (target)
		json_object_object_add(p, "target", json_object_new_string(target));
	if (lun >= 0)
		json_object_object_add(p, "lun", json_object_new_int(lun));
	return tc_rpc(method, p);
}

struct json_object *tc_get(struct json_object *o, const char *path)
{
	char key[64];

	while (o && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = 0;
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		path += n + (dot ? 1 : 0);
	}
	return o;
}

uint64_t tc_getu(struct json_object *o, const char *path)
{
	struct json_object *v = tc_get(o, path);

	return v ? (uint64_t)json_object_get_int64(v) : 0;
}

const char *tc_gets(struct json_object *o, const char *path)
{
	struct json_object *v = tc_get(o, path);

	return v ? json_object_get_string(v) : "";
}

void tc_print_json(struct json_object *o);

/* The result of an answer; on an error print it (as JSON on stdout with
 * -j, else as text on stderr) and exit 1. */
struct json_object *tc_result(struct json_object *rep)
{
	struct json_object *e = tc_get(rep, "error"), *errs;

	if (!e)
		return tc_get(rep, "result");
	if (tc_json) {
		tc_print_json(e);
		exit(1);
	}
	fprintf(stderr, "targetctl: %s\n", tc_gets(e, "message"));
	errs = tc_get(e, "data.errors");
	for (size_t i = 0; errs && i < json_object_array_length(errs); i++)
		fprintf(stderr, "  %s\n", json_object_get_string(json_object_array_get_idx(errs, i)));
	exit(1);
}

void tc_print_json(struct json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
}

/* ---- human output -------------------------------------------------------- */

static void show_status(struct json_object *r)
{
	printf("targetd %s, pid %s, up %llus\n", tc_gets(r, "version"), tc_gets(r, "pid"),
	       (unsigned long long)tc_getu(r, "uptime_s"));
	printf("  threads   %llu\n", (unsigned long long)tc_getu(r, "threads"));
	printf("  targets   %llu\n", (unsigned long long)tc_getu(r, "targets"));
	printf("  LUNs      %llu\n", (unsigned long long)tc_getu(r, "luns"));
	printf("  sessions  %llu\n", (unsigned long long)tc_getu(r, "sessions"));
	printf("  config    %s (%llu reloads)\n", tc_gets(r, "config"),
	       (unsigned long long)tc_getu(r, "reloads"));
	printf("  metrics   %s\n", tc_get(r, "metrics_listen") ? tc_gets(r, "metrics_listen") : "off");
}

static void show_targets(struct json_object *r)
{
	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *t = json_object_array_get_idx(r, i), *l = tc_get(t, "luns"),
				   *a = tc_get(t, "initiators");

		printf("%s%s%s%s\n", tc_gets(t, "iqn"), *tc_gets(t, "alias") ? " (" : "", tc_gets(t, "alias"),
		       *tc_gets(t, "alias") ? ")" : "");
		printf("  LUNs:");
		for (size_t k = 0; l && k < json_object_array_length(l); k++)
			printf(" %d", json_object_get_int(json_object_array_get_idx(l, k)));
		printf("\n  initiators:");
		if (!a)
			printf(" any");
		for (size_t k = 0; a && k < json_object_array_length(a); k++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(a, k)));
		printf("\n  CHAP: %s\n", json_object_get_boolean(tc_get(t, "chap")) ? "yes" : "no");
	}
}

static void show_luns(struct json_object *r)
{
	printf("%-44s %4s %-7s %14s %6s %-3s %14s %14s %-5s  %s\n", "TARGET", "LUN", "STORE", "SIZE",
	       "BLOCK", "RO", "ALLOCATED", "POOL FREE", "ZERO", "PATH");
	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *l = json_object_array_get_idx(r, i);
		char alloc[24] = "-", pfree[24] = "-";

		/* space: what the LUN holds, what its pool has left */
		if (tc_get(l, "allocated_bytes"))
			snprintf(alloc, sizeof(alloc), "%llu", (unsigned long long)tc_getu(l, "allocated_bytes"));
		if (tc_get(l, "pool_free_bytes"))
			snprintf(pfree, sizeof(pfree), "%llu", (unsigned long long)tc_getu(l, "pool_free_bytes"));
		printf("%-44s %4llu %-7s %14llu %6llu %-3s %14s %14s %-5s  %s\n", tc_gets(l, "target"),
		       (unsigned long long)tc_getu(l, "lun"), tc_gets(l, "backstore"),
		       (unsigned long long)tc_getu(l, "size_bytes"), (unsigned long long)tc_getu(l, "block_size"),
		       json_object_get_boolean(tc_get(l, "read_only")) ? "yes" : "no", alloc, pfree,
		       tc_get(l, "zero_detect") ? tc_gets(l, "zero_detect") : "-",
		       tc_get(l, "path") ? tc_gets(l, "path") : "-");
	}
}

static void show_sessions(struct json_object *r)
{
	if (!json_object_array_length(r))
		printf("no sessions\n");
	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *s = json_object_array_get_idx(r, i), *c = tc_get(s, "connections");
		struct json_object *p = tc_get(s, "parameters");

		printf("%s  ISID %s  TSIH %llu\n", tc_gets(s, "initiator"), tc_gets(s, "isid"),
		       (unsigned long long)tc_getu(s, "tsih"));
		printf("  target: %s\n", tc_get(s, "target") ? tc_gets(s, "target") : "(discovery)");
		for (size_t k = 0; c && k < json_object_array_length(c); k++) {
			struct json_object *x = json_object_array_get_idx(c, k);

			printf("  connection %llu: %s -> portal %s, tpgt %llu\n",
			       (unsigned long long)tc_getu(x, "cid"), tc_gets(x, "peer"), tc_gets(x, "portal"),
			       (unsigned long long)tc_getu(x, "tpgt"));
		}
		printf("  parameters:");
		json_object_object_foreach(p, key, val)
			printf(" %s=%s", key, json_object_get_string(val));
		printf("\n  statistics: %llu commands (%llu not GOOD), %llu bytes in, %llu bytes out\n",
		       (unsigned long long)tc_getu(s, "statistics.commands"),
		       (unsigned long long)tc_getu(s, "statistics.not_good"),
		       (unsigned long long)tc_getu(s, "statistics.data_in_bytes"),
		       (unsigned long long)tc_getu(s, "statistics.data_out_bytes"));
	}
}

static void show_lat(struct json_object *l, const char *cls)
{
	char path[64];

	snprintf(path, sizeof(path), "latency.%s", cls);
	if (!tc_getu(l, strcat(path, ".count")))
		return;
	snprintf(path, sizeof(path), "latency.%s", cls);
	{
		struct json_object *o = tc_get(l, path);

		printf("  latency %-5s  n=%llu  avg %.1f us  p50 %.1f us  p99 %.1f us\n", cls,
		       (unsigned long long)tc_getu(o, "count"),
		       json_object_get_double(tc_get(o, "sum_us")) / (double)tc_getu(o, "count"),
		       json_object_get_double(tc_get(o, "p50_us")), json_object_get_double(tc_get(o, "p99_us")));
	}
}

static void show_stats(struct json_object *r)
{
	struct json_object *luns = tc_get(r, "luns");

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
		printf("\n  read           %llu commands, %llu bytes\n",
		       (unsigned long long)tc_getu(l, "read.commands"), (unsigned long long)tc_getu(l, "read.bytes"));
		printf("  write          %llu commands, %llu bytes\n",
		       (unsigned long long)tc_getu(l, "write.commands"), (unsigned long long)tc_getu(l, "write.bytes"));
		show_lat(l, "read");
		show_lat(l, "write");
		show_lat(l, "vaai");
		printf("  ATS            %llu success, %llu miscompare\n",
		       (unsigned long long)tc_getu(l, "vaai.compare_and_write.success"),
		       (unsigned long long)tc_getu(l, "vaai.compare_and_write.miscompare"));
		printf("  XCOPY          %llu commands, %llu segments, %llu bytes\n",
		       (unsigned long long)tc_getu(l, "vaai.extended_copy.commands"),
		       (unsigned long long)tc_getu(l, "vaai.extended_copy.segments"),
		       (unsigned long long)tc_getu(l, "vaai.extended_copy.bytes"));
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

/* ---- top ---------------------------------------------------------------- */

struct top_row {
	char key[300];
	uint64_t cmds, bytes, ats, mis, xcopy, conflicts;
	uint64_t lat[SCSI_STATS_LAT_BUCKETS];
};

static struct termios saved_tio;
static bool tio_saved;

static void tty_restore(void)
{
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	tio_saved = false;
	if (isatty(STDOUT_FILENO))
		fputs("\033[?25h", stdout);   /* cursor back */
}

static void on_signal(int sig)
{
	(void)sig;
	tty_restore();
	_exit(0);
}

static void row_from(struct json_object *l, struct top_row *r)
{
	static const char *const cls[] = { "read", "write", "vaai" };

	snprintf(r->key, sizeof(r->key), "%s/%llu", tc_gets(l, "target"), (unsigned long long)tc_getu(l, "lun"));
	r->cmds = tc_getu(l, "commands.total");
	r->bytes = tc_getu(l, "read.bytes") + tc_getu(l, "write.bytes");
	r->ats = tc_getu(l, "vaai.compare_and_write.success") + tc_getu(l, "vaai.compare_and_write.miscompare");
	r->mis = tc_getu(l, "vaai.compare_and_write.miscompare");
	r->xcopy = tc_getu(l, "vaai.extended_copy.bytes");
	r->conflicts = tc_getu(l, "reservations.conflicts.total");
	memset(r->lat, 0, sizeof(r->lat));
	for (unsigned c = 0; c < 3; c++) {
		char path[32];
		struct json_object *b;

		snprintf(path, sizeof(path), "latency.%s.buckets", cls[c]);
		b = tc_get(l, path);
		for (size_t i = 0; b && i < json_object_array_length(b) && i < SCSI_STATS_LAT_BUCKETS; i++)
			r->lat[i] += tc_getu(json_object_array_get_idx(b, i), "count");
	}
}

static int cmd_top(double interval, long count)
{
	struct top_row *prev = NULL, *cur = NULL;
	size_t n_prev = 0;
	double t_prev = 0;
	bool tty = isatty(STDIN_FILENO);

	if (tty) {
		struct termios t;

		tcgetattr(STDIN_FILENO, &saved_tio);
		tio_saved = true;
		t = saved_tio;
		t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &t);
		atexit(tty_restore);
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	for (long iter = 0; count <= 0 || iter < count; iter++) {
		struct json_object *rep = tc_request("stats", NULL, -1);
		struct json_object *res = tc_result(rep), *luns = tc_get(res, "luns");
		double now = json_object_get_double(tc_get(res, "time"));
		size_t n = luns ? json_object_array_length(luns) : 0;
		double dt = t_prev ? now - t_prev : 0;
		struct pollfd pf = { .fd = STDIN_FILENO, .events = POLLIN };
		time_t wall = time(NULL);
		char clock[16];

		cur = calloc(n ? n : 1, sizeof(*cur));
		if (!cur)
			tc_die("out of memory");
		for (size_t i = 0; i < n; i++)
			row_from(json_object_array_get_idx(luns, i), &cur[i]);
		strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&wall));
		printf("\033[H\033[2J\033[?25l");
		printf("\033[1mtargetd top\033[0m  %s  %zu LUNs  interval %.1fs  (q quits)\n\n", clock, n,
		       interval);
		printf("\033[7m%-40s %9s %9s %9s %9s %8s %8s %9s %9s\033[0m\n", "TARGET/LUN", "IOPS",
		       "MB/s", "LAT p50", "LAT p99", "ATS/s", "MISC/s", "XCOPYMB/s", "CONFL/s");
		for (size_t i = 0; i < n; i++) {
			const struct top_row *p = NULL;
			uint64_t dl[SCSI_STATS_LAT_BUCKETS];
			const char *key = cur[i].key;
			size_t kl = strlen(key);

			for (size_t k = 0; k < n_prev; k++)
				if (!strcmp(prev[k].key, cur[i].key))
					p = &prev[k];
			if (kl > 40)
				key += kl - 40;
			if (!p || dt <= 0) {
				printf("%-40s %9s %9s %9s %9s %8s %8s %9s %9s\n", key, "-", "-", "-", "-", "-", "-",
				       "-", "-");
				continue;
			}
			for (unsigned b = 0; b < SCSI_STATS_LAT_BUCKETS; b++)
				dl[b] = cur[i].lat[b] >= p->lat[b] ? cur[i].lat[b] - p->lat[b] : 0;
#define RATE(f) ((double)(cur[i].f >= p->f ? cur[i].f - p->f : 0) / dt)
			printf("%-40s %9.0f %9.2f %7.0fus %7.0fus %8.1f %8.1f %9.2f %9.1f\n", key, RATE(cmds),
			       RATE(bytes) / 1e6, scsi_stats_quantile_us(dl, 0.5),
			       scsi_stats_quantile_us(dl, 0.99), RATE(ats), RATE(mis), RATE(xcopy) / 1e6,
			       RATE(conflicts));
#undef RATE
		}
		fflush(stdout);
		json_object_put(rep);
		free(prev);
		prev = cur;
		n_prev = n;
		t_prev = now;
		if (count > 0 && iter + 1 >= count)
			break;
		/* wait for the next tick; q quits */
		{
			struct timespec t0, t1;
			int left = (int)(interval * 1000);

			clock_gettime(CLOCK_MONOTONIC, &t0);
			while (left > 0) {
				int pr = poll(&pf, 1, left);
				char ch;

				if (pr > 0) {
					ssize_t r = read(STDIN_FILENO, &ch, 1);

					if (r == 0 && !tty)
						pf.fd = -1;   /* stdin closed: just keep refreshing */
					if (r == 1 && (ch == 'q' || ch == 'Q')) {
						free(prev);
						tty_restore();
						putchar('\n');
						return 0;
					}
				}
				clock_gettime(CLOCK_MONOTONIC, &t1);
				left = (int)(interval * 1000) -
				       (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
			}
		}
	}
	free(prev);
	tty_restore();
	return 0;
}

/* ---- the commands ------------------------------------------------------- */

/* argv[0] is the command's last word; options may come anywhere. */
typedef int (*cli_fn)(int argc, char **argv);

/* Positional arguments of a command that takes no options but -j/-s
 * (removed before it runs): at most max of them, at least min. */
int tc_plain_args(int argc, char **argv, int min, int max, const char *usage)
{
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1])
			return tc_usage_error("%s: unknown option %s", usage, argv[i]);
	if (argc - 1 < min || argc - 1 > max)
		return tc_usage_error("usage: targetctl %s", usage);
	return 0;
}

/* Parse a LUN number 0..255; -1 (after a message) when it is not one. */
int tc_lun_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > 255) {
		tc_usage_error("LUN must be a number 0..255, not '%s'", s);
		return -1;
	}
	return (int)v;
}

/* Print a query's result (or its JSON) and return 0. */
int tc_show(const char *method, struct json_object *params, void (*human)(struct json_object *))
{
	struct json_object *rep = tc_rpc(method, params), *res = tc_result(rep);

	if (tc_json)
		tc_print_json(res);
	else
		human(res);
	json_object_put(rep);
	return 0;
}

static int cli_status(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "status") ?: tc_show("status", NULL, show_status);
}

static int cli_targets(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "targets") ?: tc_show("targets", NULL, show_targets);
}

static int cli_luns(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "luns") ?: tc_show("luns", NULL, show_luns);
}

static int cli_sessions(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "sessions") ?: tc_show("sessions", NULL, show_sessions);
}

static void show_reset(struct json_object *r)
{
	printf("counters of %llu LUNs reset\n", (unsigned long long)tc_getu(r, "reset"));
}

static int cli_stats(int argc, char **argv)
{
	bool reset = false;
	char *pos[3];
	int n = 0, lun = -1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reset") || !strcmp(argv[i], "-r"))
			reset = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return tc_usage_error("stats: unknown option %s", argv[i]);
		else if (n < 3)
			pos[n++] = argv[i];
		else
			return tc_usage_error("stats: too many arguments");
	}
	if (n > 2)
		return tc_usage_error("usage: targetctl stats [--reset] [TARGET [LUN]]");
	if (n > 1 && (lun = tc_lun_arg(pos[1])) < 0)
		return 2;
	{
		struct json_object *rep = tc_request(reset ? "reset" : "stats", n ? pos[0] : NULL, lun);
		struct json_object *res = tc_result(rep);

		if (tc_json)
			tc_print_json(res);
		else if (reset)
			show_reset(res);
		else
			show_stats(res);
		json_object_put(rep);
	}
	return 0;
}

static int cli_top(int argc, char **argv)
{
	static const struct option o[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	double interval = 1.0;
	long count = 0;
	char *end;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+d:n:", o, NULL)) != -1) {
		switch (c) {
		case 'd':
			interval = strtod(optarg, &end);
			if (*end || interval <= 0)
				return tc_usage_error("top: -d wants seconds, not '%s'", optarg);
			if (interval < 0.1)
				interval = 0.1;
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1)
				return tc_usage_error("top: -n wants a count of screens, not '%s'", optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind < argc)
		return tc_usage_error("usage: targetctl top [-d SECONDS] [-n COUNT]");
	return cmd_top(interval, count);
}

static void show_reload(struct json_object *r)
{
	struct json_object *ch = tc_get(r, "changes");

	for (size_t i = 0; ch && i < json_object_array_length(ch); i++)
		printf("%s\n", json_object_get_string(json_object_array_get_idx(ch, i)));
}

static int cli_reload(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "reload") ?: tc_show("reload", NULL, show_reload);
}

static void show_methods(struct json_object *r)
{
	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *m = json_object_array_get_idx(r, i);

		printf("%-16s %-36s %s\n", tc_gets(m, "method"), tc_gets(m, "params"), tc_gets(m, "summary"));
	}
}

static int cli_methods(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "methods") ?: tc_show("help", NULL, show_methods);
}

/* The observation commands (targetctl_observe.c) call methods through
 * this: the result (a reference), or print the error and exit. */
static struct json_object *observe_rpc(const char *method, struct json_object *params)
{
	struct json_object *rep = tc_rpc(method, params), *res = json_object_get(tc_result(rep));

	json_object_put(rep);
	return res;
}

static int cli_histo(int argc, char **argv)
{
	const struct tc_observe io = { .call = observe_rpc, .json = tc_json };

	return tc_observe_histo(argc, argv, &io);
}

static int cli_trace(int argc, char **argv)
{
	const struct tc_observe io = { .call = observe_rpc, .json = tc_json };

	return tc_observe_trace(argc, argv, &io);
}

struct cli_cmd {
	const char *word, *word2;  /* "lun", "resize"; word2 NULL: one word */
	const char *args;          /* usage after the words */
	const char *summary;
	cli_fn fn;
};

static const struct cli_cmd commands[] = {
	{ "status", NULL, "", "daemon version, uptime, counts, paths", cli_status },
	{ "targets", NULL, "", "targets, their LUNs, ACLs and CHAP", cli_targets },
	{ "luns", NULL, "", "LUNs: backstore, path, size, identifiers", cli_luns },
	{ "sessions", NULL, "", "sessions: initiator, ISID, TSIH, connections, parameters",
	  cli_sessions },
	{ "stats", NULL, "[--reset] [TARGET [LUN]]", "per-LUN counters (--reset: zero them)",
	  cli_stats },
	{ "top", NULL, "[-d SECONDS] [-n COUNT]", "live per-LUN rates (q quits)", cli_top },
	{ "reload", NULL, "", "re-read the configuration file, apply the difference", cli_reload },
	{ "target", "add", "IQN [--alias TEXT]", "add a target (no LUNs yet)", tc_target_add },
	{ "target", "remove", "IQN [--force]", "remove a target (--force: with sessions)",
	  tc_target_remove },
	{ "lun", "add", "TARGET LUN file|block|memory [PATH] [--size SIZE] ...",
	  "add a LUN (lun add --help)", tc_lun_add },
	{ "lun", "remove", "TARGET LUN [--force]", "remove a LUN (--force: with sessions)",
	  tc_lun_remove },
	{ "lun", "resize", "TARGET LUN SIZE [--shrink --force]",
	  "grow a LUN (shrinking destroys data)", tc_lun_resize },
	{ "lun", "offline", "TARGET LUN", "media access answers NOT READY", tc_lun_offline },
	{ "lun", "online", "TARGET LUN", "back from offline", tc_lun_online },
	{ "acl", "add", "TARGET INITIATOR", "allow an initiator", tc_acl_add },
	{ "acl", "remove", "TARGET INITIATOR", "disallow (its sessions are closed)", tc_acl_remove },
	{ "chap", "set", "TARGET USER SECRET [--mutual-user U --mutual-secret S] | --off",
	  "CHAP of a target (SECRET - : stdin)", tc_chap_set },
	{ "session", "list", "", "the same as sessions", cli_sessions },
	{ "session", "close", "TSIH [--cid CID]", "close a session or one connection",
	  tc_session_close },
	{ "portal", "add", "ADDRESS:PORT [--tpgt N]", "listen on one more portal", tc_portal_add },
	{ "portal", "remove", "ADDRESS:PORT", "stop listening (connections stay)", tc_portal_remove },
	{ "config", "show", "", "the running configuration", tc_config_show },
	{ "config", "diff", "", "the file against the running configuration", tc_config_diff },
	{ "histo", NULL, "[on|off|reset] [TARGET] LUN [--initiator NAME]",
	  "workload histograms of a LUN (a text chart)", cli_histo },
	{ "trace", NULL, "start|stop|status|dump ...", "command traces (targetctl(8))", cli_trace },
	{ "methods", NULL, "", "the daemon's control methods (JSON-RPC)", cli_methods },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: targetctl [-s SOCKET] [-j] COMMAND [ARGS]\n"
		   "Ask a running targetd, or change what it serves.\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		char words[128];

		snprintf(words, sizeof(words), "%s%s%s %s", commands[i].word,
			 commands[i].word2 ? " " : "", commands[i].word2 ? commands[i].word2 : "",
			 commands[i].args);
		fprintf(f, "  %-40s %s\n", words, commands[i].summary);
	}
	fprintf(f, "\n"
		   "  -s, --socket PATH   control socket (default: $TARGETD_CONTROL, else\n"
		   "                      " CONF_DEFAULT_CONTROL_SOCKET ")\n"
		   "  -j, --json          print the daemon's JSON answer (errors too, on stdout)\n"
		   "  -h, --help          this help\n"
		   "Exit status: 0 done, 1 error (daemon unreachable or said no), 2 usage.\n"
		   "See targetctl(8).\n");
}

/* Take the global options out of argv wherever they are (before or after
 * the command); what is left is the command and its own arguments. */
static int global_options(int *argcp, char **argv)
{
	int argc = *argcp, out = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			tc_json = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "-s") || !strcmp(a, "--socket")) {
			if (i + 1 >= argc)
				return tc_usage_error("%s needs a path", a);
			sock_path = argv[++i];
			sock_from = "from -s";
		} else if (!strncmp(a, "--socket=", 9)) {
			sock_path = a + 9;
			sock_from = "from -s";
		} else {
			argv[out++] = argv[i];
		}
	}
	*argcp = out;
	argv[out] = NULL;
	return 0;
}

int main(int argc, char **argv)
{
	const struct cli_cmd *c = NULL;
	int rc;

	sock_path = getenv("TARGETD_CONTROL");
	sock_from = "from TARGETD_CONTROL";
	if (!sock_path || !*sock_path) {
		sock_path = CONF_DEFAULT_CONTROL_SOCKET;
		sock_from = "the default";
	}
	if ((rc = global_options(&argc, argv)))
		return rc;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands) && !c; i++) {
		if (strcmp(commands[i].word, argv[1]))
			continue;
		if (!commands[i].word2)
			c = &commands[i];
		else if (argc > 2 && !strcmp(commands[i].word2, argv[2]))
			c = &commands[i];
	}
	if (!c) {
		char subs[256] = "";

		for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
			if (!strcmp(commands[i].word, argv[1]) && commands[i].word2 &&
			    strlen(subs) + strlen(commands[i].word2) + 3 < sizeof(subs))
				strcat(strcat(subs, subs[0] ? ", " : ""), commands[i].word2);
		if (subs[0])
			return tc_usage_error("%s %s: unknown; '%s' takes one of: %s", argv[1],
					   argc > 2 ? argv[2] : "(nothing)", argv[1], subs);
		return tc_usage_error("unknown command '%s'", argv[1]);
	}
	if (c->word2)
		return c->fn(argc - 2, argv + 2);
	return c->fn(argc - 1, argv + 1);
}
