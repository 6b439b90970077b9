/*
 * Fault injection at the connection level (targetd-faults(7)): drop a
 * connection after N PDUs or on a command a SCSI rule marked, corrupt a
 * data digest, withhold R2T (conn.c reads the command's mark itself),
 * NOP-In storms, portals that close (a path down, or one that flaps), and
 * logins refused for a while.
 *
 * DESIGN (threads): the rules are a small array under conn_lock, a
 * read-write lock: the network threads (PDUs, the once-a-second timer,
 * logins) and the acceptor thread take it for reading, the control thread
 * for writing when it adds or clears a rule. None of them takes it unless
 * fault_conn_armed is non-zero, so a daemon with no rule pays one branch
 * per seam. What a rule counts is atomic in the rule. Closing a connection
 * happens on the thread that owns it (the PDU or timer seam), never from
 * the control thread: a portal that goes down is noticed by each of its
 * connections within a second.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "scsi/fault.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/fault.h"
#include "targetd/net.h"
#include "targetd/target.h"

struct fault_conn_rule {
	unsigned id;
	struct fault_spec spec;
	char text[512];
	char label[FAULT_NAME_MAX];
	char action[32];
	struct iscsi_target *target;
	uint64_t armed_ms;
	_Atomic uint64_t matched;
	_Atomic uint64_t injected;
};

unsigned fault_conn_armed;

static pthread_rwlock_t conn_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct fault_conn_rule *rules[FAULT_MAX_RULES];
static unsigned n_rules;          /* under conn_lock */
static unsigned n_scsi_rules;     /* SCSI rules that need the transport */

static void armed_update(void)
{
	__atomic_store_n(&fault_conn_armed, n_rules + n_scsi_rules, __ATOMIC_RELAXED);
}

void fault_conn_scsi_rules(unsigned n)
{
	pthread_rwlock_wrlock(&conn_lock);
	n_scsi_rules = n;
	armed_update();
	pthread_rwlock_unlock(&conn_lock);
}

void fault_portal_name(const struct iscsi_portal *p, char *buf, size_t len)
{
	if (strchr(p->host, ':'))
		snprintf(buf, len, "[%s]:%s", p->host, p->port);
	else
		snprintf(buf, len, "%s:%s", p->host, p->port);
}

unsigned fault_conn_add(struct iscsi_target *t, const struct fault_spec *s, unsigned id,
			const char *text, const char *action, char *err, size_t errlen)
{
	struct fault_conn_rule *r;

	if (s->portal[0]) {
		bool found = false;

		for (unsigned i = 0; i < target_runtime->n_portals && !found; i++) {
			char name[80];

			fault_portal_name(&target_runtime->portals[i], name, sizeof(name));
			found = !strcmp(name, s->portal);
		}
		if (!found) {
			snprintf(err, errlen, "portal %s is not one this daemon listens on", s->portal);
			return 0;
		}
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return 0;
	}
	r->id = id;
	r->spec = *s;
	r->target = t;
	r->armed_ms = net_now_ms();
	snprintf(r->text, sizeof(r->text), "%s", text);
	snprintf(r->action, sizeof(r->action), "%s", action);
	if (s->name[0])
		snprintf(r->label, sizeof(r->label), "%s", s->name);
	else
		snprintf(r->label, sizeof(r->label), "rule%u", id);
	pthread_rwlock_wrlock(&conn_lock);
	if (n_rules >= FAULT_MAX_RULES) {
		pthread_rwlock_unlock(&conn_lock);
		free(r);
		snprintf(err, errlen, "%d connection rules armed already", FAULT_MAX_RULES);
		return 0;
	}
	rules[n_rules++] = r;
	armed_update();
	pthread_rwlock_unlock(&conn_lock);
	log_event(LOG_LVL_INFO, "fault_armed", KV_S("rule", r->label), KV_S("target", t ? t->iqn : "any"),
		  KV_S("spec", r->text));
	return id;
}

unsigned fault_conn_count(fault_conn_match_fn *match, void *arg)
{
	unsigned n = 0;

	pthread_rwlock_rdlock(&conn_lock);
	for (unsigned i = 0; i < n_rules; i++)
		n += !match || match(rules[i]->id, rules[i]->label, rules[i]->target, &rules[i]->spec, arg);
	pthread_rwlock_unlock(&conn_lock);
	return n;
}

unsigned fault_conn_remove(fault_conn_match_fn *match, void *arg)
{
	unsigned gone = 0, k = 0;

	pthread_rwlock_wrlock(&conn_lock);
	for (unsigned i = 0; i < n_rules; i++) {
		struct fault_conn_rule *r = rules[i];

		if (match && !match(r->id, r->label, r->target, &r->spec, arg)) {
			rules[k++] = r;
			continue;
		}
		log_event(LOG_LVL_INFO, "fault_cleared", KV_S("rule", r->label));
		free(r);   /* readers hold conn_lock: nobody still sees r */
		gone++;
	}
	n_rules = k;
	armed_update();
	pthread_rwlock_unlock(&conn_lock);
	return gone;
}

