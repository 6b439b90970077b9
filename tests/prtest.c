/*
 * prtest: several initiators against one LUN through targetd's portals, to
 * check reservations and ALUA end to end (tests/reservations.sh runs it).
 *
 *   prtest access URL1 URL2        each persistent reservation type: READ and
 *                                  WRITE from holder, registrant and
 *                                  non-registrant (three I_T nexuses)
 *   prtest preempt-abort URL1 URL2 PREEMPT AND ABORT drops the preempted
 *                                  nexus's WRITEs that are still waiting for
 *                                  their data; none of them reaches the medium
 *   prtest caw URL1 URL2           RESERVE(6) against COMPARE AND WRITE from
 *                                  another nexus
 *   prtest preempt-ua URL1 URL2    a reservation held through URL1 is
 *                                  preempted through URL2 (another gateway
 *                                  of the LUN, say): the nexus on URL1
 *                                  gets REGISTRATIONS PREEMPTED and then
 *                                  RESERVATION CONFLICT; RESERVE(6) through
 *                                  URL2 holds against URL1 until RELEASE
 *   prtest reset-release URL1 URL2 RESERVE(6) through URL1, LOGICAL UNIT
 *                                  RESET through URL2: the reservation is
 *                                  gone (URL2 writes) and URL1's nexus gets
 *                                  BUS DEVICE RESET FUNCTION OCCURRED
 *   prtest aptpl-set URL           register (APTPL) and reserve
 *   prtest aptpl-check URL         READ FULL STATUS shows them (after restart)
 *   prtest rtpg URL EXPECT         REPORT TARGET PORT GROUPS through URL must
 *                                  give EXPECT, e.g. "1:ao:p,2:s"
 *   prtest standby URL             media access refused with NOT READY,
 *                                  LOGICAL UNIT NOT ACCESSIBLE, TARGET PORT IN
 *                                  STANDBY STATE; INQUIRY, REPORT LUNS and RTPG
 *                                  still work
 *   prtest active URL              READ and WRITE work through URL
 *   prtest stpg URL1 URL2 TPG STATE  SET TARGET PORT GROUPS through URL1; the
 *                                  nexus on URL2 gets ASYMMETRIC ACCESS STATE
 *                                  CHANGED
 *
 * Exit status: 0 all checks passed, 1 a check failed, 2 usage or setup
 * error, 77 the feature is not implemented by the target (said why).
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define BS 512
static int failures;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

struct path {
	struct iscsi_context *ctx;
	int lun;
	const char *name;
};

static int path_open(struct path *p, const char *url, const char *initiator)
{
	struct iscsi_url *u;

	p->name = initiator;
	p->ctx = iscsi_create_context(initiator);
	if (!p->ctx)
		return -1;
	u = iscsi_parse_full_url(p->ctx, url);
	if (!u) {
		fprintf(stderr, "prtest: bad URL %s: %s\n", url, iscsi_get_error(p->ctx));
		return -1;
	}
	iscsi_set_targetname(p->ctx, u->target);
	iscsi_set_session_type(p->ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(p->ctx, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	p->lun = u->lun;
	/* connect and log in without the TEST UNIT READY that
	 * iscsi_full_connect_sync() adds: it fails on a standby path */
	if (iscsi_connect_sync(p->ctx, u->portal) || iscsi_login_sync(p->ctx)) {
		fprintf(stderr, "prtest: login to %s as %s failed: %s\n", url, initiator,
			iscsi_get_error(p->ctx));
		iscsi_destroy_url(u);
		return -1;
	}
	iscsi_destroy_url(u);
	return 0;
}

static void path_close(struct path *p)
{
	if (!p->ctx)
		return;
	iscsi_logout_sync(p->ctx);
	iscsi_destroy_context(p->ctx);
	p->ctx = NULL;
}

/* Run one CDB; returns the task (caller frees) or NULL on transport error. */
static struct scsi_task *cmd(struct path *p, const uint8_t *cdb, int cdb_len, int dir,
			     int xfer, uint8_t *out)
{
	struct scsi_task *t = scsi_create_task(cdb_len, (unsigned char *)cdb, dir, xfer);
	struct iscsi_data d = { .size = (size_t)xfer, .data = out };

	if (!t)
		return NULL;
	if (!iscsi_scsi_command_sync(p->ctx, p->lun, t, out ? &d : NULL)) {
		fprintf(stderr, "prtest: %s: transport error: %s\n", p->name, iscsi_get_error(p->ctx));
		scsi_free_scsi_task(t);
		return NULL;
	}
	return t;
}

