/*
 * vaai-lab bench: a load generator — reads, writes or a mix, random or
 * sequential, any block size, several sessions each with its own queue
 * depth, for a time (after a warm-up) or a number of I/Os; IOPS, MB/s and
 * latency percentiles per direction; --verify checks every block read
 * against what was last written to it.
 *
 * The span (the region, or the LUN) is cut into units of --bs. Random
 * I/O picks a unit uniformly; sequential I/O gives each session its own
 * part of the span and walks it.
 *
 * DESIGN: one thread, one loop (session.c); each session has --qd slots,
 * each slot one command in flight, reissued from its completion. With
 * --verify every unit has a generation (0 = never written by this run)
 * and a busy flag: a slot never picks a unit another slot is using, so
 * the content of a unit is always the pattern of its last generation,
 * which a read checks; at the end every written unit is read back once
 * more. With --data zero every write carries zeroes (what a guest zeroing
 * deleted space sends), and a read of a written unit must return zeroes.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "tools/lab/lab.h"

#define BENCH_VERIFY_MAX_UNITS (64u << 20)

struct bench;

struct bench_slot {
	struct bench *b;
	struct bench_part *part;
	struct lab_io io;
	uint8_t *buf;
	uint64_t unit;
	uint32_t gen;                   /* verify: the generation written or expected */
	bool write;
	bool idle;
};

struct bench_part {
	struct lab_sess *s;
	uint64_t first, n;              /* units of this session (sequential) */
	uint64_t cursor;
	struct bench_slot *slots;
};

struct bench_sample {
	uint64_t reads, writes;
};

struct bench {
	const struct lab_opts *o;
	struct bench_part *parts;
	uint64_t lba, units;
	uint32_t unit_blocks, bs;
	bool stopping, measuring, final_pass;
	uint64_t t_start, t_measure, t_stop;
	uint64_t issued;                /* measured I/Os started (--ios) */
	uint64_t all_ios;               /* every I/O done, warm-up included */
	struct lab_timer timer;
	/* verify */
	uint32_t *gen;
	uint8_t *busy;
	uint64_t salt, checked, mismatches, final_next;
	int64_t bad_lba, bad_byte;
	/* measured */
	uint64_t reads, writes;
	struct lab_hist rlat, wlat;
	struct bench_sample *series;
	unsigned nsec, cap_sec;
	double cpu0, cpu;
};

static void slot_issue(struct bench_slot *sl);

static void bench_sample_add(struct bench *b, bool write)
{
	unsigned sec = (unsigned)((lab_now_ns() - b->t_measure) / LAB_NS);

	if (sec >= b->cap_sec) {
		unsigned n = sec + 32;
		struct bench_sample *ns = realloc(b->series, n * sizeof(*ns));

		if (!ns)
			lab_die("out of memory");
		memset(ns + b->cap_sec, 0, (n - b->cap_sec) * sizeof(*ns));
		b->series = ns;
		b->cap_sec = n;
	}
	if (write)
		b->series[sec].writes++;
	else
		b->series[sec].reads++;
	if (sec + 1 > b->nsec)
		b->nsec = sec + 1;
}

static void bench_stop(struct bench *b)
{
	if (b->stopping)
		return;
	b->stopping = true;
	b->t_stop = lab_now_ns();
	b->cpu = lab_cpu_seconds() - b->cpu0;
	lab_timer_cancel(&b->timer);
}

static void timer_fired(struct lab_timer *t)
{
	struct bench *b = t->arg;

	if (!b->measuring) {
		b->measuring = true;
		b->t_measure = lab_now_ns();
		b->cpu0 = lab_cpu_seconds();
		if (!b->o->ios)
			lab_timer_arm(&b->timer, (uint64_t)(b->o->seconds * 1e9));
		return;
	}
	bench_stop(b);
}

/* A unit nobody uses (verify), starting from u: at most one unit per
 * command in flight is busy, so one more than those is always enough. */
static bool unit_free(struct bench *b, uint64_t *u)
{
	uint64_t tries = (uint64_t)b->o->qd * b->o->sessions + 1;

	if (!b->busy)
		return true;
	for (uint64_t i = 0; i < tries && i < b->units; i++) {
		uint64_t v = (*u + i) % b->units;

		if (!b->busy[v]) {
			*u = v;
			return true;
		}
	}
	return false;
}

