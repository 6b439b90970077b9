/*
 * CHAP-MD5 and the binary encodings of iSCSI text values.
 *
 * Known answers: the MD5 test suite of RFC 1321 appendix A.5, and CHAP
 * responses computed independently of this code with the OpenSSL command
 * line tool, e.g.
 *   printf '\x2aTargetSecret12\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f' \
 *     | openssl md5
 * (identifier 0x2a, then the secret, then the challenge, RFC 1994 4.1).
 */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>
#include "targetd/chap.h"
#include "tests/check_suites.h"

/* "d41d8c..." -> 16 bytes, for readable expectations. */
static void unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned int v;

		ck_assert(sscanf(s + 2 * i, "%2x", &v) == 1);
		out[i] = (uint8_t)v;
	}
}

static void check_md5(const void *buf, size_t len, const char *expect_hex)
{
	uint8_t out[CHAP_MD5_LEN], want[CHAP_MD5_LEN];

	unhex(expect_hex, want, sizeof(want));
	ck_assert_int_eq(chap_md5(buf, len, out), 0);
	ck_assert_mem_eq(out, want, CHAP_MD5_LEN);
}

/* RFC 1321 A.5 test suite. */
START_TEST(test_md5_rfc1321)
{
	check_md5("", 0, "d41d8cd98f00b204e9800998ecf8427e");
	check_md5("a", 1, "0cc175b9c0f1b6a831c399e269772661");
	check_md5("abc", 3, "900150983cd24fb0d6963f7d28e17f72");
	check_md5("message digest", 14, "f96b697d7cb7938d525a2f31aaf161d0");
	check_md5("abcdefghijklmnopqrstuvwxyz", 26, "c3fcd3d76192e4007dfb496cca67e13b");
	check_md5("12345678901234567890123456789012345678901234567890123456789012345678901234567890",
		  80, "57edf4a22be3c955ac49da2e2107b67a");
}
END_TEST

/* The response hashes identifier || secret || challenge, in that order:
 * split "abc" and "message digest" across the three pieces and get the
 * RFC 1321 digests back. */
START_TEST(test_response_order)
{
	uint8_t out[CHAP_MD5_LEN], want[CHAP_MD5_LEN];

	ck_assert_int_eq(chap_md5_response('a', "b", 1, (const uint8_t *)"c", 1, out), 0);
	unhex("900150983cd24fb0d6963f7d28e17f72", want, sizeof(want));
	ck_assert_mem_eq(out, want, CHAP_MD5_LEN);

	ck_assert_int_eq(chap_md5_response('m', "essage", 6, (const uint8_t *)" digest", 7, out), 0);
	unhex("f96b697d7cb7938d525a2f31aaf161d0", want, sizeof(want));
	ck_assert_mem_eq(out, want, CHAP_MD5_LEN);

	/* 'a' alone: empty secret and empty challenge. */
	ck_assert_int_eq(chap_md5_response('a', NULL, 0, NULL, 0, out), 0);
	unhex("0cc175b9c0f1b6a831c399e269772661", want, sizeof(want));
	ck_assert_mem_eq(out, want, CHAP_MD5_LEN);
}
END_TEST

/* CHAP known answers, derived with `printf ... | openssl md5` (see the top
 * of this file for the first one). */
START_TEST(test_response_vectors)
{
	static const uint8_t chal16[16] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	};
	static const uint8_t chal4[4] = { 0xde, 0xad, 0xbe, 0xef };
	uint8_t out[CHAP_MD5_LEN], want[CHAP_MD5_LEN];
	const char *secret;

	/* printf '\x2aTargetSecret12\x00\x01...\x0f' | openssl md5 */
	secret = "TargetSecret12";
	ck_assert_int_eq(chap_md5_response(0x2a, secret, strlen(secret), chal16, 16, out), 0);
	unhex("d31477b3206d3b85a7d003daa910e6df", want, sizeof(want));
	ck_assert_mem_eq(out, want, CHAP_MD5_LEN);

	/* printf '\xffa-very-long-secret-of-thirty-two-b\xde\xad\xbe\xef' | openssl md5 */
	secret = "a-very-long-secret-of-thirty-two-b";
	ck_assert_int_eq(chap_md5_response(0xff, secret, strlen(secret), chal4, 4, out), 0);
	unhex("dfd42114d2060c92f06371acd4e5f8da", want, sizeof(want));
	ck_assert_mem_eq(out, want, CHAP_MD5_LEN);

	/* printf '\x00' | openssl md5 */
	ck_assert_int_eq(chap_md5_response(0, "", 0, chal16, 0, out), 0);
	unhex("93b885adfe0da089cdf634904fd59f71", want, sizeof(want));
	ck_assert_mem_eq(out, want, CHAP_MD5_LEN);
}
END_TEST

/* What a login does: decode the initiator's CHAP_C, answer with CHAP_R in
 * hex; the other side decodes it and compares in constant time. */
