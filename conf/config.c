/*
 * targetd.conf(5): read the libconfig file and validate it into struct conf.
 *
 * Every group is walked once, in file order, through a table of the keys it
 * may hold: a key that is not in the table is an error, a key that is has
 * its type and range checked by the table entry (or a handler for the keys
 * that need more). Checks that involve several keys (required keys, pairs,
 * duplicates, paths on disk) run when the group is done. Nothing stops at
 * the first problem: each one becomes a "FILE:LINE: key: message" string in
 * struct conf_errors, and a config with any error is thrown away whole.
 */
#include <config.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "conf/conf_int.h"
#include "conf/config.h"
#include "conf/fault.h"
#include "common/util.h"

#define CONF_CHAP_SECRET_MIN 12   /* RFC 7143 9.2.1: at least 96 bits */
#define CONF_CHAP_SECRET_MAX 255
#define CONF_TEXT_MAX 255
/* The largest data buffer one command may need (an 8 MiB transfer, twice
 * for COMPARE AND WRITE): a connection must be allowed at least that. */
#define CONF_MIN_CONN_BUFFER (16LL << 20)

/* ---- LUNs ------------------------------------------------------------ */

static void conf_lun_backstore(struct conf_ctx *x, const config_setting_t *s, const char *key,
			       void *obj)
{
	struct conf_lun *l = obj;
	const char *v;

	if (!conf_get_string(x, s, key, &v))
		return;
	if (strcmp(v, "file") && strcmp(v, "block") && strcmp(v, "memory") && strcmp(v, "rbd")) {
		conf_err(x, s, key, "must be \"file\", \"block\", \"memory\" or \"rbd\", not \"%s\"", v);
		return;
	}
#ifndef HAVE_RBD
	if (!strcmp(v, "rbd")) {
		conf_err(x, s, key, "this targetd is built without Ceph RBD (install librbd-dev "
			 "librados-dev, configure --with-rbd)");
		return;
	}
#endif
	l->backstore = conf_xstrdup(v);
}

static void conf_lun_size(struct conf_ctx *x, const config_setting_t *s, const char *key,
			  void *obj)
{
	struct conf_lun *l = obj;
	uint64_t v;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		const char *str = config_setting_get_string(s);

		if (conf_parse_size(str, &v) < 0) {
			conf_err(x, s, key, "\"%s\" is not a size (bytes, or a number with K, M, G or T)",
				 str);
			return;
		}
	} else if (conf_is_int(s)) {
		long long i = config_setting_get_int64(s);

		if (i < 0) {
			conf_err(x, s, key, "must not be negative");
			return;
		}
		v = (uint64_t)i;
	} else {
		conf_err(x, s, key, "must be an integer or a string such as \"10G\"");
		return;
	}
	if (v == 0) {
		conf_err(x, s, key, "must be greater than 0");
		return;
	}
	l->size = v;
}

static void conf_lun_faults(struct conf_ctx *x, const config_setting_t *s, const char *key,
			    void *obj)
{
	struct conf_lun *l = obj;

	conf_parse_faults(x, s, key, true, &l->faults, &l->n_faults);
}

static void conf_lun_block_size(struct conf_ctx *x, const config_setting_t *s, const char *key,
				void *obj)
{
	struct conf_lun *l = obj;

	if (!conf_is_int(s)) {
		conf_err(x, s, key, "must be an integer");
		return;
	}
	long long v = config_setting_get_int64(s);
	if (v != 512 && v != 4096) {
		conf_err(x, s, key, "must be 512 or 4096");
		return;
	}
	l->block_size = (unsigned)v;
}

static void conf_lun_zero_detect(struct conf_ctx *x, const config_setting_t *s, const char *key,
				 void *obj)
{
	static const char *const names[] = { [CONF_ZD_OFF] = "off", [CONF_ZD_ON] = "on",
					     [CONF_ZD_UNMAP] = "unmap" };
	struct conf_lun *l = obj;
	const char *v;

	if (!conf_get_string(x, s, key, &v))
		return;
	for (unsigned i = 0; i < ARRAY_SIZE(names); i++) {
		if (!strcmp(v, names[i])) {
			l->zero_detect = i;
			return;
		}
	}
	conf_err(x, s, key, "must be \"off\", \"on\" or \"unmap\", not \"%s\"", v);
}

/* An amount of space for a LUN: a size (bytes, "64M") or "N%" of the LUN. */
static bool conf_get_space(struct conf_ctx *x, const config_setting_t *s, const char *key,
			   struct conf_space *out)
{
	const char *str = config_setting_type(s) == CONFIG_TYPE_STRING ?
			  config_setting_get_string(s) : NULL;
	size_t n = str ? strlen(str) : 0;

	if (n > 1 && str[n - 1] == '%') {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(str, &end, 10);
		if (end != str + n - 1 || errno || v < 1 || v > 100 || str[0] == '-' ||
		    str[0] == '+' || str[0] == ' ') {
			conf_err(x, s, key, "\"%s\" is not a percentage of the LUN (1%% to 100%%)", str);
			return false;
		}
		out->pct = (unsigned)v;
		out->bytes = 0;
		return true;
	}
	if (!conf_get_bytes(x, s, key, 1, INT64_MAX, &out->bytes))
		return false;
	out->pct = 0;
	return true;
}

static void conf_lun_hard_limit(struct conf_ctx *x, const config_setting_t *s, const char *key,
				void *obj)
{
	struct conf_lun *l = obj;

	conf_get_space(x, s, key, &l->hard_limit);
}

static void conf_lun_soft_threshold(struct conf_ctx *x, const config_setting_t *s,
				    const char *key, void *obj)
{
	struct conf_lun *l = obj;

	conf_get_space(x, s, key, &l->soft_threshold);
}

const char *conf_snapshot_name_error(const char *v)
{
	size_t n = strlen(v);

	if (!n)
		return "is empty";
	if (n > CONF_SNAPSHOT_NAME_MAX)
		return "is longer than 64 characters";
	if (v[0] == '.' || v[0] == '-')
		return "must not start with '.' or '-'";
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("._+-", v[i]))
			return "may hold only letters, digits and . _ + - (it becomes part of a file name)";
	return NULL;
}

static void conf_lun_snapshot_of(struct conf_ctx *x, const config_setting_t *s, const char *key,
				 void *obj)
{
	struct conf_lun *l = obj;
	unsigned v = 0;

	if (conf_get_uint(x, s, key, 0, 255, &v))
		l->snapshot_of = (int)v;
}

static void conf_lun_snapshot_name(struct conf_ctx *x, const config_setting_t *s, const char *key,
				   void *obj)
{
	struct conf_lun *l = obj;
	const char *v, *why;

	if (!conf_get_string(x, s, key, &v))
		return;
	why = conf_snapshot_name_error(v);
	if (why)
		conf_err(x, s, key, "\"%s\" %s", v, why);
	else
		l->snapshot_name = conf_xstrdup(v);
}

