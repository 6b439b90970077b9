/*
 * Backstore and I/O engine tests: real files in a private temporary
 * directory, each data test run twice (loop index 0: io_uring when the
 * kernel allows it, 1: the worker pool forced). With TARGETD_NO_URING=1 in
 * the environment both runs use the pool (the valgrind pass does that).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/loop.h>
#include <linux/seccomp.h>
#include "backstore/backstore.h"
#include "backstore/io_engine.h"
#include "common/util.h"
#include "tests/check_suites.h"

#define MiB (1024ull * 1024)

static char tdir[256];
static int ndone;

/* ---- fixture -------------------------------------------------------------- */

static void bs_setup(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tdir, sizeof(tdir), "%s/bstest-XXXXXX", t && *t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tdir));
	ndone = 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void bs_teardown(void)
{
	nftw(tdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	io_engine_pool_shutdown();
}

static void tpath(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", tdir, name);
}

/* ---- helpers -------------------------------------------------------------- */

struct tio {
	struct bs_io io;
	bool done;
};

static void t_done(struct bs_io *io)
{
	struct tio *t = container_of(io, struct tio, io);

	ck_assert(!t->done);
	t->done = true;
	ndone++;
}

static void tio_init(struct tio *t, struct backstore *bs, enum bs_op op, uint64_t off,
		     void *buf, uint64_t len)
{
	memset(t, 0, sizeof(*t));
	t->io.bs = bs;
	t->io.op = op;
	t->io.offset = off;
	t->io.len = len;
	if (buf) {
		t->io.iov1.iov_base = buf;
		t->io.iov1.iov_len = len;
		t->io.iov = &t->io.iov1;
		t->io.iovcnt = 1;
	}
	t->io.done = t_done;
	t->io.result = 12345;
}

/* Submit, check the callback did not run inside submit, wait for it. */
static int64_t tio_run(struct io_engine *eng, struct tio *t)
{
	backstore_submit(eng, &t->io);
	ck_assert_msg(!t->done, "done() ran inside submit");
	ck_assert_uint_ge(io_engine_inflight(eng), 1);
	while (!t->done)
		io_engine_wait(eng);
	return t->io.result;
}

static int64_t do_io(struct io_engine *eng, struct backstore *bs, enum bs_op op, uint64_t off,
		     void *buf, uint64_t len, unsigned flags)
{
	struct tio t;

	tio_init(&t, bs, op, off, buf, len);
	t.io.flags = flags;
	return tio_run(eng, &t);
}

static int64_t do_copy(struct io_engine *eng, struct backstore *dst, uint64_t doff,
		       struct backstore *src, uint64_t soff, uint64_t len)
{
	struct tio t;

	tio_init(&t, dst, BS_OP_COPY, doff, NULL, len);
	t.io.src = src;
	t.io.src_offset = soff;
	return tio_run(eng, &t);
}

static struct io_engine *eng_for(int i, unsigned depth)
{
	struct io_engine *eng = io_engine_create(depth, i == 0);

	ck_assert_ptr_nonnull(eng);
	ck_assert_int_ge(io_engine_fd(eng), 0);
	if (i == 1)
		ck_assert(!io_engine_has_uring(eng));
	return eng;
}

static struct backstore *open_file(const char *name, uint64_t size, bool thin, bool create)
{
	struct bs_params p = { .type = "file", .size = size, .block_size = 512,
			       .thin = thin, .create = create };
	struct backstore *bs = NULL;
	char path[512], err[256];
	int r;

	tpath(path, sizeof(path), name);
	p.path = path;
	r = backstore_open(&bs, &p, err, sizeof(err));
	ck_assert_msg(r == 0, "open %s: %d %s", path, r, err);
	return bs;
}

static struct backstore *open_mem(uint64_t size, bool thin)
{
	struct bs_params p = { .type = "memory", .size = size, .block_size = 512, .thin = thin };
	struct backstore *bs = NULL;
	char err[256];
	int r = backstore_open(&bs, &p, err, sizeof(err));

	ck_assert_msg(r == 0, "open memory: %d %s", r, err);
	return bs;
}

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

static bool all_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static blkcnt_t file_blocks(const char *name)
{
	char path[512];
	struct stat st;

	tpath(path, sizeof(path), name);
	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_blocks;
}

/* ---- open ----------------------------------------------------------------- */

START_TEST(test_open_errors)
{
	struct backstore *bs = (void *)1;
	char err[256], path[512];
	struct bs_params p = { .type = "tape", .size = MiB };

	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(bs);
	ck_assert_ptr_nonnull(strstr(err, "unknown backstore type"));

	tpath(path, sizeof(path), "missing");
	p = (struct bs_params){ .type = "file", .path = path, .size = MiB };
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "missing"));

	p.create = true;
	p.size = 0;
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "size"));

	p = (struct bs_params){ .type = "memory", .size = 0 };
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);

	/* A regular file is not a block device. */
	bs = open_file("reg", MiB, true, true);
	backstore_close(bs);
	p = (struct bs_params){ .type = "block", .path = path };
	tpath(path, sizeof(path), "reg");
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a block device"));
}
END_TEST

START_TEST(test_file_create_sizes)
{
	struct backstore *bs;
	char path[512];
	struct stat st;

	/* Thin: 1 GiB that costs (almost) nothing. */
	bs = open_file("thin", 1024 * MiB, true, true);
	ck_assert_uint_eq(bs->size, 1024 * MiB);
	ck_assert(!bs->is_blockdev);
	ck_assert(bs->discard_zeroes);
	ck_assert_int_ge(bs->fd, 0);
	backstore_close(bs);
	tpath(path, sizeof(path), "thin");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 1024 * MiB);
	ck_assert_int_lt(st.st_blocks, 64);

	/* Thick: every byte allocated. */
	bs = open_file("thick", 4 * MiB, false, true);
	backstore_close(bs);
	ck_assert_int_ge(file_blocks("thick") * 512, 4 * MiB);

	/* Size 0: take the file's size; a larger size grows the file. */
	bs = open_file("thin", 0, true, false);
	ck_assert_uint_eq(bs->size, 1024 * MiB);
	backstore_close(bs);
	bs = open_file("thin", 2048 * MiB, true, false);
	ck_assert_uint_eq(bs->size, 2048 * MiB);
	backstore_close(bs);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 2048 * MiB);
	ck_assert_int_lt(st.st_blocks, 64);

	/* A smaller size exports a prefix and leaves the file alone. */
	bs = open_file("thin", MiB, true, false);
	ck_assert_uint_eq(bs->size, MiB);
	backstore_close(bs);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 2048 * MiB);
}
END_TEST

/* ---- read / write ---------------------------------------------------------- */

