/*
 * iSCSI sessions: the preallocated task table, the ITT hash, the CmdSN
 * window and the process-wide session registry.
 *
 * DESIGN: a session and its tasks belong to the network thread that owns
 * its connections (conn.h). The registry (all sessions, for TSIH and
 * initiator+ISID lookups at login, and for counting) is a list under
 * registry_lock; only login, logout and the admin interface take it.
 */
#include "config.h"
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"
#include "targetd/trace.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head registry = LIST_HEAD_INIT(registry);
static unsigned registry_count;
static uint16_t next_tsih = 1;
static _Atomic uint64_t next_session_id = 1;

void iscsi_session_registry_lock(void) { pthread_mutex_lock(&registry_lock); }
void iscsi_session_registry_unlock(void) { pthread_mutex_unlock(&registry_lock); }

/* Under the registry lock. Initiator names are kept normalised (login.c,
 * common/iscsi_name.h: iSCSI names are case-insensitive), so two spellings
 * of one name are one initiator here, as they are for the ACL. */
struct iscsi_session *iscsi_session_lookup_isid(const char *initiator, const uint8_t *isid,
					       const struct iscsi_target *t)
{
	struct list_head *pos;

	list_for_each(pos, &registry) {
		struct iscsi_session *s = list_entry(pos, struct iscsi_session, reg_link);
		if (!s->closing && s->target == t && !memcmp(s->isid, isid, 6) &&
		    !strcmp(s->initiator, initiator))
			return s;
	}
	return NULL;
}

/* Under the registry lock. */
struct iscsi_session *iscsi_session_lookup_tsih(uint16_t tsih)
{
	struct list_head *pos;

	list_for_each(pos, &registry) {
		struct iscsi_session *s = list_entry(pos, struct iscsi_session, reg_link);
		if (s->tsih == tsih && !s->closing)
			return s;
	}
	return NULL;
}

/* Under the registry lock: give the session a free TSIH and list it. */
void iscsi_session_register(struct iscsi_session *s)
{
	for (;;) {
		uint16_t tsih = next_tsih++;
		if (!tsih)
			continue;
		if (!iscsi_session_lookup_tsih(tsih)) {
			s->tsih = tsih;
			break;
		}
	}
	list_add_tail(&s->reg_link, &registry);
	s->registered = true;
	registry_count++;
}

/* Under the registry lock: a session was taken off the list by another
 * thread (reinstatement). */
void iscsi_session_registry_forget(void)
{
	registry_count--;
}

void iscsi_session_unregister(struct iscsi_session *s)
{
	iscsi_session_registry_lock();
	if (s->registered) {
		list_del(&s->reg_link);
		s->registered = false;
		registry_count--;
	}
	iscsi_session_registry_unlock();
}

/* Under the registry lock: every registered session (the admin interface
 * reads only what does not change after login). */
void iscsi_session_for_each(void (*fn)(struct iscsi_session *s, void *arg), void *arg)
{
	struct list_head *pos;

	list_for_each(pos, &registry)
		fn(list_entry(pos, struct iscsi_session, reg_link), arg);
}

unsigned iscsi_session_count(void)
{
	unsigned n;

	iscsi_session_registry_lock();
	n = registry_count;
	iscsi_session_registry_unlock();
	return n;
}

#ifdef TARGETD_DEBUG
static void task_poison(struct iscsi_task *t);
#endif

struct iscsi_session *iscsi_session_new(struct iscsi_conn *c)
{
	struct iscsi_session *s = calloc(1, sizeof(*s));
	unsigned n;

