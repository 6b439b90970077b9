/*
 * SBC-4 5.48 WRITE ATOMIC(16), SBC-4 4.29 atomic writes, and the Block
 * Limits fields that describe them (SBC-4 6.6.4).
 *
 * What a LUN offers (scsi_atomic_init(), from the backstore's facts):
 *   ATOMIC TRANSFER LENGTH GRANULARITY = ATOMIC ALIGNMENT = G blocks: the
 *     larger of the physical block and the backstore's smallest atomic
 *     write;
 *   MAXIMUM ATOMIC TRANSFER LENGTH = M blocks: memory, MAXIMUM TRANSFER
 *     LENGTH; file and block, the backstore's largest atomic write (at
 *     most MAXIMUM TRANSFER LENGTH). G and M are powers of two, as Linux
 *     wants them (it uses G and M as its atomic write unit range);
 *   no atomic boundaries (MAXIMUM ATOMIC BOUNDARY SIZE 0): a non-zero
 *     ATOMIC BOUNDARY field is INVALID FIELD IN CDB;
 *   nothing where the backstore cannot write atomically: the fields are 0
 *     and WRITE ATOMIC(16) is INVALID COMMAND OPERATION CODE.
 *
 * Atomic against every other command: the write holds its LBAs' range
 * lock exclusively (no writer, COMPARE AND WRITE or SANITIZE overlaps it),
 * and on a LUN that offers atomic writes the readers of the medium (READ,
 * VERIFY) take the range lock shared and READ is never sent zero-copy, so
 * a read returns all old or all new data (SBC-4 4.29.3).
 *
 * Atomic against a kill -9 of the daemon (and, on a file or device, a
 * crash of the machine): the data reaches the backstore in one BS_IO_ATOMIC
 * write (backstore/bs_atomic.c: RWF_ATOMIC on O_DIRECT). That write must
 * be a power of two between the backstore's limits at an offset aligned to
 * its length; a command that is not (24 blocks; or 8 blocks at LBA 8 with a
 * 16-block unit) is widened to W, the smallest naturally aligned power of
 * two run of blocks that holds it: under the exclusive lock of all of W,
 * W is read, the command's data laid in, and W written in one atomic write
 * (the blocks around the command's are rewritten with what they hold, and
 * nobody can change them meanwhile). A command for which no W fits in the
 * backstore's largest atomic write and in the LUN (it straddles a multiple
 * of that size, or the end of a LUN whose size is not a multiple of it) is
 * refused with INVALID FIELD IN CDB on NUMBER OF LOGICAL BLOCKS, and
 * nothing is written: Linux never sends one (its atomic writes are powers
 * of two, naturally aligned), and targetd.conf(5) says so for the others.
 *
 * DESIGN (threads): like every handler, everything runs on the command's
 * thread; the per-command state is cmd->atomic.
 */
#include "config.h"
#include "scsi/scsi_int.h"

/* log2 of a power of two */
static unsigned at_log2(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

void scsi_atomic_init(struct scsi_lun *lun)
{
	const struct backstore *bs = lun->bs;
	uint64_t phys = (uint64_t)lun->block_size << lun->lbppb_exp;
	uint64_t lo, hi;

	lun->atomic_gran = lun->atomic_max = 0;
	lun->atomic_unit_min = lun->atomic_unit_max = 0;
	if (!bs || lun->read_only)
		return;
	if (bs->atomic_any) {
		lo = phys;
		hi = (uint64_t)lun->max_xfer_blocks << lun->block_shift;
	} else if (bs->atomic_min) {
		lo = MAX(phys, (uint64_t)bs->atomic_min);
		hi = MIN((uint64_t)bs->atomic_max,
			 (uint64_t)lun->max_xfer_blocks << lun->block_shift);
		/* the backstore's own unit range, in blocks (for widening) */
		lun->atomic_unit_min =
			(uint32_t)(MAX((uint64_t)bs->atomic_min, (uint64_t)lun->block_size) >>
				   lun->block_shift);
		lun->atomic_unit_max = (uint32_t)(hi >> lun->block_shift);
	} else {
		return;
	}
	hi = 1ull << at_log2(hi); /* powers of two */
	if (lo & (lo - 1) || hi < lo)
		return;
	lun->atomic_gran = (uint32_t)(lo >> lun->block_shift);
	lun->atomic_max = (uint32_t)(hi >> lun->block_shift);
}

/* SBC-4 6.6.4 Block Limits: the atomic write fields (d: the zeroed page). */
void scsi_atomic_vpd(const struct scsi_lun *lun, uint8_t *d)
{
	put_be32(d + 44, lun->atomic_max);  /* MAXIMUM ATOMIC TRANSFER LENGTH */
	put_be32(d + 48, lun->atomic_gran); /* ATOMIC ALIGNMENT */
	put_be32(d + 52, lun->atomic_gran); /* ATOMIC TRANSFER LENGTH GRANULARITY */
	/* MAXIMUM ATOMIC TRANSFER LENGTH WITH ATOMIC BOUNDARY, MAXIMUM ATOMIC
	 * BOUNDARY SIZE: 0, no boundaries */
}

bool scsi_atomic_window(uint64_t lba, uint64_t n, uint64_t unit_min, uint64_t unit_max,
			uint64_t cap, uint64_t *wlba, uint64_t *wn)
{
	uint64_t p;

	if (!n || !unit_min || unit_min & (unit_min - 1))
		return false;
	for (p = unit_min; p && p <= unit_max; p <<= 1) {
		uint64_t start = lba & ~(p - 1);

		if (p < n || start + p < lba + n)
			continue; /* too short, or straddles */
		if (start + p > cap)
			return false; /* every larger one too */
		*wlba = start;
		*wn = p;
		return true;
	}
	return false;
}

static void atomic_write_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	scsi_cmd_done(cmd, io->result < 0 ? scsi_bs_error(io->result, true) : SR_OK);
}