START_TEST(test_response_round_trip)
{
	const char *chap_c = "0x000102030405060708090A0B0C0D0E0F";
	uint8_t chal[CHAP_MAX_BINARY], mine[CHAP_MD5_LEN], theirs[CHAP_MD5_LEN], want[CHAP_MD5_LEN];
	char chap_r[2 * CHAP_MD5_LEN + 3];
	int n;

	n = chap_decode(chap_c, chal, sizeof(chal));
	ck_assert_int_eq(n, 16);
	ck_assert_int_eq(chap_md5_response(0x2a, "TargetSecret12", 14, chal, (size_t)n, mine), 0);
	chap_encode_hex(mine, sizeof(mine), chap_r);
	ck_assert_str_eq(chap_r, "0xd31477b3206d3b85a7d003daa910e6df");
	ck_assert_int_eq(chap_decode(chap_r, theirs, sizeof(theirs)), CHAP_MD5_LEN);
	unhex("d31477b3206d3b85a7d003daa910e6df", want, sizeof(want));
	ck_assert(chap_equal(theirs, want, CHAP_MD5_LEN));
	/* A wrong secret gives a response that does not match. */
	ck_assert_int_eq(chap_md5_response(0x2a, "TargetSecret13", 14, chal, (size_t)n, mine), 0);
	ck_assert(!chap_equal(mine, want, CHAP_MD5_LEN));
	/* A different identifier too. */
	ck_assert_int_eq(chap_md5_response(0x2b, "TargetSecret12", 14, chal, (size_t)n, mine), 0);
	ck_assert(!chap_equal(mine, want, CHAP_MD5_LEN));
}
END_TEST

struct decode_case {
	const char *in;
	size_t max;
	int ret;                /* bytes or -1 */
	const char *bytes;      /* expected bytes (ret of them) */
};

static const struct decode_case decode_cases[] = {
	/* hex-constant (RFC 7143 6.1) */
	{ "0x00", 16, 1, "\x00" },
	{ "0xff", 16, 1, "\xff" },
	{ "0xABcd", 16, 2, "\xab\xcd" },
	{ "0XabCD", 16, 2, "\xab\xcd" },
	{ "0x1", 16, 1, "\x01" },               /* odd: leading nibble */
	{ "0xabc", 16, 2, "\x0a\xbc" },
	{ "0x00000", 16, 3, "\x00\x00\x00" },
	{ "0x0102", 2, 2, "\x01\x02" },         /* exactly max */
	{ "0x0102", 1, -1, NULL },              /* too long for max */
	{ "0x123", 1, -1, NULL },
	{ "0x", 16, -1, NULL },                 /* empty */
	{ "0xg0", 16, -1, NULL },               /* invalid digit */
	{ "0x0g", 16, -1, NULL },
	{ "0x 12", 16, -1, NULL },
	{ "0x12 ", 16, -1, NULL },
	{ "0x-1", 16, -1, NULL },
	/* base64-constant (RFC 7143 6.1, RFC 4648 section 4) */
	{ "0bAA==", 16, 1, "\x00" },
	{ "0bQQ==", 16, 1, "A" },
	{ "0BQUI=", 16, 2, "AB" },
	{ "0bQUJD", 16, 3, "ABC" },
	{ "0bQUJDRA==", 16, 4, "ABCD" },
	{ "0b/+8=", 16, 2, "\xff\xef" },
	{ "0bQQ", 16, 1, "A" },                 /* padding left out */
	{ "0bQUI", 16, 2, "AB" },
	{ "0bQUJD", 3, 3, "ABC" },
	{ "0bQUJD", 2, -1, NULL },              /* too long for max */
	{ "0bQUJDRA==", 3, -1, NULL },
	{ "0b", 16, -1, NULL },                 /* empty */
	{ "0b==", 16, -1, NULL },
	{ "0bQ", 16, -1, NULL },                /* 6 bits: no whole byte */
	{ "0bQ===", 16, -1, NULL },
	{ "0bQQ=", 16, -1, NULL },              /* bad padding length */
	{ "0bQQ===", 16, -1, NULL },
	{ "0b=QQQ", 16, -1, NULL },             /* padding not at the end */
	{ "0bQ=Q=", 16, -1, NULL },
	{ "0bQR==", 16, -1, NULL },             /* non-zero leftover bits */
	{ "0bQUJ=", 16, -1, NULL },
	{ "0bQU*D", 16, -1, NULL },             /* not in the alphabet */
	{ "0bQU D", 16, -1, NULL },
	{ "0bQU-_", 16, -1, NULL },             /* base64url is not base64 */
	/* neither */
	{ "", 16, -1, NULL },
	{ "0", 16, -1, NULL },
	{ "12", 16, -1, NULL },
	{ "x12", 16, -1, NULL },
	{ "0y12", 16, -1, NULL },
	{ "00x12", 16, -1, NULL },
};

