/*
 * Editing a configuration as a libconfig document: what `targetctl target
 * add`, `lun add`, ... change in the running configuration before it is
 * validated (conf_load_text) and written back. The edits know the shape
 * of the file (targets, luns, initiators, chap, listen) and nothing about
 * what is valid: validation stays in config.c, so a change made at runtime
 * passes exactly the checks of the file.
 *
 * libconfig writes the document back without the comments of the
 * original text (it does not keep them).
 */
#include <config.h>

#include <errno.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf_int.h"
#include "conf/config.h"

struct conf_doc {
	config_t cfg;
};

static int edit_err(char *err, size_t cap, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int edit_err(char *err, size_t cap, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
	return code;
}

struct conf_doc *conf_doc_parse(const char *text, const char *name, char *err, size_t cap)
{
	struct conf_doc *d = conf_xcalloc(1, sizeof(*d));

	config_init(&d->cfg);
	if (!config_read_string(&d->cfg, text)) {
		snprintf(err, cap, "%s:%d: syntax error: %s", name, config_error_line(&d->cfg),
			 config_error_text(&d->cfg));
		config_destroy(&d->cfg);
		free(d);
		return NULL;
	}
	return d;
}

void conf_doc_free(struct conf_doc *d)
{
	if (!d)
		return;
	config_destroy(&d->cfg);
	free(d);
}

char *conf_doc_text(struct conf_doc *d)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return NULL;
	config_write(&d->cfg, m);
	if (fclose(m)) {
		free(text);
		return NULL;
	}
	return text;
}

/* ---- finding things ------------------------------------------------------ */

static config_setting_t *doc_targets(struct conf_doc *d, bool create)
{
	config_setting_t *root = config_root_setting(&d->cfg);
	config_setting_t *t = config_setting_get_member(root, "targets");

	if (!t && create)
		t = config_setting_add(root, "targets", CONFIG_TYPE_LIST);
	return t && config_setting_type(t) == CONFIG_TYPE_LIST ? t : NULL;
}

static const char *group_str(const config_setting_t *g, const char *key)
{
	const config_setting_t *s = config_setting_get_member(g, key);

	return s && config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
}

/* The target group named iqn (case-blind), its index in *idx. */
static config_setting_t *doc_target(struct conf_doc *d, const char *iqn, int *idx)
{
	config_setting_t *ts = doc_targets(d, false);

	for (int i = 0; ts && i < config_setting_length(ts); i++) {
		config_setting_t *g = config_setting_get_elem(ts, (unsigned)i);
		const char *n = config_setting_is_group(g) ? group_str(g, "iqn") : NULL;

		if (n && !strcasecmp(n, iqn)) {
			if (idx)
				*idx = i;
			return g;
		}
	}
	return NULL;
}

static config_setting_t *doc_lun(config_setting_t *tg, unsigned lun, int *idx)
{
	config_setting_t *ls = config_setting_get_member(tg, "luns");

	for (int i = 0; ls && i < config_setting_length(ls); i++) {
		config_setting_t *g = config_setting_get_elem(ls, (unsigned)i);
		config_setting_t *n = config_setting_is_group(g) ? config_setting_get_member(g, "lun")
								  : NULL;

		if (n && config_setting_is_number(n) && config_setting_get_int64(n) == (long long)lun) {
			if (idx)
				*idx = i;
			return g;
		}
	}
	return NULL;
}

#define NEED_TARGET(tg, d, iqn)                                                                   \
	do {                                                                                      \
		if (!((tg) = doc_target((d), (iqn), NULL)))                                       \
			return edit_err(err, cap, CONF_EDIT_NOT_FOUND, "no target %s", (iqn));    \
	} while (0)

/* Set (replace) a member of a group. */
static int set_str(config_setting_t *g, const char *key, const char *v)
{
	config_setting_t *s = config_setting_get_member(g, key);

	if (s && config_setting_type(s) != CONFIG_TYPE_STRING) {
		config_setting_remove(g, key);
		s = NULL;
	}
	if (!s)
		s = config_setting_add(g, key, CONFIG_TYPE_STRING);
	return s && config_setting_set_string(s, v) ? 0 : -1;
}

