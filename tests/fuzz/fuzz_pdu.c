/*
 * fuzz_pdu: the PDU reader (targetd/conn.c conn_read: BHS, AHS, digests,
 * data segment, padding, resumed after every short read) fed a raw byte
 * stream, with everything behind it running (fuzz_net.h).
 *
 * Input: FZ_LOGIN_BYTES bytes of login parameters (fz_login_decode; with
 * its no-login bit the stream logs in itself and the Login Requests are
 * read raw too), one byte that seeds how the stream is cut, then the
 * stream. It reaches the target in pieces of 1 to 4096 bytes, the loop
 * turning after each piece, so that every state of the reader meets the
 * end of what has arrived; the target's output is read every few pieces.
 */
#include "config.h"
#include <stdint.h>
#include "tests/fuzz/fuzz_net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t sizes[8] = { 1, 3, 7, 48, 52, 100, 1024, 4096 };
	struct fz_login l;
	uint32_t rng;
	unsigned k = 0;

	if (size < FZ_LOGIN_BYTES + 1)
		return 0;
	fz_login_decode(&l, data);
	rng = data[FZ_LOGIN_BYTES] * 2654435761u + 1;
	data += FZ_LOGIN_BYTES + 1;
	size -= FZ_LOGIN_BYTES + 1;
	fz_begin(&l);
	while (size) {
		size_t n;

		rng = rng * 1103515245u + 12345u;
		n = sizes[(rng >> 16) & 7];
		if (n > size)
			n = size;
		fz_send_raw(data, n);
		data += n;
		size -= n;
		fz_turns(1);
		if (++k % 4 == 0 && !l.slow_reader)
			fz_drain(0);
	}
	fz_turns(2);
	fz_drain_all();
	fz_end();
	return 0;
}
