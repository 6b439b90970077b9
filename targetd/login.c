/*
 * Login (RFC 7143 6, 11.12-11.13), CHAP authentication (RFC 7143 12.1.3),
 * session creation and reinstatement, and Text requests (SendTargets,
 * RFC 7143 11.10-11.11 and appendix C).
 *
 * DESIGN: a connection logs in on whatever network thread accepted it; the
 * login state lives in struct iscsi_login, freed once the connection
 * reaches full feature phase. Session lookups take the registry lock
 * (session.c). A connection joining a session owned by another thread is
 * handed to that thread after its last Login Response is laid out.
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "targetd/chap.h"
#include "targetd/conn.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"

enum auth_state {
	AUTH_NONE_YET,      /* AuthMethod not negotiated */
	AUTH_WAIT_CHAP_A,   /* AuthMethod=CHAP chosen */
	AUTH_WAIT_CHAP_R,   /* challenge sent */
	AUTH_DONE,
};

struct iscsi_login {
	bool first_done;
	uint8_t isid[6];
	uint16_t tsih;
	uint16_t cid;
	uint32_t itt;
	uint32_t cmdsn;
	uint8_t stage;                  /* current stage */
	char initiator[224];
	char initiator_alias[256];
	bool have_initiator;
	bool discovery;
	bool session_type_seen;
	struct iscsi_target *target;
	enum auth_state auth;
	bool auth_needed;
	uint8_t chap_id;
	uint8_t chap_challenge[CHAP_CHALLENGE_LEN];
	struct iscsi_params params;
	char *acc;                      /* request text accumulated across C bits */
	size_t acc_len;
	bool tpgt_sent;
};

static void login_free_state(struct iscsi_login *l)
{
	free(l->acc);
	free(l);
}

void iscsi_login_free(struct iscsi_conn *c)
{
	if (c->login) {
		login_free_state(c->login);
		c->login = NULL;
	}
}

/* Build and queue a Login Response. */
static void login_respond(struct iscsi_conn *c, uint16_t status, bool transit, uint8_t csg,
			  uint8_t nsg, struct iscsi_text *txt, bool close_after)
{
	struct iscsi_login *l = c->login;
	struct tx_pdu *p = iscsi_pdu_new(ISCSI_OP_LOGIN_RSP, txt ? (uint32_t)txt->len : 0);

	if (!p) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	p->bhs[1] = (uint8_t)((transit ? ISCSI_LOGIN_TRANSIT : 0) | (csg << 2) | (transit ? nsg : 0));
	p->bhs[2] = 0x00;      /* version-max */
	p->bhs[3] = 0x00;      /* version-active */
	memcpy(p->bhs + 8, l->isid, 6);
	put_be16(p->bhs + 14, status ? 0 : l->tsih);
	put_be32(p->bhs + 16, l->itt);
	put_be32(p->bhs + 24, c->stat_sn++);
	if (c->pending_session && !status) {
		put_be32(p->bhs + 28, c->pending_session->exp_cmdsn);
		put_be32(p->bhs + 32, iscsi_session_max_cmdsn(c->pending_session));
	} else {
		put_be32(p->bhs + 28, l->cmdsn);
		put_be32(p->bhs + 32, l->cmdsn);
	}
	p->bhs[36] = (uint8_t)(status >> 8);
	p->bhs[37] = (uint8_t)status;
	if (txt && txt->len)
		memcpy(p->data, txt->data, txt->len);
	p->close_after = close_after;
	iscsi_conn_queue_pdu(c, p);
}

static void login_fail(struct iscsi_conn *c, uint16_t status, const char *why)
{
	log_info("login from %s refused (%#06x): %s", c->peer, status, why);
	login_respond(c, status, false, c->login->stage, 0, NULL, true);
	c->state = CONN_LOGOUT;
	iscsi_conn_flush(c);
}

static bool valid_iscsi_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 4 || n > 223)
		return false;
	return !strncmp(s, "iqn.", 4) || !strncmp(s, "eui.", 4) || !strncmp(s, "naa.", 4);
}