static const struct conf_field conf_lun_fields[] = {
	{ "lun", CONF_K_UINT, offsetof(struct conf_lun, lun), 0, 255, NULL },
	{ "backstore", CONF_K_FUNC, 0, 0, 0, conf_lun_backstore },
	{ "path", CONF_K_STR, offsetof(struct conf_lun, path), 0, 0, NULL },
	{ "size", CONF_K_FUNC, 0, 0, 0, conf_lun_size },
	{ "block_size", CONF_K_FUNC, 0, 0, 0, conf_lun_block_size },
	{ "thin", CONF_K_BOOL, offsetof(struct conf_lun, thin), 0, 0, NULL },
	{ "read_only", CONF_K_BOOL, offsetof(struct conf_lun, read_only), 0, 0, NULL },
	{ "removable", CONF_K_BOOL, offsetof(struct conf_lun, removable), 0, 0, NULL },
	{ "sanitize", CONF_K_BOOL, offsetof(struct conf_lun, sanitize), 0, 0, NULL },
	{ "direct", CONF_K_BOOL, offsetof(struct conf_lun, direct), 0, 0, NULL },
	{ "zero_detect", CONF_K_FUNC, 0, 0, 0, conf_lun_zero_detect },
	{ "hard_limit", CONF_K_FUNC, 0, 0, 0, conf_lun_hard_limit },
	{ "soft_threshold", CONF_K_FUNC, 0, 0, 0, conf_lun_soft_threshold },

	{ "offline", CONF_K_BOOL, offsetof(struct conf_lun, offline), 0, 0, NULL },
	{ "serial", CONF_K_ASCII, offsetof(struct conf_lun, serial), 0, 32, NULL },
	{ "vendor", CONF_K_ASCII, offsetof(struct conf_lun, vendor), 0, 8, NULL },
	{ "product", CONF_K_ASCII, offsetof(struct conf_lun, product), 0, 16, NULL },
	{ "faults", CONF_K_FUNC, 0, 0, 0, conf_lun_faults },
	{ "snapshot_of", CONF_K_FUNC, 0, 0, 0, conf_lun_snapshot_of },
	{ "snapshot_name", CONF_K_FUNC, 0, 0, 0, conf_lun_snapshot_name },
	{ "snapshot_time", CONF_K_ASCII, offsetof(struct conf_lun, snapshot_time), 0, 32, NULL },
	{ "pool", CONF_K_FUNC, 0, 0, 0, conf_lun_rbd_name },
	{ "image", CONF_K_FUNC, 0, 0, 0, conf_lun_rbd_name },
	{ "client", CONF_K_FUNC, 0, 0, 0, conf_lun_rbd_name },
	{ "conf", CONF_K_STR, offsetof(struct conf_lun, rbd_conf), 0, 0, NULL },
};

/* A file LUN: the file exists (regular, readable, writable unless read-only)
 * or can be created (directory exists and is writable, size given). */
static void conf_lun_check_file(struct conf_ctx *x, const config_setting_t *g, const char *prefix,
				struct conf_lun *l, bool has_size)
{
	const config_setting_t *ps = config_setting_get_member(g, "path");
	char key[CONF_KEY_MAX], skey[CONF_KEY_MAX];
	struct stat st;

	conf_key(key, prefix, "path");
	conf_key(skey, prefix, "size");
	if (stat(l->path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			conf_err(x, ps, key, "%s is a directory", l->path);
		} else if (S_ISBLK(st.st_mode)) {
			conf_err(x, ps, key, "%s is a block device (use backstore = \"block\")", l->path);
		} else if (!S_ISREG(st.st_mode)) {
			conf_err(x, ps, key, "%s is not a regular file", l->path);
		} else {
			if (access(l->path, R_OK) < 0)
				conf_err(x, ps, key, "%s is not readable: %s", l->path, strerror(errno));
			if (!l->read_only && access(l->path, W_OK) < 0)
				conf_err(x, ps, key, "%s is not writable (or set read_only = true): %s",
					 l->path, strerror(errno));
			if (!has_size && st.st_size == 0)
				conf_err(x, ps, key, "%s is empty: give a size", l->path);
			else if (!has_size && (uint64_t)st.st_size % l->block_size)
				conf_err(x, ps, key, "%s: file size %lld is not a multiple of block_size %u",
					 l->path, (long long)st.st_size, l->block_size);
		}
		return;
	}
	if (errno != ENOENT) {
		conf_err(x, ps, key, "%s: %s", l->path, strerror(errno));
		return;
	}
	if (lstat(l->path, &st) == 0 && S_ISLNK(st.st_mode)) {
		conf_err(x, ps, key, "%s is a symbolic link to nothing (a file is never created through a "
			 "link: create the file it names, or name the file itself)", l->path);
		return;
	}
	if (l->read_only)
		conf_err(x, ps, key, "%s does not exist (a read-only LUN is not created)", l->path);
	if (!has_size)
		conf_err(x, g, skey, "required: %s does not exist and will be created", l->path);

	/* the directory that will hold the new file */
	char *dir = conf_xstrdup(l->path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) < 0)
		conf_err(x, ps, key, "directory %s: %s", dir, strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		conf_err(x, ps, key, "%s is not a directory", dir);
	else if (access(dir, W_OK | X_OK) < 0)
		conf_err(x, ps, key, "cannot create %s: directory %s is not writable: %s",
			 l->path, dir, strerror(errno));
	free(dir);
}

static void conf_lun_check_block(struct conf_ctx *x, const config_setting_t *g, const char *prefix,
				 struct conf_lun *l)
{
	const config_setting_t *ps = config_setting_get_member(g, "path");
	char key[CONF_KEY_MAX];
	struct stat st;

	conf_key(key, prefix, "path");
	if (stat(l->path, &st) < 0) {
		conf_err(x, ps, key, "%s: %s", l->path, strerror(errno));
		return;
	}
	if (!S_ISBLK(st.st_mode)) {
		conf_err(x, ps, key, "%s is not a block device%s", l->path,
			 S_ISREG(st.st_mode) ? " (use backstore = \"file\")" : "");
		return;
	}
	if (access(l->path, R_OK) < 0)
		conf_err(x, ps, key, "%s is not readable: %s", l->path, strerror(errno));
	if (!l->read_only && access(l->path, W_OK) < 0)
		conf_err(x, ps, key, "%s is not writable (or set read_only = true): %s",
			 l->path, strerror(errno));
}

/* A snapshot's own keys (the LUN it names is checked with the target's
 * LUNs, conf_target_check_snapshots()). */
static void conf_lun_check_snapshot(struct conf_ctx *x, const config_setting_t *g,
				    const char *prefix, struct conf_lun *l)
{
	const config_setting_t *of = config_setting_get_member(g, "snapshot_of");
	const config_setting_t *nm = config_setting_get_member(g, "snapshot_name");
	char key[CONF_KEY_MAX];

	if (!of && !nm) {
		if (config_setting_get_member(g, "snapshot_time")) {
			conf_key(key, prefix, "snapshot_time");
			conf_err(x, config_setting_get_member(g, "snapshot_time"), key,
				 "only for a snapshot (snapshot_of, snapshot_name)");
		}
		return;
	}
	if (!of || !nm) {
		conf_key(key, prefix, of ? "snapshot_name" : "snapshot_of");
		conf_err(x, g, key, "required with %s (a snapshot has both)",
			 of ? "snapshot_of" : "snapshot_name");
	}
	if (!l->read_only) {
		conf_key(key, prefix, "read_only");
		conf_err(x, g, key, "a snapshot is read-only: set read_only = true (targetctl lun "
			 "clone makes a writable copy of it)");
	}
	if (l->backstore && strcmp(l->backstore, "file")) {
		conf_key(key, prefix, "snapshot_of");
		conf_err(x, of, key, "a snapshot is a file LUN (backstore = \"file\")");
	}
}

