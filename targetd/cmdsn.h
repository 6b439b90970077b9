/*
 * CmdSN order (RFC 7143 4.2.2.1): the session's reorder queue, through which
 * non-immediate commands reach the SCSI layer in CmdSN order whatever
 * connection they came on, and the gate that starts a command once its
 * data is in, its CmdSN turn has come and its task set allows it. See
 * targetd/cmdsn.c for the design.
 */
#ifndef TARGETD_CMDSN_H
#define TARGETD_CMDSN_H

#include <stdbool.h>
#include <stdint.h>
#include "backstore/backstore.h"
#include "scsi/scsi.h"
#include "scsi/taskset.h"
#include "common/util.h"

struct iscsi_session;
struct iscsi_task;

enum cmdsn_state {
	CMDSN_NONE = 0,       /* not arrived whole yet */
	CMDSN_HELD,           /* in the reorder queue, waiting for a lower CmdSN */
	CMDSN_DELIVERED,      /* handed to the SCSI layer (immediate: at once) */
	CMDSN_NOT_RECEIVED,   /* dropped (a copy, a data digest error): its
	                       * CmdSN is not this task's to count */
};

/* A command's place in its session's CmdSN order (in struct iscsi_task). */
struct iscsi_cmdsn_entry {
	uint32_t sn;
	uint8_t state;                 /* enum cmdsn_state */
};

/* Per session (in struct iscsi_session). */
struct iscsi_cmdsn {
	/* Received above ExpCmdSN: slot sn & (cap - 1) holds, for
	 * ExpCmdSN < sn < ExpCmdSN + cap, NULL (not received: a hole), a
	 * held command, or the "received, nothing to deliver" mark. */
	struct iscsi_cmdsn_entry **ring;
	unsigned cap;                  /* power of two >= queue depth */
	unsigned held;                 /* slots not NULL */
	bool draining;
	/* Tasks that may start now that their CmdSN turn came or their task
	 * set enabled them (through iscsi_task.qlink); run from run_io, a
	 * deferred completion on the session's thread. */
	struct list_head runq;
	struct bs_io run_io;
	bool run_posted;
	/* One SAM task set per LUN of this I_T nexus (scsi/taskset.c). */
	struct scsi_taskset ts[SCSI_MAX_LUNS];
};

/* At session creation (0, or -1 out of memory) and when it is freed. */
int iscsi_cmdsn_init(struct iscsi_session *s);
void iscsi_cmdsn_destroy(struct iscsi_session *s);
/* True while a run of the queue is pending: the session must not be freed. */
bool iscsi_cmdsn_busy(const struct iscsi_session *s);

/* May a non-immediate PDU with this CmdSN be taken? It must lie in the
 * window, from ExpCmdSN to the highest MaxCmdSN advertised, and not have
 * been received already; anything else is ignored silently. */
bool iscsi_cmdsn_acceptable(struct iscsi_session *s, uint32_t sn);
/* A non-immediate PDU that is acted on when it arrives (a command
 * answered TASK SET FULL; an ABORT TASK for a command that has not
 * arrived) was received with this CmdSN: ExpCmdSN moves past it once
 * every lower CmdSN is in. */
void iscsi_cmdsn_received(struct iscsi_session *s, uint32_t sn);
/* The one CmdSN check of a non-immediate NOP-Out, Text, Logout or task
 * management request, which act when they arrive: false if the PDU must
 * be ignored (iscsi_cmdsn_acceptable), else its CmdSN is received. */
bool iscsi_cmdsn_take(struct iscsi_session *s, uint32_t sn);

/* The command PDU of t and its immediate data arrived whole: an immediate
 * command is delivered now, a non-immediate one now or when the CmdSNs
 * below it are in. Returns false, taking nothing, for a copy of a command
 * already received (the caller drops it). */
bool iscsi_cmdsn_arrived(struct iscsi_task *t);
/* Every byte t needs is in (state becomes QUEUED): it runs, or is
 * answered if parsing failed, as soon as its CmdSN turn has come and its
 * task set lets it. */
void iscsi_cmdsn_ready(struct iscsi_task *t);
/* t's status is set: it leaves its task set (may let others start). */
void iscsi_cmdsn_done(struct iscsi_task *t);
/* t is being freed: off the reorder queue, its task set and the run
 * queue. Its CmdSN counts as received, also when the command ends before
 * its PDU was whole (its connection closed, ABORT TASK, a Data-Out
 * timeout), unless iscsi_cmdsn_not_received() said otherwise. */
void iscsi_cmdsn_forget(struct iscsi_task *t);
/* RFC 7143 7.8: a command whose immediate data failed its digest is
 * rejected and not received; its CmdSN stays open for the retry. */
void iscsi_cmdsn_not_received(struct iscsi_task *t);

#endif
