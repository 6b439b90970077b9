/*
 * Space on a thin LUN: zero detection.
 *
 * Zero detection (per LUN zero_detect = "on" | "unmap"): a WRITE whose data
 * is all zeroes becomes a WRITE_ZEROES request (fallocate ZERO_RANGE,
 * BLKZEROOUT) or a DISCARD (punch holes) of the same range, as a thin
 * array that "detects zeroes and discards them" does. SBC-4 4.7.3.3 lets a
 * thin provisioned logical unit deallocate LBAs a write leaves zero; LBPRZ
 * (the backstore reads zeroes back after a DISCARD) is what makes that
 * invisible to the initiator, so the LUN only gets zero detection when its
 * backstore says so (space_zero_detect_effective()).
 *
 * DESIGN (threads): everything runs on the command's network thread, under
 * the LBA range lock the WRITE already holds (shared, like WRITE SAME and
 * UNMAP), so COMPARE AND WRITE, which takes the range exclusively, never
 * sees half of it. The check costs one branch on a LUN without zero
 * detection (the caller's test of lun->zero_detect) and, with it, one pass
 * over the data-out buffer that stops at the first non-zero word.
 */
#include "config.h"
#include <errno.h>
#include "scsi/space.h"
#include "scsi/stats.h"
#include "scsi/vaai.h"

enum scsi_zero_detect space_zero_detect_effective(const struct scsi_lun *lun,
						  enum scsi_zero_detect want)
{
	if (want == SCSI_ZD_OFF || !vaai_lbp(lun) || !lun->bs->discard_zeroes ||
	    lun->read_only)
		return SCSI_ZD_OFF;
	return want;
}

bool space_all_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t w[8];
	size_t i;

	/* 64 bytes at a time (the compiler vectorises the OR), memcpy for
	 * whatever alignment the buffer has */
	for (; len >= sizeof(w); p += sizeof(w), len -= sizeof(w)) {
		uint64_t acc = 0;

		memcpy(w, p, sizeof(w));
		for (i = 0; i < 8; i++)
			acc |= w[i];
		if (acc)
			return false;
	}
	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static void space_zero_flushed(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	scsi_cmd_done(cmd, io->result < 0 ? scsi_bs_error(io->result, true) : SR_OK);
}

static void space_zero_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	if (io->result < 0) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, true));
		return;
	}
	scsi_stats_zero_detect(cmd, io->len);
	/* fallocate and discard are not FUA: the write they replace would
	 * have been durable before GOOD (FUA, or WCE=0), so they are too */
	if (cmd->fua || scsi_lun_write_through(cmd->lun)) {
		scsi_submit(cmd, &(struct scsi_io){ .op = BS_OP_FLUSH, .done = space_zero_flushed });
		return;
	}
	scsi_cmd_done(cmd, SR_OK);
}

bool space_zero_write(struct scsi_cmd *cmd, uint64_t offset, uint64_t len, const void *buf)
{
	enum bs_op op = cmd->lun->zero_detect == SCSI_ZD_UNMAP ? BS_OP_DISCARD
							      : BS_OP_WRITE_ZEROES;

	if (!space_all_zero(buf, (size_t)len))
		return false;
	scsi_submit(cmd, &(struct scsi_io){
		.op = op, .offset = offset, .len = len, .done = space_zero_done,
	});
	return true;
}

/* Is every byte of [offset, offset + len) allocated? */
static bool space_range_mapped(struct backstore *bs, uint64_t offset, uint64_t len)
{
	while (len) {
		uint64_t run = 0;
		bool mapped = false;

		if (backstore_lba_status(bs, offset, len, &mapped, &run) < 0 || !mapped || !run)
			return false;
		run = MIN(run, len);
		offset += run;
		len -= run;
	}
	return true;
}

bool space_limit_refuses(struct scsi_lun *lun, const struct bs_io *io)
{
	struct bs_space sp;

	if (io->op != BS_OP_WRITE && io->op != BS_OP_WRITE_ZEROES && io->op != BS_OP_COPY)
		return false;
	if (backstore_space(io->bs, &sp, false) < 0)
		return false;
	if (sp.allocated + io->len <= lun->hard_limit)
		return false;
	return !space_range_mapped(io->bs, io->offset, io->len);
}