/* ---- CHAP ---------------------------------------------------------- */

static int chap_offer(struct iscsi_conn *c, const char *algs, struct iscsi_text *resp)
{
	struct iscsi_login *l = c->login;
	char hex[2 * CHAP_CHALLENGE_LEN + 3];
	char *dup = strdup(algs), *save = NULL;
	bool md5 = false;

	if (!dup)
		return -1;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, "5"))
			md5 = true;
	free(dup);
	if (!md5) {
		iscsi_text_add(resp, "CHAP_A", "Reject");
		return -1;
	}
	if (chap_random(&l->chap_id, 1) || chap_random(l->chap_challenge, sizeof(l->chap_challenge)))
		return -1;
	chap_encode_hex(l->chap_challenge, sizeof(l->chap_challenge), hex);
	iscsi_text_add(resp, "CHAP_A", "5");
	iscsi_text_add(resp, "CHAP_I", "%u", l->chap_id);
	iscsi_text_add(resp, "CHAP_C", "%s", hex);
	l->auth = AUTH_WAIT_CHAP_R;
	return 0;
}

/* Verify CHAP_N/CHAP_R; answer a mutual challenge. Returns a login status. */
static uint16_t chap_verify(struct iscsi_conn *c, const char *n, const char *r,
			    const char *ci, const char *cc, struct iscsi_text *resp)
{
	struct iscsi_login *l = c->login;
	struct iscsi_target *t = l->target;
	uint8_t got[CHAP_MAX_BINARY], want[CHAP_MD5_LEN];
	int len;

	if (!n || !r)
		return ISCSI_LOGIN_AUTH_FAILED;
	if (strcmp(n, t->chap_user))
		return ISCSI_LOGIN_AUTH_FAILED;
	len = chap_decode(r, got, sizeof(got));
	if (len != CHAP_MD5_LEN)
		return ISCSI_LOGIN_AUTH_FAILED;
	if (chap_md5_response(l->chap_id, t->chap_secret, strlen(t->chap_secret),
			      l->chap_challenge, sizeof(l->chap_challenge), want))
		return ISCSI_LOGIN_TARGET_ERROR;
	if (!chap_equal(got, want, CHAP_MD5_LEN))
		return ISCSI_LOGIN_AUTH_FAILED;
	if (ci || cc) {
		/* Mutual CHAP: the initiator authenticates the target. */
		uint8_t chal[CHAP_MAX_BINARY], rsp[CHAP_MD5_LEN];
		char hex[2 * CHAP_MD5_LEN + 3];
		char *end;
		unsigned long id;
		int clen;

		if (!ci || !cc || !t->chap_mutual_user)
			return ISCSI_LOGIN_AUTH_FAILED;
		errno = 0;
		id = strtoul(ci, &end, 0);
		if (errno || *end || id > 255)
			return ISCSI_LOGIN_AUTH_FAILED;
		clen = chap_decode(cc, chal, sizeof(chal));
		if (clen <= 0)
			return ISCSI_LOGIN_AUTH_FAILED;
		/* Refuse a reflected challenge (RFC 7143 12.1.3). */
		if (clen == (int)sizeof(l->chap_challenge) &&
		    !memcmp(chal, l->chap_challenge, sizeof(l->chap_challenge)))
			return ISCSI_LOGIN_AUTH_FAILED;
		if (chap_md5_response((uint8_t)id, t->chap_mutual_secret, strlen(t->chap_mutual_secret),
				      chal, (size_t)clen, rsp))
			return ISCSI_LOGIN_TARGET_ERROR;
		chap_encode_hex(rsp, sizeof(rsp), hex);
		iscsi_text_add(resp, "CHAP_N", "%s", t->chap_mutual_user);
		iscsi_text_add(resp, "CHAP_R", "%s", hex);
	}
	l->auth = AUTH_DONE;
	return ISCSI_LOGIN_OK;
}

/* ---- session establishment ------------------------------------------- */

/* Called when the final Login Response is about to be sent. Returns a
 * login status. */
