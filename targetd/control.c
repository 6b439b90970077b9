/*
 * The control socket: a UNIX stream socket (mode 0600) speaking JSON-RPC
 * 2.0, one request (or batch) per line, one answer per line; targetd
 * control protocol version 2, documented in targetctl(8).
 *
 *   {"jsonrpc":"2.0","method":"stats","params":{"target":"iqn...","lun":0},"id":1}
 *   {"jsonrpc":"2.0","result":{...},"id":1}
 *   {"jsonrpc":"2.0","error":{"code":4,"message":"...","data":{"errors":[...]}},"id":1}
 *
 * The methods are the table below (control_methods); adding a command is
 * one entry there and its handler (control_int.h says how).
 *
 * DESIGN (threads): one control thread, not a network thread. It polls the
 * listening socket, up to CONTROL_MAX_CLIENTS clients and a stop eventfd,
 * and answers each complete line in order, so requests never run
 * concurrently with each other. Handlers read the runtime (targets, LUNs)
 * under reload_read_lock(); they read sessions by asking every network
 * thread to describe its own (net_call_all), so they never touch a
 * connection another thread owns; counters come from scsi_stats_snapshot()
 * (lock-free for the data path). Changes (reload, the admin methods) run
 * on this thread under reload's mutex; clients wait for them.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "targetd/control_int.h"
#include "targetd/control_observe.h"
#include "targetd/target.h"
#include "targetd/reload.h"

#define CONTROL_MAX_CLIENTS 16
#define CONTROL_LINE_MAX 65536
#define CONTROL_BATCH_MAX 64

/* The observation methods (control_observe.h) report an observe_err:
 * each is wrapped into a method here. */
static struct json_object *observe_call(observe_fn fn, struct json_object *p, struct ctl_err *err)
{
	static const int codes[] = { [OBS_E_PARAMS] = CTL_E_PARAMS, [OBS_E_NOT_FOUND] = CTL_E_NOT_FOUND,
				     [OBS_E_REFUSED] = CTL_E_REFUSED, [OBS_E_FAILED] = CTL_E_FAILED };
	struct observe_err e = { 0 };
	struct json_object *r = fn(p, &e);

	if (!r)
		ctl_fail(err, e.code > 0 && e.code <= OBS_E_FAILED ? codes[e.code] : CTL_E_FAILED, "%s",
			 e.msg[0] ? e.msg : "failed");
	return r;
}

