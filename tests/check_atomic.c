/*
 * Check suite "atomic": WRITE ATOMIC(16) (scsi/sbc_atomic.c) and the
 * atomic write facts of the backstores (backstore/bs_atomic.c).
 *
 *  - the CDB checks (boundary, alignment, granularity, maximum, range,
 *    reserved bits; no opcode where nothing is atomic), table-driven;
 *  - data through a memory LUN (any length is atomic there);
 *  - on a fake backstore with atomic units of 4 KiB..64 KiB: a command
 *    that is not a naturally aligned power of two is widened (READ of the
 *    window, then one BS_IO_ATOMIC WRITE of all of it, the command's data
 *    laid in); one that straddles the largest unit is refused unwritten;
 *  - the range lock: an overlapping READ or WRITE waits for the atomic
 *    write, a disjoint one does not;
 *  - the window arithmetic and the clamping of device limits, tables.
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tests/check_suites.h"
#include "tests/scsi_harness.h"
#include "scsi/scsi.h"
#include "scsi/scsi_int.h"
#include "backstore/backstore.h"
#include "backstore/bs_impl.h"
#include "common/util.h"

#define T_NAME      "iqn.2026-01.org.example:atomic-test"
#define MEM_BLOCKS  8192u /* 4 MiB of 512-byte blocks */
#define FAKE_BLOCKS (1u << 20)
#define BUF_CAP     (9u * 1024 * 1024)

static struct scsi_target tgt;
static struct scsi_nexus nx;
static struct backstore *membs;
static struct sh_fake fake, plain;
static struct scsi_lun *lun0, *lun1, *lun2; /* memory, atomic fake, plain fake */
static uint8_t *dbuf;                       /* data-out of the commands */

static void at_setup(void)
{
	struct scsi_lun_params lp = {.id = 0, .block_size = 512, .nblocks = MEM_BLOCKS};

	sh_setup(BUF_CAP);
	dbuf = aligned_alloc(4096, 1u << 20);
	ck_assert_ptr_nonnull(dbuf);
	membs = sh_memory_bs((uint64_t)MEM_BLOCKS * 512, false);
	scsi_target_init(&tgt, T_NAME, 1);
	ck_assert_int_eq(scsi_lun_create(&lun0, &tgt, &lp, membs), 0);
	/* LUN 1: a device with atomic writes of 4 KiB to 64 KiB */
	sh_fake_init(&fake, (uint64_t)FAKE_BLOCKS * 512);
	fake.bs.phys_block_size = 4096;
	fake.bs.atomic_min = 4096;
	fake.bs.atomic_max = 65536;
	lp.id = 1;
	lp.nblocks = FAKE_BLOCKS;
	ck_assert_int_eq(scsi_lun_create(&lun1, &tgt, &lp, &fake.bs), 0);
	/* LUN 2: a device without */
	sh_fake_init(&plain, (uint64_t)FAKE_BLOCKS * 512);
	plain.bs.phys_block_size = 4096;
	lp.id = 2;
	ck_assert_int_eq(scsi_lun_create(&lun2, &tgt, &lp, &plain.bs), 0);
	scsi_target_set_lun(&tgt, 0, lun0);
	scsi_target_set_lun(&tgt, 1, lun1);
	scsi_target_set_lun(&tgt, 2, lun2);
	sh_nexus_attach(&tgt, &nx, 1);
}

static void at_teardown(void)
{
	scsi_nexus_detach(&nx);
	scsi_lun_destroy(lun0);
	scsi_lun_destroy(lun1);
	scsi_lun_destroy(lun2);
	scsi_target_destroy(&tgt);
	sh_teardown();
	backstore_close(membs);
	free(dbuf);
}

static void wa16(uint8_t *cdb, uint64_t lba, uint16_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = 0x9c;
	put_be64(cdb + 2, lba);
	put_be16(cdb + 12, n);
}

/* --- the CDB checks, on the memory LUN (G = 8 blocks, M = 16384) --- */

