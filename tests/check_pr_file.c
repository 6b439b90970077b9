/*
 * Check suite for scsi/pr_file.c, the APTPL state file: the version 2
 * format round trip, port names that try to inject lines or fields
 * (space, newline with a forged registration behind it, CR, '%', bytes
 * 0x7f and above, the longest name), version 1 files still read and
 * rewritten as version 2, and damaged files refused with FILE:LINE: and
 * the LUN's state left untouched (table-driven).
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/check_suites.h"
#include "scsi/pr_int.h"
#include "common/crc32c.h"
#include "common/util.h"

static char dir[64], path[128];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/check-prfile.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pr-t-lun0.state", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

static struct pr_lun *lun_new(void)
{
	struct pr_lun *p = calloc(1, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	p->regs = calloc(PR_MAX_REGS, sizeof(*p->regs));
	ck_assert_ptr_nonnull(p->regs);
	p->cap = PR_MAX_REGS;
	p->holder = -1;
	p->path = path;
	return p;
}

static void lun_free(struct pr_lun *p)
{
	free(p->regs);
	free(p);
}

static void add_reg(struct pr_lun *p, uint64_t key, uint16_t rtpi, const char *port)
{
	struct pr_reg *r = &p->regs[p->n++];

	memset(r, 0, sizeof(*r));
	r->key = key;
	r->rtpi = rtpi;
	snprintf(r->port, sizeof(r->port), "%s", port);
}

static char *slurp(size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = calloc(1, 1 << 20);
	size_t n;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(b);
	n = fread(b, 1, (1 << 20) - 1, f);
	fclose(f);
	if (len)
		*len = n;
	return b;
}

static unsigned count_lines(const char *b)
{
	unsigned n = 0;

	for (; *b; b++)
		n += *b == '\n';
	return n;
}

/* Write body + its checksum line as the state file. */
static void write_file(const char *body)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "%send %08x\n", body, crc32c(body, strlen(body)));
	fclose(f);
}

static void expect_same(const struct pr_lun *a, const struct pr_lun *b)
{
	ck_assert_uint_eq(a->n, b->n);
	ck_assert_uint_eq(a->generation, b->generation);
	ck_assert_int_eq(a->resv, b->resv);
	if (a->resv) {
		ck_assert_uint_eq(a->type, b->type);
		ck_assert_int_eq(a->holder, b->holder);
	}
	for (unsigned i = 0; i < a->n; i++) {
		ck_assert_uint_eq(a->regs[i].key, b->regs[i].key);
		ck_assert_uint_eq(a->regs[i].rtpi, b->regs[i].rtpi);
		ck_assert_int_eq(a->regs[i].all_tg_pt, b->regs[i].all_tg_pt);
		ck_assert_int_eq(a->regs[i].name_only, b->regs[i].name_only);
		ck_assert_str_eq(a->regs[i].port, b->regs[i].port);
	}
}

START_TEST(test_round_trip)
{
	struct pr_lun *p = lun_new(), *q = lun_new();
	char err[512], *text;

	p->generation = 7;
	add_reg(p, 0xab, 1, "iqn.1994-05.com.example:host1,i,0x23d000000001");
	add_reg(p, 0xcd, 2, "iqn.1994-05.com.example:host2");
	p->regs[1].name_only = true;
	p->regs[1].all_tg_pt = true;
	p->resv = true;
	p->type = PR_TYPE_WE_RO;
	p->holder = 1;
	ck_assert_int_eq(pr_file_save(p, err, sizeof(err)), 0);
	text = slurp(NULL);
	ck_assert_ptr_nonnull(strstr(text, "targetd-pr 2\ngeneration 7\n"
				    "reg 00000000000000ab 1 0 0 iqn.1994-05.com.example:host1,i,0x23d000000001\n"
				    "reg 00000000000000cd 2 1 1 iqn.1994-05.com.example:host2\n"
				    "resv 5 0 1\nend "));
	free(text);
	ck_assert_int_eq(pr_file_load(q, err, sizeof(err)), 0);
	expect_same(p, q);
	ck_assert(q->aptpl);
	lun_free(p);
	lun_free(q);
}
END_TEST

