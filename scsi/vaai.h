/*
 * The VAAI primitives (scsi/vaai.c, scsi/xcopy.c). Internal to scsi/.
 *
 * Every limit below is both advertised (VPD B0, B2, 8F, RECEIVE COPY
 * RESULTS) and enforced by the handlers.
 */
#ifndef SCSI_VAAI_H
#define SCSI_VAAI_H

#include "scsi/scsi_int.h"
#include "scsi/rangelock.h"

/* SBC-4 5.3: NUMBER OF LOGICAL BLOCKS is one byte; the range lock makes any
 * length atomic, so the whole field is offered. */
#define VAAI_CAW_MAX_BLOCKS 255u
/* SBC-4 5.48/5.49 MAXIMUM WRITE SAME LENGTH, in blocks: the most WRITE
 * SAME(10) can ask for (32 MiB of 512-byte blocks, 256 MiB of 4 KiB ones).
 * Zeroing is one fallocate whatever the length; a pattern is written in
 * vectored requests of up to 1024 blocks. */
#define VAAI_WS_MAX_BLOCKS 65535u
/* SBC-4 5.30 UNMAP: descriptors per command; LBAs per command (bytes). */
#define VAAI_UNMAP_MAX_DESC 256u
#define VAAI_UNMAP_MAX_BYTES (64ull << 30)
/* MAXIMUM UNMAP LBA COUNT: the byte limit in blocks, at most 2^20 blocks
 * (initiators such as libiscsi's conformance suite treat larger explicit
 * limits as insane; 0xffffffff would promise no limit at all). */
#define VAAI_UNMAP_MAX_LBAS (1u << 20)
static inline uint32_t vaai_unmap_max_blocks(const struct scsi_lun *lun)
{
	uint64_t n = VAAI_UNMAP_MAX_BYTES >> lun->block_shift;

	return (uint32_t)(n < VAAI_UNMAP_MAX_LBAS ? n : VAAI_UNMAP_MAX_LBAS);
}
/* GET LBA STATUS: descriptors per response. */
#define VAAI_LBA_STATUS_MAX_DESC 128u

/* SPC-4 EXTENDED COPY (LID1) limits. */
#define XCOPY_MAX_TARGET_DESC 32u
#define XCOPY_MAX_SEGMENT_DESC 64u
#define XCOPY_MAX_DESC_LIST_LEN 4096u
#define XCOPY_MAX_SEGMENT_BYTES (256u << 20)
#define XCOPY_CHUNK (8u << 20)          /* bytes per backstore COPY request */
#define XCOPY_HELD_RESULTS 32u          /* RECEIVE COPY RESULTS memory per LUN */
#define XCOPY_MAX_CONCURRENT 255u

/* The EXTENDED COPY state of a LUN (held results), at lun->priv_xcopy. */
int xcopy_lun_init(struct scsi_lun *lun);
void xcopy_lun_fini(struct scsi_lun *lun);

/* Logical block provisioning is offered (thin LUN with a backstore that
 * deallocates): LBPME, LBPU, LBPWS, LBPWS10, UNMAP. */
bool vaai_lbp(const struct scsi_lun *lun);

/* VPD builders for spc.c: fill the VAAI fields of Block Limits (B0; d is the
 * page, 64 bytes, zeroed) and Logical Block Provisioning (B2); build the
 * Third-party Copy page (8F) and return its length. */
void vaai_vpd_block_limits(const struct scsi_lun *lun, uint8_t *d);
void vaai_vpd_lbp(const struct scsi_lun *lun, uint8_t *d);
uint32_t xcopy_vpd_tpc(const struct scsi_lun *lun, uint8_t *d);

/* Parse functions (named by scsi/opcodes.c). */
enum sense_reason vaai_parse_caw(struct scsi_cmd *cmd);
enum sense_reason vaai_parse_write_same(struct scsi_cmd *cmd);
enum sense_reason vaai_parse_unmap(struct scsi_cmd *cmd);
enum sense_reason vaai_parse_get_lba_status(struct scsi_cmd *cmd);
enum sense_reason xcopy_parse_extended_copy(struct scsi_cmd *cmd);
enum sense_reason xcopy_parse_receive_copy_results(struct scsi_cmd *cmd);

#endif
