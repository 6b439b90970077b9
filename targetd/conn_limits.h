/*
 * The resource limits of one connection (conn_limits.c; the limits
 * themselves: limits.h): output queued unsent, data buffers, Data-Out
 * that does not come.
 */
#ifndef TARGETD_CONN_LIMITS_H
#define TARGETD_CONN_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

struct iscsi_conn;
struct iscsi_task;

/* Past max_pending_tx_per_connection: stop reading (true). */
bool iscsi_conn_rx_throttled(struct iscsi_conn *c);
/* Output sent: read again once half of the limit is left. */
void iscsi_conn_rx_resume_check(struct iscsi_conn *c);
/* A data buffer of need bytes for t within the buffer limits (false: the
 * command gets TASK SET FULL). */
bool iscsi_task_get_buffer(struct iscsi_conn *c, struct iscsi_task *t, uint32_t need);
/* End the WRITEs that waited longer than data_out_timeout. */
void iscsi_conn_data_out_timer(struct iscsi_conn *c, uint64_t now_ms);

#endif
