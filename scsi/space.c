/*
 * Space on a thin LUN: zero detection, the hard limit, the soft thresholds
 * and the Logical Block Provisioning log page.
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
 *
 * Limits and thresholds are looked at in scsi_submit(), on the command's
 * thread, for requests that allocate, only on LUNs that have one
 * (lun->space_watch). The hard limit asks the backstore for its space on
 * every such request; the soft thresholds at most once per
 * lun->space_sample_ns, the one thread that wins a compare-and-swap of
 * lun->space_next_ns doing it. Crossing a threshold establishes the unit
 * attention for every nexus (scsi_ua_establish(): target->lock) once;
 * lun->soft_reached (atomic) re-arms it when the LUN is below again.
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
	static const uint8_t zero[64];
	const uint8_t *p = buf;

	/* The first 64 bytes against zeroes (data almost always differs
	 * here), then the buffer against itself 64 bytes on: equal means
	 * every byte equals the one 64 before it, so all are zero. memcmp is
	 * the C library's vectorised one (several GB/s). */
	if (len <= sizeof(zero))
		return !memcmp(p, zero, len);
	return !memcmp(p, zero, sizeof(zero)) && !memcmp(p, p + sizeof(zero), len - sizeof(zero));
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
	if (backstore_space(io->bs, &sp, 0) < 0)
		return false;
	if (sp.allocated + io->len <= lun->hard_limit)
		return false;
	return !space_range_mapped(io->bs, io->offset, io->len);
}

void space_threshold_check(struct scsi_lun *lun)
{
	struct bs_space sp;
	bool over = false;

	if (backstore_space(lun->bs, &sp, lun->pool_threshold_pct ? BS_SPACE_POOL : 0) < 0)
		return;
	if (lun->soft_threshold && sp.allocated >= lun->soft_threshold)
		over = true;
	/* the pool: percent of the file system used (what is not free to us) */
	if (lun->pool_threshold_pct && sp.pool_size && sp.pool_free <= sp.pool_size &&
	    (unsigned __int128)(sp.pool_size - sp.pool_free) * 100 >=
	    (unsigned __int128)sp.pool_size * lun->pool_threshold_pct)
		over = true;
	if (!over) {
		atomic_store_explicit(&lun->soft_reached, false, memory_order_relaxed);
		return;
	}
	/* SBC-4 4.7.3.8: once per crossing, for every I_T nexus */
	if (!atomic_exchange(&lun->soft_reached, true))
		scsi_ua_establish(lun->target, lun->id, UA_SOFT_THRESHOLD, NULL);
}

bool space_submit_refuses(struct scsi_lun *lun, const struct bs_io *io)
{
	if (io->op != BS_OP_WRITE && io->op != BS_OP_WRITE_ZEROES && io->op != BS_OP_COPY)
		return false;
	if (lun->soft_threshold || lun->pool_threshold_pct) {
		uint64_t now = scsi_stats_now_ns();
		uint64_t next = atomic_load_explicit(&lun->space_next_ns, memory_order_relaxed);

		if (now >= next &&
		    atomic_compare_exchange_strong(&lun->space_next_ns, &next,
						   now + lun->space_sample_ns))
			space_threshold_check(lun);
	}
	return lun->hard_limit && space_limit_refuses(lun, io);
}

/* log2 of the LBAs in a threshold set: 1 MiB. */
static uint8_t space_threshold_exp(const struct scsi_lun *lun)
{
	return (uint8_t)(20 - MIN(lun->block_shift, (uint8_t)20));
}

void space_vpd_lbp(const struct scsi_lun *lun, uint8_t *d)
{
	uint64_t size = scsi_lun_nblocks(lun) << lun->block_shift;

	if (!vaai_lbp(lun))
		return;
	d[4] = space_threshold_exp(lun);          /* THRESHOLD EXPONENT */
	if (lun->soft_threshold && size)          /* THRESHOLD PERCENTAGE */
		d[7] = (uint8_t)MIN((uint64_t)100,
				    (lun->soft_threshold * 100 + size - 1) / size);
}

