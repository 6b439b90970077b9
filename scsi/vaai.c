/*
 * VAAI block primitives: COMPARE AND WRITE (ATS), WRITE SAME(10/16), UNMAP,
 * GET LBA STATUS; the VAAI fields of VPD B0/B2.
 *
 * DESIGN (threads and async): a command runs on its network thread only;
 * every backstore request is submitted on cmd->eng (scsi_submit()) and
 * completes there. Atomicity comes from the LUN's LBA range lock
 * (scsi/rangelock.c, scsi_rl_lock()), taken before the first request and
 * released when the command ends:
 *  - COMPARE AND WRITE: RL_EXCL on its LBAs -> READ into scratch space
 *    after the data-out (cmd->buf_extra: no allocation when the pooled
 *    buffer has room) -> compare -> WRITE (FUA honoured) -> unlock. An
 *    abort seen before the WRITE is submitted ends the command with nothing
 *    written; once submitted, the WRITE completes whole. Either way the
 *    lock is released when the command completes, so an aborted ATS can
 *    neither leave half a write nor a lock behind, and a later ATS never
 *    compares against a torn block. A backstore that compares and writes
 *    itself, atomically against other hosts sharing the store (rbd:
 *    backstore_caw_max()), gets one COMPARE_AND_WRITE request instead of
 *    the READ and the WRITE, still under the range lock; the LUN then
 *    offers what that request can cover. SCSI-2 RESERVE takes the whole LUN
 *    exclusively (scsi/pr.c), so it waits for an ATS in flight, and an
 *    ATS that waited behind it checks the reservation again.
 *  - WRITE SAME: RL_SHARED. UNMAP=1 (thin LUNs only) is one DISCARD
 *    request (punch hole / BLKDISCARD; the blocks then read zeroes); a zero
 *    block (or NDOB) is one WRITE_ZEROES request (fallocate ZERO_RANGE /
 *    BLKZEROOUT, blocks stay allocated): O(1) requests for any length.
 *    Another pattern is written in vectored requests of up to 1024 iovecs
 *    that all point at the one data-out block (no copy, no big buffer),
 *    one after another.
 *  - UNMAP: the parameter list is validated whole before anything is
 *    deallocated; then one DISCARD per descriptor, each under RL_SHARED,
 *    and with the write cache disabled (WCE=0) a FLUSH before GOOD, as
 *    for WRITE SAME's fallocate-style requests (scsi_cmd_durable()).
 *  - GET LBA STATUS: asks the backstore (SEEK_DATA/SEEK_HOLE on files);
 *    synchronous lseek calls on the network thread, bounded by the number
 *    of descriptors returned.
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include "scsi/vaai.h"
#include "scsi/fault.h"
#include "scsi/pr.h"
#include "scsi/stats.h"
#include "backstore/io_engine.h"

/* SBC-4 6.6.4 MAXIMUM COMPARE AND WRITE LENGTH: what the store's own
 * compare-and-write covers when it covers a block (rbd; then the store
 * compares and writes), else what the range lock makes atomic. */
static bool vaai_caw_native(const struct scsi_lun *lun)
{
	return lun->bs && backstore_caw_max(lun->bs) >= lun->block_size;
}

static uint32_t vaai_caw_max_blocks(const struct scsi_lun *lun)
{
	if (!vaai_caw_native(lun))
		return VAAI_CAW_MAX_BLOCKS;
	return MIN(VAAI_CAW_MAX_BLOCKS, backstore_caw_max(lun->bs) >> lun->block_shift);
}

bool vaai_lbp(const struct scsi_lun *lun)
{
	return lun->thin && lun->bs && lun->bs->thin;
}

/* --- helpers --- */

/* One request of len bytes at offset (bytes) on the command's LUN. */
static void vaai_submit(struct scsi_cmd *cmd, enum bs_op op, uint64_t offset, uint64_t len,
			void *buf, unsigned flags, void (*done)(struct bs_io *io))
{
	scsi_submit(cmd, &(struct scsi_io){
		.op = op, .flags = flags, .offset = offset, .len = len, .buf = buf, .done = done,
	});
}

