/*
 * libFuzzer target: PERSISTENT RESERVE OUT parameter lists (SPC-4 6.16),
 * a few in a row from the two nexuses of tests/fuzz/fuzz_scsi.h on LUN 0,
 * each followed by PERSISTENT RESERVE IN (READ FULL STATUS, READ
 * RESERVATION) and a WRITE from another nexus of the active port group
 * (reservation conflicts).
 * No state directory: APTPL requests are refused.
 *
 * Input: up to 8 records, each
 *   byte 0     bits 4..0: SERVICE ACTION; bits 7..6: the nexus (2: through
 *              the standby port group)
 *   byte 1     SCOPE and TYPE
 *   byte 2     parameter list length n (cut to what is left)
 *   n bytes    the parameter list
 */
#include "config.h"
#include <string.h>
#include "tests/fuzz/fuzz_scsi.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t block[512];
	uint8_t cdb[10], in[10] = { 0x5e, 0, 0, 0, 0, 0, 0, 0x10, 0, 0 };
	uint8_t wr[10] = { 0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0 };
	size_t off = 0;
	unsigned k;

	fz_device_up();
	for (k = 0; k < 8 && off + 3 <= size; k++) {
		uint8_t sa = data[off] & 0x1f, who = (data[off] >> 6) & 3, other = who == 1 ? 0 : 1;
		size_t n = MIN((size_t)data[off + 2], size - off - 3);
		struct sh_run r;

		memset(cdb, 0, sizeof(cdb));
		cdb[0] = 0x5f;
		cdb[1] = sa;
		cdb[2] = data[off + 1];
		put_be32(cdb + 5, (uint32_t)n);
		fz_run(&r, who, 0, cdb, 10, n ? data + off + 3 : NULL, (uint32_t)n);
		off += 3 + n;
		in[1] = 0x03;                  /* READ FULL STATUS */
		fz_run(&r, who, 0, in, 10, NULL, 0);
		in[1] = 0x01;                  /* READ RESERVATION */
		fz_run(&r, other, 0, in, 10, NULL, 0);
		fz_run(&r, other, 0, wr, 10, block, sizeof(block));
	}
	fz_device_down();
	return 0;
}
