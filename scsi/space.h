/*
 * Space on a thin LUN (scsi/space.c): zero detection. Internal to scsi/.
 */
#ifndef SCSI_SPACE_H
#define SCSI_SPACE_H

#include "scsi/scsi_int.h"

/* The zero detection a LUN gets when it asks for want: want on a thin LUN
 * (thin = true) whose backstore is thin and reads zeroes back after a
 * DISCARD, SCSI_ZD_OFF anywhere else (and on a read-only LUN). */
enum scsi_zero_detect space_zero_detect_effective(const struct scsi_lun *lun,
						  enum scsi_zero_detect want);

/* Is every byte of buf[0, len) zero? Stops at the first word that is not. */
bool space_all_zero(const void *buf, size_t len);

/*
 * Zero detection for a WRITE of len bytes at offset (bytes) from buf, under
 * the command's LBA range lock, on a LUN with zero detection in effect
 * (the caller tests lun->zero_detect, so a LUN without it pays one branch).
 * When buf holds only zeroes, the range is deallocated (SCSI_ZD_UNMAP) or
 * zeroed in place (SCSI_ZD_ON) instead, flushed when the write would have
 * been FUA (the command's FUA bit or WCE=0), counted in the statistics,
 * and the command completes with that: returns true (PENDING). Returns
 * false, having done nothing, when buf holds data: write it.
 */
bool space_zero_write(struct scsi_cmd *cmd, uint64_t offset, uint64_t len, const void *buf);

/*
 * The LUN's hard limit (lun->hard_limit, tested by the caller, scsi_submit()):
 * would io take the backstore past it? Only requests that allocate (WRITE,
 * WRITE ZEROES, COPY) are judged; one that would is still allowed when
 * every byte of its range is allocated already (an overwrite takes no new
 * space). Costs an fstat per request on a LUN with a limit (and the
 * allocation map of the range when near it). A backstore that cannot tell
 * its allocation is never refused.
 */
bool space_limit_refuses(struct scsi_lun *lun, const struct bs_io *io);

/* scsi_submit() on a LUN with lun->space_watch: the soft thresholds
 * (sampled, space_threshold_check()) and the hard limit of a request that
 * allocates. True: refuse io (-ENOSPC). */
bool space_submit_refuses(struct scsi_lun *lun, const struct bs_io *io);

/* Look at the LUN's space now: establish THIN PROVISIONING SOFT THRESHOLD
 * REACHED for every nexus when a soft threshold is crossed (once, until
 * the LUN is below both again). Synchronous (fstat, fstatvfs). */
void space_threshold_check(struct scsi_lun *lun);

/* SBC-4 6.6.6: THRESHOLD EXPONENT and THRESHOLD PERCENTAGE of VPD B2 (the
 * caller fills the rest). A threshold set, the unit of every resource
 * count, is 1 MiB of LBAs. */
void space_vpd_lbp(const struct scsi_lun *lun, uint8_t *d);

/* SPC-4 6.9 LOG SENSE: pages 0x00 and, on a thin LUN, 0x0C. */
enum sense_reason space_parse_log_sense(struct scsi_cmd *cmd);

#endif
