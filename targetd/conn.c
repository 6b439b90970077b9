/*
 * iSCSI connections: the PDU reader state machine, the transmit queue, NOP,
 * Logout and the dispatch of PDUs (RFC 7143); the command path is cmd.c.
 *
 * DESIGN: see conn.h. Everything here runs on the connection's owning
 * network thread. The reader pulls bytes in bulk into a 64 KiB buffer and
 * parses every PDU found there; a large data segment (write data) is read
 * straight into the command's buffer. The writer keeps a small ring of
 * prepared PDUs (header + data pointer + digest) and sends as many as it
 * can with one sendmsg(); Data-In PDUs point into the command's buffer, so
 * read data is never copied on its way out.
 *
 * Bounds (limits.h): standalone PDUs queued and not yet sent (NOP-In
 * echoes, Rejects, text and login responses) count in tx_bytes; past
 * max_pending_tx_per_connection the connection is not read (EPOLLIN off)
 * until half of that has been sent, so a peer that sends without reading
 * holds at most that much. Data buffers of a connection's tasks count in
 * buf_bytes and in the daemon-wide account; a command that would pass
 * max_buffer_per_connection or max_buffer_total gets TASK SET FULL. A
 * WRITE that waits longer than data_out_timeout for its Data-Out ends
 * with CHECK CONDITION (its buffer freed at once).
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "backstore/io_engine.h"
#include "targetd/cmd.h"
#include "targetd/conn.h"
#include "targetd/fault.h"
#include "scsi/fault.h"
#include "targetd/session.h"
#include "targetd/tmf.h"
#include "targetd/conn_limits.h"
#include "common/crc32c.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"

#define RX_BATCH_PDUS 128
#define DIRECT_RECV_MIN 8192

/* Discarded data lands here; only its digest is computed. */
static __thread uint8_t rx_scratch[65536];

static void conn_rx_pdu(struct iscsi_conn *c);
static void conn_rx_header(struct iscsi_conn *c);
static void conn_mark_dirty(struct iscsi_conn *c);

struct tx_pdu *iscsi_pdu_new(uint8_t opcode, uint32_t dlen)
{
	struct tx_pdu *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->e.kind = TX_PDU;
	list_init(&p->e.link);
	p->bhs[0] = opcode;
	p->bhs[1] = ISCSI_FLAG_FINAL;
	if (dlen) {
		p->data = calloc(1, dlen);
		if (!p->data) {
			free(p);
			return NULL;
		}
	}
	p->dlen = dlen;
	return p;
}

static void pdu_free(struct tx_pdu *p)
{
	free(p->data);
	free(p);
}

