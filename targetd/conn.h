/*
 * iSCSI connections (RFC 7143): the PDU reader, the transmit ring, the
 * network threads that own them.
 *
 * DESIGN (threads and ownership):
 * - N network threads (net.c), each an epoll loop with its own io_engine and
 *   buffer pool. A connection is owned by exactly one thread and is only
 *   touched by it. At the end of login a connection that joins an existing
 *   session is handed to the thread that owns that session, so every
 *   connection of a session lives on one thread: the session (CmdSN window,
 *   ITT table, tasks) needs no lock.
 * - Cross-thread requests (hand a logged-in connection over, close a session
 *   being reinstated, shut down) travel as messages on the target thread's
 *   queue (mutex + eventfd); they are rare and off the data path.
 * - The session registry (TSIH and initiator/ISID lookup at login) is a list
 *   under one mutex, used only at login and logout.
 * - Tasks are preallocated per session (queue depth + slack) and reused; data
 *   buffers come from the owning thread's pool. Nothing is allocated per
 *   command in the steady state.
 *
 * The sessions and tasks a connection serves: session.h.
 */
#ifndef TARGETD_CONN_H
#define TARGETD_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "scsi/scsi.h"
#include "targetd/iscsi_pdu.h"
#include "targetd/login.h"
#include "common/util.h"

struct net_thread;
struct iscsi_conn;
struct iscsi_portal;
struct iscsi_session;
struct iscsi_task;

/* Something waiting in a connection's transmit queue. */
enum tx_kind { TX_TASK, TX_PDU };
struct tx_entry {
	struct list_head link;
	enum tx_kind kind;
};

/* A standalone PDU (login/text/TMF/NOP/logout responses, Reject, Async). */
struct tx_pdu {
	struct tx_entry e;
	uint8_t bhs[ISCSI_BHS_LEN];
	bool set_statsn;      /* fill StatSN/ExpCmdSN/MaxCmdSN when sent */
	bool advance_statsn;
	bool close_after;     /* drop the connection once written */
	uint32_t dlen;
	uint8_t *data;        /* owned, freed after sending */
	uint32_t acct;        /* bytes counted in the connection's tx_bytes */
};

enum conn_state {
	CONN_LOGIN,
	CONN_FULL,
	CONN_LOGOUT,       /* logout response queued */
	CONN_CLOSING,
};

enum rx_state {
	RX_BHS,
	RX_AHS,
	RX_HDIGEST,
	RX_DATA,
	RX_PAD,
	RX_DDIGEST,
};

#define CONN_RXBUF 65536
#define CONN_TX_SLOTS 32
#define CONN_IOV 4

struct tx_slot {
	uint8_t hdr[ISCSI_BHS_LEN + ISCSI_DIGEST_LEN];
	uint8_t trail[3 + ISCSI_DIGEST_LEN];
	struct iovec iov[CONN_IOV];
	int iovcnt;
	struct tx_entry *owner;
	bool last;                      /* owner's last PDU */
	bool status;                    /* a task's status: the task ends once sent */
};

struct iscsi_conn {
	int fd;
	int epoll_tag;                  /* tag for epoll dispatch (must be first word used) */
	struct net_thread *thread;
	struct iscsi_session *sess;
	struct list_head sess_link;
	struct list_head thread_link;
	struct list_head dirty_link;    /* thread's list of connections to flush */
	enum conn_state state;
	uint16_t cid;
	char peer[64];
	char local[64];
	uint16_t tpgt;
	struct iscsi_portal *portal;

	/* Login state (freed after login). */
	struct iscsi_login *login;
	struct iscsi_session *pending_session;  /* being joined at the end of login */
	bool handoff;                   /* move to pending_session's thread */

	/* A Text Response longer than one PDU (RFC 7143 11.11 C bit). */
	char *text_buf;
	size_t text_len, text_off;
	uint32_t text_ttt;

