/*
 * iSCSI connections, sessions and tasks (RFC 7143), and the network threads
 * that own them.
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
 * Task states (changed only by the owning thread):
 *   FREE -> DATA_OUT (collecting write data) -> QUEUED (data complete,
 *   waiting for CmdSN order and its task set: targetd/cmdsn.c) -> EXEC (in
 *   the SCSI layer / backstore) -> RESPOND (in the transmit queue) -> FREE.
 *   CmdSN order and the task set are not states of their own: a task in
 *   DATA_OUT may already be delivered, or still held behind a hole
 *   (iscsi_task.sn_entry, .ts_entry, owned by cmdsn.c and scsi/taskset.c).
 *   A task that task management aborts while EXEC moves to ABORTED and is
 *   freed when the backstore completes it.
 *
 * Transmit references: every slot of a connection's transmit ring that
 * holds a PDU of a task (an R2T, a Data-In, the status) counts in
 * task->tx_refs until the slot is sent or dropped. A task that ends while
 * any slot still names it (ABORT TASK or a Data-Out error while its R2T
 * waits behind unsent PDUs, say) is only ZOMBIE: gone for the protocol
 * (not in the ITT hash, not in the transmit queue, not counted in the
 * CmdSN window, found by no task management), but its slot, buffer and
 * connection stay until the last slot lets go; only then is it FREE and
 * back on the free list. So a ring entry never names a freed or reused
 * task. iscsi_task_free() refuses a task that is FREE or ZOMBIE already;
 * built with TARGETD_DEBUG (configure --enable-sanitizers or
 * --enable-debug) a freed task is poisoned, and a second free, a write to
 * a freed task or any use of one aborts the daemon with the culprit named.
 */
#ifndef TARGETD_CONN_H
#define TARGETD_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "scsi/scsi.h"
#include "targetd/cmdsn.h"
#include "targetd/iscsi_pdu.h"
#include "targetd/login.h"
#include "targetd/params.h"
#include "common/bufpool.h"
#include "common/util.h"

struct net_thread;
struct iscsi_conn;
struct iscsi_session;
struct iscsi_target;

enum task_state {
	TASK_FREE = 0,
	TASK_DATA_OUT,
	TASK_QUEUED,
	TASK_EXEC,
	TASK_RESPOND,
	TASK_ABORTED,
	TASK_ZOMBIE,       /* ended, transmit ring slots still name it */
};

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

struct iscsi_task {
	struct scsi_cmd cmd;
	struct tx_entry tx;
	struct iscsi_session *sess;
	struct iscsi_conn *conn;       /* connection allegiance */
	enum task_state state;
	uint16_t idx;                  /* index in sess->tasks, used in TTTs */
	uint16_t tx_refs;              /* transmit ring slots naming this task */
	bool immediate;
	bool in_hash;
	bool parse_failed;             /* result set at parse; data is discarded */
	bool sent_status;
	bool counted;                  /* counts against the CmdSN window */
	uint32_t itt;
	uint32_t ttt_base;             /* (idx + 1) << 16: R2T TTTs of this task */
	uint8_t sense_seg[2 + SCSI_SENSE_BUF]; /* SCSI Response data segment */
	uint32_t cmdsn;
	uint8_t bhs_flags;
	uint8_t lun_raw[8];
	struct iscsi_task *hnext;      /* ITT hash chain */
	struct list_head qlink;        /* session's run queue (cmdsn.c) */
	struct iscsi_cmdsn_entry sn_entry; /* place in CmdSN order (cmdsn.c) */
	struct scsi_task_entry ts_entry;   /* place in its LUN's task set */

