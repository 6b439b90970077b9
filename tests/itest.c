/*
 * itest: integration tests for targetd, run as a real iSCSI initiator
 * (libiscsi) against a running daemon. One program, one subcommand per
 * test; each subcommand asserts as it goes and exits 1 with a message
 * naming what was expected and what came back, 0 when everything held.
 *
 *   itest [options] discovery PORTAL-URL IQN...   SendTargets lists each IQN
 *   itest [options] login URL                     login, UA cleared, REPORT LUNS, logout
 *   itest [options] inq URL                       standard INQUIRY and VPD pages
 *   itest [options] readcap URL [BYTES [BS]]      READ CAPACITY 10/16, range checks
 *   itest [options] rw URL                        write/read/compare, R2T, two sessions
 *   itest [options] chap-ok URL                   login with CHAP (credentials in URL)
 *   itest [options] chap-bad URL                  login with wrong/no CHAP must fail
 *   itest [options] acl-refused URL               login of a non-listed initiator must fail
 *   itest [options] tmf URL                       ABORT TASK, ABORT TASK SET, LUN RESET
 *   itest [options] concurrency URL N             N sessions, queue depth 32, verified
 *   itest [options] zeroed URL                    a never-written LUN reads as zeros
 *   itest [options] mark URL SEED                 write extents derived from SEED
 *   itest [options] check-mark URL SEED           verify them (e.g. after a restart)
 *   itest [options] write-zeros URL LBA NBLOCKS   write zeros there (WRITE(16))
 *   itest [options] durable-write PID STATE NBLOCKS URL[,wce-off|,atomic|,cache]...
 *                                                 writes in flight, kill -9 PID, keep what was acknowledged
 *   itest [options] durable-check STATE           after a restart: acknowledged blocks hold the new data
 *                                                 (tests/itest_durable.c)
 *   itest [options] prevent-2nexus URL            PREVENT from one nexus holds for another
 *                                                 (tests/itest_lun.c)
 *   itest [options] clone-write STATE NBLOCKS URL CLONE-URL CMD...
 *                                                 writes in flight while CMD clones the LUN
 *   itest [options] write-protected URL           WRITE refused 07/27/00, WP set
 *   itest [options] ua-after URL ASCQ[,...] CMD...  the unit attentions CMD establishes
 *                                                 (tests/itest_clone.c)
 *
 * URL is iscsi://[user[%secret]@]host:port/iqn/lun.
 *
 * DESIGN: single-threaded. The concurrency and TMF tests drive several
 * libiscsi contexts with libiscsi's asynchronous API from one poll(2) loop;
 * nothing here is shared between threads.
 */
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

#include "tests/itest.h"

static const char *itest_cmd = "itest";

struct itest_opts opts = {
	.initiator = ITEST_DEFAULT_INITIATOR,
};

/* ---------------------------------------------------------------- output */

void itest_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "itest %s: FAIL: ", itest_cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(NULL);
	/* _exit: a failed test leaves libiscsi contexts behind on purpose;
	 * a leak report from a sanitizer build would only bury the message. */
	_exit(1);
}

