/*
 * itest checks of LUN options that need more than one I_T nexus:
 *
 *   prevent-2nexus URL
 *       on a removable LUN: PREVENT ALLOW MEDIUM REMOVAL (PREVENT=1) from
 *       one session; START STOP UNIT LOEJ=1 START=0 (eject) must then fail
 *       with MEDIUM REMOVAL PREVENTED from that session and from a second
 *       session of another initiator (its unit attentions consumed
 *       first); once the first session allows removal again the medium
 *       can be ejected and loaded.
 *
 * DESIGN: single-threaded, synchronous libiscsi calls.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tests/itest.h"

/* SPC-4 6.15 / SBC-4 5.17 START STOP UNIT: LOEJ and START */
static struct scsi_task *lun_ssu(struct itest_conn *c, int loej, int start)
{
	return iscsi_startstopunit_sync(c->iscsi, c->lun, 0, 0, 0, 0, loej, start);
}

static void lun_expect_prevented(struct itest_conn *c, struct scsi_task *t, const char *what)
{
	/* SBC-4 5.25: ILLEGAL REQUEST, MEDIUM REMOVAL PREVENTED (53h/02h) */
	if (!t || t->status != SCSI_STATUS_CHECK_CONDITION ||
	    t->sense.key != SCSI_SENSE_ILLEGAL_REQUEST || t->sense.ascq != 0x5302)
		itest_fail("%s: expected CHECK CONDITION ILLEGAL REQUEST, MEDIUM REMOVAL PREVENTED "
			   "(0x5302), got %s", what, itest_task_str(c->iscsi, t));
	scsi_free_scsi_task(t);
}

static void lun_expect_good(struct itest_conn *c, struct scsi_task *t, const char *what)
{
	itest_expect_good(c->iscsi, t, what);
	scsi_free_scsi_task(t);
}

int itest_prevent_2nexus(int argc, char **argv)
{
	struct itest_conn a, b;
	struct scsi_task *t;
	struct scsi_inquiry_standard *inq;
	const char *first = opts.initiator;

	CHECK(argc == 1, "usage: prevent-2nexus URL");
	itest_open(&a, argv[0], ITEST_R2T_DEFAULT);
	t = iscsi_inquiry_sync(a.iscsi, a.lun, 0, 0, 96);
	itest_expect_good(a.iscsi, t, "standard INQUIRY");
	inq = scsi_datain_unmarshall(t);
	CHECK(inq && inq->rmb, "the LUN does not report a removable medium (RMB=0)");
	scsi_free_scsi_task(t);

	lun_expect_good(&a, iscsi_preventallow_sync(a.iscsi, a.lun, 1), "PREVENT ALLOW (PREVENT=1)");
	lun_expect_prevented(&a, lun_ssu(&a, 1, 0), "eject on the nexus that prevented removal");
	lun_expect_good(&a, iscsi_testunitready_sync(a.iscsi, a.lun), "TEST UNIT READY after a "
			"refused eject");

	/* a second I_T nexus: another initiator name */
	opts.initiator = "iqn.2026-11.org.targetd:itest-second";
	itest_open(&b, argv[0], ITEST_R2T_DEFAULT);
	opts.initiator = first;
	lun_expect_prevented(&b, lun_ssu(&b, 1, 0), "eject on a second nexus while the first "
			     "prevents removal");
	lun_expect_good(&b, iscsi_testunitready_sync(b.iscsi, b.lun), "TEST UNIT READY on the "
			"second nexus");

	lun_expect_good(&a, iscsi_preventallow_sync(a.iscsi, a.lun, 0), "PREVENT ALLOW (PREVENT=0)");
	lun_expect_good(&b, lun_ssu(&b, 1, 0), "eject on the second nexus once removal is allowed");
	/* a unit attention may come first (the medium changed under this nexus) */
	for (int i = 0; i < 4; i++) {
		t = iscsi_testunitready_sync(a.iscsi, a.lun);
		if (!t || t->status != SCSI_STATUS_CHECK_CONDITION ||
		    t->sense.key != SCSI_SENSE_UNIT_ATTENTION)
			break;
		scsi_free_scsi_task(t);
	}
	if (!t || t->status != SCSI_STATUS_CHECK_CONDITION || t->sense.key != SCSI_SENSE_NOT_READY ||
	    (t->sense.ascq >> 8) != 0x3a)
		itest_fail("TEST UNIT READY after the eject: expected NOT READY, MEDIUM NOT PRESENT "
			   "(0x3a..), got %s", itest_task_str(a.iscsi, t));
	scsi_free_scsi_task(t);
	lun_expect_good(&a, lun_ssu(&a, 1, 1), "load (LOEJ=1 START=1)");
	itest_clear_ua(&a);    /* NOT READY TO READY CHANGE may be reported once */
	itest_close(&b);
	itest_close(&a);
	itest_note("ok: PREVENT from one nexus refuses ejects from both; ALLOW lets them through");
	return 0;
}
