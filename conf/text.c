/*
 * Configuration texts: reading a file whole, the line a syntax error is
 * on, and freeing what parsing built (config.c parses and validates).
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"
#include "conf/config.h"

char *conf_read_file(const char *path, struct conf_errors *errs)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f, *m;
	int ch, e;

	if (errs) {
		errs->msgs = NULL;
		errs->n = 0;
	}
	f = fopen(path, "re");
	if (!f) {
		e = errno;
		if (errs)
			conf_errors_push(errs, conf_xasprintf("%s: cannot open: %s", path, strerror(e)));
		return NULL;
	}
	m = open_memstream(&text, &len);
	if (!m) {
		fclose(f);
		if (errs)
			conf_errors_push(errs, conf_xasprintf("%s: out of memory", path));
		return NULL;
	}
	while ((ch = getc(f)) != EOF)
		putc(ch, m);
	e = ferror(f) ? errno : 0;
	fclose(f);
	fclose(m);
	if (e) {
		free(text);
		if (errs)
			conf_errors_push(errs, conf_xasprintf("%s: cannot read: %s", path, strerror(e)));
		return NULL;
	}
	return text;
}

/* Line n of the text or file, trimmed and shortened, into out (for the
 * "near" of a syntax error). Empty when it cannot be read. */
void conf_source_line(const char *text, const char *path, int n, char *out, size_t cap)
{
	char buf[4096];
	size_t len = 0, o = 0;
	const char *p = NULL;

	out[0] = 0;
	if (text) {
		p = text;
		for (int i = 1; i < n && p; i++)
			if ((p = strchr(p, '\n')))
				p++;
		if (p) {
			len = strcspn(p, "\n");
			if (len >= sizeof(buf))
				len = sizeof(buf) - 1;
			memcpy(buf, p, len);
		}
	} else if (path) {
		FILE *f = fopen(path, "r");

		for (int i = 1; f && i <= n; i++) {
			if (!fgets(buf, sizeof(buf), f)) {
				buf[0] = 0;
				break;
			}
		}
		if (f)
			fclose(f);
		else
			buf[0] = 0;
		len = strcspn(buf, "\n");
	}
	buf[len] = 0;
	p = buf + strspn(buf, " \t");
	len = strlen(p);
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
		len--;
	for (size_t i = 0; i < len && o + 4 < cap; i++) {
		if (o >= 56 && len > 60) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		out[o++] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i];
	}
	out[o] = 0;
}

void conf_chap_free(struct conf_chap *ch)
{
	if (!ch)
		return;
	free(ch->user);
	free(ch->secret);
	free(ch->mutual_user);
	free(ch->mutual_secret);
	free(ch);
}

void conf_free(struct conf *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n_listen; i++) {
		free(c->listen[i].host);
		free(c->listen[i].port);
	}
	free(c->listen);
	for (unsigned i = 0; i < c->n_targets; i++) {
		struct conf_target *t = &c->targets[i];

		free(t->iqn);
		free(t->alias);
		for (unsigned j = 0; j < t->n_initiators; j++)
			free(t->initiators[j]);
		free(t->initiators);
		conf_chap_free(t->chap);
		for (unsigned j = 0; j < t->n_luns; j++) {
			struct conf_lun *l = &t->luns[j];

			free(l->backstore);
			free(l->path);
			free(l->serial);
			free(l->vendor);
			free(l->product);
			free(l->faults);
			free(l->snapshot_name);
			free(l->snapshot_time);
			free(l->rbd_pool);
			free(l->rbd_image);
			free(l->rbd_conf);
			free(l->rbd_client);
		}
		free(t->luns);
		free(t->faults);
	}
	free(c->targets);
	conf_chap_free(c->discovery_chap);
	free(c->file);
	free(c->state_dir);
	free(c->control_socket);
	free(c->metrics_listen);
	free(c->http_listen);
	free(c->portal_groups);
	memset(c, 0, sizeof(*c));
}
