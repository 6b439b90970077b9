/*
 * libFuzzer target: MODE SELECT(6) and (10) parameter lists (SPC-4 6.11,
 * 6.12, 7.5) on a LUN of tests/fuzz/fuzz_scsi.h, then MODE SENSE(10) of
 * every page (current and changeable values) and a WRITE, which the pages
 * set (WCE, SWP).
 *
 * Input: byte 0 bit 0: MODE SELECT(10), else (6); bit 1: SP (refused);
 * bit 2: PF clear (refused); bits 4..3: the LUN. The rest is the parameter
 * list, whole.
 */
#include "config.h"
#include <string.h>
#include "tests/fuzz/fuzz_scsi.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t block[4096];
	uint8_t cdb[10] = { 0 }, ms[10] = { 0x5a, 0, 0x3f, 0, 0, 0, 0, 0x10, 0, 0 };
	uint8_t wr[10] = { 0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0 };
	const uint8_t *p = data + 1;
	unsigned lun;
	size_t plen;
	struct sh_run r;

	if (size < 1)
		return 0;
	lun = (data[0] >> 3) & 3;
	plen = MIN(size - 1, (size_t)(data[0] & 1 ? 0xffff : 0xff));
	cdb[1] = (uint8_t)(((data[0] & 4) ? 0 : 0x10) | ((data[0] & 2) ? 0x01 : 0));
	if (data[0] & 1) {
		cdb[0] = 0x55;
		put_be16(cdb + 7, (uint16_t)plen);
	} else {
		cdb[0] = 0x15;
		cdb[4] = (uint8_t)plen;
	}
	fz_device_up();
	fz_run(&r, 0, lun, cdb, 10, plen ? p : NULL, (uint32_t)plen);
	fz_run(&r, 0, lun, ms, 10, NULL, 0);
	ms[2] = 0x7f;                          /* changeable values */
	fz_run(&r, 1, lun, ms, 10, NULL, 0);
	fz_run(&r, 0, lun, wr, 10, block, lun == 1 ? 4096 : 512);
	fz_device_down();
	return 0;
}
