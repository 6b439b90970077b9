/*
 * Check suite: COMPARE AND WRITE on a backstore that compares and writes
 * itself (backstore_caw_max(), as the rbd backstore does with librbd):
 * the SCSI layer sends one COMPARE_AND_WRITE request instead of a READ and
 * a WRITE, takes the MISCOMPARE offset from the backstore, refuses more
 * blocks than the store covers, and VPD B0 advertises that limit and the
 * store's discard granularity. The store here is a fake in memory that
 * counts what it is asked, completing on the engine like a real one.
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tests/check_suites.h"
#include "scsi/scsi.h"
#include "backstore/backstore.h"
#include "backstore/io_engine.h"
#include "common/util.h"

#define N_NAME "iqn.2026-01.org.example:caw-native"
#define N_BLOCKS 2048u
#define N_BUF (1u << 20)

static uint8_t medium[N_BLOCKS * 4096];
static struct {
	unsigned reads, writes, caws;
} seen;

static void ns_submit(struct io_engine *e, struct bs_io *io)
{
	uint8_t *p;
	int i;

	if (!io->iov) {
		io->iov = &io->iov1;
		io->iovcnt = 1;
	}
	io->result = (int64_t)io->len;
	switch (io->op) {
	case BS_OP_READ:
		seen.reads++;
		p = medium + io->offset;
		for (i = 0; i < io->iovcnt; p += io->iov[i].iov_len, i++)
			memcpy(io->iov[i].iov_base, p, io->iov[i].iov_len);
		break;
	case BS_OP_WRITE:
		seen.writes++;
		p = medium + io->offset;
		for (i = 0; i < io->iovcnt; p += io->iov[i].iov_len, i++)
			memcpy(p, io->iov[i].iov_base, io->iov[i].iov_len);
		break;
	case BS_OP_COMPARE_AND_WRITE: {
		const uint8_t *b = io->iov1.iov_base;
		uint64_t k;

		seen.caws++;
		ck_assert_uint_ge(io->iov1.iov_len, 2 * io->len);
		ck_assert_uint_le(io->len, io->bs->caw_max);
		for (k = 0; k < io->len && medium[io->offset + k] == b[k]; k++)
			;
		if (k < io->len) {
			io->miscompare = k;
			io->result = -EILSEQ;
		} else {
			memcpy(medium + io->offset, b + io->len, io->len);
		}
		break;
	}
	default:
		io->result = 0;
		break;
	}
	io_engine_complete(e, io);
}

static const struct backstore_ops ns_ops = { .name = "native-caw", .submit = ns_submit };

static struct scsi_target tgt;
static struct scsi_nexus nx;
static struct io_engine *eng;
static struct backstore nbs;
static struct scsi_lun *lun;
static uint8_t *buf;
static int completed;

static void make_lun(uint32_t block_size, uint32_t caw_max)
{
	struct scsi_lun_params lp = { .id = 0, .block_size = block_size,
				      .nblocks = N_BLOCKS, .thin = true };

	memset(&nbs, 0, sizeof(nbs));
	nbs.ops = &ns_ops;
	nbs.fd = -1;
	nbs.size = (uint64_t)N_BLOCKS * block_size;
	nbs.thin = true;
	nbs.discard_zeroes = true;
	nbs.caw_max = caw_max;
	nbs.discard_granularity = 64u << 10;
	ck_assert_int_eq(scsi_lun_create(&lun, &tgt, &lp, &nbs), 0);
	tgt.luns[0] = lun;
	scsi_ua_clear(&nx, 0);
}

static void setup(void)
{
	eng = io_engine_create(16, false);
	scsi_target_init(&tgt, N_NAME, 1);
	memset(&nx, 0, sizeof(nx));
	nx.id = 1;
	nx.rel_tport_id = 1;
	nx.tpgt = 1;
	scsi_nexus_attach(&tgt, &nx);
	buf = aligned_alloc(4096, N_BUF);
	ck_assert_ptr_nonnull(buf);
	memset(medium, 0, sizeof(medium));
	memset(&seen, 0, sizeof(seen));
	completed = 0;
	lun = NULL;
}

static void teardown(void)
{
	scsi_nexus_detach(&nx);
	if (lun)
		scsi_lun_destroy(lun);
	scsi_target_destroy(&tgt);
	io_engine_destroy(eng);
	free(buf);
}

static void on_complete(struct scsi_cmd *cmd)
{
	(void)cmd;
	completed++;
}

/* Parse and run a CDB as the transport does; false when parsing failed. */
static bool run(struct scsi_cmd *c, const uint8_t *cdb, const void *out, uint32_t out_len)
{
	int before = completed;

	memset(c, 0, sizeof(*c));
	c->buf = buf;
	c->buf_cap = N_BUF;
	scsi_cmd_reset(c);
	c->nexus = &nx;
	c->lun_id = 0;
	memcpy(c->cdb, cdb, 16);
	c->eng = eng;
	c->complete = on_complete;
	c->exp_xfer_len = out ? out_len : 0;
	c->exp_dir = out ? SCSI_DIR_WRITE : SCSI_DIR_READ;
	if (out)
		memcpy(buf, out, out_len);
	if (scsi_cmd_parse(c) != SR_OK)
		return false;
	if (!out)
		c->exp_xfer_len = c->xfer_len;
	if (c->dir == SCSI_DIR_WRITE)
		c->buf_len = MIN(c->xfer_len, c->exp_xfer_len);
	if (!scsi_cmd_execute(c))
		return true;
	while (completed == before)
		io_engine_wait(eng);
	return true;
}