static int set_int(config_setting_t *g, const char *key, long long v)
{
	config_setting_t *s = config_setting_get_member(g, key);

	if (s)
		config_setting_remove(g, key);
	s = config_setting_add(g, key, v > 0x7fffffff ? CONFIG_TYPE_INT64 : CONFIG_TYPE_INT);
	if (!s)
		return -1;
	return (v > 0x7fffffff ? config_setting_set_int64(s, v) : config_setting_set_int(s, (int)v))
		       ? 0 : -1;
}

static int set_bool(config_setting_t *g, const char *key, bool v)
{
	config_setting_t *s = config_setting_get_member(g, key);

	if (s)
		config_setting_remove(g, key);
	s = config_setting_add(g, key, CONFIG_TYPE_BOOL);
	return s && config_setting_set_bool(s, v) ? 0 : -1;
}

/* ---- targets ----------------------------------------------------------------- */

int conf_doc_target_add(struct conf_doc *d, const char *iqn, const char *alias, char *err,
			size_t cap)
{
	config_setting_t *ts, *g;

	if (doc_target(d, iqn, NULL))
		return edit_err(err, cap, CONF_EDIT_EXISTS, "target %s exists already", iqn);
	ts = doc_targets(d, true);
	if (!ts)
		return edit_err(err, cap, CONF_EDIT_BAD, "targets is not a list in the configuration");
	g = config_setting_add(ts, NULL, CONFIG_TYPE_GROUP);
	if (!g || set_str(g, "iqn", iqn) || (alias && set_str(g, "alias", alias)) ||
	    !config_setting_add(g, "luns", CONFIG_TYPE_LIST))
		return edit_err(err, cap, CONF_EDIT_BAD, "out of memory");
	return 0;
}

int conf_doc_target_remove(struct conf_doc *d, const char *iqn, char *err, size_t cap)
{
	int idx;

	if (!doc_target(d, iqn, &idx))
		return edit_err(err, cap, CONF_EDIT_NOT_FOUND, "no target %s", iqn);
	config_setting_remove_elem(doc_targets(d, false), (unsigned)idx);
	return 0;
}

/* ---- LUNs ---------------------------------------------------------------------- */

int conf_doc_lun_add(struct conf_doc *d, const char *iqn, const struct conf_lun_spec *l,
		     char *err, size_t cap)
{
	config_setting_t *tg, *ls, *g;
	int rc = 0;

	NEED_TARGET(tg, d, iqn);
	if (doc_lun(tg, l->lun, NULL))
		return edit_err(err, cap, CONF_EDIT_EXISTS, "target %s has a LUN %u already", iqn,
				l->lun);
	ls = config_setting_get_member(tg, "luns");
	if (!ls)
		ls = config_setting_add(tg, "luns", CONFIG_TYPE_LIST);
	if (!ls || config_setting_type(ls) != CONFIG_TYPE_LIST)
		return edit_err(err, cap, CONF_EDIT_BAD, "target %s: luns is not a list", iqn);
	g = config_setting_add(ls, NULL, CONFIG_TYPE_GROUP);
	if (!g)
		return edit_err(err, cap, CONF_EDIT_BAD, "out of memory");
	rc |= set_int(g, "lun", l->lun);
	rc |= set_str(g, "backstore", l->backstore);
	if (l->path)
		rc |= set_str(g, "path", l->path);
	if (l->size)
		rc |= set_str(g, "size", l->size);
	if (l->block_size)
		rc |= set_int(g, "block_size", l->block_size);
	if (l->thin >= 0)
		rc |= set_bool(g, "thin", l->thin);
	if (l->read_only >= 0)
		rc |= set_bool(g, "read_only", l->read_only);
	if (l->removable >= 0)
		rc |= set_bool(g, "removable", l->removable);
	if (l->direct >= 0)
		rc |= set_bool(g, "direct", l->direct);
	if (l->serial)
		rc |= set_str(g, "serial", l->serial);
	if (l->vendor)
		rc |= set_str(g, "vendor", l->vendor);
	if (l->product)
		rc |= set_str(g, "product", l->product);
	if (l->snapshot_name) {
		rc |= set_int(g, "snapshot_of", l->snapshot_of);
		rc |= set_str(g, "snapshot_name", l->snapshot_name);
		if (l->snapshot_time)
			rc |= set_str(g, "snapshot_time", l->snapshot_time);
	}
	if (l->pool)
		rc |= set_str(g, "pool", l->pool);
	if (l->image)
		rc |= set_str(g, "image", l->image);
	if (l->ceph_conf)
		rc |= set_str(g, "conf", l->ceph_conf);
	if (l->client)
		rc |= set_str(g, "client", l->client);
	return rc ? edit_err(err, cap, CONF_EDIT_BAD, "out of memory") : 0;
}