#define OBSERVE_METHOD(name) \
	static struct json_object *m_##name(struct json_object *p, struct ctl_err *err) \
	{ \
		return observe_call(observe_##name, p, err); \
	}
OBSERVE_METHOD(histo)
OBSERVE_METHOD(histo_on)
OBSERVE_METHOD(histo_off)
OBSERVE_METHOD(histo_reset)
OBSERVE_METHOD(trace_start)
OBSERVE_METHOD(trace_stop)
OBSERVE_METHOD(trace_status)
#undef OBSERVE_METHOD

/* Every method. Keep "help" last; the params string is checked (see
 * control_int.h). */
static const struct ctl_method methods[] = {
	{ "status", query_status, "", "daemon version, uptime, counts, paths" },
	{ "targets", query_targets, "", "targets, their LUNs, ACLs and CHAP" },
	{ "luns", query_luns, "", "LUNs: backstore, path, size, identifiers" },
	{ "sessions", query_sessions, "", "sessions, connections, negotiated parameters" },
	{ "stats", query_stats, "target? lun?", "per-LUN counters" },
	{ "reset", query_reset, "target? lun?", "zero per-LUN counters" },
	{ "reload", query_reload, "", "re-read the configuration file and apply the difference" },
	{ "target.add", admin_target_add, "iqn alias?", "add a target (without LUNs)" },
	{ "target.remove", admin_target_remove, "iqn force?",
	  "remove a target (force: also with sessions, which are closed)" },
	{ "lun.add", admin_lun_add,
	  "target lun backstore path? size? block_size? thin? read_only? removable? direct? "
	  "serial? vendor? product? pool? image? conf? client?",
	  "add a LUN (the keys of targetd.conf(5))" },
	{ "lun.remove", admin_lun_remove, "target lun force?",
	  "remove a LUN (force: also while initiators are logged in)" },
	{ "lun.resize", admin_lun_resize, "target lun size shrink? force?",
	  "grow a LUN; shrink and force together cut it (destroys the data past the end)" },
	{ "lun.clone", admin_lun_clone, "target? lun new? path? copy?",
	  "a new LUN from a LUN's file: reflink (O(1)), or with copy a copy keeping holes" },
	{ "lun.snapshot", admin_lun_snapshot, "target? lun name new? path? copy?",
	  "a read-only point-in-time LUN of a LUN, named" },
	{ "lun.revert", admin_lun_revert, "target? lun snapshot copy?",
	  "give a LUN the blocks of one of its snapshots again (offline meanwhile)" },
	{ "lun.offline", admin_lun_offline, "target lun", "media access answers NOT READY" },
	{ "lun.online", admin_lun_online, "target lun", "back from offline" },
	{ "acl.add", admin_acl_add, "target initiator", "allow an initiator" },
	{ "acl.remove", admin_acl_remove, "target initiator",
	  "disallow an initiator (its sessions are closed)" },
	{ "chap.set", admin_chap_set, "target user? secret? mutual_user? mutual_secret? off?",
	  "set (or turn off) a target's CHAP credentials" },
	{ "session.list", query_sessions, "", "the same as sessions" },
	{ "session.close", admin_session_close, "tsih cid?",
	  "close a session, or one connection of it" },
	{ "portal.add", admin_portal_add, "address tpgt?", "listen on one more portal" },
	{ "portal.remove", admin_portal_remove, "address",
	  "stop listening on a portal (its connections stay)" },
	{ "config.show", admin_config_show, "", "the running configuration as text" },
	{ "config.diff", admin_config_diff, "", "the running configuration and the file" },
	{ "histo", m_histo, "target? lun initiator?", "a LUN's workload histograms" },
	{ "histo.on", m_histo_on, "target? lun initiator?", "count workload histograms (of an initiator)" },
	{ "histo.off", m_histo_off, "target? lun initiator?", "stop counting them" },
	{ "histo.reset", m_histo_reset, "target? lun initiator?", "zero them" },
	{ "trace.start", m_trace_start, "target? lun? initiator? file? max_mb? data?",
	  "record commands into a trace file" },
	{ "trace.stop", m_trace_stop, "", "stop the trace" },
	{ "trace.status", m_trace_status, "", "the trace: file, records, drops" },
	{ "fault.add", fault_add, "target lun? rule",
	  "arm a fault-injection rule: rule is {KEY: VALUE, ...} (targetd-faults(7))" },
	{ "fault.list", fault_list, "target? lun?", "the armed fault rules and their hit counts" },
	{ "fault.stats", fault_stats, "target? lun?",
	  "fault hit counts, commands held, faults injected per LUN" },
	{ "fault.clear", fault_clear, "target? lun? id? name?",
	  "disarm fault rules (all of the scope, or one by id or name)" },
	{ "help", control_methods, "", "the methods and their parameters" },
};

static pthread_t control_tid;
static bool control_running;
static int control_fd = -1;
static int control_stop_fd = -1;
static char control_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static struct control_client {
	int fd;
	char *buf;
	size_t len;
} clients[CONTROL_MAX_CLIENTS];
static time_t control_started;

const char *control_socket_path(void) { return control_path; }
time_t control_start_time(void) { return control_started; }

unsigned ctl_n_targets(void)
{
	return __atomic_load_n(&target_runtime->n_targets, __ATOMIC_ACQUIRE);
}

bool ctl_target_live(const struct iscsi_target *t)
{
	return !__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE);
}

struct scsi_lun *ctl_target_lun(struct iscsi_target *t, unsigned id)
{
	return scsi_target_lun(&t->st, id);
}

/* ---- errors and parameters ------------------------------------------------ */

static struct json_object *ctl_vfail(struct ctl_err *err, int code, struct json_object *data,
				     const char *fmt, va_list ap)
{
	char *m = NULL;

	if (err->code) {                 /* the first failure is the one reported */
		if (data)
			json_object_put(data);
		return NULL;
	}
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	err->code = code;
	err->message = m;
	err->data = data;
	return NULL;
}

struct json_object *ctl_fail(struct ctl_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ctl_vfail(err, code, NULL, fmt, ap);
	va_end(ap);
	return NULL;
}

struct json_object *ctl_fail_list(struct ctl_err *err, int code, char **msgs, unsigned n,
				  const char *fmt, ...)
{
	struct json_object *data = json_object_new_object(), *a = json_object_new_array();
	va_list ap;

	for (unsigned i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(msgs[i]));
	jadd(data, "errors", a);
	va_start(ap, fmt);
	ctl_vfail(err, code, data, fmt, ap);
	va_end(ap);
	return NULL;
}