struct iscsi_conn *iscsi_conn_new(struct net_thread *t, int fd, struct iscsi_portal *portal)
{
	struct iscsi_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->rxbuf = malloc(CONN_RXBUF);
	if (!c->rxbuf) {
		free(c);
		return NULL;
	}
	c->fd = fd;
	c->epoll_tag = TAG_CONN;
	c->thread = t;
	c->portal = portal;
	c->tpgt = portal ? portal->tpgt : 1;
	c->state = CONN_LOGIN;
	c->rx_state = RX_BHS;
	c->rx_need = ISCSI_BHS_LEN;
	c->max_send_dsl = 8192;
	c->max_recv_dsl = 8192;
	list_init(&c->txq);
	list_init(&c->sess_link);
	list_init(&c->thread_link);
	list_init(&c->dirty_link);
	list_init(&c->kick_link);
	c->ev_mask = EPOLLIN;
	c->created_ms = c->last_rx_ms = t->now_ms;
	return c;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                           */
/* ------------------------------------------------------------------ */

void iscsi_conn_queue_pdu(struct iscsi_conn *c, struct tx_pdu *p)
{
	if (c->dead) {
		pdu_free(p);
		return;
	}
	p->acct = ISCSI_BHS_LEN + p->dlen;
	c->tx_bytes += p->acct;
	list_add_tail(&p->e.link, &c->txq);
	conn_mark_dirty(c);
}

/* A queued standalone PDU is done with (sent or dropped). */
static void conn_pdu_done(struct iscsi_conn *c, struct tx_pdu *p)
{
	c->tx_bytes -= p->acct;
	pdu_free(p);
}

uint32_t iscsi_conn_events(const struct iscsi_conn *c)
{
	return (c->rx_paused ? 0u : (uint32_t)EPOLLIN) | (c->want_out ? (uint32_t)EPOLLOUT : 0u);
}

void iscsi_conn_arm(struct iscsi_conn *c)
{
	uint32_t ev = iscsi_conn_events(c);

	if (c->dead || c->fd < 0 || ev == c->ev_mask)
		return;
	if (net_epoll_mod(c->thread, c->fd, ev, &c->epoll_tag) == 0)
		c->ev_mask = ev;
}

void iscsi_conn_queue_task(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;

	TASK_ASSERT(t, TASK_LIVE(t));
	if (!list_empty(&t->tx.link))
		return;
	list_add_tail(&t->tx.link, &c->txq);
	conn_mark_dirty(c);
}

/* The task stops soliciting data (all of it arrived, or it ended): R2Ts
 * not laid out yet are not sent. */
void iscsi_conn_unqueue_task(struct iscsi_task *t)
{
	if (!list_empty(&t->tx.link))
		list_del(&t->tx.link);
	t->r2t_pending = false;
}

static void fill_sn(struct iscsi_conn *c, uint8_t *bhs, bool advance)
{
	struct iscsi_session *s = c->sess;

	put_be32(bhs + 24, c->stat_sn);
	if (advance)
		c->stat_sn++;
	if (s) {
		put_be32(bhs + 28, s->exp_cmdsn);
		put_be32(bhs + 32, iscsi_session_max_cmdsn(s));
	} else {
		put_be32(bhs + 28, c->login_exp_cmdsn);
		put_be32(bhs + 32, c->login_exp_cmdsn);
	}
}

/* Lay out one PDU in a slot: header (+digest), data, pad (+digest). */
static void slot_layout(struct iscsi_conn *c, struct tx_slot *sl, const uint8_t *data, uint32_t dlen)
{
	uint32_t pad = (4 - (dlen & 3)) & 3;
	unsigned hl = ISCSI_BHS_LEN;
	unsigned tl = 0;

	bhs_set_dlen(sl->hdr, dlen);
	if (c->hdigest) {
		uint32_t crc = crc32c(sl->hdr, ISCSI_BHS_LEN);
		memcpy(sl->hdr + ISCSI_BHS_LEN, &crc, 4);   /* little-endian on the wire */
		hl += 4;
	}
	sl->iov[0].iov_base = sl->hdr;
	sl->iov[0].iov_len = hl;
	sl->iovcnt = 1;
	if (dlen) {
		sl->iov[1].iov_base = (void *)data;
		sl->iov[1].iov_len = dlen;
		sl->iovcnt = 2;
		memset(sl->trail, 0, pad);
		tl = pad;
		if (c->ddigest) {
			uint32_t crc = crc32c_update(crc32c_init(), data, dlen);
			crc = crc32c_final(crc32c_update(crc, sl->trail, pad));
			memcpy(sl->trail + pad, &crc, 4);
			tl += 4;
		}
		if (tl) {
			sl->iov[2].iov_base = sl->trail;
			sl->iov[2].iov_len = tl;
			sl->iovcnt = 3;
		}
	}
}

static uint32_t task_max_cmdsn_after(struct iscsi_task *t)
{
	/* The task stops counting against the window once its status leaves. */
	if (!t->immediate && t->counted) {
		t->counted = false;
		t->sess->active--;
	}
	return 0;
}

/* Produce the next PDU of a task into sl. Returns true if it was the last. */
static bool fill_task(struct iscsi_conn *c, struct iscsi_task *t, struct tx_slot *sl)
{
	struct iscsi_session *s = t->sess;
	uint8_t *h = sl->hdr;

	TASK_ASSERT(t, t->state == TASK_DATA_OUT || t->state == TASK_RESPOND);
	memset(h, 0, ISCSI_BHS_LEN);
	if (t->state == TASK_DATA_OUT) {
		/* R2T (RFC 7143 11.8) */
		uint32_t len = MIN(t->want - t->r2t_sent_off, s->params.max_burst);
		h[0] = ISCSI_OP_R2T;
		h[1] = ISCSI_FLAG_FINAL;
		memcpy(h + 8, t->lun_raw, 8);
		put_be32(h + 16, t->itt);
		put_be32(h + 20, t->ttt_base | (t->r2tsn & 0xffff));
		fill_sn(c, h, false);
		put_be32(h + 36, t->r2tsn);
		put_be32(h + 40, t->r2t_sent_off);
		put_be32(h + 44, len);
		t->r2tsn++;
		t->r2t_sent_off += len;
		t->r2t_outstanding++;
		slot_layout(c, sl, NULL, 0);
		if (t->r2t_sent_off >= t->want || t->r2t_outstanding >= s->params.max_outstanding_r2t) {
			t->r2t_pending = false;
			return true;
		}
		return false;
	}

	/* Data-In (RFC 7143 11.7) */
	if (t->tx_off < t->tx_len) {
		uint32_t left = t->tx_len - t->tx_off;
		uint32_t burst_left = s->params.max_burst - (t->tx_off % s->params.max_burst);
		uint32_t len = MIN(MIN(left, c->max_send_dsl), burst_left);
		bool last = len == left;
		bool collapse = last && t->cmd.status == SAM_STAT_GOOD;

		h[0] = ISCSI_OP_DATA_IN;
		if (last || len == burst_left)
			h[1] |= ISCSI_FLAG_FINAL;
		put_be32(h + 16, t->itt);
		put_be32(h + 20, ISCSI_RSVD_TAG);
		put_be32(h + 36, t->datasn++);
		put_be32(h + 40, t->tx_off);
		if (collapse) {
			h[1] |= ISCSI_DATAIN_STATUS | t->rsp_flags;
			h[3] = t->cmd.status;
			put_be32(h + 44, t->resid);
			task_max_cmdsn_after(t);
			fill_sn(c, h, true);
		} else {
			put_be32(h + 28, s->exp_cmdsn);
			put_be32(h + 32, iscsi_session_max_cmdsn(s));
		}
		slot_layout(c, sl, (t->cmd.data_ptr ? t->cmd.data_ptr : t->cmd.buf) + t->tx_off, len);
		if (unlikely(t->cmd.xfault & SCSI_FAULT_X_DIGEST))
			fault_conn_digest(c, t, sl);
		t->tx_off += len;
		if (collapse) {
			t->sent_status = true;
			return true;
		}
		return false;
	}

	/* SCSI Response (RFC 7143 11.4) */
	h[0] = ISCSI_OP_SCSI_RSP;
	h[1] = ISCSI_FLAG_FINAL | t->rsp_flags;
	h[2] = 0;  /* command completed at target */
	h[3] = t->cmd.status;
	put_be32(h + 16, t->itt);
	put_be32(h + 36, t->datasn);   /* ExpDataSN: Data-In PDUs sent */
	put_be32(h + 44, t->resid);
	task_max_cmdsn_after(t);
	fill_sn(c, h, true);
	if (t->cmd.sense_len) {
		put_be16(t->sense_seg, t->cmd.sense_len);
		memcpy(t->sense_seg + 2, t->cmd.sense, t->cmd.sense_len);
		slot_layout(c, sl, t->sense_seg, 2u + t->cmd.sense_len);
		if (unlikely(t->cmd.xfault & SCSI_FAULT_X_DIGEST))
			fault_conn_digest(c, t, sl);
	} else {
		slot_layout(c, sl, NULL, 0);
	}
	t->sent_status = true;
	return true;
}

static bool fill_pdu(struct iscsi_conn *c, struct tx_pdu *p, struct tx_slot *sl)
{
	memcpy(sl->hdr, p->bhs, ISCSI_BHS_LEN);
	if (p->set_statsn)
		fill_sn(c, sl->hdr, p->advance_statsn);
	slot_layout(c, sl, p->data, p->dlen);
	return true;
}

/* A slot was sent: a standalone PDU is freed after its last byte; a task
 * lets go of the slot, and ends once its status is out. */
static void slot_done(struct iscsi_conn *c, struct tx_slot *sl)
{
	struct tx_entry *e = sl->owner;

	sl->owner = NULL;
	if (e->kind == TX_PDU) {
		struct tx_pdu *p = container_of(e, struct tx_pdu, e);
		if (!sl->last)
			return;
		if (p->close_after)
			c->close_after_tx = true;
		conn_pdu_done(c, p);
	} else {
		struct iscsi_task *t = container_of(e, struct iscsi_task, tx);
		bool ends = sl->status && t->state == TASK_RESPOND;

		if (sl->status)
			scsi_cmd_status_sent(&t->cmd);   /* latency, histograms: status sent */
		/* The status slot holds a reference like any other: the task
		 * ends after the put, never while the slot still names it. */
		if (ends) {
			t->tx_refs--;
			iscsi_task_free(t);
		} else {
			iscsi_task_tx_put(t);
		}
	}
}

static void fill_slots(struct iscsi_conn *c)
{
	while (c->slot_count < CONN_TX_SLOTS && !list_empty(&c->txq)) {
		struct tx_entry *e = list_entry(c->txq.next, struct tx_entry, link);
		struct tx_slot *sl = &c->slots[(c->slot_head + c->slot_count) % CONN_TX_SLOTS];
		bool last;

		sl->status = false;
		if (e->kind == TX_PDU) {
			last = fill_pdu(c, container_of(e, struct tx_pdu, e), sl);
		} else {
			struct iscsi_task *t = container_of(e, struct iscsi_task, tx);
			last = fill_task(c, t, sl);
			sl->status = last && t->state == TASK_RESPOND;
			t->tx_refs++;
		}
		sl->owner = e;
		sl->last = last;
		if (last)
			list_del(&e->link);
		c->slot_count++;
	}
}

void iscsi_conn_flush(struct iscsi_conn *c)
{
	struct iovec iov[CONN_TX_SLOTS * CONN_IOV];

	ASSERT_OWNER(c);
	if (c->dead || c->in_flush)
		return;
	c->in_flush = true;
	for (;;) {
		int n = 0;
		size_t skip = c->slot_sent;
		ssize_t w;

		fill_slots(c);
		if (!c->slot_count)
			break;
		for (unsigned i = 0; i < c->slot_count; i++) {
			struct tx_slot *sl = &c->slots[(c->slot_head + i) % CONN_TX_SLOTS];
			for (int k = 0; k < sl->iovcnt; k++) {
				struct iovec v = sl->iov[k];
				if (skip) {
					if (skip >= v.iov_len) {
						skip -= v.iov_len;
						continue;
					}
					v.iov_base = (char *)v.iov_base + skip;
					v.iov_len -= skip;
					skip = 0;
				}
				iov[n++] = v;
			}
		}
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->want_out = true;
				iscsi_conn_arm(c);
				c->in_flush = false;
				return;
			}
			c->in_flush = false;
			iscsi_conn_close(c, "send failed");
			return;
		}
		/* Retire what was written. */
		size_t done = (size_t)w + c->slot_sent;
		c->slot_sent = 0;
		while (c->slot_count) {
			struct tx_slot *sl = &c->slots[c->slot_head];
			size_t len = 0;
			for (int k = 0; k < sl->iovcnt; k++)
				len += sl->iov[k].iov_len;
			if (done < len) {
				c->slot_sent = done;
				break;
			}
			done -= len;
			c->slot_head = (c->slot_head + 1) % CONN_TX_SLOTS;
			c->slot_count--;
			slot_done(c, sl);
		}
		iscsi_conn_rx_resume_check(c);
		if (c->close_after_tx && !c->slot_count && list_empty(&c->txq)) {
			c->in_flush = false;
			iscsi_conn_close(c, "logout complete");
			return;
		}
	}
	c->want_out = false;
	iscsi_conn_arm(c);
	c->in_flush = false;
	if (c->close_after_tx)
		iscsi_conn_close(c, "logout complete");
}

