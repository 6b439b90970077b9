/*
 * The machinery of targetd.conf(5)'s parser (config.c holds the schema):
 * errors as "FILE:LINE: key: message", key names, and the walk of a group
 * through its table of keys (types, ranges, handlers, a suggestion for a
 * key that is not there).
 */
#include <config.h>

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

#include "conf/conf_int.h"
#include "conf/config.h"
#include "common/util.h"

/* ---- errors ---------------------------------------------------------- */

void conf_errors_push(struct conf_errors *e, char *msg)
{
	char **n = realloc(e->msgs, (e->n + 1) * sizeof(*n));

	if (!n)
		abort();
	e->msgs = n;
	e->msgs[e->n++] = msg;
}

/* The file a message is about: the caller's name for the main file (whose
 * settings libconfig leaves without a name, as it reads it from a stream),
 * the included file's name, completed with the directory libconfig found
 * it in, for settings that came from an @include. */
char *conf_file_name(const struct conf_ctx *x, const char *src)
{
	if (!src)
		return conf_xstrdup(x->name);
	if (src[0] != '/' && x->incdir)
		return conf_xasprintf("%s%s", x->incdir, src);
	return conf_xstrdup(src);
}

void conf_err(struct conf_ctx *x, const config_setting_t *s, const char *key,
		     const char *fmt, ...)
{
	unsigned line = s ? config_setting_source_line(s) : 0;
	char msg[1024], *file;
	va_list ap;

	x->n_err++;
	if (!x->errs)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	file = conf_file_name(x, s ? config_setting_source_file(s) : NULL);
	if (line)
		conf_errors_push(x->errs, conf_xasprintf("%s:%u: %s%s%s", file, line,
							  key ? key : "", key ? ": " : "", msg));
	else
		conf_errors_push(x->errs, conf_xasprintf("%s: %s%s%s", file,
							  key ? key : "", key ? ": " : "", msg));
	free(file);
}

void conf_errors_free(struct conf_errors *e)
{
	if (!e)
		return;
	for (unsigned i = 0; i < e->n; i++)
		free(e->msgs[i]);
	free(e->msgs);
	e->msgs = NULL;
	e->n = 0;
}

/* Key paths ("targets[0].luns[1].size") go into CONF_KEY_MAX buffers; a
 * path that long is cut short, which only shortens the message. */
void conf_keyf(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, CONF_KEY_MAX, fmt, ap);
	va_end(ap);
}

/* "prefix.name" or "name". */
void conf_key(char *buf, const char *prefix, const char *name)
{
	if (prefix && *prefix)
		conf_keyf(buf, "%s.%s", prefix, name);
	else
		conf_keyf(buf, "%s", name);
}

/* "prefix.name[i]" or "name[i]". */
void conf_key_idx(char *buf, const char *prefix, const char *name, unsigned i)
{
	if (prefix && *prefix)
		conf_keyf(buf, "%s.%s[%u]", prefix, name, i);
	else
		conf_keyf(buf, "%s[%u]", name, i);
}


bool conf_is_int(const config_setting_t *s)
{
	int t = config_setting_type(s);

	return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
}

bool conf_get_string(struct conf_ctx *x, const config_setting_t *s, const char *key,
			    const char **out)
{
	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		conf_err(x, s, key, "must be a string");
		return false;
	}
	*out = config_setting_get_string(s);
	if (!**out) {
		conf_err(x, s, key, "must not be empty");
		return false;
	}
	return true;
}

bool conf_get_uint(struct conf_ctx *x, const config_setting_t *s, const char *key,
			  long long min, long long max, unsigned *out)
{
	long long v;

	if (!conf_is_int(s)) {
		conf_err(x, s, key, "must be an integer");
		return false;
	}
	v = config_setting_get_int64(s);
	if (v < min || v > max) {
		conf_err(x, s, key, "%lld is out of range (%lld to %lld)", v, min, max);
		return false;
	}
	*out = (unsigned)v;
	return true;
}

