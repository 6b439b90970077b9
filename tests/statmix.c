/*
 * statmix: a libiscsi client for the admin interface tests (tests/admin.sh).
 *
 *   statmix mix URL [--reset-cmd CMD]
 *       Two sessions to the LUN of URL. After both are past their unit
 *       attentions, runs CMD (e.g. "targetctl stats --reset"), then issues a
 *       known mix: N READ(16), M WRITE(16), K COMPARE AND WRITE of which J
 *       miscompare, one EXTENDED COPY of two block->block segments, one
 *       WRITE SAME(16), one UNMAP, and R commands that meet another
 *       session's RESERVE(6). Prints, as JSON on stdout, every command sent
 *       by opcode with the status it got, and the counters the daemon must
 *       show; a part whose opcode the target does not implement yet
 *       (INVALID COMMAND OPERATION CODE) is listed in "unavailable" and its
 *       derived counters are not claimed.
 *
 *   statmix io URL SECONDS|@STOPFILE [INITIATOR]
 *       Writes a pattern, reads it back and compares, for SECONDS, or (with
 *       @STOPFILE) until the file STOPFILE exists, and then once more, so
 *       that its last commands are sent after the file appeared (at most
 *       STATMIX_IO_LIMIT seconds, 900: then it fails). A UNIT ATTENTION is
 *       retried (what initiators do); any other failure, or a data
 *       mismatch, exits 1. Prints "io started" once the first write and
 *       read back are done, and at the end "io ok: N commands, U unit
 *       attentions".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define BS 512u

struct conn {
	struct iscsi_context *iscsi;
	int lun;
};

/* What was sent and what came back. */
static unsigned sent[256], st_good[256], st_cc[256], st_conflict[256];
static unsigned sk_count[16];
static unsigned n_ua_retries;

static void open_conn(struct conn *c, const char *url_s, const char *initiator)
{
	struct iscsi_url *url;

	c->iscsi = iscsi_create_context(initiator);
	if (!c->iscsi) {
		fprintf(stderr, "statmix: no iSCSI context\n");
		exit(2);
	}
	url = iscsi_parse_full_url(c->iscsi, url_s);
	if (!url) {
		fprintf(stderr, "statmix: bad URL %s: %s\n", url_s, iscsi_get_error(c->iscsi));
		exit(2);
	}
	iscsi_set_targetname(c->iscsi, url->target);
	iscsi_set_session_type(c->iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(c->iscsi, ISCSI_HEADER_DIGEST_NONE);
	/* a lost session must show, not be hidden by a silent re-login */
	iscsi_set_noautoreconnect(c->iscsi, 1);
	if (iscsi_full_connect_sync(c->iscsi, url->portal, url->lun)) {
		fprintf(stderr, "statmix: login to %s failed: %s\n", url_s, iscsi_get_error(c->iscsi));
		exit(2);
	}
	c->lun = url->lun;
	iscsi_destroy_url(url);
}

/* Eat the unit attentions a new nexus starts with (not part of the mix). */
static void clear_ua(struct conn *c)
{
	for (int i = 0; i < 20; i++) {
		struct scsi_task *t = iscsi_testunitready_sync(c->iscsi, c->lun);
		bool good = t && t->status == SCSI_STATUS_GOOD;

		if (t)
			scsi_free_scsi_task(t);
		if (good)
			return;
	}
	fprintf(stderr, "statmix: TEST UNIT READY never succeeds\n");
	exit(2);
}

/* Account for one finished command of the mix. Returns the task. */
static struct scsi_task *note(uint8_t op, struct scsi_task *t, struct conn *c)
{
	if (!t) {
		fprintf(stderr, "statmix: opcode 0x%02x: transport error: %s\n", op,
			iscsi_get_error(c->iscsi));
		exit(2);
	}
	sent[op]++;
	if (t->status == SCSI_STATUS_GOOD)
		st_good[op]++;
	else if (t->status == SCSI_STATUS_CHECK_CONDITION) {
		st_cc[op]++;
		sk_count[t->sense.key & 15]++;
	} else if (t->status == SCSI_STATUS_RESERVATION_CONFLICT)
		st_conflict[op]++;
	else {
		fprintf(stderr, "statmix: opcode 0x%02x: unexpected status 0x%x\n", op, t->status);
		exit(2);
	}
	return t;
}

static bool is_invalid_opcode(const struct scsi_task *t)
{
	return t->status == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_ILLEGAL_REQUEST &&
	       t->sense.ascq == 0x2000;
}

static void must_good(const struct scsi_task *t, const char *what)
{
	if (t->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "statmix: %s: status 0x%x sense %s (0x%04x)\n", what, t->status,
			scsi_sense_key_str(t->sense.key), t->sense.ascq);
		exit(1);
	}
}

