/*
 * CHAP with MD5 (RFC 1994 section 4.1) as iSCSI uses it (RFC 7143 12.1.3),
 * and the binary value encodings of iSCSI text keys (RFC 7143 6.1:
 * hex-constant "0x..." and base64-constant "0b...").
 *
 * Hashing and randomness come from OpenSSL (EVP and RAND): nothing here is
 * hand-written cryptography. Every function is pure or thread-safe.
 */
#include "config.h"
#include <limits.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include "targetd/chap.h"

/* MD5 over up to three pieces, one after the other. */
static int chap_md5_pieces(const void *a, size_t alen, const void *b, size_t blen,
			   const void *c, size_t clen, uint8_t out[CHAP_MD5_LEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int outlen = 0;
	int ok;

	if (!ctx)
		return -1;
	ok = EVP_DigestInit_ex(ctx, EVP_md5(), NULL) == 1 &&
	     (alen == 0 || EVP_DigestUpdate(ctx, a, alen) == 1) &&
	     (blen == 0 || EVP_DigestUpdate(ctx, b, blen) == 1) &&
	     (clen == 0 || EVP_DigestUpdate(ctx, c, clen) == 1) &&
	     EVP_DigestFinal_ex(ctx, out, &outlen) == 1 &&
	     outlen == CHAP_MD5_LEN;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -1;
}

int chap_md5(const void *buf, size_t len, uint8_t out[CHAP_MD5_LEN])
{
	return chap_md5_pieces(buf, len, NULL, 0, NULL, 0, out);
}

/* RFC 1994 4.1: the Response Value is the one-way hash calculated over a
 * stream of octets consisting of the Identifier, followed by (concatenated
 * with) the "secret", followed by (concatenated with) the Challenge Value. */
int chap_md5_response(uint8_t id, const char *secret, size_t secret_len,
		      const uint8_t *challenge, size_t challenge_len,
		      uint8_t out[CHAP_MD5_LEN])
{
	if ((secret_len && !secret) || (challenge_len && !challenge))
		return -1;
	return chap_md5_pieces(&id, 1, secret, secret_len, challenge, challenge_len, out);
}

static int chap_hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "0x" already stripped. An odd number of digits means the first digit is
 * a nibble on its own: "abc" is 0x0a 0xbc. */
static int chap_decode_hex(const char *s, size_t n, uint8_t *out, size_t max)
{
	size_t bytes = (n + 1) / 2, i = 0, o = 0;

	if (n == 0 || bytes > max || bytes > INT_MAX)
		return -1;
	if (n & 1) {
		int v = chap_hex_nibble(s[i++]);

		if (v < 0)
			return -1;
		out[o++] = (uint8_t)v;
	}
	for (; i < n; i += 2) {
		int hi = chap_hex_nibble(s[i]), lo = chap_hex_nibble(s[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[o++] = (uint8_t)(hi << 4 | lo);
	}
	return (int)o;
}

static int chap_b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* "0b" already stripped. RFC 4648 section 4 alphabet. Padding is accepted
 * when present (then the length must be a multiple of 4 and '=' may only
 * end the string, at most twice) or absent (then a length of 4k+1 is
 * impossible). Leftover bits of the last character must be zero: only the
 * canonical encoding of a value is accepted. */
static int chap_decode_base64(const char *s, size_t n, uint8_t *out, size_t max)
{
	size_t pad = 0, chars, bytes, o = 0;
	uint32_t acc = 0;
	int nbits = 0;

	while (pad < n && pad < 3 && s[n - 1 - pad] == '=')
		pad++;
	if (pad > 2 || (pad && n % 4))
		return -1;
	chars = n - pad;
	if (chars == 0 || chars % 4 == 1)
		return -1;
	bytes = chars / 4 * 3 + (chars % 4 ? chars % 4 - 1 : 0);
	if (bytes > max || bytes > INT_MAX)
		return -1;
	for (size_t i = 0; i < chars; i++) {
		int v = chap_b64_value(s[i]);

		if (v < 0)
			return -1;
		acc = (acc << 6 | (uint32_t)v) & 0xffffff;
		nbits += 6;
		if (nbits >= 8) {
			nbits -= 8;
			out[o++] = (uint8_t)(acc >> nbits);
		}
	}
	/* nbits is 0, 2 or 4 here: those low bits must be zero. */
	if (acc & ((1u << nbits) - 1))
		return -1;
	return (int)o;
}

int chap_decode(const char *s, uint8_t *out, size_t max)
{
	size_t n;

	if (!s || s[0] != '0')
		return -1;
	n = strlen(s);
	if (n < 2)
		return -1;
	if (s[1] == 'x' || s[1] == 'X')
		return chap_decode_hex(s + 2, n - 2, out, max);
	if (s[1] == 'b' || s[1] == 'B')
		return chap_decode_base64(s + 2, n - 2, out, max);
	return -1;
}

void chap_encode_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	*out++ = '0';
	*out++ = 'x';
	for (size_t i = 0; i < len; i++) {
		*out++ = digits[in[i] >> 4];
		*out++ = digits[in[i] & 0xf];
	}
	*out = '\0';
}

int chap_random(uint8_t *buf, size_t len)
{
	if (len > INT_MAX)
		return -1;
	if (len == 0)
		return 0;
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

bool chap_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}
