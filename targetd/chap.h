/* CHAP (RFC 1994) with MD5 as iSCSI uses it (RFC 7143 12.1.3). */
#ifndef TARGETD_CHAP_H
#define TARGETD_CHAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHAP_MD5_LEN 16
#define CHAP_CHALLENGE_LEN 16          /* bytes we send */
#define CHAP_MAX_BINARY 1024           /* longest challenge/response we accept */
#define CHAP_MIN_CHALLENGE 16          /* shortest challenge we answer (RFC 7143 12.1.3) */
#define CHAP_MIN_SECRET 12             /* RFC 7143: secrets of at least 96 bits */
#define CHAP_MAX_SECRET 255

/* MD5(id || secret || challenge). Returns 0 or -1. */
int chap_md5_response(uint8_t id, const char *secret, size_t secret_len,
		      const uint8_t *challenge, size_t challenge_len,
		      uint8_t out[CHAP_MD5_LEN]);
/* MD5 of one buffer (used by tests and anything else that needs a plain
 * digest). Returns 0 or -1. */
int chap_md5(const void *buf, size_t len, uint8_t out[CHAP_MD5_LEN]);
/* Decode "0x..." hex or "0b..." base64 into out. Returns bytes or -1. */
int chap_decode(const char *s, uint8_t *out, size_t max);
/* Encode as "0x" + lowercase hex into out (size >= 2*len+3). */
void chap_encode_hex(const uint8_t *in, size_t len, char *out);
/* Fill buf with cryptographically random bytes. Returns 0 or -1. */
int chap_random(uint8_t *buf, size_t len);
/* Constant-time compare. */
bool chap_equal(const uint8_t *a, const uint8_t *b, size_t len);

#endif