/* A byte count: an integer, or a string with a K/M/G/T suffix. */
bool conf_get_bytes(struct conf_ctx *x, const config_setting_t *s, const char *key,
			   long long min, long long max, uint64_t *out)
{
	uint64_t v;

	if (conf_is_int(s)) {
		long long i = config_setting_get_int64(s);
		if (i < 0) {
			conf_err(x, s, key, "must not be negative");
			return false;
		}
		v = (uint64_t)i;
	} else if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		if (conf_parse_size(config_setting_get_string(s), &v) < 0) {
			conf_err(x, s, key, "\"%s\" is not a size (bytes, or a number with K, M, G or T)",
				 config_setting_get_string(s));
			return false;
		}
	} else {
		conf_err(x, s, key, "must be a size: bytes, or a string such as \"64M\"");
		return false;
	}
	if (v < (uint64_t)min || v > (uint64_t)max) {
		conf_err(x, s, key, "%llu bytes is out of range (%lld to %lld)", (unsigned long long)v, min, max);
		return false;
	}
	*out = v;
	return true;
}

void conf_set_field(struct conf_ctx *x, const config_setting_t *s, const char *key,
			   const struct conf_field *f, void *obj)
{
	char *base = obj;
	const char *str;

	switch (f->kind) {
	case CONF_K_UINT:
		conf_get_uint(x, s, key, f->min, f->max, (unsigned *)(void *)(base + f->off));
		break;
	case CONF_K_BOOL:
		if (config_setting_type(s) != CONFIG_TYPE_BOOL)
			conf_err(x, s, key, "must be true or false");
		else
			*(bool *)(void *)(base + f->off) = config_setting_get_bool(s);
		break;
	case CONF_K_STR:
		if (conf_get_string(x, s, key, &str))
			*(char **)(void *)(base + f->off) = conf_xstrdup(str);
		break;
	case CONF_K_ASCII:
		if (!conf_get_string(x, s, key, &str))
			break;
		if (strlen(str) > (size_t)f->max)
			conf_err(x, s, key, "longer than %lld characters", f->max);
		else if (!conf_is_printable_ascii(str))
			conf_err(x, s, key, "must be printable ASCII");
		else
			*(char **)(void *)(base + f->off) = conf_xstrdup(str);
		break;
	case CONF_K_FUNC:
		f->fn(x, s, key, obj);
		break;
	case CONF_K_SIZE:
		conf_get_bytes(x, s, key, f->min, f->max, (uint64_t *)(void *)(base + f->off));
		break;
	}
}

/* The known key an unknown one was probably meant to be, or NULL. */
const char *conf_suggest(const char *name, const struct conf_field *fields, size_t n)
{
	const char *best = NULL;
	unsigned best_d = UINT_MAX;
	size_t len = strlen(name);

	for (size_t i = 0; i < n; i++) {
		unsigned d = conf_distance(name, fields[i].name);

		if (d < best_d) {
			best_d = d;
			best = fields[i].name;
		}
	}
	/* one slip in any name, two in a longer one */
	if (best_d <= 1 || (best_d == 2 && len >= 6))
		return best;
	return NULL;
}

/* Walk a group in file order: unknown keys are errors, known ones go
 * through their table entry. */
void conf_walk(struct conf_ctx *x, const config_setting_t *grp, const char *prefix,
		      const struct conf_field *fields, size_t n_fields, void *obj)
{
	int n = config_setting_length(grp);

	for (int i = 0; i < n; i++) {
		const config_setting_t *m = config_setting_get_elem(grp, (unsigned)i);
		const char *name = config_setting_name(m);
		char key[CONF_KEY_MAX];
		size_t j;

		conf_key(key, prefix, name ? name : "?");
		for (j = 0; j < n_fields; j++)
			if (name && !strcmp(name, fields[j].name))
				break;
		if (j == n_fields) {
			const char *hint = name ? conf_suggest(name, fields, n_fields) : NULL;

			if (hint)
				conf_err(x, m, key, "unknown key (did you mean %s?)", hint);
			else
				conf_err(x, m, key, "unknown key");
			continue;
		}
		conf_set_field(x, m, key, &fields[j], obj);
	}
}

bool conf_is_group(const config_setting_t *s)
{
	return config_setting_type(s) == CONFIG_TYPE_GROUP;
}

bool conf_is_seq(const config_setting_t *s)
{
	int t = config_setting_type(s);

	return t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST;
}

