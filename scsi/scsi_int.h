/*
 * Internal header shared by the scsi/ files only: parse functions named by
 * the opcode table, helpers for handlers, constants of this implementation.
 */
#ifndef SCSI_SCSI_INT_H
#define SCSI_SCSI_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "scsi/scsi.h"
#include "scsi/rangelock.h"
#include "backstore/io_engine.h"
#include "common/util.h"

/* INQUIRY PRODUCT REVISION LEVEL source (first 4 characters). */
#ifdef PACKAGE_VERSION
#define SCSI_PRODUCT_VERSION PACKAGE_VERSION
#else
#define SCSI_PRODUCT_VERSION VERSION
#endif

/* Largest data transfer of one READ/WRITE/VERIFY (VPD B0 MAXIMUM TRANSFER
 * LENGTH is this divided by the block size, and it is enforced). */
#define SCSI_MAX_XFER_BYTES (8u * 1024 * 1024)
/* VPD B0 OPTIMAL TRANSFER LENGTH (bytes) */
#define SCSI_OPT_XFER_BYTES (1024u * 1024)
/* Largest control response any handler builds (RSOC with timeouts). */
#define SCSI_CTL_BUF 4096

/* --- scsi.c helpers --- */

/* SBC-4 4.5: the one overflow-safe range check. */
static inline enum sense_reason scsi_check_lba_range(const struct scsi_cmd *cmd,
						     uint64_t lba, uint64_t n)
{
	uint64_t cap = scsi_lun_nblocks(cmd->lun);

	if (lba + n < lba || lba + n > cap)
		return SR_LBA_OUT_OF_RANGE;
	return SR_OK;
}

/* Copy a built control response into the data-in buffer: min(len,
 * allocation length) bytes. */
static inline void scsi_datain(struct scsi_cmd *cmd, const void *src, uint32_t len)
{
	uint32_t n = MIN(len, cmd->xfer_len);

	n = MIN(n, cmd->buf_cap);
	if (n)
		memcpy(cmd->buf, src, n);
	cmd->data_len = n;
}

/* Set the data-in direction for an allocation length, clamped to the most
 * the command can produce. */
static inline void scsi_set_alloc(struct scsi_cmd *cmd, uint32_t alloc, uint32_t max)
{
	cmd->dir = alloc ? SCSI_DIR_READ : SCSI_DIR_NONE;
	cmd->xfer_len = MIN(alloc, max);
}

/* Set the data-out direction for a parameter list length. */
static inline void scsi_set_dataout(struct scsi_cmd *cmd, uint32_t len)
{
	cmd->dir = len ? SCSI_DIR_WRITE : SCSI_DIR_NONE;
	cmd->xfer_len = len;
}

/* Whether an opcode table entry exists for this LUN (removable-only and
 * sanitize-only entries are hidden elsewhere). */
bool scsi_op_available(const struct scsi_opcode *op, const struct scsi_lun *lun);
/* Lookup that tells "no such opcode" from "no such service action". */
const struct scsi_opcode *scsi_opcode_find(const uint8_t *cdb, bool *bad_sa);
/* Entry for opcode/sa regardless of the CDB (RSOC). has_sa tells if the
 * opcode uses service actions at all. */
const struct scsi_opcode *scsi_opcode_get(uint8_t opcode, uint16_t sa, bool *has_sa);

/* Sense data for a reason into an arbitrary buffer (REQUEST SENSE). */
uint8_t scsi_sense_fill(uint8_t *out, size_t cap, const struct scsi_cmd *cmd,
			enum sense_reason r, bool descriptor);
/* Pop the lowest pending UA of (nexus, lun): returns false if none. */
bool scsi_ua_take(struct scsi_nexus *n, uint16_t lun, uint8_t *asc, uint8_t *ascq);
void scsi_ua_code(enum scsi_ua ua, uint8_t *asc, uint8_t *ascq);

/* Mode defaults (lun.c) */
void scsi_mode_defaults(struct scsi_mode_state *m);
void scsi_mode_publish(struct scsi_lun *lun);

/* --- the submission path (scsi.c) ---
 *
 * Every handler reaches the medium the same way:
 *
 *   execute ─► scsi_rl_lock(range, mode, cont)   (writers of the medium)
 *           ─► cont ─► scsi_submit(cmd, request) ─► done(io) ─► ...
 *           ─► scsi_cmd_done(cmd, reason)        (or a result returned)
 *
 * and every end of a command, synchronous or not, goes through one place
 * in scsi.c that releases the range lock, sets the result, runs the
 * handler's on_end and frees the scratch buffer.
 */

/* Continuation of a command once its LBA range is locked. */
typedef enum sense_reason (*scsi_cont_fn)(struct scsi_cmd *cmd);

/*
 * The LBA range lock for commands (see scsi/rangelock.c for who takes it in
 * which mode). Locks [lba, lba + n) of lun (the command's LUN or, for
 * EXTENDED COPY, another one) in cmd->rl, then calls cont(cmd): at once
 * when the range is free (its result is returned), else later on the
 * command's thread (cmd->io carries the wake-up; a result other than
 * SR_PENDING then completes the command). A command aborted while it
 * waited is completed with TASK ABORTED without running cont.
 */
enum sense_reason scsi_rl_lock(struct scsi_cmd *cmd, struct scsi_lun *lun, uint64_t lba,
			       uint64_t n, enum rangelock_mode mode, scsi_cont_fn cont);
