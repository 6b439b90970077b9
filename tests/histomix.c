/*
 * histomix: a known command mix for the workload histogram test
 * (tests/observe.sh), on pdufuzz's raw iSCSI client so that four READs
 * can leave in one send() and reach the target together.
 *
 *   histomix HOST:PORT TARGET
 *
 * Logs in, clears the unit attention (TEST UNIT READY until GOOD), prints
 * "ready" and waits for a line on standard input (the test resets the
 * histograms then); then sends, on LUN 0 (512-byte blocks):
 *   four READ(10) in one send():  LBA 0, 8, 16, 24, 8 blocks each
 *   WRITE(10) LBA 100, 1 block;   WRITE(10) LBA 101, 1 block
 *   READ(16)  LBA 1000, 256 blocks (128 KiB)
 *   READ(10)  LBA 40, 64 blocks (32 KiB)
 *   WRITE(16) LBA 5000, 2048 blocks (1 MiB)
 *   TEST UNIT READY
 * each after the previous one's status, every status GOOD; prints "done".
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/pdufuzz.h"

#define HM_NAME "iqn.2026-11.org.targetd.test:histomix"

static uint8_t *buf;

static void cdb16(uint8_t *cdb, uint8_t op, uint64_t lba, uint32_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	pf_put32(cdb + 2, (uint32_t)(lba >> 32));
	pf_put32(cdb + 6, (uint32_t)lba);
	pf_put32(cdb + 10, n);
}

static void one(struct pf_conn *c, const uint8_t *cdb, bool write, uint32_t bytes)
{
	struct pf_scsi_result sr;

	if (pf_scsi_cmd(c, cdb, write ? NULL : buf, write ? buf : NULL, bytes, &sr) != RX_GOT)
		pf_fail("the connection closed during CDB %#04x", cdb[0]);
	if (sr.status)
		pf_fail("CDB %#04x: status %#04x, sense key %u", cdb[0], sr.status, pf_sense_key(&sr));
}

/* Four READ(10) of 8 blocks in one send(); then their four statuses. */
static void batch(struct pf_conn *c)
{
	uint8_t pdus[4 * BHS_LEN];
	uint32_t first = c->itt;
	unsigned done = 0;

	for (unsigned i = 0; i < 4; i++) {
		uint8_t *b = pdus + i * BHS_LEN;

		pf_bhs_init(b, OP_SCSI_CMD, F_FINAL | 0x40 /* R */ | 0x01 /* SIMPLE */, c);
		pf_scsi_lun0(b);
		pf_put32(b + 16, c->itt++);
		pf_put32(b + 20, 4096);
		pf_put32(b + 24, c->cmdsn++);
		pf_rw10_cdb(b + 32, 0x28, i * 8, 8);
	}
	if (pf_send_all(c->fd, pdus, sizeof(pdus)))
		pf_fail("sending the batch failed");
	while (done < 4) {
		struct pf_rx r;
		uint8_t op;

		if (pf_recv_reply(c, &r, pf_opt.tmo) != RX_GOT)
			pf_fail("no answer to the batch of READs");
		op = r.bhs[0] & 0x3f;
		if (pf_get32(r.bhs + 16) - first >= 4)
			pf_fail("an answer with ITT %#x to the batch", pf_get32(r.bhs + 16));
		if ((op == OP_DATA_IN && (r.bhs[1] & 0x01)) || op == OP_SCSI_RSP) {
			if (r.bhs[3])
				pf_fail("a READ of the batch: status %#04x", r.bhs[3]);
			done++;
		} else if (op != OP_DATA_IN) {
			pf_fail("opcode %#04x in answer to the batch", op);
		}
	}
}

int main(int argc, char **argv)
{
	struct pf_login_opts lo = { .initiator = HM_NAME };
	struct pf_conn c;
	uint8_t cdb[16];
	char line[16];
	const char *colon;

	if (argc != 3 || !(colon = strrchr(argv[1], ':'))) {
		fprintf(stderr, "usage: histomix HOST:PORT TARGET\n");
		return 2;
	}
	snprintf(pf_opt.host, sizeof(pf_opt.host), "%.*s", (int)(colon - argv[1]), argv[1]);
	snprintf(pf_opt.port, sizeof(pf_opt.port), "%s", colon + 1);
	pf_opt.target = argv[2];
	pf_cur_case = "histomix";
	pf_crc32c_init_table();
	buf = calloc(1, 1u << 20);
	if (!buf)
		return 1;
	pf_conn_open(&c, "histomix");
	pf_login_ok(&c, &lo);
	pf_tur_ok(&c, "before the mix");
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	batch(&c);
	pf_rw10_cdb(cdb, 0x2a, 100, 1);
	one(&c, cdb, true, 512);
	pf_rw10_cdb(cdb, 0x2a, 101, 1);
	one(&c, cdb, true, 512);
	cdb16(cdb, 0x88, 1000, 256);
	one(&c, cdb, false, 256 * 512);
	pf_rw10_cdb(cdb, 0x28, 40, 64);
	one(&c, cdb, false, 64 * 512);
	cdb16(cdb, 0x8a, 5000, 2048);
	one(&c, cdb, true, 2048 * 512);
	memset(cdb, 0, sizeof(cdb));
	one(&c, cdb, false, 0);
	pf_logout_ok(&c);
	pf_conn_close(&c);
	free(buf);
	printf("done\n");
	return 0;
}
