/*
 * SBC-4 block commands: READ CAPACITY, READ/WRITE (6/10/12/16), VERIFY,
 * WRITE AND VERIFY, ORWRITE, PRE-FETCH, SYNCHRONIZE CACHE, START STOP UNIT,
 * PREVENT ALLOW MEDIUM REMOVAL, READ DEFECT DATA, SANITIZE.
 *
 * DESIGN (threads and async): every backstore request is submitted on the
 * command's own engine (cmd->eng) and its completion runs on that same
 * thread, so a command's step/hpriv state is touched by one thread only.
 * READ goes straight into cmd->buf and WRITE straight from it. Commands
 * that must read the medium to compare or merge (VERIFY with BYTCHK,
 * WRITE AND VERIFY, ORWRITE) read it into a second buffer (scsi_scratch()).
 * Writers take the LUN's LBA range lock (scsi_rl_lock()) before their
 * first request. SANITIZE runs as a job of its own (it may outlive the
 * command with IMMED=1) on the engine of the thread that started it; while
 * it runs, lun->sanitizing makes other medium commands return SANITIZE IN
 * PROGRESS.
 */
#include "config.h"
#include <stdlib.h>
#include "scsi/scsi_int.h"
#include "scsi/space.h"
#include "scsi/stats.h"
#include "scsi/vaai.h"

/* A backstore result is an error when negative. */
static bool sbc_io_failed(const struct bs_io *io)
{
	return io->result < 0;
}

/* One request of nblocks blocks at lba on the command's LUN. */
static void sbc_submit(struct scsi_cmd *cmd, enum bs_op op, uint64_t lba, uint64_t nblocks,
		       void *buf, unsigned flags, void (*done)(struct bs_io *io))
{
	uint8_t shift = cmd->lun->block_shift;

	scsi_submit(cmd, &(struct scsi_io){
		.op = op, .flags = flags, .offset = lba << shift, .len = nblocks << shift,
		.buf = buf, .done = done,
	});
}

/* CDB layouts shared by the READ/WRITE/VERIFY families (SBC-4 5.x). */
struct sbc_cdb {
	uint64_t lba;
	uint32_t len;
	uint8_t len_byte;             /* where TRANSFER LENGTH starts (field pointer) */
};

static void sbc_decode(const uint8_t *cdb, struct sbc_cdb *c)
{
	switch (cdb[0] >> 5) {
	case 0: /* 6-byte */
		/* SBC-4 5.16/5.41: TRANSFER LENGTH 0 means 256 blocks */
		c->lba = get_be24(cdb + 1) & 0x1fffff;
		c->len = cdb[4] ? cdb[4] : 256;
		c->len_byte = 4;
		break;
	case 1: /* 10-byte */
	case 2:
		c->lba = get_be32(cdb + 2);
		c->len = get_be16(cdb + 7);
		c->len_byte = 7;
		break;
	case 5: /* 12-byte */
		c->lba = get_be32(cdb + 2);
		c->len = get_be32(cdb + 6);
		c->len_byte = 6;
		break;
	default: /* 16-byte */
		c->lba = get_be64(cdb + 2);
		c->len = get_be32(cdb + 10);
		c->len_byte = 10;
		break;
	}
}

/* Common part of every LBA-range command: decode, transfer limit, range. */
static enum sense_reason sbc_parse_range(struct scsi_cmd *cmd, struct sbc_cdb *c, bool limit)
{
	sbc_decode(cmd->cdb, c);
	if (limit && c->len > cmd->lun->max_xfer_blocks)
		return scsi_invalid_cdb(cmd, c->len_byte, -1);
	if (scsi_check_lba_range(cmd, c->lba, c->len))
		return SR_LBA_OUT_OF_RANGE;
	cmd->lba = c->lba;
	cmd->nblocks = c->len;
	return SR_OK;
}

/* --- READ CAPACITY --- */

/* SBC-4 5.20 READ CAPACITY(10) */
static enum sense_reason sbc_exec_read_capacity10(struct scsi_cmd *cmd)
{
	uint8_t d[8];
	uint64_t last = scsi_lun_nblocks(cmd->lun) - 1;

