/*
 * The values of targetd.conf(5) that have a syntax of their own: sizes,
 * portal addresses, iSCSI names, key names. No libconfig here: these are
 * plain string checks, shared by conf/config.c and usable on their own.
 */
#include <config.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"
#include "conf/config.h"
#include "common/iscsi_name.h"
#include "common/util.h"

/* ---- memory: a config that cannot be built is fatal ------------------ */

void *conf_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		abort();
	return p;
}

char *conf_xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		abort();
	return p;
}

char *conf_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		abort();
	va_end(ap);
	return p;
}

/* ---- sizes and addresses --------------------------------------------- */

int conf_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;

	if (!s || !isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	switch (*p) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: break;
	}
	if (shift) {
		p++;
		if (p[0] == 'i' && p[1] == 'B')
			p += 2;
		else if (p[0] == 'B')
			p++;
	} else if (p[0] == 'B') {
		p++;
	}
	if (*p)
		return -1;
	if (v > (UINT64_MAX >> shift))
		return -1;
	if (out)
		*out = v << shift;
	return 0;
}

int conf_split_listen(const char *s, char *host, size_t hostlen, unsigned *port,
			     bool *has_port, struct conf_addr *a)
{
	const char *h, *p = NULL;
	size_t hlen;
	int family;
	struct conf_addr tmp;

	if (!s || !*s)
		return -1;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close)
			return -1;
		h = s + 1;
		hlen = (size_t)(close - h);
		if (close[1] == ':')
			p = close + 2;
		else if (close[1] != '\0')
			return -1;
		family = AF_INET6;
	} else {
		const char *colon = strchr(s, ':');

		h = s;
		if (colon && strchr(colon + 1, ':')) {
			/* two colons or more: a bare IPv6 address, no port */
			hlen = strlen(s);
			family = AF_INET6;
		} else {
			hlen = colon ? (size_t)(colon - s) : strlen(s);
			if (colon)
				p = colon + 1;
			family = AF_INET;
		}
	}
	if (hlen == 0 || hlen >= hostlen)
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	memset(&tmp, 0, sizeof(tmp));
	tmp.family = family;
	if (inet_pton(family, host, tmp.addr) != 1)
		return -1;
	if (p) {
		unsigned long v = 0;
		size_t n = 0;

		for (; p[n]; n++) {
			if (!isdigit((unsigned char)p[n]) || n >= 5)
				return -1;
			v = v * 10 + (unsigned)(p[n] - '0');
		}
		if (n == 0 || v < 1 || v > 65535)
			return -1;
		tmp.port = (unsigned)v;
	} else {
		tmp.port = 3260;
	}
	*port = tmp.port;
	*has_port = p != NULL;
	if (a)
		*a = tmp;
	return 0;
}

int conf_parse_listen(const char *s, char **host, char **port)
{
	char h[INET6_ADDRSTRLEN];
	unsigned p;
	bool has_port;

	if (host)
		*host = NULL;
	if (port)
		*port = NULL;
	if (conf_split_listen(s, h, sizeof(h), &p, &has_port, NULL) < 0)
		return -1;
	if (host)
		*host = conf_xstrdup(h);
	if (port)
		*port = conf_xasprintf("%u", p);
	return 0;
}

int conf_apply_overrides(struct conf *c, const struct conf_overrides *o, char *err, size_t cap)
{
	if (o->n_listen) {
		struct conf_listen *l = conf_xcalloc(o->n_listen, sizeof(*l));

		for (unsigned i = 0; i < o->n_listen; i++) {
			if (conf_parse_listen(o->listen[i], &l[i].host, &l[i].port)) {
				char why[160];

				conf_listen_error(o->listen[i], why, sizeof(why));
				snprintf(err, cap, "--listen %s%s%s", o->listen[i],
					 why[0] == 'i' ? " " : ": ", why);
				for (unsigned k = 0; k < i; k++) {
					free(l[k].host);
					free(l[k].port);
				}
				free(l);
				return -1;
			}
			l[i].tpgt = 1;
		}
		for (unsigned i = 0; i < c->n_listen; i++) {
			free(c->listen[i].host);
			free(c->listen[i].port);
		}
		free(c->listen);
		c->listen = l;
		c->n_listen = o->n_listen;
	}
	if (o->state_dir) {
		free(c->state_dir);
		c->state_dir = conf_xstrdup(o->state_dir);
	}
	if (o->control_socket) {
		free(c->control_socket);
		c->control_socket = conf_xstrdup(o->control_socket);
	}
	return 0;
}

void conf_format_size(uint64_t bytes, char *buf, size_t cap)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && bytes && !(bytes % 1024)) {
		bytes /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, cap, "%llu", (unsigned long long)bytes);
	else
		snprintf(buf, cap, "%llu%c", (unsigned long long)bytes, units[u]);
}

/* What is wrong with a listen address, said so that the fix is plain
 * ("is not ..." or "numeric address expected: ..."; the caller puts the
 * address before it); NULL when it is good. */
const char *conf_listen_error(const char *s, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port;
	bool has_port;

	if (conf_split_listen(s, host, sizeof(host), &port, &has_port, NULL) == 0)
		return NULL;
	if (!s || !*s) {
		snprintf(buf, cap, "is empty: an address such as 127.0.0.1:3260 is expected");
		return buf;
	}
	if (s[0] != '[') {
		const char *c1 = strchr(s, ':');
		bool v6 = c1 && strchr(c1 + 1, ':');
		size_t hlen = c1 && !v6 ? (size_t)(c1 - s) : strlen(s);
		bool name = false;

		for (size_t i = 0; i < hlen && !v6; i++)
			name |= isalpha((unsigned char)s[i]) || s[i] == '_';
		if (name) {
			bool local = hlen == 9 && !strncmp(s, "localhost", 9);

			snprintf(buf, cap, "numeric address expected: %s:%s (host names such as "
				 "'%.*s' are not resolved; [::1]:PORT for IPv6)",
				 local ? "127.0.0.1" : "A.B.C.D", c1 && c1[1] ? c1 + 1 : "3260",
				 (int)hlen, s);
			return buf;
		}
	} else if (!strchr(s, ']')) {
		snprintf(buf, cap, "is not a numeric address: an IPv6 address in brackets needs the "
			 "closing ']': [::1]:3260");
		return buf;
	}
	snprintf(buf, cap, "is not a numeric address with an optional port 1 to 65535 "
		 "(1.2.3.4:3260, [::1]:3260)");
	return buf;
}

/* ---- names ----------------------------------------------------------- */

/* RFC 7143 4.2.7: the one validator (common/iscsi_name.c); the file must
 * hold the normalised (lower-case) form. */
const char *conf_iscsi_name_error(const char *n)
{
	return iscsi_name_error(n);
}

bool conf_is_text(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

bool conf_is_printable_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* ---- key names ------------------------------------------------------- */

unsigned conf_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[32], prev, tmp;

	if (la >= 32 || lb >= 32)
		return UINT_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1),
				     prev + (tolower((unsigned char)a[i - 1]) != b[j - 1]));
			prev = tmp;
		}
	}
	return row[lb];
}
