/*
 * Command traces (targetctl trace): every command of a target, or of one
 * of its LUNs, optionally of one initiator, written to a file in the
 * format of common/trace_format.h.
 *
 * DESIGN (threads): one trace at a time. The control thread starts and
 * stops it; a writer thread moves records from one ring per network
 * thread (plus one shared ring, under a mutex, for any other thread) to
 * the file. A network thread fills its own ring when a command ends
 * (iscsi_task_free: the status was sent, or it never will be) and never
 * waits: a record that does not fit is dropped and counted, and the
 * writer puts a DROPPED record in the file. The rings are single
 * producer, single consumer (head written by the producer, tail by the
 * writer, acquire/release). The file stops growing at max_bytes (what
 * does not fit is counted as dropped too); END closes it on stop.
 * Stopping unpublishes the trace, waits for every network thread to pass
 * a quiescent point (net_synchronize), drains the rings and frees them.
 * While no trace runs the data path pays one relaxed load.
 */
#ifndef TARGETD_TRACE_H
#define TARGETD_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct iscsi_task;
struct iscsi_target;

struct trace_params {
	struct iscsi_target *target;   /* required */
	int lun;                       /* -1: every LUN */
	const char *initiator;         /* NULL: every initiator */
	const char *path;              /* created; never an existing file */
	uint64_t max_bytes;            /* 0: TRACE_DEFAULT_MAX */
	bool data;                     /* CRC32C of the data moved */
	unsigned n_threads;            /* network threads (rings) */
};

#define TRACE_DEFAULT_MAX (64ull << 20)
#define TRACE_RING_BYTES (4u << 20)

struct trace_status {
	bool active;
	char path[4096];
	char target[224];
	int lun;
	char initiator[224];
	bool data;
	uint64_t max_bytes;
	uint64_t commands;             /* COMMAND records written to the file */
	uint64_t dropped;              /* not recorded: a ring was full */
	uint64_t dropped_full;         /* not recorded: the file reached max_bytes */
	uint64_t bytes;                /* file length */
	uint64_t started_real_ns;
};

extern _Atomic bool trace_running;

/* 0, or -1 with the reason in err (a trace runs already, the file exists,
 * cannot be created). */
int trace_start(const struct trace_params *p, char *err, size_t errlen);
/* Stop the trace: 0 with its final status, -1 when none runs. Not from a
 * network thread. */
int trace_stop(struct trace_status *out);
void trace_get_status(struct trace_status *out);

/* The data path: a task ends (before its buffer goes). */
void trace_task_end_slow(struct iscsi_task *t);
static inline void trace_task_end(struct iscsi_task *t)
{
	if (__builtin_expect(atomic_load_explicit(&trace_running, memory_order_relaxed), 0))
		trace_task_end_slow(t);
}

#endif