	put_be32(d, last > 0xfffffffeull ? 0xffffffffu : (uint32_t)last);
	put_be32(d + 4, cmd->lun->block_size);
	scsi_datain(cmd, d, sizeof(d));
	return SR_OK;
}

enum sense_reason sbc_parse_read_capacity10(struct scsi_cmd *cmd)
{
	scsi_set_alloc(cmd, 8, 8);
	cmd->execute = sbc_exec_read_capacity10;
	return SR_OK;
}

/* SBC-4 5.21 READ CAPACITY(16) */
static enum sense_reason sbc_exec_read_capacity16(struct scsi_cmd *cmd)
{
	uint8_t d[32];

	memset(d, 0, sizeof(d));
	put_be64(d, scsi_lun_nblocks(cmd->lun) - 1);
	put_be32(d + 8, cmd->lun->block_size);
	/* d[13]: LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT (scsi/lun.c);
	 * d[14]: LBPME (0x80) and LBPRZ (0x40) with logical block
	 * provisioning; LOWEST ALIGNED LOGICAL BLOCK ADDRESS 0 */
	d[13] = cmd->lun->lbppb_exp;
	if (vaai_lbp(cmd->lun))
		d[14] = (uint8_t)(0x80 | (cmd->lun->bs->discard_zeroes ? 0x40 : 0));
	scsi_datain(cmd, d, sizeof(d));
	return SR_OK;
}

enum sense_reason sbc_parse_read_capacity16(struct scsi_cmd *cmd)
{
	scsi_set_alloc(cmd, get_be32(cmd->cdb + 10), 32);
	cmd->execute = sbc_exec_read_capacity16;
	return SR_OK;
}

/* --- READ / WRITE --- */

static void sbc_read_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	if (sbc_io_failed(io)) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, false));
		return;
	}
	cmd->data_len = cmd->xfer_len;
	scsi_cmd_done(cmd, SR_OK);
}

static void sbc_write_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	scsi_cmd_done(cmd, sbc_io_failed(io) ? scsi_bs_error(io->result, true) : SR_OK);
}

/* A READ of a LUN that offers atomic writes, its range locked shared. A
 * zero-copy one keeps the lock (rl_keep) until the transport has sent the
 * bytes and releases the command (scsi_cmd_release()). */
static enum sense_reason sbc_read_locked(struct scsi_cmd *cmd)
{
	const uint8_t *zc;

	if (cmd->zc_ok &&
	    (zc = backstore_zc_ptr(cmd->lun->bs, cmd->lba << cmd->lun->block_shift, cmd->xfer_len))) {
		cmd->data_ptr = zc;
		cmd->data_len = cmd->xfer_len;
		cmd->rl_keep = true;
		return SR_OK;
	}
	sbc_submit(cmd, BS_OP_READ, cmd->lba, cmd->nblocks, cmd->buf, 0, sbc_read_done);
	return SR_PENDING;
}

/* SBC-4 5.15-5.18 READ(6/10/12/16) */
static enum sense_reason sbc_exec_read(struct scsi_cmd *cmd)
{
	const uint8_t *zc;

	if (!cmd->nblocks)
		return SR_OK;
	/* SBC-4 4.29.3: where atomic writes are offered, a read sees one whole
	 * or not at all: it holds the range lock shared while it reads, or
	 * while the transport sends a zero-copy READ's bytes (the atomic write
	 * holds it exclusive) */
	if (scsi_lun_atomic(cmd->lun))
		return scsi_rl_lock(cmd, cmd->lun, cmd->lba, cmd->nblocks, RL_SHARED,
				    sbc_read_locked);
	if (cmd->zc_ok &&
	    (zc = backstore_zc_ptr(cmd->lun->bs, cmd->lba << cmd->lun->block_shift, cmd->xfer_len))) {
		/* Zero copy: the transport sends from the backstore's own
		 * bytes (a memory LUN, or page-cache pages already resident,
		 * so the kernel's copy into the socket never waits for the
		 * disk). */
		cmd->data_ptr = zc;
		cmd->data_len = cmd->xfer_len;
		return SR_OK;
	}
	sbc_submit(cmd, BS_OP_READ, cmd->lba, cmd->nblocks, cmd->buf, 0, sbc_read_done);
	return SR_PENDING;
}

