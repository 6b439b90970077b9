/*
 * targetctl: the admin CLI of targetd. Talks to the daemon's control socket
 * (JSON lines, protocol version 1, targetctl(8)).
 *
 *   targetctl [-s SOCKET] status | targets | luns | sessions [--json]
 *   targetctl stats [TARGET [LUN]] [--json] | stats --reset [TARGET [LUN]]
 *   targetctl top [-d SECONDS] [-n COUNT]
 *   targetctl reload
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
#include "tools/targetctl_observe.h"

static const char *sock_path = CONF_DEFAULT_CONTROL_SOCKET;
static int ctl_fd = -1;
static char *rx_buf;
static size_t rx_len;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: targetctl [-s SOCKET] COMMAND [ARGS]\n"
		"Ask a running targetd.\n"
		"\n"
		"  status                      daemon version, uptime, counts\n"
		"  targets                     targets, their LUNs and ACLs\n"
		"  luns                        LUNs: backstore, size, identifiers\n"
		"  sessions                    sessions: initiator, ISID, TSIH, connections,\n"
		"                              negotiated parameters\n"
		"  stats [TARGET [LUN]]        per-LUN counters\n"
		"  stats --reset [TARGET [LUN]]  zero the counters\n"
		"  top [-d SEC] [-n COUNT]     live per-LUN rates (q quits)\n"
		"  reload                      re-read the configuration file\n"
		"\n"
		"  -s, --socket PATH   control socket (default " CONF_DEFAULT_CONTROL_SOCKET ")\n"
		"  -j, --json          print the daemon's JSON answer\n"
		"  -h, --help          this help\n"
		"See targetctl(8).\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("targetctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
	va_list ap;

	fputs("targetctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void ctl_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(sock_path) >= sizeof(sa.sun_path))
		die("%s: path too long", sock_path);
	strcpy(sa.sun_path, sock_path);
	ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl_fd < 0)
		die("socket: %s", strerror(errno));
	if (connect(ctl_fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("cannot reach targetd at %s: %s", sock_path, strerror(errno));
}

/* Send one request, return the reply object (caller puts it). */
static struct json_object *ctl_call(struct json_object *req)
{
	const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(s);
	struct json_object *rep;
	char *nl;

	if (ctl_fd < 0)
		ctl_connect();
	if (send(ctl_fd, s, n, MSG_NOSIGNAL) != (ssize_t)n || send(ctl_fd, "\n", 1, MSG_NOSIGNAL) != 1)
		die("writing to %s: %s", sock_path, strerror(errno));
	while (!(nl = rx_buf ? memchr(rx_buf, '\n', rx_len) : NULL)) {
		char tmp[65536];
		ssize_t r = recv(ctl_fd, tmp, sizeof(tmp), 0);
		char *nb;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("the daemon closed the control connection");
		nb = realloc(rx_buf, rx_len + (size_t)r + 1);
		if (!nb)
			die("out of memory");
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
	if (!rep)
		die("the daemon's answer is not JSON");
	return rep;
}

static struct json_object *request(const char *cmd, const char *target, int lun)
{
	struct json_object *req = json_object_new_object(), *rep;

	json_object_object_add(req, "version", json_object_new_int(1));
	json_object_object_add(req, "command", json_object_new_string(cmd));
	if (target)
		json_object_object_add(req, "target", json_object_new_string(target));
	if (lun >= 0)
		json_object_object_add(req, "lun", json_object_new_int(lun));
	rep = ctl_call(req);
	json_object_put(req);
	return rep;
}

static struct json_object *get(struct json_object *o, const char *path)
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

static uint64_t getu(struct json_object *o, const char *path)
{
	struct json_object *v = get(o, path);

	return v ? (uint64_t)json_object_get_int64(v) : 0;
}

static const char *gets(struct json_object *o, const char *path)
{
	struct json_object *v = get(o, path);

	return v ? json_object_get_string(v) : "";
}

/* Check ok; print the error(s) and exit 1 otherwise. Returns result. */
static struct json_object *result_or_die(struct json_object *rep)
{
	struct json_object *ok = get(rep, "ok"), *errs = get(rep, "errors");

