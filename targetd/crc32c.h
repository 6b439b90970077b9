/* CRC32C (Castagnoli) for iSCSI header and data digests (RFC 7143 13.1). */
#ifndef TARGETD_CRC32C_H
#define TARGETD_CRC32C_H

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

#endif
