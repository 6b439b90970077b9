/*
 * A client of targetd's control socket, shared by targetctl(8) and
 * vaai-lab(1): one connection to the UNIX stream socket, JSON-RPC 2.0
 * requests and answers of one line each (the control protocol,
 * targetctl(8)), and members of an answer by dotted path.
 *
 * DESIGN: a struct ctl_client is one connection, used by one thread; it
 * is opened at the first call and kept. The client reports what went
 * wrong (error, sys_errno, msg) and leaves it to the program to say it
 * in its own words and exit.
 */
#ifndef TOOLS_CTL_CLIENT_H
#define TOOLS_CTL_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

/* The longest answer line taken (a configuration, a full statistics dump
 * are far below it). */
#define CTL_CLIENT_LINE_MAX (16u << 20)

enum ctl_client_error {
	CTL_CLIENT_OK,
	CTL_CLIENT_E_PATH,      /* the path does not fit a sockaddr_un */
	CTL_CLIENT_E_SOCKET,    /* socket() failed */
	CTL_CLIENT_E_CONNECT,   /* connect() failed: sys_errno says why */
	CTL_CLIENT_E_SEND,      /* writing the request failed */
	CTL_CLIENT_E_TIMEOUT,   /* no answer within timeout_ms */
	CTL_CLIENT_E_CLOSED,    /* the daemon closed the connection */
	CTL_CLIENT_E_TOO_LONG,  /* the answer is longer than CTL_CLIENT_LINE_MAX */
	CTL_CLIENT_E_NOMEM,
	CTL_CLIENT_E_JSON,      /* the answer is not a JSON object */
};

struct ctl_client {
	const char *path;       /* the socket (kept, not copied) */
	int fd;                 /* -1 until the first call */
	int timeout_ms;         /* the longest wait for an answer; 0: no limit */
	int next_id;            /* the id of the last request sent */
	char *rx;               /* what was read and not yet taken */
	size_t rx_len, rx_cap;
	enum ctl_client_error error;   /* of the last call that failed */
	int sys_errno;                 /* its errno, where there is one */
	char msg[512];                 /* it in words, naming the socket */
};

void ctl_client_init(struct ctl_client *c, const char *path, int timeout_ms);
/* Connect now (a call connects when it has to). 0, or -1 with c->error. */
int ctl_client_connect(struct ctl_client *c);
/* Call method with params (consumed; NULL: none) and return the answer
 * (the caller puts it), or NULL with c->error and c->msg. */
struct json_object *ctl_client_call(struct ctl_client *c, const char *method,
				    struct json_object *params);
void ctl_client_close(struct ctl_client *c);

/* A member by dotted path ("result.luns", "latency.read.count"); NULL
 * when any step is missing. */
struct json_object *ctl_client_get(struct json_object *o, const char *path);
/* The same as an unsigned number; 0 when missing. */
uint64_t ctl_client_getu(struct json_object *o, const char *path);

#endif
