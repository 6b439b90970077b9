/*
 * The core of the SCSI layer: parse a CDB (opcode table, LUN lookup, unit
 * attention, reserved bits, medium and write-protection checks, then the
 * opcode's own parse function), execute it, the submission path every
 * handler uses (LBA range lock, backstore requests), the end of every
 * command, and turning sense reasons into a result.
 *
 * The path of one command through here, and the seams on it:
 *
 *   scsi_cmd_parse()    common checks, op->parse()
 *                       └─ after parse: the end of scsi_cmd_parse(), where
 *                          every parsed command passes once with op, dir,
 *                          lba, nblocks and xfer_len set
 *   scsi_cmd_execute()  op's execute function
 *   scsi_rl_lock()      writers: the LUN's LBA range lock, then cont()
 *   scsi_submit()       before backstore submission: every backstore
 *                       request of every command passes here
 *   scsi_cmd_done()     PENDING commands end here, synchronous ones in
 *                       scsi_cmd_execute(); both through scsi_cmd_end()
 *
 * DESIGN (threads): a struct scsi_cmd belongs to the network thread that
 * owns cmd->eng; everything here runs on that thread (a range lock granted
 * by another thread wakes this one through its engine). Shared LUN state
 * is read through atomics (medium, stopped, swp, sanitizing, nblocks);
 * unit attentions are atomic bitmasks in the nexus, cleared with fetch_and
 * so two commands of one nexus on two connections never report one UA
 * twice.
 */
#include "config.h"
#include <stdlib.h>
#include <errno.h>
#include "scsi/scsi_int.h"
#include "scsi/pr.h"
#include "scsi/stats.h"
#include "scsi/histo.h"
#include "scsi/space.h"
#include "scsi/fault.h"

void scsi_ua_code(enum scsi_ua ua, uint8_t *asc, uint8_t *ascq)
{
	static const uint8_t codes[UA__COUNT][2] = {
		[UA_POWER_ON] = { 0x29, 0x00 },
		[UA_BUS_RESET] = { 0x29, 0x02 },
		[UA_LUN_RESET] = { 0x29, 0x03 },
		[UA_NEXUS_LOSS] = { 0x29, 0x07 },
		[UA_COMMANDS_CLEARED] = { 0x2f, 0x00 },
		[UA_MODE_CHANGED] = { 0x2a, 0x01 },
		[UA_RESERVATIONS_PREEMPTED] = { 0x2a, 0x03 },
		[UA_RESERVATIONS_RELEASED] = { 0x2a, 0x04 },
		[UA_REGISTRATIONS_PREEMPTED] = { 0x2a, 0x05 },
		[UA_ALUA_CHANGED] = { 0x2a, 0x06 },
		[UA_CAPACITY_CHANGED] = { 0x2a, 0x09 },
		[UA_MEDIUM_CHANGED] = { 0x28, 0x00 },
		[UA_LUNS_CHANGED] = { 0x3f, 0x0e },
		[UA_SOFT_THRESHOLD] = { 0x38, 0x07 },
	};

	*asc = codes[ua][0];
	*ascq = codes[ua][1];
}

/* SAM-5 5.14: report the pending unit attention of lowest rank, once. */
bool scsi_ua_take(struct scsi_nexus *n, uint16_t lun, uint8_t *asc, uint8_t *ascq)
{
	_Atomic uint32_t *p = &n->ua[lun];
	uint32_t bits = atomic_load_explicit(p, memory_order_acquire);

	while (bits) {
		uint32_t bit = bits & -bits;
		uint32_t old = atomic_fetch_and(p, ~bit);

		if (old & bit) {
			scsi_ua_code((enum scsi_ua)__builtin_ctz(bit), asc, ascq);
			if (n->target)
				scsi_stats_ua(scsi_target_lun(n->target, lun));
			return true;
		}
		bits = old & ~bit;
	}
	return false;
}

void scsi_cmd_reset(struct scsi_cmd *cmd)
{
	uint8_t *buf = cmd->buf;
	uint32_t cap = cmd->buf_cap;

	if (cmd->rl.state == RL_HELD)    /* never a lock lost with the command */
		rangelock_release(&cmd->rl);

	memset(cmd, 0, sizeof(*cmd));
	cmd->buf = buf;
	cmd->buf_cap = cap;
	cmd->cdb_len = 16;
	cmd->field_bit = -1;
}

void scsi_cmd_set_result(struct scsi_cmd *cmd, enum sense_reason r)
{
	uint8_t status;

	if (r == SR_PENDING)
		r = SR_INTERNAL_ERROR;
	cmd->reason = r;
	scsi_reason_info(r, &status, NULL, NULL, NULL);
	cmd->status = status;
	if (status == SAM_STAT_CHECK_CONDITION) {
		bool desc = cmd->lun && atomic_load_explicit(&cmd->lun->d_sense,
							     memory_order_relaxed);
		scsi_build_sense(cmd, desc);
		cmd->data_len = 0;
	} else {
		cmd->sense_len = 0;
	}
}

