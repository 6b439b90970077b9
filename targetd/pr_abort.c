/*
 * PREEMPT AND ABORT across network threads (SPC-4 5.13.11.2.4): the tasks
 * of the preempted I_T nexuses on the LUN are aborted, as by ABORT TASK
 * SET, before the PERSISTENT RESERVE OUT command completes.
 *
 * DESIGN (threads): the preempted sessions live on any network thread, and
 * a session's tasks may be touched only by its own thread (conn.h). So
 * scsi/pr.c hands the preempted nexuses to iscsi_pr_abort() (under
 * target->lock, the sessions cannot go away meanwhile), which posts one
 * MSG_ASYNC per session to the thread owning it. Each owner thread aborts
 * that session's tasks on the LUN (queued and data-collecting tasks are
 * dropped, tasks in the backstore are marked aborted and end silently,
 * TAS=0) and establishes COMMANDS CLEARED BY ANOTHER INITIATOR for it when
 * it aborted anything. The last one posts back to the preempting command's
 * thread, which then completes the command with GOOD. So when the
 * initiator sees GOOD, no task of a preempted nexus can start any more.
 *
 * Narrower than an ideal array: backstore requests already submitted for
 * an aborted task are not recalled and may still reach the medium after
 * the PERSISTENT RESERVE OUT completes (the same holds for ABORT TASK SET
 * answered early). The job (one allocation per PREEMPT AND ABORT) is
 * freed on the preempting command's thread.
 */
#include "config.h"
#include <stdatomic.h>
#include <stdlib.h>
#include "scsi/pr.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/tmf.h"
#include "targetd/pr_abort.h"
#include "targetd/net.h"

struct pr_abort_job {
	struct net_async on_owner;     /* run on each preempted session's thread */
	struct net_async on_home;      /* run on the preempting command's thread */
	_Atomic unsigned left;
	struct scsi_cmd *by;
	struct net_thread *home;
	uint16_t lun;
};

static void pr_abort_finish(struct net_thread *t, struct net_async *a, uint64_t arg)
{
	struct pr_abort_job *j = container_of(a, struct pr_abort_job, on_home);
	struct scsi_cmd *cmd = j->by;

	free(j);
	scsi_cmd_done(cmd, SR_OK);
}

static void pr_abort_on_owner(struct net_thread *t, struct net_async *a, uint64_t sess_id)
{
	struct pr_abort_job *j = container_of(a, struct pr_abort_job, on_owner);
	struct list_head *pos;

	list_for_each(pos, &t->conns) {
		struct iscsi_conn *c = list_entry(pos, struct iscsi_conn, thread_link);
		struct iscsi_session *s = c->sess;

		if (!s || s->id != sess_id)
			continue;
		ASSERT_OWNER(s);
		if (iscsi_session_abort_lun(s, j->lun))
			atomic_fetch_or(&s->nexus.ua[j->lun], 1u << UA_COMMANDS_CLEARED);
		break;
	}
	if (atomic_fetch_sub(&j->left, 1) == 1)
		net_async(j->home, &j->on_home, 0);
}

bool iscsi_pr_abort(struct scsi_cmd *by, struct scsi_nexus *const *victims, unsigned n,
		    uint16_t lun)
{
	struct pr_abort_job *j;
	unsigned valid = 0;

	if (!net_self)
		return false;
	for (unsigned i = 0; i < n; i++)
		if (victims[i]->priv)
			valid++;
	if (!valid)
		return false;
	j = calloc(1, sizeof(*j));
	if (!j) {
		log_err("PREEMPT AND ABORT: out of memory, tasks of preempted nexuses not aborted");
		return false;
	}
	j->on_owner.fn = pr_abort_on_owner;
	j->on_home.fn = pr_abort_finish;
	atomic_init(&j->left, valid);
	j->by = by;
	j->home = net_self;
	j->lun = lun;
	/* j is freed on this thread, after this function returns */
	for (unsigned i = 0; i < n; i++) {
		struct iscsi_session *s = victims[i]->priv;

		if (s)
			net_async(s->thread, &j->on_owner, s->id);
	}
	return true;
}
