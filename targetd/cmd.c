/*
 * The full-feature command path of the iSCSI transport (RFC 7143): a SCSI
 * Command PDU admitted to the CmdSN window and given a task, its
 * immediate and unsolicited data, the R2Ts that ask for the rest and the
 * Data-Out PDUs that answer them; the task handed to the SCSI layer in
 * CmdSN and task set order (cmdsn.c); its completion, Data-In and SCSI
 * Response queued on its connection.
 *
 * DESIGN: everything here runs on the owning network thread of the task's
 * session (conn.h). The PDU reader (conn.c) calls the rx functions once a
 * header, then once the whole PDU, is in; a task's PDUs go out through the
 * connection's transmit queue (iscsi_conn_queue_task).
 */
#include "config.h"
#include <stdlib.h>
#include "scsi/fault.h"
#include "targetd/cmd.h"
#include "targetd/cmdsn.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/tmf.h"
#include "targetd/conn_limits.h"
#include "targetd/limits.h"
#include "targetd/net.h"

static void task_ready(struct iscsi_task *t);

static void queue_task_set_full(struct iscsi_conn *c, uint32_t itt)
{
	struct tx_pdu *p = iscsi_pdu_new(ISCSI_OP_SCSI_RSP, 0);

	if (!p)
		return;
	p->bhs[3] = SAM_STAT_TASK_SET_FULL;
	put_be32(p->bhs + 16, itt);
	p->set_statsn = p->advance_statsn = true;
	iscsi_conn_queue_pdu(c, p);
}

/*
 * SCSI Command PDU (RFC 7143 11.2), in steps: admit it (session type,
 * lengths, an ABORT TASK that came first, the CmdSN window), take a task,
 * fill the task and its SCSI command from the header and the AHS, parse the
 * CDB, size the transfer against the expected data transfer length, then
 * get the buffer the immediate data lands in.
 */

/* False when the PDU is not to be executed (the connection may be closing). */
static bool rx_cmd_admit(struct iscsi_conn *c, bool immediate, uint32_t cmdsn, uint32_t edtl)
{
	struct iscsi_session *s = c->sess;
	const uint8_t *b = c->bhs;
	bool wbit = b[1] & ISCSI_CMD_WRITE;

	if (s->discovery) {
		iscsi_conn_fatal(c, ISCSI_REJECT_PROTOCOL_ERROR, "SCSI command in a discovery session");
		return false;
	}
	if (c->dlen > c->max_recv_dsl) {
		iscsi_conn_fatal(c, ISCSI_REJECT_PROTOCOL_ERROR, "immediate data longer than MaxRecvDataSegmentLength");
		return false;
	}
	if (c->dlen && (!s->params.immediate_data || !wbit || c->dlen > s->params.first_burst ||
			c->dlen > edtl)) {
		iscsi_conn_fatal(c, ISCSI_REJECT_PROTOCOL_ERROR, "unexpected immediate data");
		return false;
	}
	for (unsigned i = 0; !immediate && i < s->n_aborted_ahead; i++) {
		if (s->aborted_ahead[i].cmdsn == cmdsn && s->aborted_ahead[i].itt == bhs_itt(b)) {
			/* ABORT TASK got here first: drop it, data and all */
			s->aborted_ahead[i] = s->aborted_ahead[--s->n_aborted_ahead];
			c->rx_keep = 0;
			return false;
		}
	}
	if (!immediate && !iscsi_cmdsn_acceptable(s, cmdsn)) {
		/* Silently ignored, data and all. */
		log_debug("CmdSN %u outside window [%u, %u]", cmdsn, s->exp_cmdsn, iscsi_session_max_cmdsn(s));
		c->rx_keep = 0;
		return false;
	}
	return true;
}

/* The task and its command from the header; the CDB from the BHS and the
 * Extended CDB AHS (RFC 7143 11.2.1.3, type 1). */