static void conn_mark_dirty(struct iscsi_conn *c)
{
	if (list_empty(&c->dirty_link))
		list_add_tail(&c->dirty_link, &c->thread->dirty);
}

void iscsi_conn_reject(struct iscsi_conn *c, uint8_t reason, const uint8_t *bhs)
{
	struct tx_pdu *p = iscsi_pdu_new(ISCSI_OP_REJECT, ISCSI_BHS_LEN);

	if (!p)
		return;
	p->bhs[2] = reason;
	put_be32(p->bhs + 16, ISCSI_RSVD_TAG);
	memcpy(p->data, bhs, ISCSI_BHS_LEN);
	p->set_statsn = true;
	p->advance_statsn = true;
	iscsi_conn_queue_pdu(c, p);
}

/* Reject and drop the connection (protocol errors at ErrorRecoveryLevel 0). */
void iscsi_conn_fatal(struct iscsi_conn *c, uint8_t reason, const char *why)
{
	log_debug("connection %s: %s", c->peer, why);   /* iscsi_conn_close logs it */
	if (c->state == CONN_FULL) {
		iscsi_conn_reject(c, reason, c->bhs);
		iscsi_conn_flush(c);
	}
	iscsi_conn_close(c, why);
}

/* ------------------------------------------------------------------ */
/* Close                                                              */
/* ------------------------------------------------------------------ */

