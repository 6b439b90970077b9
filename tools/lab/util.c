/*
 * vaai-lab utilities: messages, clocks, latency histograms, sizes,
 * random numbers and back-off, the block pattern, text tables, JSON
 * helpers, and the destructive-region rule.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "tools/lab/lab.h"

bool lab_verbose;

void lab_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("vaai-lab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void lab_note(const char *fmt, ...)
{
	va_list ap;

	fputs("vaai-lab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void *lab_xalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		lab_die("out of memory (%zu bytes)", n);
	return p;
}

void *lab_xalloc_aligned(size_t n)
{
	size_t r = (n + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, r ? r : 4096);

	if (!p)
		lab_die("out of memory (%zu bytes)", n);
	memset(p, 0, r ? r : 4096);
	return p;
}

uint64_t lab_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * LAB_NS + (uint64_t)ts.tv_nsec;
}

double lab_cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* ---- latency histogram ---------------------------------------------------
 * Values below 64 ns have a bucket each; above, every power of two is cut
 * into 32 buckets, so a quantile is within about 3 % of the true value. */

static unsigned hist_index(uint64_t v)
{
	unsigned e, idx;

	if (v < 64)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);
	idx = 64 + (e - 6) * 32 + (unsigned)((v >> (e - 5)) - 32);
	return idx < LAB_HIST_N ? idx : LAB_HIST_N - 1;
}

static double hist_value(unsigned idx)
{
	unsigned e, m;

	if (idx < 64)
		return idx;
	e = (idx - 64) / 32 + 6;
	m = (idx - 64) % 32 + 32;
	/* the middle of the bucket */
	return ((double)m + 0.5) * ldexp(1.0, (int)e - 5);
}

void lab_hist_add(struct lab_hist *h, uint64_t ns)
{
	h->count++;
	h->sum_ns += ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->b[hist_index(ns)]++;
}

double lab_hist_quantile_us(const struct lab_hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return 0;
	want = (uint64_t)ceil(q * (double)h->count);
	if (want < 1)
		want = 1;
	for (unsigned i = 0; i < LAB_HIST_N; i++) {
		seen += h->b[i];
		if (seen >= want) {
			double v = hist_value(i);

			return (v > (double)h->max_ns ? (double)h->max_ns : v) / 1000.0;
		}
	}
	return (double)h->max_ns / 1000.0;
}

void lab_hist_merge(struct lab_hist *dst, const struct lab_hist *src)
{
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	for (unsigned i = 0; i < LAB_HIST_N; i++)
		dst->b[i] += src->b[i];
}

struct json_object *lab_hist_json(const struct lab_hist *h)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "count", lab_json_u64(h->count));
	json_object_object_add(o, "avg_us", lab_json_double(h->count ? (double)h->sum_ns / (double)h->count / 1e3 : 0));
	json_object_object_add(o, "p50_us", lab_json_double(lab_hist_quantile_us(h, 0.50)));
	json_object_object_add(o, "p99_us", lab_json_double(lab_hist_quantile_us(h, 0.99)));
	json_object_object_add(o, "p999_us", lab_json_double(lab_hist_quantile_us(h, 0.999)));
	json_object_object_add(o, "max_us", lab_json_double((double)h->max_ns / 1e3));
	return o;
}

/* ---- sizes -------------------------------------------------------------- */

bool lab_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: return false;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'B' || *end == 'b') && shift)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

char *lab_fmt_bytes(uint64_t v, char *buf, size_t n)
{
	if (v >= (1ull << 30))
		snprintf(buf, n, "%.2f GiB", (double)v / (1ull << 30));
	else if (v >= (1ull << 20))
		snprintf(buf, n, "%.1f MiB", (double)v / (1ull << 20));
	else if (v >= 1024)
		snprintf(buf, n, "%.1f KiB", (double)v / 1024);
	else
		snprintf(buf, n, "%" PRIu64 " B", v);
	return buf;
}

/* ---- random numbers and back-off ---------------------------------------- */

static uint64_t rng_state;