static void rx_cmd_init(struct iscsi_conn *c, struct iscsi_task *t, uint32_t cmdsn, uint32_t edtl)
{
	struct iscsi_session *s = c->sess;
	const uint8_t *b = c->bhs;
	struct scsi_cmd *cmd;
	bool rbit = b[1] & ISCSI_CMD_READ, wbit = b[1] & ISCSI_CMD_WRITE;

	t->conn = c;
	c->refs++;
	t->itt = bhs_itt(b);
	t->cmdsn = cmdsn;
	t->bhs_flags = b[1];
	memcpy(t->lun_raw, b + 8, 8);
	cmd = &t->cmd;
	cmd->nexus = &s->nexus;
	cmd->lun_id = iscsi_lun_decode(b + 8);
	memcpy(cmd->cdb, b + 32, 16);
	cmd->cdb_len = 16;
	cmd->task_attr = b[1] & ISCSI_CMD_ATTR_MASK;
	cmd->exp_xfer_len = edtl;
	cmd->exp_dir = rbit && wbit ? SCSI_DIR_BIDI : wbit ? SCSI_DIR_WRITE : rbit ? SCSI_DIR_READ : SCSI_DIR_NONE;
	cmd->eng = c->thread->eng;
	cmd->complete = iscsi_cmd_complete_cb;
	cmd->zc_ok = !c->ddigest;   /* a data digest needs the bytes in hand */
	scsi_cmd_arrived(cmd);   /* latency: receipt to status */

	uint32_t ahs_len = bhs_ahs_len(b);
	for (uint32_t off = 0; off + 4 <= ahs_len;) {
		uint16_t alen = get_be16(c->ahs + off);
		uint8_t type = c->ahs[off + 2];
		if (type == 1 && alen > 1 && 16u + alen - 1 <= SCSI_MAX_CDB && off + 3u + alen <= ahs_len) {
			memcpy(cmd->cdb + 16, c->ahs + off + 4, alen - 1u);
			cmd->cdb_len = (uint8_t)(16 + alen - 1);
		}
		off += ALIGN_UP(alen + 3u, 4u);
	}

	t->edtl_in = wbit ? edtl : 0;
	/* Unsolicited data: immediate data plus, with InitialR2T=No, Data-Out
	 * PDUs up to FirstBurstLength unless the F bit says none follow. */
	uint32_t unsol = c->dlen;
	if (wbit && !s->params.initial_r2t && !(b[1] & ISCSI_FLAG_FINAL))
		unsol = MIN(s->params.first_burst, edtl);
	t->unsol_left = unsol - c->dlen;
	t->unsol_done = t->unsol_left == 0;
}

/* Parse the CDB; a command that cannot run is answered once its data is in. */
static void rx_cmd_parse(struct iscsi_task *t)
{
	struct scsi_cmd *cmd = &t->cmd;

	if (cmd->exp_dir == SCSI_DIR_BIDI) {
		t->parse_failed = true;
		scsi_cmd_set_result(cmd, scsi_invalid_cdb(cmd, 0, -1));
	} else if (scsi_cmd_parse(cmd) != SR_OK) {
		t->parse_failed = true;
	} else if (scsi_task_attr_check(cmd->task_attr) != SR_OK) {
		t->parse_failed = true;   /* ACA (scsi/taskset.c) */
		scsi_cmd_set_result(cmd, scsi_task_attr_check(cmd->task_attr));
	}
}