void iscsi_conn_close(struct iscsi_conn *c, const char *why)
{
	struct iscsi_session *s = c->sess;

	if (c->dead)
		return;
	c->dead = true;
	c->refs++;   /* keep c alive while its tasks are released */
	if (s || c->login) {   /* one line per connection that began a login */
		bool logout = !strcmp(why, "logout complete");

		log_event(LOG_LVL_INFO, logout && s ? "logout" : "connection_closed",
			  KV_S("initiator", s ? s->initiator : NULL), KV_U("tsih", s ? s->tsih : 0),
			  KV_U("cid", c->cid),
			  KV_S("target", s && !s->discovery && s->target ? s->target->iqn : NULL),
			  KV_S("peer", c->peer), KV_S("reason", logout && !s ? "login refused" : why));
	}
	else
		log_debug("closing connection %s: %s", c->peer, why);
	net_epoll_del(c->thread, c->fd);
	close(c->fd);
	c->fd = -1;
	list_del(&c->dirty_link);
	list_del(&c->kick_link);
	limit_conn_closed();
	free(c->text_buf);   /* a Text Response the initiator never fetched whole */
	c->text_buf = NULL;
	/* Drop everything queued for transmission: the slots let go of their
	 * tasks (a zombie is released here, live tasks below). */
	for (unsigned i = 0; i < c->slot_count; i++) {
		struct tx_slot *sl = &c->slots[(c->slot_head + i) % CONN_TX_SLOTS];
		if (!sl->owner)
			continue;
		if (sl->owner->kind == TX_PDU) {
			if (sl->last)
				conn_pdu_done(c, container_of(sl->owner, struct tx_pdu, e));
		} else {
			iscsi_task_tx_put(container_of(sl->owner, struct iscsi_task, tx));
		}
		sl->owner = NULL;
	}
	c->slot_count = 0;
	c->slot_sent = 0;
	while (!list_empty(&c->txq)) {
		struct tx_entry *e = list_entry(c->txq.next, struct tx_entry, link);
		list_del(&e->link);
		if (e->kind == TX_PDU)
			conn_pdu_done(c, container_of(e, struct tx_pdu, e));
	}
	free(c->rx_owned);
	c->rx_owned = NULL;
	if (c->pending_session) {
		/* closed between the decision to join and the join */
		struct iscsi_session *ps = c->pending_session;
		c->pending_session = NULL;
		atomic_fetch_sub(&ps->conn_slots, 1);
		if (ps->thread == c->thread && !ps->n_conns) {
			ps->closing = true;
			iscsi_session_unregister(ps);
			iscsi_session_put(ps);
		}
	}
	if (c->login)
		iscsi_login_free(c);
	if (s)
		iscsi_session_detach_conn(s, c);
	list_del(&c->thread_link);
	c->thread->n_conns--;
	c->refs--;
	iscsi_conn_release(c);
}