	/* Negotiated per connection. */
	bool hdigest, ddigest;
	uint32_t max_send_dsl;          /* initiator's MaxRecvDataSegmentLength */
	uint32_t max_recv_dsl;          /* ours */

	uint32_t stat_sn;
	uint32_t exp_statsn;
	uint32_t login_exp_cmdsn;       /* before a session exists */

	/* Receive side. */
	enum rx_state rx_state;
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t ahs[1024 + ISCSI_DIGEST_LEN];
	uint32_t rx_need, rx_got;       /* bytes of the current piece */
	uint32_t dlen, padlen;
	uint8_t *rx_data;               /* destination of the data segment */
	uint8_t *rx_owned;              /* rx_data allocated for this PDU */
	uint32_t rx_keep;               /* bytes of the data segment stored at rx_data */
	uint8_t rx_reject;              /* reject this PDU once read */
	bool data_digest_bad;
	uint32_t rx_crc;
	uint8_t rx_digest[4];
	struct iscsi_task *rx_task;     /* Data-Out / immediate data target */
	uint32_t rx_task_off;
	bool rx_discard;
	uint8_t *rxbuf;                 /* bulk receive buffer */
	uint32_t rxb_start, rxb_end;

	/* Transmit side. */
	struct list_head txq;
	struct tx_slot slots[CONN_TX_SLOTS];
	unsigned slot_head, slot_count; /* ring of prepared PDUs */
	size_t slot_sent;               /* bytes of slots[slot_head] already sent */
	bool want_out;                  /* EPOLLOUT wanted */
	bool rx_paused;                 /* not read: too much output queued */
	uint32_t ev_mask;               /* events armed in epoll */
	size_t tx_bytes;                /* standalone PDU bytes queued, unsent */
	size_t buf_bytes;               /* data buffers of its tasks */
	struct list_head kick_link;     /* thread's list of connections to read */
	bool in_flush;
	bool close_after_tx;

	uint64_t last_rx_ms;
	uint64_t created_ms;
	uint64_t nop_sent_ms;
	uint32_t nop_ttt;
	bool nop_outstanding;
	unsigned refs;                  /* tasks holding this connection */
	bool dead;
	bool buried;                    /* in the thread's graveyard */
};

struct iscsi_conn *iscsi_conn_new(struct net_thread *t, int fd, struct iscsi_portal *portal);
void iscsi_conn_event(struct iscsi_conn *c, uint32_t events);
void iscsi_conn_close(struct iscsi_conn *c, const char *why);
void iscsi_conn_release(struct iscsi_conn *c);
void iscsi_conn_reap(struct net_thread *t);
void iscsi_conn_timer(struct iscsi_conn *c, uint64_t now_ms);
void iscsi_conn_flush(struct iscsi_conn *c);
void iscsi_conn_queue_pdu(struct iscsi_conn *c, struct tx_pdu *p);
struct tx_pdu *iscsi_pdu_new(uint8_t opcode, uint32_t dlen);
void iscsi_conn_reject(struct iscsi_conn *c, uint8_t reason, const uint8_t *bhs);
/* The epoll events c wants now (EPOLLIN unless paused, EPOLLOUT while
 * output waits); iscsi_conn_arm() applies them if they changed. */
uint32_t iscsi_conn_events(const struct iscsi_conn *c);
void iscsi_conn_arm(struct iscsi_conn *c);

/* A task's PDUs (R2Ts, Data-In, status) join the transmit queue, or
 * leave it once it solicits nothing more (R2Ts not laid out yet are not
 * sent). */
void iscsi_conn_queue_task(struct iscsi_task *t);
void iscsi_conn_unqueue_task(struct iscsi_task *t);
/* Reject the PDU being read and drop the connection (protocol errors at
 * ErrorRecoveryLevel 0). */
void iscsi_conn_fatal(struct iscsi_conn *c, uint8_t reason, const char *why);

#endif