START_TEST(test_rw_roundtrip)
{
	struct io_engine *eng = eng_for(_i, 64);
	struct backstore *bs = open_file("rw", 16 * MiB, true, true);
	static uint8_t wbuf[3 * 4096 + 512], rbuf[sizeof(wbuf)];
	struct iovec iov[3] = {
		{ wbuf, 4096 }, { wbuf + 4096, 512 }, { wbuf + 4608, sizeof(wbuf) - 4608 },
	};
	struct tio t;

	fill(wbuf, sizeof(wbuf), 7 + _i);
	tio_init(&t, bs, BS_OP_WRITE, MiB + 512, NULL, sizeof(wbuf));
	t.io.iov = iov;
	t.io.iovcnt = 3;
	ck_assert_int_eq(tio_run(eng, &t), sizeof(wbuf));
	ck_assert_uint_eq(io_engine_inflight(eng), 0);

	/* Single buffer through iov == NULL (the iov1 form). */
	memset(rbuf, 0xEE, sizeof(rbuf));
	tio_init(&t, bs, BS_OP_READ, MiB + 512, NULL, sizeof(rbuf));
	t.io.iov1.iov_base = rbuf;
	t.io.iov1.iov_len = sizeof(rbuf);
	ck_assert_int_eq(tio_run(eng, &t), sizeof(rbuf));
	ck_assert_mem_eq(rbuf, wbuf, sizeof(wbuf));

	/* Unwritten space of a thin file reads as zeroes. */
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 8 * MiB, rbuf, 4096, 0), 4096);
	ck_assert(all_zero(rbuf, 4096));

	/* Beyond the end: refused, nothing crashes. */
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 16 * MiB - 512, rbuf, 4096, 0), -EINVAL);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, UINT64_MAX - 100, rbuf, 4096, 0), -EINVAL);
	ck_assert_uint_eq(ndone, 5);

	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

#define NREQ 256
#define REQ_LEN 4096
#define NBLK 4096 /* 16 MiB of 4 KiB blocks */

START_TEST(test_many_in_flight)
{
	/* Depth 32 with 256 requests: the SQ fills up and queuing must submit
	 * and retry; the CQ cap sends the excess to the pool. */
	struct io_engine *eng = eng_for(_i, 32);
	struct backstore *bs = open_file("many", NBLK * (uint64_t)REQ_LEN, true, true);
	static uint8_t wbuf[NREQ][REQ_LEN], rbuf[NREQ][REQ_LEN];
	static struct tio t[NREQ];
	static struct iovec iov[NREQ][2];
	unsigned blk[NREQ], perm[NBLK];
	unsigned i, seed = 12345;

	for (i = 0; i < NBLK; i++)
		perm[i] = i;
	for (i = 0; i < NREQ; i++) {
		unsigned j;

		seed = seed * 1103515245 + 12345;
		j = i + (seed >> 8) % (NBLK - i);
		blk[i] = perm[j];
		perm[j] = perm[i];
		perm[i] = blk[i];
		fill(wbuf[i], REQ_LEN, blk[i] + 1000 * _i);
	}

	for (i = 0; i < NREQ; i++) {
		tio_init(&t[i], bs, BS_OP_WRITE, (uint64_t)blk[i] * REQ_LEN, wbuf[i], REQ_LEN);
		backstore_submit(eng, &t[i].io);
	}
	ck_assert_uint_eq(io_engine_inflight(eng), NREQ);
	ck_assert_int_eq(ndone, 0);
	while (ndone < NREQ)
		io_engine_wait(eng);
	for (i = 0; i < NREQ; i++)
		ck_assert_int_eq(t[i].io.result, REQ_LEN);

	/* Read back, every other request as two iovecs (readv). */
	ndone = 0;
	memset(rbuf, 0, sizeof(rbuf));
	for (i = 0; i < NREQ; i++) {
		tio_init(&t[i], bs, BS_OP_READ, (uint64_t)blk[i] * REQ_LEN, rbuf[i], REQ_LEN);
		if (i & 1) {
			iov[i][0] = (struct iovec){ rbuf[i], 1024 };
			iov[i][1] = (struct iovec){ rbuf[i] + 1024, REQ_LEN - 1024 };
			t[i].io.iov = iov[i];
			t[i].io.iovcnt = 2;
		}
		backstore_submit(eng, &t[i].io);
	}
	while (ndone < NREQ) {
		io_engine_flush(eng);
		io_engine_wait(eng);
	}
	ck_assert_uint_eq(io_engine_inflight(eng), 0);
	ck_assert(!io_engine_busy(eng));
	for (i = 0; i < NREQ; i++) {
		ck_assert_int_eq(t[i].io.result, REQ_LEN);
		ck_assert_msg(memcmp(rbuf[i], wbuf[i], REQ_LEN) == 0, "block %u differs", blk[i]);
	}
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

START_TEST(test_fua_flush)
{
	struct io_engine *eng = eng_for(_i, 16);
	struct backstore *bs = open_file("fua", 4 * MiB, false, true);
	static uint8_t wbuf[8192], rbuf[8192];
	struct tio t;

	fill(wbuf, sizeof(wbuf), 99);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 4096, wbuf, sizeof(wbuf), BS_IO_FUA),
			 sizeof(wbuf));
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 4096, rbuf, sizeof(rbuf), 0), sizeof(rbuf));
	ck_assert_mem_eq(rbuf, wbuf, sizeof(wbuf));

	tio_init(&t, bs, BS_OP_FLUSH, 0, NULL, 0);
	ck_assert_int_eq(tio_run(eng, &t), 0);
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

/* Buffered page-cache WRITEs copied on the submitting thread where the
 * file system cannot write without blocking (bs_file.c, "Inline writes"):
 * only resident ranges, never FUA or long writes, not while backed off;
 * the completion still comes from the engine's poll, never from submit. */
