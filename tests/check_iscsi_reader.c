/* Check suite for the PDU reader (targetd/conn.c conn_read): the same
 * script of PDUs fed whole, one byte at a time and in odd-sized pieces,
 * with and without CRC32C digests, must give the same answers byte for
 * byte; and what the reader does with broken PDUs. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "tests/check_suites.h"
#include "tests/iscsi_harness.h"

#define F ISCSI_FLAG_FINAL
#define SCRIPT_MAX 65536

static struct ih h;

/* The script: every reader state (BHS, AHS, header digest, data, pad,
 * data digest), data for a buffer (immediate data, Data-Out) and for a
 * PDU of its own (NOP-Out ping data), several PDUs in one piece. */
static size_t build_script(uint8_t *out)
{
	static const uint8_t tur[6];
	uint8_t b[ISCSI_BHS_LEN], cdb[10], blk[1024];
	uint8_t ahs[8] = { 0x00, 0x05, 0x02, 0x00, 0x00, 0x00, 0x10, 0x00 }; /* type 2, ignored */
	size_t n = 0;
	uint32_t itt;

	h.itt = 0;
	h.cmdsn = 1;
	/* NOP-Out with 5 bytes of ping data (3 of padding) */
	ih_bhs_nop(&h, b, h.cmdsn, true);
	n += ih_build(&h, out + n, b, NULL, 0, "hello", 5);
	/* TEST UNIT READY with an AHS */
	ih_bhs_cmd(&h, b, h.cmdsn++, tur, 6, F | 1, 0, 0);
	n += ih_build(&h, out + n, b, ahs, sizeof(ahs), NULL, 0);
	/* WRITE(10) 2 blocks: 512 bytes of immediate data, 512 of unsolicited Data-Out */
	for (unsigned i = 0; i < sizeof(blk); i++)
		blk[i] = (uint8_t)(i * 7 + 3);
	ih_cdb_rw10(cdb, true, 4, 2);
	itt = ih_bhs_cmd(&h, b, h.cmdsn++, cdb, 10, ISCSI_CMD_WRITE | 1, 1024, 0);
	n += ih_build(&h, out + n, b, NULL, 0, blk, 512);
	ih_bhs_data_out(b, itt, ISCSI_RSVD_TAG, 0, 512, true, 0);
	n += ih_build(&h, out + n, b, NULL, 0, blk + 512, 512);
	/* READ(10) of the same 2 blocks, ORDERED: after the WRITE's status */
	ih_cdb_rw10(cdb, false, 4, 2);
	ih_bhs_cmd(&h, b, h.cmdsn++, cdb, 10, F | ISCSI_CMD_READ | 2, 1024, 0);
	n += ih_build(&h, out + n, b, NULL, 0, NULL, 0);
	/* a non-immediate NOP-Out with 1 byte of data */
	ih_bhs_nop(&h, b, h.cmdsn++, false);
	n += ih_build(&h, out + n, b, NULL, 0, "!", 1);
	ck_assert_uint_le(n, SCRIPT_MAX);
	return n;
}

/* Everything the target answered, as one byte string. */
static size_t collect(uint8_t *out, size_t cap)
{
	struct ih_pdu p;
	size_t n = 0;

	ih_run(&h);
	while (ih_next(&h, 0, &p)) {
		ck_assert_uint_le(n + ISCSI_BHS_LEN + p.dlen, cap);
		memcpy(out + n, p.bhs, ISCSI_BHS_LEN);
		memcpy(out + n + ISCSI_BHS_LEN, p.data, p.dlen);
		n += ISCSI_BHS_LEN + p.dlen;
	}
	return n;
}

/* Feed the script with the given piece size (0: whole; SIZE_MAX: pieces
 * of 1 to 13 bytes from a fixed sequence) and return the answers. */
