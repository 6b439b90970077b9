/* The iSCSI unit-test harness: see tests/iscsi_harness.h. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "backstore/io_engine.h"
#include "common/crc32c.h"
#include "scsi/stats.h"
#include "tests/iscsi_harness.h"

#define RX_CAP (4u << 20)
#define PDU_MAX (1u << 20)

/* One harness at a time owns LUN 1's gate. */
static struct ih *gate_owner;

static void gate_submit(struct io_engine *eng, struct bs_io *io)
{
	struct ih *h = gate_owner;

	ck_assert_ptr_eq(eng, h->thr.eng);
	ck_assert_uint_lt(h->n_held, IH_HELD_MAX);
	h->held[h->n_held++] = io;
}

static int gate_lba_status(struct backstore *bs, uint64_t offset, uint64_t max_len, bool *mapped,
			   uint64_t *run_len)
{
	return bs_memory_ops.lba_status(bs, offset, max_len, mapped, run_len);
}

static const struct backstore_ops gate_ops = {
	.name = "gate",
	.submit = gate_submit,
	.lba_status = gate_lba_status,
};

void ih_release(struct ih *h, unsigned n)
{
	ck_assert_uint_le(n, h->n_held);
	for (unsigned i = 0; i < n; i++) {
		struct bs_io *io = h->held[0];

		memmove(h->held, h->held + 1, (h->n_held - 1) * sizeof(h->held[0]));
		h->n_held--;
		/* the gate shares the memory backstore's state (priv) */
		bs_memory_ops.submit(h->thr.eng, io);
	}
}

static void ih_thread_init(struct ih *h)
{
	struct net_thread *t = &h->thr;

	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	ck_assert_int_ge(t->epfd, 0);
	t->msg_fd = -1;
	t->eng = io_engine_create(64, false);
	ck_assert_ptr_nonnull(t->eng);
	bufpool_init(&t->pool, 8u << 20);
	pthread_mutex_init(&t->mq_lock, NULL);
	list_init(&t->mq);
	list_init(&t->conns);
	list_init(&t->dirty);
	list_init(&t->graveyard);
	t->now_ms = net_now_ms();
	net_self = t;
	scsi_stats_thread_init(0);
}

static void ih_luns_init(struct ih *h)
{
	struct bs_params bp = { .type = "memory", .size = (uint64_t)IH_BLOCKS * 512, .block_size = 512 };
	struct scsi_lun_params lp = { .id = 0, .block_size = 512, .nblocks = IH_BLOCKS };
	struct scsi_lun *lun;
	char err[128];

	snprintf(h->tgt.iqn, sizeof(h->tgt.iqn), "iqn.2026-11.org.targetd.test:harness");
	scsi_target_init(&h->tgt.st, h->tgt.iqn, 0);
	ck_assert_int_eq(backstore_open(&h->mem, &bp, err, sizeof(err)), 0);
	ck_assert_int_eq(scsi_lun_create(&lun, &h->tgt.st, &lp, h->mem), 0);
	h->tgt.st.luns[0] = lun;
	h->gate = *h->mem;
	h->gate.ops = &gate_ops;
	h->gate.mem_base = NULL;     /* no zero-copy read around the gate */
	h->gate.map_base = NULL;
	gate_owner = h;
	lp.id = 1;
	ck_assert_int_eq(scsi_lun_create(&lun, &h->tgt.st, &lp, &h->gate), 0);
	h->tgt.st.luns[1] = lun;
}

