/*
 * targetd: a user-space iSCSI target that behaves like a VAAI-capable
 * storage array. main(): command line, configuration, start-up, signals.
 *
 * DESIGN: the main thread parses the command line, validates the whole
 * configuration before anything starts (a bad config never half-starts the
 * daemon), builds the runtime, starts the network threads and then only
 * waits for signals (sigwait): SIGTERM/SIGINT stop cleanly, SIGHUP
 * reloads the configuration file (reload.c). Without -f it forks
 * (daemon_detach_start) before any backstore is opened, since a librados
 * client (rbd LUNs) must be connected in the process that serves; the
 * starting process waits until the daemon serves and exits with its
 * start-up status, so start-up errors still reach the terminal.
 *
 * Where logs go: stderr with timestamps in the foreground (-f); the
 * systemd journal with structured fields when stderr is the journal
 * (JOURNAL_STREAM) or the daemon runs as a notify service; stderr while a
 * detached daemon starts, then syslog (said on stderr before detaching).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "backstore/io_engine.h"
#include "conf/config.h"
#include "scsi/histo.h"
#include "scsi/stats.h"
#include "targetd/control.h"
#include "targetd/daemon.h"
#include "common/crc32c.h"
#include "targetd/net.h"
#include "targetd/target.h"
#include "targetd/trace.h"
#include "targetd/dashboard.h"
#include "targetd/metrics.h"
#include "targetd/reload.h"


static void usage(FILE *f)
{
	fprintf(f,
		"Usage: targetd [OPTION]...\n"
		"A user-space iSCSI target that behaves like a VAAI-capable storage array.\n"
		"\n"
		"  -c, --config FILE     read FILE (default " CONF_DEFAULT_FILE " if it exists,\n"
		"                        else the embedded default: 127.0.0.1:3260, one target,\n"
		"                        LUN 0 = a 1 GiB sparse file in the state directory)\n"
		"  -f, --foreground      stay in the foreground and log to stderr (with\n"
		"                        timestamps; to the journal under systemd)\n"
		"  -v, --verbose         log debugging detail (repeatable)\n"
		"      --check-config    validate the configuration and exit (0 = valid);\n"
		"                        warns about portals that cannot be bound now\n"
		"      --pidfile FILE    write the daemon's pid into FILE (locked while it runs)\n"
		"  -s, --state-dir DIR   override state_dir (the embedded default then also\n"
		"                        puts its control socket there)\n"
		"  -l, --listen ADDR     override listen (A.B.C.D:PORT, [V6]:PORT; numeric,\n"
		"                        repeatable)\n"
		"      --version         print the version and exit\n"
		"  -h, --help            print this help and exit\n"
		"\n"
		"Signals: SIGTERM or SIGINT stop the daemon cleanly (exit status 0);\n"
		"SIGHUP reloads the configuration file (like `targetctl reload`).\n"
		"See targetd(8) and targetd.conf(5).\n");
}

static int mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] == '/' || buf[i] == 0) {
			char c = buf[i];
			buf[i] = 0;
			if (mkdir(buf, 0755) && errno != EEXIST)
				return -1;
			buf[i] = c;
		}
	}
	return 0;
}

/* The start-up line: what serves, where to ask it, where its metrics are. */
static void banner(const struct conf *c, const char *config_file, bool foreground)
{
	char metrics[96] = "off";

	if (c->metrics_listen)
		snprintf(metrics, sizeof(metrics), "http://%s/metrics", c->metrics_listen);
	log_event(LOG_LVL_INFO, "started", KV_S("version", VERSION), KV_U("pid", (unsigned)getpid()),
		  KV_U("threads", target_runtime->n_threads), KV_U("targets", target_runtime->n_targets),
		  KV_S("config", config_file ? config_file : "<embedded>"),
		  KV_S("control_socket", c->control_socket ? c->control_socket : "off"),
		  KV_S("metrics", metrics));
	if (foreground) {
		printf("targetd: control socket %s (targetctl -s %s status)\n",
		       c->control_socket ? c->control_socket : "off",
		       c->control_socket ? c->control_socket : "-");
		printf("targetd: metrics %s\n", metrics);
		fflush(stdout);
	}
}