static enum sense_reason sbc_write_locked(struct scsi_cmd *cmd)
{
	/* zero detection (scsi/space.c): one branch when the LUN has none */
	if (cmd->lun->zero_detect &&
	    space_zero_write(cmd, cmd->lba << cmd->lun->block_shift, cmd->xfer_len, cmd->buf))
		return SR_PENDING;
	sbc_submit(cmd, BS_OP_WRITE, cmd->lba, cmd->nblocks, cmd->buf,
		   scsi_write_flags(cmd), sbc_write_done);
	return SR_PENDING;
}

/* SBC-4 5.40-5.43 WRITE(6/10/12/16): under the LUN's LBA range lock
 * (shared), which makes COMPARE AND WRITE atomic against it */
static enum sense_reason sbc_exec_write(struct scsi_cmd *cmd)
{
	if (!cmd->nblocks)
		return SR_OK;
	return scsi_rl_lock(cmd, cmd->lun, cmd->lba, cmd->nblocks, RL_SHARED, sbc_write_locked);
}

enum sense_reason sbc_parse_rw(struct scsi_cmd *cmd)
{
	struct sbc_cdb c;
	bool write = cmd->op->flags & OPF_WRITES;
	bool six = cmd->cdb[0] == 0x08 || cmd->cdb[0] == 0x0a;
	enum sense_reason r = sbc_parse_range(cmd, &c, true);

	if (r)
		return r;
	if (!six)             /* no DPO/FUA in the 6-byte CDBs */
		cmd->fua = cmd->cdb[1] & 0x08;
	cmd->xfer_len = cmd->nblocks << cmd->lun->block_shift;
	cmd->dir = cmd->xfer_len ? (write ? SCSI_DIR_WRITE : SCSI_DIR_READ) : SCSI_DIR_NONE;
	cmd->execute = write ? sbc_exec_write : sbc_exec_read;
	return SR_OK;
}

/* --- VERIFY (SBC-4 5.35-5.37) --- */

/* First differing byte of a and b, or -1. */
static int64_t sbc_first_diff(const uint8_t *a, const uint8_t *b, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (a[i] != b[i])
			return (int64_t)i;
	return -1;
}

/* Compare what was read (medium) with the data-out buffer per BYTCHK. */
static enum sense_reason sbc_compare(struct scsi_cmd *cmd, const uint8_t *medium)
{
	uint64_t len = (uint64_t)cmd->nblocks << cmd->lun->block_shift;
	int64_t at;

	if (cmd->bytchk == 1) {
		at = sbc_first_diff(cmd->buf, medium, len);
	} else { /* 3: one block of data-out against every block */
		uint32_t bs = cmd->lun->block_size;
		uint64_t off;

		at = -1;
		for (off = 0; off < len; off += bs) {
			int64_t d = sbc_first_diff(cmd->buf, medium + off, bs);

			if (d >= 0) {
				at = (int64_t)off + d;
				break;
			}
		}
	}
	if (at < 0)
		return SR_OK;
	/* SBC-4 5.35: INFORMATION = offset of the first byte that differs */
	cmd->info_valid = true;
	cmd->info = (uint64_t)at;
	return SR_MISCOMPARE_VERIFY;
}

static void sbc_verify_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	enum sense_reason r = SR_OK;

	if (sbc_io_failed(io))
		r = scsi_bs_error(io->result, false);
	else if (cmd->bytchk)
		r = sbc_compare(cmd, io->iov1.iov_base);
	scsi_cmd_done(cmd, r);
}

static enum sense_reason sbc_verify_locked(struct scsi_cmd *cmd)
{
	void *m = scsi_scratch(cmd, (size_t)cmd->nblocks << cmd->lun->block_shift);

	if (!m)
		return SR_INTERNAL_ERROR;
	sbc_submit(cmd, BS_OP_READ, cmd->lba, cmd->nblocks, m, 0, sbc_verify_done);
	return SR_PENDING;
}

static enum sense_reason sbc_exec_verify(struct scsi_cmd *cmd)
{
	void *m;

