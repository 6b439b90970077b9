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

/* Scratch buffers for the rare commands that need a second buffer
 * (VERIFY BYTCHK, WRITE AND VERIFY, ORWRITE, SANITIZE): allocated per
 * command, kept in cmd->hpriv, freed before completion. */
void *scsi_hpriv_alloc(struct scsi_cmd *cmd, size_t len);
void scsi_hpriv_free(struct scsi_cmd *cmd);

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
