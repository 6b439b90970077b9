/*
 * Atomic writes of the fd-based backstores (BS_IO_ATOMIC): what the kernel
 * and the storage under a file or a device guarantee, found at open, and
 * the write that uses it.
 *
 * Why not a plain pwritev: a fatal signal (kill -9 of the daemon) can cut a
 * write short between two pages of the page cache, or between two bios of
 * a direct write whose user pages had to be faulted in, and the blocks
 * written up to there stay written: torn. A write with RWF_ATOMIC on an
 * O_DIRECT descriptor (Linux 6.11 and later) is performed whole or not at
 * all, also across a crash of the machine, for lengths the file or device
 * reports through statx(STATX_WRITE_ATOMIC): a power of two from
 * stx_atomic_write_unit_min to stx_atomic_write_unit_max bytes, at an
 * offset aligned to the length, in one iovec segment (XFS and ext4 on
 * devices with atomic writes; XFS also in software, by copy on write).
 * Where the kernel or the file system offers nothing, there are no atomic
 * writes: atomic_min = atomic_max = 0 and WRITE ATOMIC is not offered.
 *
 *  file   statx on the open file; writes through a second descriptor of
 *         the same open file with O_DIRECT (the first when the backstore
 *         is direct already). The kernel keeps the page cache coherent
 *         with it (it writes back and drops cached pages of the range).
 *  block  what the device guarantees (sysfs queue/atomic_write_unit_min,
 *         _unit_max, _max and _boundary_bytes) and what the kernel accepts
 *         on this device node (statx: partition alignment included): the
 *         intersection of the two.
 *
 * DESIGN (threads): the facts are set once at open, before any request.
 * An atomic write is a blocking pwritev2 on the worker pool (io_uring
 * requests run in kernel workers that a fatal signal also interrupts; a
 * synchronous direct write waits for its I/O whatever happens).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>
#include "backstore/bs_impl.h"
#include "common/log.h"
#include "common/util.h"

#ifndef RWF_ATOMIC
#define RWF_ATOMIC 0x00000040
#endif
#define BS_STATX_DIOALIGN     0x00002000u
#define BS_STATX_WRITE_ATOMIC 0x00010000u

/* struct statx as the kernel lays it out (6.11 and later); the C library
 * of Debian 12 predates the atomic write fields. */
struct bs_statx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, spare0;
	uint64_t ino, size, blocks, attributes_mask;
	uint8_t timestamps[64];
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t mnt_id;
	uint32_t dio_mem_align, dio_offset_align;
	uint64_t subvol;
	uint32_t atomic_write_unit_min, atomic_write_unit_max, atomic_write_segments_max;
	uint32_t dio_read_offset_align, atomic_write_unit_max_opt, spare2;
	uint64_t spare3[8];
};
_Static_assert(sizeof(struct bs_statx) == 256, "struct statx is 256 bytes");

static bool bs_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

void bs_atomic_clamp(uint32_t unit_min, uint32_t unit_max, uint32_t max_bytes, uint32_t boundary,
		     uint32_t *out_min, uint32_t *out_max)
{
	*out_min = *out_max = 0;
	if (!bs_pow2(unit_min) || unit_max < unit_min)
		return;
	/* the largest power of two within every limit */
	while (unit_max & (unit_max - 1))
		unit_max &= unit_max - 1;
	if (max_bytes)
		while (unit_max > max_bytes)
			unit_max >>= 1;
	if (boundary) {
		/* a naturally aligned power of two no larger than a power-of-two
		 * boundary never crosses it; any other boundary: nothing */
		if (!bs_pow2(boundary))
			return;
		unit_max = MIN(unit_max, boundary);
	}
	if (unit_max < unit_min)
		return;
	*out_min = unit_min;
	*out_max = unit_max;
}

/* statx of fd with the atomic write fields, or false. */
static bool bs_atomic_statx(int fd, struct bs_statx *sx)
{
	memset(sx, 0, sizeof(*sx));
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, BS_STATX_WRITE_ATOMIC | BS_STATX_DIOALIGN,
		    sx) < 0)
		return false;
	return (sx->mask & BS_STATX_WRITE_ATOMIC) && sx->atomic_write_segments_max >= 1;
}

