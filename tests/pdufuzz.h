/*
 * pdufuzz: shared declarations of the raw iSCSI client (pdufuzz_io.c) and
 * the bad-input cases (pdufuzz.c). See pdufuzz.c for what is tested.
 */
#ifndef TARGETD_TESTS_PDUFUZZ_H
#define TARGETD_TESTS_PDUFUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- RFC 7143 section 11 constants --------------------------------- */

enum {
	OP_NOP_OUT = 0x00, OP_SCSI_CMD = 0x01, OP_TMF_REQ = 0x02, OP_LOGIN_REQ = 0x03,
	OP_TEXT_REQ = 0x04, OP_DATA_OUT = 0x05, OP_LOGOUT_REQ = 0x06, OP_SNACK = 0x10,
	OP_NOP_IN = 0x20, OP_SCSI_RSP = 0x21, OP_TMF_RSP = 0x22, OP_LOGIN_RSP = 0x23,
	OP_TEXT_RSP = 0x24, OP_DATA_IN = 0x25, OP_LOGOUT_RSP = 0x26, OP_R2T = 0x31,
	OP_ASYNC = 0x32, OP_REJECT = 0x3f,
};
#define F_IMMEDIATE 0x40
#define F_FINAL 0x80
#define BHS_LEN 48
#define RSVD_TAG 0xffffffffu
#define REJ_DATA_DIGEST 0x02
#define REJ_PROTOCOL 0x04
#define REJ_NOT_SUPPORTED 0x05
#define REJ_INVALID_FIELD 0x09

#define LUN_BLOCK 512u
#define MY_MRDSL 262144u
#define DEFAULT_TARGET "iqn.2026-11.org.targetd:default"
#define HEALTHY_NAME "iqn.2026-11.org.targetd.test:pdufuzz-healthy"
#define CLIENT_NAME "iqn.2026-11.org.targetd.test:pdufuzz"

struct pf_opts {
	char host[256];
	char port[16];
	const char *target;
	int login_timeout;      /* seconds, as configured in the daemon */
	uint64_t seed;
	unsigned count;         /* random PDUs in the "random" case */
	int tmo;                /* ms to wait for an answer */
	int quiet_ms;           /* ms of silence that means "no answer" */
	bool slow;              /* daemon under valgrind: stretch the clocks */
	bool verbose;
};
extern struct pf_opts pf_opt;
extern const char *pf_cur_case;   /* named in failure messages */
extern uint64_t pf_rng_state;
extern struct pf_conn pf_healthy;  /* the session no case may harm */

struct pf_conn {
	int fd;
	const char *label;
	uint8_t isid[6];
	uint16_t tsih, cid;
	uint32_t itt;               /* next Initiator Task Tag */
	uint32_t cmdsn;             /* next CmdSN to use */
	uint32_t maxcmdsn;
	uint32_t expstatsn;
	bool hdigest, ddigest;
	uint32_t mrdsl;             /* the target's MaxRecvDataSegmentLength */
	uint32_t first_burst, max_burst;
	bool immediate_data, initial_r2t;
	uint8_t *rbuf;              /* data segment of the last PDU read */
	uint32_t rcap;
};

struct pf_rx {
	uint8_t bhs[BHS_LEN];
	uint8_t *data;
	uint32_t dlen;
};

struct pf_login_opts {
	const char *initiator;
	bool digests;           /* ask for CRC32C header and data digests */
	bool mcs;               /* MaxConnections=2 */
};

struct pf_scsi_result {
	uint8_t status;
	uint8_t sense[252];
	uint32_t sense_len;
	uint32_t got;            /* Data-In bytes */
	uint32_t resid;
};

enum { RX_GOT = 1, RX_EOF = 0, RX_TMO = -1 };

enum { SEND_KEEP_LEN = 1, SEND_BAD_HDIGEST = 2, SEND_BAD_DDIGEST = 4, SEND_NO_DIGESTS = 8 };

static inline void pf_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void pf_put24(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 16); p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)v; }
static inline void pf_put32(uint8_t *p, uint32_t v) { pf_put16(p, (uint16_t)(v >> 16)); pf_put16(p + 2, (uint16_t)v); }
static inline uint16_t pf_get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t pf_get24(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }
static inline uint32_t pf_get32(const uint8_t *p) { return (uint32_t)pf_get16(p) << 16 | pf_get16(p + 2); }
static inline bool pf_sn_gt(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }
uint32_t pf_rndn(uint32_t n);
void pf_rnd_fill(uint8_t *p, size_t n);
void pf_scsi_lun0(uint8_t *b);

