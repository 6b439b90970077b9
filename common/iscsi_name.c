/* iSCSI names: validation and normalisation (see iscsi_name.h). */
#include "config.h"
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "common/iscsi_name.h"

static bool name_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool name_digit(char c) { return c >= '0' && c <= '9'; }

static bool name_all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!name_digit(s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	return s[n] == '\0';
}

/* RFC 7143 4.2.7.4: iqn.YYYY-MM.naming-authority[:unique]; p is past "iqn.". */
static const char *name_iqn_error(const char *p)
{
	int month;

	for (int i = 0; i < 4; i++)
		if (!name_digit(p[i]))
			return "an iqn. name is iqn.YYYY-MM.reversed.domain[:unique]";
	if (p[4] != '-' || !name_digit(p[5]) || !name_digit(p[6]) || p[7] != '.')
		return "an iqn. name is iqn.YYYY-MM.reversed.domain[:unique]";
	month = (p[5] - '0') * 10 + (p[6] - '0');
	if (month < 1 || month > 12)
		return "the month in an iqn. name must be 01 to 12";
	if (!name_lower(p[8]) && !name_digit(p[8]))
		return "an iqn. name needs a naming authority after the date";
	return NULL;
}

const char *iscsi_name_error(const char *n)
{
	size_t len = strlen(n);

	if (len == 0)
		return "must not be empty";
	if (len > ISCSI_NAME_MAX)
		return "longer than 223 bytes";
	for (const char *p = n; *p; p++) {
		if (*p >= 'A' && *p <= 'Z')
			return "must be lower-case";
		if (!name_lower(*p) && !name_digit(*p) && *p != '.' && *p != '-' && *p != ':')
			return "may contain only a-z, 0-9, '.', '-' and ':'";
	}
	if (!strncmp(n, "iqn.", 4))
		return name_iqn_error(n + 4);
	if (!strncmp(n, "eui.", 4))
		return name_all_hex(n + 4, 16) ? NULL : "an eui. name is eui. followed by 16 hex digits";
	if (!strncmp(n, "naa.", 4))
		return name_all_hex(n + 4, 16) || name_all_hex(n + 4, 32) ? NULL
			: "a naa. name is naa. followed by 16 or 32 hex digits";
	return "must start with iqn., eui. or naa.";
}

const char *iscsi_name_normalize(const char *name, char out[ISCSI_NAME_MAX + 1])
{
	size_t i;

	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i == ISCSI_NAME_MAX)
			return "longer than 223 bytes";
		out[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	out[i] = '\0';
	return iscsi_name_error(out);
}

void iscsi_name_printable(const char *in, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (outlen < 4) {
		if (outlen)
			out[0] = '\0';
		return;
	}
	/* o + 4 <= outlen throughout: there is always room for "..." */
	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;
		bool plain = c >= 0x20 && c < 0x7f && c != '\\';

		if (o + (plain ? 1 : 4) + 4 > outlen) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}
