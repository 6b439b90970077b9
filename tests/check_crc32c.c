/*
 * CRC32C: the RFC 3720 appendix B.4 vectors, the classic check value, and
 * agreement between the table (slicing-by-8) path, the SSE4.2 path and an
 * independent bit-at-a-time reference written here.
 */
#include "config.h"
#include <pthread.h>
#include <string.h>
#include "common/crc32c.h"
#include "tests/check_suites.h"

/* Reference: one bit at a time, straight from the definition (reflected
 * polynomial 0x82F63B78, initial value and final XOR all ones). */
static uint32_t ref_crc32c(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return crc ^ 0xffffffffu;
}

/* Deterministic test data (xorshift32). */
static void fill_random(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed ? seed : 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static uint32_t sw_oneshot(const void *p, size_t len)
{
	return crc32c_final(crc32c_update_sw(crc32c_init(), p, len));
}

static uint32_t hw_oneshot(const void *p, size_t len)
{
	return crc32c_final(crc32c_update_hw(crc32c_init(), p, len));
}

/* Every implementation must give 'expect' for this buffer. */
static void check_all_paths(const uint8_t *p, size_t len, uint32_t expect)
{
	ck_assert_uint_eq(crc32c(p, len), expect);
	ck_assert_uint_eq(sw_oneshot(p, len), expect);
	ck_assert_uint_eq(hw_oneshot(p, len), expect);
	ck_assert_uint_eq(ref_crc32c(p, len), expect);
}

/* RFC 3720 B.4: 32 bytes of zeros, of ones, incrementing, decrementing. */
START_TEST(test_rfc3720_vectors)
{
	uint8_t buf[32];

	memset(buf, 0, sizeof(buf));
	check_all_paths(buf, sizeof(buf), 0x8a9136aau);
	memset(buf, 0xff, sizeof(buf));
	check_all_paths(buf, sizeof(buf), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	check_all_paths(buf, sizeof(buf), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	check_all_paths(buf, sizeof(buf), 0x113fdb5cu);
}
END_TEST

/* RFC 3720 B.4: an iSCSI SCSI Read (10) command PDU (48-byte BHS). */
START_TEST(test_rfc3720_read_pdu)
{
	static const uint8_t pdu[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};

	check_all_paths(pdu, sizeof(pdu), 0xd9963a56u);
}
END_TEST

/* The RFC lists each digest as the bytes sent: least significant first. */
START_TEST(test_wire_order)
{
	static const uint8_t zeros_digest[4] = { 0xaa, 0x36, 0x91, 0x8a };
	uint8_t buf[32] = { 0 }, wire[4];

	crc32c_put(wire, crc32c(buf, sizeof(buf)));
	ck_assert_mem_eq(wire, zeros_digest, 4);
	ck_assert_uint_eq(crc32c_get(zeros_digest), 0x8a9136aau);
}
END_TEST

START_TEST(test_check_value)
{
	check_all_paths((const uint8_t *)"123456789", 9, 0xe3069283u);
	/* The empty buffer: init ^ final = 0. */
	check_all_paths((const uint8_t *)"", 0, 0);
	/* One byte, so the byte-at-a-time tails are covered alone. */
	check_all_paths((const uint8_t *)"a", 1, ref_crc32c((const uint8_t *)"a", 1));
}
END_TEST

/* Every length 0..1024 at every start offset 0..7: table, SSE4.2 and the
 * bitwise reference agree. */
START_TEST(test_paths_agree)
{
	static uint8_t buf[1024 + 16];

	fill_random(buf, sizeof(buf), 0x12345678u);
	for (size_t off = 0; off < 8; off++) {
		for (size_t len = 0; len <= 1024; len++) {
			uint32_t sw = sw_oneshot(buf + off, len);

			ck_assert_uint_eq(hw_oneshot(buf + off, len), sw);
			ck_assert_uint_eq(crc32c(buf + off, len), sw);
			if (off == 0 || off == 3)
				ck_assert_uint_eq(ref_crc32c(buf + off, len), sw);
		}
	}
}
END_TEST

START_TEST(test_hw_detection)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	ck_assert(crc32c_hw_available() == (bool)__builtin_cpu_supports("sse4.2"));
#else
	ck_assert(!crc32c_hw_available());
#endif
}
END_TEST

/* Feeding the data in two pieces gives the one-shot result, wherever the
 * split falls, on both implementations. */
START_TEST(test_incremental)
{
	uint8_t buf[300];
	uint32_t whole;

	fill_random(buf, sizeof(buf), 99);
	whole = crc32c(buf, sizeof(buf));
	ck_assert_uint_eq(whole, ref_crc32c(buf, sizeof(buf)));
	for (size_t k = 0; k <= sizeof(buf); k++) {
		uint32_t c = crc32c_update(crc32c_init(), buf, k);

		ck_assert_uint_eq(crc32c_final(crc32c_update(c, buf + k, sizeof(buf) - k)), whole);
		c = crc32c_update_sw(crc32c_init(), buf, k);
		ck_assert_uint_eq(crc32c_final(crc32c_update_hw(c, buf + k, sizeof(buf) - k)), whole);
		c = crc32c_update_hw(crc32c_init(), buf, k);
		ck_assert_uint_eq(crc32c_final(crc32c_update_sw(c, buf + k, sizeof(buf) - k)), whole);
	}
}
END_TEST

START_TEST(test_iov)
{
	uint8_t buf[4096 + 48];
	struct iovec iov[8];
	uint32_t whole;

	fill_random(buf, sizeof(buf), 7);
	whole = crc32c(buf, sizeof(buf));
	/* A header, an empty piece, odd-sized pieces, the rest. */
	iov[0] = (struct iovec){ buf, 48 };
	iov[1] = (struct iovec){ buf + 48, 0 };
	iov[2] = (struct iovec){ buf + 48, 1 };
	iov[3] = (struct iovec){ buf + 49, 7 };
	iov[4] = (struct iovec){ buf + 56, 1000 };
	iov[5] = (struct iovec){ buf + 1056, 3 };
	iov[6] = (struct iovec){ buf + 1059, 0 };
	iov[7] = (struct iovec){ buf + 1059, sizeof(buf) - 1059 };
	ck_assert_uint_eq(crc32c_iov(iov, 8), whole);
	ck_assert_uint_eq(crc32c_iov(iov, 1), crc32c(buf, 48));
	ck_assert_uint_eq(crc32c_iov(iov, 0), 0);
	/* Every two-way split. */
	for (size_t k = 0; k <= 200; k++) {
		iov[0] = (struct iovec){ buf, k };
		iov[1] = (struct iovec){ buf + k, 200 - k };
		ck_assert_uint_eq(crc32c_iov(iov, 2), crc32c(buf, 200));
	}
}
END_TEST

/* Several threads at once (the first calls may race through set-up). */
struct crc_thread_arg {
	const uint8_t *buf;
	size_t len;
	int bad;
};

static void *crc_thread(void *v)
{
	struct crc_thread_arg *a = v;

	for (int i = 0; i < 200; i++)
		if (crc32c(a->buf, a->len - (size_t)i) != ref_crc32c(a->buf, a->len - (size_t)i))
			a->bad++;
	return NULL;
}

START_TEST(test_threads)
{
	static uint8_t buf[512];
	struct crc_thread_arg args[4];
	pthread_t th[4];

	fill_random(buf, sizeof(buf), 4242);
	crc32c_setup();
	for (int i = 0; i < 4; i++) {
		args[i] = (struct crc_thread_arg){ .buf = buf, .len = sizeof(buf) };
		ck_assert_int_eq(pthread_create(&th[i], NULL, crc_thread, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(args[i].bad, 0);
	}
}
END_TEST

Suite *crc32c_suite(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("vectors");

	tcase_add_test(tc, test_rfc3720_vectors);
	tcase_add_test(tc, test_rfc3720_read_pdu);
	tcase_add_test(tc, test_wire_order);
	tcase_add_test(tc, test_check_value);
	suite_add_tcase(s, tc);

	tc = tcase_create("implementations");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_paths_agree);
	tcase_add_test(tc, test_hw_detection);
	tcase_add_test(tc, test_incremental);
	tcase_add_test(tc, test_iov);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	return s;
}