START_TEST(test_inline_write)
{
	struct io_engine *eng = eng_for(_i, 16);
	struct backstore *bs = open_file("inline", 4 * MiB, true, true);
	static uint8_t wbuf[256 << 10], rbuf[sizeof(wbuf)];
	struct iovec iov[2] = { { wbuf, 1536 }, { wbuf + 1536, 8192 - 1536 } };
	uint64_t n0;
	bool inl;
	struct tio t;

	/* A hole that was never read is not in the page cache: the engine. */
	fill(wbuf, 8192, 1);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, wbuf, 8192, 0), 8192);
	ck_assert_uint_eq(atomic_load(&bs->wr_inline), 0);
	ck_assert_int_eq(atomic_load(&bs->wr_inline_mode), BS_FILE_WR_PROBE);

	/* Now resident: the first eligible write asks the file system. */
	fill(wbuf, 8192, 2);
	tio_init(&t, bs, BS_OP_WRITE, 0, NULL, 8192);
	t.io.iov = iov;
	t.io.iovcnt = 2;
	ck_assert_int_eq(tio_run(eng, &t), 8192);
	ck_assert_int_ne(atomic_load(&bs->wr_inline_mode), BS_FILE_WR_PROBE);
	inl = atomic_load(&bs->wr_inline_mode) == BS_FILE_WR_INLINE;
	if (inl)
		ck_assert_uint_eq(atomic_load(&bs->wr_inline), 1);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 0, rbuf, 8192, 0), 8192);
	ck_assert_mem_eq(rbuf, wbuf, 8192);
	n0 = atomic_load(&bs->wr_inline);

	/* FUA (also every write with WCE=0) waits for the disk: the engine. */
	fill(wbuf, 4096, 3);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, wbuf, 4096, BS_IO_FUA), 4096);
	ck_assert_uint_eq(atomic_load(&bs->wr_inline), n0);

	/* Longer than 128 KiB: the engine, even when resident. */
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, MiB, rbuf, sizeof(rbuf), 0), sizeof(rbuf));
	fill(wbuf, sizeof(wbuf), 4);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, MiB, wbuf, sizeof(wbuf), 0), sizeof(wbuf));
	ck_assert_uint_eq(atomic_load(&bs->wr_inline), n0);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, MiB, rbuf, sizeof(rbuf), 0), sizeof(rbuf));
	ck_assert_mem_eq(rbuf, wbuf, sizeof(wbuf));

	/* 128 KiB of a resident range: inline where the file system needs it. */
	fill(wbuf, 128 << 10, 5);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, MiB + 4096, wbuf, 128 << 10, 0), 128 << 10);
	ck_assert_uint_eq(atomic_load(&bs->wr_inline), n0 + (inl ? 1 : 0));
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, MiB + 4096, rbuf, 128 << 10, 0), 128 << 10);
	ck_assert_mem_eq(rbuf, wbuf, 128 << 10);
	n0 = atomic_load(&bs->wr_inline);

	/* Backed off after a stall: the engine until the time has come. */
	atomic_store(&bs->wr_inline_off_until, backstore_now_ns() + 3600ull * 1000000000u);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, MiB, wbuf, 4096, 0), 4096);
	ck_assert_uint_eq(atomic_load(&bs->wr_inline), n0);
	atomic_store(&bs->wr_inline_off_until, 0);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, MiB, wbuf, 4096, 0), 4096);
	ck_assert_uint_eq(atomic_load(&bs->wr_inline), n0 + (inl ? 1 : 0));

	/* Out of range still fails cleanly on this path. */
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 4 * MiB - 512, wbuf, 4096, 0), -EINVAL);
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

/* ---- zeroes, discard, provisioning --------------------------------------- */

START_TEST(test_zeroes_discard_thin)
{
	struct io_engine *eng = eng_for(_i, 32);
	struct backstore *bs = open_file("zd", 8 * MiB, true, true);
	uint8_t *buf = malloc(2 * MiB), *rbuf = malloc(2 * MiB);
	blkcnt_t b_full, b_disc, b_wz;
	bool mapped;
	uint64_t run;
	struct tio t;

	fill(buf, 2 * MiB, 5);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, buf, 2 * MiB, 0), 2 * MiB);
	tio_init(&t, bs, BS_OP_FLUSH, 0, NULL, 0);
	ck_assert_int_eq(tio_run(eng, &t), 0);
	b_full = file_blocks("zd");
	ck_assert_int_ge(b_full * 512, 2 * MiB);

	ck_assert_int_eq(bs->ops->lba_status(bs, 0, 8 * MiB, &mapped, &run), 0);
	ck_assert(mapped);
	ck_assert_uint_eq(run, 2 * MiB);

	/* DISCARD on a thin file: zeroes and space given back. */
	tio_init(&t, bs, BS_OP_DISCARD, 0, NULL, MiB);
	ck_assert_int_eq(tio_run(eng, &t), MiB);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 0, rbuf, 2 * MiB, 0), 2 * MiB);
	ck_assert(all_zero(rbuf, MiB));
	ck_assert_mem_eq(rbuf + MiB, buf + MiB, MiB);
	b_disc = file_blocks("zd");
	ck_assert_int_le(b_disc * 512, b_full * 512 - MiB);

	ck_assert_int_eq(bs->ops->lba_status(bs, 0, 8 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, MiB);
	ck_assert_int_eq(bs->ops->lba_status(bs, MiB, 8 * MiB, &mapped, &run), 0);
	ck_assert(mapped);
	ck_assert_uint_eq(run, MiB);
	ck_assert_int_eq(bs->ops->lba_status(bs, 2 * MiB, 8 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, 6 * MiB);

	/* WRITE_ZEROES: zeroes, the blocks stay allocated. Unaligned edges. */
	tio_init(&t, bs, BS_OP_WRITE_ZEROES, MiB + 512, NULL, MiB / 2);
	ck_assert_int_eq(tio_run(eng, &t), MiB / 2);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, MiB, rbuf, MiB, 0), MiB);
	ck_assert_mem_eq(rbuf, buf + MiB, 512);
	ck_assert(all_zero(rbuf + 512, MiB / 2));
	ck_assert_mem_eq(rbuf + 512 + MiB / 2, buf + MiB + 512 + MiB / 2, MiB / 2 - 512);
	b_wz = file_blocks("zd");
	ck_assert_int_ge(b_wz, b_disc);

	/* A discard of nothing is fine. */
	tio_init(&t, bs, BS_OP_DISCARD, 0, NULL, 0);
	ck_assert_int_eq(tio_run(eng, &t), 0);

	free(buf);
	free(rbuf);
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

START_TEST(test_discard_thick)
{
	struct io_engine *eng = eng_for(_i, 32);
	struct backstore *bs = open_file("thick", 4 * MiB, false, true);
	uint8_t *buf = malloc(MiB);
	blkcnt_t before;
	bool mapped;
	uint64_t run;
	struct tio t;

	fill(buf, MiB, 77);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, buf, MiB, 0), MiB);
	before = file_blocks("thick");
	ck_assert_int_ge(before * 512, 4 * MiB);
	tio_init(&t, bs, BS_OP_DISCARD, 0, NULL, MiB);
	ck_assert_int_eq(tio_run(eng, &t), MiB);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 0, buf, MiB, 0), MiB);
	ck_assert(all_zero(buf, MiB));
	/* Thick stays fully allocated and says so. */
	ck_assert_int_ge(file_blocks("thick") * 512, 4 * MiB);
	ck_assert_int_eq(bs->ops->lba_status(bs, 0, 4 * MiB, &mapped, &run), 0);
	ck_assert(mapped);
	ck_assert_uint_eq(run, 4 * MiB);
	free(buf);
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

