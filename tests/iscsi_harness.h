/*
 * A harness for unit tests of the iSCSI layer (tests/check_iscsi_*.c): one
 * session in full feature phase with one or two connections, each a
 * socketpair whose other end the test writes PDUs into and reads the
 * target's answers from, all on a network thread that is the test's own
 * thread (no epoll loop: the harness calls the connection's event handler
 * and runs the io_engine itself).
 *
 * LUN 0 is a memory backstore. LUN 1 is the same memory behind a gate: its
 * requests wait until the test releases them, so a test can hold a command
 * in the backstore (EXEC) for as long as it likes.
 */
#ifndef TESTS_ISCSI_HARNESS_H
#define TESTS_ISCSI_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backstore/backstore.h"
#include "targetd/conn.h"
#include "targetd/session.h"
#include "targetd/net.h"
#include "targetd/target.h"

#define IH_CONNS 2
#define IH_BLOCKS 2048u          /* 512-byte blocks per LUN */
#define IH_HELD_MAX 64

struct ih_opts {
	unsigned conns;              /* 1 (default) or 2 */
	unsigned queue_depth;        /* default 16 */
	bool initial_r2t;            /* default No */
	bool no_immediate_data;      /* default ImmediateData=Yes */
	uint32_t first_burst;        /* default 65536 */
	uint32_t max_burst;          /* default 262144 */
	uint32_t max_r2t;            /* MaxOutstandingR2T, default 1 */
	uint32_t mrdsl;              /* both directions, default 8192 */
	bool digests;                /* CRC32C header and data digests */
};

struct ih_pdu {
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t *data;               /* dlen bytes, valid until the next ih_next() */
	uint32_t dlen;
};

struct ih_peer {
	struct iscsi_conn *c;        /* NULL once the target closed it */
	int fd;                      /* the initiator's end */
	uint8_t *rx;                 /* bytes from the target not parsed yet */
	size_t rx_len;
	uint8_t *data;               /* ih_pdu.data */
};

struct ih {
	struct ih_opts o;
	struct net_thread thr;
	struct targetd_runtime rtv, *rt_saved;
	struct iscsi_target tgt;
	struct backstore *mem;
	struct backstore gate;       /* LUN 1 */
	struct bs_io *held[IH_HELD_MAX];
	unsigned n_held;
	struct iscsi_session *s;
	struct ih_peer p[IH_CONNS];
	uint32_t itt;
	uint32_t cmdsn;              /* the test's next CmdSN (starts at 1) */
};

void ih_start(struct ih *h, const struct ih_opts *o);
/* Releases the gate, closes what is open, frees everything. */
void ih_stop(struct ih *h);

/* Build a PDU (BHS + AHS + data with padding and the connection's
 * digests) into out; returns its length. */
size_t ih_build(const struct ih *h, uint8_t *out, const uint8_t *bhs, const uint8_t *ahs,
		uint32_t ahs_len, const void *data, uint32_t dlen);
/* Write len bytes on connection ci, chunk bytes at a time (0: all at
 * once), letting the target read after each chunk. */
void ih_feed(struct ih *h, unsigned ci, const void *p, size_t len, size_t chunk);
/* ih_build + ih_feed in one piece. */
void ih_send(struct ih *h, unsigned ci, const uint8_t *bhs, const void *data, uint32_t dlen);
/* Run the target until it has nothing left to do: engine completions,
 * deferred work, transmit queues flushed. */
void ih_run(struct ih *h);
/* The next PDU the target sent on ci (after ih_run), false if none yet.
 * Digests, when negotiated, are checked. */
bool ih_next(struct ih *h, unsigned ci, struct ih_pdu *p);
/* The target has closed connection ci (everything it sent was read). */
bool ih_closed(struct ih *h, unsigned ci);

/* BHS builders. flags for a command: ISCSI_FLAG_FINAL | ISCSI_CMD_READ |
 * ISCSI_CMD_WRITE | task attribute. Each returns the ITT it used. */
uint32_t ih_bhs_cmd(struct ih *h, uint8_t *b, uint32_t cmdsn, const uint8_t *cdb, unsigned cdb_len,
		    uint8_t flags, uint32_t edtl, uint16_t lun);
void ih_bhs_data_out(uint8_t *b, uint32_t itt, uint32_t ttt, uint32_t datasn, uint32_t offset,
		     bool final, uint16_t lun);
uint32_t ih_bhs_nop(struct ih *h, uint8_t *b, uint32_t cmdsn, bool immediate);
uint32_t ih_bhs_tmf(struct ih *h, uint8_t *b, uint8_t function, uint32_t cmdsn, uint16_t lun,
		    uint32_t ref_itt, uint32_t ref_cmdsn);

/* Send a SCSI command taking the next CmdSN (non-immediate); returns its
 * ITT. data/dlen: immediate data. */
uint32_t ih_cmd(struct ih *h, unsigned ci, const uint8_t *cdb, unsigned cdb_len, uint8_t flags,
		uint32_t edtl, uint16_t lun, const void *data, uint32_t dlen);
/* An immediate NOP-Out ping on ci, once the target has done all it can
 * (ih_run); returns its ITT. Its NOP-In follows everything the target
 * had queued on ci before reading it. */
uint32_t ih_ping(struct ih *h, unsigned ci);

/* Read PDUs on ci until one with this ITT and opcode arrives (opcode 0xff:
 * any); the ones before it are appended to seen[] (when not NULL, up to
 * max, *n_seen counts them). Fails the test if it does not come. */
void ih_expect(struct ih *h, unsigned ci, uint32_t itt, uint8_t opcode, struct ih_pdu *out,
	       uint32_t *seen_itts, uint8_t *seen_ops, unsigned max, unsigned *n_seen);
/* Status of a SCSI Response (or of a Data-In with the S bit). */
static inline uint8_t ih_status(const struct ih_pdu *p) { return p->bhs[3]; }
/* Sense key, ASC, ASCQ of a SCSI Response's sense data (fixed format). */
void ih_sense(const struct ih_pdu *p, uint8_t *key, uint8_t *asc, uint8_t *ascq);

/* Requests held by LUN 1's gate, and their release (oldest first). */
static inline unsigned ih_held(const struct ih *h) { return h->n_held; }
void ih_release(struct ih *h, unsigned n);

/* CDBs */
void ih_cdb_rw10(uint8_t *cdb, bool write, uint32_t lba, uint16_t blocks);

#endif