uint64_t lab_rand(void)
{
	uint64_t x;

	if (!rng_state)
		rng_state = lab_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

double lab_rand01(void)
{
	return (double)(lab_rand() >> 11) / (double)(1ull << 53);
}

/* Like an initiator retrying RESERVATION CONFLICT (ESXi waits a random,
 * growing time between retries): min * 2^attempt capped at max, then a
 * uniform draw in [d/2, d] so that retrying sessions do not stay in step. */
uint64_t lab_backoff_ns(const struct lab_opts *o, unsigned attempt)
{
	double d = o->backoff_min_ms * ldexp(1.0, (int)(attempt > 30 ? 30 : attempt));

	if (d > o->backoff_max_ms)
		d = o->backoff_max_ms;
	d *= 0.5 + 0.5 * lab_rand01();
	return (uint64_t)(d * 1e6);
}

/* ---- the block pattern ---------------------------------------------------
 * Each logical block: "VLABPAT1", LBA, generation, salt (32 bytes), then
 * 64-bit words of a xorshift stream seeded from those. A block copied or
 * left stale from another generation or run (salt) fails the check, and
 * so does one written to the wrong LBA. */

#define PAT_MAGIC 0x3154415042414c56ull    /* "VLABPAT1" little-endian */

static uint64_t pat_seed(uint64_t lba, uint64_t gen, uint64_t salt)
{
	uint64_t x = lba * 0x9e3779b97f4a7c15ull ^ gen * 0xbf58476d1ce4e5b9ull ^ salt;

	x ^= x >> 31;
	return x ? x : 1;
}

static void pat_block(uint8_t *p, uint32_t bs, uint64_t lba, uint64_t gen, uint64_t salt)
{
	uint64_t w[4] = { PAT_MAGIC, lba, gen, salt }, x = pat_seed(lba, gen, salt);

	memcpy(p, w, sizeof(w));
	for (uint32_t off = 32; off + 8 <= bs; off += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		memcpy(p + off, &x, 8);
	}
}

void lab_pattern_fill(uint8_t *buf, uint32_t nblocks, uint32_t bs, uint64_t lba, uint64_t gen,
		      uint64_t salt)
{
	for (uint32_t i = 0; i < nblocks; i++)
		pat_block(buf + (size_t)i * bs, bs, lba + i, gen, salt);
}

int64_t lab_pattern_check(const uint8_t *buf, uint32_t nblocks, uint32_t bs, uint64_t lba,
			  uint64_t gen, uint64_t salt)
{
	uint8_t *want = lab_xalloc(bs);
	int64_t bad = -1;

	for (uint32_t i = 0; i < nblocks && bad < 0; i++) {
		const uint8_t *got = buf + (size_t)i * bs;

		pat_block(want, bs, lba + i, gen, salt);
		if (memcmp(got, want, bs)) {
			for (uint32_t k = 0; k < bs; k++) {
				if (got[k] != want[k]) {
					bad = (int64_t)i * bs + k;
					break;
				}
			}
		}
	}
	free(want);
	return bad;
}

int64_t lab_zero_check(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			return (int64_t)i;
	return -1;
}

/* ---- tables --------------------------------------------------------------- */

void lab_table_init(struct lab_table *t, unsigned ncols, const char *const *head)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	for (unsigned c = 1; c < ncols && c < 16; c++)
		t->right[c] = true;
	t->cap = 8;
	t->cells = lab_xalloc(sizeof(char *) * t->cap * ncols);
	for (unsigned c = 0; c < ncols; c++)
		t->cells[c] = strdup(head[c]);
	t->nrows = 1;
}

void lab_table_row(struct lab_table *t, ...)
{
	va_list ap;

	if (t->nrows == t->cap) {
		char **n = realloc(t->cells, sizeof(char *) * t->cap * 2 * t->ncols);

		if (!n)
			lab_die("out of memory");
		t->cells = n;
		t->cap *= 2;
	}
	va_start(ap, t);
	for (unsigned c = 0; c < t->ncols; c++) {
		const char *s = va_arg(ap, const char *);

		t->cells[t->nrows * t->ncols + c] = strdup(s ? s : "-");
	}
	va_end(ap);
	t->nrows++;
}

void lab_table_print(struct lab_table *t)
{
	size_t w[32] = { 0 };

	for (unsigned r = 0; r < t->nrows; r++)
		for (unsigned c = 0; c < t->ncols && c < 32; c++) {
			size_t l = strlen(t->cells[r * t->ncols + c]);

			if (l > w[c])
				w[c] = l;
		}
	for (unsigned r = 0; r < t->nrows; r++) {
		for (unsigned c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			bool last = c + 1 == t->ncols;

			if (t->right[c] && c < 16)
				printf("%*s", (int)w[c], s);
			else if (last)
				fputs(s, stdout);
			else
				printf("%-*s", (int)w[c], s);
			if (!last)
				fputs("  ", stdout);
			free(t->cells[r * t->ncols + c]);
		}
		putchar('\n');
		if (r == 0) {
			for (unsigned c = 0; c < t->ncols; c++) {
				for (size_t k = 0; k < w[c]; k++)
					putchar('-');
				if (c + 1 < t->ncols)
					fputs("  ", stdout);
			}
			putchar('\n');
		}
	}
	free(t->cells);
	t->cells = NULL;
}

char *lab_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return buf;
}

/* ---- JSON ------------------------------------------------------------------ */

void lab_json_print(struct json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(o);
}

struct json_object *lab_json_u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

struct json_object *lab_json_double(double v)
{
	if (!isfinite(v))
		v = 0;
	return json_object_new_double(round(v * 1000.0) / 1000.0);
}

/* ---- destructive regions ----------------------------------------------------- */

void lab_region(const struct lab_opts *o, const struct lab_sess *s, uint64_t need, uint64_t *lba,
		uint64_t *blocks)
{
	const char *cmd = lab_cmd_names[o->cmd];

	if (o->have_region) {
		if (o->region_lba >= s->nblocks || o->region_blocks > s->nblocks - o->region_lba)
			lab_die("--region %" PRIu64 ":%" PRIu64 " goes past the end of the LUN (%" PRIu64
				" blocks of %u bytes)", o->region_lba, o->region_blocks, s->nblocks, s->bs);
		if (need > o->region_blocks)
			lab_die("%s needs %" PRIu64 " blocks of %u bytes here, --region gives %" PRIu64
				": give a larger region or smaller sizes", cmd, need, s->bs, o->region_blocks);
		*lba = o->region_lba;
		*blocks = o->region_blocks;
		return;
	}
	if (!o->force)
		lab_die("%s writes to the LUN (it would use blocks 0 to %" PRIu64 "): give --region "
			"LBA:BLOCKS to say which blocks it may overwrite, or --force to let it use the LUN "
			"from block 0", cmd, need ? need - 1 : 0);
	if (need > s->nblocks)
		lab_die("%s needs %" PRIu64 " blocks of %u bytes, the LUN has %" PRIu64
			": give smaller sizes", cmd, need, s->bs, s->nblocks);
	*lba = 0;
	*blocks = s->nblocks;
}