/* The end of every command that ran its execute function, synchronous or
 * PENDING: the LBA range lock never outlives it, the result is set before
 * the handler's on_end sees it, the scratch buffer goes. */
static void scsi_cmd_end(struct scsi_cmd *cmd, enum sense_reason r)
{
	void (*on_end)(struct scsi_cmd *cmd) = cmd->on_end;

	if (!cmd->rl_keep || r != SR_OK) {
		cmd->rl_keep = false;
		scsi_rl_unlock(cmd);
	}
	scsi_cmd_set_result(cmd, r);
	cmd->on_end = NULL;
	if (on_end)
		on_end(cmd);
	free(cmd->scratch);
	cmd->scratch = NULL;
}

void scsi_cmd_release(struct scsi_cmd *cmd)
{
	cmd->rl_keep = false;
	scsi_rl_unlock(cmd);
	scsi_stats_release(cmd);
}

void scsi_cmd_done(struct scsi_cmd *cmd, enum sense_reason r)
{
	scsi_cmd_end(cmd, r);
	cmd->complete(cmd);
}

void scsi_cmd_arrived(struct scsi_cmd *cmd)
{
	cmd->start_ns = scsi_stats_now_ns();   /* latency: receipt to status */
}

void scsi_cmd_respond(struct scsi_cmd *cmd)
{
	scsi_stats_cmd_done(cmd);
}

void scsi_cmd_status_sent(struct scsi_cmd *cmd)
{
	scsi_histo_sent(cmd);       /* workload histograms: status sent */
	scsi_stats_cmd_sent(cmd);   /* latency: receipt to status sent */
}

void scsi_cmd_forget(struct scsi_cmd *cmd)
{
	scsi_histo_end(cmd);        /* workload histograms: no longer in flight */
}

void scsi_cmd_abort(struct scsi_cmd *cmd, bool in_flight)
{
	scsi_stats_aborted(cmd);
	if (in_flight)
		atomic_store(&cmd->aborted, true);
}

void scsi_tmf_done(struct scsi_lun *lun, uint8_t function, uint8_t response)
{
	scsi_stats_tmf(lun, function, response);
}

/* SPC-4 4.4.1, SAM-5 5.2: bits outside the usage map are reserved. */
static enum sense_reason scsi_check_reserved(struct scsi_cmd *cmd, const struct scsi_opcode *op)
{
	unsigned i, last = op->cdb_len - 1u;

	for (i = 1; i < op->cdb_len; i++) {
		uint8_t allowed = op->usage[i];
		uint8_t bad;

		if (i == 1 && op->has_sa)
			allowed |= 0x1f;
		if (i == last)
			allowed |= 0xc0;      /* vendor specific bits of CONTROL */
		bad = cmd->cdb[i] & (uint8_t)~allowed;
		if (bad)
			return scsi_invalid_cdb(cmd, (uint16_t)i, 31 - __builtin_clz(bad));
	}
	return SR_OK;
}

/* SBC-4 4.5 / SPC-4 5.3: medium state checks for commands that need it. */
static enum sense_reason scsi_check_medium(struct scsi_cmd *cmd, const struct scsi_opcode *op)
{
	struct scsi_lun *lun = cmd->lun;

	if (atomic_load_explicit(&lun->sanitizing, memory_order_acquire) &&
	    !(op->flags & OPF_SANITIZE_OK))
		return SR_SANITIZE_IN_PROGRESS;
	if (!(op->flags & OPF_MEDIUM))
		return SR_OK;
	if (atomic_load_explicit(&lun->offline, memory_order_acquire))
		return SR_LUN_NOT_READY_MANUAL;   /* taken offline by the administrator */
	if (atomic_load_explicit(&lun->sanitize_failed, memory_order_acquire))
		return SR_SANITIZE_FAILED;   /* SBC-4 4.11: until EXIT FAILURE MODE */
	if (lun->removable && !atomic_load_explicit(&lun->medium_present, memory_order_acquire))
		return SR_MEDIUM_NOT_PRESENT;
	/* A stopped unit (START STOP UNIT START=0) is recorded but, like the
	 * arrays that spin up on demand, it does not refuse media access:
	 * initiators (libiscsi's conformance suite among them) stop and use
	 * the unit without a START in between. */
	return SR_OK;
}

static bool scsi_lun_write_protected(const struct scsi_lun *lun)
{
	return lun->read_only || atomic_load_explicit(&lun->swp, memory_order_relaxed);
}