static bool slot_pick(struct bench_slot *sl)
{
	struct bench *b = sl->b;
	struct bench_part *p = sl->part;
	uint64_t u;

	if (b->o->random) {
		u = lab_rand() % b->units;
	} else {
		u = p->first + p->cursor;
		p->cursor = (p->cursor + 1) % p->n;
	}
	if (!unit_free(b, &u))
		return false;
	sl->unit = u;
	sl->write = b->o->read_pct < 100 && (b->o->read_pct == 0 || (int)(lab_rand() % 100) >= b->o->read_pct);
	return true;
}

/* The final pass of --verify: read back every unit written. */
static bool slot_pick_final(struct bench_slot *sl)
{
	struct bench *b = sl->b;

	while (b->final_next < b->units && !b->gen[b->final_next])
		b->final_next++;
	if (b->final_next >= b->units)
		return false;
	sl->unit = b->final_next++;
	sl->write = false;
	return true;
}

/* --data zero: the offset of the first byte that is not zero, or -1 */
static int64_t zero_check(const uint8_t *buf, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (buf[i])
			return i;
	return -1;
}

static void slot_check(struct bench_slot *sl)
{
	struct bench *b = sl->b;
	uint64_t lba = b->lba + sl->unit * b->unit_blocks;
	int64_t bad;

	if (!sl->gen)
		return;                 /* never written by this run */
	b->checked += b->unit_blocks;
	bad = b->o->zero_data ? zero_check(sl->buf, b->o->bs)
			      : lab_pattern_check(sl->buf, b->unit_blocks, b->bs, lba, sl->gen, b->salt);
	if (bad < 0)
		return;
	b->mismatches++;
	if (b->bad_lba < 0) {
		b->bad_lba = (int64_t)(lba + (uint64_t)bad / b->bs);
		b->bad_byte = bad % b->bs;
		lab_note("%s: READ(16) LBA %" PRId64 ": the data differs from what was written at "
			 "byte %" PRId64 " of the block", sl->part->s->name, b->bad_lba, b->bad_byte);
	}
}

static void slot_done(struct lab_io *io, struct scsi_task *t)
{
	struct bench_slot *sl = io->priv;
	struct bench *b = sl->b;

	if (io->status != SCSI_STATUS_GOOD) {
		if (lab_is_unit_attention(io->status, t)) {
			if (sl->write)
				lab_write16(&sl->io, io->lba, b->unit_blocks, sl->buf);
			else
				lab_read16(&sl->io, io->lba, b->unit_blocks, sl->buf);
			return;
		}
		lab_die_status(io, t);
	}
	if (b->busy) {
		b->busy[sl->unit] = 0;
		if (sl->write)
			b->gen[sl->unit] = sl->gen;
		else
			slot_check(sl);
	}
	b->all_ios++;
	if (b->measuring && !b->stopping && !b->final_pass) {
		if (sl->write) {
			b->writes++;
			lab_hist_add(&b->wlat, io->lat_ns);
		} else {
			b->reads++;
			lab_hist_add(&b->rlat, io->lat_ns);
		}
		bench_sample_add(b, sl->write);
		if (b->o->ios && b->reads + b->writes >= b->o->ios)
			bench_stop(b);
	}
	slot_issue(sl);
}

static void slot_issue(struct bench_slot *sl)
{
	struct bench *b = sl->b;
	uint64_t lba;

	if (b->final_pass ? !slot_pick_final(sl) : b->stopping || !slot_pick(sl)) {
		sl->idle = true;
		return;
	}
	if (!b->final_pass && b->measuring && b->o->ios && ++b->issued > b->o->ios) {
		sl->idle = true;
		return;
	}
	sl->idle = false;
	lba = b->lba + sl->unit * b->unit_blocks;
	if (b->busy) {
		b->busy[sl->unit] = 1;
		sl->gen = sl->write ? b->gen[sl->unit] + 1 : b->gen[sl->unit];
		if (sl->write && !b->o->zero_data)
			lab_pattern_fill(sl->buf, b->unit_blocks, b->bs, lba, sl->gen, b->salt);
	}
	if (sl->write && b->o->zero_data && b->o->read_pct > 0)
		memset(sl->buf, 0, b->o->bs);   /* a read may have filled it */
	if (sl->write)
		lab_write16(&sl->io, lba, b->unit_blocks, sl->buf);
	else
		lab_read16(&sl->io, lba, b->unit_blocks, sl->buf);
}

