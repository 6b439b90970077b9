/*
 * Check suite for scsi/: table-driven CDB cases plus focused tests of
 * INQUIRY/VPD, MODE SENSE/SELECT, unit attentions, sense formats, READ
 * CAPACITY, REPORT SUPPORTED OPERATION CODES, data round trips through the
 * memory backstore and error paths through a fake asynchronous backstore
 * that completes only when the test says so (tests/scsi_harness.c).
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tests/check_suites.h"
#include "tests/scsi_harness.h"
#include "scsi/scsi.h"
#include "backstore/backstore.h"
#include "backstore/io_engine.h"
#include "common/util.h"

#define T_NAME "iqn.2026-01.org.example:scsi-test"
#define MEM_BLOCKS 16384u        /* 8 MiB of 512-byte blocks */
#define BUF_CAP (9u * 1024 * 1024)

/* --- fixture --- */
static struct scsi_target tgt;
static struct scsi_nexus nx, nx2;
static struct backstore *membs;
static struct sh_fake fake;               /* LUN 2: holds requests until released */
static struct scsi_lun *lun0, *lun1, *lun2, *lun3;
static uint8_t *buf;

static void setup(void)
{
	struct scsi_lun_params lp = { .id = 0, .block_size = 512, .nblocks = MEM_BLOCKS,
				      .sanitize = true };

	sh_setup(BUF_CAP);
	buf = sh_buf;
	membs = sh_memory_bs((uint64_t)MEM_BLOCKS * 512, false);
	sh_fake_init(&fake, 0);

	scsi_target_init(&tgt, T_NAME, 1);
	ck_assert_int_eq(scsi_lun_create(&lun0, &tgt, &lp, membs), 0);
	/* LUN 1: removable, memory backed */
	lp.id = 1;
	lp.removable = true;
	lp.sanitize = false;
	ck_assert_int_eq(scsi_lun_create(&lun1, &tgt, &lp, membs), 0);
	/* LUN 2: fake async backstore, more than 2^32 blocks */
	lp.id = 2;
	lp.removable = false;
	lp.nblocks = (1ull << 33) + 7;
	ck_assert_int_eq(scsi_lun_create(&lun2, &tgt, &lp, &fake.bs), 0);
	/* LUN 3: read-only, 4096-byte blocks */
	lp.id = 3;
	lp.block_size = 4096;
	lp.nblocks = 1024;
	lp.read_only = true;
	ck_assert_int_eq(scsi_lun_create(&lun3, &tgt, &lp, membs), 0);
	tgt.luns[0] = lun0;
	tgt.luns[1] = lun1;
	tgt.luns[2] = lun2;
	tgt.luns[3] = lun3;

	/* most tests start without the power-on UA */
	sh_nexus_attach(&tgt, &nx, 1);
	sh_nexus_attach(&tgt, &nx2, 2);
}

static void teardown(void)
{
	scsi_nexus_detach(&nx);
	scsi_nexus_detach(&nx2);
	scsi_lun_destroy(lun0);
	scsi_lun_destroy(lun1);
	scsi_lun_destroy(lun2);
	scsi_lun_destroy(lun3);
	scsi_target_destroy(&tgt);
	sh_teardown();
	backstore_close(membs);
}

/* LUN 2's oldest request ends (READs read 0x5a). */
static void fake_release(int64_t result)
{
	sh_fake_release(&fake, result, 0x5a);
}

/* --- table-driven CDB cases --- */
struct cdb_case {
	const char *name;
	uint8_t lun;
	uint8_t cdb[16];
	uint8_t status;
	uint8_t key, asc, ascq;
	int16_t field_byte;          /* -1: no field pointer checked */
	int8_t field_bit;            /* -1: no bit pointer */
	uint32_t xfer_len;           /* checked when status is GOOD */
};

#define GOOD_X(x) SAM_STAT_GOOD, 0, 0, 0, -1, -1, x
#define CC(k, a, q) SAM_STAT_CHECK_CONDITION, k, a, q
#define FIELD(b, bit) CC(5, 0x24, 0), b, bit, 0
#define OOB CC(5, 0x21, 0), -1, -1, 0