enum sense_reason scsi_cmd_parse(struct scsi_cmd *cmd)
{
	const struct scsi_opcode *op;
	struct scsi_lun *lun = NULL;
	struct scsi_target *t = cmd->nexus->target;
	enum sense_reason r;
	bool bad_sa;

	cmd->lun = NULL;
	cmd->op = NULL;
	cmd->dir = SCSI_DIR_NONE;
	cmd->xfer_len = 0;
	cmd->buf_extra = 0;
	cmd->data_len = 0;
	cmd->info_valid = false;
	cmd->field_valid = false;
	cmd->field_bit = -1;
	cmd->sense_len = 0;
	cmd->status = SAM_STAT_GOOD;
	cmd->fua = false;
	cmd->bytchk = 0;
	cmd->execute = NULL;

	lun = scsi_target_lun(t, cmd->lun_id);
	cmd->lun = lun;
	scsi_stats_hold(cmd);   /* until the transport frees the command */

	op = scsi_opcode_find(cmd->cdb, &bad_sa);
	if (op && !scsi_op_available(op, lun)) {
		op = NULL;
		bad_sa = false;
	}
	if (op && op->has_sa && op->cdb_len > cmd->cdb_len)
		op = NULL;

	/* SPC-4 4.4 / SAM-5 5.8: a command to a LUN that is not there */
	if (!lun && !(op && (op->flags & OPF_NO_LUN))) {
		r = SR_LUN_NOT_SUPPORTED;
		goto fail;
	}

	/* SAM-5 5.14: unit attention (not for INQUIRY, REPORT LUNS, REQUEST SENSE) */
	if (lun && !(op && (op->flags & OPF_NO_UA)) &&
	    scsi_ua_take(cmd->nexus, (uint16_t)cmd->lun_id, &cmd->ua_asc, &cmd->ua_ascq)) {
		r = SR_UA;
		goto fail;
	}

	if (!op) {
		/* SPC-4 4.4.1: unknown service action: INVALID FIELD at byte 1 */
		r = bad_sa ? scsi_invalid_cdb(cmd, 1, 4) : SR_INVALID_OPCODE;
		goto fail;
	}
	cmd->op = op;

	r = scsi_check_reserved(cmd, op);
	if (r)
		goto fail;
	if (lun) {
		/* SPC-4 5.15.2.4: the access state of the target port group;
		 * SPC-4 5.13.1 / SBC-4 4.17: reservation conflicts */
		r = alua_check(cmd);
		if (!r)
			r = pr_check(cmd);
		if (r)
			goto fail;
	}
	if (lun) {
		r = scsi_check_medium(cmd, op);
		if (r)
			goto fail;
	}
	/* SBC-4 4.x: a write to a write-protected LUN is refused as such
	 * before its fields are judged (libiscsi ReadOnly: WRITE SAME with
	 * UNMAP and no data-out must say WRITE PROTECTED). */
	if (lun && (op->flags & OPF_WRITES) && scsi_lun_write_protected(lun)) {
		r = SR_WRITE_PROTECTED;
		goto fail;
	}
	r = op->parse(cmd);
	if (r)
		goto fail;
	/* after parse: the command is valid and fully described */
	/* the after-parse seam of fault injection (scsi/fault.h) */
	if (unlikely(lun && atomic_load_explicit(&lun->faults, memory_order_relaxed) != NULL) &&
	    (r = scsi_fault_parse(cmd)) != SR_OK)
		goto fail;
	scsi_histo_arrive(cmd);   /* workload histograms: the command as parsed */
	return SR_OK;
fail:
	/* a withdrawn command is refused as one the LUN lacks, whatever its fields */
	if (unlikely(lun && atomic_load_explicit(&lun->faults, memory_order_relaxed)))
		r = scsi_fault_refine(cmd, r);
	cmd->dir = SCSI_DIR_NONE;
	cmd->xfer_len = 0;
	scsi_cmd_set_result(cmd, r);
	return r;
}

bool scsi_cmd_execute(struct scsi_cmd *cmd)
{
	enum sense_reason r;

	cmd->data_len = 0;
	if (cmd->dir == SCSI_DIR_WRITE && cmd->buf_len < cmd->xfer_len) {
		/* see scsi_cmd_buf_need(): short data-out is refused whole */
		scsi_cmd_set_result(cmd, SR_INVALID_FIELD_IU);
		return false;
	}
	if (cmd->xfer_len && cmd->buf_cap < cmd->xfer_len) {
		scsi_cmd_set_result(cmd, SR_INTERNAL_ERROR);
		return false;
	}
	if (!cmd->execute) {
		scsi_cmd_set_result(cmd, SR_OK);
		return false;
	}
	/* the before-backstore seam of fault injection: latency, stalls */
	if (unlikely(cmd->xfault & SCSI_FAULT_X_HOLD) && scsi_fault_hold(cmd))
		return true;
	r = cmd->execute(cmd);
	if (r == SR_PENDING)
		return true;
	scsi_cmd_end(cmd, r);
	return false;
}

