/*
 * iSCSI text keys (RFC 7143 section 6 and 13): parsing key=value data
 * segments, building responses, and negotiating the operational keys.
 * Pure functions: no sockets, no sessions; login.c drives them.
 */
#ifndef TARGETD_PARAMS_H
#define TARGETD_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ISCSI_KEY_MAX 63          /* RFC 7143 6.1: key names up to 63 bytes */
#define ISCSI_VALUE_MAX 8192      /* longest value we accept (CHAP binary values) */
#define ISCSI_TEXT_MAX 65536      /* longest accumulated login/text data we accept */

struct iscsi_kv {
	const char *key;
	const char *value;
};

/* Split "k=v\0k=v\0" in place (buf is modified). Trailing NUL padding is
 * allowed. Returns the number of pairs, or -1 on malformed data (no '=',
 * empty key, key or value too long, too many pairs for max). */
int iscsi_kv_parse(char *buf, size_t len, struct iscsi_kv *out, int max);

/* Growing response buffer of "k=v\0" pairs. */
struct iscsi_text {
	char *data;
	size_t len, cap;
};
int iscsi_text_add(struct iscsi_text *t, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void iscsi_text_free(struct iscsi_text *t);
/* Find key in the buffer; returns its value or NULL. */
const char *iscsi_text_find(const struct iscsi_text *t, const char *key);

/* What this target is willing to do (from the configuration). */
struct iscsi_limits {
	uint32_t max_recv_dsl;        /* MaxRecvDataSegmentLength we declare */
	uint32_t max_burst;
	uint32_t first_burst;
	uint32_t max_outstanding_r2t;
	uint32_t max_connections;
	bool immediate_data;
	bool initial_r2t;
	bool allow_crc32c;            /* offer CRC32C digests */
	bool require_crc32c;          /* refuse None */
};

/* Negotiated operational values (start as RFC 7143 defaults). */
struct iscsi_params {
	bool header_digest;           /* CRC32C */
	bool data_digest;
	uint32_t max_recv_dsl_initiator; /* largest data segment we may send */
	uint32_t max_recv_dsl_target;    /* largest data segment we accept */
	uint32_t max_burst;
	uint32_t first_burst;
	uint32_t max_outstanding_r2t;
	uint32_t max_connections;
	bool immediate_data;
	bool initial_r2t;
	bool data_pdu_in_order;
	bool data_seq_in_order;
	uint32_t default_time2wait;
	uint32_t default_time2retain;
	uint32_t error_recovery_level;
	bool if_marker, of_marker;
	uint32_t protocol_level;      /* iSCSIProtocolLevel (RFC 7144), default 0 */
	uint64_t seen;                /* bitmask of keys already negotiated (internal) */
};

void iscsi_params_init(struct iscsi_params *p, const struct iscsi_limits *lim);

enum iscsi_neg {
	NEG_DONE,          /* handled; the answer (if any) was added to resp */
	NEG_UNKNOWN,       /* not an operational key: the caller handles it */
	NEG_FATAL,         /* protocol error (e.g. a key negotiated twice, a
	                    * value out of range for a declarative key): the
	                    * login must fail with Initiator Error */
};

/* Negotiate one key sent by the initiator. Adds the response (a value,
 * Reject, Irrelevant or NotUnderstood) to resp as RFC 7143 requires.
 * 'leading' is true on the leading connection (session-wide keys allowed),
 * 'discovery' true for a discovery session (session keys Irrelevant). Keys
 * starting with "X-" or "X#" get NotUnderstood. */
enum iscsi_neg iscsi_params_negotiate(struct iscsi_params *p, const struct iscsi_limits *lim,
				      bool leading, bool discovery,
				      const char *key, const char *value,
				      struct iscsi_text *resp);

/* At the end of the operational stage: add what the target declares on its
 * own (MaxRecvDataSegmentLength if the initiator did not ask), and enforce
 * consistency (FirstBurstLength <= MaxBurstLength). */
void iscsi_params_finish(struct iscsi_params *p, const struct iscsi_limits *lim,
			 bool discovery, struct iscsi_text *resp);

#endif
