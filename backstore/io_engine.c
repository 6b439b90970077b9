/*
 * The asynchronous I/O engine and the process-wide worker pool.
 *
 * DESIGN
 *
 * One struct io_engine per owning thread (a network thread, a tool, a test).
 * Everything in it is touched by the owner only, except two fields the
 * worker pool writes: the completion stack `pool_done` and the counter
 * `pool_active`. There is no lock on the data path:
 *
 *  - io_uring (when the kernel allows it): backstores queue SQEs with
 *    io_engine_uring_rw(); nothing reaches the kernel until io_engine_flush()
 *    (one io_uring_submit for the whole batch), except when the SQ ring is
 *    full, where queuing submits what is there and retries. An eventfd
 *    registered on the ring wakes the owner's epoll; io_engine_poll() reaps
 *    CQEs in batches. A short read/write continues on the worker pool (rare:
 *    end of file, signals); a read that meets end of file zero-fills.
 *
 *  - Deferred completions: io_engine_complete() pushes a finished request on
 *    an owner-private FIFO (singly linked through io->next). io_engine_poll()
 *    runs a snapshot of it, so callbacks that complete more requests do not
 *    starve the loop; io_engine_busy() tells the owner not to block.
 *
 *  - Worker pool: a mutex + condvar job queue shared by the process (2
 *    threads at first, grown up to POOL_MAX_THREADS when every worker is
 *    busy). It runs whatever io_uring cannot do (fallocate modes with
 *    fallbacks, ioctls, COPY: FICLONERANGE reflinks and bounce copies) and
 *    everything when there is no ring. A worker runs io->work(io), pushes
 *    io onto the owning engine's lock-free MPSC stack (atomic
 *    exchange/CAS, consumer takes the whole stack at once, so no ABA),
 *    writes the engine's eventfd, and finally
 *    decrements the engine's pool_active (release). io_engine_destroy()
 *    waits for pool_active to reach zero so a worker never touches a freed
 *    engine.
 *
 *  - Remote completions: io_engine_complete_remote() lets any thread (a
 *    network thread releasing a range lock another thread waits for)
 *    finish a request the owner announced with io_engine_remote_begin();
 *    it takes the worker pool's path: pool_active up, push on pool_done,
 *    eventfd write, pool_active down.
 *
 * Ordering of the wakeup: a worker pushes, then writes the eventfd; the
 * owner reads (clears) the eventfd, then takes the stack. A push the owner
 * misses is always followed by a write that makes the eventfd readable again.
 *
 * Callbacks (io->done) run only from io_engine_poll()/io_engine_wait() on the
 * owner thread, never from a submit call. io->result is len on success (0
 * for FLUSH) or -errno.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>
#ifdef HAVE_LIBURING
#include <liburing.h>
#endif
#include "backstore/io_engine.h"
#include "common/util.h"

#define POOL_MIN_THREADS 2
#define POOL_MAX_THREADS 8
#define SCRATCH_LEN (1u << 20)
#define CQE_BATCH 64

struct io_engine {
#ifdef HAVE_LIBURING
	struct io_uring ring;
#endif
	bool has_ring;
	bool op_read_ok;              /* IORING_OP_READ/WRITE known to the kernel */
	int efd;                      /* eventfd: ring CQEs and pool completions */
	unsigned inflight;            /* owner-only */
	unsigned ring_inflight;       /* owner-only: SQEs queued or in the kernel */
	unsigned ring_cap;            /* CQ entries: never more ring_inflight */
	struct bs_io *dq_head;        /* deferred completions, FIFO, owner-only */
	struct bs_io *dq_tail;
	_Atomic(struct bs_io *) pool_done; /* MPSC stack, workers push */
	atomic_uint pool_active;      /* jobs handed to the pool, not yet let go */
};

/* ---- worker pool -------------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct bs_io *head, *tail;    /* job FIFO linked through io->next */
	unsigned nthreads;
	unsigned idle;
	bool stop;
	pthread_t tids[POOL_MAX_THREADS];
} pool = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

static __thread void *tl_scratch;
static __thread bool tl_is_worker;

void *io_engine_scratch(size_t *len)
{
	if (!tl_is_worker)
		return NULL;
	if (!tl_scratch && posix_memalign(&tl_scratch, 4096, SCRATCH_LEN) != 0)
		tl_scratch = NULL;
	if (len)
		*len = tl_scratch ? SCRATCH_LEN : 0;
	return tl_scratch;
}