/* The WRITE's transfer against the expected data transfer length (EDTL). */
static void rx_cmd_size(struct iscsi_task *t, bool wbit, uint32_t edtl)
{
	struct scsi_cmd *cmd = &t->cmd;

	if (!t->parse_failed && cmd->dir == SCSI_DIR_WRITE) {
		if (cmd->xfer_len > t->edtl_in) {
			/* EDTL shorter than the CDB's transfer (FCP-4 9.4.2 a):
			 * a plain WRITE writes the whole blocks the initiator
			 * sends, with the overflow reported; anything else (or
			 * a partial block) is refused without touching data. */
			t->rsp_flags = ISCSI_FLAG_OVERFLOW;
			t->resid = cmd->xfer_len - t->edtl_in;
			if (scsi_cmd_shrink_dataout(cmd, t->edtl_in)) {
				t->want = cmd->xfer_len;
			} else {
				t->parse_failed = true;
				scsi_cmd_set_result(cmd, SR_INVALID_FIELD_IU);
			}
		} else {
			t->want = cmd->xfer_len;
			if (cmd->xfer_len < t->edtl_in) {
				t->rsp_flags = ISCSI_FLAG_UNDERFLOW;
				t->resid = t->edtl_in - cmd->xfer_len;
			}
		}
	} else if (t->parse_failed && wbit && edtl) {
		/* Nothing was transferred. */
		t->rsp_flags = ISCSI_FLAG_UNDERFLOW;
		t->resid = edtl;
	}
}

void iscsi_cmd_rx_header(struct iscsi_conn *c)
{
	struct iscsi_session *s = c->sess;
	const uint8_t *b = c->bhs;
	bool immediate = bhs_immediate(b);
	uint32_t cmdsn = get_be32(b + 24);
	uint32_t edtl = get_be32(b + 20);
	struct iscsi_task *t;
	struct scsi_cmd *cmd;

	if (!rx_cmd_admit(c, immediate, cmdsn, edtl))
		return;
	t = iscsi_task_alloc(s, immediate);
	if (!t) {
		limit_hit(LIM_QUEUE_DEPTH, "connection %s: all %u tasks of the session in use; TASK SET FULL",
			  c->peer, s->n_tasks);
		if (!immediate)
			iscsi_cmdsn_received(s, cmdsn);
		queue_task_set_full(c, bhs_itt(b));
		c->rx_keep = 0;
		return;
	}
	rx_cmd_init(c, t, cmdsn, edtl);
	rx_cmd_parse(t);
	rx_cmd_size(t, b[1] & ISCSI_CMD_WRITE, edtl);
	cmd = &t->cmd;

	/* Buffer: data-in or data-out of the command. */
	uint32_t need = t->parse_failed ? 0 : scsi_cmd_buf_need(cmd);
	if (need && !iscsi_task_get_buffer(c, t, need)) {
		t->parse_failed = true;
		t->want = 0;
		scsi_cmd_set_result(cmd, SR_TASK_SET_FULL);
	}
	if (t->parse_failed)
		t->want = 0;

	iscsi_task_hash_add(t);
	t->state = TASK_DATA_OUT;
	t->data_wait_ms = c->thread->now_ms;
	t->next_r2t_off = 0;
	/* Immediate data lands in the buffer. */
	c->rx_task = t;
	c->rx_task_off = 0;
	c->rx_data = cmd->buf;
	c->rx_keep = MIN(c->dlen, t->want);
	t->exp_datasn = 0;
}

/* After the SCSI Command PDU (and its immediate data) has arrived. */
void iscsi_cmd_rx_done(struct iscsi_conn *c)
{
	struct iscsi_task *t = c->rx_task;

	if (!t)
		return;
	if (c->data_digest_bad) {
		/* RFC 7143 7.8: discard, the initiator retries via Reject;
		 * the CmdSN of a rejected command is not received */
		iscsi_conn_reject(c, ISCSI_REJECT_DATA_DIGEST, c->bhs);
		iscsi_cmdsn_not_received(t);
		iscsi_task_hash_del(t);
		iscsi_task_free(t);
		return;
	}
	t->received = c->dlen;
	t->stored = MIN(c->dlen, t->want);
	t->r2t_sent_off = MIN(c->dlen + t->unsol_left, t->want);
	if (!iscsi_cmdsn_arrived(t)) {
		/* a copy of a command received meanwhile: ignored */
		iscsi_task_hash_del(t);
		iscsi_task_free(t);
		return;
	}
	task_ready(t);
}