static const struct cdb_case cdb_cases[] = {
	{ "unknown opcode", 0, { 0x02 }, CC(5, 0x20, 0), -1, -1, 0 },
	{ "unknown service action", 0, { 0x9e, 0x1f }, FIELD(1, 4) },
	{ "unknown MAINTENANCE IN SA", 0, { 0xa3, 0x05 }, FIELD(1, 4) },
	{ "TUR reserved byte 1", 0, { 0x00, 0x01 }, FIELD(1, 0) },
	{ "TUR NACA", 0, { 0x00, 0, 0, 0, 0, 0x04 }, FIELD(5, 2) },
	{ "TUR vendor bits ignored", 0, { 0x00, 0, 0, 0, 0, 0xc0 }, GOOD_X(0) },
	{ "INQUIRY CMDDT", 0, { 0x12, 0x02, 0, 0, 36 }, FIELD(1, 1) },
	{ "INQUIRY page without EVPD", 0, { 0x12, 0, 0x80, 0, 36 }, FIELD(2, -1) },
	{ "INQUIRY unknown VPD", 0, { 0x12, 1, 0x42, 0, 255 }, FIELD(2, -1) },
	{ "INQUIRY alloc", 0, { 0x12, 0, 0, 0x01, 0x00 }, GOOD_X(256) },
	{ "REQUEST SENSE reserved", 0, { 0x03, 0x02, 0, 0, 18 }, FIELD(1, 1) },
	{ "READ(10) RDPROTECT", 0, { 0x28, 0x20, 0, 0, 0, 0, 0, 0, 1, 0 }, FIELD(1, 5) },
	{ "READ(10) NACA", 0, { 0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0x04 }, FIELD(9, 2) },
	{ "READ(10) beyond end", 0, { 0x28, 0, 0, 0, 0x3f, 0xff, 0, 0, 2, 0 }, OOB },
	{ "READ(10) last block", 0, { 0x28, 0, 0, 0, 0x3f, 0xff, 0, 0, 1, 0 }, GOOD_X(512) },
	{ "READ(10) 0 blocks at end", 0, { 0x28, 0, 0, 0, 0x40, 0x00, 0, 0, 0, 0 }, GOOD_X(0) },
	{ "READ(10) 0 blocks past end", 0, { 0x28, 0, 0, 0, 0x40, 0x01, 0, 0, 0, 0 }, OOB },
	{ "READ(16) LBA wraps", 0, { 0x88, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				     0, 0, 0, 2, 0, 0 }, OOB },
	{ "READ(12) beyond", 0, { 0xa8, 0, 0, 0, 0x3f, 0xff, 0, 0, 0, 2, 0, 0 }, OOB },
	{ "READ(6) 0 = 256 blocks", 0, { 0x08, 0, 0, 0, 0, 0 }, GOOD_X(256 * 512) },
	{ "READ(6) 256 blocks past end", 0, { 0x08, 0, 0x3f, 0x01, 0, 0 }, OOB },
	{ "WRITE(10) too long", 0, { 0x2a, 0, 0, 0, 0, 0, 0, 0x40, 0x01, 0 }, FIELD(7, -1) },
	{ "WRITE(16) group bits", 0, { 0x8a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x20, 0 },
	  FIELD(14, 5) },
	{ "WRITE(10) read-only LUN", 3, { 0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0 },
	  CC(7, 0x27, 0), -1, -1, 0 },
	{ "VERIFY(10) BYTCHK 2", 0, { 0x2f, 0x04, 0, 0, 0, 0, 0, 0, 1, 0 }, FIELD(1, 2) },
	{ "VERIFY(16) BYTCHK 1 xfer", 0, { 0x8f, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0 },
	  GOOD_X(2048) },
	{ "VERIFY(10) BYTCHK 3 xfer", 0, { 0x2f, 0x06, 0, 0, 0, 0, 0, 0, 8, 0 }, GOOD_X(512) },
	{ "SYNC CACHE(10) beyond", 0, { 0x35, 0, 0, 0, 0x40, 0x00, 0, 0, 1, 0 }, OOB },
	{ "PRE-FETCH(16) wraps", 0, { 0x90, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0,
				      0, 0, 0, 0x20, 0, 0 }, OOB },
	{ "REPORT LUNS select 3", 0, { 0xa0, 0, 3, 0, 0, 0, 0, 0, 1, 0, 0, 0 }, FIELD(2, -1) },
	{ "REPORT LUNS alloc 8", 0, { 0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0 }, FIELD(6, -1) },
	{ "REPORT LUNS clamp", 0, { 0xa0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  GOOD_X(8 + 8 * SCSI_MAX_LUNS) },
	{ "MODE SENSE unknown page", 0, { 0x1a, 0, 0x01, 0, 255, 0 }, FIELD(2, 5) },
	{ "MODE SENSE saved", 0, { 0x1a, 0, 0xc8, 0, 255, 0 }, CC(5, 0x39, 0), -1, -1, 0 },
	{ "MODE SENSE subpage 5", 0, { 0x1a, 0, 0x08, 5, 255, 0 }, FIELD(3, 7) },
	{ "MODE SENSE(10) LLBAA", 0, { 0x5a, 0x10, 0x3f, 0, 0, 0, 0, 0x02, 0, 0 }, GOOD_X(512) },
	{ "MODE SENSE(6) LLBAA reserved", 0, { 0x1a, 0x10, 0x3f, 0, 255, 0 }, FIELD(1, 4) },
	{ "MODE SELECT PF=0", 0, { 0x15, 0x00, 0, 0, 12, 0 }, FIELD(1, 4) },
	{ "MODE SELECT SP=1", 0, { 0x15, 0x11, 0, 0, 12, 0 }, FIELD(1, 0) },
	{ "RSOC options 4", 0, { 0xa3, 0x0c, 0x04, 0, 0, 0, 0, 0, 1, 0, 0, 0 }, FIELD(2, 2) },
	{ "RSOC reserved bit", 0, { 0xa3, 0x0c, 0x40, 0, 0, 0, 0, 0, 1, 0, 0, 0 }, FIELD(2, 6) },
	{ "RSTMF alloc 2", 0, { 0xa3, 0x0d, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0 }, FIELD(6, -1) },
	{ "PREVENT on fixed LUN", 0, { 0x1e, 0, 0, 0, 1, 0 }, CC(5, 0x20, 0), -1, -1, 0 },
	{ "PREVENT 10b", 1, { 0x1e, 0, 0, 0, 2, 0 }, FIELD(4, 1) },
	{ "START STOP LOEJ fixed", 0, { 0x1b, 0, 0, 0, 0x02, 0 }, FIELD(4, 1) },
	{ "START STOP modifier without IDLE/STANDBY", 0, { 0x1b, 0, 0, 0x01, 0x10, 0 }, FIELD(3, 3) },
	{ "READ CAPACITY(10) LBA", 0, { 0x25, 0, 0x80, 0, 0, 0, 0, 0, 0, 0 }, FIELD(2, 7) },
	{ "READ CAPACITY(16) alloc", 0, { 0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 0, 0 },
	  GOOD_X(12) },
	{ "READ DEFECT(10)", 0, { 0x37, 0, 0x18, 0, 0, 0, 0, 0, 0xff, 0 }, GOOD_X(4) },
	{ "SANITIZE crypto erase", 0, { 0x48, 0x03, 0, 0, 0, 0, 0, 0, 0, 0 }, FIELD(1, 4) },
	{ "SANITIZE overwrite short list", 0, { 0x48, 0x01, 0, 0, 0, 0, 0, 0, 4, 0 }, FIELD(7, -1) },
	{ "SANITIZE exit with list", 0, { 0x48, 0x1f, 0, 0, 0, 0, 0, 0, 8, 0 }, FIELD(7, -1) },
	{ "SANITIZE hidden without sanitize", 1, { 0x48, 0x01, 0, 0, 0, 0, 0, 0, 8, 0 },
	  CC(5, 0x20, 0), -1, -1, 0 },
	{ "no such LUN", 9, { 0x00 }, CC(5, 0x25, 0), -1, -1, 0 },
	{ "no such LUN, unknown opcode", 9, { 0x02 }, CC(5, 0x25, 0), -1, -1, 0 },
	{ "LUN beyond the table", 200, { 0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0 },
	  CC(5, 0x25, 0), -1, -1, 0 },
	{ "REPORT LUNS without the LUN", 9, { 0xa0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0 },
	  GOOD_X(256) },
	{ "INQUIRY without the LUN", 9, { 0x12, 0, 0, 0, 36, 0 }, GOOD_X(36) },
};

START_TEST(test_cdb_table)
{
	const struct cdb_case *t = &cdb_cases[_i];
	struct sh_run r;

	sh_run(&r, &nx, t->lun, t->cdb, 16, NULL, 0);
	ck_assert_msg(r.cmd.status == t->status, "%s: status %#x, want %#x", t->name,
		      r.cmd.status, t->status);
	if (t->status == SAM_STAT_CHECK_CONDITION) {
		ck_assert_msg((r.cmd.sense[2] & 0x0f) == t->key && r.cmd.sense[12] == t->asc &&
			      r.cmd.sense[13] == t->ascq, "%s: sense %x/%x/%x", t->name,
			      r.cmd.sense[2] & 0x0f, r.cmd.sense[12], r.cmd.sense[13]);
		if (t->field_byte >= 0) {
			uint8_t sks = r.cmd.sense[15];

			ck_assert_msg(sks & 0x80, "%s: no SKSV", t->name);
			ck_assert_msg(sks & 0x40, "%s: C/D clear", t->name);
			ck_assert_msg(get_be16(r.cmd.sense + 16) == t->field_byte,
				      "%s: field byte %u", t->name, get_be16(r.cmd.sense + 16));
			if (t->field_bit >= 0)
				ck_assert_msg((sks & 0x08) && (sks & 7) == t->field_bit,
					      "%s: bit pointer %#x", t->name, sks);
			else
				ck_assert_msg(!(sks & 0x08), "%s: BPV set", t->name);
		}
	} else {
		ck_assert_msg(r.cmd.xfer_len == t->xfer_len, "%s: xfer_len %u want %u", t->name,
			      r.cmd.xfer_len, t->xfer_len);
	}
}
END_TEST

/* --- unit attentions --- */
static const uint8_t cdb_tur[6] = { 0x00 };

START_TEST(test_ua_power_on_once)
{
	struct scsi_nexus n3;
	struct sh_run r;
	uint8_t inq[6] = { 0x12, 0, 0, 0, 36, 0 };
	uint8_t rs[6] = { 0x03, 0, 0, 0, 18, 0 };

	memset(&n3, 0, sizeof(n3));
	scsi_nexus_attach(&tgt, &n3);
	/* INQUIRY neither reports nor clears it */
	sh_run(&r, &n3, 0, inq, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &n3, 0, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x29, 0x00);
	sh_run(&r, &n3, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	/* REQUEST SENSE reports the pending UA as its data and clears it */
	sh_run(&r, &n3, 1, rs, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, 18);
	ck_assert_uint_eq(buf[0], 0x70);
	ck_assert_uint_eq(buf[2], 6);
	ck_assert_uint_eq(buf[12], 0x29);
	sh_run(&r, &n3, 1, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	scsi_nexus_detach(&n3);
}
END_TEST

START_TEST(test_ua_order_and_scope)
{
	struct sh_run r;
	uint8_t lr[12] = { 0xa0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0 };

	scsi_lun_set_capacity(lun0, MEM_BLOCKS);            /* 2A/09 */
	scsi_ua_establish(&tgt, 0, UA_MODE_CHANGED, &nx2);  /* 2A/01, not nx2 */
	/* REPORT LUNS is not blocked */
	sh_run(&r, &nx, 0, lr, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x2a, 0x01);
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x2a, 0x09);
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx2, 0, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x2a, 0x09);
	sh_run(&r, &nx2, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	/* other LUNs untouched */
	sh_run(&r, &nx, 1, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
}
END_TEST

START_TEST(test_ua_resets)
{
	struct sh_run r;

	scsi_lun_reset(lun1, &nx);
	sh_run(&r, &nx, 1, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x29, 0x03);
	sh_run(&r, &nx2, 1, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x29, 0x03);
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	scsi_target_reset(&tgt, &nx, false);
	sh_run(&r, &nx2, 0, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x29, 0x02);
	/* the nexus that asked for the warm reset is told by the TMF response */
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	scsi_target_reset(&tgt, &nx, true);
	sh_run(&r, &nx, 3, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x29, 0x00);
	sh_run(&r, &nx, 3, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	scsi_target_set_lun(&tgt, 5, lun1);
	sh_run(&r, &nx, 3, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x3f, 0x0e);
	tgt.luns[5] = NULL;
}
END_TEST

/* --- INQUIRY and VPD --- */
START_TEST(test_inquiry_standard)
{
	struct sh_run r;
	uint8_t cdb[6] = { 0x12, 0, 0, 0, 255, 0 };
	uint8_t first[96];
	unsigned len;

	sh_run(&r, &nx, 0, cdb, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	len = r.cmd.data_len;
	ck_assert_uint_eq(len, 96);
	ck_assert_uint_eq(buf[0], 0x00);
	ck_assert_uint_eq(buf[1], 0x00);
	ck_assert_uint_eq(buf[2], 0x06);
	ck_assert_uint_eq(buf[3], 0x12);
	ck_assert_uint_eq(buf[4], len - 5);
	ck_assert_uint_eq(buf[5] & 0x08, 0x08);  /* 3PC: EXTENDED COPY (scsi/xcopy.c) */
	ck_assert_uint_eq(buf[7], 0x02);
	ck_assert(memcmp(buf + 8, "TARGETD ", 8) == 0);
	ck_assert(memcmp(buf + 16, "VIRTUAL-DISK    ", 16) == 0);
	ck_assert_uint_eq(get_be16(buf + 58), 0x00a0);
	ck_assert_uint_eq(get_be16(buf + 64), 0x04c0);
	memcpy(first, buf, sizeof(first));
	/* every allocation length returns exactly that prefix */
	for (unsigned a = 0; a < 100; a++) {
		cdb[4] = (uint8_t)a;
		memset(buf, 0xee, 128);
		sh_run(&r, &nx, 0, cdb, 6, NULL, 0);
		sh_expect_good(&r.cmd);
		ck_assert_uint_eq(r.cmd.data_len, MIN(a, 96u));
		ck_assert(memcmp(buf, first, r.cmd.data_len) == 0);
	}
	/* removable LUN: RMB */
	cdb[4] = 36;
	sh_run(&r, &nx, 1, cdb, 6, NULL, 0);
	ck_assert_uint_eq(buf[1], 0x80);
	/* missing LUN: qualifier 3, type 1Fh */
	sh_run(&r, &nx, 7, cdb, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(buf[0], 0x7f);
	/* 3PC follows the LUN flag */
	atomic_store(&lun0->tpc, true);
	sh_run(&r, &nx, 0, cdb, 6, NULL, 0);
	ck_assert_uint_eq(buf[5] & 0x08, 0x08);
}
END_TEST

static void vpd(struct sh_run *r, uint64_t lun, uint8_t page, uint16_t alloc)
{
	uint8_t cdb[6] = { 0x12, 1, page, (uint8_t)(alloc >> 8), (uint8_t)alloc, 0 };

	sh_run(r, &nx, lun, cdb, 6, NULL, 0);
	sh_expect_good(&r->cmd);
	ck_assert_uint_eq(buf[1], page);
}

START_TEST(test_vpd_pages)
{
	struct sh_run r;
	unsigned i, off, n;
	bool naa = false, port = false, rtp = false, dev = false;
	uint8_t naa1[16];

	vpd(&r, 0, 0x00, 255);
	n = buf[3];
	ck_assert_uint_eq(r.cmd.data_len, 4 + n);
	ck_assert_uint_eq(buf[4], 0x00);
	for (i = 1; i < n; i++)
		ck_assert_uint_lt(buf[4 + i - 1], buf[4 + i]);   /* ascending */
	/* every page listed answers */
	{
		uint8_t pages[32];

		memcpy(pages, buf + 4, n);
		for (i = 0; i < n; i++)
			vpd(&r, 0, pages[i], 255);
	}
	vpd(&r, 0, 0x80, 255);
	ck_assert_uint_eq(buf[3], strlen(lun0->serial));
	ck_assert(memcmp(buf + 4, lun0->serial, buf[3]) == 0);

	vpd(&r, 0, 0x83, 512);
	ck_assert_uint_eq(r.cmd.data_len, 4u + get_be16(buf + 2));
	for (off = 4; off < r.cmd.data_len; off += 4u + buf[off + 3]) {
		uint8_t type = buf[off + 1] & 0x0f, assoc = (buf[off + 1] >> 4) & 3;

		if (type == 3 && assoc == 0) {
			naa = true;
			ck_assert_uint_eq(buf[off + 3], 16);
			ck_assert_uint_eq(buf[off + 4] >> 4, 6);
			memcpy(naa1, buf + off + 4, 16);
		}
		if (type == 8 && assoc == 1) {
			port = true;
			ck_assert(strcmp((char *)buf + off + 4, T_NAME ",t,0x0001") == 0);
			ck_assert_uint_eq(buf[off + 3] % 4, 0);
		}
		if (type == 4 && assoc == 1) {
			rtp = true;
			ck_assert_uint_eq(get_be16(buf + off + 6), 1);
		}
		if (type == 8 && assoc == 2) {
			dev = true;
			ck_assert(strcmp((char *)buf + off + 4, T_NAME) == 0);
		}
	}
	ck_assert(naa && port && rtp && dev);
	/* NAA differs per LUN, is stable for the same name */
	vpd(&r, 1, 0x83, 512);
	ck_assert(memcmp(buf + 8, naa1, 16) != 0);
	{
		struct scsi_lun *again;
		struct scsi_lun_params lp = { .id = 0, .block_size = 512, .nblocks = 8 };

		ck_assert_int_eq(scsi_lun_create(&again, &tgt, &lp, membs), 0);
		ck_assert_uint_eq(again->naa, lun0->naa);
		ck_assert_uint_eq(again->naa_ext, lun0->naa_ext);
		ck_assert_str_eq(again->serial, lun0->serial);
		scsi_lun_destroy(again);
	}

	vpd(&r, 0, 0xb0, 255);
	ck_assert_uint_eq(get_be16(buf + 2), 0x3c);
	ck_assert_uint_eq(get_be32(buf + 8), (8u << 20) / 512);
	ck_assert_uint_eq(buf[5], 255);               /* MAXIMUM COMPARE AND WRITE LENGTH */
	ck_assert_uint_eq(get_be32(buf + 20), 0);     /* thick LUN: no UNMAP */
	vpd(&r, 3, 0xb0, 255);
	ck_assert_uint_eq(get_be32(buf + 8), (8u << 20) / 4096);
	vpd(&r, 0, 0xb1, 255);
	ck_assert_uint_eq(get_be16(buf + 4), 1);
	vpd(&r, 0, 0xb2, 255);
	ck_assert_uint_eq(buf[5] & 0xe0, 0);
	/* truncated */
	vpd(&r, 0, 0x83, 10);
	ck_assert_uint_eq(r.cmd.data_len, 10);
}
END_TEST

/* the advertised MAXIMUM TRANSFER LENGTH is enforced, one over is refused */
START_TEST(test_max_transfer_enforced)
{
	struct sh_run r;
	uint32_t max = lun0->max_xfer_blocks;
	uint8_t cdb[10] = { 0x28, 0, 0, 0, 0, 0, 0, (uint8_t)(max >> 8), (uint8_t)max, 0 };

	sh_run(&r, &nx, 0, cdb, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, max * 512);
	put_be16(cdb + 7, (uint16_t)(max + 1));
	sh_run(&r, &nx, 0, cdb, 10, NULL, 0);
	sh_expect_sense(&r.cmd, 5, 0x24, 0);
}
END_TEST

/* --- READ CAPACITY --- */
START_TEST(test_read_capacity)
{
	struct sh_run r;
	uint8_t rc10[10] = { 0x25 };
	uint8_t rc16[16] = { 0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0 };

	sh_run(&r, &nx, 0, rc10, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be32(buf), MEM_BLOCKS - 1);
	ck_assert_uint_eq(get_be32(buf + 4), 512);
	/* more than 2^32 blocks: READ CAPACITY(10) says FFFFFFFFh */
	sh_run(&r, &nx, 2, rc10, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be32(buf), 0xffffffffu);
	sh_run(&r, &nx, 2, rc16, 16, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, 32);
	ck_assert_uint_eq(get_be64(buf), (1ull << 33) + 6);
	ck_assert_uint_eq(buf[14] & 0xc0, 0);     /* LBPME/LBPRZ clear */
	sh_run(&r, &nx, 3, rc16, 16, NULL, 0);
	ck_assert_uint_eq(get_be32(buf + 8), 4096);
	/* exactly 2^32 blocks: last LBA FFFFFFFFh, also reported as such */
	atomic_store(&lun2->nblocks, 1ull << 32);
	sh_run(&r, &nx, 2, rc10, 10, NULL, 0);
	ck_assert_uint_eq(get_be32(buf), 0xffffffffu);
	atomic_store(&lun2->nblocks, 0xffffffffull);
	sh_run(&r, &nx, 2, rc10, 10, NULL, 0);
	ck_assert_uint_eq(get_be32(buf), 0xfffffffeu);
}
END_TEST

/* --- REPORT LUNS --- */
START_TEST(test_report_luns)
{
	struct sh_run r;
	uint8_t cdb[12] = { 0xa0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0 };

	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be32(buf), 32);
	ck_assert_uint_eq(r.cmd.data_len, 40);
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_uint_eq(buf[8 + 8 * i], 0);
		ck_assert_uint_eq(buf[9 + 8 * i], i);
	}
	cdb[2] = 1;   /* well-known LUs only: none */
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	ck_assert_uint_eq(get_be32(buf), 0);
	cdb[2] = 0;
	put_be32(cdb + 6, 16);       /* truncated list, full length still said */
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	ck_assert_uint_eq(r.cmd.data_len, 16);
	ck_assert_uint_eq(get_be32(buf), 32);
}
END_TEST

/* --- REPORT SUPPORTED OPERATION CODES --- */
START_TEST(test_rsoc)
{
	struct sh_run r;
	uint8_t cdb[12] = { 0xa3, 0x0c, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0 };
	uint32_t len, n = 0, i;
	bool saw_rc16 = false, saw_prevent = false;

	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	len = get_be32(buf);
	ck_assert_uint_eq(len % 8, 0);
	for (i = 4; i < 4 + len; i += 8) {
		const struct scsi_opcode *op;
		uint8_t c[16] = { buf[i], (uint8_t)get_be16(buf + i + 2) };

		n++;
		op = scsi_opcode_lookup(c);
		ck_assert_ptr_nonnull(op);
		ck_assert_uint_eq(op->cdb_len, get_be16(buf + i + 6));
		ck_assert_uint_eq(buf[i + 5] & 1, op->has_sa);
		if (!op->has_sa)
			ck_assert_uint_eq(get_be16(buf + i + 2), 0);
		if (buf[i] == 0x9e && buf[i + 3] == 0x10)
			saw_rc16 = true;
		if (buf[i] == 0x1e)
			saw_prevent = true;
	}
	ck_assert(saw_rc16);
	ck_assert(!saw_prevent);        /* LUN 0 is not removable */
	ck_assert_uint_ge(n, 30);
	/* RCTD: 20-byte descriptors, CTDP set */
	cdb[2] = 0x80;
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	ck_assert_uint_eq(get_be32(buf), n * 20);
	ck_assert_uint_eq(buf[4 + 5] & 0x02, 0x02);
	ck_assert_uint_eq(get_be16(buf + 4 + 8), 0x0a);
	/* option 1: READ(10) */
	cdb[2] = 0x01;
	cdb[3] = 0x28;
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(buf[1] & 0x07, 3);
	ck_assert_uint_eq(get_be16(buf + 2), 10);
	ck_assert_uint_eq(buf[4], 0x28);
	ck_assert_uint_eq(buf[5], 0x18);
	ck_assert_uint_eq(r.cmd.data_len, 14);
	/* option 1 on an opcode with service actions: refused */
	cdb[3] = 0x9e;
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	sh_expect_sense(&r.cmd, 5, 0x24, 0);
	/* option 2: READ CAPACITY(16) */
	cdb[2] = 0x02;
	put_be16(cdb + 4, 0x10);
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(buf[1] & 0x07, 3);
	ck_assert_uint_eq(get_be16(buf + 2), 16);
	ck_assert_uint_eq(buf[4], 0x9e);
	ck_assert_uint_eq(buf[5], 0x10);
	/* option 2 on an opcode without service actions: refused */
	cdb[3] = 0x28;
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	sh_expect_sense(&r.cmd, 5, 0x24, 0);
	/* option 3, unsupported: SUPPORT 001b */
	cdb[2] = 0x83;
	cdb[3] = 0x9e;
	put_be16(cdb + 4, 0x1e);
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(buf[1] & 0x07, 1);
	ck_assert_uint_eq(r.cmd.data_len, 4);
	/* option 3 with RCTD on a supported one: timeouts appended */
	cdb[3] = 0x2a;
	put_be16(cdb + 4, 0);
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	ck_assert_uint_eq(buf[1], 0x83);
	ck_assert_uint_eq(r.cmd.data_len, 4 + 10 + 12);
	/* the removable LUN lists PREVENT ALLOW */
	cdb[2] = 0x01;
	cdb[3] = 0x1e;
	sh_run(&r, &nx, 1, cdb, 12, NULL, 0);
	ck_assert_uint_eq(buf[1] & 0x07, 3);
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	ck_assert_uint_eq(buf[1] & 0x07, 1);
}
END_TEST

START_TEST(test_rstmf)
{
	struct sh_run r;
	uint8_t cdb[12] = { 0xa3, 0x0d, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0 };

	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, 4);
	ck_assert_uint_eq(buf[0], 0xda);
	cdb[2] = 0x80;
	sh_run(&r, &nx, 0, cdb, 12, NULL, 0);
	ck_assert_uint_eq(r.cmd.data_len, 16);
	ck_assert_uint_eq(buf[3], 0x0c);
}
END_TEST

/* --- MODE SENSE / MODE SELECT --- */
static const uint8_t *find_page(const uint8_t *d, unsigned len, unsigned hdr, uint8_t page)
{
	unsigned off = hdr;

	while (off + 2 <= len) {
		if ((d[off] & 0x3f) == page)
			return d + off;
		off += 2u + d[off + 1];
	}
	return NULL;
}

START_TEST(test_mode_sense)
{
	struct sh_run r;
	uint8_t ms6[6] = { 0x1a, 0, 0x3f, 0, 255, 0 };
	uint8_t ms10[10] = { 0x5a, 0x10, 0x3f, 0, 0, 0, 0, 0x01, 0, 0 };
	uint8_t copy[256];
	const uint8_t *p;
	unsigned len;

	sh_run(&r, &nx, 0, ms6, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	len = r.cmd.data_len;
	ck_assert_uint_eq(buf[0], len - 1);
	ck_assert_uint_eq(buf[2], 0x10);             /* DPOFUA, not WP */
	ck_assert_uint_eq(buf[3], 8);
	ck_assert_uint_eq(get_be32(buf + 4), MEM_BLOCKS);
	ck_assert_uint_eq(get_be24(buf + 9), 512);
	memcpy(copy, buf, len);
	p = find_page(copy, len, 12, 0x08);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p[1], 0x12);
	ck_assert_uint_eq(p[2] & 0x04, 0x04);        /* WCE default on */
	p = find_page(copy, len, 12, 0x0a);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p[2] & 0x04, 0);           /* D_SENSE off */
	ck_assert_ptr_nonnull(find_page(copy, len, 12, 0x1c));
	/* the Control page alone equals the one in all pages */
	ms6[2] = 0x0a;
	ms6[1] = 0x08;     /* DBD */
	sh_run(&r, &nx, 0, ms6, 6, NULL, 0);
	ck_assert_uint_eq(buf[3], 0);
	ck_assert(memcmp(buf + 4, p, 12) == 0);
	/* changeable values */
	ms6[2] = 0x40 | 0x0a;
	sh_run(&r, &nx, 0, ms6, 6, NULL, 0);
	ck_assert_uint_eq(buf[4 + 2], 0x04);
	ck_assert_uint_eq(buf[4 + 4], 0x08);
	/* 4-byte allocation: header only, no overflow */
	ms6[1] = 0;
	ms6[2] = 0x3f;
	ms6[4] = 4;
	sh_run(&r, &nx, 0, ms6, 6, NULL, 0);
	ck_assert_uint_eq(r.cmd.data_len, 4);
	ck_assert_uint_eq(buf[0], len - 1);
	/* MODE SENSE(10) LLBAA: 16-byte descriptor with 64-bit count */
	sh_run(&r, &nx, 2, ms10, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(buf[4] & 1, 1);
	ck_assert_uint_eq(get_be16(buf + 6), 16);
	ck_assert_uint_eq(get_be64(buf + 8), (1ull << 33) + 7);
	ck_assert_uint_eq(get_be32(buf + 20), 512);
	/* without LLBAA the short descriptor saturates */
	ms10[1] = 0;
	sh_run(&r, &nx, 2, ms10, 10, NULL, 0);
	ck_assert_uint_eq(get_be16(buf + 6), 8);
	ck_assert_uint_eq(get_be32(buf + 8), 0xffffffffu);
	/* read-only LUN: WP */
	sh_run(&r, &nx, 3, ms10, 10, NULL, 0);
	ck_assert_uint_eq(buf[3] & 0x80, 0x80);
}
END_TEST

/* MODE SELECT(6) of one page built from what MODE SENSE returned. */
static void mode_select_page(struct sh_run *r, struct scsi_nexus *n, uint64_t lun,
			     uint8_t page, uint8_t byte, uint8_t set, uint8_t clear)
{
	uint8_t ms[6] = { 0x1a, 0x08, page, 0, 255, 0 };
	uint8_t sel[6] = { 0x15, 0x10, 0, 0, 0, 0 };
	uint8_t data[64];
	unsigned plen;

	sh_run(r, n, lun, ms, 6, NULL, 0);
	sh_expect_good(&r->cmd);
	plen = 2u + buf[5];
	memset(data, 0, 4);
	memcpy(data + 4, buf + 4, plen);
	data[4] &= 0x7f;
	data[4 + byte] = (uint8_t)((data[4 + byte] | set) & ~clear);
	sel[4] = (uint8_t)(4 + plen);
	sh_run(r, n, lun, sel, 6, data, 4 + plen);
}

START_TEST(test_mode_select_d_sense)
{
	struct sh_run r;
	uint8_t rd[10] = { 0x28, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 1, 0 };
	uint8_t rs[6] = { 0x03, 0, 0, 0, 252, 0 };

	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	ck_assert_uint_eq(r.cmd.sense[0], 0x70);
	ck_assert_uint_eq(r.cmd.sense_len, 18);
	mode_select_page(&r, &nx, 0, 0x0a, 2, 0x04, 0);
	sh_expect_good(&r.cmd);
	ck_assert(atomic_load(&lun0->d_sense));
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	sh_expect_sense(&r.cmd, 5, 0x21, 0);
	ck_assert_uint_eq(r.cmd.sense[0], 0x72);
	/* field pointer in a sense-key specific descriptor */
	rd[1] = 0x20;
	rd[2] = 0;
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	sh_expect_sense(&r.cmd, 5, 0x24, 0);
	ck_assert_uint_eq(r.cmd.sense[7], 8);
	ck_assert_uint_eq(r.cmd.sense[8], 0x02);
	ck_assert_uint_eq(r.cmd.sense[8 + 4], 0x80 | 0x40 | 0x08 | 5);
	ck_assert_uint_eq(get_be16(r.cmd.sense + 8 + 5), 1);
	/* the other nexus is told, this one is not */
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx2, 0, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x2a, 0x01);
	ck_assert_uint_eq(r.cmd.sense[0], 0x72);
	/* REQUEST SENSE DESC=1 / DESC=0 */
	rs[1] = 1;
	sh_run(&r, &nx, 0, rs, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(buf[0], 0x72);
	ck_assert_uint_eq(r.cmd.data_len, 8);
	rs[1] = 0;
	sh_run(&r, &nx, 0, rs, 6, NULL, 0);
	ck_assert_uint_eq(buf[0], 0x70);
	ck_assert_uint_eq(r.cmd.data_len, 18);
	/* back to fixed */
	mode_select_page(&r, &nx, 0, 0x0a, 2, 0, 0x04);
	sh_expect_good(&r.cmd);
	ck_assert(!atomic_load(&lun0->d_sense));
}
END_TEST

START_TEST(test_mode_select_swp_wce)
{
	struct sh_run r;
	uint8_t wr[10] = { 0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0 };
	uint8_t ms[6] = { 0x1a, 0x08, 0x0a, 0, 255, 0 };
	uint8_t blk[512];

	memset(blk, 1, sizeof(blk));
	mode_select_page(&r, &nx, 0, 0x0a, 4, 0x08, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, ms, 6, NULL, 0);
	ck_assert_uint_eq(buf[2] & 0x80, 0x80);        /* WP */
	sh_run(&r, &nx, 0, wr, 10, blk, 512);
	sh_expect_sense(&r.cmd, 7, 0x27, 0);
	mode_select_page(&r, &nx, 0, 0x0a, 4, 0, 0x08);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, wr, 10, blk, 512);
	sh_expect_good(&r.cmd);

	/* WCE=0: every write is FUA (seen on the fake backstore) */
	sh_run(&r, &nx, 2, wr, 10, blk, 512);
	ck_assert(r.pending);
	ck_assert_uint_eq(fake.last_flags, 0);
	fake_release(0);
	sh_expect_good(&r.cmd);
	mode_select_page(&r, &nx, 2, 0x08, 2, 0, 0x04);
	sh_expect_good(&r.cmd);
	ck_assert(!atomic_load(&lun2->wce));
	sh_run(&r, &nx, 2, wr, 10, blk, 512);
	ck_assert_uint_eq(fake.last_flags, BS_IO_FUA);
	fake_release(0);
	mode_select_page(&r, &nx, 2, 0x08, 2, 0x04, 0);
	sh_expect_good(&r.cmd);
	/* FUA bit with WCE=1 */
	wr[1] = 0x08;
	sh_run(&r, &nx, 2, wr, 10, blk, 512);
	ck_assert_uint_eq(fake.last_flags, BS_IO_FUA);
	fake_release(0);
}
END_TEST

START_TEST(test_mode_select_invalid)
{
	struct sh_run r;
	uint8_t sel[10] = { 0x55, 0x10, 0, 0, 0, 0, 0, 0, 20, 0 };
	uint8_t data[32];

	/* non-changeable bit (TST, 001b: one task set per I_T nexus) in the
	 * Control page */
	mode_select_page(&r, &nx, 0, 0x0a, 2, 0, 0x20);
	sh_expect_sense(&r.cmd, 5, 0x26, 0);
	ck_assert_uint_eq(r.cmd.sense[15], 0x80 | 0x08 | 5);   /* SKSV, C/D=0, BPV, bit 5 */
	ck_assert_uint_eq(get_be16(r.cmd.sense + 16), 4 + 2);
	/* wrong page length */
	memset(data, 0, sizeof(data));
	data[8] = 0x0a;
	data[9] = 0x08;
	sh_run(&r, &nx, 0, sel, 10, data, 20);
	sh_expect_sense(&r.cmd, 5, 0x26, 0);
	ck_assert_uint_eq(get_be16(r.cmd.sense + 16), 9);
	/* unsupported page */
	data[8] = 0x02;
	data[9] = 0x0a;
	sh_run(&r, &nx, 0, sel, 10, data, 20);
	sh_expect_sense(&r.cmd, 5, 0x26, 0);
	/* page longer than the list */
	data[8] = 0x08;
	data[9] = 0x12;
	sh_run(&r, &nx, 0, sel, 10, data, 20);
	sh_expect_sense(&r.cmd, 5, 0x1a, 0);
	/* a block descriptor that restates the format is fine */
	memset(data, 0, sizeof(data));
	data[7] = 8;
	put_be24(data + 8 + 5, 512);
	sel[8] = 16;
	sh_run(&r, &nx, 0, sel, 10, data, 16);
	sh_expect_good(&r.cmd);
	put_be24(data + 8 + 5, 4096);
	sh_run(&r, &nx, 0, sel, 10, data, 16);
	sh_expect_sense(&r.cmd, 5, 0x26, 0);
	/* no change made: no UA for the other nexus */
	sh_run(&r, &nx2, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
}
END_TEST

/* --- data path --- */
static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

START_TEST(test_write_read_round_trip)
{
	static uint8_t data[64 * 512];
	struct sh_run r;
	uint8_t wr16[16] = { 0x8a, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 64, 0, 0 };
	uint8_t rd12[12] = { 0xa8, 0, 0, 0, 0, 100, 0, 0, 0, 64, 0, 0 };
	uint8_t wr6[6] = { 0x0a, 0, 0x01, 0x00, 2, 0 };
	uint8_t rd6[6] = { 0x08, 0, 0x01, 0x00, 0, 0 };

	fill(data, sizeof(data), 3);
	sh_run(&r, &nx, 0, wr16, 16, data, sizeof(data));
	sh_expect_good(&r.cmd);
	memset(buf, 0, sizeof(data));
	sh_run(&r, &nx, 0, rd12, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, sizeof(data));
	ck_assert(memcmp(buf, data, sizeof(data)) == 0);
	/* 6-byte: two blocks at 256, then 256 blocks read back */
	sh_run(&r, &nx, 0, wr6, 6, data, 1024);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, rd6, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, 256 * 512);
	ck_assert(memcmp(buf, data, 1024) == 0);
	/* 4096-byte blocks: READ of the read-only LUN works */
	rd12[5] = 0;
	rd12[9] = 2;
	sh_run(&r, &nx, 3, rd12, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, 8192);
	/* transfer length 0 on WRITE: no data, GOOD */
	wr16[13] = 0;
	sh_run(&r, &nx, 0, wr16, 16, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.dir, SCSI_DIR_NONE);
}
END_TEST

START_TEST(test_short_data_out)
{
	static uint8_t data[2 * 512];
	struct sh_run r;
	uint8_t wr10[10] = { 0x2a, 0, 0, 0, 0, 10, 0, 0, 2, 0 };
	uint8_t rd10[10] = { 0x28, 0, 0, 0, 0, 10, 0, 0, 2, 0 };

	memset(data, 0xaa, sizeof(data));
	sh_run(&r, &nx, 0, wr10, 10, data, sizeof(data));
	sh_expect_good(&r.cmd);
	memset(data, 0xbb, sizeof(data));
	sh_run(&r, &nx, 0, wr10, 10, data, 200);          /* EDTL 200 < 1024 */
	sh_expect_sense(&r.cmd, 5, 0x0e, 0x03);
	sh_run(&r, &nx, 0, rd10, 10, NULL, 0);
	ck_assert_uint_eq(buf[0], 0xaa);                   /* nothing written */
	ck_assert_uint_eq(buf[1023], 0xaa);
	sh_run(&r, &nx, 0, wr10, 10, data, 4096);         /* EDTL larger: fine */
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, rd10, 10, NULL, 0);
	ck_assert_uint_eq(buf[1023], 0xbb);
}
END_TEST

START_TEST(test_verify)
{
	static uint8_t data[8 * 512];
	struct sh_run r;
	uint8_t wr[10] = { 0x2a, 0, 0, 0, 0x01, 0, 0, 0, 8, 0 };
	uint8_t vf[10] = { 0x2f, 0x02, 0, 0, 0x01, 0, 0, 0, 8, 0 };
	uint8_t vf16[16] = { 0x8f, 0x06, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0, 0, 0, 8, 0, 0 };
	uint8_t vf0[12] = { 0xaf, 0, 0, 0, 0x01, 0, 0, 0, 0, 8, 0, 0 };

	fill(data, sizeof(data), 9);
	sh_run(&r, &nx, 0, wr, 10, data, sizeof(data));
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, vf, 10, data, sizeof(data));
	sh_expect_good(&r.cmd);
	data[1234] ^= 0x40;
	sh_run(&r, &nx, 0, vf, 10, data, sizeof(data));
	sh_expect_sense(&r.cmd, 0x0e, 0x1d, 0);
	ck_assert_uint_eq(r.cmd.sense[0], 0xf0);           /* VALID */
	ck_assert_uint_eq(get_be32(r.cmd.sense + 3), 1234);
	/* BYTCHK 0: medium check only */
	sh_run(&r, &nx, 0, vf0, 12, NULL, 0);
	sh_expect_good(&r.cmd);
	/* BYTCHK 3: one block against every block */
	memset(data, 0x11, 8 * 512);
	sh_run(&r, &nx, 0, wr, 10, data, sizeof(data));
	sh_run(&r, &nx, 0, vf16, 16, data, 512);
	sh_expect_good(&r.cmd);
	data[0] = 0x12;
	wr[8] = 1;
	wr[5] = 5;                                          /* block 256+5 differs */
	sh_run(&r, &nx, 0, wr, 10, data, 512);
	data[0] = 0x11;
	sh_run(&r, &nx, 0, vf16, 16, data, 512);
	sh_expect_sense(&r.cmd, 0x0e, 0x1d, 0);
	ck_assert_uint_eq(get_be32(r.cmd.sense + 3), 5 * 512);
	/* descriptor format: information descriptor */
	atomic_store(&lun0->d_sense, true);
	sh_run(&r, &nx, 0, vf16, 16, data, 512);
	ck_assert_uint_eq(r.cmd.sense[0], 0x72);
	ck_assert_uint_eq(r.cmd.sense[8], 0x00);
	ck_assert_uint_eq(r.cmd.sense[10], 0x80);
	ck_assert_uint_eq(get_be64(r.cmd.sense + 12), 5 * 512);
	atomic_store(&lun0->d_sense, false);
}
END_TEST

