/*
 * iSCSI sessions and their tasks (RFC 7143): the CmdSN window, the ITT
 * table, the preallocated tasks, and the registry of sessions that login
 * looks into. Threads and ownership: conn.h.
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
#ifndef TARGETD_SESSION_H
#define TARGETD_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include "scsi/scsi.h"
#include "targetd/cmdsn.h"
#include "targetd/conn.h"
#include "targetd/iscsi_pdu.h"
#include "targetd/params.h"
#include "common/bufpool.h"
#include "common/util.h"

struct net_thread;
struct iscsi_conn;
struct iscsi_session;
struct iscsi_target;
struct iscsi_tmf;

enum task_state {
	TASK_FREE = 0,
	TASK_DATA_OUT,
	TASK_QUEUED,
	TASK_EXEC,
	TASK_RESPOND,
	TASK_ABORTED,
	TASK_ZOMBIE,       /* ended, transmit ring slots still name it */
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

#endif