void itest_note(const char *fmt, ...)
{
	va_list ap;

	printf("itest %s: ", itest_cmd);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static uint64_t itest_rand_state;

uint64_t itest_rand(void)
{
	/* xorshift64*: deterministic for a given -s seed, so a failure can be replayed */
	uint64_t x = itest_rand_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	itest_rand_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

double itest_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ SCSI status */

static const char *itest_status_str(int status)
{
	switch (status) {
	case SCSI_STATUS_GOOD: return "GOOD";
	case SCSI_STATUS_CHECK_CONDITION: return "CHECK CONDITION";
	case SCSI_STATUS_BUSY: return "BUSY";
	case SCSI_STATUS_RESERVATION_CONFLICT: return "RESERVATION CONFLICT";
	case SCSI_STATUS_TASK_SET_FULL: return "TASK SET FULL";
	case SCSI_STATUS_TASK_ABORTED: return "TASK ABORTED";
	case SCSI_STATUS_CANCELLED: return "CANCELLED";
	case SCSI_STATUS_ERROR: return "ERROR (transport)";
	case SCSI_STATUS_TIMEOUT: return "TIMEOUT";
	default: return "unknown status";
	}
}

/* Describe what came back for a task (NULL = the library gave up). */
const char *itest_task_str(struct iscsi_context *iscsi, struct scsi_task *task)
{
	static char buf[512];

	if (!task) {
		snprintf(buf, sizeof(buf), "no task (transport error: %s)", iscsi_get_error(iscsi));
	} else if (task->status == SCSI_STATUS_CHECK_CONDITION) {
		snprintf(buf, sizeof(buf), "CHECK CONDITION, sense key %s (0x%x), ASC/ASCQ 0x%04x %s",
			 scsi_sense_key_str(task->sense.key), task->sense.key,
			 task->sense.ascq, scsi_sense_ascq_str(task->sense.ascq));
	} else {
		snprintf(buf, sizeof(buf), "status %s (0x%x)%s%s", itest_status_str(task->status),
			 task->status, task->status == SCSI_STATUS_ERROR ? ": " : "",
			 task->status == SCSI_STATUS_ERROR ? iscsi_get_error(iscsi) : "");
	}
	return buf;
}

void itest_expect_good(struct iscsi_context *iscsi, struct scsi_task *task, const char *what)
{
	if (!task || task->status != SCSI_STATUS_GOOD)
		itest_fail("%s: expected GOOD, got %s", what, itest_task_str(iscsi, task));
}

static void itest_expect_sense(struct iscsi_context *iscsi, struct scsi_task *task,
			       int key, int ascq, const char *what)
{
	if (!task || task->status != SCSI_STATUS_CHECK_CONDITION ||
	    (int)task->sense.key != key || task->sense.ascq != ascq)
		itest_fail("%s: expected CHECK CONDITION %s ASC/ASCQ 0x%04x (%s), got %s", what,
			   scsi_sense_key_str(key), ascq, scsi_sense_ascq_str(ascq),
			   itest_task_str(iscsi, task));
}

/* ------------------------------------------------------------- sessions */

static struct iscsi_context *itest_context(const char *initiator, const char *url_str,
					   struct iscsi_url **url, int mode)
{
	struct iscsi_context *iscsi = iscsi_create_context(initiator);

	CHECK(iscsi, "iscsi_create_context failed");
	*url = iscsi_parse_full_url(iscsi, url_str);
	CHECK(*url, "cannot parse URL %s: %s", url_str, iscsi_get_error(iscsi));
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_targetname(iscsi, (*url)->target);
	iscsi_set_header_digest(iscsi, opts.header_digest ? ISCSI_HEADER_DIGEST_CRC32C
							  : ISCSI_HEADER_DIGEST_NONE_CRC32C);
	iscsi_set_noautoreconnect(iscsi, 1);
	iscsi_set_timeout(iscsi, 30);
	if (mode == ITEST_R2T_ONLY) {
		iscsi_set_immediate_data(iscsi, ISCSI_IMMEDIATE_DATA_NO);
		iscsi_set_initial_r2t(iscsi, ISCSI_INITIAL_R2T_YES);
	}
	if ((*url)->user[0])
		iscsi_set_initiator_username_pwd(iscsi, (*url)->user, (*url)->passwd);
	if (opts.mutual) {
		char user[256], *pct;

		snprintf(user, sizeof(user), "%s", opts.mutual);
		pct = strchr(user, '%');
		CHECK(pct, "-T wants user%%secret");
		*pct = '\0';
		iscsi_set_target_username_pwd(iscsi, user, pct + 1);
	}
	return iscsi;
}

/* Full connect; returns 0, or -1 with the library's reason in err. */
static int itest_try_open(struct itest_conn *c, const char *url_str, const char *initiator,
			  int mode, char *err, size_t errlen)
{
	c->iscsi = itest_context(initiator, url_str, &c->url, mode);
	c->lun = c->url->lun;
	if (iscsi_full_connect_sync(c->iscsi, c->url->portal, c->lun) != 0) {
		snprintf(err, errlen, "%s", iscsi_get_error(c->iscsi));
		iscsi_destroy_url(c->url);
		iscsi_destroy_context(c->iscsi);
		c->iscsi = NULL;
		c->url = NULL;
		return -1;
	}
	return 0;
}

/* SAM: a new I_T nexus starts with unit attentions (power on, reset,
 * parameters changed...). Consume them with TEST UNIT READY until GOOD;
 * anything but UNIT ATTENTION on the way is a failure. Returns how many
 * unit attentions were seen. */
int itest_clear_ua(struct itest_conn *c)
{
	int n;

	for (n = 0; n < 16; n++) {
		struct scsi_task *t = iscsi_testunitready_sync(c->iscsi, c->lun);

		if (t && t->status == SCSI_STATUS_GOOD) {
			scsi_free_scsi_task(t);
			return n;
		}
		if (!t || t->status != SCSI_STATUS_CHECK_CONDITION ||
		    t->sense.key != SCSI_SENSE_UNIT_ATTENTION)
			itest_fail("TEST UNIT READY: expected GOOD or UNIT ATTENTION, got %s",
				   itest_task_str(c->iscsi, t));
		if (opts.verbose)
			itest_note("cleared unit attention 0x%04x %s", t->sense.ascq,
				   scsi_sense_ascq_str(t->sense.ascq));
		scsi_free_scsi_task(t);
	}
	itest_fail("TEST UNIT READY still reports UNIT ATTENTION after 16 tries");
}

void itest_open(struct itest_conn *c, const char *url_str, int mode)
{
	char err[512];

	if (itest_try_open(c, url_str, opts.initiator, mode, err, sizeof(err)) != 0)
		itest_fail("login to %s failed: %s", url_str, err);
	itest_clear_ua(c);
}

void itest_close(struct itest_conn *c)
{
	if (!c->iscsi)
		return;
	if (iscsi_logout_sync(c->iscsi) != 0)
		itest_fail("logout failed: %s", iscsi_get_error(c->iscsi));
	iscsi_destroy_url(c->url);
	iscsi_destroy_context(c->iscsi);
	c->iscsi = NULL;
	c->url = NULL;
}

/* --------------------------------------------------------- LUN geometry */

static bool itest_vpd_supported(struct itest_conn *c, int page)
{
	struct scsi_task *t = iscsi_inquiry_sync(c->iscsi, c->lun, 1,
						 SCSI_INQUIRY_PAGECODE_SUPPORTED_VPD_PAGES, 255);
	struct scsi_inquiry_supported_pages *sp;
	bool found = false;

	itest_expect_good(c->iscsi, t, "INQUIRY VPD 0x00 (supported pages)");
	sp = scsi_datain_unmarshall(t);
	CHECK(sp, "cannot decode VPD 0x00");
	for (int i = 0; i < sp->num_pages; i++)
		if (sp->pages[i] == page)
			found = true;
	scsi_free_scsi_task(t);
	return found;
}

void itest_geometry(struct itest_conn *c, struct itest_geom *g)
{
	struct scsi_task *t = iscsi_readcapacity16_sync(c->iscsi, c->lun);
	struct scsi_readcapacity16 *rc;

	itest_expect_good(c->iscsi, t, "READ CAPACITY(16)");
	rc = scsi_datain_unmarshall(t);
	CHECK(rc, "cannot decode READ CAPACITY(16) data");
	g->nblocks = rc->returned_lba + 1;
	g->bs = rc->block_length;
	scsi_free_scsi_task(t);
	CHECK(g->bs == 512 || g->bs == 1024 || g->bs == 2048 || g->bs == 4096,
	      "READ CAPACITY(16) block length %u is not 512..4096", g->bs);
	g->max_xfer_blocks = 0;
	g->atomic_gran = g->atomic_max = 0;
	if (itest_vpd_supported(c, SCSI_INQUIRY_PAGECODE_BLOCK_LIMITS)) {
		struct scsi_inquiry_block_limits *bl;

		t = iscsi_inquiry_sync(c->iscsi, c->lun, 1, SCSI_INQUIRY_PAGECODE_BLOCK_LIMITS, 255);
		itest_expect_good(c->iscsi, t, "INQUIRY VPD 0xB0");
		bl = scsi_datain_unmarshall(t);
		CHECK(bl, "cannot decode VPD 0xB0");
		g->max_xfer_blocks = bl->max_xfer_len;
		g->atomic_gran = bl->atomic_gran;
		g->atomic_max = bl->max_atomic_xfer_len;
		scsi_free_scsi_task(t);
	}
}

/* ------------------------------------------------------------- patterns */

/* Every block carries its LBA and a seed in its first 16 bytes, then
 * pseudo-random bytes derived from both: a block that lands at the wrong
 * place or comes from the wrong writer is told apart from garbage. */
void itest_fill(unsigned char *buf, uint64_t lba, uint32_t nblocks, uint32_t bs, uint64_t seed)
{
	for (uint32_t b = 0; b < nblocks; b++) {
		unsigned char *p = buf + (size_t)b * bs;
		uint64_t x = ((lba + b) * 0x9E3779B97F4A7C15ULL) ^ seed ^ 0xD1B54A32D192ED03ULL;

		scsi_set_uint64(p, lba + b);
		scsi_set_uint64(p + 8, seed);
		for (uint32_t i = 16; i < bs; i += 8) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			uint64_t v = x * 0x2545F4914F6CDD1DULL;
			memcpy(p + i, &v, bs - i < 8 ? bs - i : 8);
		}
	}
}

/* Compare; on mismatch fail with the first differing block and what it holds. */
static void itest_verify(const unsigned char *got, size_t gotlen, uint64_t lba, uint32_t nblocks,
			 uint32_t bs, uint64_t seed, const char *what)
{
	size_t len = (size_t)nblocks * bs;
	unsigned char *want;

	CHECK(got, "%s: no data returned", what);
	CHECK(gotlen == len, "%s: expected %zu bytes of data, got %zu", what, len, gotlen);
	want = malloc(len);
	CHECK(want, "out of memory");
	itest_fill(want, lba, nblocks, bs, seed);
	for (uint32_t b = 0; b < nblocks; b++) {
		size_t off = (size_t)b * bs;

		if (memcmp(got + off, want + off, bs) == 0)
			continue;
		for (uint32_t i = 0; i < bs; i++)
			if (got[off + i] != want[off + i])
				itest_fail("%s: data mismatch at LBA %" PRIu64 " byte %u: block holds "
					   "tag lba=%" PRIu64 " seed=0x%" PRIx64 ", expected lba=%" PRIu64
					   " seed=0x%" PRIx64, what, lba + b, i,
					   scsi_get_uint64(got + off), scsi_get_uint64(got + off + 8),
					   lba + b, seed);
	}
	free(want);
}

/* ------------------------------------------------------------ discovery */

static int itest_discovery(int argc, char **argv)
{
	struct iscsi_context *iscsi;
	struct iscsi_url *url;
	struct iscsi_discovery_address *da, *d;
	int missing = 0, ntargets = 0;

	CHECK(argc >= 2, "usage: discovery PORTAL-URL IQN...");
	iscsi = iscsi_create_context(opts.initiator);
	CHECK(iscsi, "iscsi_create_context failed");
	url = iscsi_parse_portal_url(iscsi, argv[0]);
	CHECK(url, "cannot parse portal URL %s: %s", argv[0], iscsi_get_error(iscsi));
	iscsi_set_session_type(iscsi, ISCSI_SESSION_DISCOVERY);
	iscsi_set_timeout(iscsi, 30);
	if (url->user[0])
		iscsi_set_initiator_username_pwd(iscsi, url->user, url->passwd);
	CHECK(iscsi_connect_sync(iscsi, url->portal) == 0, "connect to %s failed: %s",
	      url->portal, iscsi_get_error(iscsi));
	CHECK(iscsi_login_sync(iscsi) == 0, "discovery login failed: %s", iscsi_get_error(iscsi));
	da = iscsi_discovery_sync(iscsi);
	CHECK(da, "SendTargets=All failed: %s", iscsi_get_error(iscsi));

	for (d = da; d; d = d->next) {
		ntargets++;
		CHECK(d->target_name && strncmp(d->target_name, "iqn.", 4) == 0,
		      "SendTargets returned a TargetName that is not an iqn: %s",
		      d->target_name ? d->target_name : "(null)");
		CHECK(d->portals, "target %s listed without a TargetAddress", d->target_name);
		for (struct iscsi_target_portal *p = d->portals; p; p = p->next) {
			const char *comma = strrchr(p->portal, ',');

			/* RFC 7143 13.8: TargetAddress=domainname[:port][,portal-group-tag] */
			CHECK(comma && comma[1], "TargetAddress %s of %s has no portal group tag",
			      p->portal, d->target_name);
			if (opts.verbose)
				itest_note("%s at %s", d->target_name, p->portal);
		}
	}
	for (int i = 1; i < argc; i++) {
		bool found = false, portal_ok = false;

		for (d = da; d; d = d->next) {
			if (strcmp(d->target_name, argv[i]) != 0)
				continue;
			found = true;
			for (struct iscsi_target_portal *p = d->portals; p; p = p->next)
				if (strncmp(p->portal, url->portal, strlen(url->portal)) == 0 &&
				    p->portal[strlen(url->portal)] == ',')
					portal_ok = true;
		}
		if (!found) {
			fprintf(stderr, "itest discovery: %s is not listed\n", argv[i]);
			missing++;
		} else if (!portal_ok) {
			fprintf(stderr, "itest discovery: %s is not listed at portal %s\n",
				argv[i], url->portal);
			missing++;
		}
	}
	iscsi_free_discovery_data(iscsi, da);
	CHECK(missing == 0, "%d expected target(s) missing from SendTargets", missing);
	CHECK(iscsi_logout_sync(iscsi) == 0, "discovery logout failed: %s", iscsi_get_error(iscsi));
	iscsi_destroy_url(url);
	iscsi_destroy_context(iscsi);
	itest_note("ok: %d target(s) listed, all %d expected present", ntargets, argc - 1);
	return 0;
}

/* ---------------------------------------------------------------- login */

static int itest_login(int argc, char **argv)
{
	struct itest_conn c;
	struct scsi_task *t;
	struct scsi_reportluns_list *rl;
	bool listed = false;
	char err[512];
	int uas;

	CHECK(argc == 1, "usage: login URL");
	if (itest_try_open(&c, argv[0], opts.initiator, ITEST_R2T_DEFAULT, err, sizeof(err)) != 0)
		itest_fail("login to %s failed: %s", argv[0], err);
	CHECK(iscsi_is_logged_in(c.iscsi), "library reports not logged in after full connect");
	uas = itest_clear_ua(&c);

	/* SPC-4 6.33: REPORT LUNS must list the LUN we are on, and is allowed
	 * even with a unit attention pending (we cleared them anyway). */
	t = iscsi_reportluns_sync(c.iscsi, 0, 16384);
	itest_expect_good(c.iscsi, t, "REPORT LUNS");
	rl = scsi_datain_unmarshall(t);
	CHECK(rl, "cannot decode REPORT LUNS data");
	CHECK(rl->num >= 1, "REPORT LUNS lists no LUN");
	for (uint32_t i = 0; i < rl->num; i++)
		if (rl->luns[i] == c.lun)
			listed = true;
	CHECK(listed, "REPORT LUNS does not list LUN %d", c.lun);
	itest_note("REPORT LUNS lists %u LUN(s)", rl->num);
	scsi_free_scsi_task(t);

	/* Three more TURs in a row must all be GOOD: no UA may come back. */
	for (int i = 0; i < 3; i++) {
		t = iscsi_testunitready_sync(c.iscsi, c.lun);
		itest_expect_good(c.iscsi, t, "TEST UNIT READY after clearing unit attentions");
		scsi_free_scsi_task(t);
	}
	/* A NOP-Out ping must be answered. */
	itest_close(&c);
	itest_note("ok: logged in, %d unit attention(s) cleared, logged out", uas);
	return 0;
}

/* ------------------------------------------------------------------ inq */

static int itest_inq(int argc, char **argv)
{
	struct itest_conn c, c2;
	struct scsi_task *t;
	struct scsi_inquiry_standard *std;
	struct scsi_inquiry_supported_pages *sp;
	struct scsi_inquiry_unit_serial_number *usn;
	struct scsi_inquiry_device_identification *di;
	char serial[256];
	bool has80 = false, has83 = false, naa = false;
	int unsupported = -1;

	CHECK(argc == 1, "usage: inq URL");
	itest_open(&c, argv[0], ITEST_R2T_DEFAULT);

	/* SPC-4 6.6.2 standard INQUIRY data */
	t = iscsi_inquiry_sync(c.iscsi, c.lun, 0, 0, 255);
	itest_expect_good(c.iscsi, t, "standard INQUIRY");
	CHECK(t->datain.size >= 36, "standard INQUIRY returned %d bytes, need >= 36", t->datain.size);
	std = scsi_datain_unmarshall(t);
	CHECK(std, "cannot decode standard INQUIRY data");
	CHECK(std->qualifier == 0, "peripheral qualifier %d, expected 0 (connected)", std->qualifier);
	CHECK(std->device_type == SCSI_INQUIRY_PERIPHERAL_DEVICE_TYPE_DIRECT_ACCESS,
	      "peripheral device type %d, expected 0 (direct access block device)", std->device_type);
	CHECK(std->version >= 5, "VERSION %d, expected >= 5 (SPC-3 or later)", std->version);
	CHECK(std->response_data_format == 2, "RESPONSE DATA FORMAT %d, expected 2",
	      std->response_data_format);
	CHECK(std->additional_length + 5 >= 36, "ADDITIONAL LENGTH %d too short",
	      std->additional_length);
	CHECK(std->cmdque, "CMDQUE is 0: command queuing must be reported for iSCSI");
	CHECK(std->vendor_identification[0] && std->vendor_identification[0] != ' ',
	      "T10 VENDOR IDENTIFICATION is empty");
	CHECK(std->product_identification[0] && std->product_identification[0] != ' ',
	      "PRODUCT IDENTIFICATION is empty");
	for (const unsigned char *p = t->datain.data + 8; p < t->datain.data + 36; p++)
		CHECK(*p >= 0x20 && *p < 0x7f, "INQUIRY bytes 8..35 must be printable ASCII "
		      "(byte %ld is 0x%02x)", (long)(p - t->datain.data), *p);
	itest_note("vendor '%s' product '%s' revision '%s' version %d",
		   std->vendor_identification, std->product_identification,
		   std->product_revision_level, std->version);
	scsi_free_scsi_task(t);

	/* A short allocation length truncates, it is not an error (SPC-4 4.2.5.6). */
	t = iscsi_inquiry_sync(c.iscsi, c.lun, 0, 0, 5);
	itest_expect_good(c.iscsi, t, "standard INQUIRY with ALLOCATION LENGTH 5");
	CHECK(t->datain.size == 5, "INQUIRY with ALLOCATION LENGTH 5 returned %d bytes",
	      t->datain.size);
	scsi_free_scsi_task(t);

	/* SPC-4 7.8.15 supported VPD pages */
	t = iscsi_inquiry_sync(c.iscsi, c.lun, 1, SCSI_INQUIRY_PAGECODE_SUPPORTED_VPD_PAGES, 255);
	itest_expect_good(c.iscsi, t, "INQUIRY VPD 0x00");
	sp = scsi_datain_unmarshall(t);
	CHECK(sp, "cannot decode VPD 0x00");
	CHECK(sp->pagecode == 0, "VPD 0x00 answered with page code 0x%02x", sp->pagecode);
	for (int i = 0; i < sp->num_pages; i++) {
		if (i > 0)
			CHECK(sp->pages[i] > sp->pages[i - 1],
			      "supported VPD pages are not in ascending order");
		if (sp->pages[i] == 0x80)
			has80 = true;
		if (sp->pages[i] == 0x83)
			has83 = true;
	}
	CHECK(sp->num_pages >= 1 && sp->pages[0] == 0, "VPD 0x00 does not list itself");
	CHECK(has80, "VPD 0x80 (unit serial number) not listed");
	CHECK(has83, "VPD 0x83 (device identification) not listed");
	/* pick a page code that is not listed to test the error path */
	for (int pc = 0xC7; pc < 0xFF && unsupported < 0; pc++) {
		bool listed = false;

		for (int i = 0; i < sp->num_pages; i++)
			if (sp->pages[i] == pc)
				listed = true;
		if (!listed)
			unsupported = pc;
	}
	scsi_free_scsi_task(t);

	/* SPC-4 7.8.18 unit serial number */
	t = iscsi_inquiry_sync(c.iscsi, c.lun, 1, SCSI_INQUIRY_PAGECODE_UNIT_SERIAL_NUMBER, 255);
	itest_expect_good(c.iscsi, t, "INQUIRY VPD 0x80");
	usn = scsi_datain_unmarshall(t);
	CHECK(usn && usn->usn && usn->usn[0], "VPD 0x80 carries no serial number");
	snprintf(serial, sizeof(serial), "%s", usn->usn);
	scsi_free_scsi_task(t);

	/* SPC-4 7.8.6 device identification: ESXi needs an NAA designator for the LU */
	t = iscsi_inquiry_sync(c.iscsi, c.lun, 1, SCSI_INQUIRY_PAGECODE_DEVICE_IDENTIFICATION, 1024);
	itest_expect_good(c.iscsi, t, "INQUIRY VPD 0x83");
	di = scsi_datain_unmarshall(t);
	CHECK(di, "cannot decode VPD 0x83");
	for (struct scsi_inquiry_device_designator *d = di->designators; d; d = d->next) {
		if (d->association == SCSI_ASSOCIATION_LOGICAL_UNIT &&
		    d->designator_type == SCSI_DESIGNATOR_TYPE_NAA) {
			CHECK(d->code_set == SCSI_CODESET_BINARY, "NAA designator is not binary");
			CHECK(d->designator_length == 8 || d->designator_length == 16,
			      "NAA designator length %d, expected 8 or 16", d->designator_length);
			naa = true;
		}
	}
	CHECK(naa, "VPD 0x83 has no NAA designator associated with the logical unit");
	scsi_free_scsi_task(t);

	/* SPC-4 6.6.1: an unsupported VPD page is INVALID FIELD IN CDB */
	if (unsupported > 0) {
		t = iscsi_inquiry_sync(c.iscsi, c.lun, 1, unsupported, 255);
		itest_expect_sense(c.iscsi, t, SCSI_SENSE_ILLEGAL_REQUEST,
				   SCSI_SENSE_ASCQ_INVALID_FIELD_IN_CDB, "INQUIRY of an unlisted VPD page");
		scsi_free_scsi_task(t);
	}
	/* EVPD=0 with a page code is INVALID FIELD IN CDB as well */
	t = iscsi_inquiry_sync(c.iscsi, c.lun, 0, 0x80, 255);
	itest_expect_sense(c.iscsi, t, SCSI_SENSE_ILLEGAL_REQUEST,
			   SCSI_SENSE_ASCQ_INVALID_FIELD_IN_CDB, "INQUIRY EVPD=0 PAGE CODE=0x80");
	scsi_free_scsi_task(t);

	/* the serial number is a property of the LU, not of the session */
	itest_open(&c2, argv[0], ITEST_R2T_DEFAULT);
	t = iscsi_inquiry_sync(c2.iscsi, c2.lun, 1, SCSI_INQUIRY_PAGECODE_UNIT_SERIAL_NUMBER, 255);
	itest_expect_good(c2.iscsi, t, "INQUIRY VPD 0x80 (second session)");
	usn = scsi_datain_unmarshall(t);
	CHECK(usn && usn->usn && strcmp(usn->usn, serial) == 0,
	      "unit serial number differs between sessions: '%s' vs '%s'", serial,
	      usn && usn->usn ? usn->usn : "(none)");
	scsi_free_scsi_task(t);
	itest_close(&c2);
	itest_close(&c);
	itest_note("ok: serial '%s', NAA designator present", serial);
	return 0;
}

/* -------------------------------------------------------------- readcap */

static int itest_readcap(int argc, char **argv)
{
	struct itest_conn c;
	struct scsi_task *t;
	struct scsi_readcapacity10 *rc10;
	struct itest_geom g;
	uint64_t want_bytes = 0;
	uint32_t want_bs = 0, rc10_lba, rc10_bs;

	CHECK(argc >= 1 && argc <= 3, "usage: readcap URL [BYTES [BLOCK_SIZE]]");
	if (argc >= 2)
		want_bytes = strtoull(argv[1], NULL, 0);
	if (argc >= 3)
		want_bs = (uint32_t)strtoul(argv[2], NULL, 0);
	itest_open(&c, argv[0], ITEST_R2T_DEFAULT);
	itest_geometry(&c, &g);

	/* SBC-4 5.16 READ CAPACITY(10) */
	t = iscsi_readcapacity10_sync(c.iscsi, c.lun, 0, 0);
	itest_expect_good(c.iscsi, t, "READ CAPACITY(10)");
	rc10 = scsi_datain_unmarshall(t);
	CHECK(rc10, "cannot decode READ CAPACITY(10)");
	rc10_lba = rc10->lba;
	rc10_bs = rc10->block_size;
	scsi_free_scsi_task(t);
	CHECK(rc10_bs == g.bs, "READ CAPACITY(10) block length %u != READ CAPACITY(16) %u",
	      rc10_bs, g.bs);
	if (g.nblocks - 1 >= 0xffffffffULL)
		CHECK(rc10_lba == 0xffffffffU, "READ CAPACITY(10) must return 0xFFFFFFFF for a LUN "
		      "beyond 2 TiB blocks, got 0x%x", rc10_lba);
	else
		CHECK(rc10_lba == g.nblocks - 1, "READ CAPACITY(10) last LBA %u != "
		      "READ CAPACITY(16) %" PRIu64, rc10_lba, g.nblocks - 1);
	if (want_bytes)
		CHECK(g.nblocks * g.bs == want_bytes, "capacity %" PRIu64 " bytes, expected %" PRIu64,
		      g.nblocks * g.bs, want_bytes);
	if (want_bs)
		CHECK(g.bs == want_bs, "block size %u, expected %u", g.bs, want_bs);

	/* the last block is readable; one past it is LBA OUT OF RANGE (SBC-4 4.5) */
	t = iscsi_read16_sync(c.iscsi, c.lun, g.nblocks - 1, g.bs, g.bs, 0, 0, 0, 0, 0);
	itest_expect_good(c.iscsi, t, "READ(16) of the last LBA");
	scsi_free_scsi_task(t);
	t = iscsi_read16_sync(c.iscsi, c.lun, g.nblocks, g.bs, g.bs, 0, 0, 0, 0, 0);
	itest_expect_sense(c.iscsi, t, SCSI_SENSE_ILLEGAL_REQUEST, SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE,
			   "READ(16) one block past the end");
	scsi_free_scsi_task(t);
	t = iscsi_read16_sync(c.iscsi, c.lun, g.nblocks - 1, 2 * g.bs, g.bs, 0, 0, 0, 0, 0);
	itest_expect_sense(c.iscsi, t, SCSI_SENSE_ILLEGAL_REQUEST, SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE,
			   "READ(16) straddling the end");
	scsi_free_scsi_task(t);
	/* an LBA that wraps a 64-bit sum must not slip through the range check */
	t = iscsi_read16_sync(c.iscsi, c.lun, UINT64_MAX, g.bs, g.bs, 0, 0, 0, 0, 0);
	itest_expect_sense(c.iscsi, t, SCSI_SENSE_ILLEGAL_REQUEST, SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE,
			   "READ(16) at LBA 2^64-1");
	scsi_free_scsi_task(t);
	itest_close(&c);
	itest_note("ok: %" PRIu64 " blocks of %u bytes (%" PRIu64 " bytes), max transfer %u blocks",
		   g.nblocks, g.bs, g.nblocks * g.bs, g.max_xfer_blocks);
	return 0;
}

/* ------------------------------------------------------------------- rw */

enum itest_op { OP_10, OP_12, OP_16 };

static struct scsi_task *itest_write(struct itest_conn *c, enum itest_op op, uint64_t lba,
				     unsigned char *buf, uint32_t len, uint32_t bs, int fua)
{
	switch (op) {
	case OP_10: return iscsi_write10_sync(c->iscsi, c->lun, (uint32_t)lba, buf, len, bs, 0, 0, fua, 0, 0);
	case OP_12: return iscsi_write12_sync(c->iscsi, c->lun, (uint32_t)lba, buf, len, bs, 0, 0, fua, 0, 0);
	default:    return iscsi_write16_sync(c->iscsi, c->lun, lba, buf, len, bs, 0, 0, fua, 0, 0);
	}
}

static struct scsi_task *itest_read(struct itest_conn *c, enum itest_op op, uint64_t lba,
				    uint32_t len, uint32_t bs)
{
	switch (op) {
	case OP_10: return iscsi_read10_sync(c->iscsi, c->lun, (uint32_t)lba, len, bs, 0, 0, 0, 0, 0);
	case OP_12: return iscsi_read12_sync(c->iscsi, c->lun, (uint32_t)lba, len, bs, 0, 0, 0, 0, 0);
	default:    return iscsi_read16_sync(c->iscsi, c->lun, lba, len, bs, 0, 0, 0, 0, 0);
	}
}

static const char *const itest_op_name[] = { "10", "12", "16" };

struct itest_extent {
	uint64_t lba;
	uint32_t nblocks;
	uint64_t seed;
};

/* Write one extent with op, read it back with rop, compare. */
static void itest_write_verify(struct itest_conn *c, const struct itest_geom *g, enum itest_op op,
			       enum itest_op rop, const struct itest_extent *e, int fua,
			       const char *who)
{
	size_t len = (size_t)e->nblocks * g->bs;
	unsigned char *buf = malloc(len);
	struct scsi_task *t;
	char what[160];

	CHECK(buf, "out of memory");
	itest_fill(buf, e->lba, e->nblocks, g->bs, e->seed);
	snprintf(what, sizeof(what), "%s WRITE(%s) of %u blocks (%zu bytes) at LBA %" PRIu64 "%s",
		 who, itest_op_name[op], e->nblocks, len, e->lba, fua ? " FUA" : "");
	t = itest_write(c, op, e->lba, buf, (uint32_t)len, g->bs, fua);
	itest_expect_good(c->iscsi, t, what);
	CHECK(t->residual_status == SCSI_RESIDUAL_NO_RESIDUAL,
	      "%s: residual %zu reported for a complete write", what, t->residual);
	scsi_free_scsi_task(t);
	free(buf);

	snprintf(what, sizeof(what), "%s READ(%s) of %u blocks at LBA %" PRIu64, who,
		 itest_op_name[rop], e->nblocks, e->lba);
	t = itest_read(c, rop, e->lba, (uint32_t)len, g->bs);
	itest_expect_good(c->iscsi, t, what);
	itest_verify(t->datain.data, (size_t)t->datain.size, e->lba, e->nblocks, g->bs, e->seed, what);
	scsi_free_scsi_task(t);
}

static void itest_read_verify(struct itest_conn *c, const struct itest_geom *g, enum itest_op rop,
			      const struct itest_extent *e, const char *who)
{
	char what[160];
	struct scsi_task *t;

	snprintf(what, sizeof(what), "%s READ(%s) of %u blocks at LBA %" PRIu64, who,
		 itest_op_name[rop], e->nblocks, e->lba);
	t = itest_read(c, rop, e->lba, e->nblocks * g->bs, g->bs);
	itest_expect_good(c->iscsi, t, what);
	itest_verify(t->datain.data, (size_t)t->datain.size, e->lba, e->nblocks, g->bs, e->seed, what);
	scsi_free_scsi_task(t);
}

static int itest_rw(int argc, char **argv)
{
	/* Sizes around the burst limits libiscsi negotiates (FirstBurstLength
	 * 64 KiB after the target's default, MaxBurstLength 256 KiB): a
	 * transfer larger than FirstBurstLength needs R2T for the rest, one
	 * larger than MaxBurstLength needs several R2Ts. */
	static const uint32_t sizes[] = {
		512, 4096, 65536, 65536 + 4096, 262144, 262144 + 4096, 1048576, 4194304,
	};
	enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };
	struct itest_conn a, b;
	struct itest_geom g;
	struct itest_extent ext[3 * NSIZES], extb[NSIZES];
	unsigned nslots, next = 0, n = 0, nb = 0;
	uint32_t slot_blocks, max_blocks;
	unsigned *perm;
	struct scsi_task *t;
	unsigned char *buf;

	CHECK(argc == 1, "usage: rw URL");
	itest_open(&a, argv[0], ITEST_R2T_DEFAULT);
	itest_geometry(&a, &g);

	/* Slots: disjoint regions, one per extent, each as large as the biggest
	 * transfer, so no write overwrites another one still to be verified. */
	max_blocks = 4194304 / g.bs;
	if (g.max_xfer_blocks && g.max_xfer_blocks < max_blocks)
		max_blocks = g.max_xfer_blocks;
	while (max_blocks > 1 && g.nblocks / max_blocks < 3 * NSIZES + NSIZES + 2)
		max_blocks /= 2;
	slot_blocks = max_blocks;
	nslots = (unsigned)(g.nblocks / slot_blocks);
	CHECK(nslots >= 4 * NSIZES, "LUN of %" PRIu64 " blocks is too small for the rw test",
	      g.nblocks);
	if (nslots > 65536)
		nslots = 65536;
	perm = malloc(nslots * sizeof(*perm));
	CHECK(perm, "out of memory");
	for (unsigned i = 0; i < nslots; i++)
		perm[i] = i;
	for (unsigned i = nslots - 1; i > 0; i--) {
		unsigned j = (unsigned)(itest_rand() % (i + 1)), tmp = perm[i];

		perm[i] = perm[j];
		perm[j] = tmp;
	}
	itest_note("LUN: %" PRIu64 " blocks of %u, max transfer %u blocks; slots of %u blocks",
		   g.nblocks, g.bs, g.max_xfer_blocks, slot_blocks);

	/* Session A, immediate data allowed: each size with WRITE(10/12/16),
	 * read back with another READ variant. */
	for (unsigned s = 0; s < NSIZES; s++) {
		uint32_t nblk = sizes[s] < g.bs ? 1 : sizes[s] / g.bs;

		if (nblk > max_blocks) {
			itest_note("size %u bytes exceeds the usable transfer length, skipped", sizes[s]);
			continue;
		}
		for (int op = OP_10; op <= OP_16; op++) {
			struct itest_extent *e = &ext[n++];
			uint64_t base = (uint64_t)perm[next++] * slot_blocks;

			e->nblocks = nblk;
			e->lba = base + itest_rand() % (slot_blocks - nblk + 1);
			e->seed = itest_rand();
			itest_write_verify(&a, &g, (enum itest_op)op, (enum itest_op)((op + 2) % 3), e,
					   op == OP_16, "session A");
		}
	}
	itest_note("session A: %u extents written and verified (immediate data + R2T)", n);

	/* Session B: no immediate data, InitialR2T=Yes, so every Data-Out is
	 * solicited. It must see what A wrote, and A must see what B writes. */
	itest_open(&b, argv[0], ITEST_R2T_ONLY);
	for (unsigned i = 0; i < n; i++)
		itest_read_verify(&b, &g, (enum itest_op)(i % 3), &ext[i], "session B (A's data)");
	for (unsigned s = 0; s < NSIZES; s++) {
		uint32_t nblk = sizes[s] < g.bs ? 1 : sizes[s] / g.bs;
		struct itest_extent *e;

		if (nblk > max_blocks)
			continue;
		e = &extb[nb++];
		e->nblocks = nblk;
		e->lba = (uint64_t)perm[next++] * slot_blocks + itest_rand() % (slot_blocks - nblk + 1);
		e->seed = itest_rand();
		itest_write_verify(&b, &g, (enum itest_op)(s % 3), OP_16, e, 0, "session B");
	}
	for (unsigned i = 0; i < nb; i++)
		itest_read_verify(&a, &g, (enum itest_op)(i % 3), &extb[i], "session A (B's data)");
	itest_note("session B (InitialR2T=Yes, no immediate data): read A's %u extents, "
		   "wrote %u that A read back", n, nb);

	/* Overwrite in place: the second write must win completely. */
	ext[0].seed ^= 0xfeedfacecafebeefULL;
	itest_write_verify(&a, &g, OP_16, OP_10, &ext[0], 0, "session A overwrite");
	itest_read_verify(&b, &g, OP_12, &ext[0], "session B (overwritten data)");

	/* The last blocks of the LUN */
	{
		struct itest_extent e = { .lba = g.nblocks - 8, .nblocks = 8, .seed = itest_rand() };

		itest_write_verify(&a, &g, OP_16, OP_16, &e, 0, "session A at end of LUN");
	}

	/* SBC-4 4.5: a write past the end is LBA OUT OF RANGE and changes nothing */
	buf = calloc(2, g.bs);
	CHECK(buf, "out of memory");
	t = iscsi_write16_sync(a.iscsi, a.lun, g.nblocks - 1, buf, 2 * g.bs, g.bs, 0, 0, 0, 0, 0);
	itest_expect_sense(a.iscsi, t, SCSI_SENSE_ILLEGAL_REQUEST, SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE,
			   "WRITE(16) straddling the end of the LUN");
	scsi_free_scsi_task(t);
	if (g.nblocks - 1 <= 0xffffffffULL) {
		t = iscsi_write10_sync(a.iscsi, a.lun, (uint32_t)g.nblocks, buf, g.bs, g.bs, 0, 0, 0, 0, 0);
		itest_expect_sense(a.iscsi, t, SCSI_SENSE_ILLEGAL_REQUEST,
				   SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE, "WRITE(10) past the end of the LUN");
		scsi_free_scsi_task(t);
	}
	free(buf);
	{
		/* still the data of the last good write */
		t = iscsi_read16_sync(a.iscsi, a.lun, g.nblocks - 1, g.bs, g.bs, 0, 0, 0, 0, 0);
		itest_expect_good(a.iscsi, t, "READ(16) of the last block");
		CHECK(t->datain.size == (int)g.bs && scsi_get_uint64(t->datain.data) == g.nblocks - 1,
		      "the last block was changed by a rejected write");
		scsi_free_scsi_task(t);
	}

	/* A zero-length transfer is not an error (SBC-4 5.42: no data transferred) */
	t = iscsi_write10_sync(a.iscsi, a.lun, 0, NULL, 0, g.bs, 0, 0, 0, 0, 0);
	itest_expect_good(a.iscsi, t, "WRITE(10) of 0 blocks");
	scsi_free_scsi_task(t);
	t = iscsi_read10_sync(a.iscsi, a.lun, 0, 0, g.bs, 0, 0, 0, 0, 0);
	itest_expect_good(a.iscsi, t, "READ(10) of 0 blocks");
	scsi_free_scsi_task(t);

	/* SYNCHRONIZE CACHE must succeed on a writable LUN */
	t = iscsi_synchronizecache10_sync(a.iscsi, a.lun, 0, 0, 0, 0);
	itest_expect_good(a.iscsi, t, "SYNCHRONIZE CACHE(10)");
	scsi_free_scsi_task(t);

	itest_close(&b);
	itest_close(&a);
	free(perm);
	itest_note("ok");
	return 0;
}

