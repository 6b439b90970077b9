/*
 * Check suite for fault injection: the rule vocabulary (conf/fault.c, table
 * driven: what is accepted and how it reads back, what is refused and what
 * the message says), and the SCSI seams (scsi/fault.c, scsi/fault_hold.c)
 * on a memory LUN: answers and sense, withdrawn commands, every/count,
 * probability drawn from the seed only, out-of-space byte accounting, a
 * capacity change given back, a delayed command and an aborted stall that
 * never reaches the medium.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/check_suites.h"
#include "conf/fault.h"
#include "scsi/fault.h"
#include "scsi/stats.h"
#include "backstore/backstore.h"
#include "backstore/io_engine.h"
#include "common/util.h"

/* ---- the vocabulary -------------------------------------------------- */

struct rule_case {
	const char *words;      /* KEY=VALUE ... */
	const char *want;       /* conf_fault_format(), or NULL when refused */
	const char *err;        /* part of the message when refused */
};

static const struct rule_case rule_cases[] = {
	{ "action=medium-error lba=100-199", "action=medium-error op=read,write,verify lba=100-199", NULL },
	{ "action=medium-error lba=100+50 op=read", "action=medium-error op=read lba=100-149", NULL },
	{ "action=check-condition sense=4/44/0 info=9", "action=hardware-error op=any sense=4/44/00 info=9",
	  NULL },
	{ "action=check-condition sense=3/11/2", "action=check-condition op=any sense=3/11/02", NULL },
	{ "action=busy every=10 count=3", "action=busy op=any every=10 count=3", NULL },
	{ "action=latency delay=10ms-50ms seed=5",
	  "action=latency op=any seed=5 delay=uniform:10ms:50ms", NULL },
	{ "action=latency delay=spike:500ms:0.01 op=read",
	  "action=latency op=read seed=1 delay=spike:500ms:0.01", NULL },
	{ "scenario=slow-disk", "scenario=slow-disk action=latency op=read,write seed=1 delay=exp:20ms", NULL },
	{ "scenario=ats-heartbeat-miscompare offset=7",
	  "scenario=ats-heartbeat-miscompare action=miscompare op=caw count=1 offset=7", NULL },
	{ "scenario=apd", "scenario=apd action=stall op=any", NULL },
	{ "scenario=out-of-space after_bytes=1M",
	  "scenario=out-of-space action=space-allocation-failed op=write,write-same after_bytes=1048576 "
	  "sense=7/27/07", NULL },
	{ "action=stall timeout=30s op=read probability=25% seed=3",
	  "action=stall op=read probability=0.25 seed=3 timeout=30s", NULL },
	{ "action=withdraw what=caw,unmap", "action=withdraw what=caw,unmap", NULL },
	{ "action=alua tpgt=2 state=standby", "action=alua tpgt=2 state=standby", NULL },
	{ "action=refuse-login duration=30s", "action=refuse-login duration=30s login_status=0x0301", NULL },
	{ "scenario=path-flap portal=127.0.0.1:3261",
	  "scenario=path-flap action=close-portal portal=127.0.0.1:3261 period=30s down=10s", NULL },
	/* refused */
	{ "lba=1", NULL, "missing" },
	{ "action=medium-eror", NULL, "is not an action" },
	{ "action=latency", NULL, "required by latency" },
	{ "action=check-condition", NULL, "required by check-condition" },
	{ "action=busy delay=1ms", NULL, "not used by action busy" },
	{ "action=busy lba=9-1", NULL, "not an LBA range" },
	{ "action=busy after=5", NULL, "not a duration" },
	{ "action=busy probability=1.5", NULL, "not a probability" },
	{ "action=busy sense=10/1/1", NULL, "KEY/ASC/ASCQ" },
	{ "action=busy op=read,fly", NULL, "neither an operation code" },
	{ "action=busy op=!any", NULL, "leaves no operation code" },
	{ "action=withdraw what=caw lba=5", NULL, "not used by action withdraw" },
	{ "scenario=path-flap", NULL, "path-flap needs the portal" },
	{ "scenario=pdl action=busy", NULL, "sets the action itself" },
	{ "action=busy name=rule7", NULL, "daemon's own" },
	{ "action=busy busy=1", NULL, "unknown key" },
	{ "action=busy count=2 count=3", NULL, "given twice" },
	{ "action=nop-storm rate=5000", NULL, "out of range" },
};

