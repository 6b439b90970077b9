/* Logging to stderr (foreground) or syslog (daemon). */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>
#include "common/log.h"

int log_level = LOG_LVL_INFO;
int log_to_syslog;

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	if (log_to_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		static const char *names[8] = { "emerg", "alert", "crit", "error", "warning", "notice", "info", "debug" };
		char line[1024];
		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "targetd: %s: %s\n", names[level & 7], line);
	}
	va_end(ap);
}