START_TEST(test_lba_status_file)
{
	struct io_engine *eng = eng_for(0, 8);
	struct backstore *bs = open_file("lba", 4 * MiB, true, true);
	static uint8_t buf[4096];
	bool mapped = true;
	uint64_t run = 0;

	ck_assert_int_eq(bs->ops->lba_status(bs, 0, 1 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, MiB);
	/* max_len past the end is cut at the end. */
	ck_assert_int_eq(bs->ops->lba_status(bs, 3 * MiB, 100 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, MiB);
	ck_assert_int_eq(bs->ops->lba_status(bs, 4 * MiB, 4096, &mapped, &run), -EINVAL);

	fill(buf, sizeof(buf), 3);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 64 * 1024, buf, sizeof(buf), 0), 4096);
	ck_assert_int_eq(bs->ops->lba_status(bs, 0, 4 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, 64 * 1024);
	ck_assert_int_eq(bs->ops->lba_status(bs, 64 * 1024, 4 * MiB, &mapped, &run), 0);
	ck_assert(mapped);
	ck_assert_uint_eq(run, 4096);
	ck_assert_int_eq(bs->ops->lba_status(bs, 64 * 1024 + 512, 4 * MiB, &mapped, &run), 0);
	ck_assert(mapped);
	ck_assert_uint_eq(run, 4096 - 512);
	ck_assert_int_eq(bs->ops->lba_status(bs, 68 * 1024, 4 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, 4 * MiB - 68 * 1024);
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

/* ---- copy ----------------------------------------------------------------- */

START_TEST(test_copy)
{
	struct io_engine *eng = eng_for(_i, 32);
	struct backstore *a = open_file("a", 8 * MiB, true, true);
	struct backstore *b = open_file("b", 8 * MiB, true, true);
	struct backstore *m = open_mem(8 * MiB, true);
	struct backstore *m2 = open_mem(4 * MiB, true);
	uint8_t *model = malloc(8 * MiB), *rbuf = malloc(8 * MiB);

	fill(model, 8 * MiB, 11);
	ck_assert_int_eq(do_io(eng, a, BS_OP_WRITE, 0, model, 8 * MiB, 0), 8 * MiB);

	/* file -> file, 3 MiB + 512 (crosses the 1 MiB bounce chunks). */
	ck_assert_int_eq(do_copy(eng, b, 512, a, MiB, 3 * MiB + 512), 3 * MiB + 512);
	ck_assert_int_eq(do_io(eng, b, BS_OP_READ, 0, rbuf, 4 * MiB, 0), 4 * MiB);
	ck_assert(all_zero(rbuf, 512));
	ck_assert_mem_eq(rbuf + 512, model + MiB, 3 * MiB + 512);

	/* file -> memory (worker pool), then memory -> file. */
	ck_assert_int_eq(do_copy(eng, m, 4096, a, 0, 2 * MiB), 2 * MiB);
	ck_assert_int_eq(do_io(eng, m, BS_OP_READ, 4096, rbuf, 2 * MiB, 0), 2 * MiB);
	ck_assert_mem_eq(rbuf, model, 2 * MiB);
	ck_assert_int_eq(do_copy(eng, b, 6 * MiB, m, 4096 + 512, MiB), MiB);
	ck_assert_int_eq(do_io(eng, b, BS_OP_READ, 6 * MiB, rbuf, MiB, 0), MiB);
	ck_assert_mem_eq(rbuf, model + 512, MiB);

	/* memory -> memory (another backstore). */
	ck_assert_int_eq(do_copy(eng, m2, 0, m, 4096, MiB), MiB);
	ck_assert_int_eq(do_io(eng, m2, BS_OP_READ, 0, rbuf, MiB, 0), MiB);
	ck_assert_mem_eq(rbuf, model, MiB);

	/* Overlapping copies inside one file, both directions, like memmove. */
	ck_assert_int_eq(do_copy(eng, a, 1 * MiB + 4096, a, 1 * MiB, 2 * MiB), 2 * MiB);
	memmove(model + MiB + 4096, model + MiB, 2 * MiB);
	ck_assert_int_eq(do_copy(eng, a, 4 * MiB, a, 4 * MiB + 512, 2 * MiB), 2 * MiB);
	memmove(model + 4 * MiB, model + 4 * MiB + 512, 2 * MiB);
	ck_assert_int_eq(do_io(eng, a, BS_OP_READ, 0, rbuf, 8 * MiB, 0), 8 * MiB);
	ck_assert_mem_eq(rbuf, model, 8 * MiB);

	/* Source range past the end of the source. */
	ck_assert_int_eq(do_copy(eng, b, 0, m2, 3 * MiB, 2 * MiB), -EINVAL);

	free(model);
	free(rbuf);
	backstore_close(a);
	backstore_close(b);
	backstore_close(m);
	backstore_close(m2);
	io_engine_destroy(eng);
}
END_TEST

/* ---- edge cases ------------------------------------------------------------ */

START_TEST(test_short_read_eof)
{
	struct io_engine *eng = eng_for(_i, 16);
	struct backstore *bs = open_file("short", MiB, true, true);
	uint8_t *buf = malloc(MiB), *rbuf = malloc(MiB);
	struct iovec iov[2];
	struct tio t;
	char path[512];

	fill(buf, MiB, 21);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, buf, MiB, 0), MiB);
	/* Someone shrinks the file underneath: reads past its end are zeroes. */
	tpath(path, sizeof(path), "short");
	ck_assert_int_eq(truncate(path, 512 * 1024 + 100), 0);

	memset(rbuf, 0xAB, MiB);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 0, rbuf, MiB, 0), MiB);
	ck_assert_mem_eq(rbuf, buf, 512 * 1024 + 100);
	ck_assert(all_zero(rbuf + 512 * 1024 + 100, MiB - 512 * 1024 - 100));

	/* Same through two iovecs, the short end inside the first. */
	memset(rbuf, 0xAB, MiB);
	iov[0] = (struct iovec){ rbuf, 768 * 1024 };
	iov[1] = (struct iovec){ rbuf + 768 * 1024, 256 * 1024 };
	tio_init(&t, bs, BS_OP_READ, 0, NULL, MiB);
	t.io.iov = iov;
	t.io.iovcnt = 2;
	ck_assert_int_eq(tio_run(eng, &t), MiB);
	ck_assert_mem_eq(rbuf, buf, 512 * 1024 + 100);
	ck_assert(all_zero(rbuf + 512 * 1024 + 100, MiB - 512 * 1024 - 100));

	/* Entirely past the end. */
	memset(rbuf, 0xAB, 4096);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 900 * 1024, rbuf, 4096, 0), 4096);
	ck_assert(all_zero(rbuf, 4096));
	free(buf);
	free(rbuf);
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

