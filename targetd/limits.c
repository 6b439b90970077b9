/* Resource limits: counters, rate-limited logging, the global buffer
 * account. See limits.h. */
#include "config.h"
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include "common/util.h"
#include "targetd/limits.h"

#define LIMIT_LOG_INTERVAL_MS 10000

static const char *const names[LIM__COUNT] = {
	[LIM_MAX_CONNECTIONS] = "max_connections",
	[LIM_FD_EXHAUSTED] = "file_descriptors",
	[LIM_CONNECTIONS_PER_TARGET] = "max_connections_per_target",
	[LIM_SESSIONS_PER_INITIATOR] = "max_sessions_per_initiator",
	[LIM_QUEUE_DEPTH] = "queue_depth",
	[LIM_BUFFER_PER_CONNECTION] = "max_buffer_per_connection",
	[LIM_BUFFER_TOTAL] = "max_buffer_total",
	[LIM_PENDING_TX] = "max_pending_tx_per_connection",
	[LIM_TEXT_RESPONSE] = "max_text_response",
	[LIM_DATA_OUT_TIMEOUT] = "data_out_timeout",
	[LIM_LOGIN_TIMEOUT] = "login_timeout",
};

static _Atomic uint64_t hits[LIM__COUNT];
static _Atomic uint64_t logged_hits[LIM__COUNT];   /* hits[] when last logged */
static _Atomic uint64_t last_log_ms[LIM__COUNT];
static _Atomic uint64_t buffer_used;
static _Atomic unsigned conns_open;

const char *limit_name(enum limit_kind k)
{
	return (unsigned)k < LIM__COUNT ? names[k] : "unknown";
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void limit_hit(enum limit_kind k, const char *fmt, ...)
{
	uint64_t n = atomic_fetch_add(&hits[k], 1) + 1;
	uint64_t now = mono_ms(), last = atomic_load(&last_log_ms[k]);
	char msg[512];
	va_list ap;

	if (last && now - last < LIMIT_LOG_INTERVAL_MS)
		return;
	if (!atomic_compare_exchange_strong(&last_log_ms[k], &last, now ? now : 1))
		return;   /* another thread logs this one */
	uint64_t before = atomic_exchange(&logged_hits[k], n);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n - before > 1)
		log_warn("limit %s reached: %s (%llu more times since the last message)", names[k], msg,
			 (unsigned long long)(n - before - 1));
	else
		log_warn("limit %s reached: %s", names[k], msg);
}

uint64_t limit_count(enum limit_kind k)
{
	return (unsigned)k < LIM__COUNT ? atomic_load(&hits[k]) : 0;
}

bool limit_buffer_reserve(size_t bytes, uint64_t total_limit)
{
	uint64_t now = atomic_fetch_add(&buffer_used, bytes) + bytes;

	if (total_limit && now > total_limit) {
		atomic_fetch_sub(&buffer_used, bytes);
		return false;
	}
	return true;
}

void limit_buffer_release(size_t bytes)
{
	atomic_fetch_sub(&buffer_used, bytes);
}

uint64_t limit_buffer_used(void)
{
	return atomic_load(&buffer_used);
}

void limit_conn_opened(void)
{
	atomic_fetch_add(&conns_open, 1);
}

void limit_conn_closed(void)
{
	atomic_fetch_sub(&conns_open, 1);
}

unsigned limit_conn_count(void)
{
	return atomic_load(&conns_open);
}
