/* Per-thread data buffer pool: see bufpool.h. */
#include "config.h"
#include <stdlib.h>
#include "common/bufpool.h"

void bufpool_init(struct bufpool *p, size_t cache_limit)
{
	for (int i = 0; i < BUFPOOL_CLASSES; i++) {
		p->free[i] = NULL;
		p->nfree[i] = 0;
	}
	p->cached_bytes = 0;
	p->cache_limit = cache_limit;
}

static void buf_release(struct bufpool_buf *b)
{
	free(b->data);
	free(b);
}

void bufpool_destroy(struct bufpool *p)
{
	for (int i = 0; i < BUFPOOL_CLASSES; i++) {
		while (p->free[i]) {
			struct bufpool_buf *b = p->free[i];
			p->free[i] = b->next;
			buf_release(b);
		}
		p->nfree[i] = 0;
	}
	p->cached_bytes = 0;
}

static int size_class(size_t len)
{
	int cls = 0;
	size_t sz = (size_t)1 << BUFPOOL_MIN_SHIFT;

	while (sz < len) {
		sz <<= 1;
		cls++;
	}
	return cls < BUFPOOL_CLASSES ? cls : -1;
}

struct bufpool_buf *bufpool_get(struct bufpool *p, size_t len)
{
	int cls = size_class(len ? len : 1);
	struct bufpool_buf *b;
	size_t cap;
	void *mem;

	if (cls >= 0 && p->free[cls]) {
		b = p->free[cls];
		p->free[cls] = b->next;
		p->nfree[cls]--;
		p->cached_bytes -= b->cap;
		return b;
	}
	cap = cls >= 0 ? (size_t)1 << (BUFPOOL_MIN_SHIFT + cls) : ((len + 4095) & ~(size_t)4095);
	b = malloc(sizeof(*b));
	if (!b)
		return NULL;
	if (posix_memalign(&mem, 4096, cap)) {
		free(b);
		return NULL;
	}
	b->data = mem;
	b->cap = cap;
	b->cls = cls;
	b->next = NULL;
	return b;
}

void bufpool_put(struct bufpool *p, struct bufpool_buf *b)
{
	if (!b)
		return;
	if (b->cls < 0 || p->cached_bytes + b->cap > p->cache_limit) {
		buf_release(b);
		return;
	}
	b->next = p->free[b->cls];
	p->free[b->cls] = b;
	p->nfree[b->cls]++;
	p->cached_bytes += b->cap;
}
