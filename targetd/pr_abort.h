/*
 * PREEMPT AND ABORT across network threads (pr_abort.c): the handler
 * given to scsi/pr.c, which aborts the preempted nexuses' tasks on the
 * threads that own their sessions.
 */
#ifndef TARGETD_PR_ABORT_H
#define TARGETD_PR_ABORT_H

#include <stdbool.h>
#include <stdint.h>
#include "scsi/scsi.h"

/* The PREEMPT AND ABORT handler given to scsi/pr.c. */
bool iscsi_pr_abort(struct scsi_cmd *by, struct scsi_nexus *const *victims, unsigned n,
		    uint16_t lun);

#endif