static bool ctl_get(struct json_object *p, const char *key, bool required, json_type type,
		    const char *what, struct json_object **out, struct ctl_err *err)
{
	struct json_object *v;

	if (!json_object_object_get_ex(p, key, &v) || !v) {
		if (required)
			ctl_fail(err, CTL_E_PARAMS, "parameter \"%s\" is required (%s)", key, what);
		return false;
	}
	if (!json_object_is_type(v, type) &&
	    !(type == json_type_double && json_object_is_type(v, json_type_int))) {
		ctl_fail(err, CTL_E_PARAMS, "parameter \"%s\" must be %s", key, what);
		return false;
	}
	*out = v;
	return true;
}

bool ctl_str(struct json_object *p, const char *key, bool required, const char **out,
	     struct ctl_err *err)
{
	struct json_object *v;

	if (!ctl_get(p, key, required, json_type_string, "a string", &v, err))
		return false;
	*out = json_object_get_string(v);
	if (!**out) {
		ctl_fail(err, CTL_E_PARAMS, "parameter \"%s\" must not be empty", key);
		return false;
	}
	return true;
}

bool ctl_uint(struct json_object *p, const char *key, bool required, uint64_t max, uint64_t *out,
	      struct ctl_err *err)
{
	struct json_object *v;
	int64_t i;

	if (!ctl_get(p, key, required, json_type_int, "a non-negative integer", &v, err))
		return false;
	errno = 0;
	i = json_object_get_int64(v);
	if (i < 0 || (uint64_t)i > max || errno) {
		ctl_fail(err, CTL_E_PARAMS, "parameter \"%s\" must be 0 to %llu", key,
			 (unsigned long long)max);
		return false;
	}
	*out = (uint64_t)i;
	return true;
}

bool ctl_bool(struct json_object *p, const char *key, bool *out, struct ctl_err *err)
{
	struct json_object *v;

	if (!ctl_get(p, key, false, json_type_boolean, "true or false", &v, err))
		return false;
	*out = json_object_get_boolean(v);
	return true;
}

/* Is key one of the words of the method's params string? */
static bool param_known(const char *list, const char *key)
{
	size_t kl = strlen(key);

	for (const char *w = list; *w;) {
		size_t n = strcspn(w, " ?");

		if (n == kl && !strncmp(w, key, kl))
			return true;
		w += n;
		w += strspn(w, " ?");
	}
	return false;
}

struct json_object *control_methods(struct json_object *p, struct ctl_err *err)
{
	struct json_object *a = json_object_new_array();

	(void)p;
	(void)err;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		struct json_object *o = json_object_new_object();

		jadd(o, "method", json_object_new_string(methods[i].name));
		jadd(o, "params", json_object_new_string(methods[i].params));
		jadd(o, "summary", json_object_new_string(methods[i].summary));
		json_object_array_add(a, o);
	}
	return a;
}

/* ---- the JSON-RPC 2.0 envelope ------------------------------------------- */

static struct json_object *rpc_reply(struct json_object *id, struct json_object *result,
				     struct ctl_err *err)
{
	struct json_object *r = json_object_new_object();

	jadd(r, "jsonrpc", json_object_new_string("2.0"));
	if (err && err->code) {
		struct json_object *e = json_object_new_object();

		jadd(e, "code", json_object_new_int(err->code));
		jadd(e, "message", json_object_new_string(err->message ? err->message : "error"));
		if (err->data)
			jadd(e, "data", err->data);
		free(err->message);
		memset(err, 0, sizeof(*err));
		jadd(r, "error", e);
		if (result)
			json_object_put(result);
	} else {
		jadd(r, "result", result ? result : json_object_new_object());
	}
	jadd(r, "id", id ? json_object_get(id) : NULL);
	return r;
}

/* One request object. NULL for a notification (no id: no answer). */
static struct json_object *rpc_call(struct json_object *req)
{
	struct json_object *v, *id = NULL, *params = NULL, *res = NULL, *empty = NULL;
	struct ctl_err err = { 0 };
	const struct ctl_method *m = NULL;
	bool has_id;
	const char *name;