/* Status of a command; a unit attention is retried (up to 5 times). */
static int status_of(struct path *p, const uint8_t *cdb, int cdb_len, int dir, int xfer,
		     uint8_t *out)
{
	for (int i = 0; i < 6; i++) {
		struct scsi_task *t = cmd(p, cdb, cdb_len, dir, xfer, out);
		int st;

		if (!t)
			return -1;
		st = t->status;
		if (st == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
			scsi_free_scsi_task(t);
			continue;
		}
		scsi_free_scsi_task(t);
		return st;
	}
	return -1;
}

static void clear_uas(struct path *p)
{
	const uint8_t tur[6] = { 0 };

	status_of(p, tur, 6, SCSI_XFER_NONE, 0, NULL);
}

static int do_read(struct path *p, uint32_t lba)
{
	uint8_t cdb[10] = { 0x28 };

	cdb[2] = (uint8_t)(lba >> 24); cdb[3] = (uint8_t)(lba >> 16);
	cdb[4] = (uint8_t)(lba >> 8); cdb[5] = (uint8_t)lba;
	cdb[8] = 1;
	return status_of(p, cdb, 10, SCSI_XFER_READ, BS, NULL);
}

static int do_write(struct path *p, uint32_t lba, uint8_t fill)
{
	uint8_t cdb[10] = { 0x2a }, data[BS];

	memset(data, fill, sizeof(data));
	cdb[2] = (uint8_t)(lba >> 24); cdb[3] = (uint8_t)(lba >> 16);
	cdb[4] = (uint8_t)(lba >> 8); cdb[5] = (uint8_t)lba;
	cdb[8] = 1;
	return status_of(p, cdb, 10, SCSI_XFER_WRITE, BS, data);
}

static void put64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t get64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* PERSISTENT RESERVE OUT with the basic parameter list. */
static int prout(struct path *p, uint8_t sa, uint8_t type, uint64_t rk, uint64_t sark,
		 uint8_t flags)
{
	uint8_t cdb[10] = { 0x5f, sa, type, 0, 0, 0, 0, 0, 24, 0 }, par[24] = { 0 };

	put64(par, rk);
	put64(par + 8, sark);
	par[20] = flags;
	return status_of(p, cdb, 10, SCSI_XFER_WRITE, 24, par);
}

/* PERSISTENT RESERVE IN into buf (up to len bytes); returns the status. */
static int prin(struct path *p, uint8_t sa, uint8_t *buf, int len)
{
	uint8_t cdb[10] = { 0x5e, sa, 0, 0, 0, 0, 0, (uint8_t)(len >> 8), (uint8_t)len, 0 };
	struct scsi_task *t;
	int st;

	for (int i = 0; i < 6; i++) {
		t = cmd(p, cdb, 10, SCSI_XFER_READ, len, NULL);
		if (!t)
			return -1;
		st = t->status;
		if (st == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
			scsi_free_scsi_task(t);
			continue;
		}
		memset(buf, 0, (size_t)len);
		if (t->datain.size > 0)
			memcpy(buf, t->datain.data, (size_t)(t->datain.size < len ? t->datain.size : len));
		scsi_free_scsi_task(t);
		return st;
	}
	return -1;
}

/* Start from a LUN without registrations or reservations. */
static void pr_reset(struct path *p)
{
	const uint64_t k = 0x5eed;

	if (prout(p, 0x06, 0, 0, k, 0) == SCSI_STATUS_GOOD)
		prout(p, 0x03, 0, k, 0, 0);
}

static const char *st_name(int st)
{
	switch (st) {
	case SCSI_STATUS_GOOD: return "GOOD";
	case SCSI_STATUS_CHECK_CONDITION: return "CHECK CONDITION";
	case SCSI_STATUS_RESERVATION_CONFLICT: return "RESERVATION CONFLICT";
	default: return "other";
	}
}

/* --- access --- */