/* A closed connection nobody holds is freed only between epoll batches:
 * the batch being handled may still carry an event for it (one
 * connection's logout or reset closes its session's other connections). */
void iscsi_conn_release(struct iscsi_conn *c)
{
	if (!c->dead || c->refs || c->buried)
		return;
	c->buried = true;
	list_add_tail(&c->thread_link, &c->thread->graveyard);
}

void iscsi_conn_reap(struct net_thread *t)
{
	while (!list_empty(&t->graveyard)) {
		struct iscsi_conn *c = list_entry(t->graveyard.next, struct iscsi_conn, thread_link);
		list_del(&c->thread_link);
		free(c->rxbuf);
		free(c);
	}
}

/* ------------------------------------------------------------------ */
/* Receive                                                            */
/* ------------------------------------------------------------------ */

/* Copy or read into dst. Returns bytes obtained (>0), 0 on EAGAIN, -1 on
 * EOF/error (connection closed). */
static ssize_t rx_fill(struct iscsi_conn *c, uint8_t *dst, uint32_t need)
{
	uint32_t avail = c->rxb_end - c->rxb_start;
	ssize_t r;

	if (avail) {
		uint32_t n = MIN(avail, need);
		memcpy(dst, c->rxbuf + c->rxb_start, n);
		c->rxb_start += n;
		return n;
	}
	if (need >= DIRECT_RECV_MIN && dst != rx_scratch) {
		r = recv(c->fd, dst, need, MSG_DONTWAIT);
	} else {
		c->rxb_start = c->rxb_end = 0;
		r = recv(c->fd, c->rxbuf, CONN_RXBUF, MSG_DONTWAIT);
		if (r > 0) {
			c->rxb_end = (uint32_t)r;
			return rx_fill(c, dst, need);
		}
	}
	if (r > 0)
		return r;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	return -1;
}

static void rx_reset(struct iscsi_conn *c)
{
	c->rx_state = RX_BHS;
	c->rx_need = ISCSI_BHS_LEN;
	c->rx_got = 0;
	c->rx_task = NULL;
	c->rx_keep = 0;
	c->rx_data = NULL;
}

/* Where the next bytes of the current piece go, and how many to read. */
static uint8_t *rx_target(struct iscsi_conn *c, uint32_t *need)
{
	uint8_t *dst;

	*need = c->rx_need - c->rx_got;
	switch (c->rx_state) {
	case RX_BHS:
		return c->bhs + c->rx_got;
	case RX_AHS:
		return c->ahs + c->rx_got;
	case RX_HDIGEST:
	case RX_DDIGEST:
		return c->rx_digest + c->rx_got;
	case RX_DATA:
		if (c->rx_got < c->rx_keep) {
			*need = MIN(*need, c->rx_keep - c->rx_got);
			dst = c->rx_data + c->rx_got;
		} else {
			*need = MIN(*need, (uint32_t)sizeof(rx_scratch));
			dst = rx_scratch;
		}
		return dst;
	case RX_PAD:
	default:
		return rx_scratch;
	}
}

/* What to do after a piece of a PDU is complete. */
enum rx_step {
	RX_STEP_NEXT,      /* read the next piece */
	RX_STEP_STOP,      /* stop reading now (closed, handed off) */
};

static void rx_expect(struct iscsi_conn *c, enum rx_state st, uint32_t need)
{
	c->rx_state = st;
	c->rx_need = need;
}

/* The BHS is in: the one "only Login before login completes" check
 * (RFC 7143 6.3) and the AHS length. */
static bool rx_bhs_done(struct iscsi_conn *c)
{
	uint32_t ahs = bhs_ahs_len(c->bhs);

	if (c->state == CONN_LOGIN && bhs_opcode(c->bhs) != ISCSI_OP_LOGIN_REQ) {
		iscsi_conn_close(c, "not a Login Request before login");
		return false;
	}
	if (ahs > sizeof(c->ahs) - ISCSI_DIGEST_LEN) {
		iscsi_conn_fatal(c, ISCSI_REJECT_PROTOCOL_ERROR, "AHS too long");
		return false;
	}
	return true;
}