	if (ok && json_object_get_boolean(ok))
		return get(rep, "result");
	fprintf(stderr, "targetctl: %s\n", gets(rep, "error"));
	for (size_t i = 0; errs && i < json_object_array_length(errs); i++)
		fprintf(stderr, "  %s\n", json_object_get_string(json_object_array_get_idx(errs, i)));
	exit(1);
}

static void print_json(struct json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
}

/* ---- human output -------------------------------------------------------- */

static void show_status(struct json_object *r)
{
	printf("targetd %s, pid %s, up %llus\n", gets(r, "version"), gets(r, "pid"),
	       (unsigned long long)getu(r, "uptime_s"));
	printf("  threads   %llu\n", (unsigned long long)getu(r, "threads"));
	printf("  targets   %llu\n", (unsigned long long)getu(r, "targets"));
	printf("  LUNs      %llu\n", (unsigned long long)getu(r, "luns"));
	printf("  sessions  %llu\n", (unsigned long long)getu(r, "sessions"));
	printf("  config    %s (%llu reloads)\n", gets(r, "config"),
	       (unsigned long long)getu(r, "reloads"));
	printf("  metrics   %s\n", get(r, "metrics_listen") ? gets(r, "metrics_listen") : "off");
}

static void show_targets(struct json_object *r)
{
	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *t = json_object_array_get_idx(r, i), *l = get(t, "luns"),
				   *a = get(t, "initiators");

		printf("%s%s%s%s\n", gets(t, "iqn"), *gets(t, "alias") ? " (" : "", gets(t, "alias"),
		       *gets(t, "alias") ? ")" : "");
		printf("  LUNs:");
		for (size_t k = 0; l && k < json_object_array_length(l); k++)
			printf(" %d", json_object_get_int(json_object_array_get_idx(l, k)));
		printf("\n  initiators:");
		if (!a)
			printf(" any");
		for (size_t k = 0; a && k < json_object_array_length(a); k++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(a, k)));
		printf("\n  CHAP: %s\n", json_object_get_boolean(get(t, "chap")) ? "yes" : "no");
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
		if (get(l, "allocated_bytes"))
			snprintf(alloc, sizeof(alloc), "%llu", (unsigned long long)getu(l, "allocated_bytes"));
		if (get(l, "pool_free_bytes"))
			snprintf(pfree, sizeof(pfree), "%llu", (unsigned long long)getu(l, "pool_free_bytes"));
		printf("%-44s %4llu %-7s %14llu %6llu %-3s %14s %14s %-5s  %s\n", gets(l, "target"),
		       (unsigned long long)getu(l, "lun"), gets(l, "backstore"),
		       (unsigned long long)getu(l, "size_bytes"), (unsigned long long)getu(l, "block_size"),
		       json_object_get_boolean(get(l, "read_only")) ? "yes" : "no", alloc, pfree,
		       get(l, "zero_detect") ? gets(l, "zero_detect") : "-",
		       get(l, "path") ? gets(l, "path") : "-");
	}
}

static void show_sessions(struct json_object *r)
{
	if (!json_object_array_length(r))
		printf("no sessions\n");
	for (size_t i = 0; i < json_object_array_length(r); i++) {
		struct json_object *s = json_object_array_get_idx(r, i), *c = get(s, "connections");
		struct json_object *p = get(s, "parameters");

		printf("%s  ISID %s  TSIH %llu\n", gets(s, "initiator"), gets(s, "isid"),
		       (unsigned long long)getu(s, "tsih"));
		printf("  target: %s\n", get(s, "target") ? gets(s, "target") : "(discovery)");
		for (size_t k = 0; c && k < json_object_array_length(c); k++) {
			struct json_object *x = json_object_array_get_idx(c, k);

			printf("  connection %llu: %s -> portal %s, tpgt %llu\n",
			       (unsigned long long)getu(x, "cid"), gets(x, "peer"), gets(x, "portal"),
			       (unsigned long long)getu(x, "tpgt"));
		}
		printf("  parameters:");
		json_object_object_foreach(p, key, val)
			printf(" %s=%s", key, json_object_get_string(val));
		printf("\n  statistics: %llu commands (%llu not GOOD), %llu bytes in, %llu bytes out\n",
		       (unsigned long long)getu(s, "statistics.commands"),
		       (unsigned long long)getu(s, "statistics.not_good"),
		       (unsigned long long)getu(s, "statistics.data_in_bytes"),
		       (unsigned long long)getu(s, "statistics.data_out_bytes"));
	}
}

static void show_lat(struct json_object *l, const char *cls)
{
	char path[64];

	snprintf(path, sizeof(path), "latency.%s", cls);
	if (!getu(l, strcat(path, ".count")))
		return;
	snprintf(path, sizeof(path), "latency.%s", cls);
	{
		struct json_object *o = get(l, path);

		printf("  latency %-5s  n=%llu  avg %.1f us  p50 %.1f us  p99 %.1f us\n", cls,
		       (unsigned long long)getu(o, "count"),
		       json_object_get_double(get(o, "sum_us")) / (double)getu(o, "count"),
		       json_object_get_double(get(o, "p50_us")), json_object_get_double(get(o, "p99_us")));
	}
}

