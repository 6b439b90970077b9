/*
 * File backstore: a regular file, sparse when thin.
 *
 * READ/WRITE/FLUSH go through the owner's io_uring (the worker pool without
 * one), except the buffered WRITEs that are only a page-cache copy, which
 * the submitting thread does itself where the file system cannot write
 * without blocking (see "Inline writes" below). WRITE_ZEROES, DISCARD and
 * COPY run on the worker pool: fallocate modes with their fallbacks and
 * reflinks (FICLONERANGE) are blocking calls.
 *
 *  WRITE_ZEROES  fallocate(ZERO_RANGE|KEEP_SIZE): zeroes, blocks allocated;
 *                else PUNCH_HOLE then allocate; else write zero buffers.
 *  DISCARD       thin: fallocate(PUNCH_HOLE|KEEP_SIZE) gives space back;
 *                thick: ZERO_RANGE so the file stays fully allocated;
 *                falls back like WRITE_ZEROES. Always reads back zeroes.
 *  lba_status    thin: SEEK_DATA/SEEK_HOLE; thick: everything mapped.
 *
 * With params.direct the file is opened O_DIRECT: buffers, offsets and
 * lengths must be aligned (callers allocate 4096-aligned buffers).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <linux/fs.h>
#include <linux/fiemap.h>
#include <unistd.h>
#include <linux/falloc.h>
#include "backstore/bs_impl.h"
#include "common/util.h"

/* Zero [offset, offset+len) of a regular file; keep_alloc: the range must
 * stay allocated (WRITE_ZEROES, thick DISCARD). 0 or -errno. */
static int bs_file_zero_range(int fd, uint64_t offset, uint64_t len, bool keep_alloc)
{
	int e;

	if (len == 0)
		return 0;
	if (!keep_alloc) {
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset,
			      (off_t)len) == 0)
			return 0;
		e = errno;
		if (e != EOPNOTSUPP && e != ENOSYS && e != EINVAL)
			return -e;
	}
	if (fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)len) == 0)
		return 0;
	e = errno;
	if (e != EOPNOTSUPP && e != ENOSYS && e != EINVAL)
		return -e;
	if (keep_alloc &&
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)len) == 0) {
		/* Zeroed; now allocate again (mode 0 never changes data). */
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)len) == 0)
			return 0;
		e = errno;
		if (e != EOPNOTSUPP && e != ENOSYS && e != EINVAL)
			return -e;
		/* Cannot allocate without writing: write the zeroes. */
	}
	return bs_write_zero_buffers(fd, offset, len);
}

static void bs_file_zero_work(struct bs_io *io)
{
	struct backstore *bs = io->bs;
	bool keep = io->op == BS_OP_WRITE_ZEROES || !bs->thin;
	int r = bs_file_zero_range(bs->fd, io->offset, io->len, keep);

	io->result = r < 0 ? r : (int64_t)io->len;
}

static const uint8_t *bs_file_zc_ptr(struct backstore *bs, uint64_t offset, uint64_t len);

/*
 * Inline writes.
 *
 * io_uring finishes a buffered write during submission only where the file
 * system can copy into the page cache without blocking (RWF_NOWAIT works:
 * XFS, btrfs). Elsewhere (ext4, tmpfs) every buffered write is handed to an
 * io-wq worker thread, and for the 4 KiB random writes of a file LUN on
 * ext4 that hand-off (a worker wake-up, then an eventfd wake-up of the
 * network thread per write) cost more CPU than the copy itself: 7.5 against
 * 4.1 us per write with small page-cache folios, 23 - 31 against 16 - 18
 * with large ones (bench/README.md).
 *
 * So the first eligible write of a backstore asks the file system with
 * RWF_NOWAIT. Where that works the file system can write without blocking
 * and io_uring already does it inline: every write keeps the ring
 * (BS_FILE_WR_URING). Where it answers EOPNOTSUPP (BS_FILE_WR_INLINE) a
 * WRITE is done by pwritev() on the submitting thread when it is only a
 * page-cache copy:
 *   - no FUA (so not with the write cache off, WCE=0: those wait for the
 *     disk with RWF_DSYNC on the ring as before), not atomic, not O_DIRECT;
 *   - at most BS_FILE_INLINE_MAX bytes (a 1 MiB copy would hold the
 *     network thread's other connections too long);
 *   - every page of the range is in the page cache (mincore() through the
 *     zero-copy mapping), so the file system reads nothing from the disk.
 * A copy can still block (dirty-page throttling, the journal): one that
 * takes longer than BS_FILE_INLINE_STALL_NS (10 ms, far above a 128 KiB
 * copy) and slept (getrusage(RUSAGE_THREAD): a voluntary context switch;
 * a busy machine's scheduler preempting the thread is not a stall) turns
 * inline writes off for the backstore for 1 s, doubled while stalls follow
 * each other within four such periods (at most 64 s).
 * Nothing else changes: the completion is delivered on the owner's next
 * poll like any other (io_engine_complete), the caller still holds its LBA
 * range lock until then, and FLUSH (fdatasync) covers these writes as it
 * covers the ring's.
 */

