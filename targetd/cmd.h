/*
 * The full-feature command path of the iSCSI transport (cmd.c): SCSI
 * Command and Data-Out PDUs, R2Ts, a task into the SCSI layer and its
 * response.
 */
#ifndef TARGETD_CMD_H
#define TARGETD_CMD_H

struct iscsi_conn;
struct iscsi_task;
struct scsi_cmd;

/* The PDU reader (conn.c): a SCSI Command's header is in (sets where its
 * immediate data goes), then the whole PDU. */
void iscsi_cmd_rx_header(struct iscsi_conn *c);
void iscsi_cmd_rx_done(struct iscsi_conn *c);
/* The same for a Data-Out PDU (RFC 7143 11.7). */
void iscsi_cmd_rx_data_out_header(struct iscsi_conn *c);
void iscsi_cmd_rx_data_out_done(struct iscsi_conn *c);

/* A task whose turn has come (CmdSN order, task set) goes to the SCSI
 * layer. */
void iscsi_task_exec(struct iscsi_task *t);
/* The SCSI layer's completion (scsi_cmd.done), on the owning thread. */
void iscsi_cmd_complete_cb(struct scsi_cmd *cmd);
/* Queue the task's Data-In and SCSI Response. */
void iscsi_task_respond(struct iscsi_task *t);

#endif
