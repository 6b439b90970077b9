/*
 * Check suite "limits": what a LUN reports about itself in VPD 0xB0 (Block
 * Limits), VPD 0xB2 (Logical Block Provisioning) and READ CAPACITY(16),
 * built for a table of LUN profiles (512, 512e and 4096-byte blocks; thin
 * and thick; file, memory and block-like backstores) and checked field by
 * field against the others: the granularities against the physical block
 * (LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT), OPTIMAL against MAXIMUM
 * TRANSFER LENGTH, the UNMAP granularity and alignment, the WRITE SAME and
 * atomic write limits.
 *
 * The rules are those of SBC-4 6.6.4/6.6.5/5.21 and the ones the Linux sd
 * driver applies when it reads these pages (a limit it finds inconsistent
 * is logged and ignored): the preferred minimum I/O size (OPTIMAL TRANSFER
 * LENGTH GRANULARITY) and the optimal transfer size must be multiples of
 * the physical block, the optimal size a multiple of the minimum, at least
 * a page, at most MAXIMUM TRANSFER LENGTH and at most 0xffff blocks; the
 * atomic write unit it derives (a power of two) must be a multiple of the
 * atomic granularity and alignment.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/check_suites.h"
#include "tests/scsi_harness.h"
#include "scsi/scsi.h"
#include "backstore/backstore.h"
#include "common/util.h"

#define T_NAME  "iqn.2026-01.org.example:limits-test"
#define BUF_CAP (1u << 20)
#define PAGE    4096u

/* --- the reported limits, decoded --- */

struct lim {
	/* READ CAPACITY(16) */
	uint64_t last_lba;
	uint32_t lbs;  /* logical block, bytes */
	uint32_t phys; /* lbs << LBPPBE */
	uint32_t lowest_aligned;
	bool lbpme, lbprz_rc;
	/* Block Limits */
	uint16_t b0_len;
	uint8_t caw;
	uint32_t otlg, max_xfer, opt_xfer;
	uint32_t max_unmap_lba, max_unmap_desc, oug, uga;
	bool ugavalid;
	uint64_t max_ws;
	uint32_t max_atomic, atomic_align, atomic_gran, max_atomic_bnd, max_bnd_size;
	/* Logical Block Provisioning */
	bool lbpu, lbpws, lbpws10;
	uint8_t lbprz_vpd, prov_type;
};

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint64_t rounddown_pow2(uint64_t v)
{
	return v ? 1ull << (63 - __builtin_clzll(v)) : 0;
}

static void lim_decode(struct lim *l, const uint8_t *rc, const uint8_t *b0, const uint8_t *b2)
{
	memset(l, 0, sizeof(*l));
	l->last_lba = get_be64(rc);
	l->lbs = get_be32(rc + 8);
	l->phys = l->lbs << (rc[13] & 0x0f);
	l->lbpme = rc[14] & 0x80;
	l->lbprz_rc = rc[14] & 0x40;
	l->lowest_aligned = get_be16(rc + 14) & 0x3fff;

	l->b0_len = get_be16(b0 + 2);
	l->caw = b0[5];
	l->otlg = get_be16(b0 + 6);
	l->max_xfer = get_be32(b0 + 8);
	l->opt_xfer = get_be32(b0 + 12);
	l->max_unmap_lba = get_be32(b0 + 20);
	l->max_unmap_desc = get_be32(b0 + 24);
	l->oug = get_be32(b0 + 28);
	l->ugavalid = b0[32] & 0x80;
	l->uga = get_be32(b0 + 32) & 0x7fffffffu;
	l->max_ws = get_be64(b0 + 36);
	l->max_atomic = get_be32(b0 + 44);
	l->atomic_align = get_be32(b0 + 48);
	l->atomic_gran = get_be32(b0 + 52);
	l->max_atomic_bnd = get_be32(b0 + 56);
	l->max_bnd_size = get_be32(b0 + 60);

	l->lbpu = b2[5] & 0x80;
	l->lbpws = b2[5] & 0x40;
	l->lbpws10 = b2[5] & 0x20;
	l->lbprz_vpd = (b2[5] >> 2) & 0x07;
	l->prov_type = b2[6] & 0x07;
}

