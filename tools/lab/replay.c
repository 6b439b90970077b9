/*
 * vaai-lab replay: a targetd command trace (targetctl trace, format in
 * common/trace_format.h) sent again to any iSCSI target, and every
 * command whose status or sense (key, ASC, ASCQ) differs from the trace
 * reported: a differential test of two targets, or of two versions.
 *
 * Each I_T nexus of the trace becomes one session (initiator name
 * --initiator prefix + ":replayN"); its commands go out in arrival order,
 * all to the URL's LUN, each when
 *   - the nexus has fewer commands in flight than the trace had when that
 *     command arrived (its queue depth then: the commands of the nexus
 *     that had arrived and not yet been answered, itself included), and
 *   - with the original timing (the default; --speed X runs X times
 *     faster), its arrival time has come; with --fast, at once.
 * The trace holds no data: data-out is zeroes (a COMPARE AND WRITE
 * compares zeroes), data-in is read and dropped. Commands that had no
 * status in the trace (aborted, lost) are sent but not compared. A nexus
 * whose first command met a unit attention logs in and sends it as the
 * first command too; any other nexus clears the unit attention first.
 *
 * DESIGN: one thread, the loop of session.c; a nexus has a timer for its
 * next arrival and is pumped from every completion.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "common/trace_format.h"
#include "tools/lab/lab.h"

#define REPLAY_MAX_XFER (64u << 20)   /* longer commands are skipped */
#define REPLAY_MAX_DIFFS 1000         /* differences listed as text (all are counted) */

struct rp_nexus;

struct rp_cmd {
	const struct trace_cmd_info *c;
	struct rp_nexus *nx;
	struct lab_io io;
	unsigned qd;                    /* in flight in the trace when it arrived */
	bool skipped;
	bool done;
	int status;
	uint8_t key, asc, ascq;
	uint64_t lat_ns;
};

struct rp_nexus {
	const struct trace_nexus_info *info;
	uint64_t id;
	struct lab_sess *s;
	struct rp_cmd **cmds;
	size_t n, next, finished;
	unsigned inflight;
	struct lab_timer timer;
	struct replay *rp;
};

struct replay {
	const struct lab_opts *o;
	struct trace_file t;
	struct rp_cmd *cmds;
	struct rp_nexus *nx;
	unsigned n_nx;
	uint8_t *zero, *scratch;        /* data-out, data-in */
	uint64_t t0;
	size_t total, finished;
};

static bool trace_sense(const struct trace_cmd_info *c, uint8_t *key, uint8_t *asc, uint8_t *ascq)
{
	const uint8_t *s = c->sense;
	uint8_t rc = c->sense_len ? s[0] & 0x7f : 0;

	*key = *asc = *ascq = 0;
	if ((rc == 0x70 || rc == 0x71) && c->sense_len >= 14) {
		*key = s[2] & 0xf;
		*asc = s[12];
		*ascq = s[13];
		return true;
	}
	if ((rc == 0x72 || rc == 0x73) && c->sense_len >= 4) {
		*key = s[1] & 0xf;
		*asc = s[2];
		*ascq = s[3];
		return true;
	}
	return false;
}

/* Commands that change the medium or the LUN's state (replay needs --force). */
static bool cdb_writes(uint8_t op)
{
	switch (op) {
	case 0x04: case 0x0a: case 0x2a: case 0xaa: case 0x8a: case 0x2e: case 0xae:
	case 0x8e: case 0x41: case 0x93: case 0x42: case 0x89: case 0x83: case 0x48:
	case 0x15: case 0x55: case 0x7f: case 0x3b:
		return true;
	default:
		return false;
	}
}

static void rp_pump(struct rp_nexus *nx);

