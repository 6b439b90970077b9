/* conf/ internals shared by config.c (the file) and values.c (its values). */
#ifndef CONF_CONF_INT_H
#define CONF_CONF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libconfig.h>

/* Allocation that aborts on failure. */
void *conf_xcalloc(size_t n, size_t size);
char *conf_xstrdup(const char *s);
char *conf_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A parsed portal, comparable with memcmp for duplicates. */
struct conf_addr {
	int family;
	unsigned char addr[16];
	unsigned port;
};

/* Split "1.2.3.4:3260", "[::1]:3260", "[::1]", "::1" or "1.2.3.4" into a
 * numeric host (no brackets, at most hostlen - 1 bytes) and a port (3260
 * when none is written; has_port tells). a, if not NULL, receives the
 * binary form. Returns 0 or -1. */
int conf_split_listen(const char *s, char *host, size_t hostlen, unsigned *port, bool *has_port,
		      struct conf_addr *a);

struct conf_errors;
struct conf_chap;
/* Append msg (taken over) to e. */
void conf_errors_push(struct conf_errors *e, char *msg);
/* text.c: line n of text (or of the file path when text is NULL),
 * trimmed and shortened to fit out, for "syntax error near '...'". */
void conf_source_line(const char *text, const char *path, int n, char *out, size_t cap);
void conf_chap_free(struct conf_chap *ch);

#define CONF_ISCSI_NAME_MAX 223   /* bytes, RFC 7143 4.2.7.1 */

/* iqn./eui./naa. names (RFC 7143 4.2.7) in their normalised, lower-case
 * form: NULL if the name is good, else what is wrong with it. */
const char *conf_iscsi_name_error(const char *name);

/* Text for iSCSI keys (TargetAlias, CHAP_N): no control characters. */
bool conf_is_text(const char *s);
/* Only 0x20..0x7e (INQUIRY and VPD strings). */
bool conf_is_printable_ascii(const char *s);

/* Edit distance between two key names (the first compared case-blind);
 * names of 32 bytes or more are UINT_MAX apart. */
unsigned conf_distance(const char *a, const char *b);


/* ---- parse.c: errors and the key tables config.c's schema is made of --- */

#define CONF_KEY_MAX 256

struct conf_ctx {
	const char *name;          /* file name for messages, as the caller gave it */
	unsigned flags;            /* CONF_NO_PATH_CHECKS */
	struct conf_errors *errs;  /* may be NULL */
	unsigned n_err;
	char *incdir;              /* "dir/" of the main file, for @include names */
	const char *text;          /* conf_load_string: the text, for syntax errors */
};

enum conf_kind {
	CONF_K_UINT,    /* integer in [min, max] into unsigned */
	CONF_K_BOOL,    /* true/false into bool */
	CONF_K_STR,     /* non-empty string, duplicated into char * */
	CONF_K_ASCII,   /* 1..max printable ASCII characters into char * */
	CONF_K_FUNC,    /* handler */
	CONF_K_SIZE,    /* bytes ("64M" or an integer) in [min, max] into uint64_t */
};

struct conf_field;
typedef void (*conf_handler)(struct conf_ctx *x, const config_setting_t *s, const char *key,
			     void *obj);

struct conf_field {
	const char *name;
	enum conf_kind kind;
	size_t off;
	long long min, max;
	conf_handler fn;
};


char *conf_file_name(const struct conf_ctx *x, const char *src);
void conf_err(struct conf_ctx *x, const config_setting_t *s, const char *key,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void conf_keyf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void conf_key(char *buf, const char *prefix, const char *name);
void conf_key_idx(char *buf, const char *prefix, const char *name, unsigned i);
bool conf_is_int(const config_setting_t *s);
bool conf_get_string(struct conf_ctx *x, const config_setting_t *s, const char *key,
			    const char **out);
bool conf_get_uint(struct conf_ctx *x, const config_setting_t *s, const char *key,
			  long long min, long long max, unsigned *out);
bool conf_get_bytes(struct conf_ctx *x, const config_setting_t *s, const char *key,
			   long long min, long long max, uint64_t *out);
void conf_set_field(struct conf_ctx *x, const config_setting_t *s, const char *key,
			   const struct conf_field *f, void *obj);
const char *conf_suggest(const char *name, const struct conf_field *fields, size_t n);
void conf_walk(struct conf_ctx *x, const config_setting_t *grp, const char *prefix,
		      const struct conf_field *fields, size_t n_fields, void *obj);
bool conf_is_group(const config_setting_t *s);
bool conf_is_seq(const config_setting_t *s);

/* ---- fault.c: the `faults` lists (targetd-faults(7)) --------------- */

/* A `faults` list of a target (lun < 0) or of a LUN (conf/fault.c). */
struct conf_fault;
void conf_parse_faults(struct conf_ctx *x, const config_setting_t *s, const char *key,
		       bool in_lun, struct conf_fault **out, unsigned *n_out);
/* The LUNs a target's rules name exist (after the target is read). */
struct conf_target;
void conf_check_fault_luns(struct conf_ctx *x, const config_setting_t *g, const char *prefix,
			   const struct conf_target *t);

/* ---- lun_rbd.c: the keys of an rbd LUN --------------------------------- */

struct conf_lun;
/* A RADOS pool name, RBD image name (image = true) or Ceph client id
 * (client = true): NULL if good, else what is wrong with it. */
const char *conf_rbd_name_error(const char *v, bool image, bool client);
/* The LUN table's handler for pool, image and client. */
void conf_lun_rbd_name(struct conf_ctx *x, const config_setting_t *s, const char *key,
		       void *obj);
/* The rbd keys of LUN group g: pool and image for an rbd LUN, none of
 * them elsewhere. True for an rbd LUN. */
bool conf_lun_check_rbd(struct conf_ctx *x, const config_setting_t *g, const char *prefix,
			struct conf_lun *l);

#endif