void fault_conn_for_each(void (*fn)(unsigned id, const char *label, const char *text,
				    const struct iscsi_target *t, uint64_t matched, uint64_t injected,
				    void *arg),
			 void *arg)
{
	pthread_rwlock_rdlock(&conn_lock);
	for (unsigned i = 0; i < n_rules; i++)
		fn(rules[i]->id, rules[i]->label, rules[i]->text, rules[i]->target,
		   atomic_load(&rules[i]->matched), atomic_load(&rules[i]->injected), arg);
	pthread_rwlock_unlock(&conn_lock);
}

/* ---- matching ---------------------------------------------------------- */

/* Inside the rule's time window (relative to when it was armed)? */
static bool in_window(const struct fault_conn_rule *r, uint64_t now_ms)
{
	uint64_t from = r->armed_ms + r->spec.after_ns / 1000000u;

	if (now_ms < from)
		return false;
	return !r->spec.duration_ns || now_ms - from < r->spec.duration_ns / 1000000u;
}

static bool portal_match(const struct fault_conn_rule *r, const struct iscsi_portal *p)
{
	char name[80];

	if (!r->spec.portal[0])
		return true;
	if (!p)
		return false;
	fault_portal_name(p, name, sizeof(name));
	return !strcmp(name, r->spec.portal);
}

/* A full-feature connection in the rule's scope. */
static bool conn_match(const struct fault_conn_rule *r, const struct iscsi_conn *c)
{
	const struct iscsi_session *s = c->sess;

	if (!s || s->discovery || (r->target && s->target != r->target))
		return false;
	if (r->spec.initiator[0] && strcasecmp(r->spec.initiator, s->initiator))
		return false;
	return portal_match(r, c->portal);
}

static bool take(struct fault_conn_rule *r, uint64_t *nth)
{
	uint64_t h = atomic_load_explicit(&r->injected, memory_order_relaxed);

	do {
		if (r->spec.count && h >= r->spec.count)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&r->injected, &h, h + 1, memory_order_relaxed,
							 memory_order_relaxed));
	*nth = h + 1;
	return true;
}

static void count_fault(const struct iscsi_conn *c)
{
	const struct iscsi_session *s = c->sess;

	/* the LUN counters have no place for target-wide faults: LUN 0 gets them */
	if (s && s->target)
		scsi_fault_injected(scsi_target_lun(&s->target->st, 0));
}

/* Is the portal down now under a close-portal rule? */
static bool portal_down(const struct fault_conn_rule *r, uint64_t now_ms)
{
	uint64_t since;

	if (r->spec.action != FAULT_CLOSE_PORTAL || !in_window(r, now_ms))
		return false;
	if (!r->spec.period_ns)
		return true;
	since = now_ms - (r->armed_ms + r->spec.after_ns / 1000000u);
	return since % (r->spec.period_ns / 1000000u) < r->spec.down_ns / 1000000u;
}

/* ---- the seams --------------------------------------------------------- */

bool fault_conn_rx(struct iscsi_conn *c)
{
	char why[96] = "";

	/* a command a SCSI rule marked: drop before it runs */
	if (c->rx_task && bhs_opcode(c->bhs) == ISCSI_OP_SCSI_CMD &&
	    (c->rx_task->cmd.xfault & SCSI_FAULT_X_DROP)) {
		iscsi_conn_close(c, "fault injection: drop on a matching command");
		return true;
	}
	pthread_rwlock_rdlock(&conn_lock);
	for (unsigned i = 0; i < n_rules && !why[0]; i++) {
		struct fault_conn_rule *r = rules[i];
		uint64_t n, nth;

		if (r->spec.action != FAULT_DROP_AFTER || !conn_match(r, c) ||
		    !in_window(r, c->thread->now_ms))
			continue;
		n = atomic_fetch_add_explicit(&r->matched, 1, memory_order_relaxed) + 1;
		if (n % r->spec.pdus || !take(r, &nth))
			continue;
		log_debug_event("fault_injected", KV_S("rule", r->label), KV_S("action", r->action),
				KV_S("peer", c->peer), KV_U("pdu", n), KV_U("injection", nth));
		snprintf(why, sizeof(why), "fault injection: %s after %u PDUs", r->label, r->spec.pdus);
	}
	pthread_rwlock_unlock(&conn_lock);
	if (!why[0])
		return false;
	count_fault(c);
	iscsi_conn_close(c, why);
	return true;
}

/* At most this much of a storm waits unsent on a connection that does not
 * read (the resource limit of unsent responses when there is one). */
#define NOP_STORM_BACKLOG (1u << 20)

