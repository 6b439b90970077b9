/*
 * The admin interface of the daemon: the control socket (JSON-RPC 2.0
 * lines, targetctl(8)), the Prometheus endpoint, and configuration reload.
 */
#ifndef TARGETD_CONTROL_H
#define TARGETD_CONTROL_H

#include <stdbool.h>
#include <stdint.h>
#include "conf/config.h"

#define CONTROL_PROTOCOL_VERSION 2   /* JSON-RPC 2.0 envelope (targetctl(8)) */

struct json_object;
struct scsi_lun;

/* control.c: the control socket. */
int control_start(const char *path);
void control_stop(void);
/* Build the answer to one request line (also used by the tests): a
 * JSON-RPC 2.0 response, an array of them for a batch, or NULL when the
 * line held only notifications. Owned by the caller (json_object_put). */
struct json_object *control_handle_line(const char *line);
/* The per-LUN statistics object of "stats" (exposed for the tests). */
struct json_object *control_lun_stats_json(const char *iqn, struct scsi_lun *lun);

struct iscsi_target;

/* metrics.c: GET /metrics in the Prometheus text format. */
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

/* reload.c: configuration reload (targetctl reload, SIGHUP). */
struct reload_report {
	char **msgs;            /* errors (refused) or changes applied */
	unsigned n;
	bool unavailable;       /* refused because there is no file to read */
};
/* Remember how the daemon was started: the config file (NULL: embedded
 * default, which cannot be reloaded), the configuration in use, the text
 * it was built from (taken over) and the command line's overrides (kept:
 * the strings must live as long as the daemon). */
void reload_init(const char *config_file, struct conf *running, char *text,
		 const struct conf_overrides *ov);
/* Re-read, validate, apply the difference. 0: applied (rep = what changed),
 * -1: refused, the running configuration is kept (rep = the errors). */
int reload_config(struct reload_report *rep);
/* Every change of the running configuration (reload, targetctl) holds
 * this from reading the running text to storing the new one. */
void reload_lock(void);
void reload_unlock(void);
struct reload_opts {
	const char *why;          /* "reload", "lun add", ...: logged as by= */
	const char *shrink_iqn;   /* this LUN may shrink (lun resize --shrink --force) */
	unsigned shrink_lun;
	bool no_global_notes;     /* do not report keys that need a restart */
};
/* Under reload_lock: apply the validated configuration nc (taken over;
 * freed on refusal). 0: applied (rep = what changed), -1: refused, nothing
 * changed (rep = why). */
int reload_apply(struct conf *nc, const struct reload_opts *o, struct reload_report *rep);
/* Under reload_lock: the text the running configuration was built from
 * (the file as last read or written; NULL for the embedded default), and
 * its replacement (taken over). */
const char *reload_running_text(void);
void reload_set_running_text(char *text);
const struct conf *reload_running_conf(void);
const struct conf_overrides *reload_overrides(void);
void reload_report_free(struct reload_report *rep);
/* Free what reload allocated (at exit, after the network threads stop). */
void reload_shutdown(void);
/* Readers of target_runtime->targets and their LUNs outside the network threads (the
 * control and metrics threads) hold this against a concurrent reload. */
void reload_read_lock(void);
void reload_read_unlock(void);
/* Reloads done and the result of the last one (for "status"). */
unsigned reload_count(void);
const char *reload_config_file(void);

#endif
