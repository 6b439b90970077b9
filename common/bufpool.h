/*
 * Per-thread data buffer pool. Buffers are power-of-two sized (4 KiB up to
 * 16 MiB), 4096-aligned (O_DIRECT), and kept on per-class free lists of the
 * owning thread; freeing happens on the same thread. Larger requests are
 * allocated and freed directly.
 *
 * DESIGN: no locks; a pool belongs to one thread.
 */
#ifndef TARGETD_BUFPOOL_H
#define TARGETD_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

#define BUFPOOL_MIN_SHIFT 12
#define BUFPOOL_MAX_SHIFT 24
#define BUFPOOL_CLASSES (BUFPOOL_MAX_SHIFT - BUFPOOL_MIN_SHIFT + 1)

struct bufpool_buf {
	struct bufpool_buf *next;
	uint8_t *data;
	size_t cap;
	int cls;               /* -1: not pooled */
};

struct bufpool {
	struct bufpool_buf *free[BUFPOOL_CLASSES];
	unsigned nfree[BUFPOOL_CLASSES];
	size_t cached_bytes;
	size_t cache_limit;
};

void bufpool_init(struct bufpool *p, size_t cache_limit);
void bufpool_destroy(struct bufpool *p);
struct bufpool_buf *bufpool_get(struct bufpool *p, size_t len);
void bufpool_put(struct bufpool *p, struct bufpool_buf *b);

#endif