static int parse_words(struct conf_fault *f, const char *words, char *err, size_t errlen)
{
	char buf[512], *save = NULL;
	const char *bad;

	conf_fault_init(f);
	snprintf(buf, sizeof(buf), "%s", words);
	for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');

		ck_assert_ptr_nonnull(eq);
		*eq = 0;
		if (conf_fault_set(f, w, eq + 1, err, errlen))
			return -1;
	}
	return conf_fault_finish(f, err, errlen, &bad);
}

START_TEST(test_rule_table)
{
	const struct rule_case *c = &rule_cases[_i];
	struct conf_fault f;
	char err[512] = "", text[512];
	int rc = parse_words(&f, c->words, err, sizeof(err));

	if (!c->want) {
		ck_assert_msg(rc == -1, "'%s' was accepted", c->words);
		ck_assert_msg(strstr(err, c->err), "'%s': message '%s' lacks '%s'", c->words, err, c->err);
		return;
	}
	ck_assert_msg(rc == 0, "'%s' refused: %s", c->words, err);
	conf_fault_format(&f, text, sizeof(text));
	ck_assert_msg(!strcmp(text, c->want), "'%s' reads back as '%s', not '%s'", c->words, text, c->want);
}
END_TEST

START_TEST(test_durations)
{
	uint64_t ns;

	ck_assert_int_eq(conf_parse_duration("250us", &ns), 0);
	ck_assert_uint_eq(ns, 250000);
	ck_assert_int_eq(conf_parse_duration("1.5s", &ns), 0);
	ck_assert_uint_eq(ns, 1500000000ull);
	ck_assert_int_eq(conf_parse_duration("0", &ns), 0);
	ck_assert_uint_eq(ns, 0);
	ck_assert_int_eq(conf_parse_duration("20", &ns), -1);
	ck_assert_int_eq(conf_parse_duration("-1s", &ns), -1);
	ck_assert_int_eq(conf_parse_duration("40d", &ns), -1);
	ck_assert_int_eq(conf_parse_duration("31d", &ns), -1);
}
END_TEST

/* ---- the SCSI seams -------------------------------------------------- */

#define BLOCKS 8192u
#define BUF_CAP (1u << 20)

static struct scsi_target tgt;
static struct scsi_nexus nx;
static struct io_engine *eng;
static struct backstore *bs;
static struct scsi_lun *lun;
static uint8_t *buf;
static int completed;
static unsigned next_id = 1;

static void setup(void)
{
	struct bs_params bp = { .type = "memory", .size = (uint64_t)BLOCKS * 512, .block_size = 512 };
	struct scsi_lun_params lp = { .id = 0, .block_size = 512, .nblocks = BLOCKS, .thin = true };
	char err[128];

	eng = io_engine_create(64, false);
	ck_assert_ptr_nonnull(eng);
	ck_assert_int_eq(backstore_open(&bs, &bp, err, sizeof(err)), 0);
	scsi_target_init(&tgt, "iqn.2026-01.org.example:fault-test", 1);
	ck_assert_int_eq(scsi_lun_create(&lun, &tgt, &lp, bs), 0);
	tgt.luns[0] = lun;
	memset(&nx, 0, sizeof(nx));
	nx.id = 1;
	nx.tpgt = 1;
	snprintf(nx.initiator_name, sizeof(nx.initiator_name), "iqn.2026-01.org.example:host");
	scsi_nexus_attach(&tgt, &nx);
	scsi_ua_clear(&nx, 0);
	buf = calloc(1, BUF_CAP);
	ck_assert_ptr_nonnull(buf);
}

static void teardown(void)
{
	scsi_nexus_detach(&nx);
	scsi_lun_destroy(lun);
	scsi_target_destroy(&tgt);
	io_engine_destroy(eng);
	backstore_close(bs);
	free(buf);
}