struct wa_case {
	const char *name;
	uint8_t lun;
	uint64_t lba;
	uint16_t n;
	uint8_t byte1; /* WRPROTECT / DPO / FUA */
	uint16_t boundary;
	uint8_t key, asc; /* 0: GOOD */
	int16_t field;    /* -1: not checked */
};

static const struct wa_case wa_cases[] = {
	{"8 blocks at 0", 0, 0, 8, 0, 0, 0, 0, -1},
	{"24 blocks at 8 (any shape on memory)", 0, 8, 24, 0, 0, 0, 0, -1},
	{"FUA and DPO", 0, 16, 8, 0x18, 0, 0, 0, -1},
	{"0 blocks: nothing, GOOD", 0, 5, 0, 0, 0, 0, 0, -1},
	{"0 blocks at the end", 0, MEM_BLOCKS, 0, 0, 0, 0, 0, -1},
	{"0 blocks past the end", 0, MEM_BLOCKS + 8, 0, 0, 0, 5, 0x21, -1},
	{"last 8 blocks", 0, MEM_BLOCKS - 8, 8, 0, 0, 0, 0, -1},
	{"beyond the end", 0, MEM_BLOCKS - 8, 16, 0, 0, 5, 0x21, -1},
	{"LBA 2^63", 0, 1ull << 63, 8, 0, 0, 5, 0x21, -1},
	{"misaligned LBA", 0, 1, 8, 0, 0, 5, 0x24, 2},
	{"not a multiple of the granularity", 0, 0, 4, 0, 0, 5, 0x24, 12},
	{"ATOMIC BOUNDARY set", 0, 0, 8, 0, 8, 5, 0x24, 10},
	{"WRPROTECT", 0, 0, 8, 0x20, 0, 5, 0x24, 1},
	{"no atomic writes on LUN 2", 2, 0, 8, 0, 0, 5, 0x20, -1},
	{"widened on LUN 1: refused across 64 KiB", 1, 120, 16, 0, 0, 5, 0x24, 12},
	{"LUN 1: above its 64 KiB maximum", 1, 0, 136, 0, 0, 5, 0x24, 12},
};

START_TEST(test_cdb_cases)
{
	const struct wa_case *c = &wa_cases[_i];
	uint8_t cdb[16];
	struct sh_run r;

	wa16(cdb, c->lba, c->n);
	cdb[1] = c->byte1;
	put_be16(cdb + 10, c->boundary);
	memset(dbuf, 0x11, (size_t)c->n * 512);
	sh_run(&r, &nx, c->lun, cdb, 16, dbuf, (uint32_t)c->n * 512);
	if (!c->key) {
		ck_assert_msg(r.cmd.status == SAM_STAT_GOOD, "%s: status %#x asc %#x", c->name,
			      r.cmd.status, r.cmd.sense[12]);
		return;
	}
	ck_assert_msg(r.parse_failed, "%s: not refused at parse", c->name);
	sh_expect_sense(&r.cmd, c->key, c->asc, 0);
	if (c->field >= 0) {
		ck_assert(r.cmd.field_valid);
		ck_assert_uint_eq(r.cmd.field_byte, (unsigned)c->field);
	}
	if (c->lun == 1)
		ck_assert_int_eq(fake.npending, 0); /* nothing written */
}
END_TEST

START_TEST(test_vpd_fields)
{
	static const uint8_t b0[6] = {0x12, 0x01, 0xb0, 0, 64, 0};
	struct sh_run r;

	sh_run(&r, &nx, 0, b0, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be32(sh_buf + 44), 16384); /* memory: MAXIMUM TRANSFER LENGTH */
	ck_assert_uint_eq(get_be32(sh_buf + 48), 8);     /* one physical block */
	ck_assert_uint_eq(get_be32(sh_buf + 52), 8);
	ck_assert_uint_eq(get_be32(sh_buf + 56), 0);
	ck_assert_uint_eq(get_be32(sh_buf + 60), 0);
	sh_run(&r, &nx, 1, b0, 6, NULL, 0);
	ck_assert_uint_eq(get_be32(sh_buf + 44), 128); /* the device's 64 KiB */
	ck_assert_uint_eq(get_be32(sh_buf + 52), 8);
	sh_run(&r, &nx, 2, b0, 6, NULL, 0);
	ck_assert_uint_eq(get_be32(sh_buf + 44), 0);
	ck_assert_uint_eq(get_be32(sh_buf + 48), 0);
	ck_assert_uint_eq(get_be32(sh_buf + 52), 0);
}
END_TEST

