/*
 * Check suite for space on thin LUNs (scsi/space.c): zero detection.
 * Which LUNs get it; WRITE and WRITE SAME of zeroes on a thin file LUN with
 * zero_detect off, on and unmap, the backing file's allocation checked with
 * stat (st_blocks) and SEEK_DATA/SEEK_HOLE and the data read back; the
 * requests a zero write becomes on a fake backstore (durability with FUA
 * and WCE=0, nothing for data that is not zero); and COMPARE AND WRITE
 * waiting for a zero write in flight (the range lock).
 */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tests/check_suites.h"
#include "tests/scsi_harness.h"
#include "scsi/scsi.h"
#include "scsi/stats.h"
#include "scsi/space.h"
#include "backstore/backstore.h"
#include "backstore/io_engine.h"
#include "common/util.h"

#define SP_BLOCKS 4096u                  /* 2 MiB of 512-byte blocks */
#define SP_BUF (1024u * 1024)
#define SP_CHUNK (256u * 1024)           /* bytes per WRITE in the tests */

static struct scsi_target tgt;
static struct scsi_nexus nx;
static char dir[64];
static char path[96];

static void setup(void)
{
	sh_setup(SP_BUF + 65536);
	scsi_target_init(&tgt, "iqn.2026-11.org.targetd:space", 1);
	sh_nexus_attach(&tgt, &nx, 1);
	strcpy(dir, "/tmp/targetd-space-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/lun.img", dir);
}

static void teardown(void)
{
	scsi_nexus_detach(&nx);
	scsi_target_destroy(&tgt);
	sh_teardown();
	unlink(path);
	rmdir(dir);
}

static void cdb16(uint8_t *cdb, uint8_t op, uint8_t b1, uint64_t lba, uint32_t len)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	cdb[1] = b1;
	put_be64(cdb + 2, lba);
	put_be32(cdb + 10, len);
}

static struct scsi_lun *lun_new(struct backstore *bs, uint16_t id, bool thin,
				enum scsi_zero_detect zd)
{
	struct scsi_lun_params lp = { .id = id, .block_size = 512, .nblocks = SP_BLOCKS,
				      .thin = thin, .zero_detect = zd };
	struct scsi_lun *l;

	ck_assert_int_eq(scsi_lun_create(&l, &tgt, &lp, bs), 0);
	scsi_target_set_lun(&tgt, id, l);
	scsi_ua_clear(&nx, id);
	return l;
}

static void lun_free(struct scsi_lun *l)
{
	uint16_t id = l->id;

	atomic_store(&tgt.luns[id], NULL);
	scsi_ua_clear(&nx, id);
	scsi_lun_destroy(l);
}

static struct backstore *file_bs(void)
{
	struct bs_params bp = { .type = "file", .path = path, .size = (uint64_t)SP_BLOCKS * 512,
				.block_size = 512, .thin = true, .create = true };
	struct backstore *bs;
	char err[256] = "";

	ck_assert_msg(backstore_open(&bs, &bp, err, sizeof(err)) == 0, "%s", err);
	return bs;
}

/* 512-byte units the backing file has allocated. */
static long long file_blocks(void)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (long long)st.st_blocks;
}

/* Is [off, off + len) of the backing file all data (no hole inside)? */
static bool file_all_data(off_t off, off_t len)
{
	int fd = open(path, O_RDONLY);
	off_t d, h;

	ck_assert_int_ge(fd, 0);
	d = lseek(fd, off, SEEK_DATA);
	h = lseek(fd, off, SEEK_HOLE);
	close(fd);
	return d == off && h >= off + len;
}

/* Is [off, off + len) of the backing file all hole? */
static bool file_all_hole(off_t off, off_t len)
{
	int fd = open(path, O_RDONLY);
	off_t d, h;

	ck_assert_int_ge(fd, 0);
	h = lseek(fd, off, SEEK_HOLE);
	d = lseek(fd, off, SEEK_DATA);
	close(fd);
	return h == off && (d < 0 || d >= off + len);
}

static void write16(uint16_t lun, uint64_t lba, const uint8_t *data, uint32_t len, bool fua)
{
	uint8_t cdb[16];
	struct sh_run r;

	cdb16(cdb, 0x8a, fua ? 0x08 : 0, lba, len / 512);
	sh_run(&r, &nx, lun, cdb, 16, data, len);
	sh_expect_good(&r.cmd);
}