static int t_access(const char *u1, const char *u2)
{
	static const struct {
		uint8_t type;
		const char *name;
		bool reg_r, reg_w, non_r, non_w;
	} types[] = {
		{ 1, "Write Exclusive", true, false, true, false },
		{ 3, "Exclusive Access", false, false, false, false },
		{ 5, "Write Exclusive - Registrants Only", true, true, true, false },
		{ 6, "Exclusive Access - Registrants Only", true, true, false, false },
		{ 7, "Write Exclusive - All Registrants", true, true, true, false },
		{ 8, "Exclusive Access - All Registrants", true, true, false, false },
	};
	struct path h = { 0 }, r = { 0 }, n = { 0 };
	const uint64_t kh = 0x1111, kr = 0x2222;

	if (path_open(&h, u1, "iqn.2026-11.org.targetd.test:holder") ||
	    path_open(&r, u2, "iqn.2026-11.org.targetd.test:registrant") ||
	    path_open(&n, u1, "iqn.2026-11.org.targetd.test:outsider"))
		return 2;
	clear_uas(&h);
	clear_uas(&r);
	clear_uas(&n);
	pr_reset(&h);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		int st;

		check(prout(&h, 0x06, 0, 0, kh, 0) == SCSI_STATUS_GOOD, "%s: holder registers", types[i].name);
		check(prout(&r, 0x06, 0, 0, kr, 0) == SCSI_STATUS_GOOD, "%s: registrant registers", types[i].name);
		check(prout(&h, 0x01, types[i].type, kh, 0, 0) == SCSI_STATUS_GOOD, "%s: RESERVE", types[i].name);
		st = do_read(&h, 8);
		check(st == SCSI_STATUS_GOOD, "%s: holder READ: %s", types[i].name, st_name(st));
		st = do_write(&h, 8, 0x11);
		check(st == SCSI_STATUS_GOOD, "%s: holder WRITE: %s", types[i].name, st_name(st));
		st = do_read(&r, 8);
		check(st == (types[i].reg_r ? SCSI_STATUS_GOOD : SCSI_STATUS_RESERVATION_CONFLICT),
		      "%s: registrant READ: %s", types[i].name, st_name(st));
		st = do_write(&r, 8, 0x22);
		check(st == (types[i].reg_w ? SCSI_STATUS_GOOD : SCSI_STATUS_RESERVATION_CONFLICT),
		      "%s: registrant WRITE: %s", types[i].name, st_name(st));
		st = do_read(&n, 8);
		check(st == (types[i].non_r ? SCSI_STATUS_GOOD : SCSI_STATUS_RESERVATION_CONFLICT),
		      "%s: non-registrant READ: %s", types[i].name, st_name(st));
		st = do_write(&n, 8, 0x33);
		check(st == (types[i].non_w ? SCSI_STATUS_GOOD : SCSI_STATUS_RESERVATION_CONFLICT),
		      "%s: non-registrant WRITE: %s", types[i].name, st_name(st));
		check(prout(&h, 0x03, 0, kh, 0, 0) == SCSI_STATUS_GOOD, "%s: CLEAR", types[i].name);
		clear_uas(&r);
	}
	path_close(&h);
	path_close(&r);
	path_close(&n);
	return failures ? 1 : 0;
}

/* --- PREEMPT AND ABORT --- */

#define PA_CMDS 8
#define PA_LEN (1024 * 1024)
#define PA_LBA 4096

static int pa_done;
static void pa_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	(void)ctx; (void)status; (void)data; (void)priv;
	pa_done++;
}