static uint16_t login_attach_session(struct iscsi_conn *c)
{
	struct iscsi_login *l = c->login;
	struct iscsi_session *s, *old = NULL;
	uint16_t limit;

	iscsi_session_registry_lock();
	limit = iscsi_session_check_limits(l->initiator, l->isid, l->discovery ? NULL : l->target, l->tsih != 0);
	if (limit) {
		iscsi_session_registry_unlock();
		return limit;
	}
	if (l->tsih) {
		/* A connection joining an existing session. */
		s = iscsi_session_lookup_tsih(l->tsih);
		if (!s || strcmp(s->initiator, l->initiator) || memcmp(s->isid, l->isid, 6) ||
		    s->target != l->target || s->discovery != l->discovery) {
			iscsi_session_registry_unlock();
			return ISCSI_LOGIN_NO_SESSION;
		}
		if (atomic_load(&s->conn_slots) >= s->params.max_connections) {
			iscsi_session_registry_unlock();
			return ISCSI_LOGIN_TOO_MANY_CONNS;
		}
		atomic_fetch_add(&s->conn_slots, 1);
		iscsi_session_registry_unlock();
		c->pending_session = s;
		return ISCSI_LOGIN_OK;
	}
	s = iscsi_session_new(c);
	if (!s) {
		iscsi_session_registry_unlock();
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
	}
	if (!l->discovery)
		old = iscsi_session_lookup_isid(l->initiator, l->isid, l->target);
	if (old) {
		/* Session reinstatement (RFC 7143 6.3.5): the old one goes. Its
		 * owner closes it; here it only leaves the registry. */
		list_del(&old->reg_link);
		old->registered = false;
		iscsi_session_registry_forget();
		net_send(old->thread, MSG_CLOSE_SESSION, -1, NULL, old->id);
	}
	memcpy(s->isid, l->isid, 6);
	snprintf(s->initiator, sizeof(s->initiator), "%s", l->initiator);
	snprintf(s->initiator_alias, sizeof(s->initiator_alias), "%s", l->initiator_alias);
	s->discovery = l->discovery;
	s->target = l->target;
	s->params = l->params;
	s->exp_cmdsn = l->cmdsn;
	atomic_store(&s->conn_slots, 1);
	iscsi_session_register(s);
	iscsi_session_registry_unlock();
	l->tsih = s->tsih;
	if (!s->discovery) {
		struct scsi_nexus *n = &s->nexus;
		n->id = s->id;
		memcpy(n->isid, s->isid, 6);
		snprintf(n->initiator_name, sizeof(n->initiator_name), "%s", s->initiator);
		snprintf(n->initiator_port, sizeof(n->initiator_port), "%s,i,0x%02x%02x%02x%02x%02x%02x",
			 s->initiator, s->isid[0], s->isid[1], s->isid[2], s->isid[3], s->isid[4], s->isid[5]);
		n->tpgt = c->tpgt;
		n->rel_tport_id = c->tpgt;
		n->priv = s;
		scsi_nexus_attach(&s->target->st, n);
	}
	c->pending_session = s;
	return ISCSI_LOGIN_OK;
}

/* The final Login Response has been laid out: enter full feature phase. */
static void login_enter_ffp(struct iscsi_conn *c)
{
	struct iscsi_login *l = c->login;
	struct iscsi_session *s = c->pending_session;

	c->pending_session = NULL;
	c->hdigest = l->params.header_digest;
	c->ddigest = l->params.data_digest;
	c->max_send_dsl = l->params.max_recv_dsl_initiator;
	c->max_recv_dsl = l->params.max_recv_dsl_target;
	c->cid = l->cid;
	c->state = CONN_FULL;
	iscsi_login_free(c);
	if (s->thread != c->thread) {
		/* Every connection of a session lives on the session's thread:
		 * iscsi_conn_event() hands c over once this thread is done
		 * with it (bytes already received are parsed over there). */
		c->pending_session = s;
		c->handoff = true;
		return;
	}
	iscsi_conn_join(c, s);
}

/* Attach a logged-in connection to its session, on the session's thread.
 * Connection reinstatement: the same CID replaces an old connection. */