void pf_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void pf_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t pf_now_ms(void);
uint64_t pf_rnd(void);
void pf_crc32c_init_table(void);
void pf_crc32c_put(uint8_t *out, const uint8_t *a, size_t an, const uint8_t *b, size_t bn);
int pf_send_all(int fd, const void *buf, size_t len);
void pf_conn_open(struct pf_conn *c, const char *label);
void pf_conn_open_rcvbuf(struct pf_conn *c, const char *label, int rcvbuf);
void pf_conn_close(struct pf_conn *c);
int pf_send_pdu(struct pf_conn *c, uint8_t *bhs, const uint8_t *ahs, uint32_t ahslen,
		const uint8_t *data, uint32_t dlen, unsigned flags);
void pf_bhs_init(uint8_t *b, uint8_t op, uint8_t flags, struct pf_conn *c);
int pf_recv_pdu(struct pf_conn *c, struct pf_rx *r, int tmo);
int pf_recv_reply(struct pf_conn *c, struct pf_rx *r, int tmo);
void pf_expect_silence(struct pf_conn *c, const char *what);
uint64_t pf_expect_drop_within(struct pf_conn *c, const char *what, int *reject_reason, int limit);
uint64_t pf_expect_drop(struct pf_conn *c, const char *what, int *reject_reason);
void pf_expect_quick_drop(struct pf_conn *c, const char *what);
const char *pf_text_value(const uint8_t *data, uint32_t len, const char *key);
void pf_login_bhs(struct pf_conn *c, uint8_t *b, uint8_t flags);
int pf_login(struct pf_conn *c, const struct pf_login_opts *lo);
void pf_login_ok(struct pf_conn *c, const struct pf_login_opts *lo);
void pf_open_logged_in(struct pf_conn *c, const char *label);
unsigned pf_sense_key(const struct pf_scsi_result *sr);
int pf_scsi_cmd(struct pf_conn *c, const uint8_t *cdb, uint8_t *rd, const uint8_t *wr, uint32_t edtl,
		struct pf_scsi_result *sr);
void pf_tur_ok(struct pf_conn *c, const char *when);
void pf_rw10_cdb(uint8_t *cdb, uint8_t op, uint32_t lba, uint16_t n);
void pf_read10_ok(struct pf_conn *c, uint32_t lba, uint16_t n, uint8_t *buf);
void pf_write10_ok(struct pf_conn *c, uint32_t lba, uint16_t n, const uint8_t *buf);
void pf_roundtrip_ok(struct pf_conn *c);
void pf_logout_ok(struct pf_conn *c);
void pf_healthy_open(void);
void pf_health_check(const char *after);

/* pdufuzz_r2t.c: a task ending while its R2T is still queued */
unsigned pf_stall_conn(struct pf_conn *c, const char *label, size_t extra);
void pf_case_r2t_queued(void);

/* pdufuzz_limits.c: the resource limits, against the daemon tests/limits.sh
 * starts with these settings (and TARGETD_PID set). */
#define LIM_CONNECTIONS 8             /* max_connections */
#define LIM_CONNS_PER_TARGET 4        /* max_connections_per_target */
#define LIM_SESSIONS_PER_INITIATOR 2  /* max_sessions_per_initiator */
#define LIM_QUEUE_DEPTH 4             /* queue_depth */
#define LIM_CONN_BUFFER (16u << 20)   /* max_buffer_per_connection */
#define LIM_TOTAL_BUFFER (32u << 20)  /* max_buffer_total */
#define LIM_PENDING_TX (1u << 20)     /* max_pending_tx_per_connection */
#define LIM_TEXT_RESPONSE 16384       /* max_text_response */
#define LIM_DATA_OUT_TIMEOUT 3        /* data_out_timeout */
#define LIM_TARGET_B "iqn.2026-11.org.targetd.test:limits-b"
#define LIM_RSS_SLACK (12u << 20)     /* RSS growth allowed beyond a limit */
#define LIM_LEAK_SLACK (3u << 20)     /* RSS growth allowed over 800 connections */
#define LIM_FD_CONNS 80               /* connections opened at the descriptor limit */
void pf_case_limit_pending_tx(void);
void pf_case_limit_buffers(void);
void pf_case_limit_queue_depth(void);
void pf_case_limit_connections(void);
void pf_case_limit_sessions(void);
void pf_case_limit_text(void);
void pf_case_limit_text_leak(void);
void pf_case_limit_fd(void);

#endif