int conf_doc_lun_remove(struct conf_doc *d, const char *iqn, unsigned lun, char *err, size_t cap)
{
	config_setting_t *tg;
	int idx;

	NEED_TARGET(tg, d, iqn);
	if (!doc_lun(tg, lun, &idx))
		return edit_err(err, cap, CONF_EDIT_NOT_FOUND, "target %s has no LUN %u", iqn, lun);
	config_setting_remove_elem(config_setting_get_member(tg, "luns"), (unsigned)idx);
	return 0;
}

int conf_doc_lun_set(struct conf_doc *d, const char *iqn, unsigned lun, const char *key,
		     const char *str, int boolean, char *err, size_t cap)
{
	config_setting_t *tg, *g;
	int rc;

	NEED_TARGET(tg, d, iqn);
	g = doc_lun(tg, lun, NULL);
	if (!g)
		return edit_err(err, cap, CONF_EDIT_NOT_FOUND, "target %s has no LUN %u", iqn, lun);
	if (str)
		rc = set_str(g, key, str);
	else if (boolean == 0 && config_setting_get_member(g, key))
		rc = config_setting_remove(g, key) == CONFIG_TRUE ? 0 : -1;   /* back to the default */
	else if (boolean == 0)
		rc = 0;
	else
		rc = set_bool(g, key, true);
	return rc ? edit_err(err, cap, CONF_EDIT_BAD, "out of memory") : 0;
}

/* ---- ACL and CHAP ----------------------------------------------------------------- */

int conf_doc_acl(struct conf_doc *d, const char *iqn, const char *initiator, bool add, char *err,
		 size_t cap)
{
	config_setting_t *tg, *a;
	int found = -1;

	NEED_TARGET(tg, d, iqn);
	a = config_setting_get_member(tg, "initiators");
	if (a && !config_setting_is_aggregate(a))
		return edit_err(err, cap, CONF_EDIT_BAD, "target %s: initiators is not a list", iqn);
	for (int i = 0; a && i < config_setting_length(a); i++) {
		const char *n = config_setting_get_string_elem(a, (unsigned)i);

		if (n && !strcasecmp(n, initiator))
			found = i;
	}
	if (add) {
		if (found >= 0)
			return edit_err(err, cap, CONF_EDIT_EXISTS, "%s is on the allow-list of %s already",
					initiator, iqn);
		if (!a)
			a = config_setting_add(tg, "initiators", CONFIG_TYPE_ARRAY);
		if (!a || !config_setting_set_string_elem(a, -1, initiator))
			return edit_err(err, cap, CONF_EDIT_BAD, "out of memory");
		return 0;
	}
	if (found < 0)
		return edit_err(err, cap, CONF_EDIT_NOT_FOUND, "%s is not on the allow-list of %s",
				initiator, iqn);
	config_setting_remove_elem(a, (unsigned)found);
	/* the list stays, even empty: an empty list lets nobody in, which is
	 * what removing the last initiator means */
	return 0;
}

int conf_doc_chap(struct conf_doc *d, const char *iqn, const struct conf_chap *c, char *err,
		  size_t cap)
{
	config_setting_t *tg, *g;
	int rc = 0;

	NEED_TARGET(tg, d, iqn);
	if (config_setting_get_member(tg, "chap"))
		config_setting_remove(tg, "chap");
	if (!c)
		return 0;   /* CHAP off */
	g = config_setting_add(tg, "chap", CONFIG_TYPE_GROUP);
	if (!g)
		return edit_err(err, cap, CONF_EDIT_BAD, "out of memory");
	if (c->user)
		rc |= set_str(g, "user", c->user);
	if (c->secret)
		rc |= set_str(g, "secret", c->secret);
	if (c->mutual_user)
		rc |= set_str(g, "mutual_user", c->mutual_user);
	if (c->mutual_secret)
		rc |= set_str(g, "mutual_secret", c->mutual_secret);
	return rc ? edit_err(err, cap, CONF_EDIT_BAD, "out of memory") : 0;
}