void iscsi_conn_join(struct iscsi_conn *c, struct iscsi_session *s)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &s->conns) {
		struct iscsi_conn *o = list_entry(pos, struct iscsi_conn, sess_link);
		if (o->cid == c->cid)
			iscsi_conn_close(o, "connection reinstated");
	}
	iscsi_session_attach_conn(s, c);
}

/* ---- the Login Request ----------------------------------------------- */

static bool is_security_key(const char *k)
{
	return !strcmp(k, "AuthMethod") || !strncmp(k, "CHAP_", 5);
}

void iscsi_login_rx(struct iscsi_conn *c)
{
	struct iscsi_login *l = c->login;
	const uint8_t *b = c->bhs;
	bool transit = b[1] & ISCSI_LOGIN_TRANSIT;
	bool cont = b[1] & ISCSI_LOGIN_CONTINUE;
	uint8_t csg = ISCSI_LOGIN_CSG(b[1]), nsg = ISCSI_LOGIN_NSG(b[1]);
	struct iscsi_text resp = { 0 };
	struct iscsi_kv kv[256];
	int nkv;
	uint16_t status = ISCSI_LOGIN_OK;
	const char *chap_n = NULL, *chap_r = NULL, *chap_i = NULL, *chap_c = NULL;
	const char *target_name = NULL;

	if (!l) {
		l = c->login = calloc(1, sizeof(*l));
		if (!l) {
			iscsi_conn_close(c, "out of memory");
			return;
		}
		memcpy(l->isid, b + 8, 6);
		l->tsih = get_be16(b + 14);
		l->itt = bhs_itt(b);
		l->cid = get_be16(b + 20);
		l->cmdsn = get_be32(b + 24);
		c->stat_sn = get_be32(b + 28);
		l->stage = csg;
		c->login_exp_cmdsn = l->cmdsn;
		iscsi_params_init(&l->params, &rt->limits);
		/* RFC 7143 11.12.4: Version-min must not exceed what we speak (0). */
		if (b[3] > 0) {
			login_fail(c, ISCSI_LOGIN_UNSUPPORTED_VER, "unsupported version");
			return;
		}
	} else if (memcmp(l->isid, b + 8, 6) || l->tsih != get_be16(b + 14) ||
		   l->cid != get_be16(b + 20)) {
		login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "ISID/TSIH/CID changed during login");
		return;
	}
	l->itt = bhs_itt(b);
	if (csg != l->stage || csg == 2 || (transit && (nsg == 2 || nsg <= csg)) ||
	    (cont && transit)) {
		login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "invalid stage transition");
		return;
	}
	if (c->data_digest_bad) {
		login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "digest error during login");
		return;
	}

	/* Accumulate text across PDUs with the C bit. */
	if (c->dlen) {
		if (l->acc_len + c->dlen > ISCSI_TEXT_MAX) {
			login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "login text too long");
			return;
		}
		char *n = realloc(l->acc, l->acc_len + c->dlen + 1);
		if (!n) {
			iscsi_conn_close(c, "out of memory");
			return;
		}
		l->acc = n;
		memcpy(l->acc + l->acc_len, c->rx_owned, c->dlen);
		l->acc_len += c->dlen;
		l->acc[l->acc_len] = 0;
	}
	if (cont) {
		/* RFC 7143 6.4: answer with an empty response and wait. */
		login_respond(c, 0, false, csg, 0, NULL, false);
		return;
	}

	nkv = l->acc_len ? iscsi_kv_parse(l->acc, l->acc_len, kv, (int)ARRAY_SIZE(kv)) : 0;
	if (nkv < 0) {
		login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "malformed login text");
		return;
	}

	for (int i = 0; i < nkv; i++) {
		const char *k = kv[i].key, *v = kv[i].value;

		if (!strcmp(k, "InitiatorName")) {
			if (l->have_initiator || !valid_iscsi_name(v)) {
				login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "bad InitiatorName");
				goto out;
			}
			snprintf(l->initiator, sizeof(l->initiator), "%s", v);
			l->have_initiator = true;
		} else if (!strcmp(k, "InitiatorAlias")) {
			snprintf(l->initiator_alias, sizeof(l->initiator_alias), "%s", v);
		} else if (!strcmp(k, "SessionType")) {
			if (!strcmp(v, "Discovery"))
				l->discovery = true;
			else if (strcmp(v, "Normal")) {
				login_fail(c, ISCSI_LOGIN_SESSION_TYPE, "unknown SessionType");
				goto out;
			}
			l->session_type_seen = true;
		} else if (!strcmp(k, "TargetName")) {
			target_name = v;
		} else if (is_security_key(k)) {
			if (csg != ISCSI_STAGE_SECURITY) {
				login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "security key outside the security stage");
				goto out;
			}
			if (!strcmp(k, "AuthMethod")) {
				/* handled below, once the target is known */
				continue;
			} else if (!strcmp(k, "CHAP_N")) {
				chap_n = v;
			} else if (!strcmp(k, "CHAP_R")) {
				chap_r = v;
			} else if (!strcmp(k, "CHAP_I")) {
				chap_i = v;
			} else if (!strcmp(k, "CHAP_C")) {
				chap_c = v;
			} else if (!strcmp(k, "CHAP_A")) {
				continue;
			} else {
				iscsi_text_add(&resp, k, "NotUnderstood");
			}
		} else {
			enum iscsi_neg r = iscsi_params_negotiate(&l->params, &rt->limits,
								  l->tsih == 0, l->discovery, k, v, &resp);
			if (r == NEG_FATAL) {
				login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "bad operational key");
				goto out;
			}
			if (r == NEG_UNKNOWN) {
				if (!strcmp(k, "TargetAlias") || !strcmp(k, "TargetAddress") ||
				    !strcmp(k, "TargetPortalGroupTag"))
					iscsi_text_add(&resp, k, "Irrelevant");
				else
					iscsi_text_add(&resp, k, "NotUnderstood");
			}
		}
	}

	if (!l->first_done) {
		l->first_done = true;
		if (!l->have_initiator) {
			login_fail(c, ISCSI_LOGIN_MISSING_PARAM, "no InitiatorName");
			goto out;
		}
		if (!l->discovery) {
			if (!target_name) {
				login_fail(c, ISCSI_LOGIN_MISSING_PARAM, "no TargetName");
				goto out;
			}
			l->target = target_find(target_name);
			if (!l->target) {
				login_fail(c, ISCSI_LOGIN_NOT_FOUND, "unknown target");
				goto out;
			}
			if (!target_initiator_allowed(l->target, l->initiator)) {
				login_fail(c, ISCSI_LOGIN_AUTHZ_FAILED, "initiator not on the allow-list");
				goto out;
			}
			l->auth_needed = l->target->chap;
			if (l->target->alias[0])
				iscsi_text_add(&resp, "TargetAlias", "%s", l->target->alias);
			iscsi_text_add(&resp, "TargetPortalGroupTag", "%u", c->tpgt);
			l->tpgt_sent = true;
		}
	} else if (target_name && (!l->target || strcmp(target_name, l->target->iqn))) {
		login_fail(c, ISCSI_LOGIN_INITIATOR_ERROR, "TargetName changed during login");
		goto out;
	}

	/* Authentication. */
	if (csg == ISCSI_STAGE_SECURITY) {
		const char *am = NULL, *ca = NULL;
		for (int i = 0; i < nkv; i++) {
			if (!strcmp(kv[i].key, "AuthMethod"))
				am = kv[i].value;
			else if (!strcmp(kv[i].key, "CHAP_A"))
				ca = kv[i].value;
		}
		if (am) {
			bool has_chap = false, has_none = false;
			char *dup = strdup(am), *save = NULL;
			if (!dup) {
				iscsi_conn_close(c, "out of memory");
				goto out;
			}
			for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (!strcmp(tok, "CHAP"))
					has_chap = true;
				else if (!strcmp(tok, "None"))
					has_none = true;
			}
			free(dup);
			if (l->auth_needed) {
				if (!has_chap) {
					iscsi_text_add(&resp, "AuthMethod", "Reject");
					login_fail(c, ISCSI_LOGIN_AUTH_FAILED, "CHAP required");
					goto out;
				}
				iscsi_text_add(&resp, "AuthMethod", "CHAP");
				l->auth = AUTH_WAIT_CHAP_A;
			} else if (has_none) {
				iscsi_text_add(&resp, "AuthMethod", "None");
				l->auth = AUTH_DONE;
			} else {
				iscsi_text_add(&resp, "AuthMethod", "Reject");
				login_fail(c, ISCSI_LOGIN_AUTH_FAILED, "no acceptable AuthMethod");
				goto out;
			}
		}
		if (ca) {
			if (l->auth != AUTH_WAIT_CHAP_A || chap_offer(c, ca, &resp)) {
				login_fail(c, ISCSI_LOGIN_AUTH_FAILED, "CHAP_A not acceptable");
				goto out;
			}
		} else if (chap_n || chap_r) {
			if (l->auth != AUTH_WAIT_CHAP_R) {
				login_fail(c, ISCSI_LOGIN_AUTH_FAILED, "unexpected CHAP response");
				goto out;
			}
			status = chap_verify(c, chap_n, chap_r, chap_i, chap_c, &resp);
			if (status) {
				login_fail(c, status, "CHAP authentication failed");
				goto out;
			}
		}
		if (!l->auth_needed && l->auth == AUTH_NONE_YET && transit)
			l->auth = AUTH_DONE;   /* no AuthMethod key sent: None */
	} else if (l->auth_needed && l->auth != AUTH_DONE) {
		login_fail(c, ISCSI_LOGIN_AUTH_FAILED, "authentication required");
		goto out;
	}

	/* Stage transition. */
	if (transit) {
		if (csg == ISCSI_STAGE_SECURITY && l->auth != AUTH_DONE) {
			if (l->auth_needed) {
				/* still in the middle of CHAP: stay */
				transit = false;
			} else {
				l->auth = AUTH_DONE;
			}
		}
	}
	if (transit && nsg == ISCSI_STAGE_FULL_FEATURE) {
		iscsi_params_finish(&l->params, &rt->limits, l->discovery, &resp);
		status = login_attach_session(c);
		if (status) {
			login_fail(c, status, "cannot attach the session");
			goto out;
		}
		login_respond(c, 0, true, csg, nsg, &resp, false);
		iscsi_conn_flush(c);   /* lay out the response before digests switch on */
		if (!c->dead)
			login_enter_ffp(c);
		goto out;
	}
	if (transit)
		l->stage = nsg;
	free(l->acc);
	l->acc = NULL;
	l->acc_len = 0;
	login_respond(c, 0, transit, csg, nsg, &resp, false);