static bool vaai_all_zero(const uint8_t *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)(const void *)p;
	size_t i;

	/* data-out buffers are pool buffers: 8-byte aligned, len a multiple of 512 */
	for (i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	for (i = len & ~(size_t)7; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static enum sense_reason vaai_exec_nothing(struct scsi_cmd *cmd)
{
	(void)cmd;
	return SR_OK;
}

/* --- COMPARE AND WRITE (SBC-4 5.3) --- */

static void caw_write_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	scsi_cmd_done(cmd, io->result < 0 ? scsi_bs_error(io->result, true) : SR_OK);
}

static void caw_read_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	uint64_t len = (uint64_t)cmd->nblocks << cmd->lun->block_shift;
	const uint8_t *medium = io->iov1.iov_base;
	uint64_t i;

	if (io->result < 0) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, false));
		return;
	}
	if (atomic_load_explicit(&cmd->aborted, memory_order_acquire)) {
		/* aborted before the write: nothing is written */
		scsi_cmd_done(cmd, SR_TASK_ABORTED);
		return;
	}
	if (memcmp(medium, cmd->buf, (size_t)len) != 0) {
		for (i = 0; i < len && medium[i] == cmd->buf[i]; i++)
			;
		/* SBC-4 5.3: MISCOMPARE DURING VERIFY OPERATION, INFORMATION =
		 * offset in the Data-Out Buffer of the first byte that differs */
		cmd->info_valid = true;
		cmd->info = i;
		scsi_cmd_done(cmd, SR_MISCOMPARE_VERIFY);
		return;
	}
	vaai_submit(cmd, BS_OP_WRITE, cmd->lba << cmd->lun->block_shift, len, cmd->buf + len,
		    scsi_write_flags(cmd), caw_write_done);
}

/* The store compared and wrote (or not) in one request. */
static void caw_native_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	if (io->result == -EILSEQ) {
		/* SBC-4 5.3: INFORMATION = offset in the Data-Out Buffer of
		 * the first byte that differs (the compare half comes first) */
		cmd->info_valid = true;
		cmd->info = io->miscompare;
		scsi_cmd_done(cmd, SR_MISCOMPARE_VERIFY);
		return;
	}
	scsi_cmd_done(cmd, io->result < 0 ? scsi_bs_error(io->result, true) : SR_OK);
}

static enum sense_reason caw_native(struct scsi_cmd *cmd, uint64_t len)
{
	/* one buffer: the compare half, then the write half */
	vaai_submit(cmd, BS_OP_COMPARE_AND_WRITE, cmd->lba << cmd->lun->block_shift, len, cmd->buf,
		    0, caw_native_done);
	return SR_PENDING;
}

static enum sense_reason caw_locked(struct scsi_cmd *cmd)
{
	uint64_t len = (uint64_t)cmd->nblocks << cmd->lun->block_shift;
	enum sense_reason r;
	void *scratch;

	/* SBC-4 4.17: a reservation another nexus took while this command
	 * waited for the range (RESERVE holds the whole LUN while it changes
	 * it) applies: nothing is read or written */
	r = pr_check(cmd);
	if (r)
		return r;
	if (vaai_caw_native(cmd->lun))
		return caw_native(cmd, len);
	scratch = scsi_scratch(cmd, (size_t)len);
	if (!scratch)
		return SR_INTERNAL_ERROR;
	vaai_submit(cmd, BS_OP_READ, cmd->lba << cmd->lun->block_shift, len, scratch, 0,
		    caw_read_done);
	return SR_PENDING;
}

static enum sense_reason vaai_exec_caw(struct scsi_cmd *cmd)
{
	return scsi_rl_lock(cmd, cmd->lun, cmd->lba, cmd->nblocks, RL_EXCL, caw_locked);
}

