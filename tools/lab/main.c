/*
 * vaai-lab: demonstrations of VAAI against a running iSCSI target (ATS
 * against SCSI reservations, clone, zero, reclaim) and a load generator.
 *
 *   vaai-lab [OPTIONS] locking|clone|zero|reclaim|bench URL [OPTIONS]
 *
 * See vaai-lab(1). This file holds the options: one table says which
 * subcommands take each option, and builds --help from it.
 */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/lab/lab.h"

const char *lab_cmd_names[LAB__NCMD] = { "locking", "clone", "zero", "reclaim", "bench",
						 "replay" };
const char *lab_mode_names[LOCK__NMODE] = { "none", "reserve", "ats", "pr" };

static const char *const cmd_help[LAB__NCMD] = {
	"hosts run a VMFS-like lock loop (none / SCSI-2 reserve / ATS / PR) while a VM does I/O",
	"copy a region host-side (READ + WRITE) and by EXTENDED COPY; time, network, space",
	"eager-zero a region by zero buffers and by WRITE SAME; time, network, space",
	"fill a thin region, delete it, UNMAP it; the space held at each step",
	"load generator: read / write / mixed, random / sequential, latency percentiles",
	"(replay FILE URL) send a targetd trace again; latencies, every status that differs",
};

#define C(x) (1u << (x))
#define C_ALL (C(LAB__NCMD) - 1)
#define C_PROV (C(LAB_CLONE) | C(LAB_ZERO) | C(LAB_RECLAIM))

enum opt_id {
	O_CONTROL = 256, O_JSON, O_PLOT, O_INITIATOR, O_FORCE, O_REGION, O_BACKING, O_HOSTS, O_MODES,
	O_SECONDS, O_UPDATES, O_ROUNDS, O_SCENARIO, O_BURST, O_PAUSE, O_THINK, O_FILES, O_VM_RW, O_VM_BS,
	O_VM_QD, O_VM_SIZE, O_BACKOFF, O_SIZE, O_SEGMENT, O_QD, O_RW, O_READ_PCT, O_PATTERN, O_BS,
	O_SESSIONS, O_WARMUP, O_IOS, O_VERIFY, O_DATA, O_FAST, O_SPEED, O_VERSION,
};