static void rp_done(struct lab_io *io, struct scsi_task *t)
{
	struct rp_cmd *rc = io->priv;
	struct rp_nexus *nx = rc->nx;

	rc->done = true;
	rc->status = io->status;
	rc->lat_ns = io->lat_ns;
	if (t && io->status == SCSI_STATUS_CHECK_CONDITION) {
		rc->key = (uint8_t)t->sense.key;
		rc->asc = (uint8_t)(t->sense.ascq >> 8);
		rc->ascq = (uint8_t)t->sense.ascq;
	}
	nx->inflight--;
	nx->finished++;
	nx->rp->finished++;
	rp_pump(nx);
}

static void rp_issue(struct rp_nexus *nx, struct rp_cmd *rc)
{
	const struct trace_cmd_info *c = rc->c;
	int dir = (c->flags & TRACE_C_WRITE) ? SCSI_XFER_WRITE
		  : (c->flags & TRACE_C_READ) ? SCSI_XFER_READ : SCSI_XFER_NONE;

	rc->io.s = nx->s;
	rc->io.done = rp_done;
	rc->io.priv = rc;
	nx->inflight++;
	lab_raw(&rc->io, c->cdb, c->cdb_len, dir, c->exp_xfer_len,
		dir == SCSI_XFER_WRITE ? nx->rp->zero : nx->rp->scratch);
}

static void rp_pump(struct rp_nexus *nx)
{
	struct replay *rp = nx->rp;

	while (nx->next < nx->n) {
		struct rp_cmd *rc = nx->cmds[nx->next];

		if (rc->skipped) {
			nx->next++;
			nx->finished++;
			rp->finished++;
			continue;
		}
		if (nx->inflight && nx->inflight >= rc->qd)
			return;   /* a completion pumps again */
		if (!rp->o->fast) {
			uint64_t at = rp->t0 + (uint64_t)((double)rc->c->arrival_ns / rp->o->speed);
			uint64_t now = lab_now_ns();

			if (at > now) {
				lab_timer_arm(&nx->timer, at - now);
				return;
			}
		}
		nx->next++;
		rp_issue(nx, rc);
	}
}

static void rp_timer(struct lab_timer *t)
{
	rp_pump(t->arg);
}

static bool rp_finished(void *arg)
{
	struct replay *rp = arg;

	return rp->finished == rp->total;
}

static int cmp_arrival(const void *a, const void *b)
{
	const struct rp_cmd *x = *(struct rp_cmd *const *)a, *y = *(struct rp_cmd *const *)b;

	if (x->c->arrival_ns != y->c->arrival_ns)
		return x->c->arrival_ns < y->c->arrival_ns ? -1 : 1;
	return x->c < y->c ? -1 : x->c > y->c;
}

