/*
 * targetctl: the admin CLI of targetd. Talks to the daemon's control socket
 * (JSON-RPC 2.0 lines, control protocol version 2, targetctl(8)).
 *
 * The commands are the table `commands` near the end: one entry (words,
 * usage, summary, function) per command; `targetctl --help` prints it.
 *
 * DESIGN: one process, one thread, one connection to the control socket
 * (opened at the first request); `top` is in targetctl_show.c.
 */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "conf/config.h"
#include "scsi/stats.h"
#include "tools/ctl_client.h"
#include "tools/targetctl.h"
#include "tools/targetctl_observe.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *sock_path;      /* -s, TARGETD_CONTROL, or the default */
static const char *sock_from;      /* where sock_path came from, for messages */
bool tc_json;              /* -j: print the daemon's JSON */
static struct ctl_client ctl;      /* the daemon, from the first request on */

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

/* Say why the daemon cannot be reached, and how to point elsewhere; exit 1. */
static void tc_unreachable(int e) __attribute__((noreturn));
static void tc_unreachable(int e)
{
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

/* Call method with params (consumed; NULL = none); the answer object. */
struct json_object *tc_rpc(const char *method, struct json_object *params)
{
	struct json_object *rep;

	if (!ctl.path)
		ctl_client_init(&ctl, sock_path, 0);
	rep = ctl_client_call(&ctl, method, params);
	if (rep)
		return rep;
	if (ctl.error == CTL_CLIENT_E_CONNECT)
		tc_unreachable(ctl.sys_errno);
	tc_die("%s", ctl.msg);
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
	return ctl_client_get(o, path);
}

uint64_t tc_getu(struct json_object *o, const char *path)
{
	return ctl_client_getu(o, path);
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
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						   JSON_C_TO_STRING_NOSLASHESCAPE));
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
	return tc_plain_args(argc, argv, 0, 0, "status") ?: tc_show("status", NULL, tc_show_status);
}

static int cli_targets(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "targets") ?: tc_show("targets", NULL, tc_show_targets);
}

static int cli_luns(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "luns") ?: tc_show("luns", NULL, tc_show_luns);
}

static int cli_sessions(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "sessions") ?: tc_show("sessions", NULL, tc_show_sessions);
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
			tc_show_stats(res);
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
	return tc_top(interval, count);
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
	{ "lun", "add", "TARGET LUN file|block|memory|rbd [PATH] [--size SIZE] ...",
	  "add a LUN (targetctl lun add --help)", tc_lun_add },
	{ "lun", "remove", "TARGET LUN [--force]", "remove a LUN (--force: with sessions)",
	  tc_lun_remove },
	{ "lun", "resize", "TARGET LUN SIZE [--shrink --force]",
	  "grow a LUN (shrinking destroys data)", tc_lun_resize },
	{ "lun", "clone", "SRC NEW [--copy] ...",
	  "LUN NEW a clone of LUN SRC (reflink; targetctl(8))", tc_lun_clone },
	{ "lun", "snapshot", "LUN NAME [--copy] ...",
	  "a read-only point-in-time LUN of LUN", tc_lun_snapshot },
	{ "lun", "revert", "LUN SNAPSHOT [--copy] ...",
	  "LUN gets the blocks of its snapshot back", tc_lun_revert },
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
	{ "fault", "add", "TARGET [LUN] KEY=VALUE...", "arm a fault-injection rule (targetd-faults(7))",
	  tc_fault_add },
	{ "fault", "list", "[TARGET [LUN]]", "the armed fault rules, their hit counts",
	  tc_fault_list },
	{ "fault", "stats", "[TARGET [LUN]]", "fault hit counts, commands held, faults per LUN",
	  tc_fault_stats },
	{ "fault", "clear", "[TARGET [LUN]] [ID | name=NAME | all]",
	  "disarm fault rules (all of the scope by default)", tc_fault_clear },
	{ "methods", NULL, "", "the daemon's control methods (JSON-RPC)", cli_methods },
};

static bool cmd_help;

/* The usage of the commands that start with WORD (and WORD2 if it names
 * one), with the detail a command has beyond its table line. */
static int command_usage(const char *word, const char *word2)
{
	bool exact = false, any = false;

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		exact |= word2 && commands[i].word2 && !strcmp(commands[i].word, word) &&
			 !strcmp(commands[i].word2, word2);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		const struct cli_cmd *c = &commands[i];

		if (strcmp(c->word, word) || (exact && strcmp(c->word2, word2)))
			continue;
		printf("%s targetctl %s%s%s %s\n        %s\n", any ? "      " : "Usage:", c->word,
		       c->word2 ? " " : "", c->word2 ? c->word2 : "",
		       c->fn == tc_lun_add ? tc_lun_add_usage + strlen("lun add ") : c->args,
		       c->summary);
		any = true;
	}
	if (!any)
		return tc_usage_error("unknown command '%s'", word);
	printf("See targetctl(8).\n");
	return 0;
}

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
		   "See targetctl(8) and, for fault, targetd-faults(7).\n");
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
			if (out == 1) {
				usage(stdout);
				exit(0);
			}
			cmd_help = true;   /* `targetctl lun add --help`: that command's usage */
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
	if (cmd_help)
		return command_usage(argv[1], argc > 2 ? argv[2] : NULL);
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