START_TEST(test_read_only)
{
	/* Contract: every modifying op on a read-only backstore fails with
	 * -EROFS before any I/O; FLUSH succeeds (nothing to make durable). */
	struct io_engine *eng = eng_for(_i, 16);
	struct backstore *bs = open_file("ro", MiB, true, true), *m;
	struct bs_params p = { .type = "file", .read_only = true };
	static uint8_t buf[4096], rbuf[4096];
	char path[512], err[256];
	struct tio t;

	fill(buf, sizeof(buf), 8);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, buf, sizeof(buf), 0), 4096);
	backstore_close(bs);

	tpath(path, sizeof(path), "ro");
	p.path = path;
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), 0);
	ck_assert(bs->read_only);
	ck_assert_uint_eq(bs->size, MiB);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 0, rbuf, sizeof(rbuf), 0), 4096);
	ck_assert_mem_eq(rbuf, buf, sizeof(buf));
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, buf, sizeof(buf), 0), -EROFS);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, buf, sizeof(buf), BS_IO_FUA), -EROFS);
	tio_init(&t, bs, BS_OP_WRITE_ZEROES, 0, NULL, 4096);
	ck_assert_int_eq(tio_run(eng, &t), -EROFS);
	tio_init(&t, bs, BS_OP_DISCARD, 0, NULL, 4096);
	ck_assert_int_eq(tio_run(eng, &t), -EROFS);
	m = open_mem(MiB, false);
	ck_assert_int_eq(do_copy(eng, bs, 0, m, 0, 4096), -EROFS);
	tio_init(&t, bs, BS_OP_FLUSH, 0, NULL, 0);
	ck_assert_int_eq(tio_run(eng, &t), 0);
	ck_assert_int_eq(bs->ops->resize(bs, 2 * MiB, 0), -EROFS);
	/* Read-only data is unchanged. */
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 0, rbuf, sizeof(rbuf), 0), 4096);
	ck_assert_mem_eq(rbuf, buf, sizeof(buf));
	backstore_close(bs);
	backstore_close(m);

	/* Read-only cannot grow a file to the asked size. */
	p.size = 2 * MiB;
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);
	io_engine_destroy(eng);
}
END_TEST

START_TEST(test_enospc)
{
	struct io_engine *eng = eng_for(_i, 16);
	struct bs_params p = { .type = "file", .size = 8 * MiB, .thin = true, .create = true };
	struct backstore *bs;
	char mnt[512], path[600], err[256];
	uint8_t *buf = malloc(64 * 1024);
	int64_t r = 0;
	unsigned i;

	tpath(mnt, sizeof(mnt), "mnt");
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") < 0) {
		printf("backstore: ENOSPC case skipped: cannot mount a small tmpfs (%s)\n",
		       strerror(errno));
		io_engine_destroy(eng);
		free(buf);
		return;
	}
	snprintf(path, sizeof(path), "%s/full", mnt);
	p.path = path;
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), 0);
	fill(buf, 64 * 1024, 1);
	for (i = 0; i < 64; i++) {
		r = do_io(eng, bs, BS_OP_WRITE, (uint64_t)i * 64 * 1024, buf, 64 * 1024, 0);
		if (r != 64 * 1024)
			break;
	}
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_uint_le(i, 16); /* 1 MiB filesystem */
	backstore_close(bs);
	umount2(mnt, MNT_DETACH);
	free(buf);
	io_engine_destroy(eng);
}
END_TEST

START_TEST(test_zero_fallbacks)
{
	/* tmpfs has PUNCH_HOLE but no ZERO_RANGE: WRITE_ZEROES must fall back
	 * to punch + allocate, a thick DISCARD likewise, and still read zeroes. */
	struct io_engine *eng = eng_for(_i, 16);
	struct bs_params p = { .type = "file", .size = 4 * MiB, .thin = true, .create = true };
	struct backstore *bs;
	char mnt[512], path[600], err[256];
	uint8_t *buf = malloc(MiB), *rbuf = malloc(MiB);
	struct stat st0, st1;
	struct tio t;

	tpath(mnt, sizeof(mnt), "mnt");
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=16m") < 0) {
		printf("backstore: fallback case skipped: cannot mount a tmpfs (%s)\n", strerror(errno));
		io_engine_destroy(eng);
		free(buf);
		free(rbuf);
		return;
	}
	snprintf(path, sizeof(path), "%s/f", mnt);
	p.path = path;
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), 0);
	fill(buf, MiB, 9);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, buf, MiB, 0), MiB);
	ck_assert_int_eq(stat(path, &st0), 0);

	tio_init(&t, bs, BS_OP_WRITE_ZEROES, 4096, NULL, 64 * 1024);
	ck_assert_int_eq(tio_run(eng, &t), 64 * 1024);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 0, rbuf, MiB, 0), MiB);
	ck_assert_mem_eq(rbuf, buf, 4096);
	ck_assert(all_zero(rbuf + 4096, 64 * 1024));
	ck_assert_mem_eq(rbuf + 4096 + 64 * 1024, buf + 4096 + 64 * 1024, MiB - 4096 - 64 * 1024);
	ck_assert_int_eq(stat(path, &st1), 0);
	ck_assert_int_eq(st1.st_blocks, st0.st_blocks); /* still allocated */

	tio_init(&t, bs, BS_OP_DISCARD, 512 * 1024, NULL, 256 * 1024);
	ck_assert_int_eq(tio_run(eng, &t), 256 * 1024);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 512 * 1024, rbuf, 256 * 1024, 0), 256 * 1024);
	ck_assert(all_zero(rbuf, 256 * 1024));
	ck_assert_int_eq(stat(path, &st1), 0);
	ck_assert_int_le(st1.st_blocks * 512, st0.st_blocks * 512 - 256 * 1024);
	backstore_close(bs);

	/* Thick on tmpfs: DISCARD keeps the blocks. */
	p.thin = false;
	snprintf(path, sizeof(path), "%s/g", mnt);
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(stat(path, &st0), 0);
	ck_assert_int_ge(st0.st_blocks * 512, 4 * MiB);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 0, buf, MiB, 0), MiB);
	tio_init(&t, bs, BS_OP_DISCARD, 0, NULL, MiB);
	ck_assert_int_eq(tio_run(eng, &t), MiB);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 0, rbuf, MiB, 0), MiB);
	ck_assert(all_zero(rbuf, MiB));
	ck_assert_int_eq(stat(path, &st1), 0);
	ck_assert_int_ge(st1.st_blocks * 512, 4 * MiB);
	backstore_close(bs);

	umount2(mnt, MNT_DETACH);
	free(buf);
	free(rbuf);
	io_engine_destroy(eng);
}
END_TEST