static void engine_signal(struct io_engine *eng)
{
	uint64_t one = 1;
	ssize_t r;

	do {
		r = write(eng->efd, &one, sizeof(one));
	} while (r < 0 && errno == EINTR);
	/* EAGAIN means the counter is already huge: the owner will wake. */
}

/* Hand a finished pool job back to its engine (any thread). */
static void engine_push_done(struct io_engine *eng, struct bs_io *io)
{
	struct bs_io *old = atomic_load_explicit(&eng->pool_done, memory_order_relaxed);

	do {
		io->next = old;
	} while (!atomic_compare_exchange_weak_explicit(&eng->pool_done, &old, io,
							 memory_order_release,
							 memory_order_relaxed));
	engine_signal(eng);
	atomic_fetch_sub_explicit(&eng->pool_active, 1, memory_order_release);
}

static void *pool_worker(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	tl_is_worker = true;

	pthread_mutex_lock(&pool.lock);
	for (;;) {
		struct bs_io *io;

		while (!pool.head && !pool.stop) {
			pool.idle++;
			pthread_cond_wait(&pool.cond, &pool.lock);
			pool.idle--;
		}
		io = pool.head;
		if (!io)
			break; /* stop requested and the queue is drained */
		pool.head = io->next;
		if (!pool.head)
			pool.tail = NULL;
		pthread_mutex_unlock(&pool.lock);

		io->work(io);
		engine_push_done(io->eng, io);

		pthread_mutex_lock(&pool.lock);
	}
	pthread_mutex_unlock(&pool.lock);
	free(tl_scratch);
	tl_scratch = NULL;
	return NULL;
}

/* Called with pool.lock held. Returns false if no thread could be started. */
static bool pool_grow_locked(void)
{
	unsigned want = pool.nthreads < POOL_MIN_THREADS ? POOL_MIN_THREADS : pool.nthreads + 1;

	if (want > POOL_MAX_THREADS)
		want = POOL_MAX_THREADS;
	while (pool.nthreads < want) {
		int e = pthread_create(&pool.tids[pool.nthreads], NULL, pool_worker, NULL);

		if (e) {
			log_warn("io_engine: cannot start a worker thread: %s", strerror(e));
			break;
		}
		pool.nthreads++;
	}
	return pool.nthreads > 0;
}

/* Queue a job (io->eng, io->work set). False: no worker exists. */
static bool pool_queue(struct bs_io *io)
{
	pthread_mutex_lock(&pool.lock);
	if ((pool.idle == 0 && pool.nthreads < POOL_MAX_THREADS) || pool.nthreads == 0) {
		if (!pool_grow_locked()) {
			pthread_mutex_unlock(&pool.lock);
			return false;
		}
	}
	io->next = NULL;
	if (pool.tail)
		pool.tail->next = io;
	else
		pool.head = io;
	pool.tail = io;
	pthread_cond_signal(&pool.cond);
	pthread_mutex_unlock(&pool.lock);
	return true;
}

void io_engine_pool_shutdown(void)
{
	unsigned i, n;

	pthread_mutex_lock(&pool.lock);
	pool.stop = true;
	pthread_cond_broadcast(&pool.cond);
	n = pool.nthreads;
	pthread_mutex_unlock(&pool.lock);
	for (i = 0; i < n; i++)
		pthread_join(pool.tids[i], NULL);
	pthread_mutex_lock(&pool.lock);
	pool.nthreads = 0;
	pool.idle = 0;
	pool.stop = false; /* the pool may be started again */
	pthread_mutex_unlock(&pool.lock);
}

/* ---- deferred completions ------------------------------------------------ */

static void engine_defer(struct io_engine *eng, struct bs_io *io)
{
	io->next = NULL;
	if (eng->dq_tail)
		eng->dq_tail->next = io;
	else
		eng->dq_head = io;
	eng->dq_tail = io;
}

void io_engine_complete(struct io_engine *eng, struct bs_io *io)
{
	io->eng = eng;
	eng->inflight++;
	engine_defer(eng, io);
}

void io_engine_remote_begin(struct io_engine *eng, struct bs_io *io)
{
	io->eng = eng;
	eng->inflight++;
}