static const struct optdef {
	const char *name;
	int id;
	unsigned cmds;
	const char *arg;                /* NULL: a flag */
	const char *help;
} optdefs[] = {
	{ "control", O_CONTROL, C_ALL, "SOCKET", "targetd's control socket: read its counters" },
	{ "json", O_JSON, C_ALL, NULL, "print JSON instead of the table" },
	{ "plot", O_PLOT, C_ALL, "FILE", "draw a chart with gnuplot into FILE.png or FILE.svg" },
	{ "initiator", O_INITIATOR, C_ALL, "IQN", "initiator name prefix (default iqn.2026-11.org.targetd:vaai-lab)" },
	{ "force", O_FORCE, C_ALL, NULL, "may overwrite the LUN from block 0 (without --region)" },
	{ "region", O_REGION, C_ALL, "LBA:BLOCKS", "the blocks the subcommand may overwrite" },
	{ "backing", O_BACKING, C_PROV, "FILE", "the LUN's backing file, for its allocated space" },
	{ "hosts", O_HOSTS, C(LAB_LOCKING), "N", "hosts running the lock loop (2)" },
	{ "modes", O_MODES, C(LAB_LOCKING), "LIST", "modes in turn: none,reserve,ats,pr (none,reserve,ats)" },
	{ "seconds", O_SECONDS, C(LAB_LOCKING) | C(LAB_BENCH), "S", "per mode / measured time (5)" },
	{ "updates", O_UPDATES, C(LAB_LOCKING), "N", "end each mode after N metadata updates instead" },
	{ "rounds", O_ROUNDS, C(LAB_LOCKING), "N", "run the modes N times, order alternating; medians (1)" },
	{ "scenario", O_SCENARIO, C(LAB_LOCKING), "NAME", "touch (one update after another) or snapshots (bursts)" },
	{ "burst", O_BURST, C(LAB_LOCKING), "K", "snapshots: updates per burst (10)" },
	{ "pause", O_PAUSE, C(LAB_LOCKING), "MS", "snapshots: pause after a burst (200)" },
	{ "think", O_THINK, C(LAB_LOCKING), "MS", "touch: pause after each update (0)" },
	{ "files", O_FILES, C(LAB_LOCKING), "N", "files (locks) the hosts update (one per host)" },
	{ "vm-rw", O_VM_RW, C(LAB_LOCKING), "read|write", "the VM's I/O direction (read)" },
	{ "vm-bs", O_VM_BS, C(LAB_LOCKING), "SIZE", "the VM's I/O size (4k)" },
	{ "vm-qd", O_VM_QD, C(LAB_LOCKING), "N", "the VM's I/Os in flight (4)" },
	{ "vm-size", O_VM_SIZE, C(LAB_LOCKING), "SIZE", "the VM's region (16M)" },
	{ "backoff", O_BACKOFF, C(LAB_LOCKING), "MIN:MAX", "conflict retry back-off in ms (1:16)" },
	{ "size", O_SIZE, C_PROV | C(LAB_BENCH), "SIZE", "bytes to copy / zero / reclaim (32M); bench: span" },
	{ "segment", O_SEGMENT, C(LAB_CLONE) | C(LAB_ZERO), "SIZE", "bytes per EXTENDED COPY / WRITE SAME (4M)" },
	{ "qd", O_QD, C_PROV | C(LAB_BENCH), "N", "commands in flight per session (8; bench 16)" },
	{ "rw", O_RW, C(LAB_BENCH), "read|write|mixed", "direction (read)" },
	{ "read-pct", O_READ_PCT, C(LAB_BENCH), "N", "mixed: percent of reads (70)" },
	{ "pattern", O_PATTERN, C(LAB_BENCH), "random|seq", "access pattern (random)" },
	{ "bs", O_BS, C(LAB_BENCH), "SIZE", "bytes per I/O (4k)" },
	{ "sessions", O_SESSIONS, C(LAB_BENCH), "N", "sessions, each with --qd in flight (1)" },
	{ "warmup", O_WARMUP, C(LAB_BENCH), "S", "seconds run before measuring (1; 0 with --ios)" },
	{ "ios", O_IOS, C(LAB_BENCH), "N", "measure N I/Os instead of --seconds" },
	{ "verify", O_VERIFY, C(LAB_BENCH), NULL, "check every read against the last write, read all back" },
	{ "data", O_DATA, C(LAB_BENCH), "random|zero", "what writes carry: a pseudo-random pattern or zeroes (random)" },
	{ "fast", O_FAST, C(LAB_REPLAY), NULL, "as fast as the recorded queue depths allow" },
	{ "speed", O_SPEED, C(LAB_REPLAY), "X", "the recorded timing, X times faster (1)" },
};
#define N_OPTDEFS (sizeof(optdefs) / sizeof(optdefs[0]))

static void usage(FILE *f, int cmd)
{
	fprintf(f, "Usage: vaai-lab COMMAND URL [OPTIONS]\n"
		   "       vaai-lab replay TRACE-FILE URL [OPTIONS]\n"
		   "VAAI demonstrations and load against an iSCSI target; URL is\n"
		   "iscsi://HOST[:PORT]/TARGET-IQN/LUN.\n\n");
	for (int c = 0; c < LAB__NCMD; c++)
		if (cmd < 0 || cmd == c)
			fprintf(f, "  %-8s %s\n", lab_cmd_names[c], cmd_help[c]);
	fprintf(f, "\nOptions%s%s:\n", cmd >= 0 ? " of " : "", cmd >= 0 ? lab_cmd_names[cmd] : "");
	for (size_t i = 0; i < N_OPTDEFS; i++) {
		const struct optdef *d = &optdefs[i];
		char lhs[64];

		if (cmd >= 0 && !(d->cmds & C(cmd)))
			continue;
		snprintf(lhs, sizeof(lhs), "--%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
		fprintf(f, "  %-28s %s", lhs, d->help);
		if (cmd < 0 && d->cmds != C_ALL) {
			fputs(" [", f);
			for (int c = 0, first = 1; c < LAB__NCMD; c++)
				if (d->cmds & C(c)) {
					fprintf(f, "%s%s", first ? "" : ",", lab_cmd_names[c]);
					first = 0;
				}
			fputc(']', f);
		}
		fputc('\n', f);
	}
	fprintf(f, "  %-28s %s\n  %-28s %s\n  %-28s %s\n", "-v, --verbose",
		"say more on stderr (decoded conflicts, miscompares)", "-h, --help",
		"this help (vaai-lab COMMAND --help: that command's options)", "--version",
		"print the version");
	fprintf(f, "\nDestructive subcommands need --region or --force. See vaai-lab(1).\n");
}

static void bad(const char *opt, const char *val, const char *what)
{
	fprintf(stderr, "vaai-lab: --%s %s: %s (see vaai-lab --help)\n", opt, val, what);
	exit(2);
}

static uint64_t num(const char *opt, const char *v, uint64_t lo, uint64_t hi)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v || *end || *v == '-' || x < lo || x > hi) {
		char msg[96];

		snprintf(msg, sizeof(msg), "expected a whole number from %" PRIu64 " to %" PRIu64, lo, hi);
		bad(opt, v, msg);
	}
	return x;
}

