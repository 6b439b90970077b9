/*
 * Check suite for scsi/stats.c: commands run through the real SCSI layer
 * (memory backstore) and the counters they must produce; the derivations
 * from status and sense (COMPARE AND WRITE miscompares, RESERVATION
 * CONFLICT by opcode, UNMAP/WRITE SAME/XCOPY parameter lists); explicit
 * handler reports taking a counter over; shards written by several
 * threads summed exactly; reset by baseline; LUN holds; quantiles; and the
 * JSON and Prometheus renderings of the admin interface.
 */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "tests/check_suites.h"
#include "tests/scsi_harness.h"
#include "backstore/backstore.h"
#include "backstore/io_engine.h"
#include "scsi/scsi.h"
#include "scsi/stats.h"
#include "targetd/control.h"
#include "targetd/target.h"

#define ST_IQN "iqn.2026-01.org.example:stats"
#define ST_BLOCKS 4096u

static struct scsi_target tgt;
static struct scsi_nexus nx;
static struct backstore *membs;
static struct scsi_lun *lun;
static uint8_t *buf;

static void setup(void)
{
	struct scsi_lun_params lp = { .id = 0, .block_size = 512, .nblocks = ST_BLOCKS };

	sh_setup(1u << 20);
	buf = sh_buf;
	membs = sh_memory_bs((uint64_t)ST_BLOCKS * 512, false);
	scsi_target_init(&tgt, ST_IQN, 0);
	ck_assert_int_eq(scsi_lun_create(&lun, &tgt, &lp, membs), 0);
	ck_assert_ptr_nonnull(lun->priv_stats);
	tgt.luns[0] = lun;
	memset(&nx, 0, sizeof(nx));
	nx.id = 1;
	scsi_nexus_attach(&tgt, &nx);
}

static void teardown(void)
{
	scsi_nexus_detach(&nx);
	scsi_lun_destroy(lun);
	scsi_target_destroy(&tgt);
	sh_teardown();
	backstore_close(membs);
}

/* Run a CDB the way the transport does, with the statistics hooks: hold
 * at parse, cmd_done at status, release at the end (tests/scsi_harness.c
 * checks that the LUN is held until then). */
static uint8_t run(const uint8_t *cdb, const void *out, uint32_t out_len)
{
	struct sh_run r;

	sh_run(&r, &nx, 0, cdb, 16, out, out_len);
	return r.cmd.status;
}

static void snap(struct scsi_stats_counters *c)
{
	scsi_stats_snapshot(lun, c);
}

START_TEST(test_read_write_counts)
{
	uint8_t rd[16] = { 0x28, 0, 0, 0, 0, 8, 0, 0, 4, 0 };     /* READ(10) 4 blocks */
	uint8_t wr[16] = { 0x2a, 0, 0, 0, 0, 16, 0, 0, 2, 0 };    /* WRITE(10) 2 blocks */
	uint8_t bad[16] = { 0x28, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 1, 0 };  /* out of range */
	uint8_t data[1024];
	struct scsi_stats_counters *c = malloc(sizeof(*c));

	memset(data, 0xab, sizeof(data));
	scsi_ua_clear(&nx, 0);
	for (int i = 0; i < 5; i++)
		ck_assert_uint_eq(run(rd, NULL, 0), SAM_STAT_GOOD);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(run(wr, data, sizeof(data)), SAM_STAT_GOOD);
	ck_assert_uint_eq(run(bad, NULL, 0), SAM_STAT_CHECK_CONDITION);
	snap(c);
	ck_assert_uint_eq(c->ops[0x28], 6);
	ck_assert_uint_eq(c->ops[0x2a], 3);
	ck_assert_uint_eq(c->read_cmds, 5);
	ck_assert_uint_eq(c->read_bytes, 5 * 4 * 512);
	ck_assert_uint_eq(c->write_cmds, 3);
	ck_assert_uint_eq(c->write_bytes, 3 * 1024);
	ck_assert_uint_eq(c->status[STATS_ST_GOOD], 8);
	ck_assert_uint_eq(c->status[STATS_ST_CHECK_CONDITION], 1);
	ck_assert_uint_eq(c->sense_key[SK_ILLEGAL_REQUEST], 1);
	/* latency: reads (including the failed one) and writes, in buckets */
	{
		uint64_t nr = 0, nw = 0;

		for (unsigned b = 0; b < SCSI_STATS_LAT_BUCKETS; b++) {
			nr += c->lat[STATS_LAT_READ][b];
			nw += c->lat[STATS_LAT_WRITE][b];
		}
		ck_assert_uint_eq(nr, 6);
		ck_assert_uint_eq(nw, 3);
		ck_assert_uint_gt(c->lat_sum_ns[STATS_LAT_READ], 0);
		/* backstore latency: one request per command that reached the
		 * backstore, each inside its command's time */
		nr = nw = 0;
		for (unsigned b = 0; b < SCSI_STATS_LAT_BUCKETS; b++) {
			nr += c->lat_bs[STATS_LAT_READ][b];
			nw += c->lat_bs[STATS_LAT_WRITE][b];
		}
		ck_assert_uint_eq(nr, 5);
		ck_assert_uint_eq(nw, 3);
		ck_assert_uint_le(c->lat_bs_sum_ns[STATS_LAT_READ], c->lat_sum_ns[STATS_LAT_READ]);
		ck_assert_uint_le(c->lat_bs_sum_ns[STATS_LAT_WRITE], c->lat_sum_ns[STATS_LAT_WRITE]);
	}
	ck_assert(!scsi_stats_lun_busy(lun));
	free(c);
}
END_TEST