static void print_urls(const struct conf *c)
{
	for (unsigned i = 0; i < c->n_targets; i++) {
		const struct conf_target *t = &c->targets[i];
		for (unsigned l = 0; l < c->n_listen; l++) {
			const struct conf_listen *p = &c->listen[l];
			bool v6 = strchr(p->host, ':') != NULL;
			for (unsigned k = 0; k < t->n_luns; k++)
				printf("targetd: serving iscsi://%s%s%s:%s/%s/%u\n", v6 ? "[" : "", p->host,
				       v6 ? "]" : "", p->port, t->iqn, t->luns[k].lun);
		}
	}
	fflush(stdout);
}

/* What the command line asked for. */
struct main_opts {
	const char *config_file, *state_dir, *pidfile;
	const char *listens[16];
	unsigned n_listens;
	bool foreground, check_only;
};

/* The command line into o. -1 to go on, or the exit status (--help,
 * --version, a usage error). */
static int main_parse_args(int argc, char **argv, struct main_opts *o)
{
	enum { OPT_CHECK = 256, OPT_VERSION, OPT_PIDFILE };
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "check-config", no_argument, NULL, OPT_CHECK },
		{ "state-dir", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "pidfile", required_argument, NULL, OPT_PIDFILE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "c:fvs:l:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->config_file = optarg;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'v':
			log_level = LOG_LVL_DEBUG;
			break;
		case 's':
			o->state_dir = optarg;
			break;
		case 'l':
			if (o->n_listens == ARRAY_SIZE(o->listens)) {
				fprintf(stderr, "targetd: too many --listen options\n");
				return 2;
			}
			o->listens[o->n_listens++] = optarg;
			break;
		case OPT_CHECK:
			o->check_only = true;
			break;
		case OPT_PIDFILE:
			o->pidfile = optarg;
			break;
		case OPT_VERSION:
			printf("targetd %s\n", VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "targetd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The configuration the daemon serves, its source text and the command
 * line's overrides (kept for reloads). */
struct main_conf {
	struct conf conf;
	char *text;            /* the file's text, NULL for the embedded default */
	char *embedded_sock;   /* the embedded default's socket under --state-dir */
	struct conf_overrides ov;
};

/* Read and validate the configuration (file or embedded default) and apply
 * the command line over it; errors on stderr. -1 to go on, or the exit
 * status (everything freed). */
static int main_load_config(struct main_opts *o, struct main_conf *mc)
{
	struct conf_errors errs = { 0 };
	char err[256];
	int rc;

	memset(&mc->conf, 0, sizeof(mc->conf));
	if (!o->config_file && access(CONF_DEFAULT_FILE, F_OK) == 0)
		o->config_file = CONF_DEFAULT_FILE;
	if (o->config_file) {
		mc->text = conf_read_file(o->config_file, &errs);
		rc = mc->text ? conf_load_text(&mc->conf, mc->text, o->config_file, 0, &errs) : -1;
	} else {
		conf_default(&mc->conf, o->state_dir ? o->state_dir : CONF_DEFAULT_STATE_DIR);
		if (o->state_dir) {
			/* a private embedded instance keeps its socket beside its state */
			if (asprintf(&mc->embedded_sock, "%s/control.sock", o->state_dir) < 0)
				return 1;
			mc->ov.control_socket = mc->embedded_sock;
		}
		rc = 0;
	}
	if (rc) {
		for (unsigned i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", errs.msgs[i]);
		conf_errors_free(&errs);
		conf_free(&mc->conf);
		free(mc->text);
		return 1;
	}
	mc->ov.state_dir = o->state_dir;
	mc->ov.listen = o->listens;
	mc->ov.n_listen = o->n_listens;
	if (conf_apply_overrides(&mc->conf, &mc->ov, err, sizeof(err))) {
		fprintf(stderr, "targetd: %s\n", err);
		conf_free(&mc->conf);
		free(mc->text);
		free(mc->embedded_sock);
		return 2;
	}
	return -1;
}

/* --check-config: the configuration is valid (main_load_config said so);
 * warn about portals that cannot be bound now. */
static int main_check_only(const struct main_opts *o, struct main_conf *mc)
{
	unsigned bad = daemon_check_portals(&mc->conf);

	printf("%s: configuration is valid%s\n", o->config_file ? o->config_file : "<embedded>",
	       bad ? " (with warnings: see above)" : "");
	conf_free(&mc->conf);
	free(mc->text);
	free(mc->embedded_sock);
	return 0;
}

static unsigned main_n_threads(const struct conf *c)
{
	return c->threads ? c->threads : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
}

/* Without -f: fork before any backstore is opened (a librados client, for
 * rbd LUNs, must be connected in the process that serves); the starting
 * process waits for the daemon's word and exits with its start-up status.
 * *ready_fd: what main_serve() releases it with (-1 in the foreground).
 * 0, or -1 (said on stderr). */
static int main_detach(const struct main_opts *o, int *ready_fd)
{
	*ready_fd = -1;
	if (o->foreground)
		return 0;
	fprintf(stderr, "targetd: detaching; logs go to syslog (identifier targetd, facility "
			"daemon)%s%s\n", o->pidfile ? ", pid in " : "", o->pidfile ? o->pidfile : "");
	*ready_fd = daemon_detach_start();
	return *ready_fd < 0 ? -1 : 0;
}

/* Where logs go once the runtime exists: the journal under systemd (a
 * detached daemon keeps stderr until it serves, then syslog). */
static void main_logging(const struct main_opts *o)
{
	if (o->foreground && (daemon_stderr_is_journal() || getenv("NOTIFY_SOCKET"))) {
		/* a systemd service: the journal, with the events' fields */
		openlog("targetd", LOG_PID, LOG_DAEMON);
		daemon_log_to_journal();
	}
}

/* Build the runtime from the configuration and open the portals, before
 * anything serves: the signals the main thread waits for are blocked, the
 * statistics shards sized, the reload state kept, the pid file written and
 * the logs pointed where they go. 0, or the exit status. */
static int main_build(const struct main_opts *o, struct main_conf *mc,
		      struct targetd_runtime *runtime, sigset_t *sigs)
{
	struct conf *conf = &mc->conf;

	crc32c_setup();
	/* Signals are taken synchronously by the main thread only. */
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGHUP);
	sigaddset(sigs, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);

	/* Statistics shards: one per network thread (before any LUN exists). */
	scsi_stats_configure(main_n_threads(conf));
	scsi_histo_configure(main_n_threads(conf));
	target_runtime = runtime;
	if (target_runtime_build(target_runtime, conf)) {
		target_runtime_free(target_runtime);
		conf_free(conf);
		return 1;
	}
	if (net_open_listeners()) {
		target_runtime_free(target_runtime);
		conf_free(conf);
		return 1;
	}
	reload_init(o->config_file, conf, mc->text, &mc->ov);   /* before daemon_detach_ready() changes directory */
	if (o->pidfile && daemon_pidfile_create(o->pidfile)) {
		target_runtime_free(target_runtime);
		conf_free(conf);
		return 1;
	}
	main_logging(o);
	return 0;
}

/* Start serving: the network threads, then the HTTP servers (after the
 * fork: their threads would not survive it) and the control socket; tell
 * systemd, the starting process (ready_fd, when detached) and the log. 0,
 * or the exit status. */
static int main_serve(const struct main_opts *o, struct conf *conf, int ready_fd)
{
	target_runtime->n_threads = main_n_threads(conf);
	if (!target_runtime->n_threads)
		target_runtime->n_threads = 1;
	if (net_start(target_runtime->n_threads)) {
		log_err("cannot start the network threads");
		return 1;
	}
	if (metrics_start(conf->metrics_listen)) {
		net_stop();
		target_runtime_free(target_runtime);
		conf_free(conf);
		return 1;
	}
	if (dashboard_start(conf->http_listen)) {
		metrics_stop();
		net_stop();
		target_runtime_free(target_runtime);
		conf_free(conf);
		return 1;
	}
	if (control_start(conf->control_socket))
		log_warn("no control socket: targetctl cannot reach this daemon");
	if (o->foreground)
		print_urls(conf);
	sd_notifyf(0, "READY=1\nSTATUS=serving %u targets\nMAINPID=%lu", target_runtime->n_targets,
		   (unsigned long)getpid());
	if (!o->foreground) {
		/* serving: the starting process exits 0, logs go to syslog */
		daemon_detach_ready(ready_fd);
		openlog("targetd", LOG_PID, LOG_DAEMON);
		log_to_syslog = 1;
	}
	banner(conf, reload_config_file(), o->foreground);
	return 0;
}

/* The main thread's life once serving: SIGHUP reloads, SIGTERM or SIGINT
 * return. */
static void main_signal_loop(const sigset_t *sigs)
{
	for (;;) {
		int sig;
		if (sigwait(sigs, &sig))
			continue;
		if (sig == SIGTERM || sig == SIGINT)
			return;
		if (sig == SIGHUP) {
			struct reload_report rep;

			log_info("SIGHUP: reloading the configuration");
			reload_config(&rep);   /* logs what changed or why it was refused */
			reload_report_free(&rep);
		}
	}
}

/* Stop in the reverse order of the start: no new requests, the trace file
 * closed with its END record, the network threads joined, the backstores
 * flushed and closed, the pid file removed. */
static void main_shutdown(struct main_conf *mc)
{
	sd_notify(0, "STOPPING=1\nSTATUS=shutting down");
	log_info("shutting down");
	control_stop();
	dashboard_stop();
	metrics_stop();
	if (atomic_load(&trace_running)) {
		struct trace_status ts;

		trace_stop(&ts);   /* the file ends with its END record */
	}
	net_stop();
	target_runtime_flush(target_runtime);
	target_runtime_free(target_runtime);
	reload_shutdown();
	io_engine_pool_shutdown();
	conf_free(&mc->conf);
	free(mc->embedded_sock);
	log_event(LOG_LVL_INFO, "stopped", KV_U("pid", (unsigned)getpid()));
	daemon_pidfile_remove();
}

int main(int argc, char **argv)
{
	struct main_opts o = { 0 };
	struct main_conf mc = { 0 };
	struct targetd_runtime runtime;
	sigset_t sigs;
	int rc, ready_fd;

	if ((rc = main_parse_args(argc, argv, &o)) >= 0)
		return rc;
	if ((rc = main_load_config(&o, &mc)) >= 0)
		return rc;
	if (o.check_only)
		return main_check_only(&o, &mc);
	if (!o.config_file && mkdir_p(mc.conf.state_dir)) {
		fprintf(stderr, "targetd: cannot create state directory %s: %s\n", mc.conf.state_dir,
			strerror(errno));
		conf_free(&mc.conf);
		return 1;
	}
	if (main_detach(&o, &ready_fd)) {
		conf_free(&mc.conf);
		free(mc.text);
		free(mc.embedded_sock);
		return 1;
	}
	if ((rc = main_build(&o, &mc, &runtime, &sigs)) ||
	    (rc = main_serve(&o, &mc.conf, ready_fd)))
		return rc;
	main_signal_loop(&sigs);
	main_shutdown(&mc);
	return 0;
}