/* ---- portals ------------------------------------------------------------------------ */

/* The address of one element of listen: a string, or a group's address. */
static const char *listen_addr(const config_setting_t *e, unsigned *tpgt)
{
	const config_setting_t *t;

	*tpgt = 1;
	if (config_setting_type(e) == CONFIG_TYPE_STRING)
		return config_setting_get_string(e);
	if (!config_setting_is_group(e))
		return NULL;
	t = config_setting_get_member(e, "tpgt");
	if (t && config_setting_is_number(t))
		*tpgt = (unsigned)config_setting_get_int(t);
	return group_str(e, "address");
}

/* Are two addresses the same portal (3260 when none is written)? */
static bool same_portal(const char *a, const char *b)
{
	char ha[64], hb[64];
	unsigned pa, pb;
	bool xa, xb;
	struct conf_addr aa, ab;

	if (conf_split_listen(a, ha, sizeof(ha), &pa, &xa, &aa) ||
	    conf_split_listen(b, hb, sizeof(hb), &pb, &xb, &ab))
		return !strcmp(a, b);
	return !memcmp(&aa, &ab, sizeof(aa));
}

int conf_doc_portal(struct conf_doc *d, const char *addr, unsigned tpgt, bool add, char *err,
		    size_t cap)
{
	config_setting_t *root = config_root_setting(&d->cfg);
	config_setting_t *l = config_setting_get_member(root, "listen");
	int found = -1;

	if (l && !config_setting_is_aggregate(l))
		return edit_err(err, cap, CONF_EDIT_BAD, "listen is not a list in the configuration");
	if (!l) {
		/* no listen key: the default portal is the one in use */
		l = config_setting_add(root, "listen", CONFIG_TYPE_LIST);
		if (!l || !config_setting_set_string_elem(l, -1, "127.0.0.1:" CONF_DEFAULT_PORT))
			return edit_err(err, cap, CONF_EDIT_BAD, "out of memory");
	}
	for (int i = 0; i < config_setting_length(l); i++) {
		unsigned t;
		const char *a = listen_addr(config_setting_get_elem(l, (unsigned)i), &t);

		if (a && same_portal(a, addr))
			found = i;
	}
	if (!add) {
		if (found < 0)
			return edit_err(err, cap, CONF_EDIT_NOT_FOUND, "no portal %s", addr);
		config_setting_remove_elem(l, (unsigned)found);
		return 0;
	}
	if (found >= 0)
		return edit_err(err, cap, CONF_EDIT_EXISTS, "portal %s exists already", addr);
	if (config_setting_type(l) == CONFIG_TYPE_ARRAY && tpgt != 1) {
		/* an array holds strings only: make it a list of the same strings */
		config_setting_t *nl;
		int n = config_setting_length(l);
		char **keep = conf_xcalloc((size_t)n + 1, sizeof(*keep));

		for (int i = 0; i < n; i++)
			keep[i] = conf_xstrdup(config_setting_get_string_elem(l, (unsigned)i));
		config_setting_remove(root, "listen");
		nl = config_setting_add(root, "listen", CONFIG_TYPE_LIST);
		for (int i = 0; i < n; i++) {
			if (nl)
				config_setting_set_string_elem(nl, -1, keep[i]);
			free(keep[i]);
		}
		free(keep);
		l = nl;
		if (!l)
			return edit_err(err, cap, CONF_EDIT_BAD, "out of memory");
	}
	if (tpgt == 1) {
		if (!config_setting_set_string_elem(l, -1, addr))
			return edit_err(err, cap, CONF_EDIT_BAD, "out of memory");
	} else {
		config_setting_t *g = config_setting_add(l, NULL, CONFIG_TYPE_GROUP);

		if (!g || set_str(g, "address", addr) || set_int(g, "tpgt", tpgt))
			return edit_err(err, cap, CONF_EDIT_BAD, "out of memory");
	}
	return 0;
}