	if (!s)
		return NULL;
	s->id = atomic_fetch_add(&next_session_id, 1);
	s->thread = c->thread;
	s->queue_depth = target_runtime->queue_depth;
	n = s->queue_depth * 2 + 16;
	s->tasks = calloc(n, sizeof(*s->tasks));
	if (!s->tasks) {
		free(s);
		return NULL;
	}
	s->n_tasks = n;
	if (iscsi_cmdsn_init(s)) {
		free(s->tasks);
		free(s);
		return NULL;
	}
	for (unsigned i = n; i-- > 0;) {
		struct iscsi_task *t = &s->tasks[i];
		t->sess = s;
		t->idx = (uint16_t)i;
		t->ttt_base = (uint32_t)(i + 1) << 16;
		list_init(&t->tx.link);
		t->tx.kind = TX_TASK;
#ifdef TARGETD_DEBUG
		task_poison(t);
#endif
		t->hnext = s->free_list;
		s->free_list = t;
	}
	list_init(&s->conns);
	list_init(&s->reg_link);
	list_init(&s->nexus.target_link);
	return s;
}

#define TASK_POISON 0x6b

void iscsi_task_bug(const struct iscsi_task *t, const char *what, const char *where)
{
	log_err("BUG: task %u (ITT %#x, state %d, %u ring slots) of session %llu: %s in %s", t->idx,
		t->itt, (int)t->state, t->tx_refs, (unsigned long long)t->sess->id, what, where);
#ifdef TARGETD_DEBUG
	abort();
#endif
}

#ifdef TARGETD_DEBUG
/* A freed task is filled with TASK_POISON but for what the free list and
 * the loops over the task table read (identity, state, free-list link). */
static void task_poison(struct iscsi_task *t)
{
	struct iscsi_session *sess = t->sess;
	uint16_t idx = t->idx;
	uint32_t ttt_base = t->ttt_base;

	memset(t, TASK_POISON, sizeof(*t));
	t->sess = sess;
	t->idx = idx;
	t->ttt_base = ttt_base;
	t->state = TASK_FREE;
	t->tx_refs = 0;
	t->conn = NULL;
}

/* Nothing wrote to the task while it was free. */
static void task_check_poison(const struct iscsi_task *t)
{
	const uint8_t *p = (const uint8_t *)&t->cmd;

	for (size_t i = 0; i < sizeof(t->cmd); i++)
		if (p[i] != TASK_POISON)
			iscsi_task_bug(t, "written to while free", __func__);
}
#endif

struct iscsi_task *iscsi_task_alloc(struct iscsi_session *s, bool immediate)
{
	struct iscsi_task *t = s->free_list;
	uint8_t *buf;
	uint32_t cap;

	if (!t)
		return NULL;
	if (t->state != TASK_FREE || t->tx_refs)
		iscsi_task_bug(t, "on the free list but not free", __func__);
#ifdef TARGETD_DEBUG
	task_check_poison(t);
#endif
	s->free_list = t->hnext;
	/* Reset everything but identity. */
	buf = NULL;
	cap = 0;
	{
		struct iscsi_session *sess = t->sess;
		uint16_t idx = t->idx;
		uint32_t ttt_base = t->ttt_base;
		memset(t, 0, sizeof(*t));
		t->sess = sess;
		t->idx = idx;
		t->ttt_base = ttt_base;
	}
	t->cmd.buf = buf;
	t->cmd.buf_cap = cap;
	t->cmd.field_bit = -1;
	list_init(&t->tx.link);
	list_init(&t->qlink);
	t->tx.kind = TX_TASK;
	t->immediate = immediate;
	if (!immediate) {
		t->counted = true;
		s->active++;
	}
	return t;
}

/* The task is gone for good: nothing names it any more. */
static void task_release(struct iscsi_task *t)
{
	struct iscsi_session *s = t->sess;
	struct iscsi_conn *c = t->conn;

	/* Only now, with no transmit slot left to send from a zero-copy
	 * READ's bytes: its range lock goes, and the LUN may be freed by a
	 * reload. */
	scsi_cmd_release(&t->cmd);
	iscsi_task_drop_buffer(t);
#ifdef TARGETD_DEBUG
	task_poison(t);
#endif
	t->state = TASK_FREE;
	t->hnext = s->free_list;
	s->free_list = t;
	if (c) {
		t->conn = NULL;
		c->refs--;
		iscsi_conn_release(c);
	}
	iscsi_session_put(s);
}

