/*
 * The daemon's HTTP servers (/metrics on metrics_listen, the dashboard on
 * http_listen) share one way to start: libmicrohttpd's own polling thread,
 * a numeric address, at most 16 connections, 10 s idle timeout.
 */
#ifndef TARGETD_HTTP_H
#define TARGETD_HTTP_H

#include <microhttpd.h>

/* Serve handler on listen ("address:port"). key names the configuration
 * key in the log lines. NULL when it cannot (the reason logged). */
struct MHD_Daemon *http_serve(const char *key, const char *listen,
			      MHD_AccessHandlerCallback handler);

#endif