/* NAA designator of the LUN from VPD 0x83 (SPC-4 7.8.6), for the XCOPY
 * identification descriptor. Returns its length (8 or 16) or 0. */
static int lun_naa(struct conn *c, uint8_t *naa)
{
	struct scsi_task *t = iscsi_inquiry_sync(c->iscsi, c->lun, 1, 0x83, 255);
	int len = 0;

	if (t && t->status == SCSI_STATUS_GOOD && t->datain.size >= 4) {
		const uint8_t *p = t->datain.data;
		int end = 4 + (p[2] << 8 | p[3]);

		if (end > t->datain.size)
			end = t->datain.size;
		for (int off = 4; off + 4 <= end;) {
			int dl = p[off + 3];

			if ((p[off + 1] & 0x0f) == 3 && (p[off + 1] & 0x30) == 0 && off + 4 + dl <= end &&
			    (dl == 8 || dl == 16)) {
				memcpy(naa, p + off + 4, (size_t)dl);
				len = dl;
				break;
			}
			off += 4 + dl;
		}
	}
	if (t)
		scsi_free_scsi_task(t);
	return len;
}

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }

static int cmd_mix(const char *url, const char *reset_cmd)
{
	enum { N = 40, M = 25, K = 12, J = 4, R = 6, W = 100, U = 48, SEG = 64 };
	struct conn a, b;
	uint8_t blk[8 * BS], caw[2 * BS];
	bool have_caw = true, have_xcopy = true, have_ws = true, have_unmap = true, have_resv = true;
	uint64_t xcopy_bytes = 0;
	unsigned caw_ok = 0, caw_mis = 0, conflicts = 0;
	struct scsi_task *t;
	uint8_t naa[16];
	int naa_len;

	open_conn(&a, url, "iqn.2026-11.org.targetd:statmix-a");
	open_conn(&b, url, "iqn.2026-11.org.targetd:statmix-b");
	clear_ua(&a);
	clear_ua(&b);
	naa_len = lun_naa(&a, naa);
	if (reset_cmd && system(reset_cmd) != 0) {
		fprintf(stderr, "statmix: '%s' failed\n", reset_cmd);
		return 2;
	}

	/* M writes of 8 blocks, N reads of 8 blocks */
	for (unsigned i = 0; i < sizeof(blk); i++)
		blk[i] = (uint8_t)(i * 7 + 3);
	for (int i = 0; i < M; i++) {
		t = note(0x8a, iscsi_write16_sync(a.iscsi, a.lun, (uint64_t)i * 8, blk, sizeof(blk), BS,
						  0, 0, 0, 0, 0), &a);
		must_good(t, "WRITE(16)");
		scsi_free_scsi_task(t);
	}
	for (int i = 0; i < N; i++) {
		t = note(0x88, iscsi_read16_sync(a.iscsi, a.lun, (uint64_t)(i % M) * 8, sizeof(blk), BS,
						 0, 0, 0, 0, 0), &a);
		must_good(t, "READ(16)");
		scsi_free_scsi_task(t);
	}

	/* K COMPARE AND WRITE on block 0 (which holds blk[0..511]); J of them
	 * with a wrong compare half */
	for (int i = 0; i < K && have_caw; i++) {
		bool wrong = i % 3 == 1 && caw_mis < J;

		memcpy(caw, blk, BS);
		memcpy(caw + BS, blk, BS);       /* write back the same data */
		if (wrong)
			caw[17] ^= 0xff;
		t = note(0x89, iscsi_compareandwrite_sync(a.iscsi, a.lun, 0, caw, sizeof(caw), BS, 0, 0,
							  0, 0, 0), &a);
		if (is_invalid_opcode(t)) {
			have_caw = false;
		} else if (wrong) {
			if (t->status != SCSI_STATUS_CHECK_CONDITION || t->sense.key != SCSI_SENSE_MISCOMPARE) {
				fprintf(stderr, "statmix: COMPARE AND WRITE should miscompare\n");
				return 1;
			}
			caw_mis++;
		} else {
			must_good(t, "COMPARE AND WRITE");
			caw_ok++;
		}
		scsi_free_scsi_task(t);
	}

	/* EXTENDED COPY (LID1): one E4 CSCD for this LUN, two block->block
	 * segments of SEG blocks each inside it */
	if (naa_len) {
		uint8_t pl[16 + 32 + 2 * 28];
		struct iscsi_data d = { .size = sizeof(pl), .data = pl };

		memset(pl, 0, sizeof(pl));
		pl[1] = 0x18;                    /* LIST ID USAGE 11b: no list id kept */
		put16(pl + 2, 32);
		put32(pl + 8, 2 * 28);
		pl[16] = 0xe4;                   /* identification descriptor CSCD */
		pl[16 + 4] = 0x01;               /* code set binary */
		pl[16 + 5] = 0x03;               /* association LU, type NAA */
		pl[16 + 7] = (uint8_t)naa_len;
		memcpy(pl + 16 + 8, naa, (size_t)naa_len);
		pl[16 + 29] = (BS >> 16) & 0xff;
		pl[16 + 30] = (BS >> 8) & 0xff;
		pl[16 + 31] = BS & 0xff;
		for (int s = 0; s < 2; s++) {
			uint8_t *g = pl + 48 + 28 * s;

			g[0] = 0x02;
			put16(g + 2, 24);
			put16(g + 4, 0);
			put16(g + 6, 0);
			put16(g + 10, SEG);
			put64(g + 12, (uint64_t)s * SEG);
			put64(g + 20, 4096 + (uint64_t)s * SEG);
		}
		t = note(0x83, iscsi_extended_copy_sync(a.iscsi, a.lun, &d), &a);
		if (is_invalid_opcode(t))
			have_xcopy = false;
		else {
			must_good(t, "EXTENDED COPY");
			xcopy_bytes = 2ull * SEG * BS;
		}
		scsi_free_scsi_task(t);
	} else {
		have_xcopy = false;
	}

	/* WRITE SAME(16) of W blocks of zeroes */
	memset(caw, 0, BS);
	t = note(0x93, iscsi_writesame16_sync(a.iscsi, a.lun, 8192, caw, BS, W, 0, 0, 0, 0), &a);
	if (is_invalid_opcode(t))
		have_ws = false;
	else
		must_good(t, "WRITE SAME(16)");
	scsi_free_scsi_task(t);

	/* UNMAP: two descriptors, U blocks in all */
	{
		struct unmap_list l[2] = { { .lba = 16384, .num = U / 2 }, { .lba = 20000, .num = U - U / 2 } };

		t = note(0x42, iscsi_unmap_sync(a.iscsi, a.lun, 0, 0, l, 2), &a);
		if (is_invalid_opcode(t))
			have_unmap = false;
		else
			must_good(t, "UNMAP");
		scsi_free_scsi_task(t);
	}

	/* R reservation conflicts: A holds RESERVE(6), B reads and writes */
	t = note(0x16, iscsi_reserve6_sync(a.iscsi, a.lun), &a);
	if (is_invalid_opcode(t)) {
		have_resv = false;
		scsi_free_scsi_task(t);
	} else {
		must_good(t, "RESERVE(6)");
		scsi_free_scsi_task(t);
		for (int i = 0; i < R; i++) {
			if (i % 2)
				t = note(0x88, iscsi_read16_sync(b.iscsi, b.lun, 0, BS, BS, 0, 0, 0, 0, 0), &b);
			else
				t = note(0x8a, iscsi_write16_sync(b.iscsi, b.lun, 0, blk, BS, BS, 0, 0, 0, 0, 0), &b);
			if (t->status != SCSI_STATUS_RESERVATION_CONFLICT) {
				fprintf(stderr, "statmix: expected RESERVATION CONFLICT, got 0x%x\n", t->status);
				return 1;
			}
			conflicts++;
			scsi_free_scsi_task(t);
		}
		t = note(0x17, iscsi_release6_sync(a.iscsi, a.lun), &a);
		must_good(t, "RELEASE(6)");
		scsi_free_scsi_task(t);
	}

	/* the report */
	printf("{\n  \"sent\": {");
	for (int op = 0, first = 1; op < 256; op++) {
		if (!sent[op])
			continue;
		printf("%s\"%d\": {\"count\": %u, \"good\": %u, \"check_condition\": %u, "
		       "\"reservation_conflict\": %u}", first ? "" : ", ", op, sent[op], st_good[op],
		       st_cc[op], st_conflict[op]);
		first = 0;
	}
	printf("},\n  \"sense_keys\": {");
	for (int k = 0, first = 1; k < 16; k++) {
		if (!sk_count[k])
			continue;
		printf("%s\"%d\": %u", first ? "" : ", ", k, sk_count[k]);
		first = 0;
	}
	printf("},\n  \"unavailable\": [");
	{
		const char *names[5];
		int n = 0;

		if (!have_caw)
			names[n++] = "compare_and_write";
		if (!have_xcopy)
			names[n++] = "extended_copy";
		if (!have_ws)
			names[n++] = "write_same";
		if (!have_unmap)
			names[n++] = "unmap";
		if (!have_resv)
			names[n++] = "reservations";
		for (int i = 0; i < n; i++)
			printf("%s\"%s\"", i ? ", " : "", names[i]);
	}
	printf("],\n  \"expect\": {\n");
	printf("    \"read.commands\": %u,\n", st_good[0x88]);
	printf("    \"read.bytes\": %u,\n", N * (unsigned)sizeof(blk));
	printf("    \"write.commands\": %u,\n", st_good[0x8a]);
	printf("    \"write.bytes\": %u", M * (unsigned)sizeof(blk));
	if (have_caw)
		printf(",\n    \"vaai.compare_and_write.success\": %u,\n"
		       "    \"vaai.compare_and_write.miscompare\": %u", caw_ok, caw_mis);
	if (have_xcopy)
		printf(",\n    \"vaai.extended_copy.commands\": 1,\n"
		       "    \"vaai.extended_copy.segments\": 2,\n"
		       "    \"vaai.extended_copy.bytes\": %" PRIu64, xcopy_bytes);
	if (have_ws)
		printf(",\n    \"vaai.write_same.commands\": 1,\n    \"vaai.write_same.blocks\": %d", W);
	if (have_unmap)
		printf(",\n    \"vaai.unmap.commands\": 1,\n    \"vaai.unmap.blocks\": %d", U);
	if (have_resv)
		printf(",\n    \"reservations.reserve\": 1,\n    \"reservations.release\": 1,\n"
		       "    \"reservations.conflicts.total\": %u", conflicts);
	printf("\n  }\n}\n");
	iscsi_logout_sync(a.iscsi);
	iscsi_logout_sync(b.iscsi);
	iscsi_destroy_context(a.iscsi);
	iscsi_destroy_context(b.iscsi);
	return 0;
}

