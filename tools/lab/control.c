/*
 * targetd's counters through its control socket: a UNIX stream socket
 * speaking JSON-RPC 2.0 lines (targetctl(8)). vaai-lab asks
 *   {"jsonrpc":"2.0","method":"stats","params":{"target":IQN,"lun":N},"id":1}
 * and reads, from the one LUN of the answer, the counters a demonstration
 * compares with what the client saw: RESERVATION CONFLICT statuses, ATS
 * successes and miscompares, EXTENDED COPY and WRITE SAME / UNMAP totals,
 * and the bytes the backing file holds (allocated_bytes).
 *
 * The connection (tools/ctl_client.c) is opened on first use and kept; the loop is not running
 * while a request waits for its answer (the daemon's control thread
 * answers in well under a millisecond, outside its network threads).
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>
#include "tools/ctl_client.h"
#include "tools/lab/lab.h"

#define CTL_TIMEOUT_MS 10000

static struct ctl_client ctl;

/* Call method on the --control socket (params consumed); the answer. */
static struct json_object *ctl_call(const char *path, const char *method,
				    struct json_object *params)
{
	struct json_object *rep;

	if (!ctl.path)
		ctl_client_init(&ctl, path, CTL_TIMEOUT_MS);
	rep = ctl_client_call(&ctl, method, params);
	if (rep)
		return rep;
	switch (ctl.error) {
	case CTL_CLIENT_E_PATH:
		lab_die("--control %s: the path is too long for a UNIX socket", path);
	case CTL_CLIENT_E_CONNECT:
		lab_die("cannot reach targetd's control socket %s: %s (give the control_socket of "
			"targetd.conf, and run as a user who may open it)", path, strerror(ctl.sys_errno));
	default:
		lab_die("targetd's control socket: %s", ctl.msg);
	}
}

void lab_ctl_read(const struct lab_opts *o, struct lab_counters *c)
{
	struct json_object *rep, *params, *luns, *l, *alloc;
	struct lab_url u;

	memset(c, 0, sizeof(*c));
	c->allocated_bytes = -1;
	if (!o->control)
		return;
	if (lab_parse_url(o->url, &u))
		exit(2);
	params = json_object_new_object();
	json_object_object_add(params, "target", json_object_new_string(u.target));
	json_object_object_add(params, "lun", json_object_new_int(u.lun));
	rep = ctl_call(o->control, "stats", params);
	if (ctl_client_get(rep, "error") || !ctl_client_get(rep, "result"))
		lab_die("targetd (%s) refused the stats request for %s LUN %d: %s", o->control,
			u.target, u.lun, json_object_get_string(ctl_client_get(rep, "error.message")));
	luns = ctl_client_get(rep, "result.luns");
	if (!luns || json_object_array_length(luns) != 1)
		lab_die("targetd (%s) has no LUN %d on target %s: is --control the socket of the "
			"daemon the URL names?", o->control, u.lun, u.target);
	l = json_object_array_get_idx(luns, 0);
	c->valid = true;
	c->conflicts = ctl_client_getu(l, "reservations.conflicts.total");
	c->ats_ok = ctl_client_getu(l, "vaai.compare_and_write.success");
	c->ats_miscompare = ctl_client_getu(l, "vaai.compare_and_write.miscompare");
	c->xcopy_cmds = ctl_client_getu(l, "vaai.extended_copy.commands");
	c->xcopy_bytes = ctl_client_getu(l, "vaai.extended_copy.bytes");
	c->ws_cmds = ctl_client_getu(l, "vaai.write_same.commands");
	c->ws_blocks = ctl_client_getu(l, "vaai.write_same.blocks");
	c->unmap_cmds = ctl_client_getu(l, "vaai.unmap.commands");
	c->unmap_blocks = ctl_client_getu(l, "vaai.unmap.blocks");
	c->read_bytes = ctl_client_getu(l, "read.bytes");
	c->write_bytes = ctl_client_getu(l, "write.bytes");
	alloc = ctl_client_get(l, "allocated_bytes");
	if (alloc)
		c->allocated_bytes = json_object_get_int64(alloc);
	json_object_put(rep);
}

/* The daemon's CPU time (user + system) from /proc, by the pid its
 * "status" answer gives: the control socket is a local UNIX socket, so the
 * daemon runs on this machine (in this PID namespace, or the figure is
 * missing). */
double lab_ctl_target_cpu(const struct lab_opts *o)
{
	static long pid = -1;
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	if (!o->control)
		return -1;
	if (pid < 0) {
		struct json_object *rep = ctl_call(o->control, "status", NULL), *v;

		v = ctl_client_get(rep, "result.pid");
		pid = v ? json_object_get_int64(v) : 0;
		json_object_put(rep);
	}
	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* after "(comm) ": state is field 3, utime 14, stime 15 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int64_t lab_allocated(const struct lab_opts *o)
{
	struct lab_counters c;
	struct stat st;

	if (o->control) {
		lab_ctl_read(o, &c);
		if (c.allocated_bytes >= 0)
			return c.allocated_bytes;
	}
	if (o->backing) {
		if (stat(o->backing, &st))
			lab_die("--backing %s: %s", o->backing, strerror(errno));
		return (int64_t)st.st_blocks * 512;
	}
	return -1;
}
