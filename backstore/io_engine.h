/*
 * The asynchronous I/O engine: one per network thread (and one per tool or
 * test that does backstore I/O). It owns an io_uring when the kernel allows
 * it and shares a process-wide worker pool for operations io_uring cannot do
 * (or when io_uring is missing). Every completion is delivered on the owning
 * thread, from io_engine_poll(); never from another thread and never from
 * inside a submit call.
 *
 * Owner loop:
 *     epoll on io_engine_fd(eng) (EPOLLIN) together with the sockets;
 *     before blocking: io_engine_flush(eng); block with timeout 0 if
 *     io_engine_busy(eng);
 *     after events: io_engine_poll(eng).
 */
#ifndef BACKSTORE_IO_ENGINE_H
#define BACKSTORE_IO_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include "backstore/backstore.h"

struct io_engine;

/* depth: io_uring entries (rounded up); use_uring false forces the pool.
 * The environment variable TARGETD_NO_URING=1 forces the pool too (for
 * valgrind, which does not follow memory the kernel writes through a ring). */
struct io_engine *io_engine_create(unsigned depth, bool use_uring);
void io_engine_destroy(struct io_engine *eng);

int io_engine_fd(struct io_engine *eng);
/* Reap completions and run their callbacks. Returns the number completed. */
int io_engine_poll(struct io_engine *eng);
/* Submit what has been queued since the last flush. */
void io_engine_flush(struct io_engine *eng);
/* True if completions are ready without waiting (deferred ones). */
bool io_engine_busy(struct io_engine *eng);
/* Block until at least one completion ran (tools, tests, shutdown). */
void io_engine_wait(struct io_engine *eng);
/* Requests submitted and not yet completed. */
unsigned io_engine_inflight(struct io_engine *eng);
bool io_engine_has_uring(struct io_engine *eng);

/* For backstores: complete io (result already set) on the next poll. */
void io_engine_complete(struct io_engine *eng, struct bs_io *io);
/* For requests finished by ANOTHER thread (e.g. a range lock granted when
 * its holder, on another network thread, releases it). On the owner:
 * io_engine_remote_begin(eng, io) counts io as in flight. Later, on any
 * thread, exactly once: io_engine_complete_remote(io) (result set) pushes
 * io onto the engine's lock-free completion stack and wakes the owner,
 * whose io_engine_poll() runs io->done. */
void io_engine_remote_begin(struct io_engine *eng, struct bs_io *io);
void io_engine_complete_remote(struct bs_io *io);
/* For backstores: run fn(io) on a worker thread; fn sets io->result; the
 * completion then reaches the owner like any other. */
void io_engine_offload(struct io_engine *eng, struct bs_io *io, void (*fn)(struct bs_io *io));
/* For backstores: queue an io_uring read/write/fsync/fallocate on fd.
 * Returns false when there is no ring (caller offloads instead).
 * Handles BS_OP_READ, BS_OP_WRITE (FUA = RWF_DSYNC) and BS_OP_FLUSH
 * (fdatasync); for any other op it returns false. */
bool io_engine_uring_rw(struct io_engine *eng, struct bs_io *io, int fd);
/* For backstores: a worker-pool function doing READ/WRITE/FLUSH of io on
 * io->bs->fd synchronously (preadv/pwritev loops, zero-fill at EOF). */
void io_engine_rw_work(struct bs_io *io);
/* For worker-pool functions: a 1 MiB, 4096-aligned scratch buffer private to
 * the calling worker thread (NULL outside a worker or when out of memory). */
void *io_engine_scratch(size_t *len);

/* Stop the shared worker pool (at exit, after every engine is destroyed). */
void io_engine_pool_shutdown(void);

#endif
