/*
 * targetctl's modules: targetctl.c (the connection, the command table),
 * targetctl_show.c (what the questions print, top), targetctl_admin.c
 * (the commands that change what the daemon serves), targetctl_fault.c
 * (fault injection). Shared helpers below.
 */
#ifndef TOOLS_TARGETCTL_H
#define TOOLS_TARGETCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

extern bool tc_json;    /* -j: print the daemon's JSON (errors too) */

/* Print "targetctl: ..." on stderr and exit 1. */
int tc_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Print "targetctl: ... (see targetctl --help)" and return 2. */
int tc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Call a method (params consumed; NULL = none); the whole answer. */
struct json_object *tc_rpc(const char *method, struct json_object *params);
struct json_object *tc_request(const char *method, const char *target, int lun);
/* The answer's result; on an error print it and exit 1. */
struct json_object *tc_result(struct json_object *rep);
void tc_print_json(struct json_object *o);
/* Members by dotted path ("latency.read.count"); missing: NULL, 0, "". */
struct json_object *tc_get(struct json_object *o, const char *path);
uint64_t tc_getu(struct json_object *o, const char *path);
const char *tc_gets(struct json_object *o, const char *path);
/* Call method, print the result with human() (or as JSON with -j). 0. */
int tc_show(const char *method, struct json_object *params, void (*human)(struct json_object *));
/* argv[1..] positional only, min..max of them; 0 or a usage error (2). */
int tc_plain_args(int argc, char **argv, int min, int max, const char *usage);
/* A LUN number 0..255, or -1 after a usage message. */
int tc_lun_arg(const char *s);

/* targetctl_show.c: tables through libsmartcols (they fit the terminal;
 * plain text when stdout is not one), what the questions print; top. */
struct libscols_table;
struct libscols_line;
struct tc_col {
	const char *name;
	double whint;      /* libsmartcols width hint */
	int flags;         /* SCOLS_FL_* */
};
struct libscols_table *tc_table(const struct tc_col *cols, size_t n);
struct libscols_line *tc_row(struct libscols_table *tb);
/* A cell's text ("-" for NULL or empty). */
void tc_cell(struct libscols_line *ln, size_t col, const char *s);
void tc_cellf(struct libscols_line *ln, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print the table and free it. */
void tc_print_table(struct libscols_table *tb);
const char *tc_size(uint64_t bytes, char *buf, size_t cap);
void tc_show_status(struct json_object *r);
void tc_show_targets(struct json_object *r);
void tc_show_luns(struct json_object *r);
void tc_show_sessions(struct json_object *r);
void tc_show_stats(struct json_object *r);
int tc_top(double interval, long count);

/* targetctl_admin.c: argv[0] is the command's last word. */
int tc_target_add(int argc, char **argv);
int tc_target_remove(int argc, char **argv);
extern const char tc_lun_add_usage[];
int tc_lun_add(int argc, char **argv);
int tc_lun_remove(int argc, char **argv);
int tc_lun_resize(int argc, char **argv);
int tc_lun_clone(int argc, char **argv);
int tc_lun_snapshot(int argc, char **argv);
int tc_lun_revert(int argc, char **argv);
int tc_lun_offline(int argc, char **argv);
int tc_lun_online(int argc, char **argv);
int tc_acl_add(int argc, char **argv);
int tc_acl_remove(int argc, char **argv);
int tc_chap_set(int argc, char **argv);
int tc_session_close(int argc, char **argv);
int tc_portal_add(int argc, char **argv);
int tc_portal_remove(int argc, char **argv);
int tc_config_show(int argc, char **argv);
int tc_config_diff(int argc, char **argv);

/* targetctl_fault.c: fault injection (targetd-faults(7)); argv[0] is the
 * command's last word. */
int tc_fault_add(int argc, char **argv);
int tc_fault_list(int argc, char **argv);
int tc_fault_stats(int argc, char **argv);
int tc_fault_clear(int argc, char **argv);

#endif