	/* Data-Out */
	uint32_t want;                 /* bytes to receive into buf */
	uint32_t edtl_in;              /* bytes the initiator will send (EDTL) */
	uint32_t received;             /* bytes received (incl. discarded) */
	uint32_t stored;               /* bytes of [0, want) in the buffer */
	uint32_t unsol_left;           /* unsolicited bytes still expected */
	uint32_t next_r2t_off;         /* next offset to solicit */
	uint32_t r2t_sent_off;         /* R2Ts queued up to here */
	uint32_t r2t_outstanding;
	uint32_t r2tsn;
	uint32_t exp_datasn;           /* DataSN expected in the current sequence */
	uint32_t ttt;                  /* TTT of the outstanding R2T sequence */
	uint32_t seq_end;              /* end offset of the current R2T sequence */
	bool unsol_done;
	bool r2t_pending;              /* task sits in tx queue to send R2Ts */

	/* Data-In / response */
	uint32_t tx_off;
	uint32_t tx_len;               /* bytes of data-in to send */
	uint32_t datasn;
	uint32_t resid;
	uint8_t rsp_flags;             /* overflow/underflow */

	struct bufpool_buf *bb;        /* where cmd.buf came from */
	uint32_t buf_acct;             /* bytes of bb counted against the limits */
	uint64_t data_wait_ms;         /* when it began to wait for Data-Out */
	struct iscsi_tmf *tmf_wait;    /* TMF waiting for this aborted task */
};

struct iscsi_tmf {
	struct iscsi_session *sess;
	struct iscsi_conn *conn;
	uint8_t bhs[ISCSI_BHS_LEN];
	unsigned waiting;              /* aborted tasks still in the backstore */
	uint8_t response;
	bool close_after;              /* cold reset: drop the connection after */
};

#define TASK_HASH_SIZE 256

struct iscsi_session {
	uint64_t id;
	uint16_t tsih;
	uint8_t isid[6];
	char initiator[224];
	char initiator_alias[256];
	bool discovery;
	struct iscsi_target *target;
	struct net_thread *thread;     /* owner of every connection */
	struct scsi_nexus nexus;
	struct iscsi_params params;

	uint32_t exp_cmdsn;
	_Atomic uint32_t max_cmdsn_sent; /* highest MaxCmdSN advertised (a joining
	                                  * connection's login reads it too) */
	unsigned queue_depth;

	struct iscsi_task *tasks;
	unsigned n_tasks;
	unsigned active;               /* non-immediate tasks not yet freed */
	struct iscsi_task *free_list;
	struct iscsi_task *hash[TASK_HASH_SIZE];
	struct iscsi_cmdsn cmdsn;      /* reorder queue, task sets (cmdsn.c) */
	struct {
		uint32_t cmdsn, itt;
	} aborted_ahead[16];           /* aborted before they arrived (ABORT TASK) */
	unsigned n_aborted_ahead;
	unsigned exec_count;           /* tasks inside the SCSI layer */
	bool logout_session;

