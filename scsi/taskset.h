/*
 * SAM task sets: which commands of a task set may run now, from their task
 * attributes (SAM-5 task attributes: SIMPLE, ORDERED, HEAD OF QUEUE, ACA).
 * See scsi/taskset.c for the rules and the design.
 */
#ifndef SCSI_TASKSET_H
#define SCSI_TASKSET_H

#include <stdbool.h>
#include <stdint.h>
#include "scsi/scsi.h"
#include "common/util.h"

/* Task attribute codes. The values are those of the iSCSI ATTR field
 * (RFC 7143 11.3.1), which the iSCSI transport stores in
 * scsi_cmd.task_attr as it is; 5 to 7 are reserved there. */
enum scsi_task_attr {
	SCSI_TASK_UNTAGGED = 0,        /* run as SIMPLE */
	SCSI_TASK_SIMPLE = 1,
	SCSI_TASK_ORDERED = 2,
	SCSI_TASK_HEAD_OF_QUEUE = 3,
	SCSI_TASK_ACA = 4,
};

/* One command's place in a task set; embedded in the transport's command. */
struct scsi_task_entry {
	struct list_head link;         /* in set->tasks, oldest first */
	struct scsi_taskset *set;      /* NULL while not in a task set */
	uint8_t attr;                  /* SIMPLE, ORDERED or HEAD_OF_QUEUE */
	bool enabled;                  /* may run (else dormant) */
};

/* The task set of one I_T nexus on one logical unit (TST = 001b). */
struct scsi_taskset {
	struct list_head tasks;        /* every task in the set, oldest first */
	unsigned n_tasks;
	unsigned n_blocking;           /* ORDERED and HEAD OF QUEUE tasks */
	unsigned n_dormant;
};

/* Called by scsi_taskset_leave() for each task it enables. */
typedef void (*scsi_taskset_enable_fn)(struct scsi_task_entry *e, void *arg);

void scsi_taskset_init(struct scsi_taskset *ts);
/* SR_OK if a command with this task attribute may enter a task set, else
 * the reason to end it with (ACA: no ACA condition can exist, NACA=1 is
 * refused). Reserved codes run as SIMPLE. */
enum sense_reason scsi_task_attr_check(uint8_t attr);
/* The command becomes the newest task of ts. Returns true when it is
 * enabled at once, false when it is dormant. */
bool scsi_taskset_enter(struct scsi_taskset *ts, struct scsi_task_entry *e, uint8_t attr);
/* The task ended (completed or aborted) and leaves its set (no-op when it
 * is in none). fn(e, arg) is called for each dormant task that this
 * enables, oldest first; fn may only take note (it must not make a task
 * of this set enter or leave: the caller runs the enabled tasks later). */
void scsi_taskset_leave(struct scsi_task_entry *e, scsi_taskset_enable_fn fn, void *arg);

static inline bool scsi_task_in_set(const struct scsi_task_entry *e)
{
	return e->set != NULL;
}

#endif