static bool rx_hdigest_ok(struct iscsi_conn *c)
{
	uint32_t crc = crc32c_update(crc32c_init(), c->bhs, ISCSI_BHS_LEN);
	uint32_t got;

	crc = crc32c_final(crc32c_update(crc, c->ahs, bhs_ahs_len(c->bhs)));
	memcpy(&got, c->rx_digest, 4);
	return got == crc;
}

/*
 * The state machine of one PDU: BHS, AHS, header digest, data, pad, data
 * digest. A piece of length zero is skipped by falling through to the next
 * state; the PDU is handled when its last piece is in.
 */
static enum rx_step rx_piece_done(struct iscsi_conn *c, int *pdus)
{
	c->rx_got = 0;
	switch (c->rx_state) {
	case RX_BHS:
		if (!rx_bhs_done(c))
			return RX_STEP_STOP;
		if (bhs_ahs_len(c->bhs)) {
			rx_expect(c, RX_AHS, bhs_ahs_len(c->bhs));
			return RX_STEP_NEXT;
		}
		/* fall through */
	case RX_AHS:
		if (c->hdigest) {
			rx_expect(c, RX_HDIGEST, 4);
			return RX_STEP_NEXT;
		}
		/* fall through */
	case RX_HDIGEST:
		if (c->hdigest && !rx_hdigest_ok(c)) {
			/* RFC 7143 7.8: a header digest error is unrecoverable at ERL 0 */
			iscsi_conn_close(c, "header digest error");
			return RX_STEP_STOP;
		}
		c->dlen = bhs_dlen(c->bhs);
		c->padlen = (4 - (c->dlen & 3)) & 3;
		c->rx_crc = crc32c_init();
		conn_rx_header(c);
		if (c->dead)
			return RX_STEP_STOP;
		if (c->dlen) {
			rx_expect(c, RX_DATA, c->dlen);
			return RX_STEP_NEXT;
		}
		/* fall through */
	case RX_DATA:
		if (c->padlen) {
			rx_expect(c, RX_PAD, c->padlen);
			return RX_STEP_NEXT;
		}
		/* fall through */
	case RX_PAD:
		if (c->ddigest && c->dlen) {
			rx_expect(c, RX_DDIGEST, 4);
			return RX_STEP_NEXT;
		}
		/* fall through */
	case RX_DDIGEST:
		if (c->ddigest && c->dlen) {
			uint32_t got, crc = crc32c_final(c->rx_crc);
			memcpy(&got, c->rx_digest, 4);
			if (got != crc)
				c->data_digest_bad = true;
		}
		conn_rx_pdu(c);
		(*pdus)++;
		if (c->dead)
			return RX_STEP_STOP;
		free(c->rx_owned);
		c->rx_owned = NULL;
		c->data_digest_bad = false;
		rx_reset(c);
		if (c->handoff)
			return RX_STEP_STOP;   /* the rest is parsed by the session's thread */
		return RX_STEP_NEXT;
	}
	return RX_STEP_NEXT;
}

static void conn_read(struct iscsi_conn *c)
{
	int pdus = 0;

	while (!c->dead && pdus < RX_BATCH_PDUS) {
		uint32_t need;
		uint8_t *dst;
		ssize_t n;

		if (c->rx_state == RX_BHS && c->rx_got == 0 && iscsi_conn_rx_throttled(c))
			return;
		dst = rx_target(c, &need);
		if (need) {
			n = rx_fill(c, dst, need);
			if (n == 0)
				return;
			if (n < 0) {
				iscsi_conn_close(c, "connection closed by peer");
				return;
			}
			if ((c->rx_state == RX_DATA || c->rx_state == RX_PAD) && c->ddigest)
				c->rx_crc = crc32c_update(c->rx_crc, dst, (size_t)n);
			c->rx_got += (uint32_t)n;
			if (c->rx_got < c->rx_need)
				continue;
		}
		c->last_rx_ms = c->thread->now_ms;
		c->nop_outstanding = false;
		if (rx_piece_done(c, &pdus) == RX_STEP_STOP)
			return;
	}
}

/* Give the data segment of the PDU whose header just arrived a home. */
static void rx_set_owned(struct iscsi_conn *c, uint32_t limit)
{
	if (c->dlen > limit) {
		iscsi_conn_fatal(c, ISCSI_REJECT_PROTOCOL_ERROR, "data segment longer than negotiated");
		return;
	}
	if (c->dlen) {
		c->rx_owned = malloc(c->dlen + 1);
		if (!c->rx_owned) {
			iscsi_conn_close(c, "out of memory");
			return;
		}
		c->rx_owned[c->dlen] = 0;
		c->rx_data = c->rx_owned;
		c->rx_keep = c->dlen;
	}
}