static double real(const char *opt, const char *v, double lo, double hi)
{
	char *end;
	double x = strtod(v, &end);

	if (end == v || *end || !isfinite(x) || x < lo || x > hi) {
		char msg[96];

		snprintf(msg, sizeof(msg), "expected a number from %g to %g", lo, hi);
		bad(opt, v, msg);
	}
	return x;
}

static uint64_t size_arg(const char *opt, const char *v, uint64_t hi)
{
	uint64_t x;

	if (!lab_parse_size(v, &x) || !x || x > hi)
		bad(opt, v, "expected a size such as 4096, 4k, 1M or 2G");
	return x;
}

static void parse_modes(struct lab_opts *o, const char *v)
{
	char *copy = strdup(v), *save = NULL;

	o->n_modes = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int m = -1;

		for (int k = 0; k < LOCK__NMODE; k++)
			if (!strcmp(t, lab_mode_names[k]))
				m = k;
		if (m < 0)
			bad("modes", v, "the modes are none, reserve, ats and pr");
		if (o->n_modes == 8)
			bad("modes", v, "at most 8 modes");
		o->modes[o->n_modes++] = (enum lock_mode)m;
	}
	free(copy);
	if (!o->n_modes)
		bad("modes", v, "give at least one mode");
}

static void parse_pair(const char *opt, const char *v, double *a, double *b)
{
	const char *colon = strchr(v, ':');
	char first[64];

	if (!colon || (size_t)(colon - v) >= sizeof(first))
		bad(opt, v, "expected MIN:MAX");
	memcpy(first, v, (size_t)(colon - v));
	first[colon - v] = 0;
	*a = real(opt, first, 0.001, 60000);
	*b = real(opt, colon + 1, *a, 60000);
}

static void parse_region(struct lab_opts *o, const char *v)
{
	const char *colon = strchr(v, ':');
	char first[32];

	if (!colon || (size_t)(colon - v) >= sizeof(first))
		bad("region", v, "expected LBA:BLOCKS, e.g. 2048:65536");
	memcpy(first, v, (size_t)(colon - v));
	first[colon - v] = 0;
	o->region_lba = num("region", first, 0, UINT64_MAX / 2);
	o->region_blocks = num("region", colon + 1, 1, UINT64_MAX / 2);
	o->have_region = true;
}