/* ------------------------------------------------------ mark / check-mark */

/* Extents derived from SEED alone, one in each sixteenth of the LUN, so a
 * later run (after a daemon restart) can find and check them. */
static void itest_mark_extents(const struct itest_geom *g, uint64_t seed, struct itest_extent *e, int n)
{
	uint64_t part = g->nblocks / (uint64_t)n;

	itest_rand_state = seed ? seed : 1;
	for (int i = 0; i < n; i++) {
		e[i].nblocks = 8 + (uint32_t)(itest_rand() % 57);
		if (e[i].nblocks > part)
			e[i].nblocks = (uint32_t)part;
		e[i].lba = (uint64_t)i * part + itest_rand() % (part - e[i].nblocks + 1);
		e[i].seed = seed + (uint64_t)i;
	}
}

static int itest_mark(int argc, char **argv, bool check)
{
	struct itest_conn c;
	struct itest_geom g;
	struct itest_extent e[16];
	uint64_t seed;
	struct scsi_task *t;

	CHECK(argc == 2, "usage: %s URL SEED", check ? "check-mark" : "mark");
	seed = strtoull(argv[1], NULL, 0);
	itest_open(&c, argv[0], ITEST_R2T_DEFAULT);
	itest_geometry(&c, &g);
	CHECK(g.nblocks >= 16 * 8, "LUN too small");
	itest_mark_extents(&g, seed, e, 16);
	for (int i = 0; i < 16; i++) {
		if (check)
			itest_read_verify(&c, &g, (enum itest_op)(i % 3), &e[i], "check-mark");
		else
			itest_write_verify(&c, &g, (enum itest_op)(i % 3), OP_16, &e[i], i & 1, "mark");
	}
	if (!check) {
		t = iscsi_synchronizecache16_sync(c.iscsi, c.lun, 0, 0, 0, 0);
		itest_expect_good(c.iscsi, t, "SYNCHRONIZE CACHE(16)");
		scsi_free_scsi_task(t);
	}
	itest_close(&c);
	itest_note("ok: 16 extents %s", check ? "hold the marked data" : "written");
	return 0;
}

