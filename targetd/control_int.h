/*
 * Inside the control socket: the method table's handlers and the helpers
 * they share (control.c dispatches; control_query.c answers questions;
 * admin.c changes the running configuration). Not for other modules.
 *
 * A method is one entry of the table in control.c:
 *
 *     { "lun.resize", admin_lun_resize, "target lun size shrink? force?",
 *       "change a LUN's size" },
 *
 * Its handler gets the request's params (an object, never NULL) and
 * returns the result (owned by the caller), or NULL after ctl_fail(). The
 * params string names every parameter the method takes (a trailing '?'
 * marks an optional one); the dispatcher refuses any other before the
 * handler runs, and `targetctl help` shows the string.
 */
#ifndef TARGETD_CONTROL_INT_H
#define TARGETD_CONTROL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <json-c/json.h>
#include "conf/config.h"
#include "targetd/control.h"

struct iscsi_target;
struct scsi_lun;

/* Error codes. JSON-RPC 2.0's own (negative), then targetd's. */
enum ctl_code {
	CTL_E_PARSE = -32700,       /* the line is not JSON */
	CTL_E_REQUEST = -32600,     /* not a JSON-RPC 2.0 request */
	CTL_E_METHOD = -32601,      /* no such method */
	CTL_E_PARAMS = -32602,      /* a parameter missing, unknown or of the wrong type */
	CTL_E_INTERNAL = -32603,    /* out of memory and the like */
	CTL_E_NOT_FOUND = 1,        /* no such target, LUN, session, portal */
	CTL_E_INVALID = 2,          /* the change makes the configuration invalid (data.errors) */
	CTL_E_EXISTS = 3,           /* already there */
	CTL_E_REFUSED = 4,          /* not done: would destroy data, or not now (data.errors) */
	CTL_E_UNAVAILABLE = 5,      /* the daemon cannot do this as it was started */
	CTL_E_FAILED = 6,           /* tried and failed (a backstore did not open, ...) */
};

struct ctl_err {
	int code;
	char *message;
	struct json_object *data;   /* optional; {"errors":[...]} for a list of reasons */
};

typedef struct json_object *(*ctl_fn)(struct json_object *params, struct ctl_err *err);

struct ctl_method {
	const char *name;
	ctl_fn fn;
	const char *params;         /* "target lun?": every accepted parameter */
	const char *summary;
};

/* Fill err (the first failure wins). Always returns NULL, for
 * `return ctl_fail(...)`. */