static void read_expect(uint16_t lun, uint64_t lba, const uint8_t *want, uint32_t len)
{
	uint8_t cdb[16];
	struct sh_run r;

	cdb16(cdb, 0x88, 0, lba, len / 512);
	sh_run(&r, &nx, lun, cdb, 16, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, len);
	ck_assert(!memcmp(sh_buf, want, len));
}

static uint64_t zd_bytes(struct scsi_lun *l)
{
	struct scsi_stats_counters c;

	scsi_stats_snapshot(l, &c);
	return c.zero_detect_bytes;
}

/* ------------------------------------------------------------------ */

START_TEST(zd_where)
{
	struct backstore *mem = sh_memory_bs((uint64_t)SP_BLOCKS * 512, true);
	struct backstore *thick = sh_memory_bs((uint64_t)SP_BLOCKS * 512, false);
	static struct sh_fake f;
	struct scsi_lun *l;

	/* a thin LUN on a backstore that deallocates and reads zeroes back */
	l = lun_new(mem, 0, true, SCSI_ZD_UNMAP);
	ck_assert_int_eq(l->zero_detect, SCSI_ZD_UNMAP);
	lun_free(l);
	l = lun_new(mem, 0, true, SCSI_ZD_ON);
	ck_assert_int_eq(l->zero_detect, SCSI_ZD_ON);
	lun_free(l);
	/* not thin: never */
	l = lun_new(mem, 0, false, SCSI_ZD_UNMAP);
	ck_assert_int_eq(l->zero_detect, SCSI_ZD_OFF);
	lun_free(l);
	/* a thick backstore: never */
	l = lun_new(thick, 0, true, SCSI_ZD_ON);
	ck_assert_int_eq(l->zero_detect, SCSI_ZD_OFF);
	lun_free(l);
	/* a backstore whose discard does not read back zeroes: never */
	sh_fake_init(&f, (uint64_t)SP_BLOCKS * 512);
	f.bs.thin = true;
	f.bs.discard_zeroes = false;
	l = lun_new(&f.bs, 0, true, SCSI_ZD_UNMAP);
	ck_assert_int_eq(l->zero_detect, SCSI_ZD_OFF);
	lun_free(l);
	backstore_close(mem);
	backstore_close(thick);
}
END_TEST

START_TEST(zd_all_zero)
{
	static uint8_t b[4096 + 64];

	memset(b, 0, sizeof(b));
	for (size_t off = 0; off < 16; off++) {
		for (size_t len = 0; len < 300; len += 7) {
			ck_assert(space_all_zero(b + off, len));
			if (!len)
				continue;
			for (size_t at = 0; at < len; at += 13) {
				b[off + at] = 0x10;
				ck_assert(!space_all_zero(b + off, len));
				b[off + at] = 0;
			}
			b[off + len - 1] = 1;
			ck_assert(!space_all_zero(b + off, len));
			b[off + len - 1] = 0;
			b[off + len] = 1;   /* past the end: not looked at */
			ck_assert(space_all_zero(b + off, len));
			b[off + len] = 0;
		}
	}
	b[4095] = 1;
	ck_assert(!space_all_zero(b, 4096));
}
END_TEST

/*
 * The same sequence on a thin file LUN with each mode: write data
 * (allocated), write zeroes over half of it, write data holding some zero
 * blocks (written as it is), then WRITE SAME of a zero block. What the file
 * has allocated afterwards tells what each mode did.
 */