/* The one atomic write: the command's own data, or the widened window. */
static void atomic_submit(struct scsi_cmd *cmd, void *buf)
{
	uint8_t shift = cmd->lun->block_shift;

	scsi_submit(cmd,
		    &(struct scsi_io){
			    .op = BS_OP_WRITE,
			    .flags = scsi_write_flags(cmd) | BS_IO_ATOMIC,
			    .offset = cmd->atomic.wlba << shift,
			    .len = (uint64_t)cmd->atomic.wn << shift,
			    .buf = buf,
			    .done = atomic_write_done,
		    });
}

/* The window has been read: lay the command's data in, write it whole. */
static void atomic_window_read(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	uint8_t shift = cmd->lun->block_shift;
	uint8_t *w = io->iov1.iov_base;

	if (io->result < 0) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, false));
		return;
	}
	memcpy(w + ((cmd->lba - cmd->atomic.wlba) << shift), cmd->buf, cmd->xfer_len);
	atomic_submit(cmd, w);
}

static enum sense_reason atomic_locked(struct scsi_cmd *cmd)
{
	uint8_t shift = cmd->lun->block_shift;
	uint64_t len = (uint64_t)cmd->atomic.wn << shift;
	void *w;

	if (cmd->atomic.wlba == cmd->lba && cmd->atomic.wn == cmd->nblocks) {
		atomic_submit(cmd, cmd->buf);
		return SR_PENDING;
	}
	w = scsi_scratch(cmd, (size_t)len);
	if (!w)
		return SR_INTERNAL_ERROR;
	scsi_submit(cmd,
		    &(struct scsi_io){
			    .op = BS_OP_READ,
			    .offset = cmd->atomic.wlba << shift,
			    .len = len,
			    .buf = w,
			    .done = atomic_window_read,
		    });
	return SR_PENDING;
}

static enum sense_reason atomic_exec(struct scsi_cmd *cmd)
{
	if (!cmd->nblocks)
		return SR_OK;
	return scsi_rl_lock(cmd, cmd->lun, cmd->atomic.wlba, cmd->atomic.wn, RL_EXCL,
			    atomic_locked);
}

/* SBC-4 5.48 WRITE ATOMIC(16) */
enum sense_reason sbc_parse_write_atomic16(struct scsi_cmd *cmd)
{
	struct scsi_lun *lun = cmd->lun;
	const uint8_t *cdb = cmd->cdb;
	uint64_t lba = get_be64(cdb + 2);
	uint32_t n = get_be16(cdb + 12);
	uint64_t g = lun->atomic_gran;

	/* MAXIMUM ATOMIC BOUNDARY SIZE is 0: the ATOMIC BOUNDARY field must be */
	if (get_be16(cdb + 10))
		return scsi_invalid_cdb(cmd, 10, -1);
	if (scsi_check_lba_range(cmd, lba, n))
		return SR_LBA_OUT_OF_RANGE;
	cmd->lba = lba;
	cmd->nblocks = n;
	cmd->atomic.wlba = lba;
	cmd->atomic.wn = n;
	if (n) {
		if (lba & (g - 1))
			return scsi_invalid_cdb(cmd, 2, -1); /* ATOMIC ALIGNMENT */
		if (n & (g - 1) || n > lun->atomic_max)
			return scsi_invalid_cdb(cmd, 12, -1); /* GRANULARITY, MAXIMUM */
		if (!lun->bs->atomic_any &&
		    !backstore_atomic_fits(lun->bs, lba << lun->block_shift,
					   (uint64_t)n << lun->block_shift)) {
			uint64_t wlba, wn;

			if (!scsi_atomic_window(lba, n, lun->atomic_unit_min, lun->atomic_unit_max,
						scsi_lun_nblocks(lun), &wlba, &wn))
				return scsi_invalid_cdb(cmd, 12, -1);
			cmd->atomic.wlba = wlba;
			cmd->atomic.wn = (uint32_t)wn;
		}
	}
	cmd->fua = cdb[1] & 0x08;
	cmd->xfer_len = n << lun->block_shift;
	cmd->dir = cmd->xfer_len ? SCSI_DIR_WRITE : SCSI_DIR_NONE;
	cmd->execute = atomic_exec;
	return SR_OK;
}