#define BS_FILE_INLINE_MAX (128u << 10)
#define BS_FILE_INLINE_STALL_NS (10u * 1000u * 1000u)
#define BS_FILE_INLINE_BACKOFF_NS (1000ull * 1000u * 1000u)
#define BS_FILE_INLINE_BACKOFF_MAX 6

/* The first eligible write: does the file system write without blocking?
 * Returns the pwritev2() result; *mode is set when the answer is known. */
static ssize_t bs_file_wr_probe(struct bs_io *io, int *mode)
{
	ssize_t r = pwritev2(io->bs->fd, io->iov, io->iovcnt, (off_t)io->offset, RWF_NOWAIT);
	int e = errno;

	if (r >= 0 || e == EAGAIN)
		*mode = BS_FILE_WR_URING;
	else if (e == EOPNOTSUPP)
		*mode = BS_FILE_WR_INLINE;
	else
		return r;   /* anything else: ask again with the next write */
	if (atomic_exchange_explicit(&io->bs->wr_inline_mode, *mode, memory_order_relaxed) != *mode)
		log_info("%s: %s", io->bs->path, *mode == BS_FILE_WR_INLINE ?
			 "the file system cannot write without blocking (RWF_NOWAIT): writes "
			 "that are page-cache copies are done on the network thread" :
			 "the file system writes without blocking (RWF_NOWAIT): writes stay on "
			 "the I/O engine");
	errno = e;
	return r;
}

/* An inline copy took t1 - t0 ns, more than BS_FILE_INLINE_STALL_NS. It
 * stalled if the thread went to sleep in it (a voluntary context switch
 * since nvcsw); merely waiting for a CPU on a busy machine is not a stall
 * (the engine's path would have waited as long). A stall turns inline
 * writes off for a while, longer when the last stall is recent. */
static void bs_file_wr_slow(struct backstore *bs, uint64_t t0, uint64_t t1, long nvcsw)
{
	struct rusage ru;
	uint64_t prev, backoff;
	unsigned strikes;

	if (nvcsw >= 0 && getrusage(RUSAGE_THREAD, &ru) == 0 && ru.ru_nvcsw == nvcsw)
		return;   /* preempted, not blocked */
	prev = atomic_exchange_explicit(&bs->wr_inline_last_stall, t1, memory_order_relaxed);
	strikes = atomic_load_explicit(&bs->wr_inline_strikes, memory_order_relaxed);
	backoff = BS_FILE_INLINE_BACKOFF_NS << strikes;
	if (prev && t1 - prev < 4 * backoff)
		strikes = MIN(strikes + 1, (unsigned)BS_FILE_INLINE_BACKOFF_MAX);
	else
		strikes = 0;
	atomic_store_explicit(&bs->wr_inline_strikes, strikes, memory_order_relaxed);
	atomic_store_explicit(&bs->wr_inline_off_until, t1 + (BS_FILE_INLINE_BACKOFF_NS << strikes),
			      memory_order_relaxed);
	log_debug("%s: an inline write slept for %llu us: inline writes off for %llu ms", bs->path,
		  (unsigned long long)((t1 - t0) / 1000),
		  (unsigned long long)((BS_FILE_INLINE_BACKOFF_NS << strikes) / 1000000));
}