out:
	iscsi_text_free(&resp);
	if (c->login) {
		free(c->login->acc);
		c->login->acc = NULL;
		c->login->acc_len = 0;
	}
}

/* ---- Text requests: SendTargets ------------------------------------- */

static void add_portal_addresses(struct iscsi_conn *c, struct iscsi_text *t)
{
	for (unsigned i = 0; i < rt->n_portals; i++) {
		struct iscsi_portal *p = &rt->portals[i];
		const char *host = p->host;
		char local[64];
		bool v6;

		if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::")) {
			snprintf(local, sizeof(local), "%s", c->local);
			host = local;
		}
		v6 = strchr(host, ':') != NULL;
		iscsi_text_add(t, "TargetAddress", v6 ? "[%s]:%s,%u" : "%s:%s,%u", host, p->port, p->tpgt);
	}
}

static void send_targets(struct iscsi_conn *c, const char *which, struct iscsi_text *t)
{
	struct iscsi_session *s = c->sess;

	for (unsigned i = 0; i < rt->n_targets; i++) {
		struct iscsi_target *tg = &rt->targets[i];
		if (!strcmp(which, "All")) {
			if (!s->discovery && tg != s->target)
				continue;
		} else if (which[0]) {
			if (strcmp(which, tg->iqn))
				continue;
		} else if (tg != s->target) {
			continue;
		}
		if (!target_initiator_allowed(tg, s->initiator))
			continue;
		iscsi_text_add(t, "TargetName", "%s", tg->iqn);
		add_portal_addresses(c, t);
	}
}

