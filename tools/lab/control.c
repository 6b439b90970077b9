/*
 * targetd's counters through its control socket: a UNIX stream socket
 * speaking JSON-RPC 2.0 lines (targetctl(8)). vaai-lab asks
 *   {"jsonrpc":"2.0","method":"stats","params":{"target":IQN,"lun":N},"id":1}
 * and reads, from the one LUN of the answer, the counters a demonstration
 * compares with what the client saw: RESERVATION CONFLICT statuses, ATS
 * successes and miscompares, EXTENDED COPY and WRITE SAME / UNMAP totals,
 * and the bytes the backing file holds (allocated_bytes).
 *
 * The connection is opened on first use and kept; the loop is not running
 * while a request waits for its answer (the daemon's control thread
 * answers in well under a millisecond, outside its network threads).
 */
#include "config.h"
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>
#include "targetd/control.h"
#include "tools/lab/lab.h"

#define CTL_TIMEOUT_MS 10000
#define CTL_LINE_MAX (16u << 20)

static int ctl_fd = -1;

static void ctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path))
		lab_die("--control %s: the path is too long for a UNIX socket", path);
	strcpy(sa.sun_path, path);
	ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl_fd < 0)
		lab_die("socket: %s", strerror(errno));
	if (connect(ctl_fd, (struct sockaddr *)&sa, sizeof(sa)))
		lab_die("cannot reach targetd's control socket %s: %s (give the control_socket of "
			"targetd.conf, and run as a user who may open it)", path, strerror(errno));
}

/* Send one request line and return the parsed answer (caller puts it). */
static struct json_object *ctl_call(const char *path, struct json_object *req)
{
	const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t len = 0, cap = 65536;
	char *buf, *nl = NULL;
	struct json_object *rep;

	if (ctl_fd < 0)
		ctl_connect(path);
	if (send(ctl_fd, s, strlen(s), MSG_NOSIGNAL) != (ssize_t)strlen(s) ||
	    send(ctl_fd, "\n", 1, MSG_NOSIGNAL) != 1)
		lab_die("writing to targetd's control socket %s: %s", path, strerror(errno));
	buf = lab_xalloc(cap);
	while (!nl) {
		struct pollfd p = { .fd = ctl_fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, CTL_TIMEOUT_MS) == 0)
			lab_die("targetd's control socket %s did not answer within %d s", path,
				CTL_TIMEOUT_MS / 1000);
		if (len + 1 >= cap) {
			char *nb;

			if (cap >= CTL_LINE_MAX)
				lab_die("targetd's answer on %s is longer than %u bytes", path, CTL_LINE_MAX);
			nb = realloc(buf, cap * 2);
			if (!nb)
				lab_die("out of memory");
			buf = nb;
			cap *= 2;
		}
		r = recv(ctl_fd, buf + len, cap - len - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			lab_die("targetd closed its control socket %s", path);
		len += (size_t)r;
		buf[len] = 0;
		nl = memchr(buf, '\n', len);
	}
	*nl = 0;
	rep = json_tokener_parse(buf);
	free(buf);
	if (!rep)
		lab_die("targetd's answer on %s is not JSON", path);
	return rep;
}

static struct json_object *jget(struct json_object *o, const char *path)
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

static uint64_t ju(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	return v ? (uint64_t)json_object_get_int64(v) : 0;
}

void lab_ctl_read(const struct lab_opts *o, struct lab_counters *c)
{
	struct json_object *req, *rep, *params, *luns, *l, *alloc;
	struct lab_url u;

	memset(c, 0, sizeof(*c));
	c->allocated_bytes = -1;
	if (!o->control)
		return;
	if (lab_parse_url(o->url, &u))
		exit(2);
	req = json_object_new_object();
	json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(req, "method", json_object_new_string("stats"));
	params = json_object_new_object();
	json_object_object_add(params, "target", json_object_new_string(u.target));
	json_object_object_add(params, "lun", json_object_new_int(u.lun));
	json_object_object_add(req, "params", params);
	json_object_object_add(req, "id", json_object_new_int(1));
	rep = ctl_call(o->control, req);
	json_object_put(req);
	if (jget(rep, "error") || !jget(rep, "result"))
		lab_die("targetd (%s) refused the stats request for %s LUN %d: %s", o->control,
			u.target, u.lun, json_object_get_string(jget(rep, "error.message")));
	luns = jget(rep, "result.luns");
	if (!luns || json_object_array_length(luns) != 1)
		lab_die("targetd (%s) has no LUN %d on target %s: is --control the socket of the "
			"daemon the URL names?", o->control, u.lun, u.target);
	l = json_object_array_get_idx(luns, 0);
	c->valid = true;
	c->conflicts = ju(l, "reservations.conflicts.total");
	c->ats_ok = ju(l, "vaai.compare_and_write.success");
	c->ats_miscompare = ju(l, "vaai.compare_and_write.miscompare");
	c->xcopy_cmds = ju(l, "vaai.extended_copy.commands");
	c->xcopy_bytes = ju(l, "vaai.extended_copy.bytes");
	c->ws_cmds = ju(l, "vaai.write_same.commands");
	c->ws_blocks = ju(l, "vaai.write_same.blocks");
	c->unmap_cmds = ju(l, "vaai.unmap.commands");
	c->unmap_blocks = ju(l, "vaai.unmap.blocks");
	c->read_bytes = ju(l, "read.bytes");
	c->write_bytes = ju(l, "write.bytes");
	alloc = jget(l, "allocated_bytes");
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
		struct json_object *req = json_object_new_object(), *rep, *v;

		json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
		json_object_object_add(req, "method", json_object_new_string("status"));
		json_object_object_add(req, "id", json_object_new_int(2));
		rep = ctl_call(o->control, req);
		json_object_put(req);
		v = jget(rep, "result.pid");
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