START_TEST(test_unit_attention_counted)
{
	uint8_t tur[16] = { 0 };
	struct scsi_stats_counters *c = malloc(sizeof(*c));

	/* the nexus starts with POWER ON: one UA, then GOOD */
	ck_assert_uint_eq(run(tur, NULL, 0), SAM_STAT_CHECK_CONDITION);
	ck_assert_uint_eq(run(tur, NULL, 0), SAM_STAT_GOOD);
	snap(c);
	ck_assert_uint_eq(c->ua, 1);
	ck_assert_uint_eq(c->sense_key[SK_UNIT_ATTENTION], 1);
	ck_assert_uint_eq(c->ops[0x00], 2);
	free(c);
}
END_TEST

/* A command with a given result, as a handler would leave it. */
static void fake_done(uint8_t op, uint8_t sa, uint8_t status, uint8_t key, const void *param,
		      uint32_t plen)
{
	struct scsi_cmd c;

	memset(&c, 0, sizeof(c));
	c.lun = lun;
	c.cdb[0] = op;
	c.cdb[1] = sa;
	c.status = status;
	if (status == SAM_STAT_CHECK_CONDITION) {
		c.sense[0] = 0x70;
		c.sense[2] = key;
		c.sense_len = 18;
	}
	if (param) {
		memcpy(buf, param, plen);
		c.buf = buf;
		c.buf_len = c.xfer_len = plen;
	}
	c.start_ns = scsi_stats_now_ns();
	scsi_stats_cmd_done(&c);
	scsi_stats_cmd_done(&c);   /* twice: counted once */
	scsi_stats_cmd_sent(&c);   /* the status went out: the latency */
}