static int t_preempt_abort(const char *u1, const char *u2)
{
	struct path a = { 0 }, b = { 0 };
	const uint64_t ka = 0xa1, kb = 0xb2;
	static uint8_t old[PA_LEN], fresh[PA_CMDS][PA_LEN];
	struct scsi_task *tasks[PA_CMDS];
	int st, sent = 0;
	bool intact = true;

	if (path_open(&a, u1, "iqn.2026-11.org.targetd.test:preempter") ||
	    path_open(&b, u2, "iqn.2026-11.org.targetd.test:victim"))
		return 2;
	clear_uas(&a);
	clear_uas(&b);
	pr_reset(&a);
	/* the region the victim will try to overwrite */
	memset(old, 0x5a, sizeof(old));
	{
		uint8_t cdb[10] = { 0x2a, 0, 0, 0, (uint8_t)(PA_LBA >> 8), (uint8_t)PA_LBA, 0,
				    (uint8_t)((PA_LEN / BS) >> 8), (uint8_t)(PA_LEN / BS), 0 };

		st = status_of(&a, cdb, 10, SCSI_XFER_WRITE, PA_LEN, old);
		check(st == SCSI_STATUS_GOOD, "known data written");
	}
	check(prout(&a, 0x06, 0, 0, ka, 0) == SCSI_STATUS_GOOD, "preempter registers");
	check(prout(&b, 0x06, 0, 0, kb, 0) == SCSI_STATUS_GOOD, "victim registers");
	check(prout(&b, 0x01, 1, kb, 0, 0) == SCSI_STATUS_GOOD, "victim holds Write Exclusive");

	/* The victim sends its WRITEs (and the unsolicited first burst) but
	 * does not read: the target's R2Ts stay unanswered, so the commands
	 * wait for their data inside the target. */
	for (int i = 0; i < PA_CMDS; i++) {
		uint32_t lba = PA_LBA + (uint32_t)i * (PA_LEN / BS / PA_CMDS);
		uint8_t cdb[10] = { 0x2a, 0, 0, 0, (uint8_t)(lba >> 8), (uint8_t)lba, 0,
				    (uint8_t)((PA_LEN / BS / PA_CMDS) >> 8),
				    (uint8_t)(PA_LEN / BS / PA_CMDS), 0 };
		struct iscsi_data d = { .size = PA_LEN / PA_CMDS, .data = fresh[i] };

		memset(fresh[i], 0xc0 + i, PA_LEN);
		tasks[i] = scsi_create_task(10, cdb, SCSI_XFER_WRITE, PA_LEN / PA_CMDS);
		if (!tasks[i] || iscsi_scsi_command_async(b.ctx, b.lun, tasks[i], pa_cb, &d, NULL)) {
			fprintf(stderr, "prtest: cannot queue WRITE %d\n", i);
			return 2;
		}
		sent++;
	}
	for (int spins = 0; spins < 200 && iscsi_out_queue_length(b.ctx) > 0; spins++) {
		struct pollfd pfd = { .fd = iscsi_get_fd(b.ctx), .events = POLLOUT };

		if (poll(&pfd, 1, 50) > 0 && iscsi_service(b.ctx, POLLOUT) < 0)
			break;
	}
	usleep(200 * 1000);         /* let the target take the commands in */
	check(pa_done == 0, "victim's %d WRITEs are in flight (%d answered)", sent, pa_done);

	/* PREEMPT AND ABORT: the victim's registration and reservation go,
	 * and so do its tasks */
	st = prout(&a, 0x05, 3, ka, kb, 0);
	check(st == SCSI_STATUS_GOOD, "PREEMPT AND ABORT: %s", st_name(st));
	{
		uint8_t buf[64];

		prin(&a, 0x01, buf, sizeof(buf));
		check(get32(buf + 4) == 16 && get64(buf + 8) == ka && buf[21] == 3,
		      "the preempter holds Exclusive Access");
	}
	/* let the victim run: its data goes nowhere, no WRITE is answered
	 * with GOOD */
	for (int spins = 0; spins < 20; spins++) {
		struct pollfd pfd = { .fd = iscsi_get_fd(b.ctx), .events = (short)iscsi_which_events(b.ctx) };

		if (poll(&pfd, 1, 50) > 0 && iscsi_service(b.ctx, pfd.revents) < 0)
			break;
	}
	for (int i = 0; i < PA_CMDS; i++)
		if (pa_done > 0 && tasks[i]->status == SCSI_STATUS_GOOD)
			intact = false;
	check(intact, "no aborted WRITE completed with GOOD (%d answered)", pa_done);
	/* the medium still holds the old data */
	{
		uint8_t cdb[10] = { 0x28, 0, 0, 0, (uint8_t)(PA_LBA >> 8), (uint8_t)PA_LBA, 0,
				    (uint8_t)((PA_LEN / BS) >> 8), (uint8_t)(PA_LEN / BS), 0 };
		struct scsi_task *t = cmd(&a, cdb, 10, SCSI_XFER_READ, PA_LEN, NULL);

		check(t && t->status == SCSI_STATUS_GOOD && t->datain.size == PA_LEN &&
		      !memcmp(t->datain.data, old, PA_LEN),
		      "none of the aborted WRITEs reached the medium");
		if (t)
			scsi_free_scsi_task(t);
	}
	/* the victim's context is dropped without waiting for answers that
	 * will not come */
	iscsi_destroy_context(b.ctx);
	for (int i = 0; i < PA_CMDS; i++)
		scsi_free_scsi_task(tasks[i]);    /* the caller owns them */
	check(prout(&a, 0x03, 0, ka, 0, 0) == SCSI_STATUS_GOOD, "CLEAR");
	path_close(&a);
	return failures ? 1 : 0;
}

/* --- RESERVE(6) against COMPARE AND WRITE --- */

