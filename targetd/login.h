/*
 * Login (RFC 7143 6, 11.12-11.13) and Text requests (SendTargets): the
 * functions targetd/login.c gives the connection, and the login stages
 * themselves, which are pure (no socket, no session registry) so that the
 * unit tests and the fuzzer drive them with Login Request PDUs:
 *
 *   iscsi_login_new            first Login Request: the login state
 *   iscsi_login_check_header   every request: version, ISID/TSIH/CID kept,
 *                              a legal stage transition
 *   iscsi_login_gather         text across PDUs with the C bit
 *   iscsi_login_process        one complete request: keys, first-request
 *                              checks (names, target, ACL), then the
 *                              security stage (AuthMethod, CHAP) or the
 *                              operational stage, then the transition
 *   iscsi_login_recheck        at the transition to full feature phase:
 *                              ACL, target and CHAP requirement against the
 *                              configuration then in force (a reload may
 *                              have come during the login)
 *
 * Each returns a login status (ISCSI_LOGIN_*, 0 = go on) and, on refusal,
 * a reason for the log.
 */
#ifndef TARGETD_LOGIN_H
#define TARGETD_LOGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/iscsi_name.h"
#include "targetd/params.h"

struct iscsi_conn;
struct iscsi_session;
struct iscsi_target;

#define LOGIN_MAX_KEYS 256
/* CHAP_CHALLENGE_LEN (chap.h, not included here: conn.h users have their
 * own chap_ names); login.c asserts they agree. */
#define LOGIN_CHAP_CHALLENGE_LEN 16

enum login_auth {
	AUTH_NONE_YET,      /* AuthMethod not negotiated */
	AUTH_WAIT_CHAP_A,   /* AuthMethod=CHAP chosen */
	AUTH_WAIT_CHAP_R,   /* challenge sent */
	AUTH_DONE,
};

/* The state of one connection's login; freed at full feature phase. */
struct iscsi_login {
	unsigned pdus;                  /* Login Requests seen */
	bool first_done;                /* the first complete request processed */
	uint8_t isid[6];
	uint16_t tsih;
	uint16_t cid;
	uint16_t tpgt;                  /* of the portal the connection came to */
	uint32_t itt;
	uint32_t cmdsn;
	uint8_t stage;                  /* current stage (CSG) */
	char initiator[ISCSI_NAME_MAX + 1];  /* normalised */
	char initiator_alias[256];
	bool have_initiator;
	bool discovery;
	bool session_type_seen;
	struct iscsi_target *target;
	enum login_auth auth;
	bool auth_needed;               /* the target required CHAP at the first request */
	bool chap_done;                 /* the initiator proved itself with CHAP */
	uint8_t chap_id;
	uint8_t chap_challenge[LOGIN_CHAP_CHALLENGE_LEN];
	struct iscsi_params params;
	const struct iscsi_limits *limits;
	char *acc;                      /* request text gathered across C bits */
	size_t acc_len;
	char why[384];                  /* a refusal reason built with names in it */
};

/* One complete Login Request: its header fields and keys, and the keys
 * the stages read (NULL when absent). target_name is normalised. The key
 * array comes last: iscsi_login_process clears everything before it. */
struct login_pdu {
	bool transit;
	uint8_t csg, nsg;
	const char *target_name;
	const char *auth_method, *chap_a, *chap_n, *chap_r, *chap_i, *chap_c;
	char target_buf[ISCSI_NAME_MAX + 1];
	int nkv;
	struct iscsi_kv kv[LOGIN_MAX_KEYS];
};

/* The first Login Request of a connection (bhs: its header). NULL when
 * out of memory. */
struct iscsi_login *iscsi_login_new(const uint8_t *bhs, uint16_t tpgt,
				    const struct iscsi_limits *lim);
void iscsi_login_destroy(struct iscsi_login *l);
uint16_t iscsi_login_check_header(struct iscsi_login *l, const uint8_t *bhs, const char **why);
uint16_t iscsi_login_gather(struct iscsi_login *l, const void *data, uint32_t dlen,
			    const char **why);
uint16_t iscsi_login_process(struct iscsi_login *l, const uint8_t *bhs, struct login_pdu *pdu,
			     struct iscsi_text *resp, const char **why);
/* Forget the gathered text (after each complete request). */
void iscsi_login_text_reset(struct iscsi_login *l);
uint16_t iscsi_login_recheck(struct iscsi_login *l, const char **why);

/* The connection's side (conn.c, net.c). */
void iscsi_login_rx(struct iscsi_conn *c);
void iscsi_text_rx(struct iscsi_conn *c);
void iscsi_login_free(struct iscsi_conn *c);
void iscsi_conn_join(struct iscsi_conn *c, struct iscsi_session *s);

#endif