static void on_complete(struct scsi_cmd *cmd)
{
	(void)cmd;
	completed++;
}

static void arm(const char *words)
{
	struct conf_fault f;
	struct scsi_fault_retired ret = { .n = 0 };
	struct scsi_fault_rule *r;
	char err[512], text[512];

	ck_assert_msg(parse_words(&f, words, err, sizeof(err)) == 0, "%s: %s", words, err);
	conf_fault_format(&f, text, sizeof(text));
	r = scsi_fault_rule_new(&f.spec, next_id++, text, conf_fault_action_name(&f.spec));
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(scsi_fault_add(lun, r, &ret, err, sizeof(err)) == 0, "%s: %s", words, err);
	scsi_fault_retired_free(&ret);   /* no other thread reads the LUN here */
}

static void disarm_all(void)
{
	struct scsi_fault_retired ret = { .n = 0 };

	scsi_fault_remove(lun, NULL, NULL, &ret);
	scsi_fault_retired_free(&ret);
}

/* Parse and run one command; returns its status (and the sense in c). */
static void run_start(struct scsi_cmd *c, const uint8_t *cdb, bool *pending)
{
	memset(c, 0, sizeof(*c));
	c->buf = buf;
	c->buf_cap = BUF_CAP;
	scsi_cmd_reset(c);
	c->nexus = &nx;
	memcpy(c->cdb, cdb, 16);
	c->eng = eng;
	c->complete = on_complete;
	*pending = false;
	if (scsi_cmd_parse(c) != SR_OK)
		return;
	c->exp_xfer_len = c->xfer_len;
	if (c->dir == SCSI_DIR_WRITE) {
		c->buf_len = c->xfer_len;
		memset(c->buf, 0xa5, c->buf_len);
	}
	*pending = scsi_cmd_execute(c);
}

static void run_wait(struct scsi_cmd *c, int before)
{
	(void)c;
	while (completed == before)
		io_engine_wait(eng);
}

static uint8_t run(struct scsi_cmd *c, const uint8_t *cdb)
{
	bool pending;
	int before = completed;

	run_start(c, cdb, &pending);
	if (pending)
		run_wait(c, before);
	scsi_stats_release(c);
	return c->status;
}

static void read16_cdb(uint8_t *cdb, uint64_t lba, uint32_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = 0x88;
	put_be64(cdb + 2, lba);
	put_be32(cdb + 10, n);
}

static void write16_cdb(uint8_t *cdb, uint64_t lba, uint32_t n)
{
	read16_cdb(cdb, lba, n);
	cdb[0] = 0x8a;
}

START_TEST(test_medium_error)
{
	struct scsi_cmd c;
	uint8_t cdb[16];

	arm("action=medium-error lba=100-199");
	read16_cdb(cdb, 96, 8);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_CHECK_CONDITION);
	/* fixed format: VALID, INFORMATION = 100, MEDIUM ERROR 11/00 */
	ck_assert_uint_eq(c.sense[0], 0xf0);
	ck_assert_uint_eq(get_be32(c.sense + 3), 100);
	ck_assert_uint_eq(c.sense[2] & 0xf, 3);
	ck_assert_uint_eq(c.sense[12], 0x11);
	ck_assert_uint_eq(c.data_len, 0);
	write16_cdb(cdb, 150, 1);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_CHECK_CONDITION);
	ck_assert_uint_eq(c.sense[12], 0x0c);
	ck_assert_uint_eq(get_be32(c.sense + 3), 150);
	read16_cdb(cdb, 200, 8);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_GOOD);
	disarm_all();
	read16_cdb(cdb, 96, 8);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_GOOD);
	ck_assert(!scsi_fault_armed(lun));
}
END_TEST