START_TEST(test_write_verify_orwrite)
{
	static uint8_t data[4 * 512];
	struct sh_run r;
	uint8_t wv[12] = { 0xae, 0x02, 0, 0, 0x02, 0, 0, 0, 0, 4, 0, 0 };
	uint8_t orw[16] = { 0x8b, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 4, 0, 0 };
	uint8_t rd[10] = { 0x28, 0, 0, 0, 0x02, 0, 0, 0, 4, 0 };

	memset(data, 0x0f, sizeof(data));
	sh_run(&r, &nx, 0, wv, 12, data, sizeof(data));
	sh_expect_good(&r.cmd);
	memset(data, 0xf0, sizeof(data));
	data[100] = 0x01;
	sh_run(&r, &nx, 0, orw, 16, data, sizeof(data));
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	ck_assert_uint_eq(buf[0], 0xff);
	ck_assert_uint_eq(buf[100], 0x0f);
	ck_assert_uint_eq(buf[2047], 0xff);
	/* ORWRITE on a read-only LUN */
	orw[8] = 0;
	sh_run(&r, &nx, 3, orw, 16, data, 4 * 4096);
	sh_expect_sense(&r.cmd, 7, 0x27, 0);
}
END_TEST

/* --- the fake asynchronous backstore: PENDING, then the result --- */
START_TEST(test_async_pending_and_errors)
{
	static uint8_t data[512];
	struct sh_run r;
	uint8_t rd[10] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0 };
	uint8_t wr[10] = { 0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0 };
	uint8_t sc[10] = { 0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	int before = sh_completed;

	sh_run(&r, &nx, 2, rd, 10, NULL, 0);
	ck_assert(r.pending);
	ck_assert_int_eq(sh_completed, before);
	fake_release(0);
	ck_assert_int_eq(sh_completed, before + 1);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, 512);
	ck_assert_uint_eq(buf[0], 0x5a);

	sh_run(&r, &nx, 2, rd, 10, NULL, 0);
	fake_release(-EIO);
	sh_expect_sense(&r.cmd, 3, 0x11, 0);
	ck_assert_uint_eq(r.cmd.data_len, 0);

	sh_run(&r, &nx, 2, wr, 10, data, 512);
	ck_assert(r.pending);
	fake_release(-EIO);
	sh_expect_sense(&r.cmd, 3, 0x0c, 0);

	sh_run(&r, &nx, 2, wr, 10, data, 512);
	fake_release(-ENOSPC);
	sh_expect_sense(&r.cmd, 7, 0x27, 0x07);

	sh_run(&r, &nx, 2, sc, 10, NULL, 0);
	ck_assert(r.pending);
	ck_assert_int_eq(fake.last_op, BS_OP_FLUSH);
	fake_release(0);
	sh_expect_good(&r.cmd);
	ck_assert_int_eq(sh_completed, before + 5);
}
END_TEST

