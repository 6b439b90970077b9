/*
 * GET /metrics in the Prometheus text format (metrics.c), and the login
 * counters it shows.
 */
#ifndef TARGETD_METRICS_H
#define TARGETD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct iscsi_target;

/* The login code counts logins (t NULL or discovery: a discovery session)
 * and refusals (status: the login status class/detail, 0x0201 CHAP,
 * 0x0202 allow-list; t NULL when the target was not known yet). */
void metrics_count_login(struct iscsi_target *t, bool discovery);
void metrics_count_login_failure(struct iscsi_target *t, uint16_t status);
int metrics_start(const char *listen);
void metrics_stop(void);
/* Render every metric into a malloc'ed string (for the HTTP server and the
 * tests); NULL on allocation failure. */
char *metrics_render(size_t *len);

#endif
