/* CRC32C (Castagnoli) for iSCSI header and data digests (RFC 7143 13.1). */
#ifndef TARGETD_CRC32C_H
#define TARGETD_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Running CRC: start with crc = 0xffffffff via crc32c_init(), finish with
 * crc32c_final(). crc32c() of a whole buffer does both. The value goes on
 * the wire little-endian, as RFC 7143 prescribes (see crc32c_put()). */
uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len);
static inline uint32_t crc32c_init(void) { return 0xffffffffu; }
static inline uint32_t crc32c_final(uint32_t crc) { return crc ^ 0xffffffffu; }
uint32_t crc32c(const void *buf, size_t len);
uint32_t crc32c_iov(const struct iovec *iov, int iovcnt);
/* Select the hardware (SSE4.2) or table implementation once at start-up. */
void crc32c_setup(void);

/* Both implementations, for tests and benchmarks: the table-driven
 * slicing-by-8 one and the SSE4.2 one (which falls back to the table when
 * the CPU lacks SSE4.2; crc32c_hw_available() tells). Same contract as
 * crc32c_update(). */
uint32_t crc32c_update_sw(uint32_t crc, const void *buf, size_t len);
uint32_t crc32c_update_hw(uint32_t crc, const void *buf, size_t len);
bool crc32c_hw_available(void);

/* A digest on the wire: least significant byte first (RFC 3720 B.4 lists
 * the digest of 32 zero bytes, 0x8a9136aa, as the bytes aa 36 91 8a). */
static inline void crc32c_put(uint8_t *p, uint32_t crc)
{
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
}
static inline uint32_t crc32c_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