	if (!cmd->nblocks)
		return SR_OK;
	if (scsi_lun_atomic(cmd->lun))    /* as READ: atomic writes seen whole */
		return scsi_rl_lock(cmd, cmd->lun, cmd->lba, cmd->nblocks, RL_SHARED,
				    sbc_verify_locked);
	m = scsi_scratch(cmd, (size_t)cmd->nblocks << cmd->lun->block_shift);
	if (!m)
		return SR_INTERNAL_ERROR;
	sbc_submit(cmd, BS_OP_READ, cmd->lba, cmd->nblocks, m, 0, sbc_verify_done);
	return SR_PENDING;
}

enum sense_reason sbc_parse_verify(struct scsi_cmd *cmd)
{
	struct sbc_cdb c;
	enum sense_reason r;

	cmd->bytchk = (cmd->cdb[1] >> 1) & 3;
	if (cmd->bytchk == 2)
		return scsi_invalid_cdb(cmd, 1, 2);
	r = sbc_parse_range(cmd, &c, true);
	if (r)
		return r;
	if (cmd->bytchk == 1)
		scsi_set_dataout(cmd, cmd->nblocks << cmd->lun->block_shift);
	else if (cmd->bytchk == 3)
		scsi_set_dataout(cmd, cmd->nblocks ? cmd->lun->block_size : 0);
	cmd->execute = sbc_exec_verify;
	return SR_OK;
}

/* --- WRITE AND VERIFY (SBC-4 5.44-5.46) --- */

static void sbc_write_verify_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	enum sense_reason r = SR_OK;
	void *m;

	if (sbc_io_failed(io)) {
		r = scsi_bs_error(io->result, cmd->rmw.step == 0);
		goto out;
	}
	if (cmd->rmw.step == 0) {
		/* written; now read it back (verify, and compare if BYTCHK) */
		cmd->rmw.step = 1;
		m = scsi_scratch(cmd, (size_t)cmd->xfer_len);
		if (!m) {
			r = SR_INTERNAL_ERROR;
			goto out;
		}
		sbc_submit(cmd, BS_OP_READ, cmd->lba, cmd->nblocks, m, 0, sbc_write_verify_done);
		return;
	}
	if (cmd->bytchk)
		r = sbc_compare(cmd, io->iov1.iov_base);
out:
	scsi_cmd_done(cmd, r);
}

static enum sense_reason sbc_write_verify_locked(struct scsi_cmd *cmd)
{
	cmd->rmw.step = 0;
	/* the verification is of the medium: write through */
	sbc_submit(cmd, BS_OP_WRITE, cmd->lba, cmd->nblocks, cmd->buf, BS_IO_FUA,
		   sbc_write_verify_done);
	return SR_PENDING;
}

/* exclusive LBA range lock: nothing else writes between write and verify */
static enum sense_reason sbc_exec_write_verify(struct scsi_cmd *cmd)
{
	if (!cmd->nblocks)
		return SR_OK;
	return scsi_rl_lock(cmd, cmd->lun, cmd->lba, cmd->nblocks, RL_EXCL,
			    sbc_write_verify_locked);
}

enum sense_reason sbc_parse_write_verify(struct scsi_cmd *cmd)
{
	struct sbc_cdb c;
	enum sense_reason r;

	cmd->bytchk = (cmd->cdb[1] >> 1) & 3;
	if (cmd->bytchk > 1)
		return scsi_invalid_cdb(cmd, 1, 2);
	r = sbc_parse_range(cmd, &c, true);
	if (r)
		return r;
	scsi_set_dataout(cmd, cmd->nblocks << cmd->lun->block_shift);
	cmd->execute = sbc_exec_write_verify;
	return SR_OK;
}

/* --- ORWRITE(16) (SBC-4 5.9) --- */

static void sbc_orwrite_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	const uint8_t *m = io->iov1.iov_base;
	uint32_t i;

	if (sbc_io_failed(io)) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, cmd->rmw.step == 1));
		return;
	}
	if (cmd->rmw.step == 0) {
		/* OR the medium into the data-out buffer, then write it */
		for (i = 0; i < cmd->xfer_len; i++)
			cmd->buf[i] |= m[i];
		cmd->rmw.step = 1;
		sbc_submit(cmd, BS_OP_WRITE, cmd->lba, cmd->nblocks, cmd->buf,
			   scsi_write_flags(cmd), sbc_orwrite_done);
		return;
	}
	scsi_cmd_done(cmd, SR_OK);
}

