/*
 * CmdSN order: the per-session reorder queue and the start gate of a
 * command (RFC 7143 4.2.2.1, SAM-5 task attributes).
 *
 * DESIGN
 *
 * What is ordered. RFC 7143 4.2.2.1: the target delivers non-immediate
 * commands to the SCSI layer in CmdSN order, across all connections of the
 * session; immediate commands are delivered as soon as they arrive. A
 * command is "delivered" when it enters the task set of its LUN
 * (scsi/taskset.c); from there its task attribute decides when it may run:
 * SIMPLE ones overlap, an ORDERED one waits for all older tasks, a HEAD OF
 * QUEUE one runs at once. A command starts (scsi_cmd_execute) when three
 * things hold: all its data is in (state QUEUED), it was delivered, and
 * its task set enabled it. Collecting Data-Out (and sending R2Ts) does not
 * wait for CmdSN order: data for a command held behind a hole is received
 * into its buffer meanwhile.
 *
 * The reorder queue. A ring of pointers per session, indexed by CmdSN
 * modulo its size (a power of two >= the session's queue depth), holding
 * what arrived above ExpCmdSN: a command waiting for lower CmdSNs, or a
 * mark for a CmdSN that was received but delivers nothing (NOP-Out, Text,
 * Logout and task management requests act when they arrive; a command
 * that found no free task, or whose connection ended, or that ABORT TASK
 * named before it arrived). When the command at ExpCmdSN arrives,
 * ExpCmdSN moves on and every consecutive slot after it is delivered in
 * order. Cost: O(1) per command in order; each held command is touched
 * once more when the hole closes.
 *
 * Bounded. Only CmdSNs inside the window (ExpCmdSN to the highest MaxCmdSN
 * ever advertised, which the initiator may use: RFC 7143 4.2.2.1 lets it
 * ignore a smaller one) are taken; the window never spans more than the
 * queue depth, which the ring covers. Anything else, and a second copy of
 * a CmdSN already received, is ignored silently (RFC 7143 4.2.2.1). So
 * the queue never holds more than queue-depth commands, whose tasks and
 * buffers were bounded already.
 *
 * Holes. A hole (a CmdSN not received while higher ones are) closes when
 * the missing command arrives: late on another connection, or resent by
 * the initiator after a Reject for a data digest error (RFC 7143 7.8:
 * such a command was not received) or on a new connection after its own
 * failed (connection recovery: the same CmdSN, retried). ABORT TASK with
 * the missing command's RefCmdSN also closes it (RFC 7143 11.5.1: the
 * command counts as received and is dropped when it comes). A command
 * held behind a hole whose connection ends is freed with its connection
 * (ErrorRecoveryLevel 0: tasks end with their connection) but its CmdSN
 * stays received, so the hole is never deepened. A hole nothing closes
 * lasts as long as the session: the initiator's command timeouts end it
 * (ABORT TASK, or session recovery).
 *
 * Threads and locking. Nothing here is locked: all of it runs on the
 * session's network thread. Every connection of a session is handed to
 * that thread at the end of login (targetd/net.c iscsi_conn_adopt), and a
 * connection being handed over parses no full-feature PDU on the thread
 * it leaves (conn_read stops at the handoff); backstore completions come
 * back to the thread that submitted (cmd->eng is the session thread's
 * engine); PREEMPT AND ABORT from another session reaches this one's
 * tasks through a message to this thread (targetd/pr_abort.c). The
 * session thus owns its ring, its task sets and its run queue outright.
 *
 * Starting later, never inside a loop. A command can become startable in
 * three ways: its data completes (iscsi_cmdsn_ready(), it starts at
 * once), a hole before it closes, or an older task of its set ends. The
 * last two happen in the middle of other work: delivering a run of held
 * commands, an abort loop freeing tasks (which must not start the very
 * task it is about to abort), or a completion. So they only put the task
 * on the session's run queue and post run_io, a deferred completion on
 * the session thread's own io_engine (no allocation, it cannot fail);
 * the run queue is drained from there, on a fresh stack, in the order the
 * tasks became startable. While run_io is pending the session is kept
 * (iscsi_cmdsn_busy(), checked by iscsi_session_put()).
 */
#include "config.h"
#include <stdatomic.h>
#include <stdlib.h>
#include "backstore/io_engine.h"
#include "targetd/cmdsn.h"
#include "targetd/cmd.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/net.h"

/* "Received, nothing to deliver." */
static struct iscsi_cmdsn_entry cmdsn_mark;

static void cmdsn_run(struct bs_io *io);