static void conf_parse_lun(struct conf_ctx *x, const config_setting_t *g, const char *prefix,
			   struct conf_lun *l)
{
	const config_setting_t *bs_s, *path_s, *size_s, *direct_s;
	char key[CONF_KEY_MAX];

	l->block_size = 512;
	l->thin = true;
	l->snapshot_of = -1;
	l->line = config_setting_source_line(g);
	conf_walk(x, g, prefix, conf_lun_fields, ARRAY_SIZE(conf_lun_fields), l);
	conf_lun_check_snapshot(x, g, prefix, l);

	if (!config_setting_get_member(g, "lun")) {
		conf_key(key, prefix, "lun");
		conf_err(x, g, key, "missing (the LUN number, 0 to 255)");
	}
	bs_s = config_setting_get_member(g, "backstore");
	if (!bs_s) {
		conf_key(key, prefix, "backstore");
		conf_err(x, g, key, "missing (\"file\", \"block\", \"memory\" or \"rbd\")");
	}
	if (l->zero_detect != CONF_ZD_OFF && (!l->thin || l->read_only)) {
		conf_key(key, prefix, "zero_detect");
		conf_err(x, config_setting_get_member(g, "zero_detect"), key,
			 "needs a thin, writable LUN (thin = true, read_only = false)");
	}
	if ((l->hard_limit.bytes || l->hard_limit.pct) && !l->thin) {
		conf_key(key, prefix, "hard_limit");
		conf_err(x, config_setting_get_member(g, "hard_limit"), key,
			 "needs thin = true (a thick LUN holds all its space from the start)");
	}
	if ((l->soft_threshold.bytes || l->soft_threshold.pct) && !l->thin) {
		conf_key(key, prefix, "soft_threshold");
		conf_err(x, config_setting_get_member(g, "soft_threshold"), key,
			 "needs thin = true (a thick LUN holds all its space from the start)");
	}
	for (unsigned i = 0; i < l->n_faults; i++)
		l->faults[i].spec.lun = (int)l->lun;
	if (!l->backstore)
		return;   /* nothing more can be said */

	path_s = config_setting_get_member(g, "path");
	size_s = config_setting_get_member(g, "size");
	direct_s = config_setting_get_member(g, "direct");
	if (conf_lun_check_rbd(x, g, prefix, l)) {
		/* rbd: pool and image instead of a path */
	} else if (!strcmp(l->backstore, "memory")) {
		if (path_s) {
			conf_key(key, prefix, "path");
			conf_err(x, path_s, key, "not allowed for a memory backstore");
		}
		if (!size_s) {
			conf_key(key, prefix, "size");
			conf_err(x, g, key, "required for a memory backstore");
		}
		if (l->direct) {
			conf_key(key, prefix, "direct");
			conf_err(x, direct_s, key, "not applicable to a memory backstore");
		}
	} else {
		if (!path_s) {
			conf_key(key, prefix, "path");
			conf_err(x, g, key, "required for a %s backstore", l->backstore);
		}
		if (size_s && !strcmp(l->backstore, "block")) {
			conf_key(key, prefix, "size");
			conf_err(x, size_s, key, "not allowed for a block backstore (the device size is used)");
			l->size = 0;
		}
	}
	if (l->size && l->size % l->block_size) {
		conf_key(key, prefix, "size");
		conf_err(x, size_s, key, "%llu bytes is not a multiple of block_size %u",
			 (unsigned long long)l->size, l->block_size);
	}
	if (!l->path || (x->flags & CONF_NO_PATH_CHECKS))
		return;
	if (!strcmp(l->backstore, "file"))
		conf_lun_check_file(x, g, prefix, l, size_s != NULL);
	else if (!strcmp(l->backstore, "block"))
		conf_lun_check_block(x, g, prefix, l);
}

/* ---- targets --------------------------------------------------------- */

static void conf_target_iqn(struct conf_ctx *x, const config_setting_t *s, const char *key,
			    void *obj)
{
	struct conf_target *t = obj;
	const char *v, *why;

	if (!conf_get_string(x, s, key, &v))
		return;
	why = conf_iscsi_name_error(v);
	if (why) {
		conf_err(x, s, key, "\"%s\": %s", v, why);
		return;
	}
	t->iqn = conf_xstrdup(v);
}

static void conf_target_alias(struct conf_ctx *x, const config_setting_t *s, const char *key,
			      void *obj)
{
	struct conf_target *t = obj;
	const char *v;

	if (!conf_get_string(x, s, key, &v))
		return;
	if (strlen(v) > CONF_TEXT_MAX)
		conf_err(x, s, key, "longer than %d bytes", CONF_TEXT_MAX);
	else if (!conf_is_text(v))
		conf_err(x, s, key, "must not contain control characters");
	else
		t->alias = conf_xstrdup(v);
}

static void conf_target_initiators(struct conf_ctx *x, const config_setting_t *s, const char *key,
				   void *obj)
{
	struct conf_target *t = obj;
	int n;

	if (!conf_is_seq(s)) {
		conf_err(x, s, key, "must be a list of initiator names: [ \"iqn....\", ... ]");
		return;
	}
	t->has_acl = true;
	n = config_setting_length(s);
	t->initiators = conf_xcalloc((size_t)n, sizeof(*t->initiators));
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		char ekey[CONF_KEY_MAX];
		const char *v, *why;
		unsigned j;

		conf_keyf(ekey, "%s[%d]", key, i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			conf_err(x, e, ekey, "must be a string");
			continue;
		}
		v = config_setting_get_string(e);
		why = conf_iscsi_name_error(v);
		if (why) {
			conf_err(x, e, ekey, "\"%s\": %s", v, why);
			continue;
		}
		for (j = 0; j < t->n_initiators; j++)
			if (!strcmp(t->initiators[j], v))
				break;
		if (j < t->n_initiators) {
			conf_err(x, e, ekey, "\"%s\" is listed twice", v);
			continue;
		}
		t->initiators[t->n_initiators++] = conf_xstrdup(v);
	}
}

/* CHAP_N: 1..255 bytes of text. */
static void conf_chap_name(struct conf_ctx *x, const config_setting_t *s, const char *key,
			   char **out)
{
	const char *v;

	if (!conf_get_string(x, s, key, &v))
		return;
	if (strlen(v) > CONF_TEXT_MAX)
		conf_err(x, s, key, "longer than %d bytes", CONF_TEXT_MAX);
	else if (!conf_is_text(v))
		conf_err(x, s, key, "must not contain control characters");
	else
		*out = conf_xstrdup(v);
}

/* RFC 7143 9.2.1: secrets of at least 96 bits. */
static void conf_chap_secret(struct conf_ctx *x, const config_setting_t *s, const char *key,
			     char **out)
{
	const char *v;
	size_t len;

	if (!conf_get_string(x, s, key, &v))
		return;
	len = strlen(v);
	if (len < CONF_CHAP_SECRET_MIN || len > CONF_CHAP_SECRET_MAX)
		conf_err(x, s, key, "must be %d to %d bytes long (it is %zu)",
			 CONF_CHAP_SECRET_MIN, CONF_CHAP_SECRET_MAX, len);
	else
		*out = conf_xstrdup(v);
}

