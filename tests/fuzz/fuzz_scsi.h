/*
 * What the SCSI fuzz targets share (tests/fuzz/fuzz_*.c): a target device
 * built afresh for every input, so an input always meets the same state
 * and a finding replays from its file alone.
 *
 *   LUN 0  memory, 512-byte blocks, thin (UNMAP, WRITE SAME UNMAP), SANITIZE
 *   LUN 1  memory, 4096-byte blocks, removable (START STOP, PREVENT ALLOW)
 *   LUN 2  memory, 512-byte blocks, read-only
 *   LUN 3  memory, 512-byte blocks, thick (EXTENDED COPY across LUNs)
 * Two target port groups (TPGT 1 active/optimized, TPGT 2 standby); nexus
 * 0 and 1 arrive through TPGT 1, nexus 2 through TPGT 2; a second target
 * with one LUN that no CSCD of the first may reach.
 *
 * DESIGN (threads): one thread; commands run to their end on the harness's
 * engine (tests/scsi_harness.c), and whatever a command started (SANITIZE
 * with IMMED=1) is drained before the device is torn down.
 */
#ifndef TESTS_FUZZ_FUZZ_SCSI_H
#define TESTS_FUZZ_FUZZ_SCSI_H

#include <stddef.h>
#include <stdint.h>
#include "tests/scsi_harness.h"

#define FZ_LUNS 4
#define FZ_BLOCKS 8192u            /* 4 MiB of 512-byte blocks per LUN */

struct fz_device {
	struct scsi_target tgt, other;
	struct scsi_nexus nx[3];
	struct scsi_nexus nx_other;
	struct backstore *bs[FZ_LUNS + 1];
	struct scsi_lun *lun[FZ_LUNS];
	struct scsi_lun *lun_other;
};

extern struct fz_device fz;

/* libFuzzer's entry points: LLVMFuzzerInitialize (fuzz_scsi.c, for every
 * target: the harness's engine and buffer) and each target's own
 * LLVMFuzzerTestOneInput. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* The device afresh, and away (with everything it still runs). */
void fz_device_up(void);
void fz_device_down(void);
/* Run one command from nexus (0..2; 3 is 0) to its end (tests/scsi_harness.h
 * sh_run()). */
void fz_run(struct sh_run *r, unsigned nexus, uint64_t lun, const uint8_t *cdb, unsigned cdb_len,
	    const uint8_t *out, uint32_t out_len);
/* EXTENDED COPY parameter lists: a CSCD designator (16 bytes at d) that
 * reads "LUN" k ('L', 'U', 'N', k, then anything) becomes the NAA
 * designator of LUN k of the device (k = 4: the other target's LUN), so
 * the fuzzer reaches the copy itself without guessing 128-bit names. */
void fz_patch_designator(uint8_t *d);

#endif