START_TEST(test_decode_table)
{
	const struct decode_case *c = &decode_cases[_i];
	uint8_t out[32];
	int n;

	memset(out, 0x5a, sizeof(out));
	n = chap_decode(c->in, out, c->max);
	ck_assert_msg(n == c->ret, "chap_decode(\"%s\", max %zu) = %d, want %d",
		      c->in, c->max, n, c->ret);
	if (n > 0) {
		ck_assert_mem_eq(out, c->bytes, (size_t)n);
		/* Nothing written past what was decoded. */
		ck_assert_uint_eq(out[n], 0x5a);
	}
}
END_TEST

START_TEST(test_decode_null)
{
	uint8_t out[4];

	ck_assert_int_eq(chap_decode(NULL, out, sizeof(out)), -1);
}
END_TEST

START_TEST(test_encode_hex)
{
	static const uint8_t in[] = { 0x00, 0xff, 0x10, 0xab, 0x9c };
	char out[2 * sizeof(in) + 3];

	chap_encode_hex(in, sizeof(in), out);
	ck_assert_str_eq(out, "0x00ff10ab9c");
	chap_encode_hex(in, 0, out);
	ck_assert_str_eq(out, "0x");
}
END_TEST

/* Hex and base64 round trips over every length 1..CHAP_MAX_BINARY step;
 * base64 text comes from OpenSSL's encoder, not from this code. */
START_TEST(test_round_trips)
{
	static uint8_t in[CHAP_MAX_BINARY], out[CHAP_MAX_BINARY];
	static char text[2 * CHAP_MAX_BINARY + 8];

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 37 + 11);
	for (size_t len = 1; len <= sizeof(in); len += (len < 80 ? 1 : 61)) {
		int n;

		chap_encode_hex(in, len, text);
		ck_assert_uint_eq(strlen(text), 2 * len + 2);
		memset(out, 0, sizeof(out));
		ck_assert_int_eq(chap_decode(text, out, sizeof(out)), (int)len);
		ck_assert_mem_eq(out, in, len);

		text[0] = '0';
		text[1] = 'b';
		n = EVP_EncodeBlock((unsigned char *)text + 2, in, (int)len);
		ck_assert_int_eq(n, (int)((len + 2) / 3 * 4));
		memset(out, 0, sizeof(out));
		ck_assert_int_eq(chap_decode(text, out, sizeof(out)), (int)len);
		ck_assert_mem_eq(out, in, len);
		/* One byte short of room: refused, whatever the encoding. */
		ck_assert_int_eq(chap_decode(text, out, len - 1), -1);
	}
	/* The longest value a login accepts. */
	chap_encode_hex(in, CHAP_MAX_BINARY, text);
	ck_assert_int_eq(chap_decode(text, out, CHAP_MAX_BINARY), CHAP_MAX_BINARY);
	ck_assert_mem_eq(out, in, CHAP_MAX_BINARY);
}
END_TEST

START_TEST(test_random)
{
	uint8_t a[CHAP_CHALLENGE_LEN], b[CHAP_CHALLENGE_LEN], zero[CHAP_CHALLENGE_LEN] = { 0 };

	ck_assert_int_eq(chap_random(a, sizeof(a)), 0);
	ck_assert_int_eq(chap_random(b, sizeof(b)), 0);
	/* Each of these fails with probability 2**-128. */
	ck_assert(memcmp(a, b, sizeof(a)) != 0);
	ck_assert(memcmp(a, zero, sizeof(a)) != 0);
	ck_assert_int_eq(chap_random(a, 0), 0);
}
END_TEST

START_TEST(test_equal)
{
	uint8_t a[CHAP_MD5_LEN], b[CHAP_MD5_LEN];

	for (int i = 0; i < CHAP_MD5_LEN; i++)
		a[i] = b[i] = (uint8_t)(i * 13);
	ck_assert(chap_equal(a, b, sizeof(a)));
	ck_assert(chap_equal(a, b, 0));
	b[0] ^= 1;
	ck_assert(!chap_equal(a, b, sizeof(a)));
	ck_assert(chap_equal(a + 1, b + 1, sizeof(a) - 1));
	b[0] ^= 1;
	b[CHAP_MD5_LEN - 1] ^= 0x80;
	ck_assert(!chap_equal(a, b, sizeof(a)));
	ck_assert(chap_equal(a, b, sizeof(a) - 1));
}
END_TEST

Suite *chap_suite(void)
{
	Suite *s = suite_create("chap");
	TCase *tc = tcase_create("md5");

	tcase_add_test(tc, test_md5_rfc1321);
	tcase_add_test(tc, test_response_order);
	tcase_add_test(tc, test_response_vectors);
	tcase_add_test(tc, test_response_round_trip);
	suite_add_tcase(s, tc);

	tc = tcase_create("encoding");
	tcase_add_loop_test(tc, test_decode_table, 0, (int)(sizeof(decode_cases) / sizeof(decode_cases[0])));
	tcase_add_test(tc, test_decode_null);
	tcase_add_test(tc, test_encode_hex);
	tcase_add_test(tc, test_round_trips);
	suite_add_tcase(s, tc);

	tc = tcase_create("helpers");
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_equal);
	suite_add_tcase(s, tc);
	return s;
}