static void conf_chap_user(struct conf_ctx *x, const config_setting_t *s, const char *key, void *obj)
{
	conf_chap_name(x, s, key, &((struct conf_chap *)obj)->user);
}

static void conf_chap_mutual_user(struct conf_ctx *x, const config_setting_t *s, const char *key,
				  void *obj)
{
	conf_chap_name(x, s, key, &((struct conf_chap *)obj)->mutual_user);
}

static void conf_chap_secret1(struct conf_ctx *x, const config_setting_t *s, const char *key,
			      void *obj)
{
	conf_chap_secret(x, s, key, &((struct conf_chap *)obj)->secret);
}

static void conf_chap_mutual_secret(struct conf_ctx *x, const config_setting_t *s, const char *key,
				    void *obj)
{
	conf_chap_secret(x, s, key, &((struct conf_chap *)obj)->mutual_secret);
}

static const struct conf_field conf_chap_fields[] = {
	{ "user", CONF_K_FUNC, 0, 0, 0, conf_chap_user },
	{ "secret", CONF_K_FUNC, 0, 0, 0, conf_chap_secret1 },
	{ "mutual_user", CONF_K_FUNC, 0, 0, 0, conf_chap_mutual_user },
	{ "mutual_secret", CONF_K_FUNC, 0, 0, 0, conf_chap_mutual_secret },
};

/* A chap group (a target's chap, or discovery_chap) into *out. */
static void conf_chap_group(struct conf_ctx *x, const config_setting_t *s, const char *key,
			    struct conf_chap **out)
{
	const config_setting_t *user, *secret, *muser, *msecret;
	struct conf_chap *ch;
	char k[CONF_KEY_MAX];

	if (!conf_is_group(s)) {
		conf_err(x, s, key, "must be a group: %s = { user = ...; secret = ...; };",
			 strrchr(key, '.') ? strrchr(key, '.') + 1 : key);
		return;
	}
	ch = *out = conf_xcalloc(1, sizeof(*ch));
	conf_walk(x, s, key, conf_chap_fields, ARRAY_SIZE(conf_chap_fields), ch);

	user = config_setting_get_member(s, "user");
	secret = config_setting_get_member(s, "secret");
	muser = config_setting_get_member(s, "mutual_user");
	msecret = config_setting_get_member(s, "mutual_secret");
	if (!user && !secret) {
		conf_err(x, s, key, "user and secret are required in a chap group");
	} else if (!user || !secret) {
		conf_key(k, key, user ? "secret" : "user");
		conf_err(x, user ? user : secret, k, "missing: user and secret go together");
	}
	if (!!muser != !!msecret) {
		conf_key(k, key, muser ? "mutual_secret" : "mutual_user");
		conf_err(x, muser ? muser : msecret, k,
			 "missing: mutual_user and mutual_secret go together");
	}
	if ((muser || msecret) && !(user && secret)) {
		conf_key(k, key, muser ? "mutual_user" : "mutual_secret");
		conf_err(x, muser ? muser : msecret, k,
			 "mutual CHAP needs one-way CHAP (user and secret) as well");
	}
	if (ch->secret && ch->mutual_secret && !strcmp(ch->secret, ch->mutual_secret)) {
		conf_key(k, key, "mutual_secret");
		conf_err(x, msecret, k, "must differ from secret");
	}
}

static void conf_target_chap(struct conf_ctx *x, const config_setting_t *s, const char *key,
			     void *obj)
{
	conf_chap_group(x, s, key, &((struct conf_target *)obj)->chap);
}

static void conf_root_discovery_chap(struct conf_ctx *x, const config_setting_t *s,
				     const char *key, void *obj)
{
	struct conf *c = obj;

	conf_chap_group(x, s, key, &c->discovery_chap);
}

/* Each snapshot names a LUN of its target that is no snapshot itself,
 * under a name no other snapshot of that LUN has. */
static void conf_target_check_snapshots(struct conf_ctx *x, const config_setting_t *s,
					const char *key, const struct conf_target *t,
					const int *first)
{
	for (unsigned i = 0; i < t->n_luns; i++) {
		const struct conf_lun *l = &t->luns[i];
		const config_setting_t *g = config_setting_get_elem(s, i);
		char k[CONF_KEY_MAX];

		if (!conf_lun_is_snapshot(l))
			continue;
		conf_keyf(k, "%s[%u].snapshot_of", key, i);
		if ((unsigned)l->snapshot_of == l->lun) {
			conf_err(x, config_setting_get_member(g, "snapshot_of"), k,
				 "LUN %u cannot be a snapshot of itself", l->lun);
			continue;
		}
		if (first[l->snapshot_of] < 0) {
			conf_err(x, config_setting_get_member(g, "snapshot_of"), k,
				 "names LUN %d, which the target does not have (a LUN with snapshots "
				 "is removed after them: targetctl lun remove each snapshot first)",
				 l->snapshot_of);
			continue;
		}
		if (conf_lun_is_snapshot(&t->luns[first[l->snapshot_of]])) {
			conf_err(x, config_setting_get_member(g, "snapshot_of"), k,
				 "LUN %d is a snapshot itself: snapshot the LUN it was taken of, or "
				 "clone it first", l->snapshot_of);
			continue;
		}
		for (unsigned j = 0; j < i; j++)
			if (t->luns[j].snapshot_of == l->snapshot_of && t->luns[j].snapshot_name &&
			    !strcmp(t->luns[j].snapshot_name, l->snapshot_name)) {
				conf_keyf(k, "%s[%u].snapshot_name", key, i);
				conf_err(x, config_setting_get_member(g, "snapshot_name"), k,
					 "LUN %d has a snapshot \"%s\" already (LUN %u, line %d)",
					 l->snapshot_of, l->snapshot_name, t->luns[j].lun, t->luns[j].line);
			}
	}
}

static void conf_target_luns(struct conf_ctx *x, const config_setting_t *s, const char *key,
			     void *obj)
{
	struct conf_target *t = obj;
	int first[256];
	int n;

	if (config_setting_type(s) != CONFIG_TYPE_LIST) {
		conf_err(x, s, key, "must be a list of groups: luns = ( { lun = 0; ... } );");
		return;
	}
	n = config_setting_length(s);
	if (n == 0)
		return;   /* a target without LUNs yet (targetctl lun add) */
	for (unsigned i = 0; i < ARRAY_SIZE(first); i++)
		first[i] = -1;
	t->luns = conf_xcalloc((size_t)n, sizeof(*t->luns));
	t->n_luns = (unsigned)n;
	for (int i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(s, (unsigned)i);
		const config_setting_t *ls;
		struct conf_lun *l = &t->luns[i];
		char prefix[CONF_KEY_MAX], lkey[CONF_KEY_MAX];

		conf_keyf(prefix, "%s[%d]", key, i);
		if (!conf_is_group(g)) {
			conf_err(x, g, prefix, "must be a group { lun = ...; backstore = ...; }");
			continue;
		}
		conf_parse_lun(x, g, prefix, l);
		ls = config_setting_get_member(g, "lun");
		if (!ls || !conf_is_int(ls) || l->lun > 255 ||
		    config_setting_get_int64(ls) != (long long)l->lun)
			continue;
		if (first[l->lun] >= 0) {
			conf_key(lkey, prefix, "lun");
			conf_err(x, ls, lkey, "LUN %u is already defined at line %d", l->lun,
				 t->luns[first[l->lun]].line);
		} else {
			first[l->lun] = i;
		}
	}
	conf_target_check_snapshots(x, s, key, t, first);
}

