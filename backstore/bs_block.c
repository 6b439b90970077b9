/*
 * Block device backstore: a raw device (disk, partition, LV, loop device).
 *
 * READ/WRITE/FLUSH go through the owner's io_uring (the worker pool without
 * one); the rest runs on the worker pool:
 *
 *  WRITE_ZEROES  BLKZEROOUT (the kernel asks the device not to unmap);
 *                zero buffers if the ioctl is refused.
 *  DISCARD       if the device can write zeroes (queue/write_zeroes_max_bytes
 *                > 0): fallocate(PUNCH_HOLE|KEEP_SIZE), a "write zeroes,
 *                unmap allowed" that both deallocates where the device can
 *                and guarantees zeroes, so discard_zeroes is true; falls back
 *                to BLKZEROOUT. Otherwise BLKDISCARD, discard_zeroes false
 *                (reads after it are indeterminate), and a device without
 *                discard completes it as a no-op.
 *  lba_status    everything mapped (a raw device does not say).
 *
 * The device is opened O_EXCL (unless read-only) so a mounted filesystem
 * cannot be exported by mistake.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include "backstore/bs_impl.h"
#include "common/util.h"

static int bs_block_zeroout(int fd, uint64_t offset, uint64_t len)
{
	uint64_t range[2] = { offset, len };

	if (ioctl(fd, BLKZEROOUT, range) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOTTY && errno != EINVAL)
		return -errno;
	return bs_write_zero_buffers(fd, offset, len);
}

static void bs_block_zero_work(struct bs_io *io)
{
	struct backstore *bs = io->bs;
	int r;

	if (io->op == BS_OP_WRITE_ZEROES) {
		r = bs_block_zeroout(bs->fd, io->offset, io->len);
	} else if (bs->discard_zeroes) {
		if (fallocate(bs->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)io->offset,
			      (off_t)io->len) == 0)
			r = 0;
		else if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)
			r = bs_block_zeroout(bs->fd, io->offset, io->len);
		else
			r = -errno;
	} else {
		uint64_t range[2] = { io->offset, io->len };

		r = 0;
		if (ioctl(bs->fd, BLKDISCARD, range) < 0 && errno != EOPNOTSUPP && errno != ENOTTY)
			r = -errno;
	}
	io->result = r < 0 ? r : (int64_t)io->len;
}

static void bs_block_submit(struct io_engine *eng, struct bs_io *io)
{
	/* the zeroing ioctls work in whole logical blocks of the device */
	bs_fd_submit(eng, io, bs_block_zero_work, io->bs->dev_block_size);
}

/* Does the device implement REQ_OP_WRITE_ZEROES? (sysfs; partitions keep
 * their queue directory in the parent). */
static bool bs_block_can_write_zeroes(dev_t rdev)
{
	static const char *const fmt[] = {
		"/sys/dev/block/%u:%u/queue/write_zeroes_max_bytes",
		"/sys/dev/block/%u:%u/../queue/write_zeroes_max_bytes",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fmt); i++) {
		char path[128];
		unsigned long long v = 0;
		FILE *f;
		int n;

		snprintf(path, sizeof(path), fmt[i], major(rdev), minor(rdev));
		f = fopen(path, "re");
		if (!f)
			continue;
		n = fscanf(f, "%llu", &v);
		fclose(f);
		if (n == 1)
			return v > 0;
	}
	return false;
}

static int bs_block_open(struct backstore *bs, const struct bs_params *p, char *err, size_t errlen)
{
	int flags = O_CLOEXEC | (p->read_only ? O_RDONLY : O_RDWR | O_EXCL);
	struct stat st;
	uint64_t devsize = 0;
	int ssz = 0, fd, e;

	if (!p->path || !p->path[0]) {
		snprintf(err, errlen, "block backstore needs a device path");
		return -EINVAL;
	}
	if (p->direct)
		flags |= O_DIRECT;
	fd = open(p->path, flags);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "%s: open: %s%s", p->path, strerror(e),
			 e == EBUSY ? " (in use: mounted or held by another program?)" : "");
		return -e;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: stat: %s", p->path, strerror(e));
		goto fail;
	}
	if (!S_ISBLK(st.st_mode)) {
		e = EINVAL;
		snprintf(err, errlen, "%s: not a block device%s", p->path,
			 S_ISREG(st.st_mode) ? " (use type \"file\")" : "");
		goto fail;
	}
	if (ioctl(fd, BLKGETSIZE64, &devsize) < 0 || ioctl(fd, BLKSSZGET, &ssz) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: cannot read the device geometry: %s", p->path, strerror(e));
		goto fail;
	}
	if (ssz <= 0 || (ssz & (ssz - 1)))
		ssz = 512;
	if (p->size > devsize) {
		e = EINVAL;
		snprintf(err, errlen, "%s: size %llu is larger than the device (%llu bytes)", p->path,
			 (unsigned long long)p->size, (unsigned long long)devsize);
		goto fail;
	}
	if (p->direct && p->block_size && p->block_size < (uint32_t)ssz) {
		e = EINVAL;
		snprintf(err, errlen, "%s: block size %u is smaller than the device's %d: direct I/O impossible",
			 p->path, p->block_size, ssz);
		goto fail;
	}
	bs->fd = fd;
	bs->size = p->size ? p->size : devsize;
	bs->dev_block_size = (uint32_t)ssz;
	bs->is_blockdev = true;
	bs->discard_zeroes = bs_block_can_write_zeroes(st.st_rdev);
	{
		unsigned pb = 0;

		if (ioctl(fd, BLKPBSZGET, &pb) == 0 && pb)
			bs->phys_block_size = pb;
	}
	if (bs->size == 0) {
		e = EINVAL;
		snprintf(err, errlen, "%s: device has no capacity", p->path);
		bs->fd = -1;
		goto fail;
	}
	bs_atomic_probe_block(bs, st.st_rdev);
	return 0;
fail:
	close(fd);
	return -e;
}

static void bs_block_close(struct backstore *bs)
{
	if (bs->fd >= 0)
		close(bs->fd);
	bs->fd = -1;
}

static int bs_block_lba_status(struct backstore *bs, uint64_t offset, uint64_t max_len,
			       bool *mapped, uint64_t *run_len)
{
	uint64_t size = atomic_load_explicit(&bs->size, memory_order_relaxed);

	if (offset >= size)
		return -EINVAL;
	*mapped = true;
	*run_len = MIN(max_len, size - offset);
	return 0;
}

/* The device grew or shrank underneath (lvextend, loop set-capacity):
 * new_size must fit the device as it is now. The device itself is never
 * changed; a smaller LUN still needs BS_RESIZE_SHRINK (the initiator
 * loses the end of its disk). */
static int bs_block_resize(struct backstore *bs, uint64_t new_size, unsigned flags)
{
	uint64_t devsize = 0;

	if (new_size < atomic_load_explicit(&bs->size, memory_order_relaxed) && !(flags & BS_RESIZE_SHRINK))
		return -EPERM;
	if (ioctl(bs->fd, BLKGETSIZE64, &devsize) < 0)
		return -errno;
	if (new_size == 0 || new_size > devsize)
		return -EINVAL;
	atomic_store_explicit(&bs->size, new_size, memory_order_release);
	return 0;
}

const struct backstore_ops bs_block_ops = {
	.name = "block",
	.open = bs_block_open,
	.close = bs_block_close,
	.submit = bs_block_submit,
	.lba_status = bs_block_lba_status,
	.resize = bs_block_resize,
};
