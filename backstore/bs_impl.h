/* Shared by the backstore implementations only (not by their users). */
#ifndef BACKSTORE_BS_IMPL_H
#define BACKSTORE_BS_IMPL_H

#include <errno.h>
#include <sys/types.h>
#include "backstore/backstore.h"
#include "backstore/io_engine.h"

/* Common checks of a request before it is queued: normalises the single
 * buffer form (iov == NULL -> iov1), checks the range and the read-only
 * flag. Returns 0 or -errno (then the caller completes io with it). */
static inline int bs_check_io(struct bs_io *io)
{
	struct backstore *bs = io->bs;
	uint64_t size = atomic_load_explicit(&bs->size, memory_order_relaxed);

	if (!io->iov) {
		io->iov = &io->iov1;
		io->iovcnt = 1;
	}
	if (io->op == BS_OP_FLUSH)
		return 0;
	if (io->offset > size || io->len > size - io->offset)
		return -EINVAL;
	if (io->op == BS_OP_READ)
		return 0;
	if (bs->read_only)
		return -EROFS;
	if (io->op == BS_OP_COPY) {
		uint64_t ssize;

		if (!io->src)
			return -EINVAL;
		ssize = atomic_load_explicit(&io->src->size, memory_order_relaxed);
		if (io->src_offset > ssize || io->len > ssize - io->src_offset)
			return -EINVAL;
	}
	return 0;
}

/* Fail or finish io without I/O: delivered on the next poll. */
static inline void bs_complete(struct io_engine *eng, struct bs_io *io, int64_t result)
{
	io->result = result;
	io_engine_complete(eng, io);
}

/* Submission for the fd-based backstores (file, block): READ, WRITE and
 * FLUSH on the io_uring (or the worker pool), WRITE_ZEROES and DISCARD
 * through zero_work on the pool (ranges must be multiples of zero_align
 * bytes), COPY on the pool. */
void bs_fd_submit(struct io_engine *eng, struct bs_io *io, void (*zero_work)(struct bs_io *io),
		  uint32_t zero_align);

/* Worker-pool function: BS_OP_COPY between any two backstores (file,
 * block, memory): a reflink (FICLONERANGE) first, then a bounce buffer. */
void backstore_copy_work(struct bs_io *io);

/* Write len zero bytes at offset on fd (the slow fallback). 0 or -errno. */
int bs_write_zero_buffers(int fd, uint64_t offset, uint64_t len);

/* Atomic writes (bs_atomic.c). bs_atomic_clamp(): the power-of-two unit
 * range [*out_min, *out_max] within a device's or file's atomic write
 * limits (unit min/max, max_bytes and boundary 0: none); 0, 0: none.
 * The probes set bs->atomic_* at open; bs_atomic_submit() runs one
 * BS_IO_ATOMIC write; bs_atomic_close() at close. */
void bs_atomic_clamp(uint32_t unit_min, uint32_t unit_max, uint32_t max_bytes, uint32_t boundary,
		     uint32_t *out_min, uint32_t *out_max);
void bs_atomic_probe_file(struct backstore *bs);
void bs_atomic_probe_block(struct backstore *bs, dev_t rdev);
void bs_atomic_submit(struct io_engine *eng, struct bs_io *io);
void bs_atomic_close(struct backstore *bs);

/* Memory backstore: base address (NULL if bs is not a memory backstore)
 * and marking a range as written (for lba_status). */
uint8_t *bs_memory_base(struct backstore *bs);
void bs_memory_mark(struct backstore *bs, uint64_t offset, uint64_t len);

#endif
