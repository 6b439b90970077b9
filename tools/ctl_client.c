/*
 * The control socket's client (ctl_client.h): connect, send one JSON-RPC
 * request line, read the answer line, get members by dotted path.
 */
#include "config.h"
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "tools/ctl_client.h"

void ctl_client_init(struct ctl_client *c, const char *path, int timeout_ms)
{
	memset(c, 0, sizeof(*c));
	c->path = path;
	c->fd = -1;
	c->timeout_ms = timeout_ms;
}

__attribute__((format(printf, 3, 4)))
static int ctl_client_fail(struct ctl_client *c, enum ctl_client_error e, const char *fmt, ...)
{
	va_list ap;

	c->error = e;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int ctl_client_connect(struct ctl_client *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(c->path) >= sizeof(sa.sun_path))
		return ctl_client_fail(c, CTL_CLIENT_E_PATH, "%s: path too long for a UNIX socket",
				       c->path);
	strcpy(sa.sun_path, c->path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		c->sys_errno = errno;
		return ctl_client_fail(c, CTL_CLIENT_E_SOCKET, "socket: %s", strerror(errno));
	}
	if (!connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 0;
	c->sys_errno = errno;
	close(c->fd);
	c->fd = -1;
	return ctl_client_fail(c, CTL_CLIENT_E_CONNECT, "cannot reach targetd's control socket %s: %s",
			       c->path, strerror(c->sys_errno));
}

/* Read until a whole line is in c->rx; its end, or NULL with c->error. */
static char *ctl_client_read_line(struct ctl_client *c)
{
	char *nl;

	while (!(nl = c->rx_len ? memchr(c->rx, '\n', c->rx_len) : NULL)) {
		ssize_t r;

		if (c->timeout_ms > 0) {
			struct pollfd p = { .fd = c->fd, .events = POLLIN };
			int n = poll(&p, 1, c->timeout_ms);

			if (n < 0 && errno == EINTR)
				continue;
			if (n == 0) {
				ctl_client_fail(c, CTL_CLIENT_E_TIMEOUT, "%s did not answer within %d s",
						c->path, c->timeout_ms / 1000);
				return NULL;
			}
		}
		if (c->rx_len + 1 >= c->rx_cap) {
			size_t cap = c->rx_cap ? c->rx_cap * 2 : 65536;
			char *nb;

			if (c->rx_cap >= CTL_CLIENT_LINE_MAX) {
				ctl_client_fail(c, CTL_CLIENT_E_TOO_LONG,
						"the answer on %s is longer than %u bytes", c->path,
						CTL_CLIENT_LINE_MAX);
				return NULL;
			}
			nb = realloc(c->rx, cap);
			if (!nb) {
				ctl_client_fail(c, CTL_CLIENT_E_NOMEM, "out of memory");
				return NULL;
			}
			c->rx = nb;
			c->rx_cap = cap;
		}
		r = recv(c->fd, c->rx + c->rx_len, c->rx_cap - c->rx_len - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			c->sys_errno = r < 0 ? errno : 0;
			ctl_client_fail(c, CTL_CLIENT_E_CLOSED, "the daemon closed the control connection (%s)",
					c->path);
			return NULL;
		}
		c->rx_len += (size_t)r;
		c->rx[c->rx_len] = 0;
	}
	return nl;
}

struct json_object *ctl_client_call(struct ctl_client *c, const char *method,
				    struct json_object *params)
{
	struct json_object *req = json_object_new_object(), *rep;
	const char *s;
	size_t n;
	char *nl;

	json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(req, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(req, "params", params);
	json_object_object_add(req, "id", json_object_new_int(++c->next_id));
	if (c->fd < 0 && ctl_client_connect(c)) {
		json_object_put(req);
		return NULL;
	}
	s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	n = strlen(s);
	if (send(c->fd, s, n, MSG_NOSIGNAL) != (ssize_t)n || send(c->fd, "\n", 1, MSG_NOSIGNAL) != 1) {
		c->sys_errno = errno;
		json_object_put(req);
		ctl_client_fail(c, CTL_CLIENT_E_SEND, "writing to %s: %s", c->path, strerror(c->sys_errno));
		return NULL;
	}
	json_object_put(req);
	nl = ctl_client_read_line(c);
	if (!nl)
		return NULL;
	*nl = 0;
	rep = json_tokener_parse(c->rx);
	c->rx_len -= (size_t)(nl + 1 - c->rx);
	memmove(c->rx, nl + 1, c->rx_len);
	c->rx[c->rx_len] = 0;
	if (!rep || !json_object_is_type(rep, json_type_object)) {
		json_object_put(rep);
		ctl_client_fail(c, CTL_CLIENT_E_JSON, "the daemon's answer on %s is not a JSON-RPC response",
				c->path);
		return NULL;
	}
	return rep;
}

void ctl_client_close(struct ctl_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->rx);
	c->rx = NULL;
	c->rx_len = c->rx_cap = 0;
}

struct json_object *ctl_client_get(struct json_object *o, const char *path)
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

uint64_t ctl_client_getu(struct json_object *o, const char *path)
{
	struct json_object *v = ctl_client_get(o, path);

	return v ? (uint64_t)json_object_get_int64(v) : 0;
}