/* Decide what a task in DATA_OUT needs next: more R2Ts, wait, or run. */
static void task_ready(struct iscsi_task *t)
{
	struct iscsi_session *s = t->sess;

	if (t->stored >= t->want) {
		/* Everything needed is here; later unsolicited Data-Out for
		 * this ITT finds no task and is dropped. */
		iscsi_task_hash_del(t);
		t->cmd.buf_len = t->stored;
		iscsi_conn_unqueue_task(t);     /* R2Ts not laid out yet are not needed */
		iscsi_cmdsn_ready(t);   /* runs in CmdSN and task set order */
		return;
	}
	if (unlikely(t->cmd.xfault & SCSI_FAULT_X_NO_R2T))
		return;   /* fault injection: the data is never asked for */
	/* Solicit what the unsolicited burst did not cover. */
	if (t->unsol_done && t->r2t_sent_off < t->want &&
	    t->r2t_outstanding < s->params.max_outstanding_r2t && !t->r2t_pending) {
		t->r2t_pending = true;
		iscsi_conn_queue_task(t);
	}
}

void iscsi_cmd_rx_data_out_header(struct iscsi_conn *c)
{
	struct iscsi_session *s = c->sess;
	const uint8_t *b = c->bhs;
	struct iscsi_task *t = iscsi_task_find(s, bhs_itt(b));
	uint32_t ttt = get_be32(b + 20);
	uint32_t datasn = get_be32(b + 36);
	uint32_t off = get_be32(b + 40);

	if (c->dlen > c->max_recv_dsl) {
		iscsi_conn_fatal(c, ISCSI_REJECT_PROTOCOL_ERROR, "Data-Out longer than MaxRecvDataSegmentLength");
		return;
	}
	c->rx_keep = 0;
	if (!t || t->state != TASK_DATA_OUT) {
		/* A task that was aborted or answered already: drop the data. */
		c->rx_task = NULL;
		return;
	}
	if (ttt == ISCSI_RSVD_TAG) {
		if (t->unsol_done || c->dlen > t->unsol_left) {
			iscsi_conn_fatal(c, ISCSI_REJECT_PROTOCOL_ERROR, "unexpected unsolicited Data-Out");
			return;
		}
	} else if ((ttt & 0xffff0000u) != t->ttt_base) {
		iscsi_conn_fatal(c, ISCSI_REJECT_INVALID_FIELD, "Data-Out with unknown Target Transfer Tag");
		return;
	}
	if (datasn != t->exp_datasn || off != t->received || (uint64_t)off + c->dlen > t->edtl_in) {
		/* ERL 0 cannot recover within the command: end it with
		 * ABORTED COMMAND, drop its remaining data, keep the
		 * connection (RFC 7143 7.1.4.1). */
		log_info("connection %s: Data-Out out of sequence (DataSN %u, offset %u), ITT %#x aborted",
			 c->peer, datasn, off, t->itt);
		c->rx_task = NULL;
		iscsi_task_hash_del(t);
		t->parse_failed = true;
		t->want = 0;
		scsi_cmd_set_result(&t->cmd, SR_DATA_PHASE_ERROR);
		iscsi_task_respond(t);
		return;
	}
	c->rx_task = t;
	c->rx_task_off = off;
	if (off < t->want) {
		c->rx_data = t->cmd.buf + off;
		c->rx_keep = MIN(c->dlen, t->want - off);
	}
}

