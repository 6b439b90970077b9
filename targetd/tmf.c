/*
 * Task management (RFC 7143 11.5-11.6, SAM-5 7): ABORT TASK, ABORT TASK
 * SET, CLEAR TASK SET, LUN RESET, TARGET WARM RESET, TARGET COLD RESET.
 *
 * DESIGN: runs on the session's thread. Tasks still collecting data are
 * dropped at once; tasks inside the SCSI layer are marked ABORTED (their
 * cmd.aborted flag tells long-running handlers to stop early) and the TMF
 * response is sent only once every one of them has come back from the
 * backstore, so the initiator never sees a response for an aborted task
 * after the TMF response, and never a write landing after it.
 */
#include "config.h"
#include <stdlib.h>
#include "scsi/stats.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/tmf.h"
#include "targetd/net.h"
#include "targetd/target.h"

/* A TMF Request being answered: it waits for the tasks it aborted that
 * are still in the backstore (iscsi_task.tmf_wait). */
struct iscsi_tmf {
	struct iscsi_session *sess;
	struct iscsi_conn *conn;
	uint8_t bhs[ISCSI_BHS_LEN];
	unsigned waiting;              /* aborted tasks still in the backstore */
	uint8_t response;
	bool close_after;              /* cold reset: drop the connection after */
};

static void tmf_send(struct iscsi_tmf *m)
{
	struct iscsi_conn *c = m->conn;
	struct tx_pdu *p;

	if (c && !c->dead) {
		p = iscsi_pdu_new(ISCSI_OP_TMF_RSP, 0);
		if (p) {
			p->bhs[2] = m->response;
			put_be32(p->bhs + 16, bhs_itt(m->bhs));
			p->set_statsn = p->advance_statsn = true;
			p->close_after = m->close_after;
			iscsi_conn_queue_pdu(c, p);
		}
	}
	if (c) {
		c->refs--;
		iscsi_conn_release(c);
	}
	free(m);
}

/* An aborted task came back from the SCSI layer (or its connection died). */
void iscsi_tmf_task_aborted(struct iscsi_task *t)
{
	struct iscsi_tmf *m = t->tmf_wait;

	t->tmf_wait = NULL;
	iscsi_task_free(t);
	if (m && --m->waiting == 0)
		tmf_send(m);
}

/* Abort one task for m. Returns true if it was found in a state that the
 * abort affects. */
static void abort_task(struct iscsi_task *t, struct iscsi_tmf *m)
{
	switch (t->state) {
	case TASK_DATA_OUT:
	case TASK_QUEUED:
		scsi_cmd_abort(&t->cmd, false);
		iscsi_task_free(t);
		break;
	case TASK_EXEC:
		scsi_cmd_abort(&t->cmd, true);
		t->state = TASK_ABORTED;
		if (m && !t->tmf_wait) {
			t->tmf_wait = m;
			m->waiting++;
		}
		break;
	default:
		/* RESPOND: the status is already on its way; ABORTED: pending */
		break;
	}
}

static bool task_on_lun(const struct iscsi_task *t, uint64_t lun)
{
	return t->cmd.lun_id == lun;
}

/* Abort this session's tasks on one LUN; m (if any) waits for them. */
static void abort_lun_tasks(struct iscsi_session *s, uint64_t lun, struct iscsi_tmf *m)
{
	for (unsigned i = 0; i < s->n_tasks; i++) {
		struct iscsi_task *x = &s->tasks[i];
		if (TASK_LIVE(x) && task_on_lun(x, lun))
			abort_task(x, m);
	}
}

unsigned iscsi_session_abort_lun(struct iscsi_session *s, uint64_t lun)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->n_tasks; i++) {
		struct iscsi_task *x = &s->tasks[i];

		if (TASK_LIVE(x) && x->state != TASK_ABORTED &&
		    x->state != TASK_RESPOND && task_on_lun(x, lun)) {
			/* iscsi_task_free() redirects a half-received Data-Out */
			abort_task(x, NULL);
			n++;
		}
	}
	return n;
}