START_TEST(test_withdraw)
{
	struct scsi_cmd c;
	uint8_t cdb[16] = { 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 1, 0, 0 };
	const struct scsi_opcode *caw = scsi_opcode_lookup(cdb);

	ck_assert(scsi_op_offered(caw, lun));
	arm("action=withdraw what=caw,xcopy");
	ck_assert(!scsi_op_offered(caw, lun));
	ck_assert_uint_eq(scsi_fault_withdrawn(lun), FAULT_CAP_CAW | FAULT_CAP_XCOPY);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_CHECK_CONDITION);
	ck_assert_uint_eq(c.sense[12], 0x20);   /* INVALID COMMAND OPERATION CODE */
	ck_assert(!atomic_load(&lun->tpc));
	disarm_all();
	ck_assert(scsi_op_offered(caw, lun));
	ck_assert(atomic_load(&lun->tpc));
}
END_TEST

START_TEST(test_every_count)
{
	struct scsi_cmd c;
	uint8_t cdb[16], got[10];
	static const uint8_t want[10] = { 0, 0, 8, 0, 0, 8, 0, 0, 0, 0 };

	arm("action=busy op=read every=3 count=2");
	read16_cdb(cdb, 0, 1);
	for (int i = 0; i < 10; i++)
		got[i] = run(&c, cdb);
	ck_assert_mem_eq(got, want, sizeof(want));
}
END_TEST

/* The same seed gives the same injections; another seed others. */
static uint64_t prob_pattern(const char *words)
{
	struct scsi_cmd c;
	uint8_t cdb[16];
	uint64_t bits = 0;

	disarm_all();
	arm(words);
	read16_cdb(cdb, 0, 1);
	for (int i = 0; i < 64; i++)
		if (run(&c, cdb) != SAM_STAT_GOOD)
			bits |= 1ull << i;
	return bits;
}

START_TEST(test_probability_seed)
{
	uint64_t a = prob_pattern("action=aborted-command op=read probability=0.5 seed=42");
	uint64_t b = prob_pattern("action=aborted-command op=read probability=0.5 seed=42");
	uint64_t d = prob_pattern("action=aborted-command op=read probability=0.5 seed=43");

	ck_assert_uint_eq(a, b);
	ck_assert_uint_ne(a, d);
	ck_assert_uint_gt(__builtin_popcountll(a), 16);   /* about half of 64 */
	ck_assert_uint_lt(__builtin_popcountll(a), 48);
	ck_assert_uint_eq(prob_pattern("action=busy op=read probability=0"), 0);
	ck_assert_uint_eq(prob_pattern("action=busy op=read probability=1"), UINT64_MAX);
}
END_TEST

START_TEST(test_out_of_space)
{
	struct scsi_cmd c;
	uint8_t cdb[16];

	arm("scenario=out-of-space after_bytes=8K");
	for (int i = 0; i < 4; i++) {
		write16_cdb(cdb, (uint64_t)i * 4, 4);   /* 2 KiB each */
		ck_assert_uint_eq(run(&c, cdb), SAM_STAT_GOOD);
	}
	write16_cdb(cdb, 64, 1);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_CHECK_CONDITION);
	ck_assert_uint_eq(c.sense[2] & 0xf, 7);
	ck_assert_uint_eq(c.sense[12], 0x27);
	ck_assert_uint_eq(c.sense[13], 0x07);
	/* the failed write was not applied */
	read16_cdb(cdb, 64, 1);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_GOOD);
	for (int i = 0; i < 512; i++)
		ck_assert_uint_eq(c.buf[i], 0);
}
END_TEST

START_TEST(test_capacity)
{
	struct scsi_fault_retired ret = { .n = 0 };
	struct conf_fault f;
	struct scsi_fault_rule *r;
	char err[512];

	arm("action=capacity size=1M");
	ck_assert_uint_eq(scsi_lun_nblocks(lun), 2048);
	disarm_all();
	ck_assert_uint_eq(scsi_lun_nblocks(lun), BLOCKS);
	/* larger than the backstore: refused, nothing changes */
	ck_assert_int_eq(parse_words(&f, "action=capacity size=1G", err, sizeof(err)), 0);
	r = scsi_fault_rule_new(&f.spec, next_id++, "", "capacity");
	ck_assert_int_eq(scsi_fault_add(lun, r, &ret, err, sizeof(err)), -1);
	scsi_fault_rule_drop(r);
	ck_assert(strstr(err, "up to the LUN's"));
	ck_assert_uint_eq(scsi_lun_nblocks(lun), BLOCKS);
}
END_TEST