/* Release the range early (a multi-step command between steps); a no-op
 * when nothing is held. The end of the command releases it anyway. */
static inline void scsi_rl_unlock(struct scsi_cmd *cmd)
{
	if (cmd->rl.state == RL_HELD)
		rangelock_release(&cmd->rl);
}

/* One backstore request of a command, in bytes of the LUN. */
struct scsi_io {
	struct scsi_lun *lun;         /* whose backstore; NULL: the command's LUN */
	enum bs_op op;
	unsigned flags;               /* BS_IO_FUA (scsi_write_flags()) */
	uint64_t offset, len;
	void *buf;                    /* READ/WRITE: one buffer of len bytes (2 * len for
	                               * COMPARE_AND_WRITE: compare, then write), or */
	struct iovec *iov;            /* a vector of iovcnt entries */
	int iovcnt;
	struct scsi_lun *src;         /* BS_OP_COPY: from this LUN's backstore */
	uint64_t src_offset;
	void (*done)(struct bs_io *io); /* on the command's thread; io->priv = cmd */
};

/* The one door from the SCSI layer to a backstore: fills cmd->io from rq
 * and submits it on the command's engine. Every request of every command
 * passes here, which makes it the place for what must see each backstore
 * request (fault injection around submission, tracing). */
void scsi_submit(struct scsi_cmd *cmd, const struct scsi_io *rq);

/* Flags of a write of the medium: FUA when the command asks for it or the
 * write cache is disabled (WCE=0: every acknowledged write is durable). */
static inline unsigned scsi_write_flags(const struct scsi_cmd *cmd)
{
	if (cmd->fua || !atomic_load_explicit(&cmd->lun->wce, memory_order_relaxed))
		return BS_IO_FUA;
	return 0;
}

/* Is the write cache disabled (WCE=0)? Then a command that modifies the
 * medium without FUA writes (fallocate, discard, copy) flushes before GOOD. */
static inline bool scsi_lun_write_through(const struct scsi_lun *lun)
{
	return !atomic_load_explicit(&lun->wce, memory_order_relaxed);
}

/* The end of a command that modified its LUN's medium with requests that
 * are not FUA (discard, write zeroes, copy): with WCE=0 a FLUSH first, and
 * the command ends with it (SR_PENDING); with the write cache on, SR_OK at
 * once. So with WCE=0 every acknowledged modification is durable. */
enum sense_reason scsi_cmd_durable(struct scsi_cmd *cmd);

/* A second buffer of len bytes for the command (VERIFY with BYTCHK, WRITE
 * AND VERIFY, ORWRITE, COMPARE AND WRITE): the room after the data in
 * cmd->buf when the transport's buffer has it (parse asks for it with
 * buf_extra), else a 4096-aligned allocation kept in cmd->scratch and
 * freed when the command ends. NULL when out of memory. */
void *scsi_scratch(struct scsi_cmd *cmd, size_t len);

/* Map a backstore error to a sense reason. */
enum sense_reason scsi_bs_error(int64_t result, bool write);

/* --- parse functions (named by scsi/opcodes.c) --- */
/* spc.c */
enum sense_reason spc_parse_tur(struct scsi_cmd *cmd);
enum sense_reason spc_parse_inquiry(struct scsi_cmd *cmd);
enum sense_reason spc_parse_request_sense(struct scsi_cmd *cmd);
enum sense_reason spc_parse_report_luns(struct scsi_cmd *cmd);
enum sense_reason spc_parse_rsoc(struct scsi_cmd *cmd);
enum sense_reason spc_parse_rstmf(struct scsi_cmd *cmd);
/* mode.c */
enum sense_reason mode_parse_sense(struct scsi_cmd *cmd);
enum sense_reason mode_parse_select(struct scsi_cmd *cmd);
/* sbc.c */
enum sense_reason sbc_parse_read_capacity10(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_read_capacity16(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_rw(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_verify(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_write_verify(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_orwrite(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_write_atomic16(struct scsi_cmd *cmd);

/* --- atomic writes (scsi/sbc_atomic.c) --- */
/* The LUN's atomic write limits from its backstore (at creation). */
void scsi_atomic_init(struct scsi_lun *lun);
/* VPD B0: the atomic write fields. */
void scsi_atomic_vpd(const struct scsi_lun *lun, uint8_t *d);
/* Does the LUN offer WRITE ATOMIC? Then its readers take the range lock. */
static inline bool scsi_lun_atomic(const struct scsi_lun *lun)
{
	return lun->atomic_max != 0;
}
/* The smallest naturally aligned power-of-two run of blocks [*wlba, *wlba +
 * *wn), from unit_min to unit_max blocks and inside [0, cap), that holds
 * [lba, lba + n); false when there is none. */
bool scsi_atomic_window(uint64_t lba, uint64_t n, uint64_t unit_min, uint64_t unit_max,
			uint64_t cap, uint64_t *wlba, uint64_t *wn);
enum sense_reason sbc_parse_prefetch(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_sync_cache(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_start_stop(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_prevent_allow(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_read_defect(struct scsi_cmd *cmd);
enum sense_reason sbc_parse_sanitize(struct scsi_cmd *cmd);

/* LUN id of a command as an index (valid after a successful LUN lookup). */
static inline uint16_t scsi_cmd_lun_index(const struct scsi_cmd *cmd)
{
	return (uint16_t)cmd->lun_id;
}

#endif