int iscsi_cmdsn_init(struct iscsi_session *s)
{
	struct iscsi_cmdsn *q = &s->cmdsn;
	unsigned cap = 1;

	while (cap < s->queue_depth)
		cap <<= 1;
	q->ring = calloc(cap, sizeof(*q->ring));
	if (!q->ring)
		return -1;
	q->cap = cap;
	q->held = 0;
	q->draining = false;
	list_init(&q->runq);
	memset(&q->run_io, 0, sizeof(q->run_io));
	q->run_io.done = cmdsn_run;
	q->run_posted = false;
	for (unsigned i = 0; i < SCSI_MAX_LUNS; i++)
		scsi_taskset_init(&q->ts[i]);
	return 0;
}

void iscsi_cmdsn_destroy(struct iscsi_session *s)
{
	free(s->cmdsn.ring);
	s->cmdsn.ring = NULL;
}

bool iscsi_cmdsn_busy(const struct iscsi_session *s)
{
	return s->cmdsn.run_posted;
}

static struct iscsi_cmdsn_entry **cmdsn_slot(struct iscsi_cmdsn *q, uint32_t sn)
{
	return &q->ring[sn & (q->cap - 1)];
}

/* sn above ExpCmdSN and within the ring's reach. */
static bool cmdsn_in_ring(const struct iscsi_session *s, uint32_t sn)
{
	uint32_t d = sn - s->exp_cmdsn;

	return d != 0 && d < s->cmdsn.cap;
}

bool iscsi_cmdsn_acceptable(struct iscsi_session *s, uint32_t sn)
{
	uint32_t max = iscsi_session_max_cmdsn(s);
	uint32_t sent = atomic_load_explicit(&s->max_cmdsn_sent, memory_order_relaxed);

	if (sn_lt(max, sent))
		max = sent;
	if (sn_lt(sn, s->exp_cmdsn) || sn_lt(max, sn))
		return false;
	if (sn == s->exp_cmdsn)
		return true;
	return cmdsn_in_ring(s, sn) && !*cmdsn_slot(&s->cmdsn, sn);
}

static void cmdsn_post_run(struct iscsi_session *s)
{
	struct iscsi_cmdsn *q = &s->cmdsn;

	if (q->run_posted)
		return;
	q->run_posted = true;
	io_engine_complete(s->thread->eng, &q->run_io);
}

/* t may be able to start: try from the run queue. */
static void cmdsn_runq_add(struct iscsi_task *t)
{
	if (!list_empty(&t->qlink))
		return;
	list_add_tail(&t->qlink, &t->sess->cmdsn.runq);
	cmdsn_post_run(t->sess);
}

/* t is QUEUED and delivered: answer it, run it, or leave it dormant. */
static void cmdsn_start(struct iscsi_task *t)
{
	if (t->parse_failed) {
		iscsi_task_respond(t);
		return;
	}
	if (scsi_task_in_set(&t->ts_entry) && !t->ts_entry.enabled)
		return;   /* dormant: its task set calls it back */
	iscsi_task_exec(t);
}

/* t reaches the SCSI layer: it enters its LUN's task set. */
static void cmdsn_deliver(struct iscsi_task *t)
{
	struct scsi_lun *lun = t->cmd.lun;

	t->sn_entry.state = CMDSN_DELIVERED;
	if (t->state != TASK_DATA_OUT && t->state != TASK_QUEUED)
		return;   /* already answered (Data-Out sequence error) */
	if (!t->parse_failed && lun && lun->id < SCSI_MAX_LUNS)
		scsi_taskset_enter(&t->sess->cmdsn.ts[lun->id], &t->ts_entry, t->cmd.task_attr);
	/* A command without a logical unit (REPORT LUNS to an unused LUN)
	 * has no task set and runs as soon as it is delivered. */
}

/* Deliver what waits at ExpCmdSN, in order, moving ExpCmdSN past it. */
static void cmdsn_drain(struct iscsi_session *s)
{
	struct iscsi_cmdsn *q = &s->cmdsn;

	if (q->draining)
		return;   /* the outer call goes on from the new ExpCmdSN */
	q->draining = true;
	while (q->held) {
		struct iscsi_cmdsn_entry **slot = cmdsn_slot(q, s->exp_cmdsn);
		struct iscsi_cmdsn_entry *e = *slot;

		if (!e)
			break;    /* a hole */
		*slot = NULL;
		q->held--;
		s->exp_cmdsn++;
		if (e != &cmdsn_mark) {
			struct iscsi_task *t = container_of(e, struct iscsi_task, sn_entry);

			cmdsn_deliver(t);
			if (t->state == TASK_QUEUED)
				cmdsn_runq_add(t);
		}
	}
	q->draining = false;
}