static int t_caw(const char *u1, const char *u2)
{
	struct path a = { 0 }, b = { 0 };
	const uint8_t reserve6[6] = { 0x16 }, release6[6] = { 0x17 };
	uint8_t cawcdb[16] = { 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 1, 0, 0 };
	uint8_t two[2 * BS];
	struct scsi_task *t;
	int st;

	if (path_open(&a, u1, "iqn.2026-11.org.targetd.test:esx-a") ||
	    path_open(&b, u2, "iqn.2026-11.org.targetd.test:esx-b"))
		return 2;
	clear_uas(&a);
	clear_uas(&b);
	pr_reset(&a);
	check(do_write(&a, 0x20, 0x00) == SCSI_STATUS_GOOD, "block 0x20 zeroed");
	memset(two, 0, BS);
	memset(two + BS, 0x77, BS);
	t = cmd(&b, cawcdb, 16, SCSI_XFER_WRITE, 2 * BS, two);
	if (t && t->status == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_ILLEGAL_REQUEST &&
	    t->sense.ascq == SCSI_SENSE_ASCQ_INVALID_OPERATION_CODE) {
		printf("SKIP: COMPARE AND WRITE is not implemented by the target (INVALID OPERATION CODE)\n");
		scsi_free_scsi_task(t);
		return 77;
	}
	check(t && t->status == SCSI_STATUS_GOOD, "COMPARE AND WRITE without a reservation");
	if (t)
		scsi_free_scsi_task(t);
	check(status_of(&a, reserve6, 6, SCSI_XFER_NONE, 0, NULL) == SCSI_STATUS_GOOD, "RESERVE(6)");
	memset(two, 0x77, BS);
	memset(two + BS, 0x88, BS);
	st = status_of(&b, cawcdb, 16, SCSI_XFER_WRITE, 2 * BS, two);
	check(st == SCSI_STATUS_RESERVATION_CONFLICT, "COMPARE AND WRITE from the other nexus: %s",
	      st_name(st));
	st = status_of(&a, cawcdb, 16, SCSI_XFER_WRITE, 2 * BS, two);
	check(st == SCSI_STATUS_GOOD, "COMPARE AND WRITE from the holder: %s", st_name(st));
	check(status_of(&a, release6, 6, SCSI_XFER_NONE, 0, NULL) == SCSI_STATUS_GOOD, "RELEASE(6)");
	memset(two, 0x88, BS);
	memset(two + BS, 0x99, BS);
	st = status_of(&b, cawcdb, 16, SCSI_XFER_WRITE, 2 * BS, two);
	check(st == SCSI_STATUS_GOOD, "COMPARE AND WRITE after RELEASE: %s", st_name(st));
	path_close(&a);
	path_close(&b);
	return failures ? 1 : 0;
}

/* --- preempted through another port --- */

/* The next command's sense, without retrying a unit attention: 0 when
 * GOOD, else (key << 16) | (asc << 8) | ascq, -1 on a transport error. */
static int next_sense(struct path *p)
{
	const uint8_t tur[6] = { 0 };
	struct scsi_task *t = cmd(p, tur, 6, SCSI_XFER_NONE, 0, NULL);
	int r;

	if (!t)
		return -1;
	r = t->status == SCSI_STATUS_GOOD ? 0 : (int)t->sense.key << 16 | t->sense.ascq;
	scsi_free_scsi_task(t);
	return r;
}