bool scsi_cmd_shrink_dataout(struct scsi_cmd *cmd, uint32_t bytes)
{
	if (!cmd->lun || !cmd->op || !(cmd->op->flags & OPF_SHRINK) ||
	    cmd->dir != SCSI_DIR_WRITE || bytes > cmd->xfer_len ||
	    bytes & (cmd->lun->block_size - 1))
		return false;
	cmd->nblocks = bytes >> cmd->lun->block_shift;
	cmd->xfer_len = bytes;
	return true;
}

/* --- the submission path --- */

static void scsi_rl_granted(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;
	enum sense_reason r;

	/* SAM-5 7.2: an aborted command that has not started does nothing */
	if (atomic_load_explicit(&cmd->aborted, memory_order_acquire))
		r = SR_TASK_ABORTED;
	else
		r = cmd->rl_cont(cmd);
	if (r != SR_PENDING)
		scsi_cmd_done(cmd, r);
}

enum sense_reason scsi_rl_lock(struct scsi_cmd *cmd, struct scsi_lun *lun, uint64_t lba,
			       uint64_t n, enum rangelock_mode mode, scsi_cont_fn cont)
{
	struct bs_io *io = &cmd->io;

	memset(io, 0, sizeof(*io));
	io->done = scsi_rl_granted;
	io->priv = cmd;
	cmd->rl_cont = cont;
	if (rangelock_acquire(&lun->rangelock, &cmd->rl, lba, n, mode, cmd->eng, io))
		return cont(cmd);
	return SR_PENDING;
}

void scsi_submit(struct scsi_cmd *cmd, const struct scsi_io *rq)
{
	struct scsi_lun *lun = rq->lun ? rq->lun : cmd->lun;
	struct bs_io *io = &cmd->io;

	memset(io, 0, sizeof(*io));
	io->bs = lun->bs;
	io->op = rq->op;
	io->flags = rq->flags;
	io->offset = rq->offset;
	io->len = rq->len;
	if (rq->iov) {
		io->iov = rq->iov;
		io->iovcnt = rq->iovcnt;
	} else if (rq->buf) {
		io->iov1.iov_base = rq->buf;
		io->iov1.iov_len = (size_t)rq->len;
		if (rq->op == BS_OP_COMPARE_AND_WRITE)
			io->iov1.iov_len = (size_t)(2 * rq->len);  /* both halves */
		io->iov = &io->iov1;
		io->iovcnt = 1;
	}
	if (rq->src)
		io->src = rq->src->bs;
	io->src_offset = rq->src_offset;
	io->done = rq->done;
	io->priv = cmd;
	/* before backstore submission: the request is complete here */
	if (lun->space_watch && space_submit_refuses(lun, io)) {
		io->result = -ENOSPC;     /* SPACE ALLOCATION FAILED WRITE PROTECT */
		io_engine_complete(cmd->eng, io);
		return;
	}
	backstore_submit(cmd->eng, io);
}

static void scsi_durable_done(struct bs_io *io)
{
	struct scsi_cmd *cmd = io->priv;

	scsi_cmd_done(cmd, io->result < 0 ? scsi_bs_error(io->result, true) : SR_OK);
}

enum sense_reason scsi_cmd_durable(struct scsi_cmd *cmd)
{
	if (!scsi_lun_write_through(cmd->lun))
		return SR_OK;
	scsi_submit(cmd, &(struct scsi_io){ .op = BS_OP_FLUSH, .done = scsi_durable_done });
	return SR_PENDING;
}

void *scsi_scratch(struct scsi_cmd *cmd, size_t len)
{
	void *p = NULL;

	if ((uint64_t)cmd->buf_cap >= (uint64_t)cmd->xfer_len + len)
		return cmd->buf + cmd->xfer_len;
	free(cmd->scratch);
	cmd->scratch = NULL;
	if (posix_memalign(&p, 4096, len ? len : 1) != 0)
		return NULL;
	cmd->scratch = p;
	return p;
}

/* SBC-4 4.18 / 5.x: a failed backstore request is never success. */
enum sense_reason scsi_bs_error(int64_t result, bool write)
{
	if (result == -ENOSPC || result == -EDQUOT)
		return SR_SPACE_ALLOC_FAILED;
	if (result == -EROFS)
		return SR_WRITE_PROTECTED;
	return write ? SR_WRITE_ERROR : SR_READ_ERROR;
}