void iscsi_cmdsn_received(struct iscsi_session *s, uint32_t sn)
{
	struct iscsi_cmdsn_entry **slot;

	ASSERT_OWNER(s);
	if (sn == s->exp_cmdsn) {
		s->exp_cmdsn++;
		cmdsn_drain(s);
		return;
	}
	if (!cmdsn_in_ring(s, sn))
		return;   /* below ExpCmdSN (received already) or beyond the window */
	slot = cmdsn_slot(&s->cmdsn, sn);
	if (*slot)
		return;
	*slot = &cmdsn_mark;
	s->cmdsn.held++;
}

bool iscsi_cmdsn_take(struct iscsi_session *s, uint32_t sn)
{
	if (!iscsi_cmdsn_acceptable(s, sn))
		return false;
	iscsi_cmdsn_received(s, sn);
	return true;
}

bool iscsi_cmdsn_arrived(struct iscsi_task *t)
{
	struct iscsi_session *s = t->sess;
	struct iscsi_cmdsn_entry **slot;
	uint32_t sn = t->cmdsn;

	ASSERT_OWNER(s);
	t->sn_entry.sn = sn;
	if (t->immediate) {
		cmdsn_deliver(t);
		return true;
	}
	if (sn == s->exp_cmdsn) {
		s->exp_cmdsn++;
		cmdsn_deliver(t);
		cmdsn_drain(s);
		return true;
	}
	/* Another copy may have been taken while this one's data arrived. */
	slot = cmdsn_in_ring(s, sn) ? cmdsn_slot(&s->cmdsn, sn) : NULL;
	if (!slot || *slot) {
		t->sn_entry.state = CMDSN_NOT_RECEIVED;
		return false;
	}
	*slot = &t->sn_entry;
	s->cmdsn.held++;
	t->sn_entry.state = CMDSN_HELD;
	return true;
}

void iscsi_cmdsn_ready(struct iscsi_task *t)
{
	t->state = TASK_QUEUED;
	if (t->sn_entry.state == CMDSN_DELIVERED)
		cmdsn_start(t);
}

static void cmdsn_enabled(struct scsi_task_entry *e, void *arg)
{
	struct iscsi_task *t = container_of(e, struct iscsi_task, ts_entry);

	(void)arg;
	if (t->state == TASK_QUEUED)
		cmdsn_runq_add(t);
	/* else still collecting data: iscsi_cmdsn_ready() starts it */
}

void iscsi_cmdsn_done(struct iscsi_task *t)
{
	scsi_taskset_leave(&t->ts_entry, cmdsn_enabled, NULL);
}

void iscsi_cmdsn_forget(struct iscsi_task *t)
{
	struct iscsi_session *s = t->sess;

	if (t->sn_entry.state == CMDSN_HELD) {
		struct iscsi_cmdsn_entry **slot = cmdsn_slot(&s->cmdsn, t->sn_entry.sn);

		if (*slot == &t->sn_entry)
			*slot = &cmdsn_mark;   /* received: the CmdSN stays taken */
	} else if (t->sn_entry.state == CMDSN_NONE && !t->immediate && t->conn) {
		/* ended while its PDU was arriving: never leave a hole */
		iscsi_cmdsn_received(s, t->cmdsn);
	}
	t->sn_entry.state = CMDSN_NONE;
	scsi_taskset_leave(&t->ts_entry, cmdsn_enabled, NULL);
	if (!list_empty(&t->qlink))
		list_del(&t->qlink);
}

void iscsi_cmdsn_not_received(struct iscsi_task *t)
{
	t->sn_entry.state = CMDSN_NOT_RECEIVED;
}

/* run_io's completion: start what became startable, oldest first. */
static void cmdsn_run(struct bs_io *io)
{
	struct iscsi_cmdsn *q = container_of(io, struct iscsi_cmdsn, run_io);
	struct iscsi_session *s = container_of(q, struct iscsi_session, cmdsn);

	ASSERT_OWNER(s);   /* posted on the session's own I/O engine */
	/* Tasks made startable while this runs join the list and are taken
	 * in this same pass (run_posted stays set: no second post). */
	while (!list_empty(&q->runq)) {
		struct iscsi_task *t = list_entry(q->runq.next, struct iscsi_task, qlink);

		list_del(&t->qlink);
		if (t->state == TASK_QUEUED && t->sn_entry.state == CMDSN_DELIVERED)
			cmdsn_start(t);
	}
	q->run_posted = false;
	iscsi_session_put(s);   /* a closing session may end now */
}