/* --- removable medium: START STOP UNIT and PREVENT ALLOW --- */
START_TEST(test_removable)
{
	struct sh_run r;
	uint8_t eject[6] = { 0x1b, 0, 0, 0, 0x02, 0 };
	uint8_t load[6] = { 0x1b, 0, 0, 0, 0x03, 0 };
	uint8_t prevent[6] = { 0x1e, 0, 0, 0, 1, 0 };
	uint8_t allow[6] = { 0x1e, 0, 0, 0, 0, 0 };
	uint8_t rd[10] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0 };
	uint8_t rs[6] = { 0x03, 0, 0, 0, 18, 0 };

	sh_run(&r, &nx, 1, eject, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 1, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 2, 0x3a, 0);
	sh_run(&r, &nx, 1, rd, 10, NULL, 0);
	sh_expect_sense(&r.cmd, 2, 0x3a, 0);
	sh_run(&r, &nx, 1, rs, 6, NULL, 0);
	ck_assert_uint_eq(buf[12], 0x3a);
	sh_run(&r, &nx, 1, load, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 1, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx2, 1, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 6, 0x28, 0);
	/* prevention by two nexuses, released one by allow and one by loss */
	sh_run(&r, &nx, 1, prevent, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 1, prevent, 6, NULL, 0);
	sh_run(&r, &nx2, 1, prevent, 6, NULL, 0);
	ck_assert_uint_eq(atomic_load(&lun1->prevent), 2);
	sh_run(&r, &nx, 1, eject, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 5, 0x53, 0x02);
	sh_run(&r, &nx, 1, allow, 6, NULL, 0);
	sh_run(&r, &nx, 1, eject, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 5, 0x53, 0x02);
	scsi_nexus_detach(&nx2);
	ck_assert_uint_eq(atomic_load(&lun1->prevent), 0);
	scsi_nexus_attach(&tgt, &nx2);
	sh_run(&r, &nx, 1, eject, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 1, load, 6, NULL, 0);
	/* a LUN reset releases prevention too */
	sh_run(&r, &nx, 1, prevent, 6, NULL, 0);
	scsi_lun_reset(lun1, &nx);
	ck_assert_uint_eq(atomic_load(&lun1->prevent), 0);
}
END_TEST