static enum sense_reason sbc_orwrite_locked(struct scsi_cmd *cmd)
{
	void *m = scsi_scratch(cmd, cmd->xfer_len);

	if (!m)
		return SR_INTERNAL_ERROR;
	cmd->rmw.step = 0;
	sbc_submit(cmd, BS_OP_READ, cmd->lba, cmd->nblocks, m, 0, sbc_orwrite_done);
	return SR_PENDING;
}

/* read-modify-write: alone on its LBAs (exclusive LBA range lock) */
static enum sense_reason sbc_exec_orwrite(struct scsi_cmd *cmd)
{
	if (!cmd->nblocks)
		return SR_OK;
	return scsi_rl_lock(cmd, cmd->lun, cmd->lba, cmd->nblocks, RL_EXCL, sbc_orwrite_locked);
}

enum sense_reason sbc_parse_orwrite(struct scsi_cmd *cmd)
{
	struct sbc_cdb c;
	enum sense_reason r = sbc_parse_range(cmd, &c, true);

	if (r)
		return r;
	cmd->fua = cmd->cdb[1] & 0x08;
	scsi_set_dataout(cmd, cmd->nblocks << cmd->lun->block_shift);
	cmd->execute = sbc_exec_orwrite;
	return SR_OK;
}

/* --- PRE-FETCH (SBC-4 5.10, 5.11) --- */

/* The target keeps no cache of its own, so no block can be guaranteed to
 * stay cached: GOOD (not CONDITION MET), per SBC-4 5.10. */
static enum sense_reason sbc_exec_prefetch(struct scsi_cmd *cmd)
{
	return SR_OK;
}

enum sense_reason sbc_parse_prefetch(struct scsi_cmd *cmd)
{
	struct sbc_cdb c;
	enum sense_reason r = sbc_parse_range(cmd, &c, false);

	if (r)
		return r;
	cmd->execute = sbc_exec_prefetch;
	return SR_OK;
}

/* --- SYNCHRONIZE CACHE (SBC-4 5.28, 5.29) --- */

static void sbc_flush_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	scsi_cmd_done(cmd, sbc_io_failed(io) ? scsi_bs_error(io->result, true) : SR_OK);
}

/* IMMED=1 allows GOOD before the flush ends; we always wait, which the
 * standard permits and which keeps cmd->io ours until completion. */
static enum sense_reason sbc_exec_sync_cache(struct scsi_cmd *cmd)
{
	sbc_submit(cmd, BS_OP_FLUSH, 0, 0, NULL, 0, sbc_flush_done);
	return SR_PENDING;
}

enum sense_reason sbc_parse_sync_cache(struct scsi_cmd *cmd)
{
	struct sbc_cdb c;
	enum sense_reason r = sbc_parse_range(cmd, &c, false);

	if (r)
		return r;
	cmd->execute = sbc_exec_sync_cache;
	return SR_OK;
}

/* --- START STOP UNIT (SBC-4 5.25) --- */

static void sbc_start_stop_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	if (sbc_io_failed(io)) {
		scsi_cmd_done(cmd, scsi_bs_error(io->result, true));
		return;
	}
	atomic_store(&cmd->lun->stopped, true);
	scsi_cmd_done(cmd, SR_OK);
}

static enum sense_reason sbc_exec_start_stop(struct scsi_cmd *cmd)
{
	struct scsi_lun *lun = cmd->lun;
	uint8_t pc = cmd->cdb[4] >> 4;
	bool no_flush = cmd->cdb[4] & 0x04;
	bool loej = cmd->cdb[4] & 0x02;
	bool start = cmd->cdb[4] & 0x01;
	enum sense_reason r = SR_OK;
	bool loaded = false;