static struct iscsi_conn *ih_conn_new(struct ih *h, unsigned i)
{
	struct ih_peer *pe = &h->p[i];
	struct iscsi_conn *c;
	int fds[2], sz = 4 << 20;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
	for (int k = 0; k < 2; k++) {
		setsockopt(fds[k], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		setsockopt(fds[k], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	c = iscsi_conn_new(&h->thr, fds[0], NULL);
	ck_assert_ptr_nonnull(c);
	snprintf(c->peer, sizeof(c->peer), "harness-%u", i);
	list_add_tail(&c->thread_link, &h->thr.conns);
	h->thr.n_conns++;
	pe->c = c;
	pe->fd = fds[1];
	pe->rx = malloc(RX_CAP);
	pe->data = malloc(PDU_MAX);
	ck_assert(pe->rx && pe->data);
	c->hdigest = c->ddigest = h->o.digests;
	c->max_send_dsl = c->max_recv_dsl = h->o.mrdsl;
	c->cid = (uint16_t)i;
	c->state = CONN_FULL;
	return c;
}

static void ih_session_init(struct ih *h)
{
	struct iscsi_limits lim = { .max_recv_dsl = h->o.mrdsl, .max_burst = h->o.max_burst,
				    .first_burst = h->o.first_burst, .max_outstanding_r2t = h->o.max_r2t,
				    .max_connections = IH_CONNS };
	struct iscsi_conn *c0 = ih_conn_new(h, 0);
	struct iscsi_session *s = iscsi_session_new(c0);
	struct scsi_nexus *n;

	ck_assert_ptr_nonnull(s);
	h->s = s;
	memcpy(s->isid, "\x80\x00\x00\x00\x12\x34", 6);
	snprintf(s->initiator, sizeof(s->initiator), "iqn.2026-11.org.targetd.test:initiator");
	s->target = &h->tgt;
	iscsi_params_init(&s->params, &lim);
	s->params.header_digest = s->params.data_digest = h->o.digests;
	s->params.max_recv_dsl_initiator = s->params.max_recv_dsl_target = h->o.mrdsl;
	s->params.max_burst = h->o.max_burst;
	s->params.first_burst = h->o.first_burst;
	s->params.max_outstanding_r2t = h->o.max_r2t;
	s->params.max_connections = IH_CONNS;
	s->params.immediate_data = !h->o.no_immediate_data;
	s->params.initial_r2t = h->o.initial_r2t;
	s->exp_cmdsn = 1;
	h->cmdsn = 1;
	atomic_store(&s->conn_slots, h->o.conns);
	n = &s->nexus;
	n->id = s->id;
	memcpy(n->isid, s->isid, 6);
	snprintf(n->initiator_name, sizeof(n->initiator_name), "%s", s->initiator);
	snprintf(n->initiator_port, sizeof(n->initiator_port), "%s,i,0x800000001234", s->initiator);
	n->tpgt = n->rel_tport_id = 1;
	n->priv = s;
	scsi_nexus_attach(&h->tgt.st, n);
	for (unsigned l = 0; l < 2; l++)
		atomic_store(&n->ua[l], 0);   /* no POWER ON unit attention to wade through */
	iscsi_session_attach_conn(s, c0);
	for (unsigned i = 1; i < h->o.conns; i++)
		iscsi_session_attach_conn(s, ih_conn_new(h, i));
}

void ih_start(struct ih *h, const struct ih_opts *o)
{
	memset(h, 0, sizeof(*h));
	h->o = *o;
	if (!h->o.conns)
		h->o.conns = 1;
	ck_assert_uint_le(h->o.conns, IH_CONNS);
	if (!h->o.queue_depth)
		h->o.queue_depth = 16;
	if (!h->o.first_burst)
		h->o.first_burst = 65536;
	if (!h->o.max_burst)
		h->o.max_burst = 262144;
	if (!h->o.max_r2t)
		h->o.max_r2t = 1;
	if (!h->o.mrdsl)
		h->o.mrdsl = 8192;
	ih_thread_init(h);
	h->rt_saved = target_runtime;
	h->rtv.queue_depth = h->o.queue_depth;
	h->rtv.login_timeout = 15;
	target_runtime = &h->rtv;
	ih_luns_init(h);
	ih_session_init(h);
}

void ih_stop(struct ih *h)
{
	ih_release(h, h->n_held);
	ih_run(h);
	for (unsigned i = 0; i < IH_CONNS; i++) {
		struct ih_peer *pe = &h->p[i];

		if (pe->c && !pe->c->dead)
			iscsi_conn_close(pe->c, "test over");
		pe->c = NULL;
	}
	ih_release(h, h->n_held);
	ih_run(h);
	ck_assert_uint_eq(h->n_held, 0);
	ck_assert_uint_eq(h->thr.n_conns, 0);
	for (unsigned i = 0; i < IH_CONNS; i++) {
		if (h->p[i].rx) {
			close(h->p[i].fd);
			free(h->p[i].rx);
			free(h->p[i].data);
		}
	}
	for (unsigned l = 0; l < 2; l++)
		scsi_lun_destroy(h->tgt.st.luns[l]);
	scsi_target_destroy(&h->tgt.st);
	backstore_close(h->mem);
	gate_owner = NULL;
	io_engine_destroy(h->thr.eng);
	bufpool_destroy(&h->thr.pool);
	pthread_mutex_destroy(&h->thr.mq_lock);
	close(h->thr.epfd);
	target_runtime = h->rt_saved;
	net_self = NULL;
}

size_t ih_build(const struct ih *h, uint8_t *out, const uint8_t *bhs, const uint8_t *ahs,
		uint32_t ahs_len, const void *data, uint32_t dlen)
{
	uint32_t pad = (4 - (dlen & 3)) & 3;
	size_t n = ISCSI_BHS_LEN;

	memcpy(out, bhs, ISCSI_BHS_LEN);
	out[4] = (uint8_t)(ahs_len / 4);
	put_be24(out + 5, dlen);
	if (ahs_len) {
		memcpy(out + n, ahs, ahs_len);
		n += ahs_len;
	}
	if (h->o.digests) {
		uint32_t crc = crc32c(out, n);
		memcpy(out + n, &crc, 4);
		n += 4;
	}
	if (dlen) {
		memcpy(out + n, data, dlen);
		memset(out + n + dlen, 0, pad);
		if (h->o.digests) {
			uint32_t crc = crc32c(out + n, dlen + pad);
			memcpy(out + n + dlen + pad, &crc, 4);
			n += 4;
		}
		n += dlen + pad;
	}
	return n;
}

/* Let the target read everything waiting on ci. */
static void ih_poke(struct ih *h, unsigned ci)
{
	struct iscsi_conn *c = h->p[ci].c;

	for (int i = 0; i < 1000 && c && !c->dead; i++) {
		int avail = 0;

		if (ioctl(c->fd, FIONREAD, &avail) < 0)
			avail = 0;
		if (!avail && c->rxb_start == c->rxb_end && i > 0)
			break;
		iscsi_conn_event(c, EPOLLIN);
	}
}

void ih_feed(struct ih *h, unsigned ci, const void *p, size_t len, size_t chunk)
{
	const uint8_t *b = p;
	size_t off = 0;

	while (off < len) {
		size_t n = chunk ? MIN(chunk, len - off) : len - off;
		ssize_t w = send(h->p[ci].fd, b + off, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EAGAIN && h->p[ci].c && !h->p[ci].c->dead) {
			ih_poke(h, ci);
			continue;
		}
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			return;   /* the target closed the connection */
		ck_assert_int_gt(w, 0);
		off += (size_t)w;
		ih_poke(h, ci);
	}
}

void ih_send(struct ih *h, unsigned ci, const uint8_t *bhs, const void *data, uint32_t dlen)
{
	uint8_t *buf = malloc(ISCSI_BHS_LEN + 8 + (size_t)dlen + 8);
	size_t n;

	ck_assert_ptr_nonnull(buf);
	n = ih_build(h, buf, bhs, NULL, 0, data, dlen);
	ih_feed(h, ci, buf, n, 0);
	free(buf);
}

void ih_run(struct ih *h)
{
	struct net_thread *t = &h->thr;

	for (int guard = 0; guard < 100000; guard++) {
		bool did = false;

		io_engine_flush(t->eng);
		if (io_engine_poll(t->eng) > 0)
			did = true;
		while (!list_empty(&t->dirty)) {
			struct iscsi_conn *c = list_entry(t->dirty.next, struct iscsi_conn, dirty_link);

			list_del(&c->dirty_link);
			iscsi_conn_flush(c);
			did = true;
		}
		if (!did) {
			if (io_engine_inflight(t->eng)) {
				io_engine_wait(t->eng);
				continue;
			}
			break;
		}
	}
	for (unsigned i = 0; i < IH_CONNS; i++)
		if (h->p[i].c && h->p[i].c->dead)
			h->p[i].c = NULL;
	iscsi_conn_reap(t);
}

static bool ih_parse(struct ih *h, struct ih_peer *pe, struct ih_pdu *p)
{
	const uint8_t *b = pe->rx;
	uint32_t ahs, dlen, pad, hd = h->o.digests ? 4 : 0, dd;
	size_t total;

	if (pe->rx_len < ISCSI_BHS_LEN)
		return false;
	ahs = (uint32_t)b[4] * 4;
	dlen = get_be24(b + 5);
	pad = (4 - (dlen & 3)) & 3;
	dd = h->o.digests && dlen ? 4 : 0;
	total = ISCSI_BHS_LEN + ahs + hd + dlen + pad + dd;
	ck_assert_uint_le(dlen, PDU_MAX);
	if (pe->rx_len < total)
		return false;
	if (hd) {
		uint32_t crc = crc32c(b, ISCSI_BHS_LEN + ahs), got;
		memcpy(&got, b + ISCSI_BHS_LEN + ahs, 4);
		ck_assert_msg(crc == got, "header digest of a target PDU (op %#x) is wrong", b[0] & 0x3f);
	}
	if (dd) {
		const uint8_t *d = b + ISCSI_BHS_LEN + ahs + hd;
		uint32_t crc = crc32c(d, dlen + pad), got;
		memcpy(&got, d + dlen + pad, 4);
		ck_assert_msg(crc == got, "data digest of a target PDU (op %#x) is wrong", b[0] & 0x3f);
	}
	memcpy(p->bhs, b, ISCSI_BHS_LEN);
	memcpy(pe->data, b + ISCSI_BHS_LEN + ahs + hd, dlen);
	p->data = pe->data;
	p->dlen = dlen;
	memmove(pe->rx, pe->rx + total, pe->rx_len - total);
	pe->rx_len -= total;
	return true;
}

/* Read what the target sent on pe; *eof when it closed its end. */
static void ih_peer_read(struct ih_peer *pe, bool *eof)
{
	for (;;) {
		ssize_t r;

		ck_assert_uint_lt(pe->rx_len, RX_CAP);
		r = recv(pe->fd, pe->rx + pe->rx_len, RX_CAP - pe->rx_len, MSG_DONTWAIT);

		if (r > 0) {
			pe->rx_len += (size_t)r;
			continue;
		}
		if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			*eof = true;
		return;
	}
}

bool ih_next(struct ih *h, unsigned ci, struct ih_pdu *p)
{
	struct ih_peer *pe = &h->p[ci];

	for (int tries = 0; tries < 1000; tries++) {
		bool eof = false;

		ih_peer_read(pe, &eof);
		if (ih_parse(h, pe, p))
			return true;
		if (!pe->c || pe->c->dead || !pe->c->want_out)
			return false;
		iscsi_conn_flush(pe->c);     /* it stopped on a full socket */
	}
	return false;
}

bool ih_closed(struct ih *h, unsigned ci)
{
	struct ih_peer *pe = &h->p[ci];
	bool eof = false;

	ih_run(h);
	ih_peer_read(pe, &eof);
	return eof;
}

uint32_t ih_bhs_cmd(struct ih *h, uint8_t *b, uint32_t cmdsn, const uint8_t *cdb, unsigned cdb_len,
		    uint8_t flags, uint32_t edtl, uint16_t lun)
{
	uint32_t itt = ++h->itt;

	memset(b, 0, ISCSI_BHS_LEN);
	b[0] = ISCSI_OP_SCSI_CMD;
	b[1] = flags;
	iscsi_lun_encode(b + 8, lun);
	put_be32(b + 16, itt);
	put_be32(b + 20, edtl);
	put_be32(b + 24, cmdsn);
	memcpy(b + 32, cdb, MIN(cdb_len, 16u));
	return itt;
}

void ih_bhs_data_out(uint8_t *b, uint32_t itt, uint32_t ttt, uint32_t datasn, uint32_t offset,
		     bool final, uint16_t lun)
{
	memset(b, 0, ISCSI_BHS_LEN);
	b[0] = ISCSI_OP_DATA_OUT;
	b[1] = final ? ISCSI_FLAG_FINAL : 0;
	iscsi_lun_encode(b + 8, lun);
	put_be32(b + 16, itt);
	put_be32(b + 20, ttt);
	put_be32(b + 36, datasn);
	put_be32(b + 40, offset);
}

uint32_t ih_bhs_nop(struct ih *h, uint8_t *b, uint32_t cmdsn, bool immediate)
{
	uint32_t itt = ++h->itt;

	memset(b, 0, ISCSI_BHS_LEN);
	b[0] = ISCSI_OP_NOP_OUT | (immediate ? ISCSI_FLAG_IMMEDIATE : 0);
	b[1] = ISCSI_FLAG_FINAL;
	put_be32(b + 16, itt);
	put_be32(b + 20, ISCSI_RSVD_TAG);
	put_be32(b + 24, cmdsn);
	return itt;
}

uint32_t ih_bhs_tmf(struct ih *h, uint8_t *b, uint8_t function, uint32_t cmdsn, uint16_t lun,
		    uint32_t ref_itt, uint32_t ref_cmdsn)
{
	uint32_t itt = ++h->itt;

	memset(b, 0, ISCSI_BHS_LEN);
	b[0] = ISCSI_OP_TMF_REQ | ISCSI_FLAG_IMMEDIATE;
	b[1] = ISCSI_FLAG_FINAL | function;
	iscsi_lun_encode(b + 8, lun);
	put_be32(b + 16, itt);
	put_be32(b + 20, ref_itt);
	put_be32(b + 24, cmdsn);
	put_be32(b + 32, ref_cmdsn);
	return itt;
}

uint32_t ih_cmd(struct ih *h, unsigned ci, const uint8_t *cdb, unsigned cdb_len, uint8_t flags,
		uint32_t edtl, uint16_t lun, const void *data, uint32_t dlen)
{
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t itt = ih_bhs_cmd(h, b, h->cmdsn++, cdb, cdb_len, flags, edtl, lun);

	ih_send(h, ci, b, data, dlen);
	return itt;
}

uint32_t ih_ping(struct ih *h, unsigned ci)
{
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t itt = ih_bhs_nop(h, b, h->cmdsn, true);

	ih_run(h);   /* what the target can do before the ping is done */
	ih_send(h, ci, b, NULL, 0);
	return itt;
}

void ih_expect(struct ih *h, unsigned ci, uint32_t itt, uint8_t opcode, struct ih_pdu *out,
	       uint32_t *seen_itts, uint8_t *seen_ops, unsigned max, unsigned *n_seen)
{
	struct ih_pdu p;

	if (n_seen)
		*n_seen = 0;
	ih_run(h);
	while (ih_next(h, ci, &p)) {
		if (bhs_itt(p.bhs) == itt && (opcode == 0xff || bhs_opcode(p.bhs) == opcode)) {
			if (out)
				*out = p;
			return;
		}
		if (n_seen && *n_seen < max) {
			if (seen_itts)
				seen_itts[*n_seen] = bhs_itt(p.bhs);
			if (seen_ops)
				seen_ops[*n_seen] = bhs_opcode(p.bhs);
			(*n_seen)++;
		}
	}
	ck_abort_msg("connection %u: no PDU with ITT %#x, opcode %#x", ci, itt, opcode);
}

void ih_sense(const struct ih_pdu *p, uint8_t *key, uint8_t *asc, uint8_t *ascq)
{
	const uint8_t *s = p->data + 2;

	*key = *asc = *ascq = 0;
	if (p->dlen < 2 + 8)
		return;
	if ((s[0] & 0x7f) >= 0x72) {
		*key = s[1] & 0x0f;
		*asc = s[2];
		*ascq = s[3];
	} else if (p->dlen >= 2 + 14) {
		*key = s[2] & 0x0f;
		*asc = s[12];
		*ascq = s[13];
	}
}

void ih_cdb_rw10(uint8_t *cdb, bool write, uint32_t lba, uint16_t blocks)
{
	memset(cdb, 0, 10);
	cdb[0] = write ? 0x2a : 0x28;
	put_be32(cdb + 2, lba);
	put_be16(cdb + 7, blocks);
}