enum sense_reason vaai_parse_caw(struct scsi_cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	struct scsi_lun *lun = cmd->lun;
	uint64_t lba = get_be64(cdb + 2);
	uint32_t n = cdb[13];
	uint32_t xfer;

	if (n == 0) {
		/* SBC-4 5.3: zero blocks is not an error, but then no data-out
		 * may come with it */
		if (cmd->exp_xfer_len)
			return scsi_invalid_cdb(cmd, 13, -1);
		if (lba > scsi_lun_nblocks(lun))
			return SR_LBA_OUT_OF_RANGE;
		cmd->execute = vaai_exec_nothing;
		return SR_OK;
	}
	if (n > vaai_caw_max_blocks(lun))
		return scsi_invalid_cdb(cmd, 13, -1);
	if (scsi_check_lba_range(cmd, lba, n))
		return SR_LBA_OUT_OF_RANGE;
	xfer = (uint32_t)(2 * n) << lun->block_shift;
	/* The data-out holds the compare half and the write half: any other
	 * length leaves the split ambiguous, so nothing is done. */
	if (cmd->exp_xfer_len != xfer)
		return scsi_invalid_cdb(cmd, 13, -1);
	cmd->lba = lba;
	cmd->nblocks = n;
	cmd->fua = cdb[1] & 0x08;     /* DPO: no cache of our own to bypass */
	scsi_set_dataout(cmd, xfer);
	cmd->buf_extra = n << lun->block_shift;
	cmd->execute = vaai_exec_caw;
	return SR_OK;
}

/* --- WRITE SAME (SBC-4 5.48, 5.49) --- */

#define WS_IOV 1024u

/* fallocate-style requests are durable only after a flush: with the write
 * cache disabled (WCE=0) the command completes after one. */
static void ws_zero_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	enum sense_reason r;

	if (io->result < 0) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, true));
		return;
	}
	if (io->op == BS_OP_DISCARD && !cmd->ws.unmap)
		scsi_stats_zero_detect(cmd, io->len);   /* zero detection */
	r = scsi_cmd_durable(cmd);
	if (r != SR_PENDING)
		scsi_cmd_done(cmd, r);
}

static void ws_pattern_next(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	struct scsi_lun *lun = cmd->lun;
	uint64_t end = (cmd->lba + cmd->nblocks) << lun->block_shift;
	struct iovec *iov = (struct iovec *)(void *)(cmd->buf + cmd->xfer_len);
	uint64_t off, len;
	unsigned cnt;

	if (io->result < 0) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, true));
		return;
	}
	cmd->ws.done += io->len;
	off = (cmd->lba << lun->block_shift) + cmd->ws.done;
	if (off >= end) {
		scsi_cmd_done(cmd, SR_OK);
		return;
	}
	if (atomic_load_explicit(&cmd->aborted, memory_order_acquire)) {
		scsi_cmd_done(cmd, SR_TASK_ABORTED);
		return;
	}
	len = MIN(end - off, (uint64_t)WS_IOV << lun->block_shift);
	cnt = (unsigned)(len >> lun->block_shift);
	scsi_submit(cmd, &(struct scsi_io){
		.op = BS_OP_WRITE, .flags = scsi_write_flags(cmd), .offset = off, .len = len,
		.iov = iov, .iovcnt = (int)cnt, .done = ws_pattern_next,
	});
}

static enum sense_reason ws_locked(struct scsi_cmd *cmd)
{
	struct scsi_lun *lun = cmd->lun;
	bool ndob = cmd->xfer_len == 0;
	uint64_t off = cmd->lba << lun->block_shift;
	uint64_t len = (uint64_t)cmd->nblocks << lun->block_shift;
	struct iovec *iov;
	unsigned i, cnt;