static void zd_file_run(enum scsi_zero_detect zd)
{
	struct backstore *bs = file_bs();
	struct scsi_lun *l = lun_new(bs, 1, true, zd);
	uint8_t *data = malloc(SP_CHUNK), *zero = calloc(1, SP_CHUNK);
	uint8_t cdb[16];
	struct sh_run r;
	long long before, after;

	ck_assert_int_eq(l->zero_detect, zd);
	for (uint32_t i = 0; i < SP_CHUNK; i++)
		data[i] = (uint8_t)(i * 7 + 1);
	/* data at LBA 0 and 1024: allocated */
	write16(1, 0, data, SP_CHUNK, false);
	write16(1, 1024, data, SP_CHUNK, false);
	ck_assert(file_all_data(0, SP_CHUNK));
	before = file_blocks();
	ck_assert_int_ge(before, 2 * SP_CHUNK / 512);

	/* zeroes over the first 128 KiB at LBA 0 */
	write16(1, 0, zero, SP_CHUNK / 2, false);
	read_expect(1, 0, zero, SP_CHUNK / 2);
	read_expect(1, 256, data + SP_CHUNK / 2, SP_CHUNK / 2);
	after = file_blocks();
	if (zd == SCSI_ZD_UNMAP) {
		ck_assert(file_all_hole(0, SP_CHUNK / 2));
		ck_assert_int_le(after, before - SP_CHUNK / 2 / 512);
		ck_assert_uint_eq(zd_bytes(l), SP_CHUNK / 2);
	} else {
		/* written (off) or zeroed in place (on): still allocated */
		ck_assert(file_all_data(0, SP_CHUNK / 2));
		ck_assert_int_ge(after, before);
		ck_assert_uint_eq(zd_bytes(l), zd == SCSI_ZD_ON ? SP_CHUNK / 2 : 0);
	}
	ck_assert(file_all_data(SP_CHUNK / 2, SP_CHUNK / 2));

	/* data with zero blocks inside is data: written whole, allocated */
	memset(data, 0, SP_CHUNK - 512);
	write16(1, 2048, data, SP_CHUNK, true);
	read_expect(1, 2048, data, SP_CHUNK);
	ck_assert(file_all_data(2048 * 512, SP_CHUNK));

	/* WRITE SAME(16) of a zero block over the data at LBA 1024: eager
	 * zeroing gives the space back with zero_detect = unmap only */
	before = file_blocks();
	cdb16(cdb, 0x93, 0, 1024, SP_CHUNK / 512);
	sh_run(&r, &nx, 1, cdb, 16, zero, 512);
	sh_expect_good(&r.cmd);
	read_expect(1, 1024, zero, SP_CHUNK);
	if (zd == SCSI_ZD_UNMAP) {
		ck_assert(file_all_hole(1024 * 512, SP_CHUNK));
		ck_assert_int_le(file_blocks(), before - SP_CHUNK / 512);
		ck_assert_uint_eq(zd_bytes(l), SP_CHUNK / 2 + SP_CHUNK);
	} else {
		ck_assert(file_all_data(1024 * 512, SP_CHUNK));
	}
	free(data);
	free(zero);
	lun_free(l);
	backstore_close(bs);
}

START_TEST(zd_file_off)
{
	zd_file_run(SCSI_ZD_OFF);
}
END_TEST

START_TEST(zd_file_on)
{
	zd_file_run(SCSI_ZD_ON);
}
END_TEST

START_TEST(zd_file_unmap)
{
	zd_file_run(SCSI_ZD_UNMAP);
}
END_TEST

/* Run a command on the fake and record the operations it submits. */
struct sp_seq {
	enum bs_op op[8];
	unsigned flags[8];
	unsigned n;
};

static void fake_run(struct sh_run *r, struct sh_fake *f, struct sp_seq *q, uint16_t lun,
		     const uint8_t *cdb, const void *out, uint32_t len)
{
	memset(q, 0, sizeof(*q));
	sh_run(r, &nx, lun, cdb, 16, out, len);
	while (!r->done) {
		if (f->npending == 0) {
			io_engine_wait(sh_eng);
			continue;
		}
		ck_assert_uint_lt(q->n, 8);
		q->op[q->n] = f->pending[0]->op;
		q->flags[q->n] = f->pending[0]->flags;
		q->n++;
		sh_fake_release(f, 0, 0);
	}
	sh_expect_good(&r->cmd);
}