static int t_preempt_ua(const char *u1, const char *u2)
{
	struct path h = { 0 }, o = { 0 };
	const uint8_t reserve6[6] = { 0x16 }, release6[6] = { 0x17 };
	const uint64_t kh = 0xaaaa, ko = 0xbbbb;
	int st;

	if (path_open(&h, u1, "iqn.2026-11.org.targetd.test:first") ||
	    path_open(&o, u2, "iqn.2026-11.org.targetd.test:second"))
		return 2;
	clear_uas(&h);
	clear_uas(&o);
	pr_reset(&h);
	check(prout(&h, 0x06, 0, 0, kh, 0) == SCSI_STATUS_GOOD, "REGISTER through URL1");
	check(prout(&h, 0x01, 3, kh, 0, 0) == SCSI_STATUS_GOOD, "RESERVE Exclusive Access through URL1");
	st = do_read(&o, 8);
	check(st == SCSI_STATUS_RESERVATION_CONFLICT, "READ through URL2: %s", st_name(st));
	check(prout(&o, 0x06, 0, 0, ko, 0) == SCSI_STATUS_GOOD, "REGISTER through URL2");
	check(prout(&o, 0x04, 3, ko, kh, 0) == SCSI_STATUS_GOOD, "PREEMPT through URL2");
	/* SPC-4 5.13.11.2.4: the preempted nexus gets REGISTRATIONS PREEMPTED */
	st = next_sense(&h);
	check(st == (SCSI_SENSE_UNIT_ATTENTION << 16 | 0x2a05),
	      "URL1 after the preemption: sense %06x, expected UNIT ATTENTION 2A/05", (unsigned)st);
	st = do_write(&h, 8, 0x44);
	check(st == SCSI_STATUS_RESERVATION_CONFLICT, "WRITE through URL1: %s", st_name(st));
	st = do_write(&o, 8, 0x55);
	check(st == SCSI_STATUS_GOOD, "WRITE through URL2 (the holder now): %s", st_name(st));
	check(prout(&o, 0x03, 0, ko, 0, 0) == SCSI_STATUS_GOOD, "CLEAR through URL2");
	clear_uas(&h);
	/* SPC-2: RESERVE(6) through URL2 holds against URL1 */
	check(status_of(&o, reserve6, 6, SCSI_XFER_NONE, 0, NULL) == SCSI_STATUS_GOOD,
	      "RESERVE(6) through URL2");
	st = do_read(&h, 8);
	check(st == SCSI_STATUS_RESERVATION_CONFLICT, "READ through URL1: %s", st_name(st));
	st = status_of(&h, reserve6, 6, SCSI_XFER_NONE, 0, NULL);
	check(st == SCSI_STATUS_RESERVATION_CONFLICT, "RESERVE(6) through URL1: %s", st_name(st));
	check(status_of(&o, release6, 6, SCSI_XFER_NONE, 0, NULL) == SCSI_STATUS_GOOD,
	      "RELEASE(6) through URL2");
	st = do_write(&h, 8, 0x66);
	check(st == SCSI_STATUS_GOOD, "WRITE through URL1 after RELEASE: %s", st_name(st));
	path_close(&h);
	path_close(&o);
	return failures ? 1 : 0;
}

static int t_reset_release(const char *u1, const char *u2)
{
	struct path a = { 0 }, b = { 0 };
	const uint8_t reserve6[6] = { 0x16 };
	int st;

	if (path_open(&a, u1, "iqn.2026-11.org.targetd.test:reserver") ||
	    path_open(&b, u2, "iqn.2026-11.org.targetd.test:resetter"))
		return 2;
	clear_uas(&a);
	clear_uas(&b);
	pr_reset(&a);
	check(status_of(&a, reserve6, 6, SCSI_XFER_NONE, 0, NULL) == SCSI_STATUS_GOOD,
	      "RESERVE(6) through URL1");
	st = do_write(&b, 8, 0x12);
	check(st == SCSI_STATUS_RESERVATION_CONFLICT, "WRITE through URL2: %s", st_name(st));
	check(iscsi_task_mgmt_lun_reset_sync(b.ctx, (uint32_t)b.lun) == 0,
	      "LOGICAL UNIT RESET through URL2");
	clear_uas(&b);
	st = do_write(&b, 8, 0x13);
	check(st == SCSI_STATUS_GOOD, "WRITE through URL2 after the reset: %s", st_name(st));
	st = next_sense(&a);
	check(st == (SCSI_SENSE_UNIT_ATTENTION << 16 | 0x2903),
	      "URL1 after the reset: sense %06x, expected UNIT ATTENTION 29/03", (unsigned)st);
	path_close(&a);
	path_close(&b);
	return failures ? 1 : 0;
}

/* --- APTPL --- */

#define APTPL_KEY 0xa9791u
#define APTPL_INITIATOR "iqn.2026-11.org.targetd.test:aptpl"

static int t_aptpl_set(const char *u)
{
	struct path a = { 0 };
	uint8_t buf[16];

	if (path_open(&a, u, APTPL_INITIATOR))
		return 2;
	clear_uas(&a);
	pr_reset(&a);
	prin(&a, 0x02, buf, 8);
	check(buf[2] & 0x01, "REPORT CAPABILITIES: PTPL_C");
	check(prout(&a, 0x06, 0, 0, APTPL_KEY, 0x01) == SCSI_STATUS_GOOD, "REGISTER with APTPL");
	check(prout(&a, 0x01, 5, APTPL_KEY, 0, 0) == SCSI_STATUS_GOOD,
	      "RESERVE Write Exclusive - Registrants Only");
	prin(&a, 0x02, buf, 8);
	check(buf[3] & 0x01, "REPORT CAPABILITIES: PTPL_A");
	path_close(&a);
	return failures ? 1 : 0;
}