START_TEST(test_direct_io)
{
	struct io_engine *eng = eng_for(_i, 16);
	struct bs_params p = { .type = "file", .size = 4 * MiB, .thin = true, .create = true,
			       .direct = true };
	struct backstore *bs;
	char path[512], err[256];
	void *wbuf, *rbuf;
	int r;

	tpath(path, sizeof(path), "direct");
	p.path = path;
	r = backstore_open(&bs, &p, err, sizeof(err));
	if (r == -EINVAL) {
		printf("backstore: O_DIRECT case skipped: %s\n", err);
		io_engine_destroy(eng);
		return;
	}
	ck_assert_msg(r == 0, "%s", err);
	ck_assert(bs->direct);
	ck_assert_int_eq(posix_memalign(&wbuf, 4096, 64 * 1024), 0);
	ck_assert_int_eq(posix_memalign(&rbuf, 4096, 64 * 1024), 0);
	fill(wbuf, 64 * 1024, 4);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, 128 * 1024, wbuf, 64 * 1024, BS_IO_FUA),
			 64 * 1024);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 128 * 1024, rbuf, 64 * 1024, 0), 64 * 1024);
	ck_assert_mem_eq(rbuf, wbuf, 64 * 1024);
	free(wbuf);
	free(rbuf);
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

/* A file backstore opens regular files only: a FIFO (which would block
 * a read-only open), a character device behind a symbolic link, a
 * directory; and it never creates a file through a dangling link. */
START_TEST(test_open_special)
{
	struct bs_params p = { .type = "file", .size = MiB, .block_size = 512, .thin = true,
			       .create = true };
	struct backstore *bs = NULL;
	char path[512], target[512], err[256];
	struct stat st;

	tpath(path, sizeof(path), "fifo");
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	p.path = path;
	p.read_only = true;
	p.create = false;
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "FIFO"));
	p.read_only = false;
	p.create = true;
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);

	tpath(path, sizeof(path), "null");
	ck_assert_int_eq(symlink("/dev/null", path), 0);
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "character device"));

	tpath(path, sizeof(path), "dir");
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "directory"));

	tpath(path, sizeof(path), "dangling");
	tpath(target, sizeof(target), "dangling-target");
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EEXIST);
	ck_assert_int_eq(stat(target, &st), -1);
	ck_assert_ptr_null(bs);
}
END_TEST

/* Resizing never cuts a file unless told to (BS_RESIZE_SHRINK). */
START_TEST(test_resize_never_cuts)
{
	struct backstore *bs = open_file("keep", 4 * MiB, true, true);
	char path[512];
	struct stat st;

	tpath(path, sizeof(path), "keep");
	ck_assert_int_eq(bs->ops->resize(bs, 2 * MiB, 0), -EPERM);
	ck_assert_uint_eq(bs->size, 4 * MiB);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 4 * MiB);
	backstore_close(bs);

	/* a file longer than the LUN: growing the LUN leaves the file's tail */
	bs = open_file("keep", MiB, true, false);
	ck_assert_uint_eq(bs->size, MiB);
	ck_assert_int_eq(bs->ops->resize(bs, 2 * MiB, 0), 0);
	ck_assert_uint_eq(bs->size, 2 * MiB);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 4 * MiB);

	/* asked for: the file is cut */
	ck_assert_int_eq(bs->ops->resize(bs, MiB, BS_RESIZE_SHRINK), 0);
	ck_assert_uint_eq(bs->size, MiB);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, MiB);
	backstore_close(bs);
}
END_TEST

START_TEST(test_resize)
{
	struct io_engine *eng = eng_for(0, 8);
	struct backstore *bs = open_file("grow", MiB, true, true);
	static uint8_t buf[4096];
	char path[512];
	struct stat st;

	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 2 * MiB, buf, 4096, 0), -EINVAL);
	ck_assert_int_eq(bs->ops->resize(bs, 3 * MiB, 0), 0);
	ck_assert_uint_eq(bs->size, 3 * MiB);
	tpath(path, sizeof(path), "grow");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 3 * MiB);
	memset(buf, 1, sizeof(buf));
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, 2 * MiB, buf, 4096, 0), 4096);
	ck_assert(all_zero(buf, sizeof(buf)));
	ck_assert_int_eq(bs->ops->resize(bs, 0, 0), -EINVAL);
	backstore_close(bs);
	io_engine_destroy(eng);
}
END_TEST

/* ---- memory ----------------------------------------------------------------- */