/* The first rule l breaks, or NULL. */
static char why[256];

static const char *bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return why;
}

/* READ CAPACITY(16) and the transfer lengths (SBC-4 5.21, 6.6.4; Linux
 * sd_read_capacity, sd_validate_min_xfer_size, sd_validate_opt_xfer_size). */
static const char *lim_check_xfer(const struct lim *l)
{
	uint32_t per = l->phys / l->lbs; /* logical blocks per physical block */

	if (!is_pow2(l->lbs) || l->lbs < 512)
		return bad("logical block %u", l->lbs);
	if (!is_pow2(l->phys) || l->phys < l->lbs)
		return bad("physical block %u", l->phys);
	if (l->lowest_aligned)
		return bad("LOWEST ALIGNED LBA %u (the LUN starts on a physical block)",
			   l->lowest_aligned);
	if (l->b0_len != 0x3c)
		return bad("Block Limits page length %#x, want 0x3c", l->b0_len);
	if (l->max_xfer == 0)
		return bad("MAXIMUM TRANSFER LENGTH 0 (no limit) is not what is enforced");
	if (l->max_xfer % per)
		return bad("MAXIMUM TRANSFER LENGTH %u not a multiple of the physical block (%u)",
			   l->max_xfer, per);
	/* Linux: "Preferred minimum I/O size not a multiple of physical block size" */
	if (l->otlg == 0 || (uint64_t)l->otlg * l->lbs % l->phys)
		return bad("OPTIMAL TRANSFER LENGTH GRANULARITY %u blocks (%llu bytes) "
			   "not a multiple of the physical block (%u bytes)",
			   l->otlg, (unsigned long long)l->otlg * l->lbs, l->phys);
	if (l->otlg > l->max_xfer)
		return bad("OPTIMAL TRANSFER LENGTH GRANULARITY %u > MAXIMUM TRANSFER LENGTH %u",
			   l->otlg, l->max_xfer);
	if (l->opt_xfer) {
		uint64_t bytes = (uint64_t)l->opt_xfer * l->lbs;

		if (l->opt_xfer > l->max_xfer)
			return bad("OPTIMAL TRANSFER LENGTH %u > MAXIMUM TRANSFER LENGTH %u",
				   l->opt_xfer, l->max_xfer);
		if (l->opt_xfer > 0xffff) /* Linux: > sd driver limit */
			return bad("OPTIMAL TRANSFER LENGTH %u > 0xffff blocks", l->opt_xfer);
		if (bytes < PAGE)
			return bad("OPTIMAL TRANSFER LENGTH %llu bytes < a page",
				   (unsigned long long)bytes);
		if (l->opt_xfer % l->otlg)
			return bad(
				"OPTIMAL TRANSFER LENGTH %u not a multiple of the granularity %u",
				l->opt_xfer, l->otlg);
		if (bytes % l->phys)
			return bad("OPTIMAL TRANSFER LENGTH %llu bytes not a multiple of the "
				   "physical block",
				   (unsigned long long)bytes);
	}
	if (l->caw == 0 || l->caw > l->max_xfer)
		return bad("MAXIMUM COMPARE AND WRITE LENGTH %u (MAXIMUM TRANSFER LENGTH %u)",
			   l->caw, l->max_xfer);
	return NULL;
}

/* Provisioning, UNMAP and WRITE SAME (SBC-4 4.7, 6.6.4, 6.6.5; Linux
 * sd_read_block_limits, sd_discard_mode, sd_config_discard). */