START_TEST(test_vaai_derived)
{
	struct scsi_stats_counters *c = malloc(sizeof(*c));
	uint8_t unmap[8 + 3 * 16] = { 0 };
	uint8_t xcopy[16 + 2 * 32 + 2 * 28] = { 0 };
	struct scsi_cmd ws;

	/* COMPARE AND WRITE: 3 good, 2 miscompares, 1 other error */
	for (int i = 0; i < 3; i++)
		fake_done(0x89, 0, SAM_STAT_GOOD, 0, NULL, 0);
	for (int i = 0; i < 2; i++)
		fake_done(0x89, 0, SAM_STAT_CHECK_CONDITION, SK_MISCOMPARE, NULL, 0);
	fake_done(0x89, 0, SAM_STAT_CHECK_CONDITION, SK_ILLEGAL_REQUEST, NULL, 0);
	/* UNMAP of 3 descriptors: 8 + 16 + 100 blocks */
	put_be16(unmap, 6 + 48);
	put_be16(unmap + 2, 48);
	put_be32(unmap + 8 + 8, 8);
	put_be32(unmap + 24 + 8, 16);
	put_be32(unmap + 40 + 8, 100);
	fake_done(0x42, 0, SAM_STAT_GOOD, 0, unmap, sizeof(unmap));
	/* XCOPY LID1: two E4 CSCDs (4096-byte blocks on the source), two
	 * block->block segments of 10 and 6 blocks */
	put_be16(xcopy + 2, 64);
	put_be32(xcopy + 8, 56);
	xcopy[16] = 0xe4;
	put_be24(xcopy + 16 + 29, 4096);
	xcopy[48] = 0xe4;
	put_be24(xcopy + 48 + 29, 512);
	for (int s = 0; s < 2; s++) {
		uint8_t *d = xcopy + 80 + 28 * s;

		d[0] = 0x02;
		put_be16(d + 2, 24);
		put_be16(d + 4, 0);
		put_be16(d + 6, 1);
		put_be16(d + 10, s ? 6 : 10);
	}
	fake_done(0x83, 0, SAM_STAT_GOOD, 0, xcopy, sizeof(xcopy));
	/* WRITE SAME(16) of 64 blocks, and WRITE SAME(10) with 0 = to the end */
	memset(&ws, 0, sizeof(ws));
	ws.lun = lun;
	ws.cdb[0] = 0x93;
	put_be64(ws.cdb + 2, 100);
	put_be32(ws.cdb + 10, 64);
	scsi_stats_cmd_done(&ws);
	memset(&ws, 0, sizeof(ws));
	ws.lun = lun;
	ws.cdb[0] = 0x41;
	put_be32(ws.cdb + 2, ST_BLOCKS - 10);
	scsi_stats_cmd_done(&ws);
	/* reservation conflicts on WRITE(10) and READ(16); RESERVE/RELEASE */
	fake_done(0x2a, 0, SAM_STAT_RESERVATION_CONFLICT, 0, NULL, 0);
	fake_done(0x2a, 0, SAM_STAT_RESERVATION_CONFLICT, 0, NULL, 0);
	fake_done(0x88, 0, SAM_STAT_RESERVATION_CONFLICT, 0, NULL, 0);
	fake_done(0x16, 0, SAM_STAT_GOOD, 0, NULL, 0);
	fake_done(0x17, 0, SAM_STAT_GOOD, 0, NULL, 0);
	fake_done(0x5f, 0x01, SAM_STAT_GOOD, 0, NULL, 0);   /* PR OUT REGISTER */

	snap(c);
	ck_assert_uint_eq(c->ats_ok, 3);
	ck_assert_uint_eq(c->ats_miscompare, 2);
	ck_assert_uint_eq(c->ops[0x89], 6);
	ck_assert_uint_eq(c->sense_key[SK_MISCOMPARE], 2);
	ck_assert_uint_eq(c->unmap_cmds, 1);
	ck_assert_uint_eq(c->unmap_blocks, 124);
	ck_assert_uint_eq(c->xcopy_cmds, 1);
	ck_assert_uint_eq(c->xcopy_segments, 2);
	ck_assert_uint_eq(c->xcopy_bytes, 16 * 4096);
	ck_assert_uint_eq(c->ws_cmds, 2);
	ck_assert_uint_eq(c->ws_blocks, 64 + 10);
	ck_assert_uint_eq(c->conflicts[0x2a], 2);
	ck_assert_uint_eq(c->conflicts[0x88], 1);
	ck_assert_uint_eq(c->status[STATS_ST_RESERVATION_CONFLICT], 3);
	ck_assert_uint_eq(c->reserve, 1);
	ck_assert_uint_eq(c->release, 1);
	ck_assert_uint_eq(c->pr_out[1], 1);
	{
		uint64_t n = 0;

		for (unsigned b = 0; b < SCSI_STATS_LAT_BUCKETS; b++)
			n += c->lat[STATS_LAT_VAAI][b];
		ck_assert_uint_eq(n, 6 + 1 + 1);   /* CAW, UNMAP, XCOPY with start_ns */
	}
	free(c);
}
END_TEST

START_TEST(test_explicit_reports_take_over)
{
	struct scsi_stats_counters *c = malloc(sizeof(*c));
	struct scsi_cmd x;

	memset(&x, 0, sizeof(x));
	x.lun = lun;
	x.cdb[0] = 0x83;
	x.status = SAM_STAT_GOOD;
	/* a handler reporting two partial steps of one command */
	scsi_stats_xcopy(&x, 1, 4096);
	scsi_stats_xcopy(&x, 2, 8192);
	scsi_stats_xcopy_reflink(&x, 16);
	scsi_stats_cmd_done(&x);      /* no parameter list: derivation skipped */
	memset(&x, 0, sizeof(x));
	x.lun = lun;
	scsi_stats_tmf(lun, 1, 0);
	scsi_stats_tmf(NULL, 6, 0);
	scsi_stats_aborted(&x);

	snap(c);
	ck_assert_uint_eq(c->xcopy_cmds, 1);
	ck_assert_uint_eq(c->xcopy_segments, 3);
	ck_assert_uint_eq(c->xcopy_bytes, 12288);
	ck_assert_uint_eq(c->xcopy_reflink_blocks, 16);
	ck_assert_uint_eq(c->tmf[1], 1);
	ck_assert_uint_eq(c->aborts, 1);
	free(c);
}
END_TEST

