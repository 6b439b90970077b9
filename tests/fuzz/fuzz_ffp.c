/*
 * fuzz_ffp: the full-feature-phase state machine of a session of one or
 * two connections (targetd/conn.c, cmd.c, session.c, tmf.c, login.c's Text
 * requests), with the transmit ring, the task lifecycle and memory LUNs
 * behind it (fuzz_net.h). The bench logs in; the input is a program of operations
 * the initiator performs, so that orders like "a WRITE's R2T waits in the
 * transmit ring because the initiator reads slowly, then ABORT TASK, then
 * the initiator reads" take a few bytes.
 *
 * Input: FZ_LOGIN_BYTES bytes of login parameters (fz_login_decode), then
 * operations, each one byte (low 3 bits: what, high 5 bits: flags) and
 * its operands:
 *   0 PDU      48 bytes of BHS, then the AHS its byte 4 announces; the
 *              data segment its DataSegmentLength announces is taken from
 *              the input with flag 0x80, else zeroes. Flags: 0x08 CmdSN
 *              from the bench (advanced unless immediate), 0x10 ExpStatSN
 *              from the bench, 0x20 ITT (and a TMF's Referenced Task Tag)
 *              cut to 0..7, 0x40 wrong data digest.
 *   1 DATA     answer an R2T the target sent (operand: which, 0 = the
 *              latest): Data-Out PDUs of at most MaxRecvDataSegmentLength.
 *              Flags: 0x08 only the first PDU, 0x10 offset off by 512,
 *              0x20 no F bit, 0x40 wrong data digest, 0x80 DataSN off by 1.
 *   2 UNSOL    unsolicited Data-Out for the latest WRITE sent (operand:
 *              length in 512-byte units, 0 = up to FirstBurstLength).
 *              Flags: 0x08 F bit set.
 *   3 DRAIN    read operand x 256 bytes of the target's output; 0: all of
 *              it, turning the loop until it has nothing more to send.
 *   4 TURN     turn the network thread's loop (operand & 15) + 1 times.
 *   5 TIME     move the clock on by (operand + 1) x 500 ms.
 *   6 RAW      operand bytes written as they are.
 *   7 CLOSE    with flag 0x08 half-close (SHUT_WR) and go on; with flag
 *              0x10 switch batching on or off and go on; with flag 0x20
 *              go on on the session's other connection (the first time,
 *              it logs in: CID 1, the session's TSIH); else close every
 *              connection at once, whatever the target has not sent yet.
 * After each operation the loop turns twice, unless batching is on: then
 * the PDUs pile up in the socket until a TURN, DRAIN or TIME, and the
 * target reads them in one go (a TMF then finds the command it names still
 * in the SCSI layer). At the end of the input (but after a CLOSE) the bench
 * reads all output before the initiator closes.
 */
#include "config.h"
#include <stdint.h>
#include <string.h>
#include "targetd/iscsi_pdu.h"
#include "tests/fuzz/fuzz_net.h"

struct reader {
	const uint8_t *p;
	size_t left;
};

static uint8_t take(struct reader *r)
{
	if (!r->left)
		return 0;
	r->left--;
	return *r->p++;
}

/* n bytes into dst, zero past the end of the input */
static void take_n(struct reader *r, uint8_t *dst, size_t n)
{
	size_t k = n < r->left ? n : r->left;

	memcpy(dst, r->p, k);
	memset(dst + k, 0, n - k);
	r->p += k;
	r->left -= k;
}

/* The latest WRITE sent, for unsolicited Data-Out. */
static struct {
	bool valid;
	uint32_t itt, edtl, next_off, datasn;
	uint8_t lun[8];
} last_write;

static uint8_t pattern[65536];

static void op_pdu(struct reader *r, uint8_t flags)
{
	uint8_t bhs[48], ahs[1020];
	uint8_t op;
	uint32_t dlen;
	size_t ahs_len;
	const uint8_t *data = NULL;
	size_t data_len = 0;

	take_n(r, bhs, sizeof(bhs));
	op = bhs[0] & 0x3f;
	ahs_len = (size_t)bhs[4] * 4;
	take_n(r, ahs, ahs_len);
	if ((flags & 0x08) && op != ISCSI_OP_DATA_OUT) {
		fz_put_be32(bhs + 24, fz.cmdsn);
		if (!(bhs[0] & ISCSI_FLAG_IMMEDIATE))
			fz.cmdsn++;
	}
	if (flags & 0x10)
		fz_put_be32(bhs + 28, FZ_CUR->exp_statsn);
	if ((flags & 0x20) && fz_be32(bhs + 16) != ISCSI_RSVD_TAG) {
		fz_put_be32(bhs + 16, bhs[19] & 7);
		if (op == ISCSI_OP_TMF_REQ)
			fz_put_be32(bhs + 20, bhs[23] & 7);
	}
	dlen = (uint32_t)bhs[5] << 16 | (uint32_t)bhs[6] << 8 | bhs[7];
	if (flags & 0x80) {
		data = r->p;
		data_len = dlen < r->left ? dlen : r->left;
		r->p += data_len;
		r->left -= data_len;
	}
	if (op == ISCSI_OP_SCSI_CMD && (bhs[1] & ISCSI_CMD_WRITE)) {
		last_write.valid = true;
		last_write.itt = fz_be32(bhs + 16);
		last_write.edtl = fz_be32(bhs + 20);
		last_write.next_off = dlen;
		last_write.datasn = 0;
		memcpy(last_write.lun, bhs + 8, 8);
	}
	fz_send_pdu(bhs, ahs, ahs_len, data, data_len, flags & 0x40);
}