static const char *lim_check_lbp(const struct lim *l)
{
	uint32_t per = l->phys / l->lbs;

	/* WRITE SAME: at least one physical block (a longer maximum need not
	 * be a multiple of it: Linux rounds its split discards down to the
	 * granularity itself). */
	if (l->max_ws < per)
		return bad("MAXIMUM WRITE SAME LENGTH %llu < one physical block (%u)",
			   (unsigned long long)l->max_ws, per);
	if (!l->lbpme) {
		if (l->lbpu || l->lbpws || l->lbpws10 || l->lbprz_vpd || l->lbprz_rc)
			return bad("provisioning bits without LBPME");
		if (l->max_unmap_lba || l->max_unmap_desc || l->oug || l->ugavalid)
			return bad("UNMAP limits without LBPME");
		if (l->prov_type != 0)
			return bad("PROVISIONING TYPE %u on a fully provisioned LUN", l->prov_type);
		return NULL;
	}
	if (l->prov_type != 2)
		return bad("PROVISIONING TYPE %u with LBPME, want 2 (thin)", l->prov_type);
	if (!l->lbpu && !l->lbpws && !l->lbpws10)
		return bad("LBPME without a command that deallocates");
	if (l->lbpu && (!l->max_unmap_lba || !l->max_unmap_desc))
		return bad("LBPU with MAXIMUM UNMAP LBA COUNT %u, DESCRIPTOR COUNT %u",
			   l->max_unmap_lba, l->max_unmap_desc);
	if (!!l->lbprz_vpd != l->lbprz_rc)
		return bad("LBPRZ %u in VPD B2, %u in READ CAPACITY(16)", l->lbprz_vpd,
			   l->lbprz_rc);
	/* Linux: discard granularity = max(physical block, OPTIMAL UNMAP
	 * GRANULARITY): a smaller one is silently raised, so it must be one. */
	if (l->oug == 0 || l->oug % per)
		return bad("OPTIMAL UNMAP GRANULARITY %u not a multiple of the physical block (%u)",
			   l->oug, per);
	if (l->ugavalid && l->uga >= l->oug)
		return bad("UNMAP GRANULARITY ALIGNMENT %u >= granularity %u", l->uga, l->oug);
	if (l->ugavalid && l->uga % per)
		return bad("UNMAP GRANULARITY ALIGNMENT %u off the physical block", l->uga);
	if (l->lbpu && (l->max_unmap_lba < l->oug || l->max_unmap_lba % l->oug))
		return bad("MAXIMUM UNMAP LBA COUNT %u not a multiple of the granularity %u",
			   l->max_unmap_lba, l->oug);
	if ((l->lbpws || l->lbpws10) && l->max_ws < l->oug)
		return bad("MAXIMUM WRITE SAME LENGTH %llu < OPTIMAL UNMAP GRANULARITY %u",
			   (unsigned long long)l->max_ws, l->oug);
	return NULL;
}

/* Atomic writes (SBC-4 4.29, 6.6.4; Linux sd_config_atomic and the block
 * layer's atomic write limits). */
static const char *lim_check_atomic(const struct lim *l)
{
	uint64_t unit_min, unit_max;

	if (!l->max_atomic) {
		if (l->atomic_align || l->atomic_gran || l->max_atomic_bnd || l->max_bnd_size)
			return bad("atomic fields without MAXIMUM ATOMIC TRANSFER LENGTH");
		return NULL;
	}
	if (l->max_atomic_bnd || l->max_bnd_size)
		return bad("atomic boundary fields set, but boundaries are not offered");
	if (l->max_atomic > l->max_xfer)
		return bad("MAXIMUM ATOMIC TRANSFER LENGTH %u > MAXIMUM TRANSFER LENGTH %u",
			   l->max_atomic, l->max_xfer);
	if (!is_pow2(l->atomic_gran) || (uint64_t)l->atomic_gran * l->lbs % l->phys)
		return bad("ATOMIC TRANSFER LENGTH GRANULARITY %u: not a power of two number of "
			   "physical blocks",
			   l->atomic_gran);
	if (!is_pow2(l->atomic_align) || l->atomic_gran % l->atomic_align)
		return bad("ATOMIC ALIGNMENT %u: not a power of two dividing the granularity %u",
			   l->atomic_align, l->atomic_gran);
	if (l->max_atomic % l->atomic_gran)
		return bad("MAXIMUM ATOMIC TRANSFER LENGTH %u not a multiple of the granularity %u",
			   l->max_atomic, l->atomic_gran);
	/* what Linux makes of it: power-of-two units, naturally aligned */
	unit_min = rounddown_pow2(l->atomic_gran);
	unit_max = rounddown_pow2(l->max_atomic);
	if (unit_min % l->atomic_gran || unit_max % l->atomic_gran || unit_min % l->atomic_align ||
	    unit_max % l->atomic_align)
		return bad("atomic units %llu..%llu blocks do not fit granularity %u, alignment %u",
			   (unsigned long long)unit_min, (unsigned long long)unit_max,
			   l->atomic_gran, l->atomic_align);
	return NULL;
}

