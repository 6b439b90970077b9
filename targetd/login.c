/*
 * Login (RFC 7143 6, 11.12-11.13), CHAP authentication (RFC 7143 12.1.3),
 * session creation and reinstatement, and Text requests (SendTargets,
 * RFC 7143 11.10-11.11 and appendix C).
 *
 * A Login Request goes through explicit stages (targetd/login.h):
 *   header       version, ISID/TSIH/CID unchanged, legal stage transition
 *   gather       text across C bits (an empty response each time)
 *   keys         declarative keys (InitiatorName, SessionType, TargetName),
 *                security keys collected, operational keys negotiated
 *   first        the first complete request: names, target, ACL
 *   security     AuthMethod and the CHAP exchange (CSG 0)
 *   operational  authentication done (CSG 1)
 *   transition   to the next stage, or to full feature phase: the ACL,
 *                the target and the CHAP requirement are checked again
 *                against the configuration then in force (a reload may
 *                have come during the login), the session is created,
 *                joined or reinstated, and the final response laid out
 * Only the last step touches the connection and the session registry;
 * everything before is pure and driven by the unit tests and the fuzzer.
 *
 * DESIGN: a connection logs in on whatever network thread accepted it; the
 * login state lives in struct iscsi_login, freed once the connection
 * reaches full feature phase. Session lookups take the registry lock
 * (session.c). A connection joining a session owned by another thread is
 * handed to that thread after its last Login Response is laid out. The
 * final ACL check runs under the registry lock: a reload changes the ACL
 * first and then walks the registry to close sessions no longer allowed,
 * so a login either sees the new ACL or is registered before that walk.
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "common/iscsi_name.h"
#include "targetd/chap.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/fault.h"
#include "targetd/metrics.h"
#include "targetd/limits.h"
#include "targetd/login.h"
#include "targetd/net.h"
#include "targetd/target.h"

_Static_assert(LOGIN_CHAP_CHALLENGE_LEN == CHAP_CHALLENGE_LEN, "login.h and chap.h disagree");

/* A refusal reason naming what was refused; peer-chosen values are made
 * printable by the caller (iscsi_name_printable). */
static const char *login_why(struct iscsi_login *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *login_why(struct iscsi_login *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->why, sizeof(l->why), fmt, ap);
	va_end(ap);
	return l->why;
}

struct iscsi_login *iscsi_login_new(const uint8_t *b, uint16_t tpgt,
				    const struct iscsi_limits *lim)
{
	struct iscsi_login *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	memcpy(l->isid, b + 8, 6);
	l->tsih = get_be16(b + 14);
	l->itt = bhs_itt(b);
	l->cid = get_be16(b + 20);
	l->cmdsn = get_be32(b + 24);
	l->stage = ISCSI_LOGIN_CSG(b[1]);
	l->tpgt = tpgt;
	l->limits = lim;
	iscsi_params_init(&l->params, lim);
	return l;
}

void iscsi_login_destroy(struct iscsi_login *l)
{
	if (l) {
		free(l->acc);
		free(l);
	}
}

void iscsi_login_free(struct iscsi_conn *c)
{
	iscsi_login_destroy(c->login);
	c->login = NULL;
}

void iscsi_login_text_reset(struct iscsi_login *l)
{
	free(l->acc);
	l->acc = NULL;
	l->acc_len = 0;
}

/* ---- stage: the header (RFC 7143 11.12) ------------------------------- */