	struct list_head conns;
	unsigned n_conns;
	/* Connections attached or on their way (a login on another thread
	 * decided to join): MaxConnections counts them, and the session
	 * lives while any is left. Changed under the registry lock when a
	 * join is decided, atomically everywhere. */
	_Atomic unsigned conn_slots;
	struct list_head reg_link;     /* registry, under the registry lock */
	bool registered;
	bool closing;
	unsigned refs;                 /* connections + pending TMF */
	/* Statistics (owning thread only; targetctl sessions reads them there). */
	uint64_t stat_cmds, stat_not_good, stat_in_bytes, stat_out_bytes;
	uint32_t trace_gen;            /* the trace that has its NEXUS record (trace.c) */
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

/* conn.c */
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
void iscsi_conn_adopt(struct iscsi_conn *c, struct net_thread *t);
/* The epoll events c wants now (EPOLLIN unless paused, EPOLLOUT while
 * output waits); iscsi_conn_arm() applies them if they changed. */
uint32_t iscsi_conn_events(const struct iscsi_conn *c);
void iscsi_conn_arm(struct iscsi_conn *c);

/* conn_limits.c: the resource limits of a connection */
/* Past max_pending_tx_per_connection: stop reading (true). */
bool iscsi_conn_rx_throttled(struct iscsi_conn *c);
/* Output sent: read again once half of the limit is left. */
void iscsi_conn_rx_resume_check(struct iscsi_conn *c);
/* A data buffer of need bytes for t within the buffer limits (false: the
 * command gets TASK SET FULL). */
bool iscsi_task_get_buffer(struct iscsi_conn *c, struct iscsi_task *t, uint32_t need);
/* End the WRITEs that waited longer than data_out_timeout. */
void iscsi_conn_data_out_timer(struct iscsi_conn *c, uint64_t now_ms);

/* session.c */
struct iscsi_session *iscsi_session_new(struct iscsi_conn *c);
void iscsi_session_attach_conn(struct iscsi_session *s, struct iscsi_conn *c);
void iscsi_session_detach_conn(struct iscsi_session *s, struct iscsi_conn *c);
void iscsi_session_put(struct iscsi_session *s);
struct iscsi_task *iscsi_task_alloc(struct iscsi_session *s, bool immediate);
void iscsi_task_free(struct iscsi_task *t);
/* A transmit ring slot naming t was sent or dropped. */
void iscsi_task_tx_put(struct iscsi_task *t);
/* Give the task's data buffer back now (the task will not use it again):
 * a Data-Out being received into it goes to scratch. */
void iscsi_task_drop_buffer(struct iscsi_task *t);
/* Under the registry lock, at the end of login: 0, or the login status
 * refusing a connection beyond max_connections_per_target or a session
 * beyond max_sessions_per_initiator (limits.h). */
uint16_t iscsi_session_check_limits(const char *initiator, const uint8_t *isid,
				    const struct iscsi_target *t, bool join);
/* A task used in a state it cannot be in (freed, zombie): logged; with
 * TARGETD_DEBUG the daemon aborts. */
void iscsi_task_bug(const struct iscsi_task *t, const char *what, const char *where);
#define TASK_LIVE(t) ((t)->state != TASK_FREE && (t)->state != TASK_ZOMBIE)
#ifdef TARGETD_DEBUG
#define TASK_ASSERT(t, cond) ((cond) ? (void)0 : iscsi_task_bug((t), #cond, __func__))
#else
#define TASK_ASSERT(t, cond) ((void)0)
#endif
struct iscsi_task *iscsi_task_find(struct iscsi_session *s, uint32_t itt);
void iscsi_task_hash_add(struct iscsi_task *t);
void iscsi_task_hash_del(struct iscsi_task *t);
uint32_t iscsi_session_max_cmdsn(struct iscsi_session *s);
void iscsi_session_registry_lock(void);
void iscsi_session_registry_unlock(void);
struct iscsi_session *iscsi_session_lookup_isid(const char *initiator, const uint8_t *isid,
					       const struct iscsi_target *t);
struct iscsi_session *iscsi_session_lookup_tsih(uint16_t tsih);
void iscsi_session_register(struct iscsi_session *s);
void iscsi_session_registry_forget(void);
void iscsi_session_unregister(struct iscsi_session *s);
unsigned iscsi_session_count(void);
void iscsi_session_for_each(void (*fn)(struct iscsi_session *s, void *arg), void *arg);

/* conn.c: the full-feature command path */
void iscsi_task_exec(struct iscsi_task *t);
void iscsi_task_respond(struct iscsi_task *t);
void iscsi_cmd_complete_cb(struct scsi_cmd *cmd);

/* tmf.c */
void iscsi_tmf_rx(struct iscsi_conn *c);
void iscsi_tmf_task_aborted(struct iscsi_task *t);
/* Abort every task of a session on one LUN, as ABORT TASK SET does but with
 * no TMF response (PREEMPT AND ABORT). Returns how many were aborted. */
unsigned iscsi_session_abort_lun(struct iscsi_session *s, uint64_t lun);

/* pr_abort.c: the PREEMPT AND ABORT handler given to scsi/pr.c */
bool iscsi_pr_abort(struct scsi_cmd *by, struct scsi_nexus *const *victims, unsigned n,
		    uint16_t lun);

#endif