static void conf_target_faults(struct conf_ctx *x, const config_setting_t *s, const char *key,
			       void *obj)
{
	struct conf_target *t = obj;

	conf_parse_faults(x, s, key, false, &t->faults, &t->n_faults);
}

static const struct conf_field conf_target_fields[] = {
	{ "iqn", CONF_K_FUNC, 0, 0, 0, conf_target_iqn },
	{ "alias", CONF_K_FUNC, 0, 0, 0, conf_target_alias },
	{ "initiators", CONF_K_FUNC, 0, 0, 0, conf_target_initiators },
	{ "chap", CONF_K_FUNC, 0, 0, 0, conf_target_chap },
	{ "luns", CONF_K_FUNC, 0, 0, 0, conf_target_luns },
	{ "faults", CONF_K_FUNC, 0, 0, 0, conf_target_faults },
};

static void conf_parse_target(struct conf_ctx *x, const config_setting_t *g, const char *prefix,
			      struct conf_target *t)
{
	char key[CONF_KEY_MAX];

	t->line = config_setting_source_line(g);
	conf_walk(x, g, prefix, conf_target_fields, ARRAY_SIZE(conf_target_fields), t);
	if (!config_setting_get_member(g, "iqn")) {
		conf_key(key, prefix, "iqn");
		conf_err(x, g, key, "missing (the target name, e.g. iqn.2026-11.org.example:disk1)");
	}
	if (!config_setting_get_member(g, "luns")) {
		conf_key(key, prefix, "luns");
		conf_err(x, g, key, "missing (a list of LUNs; luns = ( ); for none yet)");
	}
	conf_check_fault_luns(x, g, prefix, t);
}

/* Two LUNs on one file or device would corrupt each other. */
static void conf_check_shared_paths(struct conf_ctx *x, const config_setting_t *targets,
				    struct conf *c)
{
	struct pathref {
		const struct conf_lun *l;
		unsigned t, i;
		bool has_st;
		dev_t dev;
		ino_t ino;
	} *refs;
	unsigned n = 0, total = 0;

	for (unsigned t = 0; t < c->n_targets; t++)
		total += c->targets[t].n_luns;
	refs = conf_xcalloc(total, sizeof(*refs));
	for (unsigned t = 0; t < c->n_targets; t++) {
		for (unsigned i = 0; i < c->targets[t].n_luns; i++) {
			const struct conf_lun *l = &c->targets[t].luns[i];
			struct stat st;

			if (!l->path)
				continue;
			refs[n] = (struct pathref){ .l = l, .t = t, .i = i };
			if (!(x->flags & CONF_NO_PATH_CHECKS) && stat(l->path, &st) == 0) {
				refs[n].has_st = true;
				refs[n].dev = st.st_dev;
				refs[n].ino = st.st_ino;
			}
			for (unsigned j = 0; j < n; j++) {
				if (strcmp(refs[j].l->path, l->path) &&
				    !(refs[j].has_st && refs[n].has_st &&
				      refs[j].dev == refs[n].dev && refs[j].ino == refs[n].ino))
					continue;
				const config_setting_t *tg = config_setting_get_elem(targets, t);
				const config_setting_t *lg =
					config_setting_get_elem(config_setting_get_member(tg, "luns"), i);
				char key[CONF_KEY_MAX];

				conf_keyf(key, "targets[%u].luns[%u].path", t, i);
				conf_err(x, config_setting_get_member(lg, "path"), key,
					 "%s is already used by targets[%u].luns[%u] (line %d)",
					 l->path, refs[j].t, refs[j].i, refs[j].l->line);
				break;
			}
			n++;
		}
	}
	free(refs);
}

static void conf_root_targets(struct conf_ctx *x, const config_setting_t *s, const char *key,
			      void *obj)
{
	struct conf *c = obj;
	int n;

	if (config_setting_type(s) != CONFIG_TYPE_LIST) {
		conf_err(x, s, key, "must be a list of groups: targets = ( { iqn = ...; } );");
		return;
	}
	n = config_setting_length(s);
	if (n == 0)
		return;   /* none yet (targetctl target add) */
	c->targets = conf_xcalloc((size_t)n, sizeof(*c->targets));
	c->n_targets = (unsigned)n;
	for (int i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(s, (unsigned)i);
		struct conf_target *t = &c->targets[i];
		char prefix[CONF_KEY_MAX];

		conf_key_idx(prefix, NULL, key, (unsigned)i);
		if (!conf_is_group(g)) {
			conf_err(x, g, prefix, "must be a group { iqn = ...; luns = (...); }");
			continue;
		}
		conf_parse_target(x, g, prefix, t);
		if (!t->iqn)
			continue;
		for (int j = 0; j < i; j++) {
			if (c->targets[j].iqn && !strcmp(c->targets[j].iqn, t->iqn)) {
				char ikey[CONF_KEY_MAX];

				conf_key(ikey, prefix, "iqn");
				conf_err(x, config_setting_get_member(g, "iqn"), ikey,
					 "\"%s\" is already the name of targets[%d] (line %d)",
					 t->iqn, j, c->targets[j].line);
				break;
			}
		}
	}
	conf_check_shared_paths(x, s, c);
}

/* ---- top level ------------------------------------------------------- */

static void conf_root_listen(struct conf_ctx *x, const config_setting_t *s, const char *key,
			     void *obj)
{
	struct conf *c = obj;
	struct conf_addr *seen;
	int n;

	if (!conf_is_seq(s)) {
		conf_err(x, s, key, "must be a list of addresses: [ \"127.0.0.1:3260\", \"[::1]:3260\" ]");
		return;
	}
	n = config_setting_length(s);
	if (n == 0) {
		conf_err(x, s, key, "at least one address is required");
		return;
	}
	c->listen = conf_xcalloc((size_t)n, sizeof(*c->listen));
	seen = conf_xcalloc((size_t)n, sizeof(*seen));
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		const config_setting_t *as = e;
		char ekey[CONF_KEY_MAX], akey[CONF_KEY_MAX], host[INET6_ADDRSTRLEN];
		const char *addr = NULL;
		unsigned tpgt = 1, port, j;
		bool has_port;

		conf_key_idx(ekey, NULL, key, (unsigned)i);
		conf_keyf(akey, "%s", ekey);
		if (config_setting_type(e) == CONFIG_TYPE_STRING) {
			addr = config_setting_get_string(e);
		} else if (conf_is_group(e)) {
			int m = config_setting_length(e);
			bool ok = true;

			for (int k = 0; k < m; k++) {
				const config_setting_t *f = config_setting_get_elem(e, (unsigned)k);
				const char *fname = config_setting_name(f);
				char fkey[CONF_KEY_MAX];

				conf_key(fkey, ekey, fname);
				if (!strcmp(fname, "address")) {
					as = f;
					conf_keyf(akey, "%s", fkey);
					if (!conf_get_string(x, f, fkey, &addr))
						ok = false;
				} else if (!strcmp(fname, "tpgt")) {
					if (!conf_get_uint(x, f, fkey, 1, 65535, &tpgt))
						ok = false;
				} else {
					conf_err(x, f, fkey, "unknown key");
					ok = false;
				}
			}
			if (!config_setting_get_member(e, "address")) {
				conf_key(akey, ekey, "address");
				conf_err(x, e, akey, "missing");
			}
			if (!ok)
				continue;
		} else {
			conf_err(x, e, ekey, "must be an address string or a group { address = ...; tpgt = ...; }");
			continue;
		}
		if (!addr)
			continue;
		if (conf_split_listen(addr, host, sizeof(host), &port, &has_port, &seen[c->n_listen]) < 0) {
			char why[160];

			conf_listen_error(addr, why, sizeof(why));
			conf_err(x, as, akey, "\"%s\"%s%s", addr, why[0] == 'i' ? " " : ": ", why);
			continue;
		}
		for (j = 0; j < c->n_listen; j++)
			if (!memcmp(&seen[j], &seen[c->n_listen], sizeof(seen[j])))
				break;
		if (j < c->n_listen) {
			conf_err(x, as, akey, "\"%s\" is listed twice", addr);
			continue;
		}
		c->listen[c->n_listen].host = conf_xstrdup(host);
		c->listen[c->n_listen].port = conf_xasprintf("%u", port);
		c->listen[c->n_listen].tpgt = tpgt;
		c->n_listen++;
	}
	free(seen);
}