/* Send the next chunk of a long Text Response (RFC 7143 11.11: C bit). */
static void text_send_chunk(struct iscsi_conn *c, uint32_t itt)
{
	uint32_t left = (uint32_t)(c->text_len - c->text_off);
	uint32_t n = MIN(left, c->max_send_dsl);
	bool more = n < left;
	struct tx_pdu *p = iscsi_pdu_new(ISCSI_OP_TEXT_RSP, n);

	if (!p) {
		iscsi_conn_close(c, "out of memory");
		return;
	}
	p->bhs[1] = more ? ISCSI_TEXT_CONTINUE : ISCSI_FLAG_FINAL;
	put_be32(p->bhs + 16, itt);
	put_be32(p->bhs + 20, more ? (c->text_ttt = (c->text_ttt + 1) & 0x7fffffff) : ISCSI_RSVD_TAG);
	if (n)   /* an empty response has neither buffer */
		memcpy(p->data, c->text_buf + c->text_off, n);
	c->text_off += n;
	p->set_statsn = p->advance_statsn = true;
	iscsi_conn_queue_pdu(c, p);
	if (!more) {
		free(c->text_buf);
		c->text_buf = NULL;
		c->text_len = c->text_off = 0;
	}
}

void iscsi_text_rx(struct iscsi_conn *c)
{
	struct iscsi_session *s = c->sess;
	const uint8_t *b = c->bhs;
	uint32_t ttt = get_be32(b + 20);
	struct iscsi_text resp = { 0 };
	struct iscsi_kv kv[64];
	int nkv;

	if (!bhs_immediate(b)) {
		uint32_t cmdsn = get_be32(b + 24);
		if (sn_lt(cmdsn, s->exp_cmdsn) || sn_lt(iscsi_session_max_cmdsn(s), cmdsn))
			return;
		cmdsn_received(s, cmdsn);
	}
	if (b[1] & ISCSI_TEXT_CONTINUE) {
		iscsi_conn_reject(c, ISCSI_REJECT_PROTOCOL_ERROR, b);
		return;
	}
	if (ttt != ISCSI_RSVD_TAG) {
		if (!c->text_buf || ttt != c->text_ttt) {
			iscsi_conn_reject(c, ISCSI_REJECT_INVALID_FIELD, b);
			return;
		}
		text_send_chunk(c, bhs_itt(b));
		return;
	}
	free(c->text_buf);
	c->text_buf = NULL;
	nkv = c->dlen ? iscsi_kv_parse((char *)c->rx_owned, c->dlen, kv, (int)ARRAY_SIZE(kv)) : 0;
	if (nkv < 0) {
		iscsi_conn_reject(c, ISCSI_REJECT_PROTOCOL_ERROR, b);
		return;
	}
	for (int i = 0; i < nkv; i++) {
		if (!strcmp(kv[i].key, "SendTargets"))
			send_targets(c, kv[i].value, &resp);
		else if (!strncmp(kv[i].key, "X-", 2) || !strncmp(kv[i].key, "X#", 2))
			iscsi_text_add(&resp, kv[i].key, "NotUnderstood");
		else
			iscsi_text_add(&resp, kv[i].key, "Irrelevant");
	}
	if (resp.len > rt->res.max_text_response && rt->res.max_text_response) {
		limit_hit(LIM_TEXT_RESPONSE, "connection %s: a %zu-byte Text Response; rejected", c->peer, resp.len);
		iscsi_text_free(&resp);
		iscsi_conn_reject(c, ISCSI_REJECT_LONG_OP, b);
		return;
	}
	c->text_buf = resp.data;
	c->text_len = resp.len;
	c->text_off = 0;
	resp.data = NULL;
	text_send_chunk(c, bhs_itt(b));
}