static void wce_off(uint16_t lun)
{
	const uint8_t ms[16] = { 0x1a, 0x08, 0x08, 0, 255, 0 };
	uint8_t sel[16] = { 0x15, 0x10, 0, 0, 0, 0 }, page[64];
	struct sh_run r;
	uint32_t plen;

	sh_run(&r, &nx, lun, ms, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	plen = sh_buf[4 + 1] + 2u;
	memset(page, 0, 4);
	memcpy(page + 4, sh_buf + 4 + sh_buf[3], plen);
	page[4] &= 0x3f;
	page[4 + 2] &= (uint8_t)~0x04;
	sel[4] = (uint8_t)(4 + plen);
	sh_run(&r, &nx, lun, sel, 6, page, 4 + plen);
	sh_expect_good(&r.cmd);
	ck_assert(!atomic_load(&tgt.luns[lun]->wce));
}

START_TEST(zd_requests)
{
	static struct sh_fake f;
	uint8_t zero[4096] = { 0 }, data[4096];
	struct scsi_lun *l;
	struct sp_seq q;
	struct sh_run r;
	uint8_t cdb[16];

	memset(data, 0xa5, sizeof(data));
	sh_fake_init(&f, (uint64_t)SP_BLOCKS * 512);
	f.bs.thin = true;
	f.bs.discard_zeroes = true;
	l = lun_new(&f.bs, 2, true, SCSI_ZD_UNMAP);

	/* zeroes, write cache on, no FUA: one DISCARD of the range, no flush */
	cdb16(cdb, 0x8a, 0, 16, 8);
	fake_run(&r, &f, &q, 2, cdb, zero, 4096);
	ck_assert_uint_eq(q.n, 1);
	ck_assert_int_eq(q.op[0], BS_OP_DISCARD);
	/* zeroes with FUA: DISCARD then FLUSH before GOOD */
	cdb16(cdb, 0x8a, 0x08, 16, 8);
	fake_run(&r, &f, &q, 2, cdb, zero, 4096);
	ck_assert_uint_eq(q.n, 2);
	ck_assert_int_eq(q.op[0], BS_OP_DISCARD);
	ck_assert_int_eq(q.op[1], BS_OP_FLUSH);
	/* data: the WRITE as it is */
	cdb16(cdb, 0x8a, 0, 16, 8);
	fake_run(&r, &f, &q, 2, cdb, data, 4096);
	ck_assert_uint_eq(q.n, 1);
	ck_assert_int_eq(q.op[0], BS_OP_WRITE);
	/* WCE=0: the zero write is flushed too; a data write is FUA */
	wce_off(2);
	cdb16(cdb, 0x8a, 0, 16, 8);
	fake_run(&r, &f, &q, 2, cdb, zero, 4096);
	ck_assert_uint_eq(q.n, 2);
	ck_assert_int_eq(q.op[0], BS_OP_DISCARD);
	ck_assert_int_eq(q.op[1], BS_OP_FLUSH);
	/* a failed DISCARD (full file system) is the write's error */
	cdb16(cdb, 0x8a, 0, 16, 8);
	sh_run(&r, &nx, 2, cdb, 16, zero, 4096);
	ck_assert(r.pending);
	sh_fake_release(&f, -ENOSPC, 0);
	sh_wait(&r);
	sh_expect_sense(&r.cmd, 0x7, 0x27, 0x07);
	ck_assert_uint_eq(zd_bytes(l), 3 * 4096);
	lun_free(l);

	/* zero_detect = on: WRITE ZEROES instead */
	l = lun_new(&f.bs, 2, true, SCSI_ZD_ON);
	cdb16(cdb, 0x8a, 0, 16, 8);
	fake_run(&r, &f, &q, 2, cdb, zero, 4096);
	ck_assert_uint_eq(q.n, 1);
	ck_assert_int_eq(q.op[0], BS_OP_WRITE_ZEROES);
	lun_free(l);
}
END_TEST

/* COMPARE AND WRITE on LBAs a zero write is deallocating waits for it. */
START_TEST(zd_atomic_with_caw)
{
	static struct sh_fake f;
	static uint8_t zero[4096], caw[1024];
	struct scsi_lun *l;
	struct sh_run w, c;
	uint8_t cdb[16];
	unsigned reads;

	sh_fake_init(&f, (uint64_t)SP_BLOCKS * 512);
	f.bs.thin = true;
	f.bs.discard_zeroes = true;
	l = lun_new(&f.bs, 3, true, SCSI_ZD_UNMAP);

	cdb16(cdb, 0x8a, 0, 100, 8);
	sh_run(&w, &nx, 3, cdb, 16, zero, 4096);
	ck_assert(w.pending);
	ck_assert_int_eq(f.pending[0]->op, BS_OP_DISCARD);
	reads = f.submitted[BS_OP_READ];

	/* COMPARE AND WRITE of LBA 103, in another buffer */
	uint8_t *save = sh_buf;
	static uint8_t cbuf[SP_BUF + 65536] __attribute__((aligned(4096)));
	sh_buf = cbuf;
	memset(cdb, 0, 16);
	cdb[0] = 0x89;
	put_be64(cdb + 2, 103);
	cdb[13] = 1;
	memset(caw + 512, 0x33, 512);
	sh_run(&c, &nx, 3, cdb, 16, caw, 1024);
	ck_assert(c.pending);
	/* it has not read the medium: the range is locked */
	ck_assert_uint_eq(f.submitted[BS_OP_READ], reads);
	ck_assert_int_eq(f.npending, 1);
	sh_fake_release(&f, 0, 0);       /* the DISCARD */
	ck_assert(w.done);
	sh_expect_good(&w.cmd);
	/* now the compare reads (zeroes, as the compare half) and writes */
	while (f.npending == 0)
		io_engine_wait(sh_eng);  /* the grant arrives through the engine */
	ck_assert_uint_eq(f.submitted[BS_OP_READ], reads + 1);
	sh_fake_release(&f, 0, 0);
	ck_assert_int_eq(f.npending, 1);
	ck_assert_int_eq(f.pending[0]->op, BS_OP_WRITE);
	sh_fake_release(&f, 0, 0);
	sh_wait(&c);
	sh_expect_good(&c.cmd);
	sh_buf = save;
	lun_free(l);
}
END_TEST

/* ------------------------------------------------------------ out of space */

/* ENOSPC from the backstore: SPACE ALLOCATION FAILED WRITE PROTECT for the
 * write, reads go on, and the next write after space returns succeeds. */
START_TEST(enospc_write_protect)
{
	static struct sh_fake f;
	uint8_t data[512], cdb[16];
	struct scsi_lun *l;
	struct sh_run r;

	memset(data, 0x5a, sizeof(data));
	sh_fake_init(&f, (uint64_t)SP_BLOCKS * 512);
	f.bs.thin = true;
	f.bs.discard_zeroes = true;
	l = lun_new(&f.bs, 4, true, SCSI_ZD_OFF);
	for (int err = ENOSPC; err; err = err == ENOSPC ? EDQUOT : 0) {
		cdb16(cdb, 0x8a, 0, 7, 1);
		sh_run(&r, &nx, 4, cdb, 16, data, 512);
		ck_assert(r.pending);
		sh_fake_release(&f, -err, 0);
		sh_wait(&r);
		sh_expect_sense(&r.cmd, 0x7, 0x27, 0x07);
		/* a WRITE SAME that needs space fails the same way */
		cdb16(cdb, 0x93, 0, 7, 8);
		sh_run(&r, &nx, 4, cdb, 16, data, 512);
		ck_assert(r.pending);
		sh_fake_release(&f, -err, 0);
		sh_wait(&r);
		sh_expect_sense(&r.cmd, 0x7, 0x27, 0x07);
		/* reads keep working */
		cdb16(cdb, 0x88, 0, 7, 1);
		sh_run(&r, &nx, 4, cdb, 16, NULL, 0);
		ck_assert(r.pending);
		sh_fake_release(&f, 0, 0x11);
		sh_wait(&r);
		sh_expect_good(&r.cmd);
		ck_assert_uint_eq(sh_buf[0], 0x11);
	}
	/* space is back: the same write succeeds, nothing stays protected */
	cdb16(cdb, 0x8a, 0, 7, 1);
	sh_run(&r, &nx, 4, cdb, 16, data, 512);
	ck_assert(r.pending);
	sh_fake_release(&f, 0, 0);
	sh_wait(&r);
	sh_expect_good(&r.cmd);
	lun_free(l);
}
END_TEST

static void unmap1(uint16_t lun, uint64_t lba, uint32_t n)
{
	uint8_t cdb[16] = { 0x42 }, list[24] = { 0 };
	struct sh_run r;

	put_be16(cdb + 7, sizeof(list));
	put_be16(list, sizeof(list) - 2);
	put_be16(list + 2, 16);
	put_be64(list + 8, lba);
	put_be32(list + 16, n);
	sh_run(&r, &nx, lun, cdb, 10, list, sizeof(list));
	sh_expect_good(&r.cmd);
}

/* A LUN's hard limit on a thin file LUN: a write that would allocate past
 * it is refused (07/27/07) with nothing written, an overwrite of allocated
 * blocks is not, reads go on, and the LUN takes writes again once UNMAP
 * has given space back. */
START_TEST(hard_limit_file)
{
	struct backstore *bs = file_bs();
	struct scsi_lun_params lp = { .id = 5, .block_size = 512, .nblocks = SP_BLOCKS,
				      .thin = true, .hard_limit = 640 * 1024 };
	uint8_t *data = malloc(SP_CHUNK), *zero = calloc(1, SP_CHUNK), cdb[16];
	struct scsi_lun *l;
	struct sh_run r;

	ck_assert_int_eq(scsi_lun_create(&l, &tgt, &lp, bs), 0);
	scsi_target_set_lun(&tgt, 5, l);
	scsi_ua_clear(&nx, 5);
	memset(data, 0x77, SP_CHUNK);
	/* 512 KiB: within the limit */
	write16(5, 0, data, SP_CHUNK, false);
	write16(5, 512, data, SP_CHUNK, false);
	ck_assert_int_le(file_blocks() * 512, 640 * 1024);
	/* 256 KiB more would pass it: refused, nothing allocated */
	cdb16(cdb, 0x8a, 0, 2048, SP_CHUNK / 512);
	sh_run(&r, &nx, 5, cdb, 16, data, SP_CHUNK);
	sh_expect_sense(&r.cmd, 0x7, 0x27, 0x07);
	ck_assert(file_all_hole(2048 * 512, SP_CHUNK));
	/* WRITE SAME (zeroes in place allocate) too */
	cdb16(cdb, 0x93, 0, 2048, SP_CHUNK / 512);
	sh_run(&r, &nx, 5, cdb, 16, zero, 512);
	sh_expect_sense(&r.cmd, 0x7, 0x27, 0x07);
	/* an overwrite of allocated blocks takes no space: allowed */
	memset(data, 0x78, SP_CHUNK);
	write16(5, 0, data, SP_CHUNK, false);
	/* reads keep working */
	read_expect(5, 0, data, SP_CHUNK);
	read_expect(5, 2048, zero, SP_CHUNK);
	/* UNMAP gives 256 KiB back: the write goes through now */
	unmap1(5, 0, SP_CHUNK / 512);
	write16(5, 2048, data, SP_CHUNK, false);
	read_expect(5, 2048, data, SP_CHUNK);
	free(data);
	free(zero);
	lun_free(l);
	backstore_close(bs);
}
END_TEST

/* ------------------------------------------------------------ thresholds */

static void tur_expect(struct scsi_nexus *n, uint16_t lun, bool ua)
{
	const uint8_t cdb[6] = { 0 };
	struct sh_run r;

	sh_run(&r, n, lun, cdb, 6, NULL, 0);
	if (ua)
		sh_expect_sense(&r.cmd, 0x6, 0x38, 0x07);
	else
		sh_expect_good(&r.cmd);
}

static struct scsi_lun *lun_thresh(struct backstore *bs, uint16_t id, struct scsi_nexus *other,
				   uint64_t soft, uint8_t pool_pct, uint64_t hard)
{
	struct scsi_lun_params lp = { .id = id, .block_size = 512, .nblocks = SP_BLOCKS,
				      .thin = true, .soft_threshold = soft,
				      .pool_threshold_pct = pool_pct, .hard_limit = hard };
	struct scsi_lun *l;

	ck_assert_int_eq(scsi_lun_create(&l, &tgt, &lp, bs), 0);
	ck_assert(l->space_watch);
	scsi_target_set_lun(&tgt, id, l);
	scsi_ua_clear(&nx, id);
	scsi_ua_clear(other, id);
	return l;
}

/* The soft threshold of a LUN (256 KiB of a 2 MiB memory LUN): crossing it
 * raises 06/38/07 once on every nexus; UNMAP below it re-arms it. */
START_TEST(soft_threshold_ua)
{
	struct backstore *mem = sh_memory_bs((uint64_t)SP_BLOCKS * 512, true);
	uint8_t *data = malloc(SP_CHUNK);
	struct scsi_nexus nx2;
	struct scsi_lun *l;

	memset(data, 0x42, SP_CHUNK);
	sh_nexus_attach(&tgt, &nx2, 2);
	l = lun_thresh(mem, 6, &nx2, 256 * 1024, 0, 0);
	write16(6, 0, data, SP_CHUNK / 2, false);     /* 128 KiB held */
	write16(6, 256, data, SP_CHUNK / 2, false);   /* judged at 128 KiB */
	tur_expect(&nx, 6, false);
	tur_expect(&nx2, 6, false);
	write16(6, 1024, data, 4096, false);          /* judged at 256 KiB: reached */
	tur_expect(&nx, 6, true);
	tur_expect(&nx, 6, false);                    /* once */
	write16(6, 1100, data, 4096, false);          /* still above: no new one */
	tur_expect(&nx, 6, false);
	tur_expect(&nx2, 6, true);                    /* the other nexus, once */
	tur_expect(&nx2, 6, false);
	/* below again (UNMAP), then above: reported again */
	unmap1(6, 0, 2048);
	write16(6, 0, data, 4096, false);             /* judged below: re-armed */
	tur_expect(&nx, 6, false);
	write16(6, 8, data, SP_CHUNK, false);
	write16(6, 1024, data, 4096, false);
	tur_expect(&nx, 6, true);
	tur_expect(&nx2, 6, true);
	free(data);
	lun_free(l);
	scsi_nexus_detach(&nx2);
	backstore_close(mem);
}
END_TEST

/* The pool threshold (percent of the pool used; a memory LUN is its own
 * pool): 50 % of 2 MiB. */
START_TEST(pool_threshold_ua)
{
	struct backstore *mem = sh_memory_bs((uint64_t)SP_BLOCKS * 512, true);
	uint8_t *data = malloc(SP_CHUNK);
	struct scsi_nexus nx2;
	struct scsi_lun *l;

	memset(data, 0x42, SP_CHUNK);
	sh_nexus_attach(&tgt, &nx2, 2);
	l = lun_thresh(mem, 6, &nx2, 0, 50, 0);
	for (uint64_t lba = 0; lba < 2048 - 512; lba += 512)
		write16(6, lba, data, SP_CHUNK, false);  /* 768 KiB */
	write16(6, 1536, data, SP_CHUNK, false);      /* judged at 37.5 % */
	tur_expect(&nx, 6, false);
	write16(6, 3000, data, 4096, false);          /* judged at 50 % */
	tur_expect(&nx, 6, true);
	tur_expect(&nx2, 6, true);
	free(data);
	lun_free(l);
	scsi_nexus_detach(&nx2);
	backstore_close(mem);
}
END_TEST

static void log_sense(struct sh_run *r, uint16_t lun, uint8_t page, uint8_t sub)
{
	uint8_t cdb[10] = { 0x4d, 0, page, sub, 0, 0, 0, 0x01, 0x00, 0 };

	sh_run(r, &nx, lun, cdb, 10, NULL, 0);
}

/* VPD B2 threshold fields and LOG SENSE 0x0C against known allocations. */
START_TEST(lbp_vpd_and_log_page)
{
	struct backstore *mem = sh_memory_bs((uint64_t)SP_BLOCKS * 512, true);
	struct backstore *thick = sh_memory_bs((uint64_t)SP_BLOCKS * 512, false);
	uint8_t *data = malloc(SP_CHUNK);
	const uint8_t inq[6] = { 0x12, 0x01, 0xb2, 0, 64, 0 };
	struct scsi_nexus nx2;
	struct scsi_lun *l;
	struct sh_run r;
	const uint8_t *p;
	uint8_t *big;

	memset(data, 0x42, SP_CHUNK);
	sh_nexus_attach(&tgt, &nx2, 2);
	l = lun_thresh(mem, 6, &nx2, 256 * 1024, 0, 0);
	sh_run(&r, &nx, 6, inq, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(sh_buf[1], 0xb2);
	ck_assert_uint_eq(sh_buf[4], 11);                /* 2^11 LBAs: 1 MiB */
	ck_assert_uint_eq(sh_buf[7], 13);                /* 256 KiB of 2 MiB, up */
	ck_assert_uint_eq(sh_buf[6] & 0x07, 0x02);       /* thin */

	/* supported pages */
	log_sense(&r, 6, 0x00, 0x00);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(r.cmd.data_len, 6);
	ck_assert_uint_eq(get_be16(sh_buf + 2), 2);
	ck_assert_uint_eq(sh_buf[4], 0x00);
	ck_assert_uint_eq(sh_buf[5], 0x0c);
	log_sense(&r, 6, 0x00, 0xff);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be16(sh_buf + 2), 6);
	ck_assert_uint_eq(sh_buf[8], 0x0c);

	/* 1 MiB written (one command): used 1, available 1 (of the 2 MiB pool) */
	big = calloc(1, 1u << 20);
	memset(big, 0x42, 1u << 20);
	write16(6, 0, big, 1u << 20, false);
	free(big);
	write16(6, 2048, data, 4096, false);             /* judged at 1 MiB */
	tur_expect(&nx, 6, true);                        /* 256 KiB passed */
	unmap1(6, 2048, 8);
	log_sense(&r, 6, 0x0c, 0x00);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(sh_buf[0], 0x0c);
	ck_assert_uint_eq(get_be16(sh_buf + 2), 24);
	p = sh_buf + 4;
	ck_assert_uint_eq(get_be16(p), 0x0001);          /* available */
	ck_assert_uint_eq(p[3], 8);
	ck_assert_uint_eq(get_be32(p + 4), 1);
	ck_assert_uint_eq(p[8] & 0x03, 0x02);            /* not dedicated */
	p += 12;
	ck_assert_uint_eq(get_be16(p), 0x0002);          /* used */
	ck_assert_uint_eq(get_be32(p + 4), 1);
	ck_assert_uint_eq(p[8] & 0x03, 0x01);            /* dedicated */
	/* 4 KiB more: used rounds up to 2, available down to 0 */
	write16(6, 3000, data, 4096, false);
	log_sense(&r, 6, 0x0c, 0x00);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be32(sh_buf + 4 + 4), 0);
	ck_assert_uint_eq(get_be32(sh_buf + 16 + 4), 2);
	/* an unknown page, a non-zero parameter pointer */
	log_sense(&r, 6, 0x0d, 0x00);
	sh_expect_sense(&r.cmd, 0x5, 0x24, 0x00);
	{
		const uint8_t bad[10] = { 0x4d, 0, 0x0c, 0, 0, 0, 1, 0x01, 0, 0 };

		sh_run(&r, &nx, 6, bad, 10, NULL, 0);
		sh_expect_sense(&r.cmd, 0x5, 0x24, 0x00);
	}
	lun_free(l);

	/* a hard limit of 1 MiB + 64 KiB: what it leaves, dedicated */
	l = lun_thresh(mem, 6, &nx2, 0, 0, (1u << 20) + 65536);
	log_sense(&r, 6, 0x0c, 0x00);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be32(sh_buf + 4 + 4), 0);
	ck_assert_uint_eq(sh_buf[4 + 8] & 0x03, 0x01);
	lun_free(l);

	/* no logical block provisioning: no page 0x0C, no thresholds */
	l = lun_new(thick, 6, true, SCSI_ZD_OFF);
	log_sense(&r, 6, 0x00, 0x00);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(get_be16(sh_buf + 2), 1);
	log_sense(&r, 6, 0x0c, 0x00);
	sh_expect_sense(&r.cmd, 0x5, 0x24, 0x00);
	sh_run(&r, &nx, 6, inq, 6, NULL, 0);
	sh_expect_good(&r.cmd);
	ck_assert_uint_eq(sh_buf[4], 0);
	ck_assert_uint_eq(sh_buf[7], 0);
	lun_free(l);
	free(data);
	scsi_nexus_detach(&nx2);
	backstore_close(mem);
	backstore_close(thick);
}
END_TEST