void io_engine_complete_remote(struct bs_io *io)
{
	struct io_engine *eng = io->eng;

	/* Counted like a pool job so io_engine_destroy() waits until this
	 * thread no longer touches eng (after the eventfd write). */
	atomic_fetch_add_explicit(&eng->pool_active, 1, memory_order_relaxed);
	engine_push_done(eng, io);
}

/* Offload without counting a new request (continuations). */
static void engine_offload_cont(struct io_engine *eng, struct bs_io *io, void (*fn)(struct bs_io *io))
{
	io->eng = eng;
	io->work = fn;
	atomic_fetch_add_explicit(&eng->pool_active, 1, memory_order_relaxed);
	if (unlikely(!pool_queue(io))) {
		/* No thread at all: do the work here, deliver it on the next poll. */
		atomic_fetch_sub_explicit(&eng->pool_active, 1, memory_order_relaxed);
		fn(io);
		engine_defer(eng, io);
	}
}

void io_engine_offload(struct io_engine *eng, struct bs_io *io, void (*fn)(struct bs_io *io))
{
	eng->inflight++;
	engine_offload_cont(eng, io, fn);
}

/* ---- synchronous read/write on a worker ---------------------------------- */

static void iov_zero_from(const struct iovec *iov, int iovcnt, uint64_t skip)
{
	int i;

	for (i = 0; i < iovcnt; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		memset((char *)iov[i].iov_base + skip, 0, iov[i].iov_len - skip);
		skip = 0;
	}
}

void io_engine_rw_work(struct bs_io *io)
{
	int fd = io->bs->fd;
	int i;
	uint64_t skip = io->xfer_done;

	if (io->op == BS_OP_FLUSH) {
		io->result = fdatasync(fd) < 0 ? -errno : 0;
		return;
	}
	if (io->op != BS_OP_READ && io->op != BS_OP_WRITE) {
		io->result = -EINVAL;
		return;
	}
	/* One segment at a time: this is the fallback and continuation path,
	 * simplicity beats the last syscall. */
	for (i = 0; i < io->iovcnt; i++) {
		char *base = io->iov[i].iov_base;
		uint64_t seg = io->iov[i].iov_len;

		if (skip >= seg) {
			skip -= seg;
			continue;
		}
		base += skip;
		seg -= skip;
		skip = 0;
		while (seg > 0) {
			ssize_t r;
			off_t off = (off_t)(io->offset + io->xfer_done);

			if (io->op == BS_OP_READ) {
				r = pread(fd, base, seg, off);
			} else {
				struct iovec one = { base, seg };

				r = pwritev2(fd, &one, 1, off, (io->flags & BS_IO_FUA) ? RWF_DSYNC : 0);
				if (r < 0 && errno == EOPNOTSUPP && (io->flags & BS_IO_FUA)) {
					r = pwrite(fd, base, seg, off);
					if (r > 0 && fdatasync(fd) < 0)
						r = -1;
				}
			}
			if (r < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				io->result = -errno;
				return;
			}
			if (r == 0) {
				if (io->op == BS_OP_READ) {
					/* End of file: the rest reads as zeroes. */
					iov_zero_from(io->iov, io->iovcnt, io->xfer_done);
					io->xfer_done = io->len;
					io->result = (int64_t)io->len;
					return;
				}
				io->result = -EIO;
				return;
			}
			base += r;
			seg -= (uint64_t)r;
			io->xfer_done += (uint64_t)r;
		}
	}
	/* The iovecs must cover len (the request contract). */
	io->result = io->xfer_done >= io->len ? (int64_t)io->len : -EINVAL;
}

/* ---- io_uring ------------------------------------------------------------ */

#ifdef HAVE_LIBURING
static struct io_uring_sqe *engine_get_sqe(struct io_engine *eng)
{
	struct io_uring_sqe *sqe;

	if (unlikely(eng->ring_inflight >= eng->ring_cap))
		return NULL; /* keep the CQ ring from overflowing */
	sqe = io_uring_get_sqe(&eng->ring);
	if (unlikely(!sqe)) {
		/* SQ full: push the batch to the kernel and retry once. */
		io_uring_submit(&eng->ring);
		sqe = io_uring_get_sqe(&eng->ring);
	}
	return sqe;
}
#endif

