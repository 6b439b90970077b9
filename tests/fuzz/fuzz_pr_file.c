/*
 * libFuzzer harness: the APTPL state-file parser (scsi/pr_file.c).
 *
 * Input: a mode byte, then the bytes of a state file. Mode bit 0 clear:
 * the bytes are the file without its closing checksum line, which the
 * harness appends (a mutation then reaches the line parsers instead of
 * failing the checksum); set: the bytes are the whole file, as they are.
 * pr_file_parse must refuse the file with a message naming it, or accept
 * it; when it accepts, what pr_file_save would write for that state must
 * parse back to the same state (the format round-trips whatever names the
 * registrations hold).
 */
#include "config.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "common/crc32c.h"
#include "common/log.h"
#include "scsi/pr_int.h"

static struct pr_lun *fuzz_lun(void)
{
	struct pr_lun *p = calloc(1, sizeof(*p));

	if (p)
		p->holder = -1;
	return p;
}

static void fuzz_lun_free(struct pr_lun *p)
{
	if (p)
		free(p->regs);
	free(p);
}

static bool same(const struct pr_lun *a, const struct pr_lun *b)
{
	if (a->n != b->n || a->generation != b->generation || a->resv != b->resv ||
	    (a->resv && (a->type != b->type || a->holder != b->holder || a->scope != b->scope)))
		return false;
	for (unsigned i = 0; i < a->n; i++)
		if (a->regs[i].key != b->regs[i].key || a->regs[i].rtpi != b->regs[i].rtpi ||
		    a->regs[i].all_tg_pt != b->regs[i].all_tg_pt ||
		    a->regs[i].name_only != b->regs[i].name_only ||
		    strcmp(a->regs[i].port, b->regs[i].port))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pr_lun *p = fuzz_lun(), *q = fuzz_lun();
	char err[512], *buf, *again = NULL;
	size_t len = 0, n;
	int rc;

	log_level = 0;
	if (size < 1)
		goto out_free;
	n = size - 1;
	buf = malloc(n + 16);
	if (!p || !q || !buf)
		goto out;
	memcpy(buf, data + 1, n);
	if (!(data[0] & 1))
		n += (size_t)snprintf(buf + n, 16, "end %08x\n", crc32c(buf, n));
	err[0] = '\0';
	rc = pr_file_parse(p, buf, n, "fuzz.state", err, sizeof(err));
	if (rc == PR_LOAD_BAD && strncmp(err, "fuzz.state", 10))
		abort();            /* a refusal names the file */
	if (rc != 0)
		goto out;
	again = pr_file_format(p, &len);
	if (!again)
		goto out;
	if (pr_file_parse(q, again, len, "again", err, sizeof(err)) != 0 || !same(p, q))
		abort();            /* what we write must read back as it was */
out:
	free(again);
	free(buf);
out_free:
	fuzz_lun_free(p);
	fuzz_lun_free(q);
	return 0;
}