/* The data of an atomic write is there afterwards, next to old data. */
START_TEST(test_memory_round_trip)
{
	uint8_t cdb[16], r10[10] = {0x28, 0, 0, 0, 0, 0, 0, 0, 40, 0};
	struct sh_run r;

	wa16(cdb, 0, 40);
	memset(dbuf, 0x22, 40 * 512);
	sh_run(&r, &nx, 0, cdb, 16, dbuf, 40 * 512);
	sh_expect_good(&r.cmd);
	wa16(cdb, 8, 24);
	memset(dbuf, 0x33, 24 * 512);
	sh_run(&r, &nx, 0, cdb, 16, dbuf, 24 * 512);
	sh_expect_good(&r.cmd);
	memset(sh_buf, 0, 40 * 512);
	sh_run(&r, &nx, 0, r10, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	for (unsigned i = 0; i < 40 * 512; i++)
		ck_assert_uint_eq(sh_buf[i], i >= 8 * 512 && i < 32 * 512 ? 0x33 : 0x22);
}
END_TEST

/* 24 blocks at LBA 8 with units of 8..128 blocks: the window is the 32
 * blocks at 0, read first, written whole with BS_IO_ATOMIC. */
START_TEST(test_widened)
{
	uint8_t cdb[16];
	struct sh_run r;
	struct bs_io *io;
	const uint8_t *w;

	wa16(cdb, 8, 24);
	memset(dbuf, 0x44, 24 * 512);
	sh_run(&r, &nx, 1, cdb, 16, dbuf, 24 * 512);
	ck_assert(r.pending);
	ck_assert_int_eq(fake.npending, 1);
	io = fake.pending[0];
	ck_assert_int_eq(io->op, BS_OP_READ);
	ck_assert_uint_eq(io->offset, 0);
	ck_assert_uint_eq(io->len, 32 * 512);
	sh_fake_release(&fake, 0, 0x5a); /* the blocks around hold 0x5a */
	ck_assert_int_eq(fake.npending, 1);
	io = fake.pending[0];
	ck_assert_int_eq(io->op, BS_OP_WRITE);
	ck_assert(io->flags & BS_IO_ATOMIC);
	ck_assert_uint_eq(io->offset, 0);
	ck_assert_uint_eq(io->len, 32 * 512);
	ck_assert_int_eq(io->iovcnt, 1);
	w = io->iov[0].iov_base;
	for (unsigned i = 0; i < 32 * 512; i++)
		ck_assert_uint_eq(w[i], i >= 8 * 512 ? 0x44 : 0x5a);
	sh_fake_release(&fake, 0, 0);
	ck_assert(r.done);
	sh_expect_good(&r.cmd);

	/* a naturally aligned power of two goes as it is */
	wa16(cdb, 64, 64);
	sh_run(&r, &nx, 1, cdb, 16, dbuf, 64 * 512);
	ck_assert_int_eq(fake.npending, 1);
	io = fake.pending[0];
	ck_assert_int_eq(io->op, BS_OP_WRITE);
	ck_assert(io->flags & BS_IO_ATOMIC);
	ck_assert_uint_eq(io->offset, 64 * 512);
	ck_assert_uint_eq(io->len, 64 * 512);
	sh_fake_release(&fake, -EIO, 0);
	ck_assert(r.done);
	sh_expect_sense(&r.cmd, 3, 0x0c, 0); /* a failed atomic write: WRITE ERROR */
}
END_TEST

/* SBC-4 4.29.3: what overlaps an atomic write waits for it. */
START_TEST(test_range_lock)
{
	uint8_t cdb[16], rd[10] = {0x28, 0, 0, 0, 0, 16, 0, 0, 8, 0};
	uint8_t wr[10] = {0x2a, 0, 0, 0, 0, 8, 0, 0, 8, 0};
	uint8_t far[10] = {0x28, 0, 0, 0, 0x10, 0, 0, 0, 8, 0};
	uint8_t *b1 = aligned_alloc(4096, 1u << 20), *b2 = aligned_alloc(4096, 1u << 20);
	uint8_t *b3 = aligned_alloc(4096, 1u << 20), *own = sh_buf;
	struct sh_run a, r, w, f;

	ck_assert(b1 && b2 && b3);
	wa16(cdb, 0, 32);
	sh_buf = b1;
	sh_run(&a, &nx, 1, cdb, 16, dbuf, 32 * 512);
	ck_assert_int_eq(fake.npending, 1); /* the atomic write, held */
	sh_buf = b2;
	sh_run(&r, &nx, 1, rd, 10, NULL, 0); /* READ of LBAs 16..23 */
	sh_buf = b3;
	sh_run(&w, &nx, 1, wr, 10, dbuf, 8 * 512); /* WRITE of LBAs 8..15 */
	ck_assert(r.pending && w.pending);
	ck_assert_int_eq(fake.npending, 1); /* neither reached the backstore */
	sh_buf = own;
	sh_run(&f, &nx, 1, far, 10, NULL, 0); /* a READ elsewhere goes on */
	ck_assert_int_eq(fake.npending, 2);
	sh_fake_release(&fake, 0, 0); /* the atomic write ends */
	while (fake.npending < 3)
		io_engine_wait(sh_eng);
	ck_assert(a.done);
	sh_expect_good(&a.cmd);
	sh_fake_release(&fake, 0, 0); /* the far READ */
	sh_fake_release(&fake, 0, 0);
	sh_fake_release(&fake, 0, 0);
	ck_assert(f.done && r.done && w.done);
	sh_expect_good(&r.cmd);
	sh_expect_good(&w.cmd);
	free(b1);
	free(b2);
	free(b3);
}
END_TEST

static bool at_done;

static void at_complete(struct scsi_cmd *cmd)
{
	(void)cmd;
	at_done = true;
}

/* A zero-copy READ keeps its range locked until the transport releases
 * it (its bytes sent): an atomic write over it waits until then. */
START_TEST(test_zero_copy_read_holds)
{
	uint8_t rd[10] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 16, 0 }, cdb[16];
	struct sh_run r, a;

	sh_zc_ok = sh_defer_release = true;
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_ptr_nonnull(r.cmd.data_ptr);        /* sent from the LUN's memory */
	ck_assert(rangelock_held(&r.cmd.rl));
	sh_zc_ok = sh_defer_release = false;
	wa16(cdb, 8, 8);
	memset(dbuf, 0x55, 8 * 512);
	memset(&a, 0, sizeof(a));
	a.cmd.buf = sh_buf;
	a.cmd.buf_cap = sh_buf_cap;
	scsi_cmd_reset(&a.cmd);
	a.cmd.nexus = &nx;
	a.cmd.lun_id = 0;
	memcpy(a.cmd.cdb, cdb, 16);
	a.cmd.eng = sh_eng;
	a.cmd.complete = at_complete;
	at_done = false;
	a.cmd.exp_xfer_len = 8 * 512;
	a.cmd.exp_dir = SCSI_DIR_WRITE;
	ck_assert_int_eq(scsi_cmd_parse(&a.cmd), SR_OK);
	memcpy(a.cmd.buf, dbuf, 8 * 512);
	a.cmd.buf_len = 8 * 512;
	ck_assert(scsi_cmd_execute(&a.cmd));           /* PENDING: waits for the READ */
	ck_assert(a.cmd.rl.state == RL_WAITING);
	for (unsigned i = 0; i < 16 * 512; i++)       /* what the READ sends, unchanged */
		ck_assert_uint_eq(r.cmd.data_ptr[i], 0);
	scsi_cmd_release(&r.cmd);
	while (!at_done)
		io_engine_wait(sh_eng);
	ck_assert_uint_eq(a.cmd.status, SAM_STAT_GOOD);
	scsi_cmd_release(&a.cmd);
}
END_TEST