static void data_out(uint32_t itt, uint32_t ttt, const uint8_t *lun, uint32_t datasn,
		     uint32_t off, uint32_t len, bool final, bool bad_digest)
{
	uint8_t bhs[48] = { 0 };

	bhs[0] = ISCSI_OP_DATA_OUT;
	bhs[1] = final ? ISCSI_FLAG_FINAL : 0;
	bhs[5] = (uint8_t)(len >> 16);
	bhs[6] = (uint8_t)(len >> 8);
	bhs[7] = (uint8_t)len;
	memcpy(bhs + 8, lun, 8);
	fz_put_be32(bhs + 16, itt);
	fz_put_be32(bhs + 20, ttt);
	fz_put_be32(bhs + 28, FZ_CUR->exp_statsn);
	fz_put_be32(bhs + 36, datasn);
	fz_put_be32(bhs + 40, off);
	fz_send_pdu(bhs, NULL, 0, pattern, len < sizeof(pattern) ? len : sizeof(pattern), bad_digest);
}

static void op_data(struct reader *r, uint8_t flags)
{
	uint8_t which = take(r);
	const struct fz_r2t *t;
	uint32_t done = 0, datasn = flags & 0x80 ? 1 : 0;

	if (!fz.n_r2t)
		return;
	t = &fz.r2t[(fz.n_r2t - 1 - (which % FZ_R2TS)) % FZ_R2TS];
	while (done < t->len) {
		uint32_t n = t->len - done < fz.target_mrdsl ? t->len - done : fz.target_mrdsl;
		bool last = done + n == t->len;

		data_out(t->itt, t->ttt, t->lun, datasn++, t->off + done + (flags & 0x10 ? 512 : 0), n,
			 last && !(flags & 0x20), flags & 0x40);
		done += n;
		if (flags & 0x08)
			break;
	}
}

static void op_unsol(struct reader *r, uint8_t flags)
{
	uint32_t len = (uint32_t)take(r) * 512;

	if (!last_write.valid)
		return;
	if (!len)
		len = fz.login.first_burst > last_write.next_off ? fz.login.first_burst - last_write.next_off : 512;
	if (len > fz.target_mrdsl)
		len = fz.target_mrdsl;
	data_out(last_write.itt, ISCSI_RSVD_TAG, last_write.lun, last_write.datasn++, last_write.next_off,
		 len, flags & 0x08, false);
	last_write.next_off += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, size };
	uint8_t cfg[FZ_LOGIN_BYTES];
	struct fz_login l;
	bool stop = false, batch = false;

	if (size < FZ_LOGIN_BYTES)
		return 0;
	take_n(&r, cfg, sizeof(cfg));
	fz_login_decode(&l, cfg);
	l.no_login = false;
	if (!pattern[0])
		for (size_t i = 0; i < sizeof(pattern); i++)
			pattern[i] = (uint8_t)(i * 7 + 1);
	memset(&last_write, 0, sizeof(last_write));
	fz_begin(&l);
	while (r.left && !stop) {
		uint8_t op = take(&r), flags = op & 0xf8;
		uint8_t raw[255];
		uint8_t n;

		switch (op & 7) {
		case 0:
			op_pdu(&r, flags);
			break;
		case 1:
			op_data(&r, flags);
			break;
		case 2:
			op_unsol(&r, flags);
			break;
		case 3:
			n = take(&r);
			if (n)
				fz_drain((size_t)n * 256);
			else
				fz_drain_all();
			break;
		case 4:
			fz_turns((take(&r) & 15u) + 1);
			break;
		case 5:
			fz_advance(((uint64_t)take(&r) + 1) * 500);
			break;
		case 6:
			n = take(&r);
			n = n < r.left ? n : (uint8_t)r.left;
			take_n(&r, raw, n);
			fz_send_raw(raw, n);
			break;
		default:
			if (flags & 0x08)
				fz_shut_wr();
			else if (flags & 0x10)
				batch = !batch;
			else if (flags & 0x20)
				fz_switch();
			else
				stop = true;
			break;
		}
		if (!batch)
			fz_turns(2);
	}
	if (!stop)
		fz_drain_all();   /* CLOSE: the initiator leaves with output unread */
	fz_end();
	return 0;
}
