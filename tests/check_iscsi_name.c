/*
 * Check suite for common/iscsi_name.c: the iSCSI name validator (RFC 7143
 * 4.2.7, RFC 3722) and its normalisation, table-driven, and the printable
 * copy used in log lines.
 */
#include "config.h"
#include <string.h>
#include "tests/check_suites.h"
#include "common/iscsi_name.h"
#include "common/util.h"

static const struct name_case {
	const char *in;
	const char *norm;       /* normalised form, NULL: refused */
	const char *why;        /* part of the reason when refused */
} name_cases[] = {
	/* iqn. (4.2.7.4) */
	{ "iqn.2001-04.com.example", "iqn.2001-04.com.example", NULL },
	{ "iqn.2001-04.com.example:storage:diskarrays-sn-a8675309",
	  "iqn.2001-04.com.example:storage:diskarrays-sn-a8675309", NULL },
	{ "iqn.2001-04.com.example:storage.tape1.sys1.xyz", "iqn.2001-04.com.example:storage.tape1.sys1.xyz", NULL },
	{ "iqn.1991-05.com.microsoft:WIN-HOST.Example.COM", "iqn.1991-05.com.microsoft:win-host.example.com", NULL },
	{ "IQN.1998-01.COM.VMWARE:ESX01-6A7B", "iqn.1998-01.com.vmware:esx01-6a7b", NULL },
	{ "iqn.2026-11.org.example:", "iqn.2026-11.org.example:", NULL },
	{ "iqn.2026-11.1example", "iqn.2026-11.1example", NULL },
	{ "iqn.2026-13.org.example", NULL, "month" },
	{ "iqn.2026-00.org.example", NULL, "month" },
	{ "iqn.26-11.org.example", NULL, "iqn.YYYY-MM" },
	{ "iqn.2026-1.org.example", NULL, "iqn.YYYY-MM" },
	{ "iqn.2026-11", NULL, "iqn.YYYY-MM" },
	{ "iqn.2026-11.", NULL, "naming authority" },
	{ "iqn.2026-11..example", NULL, "naming authority" },
	{ "iqn.2026-11.-example", NULL, "naming authority" },
	{ "iqn.2026-11.org.example:a b", NULL, "may contain only" },
	{ "iqn.2026-11.org.example:a_b", NULL, "may contain only" },
	{ "iqn.2026-11.org.example:a/b", NULL, "may contain only" },
	{ "iqn.2026-11.org.example:a\nb", NULL, "may contain only" },
	{ "iqn.2026-11.org.example:a\tb", NULL, "may contain only" },
	{ "iqn.2026-11.org.example:a\x7f", NULL, "may contain only" },
	{ "iqn.2026-11.org.example:caf\xc3\xa9", NULL, "may contain only" },
	{ "iqn.2026-11.org.example:\xff", NULL, "may contain only" },
	{ "iqn.2026-11.org.example:a,i,0x1", NULL, "may contain only" },
	/* eui. (4.2.7.5) */
	{ "eui.02004567A425678D", "eui.02004567a425678d", NULL },
	{ "eui.0123456789abcdef", "eui.0123456789abcdef", NULL },
	{ "eui.0123456789abcde", NULL, "16 hex digits" },
	{ "eui.0123456789abcdef0", NULL, "16 hex digits" },
	{ "eui.0123456789abcdeg", NULL, "16 hex digits" },
	/* naa. (4.2.7.6) */
	{ "naa.52004567BA64678D", "naa.52004567ba64678d", NULL },
	{ "naa.62004567BA64678D0123456789ABCDEF", "naa.62004567ba64678d0123456789abcdef", NULL },
	{ "naa.62004567ba64678d0123", NULL, "16 or 32 hex digits" },
	/* neither */
	{ "", NULL, "empty" },
	{ "disk1", NULL, "must start with" },
	{ "iqn", NULL, "must start with" },
	{ "iq.2026-11.org.example", NULL, "must start with" },
	{ "foo.2026-11.org.example", NULL, "must start with" },
};

START_TEST(test_normalize)
{
	const struct name_case *nc = &name_cases[_i];
	char out[ISCSI_NAME_MAX + 1];
	const char *why = iscsi_name_normalize(nc->in, out);

	if (nc->norm) {
		ck_assert_msg(!why, "\"%s\" refused: %s", nc->in, why);
		ck_assert_str_eq(out, nc->norm);
		/* the normalised form is valid as it is, and stable */
		ck_assert_ptr_null(iscsi_name_error(out));
	} else {
		ck_assert_msg(why && strstr(why, nc->why), "\"%s\": got \"%s\", want \"%s\"", nc->in,
			      why ? why : "(accepted)", nc->why);
	}
}
END_TEST

/* iscsi_name_error takes only the normalised form. */
START_TEST(test_strict_lower_case)
{
	ck_assert_ptr_nonnull(strstr(iscsi_name_error("iqn.2026-11.org.Example:t"), "lower-case"));
	ck_assert_ptr_nonnull(strstr(iscsi_name_error("eui.02004567A425678D"), "lower-case"));
	ck_assert_ptr_null(iscsi_name_error("iqn.2026-11.org.example:t"));
}
END_TEST

/* 223 bytes at most (4.2.7.1), before and after normalisation. */
START_TEST(test_length)
{
	char name[300], out[ISCSI_NAME_MAX + 1];
	size_t pre = strlen("iqn.2026-11.org.example:");

	memcpy(name, "iqn.2026-11.org.example:", pre);
	memset(name + pre, 'A', ISCSI_NAME_MAX - pre);
	name[ISCSI_NAME_MAX] = '\0';
	ck_assert_ptr_null(iscsi_name_normalize(name, out));
	ck_assert_uint_eq(strlen(out), ISCSI_NAME_MAX);
	name[ISCSI_NAME_MAX] = 'a';
	name[ISCSI_NAME_MAX + 1] = '\0';
	ck_assert_ptr_nonnull(strstr(iscsi_name_normalize(name, out), "223"));
	ck_assert_ptr_nonnull(strstr(iscsi_name_error(name), "223"));
}
END_TEST

START_TEST(test_printable)
{
	char out[32];

	iscsi_name_printable("iqn.a b", out, sizeof(out));
	ck_assert_str_eq(out, "iqn.a b");
	iscsi_name_printable("a\nb\\c\x7f\xff", out, sizeof(out));
	ck_assert_str_eq(out, "a\\x0ab\\x5cc\\x7f\\xff");
	iscsi_name_printable("0123456789012345678901234567890123456789", out, 16);
	ck_assert_str_eq(out, "012345678901...");
	ck_assert_uint_lt(strlen(out), 16);
	iscsi_name_printable("\n\n\n\n\n\n\n\n", out, 10);
	ck_assert_str_eq(out, "\\x0a...");
	iscsi_name_printable("abc", out, 3);
	ck_assert_str_eq(out, "");
}
END_TEST

Suite *iscsi_name_suite(void)
{
	Suite *s = suite_create("iscsi_name");
	TCase *tc = tcase_create("iscsi_name");

	tcase_add_loop_test(tc, test_normalize, 0, (int)ARRAY_SIZE(name_cases));
	tcase_add_test(tc, test_strict_lower_case);
	tcase_add_test(tc, test_length);
	tcase_add_test(tc, test_printable);
	suite_add_tcase(s, tc);
	return s;
}