static const char *lim_check(const struct lim *l)
{
	const char *w = lim_check_xfer(l);

	if (!w)
		w = lim_check_lbp(l);
	if (!w)
		w = lim_check_atomic(l);
	return w;
}

/* --- LUN profiles --- */

enum bs_kind { BK_FAKE, BK_MEMORY, BK_FILE };

struct profile {
	const char *name;
	enum bs_kind kind;
	uint32_t block_size;
	uint32_t phys; /* BK_FAKE: the backstore's physical block */
	bool thin;     /* the LUN (and the backstore) deallocate */
	bool zeroes;   /* BK_FAKE: discard reads back zeroes */
	uint64_t nblocks;
	uint32_t want_phys;              /* READ CAPACITY(16)'s physical block */
	uint32_t atomic_min, atomic_max; /* BK_FAKE: the device's atomic writes */
	bool want_atomic;                /* WRITE ATOMIC offered */
};

static const struct profile profiles[] = {
	{"512 block device, thick", BK_FAKE, 512, 512, false, false, 1u << 20, 512, 0, 0, false},
	{"512 block device, thin, LBPRZ", BK_FAKE, 512, 512, true, true, 1u << 20, 512, 0, 0,
	 false},
	{"512e block device, thin", BK_FAKE, 512, 4096, true, true, 1u << 21, 4096, 0, 0, false},
	{"512e block device, thin, no LBPRZ", BK_FAKE, 512, 4096, true, false, 1u << 21, 4096, 0, 0,
	 false},
	{"512e block device, thick", BK_FAKE, 512, 4096, false, false, 1u << 21, 4096, 0, 0, false},
	{"4Kn block device, thin", BK_FAKE, 4096, 4096, true, true, 1u << 18, 4096, 0, 0, false},
	{"512 on a 64 KiB-block file system", BK_FAKE, 512, 65536, true, true, 1u << 21, 65536, 0,
	 0, false},
	{"512 on a 1 MiB-block file system", BK_FAKE, 512, 1u << 20, true, true, 1u << 21, 1u << 20,
	 0, 0, false},
	{"4096 on a 2 MiB-block file system", BK_FAKE, 4096, 2u << 20, true, true, 1u << 18, 4096,
	 0, 0, false},
	{"512e beyond 2^32 blocks", BK_FAKE, 512, 4096, true, true, (1ull << 33) + 8, 4096, 0, 0,
	 false},
	{"512e memory, thin", BK_MEMORY, 512, 0, true, true, 8192, 4096, 0, 0, true},
	{"512e memory, thick", BK_MEMORY, 512, 0, false, true, 8192, 4096, 0, 0, true},
	{"4096 memory, thin", BK_MEMORY, 4096, 0, true, true, 1024, 4096, 0, 0, true},
	{"512e device, atomic 4 KiB..64 KiB", BK_FAKE, 512, 4096, true, true, 1u << 21, 4096, 4096,
	 65536, true},
	{"512 device, atomic 512 B..1 MiB", BK_FAKE, 512, 512, false, false, 1u << 21, 512, 512,
	 1u << 20, true},
	{"512e device, atomic 512 B..16 MiB (above MAXIMUM TRANSFER LENGTH)", BK_FAKE, 512, 4096,
	 true, true, 1u << 21, 4096, 512, 16u << 20, true},
	{"4Kn device, atomic 4 KiB..24 KiB", BK_FAKE, 4096, 4096, true, true, 1u << 18, 4096, 4096,
	 24576, true},
	{"512e device, atomic unit above the physical block", BK_FAKE, 512, 4096, true, true,
	 1u << 21, 4096, 16384, 65536, true},
	{"512 file, thin", BK_FILE, 512, 0, true, true, 8192, 0, 0, 0, false},
	{"512 file, thick", BK_FILE, 512, 0, false, true, 8192, 0, 0, 0, false},
	{"4096 file, thin", BK_FILE, 4096, 0, true, true, 1024, 0, 0, 0, false},
};

