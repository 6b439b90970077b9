/*
 * Memory backstore: the blocks live in an anonymous MAP_NORESERVE mapping,
 * so untouched pages cost nothing and DISCARD gives whole pages back
 * (madvise MADV_DONTNEED: a private anonymous page then reads as zeroes).
 *
 * DESIGN: READ/WRITE/WRITE_ZEROES/DISCARD are memcpy/memset done in submit
 * on the owner thread; the completion is deferred (io_engine_complete) so
 * io->done never runs inside submit. Provisioning is tracked by a bitmap of
 * 4 KiB pages (1 = written since last deallocated), updated with atomic
 * OR/AND because several network threads write the same LUN; a writer only
 * does the atomic when its bits are not already set, so the steady state is
 * a read of a shared cache line. COPY from another memory backstore is a
 * memmove here; from a file or device it goes to the worker pool.
 * Overlapping concurrent requests are the SCSI layer's business (LBA range
 * lock), as on any disk.
 */
#include "config.h"
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "backstore/bs_impl.h"
#include "common/util.h"

#define MEM_PAGE 4096u
#define MEM_PAGE_SHIFT 12

struct bs_mem {
	uint8_t *base;
	size_t map_len;
	_Atomic uint64_t *map;   /* one bit per page */
	size_t nwords;
};

uint8_t *bs_memory_base(struct backstore *bs)
{
	if (!bs || bs->ops != &bs_memory_ops)
		return NULL;
	return ((struct bs_mem *)bs->priv)->base;
}

/* Set (set = true) or clear the bits of pages [first, last]. */
static void bs_mem_bits(struct bs_mem *m, uint64_t first, uint64_t last, bool set)
{
	uint64_t w = first / 64;

	while (first <= last) {
		uint64_t lo = first % 64;
		uint64_t hi = (last / 64 == w) ? last % 64 : 63;
		uint64_t mask = (hi == 63 ? ~0ull : ((1ull << (hi + 1)) - 1)) & ~((1ull << lo) - 1);
		uint64_t cur = atomic_load_explicit(&m->map[w], memory_order_relaxed);

		if (set) {
			if ((cur & mask) != mask)
				atomic_fetch_or_explicit(&m->map[w], mask, memory_order_relaxed);
		} else if (cur & mask) {
			atomic_fetch_and_explicit(&m->map[w], ~mask, memory_order_relaxed);
		}
		first = (w + 1) * 64;
		w++;
	}
}

void bs_memory_mark(struct backstore *bs, uint64_t offset, uint64_t len)
{
	if (len == 0 || bs->ops != &bs_memory_ops)
		return;
	bs_mem_bits(bs->priv, offset >> MEM_PAGE_SHIFT, (offset + len - 1) >> MEM_PAGE_SHIFT, true);
}

static bool bs_mem_bit(struct bs_mem *m, uint64_t page)
{
	return atomic_load_explicit(&m->map[page / 64], memory_order_relaxed) >> (page % 64) & 1;
}

static void bs_mem_rw(struct backstore *bs, struct bs_io *io)
{
	struct bs_mem *m = bs->priv;
	uint8_t *p = m->base + io->offset;
	uint64_t left = io->len;
	int i;

	for (i = 0; i < io->iovcnt && left > 0; i++) {
		size_t n = MIN((uint64_t)io->iov[i].iov_len, left);

		if (io->op == BS_OP_READ)
			memcpy(io->iov[i].iov_base, p, n);
		else
			memcpy(p, io->iov[i].iov_base, n);
		p += n;
		left -= n;
	}
	if (io->op == BS_OP_WRITE)
		bs_memory_mark(bs, io->offset, io->len - left);
	io->result = left ? -EINVAL : (int64_t)io->len; /* iov shorter than len */
}

/* DISCARD: partial pages are zeroed, whole pages returned to the kernel. */
static void bs_mem_discard(struct backstore *bs, uint64_t off, uint64_t len)
{
	struct bs_mem *m = bs->priv;
	uint64_t first = ALIGN_UP(off, MEM_PAGE);
	uint64_t end = off + len;
	uint64_t last = end & ~(uint64_t)(MEM_PAGE - 1);

	if (first >= last) {
		memset(m->base + off, 0, len);
		return;
	}
	memset(m->base + off, 0, first - off);
	memset(m->base + last, 0, end - last);
	if (madvise(m->base + first, last - first, MADV_DONTNEED) < 0)
		memset(m->base + first, 0, last - first);
	bs_mem_bits(m, first >> MEM_PAGE_SHIFT, (last >> MEM_PAGE_SHIFT) - 1, false);
}