START_TEST(test_memory)
{
	struct io_engine *eng = eng_for(_i, 8);
	struct backstore *m = open_mem(4 * MiB + 512, true);
	static uint8_t buf[3 * 4096], rbuf[3 * 4096];
	bool mapped = true;
	uint64_t run = 0;
	struct tio t;

	ck_assert_int_eq(m->fd, -1);
	ck_assert_uint_eq(m->size, 4 * MiB + 512);
	ck_assert(m->discard_zeroes);
	ck_assert_int_eq(m->ops->lba_status(m, 0, 8 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, 4 * MiB + 512);

	fill(buf, sizeof(buf), 31);
	ck_assert_int_eq(do_io(eng, m, BS_OP_WRITE, 8192 + 512, buf, sizeof(buf), 0), sizeof(buf));
	ck_assert_int_eq(do_io(eng, m, BS_OP_READ, 8192 + 512, rbuf, sizeof(rbuf), 0), sizeof(rbuf));
	ck_assert_mem_eq(rbuf, buf, sizeof(buf));
	/* Pages 2..5 touched. */
	ck_assert_int_eq(m->ops->lba_status(m, 0, 8 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, 8192);
	ck_assert_int_eq(m->ops->lba_status(m, 8192, 8 * MiB, &mapped, &run), 0);
	ck_assert(mapped);
	ck_assert_uint_eq(run, 4 * 4096);
	ck_assert_int_eq(m->ops->lba_status(m, 4 * MiB, 8 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, 512);

	/* Discard pages 3..4 entirely and parts of 2 and 5. */
	tio_init(&t, m, BS_OP_DISCARD, 8192 + 1024, NULL, 3 * 4096);
	ck_assert_int_eq(tio_run(eng, &t), 3 * 4096);
	ck_assert_int_eq(do_io(eng, m, BS_OP_READ, 8192, rbuf, sizeof(rbuf), 0), sizeof(rbuf));
	ck_assert_mem_eq(rbuf + 512, buf, 512);
	ck_assert(all_zero(rbuf + 1024, 3 * 4096 - 1024));
	ck_assert_int_eq(m->ops->lba_status(m, 12288, 8 * MiB, &mapped, &run), 0);
	ck_assert(!mapped);
	ck_assert_uint_eq(run, 8192);
	ck_assert_int_eq(m->ops->lba_status(m, 8192, 8 * MiB, &mapped, &run), 0);
	ck_assert(mapped);
	ck_assert_uint_eq(run, 4096);

	/* WRITE_ZEROES keeps the pages mapped. */
	tio_init(&t, m, BS_OP_WRITE_ZEROES, 8192, NULL, 4096);
	ck_assert_int_eq(tio_run(eng, &t), 4096);
	ck_assert_int_eq(do_io(eng, m, BS_OP_READ, 8192, rbuf, 4096, 0), 4096);
	ck_assert(all_zero(rbuf, 4096));
	ck_assert_int_eq(m->ops->lba_status(m, 8192, 8 * MiB, &mapped, &run), 0);
	ck_assert(mapped);

	/* Flush and range checks. */
	tio_init(&t, m, BS_OP_FLUSH, 0, NULL, 0);
	ck_assert_int_eq(tio_run(eng, &t), 0);
	ck_assert_int_eq(do_io(eng, m, BS_OP_READ, 4 * MiB, rbuf, 4096, 0), -EINVAL);
	ck_assert_int_eq(do_io(eng, m, BS_OP_READ, 4 * MiB, rbuf, 512, 0), 512);
	ck_assert(!io_engine_busy(eng));
	backstore_close(m);
	io_engine_destroy(eng);
}
END_TEST

START_TEST(test_memory_deferred)
{
	/* Completions are deferred to the poll: busy() says so, and a
	 * callback that submits again is not run in the same pass. */
	struct io_engine *eng = eng_for(1, 8);
	struct backstore *m = open_mem(MiB, false);
	static uint8_t buf[512];
	struct tio a, b;

	tio_init(&a, m, BS_OP_READ, 0, buf, sizeof(buf));
	tio_init(&b, m, BS_OP_WRITE, 512, buf, sizeof(buf));
	ck_assert(!io_engine_busy(eng));
	backstore_submit(eng, &a.io);
	backstore_submit(eng, &b.io);
	ck_assert(!a.done && !b.done);
	ck_assert(io_engine_busy(eng));
	ck_assert_uint_eq(io_engine_inflight(eng), 2);
	ck_assert_int_eq(io_engine_poll(eng), 2);
	ck_assert(a.done && b.done);
	ck_assert_int_eq(a.io.result, 512);
	ck_assert_int_eq(b.io.result, 512);
	ck_assert(!io_engine_busy(eng));
	ck_assert_uint_eq(io_engine_inflight(eng), 0);
	ck_assert_int_eq(io_engine_poll(eng), 0);
	backstore_close(m);
	io_engine_destroy(eng);
}
END_TEST

static struct io_engine *chain_eng;
static struct tio chain_t;
static int chain_left;

static void chain_done(struct bs_io *io)
{
	ndone++;
	if (--chain_left > 0)
		backstore_submit(chain_eng, io);
}

START_TEST(test_resubmit_from_callback)
{
	struct backstore *m = open_mem(MiB, false);
	static uint8_t buf[512];

	chain_eng = eng_for(1, 8);
	tio_init(&chain_t, m, BS_OP_READ, 0, buf, sizeof(buf));
	chain_t.io.done = chain_done;
	chain_left = 3;
	backstore_submit(chain_eng, &chain_t.io);
	/* Each poll runs only the snapshot: one completion per pass. */
	ck_assert_int_eq(io_engine_poll(chain_eng), 1);
	ck_assert(io_engine_busy(chain_eng));
	ck_assert_int_eq(io_engine_poll(chain_eng), 1);
	ck_assert_int_eq(io_engine_poll(chain_eng), 1);
	ck_assert(!io_engine_busy(chain_eng));
	ck_assert_int_eq(ndone, 3);
	backstore_close(m);
	io_engine_destroy(chain_eng);
}
END_TEST

START_TEST(test_sync_io)
{
	struct backstore *bs = open_file("sync", MiB, true, true);
	struct backstore *m = open_mem(MiB, true);
	static uint8_t buf[4096], rbuf[4096];
	struct tio t;

	fill(buf, sizeof(buf), 42);
	tio_init(&t, bs, BS_OP_WRITE, 4096, buf, sizeof(buf));
	t.io.priv = &t;
	ck_assert_int_eq(backstore_sync_io(&t.io), 4096);
	ck_assert(!t.done);                 /* done() borrowed, not called */
	ck_assert_ptr_eq(t.io.done, t_done); /* and restored */
	ck_assert_ptr_eq(t.io.priv, &t);
	tio_init(&t, m, BS_OP_COPY, 0, NULL, 8192);
	t.io.src = bs;
	t.io.src_offset = 0;
	ck_assert_int_eq(backstore_sync_io(&t.io), 8192);
	tio_init(&t, m, BS_OP_READ, 4096, rbuf, sizeof(rbuf));
	ck_assert_int_eq(backstore_sync_io(&t.io), 4096);
	ck_assert_mem_eq(rbuf, buf, sizeof(buf));
	backstore_close(bs);
	backstore_close(m);
}
END_TEST

/* ---- io_uring refused --------------------------------------------------------- */

#ifdef __NR_io_uring_setup
/* Child: io_uring_setup fails with EPERM (as under a container's seccomp
 * profile); the engine must fall back to the pool and work. Exit code 0 on
 * success, the failing step otherwise (no Check calls in the child). */
static int refused_child(const char *path)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE(f), .filter = f };
	struct bs_params p = { .type = "file", .path = path, .size = MiB, .thin = true,
			       .create = true };
	static uint8_t buf[4096], rbuf[4096];
	struct io_engine *eng;
	struct backstore *bs;
	struct tio t;
	char err[256];

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return 10;
	eng = io_engine_create(32, true);
	if (!eng)
		return 2;
	if (io_engine_has_uring(eng))
		return 3;
	if (backstore_open(&bs, &p, err, sizeof(err)) < 0)
		return 4;
	fill(buf, sizeof(buf), 66);
	tio_init(&t, bs, BS_OP_WRITE, 8192, buf, sizeof(buf));
	backstore_submit(eng, &t.io);
	while (!t.done)
		io_engine_wait(eng);
	if (t.io.result != 4096)
		return 5;
	tio_init(&t, bs, BS_OP_READ, 8192, rbuf, sizeof(rbuf));
	backstore_submit(eng, &t.io);
	while (!t.done)
		io_engine_wait(eng);
	if (t.io.result != 4096 || memcmp(buf, rbuf, sizeof(buf)) != 0)
		return 6;
	backstore_close(bs);
	io_engine_destroy(eng);
	io_engine_pool_shutdown();
	return 0;
}
#endif

START_TEST(test_uring_refused)
{
#ifdef __NR_io_uring_setup
	char path[512];
	pid_t pid;
	int status;

	tpath(path, sizeof(path), "refused");
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(refused_child(path));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) == 10) {
		printf("backstore: io_uring refusal case skipped: cannot install a seccomp filter\n");
		return;
	}
	ck_assert_int_eq(WEXITSTATUS(status), 0);
