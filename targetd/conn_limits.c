/*
 * The resource limits of one connection (targetd.conf(5), RESOURCE
 * LIMITS; counters and the daemon-wide account in limits.c): pending
 * transmit bytes and the backpressure they cause, data buffers of its
 * commands, the Data-Out timeout.
 *
 * DESIGN: see conn.h and the top of conn.c. Everything here runs on the
 * connection's owning network thread.
 */
#include "config.h"
#include <sys/epoll.h>
#include "targetd/cmd.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/conn_limits.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"

/* Too much output queued: stop reading until half of it is sent. */
bool iscsi_conn_rx_throttled(struct iscsi_conn *c)
{
	uint64_t lim = target_runtime->res.max_pending_tx_per_connection;

	if (!lim || c->tx_bytes < lim)
		return false;
	if (!c->rx_paused) {
		c->rx_paused = true;
		limit_hit(LIM_PENDING_TX, "connection %s: %zu bytes of responses not read by the initiator; "
			  "not reading from it until they are", c->peer, c->tx_bytes);
		iscsi_conn_arm(c);
	}
	return true;
}

void iscsi_conn_rx_resume_check(struct iscsi_conn *c)
{
	if (!c->rx_paused || c->tx_bytes > target_runtime->res.max_pending_tx_per_connection / 2)
		return;
	c->rx_paused = false;
	iscsi_conn_arm(c);
	/* Bytes already in the receive buffer raise no event: read them on
	 * the next turn of the loop. */
	if (list_empty(&c->kick_link))
		list_add_tail(&c->kick_link, &c->thread->kick);
}

/* A data buffer for a command, within max_buffer_per_connection and
 * max_buffer_total (false: TASK SET FULL). */
bool iscsi_task_get_buffer(struct iscsi_conn *c, struct iscsi_task *t, uint32_t need)
{
	uint32_t acct = ALIGN_UP(need, 4096u);
	uint64_t per_conn = target_runtime->res.max_buffer_per_connection;

	if (per_conn && c->buf_bytes + acct > per_conn) {
		limit_hit(LIM_BUFFER_PER_CONNECTION, "connection %s: %zu bytes of data buffers held, "
			  "a command needs %u more; TASK SET FULL", c->peer, c->buf_bytes, acct);
		return false;
	}
	if (!limit_buffer_reserve(acct, target_runtime->res.max_buffer_total)) {
		limit_hit(LIM_BUFFER_TOTAL, "%llu bytes of data buffers held by all connections, %s "
			  "needs %u more; TASK SET FULL", (unsigned long long)limit_buffer_used(), c->peer, acct);
		return false;
	}
	t->bb = bufpool_get(&c->thread->pool, need);
	if (!t->bb) {
		limit_buffer_release(acct);
		return false;
	}
	t->buf_acct = acct;
	c->buf_bytes += acct;
	t->cmd.buf = t->bb->data;
	t->cmd.buf_cap = (uint32_t)t->bb->cap;
	return true;
}

/* data_out_timeout (SPC-4 4B/06 INITIATOR RESPONSE TIMEOUT): a WRITE that
 * still lacks data that long after it arrived ends with CHECK CONDITION
 * and its buffer is given back at once. Counted from the command, not
 * from the last Data-Out: a peer trickling data cannot hold a buffer
 * longer. */
void iscsi_conn_data_out_timer(struct iscsi_conn *c, uint64_t now)
{
	struct iscsi_session *s = c->sess;
	uint64_t tmo = (uint64_t)target_runtime->res.data_out_timeout * 1000;

	if (!tmo)
		return;
	for (unsigned i = 0; i < s->n_tasks; i++) {
		struct iscsi_task *t = &s->tasks[i];

		if (t->state != TASK_DATA_OUT || t->conn != c || t->parse_failed ||
		    now - t->data_wait_ms <= tmo)
			continue;
		limit_hit(LIM_DATA_OUT_TIMEOUT, "connection %s: ITT %#x got %u of %u bytes of Data-Out in "
			  "%u s; ended with CHECK CONDITION", c->peer, t->itt, t->stored, t->want,
			  target_runtime->res.data_out_timeout);
		iscsi_task_hash_del(t);
		iscsi_task_drop_buffer(t);
		t->parse_failed = true;
		t->want = 0;
		t->rsp_flags = ISCSI_FLAG_UNDERFLOW;
		t->resid = t->edtl_in;
		scsi_cmd_set_result(&t->cmd, SR_INITIATOR_RESPONSE_TIMEOUT);
		iscsi_task_respond(t);
	}
}