void iscsi_task_drop_buffer(struct iscsi_task *t)
{
	struct iscsi_session *s = t->sess;
	struct list_head *pos;

	if (!t->bb)
		return;
	list_for_each(pos, &s->conns) {
		struct iscsi_conn *o = list_entry(pos, struct iscsi_conn, sess_link);
		if (o->rx_task == t) {
			o->rx_task = NULL;
			o->rx_data = NULL;
			o->rx_keep = 0;
		}
	}
	bufpool_put(&s->thread->pool, t->bb);
	t->bb = NULL;
	t->cmd.buf = NULL;
	t->cmd.buf_cap = 0;
	if (t->buf_acct) {
		if (t->conn)
			t->conn->buf_bytes -= t->buf_acct;
		limit_buffer_release(t->buf_acct);
		t->buf_acct = 0;
	}
}

/* End a task: it leaves the ITT hash, the transmit queue and the CmdSN
 * window now; it is released (buffer, connection, slot) once no transmit
 * ring slot names it (session.h: transmit references). */
void iscsi_task_free(struct iscsi_task *t)
{
	struct iscsi_session *s = t->sess;
	struct list_head *pos;

	if (!TASK_LIVE(t)) {
		/* Never corrupt the free list, whatever the caller did. */
		iscsi_task_bug(t, "freed twice", __func__);
		return;
	}
	trace_task_end(t);             /* before the buffer goes */
	scsi_cmd_forget(&t->cmd);      /* it is no longer in flight */
	if (t->in_hash)
		iscsi_task_hash_del(t);
	iscsi_cmdsn_forget(t);
	/* A connection may be in the middle of receiving this task's data
	 * (a TMF or an abort from another connection of the session): the
	 * rest of that PDU goes to scratch. */
	list_for_each(pos, &s->conns) {
		struct iscsi_conn *o = list_entry(pos, struct iscsi_conn, sess_link);
		if (o->rx_task == t) {
			o->rx_task = NULL;
			o->rx_data = NULL;
			o->rx_keep = 0;
		}
	}
	if (!list_empty(&t->tx.link))
		list_del(&t->tx.link);
	t->r2t_pending = false;
	if (t->counted) {
		t->counted = false;
		s->active--;
	}
	if (t->tx_refs) {
		t->state = TASK_ZOMBIE;
		return;
	}
	task_release(t);
}

void iscsi_task_tx_put(struct iscsi_task *t)
{
	if (!t->tx_refs) {
		iscsi_task_bug(t, "more ring slots let go than held", __func__);
		return;
	}
	if (--t->tx_refs == 0 && t->state == TASK_ZOMBIE)
		task_release(t);
}

static unsigned itt_hash(uint32_t itt)
{
	return (itt ^ (itt >> 8) ^ (itt >> 16)) & (TASK_HASH_SIZE - 1);
}

void iscsi_task_hash_add(struct iscsi_task *t)
{
	unsigned h = itt_hash(t->itt);

	t->hnext = t->sess->hash[h];
	t->sess->hash[h] = t;
	t->in_hash = true;
}

void iscsi_task_hash_del(struct iscsi_task *t)
{
	struct iscsi_task **pp;

	if (!t->in_hash)
		return;
	for (pp = &t->sess->hash[itt_hash(t->itt)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == t) {
			*pp = t->hnext;
			break;
		}
	}
	t->hnext = NULL;
	t->in_hash = false;
}

struct iscsi_task *iscsi_task_find(struct iscsi_session *s, uint32_t itt)
{
	for (struct iscsi_task *t = s->hash[itt_hash(itt)]; t; t = t->hnext)
		if (t->itt == itt)
			return t;
	return NULL;
}