/* Several threads, each its own shard, plus unregistered threads on the
 * shared shard: the sum is exact. */
struct worker_arg {
	int idx;      /* -1: not a network thread */
	unsigned n;
};

static void *worker(void *p)
{
	struct worker_arg *a = p;
	struct scsi_cmd c;

	if (a->idx >= 0)
		scsi_stats_thread_init((unsigned)a->idx);
	for (unsigned i = 0; i < a->n; i++) {
		memset(&c, 0, sizeof(c));
		c.lun = lun;
		c.cdb[0] = 0x88;
		c.status = SAM_STAT_GOOD;
		c.data_len = 512;
		scsi_stats_hold(&c);
		scsi_stats_cmd_done(&c);
		scsi_stats_release(&c);
	}
	return NULL;
}

START_TEST(test_shards_sum_exactly)
{
	struct scsi_lun_params lp = { .id = 1, .block_size = 512, .nblocks = 8 };
	struct scsi_lun *saved = lun, *l1;
	struct scsi_stats_counters *c = malloc(sizeof(*c));
	pthread_t th[6];
	struct worker_arg args[6];

	scsi_stats_configure(4);
	ck_assert_int_eq(scsi_lun_create(&l1, &tgt, &lp, membs), 0);
	scsi_stats_configure(0);
	lun = l1;
	for (int i = 0; i < 6; i++) {
		args[i].idx = i < 4 ? i : -1;   /* two threads on the shared shard */
		args[i].n = 20000;
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker, &args[i]), 0);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	snap(c);
	ck_assert_uint_eq(c->ops[0x88], 6 * 20000);
	ck_assert_uint_eq(c->read_bytes, 6ull * 20000 * 512);
	ck_assert(!scsi_stats_lun_busy(l1));
	lun = saved;
	scsi_lun_destroy(l1);
	free(c);
}
END_TEST

START_TEST(test_reset_baseline)
{
	struct scsi_stats_counters *c = malloc(sizeof(*c));

	fake_done(0x28, 0, SAM_STAT_GOOD, 0, NULL, 0);
	fake_done(0x28, 0, SAM_STAT_GOOD, 0, NULL, 0);
	scsi_stats_reset(lun);
	snap(c);
	ck_assert_uint_eq(c->ops[0x28], 0);
	fake_done(0x28, 0, SAM_STAT_GOOD, 0, NULL, 0);
	snap(c);
	ck_assert_uint_eq(c->ops[0x28], 1);
	ck_assert_uint_eq(c->status[STATS_ST_GOOD], 1);
	free(c);
}
END_TEST

START_TEST(test_hold_and_quantiles)
{
	uint64_t b[SCSI_STATS_LAT_BUCKETS] = { 0 };

	scsi_stats_lun_get(lun);
	ck_assert(scsi_stats_lun_busy(lun));
	scsi_stats_lun_put(lun);
	ck_assert(!scsi_stats_lun_busy(lun));

	ck_assert(scsi_stats_quantile_us(b, 0.5) == 0);
	/* 100 samples in [64, 128) us, one in [1024, 2048) */
	b[7] = 100;
	b[11] = 1;
	ck_assert(scsi_stats_quantile_us(b, 0.5) >= 64 && scsi_stats_quantile_us(b, 0.5) <= 128);
	ck_assert(scsi_stats_quantile_us(b, 0.99) <= 128);
	ck_assert(scsi_stats_quantile_us(b, 1.0) >= 1024);
	ck_assert_uint_eq(scsi_stats_bucket_le_us(0), 1);
	ck_assert_uint_eq(scsi_stats_bucket_le_us(10), 1024);
	ck_assert_uint_eq(scsi_stats_bucket_le_us(SCSI_STATS_LAT_BUCKETS - 1), UINT64_MAX);
	ck_assert_str_eq(scsi_stats_opcode_name(0x89), "COMPARE AND WRITE");
	ck_assert_str_eq(scsi_stats_tmf_name(5), "LOGICAL UNIT RESET");
}
END_TEST