uint16_t iscsi_login_check_header(struct iscsi_login *l, const uint8_t *b, const char **why)
{
	bool transit = b[1] & ISCSI_LOGIN_TRANSIT, cont = b[1] & ISCSI_LOGIN_CONTINUE;
	uint8_t csg = ISCSI_LOGIN_CSG(b[1]), nsg = ISCSI_LOGIN_NSG(b[1]);

	l->itt = bhs_itt(b);    /* the response answers this request */
	if (l->pdus++ == 0) {
		/* 11.12.4: Version-min must not exceed what we speak (0). */
		if (b[3] > 0) {
			*why = "unsupported version";
			return ISCSI_LOGIN_UNSUPPORTED_VER;
		}
	} else if (memcmp(l->isid, b + 8, 6) || l->tsih != get_be16(b + 14) ||
		   l->cid != get_be16(b + 20)) {
		*why = "ISID/TSIH/CID changed during login";
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	/* 11.12.3: CSG is the stage we are in; NSG moves forward only; the
	 * value 2 is reserved; T and C are never set together. */
	if (csg != l->stage || csg == 2 || (transit && (nsg == 2 || nsg <= csg)) ||
	    (cont && transit)) {
		*why = "invalid stage transition";
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	return ISCSI_LOGIN_OK;
}

/* ---- stage: gather text across C bits (RFC 7143 6.4) ------------------- */

uint16_t iscsi_login_gather(struct iscsi_login *l, const void *data, uint32_t dlen,
			    const char **why)
{
	char *n;

	if (!dlen)
		return ISCSI_LOGIN_OK;
	if (l->acc_len + dlen > ISCSI_TEXT_MAX) {
		*why = "login text too long";
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	n = realloc(l->acc, l->acc_len + dlen + 1);
	if (!n) {
		*why = "out of memory";
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
	}
	l->acc = n;
	memcpy(l->acc + l->acc_len, data, dlen);
	l->acc_len += dlen;
	l->acc[l->acc_len] = 0;
	return ISCSI_LOGIN_OK;
}

/* ---- stage: the keys ---------------------------------------------------- */

static bool is_security_key(const char *k)
{
	return !strcmp(k, "AuthMethod") || !strncmp(k, "CHAP_", 5);
}

/* InitiatorName (RFC 7143 13.6): declared once, a valid iSCSI name, kept
 * in its normalised form (every comparison uses that form). */
static uint16_t login_key_initiator(struct iscsi_login *l, const char *v, const char **why)
{
	const char *bad;

	if (l->have_initiator) {
		char again[ISCSI_NAME_MAX + 1];

		/* libiscsi 1.19 repeats it in a discovery login: the same name
		 * again is harmless, another one is an error */
		if (!iscsi_name_normalize(v, again) && !strcmp(again, l->initiator))
			return ISCSI_LOGIN_OK;
		*why = "InitiatorName declared twice with different names";
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	bad = iscsi_name_normalize(v, l->initiator);
	if (bad) {
		char shown[96];

		l->initiator[0] = '\0';
		iscsi_name_printable(v, shown, sizeof(shown));
		*why = login_why(l, "InitiatorName \"%s\" is not a valid iSCSI name: %s", shown, bad);
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	l->have_initiator = true;
	return ISCSI_LOGIN_OK;
}

/* SessionType (RFC 7143 13.21): decided by the first request (default
 * Normal); a later value that changes it is a protocol error (RFC 7143
 * 6.2: renegotiating a declaration is an initiator error). */
static uint16_t login_key_session_type(struct iscsi_login *l, const char *v, const char **why)
{
	bool disc;

	if (!strcmp(v, "Discovery")) {
		disc = true;
	} else if (!strcmp(v, "Normal")) {
		disc = false;
	} else {
		*why = "unknown SessionType";
		return ISCSI_LOGIN_SESSION_TYPE;
	}
	if ((l->first_done || l->session_type_seen) && disc != l->discovery) {
		*why = login_why(l, "SessionType=%s would change the session type (%s) after "
				 "it was decided", v, l->discovery ? "Discovery" : "Normal");
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	l->discovery = disc;
	l->session_type_seen = true;
	return ISCSI_LOGIN_OK;
}

/* TargetName (RFC 7143 13.4): a valid iSCSI name, normalised. */
static uint16_t login_key_target(struct iscsi_login *l, struct login_pdu *pdu, const char *v,
				 const char **why)
{
	const char *bad = iscsi_name_normalize(v, pdu->target_buf);

	if (bad) {
		char shown[96];

		iscsi_name_printable(v, shown, sizeof(shown));
		*why = login_why(l, "TargetName \"%s\" is not a valid iSCSI name: %s", shown, bad);
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	pdu->target_name = pdu->target_buf;
	return ISCSI_LOGIN_OK;
}

/* Security keys are only for the security stage; they are read by the
 * security stage below. */
static uint16_t login_key_security(struct login_pdu *pdu, const char *k, const char *v,
				   struct iscsi_text *resp, const char **why)
{
	if (pdu->csg != ISCSI_STAGE_SECURITY) {
		*why = "security key outside the security stage";
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	if (!strcmp(k, "AuthMethod"))
		pdu->auth_method = v;
	else if (!strcmp(k, "CHAP_A"))
		pdu->chap_a = v;
	else if (!strcmp(k, "CHAP_N"))
		pdu->chap_n = v;
	else if (!strcmp(k, "CHAP_R"))
		pdu->chap_r = v;
	else if (!strcmp(k, "CHAP_I"))
		pdu->chap_i = v;
	else if (!strcmp(k, "CHAP_C"))
		pdu->chap_c = v;
	else
		iscsi_text_add(resp, k, "NotUnderstood");
	return ISCSI_LOGIN_OK;
}

/* One key that is not declarative or security: params.c negotiates it. */
static uint16_t login_key_operational(struct iscsi_login *l, const char *k, const char *v,
				      struct iscsi_text *resp, const char **why)
{
	enum iscsi_neg r = iscsi_params_negotiate(&l->params, l->limits, l->tsih == 0,
						  l->discovery, k, v, resp);

	if (r == NEG_FATAL) {
		*why = "bad operational key";
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	if (r == NEG_UNKNOWN) {
		if (!strcmp(k, "TargetAlias") || !strcmp(k, "TargetAddress") ||
		    !strcmp(k, "TargetPortalGroupTag"))
			iscsi_text_add(resp, k, "Irrelevant");
		else
			iscsi_text_add(resp, k, "NotUnderstood");
	}
	return ISCSI_LOGIN_OK;
}

/* Declarative and security keys first (SessionType decides how the
 * operational keys are answered, wherever it stands in the request), then
 * the operational keys in the order they came. */
static uint16_t login_keys(struct iscsi_login *l, struct login_pdu *pdu, struct iscsi_text *resp,
			   const char **why)
{
	uint16_t st = ISCSI_LOGIN_OK;

	pdu->nkv = l->acc_len ? iscsi_kv_parse(l->acc, l->acc_len, pdu->kv, LOGIN_MAX_KEYS) : 0;
	if (pdu->nkv < 0) {
		*why = "malformed login text";
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	for (int i = 0; i < pdu->nkv && !st; i++) {
		const char *k = pdu->kv[i].key, *v = pdu->kv[i].value;

		if (!strcmp(k, "InitiatorName"))
			st = login_key_initiator(l, v, why);
		else if (!strcmp(k, "InitiatorAlias"))
			snprintf(l->initiator_alias, sizeof(l->initiator_alias), "%s", v);
		else if (!strcmp(k, "SessionType"))
			st = login_key_session_type(l, v, why);
		else if (!strcmp(k, "TargetName"))
			st = login_key_target(l, pdu, v, why);
		else if (is_security_key(k))
			st = login_key_security(pdu, k, v, resp, why);
	}
	for (int i = 0; i < pdu->nkv && !st; i++) {
		const char *k = pdu->kv[i].key;

		if (strcmp(k, "InitiatorName") && strcmp(k, "InitiatorAlias") &&
		    strcmp(k, "SessionType") && strcmp(k, "TargetName") && !is_security_key(k))
			st = login_key_operational(l, k, pdu->kv[i].value, resp, why);
	}
	return st;
}

/* ---- stage: the first request (RFC 7143 6.3) --------------------------- */

/* The initiator names itself and, for a normal session, the target it
 * wants, in its first request; the ACL is applied here. */
static uint16_t login_first_request(struct iscsi_login *l, const struct login_pdu *pdu,
				    struct iscsi_text *resp, const char **why)
{
	l->first_done = true;
	if (!l->have_initiator) {
		*why = "no InitiatorName";
		return ISCSI_LOGIN_MISSING_PARAM;
	}
	if (l->discovery) {
		/* discovery_chap: discovery sessions authenticate too */
		l->auth_needed = __atomic_load_n(&target_runtime->discovery_auth.chap, __ATOMIC_ACQUIRE);
		return ISCSI_LOGIN_OK;
	}
	if (!pdu->target_name) {
		*why = "no TargetName";
		return ISCSI_LOGIN_MISSING_PARAM;
	}
	l->target = target_find(pdu->target_name);
	if (!l->target) {
		*why = login_why(l, "unknown target %s", pdu->target_name);
		return ISCSI_LOGIN_NOT_FOUND;
	}
	if (!target_initiator_allowed(l->target, l->initiator)) {
		*why = login_why(l, "initiator %s is not on the allow-list of the target",
				 l->initiator);
		return ISCSI_LOGIN_AUTHZ_FAILED;
	}
	l->auth_needed = __atomic_load_n(&l->target->chap, __ATOMIC_ACQUIRE);
	if (l->target->alias[0])
		iscsi_text_add(resp, "TargetAlias", "%s", l->target->alias);
	iscsi_text_add(resp, "TargetPortalGroupTag", "%u", l->tpgt);
	return ISCSI_LOGIN_OK;
}

/* A later request may repeat TargetName, not change it. */
static uint16_t login_later_request(const struct iscsi_login *l, const struct login_pdu *pdu,
				    const char **why)
{
	if (pdu->target_name && (!l->target || strcmp(pdu->target_name, l->target->iqn))) {
		*why = "TargetName changed during login";
		return ISCSI_LOGIN_INITIATOR_ERROR;
	}
	return ISCSI_LOGIN_OK;
}

/* ---- stage: security (RFC 7143 6.3.1, 12.1.3) ------------------------- */

static int chap_offer(struct iscsi_login *l, const char *algs, struct iscsi_text *resp)
{
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

/* Mutual CHAP: the initiator's challenge, answered with the target's
 * mutual secret. A challenge shorter than CHAP_MIN_CHALLENGE bytes, or our
 * own challenge reflected, is refused (RFC 7143 12.1.3). */
static uint16_t chap_answer_mutual(struct iscsi_login *l, const char *ci, const char *cc,
				   struct iscsi_text *resp, const char **why)
{
	struct iscsi_target *t = l->target ? l->target : &target_runtime->discovery_auth;
	uint8_t chal[CHAP_MAX_BINARY], rsp[CHAP_MD5_LEN];
	char hex[2 * CHAP_MD5_LEN + 3];
	char *end;
	unsigned long id;
	int clen;

	*why = "mutual CHAP refused";
	if (!ci || !cc || !t->chap_mutual_user)
		return ISCSI_LOGIN_AUTH_FAILED;
	errno = 0;
	id = strtoul(ci, &end, 0);
	if (errno || *end || id > 255)
		return ISCSI_LOGIN_AUTH_FAILED;
	clen = chap_decode(cc, chal, sizeof(chal));
	if (clen <= 0)
		return ISCSI_LOGIN_AUTH_FAILED;
	if (clen < CHAP_MIN_CHALLENGE) {
		*why = "mutual CHAP: the initiator's challenge is shorter than 16 bytes";
		return ISCSI_LOGIN_AUTH_FAILED;
	}
	if (clen == (int)sizeof(l->chap_challenge) &&
	    !memcmp(chal, l->chap_challenge, sizeof(l->chap_challenge))) {
		*why = "mutual CHAP: the initiator reflected our challenge";
		return ISCSI_LOGIN_AUTH_FAILED;
	}
	if (chap_md5_response((uint8_t)id, t->chap_mutual_secret, strlen(t->chap_mutual_secret),
			      chal, (size_t)clen, rsp))
		return ISCSI_LOGIN_TARGET_ERROR;
	chap_encode_hex(rsp, sizeof(rsp), hex);
	iscsi_text_add(resp, "CHAP_N", "%s", t->chap_mutual_user);
	iscsi_text_add(resp, "CHAP_R", "%s", hex);
	return ISCSI_LOGIN_OK;
}

/* Verify CHAP_N/CHAP_R; answer a mutual challenge. */
static uint16_t chap_verify(struct iscsi_login *l, const struct login_pdu *pdu,
			    struct iscsi_text *resp, const char **why)
{
	struct iscsi_target *t = l->target ? l->target : &target_runtime->discovery_auth;
	uint8_t got[CHAP_MAX_BINARY], want[CHAP_MD5_LEN];
	uint16_t st;
	int len;

	*why = "CHAP authentication failed";
	if (!pdu->chap_n || !pdu->chap_r || strcmp(pdu->chap_n, t->chap_user))
		return ISCSI_LOGIN_AUTH_FAILED;
	len = chap_decode(pdu->chap_r, got, sizeof(got));
	if (len != CHAP_MD5_LEN)
		return ISCSI_LOGIN_AUTH_FAILED;
	if (chap_md5_response(l->chap_id, t->chap_secret, strlen(t->chap_secret),
			      l->chap_challenge, sizeof(l->chap_challenge), want))
		return ISCSI_LOGIN_TARGET_ERROR;
	if (!chap_equal(got, want, CHAP_MD5_LEN))
		return ISCSI_LOGIN_AUTH_FAILED;
	if (pdu->chap_i || pdu->chap_c) {
		st = chap_answer_mutual(l, pdu->chap_i, pdu->chap_c, resp, why);
		if (st)
			return st;
	}
	l->auth = AUTH_DONE;
	l->chap_done = true;
	return ISCSI_LOGIN_OK;
}

/* AuthMethod (RFC 7143 12.1): CHAP when the target requires it, None when
 * it does not and the initiator offers it. */
static uint16_t login_auth_method(struct iscsi_login *l, const char *am, struct iscsi_text *resp,
				  const char **why)
{
	bool has_chap = false, has_none = false;
	char *dup = strdup(am), *save = NULL;

	if (!dup) {
		*why = "out of memory";
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
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
			iscsi_text_add(resp, "AuthMethod", "Reject");
			*why = "CHAP required";
			return ISCSI_LOGIN_AUTH_FAILED;
		}
		iscsi_text_add(resp, "AuthMethod", "CHAP");
		l->auth = AUTH_WAIT_CHAP_A;
	} else if (has_none) {
		iscsi_text_add(resp, "AuthMethod", "None");
		l->auth = AUTH_DONE;
	} else {
		iscsi_text_add(resp, "AuthMethod", "Reject");
		*why = "no acceptable AuthMethod";
		return ISCSI_LOGIN_AUTH_FAILED;
	}
	return ISCSI_LOGIN_OK;
}

static uint16_t login_security_stage(struct iscsi_login *l, struct login_pdu *pdu,
				     struct iscsi_text *resp, const char **why)
{
	uint16_t st;

	if (pdu->auth_method) {
		st = login_auth_method(l, pdu->auth_method, resp, why);
		if (st)
			return st;
	}
	if (pdu->chap_a) {
		if (l->auth != AUTH_WAIT_CHAP_A || chap_offer(l, pdu->chap_a, resp)) {
			*why = "CHAP_A not acceptable";
			return ISCSI_LOGIN_AUTH_FAILED;
		}
	} else if (pdu->chap_n || pdu->chap_r) {
		if (l->auth != AUTH_WAIT_CHAP_R) {
			*why = "unexpected CHAP response";
			return ISCSI_LOGIN_AUTH_FAILED;
		}
		st = chap_verify(l, pdu, resp, why);
		if (st)
			return st;
	}
	if (pdu->transit && l->auth != AUTH_DONE) {
		if (l->auth_needed)
			pdu->transit = false;   /* in the middle of CHAP: stay */
		else
			l->auth = AUTH_DONE;    /* no AuthMethod key sent: None */
	}
	return ISCSI_LOGIN_OK;
}

/* ---- stage: operational (RFC 7143 6.3.2) ------------------------------ */

static uint16_t login_operational_stage(const struct iscsi_login *l, const char **why)
{
	if (l->auth_needed && l->auth != AUTH_DONE) {
		*why = "authentication required";
		return ISCSI_LOGIN_AUTH_FAILED;
	}
	return ISCSI_LOGIN_OK;
}

/* ---- one complete request ----------------------------------------------- */

uint16_t iscsi_login_process(struct iscsi_login *l, const uint8_t *b, struct login_pdu *pdu,
			     struct iscsi_text *resp, const char **why)
{
	uint16_t st;

	memset(pdu, 0, offsetof(struct login_pdu, kv));
	pdu->transit = b[1] & ISCSI_LOGIN_TRANSIT;
	pdu->csg = ISCSI_LOGIN_CSG(b[1]);
	pdu->nsg = ISCSI_LOGIN_NSG(b[1]);

	st = login_keys(l, pdu, resp, why);
	if (!st)
		st = l->first_done ? login_later_request(l, pdu, why)
				   : login_first_request(l, pdu, resp, why);
	if (!st)
		st = pdu->csg == ISCSI_STAGE_SECURITY ? login_security_stage(l, pdu, resp, why)
						      : login_operational_stage(l, why);
	if (st || !pdu->transit)
		return st;
	if (pdu->nsg == ISCSI_STAGE_FULL_FEATURE)
		iscsi_params_finish(&l->params, l->limits, l->discovery, resp);
	else
		l->stage = pdu->nsg;
	return ISCSI_LOGIN_OK;
}

/* ---- stage: the transition to full feature phase ---------------------- */

/* The configuration may have changed since the first request (a reload
 * that removed the target, took the initiator off the allow-list or turned
 * CHAP on): the login completes only if it would pass now. */
uint16_t iscsi_login_recheck(struct iscsi_login *l, const char **why)
{
	struct iscsi_target *t = l->target;

	if (l->discovery || !t)
		return ISCSI_LOGIN_OK;
	if (__atomic_load_n(&t->removed, __ATOMIC_ACQUIRE)) {
		*why = "the target was removed (by a reload) during the login";
		return ISCSI_LOGIN_TARGET_REMOVED;
	}
	if (!target_initiator_allowed(t, l->initiator)) {
		*why = login_why(l, "initiator %s was taken off the allow-list (by a reload) "
				 "during the login", l->initiator);
		return ISCSI_LOGIN_AUTHZ_FAILED;
	}
	if (__atomic_load_n(&t->chap, __ATOMIC_ACQUIRE) && !l->chap_done) {
		*why = "the target requires CHAP since a reload during the login";
		return ISCSI_LOGIN_AUTH_FAILED;
	}
	return ISCSI_LOGIN_OK;
}

/* ---- the connection's side ---------------------------------------------- */

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

/* "address:port" (IPv6 in brackets) of the portal c came in on, for logs. */
static const char *login_portal(const struct iscsi_conn *c, char *buf, size_t cap)
{
	snprintf(buf, cap, strchr(c->local, ':') ? "[%s]:%s" : "%s:%s", c->local,
		 c->portal ? c->portal->port : "?");
	return buf;
}

static void login_fail(struct iscsi_conn *c, uint16_t status, const char *why)
{
	const struct iscsi_login *l = c->login;
	char isid[16], portal[80];

	snprintf(isid, sizeof(isid), "0x%02x%02x%02x%02x%02x%02x", l->isid[0], l->isid[1],
		 l->isid[2], l->isid[3], l->isid[4], l->isid[5]);
	metrics_count_login_failure(l->target, status);
	log_event(LOG_LVL_INFO, status == ISCSI_LOGIN_AUTH_FAILED    ? "chap_failed"
				: status == ISCSI_LOGIN_AUTHZ_FAILED ? "acl_refused"
								     : "login_refused",
		  KV_S("initiator", l->have_initiator ? l->initiator : NULL), KV_S("isid", isid),
		  KV_S("target", l->target ? l->target->iqn : NULL), KV_S("peer", c->peer),
		  KV_S("portal", login_portal(c, portal, sizeof(portal))), KV_X("status", status),
		  KV_S("reason", why));
	login_respond(c, status, false, c->login->stage, 0, NULL, true);
	c->state = CONN_LOGOUT;
	iscsi_conn_flush(c);
}

/* A connection joining an existing session (TSIH given). Under the
 * registry lock. */
static uint16_t login_join_session(struct iscsi_conn *c)
{
	struct iscsi_login *l = c->login;
	struct iscsi_session *s = iscsi_session_lookup_tsih(l->tsih);

	if (!s || strcmp(s->initiator, l->initiator) || memcmp(s->isid, l->isid, 6) ||
	    s->target != l->target || s->discovery != l->discovery)
		return ISCSI_LOGIN_NO_SESSION;
	if (atomic_load(&s->conn_slots) >= s->params.max_connections)
		return ISCSI_LOGIN_TOO_MANY_CONNS;
	atomic_fetch_add(&s->conn_slots, 1);
	c->pending_session = s;
	return ISCSI_LOGIN_OK;
}

/* The SCSI layer's view of a new normal session: its I_T nexus. */
static void login_attach_nexus(struct iscsi_conn *c, struct iscsi_session *s)
{
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

/* Called when the final Login Response is about to be sent: check the
 * configuration again, then create, join or reinstate the session.
 * Returns a login status. */
static uint16_t login_attach_session(struct iscsi_conn *c, const char **why)
{
	struct iscsi_login *l = c->login;
	struct iscsi_session *s, *old = NULL;
	unsigned old_tsih = 0;
	uint16_t st;

	iscsi_session_registry_lock();
	st = iscsi_login_recheck(l, why);
	if (!st) {
		st = iscsi_session_check_limits(l->initiator, l->isid, l->discovery ? NULL : l->target,
						l->tsih != 0);
		if (st)
			*why = "a session or connection limit is reached (see the log)";
	}
	if (!st && l->tsih) {
		st = login_join_session(c);
		if (st)
			*why = st == ISCSI_LOGIN_NO_SESSION ? "no such session to join"
							    : "too many connections in the session";
	}
	if (st || l->tsih) {
		iscsi_session_registry_unlock();
		return st;
	}
	s = iscsi_session_new(c);
	if (!s) {
		iscsi_session_registry_unlock();
		*why = "cannot create the session";
		return ISCSI_LOGIN_OUT_OF_RESOURCES;
	}
	if (!l->discovery)
		old = iscsi_session_lookup_isid(l->initiator, l->isid, l->target);
	if (old) {
		/* Session reinstatement (RFC 7143 6.3.5): the old one goes. Its
		 * owner closes it; here it only leaves the registry. */
		old_tsih = old->tsih;
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
	if (old)
		log_event(LOG_LVL_INFO, "session_reinstated", KV_S("initiator", l->initiator),
			  KV_S("target", l->target->iqn), KV_U("old_tsih", old_tsih),
			  KV_U("tsih", s->tsih), KV_S("peer", c->peer));
	iscsi_session_registry_unlock();
	l->tsih = s->tsih;
	if (!s->discovery)
		login_attach_nexus(c, s);
	c->pending_session = s;
	return ISCSI_LOGIN_OK;
}

/* One line per login: who, where, and what was negotiated. */
static void login_log_success(const struct iscsi_conn *c, const struct iscsi_login *l,
			      const struct iscsi_session *s)
{
	char isid[16], portal[80];

	metrics_count_login(l->target, l->discovery);
	snprintf(isid, sizeof(isid), "0x%02x%02x%02x%02x%02x%02x", l->isid[0], l->isid[1],
		 l->isid[2], l->isid[3], l->isid[4], l->isid[5]);
	log_event(LOG_LVL_INFO, "login", KV_S("initiator", l->initiator), KV_S("isid", isid),
		  KV_U("tsih", s->tsih), KV_U("cid", l->cid),
		  KV_S("type", l->discovery ? "discovery" : "normal"),
		  KV_S("target", l->discovery || !l->target ? NULL : l->target->iqn),
		  KV_S("peer", c->peer), KV_S("portal", login_portal(c, portal, sizeof(portal))),
		  KV_U("tpgt", c->tpgt), KV_S("auth", l->auth_needed ? "chap" : "none"),
		  KV_S("header_digest", l->params.header_digest ? "crc32c" : "none"),
		  KV_S("data_digest", l->params.data_digest ? "crc32c" : "none"),
		  KV_U("max_recv_dsl", l->params.max_recv_dsl_target),
		  KV_U("initiator_max_recv_dsl", l->params.max_recv_dsl_initiator),
		  KV_U("max_burst", l->params.max_burst), KV_U("first_burst", l->params.first_burst),
		  KV_S("immediate_data", l->params.immediate_data ? "yes" : "no"),
		  KV_S("initial_r2t", l->params.initial_r2t ? "yes" : "no"));
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
	login_log_success(c, l, s);
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

/* The last request was accepted with T=1, NSG=3. */
static void login_to_full_feature(struct iscsi_conn *c, const struct login_pdu *pdu,
				  struct iscsi_text *resp)
{
	const char *why = NULL;
	uint16_t st = login_attach_session(c, &why);

	if (st) {
		login_fail(c, st, why);
		return;
	}
	login_respond(c, 0, true, pdu->csg, pdu->nsg, resp, false);
	iscsi_conn_flush(c);   /* lay out the response before digests switch on */
	if (!c->dead)
		login_enter_ffp(c);
}

/* The first Login Request of the connection: the login state. */
static bool login_begin(struct iscsi_conn *c)
{
	const uint8_t *b = c->bhs;

	c->login = iscsi_login_new(b, c->tpgt, &target_runtime->limits);
	if (!c->login) {
		iscsi_conn_close(c, "out of memory");
		return false;
	}
	c->stat_sn = get_be32(b + 28);
	c->login_exp_cmdsn = c->login->cmdsn;
	return true;
}

/* One Login Request PDU, received whole: the stages in order. A function
 * per stage above; this one only routes the outcome to the connection. */
void iscsi_login_rx(struct iscsi_conn *c)
{
	struct login_pdu pdu;
	struct iscsi_text resp = { 0 };
	const char *why = NULL;
	uint16_t st;

	if (!c->login && !login_begin(c))
		return;
	st = iscsi_login_check_header(c->login, c->bhs, &why);
	if (!st && c->data_digest_bad) {
		why = "digest error during login";
		st = ISCSI_LOGIN_INITIATOR_ERROR;
	}
	if (!st)
		st = iscsi_login_gather(c->login, c->rx_owned, c->dlen, &why);
	if (st) {
		login_fail(c, st, why);
		goto out;
	}
	if (c->bhs[1] & ISCSI_LOGIN_CONTINUE) {
		/* RFC 7143 6.4: answer with an empty response and wait. */
		login_respond(c, 0, false, ISCSI_LOGIN_CSG(c->bhs[1]), 0, NULL, false);
		return;
	}
	st = iscsi_login_process(c->login, c->bhs, &pdu, &resp, &why);
	if (!st && pdu.transit && pdu.nsg == ISCSI_STAGE_FULL_FEATURE && fault_conn_on() &&
	    fault_conn_refuse_login(c, c->login->target, c->login->initiator, &st))
		why = "refused by fault injection (targetd-faults(7))";
	if (st)
		login_fail(c, st, why);
	else if (pdu.transit && pdu.nsg == ISCSI_STAGE_FULL_FEATURE)
		login_to_full_feature(c, &pdu, &resp);
	else
		login_respond(c, 0, pdu.transit, pdu.csg, pdu.nsg, &resp, false);
out:
	iscsi_text_free(&resp);
	if (c->login)
		iscsi_login_text_reset(c->login);
}

/* ---- Text requests: SendTargets ------------------------------------- */

static void add_portal_addresses(struct iscsi_conn *c, struct iscsi_text *t)
{
	for (unsigned i = 0; i < __atomic_load_n(&target_runtime->n_portals, __ATOMIC_ACQUIRE); i++) {
		struct iscsi_portal *p = &target_runtime->portals[i];
		const char *host = p->host;
		char local[64];
		bool v6;

		if (__atomic_load_n(&p->closing, __ATOMIC_ACQUIRE))
			continue;   /* removed by targetctl portal remove */

		if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::")) {
			snprintf(local, sizeof(local), "%s", c->local);
			host = local;
		}
		v6 = strchr(host, ':') != NULL;
		iscsi_text_add(t, "TargetAddress", v6 ? "[%s]:%s,%u" : "%s:%s,%u", host, p->port, p->tpgt);
	}
}

/* The targets this session may see (RFC 7143 appendix C). A target with
 * CHAP is listed like any other, to any discovery session whose initiator
 * its ACL admits: discovery sessions cannot authenticate yet. Once they
 * can (discovery CHAP), such targets should be listed only to a discovery
 * session that authenticated. */
static void send_targets(struct iscsi_conn *c, const char *which, struct iscsi_text *t)
{
	struct iscsi_session *s = c->sess;

	for (unsigned i = 0; i < target_runtime->n_targets; i++) {
		struct iscsi_target *tg = &target_runtime->targets[i];
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

	if (!bhs_immediate(b) && !iscsi_cmdsn_take(s, get_be32(b + 24)))
		return;
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
	if (resp.len > target_runtime->res.max_text_response && target_runtime->res.max_text_response) {
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