	if (pc != 0)
		return SR_OK;        /* power condition change: no state to keep */
	if (loej) {
		pthread_mutex_lock(&lun->lock);
		if (atomic_load(&lun->prevent)) {
			r = SR_MEDIUM_REMOVAL_PREVENTED;
		} else if (start) {
			loaded = !atomic_load(&lun->medium_present);
			atomic_store(&lun->medium_present, true);
			atomic_store(&lun->stopped, false);
		} else {
			atomic_store(&lun->medium_present, false);
		}
		pthread_mutex_unlock(&lun->lock);
		if (loaded)
			scsi_ua_establish(lun->target, lun->id, UA_MEDIUM_CHANGED, cmd->nexus);
		return r;
	}
	if (start) {
		if (lun->removable && !atomic_load(&lun->medium_present))
			return SR_MEDIUM_NOT_PRESENT;
		atomic_store(&lun->stopped, false);
		return SR_OK;
	}
	if (no_flush || (lun->removable && !atomic_load(&lun->medium_present))) {
		atomic_store(&lun->stopped, true);
		return SR_OK;
	}
	/* stopping: write back the cache first (NO_FLUSH=0) */
	sbc_submit(cmd, BS_OP_FLUSH, 0, 0, NULL, 0, sbc_start_stop_done);
	return SR_PENDING;
}

enum sense_reason sbc_parse_start_stop(struct scsi_cmd *cmd)
{
	uint8_t pc = cmd->cdb[4] >> 4;
	uint8_t pcm = cmd->cdb[3] & 0x0f;

	/* Every POWER CONDITION value is accepted and, as SBC-4 5.25 says
	 * for PC != 0, START and LOEJ are then ignored: a virtual disk has
	 * no power states to enter (libiscsi's StartStopUnit.PwrCnd sends
	 * all of 1..15 and expects GOOD). */
	if (pcm && pc != 0x2 && pc != 0x3)
		return scsi_invalid_cdb(cmd, 3, 3);
	if ((cmd->cdb[4] & 0x02) && !cmd->lun->removable)
		return scsi_invalid_cdb(cmd, 4, 1);
	cmd->execute = sbc_exec_start_stop;
	return SR_OK;
}

/* --- PREVENT ALLOW MEDIUM REMOVAL (SBC-4 5.13) --- */

static enum sense_reason sbc_exec_prevent_allow(struct scsi_cmd *cmd)
{
	struct scsi_lun *lun = cmd->lun;
	struct scsi_nexus *n = cmd->nexus;
	uint16_t id = lun->id;
	uint32_t bit = 1u << (id % 32);
	bool prevent = cmd->cdb[4] & 0x01;

	pthread_mutex_lock(&lun->lock);
	if (prevent) {
		if (!(atomic_fetch_or(&n->prevent[id / 32], bit) & bit))
			atomic_fetch_add(&lun->prevent, 1);
	} else {
		if (atomic_fetch_and(&n->prevent[id / 32], ~bit) & bit)
			atomic_fetch_sub(&lun->prevent, 1);
	}
	pthread_mutex_unlock(&lun->lock);
	return SR_OK;
}

enum sense_reason sbc_parse_prevent_allow(struct scsi_cmd *cmd)
{
	if (cmd->cdb[4] & 0x02)
		return scsi_invalid_cdb(cmd, 4, 1);   /* 10b/11b: not supported */
	cmd->execute = sbc_exec_prevent_allow;
	return SR_OK;
}

/* --- READ DEFECT DATA (SBC-4 5.22, 5.23): the list is empty --- */

static enum sense_reason sbc_exec_read_defect(struct scsi_cmd *cmd)
{
	uint8_t d[8];
	bool twelve = cmd->cdb[0] == 0xb7;
	uint8_t req = twelve ? cmd->cdb[1] : cmd->cdb[2];

	memset(d, 0, sizeof(d));
	/* PLISTV/GLISTV as requested, the requested format, length 0 */
	d[1] = req & 0x1f;
	scsi_datain(cmd, d, twelve ? 8 : 4);
	return SR_OK;
}