Suite *space_suite(void)
{
	Suite *s = suite_create("space");
	TCase *zd = tcase_create("zero_detect");
	TCase *oos = tcase_create("out_of_space");
	TCase *th = tcase_create("thresholds");

	tcase_add_checked_fixture(zd, setup, teardown);
	tcase_add_test(zd, zd_where);
	tcase_add_test(zd, zd_all_zero);
	tcase_add_test(zd, zd_file_off);
	tcase_add_test(zd, zd_file_on);
	tcase_add_test(zd, zd_file_unmap);
	tcase_add_test(zd, zd_requests);
	tcase_add_test(zd, zd_atomic_with_caw);
	tcase_set_timeout(zd, 60);
	suite_add_tcase(s, zd);

	tcase_add_checked_fixture(oos, setup, teardown);
	tcase_add_test(oos, enospc_write_protect);
	tcase_add_test(oos, hard_limit_file);
	tcase_set_timeout(oos, 60);
	suite_add_tcase(s, oos);

	tcase_add_checked_fixture(th, setup, teardown);
	tcase_add_test(th, soft_threshold_ua);
	tcase_add_test(th, pool_threshold_ua);
	tcase_add_test(th, lbp_vpd_and_log_page);
	suite_add_tcase(s, th);
	return s;
}