bool io_engine_uring_rw(struct io_engine *eng, struct bs_io *io, int fd)
{
#ifdef HAVE_LIBURING
	struct io_uring_sqe *sqe;

	if (!eng->has_ring)
		return false;
	if (io->op != BS_OP_READ && io->op != BS_OP_WRITE && io->op != BS_OP_FLUSH)
		return false;
	if (unlikely(io->iovcnt > IOV_MAX))
		return false; /* readv would refuse it; the pool loops per segment */
	sqe = engine_get_sqe(eng);
	if (unlikely(!sqe))
		return false;
	switch (io->op) {
	case BS_OP_READ:
		if (io->iovcnt == 1 && eng->op_read_ok)
			io_uring_prep_read(sqe, fd, io->iov[0].iov_base, (unsigned)io->iov[0].iov_len,
					   io->offset);
		else
			io_uring_prep_readv(sqe, fd, io->iov, (unsigned)io->iovcnt, io->offset);
		break;
	case BS_OP_WRITE:
		if (io->iovcnt == 1 && eng->op_read_ok)
			io_uring_prep_write(sqe, fd, io->iov[0].iov_base, (unsigned)io->iov[0].iov_len,
					    io->offset);
		else
			io_uring_prep_writev(sqe, fd, io->iov, (unsigned)io->iovcnt, io->offset);
		if (io->flags & BS_IO_FUA)
			sqe->rw_flags = RWF_DSYNC;
		break;
	default: /* BS_OP_FLUSH */
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	}
	io_uring_sqe_set_data(sqe, io);
	io->eng = eng;
	io->xfer_done = 0;
	eng->inflight++;
	eng->ring_inflight++;
	return true;
#else
	(void)eng;
	(void)io;
	(void)fd;
	return false;
#endif
}

/* Finish a ring request; true if io->done must run now. */
static bool engine_ring_result(struct io_engine *eng, struct bs_io *io, int res)
{
	if (io->op == BS_OP_FLUSH) {
		io->result = res < 0 ? res : 0;
		return true;
	}
	if (res < 0) {
		if (res == -EAGAIN || res == -EINTR) {
			engine_offload_cont(eng, io, io_engine_rw_work);
			return false;
		}
		io->result = res;
		return true;
	}
	io->xfer_done += (uint64_t)res;
	if (likely(io->xfer_done >= io->len)) {
		io->result = (int64_t)io->len;
		return true;
	}
	if (res == 0) {
		if (io->op == BS_OP_READ) {
			iov_zero_from(io->iov, io->iovcnt, io->xfer_done);
			io->result = (int64_t)io->len;
		} else {
			io->result = -EIO;
		}
		return true;
	}
	/* Short transfer: the worker does the remainder. */
	engine_offload_cont(eng, io, io_engine_rw_work);
	return false;
}

static int engine_reap_ring(struct io_engine *eng)
{
#ifdef HAVE_LIBURING
	struct bs_io *ios[CQE_BATCH];
	int res[CQE_BATCH];
	int total = 0;

	if (!eng->has_ring)
		return 0;
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0, i;

		io_uring_for_each_cqe(&eng->ring, head, cqe) {
			ios[n] = io_uring_cqe_get_data(cqe);
			res[n] = cqe->res;
			if (++n == CQE_BATCH)
				break;
		}
		if (n == 0)
			break;
		io_uring_cq_advance(&eng->ring, n);
		eng->ring_inflight -= n;
		for (i = 0; i < n; i++) {
			struct bs_io *io = ios[i];

			if (engine_ring_result(eng, io, res[i])) {
				eng->inflight--;
				io->done_ns = backstore_now_ns();
				io->done(io);
				total++;
			}
		}
		if (n < CQE_BATCH)
			break;
	}
	return total;
#else
	(void)eng;
	(void)engine_ring_result;
	return 0;
#endif
}

/* ---- engine life --------------------------------------------------------- */

#ifdef HAVE_LIBURING
static atomic_bool logged_no_uring;
#endif

struct io_engine *io_engine_create(unsigned depth, bool use_uring)
{
	struct io_engine *eng = calloc(1, sizeof(*eng));
	const char *env = getenv("TARGETD_NO_URING");