static int t_aptpl_check(const char *u)
{
	struct path a = { 0 };
	uint8_t buf[4096];
	uint32_t len, off;
	bool found = false;

	if (path_open(&a, u, "iqn.2026-11.org.targetd.test:after-restart"))
		return 2;
	clear_uas(&a);
	check(prin(&a, 0x03, buf, sizeof(buf)) == SCSI_STATUS_GOOD, "READ FULL STATUS");
	len = get32(buf + 4);
	for (off = 8; off + 24 <= 8 + len && off + 24 <= sizeof(buf);) {
		const uint8_t *e = buf + off;
		uint32_t tl = get32(e + 20);
		const char *port = (const char *)e + 28;

		printf("registration key %#" PRIx64 " holder %d type %u port %.200s\n",
		       get64(e), e[12] & 1, e[13] & 0x0f, port);
		if (get64(e) == APTPL_KEY && (e[12] & 1) && (e[13] & 0x0f) == 5 &&
		    !strncmp(port, APTPL_INITIATOR ",i,0x", strlen(APTPL_INITIATOR) + 5))
			found = true;
		off += 24 + tl;
	}
	check(found, "the APTPL registration holds its reservation after the restart");
	/* and it is enforced: this nexus is not registered */
	check(do_write(&a, 16, 0x44) == SCSI_STATUS_RESERVATION_CONFLICT,
	      "a WRITE from an unregistered nexus conflicts");
	/* clean up: preempt-free CLEAR needs a registration */
	check(prout(&a, 0x06, 0, 0, 0x1, 0) == SCSI_STATUS_GOOD, "register");
	check(prout(&a, 0x03, 0, 0x1, 0, 0) == SCSI_STATUS_GOOD, "CLEAR");
	path_close(&a);
	return failures ? 1 : 0;
}

/* --- ALUA --- */

static const char *alua_short(uint8_t st)
{
	switch (st & 0x0f) {
	case 0: return "ao";
	case 1: return "an";
	case 2: return "s";
	case 3: return "u";
	case 0xf: return "t";
	default: return "?";
	}
}

static int t_rtpg(const char *u, const char *expect)
{
	struct path a = { 0 };
	uint8_t cdb[12] = { 0xa3, 0x0a, 0, 0, 0, 0, 0, 0, 0x04, 0, 0, 0 };
	char got[512] = "";
	struct scsi_task *t;
	uint32_t len, off;

	if (path_open(&a, u, "iqn.2026-11.org.targetd.test:rtpg"))
		return 2;
	clear_uas(&a);
	t = cmd(&a, cdb, 12, SCSI_XFER_READ, 1024, NULL);
	check(t && t->status == SCSI_STATUS_GOOD, "REPORT TARGET PORT GROUPS");
	if (!t || t->status != SCSI_STATUS_GOOD)
		return 1;
	len = get32(t->datain.data);
	for (off = 4; off + 8 <= 4 + len && off + 8 <= (uint32_t)t->datain.size;) {
		const uint8_t *d = t->datain.data + off;
		size_t n = strlen(got);

		snprintf(got + n, sizeof(got) - n, "%s%u:%s%s", n ? "," : "",
			 (unsigned)(d[2] << 8 | d[3]), alua_short(d[0]), (d[0] & 0x80) ? ":p" : "");
		off += 8 + 4u * d[7];
	}
	scsi_free_scsi_task(t);
	check(!strcmp(got, expect), "groups through %s: %s (expected %s)", u, got, expect);
	path_close(&a);
	return failures ? 1 : 0;
}

static int t_standby(const char *u)
{
	struct path a = { 0 };
	const uint8_t tur[6] = { 0 }, inq[6] = { 0x12, 0, 0, 0, 96, 0 };
	const uint8_t rl[12] = { 0xa0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0 };
	const uint8_t rtpg[12] = { 0xa3, 0x0a, 0, 0, 0, 0, 0, 0, 0x04, 0, 0, 0 };
	const uint8_t rd[10] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0 };
	struct scsi_task *t;

	if (path_open(&a, u, "iqn.2026-11.org.targetd.test:standby"))
		return 2;
	clear_uas(&a);
	t = cmd(&a, rd, 10, SCSI_XFER_READ, BS, NULL);
	check(t && t->status == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_NOT_READY &&
	      t->sense.ascq == 0x040b,
	      "READ(10) on the standby path: NOT READY, LOGICAL UNIT NOT ACCESSIBLE, TARGET PORT IN STANDBY STATE (got key %d ascq %#x)",
	      t ? (int)t->sense.key : -1, t ? (unsigned)t->sense.ascq : 0);
	if (t)
		scsi_free_scsi_task(t);
	t = cmd(&a, tur, 6, SCSI_XFER_NONE, 0, NULL);
	check(t && t->status == SCSI_STATUS_CHECK_CONDITION && t->sense.ascq == 0x040b,
	      "TEST UNIT READY on the standby path: 04/0B");
	if (t)
		scsi_free_scsi_task(t);
	check(status_of(&a, inq, 6, SCSI_XFER_READ, 96, NULL) == SCSI_STATUS_GOOD, "INQUIRY works");
	check(status_of(&a, rl, 12, SCSI_XFER_READ, 16, NULL) == SCSI_STATUS_GOOD, "REPORT LUNS works");
	check(status_of(&a, rtpg, 12, SCSI_XFER_READ, 1024, NULL) == SCSI_STATUS_GOOD,
	      "REPORT TARGET PORT GROUPS works");
	path_close(&a);
	return failures ? 1 : 0;
}

