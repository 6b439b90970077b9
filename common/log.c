/* Logging to stderr (foreground, with timestamps), syslog (daemon) or a
 * sink (the systemd journal); see log.h. */
#include "config.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include "common/log.h"

int log_level = LOG_LVL_INFO;
int log_to_syslog;
static log_sink_fn log_sink;

void log_set_sink(log_sink_fn fn)
{
	log_sink = fn;
}

static void log_write(int level, const char *line, const char *event, const struct log_kv *kv,
		      size_t n)
{
	static const char *const names[8] = { "emerg", "alert", "crit", "error", "warning", "notice",
					      "info", "debug" };

	if (log_sink && log_sink(level, line, event, kv, n) == 0)
		return;
	if (log_to_syslog || log_sink) {
		syslog(level, "%s", line);
		return;
	}
	{
		struct timeval tv;
		struct tm tm;
		char ts[40], zone[8];

		gettimeofday(&tv, NULL);
		localtime_r(&tv.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		strftime(zone, sizeof(zone), "%z", &tm);
		fprintf(stderr, "%s.%03ld%s targetd: %s: %s\n", ts, (long)(tv.tv_usec / 1000), zone,
			names[level & 7], line);
	}
}

void log_msg(int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_write(level, line, NULL, NULL, 0);
}

static bool log_needs_quotes(const char *s)
{
	if (!*s)
		return true;
	for (; *s; s++)
		if (*s == ' ' || *s == '"' || *s == '=' || *s == '\\' || (unsigned char)*s < 0x20 ||
		    *s == 0x7f)
			return true;
	return false;
}

char *log_kv_format(const struct log_kv *kv, char *buf, size_t cap)
{
	size_t o = 0;

	if (!cap)
		return buf;
	buf[0] = 0;
	if (kv->type == LOG_KV_UINT) {
		snprintf(buf, cap, "%llu", kv->u);
		return buf;
	}
	if (kv->type == LOG_KV_HEX) {
		snprintf(buf, cap, "0x%llx", kv->u);
		return buf;
	}
	if (!kv->s) {
		snprintf(buf, cap, "-");
		return buf;
	}
	if (!log_needs_quotes(kv->s)) {
		snprintf(buf, cap, "%s", kv->s);
		return buf;
	}
#define PUT(c) do { if (o + 1 < cap) buf[o++] = (c); } while (0)
	PUT('"');
	for (const unsigned char *p = (const unsigned char *)kv->s; *p && o + 5 < cap; p++) {
		if (*p == '"' || *p == '\\') {
			PUT('\\');
			PUT((char)*p);
		} else if (*p == '\n') {
			PUT('\\');
			PUT('n');
		} else if (*p == '\t') {
			PUT('\\');
			PUT('t');
		} else if (*p < 0x20 || *p == 0x7f) {
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", *p);
		} else {
			PUT((char)*p);
		}
	}
	PUT('"');
#undef PUT
	buf[o < cap ? o : cap - 1] = 0;
	return buf;
}

void log_event_kv(int level, const char *event, const struct log_kv *kv, size_t n)
{
	char line[2048], val[600];
	size_t o;

	if (level > log_level)
		return;
	o = (size_t)snprintf(line, sizeof(line), "%s", event);
	for (size_t i = 0; i < n && o < sizeof(line); i++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, " %s=%s", kv[i].key,
				      log_kv_format(&kv[i], val, sizeof(val)));
	log_write(level, line, event, kv, n);
}
