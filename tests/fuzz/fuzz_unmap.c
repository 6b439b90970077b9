/*
 * libFuzzer target: UNMAP parameter lists (SBC-4 5.30.2) on the thin LUN 0
 * of tests/fuzz/fuzz_scsi.h, then GET LBA STATUS from the first block
 * descriptor's LBA, which walks what the UNMAP deallocated.
 *
 * Input: byte 0 bit 0: ANCHOR (refused: ANC_SUP is 0); the rest is the
 * parameter list, whole.
 */
#include "config.h"
#include <string.h>
#include "tests/fuzz/fuzz_scsi.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t cdb[16] = { 0x42 }, gls[16] = { 0x9e, 0x12 };
	const uint8_t *p = data + 1;
	size_t plen;
	struct sh_run r;

	if (size < 1)
		return 0;
	plen = MIN(size - 1, (size_t)0xffff);
	cdb[1] = data[0] & 0x01;
	put_be16(cdb + 7, (uint16_t)plen);
	fz_device_up();
	fz_run(&r, 0, 0, cdb, 10, plen ? p : NULL, (uint32_t)plen);
	if (plen >= 24)
		put_be64(gls + 2, get_be64(p + 8) % FZ_BLOCKS);
	put_be32(gls + 10, 4096);
	fz_run(&r, 0, 0, gls, 16, NULL, 0);
	fz_device_down();
	return 0;
}