static size_t run_script(bool digests, size_t piece, uint8_t *answers, size_t cap)
{
	struct ih_opts o = { .digests = digests };
	uint8_t *script = malloc(SCRIPT_MAX);
	size_t n, off = 0, got;
	unsigned k = 0;

	ck_assert_ptr_nonnull(script);
	ih_start(&h, &o);
	n = build_script(script);
	if (piece != SIZE_MAX) {
		ih_feed(&h, 0, script, n, piece);
	} else {
		while (off < n) {
			size_t len = MIN((size_t)(1 + (k++ * 5) % 13), n - off);
			ih_feed(&h, 0, script + off, len, 0);
			off += len;
		}
	}
	got = collect(answers, cap);
	ck_assert(h.p[0].c && !h.p[0].c->dead);
	ih_stop(&h);
	free(script);
	return got;
}

START_TEST(test_reader_pieces)
{
	bool digests = _i;
	size_t cap = 1u << 20;
	uint8_t *whole = malloc(cap), *bytes = malloc(cap), *odd = malloc(cap);
	size_t nw, nb, no;
	const uint8_t *p;

	ck_assert(whole && bytes && odd);
	nw = run_script(digests, 0, whole, cap);
	nb = run_script(digests, 1, bytes, cap);
	no = run_script(digests, SIZE_MAX, odd, cap);
	ck_assert_uint_eq(nb, nw);
	ck_assert_uint_eq(no, nw);
	ck_assert_mem_eq(bytes, whole, nw);
	ck_assert_mem_eq(odd, whole, nw);

	/* What the answers are (by ITT, 1 to 5 in script order): NOP-In
	 * echoing "hello"; TUR GOOD; WRITE GOOD; Data-In with status of what
	 * was written; NOP-In echoing "!" after four CmdSNs were taken. */
	unsigned seen = 0;
	for (p = whole; p < whole + nw; p += ISCSI_BHS_LEN + bhs_dlen(p)) {
		const uint8_t *d = p + ISCSI_BHS_LEN;
		uint32_t itt = bhs_itt(p);

		ck_assert(itt >= 1 && itt <= 5 && !(seen & (1u << itt)));
		seen |= 1u << itt;
		switch (itt) {
		case 1:
			ck_assert_uint_eq(bhs_opcode(p), ISCSI_OP_NOP_IN);
			ck_assert_uint_eq(bhs_dlen(p), 5);
			ck_assert_mem_eq(d, "hello", 5);
			break;
		case 2:
		case 3:
			ck_assert_uint_eq(bhs_opcode(p), ISCSI_OP_SCSI_RSP);
			ck_assert_uint_eq(p[3], SAM_STAT_GOOD);
			break;
		case 4:
			ck_assert_uint_eq(bhs_opcode(p), ISCSI_OP_DATA_IN);
			ck_assert_uint_eq(bhs_dlen(p), 1024);
			ck_assert_uint_eq(p[1] & ISCSI_DATAIN_STATUS, ISCSI_DATAIN_STATUS);
			for (unsigned i = 0; i < 1024; i++)
				ck_assert_uint_eq(d[i], (uint8_t)(i * 7 + 3));
			break;
		case 5:
			ck_assert_uint_eq(bhs_opcode(p), ISCSI_OP_NOP_IN);
			ck_assert_uint_eq(bhs_dlen(p), 1);
			ck_assert_uint_eq(d[0], '!');
			ck_assert_uint_eq(get_be32(p + 28), 5);
			break;
		}
	}
	ck_assert_uint_eq(seen, 0x3e);
	ck_assert_uint_eq((size_t)(p - whole), nw);
	free(whole);
	free(bytes);
	free(odd);
}
END_TEST

static void setup_digests(void)
{
	struct ih_opts o = { .digests = true };

	ih_start(&h, &o);
}

static void setup_plain(void)
{
	struct ih_opts o = { 0 };

	ih_start(&h, &o);
}

static void teardown(void)
{
	ih_stop(&h);
}