/* --- tables: the window, the device limits --- */

START_TEST(test_window_table)
{
	static const struct {
		uint64_t lba, n, umin, umax, cap;
		bool ok;
		uint64_t wlba, wn;
	} t[] = {
		{0, 8, 8, 128, 1024, true, 0, 8},
		{8, 24, 8, 128, 1024, true, 0, 32},
		{8, 8, 8, 128, 1024, true, 8, 8},
		{120, 16, 8, 128, 1024, false, 0, 0}, /* straddles 128 */
		{112, 16, 8, 128, 1024, true, 112, 16},
		{96, 24, 8, 128, 1024, true, 96, 32},
		{1000, 16, 8, 128, 1016, false, 0, 0}, /* window past the end */
		{1000, 8, 8, 128, 1016, true, 1000, 8},
		{0, 256, 8, 128, 1024, false, 0, 0}, /* above the largest */
		{0, 1, 8, 128, 1024, true, 0, 8},    /* at least the smallest */
		{0, 0, 8, 128, 1024, false, 0, 0},
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		uint64_t wlba = 99, wn = 99;
		bool ok = scsi_atomic_window(t[i].lba, t[i].n, t[i].umin, t[i].umax, t[i].cap,
					     &wlba, &wn);

		ck_assert_msg(ok == t[i].ok, "case %zu", i);
		if (ok) {
			ck_assert_uint_eq(wlba, t[i].wlba);
			ck_assert_uint_eq(wn, t[i].wn);
		}
	}
}
END_TEST