static void bs_memory_submit(struct io_engine *eng, struct bs_io *io)
{
	struct backstore *bs = io->bs;
	struct bs_mem *m = bs->priv;
	int r = bs_check_io(io);

	if (unlikely(r < 0)) {
		bs_complete(eng, io, r);
		return;
	}
	switch (io->op) {
	case BS_OP_READ:
	case BS_OP_WRITE:
		bs_mem_rw(bs, io);
		break;
	case BS_OP_FLUSH:
		io->result = 0;
		break;
	case BS_OP_WRITE_ZEROES:
		memset(m->base + io->offset, 0, io->len);
		bs_memory_mark(bs, io->offset, io->len);
		io->result = (int64_t)io->len;
		break;
	case BS_OP_DISCARD:
		if (io->len)
			bs_mem_discard(bs, io->offset, io->len);
		io->result = (int64_t)io->len;
		break;
	case BS_OP_COPY:
		if (!bs_memory_base(io->src)) {
			io_engine_offload(eng, io, backstore_copy_work);
			return;
		}
		memmove(m->base + io->offset, bs_memory_base(io->src) + io->src_offset, io->len);
		io->reflinked = 0;
		bs_memory_mark(bs, io->offset, io->len);
		io->result = (int64_t)io->len;
		break;
	default:
		io->result = -EINVAL;
		break;
	}
	io_engine_complete(eng, io);
}

static int bs_memory_open(struct backstore *bs, const struct bs_params *p, char *err, size_t errlen)
{
	struct bs_mem *m;
	uint64_t npages;

	if (p->size == 0) {
		snprintf(err, errlen, "memory backstore needs a size");
		return -EINVAL;
	}
	if (p->size > SIZE_MAX - MEM_PAGE) {
		snprintf(err, errlen, "memory backstore size too large");
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		goto nomem;
	m->map_len = ALIGN_UP(p->size, MEM_PAGE);
	npages = m->map_len >> MEM_PAGE_SHIFT;
	m->nwords = (npages + 63) / 64;
	m->map = calloc(m->nwords, sizeof(*m->map));
	if (!m->map)
		goto nomem;
	m->base = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->base == MAP_FAILED) {
		int e = errno;

		snprintf(err, errlen, "memory backstore: mmap of %llu bytes: %s",
			 (unsigned long long)m->map_len, strerror(e));
		free(m->map);
		free(m);
		return -e;
	}
	bs->priv = m;
	bs->fd = -1;
	bs->mem_base = m->base;
	bs->size = p->size;
	bs->phys_block_size = MEM_PAGE;
	bs->atomic_any = true;     /* the range lock is all it takes */
	bs->dev_block_size = 512;
	bs->is_blockdev = false;
	bs->discard_zeroes = true;
	return 0;
nomem:
	if (m)
		free(m->map);
	free(m);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

static void bs_memory_close(struct backstore *bs)
{
	struct bs_mem *m = bs->priv;

	if (!m)
		return;
	munmap(m->base, m->map_len);
	free(m->map);
	free(m);
	bs->priv = NULL;
}

/* backstore_zc_ptr(): the whole LUN is in memory. */
static const uint8_t *bs_memory_zc_ptr(struct backstore *bs, uint64_t offset, uint64_t len)
{
	struct bs_mem *m = bs->priv;
	uint64_t size = atomic_load_explicit(&bs->size, memory_order_relaxed);

	if (offset > size || len > size - offset)
		return NULL;
	return m->base + offset;
}

static int bs_memory_lba_status(struct backstore *bs, uint64_t offset, uint64_t max_len,
				bool *mapped, uint64_t *run_len)
{
	struct bs_mem *m = bs->priv;
	uint64_t size = atomic_load_explicit(&bs->size, memory_order_relaxed);
	uint64_t page, end_page, end;
	bool state;

	if (offset >= size)
		return -EINVAL;
	max_len = MIN(max_len, size - offset);
	if (!bs->thin) {
		*mapped = true;
		*run_len = max_len;
		return 0;
	}
	page = offset >> MEM_PAGE_SHIFT;
	end_page = (offset + max_len - 1) >> MEM_PAGE_SHIFT;
	state = bs_mem_bit(m, page);
	while (page < end_page && bs_mem_bit(m, page + 1) == state)
		page++;
	end = (page + 1) << MEM_PAGE_SHIFT;
	*mapped = state;
	*run_len = MIN(end - offset, max_len);
	return 0;
}

/* backstore_space(): the pages written and not given back; the pool is
 * the LUN itself. */
static int bs_memory_space(struct backstore *bs, struct bs_space *out, unsigned what)
{
	struct bs_mem *m = bs->priv;
	uint64_t size = atomic_load_explicit(&bs->size, memory_order_relaxed);
	uint64_t pages = 0;

	if (!bs->thin) {
		out->allocated = size;
	} else {
		for (size_t w = 0; w < m->nwords; w++)
			pages += (uint64_t)__builtin_popcountll(
				atomic_load_explicit(&m->map[w], memory_order_relaxed));
		out->allocated = MIN(pages << MEM_PAGE_SHIFT, size);
	}
	if (what & BS_SPACE_POOL) {
		out->pool_size = size;
		out->pool_free = size - out->allocated;
	}
	return 0;
}

const struct backstore_ops bs_memory_ops = {
	.name = "memory",
	.open = bs_memory_open,
	.close = bs_memory_close,
	.submit = bs_memory_submit,
	.lba_status = bs_memory_lba_status,
	.resize = NULL,
	.space = bs_memory_space,
	.zc_ptr = bs_memory_zc_ptr,
};