struct json_object *ctl_fail(struct ctl_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with a list of reasons (data.errors), msgs[0..n). */
struct json_object *ctl_fail_list(struct ctl_err *err, int code, char **msgs, unsigned n,
				  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Parameters. Each returns true when present and valid (*out set), false
 * when absent (err untouched if !required) or invalid (err set).
 * ctl_failed() tells the two apart. */
bool ctl_str(struct json_object *p, const char *key, bool required, const char **out,
	     struct ctl_err *err);
bool ctl_uint(struct json_object *p, const char *key, bool required, uint64_t max, uint64_t *out,
	      struct ctl_err *err);
bool ctl_bool(struct json_object *p, const char *key, bool *out, struct ctl_err *err);
static inline bool ctl_failed(const struct ctl_err *err) { return err->code != 0; }

/* JSON shorthands. */
static inline void jadd(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}
static inline struct json_object *ju64(uint64_t v) { return json_object_new_uint64(v); }

/* The runtime as the control thread reads it (under reload_read_lock). */
unsigned ctl_n_targets(void);
bool ctl_target_live(const struct iscsi_target *t);
struct scsi_lun *ctl_target_lun(struct iscsi_target *t, unsigned id);
const char *control_socket_path(void);
time_t control_start_time(void);

/* control_query.c */
struct json_object *query_status(struct json_object *p, struct ctl_err *err);
struct json_object *query_targets(struct json_object *p, struct ctl_err *err);
struct json_object *query_luns(struct json_object *p, struct ctl_err *err);
struct json_object *query_sessions(struct json_object *p, struct ctl_err *err);
struct json_object *query_stats(struct json_object *p, struct ctl_err *err);
struct json_object *query_reset(struct json_object *p, struct ctl_err *err);
struct json_object *query_reload(struct json_object *p, struct ctl_err *err);

/* admin.c */
struct json_object *admin_target_add(struct json_object *p, struct ctl_err *err);
struct json_object *admin_target_remove(struct json_object *p, struct ctl_err *err);
struct json_object *admin_lun_add(struct json_object *p, struct ctl_err *err);
struct json_object *admin_lun_remove(struct json_object *p, struct ctl_err *err);
struct json_object *admin_lun_resize(struct json_object *p, struct ctl_err *err);
struct json_object *admin_lun_offline(struct json_object *p, struct ctl_err *err);
struct json_object *admin_lun_online(struct json_object *p, struct ctl_err *err);
struct json_object *admin_acl_add(struct json_object *p, struct ctl_err *err);
struct json_object *admin_acl_remove(struct json_object *p, struct ctl_err *err);
struct json_object *admin_chap_set(struct json_object *p, struct ctl_err *err);
struct json_object *admin_portal_add(struct json_object *p, struct ctl_err *err);
struct json_object *admin_portal_remove(struct json_object *p, struct ctl_err *err);
struct json_object *admin_session_close(struct json_object *p, struct ctl_err *err);
struct json_object *admin_config_show(struct json_object *p, struct ctl_err *err);
struct json_object *admin_config_diff(struct json_object *p, struct ctl_err *err);

/* fault_ctl.c: fault injection (targetd-faults(7)) */
struct json_object *fault_add(struct json_object *p, struct ctl_err *err);
struct json_object *fault_list(struct json_object *p, struct ctl_err *err);
struct json_object *fault_stats(struct json_object *p, struct ctl_err *err);
struct json_object *fault_clear(struct json_object *p, struct ctl_err *err);

/* admin.c: one change of the running configuration. edit() changes the
 * document; admin_change() validates the result like the file, applies it
 * (reload_apply) and writes the file back atomically; the result object
 * (changes, file, persisted), or NULL with err set and nothing changed.
 * admin_change_locked(): the same for a caller holding reload_lock()
 * (one that does more under the lock, admin_clone.c), which checks first
 * with admin_change_possible() that a change can be kept in the file. */
struct conf_doc;
struct reload_opts;
typedef int (*admin_edit_fn)(struct conf_doc *d, void *arg, char *err, size_t cap);
struct json_object *admin_change(const char *what, admin_edit_fn edit, void *arg,
				 const struct reload_opts *opts, struct ctl_err *err);
struct json_object *admin_change_locked(const char *what, admin_edit_fn edit, void *arg,
					const struct reload_opts *opts, struct ctl_err *err);
bool admin_change_possible(struct ctl_err *err);
/* The LUN edits (arg: struct admin_lun_arg): add spec; set key to str
 * (or, str NULL, to boolean). */
struct admin_lun_arg {
	const char *iqn;
	unsigned lun;
	struct conf_lun_spec spec;
	const char *key, *str;
	int boolean;
};
int admin_edit_lun_add(struct conf_doc *d, void *arg, char *err, size_t cap);
int admin_edit_lun_set(struct conf_doc *d, void *arg, char *err, size_t cap);

/* admin_clone.c */
struct json_object *admin_lun_clone(struct json_object *p, struct ctl_err *err);
struct json_object *admin_lun_snapshot(struct json_object *p, struct ctl_err *err);
struct json_object *admin_lun_revert(struct json_object *p, struct ctl_err *err);

/* control.c: the method list (for "help"). */
struct json_object *control_methods(struct json_object *p, struct ctl_err *err);

#endif