static void set_opt(struct lab_opts *o, int id, const char *v, int *rw)
{
	switch (id) {
	case O_CONTROL: o->control = v; break;
	case O_JSON: o->json = true; break;
	case O_PLOT: o->plot = v; break;
	case O_INITIATOR: o->initiator = v; break;
	case O_FORCE: o->force = true; break;
	case O_REGION: parse_region(o, v); break;
	case O_BACKING: o->backing = v; break;
	case O_HOSTS: o->hosts = (unsigned)num("hosts", v, 1, LAB_MAX_SESS / 2); break;
	case O_MODES: parse_modes(o, v); break;
	case O_SECONDS: o->seconds = real("seconds", v, 0.1, 86400); break;
	case O_UPDATES: o->updates = num("updates", v, 1, UINT32_MAX); break;
	case O_ROUNDS: o->rounds = (unsigned)num("rounds", v, 1, 100); break;
	case O_SCENARIO:
		if (strcmp(v, "touch") && strcmp(v, "snapshots"))
			bad("scenario", v, "the scenarios are touch and snapshots");
		o->snapshots = !strcmp(v, "snapshots");
		break;
	case O_BURST: o->burst = (unsigned)num("burst", v, 1, 100000); break;
	case O_PAUSE: o->pause_ms = real("pause", v, 0, 600000); break;
	case O_THINK: o->think_ms = real("think", v, 0, 600000); break;
	case O_FILES: o->files = (unsigned)num("files", v, 1, 1024); break;
	case O_VM_RW:
		if (strcmp(v, "read") && strcmp(v, "write"))
			bad("vm-rw", v, "read or write");
		o->vm_write = !strcmp(v, "write");
		break;
	case O_VM_BS: o->vm_bs = (uint32_t)size_arg("vm-bs", v, 16u << 20); break;
	case O_VM_QD: o->vm_qd = (unsigned)num("vm-qd", v, 1, 256); break;
	case O_VM_SIZE: o->vm_size = size_arg("vm-size", v, UINT64_MAX / 2); break;
	case O_BACKOFF: parse_pair("backoff", v, &o->backoff_min_ms, &o->backoff_max_ms); break;
	case O_SIZE: o->size = size_arg("size", v, UINT64_MAX / 2); break;
	case O_SEGMENT: o->segment = size_arg("segment", v, 1u << 30); break;
	case O_QD: o->qd = (unsigned)num("qd", v, 1, 256); break;
	case O_RW:
		if (!strcmp(v, "read")) *rw = 100;
		else if (!strcmp(v, "write")) *rw = 0;
		else if (!strcmp(v, "mixed")) *rw = -1;
		else bad("rw", v, "read, write or mixed");
		break;
	case O_READ_PCT: o->read_pct = (int)num("read-pct", v, 0, 100); break;
	case O_PATTERN:
		if (strcmp(v, "random") && strcmp(v, "seq") && strcmp(v, "sequential"))
			bad("pattern", v, "random or seq");
		o->random = !strcmp(v, "random");
		break;
	case O_BS: o->bs = (uint32_t)size_arg("bs", v, 16u << 20); break;
	case O_SESSIONS: o->sessions = (unsigned)num("sessions", v, 1, LAB_MAX_SESS / 2); break;
	case O_WARMUP: o->warmup = real("warmup", v, 0, 3600); break;
	case O_IOS: o->ios = num("ios", v, 1, UINT64_MAX / 2); break;
	case O_VERIFY: o->verify = true; break;
	case O_DATA:
		if (strcmp(v, "random") && strcmp(v, "zero"))
			bad("data", v, "random or zero");
		o->zero_data = !strcmp(v, "zero");
		break;
	case O_FAST: o->fast = true; break;
	case O_SPEED: o->speed = real("speed", v, 0.001, 1000000); break;
	default: break;
	}
}

static void defaults(struct lab_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->initiator = "iqn.2026-11.org.targetd:vaai-lab";
	o->hosts = 2;
	o->modes[0] = LOCK_NONE;
	o->modes[1] = LOCK_RESERVE;
	o->modes[2] = LOCK_ATS;
	o->n_modes = 3;
	o->rounds = 1;
	o->seconds = 5;
	o->burst = 10;
	o->pause_ms = 200;
	o->vm_bs = 4096;
	o->vm_qd = 4;
	o->backoff_min_ms = 1;
	o->backoff_max_ms = 16;
	o->segment = 4u << 20;
	o->read_pct = -2;               /* not given */
	o->random = true;
	o->bs = 4096;
	o->sessions = 1;
	o->warmup = -1;                 /* not given */
	o->speed = 1;
}

static int find_cmd(const char *s)
{
	for (int c = 0; c < LAB__NCMD; c++)
		if (!strcmp(s, lab_cmd_names[c]))
			return c;
	return -1;
}