	if (!json_object_is_type(req, json_type_object)) {
		ctl_fail(&err, CTL_E_REQUEST, "a request must be a JSON object");
		return rpc_reply(NULL, NULL, &err);
	}
	has_id = json_object_object_get_ex(req, "id", &id);
	if (has_id && id && !json_object_is_type(id, json_type_string) &&
	    !json_object_is_type(id, json_type_int)) {
		ctl_fail(&err, CTL_E_REQUEST, "\"id\" must be a string, a number or null");
		return rpc_reply(NULL, NULL, &err);
	}
	if (!json_object_object_get_ex(req, "jsonrpc", &v) || !v ||
	    strcmp(json_object_get_string(v), "2.0")) {
		ctl_fail(&err, CTL_E_REQUEST,
			 json_object_object_get_ex(req, "version", NULL)
				 ? "this daemon speaks control protocol version %d, JSON-RPC 2.0: "
				   "{\"jsonrpc\":\"2.0\",\"method\":...,\"id\":...} (see targetctl(8))"
				 : "not a JSON-RPC 2.0 request (\"jsonrpc\":\"2.0\" missing; "
				   "control protocol version %d, see targetctl(8))",
			 CONTROL_PROTOCOL_VERSION);
		return rpc_reply(id, NULL, &err);
	}
	if (!json_object_object_get_ex(req, "method", &v) || !json_object_is_type(v, json_type_string)) {
		ctl_fail(&err, CTL_E_REQUEST, "\"method\" must be a string");
		return rpc_reply(id, NULL, &err);
	}
	name = json_object_get_string(v);
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(methods[i].name, name))
			m = &methods[i];
	if (json_object_object_get_ex(req, "params", &params) && params &&
	    !json_object_is_type(params, json_type_object)) {
		ctl_fail(&err, CTL_E_PARAMS, "\"params\" must be an object of named parameters");
	} else if (!m) {
		ctl_fail(&err, CTL_E_METHOD, "no method \"%s\" (\"help\" lists them)", name);
	} else {
		if (!params)
			params = empty = json_object_new_object();
		json_object_object_foreach(params, key, val) {
			(void)val;
			if (!param_known(m->params, key)) {
				ctl_fail(&err, CTL_E_PARAMS, "%s takes no parameter \"%s\" (it takes: %s)",
					 name, key, m->params[0] ? m->params : "none");
				break;
			}
		}
		if (!err.code)
			res = m->fn(params, &err);
		if (!res && !err.code)
			ctl_fail(&err, CTL_E_INTERNAL, "%s: out of memory", name);
		if (empty)
			json_object_put(empty);
	}
	if (!has_id) {
		if (res)
			json_object_put(res);
		free(err.message);
		if (err.data)
			json_object_put(err.data);
		return NULL;
	}
	return rpc_reply(id, res, &err);
}

struct json_object *control_handle_line(const char *line)
{
	struct json_object *req = json_tokener_parse(line), *out;
	struct ctl_err err = { 0 };
	size_t n;

	if (!req) {
		ctl_fail(&err, CTL_E_PARSE, "the request is not JSON");
		return rpc_reply(NULL, NULL, &err);
	}
	if (!json_object_is_type(req, json_type_array)) {
		out = rpc_call(req);
		json_object_put(req);
		return out;
	}
	/* a batch: answers in an array, notifications without one */
	n = json_object_array_length(req);
	if (n == 0 || n > CONTROL_BATCH_MAX) {
		json_object_put(req);
		ctl_fail(&err, CTL_E_REQUEST, "a batch holds 1 to %d requests", CONTROL_BATCH_MAX);
		return rpc_reply(NULL, NULL, &err);
	}
	out = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = rpc_call(json_object_array_get_idx(req, i));

		if (r)
			json_object_array_add(out, r);
	}
	json_object_put(req);
	if (!json_object_array_length(out)) {
		json_object_put(out);
		return NULL;
	}
	return out;
}

/* ---- the socket --------------------------------------------------------- */

static void client_close(struct control_client *cl)
{
	close(cl->fd);
	free(cl->buf);
	cl->fd = -1;
	cl->buf = NULL;
	cl->len = 0;
}

/* Write all of it (the client reads as it likes; give up after 5 s). */
static int client_write(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };

			if (poll(&pf, 1, 5000) <= 0)
				return -1;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		return -1;
	}
	return 0;
}

