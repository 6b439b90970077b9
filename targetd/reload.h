/*
 * Configuration reload (reload.c: targetctl reload, SIGHUP) and the
 * running configuration every live change goes through.
 */
#ifndef TARGETD_RELOAD_H
#define TARGETD_RELOAD_H

#include <stdbool.h>
#include "conf/config.h"

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
