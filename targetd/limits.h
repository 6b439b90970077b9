/*
 * Resource limits (targetd.conf(5), RESOURCE LIMITS): the counters of
 * limits reached, their rate-limited log lines, and the daemon-wide data
 * buffer account.
 *
 * DESIGN (threads): any thread may hit a limit; counters and the buffer
 * account are atomics, the log rate limit is one atomic timestamp per
 * limit. The per-connection accounts (buffer bytes, pending transmit
 * bytes) live in struct iscsi_conn and belong to its network thread.
 */
#ifndef TARGETD_LIMITS_H
#define TARGETD_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One per limit; the name is the configuration key. */
enum limit_kind {
	LIM_MAX_CONNECTIONS = 0,        /* connection accepted and closed at once */
	LIM_FD_EXHAUSTED,               /* accept() failed: no file descriptor left */
	LIM_CONNECTIONS_PER_TARGET,     /* login refused: Out of Resources */
	LIM_SESSIONS_PER_INITIATOR,     /* login refused: Out of Resources */
	LIM_QUEUE_DEPTH,                /* no task left for a command: TASK SET FULL */
	LIM_BUFFER_PER_CONNECTION,      /* TASK SET FULL */
	LIM_BUFFER_TOTAL,               /* TASK SET FULL */
	LIM_PENDING_TX,                 /* the connection is not read until its queue drains */
	LIM_TEXT_RESPONSE,              /* Text Request rejected (out of resources) */
	LIM_DATA_OUT_TIMEOUT,           /* WRITE ended with CHECK CONDITION 4B/06 */
	LIM_LOGIN_TIMEOUT,              /* connection closed during login */
	LIM__COUNT
};

/* The configuration key that names a limit ("max_connections"). */
const char *limit_name(enum limit_kind k);
/* Count one hit and log it (warning), at most once per 10 seconds per
 * limit, with how many hits the silence hid. */
void limit_hit(enum limit_kind k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t limit_count(enum limit_kind k);

/* Daemon-wide data buffer bytes: reserve before taking a buffer (false:
 * max_buffer_total would be exceeded, nothing reserved), release after. */
bool limit_buffer_reserve(size_t bytes, uint64_t total_limit);
void limit_buffer_release(size_t bytes);
uint64_t limit_buffer_used(void);

/* TCP connections open (accepted, not yet closed). */
void limit_conn_opened(void);
void limit_conn_closed(void);
unsigned limit_conn_count(void);

#endif