static bool all_idle(void *arg)
{
	struct bench *b = arg;

	if (!b->stopping && !b->final_pass)
		return false;
	for (unsigned i = 0; i < b->o->sessions; i++) {
		if (b->parts[i].s->inflight)
			return false;
		for (unsigned k = 0; k < b->o->qd; k++)
			if (!b->parts[i].slots[k].idle)
				return false;
	}
	return true;
}

static void start_all(struct bench *b)
{
	for (unsigned i = 0; i < b->o->sessions; i++)
		for (unsigned k = 0; k < b->o->qd; k++)
			slot_issue(&b->parts[i].slots[k]);
}

/* ---- set-up -------------------------------------------------------------------- */

static void bench_open(struct bench *b, const struct lab_opts *o)
{
	uint64_t lba = 0, blocks;
	struct lab_sess *s0;
	char name[32];

	memset(b, 0, sizeof(*b));
	b->o = o;
	b->bad_lba = b->bad_byte = -1;
	b->parts = lab_xalloc(sizeof(*b->parts) * o->sessions);
	for (unsigned i = 0; i < o->sessions; i++) {
		snprintf(name, sizeof(name), "bench%u", i + 1);
		b->parts[i].s = lab_sess_open(o, name);
	}
	s0 = b->parts[0].s;
	b->bs = s0->bs;
	if (!o->bs || o->bs % b->bs)
		lab_die("--bs %u is not a multiple of the LUN's %u-byte blocks", o->bs, b->bs);
	b->unit_blocks = o->bs / b->bs;
	blocks = s0->nblocks;
	if (o->read_pct < 100 || o->verify)
		lab_region(o, s0, o->size ? o->size / b->bs : b->unit_blocks, &lba, &blocks);
	else if (o->have_region)
		lab_region(o, s0, 0, &lba, &blocks);
	if (o->size) {
		if (o->size / b->bs > blocks)
			lab_die("--size is larger than the %s", o->have_region ? "region" : "LUN");
		blocks = o->size / b->bs;
	}
	b->lba = lba;
	b->units = blocks / b->unit_blocks;
	if (b->units < o->sessions)
		lab_die("the span (%" PRIu64 " blocks) holds fewer --bs units than sessions", blocks);
	if (o->verify && b->units <= (uint64_t)o->qd * o->sessions)
		lab_die("--verify needs more --bs units in the span (%" PRIu64 ") than commands in "
			"flight (%u): give a larger span or a smaller --qd", b->units, o->qd * o->sessions);
	if (o->verify) {
		if (b->units > BENCH_VERIFY_MAX_UNITS)
			lab_die("--verify tracks at most %u units of --bs; give a smaller --size or --region",
				BENCH_VERIFY_MAX_UNITS);
		b->gen = lab_xalloc(sizeof(uint32_t) * b->units);
		b->busy = lab_xalloc(b->units);
		b->salt = lab_rand();
	}
	for (unsigned i = 0; i < o->sessions; i++) {
		struct bench_part *p = &b->parts[i];

		p->first = b->units / o->sessions * i;
		p->n = b->units / o->sessions;
		p->slots = lab_xalloc(sizeof(*p->slots) * o->qd);
		for (unsigned k = 0; k < o->qd; k++) {
			struct bench_slot *sl = &p->slots[k];

			sl->b = b;
			sl->part = p;
			sl->io.s = p->s;
			sl->io.done = slot_done;
			sl->io.priv = sl;
			sl->idle = true;
			sl->buf = lab_xalloc_aligned(o->bs);
			/* without --verify, writes carry a fixed pattern (or
			 * the zeroes lab_xalloc_aligned() left, --data zero) */
			if (!o->zero_data)
				lab_pattern_fill(sl->buf, b->unit_blocks, b->bs, k, i + 1, 0x62656e6368ull);
		}
	}
	lab_timer_init(&b->timer, timer_fired, b);
}

static void bench_close(struct bench *b)
{
	for (unsigned i = 0; i < b->o->sessions; i++) {
		for (unsigned k = 0; k < b->o->qd; k++)
			free(b->parts[i].slots[k].buf);
		free(b->parts[i].slots);
		lab_sess_close(b->parts[i].s);
	}
	free(b->parts);
	free(b->gen);
	free(b->busy);
	free(b->series);
}

/* ---- report ------------------------------------------------------------------------ */

