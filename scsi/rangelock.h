/*
 * Per-LUN LBA range lock: every writer of the medium takes it for the
 * range it modifies, so that COMPARE AND WRITE (and the other commands
 * that read before they write) are atomic against every other writer,
 * from any session, connection or network thread. See scsi/rangelock.c
 * for the locking design.
 */
#ifndef SCSI_RANGELOCK_H
#define SCSI_RANGELOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "common/util.h"

struct bs_io;
struct io_engine;

enum rangelock_mode {
	RL_SHARED = 0,   /* plain writers: compatible with each other */
	RL_EXCL = 1,     /* read-modify-write: alone on its range */
};

enum rangelock_state {
	RL_IDLE = 0,
	RL_WAITING,
	RL_HELD,
};

/* One request; lives in the requester (struct scsi_cmd, a job). */
struct rangelock_req {
	struct list_head link;        /* in a holder list or the wait queue */
	struct list_head notify_link; /* releaser-private: grants to deliver */
	uint64_t lba, end;            /* [lba, end) */
	uint8_t mode;                 /* enum rangelock_mode */
	uint8_t state;                /* enum rangelock_state */
	struct rangelock *rl;
	struct bs_io *notify;         /* completed on the waiter's engine at grant */
};

struct rangelock {
	pthread_mutex_t mu;
	struct list_head shared;      /* granted RL_SHARED requests */
	struct list_head excl;        /* granted RL_EXCL requests */
	struct list_head waiters;     /* FIFO */
	unsigned n_excl_waiting;      /* RL_EXCL requests in waiters */
	uint64_t contended;           /* requests that had to wait (statistics) */
};

void rangelock_init(struct rangelock *rl);
void rangelock_destroy(struct rangelock *rl);

/*
 * Lock [lba, lba + n) (n = 0 locks nothing but is tracked like any range)
 * in mode. Returns true when granted at once. Otherwise returns false and
 * the request waits: when granted, notify (result 0) is completed on eng,
 * the caller's own engine, and its done() runs on the caller's thread from
 * io_engine_poll(). The request must not be reused before that.
 */
bool rangelock_acquire(struct rangelock *rl, struct rangelock_req *r, uint64_t lba, uint64_t n,
		       enum rangelock_mode mode, struct io_engine *eng, struct bs_io *notify);
/* Release a granted request (any thread); waiters it unblocks are granted
 * in FIFO order and woken on their own engines. */
void rangelock_release(struct rangelock_req *r);

static inline bool rangelock_held(const struct rangelock_req *r)
{
	return r->state == RL_HELD;
}

#endif