/* Options and the two positional arguments, in any order. */
static void parse(int argc, char **argv, struct lab_opts *o)
{
	struct option lo[N_OPTDEFS + 4];
	int seen[O_VERSION - O_CONTROL] = { 0 }, rw = -2, opt, cmd = -1, help = 0;
	const char *pos[3] = { NULL, NULL, NULL };
	unsigned npos = 0;

	for (size_t i = 0; i < N_OPTDEFS; i++)
		lo[i] = (struct option){ optdefs[i].name, optdefs[i].arg ? required_argument : no_argument,
					 NULL, optdefs[i].id };
	lo[N_OPTDEFS] = (struct option){ "verbose", no_argument, NULL, 'v' };
	lo[N_OPTDEFS + 1] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[N_OPTDEFS + 2] = (struct option){ "version", no_argument, NULL, O_VERSION };
	lo[N_OPTDEFS + 3] = (struct option){ NULL, 0, NULL, 0 };
	defaults(o);
	while ((opt = getopt_long(argc, argv, "-vh", lo, NULL)) != -1) {
		if (opt == 1) {
			if (npos == 3 || (npos == 2 && strcmp(pos[0], "replay"))) {
				fprintf(stderr, "vaai-lab: unexpected argument '%s'\n", optarg);
				exit(2);
			}
			pos[npos++] = optarg;
		} else if (opt == 'v') {
			lab_verbose = true;
		} else if (opt == 'h') {
			help = 1;
		} else if (opt == O_VERSION) {
			printf("vaai-lab (targetd) %s\n", PACKAGE_VERSION);
			exit(0);
		} else if (opt >= O_CONTROL && opt < O_VERSION) {
			seen[opt - O_CONTROL] = 1;
			set_opt(o, opt, optarg, &rw);
		} else {
			fprintf(stderr, "vaai-lab: see vaai-lab --help\n");
			exit(2);
		}
	}
	if (npos > 0)
		cmd = find_cmd(pos[0]);
	if (help) {
		usage(stdout, cmd);
		exit(0);
	}
	if (npos < 2 || cmd < 0 || (cmd == LAB_REPLAY && npos < 3)) {
		if (npos > 0 && cmd < 0)
			fprintf(stderr, "vaai-lab: unknown command '%s'\n", pos[0]);
		usage(stderr, -1);
		exit(2);
	}
	o->cmd = (enum lab_cmd)cmd;
	o->url = pos[npos - 1];
	o->trace = cmd == LAB_REPLAY ? pos[1] : NULL;
	for (size_t i = 0; i < N_OPTDEFS; i++)
		if (seen[optdefs[i].id - O_CONTROL] && !(optdefs[i].cmds & C(cmd))) {
			fprintf(stderr, "vaai-lab: --%s does not apply to %s (see vaai-lab %s --help)\n",
				optdefs[i].name, lab_cmd_names[cmd], lab_cmd_names[cmd]);
			exit(2);
		}
	/* bench: --rw and --read-pct */
	if (o->read_pct >= 0 && rw >= 0 && o->read_pct != rw) {
		fprintf(stderr, "vaai-lab: --read-pct goes with --rw mixed\n");
		exit(2);
	}
	if (o->read_pct < 0)
		o->read_pct = rw == -1 ? 70 : rw >= 0 ? rw : 100;
	if (o->zero_data && o->read_pct == 100) {
		fprintf(stderr, "vaai-lab: --data zero: a read run writes nothing (give --rw write or mixed)\n");
		exit(2);
	}
	if (o->warmup < 0)
		o->warmup = o->ios ? 0 : 1;
	if (!o->qd)
		o->qd = cmd == LAB_BENCH ? 16 : 8;
	if (o->updates && seen[O_SECONDS - O_CONTROL]) {
		fprintf(stderr, "vaai-lab: give --seconds or --updates, not both\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct lab_opts o;

	parse(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	switch (o.cmd) {
	case LAB_LOCKING: return lab_locking(&o);
	case LAB_CLONE: return lab_clone(&o);
	case LAB_ZERO: return lab_zero(&o);
	case LAB_RECLAIM: return lab_reclaim(&o);
	case LAB_BENCH: return lab_bench(&o);
	case LAB_REPLAY: return lab_replay(&o);
	case LAB__NCMD: break;
	}
	return 2;
}
