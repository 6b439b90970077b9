/*
 * libFuzzer target: CDBs parsed and executed against the memory LUNs of
 * tests/fuzz/fuzz_scsi.h, a few in a row so that one command can meet the
 * state another left (a reservation, a mode page, an ejected medium).
 *
 * Input: up to 8 records, each
 *   byte 0     bits 5..4: the nexus (2: through the standby port group);
 *              bit 6: a 32-byte CDB, else 16; bits 2..0: the LUN (4..7 do
 *              not exist)
 *   CDB        16 or 32 bytes
 *   2 bytes    big-endian length n of the data-out that follows (cut to
 *              what is left); 0: no data-out, Expected Data Transfer Length
 *              is then the CDB's own
 *   n bytes    data-out
 */
#include "config.h"
#include <string.h>
#include "tests/fuzz/fuzz_scsi.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	unsigned k;

	fz_device_up();
	for (k = 0; k < 8 && off < size; k++) {
		uint8_t sel = data[off++], cdb[32];
		unsigned len = (sel & 0x40) ? 32 : 16;
		size_t n = MIN((size_t)len, size - off), dlen = 0;
		struct sh_run r;

		memset(cdb, 0, sizeof(cdb));
		memcpy(cdb, data + off, n);
		off += n;
		if (size - off >= 2) {
			dlen = MIN((size_t)get_be16(data + off), size - off - 2);
			off += 2;
		}
		fz_run(&r, (sel >> 4) & 3, sel & 7, cdb, len, dlen ? data + off : NULL, (uint32_t)dlen);
		off += dlen;
	}
	fz_device_down();
	return 0;
}