/* Run one command, retrying unit attentions. */
static struct scsi_task *io_retry(struct conn *c, bool write, uint64_t lba, uint8_t *buf, uint32_t len)
{
	for (int i = 0; i < 10; i++) {
		struct scsi_task *t = write ? iscsi_write16_sync(c->iscsi, c->lun, lba, buf, len, BS, 0, 0, 0, 0, 0)
					    : iscsi_read16_sync(c->iscsi, c->lun, lba, len, BS, 0, 0, 0, 0, 0);

		if (!t) {
			fprintf(stderr, "statmix io: transport error: %s\n", iscsi_get_error(c->iscsi));
			exit(1);
		}
		if (t->status == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
			n_ua_retries++;
			scsi_free_scsi_task(t);
			continue;
		}
		return t;
	}
	fprintf(stderr, "statmix io: unit attentions never stop\n");
	exit(1);
}

static double elapsed_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* SECONDS, or @STOPFILE: stop when the file exists (after one more round). */
static int cmd_io(const char *url, const char *until, const char *initiator)
{
	struct conn c;
	uint8_t buf[16 * BS];
	struct timespec t0;
	unsigned long n = 0;
	const char *stopfile = until[0] == '@' ? until + 1 : NULL;
	double seconds = stopfile ? 0 : atof(until);
	double limit = getenv("STATMIX_IO_LIMIT") ? atof(getenv("STATMIX_IO_LIMIT")) : 900;
	bool last = false;

	if (stopfile && !*stopfile) {
		fprintf(stderr, "statmix io: @ needs a file name\n");
		return 2;
	}
	open_conn(&c, url, initiator ? initiator : "iqn.2026-11.org.targetd:statmix-io");
	clear_ua(&c);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint64_t lba = (n * 16) % 4096;
		struct scsi_task *t;

		for (unsigned i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)(n + i * 13);
		t = io_retry(&c, true, lba, buf, sizeof(buf));
		must_good(t, "io WRITE(16)");
		scsi_free_scsi_task(t);
		t = io_retry(&c, false, lba, NULL, sizeof(buf));
		must_good(t, "io READ(16)");
		if (t->datain.size != (int)sizeof(buf) || memcmp(t->datain.data, buf, sizeof(buf))) {
			fprintf(stderr, "statmix io: data read back differs at LBA %" PRIu64 "\n", lba);
			return 1;
		}
		scsi_free_scsi_task(t);
		if (n == 0) {
			printf("io started\n");
			fflush(stdout);
		}
		n += 2;
		if (last)
			break;
		if (!stopfile) {
			if (elapsed_since(&t0) >= seconds)
				break;
		} else if (access(stopfile, F_OK) == 0) {
			last = true;    /* one more round, sent after the file appeared */
		} else if (errno != ENOENT) {
			fprintf(stderr, "statmix io: %s: %s\n", stopfile, strerror(errno));
			return 1;
		} else if (elapsed_since(&t0) >= limit) {
			fprintf(stderr, "statmix io: %s did not appear within %.0f s\n", stopfile, limit);
			return 1;
		}
	}
	printf("io ok: %lu commands, %u unit attentions\n", n, n_ua_retries);
	iscsi_logout_sync(c.iscsi);
	iscsi_destroy_context(c.iscsi);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "mix"))
		return cmd_mix(argv[2], argc >= 5 && !strcmp(argv[3], "--reset-cmd") ? argv[4] : NULL);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "io"))
		return cmd_io(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	fprintf(stderr, "usage: statmix mix URL [--reset-cmd CMD] | "
		"statmix io URL SECONDS|@STOPFILE [INITIATOR]\n");
	return 2;
}