	if (cmd->ws.unmap) {
		/* SBC-4 5.48/5.49, 4.7.3.4: UNMAP=1 (parse allowed it only with
		 * LBPWS) asks for the LBAs to be deallocated; they then read back
		 * zeroes (LBPRZ), whatever the data-out block held. */
		vaai_submit(cmd, BS_OP_DISCARD, off, len, NULL, 0, ws_zero_done);
		return SR_PENDING;
	}
	if (ndob || vaai_all_zero(cmd->buf, lun->block_size)) {
		/* zeroes: one request, the blocks stay allocated, unless zero
		 * detection deallocates them (scsi/space.c: eager zeroing
		 * gives the space back) */
		vaai_submit(cmd, lun->zero_detect == SCSI_ZD_UNMAP ? BS_OP_DISCARD
								  : BS_OP_WRITE_ZEROES,
			    off, len, NULL, 0, ws_zero_done);
		return SR_PENDING;
	}
	/* a pattern: vectored writes of the one block */
	cnt = (unsigned)MIN((uint64_t)WS_IOV, (uint64_t)cmd->nblocks);
	if ((uint64_t)cmd->buf_cap < (uint64_t)cmd->xfer_len + cnt * sizeof(struct iovec))
		return SR_INTERNAL_ERROR;      /* parse asked for the room */
	iov = (struct iovec *)(void *)(cmd->buf + cmd->xfer_len);
	for (i = 0; i < cnt; i++) {
		iov[i].iov_base = cmd->buf;
		iov[i].iov_len = lun->block_size;
	}
	cmd->ws.done = 0;
	cmd->io.result = 0;
	cmd->io.len = 0;
	cmd->io.priv = cmd;
	ws_pattern_next(&cmd->io);
	return SR_PENDING;
}

static enum sense_reason vaai_exec_write_same(struct scsi_cmd *cmd)
{
	return scsi_rl_lock(cmd, cmd->lun, cmd->lba, cmd->nblocks, RL_SHARED, ws_locked);
}

enum sense_reason vaai_parse_write_same(struct scsi_cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	struct scsi_lun *lun = cmd->lun;
	bool sixteen = cdb[0] == 0x93;
	uint64_t cap = scsi_lun_nblocks(lun);
	uint64_t lba = sixteen ? get_be64(cdb + 2) : get_be32(cdb + 2);
	uint64_t n = sixteen ? get_be32(cdb + 10) : get_be16(cdb + 7);
	uint64_t max = VAAI_WS_MAX_BLOCKS;
	bool unmap = cdb[1] & 0x08;
	bool ndob = sixteen && (cdb[1] & 0x01);

	/* ANCHOR (bit 4) is outside the usage map: ANC_SUP is 0. WRPROTECT
	 * likewise: no protection information. */
	if (unmap && !vaai_lbp(lun))
		return scsi_invalid_cdb(cmd, 1, 3);   /* LBPWS/LBPWS10 are 0 */
	if (n == 0) {
		/* WSNZ=0: zero blocks means through the last LBA */
		if (lba >= cap)
			return SR_LBA_OUT_OF_RANGE;
		n = cap - lba;
	}
	if (scsi_check_lba_range(cmd, lba, n))
		return SR_LBA_OUT_OF_RANGE;
	if (n > max)
		return scsi_invalid_cdb(cmd, sixteen ? 10 : 7, -1);
	if (!ndob && cmd->exp_xfer_len != lun->block_size)
		return scsi_invalid_cdb(cmd, 1, -1);   /* one block of data-out, exactly */
	cmd->lba = lba;
	cmd->nblocks = (uint32_t)n;
	cmd->ws.unmap = unmap;
	if (ndob) {
		scsi_set_dataout(cmd, 0);
	} else {
		scsi_set_dataout(cmd, lun->block_size);
		/* room for the iovecs, 8-byte aligned after the block */
		cmd->buf_extra = (uint32_t)(MIN((uint64_t)WS_IOV, n) * sizeof(struct iovec));
	}
	cmd->execute = vaai_exec_write_same;
	return SR_OK;
}

/* --- UNMAP (SBC-4 5.30) --- */

static enum sense_reason unmap_next(struct scsi_cmd *cmd);

static void unmap_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	enum sense_reason r;

	scsi_rl_unlock(cmd);
	if (io->result < 0) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, true));
		return;
	}
	cmd->unmap.next++;
	cmd->unmap.dirty = true;
	r = unmap_next(cmd);
	if (r != SR_PENDING)
		scsi_cmd_done(cmd, r);
}

static enum sense_reason unmap_locked(struct scsi_cmd *cmd)
{
	const uint8_t *d = cmd->buf + 8 + 16 * cmd->unmap.next;
	struct scsi_lun *lun = cmd->lun;

	vaai_submit(cmd, BS_OP_DISCARD, get_be64(d) << lun->block_shift,
		    (uint64_t)get_be32(d + 8) << lun->block_shift, NULL, 0, unmap_done);
	return SR_PENDING;
}