enum sense_reason sbc_parse_read_defect(struct scsi_cmd *cmd)
{
	if (cmd->cdb[0] == 0xb7)
		scsi_set_alloc(cmd, get_be32(cmd->cdb + 6), 8);
	else
		scsi_set_alloc(cmd, get_be16(cmd->cdb + 7), 4);
	cmd->execute = sbc_exec_read_defect;
	return SR_OK;
}

/* --- SANITIZE (SBC-4 5.27) --- */

#define SANITIZE_CHUNK (1024u * 1024)

/*
 * The overwrite is a job that may outlive the SANITIZE command (IMMED=1).
 * It runs as a command the device server gives itself (jcmd: the LUN, the
 * engine of the thread that started it, the SANITIZE CDB, no nexus), so it
 * takes the same path as every other: the whole LUN's exclusive LBA range
 * lock, scsi_submit() for each request, the end of a command. It holds the
 * LUN against a reload (scsi/stats.h) until it ends.
 */
struct sanitize_job {
	struct scsi_cmd jcmd;         /* the job's own command */
	struct scsi_cmd *cmd;         /* NULL when IMMED=1 completed it already */
	uint8_t *pattern;             /* SANITIZE_CHUNK bytes of the pattern */
	uint64_t offset, end;         /* bytes written, bytes to write */
	bool flushing;
};

/* jcmd.complete: the job's end (range lock released, result set). */
static void sanitize_end(struct scsi_cmd *jcmd)
{
	struct sanitize_job *job = container_of(jcmd, struct sanitize_job, jcmd);
	struct scsi_lun *lun = jcmd->lun;
	struct scsi_cmd *cmd = job->cmd;
	bool ok = jcmd->reason == SR_OK;

	atomic_store(&lun->sanitize_failed, !ok);
	atomic_store_explicit(&lun->sanitize_progress, 0, memory_order_relaxed);
	atomic_store(&lun->sanitizing, false);
	scsi_stats_lun_put(lun);
	free(job->pattern);
	free(job);
	if (cmd)
		scsi_cmd_done(cmd, ok ? SR_OK : SR_SANITIZE_FAILED);
}

/* Write the next chunk of the pattern, or flush after the last one. */
static enum sense_reason sanitize_next(struct scsi_cmd *jcmd);

static void sanitize_step(struct bs_io *io)
{
	struct scsi_cmd *jcmd = io->priv;
	struct sanitize_job *job = container_of(jcmd, struct sanitize_job, jcmd);

	if (io->result < 0) {
		scsi_cmd_done(jcmd, SR_SANITIZE_FAILED);
		return;
	}
	if (job->flushing) {
		scsi_cmd_done(jcmd, SR_OK);
		return;
	}
	/* SBC-4 4.11: task management does not stop a sanitize operation;
	 * an aborted command is let go and the job goes on without it. */
	if (job->cmd && atomic_load(&job->cmd->aborted)) {
		scsi_cmd_done(job->cmd, SR_TASK_ABORTED);
		job->cmd = NULL;
	}
	job->offset += io->len;
	atomic_store_explicit(&jcmd->lun->sanitize_progress,
			      job->end ? (uint32_t)((job->offset * 65535) / job->end) : 0,
			      memory_order_relaxed);
	sanitize_next(jcmd);
}

static enum sense_reason sanitize_next(struct scsi_cmd *jcmd)
{
	struct sanitize_job *job = container_of(jcmd, struct sanitize_job, jcmd);
	uint64_t len;

	if (job->offset >= job->end) {
		job->flushing = true;
		scsi_submit(jcmd, &(struct scsi_io){ .op = BS_OP_FLUSH, .done = sanitize_step });
		return SR_PENDING;
	}
	len = MIN((uint64_t)SANITIZE_CHUNK, job->end - job->offset);
	scsi_submit(jcmd, &(struct scsi_io){
		.op = BS_OP_WRITE, .offset = job->offset, .len = len, .buf = job->pattern,
		.done = sanitize_step,
	});
	return SR_PENDING;
}

