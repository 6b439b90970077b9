/* Logging (common/log.c). Levels follow syslog. */
#ifndef TARGETD_LOG_H
#define TARGETD_LOG_H

enum { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };
extern int log_level;
extern int log_to_syslog;   /* 1: syslog (daemon), 0: stderr */
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_err(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) do { if (__builtin_expect(log_level >= LOG_LVL_DEBUG, 0)) log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

#endif