static int t_active(const char *u)
{
	struct path a = { 0 };
	int st;

	if (path_open(&a, u, "iqn.2026-11.org.targetd.test:active"))
		return 2;
	clear_uas(&a);
	st = do_read(&a, 0);
	check(st == SCSI_STATUS_GOOD, "READ(10) through %s: %s", u, st_name(st));
	st = do_write(&a, 24, 0x24);
	check(st == SCSI_STATUS_GOOD, "WRITE(10) through %s: %s", u, st_name(st));
	path_close(&a);
	return failures ? 1 : 0;
}

static int t_stpg(const char *u1, const char *u2, unsigned tpg, const char *state)
{
	struct path a = { 0 }, b = { 0 };
	const uint8_t tur[6] = { 0 };
	uint8_t cdb[12] = { 0xa4, 0x0a, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0 }, par[8] = { 0 };
	struct scsi_task *t;
	uint8_t st;

	if (!strcmp(state, "ao"))
		st = 0;
	else if (!strcmp(state, "an"))
		st = 1;
	else if (!strcmp(state, "s"))
		st = 2;
	else if (!strcmp(state, "u"))
		st = 3;
	else
		return 2;
	if (path_open(&a, u1, "iqn.2026-11.org.targetd.test:stpg-a") ||
	    path_open(&b, u2, "iqn.2026-11.org.targetd.test:stpg-b"))
		return 2;
	clear_uas(&a);
	/* b's pending UAs (power on) are seen through INQUIRY-free commands;
	 * REPORT LUNS does not clear them, so take them with REQUEST SENSE */
	for (int i = 0; i < 4; i++) {
		const uint8_t rs[6] = { 0x03, 0, 0, 0, 18, 0 };

		t = cmd(&b, rs, 6, SCSI_XFER_READ, 18, NULL);
		if (t)
			scsi_free_scsi_task(t);
	}
	par[4] = st;
	par[6] = (uint8_t)(tpg >> 8);
	par[7] = (uint8_t)tpg;
	t = cmd(&a, cdb, 12, SCSI_XFER_WRITE, 8, par);
	check(t && t->status == SCSI_STATUS_GOOD, "SET TARGET PORT GROUPS %u to %s", tpg, state);
	if (t)
		scsi_free_scsi_task(t);
	t = cmd(&b, tur, 6, SCSI_XFER_NONE, 0, NULL);
	check(t && t->status == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_UNIT_ATTENTION &&
	      t->sense.ascq == 0x2a06, "the other nexus: ASYMMETRIC ACCESS STATE CHANGED");
	if (t)
		scsi_free_scsi_task(t);
	path_close(&a);
	path_close(&b);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "access"))
		return t_access(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "preempt-abort"))
		return t_preempt_abort(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "preempt-ua"))
		return t_preempt_ua(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "reset-release"))
		return t_reset_release(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "caw"))
		return t_caw(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "aptpl-set"))
		return t_aptpl_set(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "aptpl-check"))
		return t_aptpl_check(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "rtpg"))
		return t_rtpg(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "standby"))
		return t_standby(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "active"))
		return t_active(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "stpg"))
		return t_stpg(argv[2], argv[3], (unsigned)atoi(argv[4]), argv[5]);
	fprintf(stderr, "usage: prtest access|preempt-abort|preempt-ua|reset-release|caw URL1 URL2 | aptpl-set|aptpl-check|standby URL |\n"
		"       rtpg URL EXPECT | active URL | stpg URL1 URL2 TPG ao|an|s|u\n");
	return 2;
}