	if (!eng)
		return NULL;
	eng->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (eng->efd < 0) {
		free(eng);
		return NULL;
	}
	atomic_init(&eng->pool_done, NULL);
	atomic_init(&eng->pool_active, 0);
	if (env && *env && strcmp(env, "0") != 0)
		use_uring = false;
	if (depth < 8)
		depth = 8;
	if (depth > 4096)
		depth = 4096;
#ifdef HAVE_LIBURING
	if (use_uring) {
		struct io_uring_params prm;
		int e;

		memset(&prm, 0, sizeof(prm));
		e = io_uring_queue_init_params(depth, &eng->ring, &prm);
		if (e == 0) {
			e = io_uring_register_eventfd(&eng->ring, eng->efd);
			if (e < 0)
				io_uring_queue_exit(&eng->ring);
		}
		if (e == 0) {
			struct io_uring_probe *probe = io_uring_get_probe_ring(&eng->ring);

			eng->has_ring = true;
			eng->ring_cap = prm.cq_entries;
			eng->op_read_ok = probe && io_uring_opcode_supported(probe, IORING_OP_READ) &&
					  io_uring_opcode_supported(probe, IORING_OP_WRITE);
			if (probe)
				io_uring_free_probe(probe);
		} else if (!atomic_exchange(&logged_no_uring, true)) {
			log_info("io_uring unavailable (%s): backstore I/O uses the worker pool",
				 strerror(-e));
		}
	}
#else
	(void)use_uring;
#endif
	return eng;
}

int io_engine_fd(struct io_engine *eng)
{
	return eng->efd;
}

bool io_engine_has_uring(struct io_engine *eng)
{
	return eng->has_ring;
}

unsigned io_engine_inflight(struct io_engine *eng)
{
	return eng->inflight;
}

bool io_engine_busy(struct io_engine *eng)
{
	if (eng->dq_head)
		return true;
#ifdef HAVE_LIBURING
	if (eng->has_ring && io_uring_cq_ready(&eng->ring))
		return true;
#endif
	return false;
}

void io_engine_flush(struct io_engine *eng)
{
#ifdef HAVE_LIBURING
	if (eng->has_ring && io_uring_sq_ready(&eng->ring)) {
		int r = io_uring_submit(&eng->ring);

		/* -EBUSY/-EAGAIN: the SQEs stay queued; the next flush, after
		 * the owner reaped completions, sends them. */
		if (unlikely(r < 0 && r != -EBUSY && r != -EAGAIN && r != -EINTR))
			log_warn("io_engine: io_uring_submit: %s", strerror(-r));
	}
#else
	(void)eng;
#endif
}

int io_engine_poll(struct io_engine *eng)
{
	uint64_t v;
	int n = 0;
	struct bs_io *list, *rev, *io;

	/* Clear the eventfd first, then look (see the DESIGN comment). */
	if (read(eng->efd, &v, sizeof(v)) < 0 && errno != EAGAIN && errno != EINTR)
		log_warn("io_engine: eventfd read: %s", strerror(errno));

	n += engine_reap_ring(eng);

	if (atomic_load_explicit(&eng->pool_done, memory_order_relaxed)) {
		list = atomic_exchange_explicit(&eng->pool_done, NULL, memory_order_acquire);
		/* The stack is LIFO: reverse it to complete in finishing order. */
		rev = NULL;
		while (list) {
			io = list;
			list = io->next;
			io->next = rev;
			rev = io;
		}
		while (rev) {
			io = rev;
			rev = io->next;
			eng->inflight--;
			io->done_ns = backstore_now_ns();
			io->done(io);
			n++;
		}
	}

	/* Deferred completions: run the snapshot only. */
	list = eng->dq_head;
	eng->dq_head = eng->dq_tail = NULL;
	while (list) {
		io = list;
		list = io->next;
		eng->inflight--;
		io->done_ns = backstore_now_ns();
		io->done(io);
		n++;
	}
	return n;
}

void io_engine_wait(struct io_engine *eng)
{
	for (;;) {
		struct pollfd pfd = { .fd = eng->efd, .events = POLLIN };

		io_engine_flush(eng);
		if (io_engine_poll(eng) > 0 || eng->inflight == 0)
			return;
		if (io_engine_busy(eng))
			continue;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return;
	}
}

void io_engine_destroy(struct io_engine *eng)
{
	if (!eng)
		return;
	if (eng->inflight)
		log_warn("io_engine: destroyed with %u requests in flight: draining", eng->inflight);
	while (eng->inflight)
		io_engine_wait(eng);
	/* A worker may still be between its push and its last touch. */
	while (atomic_load_explicit(&eng->pool_active, memory_order_acquire))
		sched_yield();
#ifdef HAVE_LIBURING
	if (eng->has_ring)
		io_uring_queue_exit(&eng->ring);
#endif
	close(eng->efd);
	free(eng);
}