/* A second descriptor of fd's file for atomic writes, O_DIRECT. */
static int bs_atomic_reopen(struct backstore *bs)
{
	char proc[64];
	int fd;

	if (bs->direct)
		return bs->fd;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", bs->fd);
	fd = open(proc, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		log_info("%s: no atomic writes: cannot open for direct I/O: %s", bs->path,
			 strerror(errno));
	return fd;
}

/* Record the limits (already clamped) and the descriptor to use. */
static void bs_atomic_set(struct backstore *bs, const struct bs_statx *sx, uint32_t lo, uint32_t hi)
{
	int fd;

	if (!lo)
		return;
	fd = bs_atomic_reopen(bs);
	if (fd < 0)
		return;
	bs->atomic_fd = fd;
	bs->atomic_min = lo;
	bs->atomic_max = hi;
	bs->dio_mem_align =
		(sx->mask & BS_STATX_DIOALIGN) && sx->dio_mem_align ? sx->dio_mem_align : 4096;
	log_info("%s: atomic writes of %u to %u bytes (RWF_ATOMIC, direct I/O)", bs->path, lo, hi);
}

void bs_atomic_probe_file(struct backstore *bs)
{
	struct bs_statx sx;
	uint32_t lo, hi;

	if (bs->read_only || !bs_atomic_statx(bs->fd, &sx))
		return;
	bs_atomic_clamp(sx.atomic_write_unit_min, sx.atomic_write_unit_max, 0, 0, &lo, &hi);
	bs_atomic_set(bs, &sx, lo, hi);
}

/* One number from the device's queue directory in sysfs (partitions keep
 * it in their parent's), or 0. */
static uint64_t bs_atomic_sysfs(dev_t rdev, const char *name)
{
	static const char *const fmt[] = {
		"/sys/dev/block/%u:%u/queue/%s",
		"/sys/dev/block/%u:%u/../queue/%s",
	};

	for (size_t i = 0; i < ARRAY_SIZE(fmt); i++) {
		char path[160];
		unsigned long long v = 0;
		FILE *f;
		int n;

		snprintf(path, sizeof(path), fmt[i], major(rdev), minor(rdev), name);
		f = fopen(path, "re");
		if (!f)
			continue;
		n = fscanf(f, "%llu", &v);
		fclose(f);
		return n == 1 && v <= UINT32_MAX ? v : 0;
	}
	return 0;
}

void bs_atomic_probe_block(struct backstore *bs, dev_t rdev)
{
	struct bs_statx sx;
	uint32_t lo, hi, klo, khi;

	if (bs->read_only)
		return;
	bs_atomic_clamp((uint32_t)bs_atomic_sysfs(rdev, "atomic_write_unit_min_bytes"),
			(uint32_t)bs_atomic_sysfs(rdev, "atomic_write_unit_max_bytes"),
			(uint32_t)bs_atomic_sysfs(rdev, "atomic_write_max_bytes"),
			(uint32_t)bs_atomic_sysfs(rdev, "atomic_write_boundary_bytes"), &lo, &hi);
	if (!lo || !bs_atomic_statx(bs->fd, &sx))
		return;
	bs_atomic_clamp(sx.atomic_write_unit_min, sx.atomic_write_unit_max, 0, 0, &klo, &khi);
	if (!klo)
		return;
	lo = MAX(lo, klo);
	hi = MIN(hi, khi);
	bs_atomic_set(bs, &sx, hi >= lo ? lo : 0, hi);
}

void bs_atomic_close(struct backstore *bs)
{
	if (bs->atomic_fd >= 0 && bs->atomic_fd != bs->fd)
		close(bs->atomic_fd);
	bs->atomic_fd = -1;
	bs->atomic_min = bs->atomic_max = 0;
}

/* Worker-pool function: the one atomic write of io (one segment). */
static void bs_atomic_work(struct bs_io *io)
{
	struct backstore *bs = io->bs;
	struct iovec one = io->iov[0];
	void *bounce = NULL;
	int flags = RWF_ATOMIC | ((io->flags & BS_IO_FUA) ? RWF_DSYNC : 0);
	ssize_t r;

	if ((uintptr_t)one.iov_base & (bs->dio_mem_align - 1)) {
		/* direct I/O needs an aligned buffer */
		if (posix_memalign(&bounce, MAX(bs->dio_mem_align, sizeof(void *)), one.iov_len)) {
			io->result = -ENOMEM;
			return;
		}
		memcpy(bounce, one.iov_base, one.iov_len);
		one.iov_base = bounce;
	}
	do
		r = pwritev2(bs->atomic_fd, &one, 1, (off_t)io->offset, flags);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		io->result = -errno;
	else if ((uint64_t)r != io->len)
		io->result = -EIO; /* never for an atomic write: all or nothing */
	else
		io->result = r;
	free(bounce);
}

void bs_atomic_submit(struct io_engine *eng, struct bs_io *io)
{
	uint64_t len = 0;

	for (int i = 0; i < io->iovcnt; i++)
		len += io->iov[i].iov_len;
	if (io->iovcnt != 1 || len != io->len ||
	    !backstore_atomic_fits(io->bs, io->offset, io->len)) {
		bs_complete(eng, io, -EINVAL);
		return;
	}
	io_engine_offload(eng, io, bs_atomic_work);
}