/* Whatever bytes a port name holds, it stays one field of one line and
 * reads back as it was: no line, registration or reservation can be
 * forged through a name. */
static const char *const inject_names[] = {
	"iqn.2026-01.org.example:a b",
	"iqn.2026-01.org.example:x\nreg 00000000000000ff 1 1 0 iqn.2026-01.org.evil:x\nresv 3 0 1",
	"iqn.2026-01.org.example:x\nend 00000000",
	"iqn.2026-01.org.example:cr\rlf",
	"iqn.2026-01.org.example:del\x7f",
	"iqn.2026-01.org.example:caf\xc3\xa9\x80\xff",
	"iqn.2026-01.org.example:pct%0A%41%%",
	"\t",
};

START_TEST(test_injection)
{
	struct pr_lun *p = lun_new(), *q = lun_new();
	char err[512], *text, longest[PR_PORT_MAX];
	unsigned i;

	p->generation = 3;
	for (i = 0; i < ARRAY_SIZE(inject_names); i++)
		add_reg(p, 0x100 + i, 1, inject_names[i]);
	memset(longest, 0xff, sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	add_reg(p, 0x200, 1, longest);
	p->resv = true;
	p->type = PR_TYPE_WE;
	p->holder = 0;
	ck_assert_int_eq(pr_file_save(p, err, sizeof(err)), 0);
	text = slurp(NULL);
	/* header, generation, one line per registration, resv, end */
	ck_assert_uint_eq(count_lines(text), 2 + p->n + 1 + 1);
	for (const char *c = text; *c; c++)
		ck_assert_msg((*c >= 0x21 && *c < 0x7f) || *c == ' ' || *c == '\n',
			      "byte %#x in the file", (unsigned char)*c);
	free(text);
	ck_assert_int_eq(pr_file_load(q, err, sizeof(err)), 0);
	expect_same(p, q);
	lun_free(p);
	lun_free(q);
}
END_TEST

/* A file written before version 2 (names unescaped) is still read; the
 * next save writes version 2. */
START_TEST(test_version1)
{
	struct pr_lun *q = lun_new();
	char err[512], *text;

	write_file("targetd-pr 1\ngeneration 4\n"
		   "reg 00000000000000ab 1 0 0 iqn.1994-05.com.example:Host1,i,0x23d000000001\n"
		   "reg 00000000000000cd 1 0 1 iqn.1994-05.com.example:host2\n"
		   "resv 1 0 0\n");
	ck_assert_int_eq(pr_file_load(q, err, sizeof(err)), 0);
	ck_assert_uint_eq(q->n, 2);
	ck_assert_uint_eq(q->generation, 4);
	ck_assert_str_eq(q->regs[0].port, "iqn.1994-05.com.example:Host1,i,0x23d000000001");
	ck_assert(q->regs[1].name_only);
	ck_assert(q->resv);
	ck_assert_int_eq(q->holder, 0);
	ck_assert_int_eq(pr_file_save(q, err, sizeof(err)), 0);
	text = slurp(NULL);
	ck_assert_ptr_nonnull(strstr(text, "targetd-pr 2\n"));
	free(text);
	lun_free(q);
}
END_TEST

/* Damaged files: the message names the file and the line; the LUN's state
 * is not touched. */
static const struct bad_case {
	const char *body;       /* NULL: raw file content in raw */
	const char *raw;
	const char *want;       /* after "<path>" */
} bad_cases[] = {
	{ "targetd-pr 3\ngeneration 1\n", NULL, ":1: not a targetd reservation file" },
	{ "targetd-pr 2\ngeneration x\n", NULL, ":2: bad generation" },
	{ "targetd-pr 2\ngeneration 4294967296\n", NULL, ":2: bad generation" },
	{ "targetd-pr 2\ngeneration 1\ngeneration 2\n", NULL, ":3: bad generation" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 1 0 0 iqn.x a\n", NULL, ":3: bad registration" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 1 0 0 iqn.2026-01.org.e:%0a\n", NULL,
	  ":3: bad registration: bad initiator port name" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 1 0 0 iqn.2026-01.org.e:%41\n", NULL,
	  ":3: bad registration: bad initiator port name" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 1 0 0 iqn.2026-01.org.e:%00\n", NULL,
	  ":3: bad registration: bad initiator port name" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 1 0 0 iqn.2026-01.org.e:%4\n", NULL,
	  ":3: bad registration: bad initiator port name" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 65536 0 0 iqn.2026-01.org.e:x\n", NULL,
	  ":3: bad registration" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 1 2 0 iqn.2026-01.org.e:x\n", NULL, ":3: bad registration" },
	{ "targetd-pr 2\ngeneration 1\nreg 1  1 0 0 iqn.2026-01.org.e:x\n", NULL, ":3: bad registration" },
	{ "targetd-pr 2\ngeneration 1\nreg 11111111111111111 1 0 0 iqn.2026-01.org.e:x\n", NULL,
	  ":3: bad registration" },
	{ "targetd-pr 1\ngeneration 1\nreg 1 1 0 0 iqn.2026-01.org.e:\x01\n", NULL,
	  ":3: bad registration: bad initiator port name" },
	{ "targetd-pr 2\ngeneration 1\nresv 1 0 0\n", NULL, ": the reservation names no registration" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 1 0 0 iqn.2026-01.org.e:x\nresv 9 0 0\n", NULL,
	  ":4: bad reservation" },
	{ "targetd-pr 2\ngeneration 1\nreg 1 1 0 0 iqn.2026-01.org.e:x\nresv 1 0 0\nresv 1 0 0\n",
	  NULL, ":5: a second reservation" },
	{ "targetd-pr 2\ngeneration 1\nend 00000000\n", NULL, ":3: unknown line" },
	{ "targetd-pr 2\ngeneration 1\n\n", NULL, ":3: empty line" },
	{ "targetd-pr 2\n", NULL, ": incomplete: no generation line" },
	{ NULL, "targetd-pr 2\ngeneration 1\n", ": truncated" },
	{ NULL, "targetd-pr 2\ngeneration 1\nend 12345678\n", ": checksum mismatch" },
	{ NULL, "targetd-pr 2\ngeneration 1\nend 1234567\n", ": truncated" },
	{ NULL, "", ": truncated" },
};

START_TEST(test_damaged)
{
	const struct bad_case *bc = &bad_cases[_i];
	struct pr_lun *q = lun_new();
	char err[512], want[256];

	if (bc->body) {
		write_file(bc->body);
	} else {
		FILE *f = fopen(path, "wb");

		ck_assert_ptr_nonnull(f);
		fputs(bc->raw, f);
		fclose(f);
	}
	q->generation = 99;
	add_reg(q, 0x42, 1, "iqn.2026-01.org.example:kept");
	ck_assert_int_eq(pr_file_load(q, err, sizeof(err)), PR_LOAD_BAD);
	snprintf(want, sizeof(want), "%s%s", path, bc->want);
	ck_assert_msg(!strncmp(err, want, strlen(want)), "got \"%s\", want \"%s...\"", err, want);
	ck_assert_uint_eq(q->n, 1);
	ck_assert_uint_eq(q->generation, 99);
	ck_assert_str_eq(q->regs[0].port, "iqn.2026-01.org.example:kept");
	lun_free(q);
}
END_TEST

START_TEST(test_no_file)
{
	struct pr_lun *q = lun_new();
	char err[512];

	ck_assert_int_eq(pr_file_load(q, err, sizeof(err)), 0);
	ck_assert_uint_eq(q->n, 0);
	ck_assert(!q->aptpl);
	lun_free(q);
}
END_TEST

Suite *pr_file_suite(void)
{
	Suite *s = suite_create("pr_file");
	TCase *tc = tcase_create("pr_file");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_injection);
	tcase_add_test(tc, test_version1);
	tcase_add_loop_test(tc, test_damaged, 0, (int)ARRAY_SIZE(bad_cases));
	tcase_add_test(tc, test_no_file);
	suite_add_tcase(s, tc);
	return s;
}