static void show_stats(struct json_object *r)
{
	struct json_object *luns = get(r, "luns");

	for (size_t i = 0; luns && i < json_object_array_length(luns); i++) {
		struct json_object *l = json_object_array_get_idx(luns, i), *ops = get(l, "commands.by_opcode");
		struct json_object *sk = get(l, "sense_keys"), *st = get(l, "status");

		printf("%s LUN %llu\n", gets(l, "target"), (unsigned long long)getu(l, "lun"));
		printf("  commands       %llu\n", (unsigned long long)getu(l, "commands.total"));
		for (size_t k = 0; ops && k < json_object_array_length(ops); k++) {
			struct json_object *o = json_object_array_get_idx(ops, k);

			printf("    %-36s %llu\n", gets(o, "name"), (unsigned long long)getu(o, "count"));
		}
		printf("  status        ");
		json_object_object_foreach(st, key, val)
			if (json_object_get_int64(val))
				printf(" %s=%s", key, json_object_get_string(val));
		printf("\n  sense keys    ");
		json_object_object_foreach(sk, key2, val2)
			printf(" %s=%s", key2, json_object_get_string(val2));
		printf("\n  read           %llu commands, %llu bytes\n",
		       (unsigned long long)getu(l, "read.commands"), (unsigned long long)getu(l, "read.bytes"));
		printf("  write          %llu commands, %llu bytes\n",
		       (unsigned long long)getu(l, "write.commands"), (unsigned long long)getu(l, "write.bytes"));
		show_lat(l, "read");
		show_lat(l, "write");
		show_lat(l, "vaai");
		printf("  ATS            %llu success, %llu miscompare\n",
		       (unsigned long long)getu(l, "vaai.compare_and_write.success"),
		       (unsigned long long)getu(l, "vaai.compare_and_write.miscompare"));
		printf("  XCOPY          %llu commands, %llu segments, %llu bytes\n",
		       (unsigned long long)getu(l, "vaai.extended_copy.commands"),
		       (unsigned long long)getu(l, "vaai.extended_copy.segments"),
		       (unsigned long long)getu(l, "vaai.extended_copy.bytes"));
		printf("  WRITE SAME     %llu commands, %llu blocks\n",
		       (unsigned long long)getu(l, "vaai.write_same.commands"),
		       (unsigned long long)getu(l, "vaai.write_same.blocks"));
		printf("  UNMAP          %llu commands, %llu blocks\n",
		       (unsigned long long)getu(l, "vaai.unmap.commands"),
		       (unsigned long long)getu(l, "vaai.unmap.blocks"));
		printf("  reservations   %llu reserve, %llu release, %llu conflicts\n",
		       (unsigned long long)getu(l, "reservations.reserve"),
		       (unsigned long long)getu(l, "reservations.release"),
		       (unsigned long long)getu(l, "reservations.conflicts.total"));
		printf("  aborts         %llu, unit attentions %llu\n",
		       (unsigned long long)getu(l, "task_management.aborts"),
		       (unsigned long long)getu(l, "unit_attentions"));
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

	snprintf(r->key, sizeof(r->key), "%s/%llu", gets(l, "target"), (unsigned long long)getu(l, "lun"));
	r->cmds = getu(l, "commands.total");
	r->bytes = getu(l, "read.bytes") + getu(l, "write.bytes");
	r->ats = getu(l, "vaai.compare_and_write.success") + getu(l, "vaai.compare_and_write.miscompare");
	r->mis = getu(l, "vaai.compare_and_write.miscompare");
	r->xcopy = getu(l, "vaai.extended_copy.bytes");
	r->conflicts = getu(l, "reservations.conflicts.total");
	memset(r->lat, 0, sizeof(r->lat));
	for (unsigned c = 0; c < 3; c++) {
		char path[32];
		struct json_object *b;

		snprintf(path, sizeof(path), "latency.%s.buckets", cls[c]);
		b = get(l, path);
		for (size_t i = 0; b && i < json_object_array_length(b) && i < SCSI_STATS_LAT_BUCKETS; i++)
			r->lat[i] += getu(json_object_array_get_idx(b, i), "count");
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
		struct json_object *rep = request("stats", NULL, -1);
		struct json_object *res = result_or_die(rep), *luns = get(res, "luns");
		double now = json_object_get_double(get(res, "time"));
		size_t n = luns ? json_object_array_length(luns) : 0;
		double dt = t_prev ? now - t_prev : 0;
		struct pollfd pf = { .fd = STDIN_FILENO, .events = POLLIN };
		time_t wall = time(NULL);
		char clock[16];

		cur = calloc(n ? n : 1, sizeof(*cur));
		if (!cur)
			die("out of memory");
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

/* A method of targetctl_observe.c: its result (a reference), or exit. */
static struct json_object *observe_call(const char *method, struct json_object *params)
{
	struct json_object *req = params ? params : json_object_new_object(), *rep, *res;

	json_object_object_add(req, "version", json_object_new_int(1));
	json_object_object_add(req, "command", json_object_new_string(method));
	rep = ctl_call(req);
	json_object_put(req);
	res = json_object_get(result_or_die(rep));
	json_object_put(rep);
	return res;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "reset", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, reset = false;
	double interval = 1.0;
	long count = 0;
	const char *cmd, *target = NULL;
	struct json_object *rep, *res;
	int opt, lun = -1;

	/* Options may come anywhere ("stats --json", "top -n 3"). */
	while ((opt = getopt_long(argc, argv, "+s:jrhd:n:", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sock_path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'r':
			reset = true;
			break;
		case 'd':
			interval = atof(optarg);
			if (interval < 0.1)
				interval = 0.1;
			break;
		case 'n':
			count = atol(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind++];
	if (!strcmp(cmd, "histo") || !strcmp(cmd, "trace")) {
		struct tc_observe io = { .call = observe_call, .json = json };

		return (!strcmp(cmd, "histo") ? tc_observe_histo : tc_observe_trace)(
			argc - optind + 1, argv + optind - 1, &io);
	}
	/* options after the command */
	{
		char *rest[16];
		int nrest = 0;

		for (int i = optind; i < argc; i++) {
			const char *a = argv[i];

			if (!strcmp(a, "--json") || !strcmp(a, "-j"))
				json = true;
			else if (!strcmp(a, "--reset"))
				reset = true;
			else if ((!strcmp(a, "-d") || !strcmp(a, "-n")) && i + 1 < argc) {
				if (a[1] == 'd')
					interval = atof(argv[++i]) < 0.1 ? 0.1 : atof(argv[i]);
				else
					count = atol(argv[++i]);
			} else if ((!strcmp(a, "-s") || !strcmp(a, "--socket")) && i + 1 < argc)
				sock_path = argv[++i];
			else if (a[0] == '-')
				return usage_error("unknown option %s (see targetctl --help)", a);
			else if (nrest < 16)
				rest[nrest++] = argv[i];
		}
		if (nrest > 0)
			target = rest[0];
		if (nrest > 1) {
			char *end;
			long v = strtol(rest[1], &end, 10);

			if (*end || v < 0 || v > 255)
				return usage_error("LUN must be a number 0..255, not '%s'", rest[1]);
			lun = (int)v;
		}
		if (nrest > 2 || (nrest && strcmp(cmd, "stats")))
			return usage_error("too many arguments for '%s'", cmd);
	}

	if (!strcmp(cmd, "top"))
		return cmd_top(interval, count);
	if (!strcmp(cmd, "stats") && reset)
		cmd = "reset";
	if (strcmp(cmd, "status") && strcmp(cmd, "targets") && strcmp(cmd, "luns") &&
	    strcmp(cmd, "sessions") && strcmp(cmd, "stats") && strcmp(cmd, "reset") &&
	    strcmp(cmd, "reload"))
		return usage_error("unknown command '%s' (see targetctl --help)", cmd);
	rep = request(cmd, target, lun);
	res = result_or_die(rep);
	if (json)
		print_json(res);
	else if (!strcmp(cmd, "status"))
		show_status(res);
	else if (!strcmp(cmd, "targets"))
		show_targets(res);
	else if (!strcmp(cmd, "luns"))
		show_luns(res);
	else if (!strcmp(cmd, "sessions"))
		show_sessions(res);
	else if (!strcmp(cmd, "stats"))
		show_stats(res);
	else if (!strcmp(cmd, "reset"))
		printf("counters of %llu LUNs reset\n", (unsigned long long)getu(res, "reset"));
	else if (!strcmp(cmd, "reload")) {
		struct json_object *ch = get(res, "changes");

		for (size_t i = 0; ch && i < json_object_array_length(ch); i++)
			printf("%s\n", json_object_get_string(json_object_array_get_idx(ch, i)));
	}
	json_object_put(rep);
	return 0;
}