START_TEST(test_stopped)
{
	struct sh_run r;
	uint8_t stop[6] = { 0x1b, 0, 0, 0, 0x04, 0 };    /* NO_FLUSH */
	uint8_t stop_flush[6] = { 0x1b, 0, 0, 0, 0x00, 0 };
	uint8_t start[6] = { 0x1b, 0, 0, 0, 0x01, 0 };
	uint8_t inq[6] = { 0x12, 0, 0, 0, 36, 0 };

	sh_run(&r, &nx, 0, stop, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert(atomic_load(&lun0->stopped));
	/* stopped is recorded, but media access is not refused */
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, inq, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, start, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	/* stopping with a flush goes through the backstore */
	sh_run(&r, &nx, 2, stop_flush, 6, NULL, 0);
	ck_assert(r.pending);
	ck_assert_int_eq(fake.last_op, BS_OP_FLUSH);
	fake_release(0);
	sh_expect_good(&r.cmd);
	ck_assert(atomic_load(&lun2->stopped));
	sh_run(&r, &nx, 2, start, 6, NULL, 0);
	sh_expect_good(&r.cmd);
}
END_TEST

START_TEST(test_sanitize_overwrite)
{
	struct sh_run r;
	uint8_t san[10] = { 0x48, 0x01, 0, 0, 0, 0, 0, 0, 4 + 4, 0 };
	uint8_t exitf[10] = { 0x48, 0x1f, 0, 0, 0, 0, 0, 0, 0, 0 };
	uint8_t rd[10] = { 0x28, 0, 0, 0, 0x3f, 0xff, 0, 0, 1, 0 };
	uint8_t param[8] = { 0x01, 0, 0, 4, 0xde, 0xad, 0xbe, 0xef };
	unsigned i;

	sh_run(&r, &nx, 0, san, 10, param, sizeof(param));
	sh_expect_good(&r.cmd);
	ck_assert(!atomic_load(&lun0->sanitizing));
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	for (i = 0; i < 512; i += 4)
		ck_assert_uint_eq(get_be32(buf + i), 0xdeadbeef);
	/* INVERT with two passes leaves the inverted pattern */
	param[0] = 0x82;
	sh_run(&r, &nx, 0, san, 10, param, sizeof(param));
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	ck_assert_uint_eq(get_be32(buf), ~0xdeadbeefu);
	/* OVERWRITE COUNT 0 and bad pattern length are refused */
	param[0] = 0x00;
	sh_run(&r, &nx, 0, san, 10, param, sizeof(param));
	sh_expect_sense(&r.cmd, 5, 0x26, 0);
	param[0] = 0x01;
	param[3] = 5;
	sh_run(&r, &nx, 0, san, 10, param, sizeof(param));
	sh_expect_sense(&r.cmd, 5, 0x26, 0);
	/* while a sanitize runs, medium commands see SANITIZE IN PROGRESS */
	atomic_store(&lun0->sanitizing, true);
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	sh_expect_sense(&r.cmd, 2, 0x04, 0x1b);
	ck_assert_uint_eq(r.cmd.sense[15], 0x80);           /* progress indication */
	atomic_store(&lun0->sanitizing, false);
	/* failure mode until EXIT FAILURE MODE */
	atomic_store(&lun0->sanitize_failed, true);
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	sh_expect_sense(&r.cmd, 3, 0x31, 0x03);
	sh_run(&r, &nx, 0, exitf, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	sh_expect_good(&r.cmd);
}
END_TEST

/* IMMED=1: GOOD at once, then SANITIZE IN PROGRESS until the job ends */
START_TEST(test_sanitize_immed)
{
	struct sh_run r;
	uint8_t san[10] = { 0x48, 0x81, 0, 0, 0, 0, 0, 0, 4 + 2, 0 };
	uint8_t param[6] = { 0x01, 0, 0, 2, 0x12, 0x34 };
	uint8_t rd[10] = { 0x28, 0, 0, 0, 0x20, 0, 0, 0, 1, 0 };
	uint8_t inq[6] = { 0x12, 0, 0, 0, 36, 0 };
	uint8_t rs[6] = { 0x03, 0, 0, 0, 18, 0 };
	int spins = 0;

	sh_run(&r, &nx, 0, san, 10, param, sizeof(param));
	sh_expect_good(&r.cmd);
	ck_assert(atomic_load(&lun0->sanitizing));
	sh_run(&r, &nx, 0, cdb_tur, 6, NULL, 0);
	sh_expect_sense(&r.cmd, 2, 0x04, 0x1b);
	sh_run(&r, &nx2, 0, san, 10, param, sizeof(param));
	sh_expect_sense(&r.cmd, 2, 0x04, 0x1b);
	sh_run(&r, &nx, 0, inq, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	sh_run(&r, &nx, 0, rs, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(buf[2], 2);
	ck_assert_uint_eq(buf[12], 0x04);
	ck_assert_uint_eq(buf[13], 0x1b);
	while (atomic_load(&lun0->sanitizing) && spins++ < 10000)
		io_engine_wait(sh_eng);
	ck_assert(!atomic_load(&lun0->sanitizing));
	ck_assert(!atomic_load(&lun0->sanitize_failed));
	sh_run(&r, &nx, 0, rd, 10, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be16(buf), 0x1234);
	ck_assert_uint_eq(get_be16(buf + 510), 0x1234);
}
END_TEST

START_TEST(test_sense_info)
{
	uint8_t status, key, asc, ascq;

	scsi_reason_info(SR_LBA_OUT_OF_RANGE, &status, &key, &asc, &ascq);
	ck_assert_uint_eq(status, SAM_STAT_CHECK_CONDITION);
	ck_assert_uint_eq(key, SK_ILLEGAL_REQUEST);
	ck_assert_uint_eq(asc, 0x21);
	scsi_reason_info(SR_SPACE_ALLOC_FAILED, &status, &key, &asc, &ascq);
	ck_assert_uint_eq(key, SK_DATA_PROTECT);
	ck_assert_uint_eq(ascq, 0x07);
	scsi_reason_info(SR_RESERVATION_CONFLICT, &status, NULL, NULL, NULL);
	ck_assert_uint_eq(status, SAM_STAT_RESERVATION_CONFLICT);
	/* every reason maps somewhere sane */
	for (int i = SR_INVALID_OPCODE; i < SR__COUNT; i++) {
		scsi_reason_info((enum sense_reason)i, &status, &key, &asc, &ascq);
		ck_assert_msg(status == SAM_STAT_CHECK_CONDITION, "reason %d", i);
		ck_assert_msg(key != 0, "reason %d has no sense key", i);
	}
}
END_TEST

/* the opcode table is consistent with its own index */
START_TEST(test_opcode_table)
{
	for (unsigned i = 0; i < scsi_opcodes_count; i++) {
		const struct scsi_opcode *op = scsi_opcodes[i];
		uint8_t cdb[16] = { op->opcode, (uint8_t)op->service_action };

		ck_assert_ptr_eq(scsi_opcode_lookup(cdb), op);
		ck_assert_uint_eq(op->usage[0], op->opcode);
		ck_assert_uint_ge(op->cdb_len, 6);
		ck_assert_ptr_nonnull(op->parse);
		if (op->has_sa)
			ck_assert_uint_eq(op->usage[1] & 0x1f, op->service_action);
		if (i)
			ck_assert(scsi_opcodes[i - 1]->opcode < op->opcode ||
				  (scsi_opcodes[i - 1]->opcode == op->opcode &&
				   scsi_opcodes[i - 1]->service_action < op->service_action));
	}
}
END_TEST

Suite *scsi_suite(void)
{
	Suite *s = suite_create("scsi");
	TCase *tc = tcase_create("cdb");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_cdb_table, 0, (int)ARRAY_SIZE(cdb_cases));
	tcase_add_test(tc, test_opcode_table);
	tcase_add_test(tc, test_sense_info);
	suite_add_tcase(s, tc);

	tc = tcase_create("spc");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_ua_power_on_once);
	tcase_add_test(tc, test_ua_order_and_scope);
	tcase_add_test(tc, test_ua_resets);
	tcase_add_test(tc, test_inquiry_standard);
	tcase_add_test(tc, test_vpd_pages);
	tcase_add_test(tc, test_report_luns);
	tcase_add_test(tc, test_rsoc);
	tcase_add_test(tc, test_rstmf);
	suite_add_tcase(s, tc);

	tc = tcase_create("mode");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_mode_sense);
	tcase_add_test(tc, test_mode_select_d_sense);
	tcase_add_test(tc, test_mode_select_swp_wce);
	tcase_add_test(tc, test_mode_select_invalid);
	suite_add_tcase(s, tc);

	tc = tcase_create("sbc");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_read_capacity);
	tcase_add_test(tc, test_max_transfer_enforced);
	tcase_add_test(tc, test_write_read_round_trip);
	tcase_add_test(tc, test_short_data_out);
	tcase_add_test(tc, test_verify);
	tcase_add_test(tc, test_write_verify_orwrite);
	tcase_add_test(tc, test_async_pending_and_errors);
	tcase_add_test(tc, test_removable);
	tcase_add_test(tc, test_stopped);
	tcase_add_test(tc, test_sanitize_overwrite);
	tcase_add_test(tc, test_sanitize_immed);
	suite_add_tcase(s, tc);
	return s;
}