static struct scsi_target tgt;
static struct scsi_nexus nx;
static struct sh_fake fake;
static struct backstore *bs; /* memory or file, else NULL */
static struct scsi_lun *lun;
static char fpath[256];
static bool attached;

static void lim_setup(void)
{
	sh_setup(BUF_CAP);
	scsi_target_init(&tgt, T_NAME, 1);
	bs = NULL;
	lun = NULL;
	fpath[0] = '\0';
	attached = false;
}

static void lim_teardown(void)
{
	if (attached)
		scsi_nexus_detach(&nx);
	scsi_lun_destroy(lun);
	scsi_target_destroy(&tgt);
	sh_teardown();
	backstore_close(bs);
	if (fpath[0])
		unlink(fpath);
	io_engine_pool_shutdown();
}

/* A backstore for p: a fake with p's facts, or a real memory or file one. */
static struct backstore *profile_bs(const struct profile *p)
{
	uint64_t bytes = p->nblocks * p->block_size;
	struct bs_params bp = {.block_size = p->block_size, .size = bytes, .thin = p->thin};
	char err[256];
	int fd;

	if (p->kind == BK_FAKE) {
		sh_fake_init(&fake, bytes);
		fake.bs.phys_block_size = p->phys;
		fake.bs.thin = p->thin;
		fake.bs.discard_zeroes = p->zeroes;
		fake.bs.atomic_min = p->atomic_min;
		fake.bs.atomic_max = p->atomic_max;
		return &fake.bs;
	}
	if (p->kind == BK_MEMORY) {
		bp.type = "memory";
	} else {
		const char *t = getenv("TMPDIR");

		snprintf(fpath, sizeof(fpath), "%s/limits-XXXXXX", t && *t ? t : "/tmp");
		fd = mkstemp(fpath);
		ck_assert_int_ge(fd, 0);
		close(fd);
		bp.type = "file";
		bp.path = fpath;
	}
	ck_assert_msg(backstore_open(&bs, &bp, err, sizeof(err)) == 0, "%s: %s", p->name, err);
	return bs;
}

/* Run a data-in CDB and copy what it returned to out. */
static void run_in(const uint8_t *cdb, unsigned len, uint8_t *out, uint32_t want)
{
	struct sh_run r;

	sh_run(&r, &nx, 0, cdb, len, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, want);
	memcpy(out, r.cmd.data_ptr ? r.cmd.data_ptr : r.cmd.buf, want);
}

static void read_limits(struct lim *l)
{
	static const uint8_t rc16[16] = {0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0};
	static const uint8_t b0[6] = {0x12, 0x01, 0xb0, 0, 64, 0};
	static const uint8_t b2[6] = {0x12, 0x01, 0xb2, 0, 8, 0};
	uint8_t rc[32], d0[64], d2[8];

	run_in(rc16, sizeof(rc16), rc, 32);
	run_in(b0, sizeof(b0), d0, 64);
	run_in(b2, sizeof(b2), d2, 8);
	lim_decode(l, rc, d0, d2);
}