/* The job for an OVERWRITE parameter list (SBC-4 5.27.3) already checked. */
static struct sanitize_job *sanitize_job_new(struct scsi_cmd *cmd, const uint8_t *p,
					     uint32_t plen)
{
	struct sanitize_job *job = calloc(1, sizeof(*job));
	uint8_t inv;
	uint32_t i;

	if (!job)
		return NULL;
	job->pattern = malloc(SANITIZE_CHUNK);
	if (!job->pattern) {
		free(job);
		return NULL;
	}
	/*
	 * OVERWRITE COUNT passes, the pattern inverted between passes when
	 * INVERT is set. Earlier passes matter only on magnetic media; the
	 * backstore keeps only the last, so only the last pass is written:
	 * the pattern, inverted if INVERT is set and the count is even.
	 */
	inv = (p[0] & 0x80) && !(p[0] & 0x01) ? 0xff : 0x00;
	for (i = 0; i < SANITIZE_CHUNK; i++)
		job->pattern[i] = (uint8_t)(p[4 + i % plen] ^ inv);
	scsi_cmd_reset(&job->jcmd);
	job->jcmd.lun_id = cmd->lun_id;
	job->jcmd.lun = cmd->lun;
	job->jcmd.op = cmd->op;
	job->jcmd.eng = cmd->eng;
	memcpy(job->jcmd.cdb, cmd->cdb, sizeof(job->jcmd.cdb));
	job->jcmd.cdb_len = cmd->cdb_len;
	job->jcmd.complete = sanitize_end;
	job->cmd = (cmd->cdb[1] & 0x80) ? NULL : cmd;     /* IMMED */
	job->end = scsi_lun_nblocks(cmd->lun) << cmd->lun->block_shift;
	return job;
}

static enum sense_reason sbc_exec_sanitize(struct scsi_cmd *cmd)
{
	struct scsi_lun *lun = cmd->lun;
	uint8_t sa = cmd->cdb[1] & 0x1f;
	bool immed = cmd->cdb[1] & 0x80;
	const uint8_t *p = cmd->buf;
	struct sanitize_job *job;
	uint32_t plen;
	bool expected = false;

	if (sa == 0x1f) {
		/* EXIT FAILURE MODE: leave the failed state, medium usable */
		atomic_store(&lun->sanitize_failed, false);
		return SR_OK;
	}
	/* OVERWRITE parameter list (SBC-4 5.27.3) */
	plen = get_be16(p + 2);
	if ((p[0] & 0x1f) == 0)
		return scsi_invalid_param(cmd, 0, 4);     /* OVERWRITE COUNT */
	if (p[0] & 0x60)
		return scsi_invalid_param(cmd, 0, 6);     /* TEST */
	if (plen == 0 || plen > lun->block_size || plen + 4 != cmd->xfer_len)
		return scsi_invalid_param(cmd, 2, -1);
	job = sanitize_job_new(cmd, p, plen);
	if (!job)
		return SR_INTERNAL_ERROR;
	if (!atomic_compare_exchange_strong(&lun->sanitizing, &expected, true)) {
		free(job->pattern);
		free(job);
		return SR_SANITIZE_IN_PROGRESS;
	}
	atomic_store_explicit(&lun->sanitize_progress, 0, memory_order_relaxed);
	scsi_stats_lun_get(lun);
	/* SBC-4 5.27: after every write in flight, before any other: the
	 * whole LUN under the exclusive LBA range lock (scsi/rangelock.c) */
	/* sanitize_next() always leaves a request in flight (SR_PENDING): the
	 * job ends in sanitize_end(), and so does the command unless IMMED
	 * ends it now */
	(void)scsi_rl_lock(&job->jcmd, lun, 0, UINT64_MAX, RL_EXCL, sanitize_next);
	return immed ? SR_OK : SR_PENDING;
}

enum sense_reason sbc_parse_sanitize(struct scsi_cmd *cmd)
{
	uint8_t sa = cmd->cdb[1] & 0x1f;
	uint16_t plen = get_be16(cmd->cdb + 7);

	if (sa == 0x01) {
		if (plen <= 4 || plen > cmd->lun->block_size + 4)
			return scsi_invalid_cdb(cmd, 7, -1);
	} else if (plen != 0) {
		return scsi_invalid_cdb(cmd, 7, -1);
	}
	scsi_set_dataout(cmd, plen);
	cmd->execute = sbc_exec_sanitize;
	return SR_OK;
}