/* One Logical Block Provisioning log parameter (SBC-4 6.4.2). */
static uint32_t space_lbp_param(uint8_t *p, uint16_t code, uint64_t count, uint8_t scope)
{
	put_be16(p, code);
	p[2] = 0x03;                              /* FORMAT AND LINKING: binary list */
	p[3] = 8;
	put_be32(p + 4, (uint32_t)MIN(count, (uint64_t)UINT32_MAX));
	p[8] = scope;
	p[9] = p[10] = p[11] = 0;
	return 12;
}

/* SBC-4 6.4.2 Logical Block Provisioning log page (0x0C): resource counts
 * in threshold sets (1 MiB). Used: what the LUN holds (dedicated to it).
 * Available: what it may still take, the pool's free space (not
 * dedicated), or what its hard limit leaves it when that is less
 * (dedicated). */
static uint32_t space_log_lbp(struct scsi_cmd *cmd, uint8_t *d)
{
	struct scsi_lun *lun = cmd->lun;
	struct bs_space sp;
	uint64_t avail;
	uint8_t scope = 0x02;                     /* not dedicated to the LU */
	uint32_t n = 4;

	d[0] = 0x0c;
	if (backstore_space(lun->bs, &sp, BS_SPACE_POOL) == 0) {
		avail = sp.pool_free;
		if (lun->hard_limit) {
			uint64_t left = lun->hard_limit > sp.allocated ?
					lun->hard_limit - sp.allocated : 0;

			if (left <= avail) {
				avail = left;
				scope = 0x01;     /* dedicated */
			}
		}
		n += space_lbp_param(d + n, 0x0001, avail >> 20, scope);
		n += space_lbp_param(d + n, 0x0002, (sp.allocated + (1u << 20) - 1) >> 20, 0x01);
	}
	put_be16(d + 2, (uint16_t)(n - 4));
	return n;
}

static enum sense_reason space_exec_log_sense(struct scsi_cmd *cmd)
{
	uint8_t page = cmd->cdb[2] & 0x3f, sub = cmd->cdb[3];
	bool lbp = vaai_lbp(cmd->lun);
	uint8_t d[64];
	uint32_t n = 4;

	memset(d, 0, sizeof(d));
	if (page == 0x00 && sub == 0x00) {
		/* Supported Log Pages */
		d[n++] = 0x00;
		if (lbp)
			d[n++] = 0x0c;
	} else if (page == 0x00 && sub == 0xff) {
		/* Supported Log Pages and Subpages */
		d[0] = 0x40;                      /* SPF */
		d[1] = 0xff;
		d[n++] = 0x00; d[n++] = 0x00;
		d[n++] = 0x00; d[n++] = 0xff;
		if (lbp) {
			d[n++] = 0x0c; d[n++] = 0x00;
		}
	} else if (page == 0x0c && sub == 0x00 && lbp) {
		n = space_log_lbp(cmd, d);
		scsi_datain(cmd, d, n);
		return SR_OK;
	} else {
		return scsi_invalid_cdb(cmd, page == 0x00 || (page == 0x0c && lbp) ? 3 : 2, -1);
	}
	put_be16(d + 2, (uint16_t)(n - 4));
	scsi_datain(cmd, d, n);
	return SR_OK;
}

enum sense_reason space_parse_log_sense(struct scsi_cmd *cmd)
{
	/* PARAMETER POINTER: every page here starts at parameter 0 and lists
	 * parameters in ascending order; a pointer past them returns only the
	 * header, which this implementation does not bother to build: refuse
	 * a non-zero pointer */
	if (get_be16(cmd->cdb + 5))
		return scsi_invalid_cdb(cmd, 5, -1);
	scsi_set_alloc(cmd, get_be16(cmd->cdb + 7), 64);
	cmd->execute = space_exec_log_sense;
	return SR_OK;
}