/* Try io (a BS_OP_WRITE) on this thread. False: submit it as usual. */
static bool bs_file_write_inline(struct io_engine *eng, struct bs_io *io)
{
	struct backstore *bs = io->bs;
	int mode = atomic_load_explicit(&bs->wr_inline_mode, memory_order_relaxed);
	uint64_t t0, t1;
	ssize_t r = -1;

	if (mode == BS_FILE_WR_URING || bs->direct || (io->flags & (BS_IO_FUA | BS_IO_ATOMIC)) ||
	    io->len == 0 || io->len > BS_FILE_INLINE_MAX || bs_check_io(io) < 0 ||
	    io->iovcnt > IOV_MAX)
		return false;
	t0 = backstore_now_ns();
	if (t0 < atomic_load_explicit(&bs->wr_inline_off_until, memory_order_relaxed))
		return false;
	if (!bs_file_zc_ptr(bs, io->offset, io->len))
		return false;   /* not all in the page cache (or no mapping) */
	if (mode == BS_FILE_WR_PROBE) {
		r = bs_file_wr_probe(io, &mode);
		if (r < 0 && mode != BS_FILE_WR_INLINE)
			return false;
	}
	if (mode == BS_FILE_WR_INLINE) {
		struct rusage ru;
		long nvcsw = getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : -1;
		int e;

		r = pwritev(bs->fd, io->iov, io->iovcnt, (off_t)io->offset);
		e = errno;
		t1 = backstore_now_ns();
		if (unlikely(t1 - t0 >= BS_FILE_INLINE_STALL_NS))
			bs_file_wr_slow(bs, t0, t1, nvcsw);
		errno = e;
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			return false;
	}
	if (r < 0) {
		bs_complete(eng, io, -errno);
		return true;
	}
	atomic_fetch_add_explicit(&bs->wr_inline, 1, memory_order_relaxed);
	if ((uint64_t)r < io->len) {
		/* A short copy (a signal, the file system): the worker pool
		 * writes the rest, as after a short ring write. */
		io->xfer_done = (uint64_t)r;
		io_engine_offload(eng, io, io_engine_rw_work);
		return true;
	}
	bs_complete(eng, io, (int64_t)io->len);
	return true;
}

static void bs_file_submit(struct io_engine *eng, struct bs_io *io)
{
	if (io->op == BS_OP_WRITE && bs_file_write_inline(eng, io))
		return;
	bs_fd_submit(eng, io, bs_file_zero_work, 1);
}

/* Allocate [offset, offset+len) without changing data or size. Not
 * glibc's posix_fallocate: its emulation writes every block. A filesystem
 * that cannot allocate ahead leaves the file sparse (logged once). */
static int bs_file_allocate(int fd, uint64_t offset, uint64_t len)
{
	static atomic_bool logged;

	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)len) == 0)
		return 0;
	if (errno == EOPNOTSUPP || errno == ENOSYS) {
		if (!atomic_exchange_explicit(&logged, true, memory_order_relaxed))
			log_info("file backstore: the filesystem cannot preallocate: thick files stay sparse");
		return 0;
	}
	return -errno;
}

/* Files up to this size are also mapped read-only for zero-copy READs
 * (backstore.h: map_base); bigger ones would spend too much on page
 * tables (8 bytes per 4 KiB page read through the mapping). */
#define BS_FILE_MAP_MAX (64ull << 30)

/* Map the file for zero-copy reads of resident pages: bs_file_zc_ptr()
 * offers the mapping when mincore() says the range is in the page cache,
 * so a network thread never waits for the disk there. */
static void bs_file_map(struct backstore *bs, const struct bs_params *p)
{
	void *m;

	if (p->direct || bs->size == 0 || bs->size > BS_FILE_MAP_MAX)
		return;
	m = mmap(NULL, bs->size, PROT_READ, MAP_SHARED, bs->fd, 0);
	if (m == MAP_FAILED)
		return;   /* reads simply go through the engine */
	bs->map_base = m;
	bs->map_len = bs->size;
}

/* Is every page of [p, p + len) in the page cache? */
static bool bs_file_resident(const uint8_t *p, uint64_t len)
{
	const uintptr_t pg = 4096;
	uintptr_t start = (uintptr_t)p & ~(pg - 1);
	uintptr_t end = ((uintptr_t)p + len + pg - 1) & ~(pg - 1);
	unsigned char vec[256];

	while (start < end) {
		size_t n = MIN((end - start) / pg, sizeof(vec));

		if (mincore((void *)start, n * pg, vec))
			return false;
		for (size_t i = 0; i < n; i++)
			if (!(vec[i] & 1))
				return false;
		start += n * pg;
	}
	return true;
}

