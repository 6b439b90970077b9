/*
 * CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78) for the
 * iSCSI header and data digests (RFC 7143 13.1, test vectors in RFC 3720
 * appendix B.4).
 *
 * DESIGN: two implementations of the running update, the same contract:
 *  - crc32c_update_sw(): table driven, slicing-by-8 (eight 256-entry tables,
 *    8 input bytes per step), portable to any byte order;
 *  - crc32c_update_hw(): the SSE4.2 CRC32 instruction (x86-64 only).
 * crc32c_setup() builds the tables and picks one implementation, once
 * (pthread_once), and publishes it through an atomic function pointer. The
 * pointer starts on a bootstrap function that calls crc32c_setup(), so a
 * caller that forgets crc32c_setup() still gets correct results. After set-up
 * nothing is written again: any number of network threads may compute
 * digests concurrently without a lock.
 */
#include "config.h"
#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include "common/crc32c.h"

#define CRC32C_POLY_REFLECTED 0x82f63b78u

typedef uint32_t (*crc32c_fn)(uint32_t crc, const void *buf, size_t len);

static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;
static uint32_t crc32c_bootstrap(uint32_t crc, const void *buf, size_t len);
static void crc32c_setup_once(void);
static crc32c_fn crc32c_impl = crc32c_bootstrap;
static bool crc32c_have_hw;

static void crc32c_build_tables(void)
{
	for (unsigned int n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
		crc32c_table[0][n] = c;
	}
	/* table[k][n]: the CRC of byte n followed by k zero bytes. */
	for (unsigned int n = 0; n < 256; n++) {
		uint32_t c = crc32c_table[0][n];

		for (int k = 1; k < 8; k++) {
			c = crc32c_table[0][c & 0xff] ^ (c >> 8);
			crc32c_table[k][n] = c;
		}
	}
}

static inline uint32_t crc32c_load_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint32_t crc32c_sw_body(uint32_t crc, const uint8_t *p, size_t len)
{
	/* Byte at a time up to an 8-byte boundary (not needed for
	 * correctness: memcpy loads are alignment-safe; it only avoids
	 * split loads on the hot loop). */
	while (len && ((uintptr_t)p & 7)) {
		crc = crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo = crc32c_load_le32(p) ^ crc;
		uint32_t hi = crc32c_load_le32(p + 4);

		crc = crc32c_table[7][lo & 0xff] ^
		      crc32c_table[6][(lo >> 8) & 0xff] ^
		      crc32c_table[5][(lo >> 16) & 0xff] ^
		      crc32c_table[4][lo >> 24] ^
		      crc32c_table[3][hi & 0xff] ^
		      crc32c_table[2][(hi >> 8) & 0xff] ^
		      crc32c_table[1][(hi >> 16) & 0xff] ^
		      crc32c_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

uint32_t crc32c_update_sw(uint32_t crc, const void *buf, size_t len)
{
	/* The tables are built by crc32c_setup(); make sure they exist. */
	pthread_once(&crc32c_once, crc32c_setup_once);
	return crc32c_sw_body(crc, buf, len);
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_body(uint32_t crc, const uint8_t *p, size_t len)
{
	unsigned long long c = crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		unsigned long long v;

		memcpy(&v, p, sizeof(v));
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}

static bool crc32c_cpu_has_hw(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}
#else
static uint32_t crc32c_hw_body(uint32_t crc, const uint8_t *p, size_t len)
{
	return crc32c_sw_body(crc, p, len);
}

static bool crc32c_cpu_has_hw(void)
{
	return false;
}
#endif

uint32_t crc32c_update_hw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc32c_once, crc32c_setup_once);
	if (!crc32c_have_hw)
		return crc32c_sw_body(crc, buf, len);
	return crc32c_hw_body(crc, buf, len);
}

static uint32_t crc32c_sw_entry(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_sw_body(crc, buf, len);
}

static uint32_t crc32c_hw_entry(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_hw_body(crc, buf, len);
}

static void crc32c_setup_once(void)
{
	crc32c_build_tables();
	crc32c_have_hw = crc32c_cpu_has_hw();
	__atomic_store_n(&crc32c_impl, crc32c_have_hw ? crc32c_hw_entry : crc32c_sw_entry,
			 __ATOMIC_RELEASE);
}

void crc32c_setup(void)
{
	pthread_once(&crc32c_once, crc32c_setup_once);
}

bool crc32c_hw_available(void)
{
	crc32c_setup();
	return crc32c_have_hw;
}

static uint32_t crc32c_bootstrap(uint32_t crc, const void *buf, size_t len)
{
	crc32c_setup();
	return __atomic_load_n(&crc32c_impl, __ATOMIC_ACQUIRE)(crc, buf, len);
}

uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len)
{
	return __atomic_load_n(&crc32c_impl, __ATOMIC_ACQUIRE)(crc, buf, len);
}

uint32_t crc32c(const void *buf, size_t len)
{
	return crc32c_final(crc32c_update(crc32c_init(), buf, len));
}

uint32_t crc32c_iov(const struct iovec *iov, int iovcnt)
{
	crc32c_fn fn = __atomic_load_n(&crc32c_impl, __ATOMIC_ACQUIRE);
	uint32_t crc = crc32c_init();

	for (int i = 0; i < iovcnt; i++)
		crc = fn(crc, iov[i].iov_base, iov[i].iov_len);
	return crc32c_final(crc);
}
