/*
 * The admin interface of the daemon: the control socket (JSON-RPC 2.0
 * lines, targetctl(8)). The Prometheus endpoint: metrics.h; configuration
 * reload: reload.h.
 */
#ifndef TARGETD_CONTROL_H
#define TARGETD_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

#define CONTROL_PROTOCOL_VERSION 2   /* JSON-RPC 2.0 envelope (targetctl(8)) */

struct json_object;
struct scsi_lun;

int control_start(const char *path);
void control_stop(void);
/* Build the answer to one request line (also used by the tests): a
 * JSON-RPC 2.0 response, an array of them for a batch, or NULL when the
 * line held only notifications. Owned by the caller (json_object_put). */
struct json_object *control_handle_line(const char *line);
/* The per-LUN statistics object of "stats" (exposed for the tests). */
struct json_object *control_lun_stats_json(const char *iqn, struct scsi_lun *lun);

#endif