void iscsi_tmf_rx(struct iscsi_conn *c)
{
	struct iscsi_session *s = c->sess;
	const uint8_t *b = c->bhs;
	uint8_t func = b[1] & 0x7f;
	uint32_t rtt = get_be32(b + 20);
	uint64_t lun = iscsi_lun_decode(b + 8);
	struct iscsi_tmf *m;
	struct scsi_lun *sl = NULL;

	if (!bhs_immediate(b) && !iscsi_cmdsn_take(s, get_be32(b + 24)))
		return;
	m = calloc(1, sizeof(*m));
	if (!m) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	m->sess = s;
	m->conn = c;
	c->refs++;
	memcpy(m->bhs, b, ISCSI_BHS_LEN);
	m->response = ISCSI_TMF_RSP_COMPLETE;
	m->waiting = 1;    /* held until the end of this function */
	if (s->discovery) {
		m->response = ISCSI_TMF_RSP_NOT_SUPPORTED;
		goto done;
	}
	if (lun < SCSI_MAX_LUNS)
		sl = scsi_target_lun(&s->target->st, lun);

	switch (func) {
	case ISCSI_TMF_ABORT_TASK: {
		struct iscsi_task *t = NULL;
		for (unsigned i = 0; i < s->n_tasks; i++) {
			struct iscsi_task *x = &s->tasks[i];
			if (TASK_LIVE(x) && x->state != TASK_ABORTED && x->itt == rtt) {
				t = x;
				break;
			}
		}
		if (t && t->state != TASK_RESPOND) {
			abort_task(t, m);
		} else if (!t && sn_le(s->exp_cmdsn, get_be32(b + 32)) &&
			   sn_lt(get_be32(b + 32), get_be32(b + 24))) {
			/* RFC 7143 11.5.1 b): the referenced command has not
			 * arrived yet: it counts as received and is dropped
			 * when it does arrive. */
			uint32_t ref = get_be32(b + 32);
			if (s->n_aborted_ahead < ARRAY_SIZE(s->aborted_ahead)) {
				s->aborted_ahead[s->n_aborted_ahead].cmdsn = ref;
				s->aborted_ahead[s->n_aborted_ahead].itt = rtt;
				s->n_aborted_ahead++;
				iscsi_cmdsn_received(s, ref);
			} else {
				m->response = ISCSI_TMF_RSP_NO_TASK;
			}
		} else {
			m->response = ISCSI_TMF_RSP_NO_TASK;
		}
		break;
	}
	case ISCSI_TMF_ABORT_TASK_SET:
	case ISCSI_TMF_CLEAR_TASK_SET:
		/* SAM-5 7.4: with a task set per I_T nexus (TST 001b,
		 * scsi/taskset.c) both clear this nexus's set only: no other
		 * initiator's commands are cleared, so no COMMANDS CLEARED BY
		 * ANOTHER INITIATOR unit attention */
		if (!sl) {
			m->response = ISCSI_TMF_RSP_NO_LUN;
			break;
		}
		abort_lun_tasks(s, lun, m);
		break;
	case ISCSI_TMF_LUN_RESET:
		if (!sl) {
			m->response = ISCSI_TMF_RSP_NO_LUN;
			break;
		}
		abort_lun_tasks(s, lun, m);
		scsi_lun_reset(sl, &s->nexus);
		break;
	case ISCSI_TMF_TARGET_WARM_RESET:
	case ISCSI_TMF_TARGET_COLD_RESET:
		for (unsigned i = 0; i < s->n_tasks; i++) {
			struct iscsi_task *x = &s->tasks[i];
			if (TASK_LIVE(x))
				abort_task(x, m);
		}
		scsi_target_reset(&s->target->st, &s->nexus, func == ISCSI_TMF_TARGET_COLD_RESET);
		/* RFC 7143 11.5.1: a cold reset ends the connections after the
		 * response. */
		if (func == ISCSI_TMF_TARGET_COLD_RESET)
			m->close_after = true;
		break;
	case ISCSI_TMF_TASK_REASSIGN:
		m->response = ISCSI_TMF_RSP_NO_REASSIGN;
		break;
	case ISCSI_TMF_CLEAR_ACA:
	default:
		m->response = ISCSI_TMF_RSP_NOT_SUPPORTED;
		break;
	}
done:
	scsi_tmf_done(sl, func, m->response);
	log_event(LOG_LVL_INFO, "tmf", KV_S("function", scsi_stats_tmf_name(func)), KV_U("lun", lun),
		  KV_X("ref_itt", rtt), KV_U("response", m->response), KV_S("initiator", s->initiator),
		  KV_U("tsih", s->tsih), KV_S("peer", c->peer));
	if (--m->waiting == 0)
		tmf_send(m);
}