START_TEST(test_clamp_table)
{
	static const struct {
		uint32_t umin, umax, maxb, bnd, lo, hi;
	} t[] = {
		{4096, 1u << 20, 0, 0, 4096, 1u << 20}, /* XFS, software atomic */
		{512, 65536, 0, 0, 512, 65536},
		{4096, 24576, 0, 0, 4096, 16384},     /* largest power of two */
		{4096, 65536, 32768, 0, 4096, 32768}, /* atomic_write_max_bytes */
		{4096, 65536, 0, 16384, 4096, 16384}, /* boundary */
		{4096, 65536, 0, 24576, 0, 0},        /* odd boundary: none */
		{8192, 4096, 0, 0, 0, 0},
		{0, 0, 0, 0, 0, 0}, /* the device has none */
		{3000, 65536, 0, 0, 0, 0},
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		uint32_t lo = 1, hi = 1;

		bs_atomic_clamp(t[i].umin, t[i].umax, t[i].maxb, t[i].bnd, &lo, &hi);
		ck_assert_msg(lo == t[i].lo && hi == t[i].hi, "case %zu: %u..%u", i, lo, hi);
	}
}
END_TEST

Suite *atomic_suite(void)
{
	Suite *s = suite_create("atomic");
	TCase *tc = tcase_create("write_atomic");

	tcase_add_checked_fixture(tc, at_setup, at_teardown);
	tcase_add_loop_test(tc, test_cdb_cases, 0, (int)ARRAY_SIZE(wa_cases));
	tcase_add_test(tc, test_vpd_fields);
	tcase_add_test(tc, test_memory_round_trip);
	tcase_add_test(tc, test_widened);
	tcase_add_test(tc, test_range_lock);
	tcase_add_test(tc, test_zero_copy_read_holds);
	suite_add_tcase(s, tc);
	tc = tcase_create("tables");
	tcase_add_test(tc, test_window_table);
	tcase_add_test(tc, test_clamp_table);
	suite_add_tcase(s, tc);
	return s;
}