void iscsi_cmd_rx_data_out_done(struct iscsi_conn *c)
{
	struct iscsi_task *t = c->rx_task;
	const uint8_t *b = c->bhs;
	bool final = b[1] & ISCSI_FLAG_FINAL;

	if (!t)
		return;
	if (c->data_digest_bad) {
		/* At ERL 0 a data digest error on Data-Out ends the connection
		 * (no recovery R2T): RFC 7143 7.8. */
		iscsi_conn_reject(c, ISCSI_REJECT_DATA_DIGEST, c->bhs);
		iscsi_conn_flush(c);
		iscsi_conn_close(c, "data digest error");
		return;
	}
	t->received += c->dlen;
	t->stored = MIN(t->received, t->want);
	t->exp_datasn++;
	if (get_be32(b + 20) == ISCSI_RSVD_TAG) {
		t->unsol_left -= c->dlen;
		if (final || !t->unsol_left) {
			t->unsol_done = true;
			t->unsol_left = 0;
			t->exp_datasn = 0;
			t->r2t_sent_off = MIN(t->received, t->want);
		}
	} else if (final) {
		if (t->r2t_outstanding)
			t->r2t_outstanding--;
		t->exp_datasn = 0;
	}
	task_ready(t);
}

void iscsi_task_exec(struct iscsi_task *t)
{
	struct iscsi_session *s = t->sess;

	TASK_ASSERT(t, t->state == TASK_DATA_OUT || t->state == TASK_QUEUED);
	/* Data that came before the R2Ts were laid out (a guessed TTT)
	 * leaves R2Ts nobody needs: they are not sent. */
	iscsi_conn_unqueue_task(t);
	t->state = TASK_EXEC;
	s->exec_count++;
	if (!scsi_cmd_execute(&t->cmd)) {
		s->exec_count--;
		iscsi_task_respond(t);
	}
}

void iscsi_cmd_complete_cb(struct scsi_cmd *cmd)
{
	struct iscsi_task *t = container_of(cmd, struct iscsi_task, cmd);

	ASSERT_OWNER(t->sess);   /* the backstore completes on the owning thread */
	t->sess->exec_count--;
	if (t->state == TASK_ABORTED || t->conn->dead) {
		iscsi_tmf_task_aborted(t);
		return;
	}
	iscsi_task_respond(t);
}

void iscsi_task_respond(struct iscsi_task *t)
{
	struct scsi_cmd *cmd = &t->cmd;

	iscsi_cmdsn_done(t);
	scsi_cmd_respond(cmd);
	t->sess->stat_cmds++;
	if (cmd->status != SAM_STAT_GOOD)
		t->sess->stat_not_good++;
	else if (cmd->dir == SCSI_DIR_READ)
		t->sess->stat_in_bytes += cmd->data_len;
	else if (cmd->dir == SCSI_DIR_WRITE)
		t->sess->stat_out_bytes += cmd->buf_len;
	TASK_ASSERT(t, TASK_LIVE(t));
	if (t->conn->dead) {
		iscsi_task_free(t);
		return;
	}
	/* Queued for R2Ts still (it ended while collecting data): its status
	 * goes at the end of the queue instead. */
	iscsi_conn_unqueue_task(t);
	t->state = TASK_RESPOND;
	t->tx_off = 0;
	t->tx_len = 0;
	if (!t->parse_failed && cmd->dir == SCSI_DIR_READ) {
		uint32_t n = MIN(cmd->data_len, cmd->xfer_len);
		uint32_t edtl = cmd->exp_dir == SCSI_DIR_READ ? cmd->exp_xfer_len : 0;
		if (n > edtl) {
			t->tx_len = edtl;
			t->rsp_flags = ISCSI_FLAG_OVERFLOW;
			t->resid = n - edtl;
		} else {
			t->tx_len = n;
			if (n < edtl) {
				t->rsp_flags = ISCSI_FLAG_UNDERFLOW;
				t->resid = edtl - n;
			}
		}
	} else if (cmd->dir == SCSI_DIR_NONE || (t->parse_failed && cmd->exp_dir == SCSI_DIR_READ)) {
		if (cmd->exp_xfer_len && !t->rsp_flags) {
			t->rsp_flags = ISCSI_FLAG_UNDERFLOW;
			t->resid = cmd->exp_xfer_len;
		}
	}
	iscsi_conn_queue_task(t);
}