static int itest_mark_w(int argc, char **argv) { return itest_mark(argc, argv, false); }
static int itest_mark_c(int argc, char **argv) { return itest_mark(argc, argv, true); }

/* --------------------------------------------------------------- zeroed */

/* A LUN that was never written reads as zeros: first and last MiB, and a
 * MiB in the middle. */
static int itest_zeroed(int argc, char **argv)
{
	struct itest_conn c;
	struct itest_geom g;
	uint32_t nblk;
	uint64_t where[3];

	CHECK(argc == 1, "usage: zeroed URL");
	itest_open(&c, argv[0], ITEST_R2T_DEFAULT);
	itest_geometry(&c, &g);
	nblk = (uint32_t)(1048576 / g.bs);
	if (nblk > g.nblocks)
		nblk = (uint32_t)g.nblocks;
	if (g.max_xfer_blocks && nblk > g.max_xfer_blocks)
		nblk = g.max_xfer_blocks;
	where[0] = 0;
	where[1] = (g.nblocks / 2) - (g.nblocks / 2) % nblk;
	where[2] = g.nblocks - nblk;
	for (int i = 0; i < 3; i++) {
		struct scsi_task *t = iscsi_read16_sync(c.iscsi, c.lun, where[i], nblk * g.bs, g.bs,
						      0, 0, 0, 0, 0);

		itest_expect_good(c.iscsi, t, "READ(16)");
		CHECK(t->datain.size == (int)(nblk * g.bs), "READ(16) returned %d bytes, expected %u",
		      t->datain.size, nblk * g.bs);
		for (int j = 0; j < t->datain.size; j++)
			CHECK(t->datain.data[j] == 0, "byte %d of LBA %" PRIu64 " is 0x%02x, expected 0",
			      j % (int)g.bs, where[i] + (uint64_t)j / g.bs, t->datain.data[j]);
		scsi_free_scsi_task(t);
	}
	itest_close(&c);
	itest_note("ok: 3 x %u blocks read back as zeros", nblk);
	return 0;
}