START_TEST(test_latency_hold)
{
	struct scsi_cmd c;
	uint8_t cdb[16];
	uint64_t t0;

	arm("action=latency delay=30ms op=read");
	read16_cdb(cdb, 0, 8);
	t0 = scsi_stats_now_ns();
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_GOOD);
	ck_assert_uint_ge(scsi_stats_now_ns() - t0, 30000000ull);
	ck_assert_uint_eq(c.data_len, 4096);
}
END_TEST

/* A stalled WRITE, aborted: TASK ABORTED, and nothing reached the medium. */
START_TEST(test_stall_abort)
{
	struct scsi_cmd c;
	uint8_t cdb[16];
	bool pending;
	int before = completed;

	arm("action=stall op=write");
	write16_cdb(cdb, 500, 1);
	run_start(&c, cdb, &pending);
	ck_assert(pending);
	for (int i = 0; i < 20; i++) {
		io_engine_poll(eng);
		ck_assert_int_eq(completed, before);
		usleep(5000);
	}
	ck_assert_uint_eq(scsi_fault_held(), 1);
	atomic_store(&c.aborted, true);
	run_wait(&c, before);
	ck_assert_uint_eq(c.status, SAM_STAT_TASK_ABORTED);
	scsi_stats_release(&c);
	read16_cdb(cdb, 500, 1);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_GOOD);
	for (int i = 0; i < 512; i++)
		ck_assert_uint_eq(c.buf[i], 0);
}
END_TEST

/* Clearing the rule lets a stalled command go: it runs. */
START_TEST(test_stall_release)
{
	struct scsi_cmd c;
	uint8_t cdb[16];
	bool pending;
	int before = completed;

	arm("action=stall op=write");
	write16_cdb(cdb, 600, 1);
	run_start(&c, cdb, &pending);
	ck_assert(pending);
	disarm_all();
	run_wait(&c, before);
	ck_assert_uint_eq(c.status, SAM_STAT_GOOD);
	scsi_stats_release(&c);
	read16_cdb(cdb, 600, 1);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_GOOD);
	ck_assert_uint_eq(c.buf[0], 0xa5);
}
END_TEST

START_TEST(test_scope)
{
	struct scsi_cmd c;
	uint8_t cdb[16];

	arm("action=busy op=read initiator=iqn.2026-01.org.example:other");
	arm("action=task-set-full op=read tpgt=2");
	read16_cdb(cdb, 0, 1);
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_GOOD);
	snprintf(nx.initiator_name, sizeof(nx.initiator_name), "iqn.2026-01.org.example:other");
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_BUSY);
	snprintf(nx.initiator_name, sizeof(nx.initiator_name), "iqn.2026-01.org.example:host");
	nx.tpgt = 2;
	ck_assert_uint_eq(run(&c, cdb), SAM_STAT_TASK_SET_FULL);
	nx.tpgt = 1;
}
END_TEST

Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("rules");
	TCase *ts = tcase_create("seams");

	tcase_add_loop_test(tc, test_rule_table, 0, (int)ARRAY_SIZE(rule_cases));
	tcase_add_test(tc, test_durations);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(ts, setup, teardown);
	tcase_add_test(ts, test_medium_error);
	tcase_add_test(ts, test_withdraw);
	tcase_add_test(ts, test_every_count);
	tcase_add_test(ts, test_probability_seed);
	tcase_add_test(ts, test_out_of_space);
	tcase_add_test(ts, test_capacity);
	tcase_add_test(ts, test_latency_hold);
	tcase_add_test(ts, test_stall_abort);
	tcase_add_test(ts, test_stall_release);
	tcase_add_test(ts, test_scope);
	tcase_set_timeout(ts, 30);
	suite_add_tcase(s, ts);
	return s;
}