static void conn_rx_header(struct iscsi_conn *c)
{
	uint8_t op = bhs_opcode(c->bhs);
	int reason = iscsi_bhs_check(c->bhs, c->state == CONN_FULL);

	if (reason) {
		if (c->state != CONN_FULL) {
			/* CONN_LOGIN took only Login PDUs (rx_bhs_done) */
			iscsi_conn_close(c, "PDU after the Logout Response");
			return;
		}
		if (reason == ISCSI_REJECT_CMD_NOT_SUPPORTED) {
			/* Reject and skip this PDU's data (RFC 7143 7.2). */
			if (c->dlen > c->max_recv_dsl) {
				iscsi_conn_fatal(c, ISCSI_REJECT_PROTOCOL_ERROR, "oversized unknown PDU");
				return;
			}
			c->rx_keep = 0;
			c->rx_reject = reason;
			return;
		}
		iscsi_conn_fatal(c, (uint8_t)reason, "protocol error");
		return;
	}
	c->rx_reject = 0;
	switch (op) {
	case ISCSI_OP_SCSI_CMD:
		iscsi_cmd_rx_header(c);
		break;
	case ISCSI_OP_DATA_OUT:
		iscsi_cmd_rx_data_out_header(c);
		break;
	case ISCSI_OP_LOGIN_REQ:
	case ISCSI_OP_TEXT_REQ:
		rx_set_owned(c, MAX(c->max_recv_dsl, 8192u));
		break;
	default:
		rx_set_owned(c, c->max_recv_dsl);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* NOP, Logout                                                        */
/* ------------------------------------------------------------------ */

static void rx_nop_out(struct iscsi_conn *c)
{
	struct iscsi_session *s = c->sess;
	const uint8_t *b = c->bhs;
	uint32_t itt = bhs_itt(b), echo;
	struct tx_pdu *p;

	if (!bhs_immediate(b) && !iscsi_cmdsn_take(s, get_be32(b + 24)))
		return;
	if (itt == ISCSI_RSVD_TAG)
		return;   /* answer to our ping */
	/* RFC 7143 11.18.5: the reflected ping data is limited to
	 * MaxRecvDataSegmentLength -- the initiator's, which may be smaller
	 * than the NOP-Out we accepted. */
	echo = MIN(c->dlen, c->max_send_dsl);
	p = iscsi_pdu_new(ISCSI_OP_NOP_IN, echo);
	if (!p) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	memcpy(p->bhs + 8, b + 8, 8);
	put_be32(p->bhs + 16, itt);
	put_be32(p->bhs + 20, ISCSI_RSVD_TAG);
	if (echo)
		memcpy(p->data, c->rx_owned, echo);
	p->set_statsn = true;
	p->advance_statsn = true;
	iscsi_conn_queue_pdu(c, p);
}

static void rx_logout(struct iscsi_conn *c)
{
	struct iscsi_session *s = c->sess;
	const uint8_t *b = c->bhs;
	uint8_t reason = b[1] & 0x7f;
	struct tx_pdu *p = iscsi_pdu_new(ISCSI_OP_LOGOUT_RSP, 0);

	if (!bhs_immediate(b))
		iscsi_cmdsn_take(s, get_be32(b + 24));
	if (!p) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	put_be32(p->bhs + 16, bhs_itt(b));
	if (reason == ISCSI_LOGOUT_RECOVERY)
		p->bhs[2] = 2;   /* connection recovery is not supported */
	else if (reason == ISCSI_LOGOUT_CLOSE_CONN && get_be16(b + 20) != c->cid) {
		/* closing another connection of the session */
		struct list_head *pos;
		bool found = false;
		list_for_each(pos, &s->conns) {
			struct iscsi_conn *o = list_entry(pos, struct iscsi_conn, sess_link);
			if (o->cid == get_be16(b + 20) && o != c) {
				found = true;
				iscsi_conn_close(o, "logout by another connection");
				break;
			}
		}
		p->bhs[2] = found ? 0 : 1;
	} else {
		p->close_after = true;
		c->state = CONN_LOGOUT;
		if (reason == ISCSI_LOGOUT_CLOSE_SESSION)
			s->logout_session = true;
		/* The session ends with this response: end its nexus's
		 * reservations and preventions before the initiator can see
		 * the response and log in again (the session itself is freed
		 * after the connection closes, perhaps later). */
		if ((reason == ISCSI_LOGOUT_CLOSE_SESSION || s->n_conns == 1) && !s->discovery &&
		    s->target)
			scsi_nexus_release(&s->nexus);
	}
	put_be16(p->bhs + 40, 0);   /* Time2Wait */
	put_be16(p->bhs + 42, 0);   /* Time2Retain */
	p->set_statsn = true;
	p->advance_statsn = true;
	iscsi_conn_queue_pdu(c, p);
	if (reason == ISCSI_LOGOUT_CLOSE_SESSION) {
		/* Close the other connections of the session too. */
		struct list_head *pos, *tmp;
		list_for_each_safe(pos, tmp, &s->conns) {
			struct iscsi_conn *o = list_entry(pos, struct iscsi_conn, sess_link);
			if (o != c)
				iscsi_conn_close(o, "session logout");
		}
	}
}

static void conn_rx_pdu(struct iscsi_conn *c)
{
	uint8_t op = bhs_opcode(c->bhs);

	if (c->rx_reject) {
		iscsi_conn_reject(c, c->rx_reject, c->bhs);
		return;
	}
	if (c->state == CONN_LOGIN) {
		iscsi_login_rx(c);
		return;
	}
	if (c->state != CONN_FULL)
		return;   /* logging out: ignore anything else */
	if (fault_conn_on() && fault_conn_rx(c))
		return;   /* fault injection dropped the connection */
	switch (op) {
	case ISCSI_OP_SCSI_CMD:
		iscsi_cmd_rx_done(c);
		break;
	case ISCSI_OP_DATA_OUT:
		iscsi_cmd_rx_data_out_done(c);
		break;
	case ISCSI_OP_NOP_OUT:
		if (c->data_digest_bad) {
			iscsi_conn_reject(c, ISCSI_REJECT_DATA_DIGEST, c->bhs);
			break;
		}
		rx_nop_out(c);
		break;
	case ISCSI_OP_TMF_REQ:
		iscsi_tmf_rx(c);
		break;
	case ISCSI_OP_TEXT_REQ:
		if (c->data_digest_bad) {
			iscsi_conn_reject(c, ISCSI_REJECT_DATA_DIGEST, c->bhs);
			break;
		}
		iscsi_text_rx(c);
		break;
	case ISCSI_OP_LOGOUT_REQ:
		rx_logout(c);
		break;
	default:
		iscsi_conn_reject(c, ISCSI_REJECT_CMD_NOT_SUPPORTED, c->bhs);
		break;
	}
}

void iscsi_conn_event(struct iscsi_conn *c, uint32_t events)
{
	ASSERT_OWNER(c);
	c->refs++;   /* c may be closed while handling the event: keep it */
	if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN))
		iscsi_conn_close(c, "socket error");
	if (!c->dead && (events & EPOLLIN))
		conn_read(c);
	if (!c->dead && c->handoff) {
		/* Login joined a session owned by another thread: leave this
		 * thread entirely, then let the owner adopt c (net.c). This is
		 * the last use of c here. */
		struct net_thread *owner = c->pending_session->thread;
		c->handoff = false;
		c->refs--;
		net_epoll_del(c->thread, c->fd);
		list_del(&c->thread_link);
		list_del(&c->dirty_link);
		list_del(&c->kick_link);
		c->thread->n_conns--;
		net_send(owner, MSG_ADOPT_CONN, -1, c, 0);
		return;
	}
	if (!c->dead && (events & EPOLLOUT))
		iscsi_conn_flush(c);
	if (!c->dead)
		conn_mark_dirty(c);
	c->refs--;
	iscsi_conn_release(c);
}