/* Deallocate descriptor cmd->unmap.next and the ones after it. */
static enum sense_reason unmap_next(struct scsi_cmd *cmd)
{
	while (cmd->unmap.next < cmd->unmap.ndesc) {
		const uint8_t *d = cmd->buf + 8 + 16 * cmd->unmap.next;
		uint32_t cnt = get_be32(d + 8);

		if (cnt) {
			if (atomic_load_explicit(&cmd->aborted, memory_order_acquire))
				return SR_TASK_ABORTED;
			return scsi_rl_lock(cmd, cmd->lun, get_be64(d), cnt, RL_SHARED, unmap_locked);
		}
		cmd->unmap.next++;
	}
	/* discards are durable only after a flush (WCE=0) */
	return cmd->unmap.dirty ? scsi_cmd_durable(cmd) : SR_OK;
}

static enum sense_reason vaai_exec_unmap(struct scsi_cmd *cmd)
{
	const uint8_t *p = cmd->buf;
	uint32_t plen = cmd->xfer_len;
	uint32_t udl, bdl, i, ndesc;
	uint64_t total = 0, cap = scsi_lun_nblocks(cmd->lun);

	if (plen == 0)
		return SR_OK;                  /* SBC-4 5.30: not an error */
	udl = get_be16(p);
	bdl = get_be16(p + 2);
	/* UNMAP DATA LENGTH must cover the descriptors it announces */
	if (bdl && udl < bdl + 6u)
		return scsi_invalid_param(cmd, 0, -1);
	/* descriptors past the parameter list were never sent: only what
	 * arrived counts; a partial descriptor is ignored */
	bdl = MIN(bdl, plen - 8);
	ndesc = bdl / 16;
	if (ndesc > VAAI_UNMAP_MAX_DESC)
		return scsi_invalid_param(cmd, 2, -1);
	/* validate every descriptor before deallocating anything */
	for (i = 0; i < ndesc; i++) {
		const uint8_t *d = p + 8 + 16 * i;
		uint64_t lba = get_be64(d);
		uint32_t cnt = get_be32(d + 8);

		if (lba + cnt < lba || lba + cnt > cap) {
			cmd->info_valid = true;
			cmd->info = lba;
			return SR_LBA_OUT_OF_RANGE;
		}
		total += cnt;
	}
	if (total > vaai_unmap_max_blocks(cmd->lun))
		return scsi_invalid_param(cmd, 8, -1);
	cmd->unmap.ndesc = ndesc;
	cmd->unmap.next = 0;
	cmd->unmap.dirty = false;
	return unmap_next(cmd);
}

enum sense_reason vaai_parse_unmap(struct scsi_cmd *cmd)
{
	uint16_t plen = get_be16(cmd->cdb + 7);

	/* ANCHOR (byte 1 bit 0) is outside the usage map: ANC_SUP is 0 */
	if (!vaai_lbp(cmd->lun))
		return SR_INVALID_OPCODE;      /* hidden from thick LUNs (opcodes.c) */
	if (plen > 0 && plen < 8)
		return SR_PARAM_LIST_LENGTH_ERROR;
	if (plen > 8 + 16 * VAAI_UNMAP_MAX_DESC + 16)
		return scsi_invalid_cdb(cmd, 7, -1);
	scsi_set_dataout(cmd, plen);
	cmd->execute = vaai_exec_unmap;
	return SR_OK;
}

/* --- GET LBA STATUS (SBC-4 5.8) --- */

static enum sense_reason vaai_exec_get_lba_status(struct scsi_cmd *cmd)
{
	uint8_t d[8 + 16 * VAAI_LBA_STATUS_MAX_DESC];
	struct scsi_lun *lun = cmd->lun;
	struct backstore *bs = lun->bs;
	uint64_t cap = scsi_lun_nblocks(lun), lba = cmd->lba;
	uint8_t shift = lun->block_shift;
	unsigned n = 0, want;