static void nop_storm(struct iscsi_conn *c, struct fault_conn_rule *r)
{
	size_t cap = target_runtime->res.max_pending_tx_per_connection ? target_runtime->res.max_pending_tx_per_connection
							   : NOP_STORM_BACKLOG;

	for (uint32_t k = 0; k < r->spec.rate && !c->dead && c->tx_bytes < cap; k++) {
		/* RFC 7143 11.19: TTT 0xffffffff, no answer asked for */
		struct tx_pdu *p;
		uint64_t nth;

		if (!take(r, &nth) || !(p = iscsi_pdu_new(ISCSI_OP_NOP_IN, 0)))
			return;
		put_be32(p->bhs + 16, ISCSI_RSVD_TAG);
		put_be32(p->bhs + 20, ISCSI_RSVD_TAG);
		p->set_statsn = true;
		p->advance_statsn = false;
		iscsi_conn_queue_pdu(c, p);
	}
}

void fault_conn_timer(struct iscsi_conn *c, uint64_t now_ms)
{
	const char *down = NULL;

	pthread_rwlock_rdlock(&conn_lock);
	for (unsigned i = 0; i < n_rules && !down; i++) {
		struct fault_conn_rule *r = rules[i];

		if (portal_down(r, now_ms) && portal_match(r, c->portal)) {
			uint64_t nth;

			atomic_fetch_add_explicit(&r->matched, 1, memory_order_relaxed);
			if (take(r, &nth)) {
				log_debug_event("fault_injected", KV_S("rule", r->label),
						KV_S("action", r->action),
						KV_S("portal", r->spec.portal[0] ? r->spec.portal : "any"),
						KV_S("peer", c->peer), KV_U("injection", nth));
				down = r->label;
			}
		} else if (r->spec.action == FAULT_NOP_STORM && c->state == CONN_FULL && conn_match(r, c) &&
			   in_window(r, now_ms)) {
			atomic_fetch_add_explicit(&r->matched, 1, memory_order_relaxed);
			nop_storm(c, r);
		}
	}
	pthread_rwlock_unlock(&conn_lock);
	if (down) {
		count_fault(c);
		iscsi_conn_close(c, "fault injection: portal down");
	}
}

bool fault_conn_refuse_accept(const struct iscsi_portal *p)
{
	uint64_t now = net_now_ms();
	bool refuse = false;

	pthread_rwlock_rdlock(&conn_lock);
	for (unsigned i = 0; i < n_rules && !refuse; i++) {
		struct fault_conn_rule *r = rules[i];

		uint64_t nth;

		if (portal_down(r, now) && portal_match(r, p)) {
			atomic_fetch_add_explicit(&r->matched, 1, memory_order_relaxed);
			if (!take(r, &nth))
				continue;
			refuse = true;
			log_debug_event("fault_injected", KV_S("rule", r->label), KV_S("action", r->action),
					KV_S("host", p->host), KV_S("port", p->port), KV_U("injection", nth));
		}
	}
	pthread_rwlock_unlock(&conn_lock);
	return refuse;
}

bool fault_conn_refuse_login(struct iscsi_conn *c, const struct iscsi_target *t,
			     const char *initiator, uint16_t *status)
{
	bool refuse = false;

	pthread_rwlock_rdlock(&conn_lock);
	for (unsigned i = 0; i < n_rules && !refuse; i++) {
		struct fault_conn_rule *r = rules[i];
		uint64_t nth;

		if (r->spec.action != FAULT_REFUSE_LOGIN || (r->target && r->target != t) ||
		    (r->spec.initiator[0] && strcasecmp(r->spec.initiator, initiator)) ||
		    !portal_match(r, c->portal) || !in_window(r, net_now_ms()))
			continue;
		atomic_fetch_add_explicit(&r->matched, 1, memory_order_relaxed);
		if (!take(r, &nth))
			continue;
		log_debug_event("fault_injected", KV_S("rule", r->label), KV_S("action", r->action),
				KV_S("initiator", initiator), KV_S("peer", c->peer),
				KV_X("status", r->spec.login_status), KV_U("injection", nth));
		*status = r->spec.login_status;
		refuse = true;
	}
	pthread_rwlock_unlock(&conn_lock);
	if (refuse && t)
		scsi_fault_injected(scsi_target_lun(&t->st, 0));
	return refuse;
}

void fault_conn_digest(struct iscsi_conn *c, struct iscsi_task *t, struct tx_slot *sl)
{
	t->cmd.xfault &= (uint8_t)~SCSI_FAULT_X_DIGEST;   /* the first data PDU only */
	if (!c->ddigest || sl->iovcnt < 3) {
		log_debug_event("fault_not_injected", KV_S("action", "corrupt-digest"), KV_X("itt", t->itt),
				KV_S("peer", c->peer), KV_S("why", "no data digest on the connection"));
		return;
	}
	/* the digest is the last 4 bytes of the trailer (pad + CRC32C) */
	((uint8_t *)sl->iov[2].iov_base)[sl->iov[2].iov_len - 1] ^= 0x5a;
	log_debug_event("fault_injected", KV_S("action", "corrupt-digest"), KV_X("itt", t->itt),
			KV_S("peer", c->peer));
}
