/*
 * SAM task sets and task attributes.
 *
 * What a task set is here. The Control mode page reports TST = 001b: every
 * I_T nexus has its own task set on each logical unit (SPC-4 7.5.8), so
 * the order of one initiator's commands never waits for another's. It also
 * reports QAM = 1 (unrestricted reordering): SIMPLE commands may run in any
 * order and overlap, and the application client that needs an order asks
 * for it with ORDERED. (Data integrity of overlapping writers against
 * COMPARE AND WRITE is the LBA range lock's business, not the task set's.)
 *
 * The rules (SAM-5, task attributes), for a task entering or in the set:
 *   HEAD OF QUEUE  enabled when it enters.
 *   ORDERED        dormant until every older task in the set has ended.
 *   SIMPLE         dormant until every older HEAD OF QUEUE and ORDERED task
 *                  in the set has ended. Untagged tasks and the reserved
 *                  attribute codes are treated as SIMPLE.
 *   ACA            refused: an ACA condition can never exist, since NACA=1
 *                  in a CONTROL byte is refused (scsi/opcodes.c), and
 *                  SAM-5 ends an ACA command received without one with
 *                  CHECK CONDITION, ILLEGAL REQUEST, INVALID MESSAGE ERROR.
 * "Older" is the order in which tasks entered the set; the iSCSI transport
 * makes that CmdSN order (targetd/cmdsn.c).
 *
 * DESIGN (threads, cost). A task set belongs to one I_T nexus and is only
 * touched by the thread that owns the nexus's commands (for iSCSI: the
 * session's network thread), so there is no lock. The set never runs a
 * command: scsi_taskset_leave() reports what it enabled through a
 * callback and the transport starts those later, on a fresh stack (so an
 * abort loop never starts the task it is about to abort, and a chain of
 * commands that complete at once does not recurse).
 * Entering is O(1). Leaving is O(1) while no task is dormant (the usual
 * SIMPLE-only traffic); otherwise it walks the set from the oldest task
 * and stops at the first ORDERED or HEAD OF QUEUE task still present,
 * since nothing younger than that one can become enabled. A set holds at
 * most the session's commands in flight.
 */
#include "config.h"
#include "scsi/taskset.h"

void scsi_taskset_init(struct scsi_taskset *ts)
{
	list_init(&ts->tasks);
	ts->n_tasks = 0;
	ts->n_blocking = 0;
	ts->n_dormant = 0;
}

enum sense_reason scsi_task_attr_check(uint8_t attr)
{
	return attr == SCSI_TASK_ACA ? SR_INVALID_MESSAGE : SR_OK;
}

static uint8_t attr_normal(uint8_t attr)
{
	switch (attr) {
	case SCSI_TASK_ORDERED:
	case SCSI_TASK_HEAD_OF_QUEUE:
		return attr;
	default:
		return SCSI_TASK_SIMPLE;
	}
}

static bool attr_blocking(uint8_t attr)
{
	return attr == SCSI_TASK_ORDERED || attr == SCSI_TASK_HEAD_OF_QUEUE;
}

bool scsi_taskset_enter(struct scsi_taskset *ts, struct scsi_task_entry *e, uint8_t attr)
{
	e->attr = attr_normal(attr);
	e->set = ts;
	switch (e->attr) {
	case SCSI_TASK_HEAD_OF_QUEUE:
		e->enabled = true;
		break;
	case SCSI_TASK_ORDERED:
		e->enabled = ts->n_tasks == 0;
		break;
	default:
		e->enabled = ts->n_blocking == 0;
		break;
	}
	list_add_tail(&e->link, &ts->tasks);
	ts->n_tasks++;
	if (attr_blocking(e->attr))
		ts->n_blocking++;
	if (!e->enabled)
		ts->n_dormant++;
	return e->enabled;
}

void scsi_taskset_leave(struct scsi_task_entry *e, scsi_taskset_enable_fn fn, void *arg)
{
	struct scsi_taskset *ts = e->set;
	struct list_head *pos;
	bool older_any = false, older_blocking = false;

	if (!ts)
		return;
	list_del(&e->link);
	e->set = NULL;
	ts->n_tasks--;
	if (attr_blocking(e->attr))
		ts->n_blocking--;
	if (!e->enabled)
		ts->n_dormant--;
	e->enabled = false;
	if (!ts->n_dormant)
		return;
	list_for_each(pos, &ts->tasks) {
		struct scsi_task_entry *x = list_entry(pos, struct scsi_task_entry, link);

		if (!x->enabled &&
		    (x->attr == SCSI_TASK_ORDERED ? !older_any : !older_blocking)) {
			x->enabled = true;
			ts->n_dormant--;
			fn(x, arg);
		}
		older_any = true;
		if (attr_blocking(x->attr)) {
			older_blocking = true;
			break;   /* nothing younger can be enabled now */
		}
	}
}