static const char *bench_desc(const struct bench *b, char *buf, size_t n)
{
	const struct lab_opts *o = b->o;
	char rw[32], sz[32];

	if (o->read_pct == 100)
		snprintf(rw, sizeof(rw), "read");
	else if (o->read_pct == 0)
		snprintf(rw, sizeof(rw), "write");
	else
		snprintf(rw, sizeof(rw), "%d/%d read/write", o->read_pct, 100 - o->read_pct);
	snprintf(buf, n, "%s %s %s%s QD%u x %u session%s over %s", lab_fmt_bytes(o->bs, sz, sizeof(sz)),
		 o->random ? "random" : "sequential", rw, o->zero_data ? " of zeroes" : "", o->qd,
		 o->sessions, o->sessions > 1 ? "s" : "",
		 lab_fmt_bytes(b->units * o->bs, (char[32]){ 0 }, 32));
	return buf;
}

static struct json_object *dir_json(uint64_t ios, uint64_t bytes, double secs, const struct lab_hist *h)
{
	struct json_object *d = json_object_new_object();

	json_object_object_add(d, "ios", lab_json_u64(ios));
	json_object_object_add(d, "iops", lab_json_double(secs > 0 ? (double)ios / secs : 0));
	json_object_object_add(d, "mb_s", lab_json_double(secs > 0 ? (double)bytes / secs / 1e6 : 0));
	json_object_object_add(d, "latency", lab_hist_json(h));
	return d;
}

static void bench_json(const struct bench *b, double secs, const struct lab_hist *all)
{
	const struct lab_opts *o = b->o;
	struct json_object *r = json_object_new_object(), *v, *a;
	char desc[200];

	json_object_object_add(r, "command", json_object_new_string("bench"));
	json_object_object_add(r, "url", json_object_new_string(o->url));
	json_object_object_add(r, "workload", json_object_new_string(bench_desc(b, desc, sizeof(desc))));
	json_object_object_add(r, "read_pct", json_object_new_int(o->read_pct));
	json_object_object_add(r, "pattern", json_object_new_string(o->random ? "random" : "sequential"));
	json_object_object_add(r, "data", json_object_new_string(o->zero_data ? "zero" : "random"));
	json_object_object_add(r, "bs", json_object_new_int((int)o->bs));
	json_object_object_add(r, "qd", json_object_new_int((int)o->qd));
	json_object_object_add(r, "sessions", json_object_new_int((int)o->sessions));
	json_object_object_add(r, "lba", lab_json_u64(b->lba));
	json_object_object_add(r, "span_bytes", lab_json_u64(b->units * o->bs));
	json_object_object_add(r, "seconds", lab_json_double(secs));
	json_object_object_add(r, "ios", lab_json_u64(b->reads + b->writes));
	json_object_object_add(r, "iops", lab_json_double(secs > 0 ? (double)(b->reads + b->writes) / secs : 0));
	json_object_object_add(r, "mb_s", lab_json_double(secs > 0 ? (double)(b->reads + b->writes) * o->bs / secs / 1e6 : 0));
	json_object_object_add(r, "ios_total", lab_json_u64(b->all_ios));
	json_object_object_add(r, "client_cpu_s", lab_json_double(b->cpu));
	json_object_object_add(r, "read", dir_json(b->reads, b->reads * o->bs, secs, &b->rlat));
	json_object_object_add(r, "write", dir_json(b->writes, b->writes * o->bs, secs, &b->wlat));
	json_object_object_add(r, "latency", lab_hist_json(all));
	v = json_object_new_object();
	json_object_object_add(v, "enabled", json_object_new_boolean(o->verify));
	json_object_object_add(v, "blocks_checked", lab_json_u64(b->checked));
	json_object_object_add(v, "mismatches", lab_json_u64(b->mismatches));
	if (b->bad_lba >= 0) {
		json_object_object_add(v, "first_mismatch_lba", json_object_new_int64(b->bad_lba));
		json_object_object_add(v, "first_mismatch_byte", json_object_new_int64(b->bad_byte));
	}
	json_object_object_add(r, "verify", v);
	a = json_object_new_array();
	for (unsigned i = 0; i < b->nsec; i++) {
		struct json_object *e = json_object_new_object();
		double l = secs - i >= 1 ? 1 : secs - i > 0.05 ? secs - i : 0.05;

		json_object_object_add(e, "t", json_object_new_int((int)i));
		json_object_object_add(e, "read_iops", lab_json_double((double)b->series[i].reads / l));
		json_object_object_add(e, "write_iops", lab_json_double((double)b->series[i].writes / l));
		json_object_array_add(a, e);
	}
	json_object_object_add(r, "series", a);
	lab_json_print(r);
}

