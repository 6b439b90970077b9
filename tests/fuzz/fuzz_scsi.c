/*
 * The device the SCSI fuzz targets run against: see tests/fuzz/fuzz_scsi.h.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/fuzz/fuzz_scsi.h"
#include "scsi/pr.h"
#include "common/log.h"

struct fz_device fz;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* the largest data phase of any command (8 MiB READ/WRITE) and room */
	sh_setup(9u << 20);
	log_level = LOG_LVL_ERR;
	return 0;
}

void fz_device_up(void)
{
	static const struct alua_group_conf groups[2] = {
		{ .tpgt = 1, .state = ALUA_ACTIVE_OPTIMIZED, .preferred = true },
		{ .tpgt = 2, .state = ALUA_STANDBY },
	};
	struct scsi_lun_params lp = { .block_size = 512, .nblocks = FZ_BLOCKS };
	unsigned i;

	memset(&fz, 0, sizeof(fz));
	scsi_target_init(&fz.tgt, "iqn.2026-01.org.targetd.fuzz:scsi", 1);
	scsi_target_init(&fz.other, "iqn.2026-01.org.targetd.fuzz:other", 2);
	if (alua_target_init(&fz.tgt, groups, 2))
		abort();
	for (i = 0; i <= FZ_LUNS; i++)
		fz.bs[i] = sh_memory_bs((uint64_t)FZ_BLOCKS * 512, i == 0);
	for (i = 0; i < FZ_LUNS; i++) {
		lp.id = (uint16_t)i;
		lp.block_size = i == 1 ? 4096 : 512;
		lp.nblocks = (uint64_t)FZ_BLOCKS * 512 / lp.block_size;
		lp.thin = i == 0;
		lp.sanitize = i == 0;
		lp.removable = i == 1;
		lp.read_only = i == 2;
		if (scsi_lun_create(&fz.lun[i], &fz.tgt, &lp, fz.bs[i]))
			abort();
		scsi_target_set_lun(&fz.tgt, (uint16_t)i, fz.lun[i]);
	}
	memset(&lp, 0, sizeof(lp));
	lp.block_size = 512;
	lp.nblocks = FZ_BLOCKS;
	if (scsi_lun_create(&fz.lun_other, &fz.other, &lp, fz.bs[FZ_LUNS]))
		abort();
	scsi_target_set_lun(&fz.other, 0, fz.lun_other);
	for (i = 0; i < 3; i++) {
		struct scsi_nexus *n = &fz.nx[i];

		memset(n, 0, sizeof(*n));
		n->id = i + 1;
		/* nexus 2 arrives through the standby group */
		n->rel_tport_id = n->tpgt = i == 2 ? 2 : 1;
		snprintf(n->initiator_name, sizeof(n->initiator_name),
			 "iqn.2026-01.org.targetd.fuzz:host-%u", i);
		snprintf(n->initiator_port, sizeof(n->initiator_port), "%s,i,0x23d00000000%u",
			 n->initiator_name, i + 1);
		n->isid[5] = (uint8_t)(i + 1);
		scsi_nexus_attach(&fz.tgt, n);
		/* no power-on unit attention: commands get to do something */
		for (unsigned k = 0; k < SCSI_MAX_LUNS; k++)
			scsi_ua_clear(n, (uint16_t)k);
	}
	sh_nexus_attach(&fz.other, &fz.nx_other, 10);
}

void fz_device_down(void)
{
	unsigned i;

	sh_drain();
	for (i = 0; i < 3; i++)
		scsi_nexus_detach(&fz.nx[i]);
	scsi_nexus_detach(&fz.nx_other);
	for (i = 0; i < FZ_LUNS; i++)
		scsi_lun_destroy(fz.lun[i]);
	scsi_lun_destroy(fz.lun_other);
	scsi_target_destroy(&fz.tgt);
	scsi_target_destroy(&fz.other);
	for (i = 0; i <= FZ_LUNS; i++)
		backstore_close(fz.bs[i]);
}

void fz_run(struct sh_run *r, unsigned nexus, uint64_t lun, const uint8_t *cdb, unsigned cdb_len,
	    const uint8_t *out, uint32_t out_len)
{
	sh_run(r, &fz.nx[(nexus & 3) % 3], lun, cdb, cdb_len, out, out_len);
}

void fz_patch_designator(uint8_t *d)
{
	const struct scsi_lun *l;

	if (d[0] != 'L' || d[1] != 'U' || d[2] != 'N' || d[3] > FZ_LUNS)
		return;
	l = d[3] == FZ_LUNS ? fz.lun_other : fz.lun[d[3]];
	put_be64(d, l->naa);
	put_be64(d + 8, l->naa_ext);
}