uint16_t iscsi_session_check_limits(const char *initiator, const uint8_t *isid,
				    const struct iscsi_target *t, bool join)
{
	unsigned conns = 0, sessions = 0;
	struct list_head *pos;

	list_for_each(pos, &registry) {
		struct iscsi_session *s = list_entry(pos, struct iscsi_session, reg_link);

		if (s->closing)
			continue;
		if (t && s->target == t && !s->discovery)
			conns += atomic_load(&s->conn_slots);
		/* a session this login reinstates does not count */
		if (!strcasecmp(s->initiator, initiator) &&
		    !(s->target == t && !memcmp(s->isid, isid, 6)))
			sessions++;
	}
	if (t && conns >= target_runtime->res.max_connections_per_target && target_runtime->res.max_connections_per_target) {
		limit_hit(LIM_CONNECTIONS_PER_TARGET, "target %s has %u connections; login of %s refused",
			  t->iqn, conns, initiator);
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
	}
	if (!join && sessions >= target_runtime->res.max_sessions_per_initiator && target_runtime->res.max_sessions_per_initiator) {
		limit_hit(LIM_SESSIONS_PER_INITIATOR, "initiator %s has %u sessions; login refused",
			  initiator, sessions);
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
	}
	return 0;
}

/* RFC 7143 4.2.2.1: the window is what free task slots allow. */
uint32_t iscsi_session_max_cmdsn(struct iscsi_session *s)
{
	unsigned free_slots = s->active < s->queue_depth ? s->queue_depth - s->active : 0;
	uint32_t max = s->exp_cmdsn - 1 + free_slots;
	uint32_t sent = atomic_load_explicit(&s->max_cmdsn_sent, memory_order_relaxed);

	/* The initiator keeps the highest value it saw: the window ends there
	 * (iscsi_cmdsn_acceptable). One beyond ExpCmdSN - 1 + queue depth
	 * predates the session's first CmdSN. The login of a joining
	 * connection, on another thread, advertises too. */
	while (sent - (s->exp_cmdsn - 1) > s->queue_depth || sn_lt(sent, max))
		if (atomic_compare_exchange_weak_explicit(&s->max_cmdsn_sent, &sent, max,
							  memory_order_relaxed, memory_order_relaxed))
			break;
	return max;
}

void iscsi_session_attach_conn(struct iscsi_session *s, struct iscsi_conn *c)
{
	c->sess = s;
	list_add_tail(&c->sess_link, &s->conns);
	s->n_conns++;
}

static void session_free(struct iscsi_session *s)
{
	iscsi_session_unregister(s);
	if (!s->discovery && s->target)
		scsi_nexus_detach(&s->nexus);
	iscsi_cmdsn_destroy(s);
	free(s->tasks);
	free(s);
}

/* Free the session once no connection and no task in the SCSI layer holds it. */
void iscsi_session_put(struct iscsi_session *s)
{
	if (s->n_conns || !s->closing || atomic_load(&s->conn_slots) || iscsi_cmdsn_busy(s))
		return;
	for (unsigned i = 0; i < s->n_tasks; i++)
		if (s->tasks[i].state != TASK_FREE)
			return;
	session_free(s);
}

void iscsi_session_detach_conn(struct iscsi_session *s, struct iscsi_conn *c)
{
	list_del(&c->sess_link);
	s->n_conns--;
	atomic_fetch_sub(&s->conn_slots, 1);
	/* Tasks with allegiance to this connection end with it (ERL 0). */
	for (unsigned i = 0; i < s->n_tasks; i++) {
		struct iscsi_task *t = &s->tasks[i];
		if (!TASK_LIVE(t) || t->conn != c)
			continue;
		if (t->state == TASK_EXEC) {
			t->state = TASK_ABORTED;
			atomic_store(&t->cmd.aborted, true);
			continue;   /* freed when the backstore completes */
		}
		if (t->state == TASK_ABORTED)
			continue;
		iscsi_task_free(t);
	}
	c->sess = NULL;
	if (!s->n_conns) {
		/* RFC 7143 ERL 0: the session ends with its last connection. */
		s->closing = true;
		iscsi_session_unregister(s);
		iscsi_session_put(s);
	}
}