/* ----------------------------------------------------- CHAP and the ACL */

static int itest_chap_ok(int argc, char **argv)
{
	struct itest_conn c;
	struct scsi_task *t;

	CHECK(argc == 1, "usage: chap-ok URL (with user%%secret@)");
	itest_open(&c, argv[0], ITEST_R2T_DEFAULT);
	CHECK(c.url->user[0], "chap-ok needs credentials in the URL");
	t = iscsi_inquiry_sync(c.iscsi, c.lun, 0, 0, 36);
	itest_expect_good(c.iscsi, t, "INQUIRY after CHAP login");
	scsi_free_scsi_task(t);
	itest_note("ok: CHAP login as '%s'%s", c.url->user,
		   opts.mutual ? " with mutual authentication" : "");
	itest_close(&c);
	return 0;
}

static int itest_chap_bad(int argc, char **argv)
{
	struct itest_conn c;
	char err[512], nocreds[1024];
	const char *at;

	CHECK(argc == 1, "usage: chap-bad URL (with wrong user%%secret@)");
	if (itest_try_open(&c, argv[0], opts.initiator, ITEST_R2T_DEFAULT, err, sizeof(err)) == 0)
		itest_fail("login with wrong CHAP credentials succeeded");
	CHECK(strstr(err, "Authentication failure"), "wrong credentials: expected login status "
	      "'Authentication failure' (0x0201), got: %s", err);
	itest_note("wrong credentials refused: %s", err);

	/* the same target without any credentials: AuthMethod=None must not be accepted */
	at = strchr(argv[0], '@');
	if (at) {
		snprintf(nocreds, sizeof(nocreds), "iscsi://%s", at + 1);
		if (itest_try_open(&c, nocreds, opts.initiator, ITEST_R2T_DEFAULT, err,
				   sizeof(err)) == 0)
			itest_fail("login without CHAP to a CHAP target succeeded");
		CHECK(strstr(err, "Authentication failure") || strstr(err, "Authorization failure"),
		      "no credentials: expected an authentication/authorization failure, got: %s", err);
		itest_note("no credentials refused: %s", err);
	}
	itest_note("ok");
	return 0;
}