static void conf_root_control_socket(struct conf_ctx *x, const config_setting_t *s,
				     const char *key, void *obj)
{
	struct conf *c = obj;
	const char *v;

	if (!conf_get_string(x, s, key, &v))
		return;
	if (strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		conf_err(x, s, key, "longer than %zu bytes, too long for a UNIX socket",
			 sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return;
	}
	free(c->control_socket);
	c->control_socket = conf_xstrdup(v);
}

static void conf_root_state_dir(struct conf_ctx *x, const config_setting_t *s, const char *key,
				void *obj)
{
	struct conf *c = obj;
	const char *v;

	if (!conf_get_string(x, s, key, &v))
		return;
	free(c->state_dir);
	c->state_dir = conf_xstrdup(v);
}

/* A percentage of the pool (the file system under the file LUNs) used. */
static void conf_root_pool_threshold(struct conf_ctx *x, const config_setting_t *s,
				     const char *key, void *obj)
{
	struct conf *c = obj;
	struct conf_space sp = { 0, 0 };

	if (!conf_get_space(x, s, key, &sp))
		return;
	if (!sp.pct) {
		conf_err(x, s, key, "must be a percentage of the file system, such as \"85%%\"");
		return;
	}
	c->pool_soft_threshold = sp.pct;
}

static void conf_root_metrics(struct conf_ctx *x, const config_setting_t *s, const char *key,
			      void *obj)
{
	struct conf *c = obj;
	char host[INET6_ADDRSTRLEN];
	unsigned port;
	bool has_port;
	const char *v;

	if (!conf_get_string(x, s, key, &v))
		return;
	if (conf_split_listen(v, host, sizeof(host), &port, &has_port, NULL) < 0 || !has_port) {
		conf_err(x, s, key, "\"%s\" is not a numeric address and port (127.0.0.1:9100, [::1]:9100)",
			 v);
		return;
	}
	c->metrics_listen = conf_xstrdup(v);
}

/* http_listen = "127.0.0.1:8080" or "8080" (the loopback address) */
static void conf_root_http(struct conf_ctx *x, const config_setting_t *s, const char *key, void *obj)
{
	struct conf *c = obj;
	char host[INET6_ADDRSTRLEN];
	unsigned port;
	bool has_port;
	const char *v;

	if (!conf_get_string(x, s, key, &v))
		return;
	if (v[0] && strspn(v, "0123456789") == strlen(v)) {
		port = (unsigned)strtoul(v, NULL, 10);
		if (port == 0 || port > 65535 || strlen(v) > 5) {
			conf_err(x, s, key, "port %s is not 1..65535", v);
			return;
		}
		free(c->http_listen);
		c->http_listen = conf_xasprintf("127.0.0.1:%u", port);
		return;
	}
	if (conf_split_listen(v, host, sizeof(host), &port, &has_port, NULL) < 0 || !has_port) {
		conf_err(x, s, key, "\"%s\" is not a port (8080: on 127.0.0.1) or a numeric address "
			 "and port (127.0.0.1:8080, [::1]:8080)", v);
		return;
	}
	free(c->http_listen);
	c->http_listen = conf_xstrdup(v);
}

/* portal_groups = ( { tpgt = 1; state = "active/optimized"; preferred = true; }, ... ) */
static void conf_root_portal_groups(struct conf_ctx *x, const config_setting_t *s,
				    const char *key, void *obj)
{
	static const struct {
		const char *name;
		enum conf_alua_state st;
	} states[] = {
		{ "active/optimized", CONF_ALUA_ACTIVE_OPTIMIZED },
		{ "active/non-optimized", CONF_ALUA_ACTIVE_NON_OPTIMIZED },
		{ "standby", CONF_ALUA_STANDBY },
		{ "unavailable", CONF_ALUA_UNAVAILABLE },
	};
	struct conf *c = obj;
	int n;

	if (!conf_is_seq(s)) {
		conf_err(x, s, key, "must be a list of groups: ( { tpgt = 1; state = \"standby\"; } )");
		return;
	}
	n = config_setting_length(s);
	c->portal_groups = conf_xcalloc((size_t)n + 1, sizeof(*c->portal_groups));
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		struct conf_portal_group g = { .tpgt = 0, .state = CONF_ALUA_ACTIVE_OPTIMIZED };
		char ekey[CONF_KEY_MAX];
		bool ok = true;

		conf_key_idx(ekey, NULL, key, (unsigned)i);
		if (!conf_is_group(e)) {
			conf_err(x, e, ekey, "must be a group { tpgt = ...; state = ...; }");
			continue;
		}
		g.line = config_setting_source_line(e);
		for (int k = 0; k < config_setting_length(e); k++) {
			const config_setting_t *f = config_setting_get_elem(e, (unsigned)k);
			const char *fname = config_setting_name(f), *v;
			char fkey[CONF_KEY_MAX];
			unsigned j;

			conf_key(fkey, ekey, fname);
			if (!strcmp(fname, "tpgt")) {
				if (!conf_get_uint(x, f, fkey, 1, 65535, &g.tpgt))
					ok = false;
			} else if (!strcmp(fname, "state")) {
				if (!conf_get_string(x, f, fkey, &v)) {
					ok = false;
					continue;
				}
				for (j = 0; j < ARRAY_SIZE(states); j++)
					if (!strcasecmp(v, states[j].name))
						break;
				if (j == ARRAY_SIZE(states)) {
					conf_err(x, f, fkey, "\"%s\" is not active/optimized, "
						 "active/non-optimized, standby or unavailable", v);
					ok = false;
				} else {
					g.state = states[j].st;
				}
			} else if (!strcmp(fname, "preferred") || !strcmp(fname, "remote")) {
				if (config_setting_type(f) != CONFIG_TYPE_BOOL) {
					conf_err(x, f, fkey, "must be true or false");
					ok = false;
				} else if (fname[0] == 'p') {
					g.preferred = config_setting_get_bool(f);
				} else {
					g.remote = config_setting_get_bool(f);
				}
			} else {
				conf_err(x, f, fkey, "unknown key");
				ok = false;
			}
		}
		if (!config_setting_get_member(e, "tpgt")) {
			char tkey[CONF_KEY_MAX];

			conf_key(tkey, ekey, "tpgt");
			conf_err(x, e, tkey, "missing");
			ok = false;
		}
		for (unsigned j = 0; ok && j < c->n_portal_groups; j++) {
			if (c->portal_groups[j].tpgt == g.tpgt) {
				conf_err(x, e, ekey, "tpgt %u is already described (line %d)",
					 g.tpgt, c->portal_groups[j].line);
				ok = false;
			}
		}
		if (ok)
			c->portal_groups[c->n_portal_groups++] = g;
	}
}

