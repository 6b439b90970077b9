/*
 * The per-LUN LBA range lock.
 *
 * DESIGN (threads and locking)
 *
 * Who takes it: every command that modifies the medium, for the LBAs it
 * modifies, before its first backstore request and until its last one has
 * completed:
 *   RL_SHARED  WRITE(6/10/12/16), WRITE SAME, UNMAP, the destination of each
 *              EXTENDED COPY chunk: writers that never read the medium, so
 *              they may overlap one another (SAM-5 leaves the order of
 *              overlapping SIMPLE commands to the device server).
 *   RL_EXCL    COMPARE AND WRITE, ORWRITE, WRITE AND VERIFY (they read
 *              and then write or compare what they wrote), WRITE ATOMIC
 *              (the blocks it writes as one) and SANITIZE (the whole
 *              LUN): alone on their range.
 * So a COMPARE AND WRITE excludes every other writer of its LBAs, on any
 * session, connection or thread, for the whole read-compare-write.
 * On a LUN that offers WRITE ATOMIC the readers of the medium take it too,
 * RL_SHARED: READ (a zero-copy one until the transport has sent the bytes)
 * and VERIFY, so that none sees half an atomic write (SBC-4 4.29.3).
 *
 * Data structure: one struct rangelock per LUN (never a global lock): a
 * mutex, the lists of granted shared and exclusive requests and one FIFO
 * wait queue. Every list operation happens under the mutex; the critical
 * sections are short and never block or do I/O.
 *
 * Conflicts and fairness (FIFO per overlapping range):
 *   - a SHARED request waits if it overlaps a granted EXCL request or an
 *     EXCL request already waiting (so a stream of WRITEs cannot starve a
 *     COMPARE AND WRITE);
 *   - an EXCL request waits if it overlaps any granted request or any
 *     request already waiting.
 * On release, the queue is scanned in order and every waiter that no
 * longer conflicts, with the granted requests or with the waiters queued
 * before it, is granted. Requests on disjoint ranges never wait for each
 * other.
 *
 * Uncontended cost (plain WRITE): one mutex section to acquire (no exclusive
 * holder and no exclusive waiter: O(1) list insert) and one to release
 * (O(1) unlink, the queue is empty). Exclusive requests scan the granted
 * lists, which hold at most the LUN's commands in flight.
 *
 * Never blocking a network thread: a request that cannot be granted is
 * queued and rangelock_acquire() returns at once. The waiter's engine counts
 * it in flight (io_engine_remote_begin). The grant happens in the releasing
 * thread, which may be another network thread or a worker: it marks the
 * request HELD under the mutex and, after unlocking, hands the waiter's
 * notify request to io_engine_complete_remote(), which wakes the waiter's
 * own thread through its eventfd; the continuation runs there. A command
 * waiting for the lock is never holding another, so there is no cycle.
 */
#include "config.h"
#include <stdlib.h>
#include "scsi/rangelock.h"
#include "backstore/io_engine.h"

void rangelock_init(struct rangelock *rl)
{
	pthread_mutex_init(&rl->mu, NULL);
	list_init(&rl->shared);
	list_init(&rl->excl);
	list_init(&rl->waiters);
	rl->n_excl_waiting = 0;
	rl->contended = 0;
}

void rangelock_destroy(struct rangelock *rl)
{
	pthread_mutex_destroy(&rl->mu);
}

static inline bool rl_overlap(const struct rangelock_req *a, const struct rangelock_req *b)
{
	return a->lba < b->end && b->lba < a->end;
}

static bool rl_overlaps_list(const struct rangelock_req *r, const struct list_head *h)
{
	const struct list_head *p;

	list_for_each(p, h)
		if (rl_overlap(r, list_entry(p, struct rangelock_req, link)))
			return true;
	return false;
}