static int itest_acl_refused(int argc, char **argv)
{
	struct itest_conn c;
	char err[512];

	CHECK(argc == 1, "usage: [-i NOT-LISTED-IQN] acl-refused URL");
	if (itest_try_open(&c, argv[0], opts.initiator, ITEST_R2T_DEFAULT, err, sizeof(err)) == 0)
		itest_fail("initiator %s was let in although it is not in the target's list",
			   opts.initiator);
	/* RFC 7143 11.13.5: 0x0202 "Authorization failure" - not allowed access */
	CHECK(strstr(err, "Authorization failure") || strstr(err, "Authentication failure"),
	      "expected login status 'Authorization failure' (0x0202), got: %s", err);
	itest_note("ok: %s refused: %s", opts.initiator, err);
	return 0;
}

/* --------------------------------------------------- async event loop */

/* Service every context until *done becomes true (or the deadline). */
static void itest_run(struct itest_conn *cs, int n, const int *done, double deadline, const char *what)
{
	struct pollfd pfd[64];

	CHECK(n <= 64, "too many contexts");
	while (!*done) {
		for (int i = 0; i < n; i++) {
			pfd[i].fd = iscsi_get_fd(cs[i].iscsi);
			pfd[i].events = (short)iscsi_which_events(cs[i].iscsi);
			pfd[i].revents = 0;
		}
		if (poll(pfd, (nfds_t)n, 1000) < 0) {
			if (errno == EINTR)
				continue;
			itest_fail("poll: %s", strerror(errno));
		}
		for (int i = 0; i < n; i++)
			if (iscsi_service(cs[i].iscsi, pfd[i].revents) < 0)
				itest_fail("%s: session %d failed: %s", what, i,
					   iscsi_get_error(cs[i].iscsi));
		if (itest_now() > deadline)
			itest_fail("%s: timed out", what);
	}
}

/* Service one context until the library has written everything queued. */
static void itest_flush(struct itest_conn *c, const char *what)
{
	double deadline = itest_now() + 30;

	while (iscsi_out_queue_length(c->iscsi) > 0) {
		struct pollfd p = { .fd = iscsi_get_fd(c->iscsi),
				    .events = (short)iscsi_which_events(c->iscsi) };

		if (poll(&p, 1, 1000) < 0 && errno != EINTR)
			itest_fail("poll: %s", strerror(errno));
		if (iscsi_service(c->iscsi, p.revents) < 0)
			itest_fail("%s: session failed: %s", what, iscsi_get_error(c->iscsi));
		if (itest_now() > deadline)
			itest_fail("%s: could not send within 30 s", what);
	}
}

/* Service one context until *outstanding drops to zero. */
static void itest_drain(struct itest_conn *c, const int *outstanding, const char *what)
{
	double deadline = itest_now() + 30;

	while (*outstanding > 0) {
		struct pollfd p = { .fd = iscsi_get_fd(c->iscsi),
				    .events = (short)iscsi_which_events(c->iscsi) };

		if (poll(&p, 1, 1000) < 0 && errno != EINTR)
			itest_fail("poll: %s", strerror(errno));
		if (iscsi_service(c->iscsi, p.revents) < 0)
			itest_fail("%s: session failed: %s", what, iscsi_get_error(c->iscsi));
		if (itest_now() > deadline)
			itest_fail("%s: %d command(s) still outstanding after 30 s", what, *outstanding);
	}
}

/* ------------------------------------------------------------------ tmf */

struct itest_tmf_wait {
	int done;
	int status;
	uint32_t response;
};

static void itest_tmf_cb(struct iscsi_context *iscsi, int status, void *data, void *priv)
{
	struct itest_tmf_wait *w = priv;

	w->status = status;
	if (status == SCSI_STATUS_GOOD && data)
		w->response = *(uint32_t *)data;
	w->done = 1;
}

static const char *itest_tmf_rsp_str(uint32_t r)
{
	switch (r) {
	case ISCSI_TMR_FUNC_COMPLETE: return "Function complete";
	case ISCSI_TMR_TASK_DOES_NOT_EXIST: return "Task does not exist";
	case ISCSI_TMR_LUN_DOES_NOT_EXIST: return "LUN does not exist";
	case ISCSI_TMR_TASK_STILL_ALLEGIANT: return "Task still allegiant";
	case ISCSI_TMR_TASK_ALLEGIANCE_REASS_NOT_SUPPORTED: return "Task allegiance reassignment not supported";
	case ISCSI_TMR_TMF_NOT_SUPPORTED: return "Task management function not supported";
	case ISCSI_TMR_FUNC_AUTH_FAILED: return "Function authorization failed";
	case ISCSI_TMR_FUNC_REJECTED: return "Function rejected";
	default: return "unknown response";
	}
}

static uint32_t itest_tmf(struct itest_conn *c, int lun, enum iscsi_task_mgmt_funcs fn,
			  uint32_t ritt, uint32_t rcmdsn, const char *what)
{
	struct itest_tmf_wait w = { 0 };

	CHECK(iscsi_task_mgmt_async(c->iscsi, lun, fn, ritt, rcmdsn, itest_tmf_cb, &w) == 0,
	      "%s: cannot send: %s", what, iscsi_get_error(c->iscsi));
	itest_run(c, 1, &w.done, itest_now() + 30, what);
	CHECK(w.status == SCSI_STATUS_GOOD, "%s: no TMF response (%s): %s", what,
	      itest_status_str(w.status), iscsi_get_error(c->iscsi));
	if (opts.verbose)
		itest_note("%s -> %s", what, itest_tmf_rsp_str(w.response));
	return w.response;
}

struct itest_io {
	struct scsi_task *task;
	int done;
	int status;
	int *outstanding;
};

static void itest_io_cb(struct iscsi_context *iscsi, int status, void *data, void *priv)
{
	struct itest_io *io = priv;

	io->status = status;
	io->done = 1;
	(*io->outstanding)--;
	/* libiscsi hands back the task itself, also when it cancels it */
	scsi_free_scsi_task(data ? data : io->task);
	io->task = NULL;
}

static void itest_tur_good(struct itest_conn *c, const char *what)
{
	struct scsi_task *t = iscsi_testunitready_sync(c->iscsi, c->lun);

	itest_expect_good(c->iscsi, t, what);
	scsi_free_scsi_task(t);
}

