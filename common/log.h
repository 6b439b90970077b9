/*
 * Logging (common/log.c). Levels follow syslog.
 *
 * Plain messages: log_info("..."). Events an operator follows (logins,
 * logouts, connection losses, refusals, task management, reloads, LUN
 * changes) are one line each, the event's name and then key=value fields:
 *
 *     log_event(LOG_LVL_INFO, "login", KV_S("initiator", name), KV_U("tsih", tsih));
 *     -> "login initiator=iqn.1994-05.com.redhat:h1 tsih=3"
 *
 * Values with a space, a quote, '=', a backslash or a control character
 * are quoted with C escapes, so a peer-chosen name can never forge a
 * field or a line. On stderr every line starts with a local timestamp;
 * with a journal sink installed (log_set_sink), the sink gets the line
 * and the fields themselves (the daemon sends them to the systemd
 * journal as TARGETD_* fields).
 */
#ifndef TARGETD_LOG_H
#define TARGETD_LOG_H

#include <stddef.h>

enum { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };
extern int log_level;
extern int log_to_syslog;   /* 1: syslog (daemon), 0: stderr */
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_err(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) do { if (__builtin_expect(log_level >= LOG_LVL_DEBUG, 0)) log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

enum log_kv_type { LOG_KV_STR, LOG_KV_UINT, LOG_KV_HEX };
struct log_kv {
	const char *key;          /* lower case, [a-z0-9_] */
	enum log_kv_type type;
	const char *s;            /* LOG_KV_STR; NULL prints "-" */
	unsigned long long u;     /* LOG_KV_UINT (decimal), LOG_KV_HEX (0x...) */
};
#define KV_S(k, v) ((struct log_kv){ .key = (k), .type = LOG_KV_STR, .s = (v) })
#define KV_U(k, v) ((struct log_kv){ .key = (k), .type = LOG_KV_UINT, .u = (v) })
#define KV_X(k, v) ((struct log_kv){ .key = (k), .type = LOG_KV_HEX, .u = (v) })

void log_event_kv(int level, const char *event, const struct log_kv *kv, size_t n);
#define log_event(level, event, ...)                                                  \
	log_event_kv(level, event, (const struct log_kv[]){ __VA_ARGS__ },            \
		     sizeof((const struct log_kv[]){ __VA_ARGS__ }) / sizeof(struct log_kv))
/* A debug event: its fields are not even built unless -v asked for them. */
#define log_debug_event(event, ...)                                                   \
	do {                                                                          \
		if (__builtin_expect(log_level >= LOG_LVL_DEBUG, 0))                  \
			log_event(LOG_LVL_DEBUG, event, __VA_ARGS__);                 \
	} while (0)

/* A sink replaces stderr/syslog for every message: line is what stderr
 * would show after "targetd: LEVEL: "; event and kv are set for events
 * (NULL, 0 otherwise). It returns 0, or -1 to fall back to syslog. */
typedef int (*log_sink_fn)(int level, const char *line, const char *event,
			   const struct log_kv *kv, size_t n);
void log_set_sink(log_sink_fn fn);
/* Write one value as it appears in a line (quoted when needed) into buf;
 * returns buf. For sinks and tests. */
char *log_kv_format(const struct log_kv *kv, char *buf, size_t cap);

#endif