/* backstore_zc_ptr(): the mapping, where the range is resident. */
static const uint8_t *bs_file_zc_ptr(struct backstore *bs, uint64_t offset, uint64_t len)
{
	if (!bs->map_base || offset > bs->map_len || len > bs->map_len - offset)
		return NULL;
	if (!bs_file_resident(bs->map_base + offset, len))
		return NULL;
	return bs->map_base + offset;
}

/* Open without O_CREAT, then create only where nothing exists: O_EXCL
 * never creates through a dangling symbolic link. O_NONBLOCK|O_NOCTTY: a
 * FIFO or a terminal named by mistake must not hang or take over the
 * daemon (the caller refuses anything but a regular file). */
static int bs_file_open_fd(const char *path, int flags, bool create)
{
	int fd;

	flags |= O_NONBLOCK | O_NOCTTY;
	/* No atime updates on the data path; O_NOATIME needs ownership. */
	fd = open(path, flags | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open(path, flags);
	if (fd < 0 && errno == ENOENT && create)
		fd = open(path, flags | O_CREAT | O_EXCL, 0600);
	return fd;
}

static int bs_file_open(struct backstore *bs, const struct bs_params *p, char *err, size_t errlen)
{
	int flags = O_CLOEXEC | (p->read_only ? O_RDONLY : O_RDWR);
	bool create = false;
	struct stat st;
	uint64_t size;
	int fd, e;

	if (!p->path || !p->path[0]) {
		snprintf(err, errlen, "file backstore needs a path");
		return -EINVAL;
	}
	if (p->direct)
		flags |= O_DIRECT;
	if (p->create && !p->read_only) {
		if (p->size == 0) {
			snprintf(err, errlen, "%s: creating a file backstore needs a size", p->path);
			return -EINVAL;
		}
		create = true;
	}
	/* Whatever is not a regular file is not opened at all (opening some
	 * devices has effects); fstat below checks what was opened. */
	if (stat(p->path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: %s, not a regular file%s", p->path,
			 S_ISDIR(st.st_mode) ? "a directory" : S_ISBLK(st.st_mode) ? "a block device"
			 : S_ISCHR(st.st_mode) ? "a character device" : S_ISFIFO(st.st_mode) ? "a FIFO"
			 : "a special file", S_ISBLK(st.st_mode) ? " (use type \"block\")" : "");
		return -EINVAL;
	}
	fd = bs_file_open_fd(p->path, flags, create);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "%s: open: %s%s", p->path, strerror(e),
			 e == EEXIST ? " (a dangling symbolic link? a file is never created through one)"
				     : "");
		return -e;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: stat: %s", p->path, strerror(e));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		e = EINVAL;
		snprintf(err, errlen, "%s: not a regular file%s", p->path,
			 S_ISBLK(st.st_mode) ? " (use type \"block\")" : "");
		goto fail;
	}
	/* back to blocking I/O: io_uring would answer EAGAIN on O_NONBLOCK */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: fcntl: %s", p->path, strerror(e));
		goto fail;
	}
	size = p->size ? p->size : (uint64_t)st.st_size;
	if (size == 0) {
		e = EINVAL;
		snprintf(err, errlen, "%s: empty file and no size given", p->path);
		goto fail;
	}
	/* A file longer than size stays whole: the LUN is its first size
	 * bytes. A shorter one is extended (never cut). */
	if ((uint64_t)st.st_size < size) {
		if (p->read_only) {
			e = EINVAL;
			snprintf(err, errlen, "%s: file is %llu bytes, smaller than size %llu, and read-only",
				 p->path, (unsigned long long)st.st_size, (unsigned long long)size);
			goto fail;
		}
		if (ftruncate(fd, (off_t)size) < 0) {
			e = errno;
			snprintf(err, errlen, "%s: grow to %llu bytes: %s", p->path,
				 (unsigned long long)size, strerror(e));
			goto fail;
		}
	}
	if (!p->thin && !p->read_only) {
		/* Thick: allocate every block now (cheap where already
		 * allocated), so ENOSPC cannot surprise a write later and
		 * lba_status can say "mapped" truthfully. */
		e = bs_file_allocate(fd, 0, size);
		if (e < 0) {
			e = -e;
			snprintf(err, errlen, "%s: allocate %llu bytes: %s", p->path,
				 (unsigned long long)size, strerror(e));
			if ((uint64_t)st.st_size < size && ftruncate(fd, st.st_size) < 0)
				log_warn("%s: could not shrink back after failure", p->path);
			goto fail;
		}
	}
	bs->fd = fd;
	bs->size = size;
	bs->dev_block_size = 512;
	bs->is_blockdev = false;
	bs->discard_zeroes = true;
	/* the file system's block: its unit of allocation (and of reflinks) */
	bs->phys_block_size = st.st_blksize > 0 ? (uint32_t)st.st_blksize : 0;
	bs_file_map(bs, p);
	bs_atomic_probe_file(bs);
	return 0;