static int itest_tmfs(int argc, char **argv)
{
	struct itest_conn a, b;
	struct itest_geom g;
	struct scsi_task *t;
	uint32_t itt, cmdsn, r;
	struct itest_io io[ITEST_QD];
	int outstanding, nga = 0;
	int saw_ua;

	CHECK(argc == 1, "usage: tmf URL");
	itest_open(&a, argv[0], ITEST_R2T_DEFAULT);
	itest_open(&b, argv[0], ITEST_R2T_DEFAULT);
	itest_geometry(&a, &g);

	/* 1. ABORT TASK of a task that has completed. RFC 7143 11.5.1: the task
	 * no longer exists; its RefCmdSN is below ExpCmdSN, so the answer is
	 * "Task does not exist" - many targets answer "Function complete",
	 * which initiators treat alike; anything else is wrong. */
	t = iscsi_testunitready_sync(a.iscsi, a.lun);
	itest_expect_good(a.iscsi, t, "TEST UNIT READY");
	itt = t->itt;
	cmdsn = t->cmdsn;
	scsi_free_scsi_task(t);
	r = itest_tmf(&a, a.lun, ISCSI_TM_ABORT_TASK, itt, cmdsn, "ABORT TASK of a completed task");
	CHECK(r == ISCSI_TMR_TASK_DOES_NOT_EXIST || r == ISCSI_TMR_FUNC_COMPLETE,
	      "ABORT TASK of a completed task: expected 'Task does not exist' or 'Function "
	      "complete', got %u (%s)", r, itest_tmf_rsp_str(r));
	itest_note("ABORT TASK of a completed task -> %s", itest_tmf_rsp_str(r));

	/* 2. ABORT TASK of a tag never used, RefCmdSN far outside the CmdSN
	 * window: RFC 7143 11.5.1 b) "Task does not exist". */
	r = itest_tmf(&a, a.lun, ISCSI_TM_ABORT_TASK, 0x7ead0001, cmdsn + 0x40000000u,
		      "ABORT TASK of an unknown task");
	CHECK(r == ISCSI_TMR_TASK_DOES_NOT_EXIST, "ABORT TASK of an unknown task outside the "
	      "CmdSN window: expected 1 (Task does not exist), got %u (%s)", r, itest_tmf_rsp_str(r));
	itest_tur_good(&a, "TEST UNIT READY after ABORT TASK");

	/* 3. ABORT TASK of a command that may still be running: queue reads,
	 * abort the last. Whether it is caught in flight is a race; the answer
	 * must be one of the two valid ones, every other command must finish,
	 * and the session must go on working. */
	outstanding = 0;
	for (int i = 0; i < ITEST_QD; i++) {
		uint32_t nblk = (uint32_t)(1048576 / g.bs);

		if (g.max_xfer_blocks && nblk > g.max_xfer_blocks)
			nblk = g.max_xfer_blocks;
		io[i] = (struct itest_io){ .outstanding = &outstanding };
		io[i].task = iscsi_read16_task(a.iscsi, a.lun, (uint64_t)i * nblk % (g.nblocks - nblk),
					       nblk * g.bs, g.bs, 0, 0, 0, 0, 0, itest_io_cb, &io[i]);
		CHECK(io[i].task, "cannot queue READ(16): %s", iscsi_get_error(a.iscsi));
		outstanding++;
	}
	itest_flush(&a, "queueing READs");
	{
		struct itest_tmf_wait w = { 0 };
		struct itest_io *victim = &io[ITEST_QD - 1];

		CHECK(iscsi_task_mgmt_abort_task_async(a.iscsi, victim->task, itest_tmf_cb, &w) == 0,
		      "cannot send ABORT TASK: %s", iscsi_get_error(a.iscsi));
		itest_run(&a, 1, &w.done, itest_now() + 30, "ABORT TASK in flight");
		CHECK(w.status == SCSI_STATUS_GOOD, "ABORT TASK in flight: no response (%s)",
		      itest_status_str(w.status));
		CHECK(w.response == ISCSI_TMR_FUNC_COMPLETE || w.response == ISCSI_TMR_TASK_DOES_NOT_EXIST,
		      "ABORT TASK of a queued READ: expected 'Function complete' or 'Task does not "
		      "exist', got %u (%s)", w.response, itest_tmf_rsp_str(w.response));
		/* The TMF response comes after every response of the task on this
		 * connection (RFC 7143 4.2.3.3 / 11.6). A task the target says it
		 * does not know must have been answered already. */
		if (!victim->done) {
			CHECK(w.response == ISCSI_TMR_FUNC_COMPLETE, "target answered 'Task does not "
			      "exist' for a READ it never completed");
			/* aborted at the target: no SCSI Response will come */
			iscsi_scsi_cancel_task(a.iscsi, victim->task);
		}
		itest_note("ABORT TASK of a queued READ -> %s (%s)", itest_tmf_rsp_str(w.response),
			   victim->status == SCSI_STATUS_CANCELLED ? "caught in flight" : "already done");
	}
	itest_drain(&a, &outstanding, "READs around ABORT TASK");
	for (int i = 0; i < ITEST_QD; i++) {
		if (io[i].status == SCSI_STATUS_GOOD)
			nga++;
		else if (io[i].status != SCSI_STATUS_CANCELLED || i != ITEST_QD - 1)
			itest_fail("READ %d around ABORT TASK ended with %s", i,
				   itest_status_str(io[i].status));
	}
	CHECK(nga >= ITEST_QD - 1, "only %d of %d READs that were not aborted completed", nga,
	      ITEST_QD);
	itest_tur_good(&a, "TEST UNIT READY after ABORT TASK in flight");

	/* 4. ABORT TASK SET with commands sent: Function complete, and the
	 * session keeps working. (libiscsi forgets its own tasks when it sends
	 * ABORT TASK SET; answers the target already sent are ignored.) */
	outstanding = 0;
	for (int i = 0; i < 8; i++) {
		io[i] = (struct itest_io){ .outstanding = &outstanding };
		io[i].task = iscsi_read10_task(a.iscsi, a.lun, (uint32_t)(i * 256), 256 * g.bs, g.bs,
					       0, 0, 0, 0, 0, itest_io_cb, &io[i]);
		CHECK(io[i].task, "cannot queue READ(10): %s", iscsi_get_error(a.iscsi));
		outstanding++;
	}
	itest_flush(&a, "queueing READs");
	{
		struct itest_tmf_wait w = { 0 };

		CHECK(iscsi_task_mgmt_abort_task_set_async(a.iscsi, (uint32_t)a.lun, itest_tmf_cb, &w) == 0,
		      "cannot send ABORT TASK SET: %s", iscsi_get_error(a.iscsi));
		itest_run(&a, 1, &w.done, itest_now() + 30, "ABORT TASK SET");
		CHECK(w.status == SCSI_STATUS_GOOD && w.response == ISCSI_TMR_FUNC_COMPLETE,
		      "ABORT TASK SET: expected 'Function complete', got %s / %u (%s)",
		      itest_status_str(w.status), w.response, itest_tmf_rsp_str(w.response));
	}
	itest_drain(&a, &outstanding, "READs around ABORT TASK SET");
	itest_tur_good(&a, "TEST UNIT READY after ABORT TASK SET");
	/* SAM-5 7.3: ABORT TASK SET does not create a unit attention for the other nexus */
	itest_tur_good(&b, "TEST UNIT READY on the other session after ABORT TASK SET");
	itest_note("ABORT TASK SET -> Function complete");

	/* 5. LOGICAL UNIT RESET: Function complete; every other I_T nexus then
	 * gets a UNIT ATTENTION with ASC 0x29 (SAM-5 6.3.3 / SPC-4 Table 44). */
	r = itest_tmf(&a, a.lun, ISCSI_TM_LUN_RESET, 0xffffffff, 0, "LUN RESET");
	CHECK(r == ISCSI_TMR_FUNC_COMPLETE, "LUN RESET: expected 'Function complete', got %u (%s)",
	      r, itest_tmf_rsp_str(r));
	t = iscsi_testunitready_sync(b.iscsi, b.lun);
	CHECK(t && t->status == SCSI_STATUS_CHECK_CONDITION &&
	      t->sense.key == SCSI_SENSE_UNIT_ATTENTION && (t->sense.ascq >> 8) == 0x29,
	      "after LUN RESET the other session must get UNIT ATTENTION 0x29xx (reset "
	      "occurred), got %s", itest_task_str(b.iscsi, t));
	itest_note("LUN RESET -> other session got UNIT ATTENTION 0x%04x (%s)", t->sense.ascq,
		   scsi_sense_ascq_str(t->sense.ascq));
	scsi_free_scsi_task(t);
	itest_clear_ua(&b);
	saw_ua = itest_clear_ua(&a);
	itest_tur_good(&b, "TEST UNIT READY after the reset unit attention");
	itest_note("issuing session saw %d unit attention(s) after its own reset", saw_ua);

	/* 6. LUN RESET of a LUN that does not exist: RFC 7143 11.6.1 "LUN does not exist" */
	r = itest_tmf(&a, 255, ISCSI_TM_LUN_RESET, 0xffffffff, 0, "LUN RESET of LUN 255");
	CHECK(r == ISCSI_TMR_LUN_DOES_NOT_EXIST, "LUN RESET of a LUN that does not exist: "
	      "expected 2 (LUN does not exist), got %u (%s)", r, itest_tmf_rsp_str(r));

	/* the data path still works after all of that */
	{
		struct itest_extent e = { .lba = 4096 % g.nblocks, .nblocks = 16, .seed = itest_rand() };

		if (e.lba + e.nblocks > g.nblocks)
			e.lba = 0;
		itest_write_verify(&a, &g, OP_16, OP_10, &e, 0, "after TMFs");
	}
	itest_close(&b);
	itest_close(&a);
	itest_note("ok");
	return 0;
}

/* ---------------------------------------------------------- concurrency */

struct itest_sess;

struct itest_slot {
	struct itest_sess *s;
	uint64_t lba;
	uint32_t nblocks;
	int busy;
};

struct itest_sess {
	struct itest_conn c;
	int idx;
	uint64_t base;            /* first LBA of this session's region */
	uint32_t nblocks;         /* region length */
	uint64_t seed;
	unsigned char *data;      /* the region's expected content */
	int phase;                /* 0 write, 1 read own, 2 read neighbour's, 3 done */
	uint64_t cursor;          /* next block to issue in this phase */
	int inflight;
	struct itest_slot slot[ITEST_QD];
	uint64_t ops, bytes;
	struct itest_sess *all;
	int n;
};

static uint32_t itest_geom_bs;

static void itest_cc_issue(struct itest_sess *s);

static void itest_cc_cb(struct iscsi_context *iscsi, int status, void *data, void *priv)
{
	struct itest_slot *sl = priv;
	struct itest_sess *s = sl->s;
	struct scsi_task *t = data;
	uint32_t bs = itest_geom_bs;

	if (status != SCSI_STATUS_GOOD)
		itest_fail("session %d: %s of %u blocks at LBA %" PRIu64 " failed: %s", s->idx,
			   s->phase == 0 ? "WRITE" : "READ", sl->nblocks, sl->lba,
			   itest_task_str(iscsi, t));
	if (s->phase >= 1) {
		/* which session's region is this? */
		const struct itest_sess *owner = s->phase == 1 ? s : &s->all[(s->idx + 1) % s->n];
		const unsigned char *want = owner->data + (sl->lba - owner->base) * bs;
		size_t len = (size_t)sl->nblocks * bs;

		CHECK(t->datain.size == (int)len, "session %d: READ returned %d bytes, expected %zu",
		      s->idx, t->datain.size, len);
		if (memcmp(t->datain.data, want, len) != 0)
			itest_verify(t->datain.data, len, sl->lba, sl->nblocks, bs,
				     owner->seed, s->phase == 1 ? "concurrent READ of own data"
								: "concurrent READ of another session's data");
	}
	s->ops++;
	s->bytes += (uint64_t)sl->nblocks * bs;
	scsi_free_scsi_task(t);
	sl->busy = 0;
	s->inflight--;
	itest_cc_issue(s);
}