static void client_input(struct control_client *cl)
{
	char tmp[4096];
	ssize_t r = recv(cl->fd, tmp, sizeof(tmp), 0);
	char *nl;

	if (r <= 0) {
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		client_close(cl);
		return;
	}
	if (cl->len + (size_t)r > CONTROL_LINE_MAX) {
		static const char big[] = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,"
					  "\"message\":\"request line longer than 65536 bytes\"},\"id\":null}\n";

		client_write(cl->fd, big, sizeof(big) - 1);
		client_close(cl);
		return;
	}
	{
		char *nb = realloc(cl->buf, cl->len + (size_t)r + 1);

		if (!nb) {
			client_close(cl);
			return;
		}
		cl->buf = nb;
	}
	memcpy(cl->buf + cl->len, tmp, (size_t)r);
	cl->len += (size_t)r;
	cl->buf[cl->len] = 0;
	while (cl->fd >= 0 && (nl = memchr(cl->buf, '\n', cl->len))) {
		struct json_object *rep;
		const char *s;
		size_t line_len = (size_t)(nl - cl->buf);

		*nl = 0;
		if (line_len && (rep = control_handle_line(cl->buf))) {
			s = json_object_to_json_string_ext(rep, JSON_C_TO_STRING_PLAIN);
			if (client_write(cl->fd, s, strlen(s)) || client_write(cl->fd, "\n", 1)) {
				json_object_put(rep);
				client_close(cl);
				return;
			}
			json_object_put(rep);
		}
		memmove(cl->buf, nl + 1, cl->len - line_len - 1);
		cl->len -= line_len + 1;
		cl->buf[cl->len] = 0;
	}
}

static void control_accept(void)
{
	int fd = accept4(control_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (clients[i].fd < 0) {
			clients[i].fd = fd;
			return;
		}
	static const char busy[] = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":5,"
				   "\"message\":\"too many control clients\"},\"id\":null}\n";
	client_write(fd, busy, sizeof(busy) - 1);
	close(fd);
}

static void *control_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pf[2 + CONTROL_MAX_CLIENTS];
		int map[2 + CONTROL_MAX_CLIENTS];
		nfds_t n = 0;

		pf[n] = (struct pollfd){ .fd = control_stop_fd, .events = POLLIN };
		map[n++] = -2;
		pf[n] = (struct pollfd){ .fd = control_fd, .events = POLLIN };
		map[n++] = -1;
		for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
			if (clients[i].fd < 0)
				continue;
			pf[n] = (struct pollfd){ .fd = clients[i].fd, .events = POLLIN };
			map[n++] = i;
		}
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("control socket: poll: %m");
			break;
		}
		if (pf[0].revents)
			break;
		for (nfds_t i = 2; i < n; i++)
			if (pf[i].revents && clients[map[i]].fd >= 0)
				client_input(&clients[map[i]]);
		if (pf[1].revents & POLLIN)
			control_accept();
	}
	return NULL;
}

static int mkdir_parents(const char *path)
{
	char buf[sizeof(control_path)];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = 0;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

int control_start(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd;

	control_started = time(NULL);
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		clients[i].fd = -1;
	if (!path || !path[0])
		return 0;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("control socket %s: path too long", path);
		return -1;
	}
	snprintf(control_path, sizeof(control_path), "%s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (mkdir_parents(path)) {
		log_err("control socket %s: cannot create its directory: %m", path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		log_err("control socket: %m");
		return -1;
	}
	/* A socket file left by a daemon that died: replace it; a live one
	 * answers, and then this daemon must not steal its socket. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		log_err("control socket %s: another daemon is answering on it", path);
		close(fd);
		return -1;
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
		umask(old);
		log_err("control socket %s: %m", path);
		close(fd);
		return -1;
	}
	umask(old);
	if (chmod(path, 0600))
		log_warn("control socket %s: chmod: %m", path);
	control_fd = fd;
	control_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (control_stop_fd < 0 || pthread_create(&control_tid, NULL, control_main, NULL)) {
		log_err("control socket: cannot start its thread");
		close(control_fd);
		unlink(path);
		control_fd = -1;
		return -1;
	}
	control_running = true;
	return 0;
}

void control_stop(void)
{
	uint64_t one = 1;

	if (!control_running)
		return;
	if (write(control_stop_fd, &one, sizeof(one)) < 0)
		log_warn("control socket: eventfd: %m");
	pthread_join(control_tid, NULL);
	control_running = false;
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		if (clients[i].fd >= 0)
			client_close(&clients[i]);
	close(control_fd);
	close(control_stop_fd);
	control_fd = control_stop_fd = -1;
	unlink(control_path);
}