static const struct conf_field conf_root_fields[] = {
	{ "listen", CONF_K_FUNC, 0, 0, 0, conf_root_listen },
	{ "threads", CONF_K_UINT, offsetof(struct conf, threads), 0, 1024, NULL },
	{ "state_dir", CONF_K_FUNC, 0, 0, 0, conf_root_state_dir },
	{ "control_socket", CONF_K_FUNC, 0, 0, 0, conf_root_control_socket },
	{ "queue_depth", CONF_K_UINT, offsetof(struct conf, queue_depth), 1, 4096, NULL },
	{ "nop_interval", CONF_K_UINT, offsetof(struct conf, nop_interval), 0, 3600, NULL },
	{ "nop_timeout", CONF_K_UINT, offsetof(struct conf, nop_timeout), 1, 3600, NULL },
	{ "login_timeout", CONF_K_UINT, offsetof(struct conf, login_timeout), 1, 3600, NULL },
	{ "max_recv_data_segment_length", CONF_K_UINT,
	  offsetof(struct conf, max_recv_data_segment_length), 512, 16777215, NULL },
	{ "max_burst_length", CONF_K_UINT, offsetof(struct conf, max_burst_length), 512, 16777215, NULL },
	{ "first_burst_length", CONF_K_UINT, offsetof(struct conf, first_burst_length), 512, 16777215, NULL },
	{ "immediate_data", CONF_K_BOOL, offsetof(struct conf, immediate_data), 0, 0, NULL },
	{ "initial_r2t", CONF_K_BOOL, offsetof(struct conf, initial_r2t), 0, 0, NULL },
	{ "max_outstanding_r2t", CONF_K_UINT, offsetof(struct conf, max_outstanding_r2t), 1, 65535, NULL },
	{ "io_uring", CONF_K_BOOL, offsetof(struct conf, use_io_uring), 0, 0, NULL },
	{ "metrics_listen", CONF_K_FUNC, 0, 0, 0, conf_root_metrics },
	{ "http_listen", CONF_K_FUNC, 0, 0, 0, conf_root_http },
	{ "pool_soft_threshold", CONF_K_FUNC, 0, 0, 0, conf_root_pool_threshold },
	{ "portal_groups", CONF_K_FUNC, 0, 0, 0, conf_root_portal_groups },
	{ "targets", CONF_K_FUNC, 0, 0, 0, conf_root_targets },
	{ "discovery_chap", CONF_K_FUNC, 0, 0, 0, conf_root_discovery_chap },
#define LIM(f) offsetof(struct conf, limits.f)
	{ "max_connections", CONF_K_UINT, LIM(max_connections), 1, 1000000, NULL },
	{ "max_connections_per_target", CONF_K_UINT, LIM(max_connections_per_target), 1, 1000000, NULL },
	{ "max_sessions_per_initiator", CONF_K_UINT, LIM(max_sessions_per_initiator), 1, 65535, NULL },
	{ "max_buffer_per_connection", CONF_K_SIZE, LIM(max_buffer_per_connection),
	  CONF_MIN_CONN_BUFFER, 1LL << 40, NULL },
	{ "max_buffer_total", CONF_K_SIZE, LIM(max_buffer_total), CONF_MIN_CONN_BUFFER, 1LL << 44, NULL },
	{ "max_pending_tx_per_connection", CONF_K_SIZE, LIM(max_pending_tx_per_connection), 65536,
	  1LL << 40, NULL },
	{ "max_text_response", CONF_K_UINT, LIM(max_text_response), 8192, 16777216, NULL },
	{ "data_out_timeout", CONF_K_UINT, LIM(data_out_timeout), 1, 3600, NULL },
#undef LIM
};

/* Everything that has a default, set before the file is read. */
static void conf_set_defaults(struct conf *c, const char *state_dir)
{
	c->threads = 0;
	c->state_dir = conf_xstrdup(state_dir ? state_dir : CONF_DEFAULT_STATE_DIR);
	c->control_socket = conf_xstrdup(CONF_DEFAULT_CONTROL_SOCKET);
	c->queue_depth = 128;
	c->nop_interval = 15;
	c->nop_timeout = 30;
	c->login_timeout = 15;
	c->max_recv_data_segment_length = 262144;
	c->max_burst_length = 1048576;
	c->first_burst_length = 65536;
	c->immediate_data = true;
	c->initial_r2t = false;
	c->max_outstanding_r2t = 1;
	c->use_io_uring = true;
	c->limits.max_connections = 1024;
	c->limits.max_connections_per_target = 256;
	c->limits.max_sessions_per_initiator = 64;
	c->limits.max_buffer_per_connection = 64u << 20;
	c->limits.max_buffer_total = 1u << 30;
	c->limits.max_pending_tx_per_connection = 16u << 20;
	c->limits.max_text_response = 1u << 20;
	c->limits.data_out_timeout = 20;
}

static void conf_default_listen(struct conf *c)
{
	c->listen = conf_xcalloc(1, sizeof(*c->listen));
	c->listen[0].host = conf_xstrdup("127.0.0.1");
	c->listen[0].port = conf_xstrdup(CONF_DEFAULT_PORT);
	c->listen[0].tpgt = 1;
	c->n_listen = 1;
}

/* Limits that must agree with each other. */
static void conf_check_limits(struct conf_ctx *x, const config_setting_t *root, struct conf *c)
{
	struct conf_limits *l = &c->limits;
	const config_setting_t *pc = config_setting_get_member(root, "max_buffer_per_connection");
	const config_setting_t *tot = config_setting_get_member(root, "max_buffer_total");
	const config_setting_t *pt = config_setting_get_member(root, "max_connections_per_target");

	if (l->max_buffer_per_connection > l->max_buffer_total) {
		if (pc)
			conf_err(x, pc, "max_buffer_per_connection", "%llu exceeds max_buffer_total %llu%s",
				 (unsigned long long)l->max_buffer_per_connection,
				 (unsigned long long)l->max_buffer_total, tot ? "" : " (the default)");
		else
			l->max_buffer_per_connection = l->max_buffer_total;
	}
	if (l->max_connections_per_target > l->max_connections) {
		if (pt)
			conf_err(x, pt, "max_connections_per_target", "%u exceeds max_connections %u",
				 l->max_connections_per_target, l->max_connections);
		else
			l->max_connections_per_target = l->max_connections;
	}
}