/* Keep up to ITEST_QD commands in flight; chunk sizes vary 1..256 blocks. */
static void itest_cc_issue(struct itest_sess *s)
{
	uint32_t bs = itest_geom_bs;

	while (s->phase < 3) {
		const struct itest_sess *owner = s->phase == 2 ? &s->all[(s->idx + 1) % s->n] : s;

		/* a neighbour's region is read only once every session wrote its own */
		if (s->phase == 2 && s->cursor == 0 && s->inflight == 0)
			for (int i = 0; i < s->n; i++)
				if (s->all[i].phase == 0)
					return;

		if (s->cursor >= owner->nblocks) {
			if (s->inflight > 0)
				return;          /* phase ends when everything came back */
			s->phase++;
			s->cursor = 0;
			continue;
		}
		if (s->inflight >= ITEST_QD)
			return;
		struct itest_slot *sl = NULL;

		for (int i = 0; i < ITEST_QD; i++)
			if (!s->slot[i].busy) {
				sl = &s->slot[i];
				break;
			}
		CHECK(sl, "internal: no free slot");
		uint32_t n = 1 + (uint32_t)(itest_rand() % 256);

		if (s->cursor + n > owner->nblocks)
			n = (uint32_t)(owner->nblocks - s->cursor);
		sl->s = s;
		sl->lba = owner->base + s->cursor;
		sl->nblocks = n;
		sl->busy = 1;
		struct scsi_task *t;

		if (s->phase == 0) {
			unsigned char *p = s->data + s->cursor * bs;

			t = (itest_rand() & 1)
				? iscsi_write16_task(s->c.iscsi, s->c.lun, sl->lba, p, n * bs, bs,
						     0, 0, 0, 0, 0, itest_cc_cb, sl)
				: iscsi_write10_task(s->c.iscsi, s->c.lun, (uint32_t)sl->lba, p, n * bs,
						     bs, 0, 0, 0, 0, 0, itest_cc_cb, sl);
		} else {
			t = (itest_rand() & 1)
				? iscsi_read16_task(s->c.iscsi, s->c.lun, sl->lba, n * bs, bs,
						    0, 0, 0, 0, 0, itest_cc_cb, sl)
				: iscsi_read10_task(s->c.iscsi, s->c.lun, (uint32_t)sl->lba, n * bs,
						    bs, 0, 0, 0, 0, 0, itest_cc_cb, sl);
		}
		CHECK(t, "session %d: cannot queue a command: %s", s->idx,
		      iscsi_get_error(s->c.iscsi));
		s->inflight++;
		s->cursor += n;
	}
}

static int itest_concurrency(int argc, char **argv)
{
	struct itest_sess *ss;
	struct itest_geom g;
	int n;
	uint32_t region;
	double t0, dt;
	uint64_t ops = 0, bytes = 0;

	CHECK(argc == 2, "usage: concurrency URL N");
	n = atoi(argv[1]);
	CHECK(n >= 1 && n <= 64, "N must be 1..64");
	ss = calloc((size_t)n, sizeof(*ss));
	CHECK(ss, "out of memory");
	for (int i = 0; i < n; i++) {
		ss[i].idx = i;
		ss[i].all = ss;
		ss[i].n = n;
		itest_open(&ss[i].c, argv[0], (i & 1) ? ITEST_R2T_ONLY : ITEST_R2T_DEFAULT);
	}
	itest_geometry(&ss[0].c, &g);
	itest_geom_bs = g.bs;
	/* 8 MiB per session, or less if the LUN is small; regions are disjoint */
	region = (uint32_t)(8388608 / g.bs);
	if ((uint64_t)region * (uint64_t)n > g.nblocks)
		region = (uint32_t)(g.nblocks / (uint64_t)n);
	CHECK(region >= 256, "LUN too small for %d sessions", n);
	for (int i = 0; i < n; i++) {
		ss[i].base = (uint64_t)i * region;
		ss[i].nblocks = region;
		ss[i].seed = itest_rand();
		ss[i].data = malloc((size_t)region * g.bs);
		CHECK(ss[i].data, "out of memory");
		itest_fill(ss[i].data, ss[i].base, region, g.bs, ss[i].seed);
	}
	t0 = itest_now();
	for (int i = 0; i < n; i++)
		itest_cc_issue(&ss[i]);
	/* The sessions move through their phases independently: one may be
	 * reading a neighbour's region the neighbour is still writing, so the
	 * neighbour check only starts when every session finished writing. */
	for (;;) {
		struct pollfd pfd[64];
		int done = 1, writing = 0;

		for (int i = 0; i < n; i++) {
			if (ss[i].phase < 3)
				done = 0;
			if (ss[i].phase == 0)
				writing = 1;
		}
		if (done)
			break;
		for (int i = 0; i < n; i++)
			if (!writing && ss[i].phase == 2 && ss[i].cursor == 0 && ss[i].inflight == 0)
				itest_cc_issue(&ss[i]);
		for (int i = 0; i < n; i++) {
			pfd[i].fd = iscsi_get_fd(ss[i].c.iscsi);
			pfd[i].events = (short)iscsi_which_events(ss[i].c.iscsi);
			pfd[i].revents = 0;
		}
		if (poll(pfd, (nfds_t)n, 1000) < 0 && errno != EINTR)
			itest_fail("poll: %s", strerror(errno));
		for (int i = 0; i < n; i++)
			if (iscsi_service(ss[i].c.iscsi, pfd[i].revents) < 0)
				itest_fail("session %d failed: %s", i, iscsi_get_error(ss[i].c.iscsi));
		if (itest_now() - t0 > ITEST_TIMEOUT_S)
			itest_fail("timed out after %d s", ITEST_TIMEOUT_S);
	}
	dt = itest_now() - t0;
	for (int i = 0; i < n; i++) {
		ops += ss[i].ops;
		bytes += ss[i].bytes;
		itest_close(&ss[i].c);
		free(ss[i].data);
	}
	free(ss);
	itest_note("ok: %d sessions, queue depth %d, %" PRIu64 " commands, %.1f MiB in %.2f s, "
		   "all data verified", n, ITEST_QD, ops, bytes / 1048576.0, dt);
	return 0;
}

/* ----------------------------------------------------------------- main */

static void itest_usage(FILE *f)
{
	fprintf(f,
		"usage: itest [-i INITIATOR-IQN] [-T USER%%SECRET] [-H] [-s SEED] [-v] COMMAND ARGS\n"
		"  -i IQN          initiator name (default %s)\n"
		"  -T USER%%SECRET  mutual CHAP: credentials the target must present\n"
		"  -H              negotiate HeaderDigest=CRC32C\n"
		"  -s SEED         seed for offsets and data (default: time)\n"
		"  -v              more output\n"
		"commands:\n"
		"  discovery PORTAL-URL IQN...   login URL   inq URL   readcap URL [BYTES [BS]]\n"
		"  rw URL   chap-ok URL   chap-bad URL   acl-refused URL   tmf URL\n"
		"  concurrency URL N   zeroed URL   mark URL SEED   check-mark URL SEED\n"
		"  write-zeros URL LBA NBLOCKS\n"
		"  durable-write DAEMON-PID STATE NBLOCKS URL[,wce-off|,atomic]...   durable-check STATE\n"
		"  prevent-2nexus URL\n"
		"  clone-write STATE NBLOCKS URL CLONE-URL CMD [ARG...]   write-protected URL\n"
		"  ua-after URL ASCQ[,ASCQ...] CMD [ARG...]\n",
		ITEST_DEFAULT_INITIATOR);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{ "discovery", itest_discovery },
		{ "login", itest_login },
		{ "inq", itest_inq },
		{ "readcap", itest_readcap },
		{ "rw", itest_rw },
		{ "chap-ok", itest_chap_ok },
		{ "chap-bad", itest_chap_bad },
		{ "acl-refused", itest_acl_refused },
		{ "tmf", itest_tmfs },
		{ "concurrency", itest_concurrency },
		{ "zeroed", itest_zeroed },
		{ "mark", itest_mark_w },
		{ "check-mark", itest_mark_c },
		{ "write-zeros", itest_write_zeros },
		{ "durable-write", itest_durable_write },
		{ "durable-check", itest_durable_check },
		{ "prevent-2nexus", itest_prevent_2nexus },
		{ "clone-write", itest_clone_write },
		{ "write-protected", itest_write_protected },
		{ "ua-after", itest_ua_after },
	};
	int opt;

	opts.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	while ((opt = getopt(argc, argv, "+i:T:Hs:vh")) != -1) {
		switch (opt) {
		case 'i': opts.initiator = optarg; break;
		case 'T': opts.mutual = optarg; break;
		case 'H': opts.header_digest = true; break;
		case 's': opts.seed = strtoull(optarg, NULL, 0); break;
		case 'v': opts.verbose++; break;
		case 'h': itest_usage(stdout); return 0;
		default: itest_usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		itest_usage(stderr);
		return 2;
	}
	itest_rand_state = opts.seed ? opts.seed : 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[optind], cmds[i].name) == 0) {
			itest_cmd = cmds[i].name;
			if (opts.verbose)
				itest_note("seed 0x%" PRIx64, opts.seed);
			return cmds[i].fn(argc - optind - 1, argv + optind + 1);
		}
	}
	fprintf(stderr, "itest: unknown command '%s'\n", argv[optind]);
	itest_usage(stderr);
	return 2;
}