static void bench_table(const struct bench *b, double secs, const struct lab_hist *all)
{
	static const char *const head[] = { "", "IOPS", "MB/s", "avg us", "p50 us", "p99 us",
					    "p99.9 us", "max us" };
	const struct { const char *name; uint64_t ios; const struct lab_hist *h; } rows[] = {
		{ "read", b->reads, &b->rlat }, { "write", b->writes, &b->wlat },
		{ "all", b->reads + b->writes, all },
	};
	struct lab_table t;
	char c[8][32], desc[200];

	printf("bench: %s, %.1f s measured\n\n", bench_desc(b, desc, sizeof(desc)), secs);
	lab_table_init(&t, 8, head);
	for (unsigned i = 0; i < 3; i++) {
		const struct lab_hist *h = rows[i].h;

		if (!rows[i].ios && i < 2)
			continue;
		lab_table_row(&t, rows[i].name, lab_fmt(c[1], 32, "%.0f", secs > 0 ? rows[i].ios / secs : 0),
			      lab_fmt(c[2], 32, "%.1f", secs > 0 ? (double)rows[i].ios * b->o->bs / secs / 1e6 : 0),
			      lab_fmt(c[3], 32, "%.0f", h->count ? (double)h->sum_ns / (double)h->count / 1e3 : 0),
			      lab_fmt(c[4], 32, "%.0f", lab_hist_quantile_us(h, 0.5)),
			      lab_fmt(c[5], 32, "%.0f", lab_hist_quantile_us(h, 0.99)),
			      lab_fmt(c[6], 32, "%.0f", lab_hist_quantile_us(h, 0.999)),
			      lab_fmt(c[7], 32, "%.0f", (double)h->max_ns / 1e3));
	}
	lab_table_print(&t);
	printf("\nclient CPU %.0f %% of one CPU\n", secs > 0 ? 100 * b->cpu / secs : 0);
	if (b->o->verify)
		printf("verify: %" PRIu64 " blocks checked, %" PRIu64 " mismatches\n", b->checked,
		       b->mismatches);
}

static void bench_plot(const struct bench *b, double secs)
{
	struct lab_plot *p = lab_plot_new(b->o->plot);
	const char *path;
	FILE *f = lab_plot_data(p, "series.dat", &path);
	char sc[2048], q[400], desc[200];

	for (unsigned i = 0; i < b->nsec; i++) {
		double l = secs - i >= 1 ? 1 : secs - i > 0.05 ? secs - i : 0.05;

		fprintf(f, "%.3f %.1f %.1f\n", i + l / 2, b->series[i].reads / l, b->series[i].writes / l);
	}
	snprintf(sc, sizeof(sc),
		 "set title %s\nset xlabel 'seconds'\nset ylabel 'IOPS'\nset yrange [0:*]\n"
		 "set key top right\nplot %s using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'read', "
		 "%s using 1:3 with lines lw 2 lc rgb '#d62728' title 'write'\n",
		 lab_plot_str(lab_fmt((char[260]){ 0 }, 260, "vaai-lab bench: %s", bench_desc(b, desc, sizeof(desc))), q, sizeof(q)),
		 path, path);
	lab_plot_run(p, 900, 480, sc);
}

int lab_bench(const struct lab_opts *o)
{
	struct bench b;
	struct lab_hist all;
	double secs;

	bench_open(&b, o);
	b.t_start = lab_now_ns();
	if (o->warmup > 0) {
		lab_timer_arm(&b.timer, (uint64_t)(o->warmup * 1e9));
	} else {
		b.measuring = true;
		b.t_measure = b.t_start;
		b.cpu0 = lab_cpu_seconds();
		if (!o->ios)
			lab_timer_arm(&b.timer, (uint64_t)(o->seconds * 1e9));
	}
	start_all(&b);
	lab_run_until(all_idle, &b, 0, "the benchmark");
	secs = (double)(b.t_stop - b.t_measure) / 1e9;
	if (o->verify) {
		b.final_pass = true;
		start_all(&b);
		lab_run_until(all_idle, &b, 0, "the read-back of --verify");
	}
	memset(&all, 0, sizeof(all));
	lab_hist_merge(&all, &b.rlat);
	lab_hist_merge(&all, &b.wlat);
	if (o->json)
		bench_json(&b, secs, &all);
	else
		bench_table(&b, secs, &all);
	if (o->plot)
		bench_plot(&b, secs);
	bench_close(&b);
	return b.mismatches ? 1 : 0;
}