	/* at least one descriptor, even when the allocation length truncates */
	want = cmd->xfer_len > 8 ? (cmd->xfer_len - 8 + 15) / 16 : 1;
	want = MIN(want, VAAI_LBA_STATUS_MAX_DESC);
	memset(d, 0, 8);
	while (n < want && lba < cap) {
		uint64_t left = cap - lba, run_blocks;
		uint64_t maxb = MIN(left, 0xffffffffull);
		bool mapped = true;
		uint64_t run = maxb << shift;
		uint8_t *e = d + 8 + 16 * n;

		if (bs && backstore_lba_status(bs, lba << shift, maxb << shift, &mapped, &run) < 0)
			return SR_READ_ERROR;
		if (mapped) {
			run_blocks = (run + (1u << shift) - 1) >> shift;
		} else {
			run_blocks = run >> shift;
			if (run_blocks == 0) {
				/* a hole smaller than a block: the block is mapped */
				mapped = true;
				run_blocks = 1;
			}
		}
		run_blocks = MIN(MAX(run_blocks, (uint64_t)1), maxb);
		memset(e, 0, 16);
		put_be64(e, lba);
		put_be32(e + 8, (uint32_t)run_blocks);
		e[12] = mapped ? 0x00 : 0x01;  /* MAPPED / DEALLOCATED */
		lba += run_blocks;
		n++;
	}
	put_be32(d, 4 + 16 * n);               /* PARAMETER DATA LENGTH */
	scsi_datain(cmd, d, 8 + 16 * n);
	return SR_OK;
}

enum sense_reason vaai_parse_get_lba_status(struct scsi_cmd *cmd)
{
	uint64_t lba = get_be64(cmd->cdb + 2);

	if (lba >= scsi_lun_nblocks(cmd->lun))
		return SR_LBA_OUT_OF_RANGE;
	cmd->lba = lba;
	scsi_set_alloc(cmd, get_be32(cmd->cdb + 10), 8 + 16 * VAAI_LBA_STATUS_MAX_DESC);
	cmd->execute = vaai_exec_get_lba_status;
	return SR_OK;
}

/* --- VPD --- */

/* SBC-4 6.6.4 Block Limits: the VAAI fields. */
void vaai_vpd_block_limits(const struct scsi_lun *lun, uint8_t *d)
{
	uint32_t gran = 1u << lun->lbppb_exp;          /* one physical block */
	uint32_t dg = lun->bs ? lun->bs->discard_granularity >> lun->block_shift : 0;
	uint32_t gone = scsi_fault_withdrawn(lun);     /* fault injection: a lost VAAI */

	if (dg > gran)
		gran = dg;                              /* the store frees space in larger units */
	if (!(gone & FAULT_CAP_CAW))
		d[5] = (uint8_t)vaai_caw_max_blocks(lun); /* MAXIMUM COMPARE AND WRITE LENGTH */
	if (vaai_lbp(lun) && !(gone & FAULT_CAP_UNMAP)) {
		put_be32(d + 20, vaai_unmap_max_blocks(lun));   /* MAXIMUM UNMAP LBA COUNT */
		put_be32(d + 24, VAAI_UNMAP_MAX_DESC);  /* MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT */
		put_be32(d + 28, gran);                 /* OPTIMAL UNMAP GRANULARITY */
		put_be32(d + 32, 0x80000000u);          /* UGAVALID, alignment 0 */
	}
	if (!(gone & FAULT_CAP_WRITE_SAME))
		put_be64(d + 36, VAAI_WS_MAX_BLOCKS);  /* MAXIMUM WRITE SAME LENGTH */
}

/* SBC-4 6.6.5 Logical Block Provisioning: the VAAI fields. */
void vaai_vpd_lbp(const struct scsi_lun *lun, uint8_t *d)
{
	uint32_t gone = scsi_fault_withdrawn(lun);

	if (!vaai_lbp(lun))
		return;
	if (!(gone & FAULT_CAP_UNMAP))
		d[5] |= 0x80;                           /* LBPU */
	if (!(gone & FAULT_CAP_WRITE_SAME))
		d[5] |= 0x40 | 0x20;                    /* LBPWS, LBPWS10 */
	if (lun->bs->discard_zeroes)
		d[5] |= 0x04;                           /* LBPRZ 001b */
}