/* Once a second: login timeout, NOP-In pings, dead peers. */
void iscsi_conn_timer(struct iscsi_conn *c, uint64_t now)
{
	ASSERT_OWNER(c);
	if (c->dead)
		return;
	if (c->state == CONN_LOGIN) {
		if (now - c->created_ms > (uint64_t)target_runtime->login_timeout * 1000) {
			limit_hit(LIM_LOGIN_TIMEOUT, "connection %s: not logged in after %u s; closed", c->peer,
				  target_runtime->login_timeout);
			iscsi_conn_close(c, "login timed out");
		}
		return;
	}
	if (c->sess && c->state == CONN_FULL)
		iscsi_conn_data_out_timer(c, now);
	if (fault_conn_on() && !c->dead)
		fault_conn_timer(c, now);   /* NOP-In storms, portals going down */
	if (c->dead || c->state != CONN_FULL || !target_runtime->nop_interval)
		return;
	if (c->nop_outstanding) {
		if (now - c->nop_sent_ms > (uint64_t)target_runtime->nop_timeout * 1000)
			iscsi_conn_close(c, "NOP-In ping timed out");
		return;
	}
	if (now - c->last_rx_ms > (uint64_t)target_runtime->nop_interval * 1000) {
		struct tx_pdu *p = iscsi_pdu_new(ISCSI_OP_NOP_IN, 0);
		if (!p)
			return;
		put_be32(p->bhs + 16, ISCSI_RSVD_TAG);
		put_be32(p->bhs + 20, ++c->nop_ttt & 0x7fffffff);
		p->set_statsn = true;
		p->advance_statsn = false;
		c->nop_outstanding = true;
		c->nop_sent_ms = now;
		iscsi_conn_queue_pdu(c, p);
	}
}
