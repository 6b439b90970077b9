/*
 * The dashboard on http_listen: a page, its JSON (/api/luns) and /metrics.
 * DESIGN: see targetd/dashboard.c.
 */
#ifndef TARGETD_DASHBOARD_H
#define TARGETD_DASHBOARD_H

/* Serve on listen ("address:port"); NULL: nothing. 0 or -1 (logged). */
int dashboard_start(const char *listen);
void dashboard_stop(void);
/* The text of /api/luns (malloc'd), NULL without memory. */
char *dashboard_json(void);

#endif