/* Does r conflict with a granted request? */
static bool rl_conflicts_granted(const struct rangelock *rl, const struct rangelock_req *r)
{
	if (rl_overlaps_list(r, &rl->excl))
		return true;
	return r->mode == RL_EXCL && rl_overlaps_list(r, &rl->shared);
}

/* Does r conflict with waiter w queued before it? */
static bool rl_conflicts_waiter(const struct rangelock_req *r, const struct rangelock_req *w)
{
	if (r->mode == RL_SHARED && w->mode == RL_SHARED)
		return false;
	return rl_overlap(r, w);
}

static void rl_grant_locked(struct rangelock *rl, struct rangelock_req *r)
{
	r->state = RL_HELD;
	list_add_tail(&r->link, r->mode == RL_EXCL ? &rl->excl : &rl->shared);
}

bool rangelock_acquire(struct rangelock *rl, struct rangelock_req *r, uint64_t lba, uint64_t n,
		       enum rangelock_mode mode, struct io_engine *eng, struct bs_io *notify)
{
	const struct list_head *p;
	bool wait = false;

	r->rl = rl;
	r->lba = lba;
	r->end = lba + n < lba ? UINT64_MAX : lba + n;
	r->mode = (uint8_t)mode;
	r->notify = notify;

	pthread_mutex_lock(&rl->mu);
	if (mode == RL_SHARED && list_empty(&rl->excl) && rl->n_excl_waiting == 0) {
		/* the fast path of every plain WRITE */
		rl_grant_locked(rl, r);
		pthread_mutex_unlock(&rl->mu);
		return true;
	}
	if (rl_conflicts_granted(rl, r)) {
		wait = true;
	} else {
		list_for_each(p, &rl->waiters) {
			if (rl_conflicts_waiter(r, list_entry(p, struct rangelock_req, link))) {
				wait = true;
				break;
			}
		}
	}
	if (!wait) {
		rl_grant_locked(rl, r);
		pthread_mutex_unlock(&rl->mu);
		return true;
	}
	r->state = RL_WAITING;
	if (mode == RL_EXCL)
		rl->n_excl_waiting++;
	rl->contended++;
	/* Owner-side accounting before anyone can grant (we hold the mutex,
	 * and a grant needs it). */
	io_engine_remote_begin(eng, notify);
	list_add_tail(&r->link, &rl->waiters);
	pthread_mutex_unlock(&rl->mu);
	return false;
}

void rangelock_release(struct rangelock_req *r)
{
	struct rangelock *rl = r->rl;
	struct list_head *p, *tmp;
	struct list_head woken;

	if (r->state != RL_HELD)
		return;
	list_init(&woken);
	pthread_mutex_lock(&rl->mu);
	list_del(&r->link);
	r->state = RL_IDLE;
	if (list_empty(&rl->waiters)) {
		pthread_mutex_unlock(&rl->mu);
		return;
	}
	/* Grant, in queue order, every waiter free of conflicts with the
	 * granted requests and with the waiters still ahead of it. */
	list_for_each_safe(p, tmp, &rl->waiters) {
		struct rangelock_req *w = list_entry(p, struct rangelock_req, link);
		struct list_head *q;
		bool blocked = rl_conflicts_granted(rl, w);

		for (q = rl->waiters.next; !blocked && q != p; q = q->next)
			blocked = rl_conflicts_waiter(w, list_entry(q, struct rangelock_req, link));
		if (blocked)
			continue;
		list_del(&w->link);
		if (w->mode == RL_EXCL)
			rl->n_excl_waiting--;
		rl_grant_locked(rl, w);
		/* woken after the mutex is released */
		list_add_tail(&w->notify_link, &woken);
	}
	pthread_mutex_unlock(&rl->mu);
	list_for_each_safe(p, tmp, &woken) {
		struct rangelock_req *w = list_entry(p, struct rangelock_req, notify_link);

		list_del(&w->notify_link);
		w->notify->result = 0;
		io_engine_complete_remote(w->notify);
	}
}