#endif
}
END_TEST

/* ---- block device (loop) ---------------------------------------------------- */

/* Attach a file to a free loop device with autoclear: the kernel detaches it
 * when the last descriptor closes, even if this test dies. Returns the
 * holding fd (and the device path) or -1. */
static int loop_attach(const char *file, char *dev, size_t devlen)
{
	struct loop_info64 info;
	int ctl, n, lfd, ffd;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -1;
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (n < 0)
		return -1;
	snprintf(dev, devlen, "/dev/loop%d", n);
	lfd = open(dev, O_RDWR | O_CLOEXEC);
	if (lfd < 0)
		return -1;
	ffd = open(file, O_RDWR | O_CLOEXEC);
	if (ffd < 0 || ioctl(lfd, LOOP_SET_FD, ffd) < 0) {
		if (ffd >= 0)
			close(ffd);
		close(lfd);
		return -1;
	}
	close(ffd);
	memset(&info, 0, sizeof(info));
	info.lo_flags = LO_FLAGS_AUTOCLEAR;
	if (ioctl(lfd, LOOP_SET_STATUS64, &info) < 0) {
		ioctl(lfd, LOOP_CLR_FD, 0);
		close(lfd);
		return -1;
	}
	return lfd;
}

START_TEST(test_block_loop)
{
	struct io_engine *eng = eng_for(_i, 16);
	struct backstore *f = open_file("loopback", 16 * MiB, true, true), *bs;
	struct bs_params p = { .type = "block", .block_size = 512 };
	char path[512], dev[64], err[256];
	uint8_t *buf = malloc(MiB), *rbuf = malloc(MiB);
	bool mapped = false;
	uint64_t run = 0;
	struct tio t;
	int lfd;

	backstore_close(f);
	tpath(path, sizeof(path), "loopback");
	lfd = loop_attach(path, dev, sizeof(dev));
	if (lfd < 0) {
		printf("backstore: block device case skipped: no loop device (%s)\n", strerror(errno));
		free(buf);
		free(rbuf);
		io_engine_destroy(eng);
		return;
	}
	p.path = dev;
	p.size = 32 * MiB;
	ck_assert_int_eq(backstore_open(&bs, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "larger than the device"));
	p.size = 0;
	ck_assert_msg(backstore_open(&bs, &p, err, sizeof(err)) == 0, "%s", err);
	ck_assert(bs->is_blockdev);
	ck_assert_uint_eq(bs->size, 16 * MiB);
	ck_assert_uint_eq(bs->dev_block_size, 512);

	fill(buf, MiB, 17);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_WRITE, MiB, buf, MiB, BS_IO_FUA), MiB);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, MiB, rbuf, MiB, 0), MiB);
	ck_assert_mem_eq(rbuf, buf, MiB);

	tio_init(&t, bs, BS_OP_WRITE_ZEROES, MiB, NULL, 64 * 1024);
	ck_assert_int_eq(tio_run(eng, &t), 64 * 1024);
	ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, MiB, rbuf, 128 * 1024, 0), 128 * 1024);
	ck_assert(all_zero(rbuf, 64 * 1024));
	ck_assert_mem_eq(rbuf + 64 * 1024, buf + 64 * 1024, 64 * 1024);

	tio_init(&t, bs, BS_OP_DISCARD, MiB + 512 * 1024, NULL, 256 * 1024);
	ck_assert_int_eq(tio_run(eng, &t), 256 * 1024);
	if (bs->discard_zeroes) {
		ck_assert_int_eq(do_io(eng, bs, BS_OP_READ, MiB + 512 * 1024, rbuf, 256 * 1024, 0),
				 256 * 1024);
		ck_assert(all_zero(rbuf, 256 * 1024));
	}
	/* Unaligned zeroing on a device is refused. */
	tio_init(&t, bs, BS_OP_WRITE_ZEROES, 100, NULL, 512);
	ck_assert_int_eq(tio_run(eng, &t), -EINVAL);

	tio_init(&t, bs, BS_OP_FLUSH, 0, NULL, 0);
	ck_assert_int_eq(tio_run(eng, &t), 0);
	ck_assert_int_eq(bs->ops->lba_status(bs, 0, 100 * MiB, &mapped, &run), 0);
	ck_assert(mapped);
	ck_assert_uint_eq(run, 16 * MiB);

	/* The device as a "file" is refused with a hint. */
	p.type = "file";
	ck_assert_int_eq(backstore_open(&f, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "block"));

	backstore_close(bs);
	close(lfd); /* autoclear detaches the loop device */
	free(buf);
	free(rbuf);
	io_engine_destroy(eng);
}
END_TEST

Suite *backstore_suite(void)
{
	Suite *s = suite_create("backstore");
	TCase *tc = tcase_create("backstore");

	tcase_add_checked_fixture(tc, bs_setup, bs_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_file_create_sizes);
	tcase_add_loop_test(tc, test_rw_roundtrip, 0, 2);
	tcase_add_loop_test(tc, test_many_in_flight, 0, 2);
	tcase_add_loop_test(tc, test_fua_flush, 0, 2);
	tcase_add_loop_test(tc, test_inline_write, 0, 2);
	tcase_add_loop_test(tc, test_zeroes_discard_thin, 0, 2);
	tcase_add_loop_test(tc, test_discard_thick, 0, 2);
	tcase_add_test(tc, test_lba_status_file);
	tcase_add_loop_test(tc, test_copy, 0, 2);
	tcase_add_loop_test(tc, test_short_read_eof, 0, 2);
	tcase_add_loop_test(tc, test_read_only, 0, 2);
	tcase_add_loop_test(tc, test_enospc, 0, 2);
	tcase_add_loop_test(tc, test_zero_fallbacks, 0, 2);
	tcase_add_loop_test(tc, test_direct_io, 0, 2);
	tcase_add_test(tc, test_resize);
	tcase_add_test(tc, test_resize_never_cuts);
	tcase_add_test(tc, test_open_special);
	tcase_add_loop_test(tc, test_memory, 0, 2);
	tcase_add_test(tc, test_memory_deferred);
	tcase_add_test(tc, test_resubmit_from_callback);
	tcase_add_test(tc, test_sync_io);
	tcase_add_test(tc, test_uring_refused);
	tcase_add_loop_test(tc, test_block_loop, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
