/*
 * Task management (tmf.c, RFC 7143 11.5, SAM-5 7): ABORT TASK, ABORT TASK
 * SET, CLEAR TASK SET, LUN RESET, TARGET WARM/COLD RESET, and the aborts
 * PREEMPT AND ABORT asks for.
 */
#ifndef TARGETD_TMF_H
#define TARGETD_TMF_H

#include <stdint.h>

struct iscsi_conn;
struct iscsi_session;
struct iscsi_task;

void iscsi_tmf_rx(struct iscsi_conn *c);
void iscsi_tmf_task_aborted(struct iscsi_task *t);
/* Abort every task of a session on one LUN, as ABORT TASK SET does but with
 * no TMF response (PREEMPT AND ABORT). Returns how many were aborted. */
unsigned iscsi_session_abort_lun(struct iscsi_session *s, uint64_t lun);

#endif