START_TEST(test_profile_consistent)
{
	const struct profile *p = &profiles[_i];
	struct scsi_lun_params lp = {
		.id = 0, .block_size = p->block_size, .nblocks = p->nblocks, .thin = p->thin};
	struct backstore *b = profile_bs(p);
	const char *w;
	struct lim l;

	ck_assert_int_eq(scsi_lun_create(&lun, &tgt, &lp, b), 0);
	scsi_target_set_lun(&tgt, 0, lun);
	sh_nexus_attach(&tgt, &nx, 1);
	attached = true;
	read_limits(&l);

	ck_assert_uint_eq(l.lbs, p->block_size);
	ck_assert_uint_eq(l.last_lba, p->nblocks - 1);
	if (p->want_phys)
		ck_assert_uint_eq(l.phys, p->want_phys);
	else /* a file: the file system's block (st_blksize), or a page */
		ck_assert_uint_eq(l.phys, MAX(backstore_phys_block_size(b), p->block_size));
	ck_assert_msg(l.lbpme == p->thin, "%s: LBPME %d", p->name, l.lbpme);
	if (p->kind != BK_FILE) /* a file: as its file system can */
		ck_assert_msg(!!l.max_atomic == p->want_atomic,
			      "%s: MAXIMUM ATOMIC TRANSFER "
			      "LENGTH %u",
			      p->name, l.max_atomic);
	w = lim_check(&l);
	ck_assert_msg(w == NULL, "%s: %s", p->name, w ? w : "");
}
END_TEST

/* The checker itself: each rule catches what it is there for. */
START_TEST(test_rules_catch)
{
	struct lim good = {
		.lbs = 512,
		.phys = 4096,
		.b0_len = 0x3c,
		.caw = 255,
		.otlg = 8,
		.max_xfer = 16384,
		.opt_xfer = 2048,
		.max_unmap_lba = 1u << 20,
		.max_unmap_desc = 256,
		.oug = 8,
		.ugavalid = true,
		.max_ws = 65535,
		.lbpme = true,
		.lbprz_rc = true,
		.lbpu = true,
		.lbpws = true,
		.lbpws10 = true,
		.lbprz_vpd = 1,
		.prov_type = 2,
		.max_atomic = 2048,
		.atomic_align = 8,
		.atomic_gran = 8,
	};
	static const struct {
		const char *name;
		size_t off; /* offsetof the uint32_t field in struct lim */
		uint32_t value;
	} breaks[] = {
		{"one-block granularity on 512e (the Linux warning)", offsetof(struct lim, otlg),
		 1},
		{"optimal not a multiple of granularity", offsetof(struct lim, opt_xfer), 2052},
		{"optimal above the maximum", offsetof(struct lim, max_xfer), 1024},
		{"optimal above 0xffff", offsetof(struct lim, opt_xfer), 0x10000},
		{"unmap granularity below a physical block", offsetof(struct lim, oug), 1},
		{"unmap alignment not below the granularity", offsetof(struct lim, uga), 8},
		{"atomic maximum above the transfer maximum", offsetof(struct lim, max_atomic),
		 32768},
		{"atomic granularity of a logical block on 512e", offsetof(struct lim, atomic_gran),
		 1},
		{"atomic alignment above the granularity", offsetof(struct lim, atomic_align), 16},
		{"atomic maximum off the granularity", offsetof(struct lim, max_atomic), 2044},
		{"atomic granularity not a power of two", offsetof(struct lim, atomic_gran), 24},
	};

	ck_assert_msg(lim_check(&good) == NULL, "%s", why);
	for (size_t i = 0; i < ARRAY_SIZE(breaks); i++) {
		struct lim l = good;

		memcpy((uint8_t *)&l + breaks[i].off, &breaks[i].value, sizeof(uint32_t));
		ck_assert_msg(lim_check(&l) != NULL, "not caught: %s", breaks[i].name);
	}
	good.max_ws = 4;
	ck_assert_ptr_nonnull(lim_check(&good));
}
END_TEST

Suite *limits_suite(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("profiles");

	tcase_add_checked_fixture(tc, lim_setup, lim_teardown);
	tcase_add_loop_test(tc, test_profile_consistent, 0, (int)ARRAY_SIZE(profiles));
	tcase_add_test(tc, test_rules_catch);
	suite_add_tcase(s, tc);
	return s;
}
