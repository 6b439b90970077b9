/*
 * The transport harnesses' bench (fuzz_net.c): one network thread driven
 * turn by turn on the caller's thread, a runtime with two memory LUNs, and
 * a session of one or two connections on socketpairs whose other ends the
 * harness plays the initiator on. Used by fuzz_pdu.c (the PDU reader fed a raw byte stream)
 * and fuzz_ffp.c (the full-feature-phase state machine fed PDUs).
 *
 * DESIGN: everything runs on the calling thread (libFuzzer's): the network
 * thread's loop is turned by the harness (net_thread_turn, epoll timeout
 * 0) and its clock is virtual, so timers fire only when an input advances
 * it and a run is repeatable. Each input gets a fresh runtime (LUN data,
 * reservations, unit attentions, ALUA states do not leak from one input to
 * the next) and a fresh connection; at its end the peer closes and the
 * bench turns the loop until the connection and the session are gone,
 * then checks that nothing is left: no session, no connection, no data
 * buffer accounted, no I/O in flight. Built with TARGETD_DEBUG (configure
 * --enable-fuzzing), a task misused by the transport aborts at once.
 *
 * Everything the target sends is parsed and checked (fz_drain): opcodes a
 * target may send, data segments within the initiator's
 * MaxRecvDataSegmentLength, digests, StatSN order, the CmdSN window,
 * Data-In and R2T offsets within the command's expected length, DataSN
 * and R2TSN order, residual flags. A violation aborts with a message.
 */
#ifndef TARGETD_TESTS_FUZZ_NET_H
#define TARGETD_TESTS_FUZZ_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the initiator asks for at login; fz_login_decode() takes it from
 * the first FZ_LOGIN_BYTES bytes of an input. */
struct fz_login {
	bool immediate_data, initial_r2t;
	bool hdigest, ddigest;
	uint32_t mrdsl;          /* the initiator's MaxRecvDataSegmentLength */
	uint32_t max_burst, first_burst;
	uint32_t max_r2t;
	bool slow_reader;        /* the target's socket send buffer is tiny */
	bool no_login;           /* the input logs in itself (raw harness) */
};
#define FZ_LOGIN_BYTES 2
void fz_login_decode(struct fz_login *l, const uint8_t *b);

/* An R2T the target sent, for Data-Out built by the harness. */
struct fz_r2t {
	uint32_t itt, ttt, r2tsn, off, len;
	uint8_t lun[8];
};
#define FZ_R2TS 8

/* One connection of the session, from the initiator's side. */
struct fz_conn {
	int peer;                /* the initiator's end of the socketpair; -1 */
	bool ffp;                /* logged in */
	bool closed;             /* the initiator closed it (or never opened it) */
	uint32_t exp_statsn;     /* next StatSN expected from the target */
	uint8_t *out;            /* the target's output not parsed yet */
	size_t out_len, out_cap;
	bool out_digests;        /* past the final Login Response */
};
#define FZ_CONNS 2

struct fz_state {
	struct fz_login login;
	uint32_t cmdsn;          /* next CmdSN to use (session-wide) */
	uint32_t target_mrdsl;   /* the target's MaxRecvDataSegmentLength */
	uint16_t tsih;           /* of the session, from the first login */
	struct fz_conn conn[FZ_CONNS];
	unsigned cur;            /* the connection operations go to */
	bool untracked;          /* bytes went out that are not whole PDUs of
				  * the bench (fz_send_raw, a PDU cut short):
				  * the checks per task are off */
	struct fz_r2t r2t[FZ_R2TS];
	unsigned n_r2t;          /* R2Ts seen (ring of FZ_R2TS) */
	uint64_t out_bytes;      /* bytes the target sent */
};
extern struct fz_state fz;
#define FZ_CUR (&fz.conn[fz.cur])

/* Start an input: runtime, connection, login (unless l->no_login). */
void fz_begin(const struct fz_login *l);
/* End it: close the peer, turn until everything is released, check. */
void fz_end(void);

/* Write bytes to the target, turning the loop while its socket is full
 * (and draining its output when it stops reading); gives up on what
 * does not fit after a bounded number of turns. */
void fz_send(const void *buf, size_t len);
/* Bytes that need not be whole PDUs (they turn the checks per task off). */
void fz_send_raw(const void *buf, size_t len);
/* One PDU, with the negotiated digests (bad_ddigest: a wrong data
 * digest), padding included. dlen may exceed data_len (zero bytes). */
void fz_send_pdu(const uint8_t bhs[48], const uint8_t *ahs, size_t ahs_len,
		 const uint8_t *data, size_t data_len, bool bad_ddigest);
/* Turn the network thread's loop n times. */
void fz_turns(unsigned n);
/* Read up to max bytes (0: all that waits) of the target's output, parse
 * and check it. Returns the bytes read. */
size_t fz_drain(size_t max);
/* Read everything the target sends, turning its loop between reads,
 * until it has sent nothing for two turns (bounded). */
void fz_drain_all(void);
/* Move the virtual clock on by ms and turn the loop once. */
void fz_advance(uint64_t ms);
/* The initiator half-closes (no more bytes from it; it still reads). */
void fz_shut_wr(void);
/* Operations go to the other connection from now on; the first switch
 * opens it and logs it in to the session (CID 1, the session's TSIH). A
 * login the target refuses (the session is gone) leaves it closed. */
void fz_switch(void);

/* Byte order helpers. */
static inline uint32_t fz_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void fz_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

#endif