fail:
	close(fd);
	return -e;
}

static void bs_file_close(struct backstore *bs)
{
	if (bs->map_base)
		munmap(bs->map_base, bs->map_len);
	bs->map_base = NULL;
	if (bs->fd >= 0)
		close(bs->fd);
	bs->fd = -1;
}

/* backstore_reopen(): the same flags as at open, the same descriptor. */
static int bs_file_reopen(struct backstore *bs, uint64_t size, char *err, size_t cap)
{
	int flags = O_CLOEXEC | (bs->read_only ? O_RDONLY : O_RDWR) | (bs->direct ? O_DIRECT : 0);
	const struct bs_params p = { .direct = bs->direct };
	struct stat st;
	int fd, e;

	fd = bs_file_open_fd(bs->path, flags, false);
	if (fd < 0) {
		e = errno;
		snprintf(err, cap, "%s: open: %s", bs->path, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < size ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		e = errno ? errno : EINVAL;
		snprintf(err, cap, "%s: not a regular file of at least %llu bytes", bs->path,
			 (unsigned long long)size);
		close(fd);
		return -e;
	}
	if (bs->map_base)
		munmap(bs->map_base, bs->map_len);
	bs->map_base = NULL;
	bs->map_len = 0;
	bs_atomic_close(bs);
	if (dup3(fd, bs->fd, O_CLOEXEC) < 0) {
		e = errno;
		snprintf(err, cap, "%s: dup3: %s", bs->path, strerror(e));
		close(fd);
		bs_file_map(bs, &p);
		bs_atomic_probe_file(bs);
		return -e;
	}
	close(fd);
	atomic_store_explicit(&bs->size, size, memory_order_release);
	bs_file_map(bs, &p);
	bs_atomic_probe_file(bs);
	return 0;
}

static int bs_file_lba_status(struct backstore *bs, uint64_t offset, uint64_t max_len,
			      bool *mapped, uint64_t *run_len)
{
	uint64_t size = atomic_load_explicit(&bs->size, memory_order_relaxed);
	off_t data, hole;

	if (offset >= size)
		return -EINVAL;
	max_len = MIN(max_len, size - offset);
	if (!bs->thin) {
		/* Thick: every block was allocated at creation and stays so. */
		*mapped = true;
		*run_len = max_len;
		return 0;
	}
	data = lseek(bs->fd, (off_t)offset, SEEK_DATA);
	if (data < 0) {
		if (errno == ENXIO) {
			/* No data after offset: a hole up to the end. */
			*mapped = false;
			*run_len = max_len;
			return 0;
		}
		if (errno == EINVAL || errno == EOPNOTSUPP) {
			/* The filesystem cannot tell: say allocated. */
			*mapped = true;
			*run_len = max_len;
			return 0;
		}
		return -errno;
	}
	if ((uint64_t)data > offset) {
		*mapped = false;
		*run_len = MIN((uint64_t)data - offset, max_len);
		return 0;
	}
	hole = lseek(bs->fd, (off_t)offset, SEEK_HOLE);
	if (hole < 0)
		return -errno;
	*mapped = true;
	*run_len = MIN((uint64_t)hole - offset, max_len);
	if (*run_len == 0)
		*run_len = max_len; /* cannot happen; never report an empty run */
	return 0;
}

static int bs_file_resize(struct backstore *bs, uint64_t new_size, unsigned flags)
{
	uint64_t old = atomic_load_explicit(&bs->size, memory_order_relaxed);
	bool shrink = new_size < old;
	struct stat st;
	int e;

	if (bs->read_only)
		return -EROFS;
	if (new_size == 0)
		return -EINVAL;
	if (shrink && !(flags & BS_RESIZE_SHRINK))
		return -EPERM;
	/* The file may be longer than the LUN (a size smaller than the file
	 * at open): growing the LUN extends the file only where it is
	 * shorter, and only an asked-for shrink cuts it. */
	if (fstat(bs->fd, &st) < 0)
		return -errno;
	if (((uint64_t)st.st_size < new_size || shrink) &&
	    ftruncate(bs->fd, (off_t)new_size) < 0)
		return -errno;
	if (new_size > old && !bs->thin) {
		e = bs_file_allocate(bs->fd, old, new_size - old);
		if (e < 0)
			return e;
	}
	atomic_store_explicit(&bs->size, new_size, memory_order_release);
	return 0;
}

/* Bytes of the file's extents that FIEMAP marks shared (reflink), at most
 * BS_FIEMAP_CALLS calls of BS_FIEMAP_EXTENTS extents (*partial beyond). */
#define BS_FIEMAP_EXTENTS 512u
#define BS_FIEMAP_CALLS 256u
static int bs_file_shared(int fd, uint64_t size, uint64_t *shared, bool *partial)
{
	struct fiemap *fm = malloc(sizeof(*fm) + BS_FIEMAP_EXTENTS * sizeof(struct fiemap_extent));
	uint64_t start = 0;
	unsigned calls;
	bool last = false;

	*shared = 0;
	*partial = false;
	if (!fm)
		return -ENOMEM;
	for (calls = 0; !last && start < size && calls < BS_FIEMAP_CALLS; calls++) {
		/* the extents too: the kernel fills only fm_mapped_extents of them */
		memset(fm, 0, sizeof(*fm) + BS_FIEMAP_EXTENTS * sizeof(struct fiemap_extent));
		fm->fm_start = start;
		fm->fm_length = size - start;
		fm->fm_extent_count = BS_FIEMAP_EXTENTS;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
			int e = errno;

			free(fm);
			return e == EOPNOTSUPP || e == ENOTTY ? 0 : -e;   /* cannot tell: none */
		}
		if (!fm->fm_mapped_extents)
			break;
		for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &fm->fm_extents[i];

			if (x->fe_flags & FIEMAP_EXTENT_SHARED)
				*shared += x->fe_length;
			if (x->fe_flags & FIEMAP_EXTENT_LAST)
				last = true;
			start = x->fe_logical + x->fe_length;
		}
	}
	*partial = !last && start < size && calls == BS_FIEMAP_CALLS;
	free(fm);
	return 0;
}

