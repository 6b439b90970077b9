/*
 * targetd.conf(5): the keys of a Ceph RBD LUN (pool, image, conf, client)
 * and their checks; conf/config.c calls these from its LUN table.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf_int.h"
#include "conf/config.h"
#include "common/util.h"

const char *conf_rbd_name_error(const char *v, bool image, bool client)
{
	if (strlen(v) > 128)
		return "longer than 128 characters";
	if (!conf_is_printable_ascii(v) || strchr(v, ' '))
		return "must be printable ASCII without spaces";
	if (client) {
		for (const char *p = v; *p; p++)
			if (!isalnum((unsigned char)*p) && !strchr("_-.", *p))
				return "may hold only letters, digits, '_', '-' and '.' (\"admin\" is client.admin)";
		if (!strncmp(v, "client.", 7))
			return "is the id without \"client.\" (\"admin\", not \"client.admin\")";
	}
	if (image && (strchr(v, '/') || strchr(v, '@')))
		return "must not contain '/' or '@' (give the pool in pool)";
	if (!image && strchr(v, '/'))
		return "must not contain '/'";
	return NULL;
}

/* pool, image, client: Ceph names for the rbd backstore */
void conf_lun_rbd_name(struct conf_ctx *x, const config_setting_t *s, const char *key,
			      void *obj)
{
	struct conf_lun *l = obj;
	const char *name = config_setting_name(s), *v, *why;
	char **dst = !strcmp(name, "pool") ? &l->rbd_pool
		     : !strcmp(name, "image") ? &l->rbd_image : &l->rbd_client;

	if (!conf_get_string(x, s, key, &v))
		return;
	why = conf_rbd_name_error(v, dst == &l->rbd_image, dst == &l->rbd_client);
	if (why)
		conf_err(x, s, key, "\"%s\" %s", v, why);
	else
		*dst = conf_xstrdup(v);
}

/* The rbd keys: pool and image for an rbd LUN, none of them elsewhere.
 * True for an rbd LUN. */
bool conf_lun_check_rbd(struct conf_ctx *x, const config_setting_t *g, const char *prefix,
			       struct conf_lun *l)
{
	static const char *const keys[] = { "pool", "image", "conf", "client" };
	bool rbd = !strcmp(l->backstore, "rbd");
	const config_setting_t *s;
	char key[CONF_KEY_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		conf_key(key, prefix, keys[i]);
		s = config_setting_get_member(g, keys[i]);
		if (!rbd && s)
			conf_err(x, s, key, "only for backstore = \"rbd\"");
		else if (rbd && !s && i < 2)
			conf_err(x, g, key, "required for an rbd backstore (the %s)",
				 i ? "image's name" : "RADOS pool");
	}
	if (!rbd)
		return false;
	if ((s = config_setting_get_member(g, "path")) || (s = config_setting_get_member(g, "direct"))) {
		conf_key(key, prefix, config_setting_name(s));
		conf_err(x, s, key, "not applicable to an rbd backstore (pool and image name it)");
	}
	if ((s = config_setting_get_member(g, "hard_limit")) ||
	    (s = config_setting_get_member(g, "soft_threshold"))) {
		conf_key(key, prefix, config_setting_name(s));
		conf_err(x, s, key, "not applicable to an rbd backstore (the space an image holds "
			 "is the cluster's to account: set quotas on the pool)");
	}
	s = config_setting_get_member(g, "conf");
	conf_key(key, prefix, "conf");
	if (l->rbd_conf && !(x->flags & CONF_NO_PATH_CHECKS) && access(l->rbd_conf, R_OK) < 0)
		conf_err(x, s, key, "%s: %s (the Ceph configuration file)", l->rbd_conf,
			 strerror(errno));
	return true;
}