/* Min-heap of answer times: the commands of a nexus still unanswered. */
static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(uint64_t *h, size_t *n)
{
	uint64_t v = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

/* The queue depth each command of a nexus met in the trace: the earlier
 * commands not yet answered when it arrived, and itself. */
static void rp_queue_depths(struct rp_nexus *nx)
{
	uint64_t *h = lab_xalloc((nx->n ? nx->n : 1) * sizeof(*h));
	size_t n = 0;

	for (size_t i = 0; i < nx->n; i++) {
		const struct trace_cmd_info *c = nx->cmds[i]->c;

		while (n && h[0] <= c->arrival_ns)
			heap_pop(h, &n);
		nx->cmds[i]->qd = (unsigned)(n + 1);
		heap_push(h, &n, c->arrival_ns + c->latency_ns);
	}
	free(h);
}

/* The nexuses of the trace, their commands in arrival order and the
 * queue depth each command met. */
static void rp_build(struct replay *rp)
{
	struct trace_file *t = &rp->t;

	rp->cmds = lab_xalloc((t->n_cmds ? t->n_cmds : 1) * sizeof(*rp->cmds));
	rp->nx = lab_xalloc((t->n_nexus + 1) * sizeof(*rp->nx));
	for (size_t i = 0; i < t->n_cmds; i++) {
		struct rp_cmd *rc = &rp->cmds[i];
		struct rp_nexus *nx = NULL;

		rc->c = &t->cmds[i];
		for (unsigned k = 0; k < rp->n_nx && !nx; k++)
			if (rp->nx[k].id == rc->c->nexus)
				nx = &rp->nx[k];
		if (!nx) {
			if (rp->n_nx == t->n_nexus + 1 || rp->n_nx == LAB_MAX_SESS)
				lab_die("%s: commands of more nexuses than it names (or than %d)",
					rp->o->trace, LAB_MAX_SESS);
			nx = &rp->nx[rp->n_nx++];
			nx->id = rc->c->nexus;
			nx->info = trace_file_nexus(t, nx->id);
			nx->cmds = lab_xalloc(t->n_cmds * sizeof(*nx->cmds));
			nx->rp = rp;
		}
		rc->nx = nx;
		rc->skipped = rc->c->exp_xfer_len > REPLAY_MAX_XFER;
		nx->cmds[nx->n++] = rc;
	}
	for (unsigned k = 0; k < rp->n_nx; k++) {
		struct rp_nexus *nx = &rp->nx[k];

		qsort(nx->cmds, nx->n, sizeof(*nx->cmds), cmp_arrival);
		rp_queue_depths(nx);
	}
	rp->total = t->n_cmds;
}

static const char *status_name(int s)
{
	switch (s) {
	case 0x00: return "GOOD";
	case 0x02: return "CHECK CONDITION";
	case 0x04: return "CONDITION MET";
	case 0x08: return "BUSY";
	case 0x18: return "RESERVATION CONFLICT";
	case 0x28: return "TASK SET FULL";
	case 0x30: return "ACA ACTIVE";
	case 0x40: return "TASK ABORTED";
	default: return "OTHER";
	}
}

static char *result_text(int status, uint8_t key, uint8_t asc, uint8_t ascq, char *buf, size_t n)
{
	if (status == SCSI_STATUS_CHECK_CONDITION)
		snprintf(buf, n, "CHECK CONDITION %x/%02x/%02x", key, asc, ascq);
	else
		snprintf(buf, n, "%s", status_name(status));
	return buf;
}

/* Does the replayed result differ from the trace's? */
static bool rp_differs(const struct rp_cmd *rc)
{
	const struct trace_cmd_info *c = rc->c;
	uint8_t key, asc, ascq;

	if (!(c->flags & TRACE_C_SENT) || rc->skipped)
		return false;
	if (rc->status != c->status)
		return true;
	if (c->status != SCSI_STATUS_CHECK_CONDITION)
		return false;
	trace_sense(c, &key, &asc, &ascq);
	return key != rc->key || asc != rc->asc || ascq != rc->ascq;
}

static int rp_class(const struct trace_cmd_info *c)
{
	return (c->flags & TRACE_C_READ) ? 0 : (c->flags & TRACE_C_WRITE) ? 1 : -1;
}

static int rp_report(struct replay *rp, double secs)
{
	static const char *const cls[3] = { "read", "write", "all" };
	struct lab_hist *h = lab_xalloc(6 * sizeof(*h));   /* trace r/w/all, replay r/w/all */
	struct json_object *diffs = json_object_new_array(), *o;
	size_t n_diff = 0, compared = 0, skipped = 0;
	char a[64], b[64], c8[8][32];

	for (size_t i = 0; i < rp->total; i++) {
		struct rp_cmd *rc = &rp->cmds[i];
		const struct trace_cmd_info *c = rc->c;
		int k = rp_class(c);
		uint8_t key, asc, ascq;

		if (rc->skipped) {
			skipped++;
			continue;
		}
		if (c->flags & TRACE_C_SENT) {
			compared++;
			lab_hist_add(&h[2], c->latency_ns);
			if (k >= 0)
				lab_hist_add(&h[k], c->latency_ns);
		}
		lab_hist_add(&h[5], rc->lat_ns);
		if (k >= 0)
			lab_hist_add(&h[3 + k], rc->lat_ns);
		if (!rp_differs(rc))
			continue;
		if (n_diff++ >= REPLAY_MAX_DIFFS && !rp->o->json)
			continue;   /* the text lists the first ones, JSON all */
		trace_sense(c, &key, &asc, &ascq);
		o = json_object_new_object();
		json_object_object_add(o, "nexus", lab_json_u64(c->nexus));
		json_object_object_add(o, "cmdsn", lab_json_u64(c->cmdsn));
		json_object_object_add(o, "arrival_us", lab_json_double((double)c->arrival_ns / 1e3));
		for (unsigned j = 0; j < c->cdb_len; j++)
			snprintf(a + 2 * j, 3, "%02x", c->cdb[j]);
		json_object_object_add(o, "cdb", json_object_new_string(a));
		json_object_object_add(o, "trace", json_object_new_string(
			result_text(c->status, key, asc, ascq, a, sizeof(a))));
		json_object_object_add(o, "replay", json_object_new_string(
			result_text(rc->status, rc->key, rc->asc, rc->ascq, b, sizeof(b))));
		json_object_array_add(diffs, o);
	}
	if (rp->o->json) {
		struct json_object *r = json_object_new_object(), *lat = json_object_new_object();

		json_object_object_add(r, "trace", json_object_new_string(rp->o->trace));
		json_object_object_add(r, "url", json_object_new_string(rp->o->url));
		json_object_object_add(r, "timing", json_object_new_string(rp->o->fast ? "fast" : "original"));
		json_object_object_add(r, "speed", lab_json_double(rp->o->speed));
		json_object_object_add(r, "nexuses", lab_json_u64(rp->n_nx));
		json_object_object_add(r, "commands", lab_json_u64(rp->total - skipped));
		json_object_object_add(r, "compared", lab_json_u64(compared));
		json_object_object_add(r, "skipped", lab_json_u64(skipped));
		json_object_object_add(r, "differences", lab_json_u64(n_diff));
		json_object_object_add(r, "seconds", lab_json_double(secs));
		for (int k = 0; k < 3; k++) {
			struct json_object *x = json_object_new_object();

			json_object_object_add(x, "trace", lab_hist_json(&h[k]));
			json_object_object_add(x, "replay", lab_hist_json(&h[3 + k]));
			json_object_object_add(lat, cls[k], x);
		}
		json_object_object_add(r, "latency", lat);
		json_object_object_add(r, "different", diffs);
		lab_json_print(r);
	} else {
		static const char *const head[] = { "latency (us)", "trace n", "p50", "p99",
						    "replay n", "p50", "p99" };
		struct lab_table t;

		printf("replay of %s to %s: %zu commands from %u nexus%s in %.2f s; timing: %s%s\n",
		       rp->o->trace, rp->o->url, rp->total - skipped, rp->n_nx, rp->n_nx == 1 ? "" : "es",
		       secs, rp->o->fast ? "fast (the recorded queue depths)" : "as recorded",
		       rp->o->fast || rp->o->speed == 1 ? "" : lab_fmt(c8[7], 32, ", %g times faster",
								      rp->o->speed));
		lab_table_init(&t, 7, head);
		for (int k = 0; k < 3; k++)
			lab_table_row(&t, cls[k], lab_fmt(c8[0], 32, "%" PRIu64, h[k].count),
				      lab_fmt(c8[1], 32, "%.1f", lab_hist_quantile_us(&h[k], 0.5)),
				      lab_fmt(c8[2], 32, "%.1f", lab_hist_quantile_us(&h[k], 0.99)),
				      lab_fmt(c8[3], 32, "%" PRIu64, h[3 + k].count),
				      lab_fmt(c8[4], 32, "%.1f", lab_hist_quantile_us(&h[3 + k], 0.5)),
				      lab_fmt(c8[5], 32, "%.1f", lab_hist_quantile_us(&h[3 + k], 0.99)));
		lab_table_print(&t);
		printf("%zu compared, %zu different%s\n", compared, n_diff,
		       skipped ? lab_fmt(c8[6], 32, ", %zu skipped (longer than 64 MiB)", skipped) : "");
		for (size_t i = 0; i < json_object_array_length(diffs); i++) {
			struct json_object *d = json_object_array_get_idx(diffs, i), *v;

			json_object_object_get_ex(d, "nexus", &v);
			printf("  nexus %s", json_object_get_string(v));
			json_object_object_get_ex(d, "cmdsn", &v);
			printf(" CmdSN %s", json_object_get_string(v));
			json_object_object_get_ex(d, "cdb", &v);
			printf(" CDB %s:", json_object_get_string(v));
			json_object_object_get_ex(d, "trace", &v);
			printf(" trace %s,", json_object_get_string(v));
			json_object_object_get_ex(d, "replay", &v);
			printf(" replay %s\n", json_object_get_string(v));
		}
		if (n_diff > REPLAY_MAX_DIFFS)
			printf("  ... and %zu more\n", n_diff - REPLAY_MAX_DIFFS);
		json_object_put(diffs);
	}
	free(h);
	return n_diff ? 3 : 0;
}

int lab_replay(const struct lab_opts *o)
{
	struct replay rp = { .o = o };
	uint64_t last_arrival = 0;
	uint32_t max_xfer = 0;
	size_t writes = 0;
	char err[512];
	uint64_t t_end;
	int rc;

	if (trace_file_read(o->trace, &rp.t, err, sizeof(err)))
		lab_die("%s", err);
	if (rp.t.error[0])
		lab_note("%s: %s; replaying what comes before", o->trace, rp.t.error);
	if (!rp.t.n_cmds)
		lab_die("%s: no commands to replay", o->trace);
	rp_build(&rp);
	for (size_t i = 0; i < rp.total; i++) {
		const struct trace_cmd_info *c = rp.cmds[i].c;

		if (!rp.cmds[i].skipped && c->exp_xfer_len > max_xfer)
			max_xfer = c->exp_xfer_len;
		writes += cdb_writes(c->cdb[0]);
		if (c->arrival_ns > last_arrival)
			last_arrival = c->arrival_ns;
	}
	if (writes && !o->force)
		lab_die("%s has %zu commands that write or change the LUN; replaying it overwrites "
			"%s with zeroes there: give --force if that is what you want", o->trace, writes,
			o->url);
	rp.zero = lab_xalloc_aligned(max_xfer ? max_xfer : 512);
	rp.scratch = lab_xalloc_aligned(max_xfer ? max_xfer : 512);
	for (unsigned k = 0; k < rp.n_nx; k++) {
		struct rp_nexus *nx = &rp.nx[k];
		const struct trace_cmd_info *first = nx->cmds[0]->c;
		bool ua = first->status == SCSI_STATUS_CHECK_CONDITION && first->sense_len >= 3 &&
			  ((first->sense[0] & 0x7f) >= 0x72 ? first->sense[1] : first->sense[2]) % 16 == 6;
		char name[32];

		snprintf(name, sizeof(name), "replay%u", k + 1);
		nx->s = lab_sess_login(o, name, !ua);
		lab_timer_init(&nx->timer, rp_timer, nx);
		lab_note("nexus %" PRIu64 " (%s): %zu commands as %s", nx->id,
			 nx->info ? nx->info->initiator : "not named in the trace", nx->n, nx->s->initiator);
	}
	rp.t0 = lab_now_ns();
	for (unsigned k = 0; k < rp.n_nx; k++)
		rp_pump(&rp.nx[k]);
	/* a bound, not a speed limit: the trace's own length and 10 minutes */
	lab_run_until(rp_finished, &rp,
		      600 + (o->fast ? 0 : (double)last_arrival / 1e9 / o->speed),
		      "replaying");
	t_end = lab_now_ns();
	rc = rp_report(&rp, (double)(t_end - rp.t0) / 1e9);
	for (unsigned k = 0; k < rp.n_nx; k++) {
		lab_sess_close(rp.nx[k].s);
		free(rp.nx[k].cmds);
	}
	free(rp.cmds);
	free(rp.nx);
	free(rp.zero);
	free(rp.scratch);
	trace_file_free(&rp.t);
	return rc;
}
