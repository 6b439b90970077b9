/*
 * The daemon's plumbing around main(): detaching from the terminal, where
 * logs go (stderr, syslog or the systemd journal with structured fields),
 * the pid file, and the
 * start-up checks of --check-config that need the host (can each portal
 * be bound?).
 */
#ifndef TARGETD_DAEMON_H
#define TARGETD_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>
#include "common/log.h"
#include "conf/config.h"

/* Is stderr connected to the journal (JOURNAL_STREAM names it)? */
bool daemon_stderr_is_journal(void);
/* Send every log line to the systemd journal from now on: MESSAGE,
 * PRIORITY, SYSLOG_IDENTIFIER=targetd, and for events TARGETD_EVENT plus
 * one TARGETD_<KEY> field per key=value. */
void daemon_log_to_journal(void);
/* The journal fields of one message into iov[0..max) (their text in buf);
 * returns how many. For the sink and the tests. */
size_t daemon_journal_fields(int level, const char *line, const char *event,
			     const struct log_kv *kv, size_t n, struct iovec *iov, size_t max,
			     char *buf, size_t cap);

/* --pidfile: refuse a file that another live targetd holds (locked) or
 * that is not a pid file (never overwrite something else), then write
 * our pid and keep it locked. Called again, it writes our pid into the
 * same file. 0, or -1 with the reason logged. */
int daemon_pidfile_create(const char *path);
void daemon_pidfile_remove(void);

/* Background start (no -f): fork, the parent waiting on a pipe for the
 * child's word and exiting 0 once the child serves, 1 if it failed or
 * died first; the child leaves the session (setsid) but keeps stderr, so
 * that start-up errors still reach the terminal. Called before any
 * backstore is opened: a librados client forked after it connected
 * reuses its parent's messenger and hangs. Returns the pipe's write end
 * in the child, -1 on failure (said on stderr). */
int daemon_detach_start(void);
/* The child serves: working directory /, stdin/stdout/stderr on
 * /dev/null, and the parent released with status 0. */
void daemon_detach_ready(int fd);

/* --check-config: can each portal be bound (address present on this
 * host, port free)? Prints a warning per portal that cannot be, to
 * stderr; returns how many. */
unsigned daemon_check_portals(const struct conf *c);

#endif