START_TEST(test_json_rendering)
{
	struct json_object *o, *v;

	fake_done(0x89, 0, SAM_STAT_GOOD, 0, NULL, 0);
	fake_done(0x89, 0, SAM_STAT_CHECK_CONDITION, SK_MISCOMPARE, NULL, 0);
	fake_done(0x2a, 0, SAM_STAT_RESERVATION_CONFLICT, 0, NULL, 0);
	o = control_lun_stats_json(ST_IQN, lun);
	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "vaai", &v));
	ck_assert(json_object_object_get_ex(v, "compare_and_write", &v));
	ck_assert(json_object_object_get_ex(v, "miscompare", &v));
	ck_assert_int_eq(json_object_get_int(v), 1);
	ck_assert(json_object_object_get_ex(o, "reservations", &v));
	ck_assert(json_object_object_get_ex(v, "conflicts", &v));
	ck_assert(json_object_object_get_ex(v, "total", &v));
	ck_assert_int_eq(json_object_get_int(v), 1);
	ck_assert(json_object_object_get_ex(o, "commands", &v));
	ck_assert(json_object_object_get_ex(v, "total", &v));
	ck_assert_int_eq(json_object_get_int(v), 3);
	json_object_put(o);
}
END_TEST

/* JSON-RPC 2.0: the error object's code, answers keep the id,
 * notifications get none, batches get an array. */
static int rpc_code(struct json_object *r)
{
	struct json_object *e, *c;

	if (!json_object_object_get_ex(r, "error", &e) || !json_object_object_get_ex(e, "code", &c))
		return 0;
	return json_object_get_int(c);
}

START_TEST(test_control_protocol_errors)
{
	struct json_object *r, *v, *e;

	r = control_handle_line("not json");
	ck_assert_int_eq(rpc_code(r), -32700);
	ck_assert(json_object_object_get_ex(r, "id", &v) && v == NULL);
	json_object_put(r);
	/* the old envelope is told which protocol the daemon speaks */
	r = control_handle_line("{\"version\":1,\"command\":\"status\"}");
	ck_assert_int_eq(rpc_code(r), -32600);
	ck_assert(json_object_object_get_ex(r, "error", &e) && json_object_object_get_ex(e, "message", &v));
	ck_assert_ptr_nonnull(strstr(json_object_get_string(v), "JSON-RPC 2.0"));
	json_object_put(r);
	r = control_handle_line("{\"jsonrpc\":\"2.0\",\"method\":\"frobnicate\",\"id\":7}");
	ck_assert_int_eq(rpc_code(r), -32601);
	ck_assert(json_object_object_get_ex(r, "id", &v) && json_object_get_int(v) == 7);
	json_object_put(r);
	r = control_handle_line("{\"jsonrpc\":\"2.0\",\"method\":\"stats\",\"params\":{\"lum\":0},\"id\":\"a\"}");
	ck_assert_int_eq(rpc_code(r), -32602);
	ck_assert(json_object_object_get_ex(r, "id", &v) && !strcmp(json_object_get_string(v), "a"));
	json_object_put(r);
	r = control_handle_line("{\"jsonrpc\":\"2.0\",\"method\":\"stats\",\"params\":{\"lun\":\"x\"},\"id\":1}");
	ck_assert_int_eq(rpc_code(r), -32602);
	json_object_put(r);
	r = control_handle_line("{\"jsonrpc\":\"2.0\",\"method\":\"help\"}");
	ck_assert_ptr_null(r);   /* a notification */
	r = control_handle_line("[{\"jsonrpc\":\"2.0\",\"method\":\"help\",\"id\":1},{\"jsonrpc\":\"2.0\",\"method\":\"help\"},7]");
	ck_assert(json_object_is_type(r, json_type_array));
	ck_assert_int_eq(json_object_array_length(r), 2);
	ck_assert(json_object_object_get_ex(json_object_array_get_idx(r, 0), "result", &v));
	ck_assert(json_object_is_type(v, json_type_array));
	ck_assert_int_eq(rpc_code(json_object_array_get_idx(r, 1)), -32600);
	json_object_put(r);
	r = control_handle_line("[]");
	ck_assert_int_eq(rpc_code(r), -32600);
	json_object_put(r);
}
END_TEST

Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_read_write_counts);
	tcase_add_test(tc, test_unit_attention_counted);
	tcase_add_test(tc, test_vaai_derived);
	tcase_add_test(tc, test_explicit_reports_take_over);
	tcase_add_test(tc, test_shards_sum_exactly);
	tcase_add_test(tc, test_reset_baseline);
	tcase_add_test(tc, test_hold_and_quantiles);
	tcase_add_test(tc, test_json_rendering);
	tcase_add_test(tc, test_control_protocol_errors);
	suite_add_tcase(s, tc);
	return s;
}
