/*
 * Fault injection: commands held before they run (latency, stalls).
 *
 * DESIGN (threads): one timer thread, started with the first hold, owns a
 * list of held commands under hold.lock. A network thread holding a
 * command announces it to its io_engine (io_engine_remote_begin), puts an
 * entry on the list and returns PENDING. The timer thread sleeps until the
 * earliest deadline, but never longer than HOLD_POLL_NS while the list is
 * not empty: it looks at each command's `aborted` flag (set by task
 * management or a lost connection on the owning thread; the command stays
 * allocated until it completes) and at the entry's `release` flag (its
 * rules were cleared). An entry that is due, aborted or released leaves
 * the list and goes back to its owner with io_engine_complete_remote();
 * the owner then runs the command, or ends it with TASK ABORTED without
 * running it (an aborted write is never applied). The timer thread touches
 * nothing of the command but the `aborted` flag.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include "scsi/scsi_int.h"
#include "scsi/fault.h"
#include "scsi/stats.h"
#include "scsi/vaai.h"
#include "backstore/io_engine.h"

#define HOLD_POLL_NS 5000000ull   /* how soon an abort of a held command is seen */

struct fault_hold {
	struct bs_io io;             /* the wake-up, completed remotely */
	struct list_head link;       /* hold.list */
	struct scsi_cmd *cmd;
	const struct scsi_lun *lun;
	uint64_t deadline;           /* UINT64_MAX: until aborted or released */
	bool aborted;                /* written by the timer thread before the completion */
	bool release;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_once_t once;
	bool started;
	unsigned n;
	struct list_head list;
} hold = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.once = PTHREAD_ONCE_INIT,
	.list = LIST_HEAD_INIT(hold.list),
};

static uint64_t hold_now(void)
{
	return scsi_stats_now_ns();
}

static void *hold_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&hold.lock);
	for (;;) {
		uint64_t now = hold_now(), next = UINT64_MAX;
		struct list_head *pos, *tmp;
		struct timespec ts;

		list_for_each_safe(pos, tmp, &hold.list) {
			struct fault_hold *h = list_entry(pos, struct fault_hold, link);
			bool ab = atomic_load_explicit(&h->cmd->aborted, memory_order_acquire);

			if (ab || h->release || now >= h->deadline) {
				list_del(&h->link);
				hold.n--;
				h->aborted = ab;
				io_engine_complete_remote(&h->io);   /* h is the owner's now */
				continue;
			}
			if (h->deadline < next)
				next = h->deadline;
		}
		if (list_empty(&hold.list)) {
			pthread_cond_wait(&hold.cond, &hold.lock);
			continue;
		}
		if (next - now > HOLD_POLL_NS)
			next = now + HOLD_POLL_NS;
		ts.tv_sec = (time_t)(next / 1000000000u);
		ts.tv_nsec = (long)(next % 1000000000u);
		pthread_cond_timedwait(&hold.cond, &hold.lock, &ts);
	}
	return NULL;
}

static void hold_init(void)
{
	pthread_condattr_t ca;
	pthread_attr_t a;
	pthread_t tid;
	sigset_t all, old;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* scsi_stats_now_ns() */
	pthread_cond_init(&hold.cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);   /* signals stay with the main thread */
	hold.started = pthread_create(&tid, &a, hold_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (!hold.started)
		log_err("fault injection: cannot start the timer thread; delays and stalls are not injected");
}

/* On the owner: the hold is over. */
static void hold_done(struct bs_io *io)
{
	struct fault_hold *h = io->priv;
	struct scsi_cmd *cmd = h->cmd;
	bool aborted = h->aborted;
	enum sense_reason r;

	free(h);
	cmd->xfault &= (uint8_t)~SCSI_FAULT_X_HOLD;
	if (aborted) {
		/* SAM-5 7.2: an aborted command that has not started does nothing */
		scsi_cmd_done(cmd, SR_TASK_ABORTED);
		return;
	}
	r = cmd->execute(cmd);
	if (r != SR_PENDING)
		scsi_cmd_done(cmd, r);
}

bool scsi_fault_hold(struct scsi_cmd *cmd)
{
	struct fault_hold *h;
	bool stall = cmd->xfault & SCSI_FAULT_X_STALL;

	pthread_once(&hold.once, hold_init);
	if (!hold.started || (!stall && !cmd->fault_ns))
		return false;
	h = calloc(1, sizeof(*h));
	if (!h)
		return false;   /* no memory: the command runs without its delay */
	h->cmd = cmd;
	h->lun = cmd->lun;
	h->deadline = stall && !cmd->fault_ns ? UINT64_MAX : hold_now() + cmd->fault_ns;
	h->io.done = hold_done;
	h->io.priv = h;
	io_engine_remote_begin(cmd->eng, &h->io);
	pthread_mutex_lock(&hold.lock);
	list_add_tail(&h->link, &hold.list);
	hold.n++;
	pthread_cond_signal(&hold.cond);
	pthread_mutex_unlock(&hold.lock);
	return true;
}

void scsi_fault_hold_release(const struct scsi_lun *lun)
{
	struct list_head *pos;
	bool any = false;

	pthread_mutex_lock(&hold.lock);
	list_for_each(pos, &hold.list) {
		struct fault_hold *h = list_entry(pos, struct fault_hold, link);

		if (h->lun == lun) {
			h->release = true;
			any = true;
		}
	}
	if (any)
		pthread_cond_signal(&hold.cond);
	pthread_mutex_unlock(&hold.lock);
}

unsigned scsi_fault_held(void)
{
	unsigned n;

	pthread_mutex_lock(&hold.lock);
	n = hold.n;
	pthread_mutex_unlock(&hold.lock);
	return n;
}