static void caw_cdb(uint8_t *cdb, uint64_t lba, uint8_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = 0x89;
	put_be64(cdb + 2, lba);
	cdb[13] = n;
}

START_TEST(native_one_request)
{
	struct scsi_cmd c;
	uint8_t cdb[16], data[1024];

	make_lun(512, 512);
	memset(medium + 7 * 512, 'A', 512);
	memset(data, 'A', 512);
	memset(data + 512, 'B', 512);
	caw_cdb(cdb, 7, 1);
	ck_assert(run(&c, cdb, data, 1024));
	ck_assert_uint_eq(c.status, SAM_STAT_GOOD);
	/* one request to the store, no READ or WRITE of our own */
	ck_assert_uint_eq(seen.caws, 1);
	ck_assert_uint_eq(seen.reads, 0);
	ck_assert_uint_eq(seen.writes, 0);
	ck_assert_uint_eq(medium[7 * 512], 'B');
	ck_assert_uint_eq(medium[8 * 512 - 1], 'B');
	/* a mismatch at byte 300: MISCOMPARE, INFORMATION 300, nothing written */
	memset(data, 'B', 512);
	data[300] = 'x';
	memset(data + 512, 'C', 512);
	ck_assert(run(&c, cdb, data, 1024));
	ck_assert_uint_eq(c.status, SAM_STAT_CHECK_CONDITION);
	ck_assert_uint_eq(c.sense[2] & 0x0f, SK_MISCOMPARE);
	ck_assert_uint_eq(c.sense[12], 0x1d);
	ck_assert_uint_eq(c.sense[0] & 0x80, 0x80);
	ck_assert_uint_eq(get_be32(c.sense + 3), 300);
	ck_assert_uint_eq(medium[7 * 512 + 300], 'B');
	ck_assert_uint_eq(seen.caws, 2);
}
END_TEST

START_TEST(native_limits_advertised_and_enforced)
{
	struct scsi_cmd c;
	uint8_t cdb[16], data[2048];

	make_lun(512, 512);
	/* two blocks are more than the store compares: INVALID FIELD IN CDB */
	memset(data, 0, sizeof(data));
	caw_cdb(cdb, 0, 2);
	ck_assert(!run(&c, cdb, data, 2048));
	ck_assert_uint_eq(c.sense[2] & 0x0f, SK_ILLEGAL_REQUEST);
	ck_assert_uint_eq(c.sense[12], 0x24);
	ck_assert_uint_eq(seen.caws, 0);
	/* VPD B0: MAXIMUM COMPARE AND WRITE LENGTH 1, OPTIMAL UNMAP
	 * GRANULARITY the store's 64 KiB (128 blocks) */
	memset(cdb, 0, 16);
	cdb[0] = 0x12;
	cdb[1] = 1;
	cdb[2] = 0xb0;
	cdb[4] = 0xff;
	ck_assert(run(&c, cdb, NULL, 0));
	ck_assert_uint_eq(c.status, SAM_STAT_GOOD);
	ck_assert_uint_eq(buf[5], 1);
	ck_assert_uint_eq(get_be32(buf + 28), 128);
}
END_TEST

START_TEST(native_smaller_than_a_block)
{
	struct scsi_cmd c;
	uint8_t cdb[16], data[8192];

	/* 4096-byte blocks on a store that compares 512 bytes: the SCSI
	 * layer compares under its own range lock (READ, then WRITE) */
	make_lun(4096, 512);
	memset(data, 0, 4096);
	memset(data + 4096, 'Z', 4096);
	caw_cdb(cdb, 3, 1);
	ck_assert(run(&c, cdb, data, 8192));
	ck_assert_uint_eq(c.status, SAM_STAT_GOOD);
	ck_assert_uint_eq(seen.caws, 0);
	ck_assert_uint_eq(seen.reads, 1);
	ck_assert_uint_eq(seen.writes, 1);
	ck_assert_uint_eq(medium[3 * 4096], 'Z');
}
END_TEST

Suite *caw_native_suite(void)
{
	Suite *s = suite_create("caw_native");
	TCase *t = tcase_create("native");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, native_one_request);
	tcase_add_test(t, native_limits_advertised_and_enforced);
	tcase_add_test(t, native_smaller_than_a_block);
	suite_add_tcase(s, t);
	return s;
}