/* backstore_space(): st_blocks, the file system's size and the space an
 * unprivileged writer may still take (f_bavail), the shared extents. */
static int bs_file_space(struct backstore *bs, struct bs_space *out, unsigned what)
{
	struct statvfs vfs;
	struct stat st;

	if (fstat(bs->fd, &st) < 0)
		return -errno;
	out->allocated = (uint64_t)st.st_blocks * 512;
	if (what & BS_SPACE_POOL) {
		if (fstatvfs(bs->fd, &vfs) < 0)
			return -errno;
		out->pool_size = (uint64_t)vfs.f_blocks * vfs.f_frsize;
		out->pool_free = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	}
	if ((what & BS_SPACE_SHARED) && bs->thin) {
		int e = bs_file_shared(bs->fd, (uint64_t)st.st_size, &out->shared,
				       &out->shared_partial);

		if (e < 0)
			return e;
		out->shared = MIN(out->shared, out->allocated);
	}
	return 0;
}

const struct backstore_ops bs_file_ops = {
	.name = "file",
	.open = bs_file_open,
	.close = bs_file_close,
	.submit = bs_file_submit,
	.lba_status = bs_file_lba_status,
	.resize = bs_file_resize,
	.space = bs_file_space,
	.zc_ptr = bs_file_zc_ptr,
	.reopen = bs_file_reopen,
};
