/*
 * libFuzzer harness: the login stages (targetd/login.h) and, through them,
 * text key parsing and operational negotiation (targetd/params.c).
 *
 * Input: Login Requests back to back, each a 48-byte header followed by
 * its data segment (the DataSegmentLength of the header, cut to what is
 * left and to 8192 bytes, the login limit). They are fed to one login as
 * the connection would feed them, against a runtime of four targets (open,
 * with an ACL, with CHAP, with mutual CHAP), until a request is refused or
 * the login reaches full feature phase (then the configuration check of
 * that transition runs too). Before each request the harness may flip the
 * configuration, as a reload during the login would.
 */
#include "config.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/log.h"
#include "common/util.h"
#include "targetd/iscsi_pdu.h"
#include "targetd/login.h"
#include "targetd/target.h"

static struct targetd_runtime fuzz_rt;
static struct iscsi_target targets[4];
static char *acl[2] = { (char *)"iqn.2026-11.org.fuzz:allowed", (char *)"eui.0123456789abcdef" };

static void fuzz_setup(void)
{
	memset(targets, 0, sizeof(targets));
	memcpy(targets[0].iqn, "iqn.2026-11.org.fuzz:open", sizeof("iqn.2026-11.org.fuzz:open"));
	memcpy(targets[0].alias, "open", 5);
	memcpy(targets[1].iqn, "iqn.2026-11.org.fuzz:acl", sizeof("iqn.2026-11.org.fuzz:acl"));
	targets[1].initiators = acl;
	targets[1].n_initiators = 2;
	targets[1].has_acl = true;
	memcpy(targets[2].iqn, "iqn.2026-11.org.fuzz:chap", sizeof("iqn.2026-11.org.fuzz:chap"));
	targets[2].chap = true;
	targets[2].chap_user = (char *)"alice";
	targets[2].chap_secret = (char *)"alice-secret-0123";
	memcpy(targets[3].iqn, "iqn.2026-11.org.fuzz:mutual", sizeof("iqn.2026-11.org.fuzz:mutual"));
	targets[3].chap = true;
	targets[3].chap_user = (char *)"alice";
	targets[3].chap_secret = (char *)"alice-secret-0123";
	targets[3].chap_mutual_user = (char *)"array";
	targets[3].chap_mutual_secret = (char *)"array-secret-4567";
	memset(&fuzz_rt, 0, sizeof(fuzz_rt));
	fuzz_rt.targets = targets;
	fuzz_rt.n_targets = fuzz_rt.cap_targets = 4;
	fuzz_rt.limits = (struct iscsi_limits){ .max_recv_dsl = 262144, .max_burst = 1048576,
						.first_burst = 65536, .max_outstanding_r2t = 1,
						.max_connections = 4, .immediate_data = true,
						.allow_crc32c = true };
	target_runtime = &fuzz_rt;
	log_level = 0;
}

/* A reload between two requests: header byte 2 (reserved in a Login
 * Request) says what changes. */
static void fuzz_reload(uint8_t what)
{
	targets[1].n_initiators = what & 1 ? 1 : 2;
	targets[0].chap = what & 2;
	targets[0].chap_user = (char *)"alice";
	targets[0].chap_secret = (char *)"alice-secret-0123";
	targets[3].removed = what & 4;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct login_pdu pdu;
	struct iscsi_login *l = NULL;
	size_t off = 0;

	fuzz_setup();
	while (size - off >= 48) {
		uint8_t bhs[48];
		struct iscsi_text resp = { 0 };
		const char *why = NULL;
		uint32_t dlen;
		uint16_t st;

		memcpy(bhs, data + off, 48);
		off += 48;
		bhs[0] = ISCSI_OP_LOGIN_REQ | 0x40;
		dlen = get_be24(bhs + 5);
		dlen = (uint32_t)MIN(MIN((size_t)dlen, size - off), (size_t)8192);
		fuzz_reload(bhs[2]);
		if (!l) {
			l = iscsi_login_new(bhs, 1, &target_runtime->limits);
			if (!l)
				return 0;
		}
		st = iscsi_login_check_header(l, bhs, &why);
		if (!st)
			st = iscsi_login_gather(l, data + off, dlen, &why);
		off += dlen;
		if (!st && !(bhs[1] & ISCSI_LOGIN_CONTINUE)) {
			st = iscsi_login_process(l, bhs, &pdu, &resp, &why);
			iscsi_login_text_reset(l);
			if (!st && pdu.transit && pdu.nsg == ISCSI_STAGE_FULL_FEATURE) {
				st = iscsi_login_recheck(l, &why);
				if (!st)
					st = 0xffff;   /* full feature phase: done */
			}
		}
		if (st && !why && st != 0xffff)
			abort();            /* every refusal says why */
		iscsi_text_free(&resp);
		if (st)
			break;
	}
	iscsi_login_destroy(l);
	return 0;
}
