/*
 * libFuzzer target: EXTENDED COPY (LID1) parameter lists (SPC-4 6.4.3),
 * sent to LUN 0 of tests/fuzz/fuzz_scsi.h, then RECEIVE COPY RESULTS of
 * the list identifier (COPY STATUS, FAILED SEGMENT DETAILS) and OPERATING
 * PARAMETERS.
 *
 * Input: the parameter list, whole. A CSCD designator that reads "LUN" k
 * is replaced by the NAA designator of LUN k (fz_patch_designator()), so
 * a list can name the device's LUNs and the other target's.
 */
#include "config.h"
#include <string.h>
#include "tests/fuzz/fuzz_scsi.h"
#include "common/util.h"

#define XC_MAX_LIST (16 + 4096 + 64)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t list[XC_MAX_LIST];
	uint8_t cdb[16] = { 0x83 }, rcr[16] = { 0x84 };
	struct sh_run r;
	size_t i;

	size = MIN(size, sizeof(list));
	memcpy(list, data, size);
	fz_device_up();
	/* the 32-byte CSCD descriptors after the 16-byte header: NAA at +8 */
	for (i = 16; i + 32 <= size && i < 16 + 32 * 40; i += 32)
		fz_patch_designator(list + i + 8);
	put_be32(cdb + 10, (uint32_t)size);
	fz_run(&r, 0, 0, cdb, 16, size ? list : NULL, (uint32_t)size);
	put_be32(rcr + 10, 4096);
	rcr[2] = size ? list[0] : 0;           /* LIST IDENTIFIER */
	for (i = 0; i < 3; i++) {
		static const uint8_t sa[3] = { 0x00, 0x04, 0x03 };

		rcr[1] = sa[i];
		fz_run(&r, 0, 0, rcr, 16, NULL, 0);
	}
	fz_device_down();
	return 0;
}