/* RFC 7143 7.8: a header digest error cannot be recovered at ERL 0: the
 * connection ends, whichever byte the bad digest arrives in. */
START_TEST(test_reader_header_digest)
{
	uint8_t b[ISCSI_BHS_LEN], pdu[64];
	size_t n;

	ih_bhs_nop(&h, b, h.cmdsn, true);
	n = ih_build(&h, pdu, b, NULL, 0, NULL, 0);
	pdu[ISCSI_BHS_LEN + 2] ^= 0x40;
	ih_feed(&h, 0, pdu, n, 1);
	ck_assert(ih_closed(&h, 0));
}
END_TEST

/* A data digest error on a NOP-Out: Reject (reason 2), connection kept. */
START_TEST(test_reader_data_digest)
{
	static const uint8_t tur[6];
	uint8_t b[ISCSI_BHS_LEN], pdu[128];
	struct ih_pdu p;
	size_t n;
	uint32_t t;

	ih_bhs_nop(&h, b, h.cmdsn, true);
	n = ih_build(&h, pdu, b, NULL, 0, "ping-data", 9);
	pdu[n - 1] ^= 0x01;                 /* last byte of the data digest */
	ih_feed(&h, 0, pdu, n, 1);
	ih_run(&h);
	ck_assert(ih_next(&h, 0, &p));
	ck_assert_uint_eq(bhs_opcode(p.bhs), ISCSI_OP_REJECT);
	ck_assert_uint_eq(p.bhs[2], ISCSI_REJECT_DATA_DIGEST);
	ck_assert_uint_eq(p.dlen, ISCSI_BHS_LEN);      /* the rejected header */
	ck_assert_uint_eq(bhs_opcode(p.data), ISCSI_OP_NOP_OUT);
	t = ih_cmd(&h, 0, tur, 6, F | 1, 0, 0, NULL, 0);
	ih_expect(&h, 0, t, ISCSI_OP_SCSI_RSP, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(ih_status(&p), SAM_STAT_GOOD);
}
END_TEST

/* RFC 7143 7.8: a WRITE whose immediate data fails its digest is rejected
 * and not received: its CmdSN stays open, and the initiator's retry with
 * the same CmdSN is taken. */
START_TEST(test_reader_data_digest_retry)
{
	uint8_t b[ISCSI_BHS_LEN], cdb[10], data[512], pdu[1024];
	struct ih_pdu p;
	size_t n;
	uint32_t itt;

	memset(data, 0x5a, sizeof(data));
	ih_cdb_rw10(cdb, true, 2, 1);
	itt = ih_bhs_cmd(&h, b, 1, cdb, 10, F | ISCSI_CMD_WRITE | 1, 512, 0);
	n = ih_build(&h, pdu, b, NULL, 0, data, 512);
	pdu[ISCSI_BHS_LEN + 4 + 100] ^= 0xff;          /* corrupt the data */
	ih_feed(&h, 0, pdu, n, 7);
	ih_expect(&h, 0, ISCSI_RSVD_TAG, ISCSI_OP_REJECT, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(p.bhs[2], ISCSI_REJECT_DATA_DIGEST);
	ck_assert_uint_eq(h.s->exp_cmdsn, 1);
	ck_assert_uint_ne(h.mem->mem_base[2 * 512 + 100], 0x5a);
	n = ih_build(&h, pdu, b, NULL, 0, data, 512);   /* the retry: same ITT, same CmdSN */
	ih_feed(&h, 0, pdu, n, 0);
	ih_expect(&h, 0, itt, ISCSI_OP_SCSI_RSP, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(ih_status(&p), SAM_STAT_GOOD);
	ck_assert_uint_eq(h.s->exp_cmdsn, 2);
	ck_assert_uint_eq(h.mem->mem_base[2 * 512 + 100], 0x5a);
}
END_TEST

/* An opcode the target does not know: Reject (reason 5), its data
 * skipped, the next PDU read normally (RFC 7143 7.2), fed byte by byte. */
START_TEST(test_reader_unknown_opcode)
{
	static const uint8_t tur[6];
	uint8_t b[ISCSI_BHS_LEN], pdu[256];
	struct ih_pdu p;
	size_t n;
	uint32_t t;

	memset(b, 0, sizeof(b));
	b[0] = 0x1c | ISCSI_FLAG_IMMEDIATE;   /* vendor specific */
	b[1] = F;
	put_be32(b + 16, 0x777);
	n = ih_build(&h, pdu, b, NULL, 0, "vendor-bytes-00", 15);
	t = ih_bhs_cmd(&h, b, h.cmdsn++, tur, 6, F | 1, 0, 0);
	n += ih_build(&h, pdu + n, b, NULL, 0, NULL, 0);
	ih_feed(&h, 0, pdu, n, 1);
	ih_run(&h);
	ck_assert(ih_next(&h, 0, &p));
	ck_assert_uint_eq(bhs_opcode(p.bhs), ISCSI_OP_REJECT);
	ck_assert_uint_eq(p.bhs[2], ISCSI_REJECT_CMD_NOT_SUPPORTED);
	ih_expect(&h, 0, t, ISCSI_OP_SCSI_RSP, &p, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(ih_status(&p), SAM_STAT_GOOD);
}
END_TEST

/* A data segment longer than MaxRecvDataSegmentLength: Reject and the
 * connection ends before the target reads (or allocates) the data. */
START_TEST(test_reader_oversized)
{
	uint8_t b[ISCSI_BHS_LEN];
	struct ih_pdu p;

	ih_bhs_nop(&h, b, h.cmdsn, true);
	put_be24(b + 5, 8193);                 /* MRDSL is 8192 */
	ih_feed(&h, 0, b, sizeof(b), 0);
	ih_run(&h);
	ck_assert(ih_next(&h, 0, &p));
	ck_assert_uint_eq(bhs_opcode(p.bhs), ISCSI_OP_REJECT);
	ck_assert_uint_eq(p.bhs[2], ISCSI_REJECT_PROTOCOL_ERROR);
	ck_assert(ih_closed(&h, 0));
}
END_TEST

/* A connection that ends in the middle of a PDU: nothing half-read
 * survives, and the session goes (its only connection). */
START_TEST(test_reader_eof_mid_pdu)
{
	static const uint8_t tur[6];
	uint8_t b[ISCSI_BHS_LEN];

	ih_bhs_cmd(&h, b, h.cmdsn++, tur, 6, F | 1, 0, 0);
	ih_feed(&h, 0, b, 20, 1);
	ck_assert_uint_eq(h.p[0].c->rx_got, 20);
	shutdown(h.p[0].fd, SHUT_WR);
	iscsi_conn_event(h.p[0].c, EPOLLIN);
	ck_assert(ih_closed(&h, 0));
}
END_TEST

Suite *iscsi_reader_suite(void)
{
	Suite *s = suite_create("iscsi_reader");
	TCase *tc = tcase_create("pieces");

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_reader_pieces, 0, 2);   /* without, with digests */
	suite_add_tcase(s, tc);

	tc = tcase_create("digests");
	tcase_add_checked_fixture(tc, setup_digests, teardown);
	tcase_add_test(tc, test_reader_header_digest);
	tcase_add_test(tc, test_reader_data_digest);
	tcase_add_test(tc, test_reader_data_digest_retry);
	suite_add_tcase(s, tc);

	tc = tcase_create("broken");
	tcase_add_checked_fixture(tc, setup_plain, teardown);
	tcase_add_test(tc, test_reader_unknown_opcode);
	tcase_add_test(tc, test_reader_oversized);
	tcase_add_test(tc, test_reader_eof_mid_pdu);
	suite_add_tcase(s, tc);
	return s;
}
