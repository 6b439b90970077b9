/* conf/ internals shared by config.c (the file) and values.c (its values). */
#ifndef CONF_CONF_INT_H
#define CONF_CONF_INT_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