static void conf_parse_root(struct conf_ctx *x, const config_setting_t *root, struct conf *c)
{
	const config_setting_t *fbl, *mbl;

	conf_walk(x, root, NULL, conf_root_fields, ARRAY_SIZE(conf_root_fields), c);
	if (!config_setting_get_member(root, "listen"))
		conf_default_listen(c);
	/* every described portal group needs a portal */
	for (unsigned i = 0; i < c->n_portal_groups; i++) {
		unsigned j;

		for (j = 0; j < c->n_listen; j++)
			if (c->listen[j].tpgt == c->portal_groups[i].tpgt)
				break;
		if ((j == c->n_listen) != c->portal_groups[i].remote) {
			char key[CONF_KEY_MAX];

			conf_key_idx(key, NULL, "portal_groups", i);
			conf_err(x, config_setting_get_member(root, "portal_groups"), key,
				 c->portal_groups[i].remote
					 ? "remote, but listen has tpgt %u (a remote group is "
					   "another gateway's)"
					 : "no listen address has tpgt %u (or say remote = true)",
				 c->portal_groups[i].tpgt);
		}
	}
	if (!config_setting_get_member(root, "targets"))
		conf_err(x, NULL, "targets", "missing: the list of targets (targets = ( ); for none yet)");

	conf_check_limits(x, root, c);

	/* RFC 7143 13.14: FirstBurstLength <= MaxBurstLength. A default
	 * first_burst_length follows a smaller max_burst_length. */
	fbl = config_setting_get_member(root, "first_burst_length");
	mbl = config_setting_get_member(root, "max_burst_length");
	if (c->first_burst_length > c->max_burst_length) {
		if (fbl)
			conf_err(x, fbl, "first_burst_length", "%u exceeds max_burst_length %u%s",
				 c->first_burst_length, c->max_burst_length,
				 mbl ? "" : " (the default)");
		else
			c->first_burst_length = c->max_burst_length;
	}
}

/* ---- entry points ---------------------------------------------------- */

static void conf_ctx_init(struct conf_ctx *x, const char *name, unsigned flags,
			  struct conf_errors *errs)
{
	x->name = name;
	x->flags = flags;
	x->errs = errs;
	x->n_err = 0;
	x->incdir = NULL;
	x->text = NULL;
	if (errs) {
		errs->msgs = NULL;
		errs->n = 0;
	}
}

static void conf_syntax_error(struct conf_ctx *x, config_t *cfg)
{
	int line = config_error_line(cfg);
	const char *what = config_error_text(cfg);
	char near[80], *file;

	x->n_err++;
	if (!x->errs)
		return;
	file = conf_file_name(x, config_error_file(cfg));
	near[0] = 0;
	if (line > 0)
		conf_source_line(config_error_file(cfg) ? NULL : x->text,
				 config_error_file(cfg) ? config_error_file(cfg) : x->name, line, near,
				 sizeof(near));
	if (line <= 0)
		conf_errors_push(x->errs, conf_xasprintf("%s: syntax error: %s", file, what));
	else if (!near[0])
		conf_errors_push(x->errs, conf_xasprintf("%s:%d: syntax error: %s", file, line, what));
	else if (!strcmp(what, "syntax error"))
		conf_errors_push(x->errs, conf_xasprintf(
			"%s:%d: syntax error near '%s' (a value missing, a ';' or ',' too many or too "
			"few, a bracket or a quote not closed, here or on the line before?)",
			file, line, near));
	else
		conf_errors_push(x->errs, conf_xasprintf("%s:%d: syntax error: %s near '%s'", file,
							  line, what, near));
	free(file);
}

static int conf_build(struct conf_ctx *x, config_t *cfg, struct conf *c)
{
	struct conf tmp;

	memset(&tmp, 0, sizeof(tmp));
	conf_set_defaults(&tmp, NULL);
	tmp.file = conf_xstrdup(x->name);
	conf_parse_root(x, config_root_setting(cfg), &tmp);
	if (x->n_err) {
		conf_free(&tmp);
		return -1;
	}
	*c = tmp;
	return 0;
}

/* Read a configuration from f, or from text when f is NULL, and build c;
 * @include names are relative to the directory of path. */
static int conf_read_build(struct conf *c, struct conf_ctx *x, const char *path, FILE *f,
			   const char *text)
{
	const char *slash = strrchr(path, '/');
	config_t cfg;
	int rc;

	config_init(&cfg);
	if (slash) {
		char *dir = conf_xstrdup(path);

		dir[slash == path ? 1 : slash - path] = '\0';
		config_set_include_dir(&cfg, dir);
		free(dir);
		x->incdir = conf_xstrdup(path);
		x->incdir[slash - path + 1] = '\0';
	}
	if (!(f ? config_read(&cfg, f) : config_read_string(&cfg, text))) {
		conf_syntax_error(x, &cfg);
		rc = -1;
	} else {
		rc = conf_build(x, &cfg, c);
	}
	config_destroy(&cfg);
	free(x->incdir);
	x->incdir = NULL;
	return rc;
}

int conf_load_file_opts(struct conf *c, const char *path, unsigned flags, struct conf_errors *errs)
{
	struct conf_ctx x;
	FILE *f;
	int rc;

	memset(c, 0, sizeof(*c));
	conf_ctx_init(&x, path, flags, errs);
	f = fopen(path, "r");
	if (!f) {
		conf_err(&x, NULL, NULL, "cannot open: %s", strerror(errno));
		return -1;
	}
	rc = conf_read_build(c, &x, path, f, NULL);
	fclose(f);
	return rc;
}

int conf_load_file(struct conf *c, const char *path, struct conf_errors *errs)
{
	return conf_load_file_opts(c, path, 0, errs);
}

int conf_load_text(struct conf *c, const char *text, const char *path, unsigned flags,
		   struct conf_errors *errs)
{
	struct conf_ctx x;

	memset(c, 0, sizeof(*c));
	conf_ctx_init(&x, path, flags, errs);
	x.text = text;
	return conf_read_build(c, &x, path, NULL, text);
}

int conf_load_string_opts(struct conf *c, const char *text, const char *name, unsigned flags,
			  struct conf_errors *errs)
{
	struct conf_ctx x;
	config_t cfg;
	int rc;

	memset(c, 0, sizeof(*c));
	conf_ctx_init(&x, name ? name : "<string>", flags, errs);
	x.text = text;
	config_init(&cfg);
	if (!config_read_string(&cfg, text)) {
		conf_syntax_error(&x, &cfg);
		rc = -1;
	} else {
		rc = conf_build(&x, &cfg, c);
	}
	config_destroy(&cfg);
	return rc;
}

int conf_load_string(struct conf *c, const char *text, const char *name, struct conf_errors *errs)
{
	return conf_load_string_opts(c, text, name, 0, errs);
}

void conf_default(struct conf *c, const char *state_dir)
{
	struct conf_target *t;
	struct conf_lun *l;

	memset(c, 0, sizeof(*c));
	conf_set_defaults(c, state_dir);
	c->file = conf_xstrdup("<embedded>");
	conf_default_listen(c);
	c->targets = t = conf_xcalloc(1, sizeof(*t));
	c->n_targets = 1;
	t->iqn = conf_xstrdup(CONF_DEFAULT_IQN);
	t->luns = l = conf_xcalloc(1, sizeof(*l));
	t->n_luns = 1;
	l->lun = 0;
	l->backstore = conf_xstrdup("file");
	l->path = conf_xasprintf("%s/lun0.img", c->state_dir);
	l->size = 1ULL << 30;
	l->block_size = 512;
	l->thin = true;
}
