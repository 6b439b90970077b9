/*
 * vaai-lab clone, zero and reclaim: what VAAI saves when a host copies,
 * zeroes or frees blocks.
 *
 *   clone    a region copied host-side (READ + WRITE through the
 *            initiator, as an ESXi without VAAI) and by EXTENDED COPY
 *            (one 4 MiB segment per command by default, as ESXi's data
 *            mover sends); both copies verified against the source's
 *            pattern; time, MB/s, bytes on the TCP connection, targetd's
 *            EXTENDED COPY bytes, and the space each copy took
 *   zero     a region (holding a pattern) eager-zeroed by writing zero
 *            buffers and by WRITE SAME(16) of one zero block; verified
 *   reclaim  a thin region filled, "deleted" (one metadata block
 *            changes, the data blocks stay allocated), then UNMAPped;
 *            the space held at each step
 *
 * Layout: clone uses three equal parts of the region (source, host copy,
 * EXTENDED COPY destination); zero and reclaim one. Space comes from
 * targetd (--control: the backing file's allocated bytes) or --backing.
 * Before each copy or zeroing, a thin LUN's destination is unmapped so
 * that the space it takes afterwards is what the method allocated.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "tools/lab/lab.h"

#define PROV_DEFAULT_SIZE (32u << 20)
#define PROV_CHUNK (1u << 20)

struct method {
	const char *name;               /* "host copy (READ + WRITE)", ... */
	const char *key;                /* "host", "xcopy", ... */
	struct bulk_result r;
	int64_t space;                  /* bytes the method allocated, -1 unknown */
	bool td;
	uint64_t td_bytes;              /* targetd: XCOPY bytes or WRITE SAME bytes */
	int64_t bad_lba, bad_byte;      /* verification */
};

struct prov {
	const struct lab_opts *o;
	struct lab_sess *s;
	uint64_t lba, nblk;             /* the part a method works on */
	uint32_t chunk;                 /* blocks per READ/WRITE */
	uint32_t seg;                   /* blocks per EXTENDED COPY / WRITE SAME */
	unsigned qd;
	uint64_t salt;
};

static void prov_open(struct prov *p, const struct lab_opts *o, unsigned parts)
{
	uint64_t size, lba, blocks;

	memset(p, 0, sizeof(*p));
	p->o = o;
	p->s = lab_sess_open(o, lab_cmd_names[o->cmd]);
	size = o->size;
	if (!size) {
		size = PROV_DEFAULT_SIZE;
		if (o->have_region && o->region_blocks / parts * p->s->bs < size)
			size = o->region_blocks / parts * p->s->bs;
	}
	if (!size || size % p->s->bs)
		lab_die("--size must be a positive multiple of the LUN's %u-byte blocks", p->s->bs);
	p->nblk = size / p->s->bs;
	lab_region(o, p->s, p->nblk * parts, &lba, &blocks);
	p->lba = lba;
	p->chunk = PROV_CHUNK / p->s->bs;
	if (p->s->max_xfer_blocks && p->chunk > p->s->max_xfer_blocks)
		p->chunk = p->s->max_xfer_blocks;
	if (o->segment % p->s->bs || !o->segment)
		lab_die("--segment must be a positive multiple of the LUN's %u-byte blocks", p->s->bs);
	p->seg = (uint32_t)(o->segment / p->s->bs);
	p->qd = o->qd;
	p->salt = lab_rand();
}

static void prov_run(struct prov *p, enum bulk_op op, uint64_t lba, uint64_t src, uint32_t chunk,
		     struct bulk_result *r)
{
	struct bulk_args a = {
		.op = op, .lba = lba, .blocks = p->nblk, .src_lba = src, .chunk_blocks = chunk,
		.qd = p->qd, .gen = 1, .salt = p->salt,
	};
	struct bulk_result tmp;

	lab_bulk(p->s, &a, r ? r : &tmp);
}

/* A thin LUN's part is unmapped first, so that it starts empty. */
static void prov_fresh(struct prov *p, uint64_t lba)
{
	uint32_t n = p->s->max_unmap_blocks ? p->s->max_unmap_blocks : (1u << 30) / p->s->bs;

	if (p->s->lbpme)
		prov_run(p, BULK_UNMAP, lba, 0, n, NULL);
}

static int64_t space_delta(int64_t before, int64_t after)
{
	return before < 0 || after < 0 ? -1 : after - before;
}

static void verify(struct prov *p, struct method *m, enum bulk_op op, uint64_t lba, uint64_t src)
{
	struct bulk_result r;

	prov_run(p, op, lba, src, p->chunk, &r);
	m->bad_lba = r.mismatch_lba;
	m->bad_byte = r.mismatch_byte;
}

static uint64_t net(const struct bulk_result *r)
{
	return r->net_tx + r->net_rx;
}

/* ---- report (clone and zero) ---------------------------------------------- */

static void methods_table(const struct prov *p, const struct method *m, unsigned n, const char *td_head)
{
	static const char *head[] = { "method", "time s", "MB/s", "commands", "network", "data sent",
				      NULL, "space", "verified" };
	struct lab_table t;
	char c[9][48];

	head[6] = td_head;
	lab_table_init(&t, 9, head);
	t.right[8] = false;
	for (unsigned i = 0; i < n; i++) {
		const struct method *x = &m[i];
		double mbs = x->r.seconds > 0 ? (double)p->nblk * p->s->bs / x->r.seconds / 1e6 : 0;

		lab_table_row(&t, x->name, lab_fmt(c[1], 48, "%.3f", x->r.seconds),
			      lab_fmt(c[2], 48, "%.1f", mbs), lab_fmt(c[3], 48, "%" PRIu64, x->r.cmds),
			      x->r.have_net ? lab_fmt_bytes(net(&x->r), c[4], 48) : "n/a",
			      lab_fmt_bytes(x->r.payload, c[5], 48),
			      x->td ? lab_fmt_bytes(x->td_bytes, c[6], 48) : "-",
			      x->space >= 0 ? lab_fmt_bytes((uint64_t)x->space, c[7], 48) : "n/a",
			      x->bad_lba < 0 ? "yes"
					     : lab_fmt(c[8], 48, "NO: LBA %" PRId64 " byte %" PRId64,
						       x->bad_lba, x->bad_byte));
	}
	lab_table_print(&t);
	printf("\nnetwork: TCP payload bytes both ways on the session's connection; data sent: "
	       "SCSI data carried.\n");
}

static struct json_object *methods_json(const struct prov *p, const struct method *m, unsigned n,
					const char *td_key)
{
	struct json_object *r = json_object_new_object(), *a = json_object_new_array();

	json_object_object_add(r, "command", json_object_new_string(lab_cmd_names[p->o->cmd]));
	json_object_object_add(r, "url", json_object_new_string(p->o->url));
	json_object_object_add(r, "lba", lab_json_u64(p->lba));
	json_object_object_add(r, "size_bytes", lab_json_u64(p->nblk * p->s->bs));
	json_object_object_add(r, "block_size", json_object_new_int((int)p->s->bs));
	for (unsigned i = 0; i < n; i++) {
		const struct method *x = &m[i];
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "method", json_object_new_string(x->key));
		json_object_object_add(e, "name", json_object_new_string(x->name));
		json_object_object_add(e, "seconds", lab_json_double(x->r.seconds));
		json_object_object_add(e, "mb_s", lab_json_double(x->r.seconds > 0 ? (double)p->nblk * p->s->bs / x->r.seconds / 1e6 : 0));
		json_object_object_add(e, "commands", lab_json_u64(x->r.cmds));
		json_object_object_add(e, "network_bytes", x->r.have_net ? lab_json_u64(net(&x->r)) : NULL);
		json_object_object_add(e, "network_tx_bytes", x->r.have_net ? lab_json_u64(x->r.net_tx) : NULL);
		json_object_object_add(e, "network_rx_bytes", x->r.have_net ? lab_json_u64(x->r.net_rx) : NULL);
		json_object_object_add(e, "data_bytes", lab_json_u64(x->r.payload));
		json_object_object_add(e, td_key, x->td ? lab_json_u64(x->td_bytes) : NULL);
		json_object_object_add(e, "space_bytes", x->space >= 0 ? json_object_new_int64(x->space) : NULL);
		json_object_object_add(e, "verified", json_object_new_boolean(x->bad_lba < 0));
		if (x->bad_lba >= 0) {
			json_object_object_add(e, "mismatch_lba", json_object_new_int64(x->bad_lba));
			json_object_object_add(e, "mismatch_byte", json_object_new_int64(x->bad_byte));
		}
		json_object_array_add(a, e);
	}
	json_object_object_add(r, "methods", a);
	return r;
}

static void methods_plot(const struct prov *p, const struct method *m, unsigned n, const char *title)
{
	double t[4], nb[4], sp[4];
	const char *items[4];
	struct lab_plot_panel panels[3] = {
		{ "time (s)", t }, { "network (MiB)", nb }, { "space used (MiB)", sp },
	};

	for (unsigned i = 0; i < n && i < 4; i++) {
		items[i] = m[i].key;
		t[i] = m[i].r.seconds;
		nb[i] = m[i].r.have_net ? (double)net(&m[i].r) / (1 << 20) : -1;
		sp[i] = m[i].space >= 0 ? (double)m[i].space / (1 << 20) : -1;
	}
	lab_plot_bars(p->o->plot, title, items, n, panels, 3);
}

/* ---- clone -------------------------------------------------------------------- */

static void clone_method(struct prov *p, struct method *m, enum bulk_op op, uint64_t dst, uint32_t chunk)
{
	struct lab_counters c0, c1;
	int64_t a0, a1;

	prov_fresh(p, dst);
	a0 = lab_allocated(p->o);
	lab_ctl_read(p->o, &c0);
	prov_run(p, op, dst, p->lba, chunk, &m->r);
	lab_ctl_read(p->o, &c1);
	a1 = lab_allocated(p->o);
	m->space = space_delta(a0, a1);
	m->td = c0.valid && c1.valid;
	m->td_bytes = c1.xcopy_bytes - c0.xcopy_bytes;
}

int lab_clone(const struct lab_opts *o)
{
	struct method m[2] = {
		{ .name = "host copy (READ + WRITE)", .key = "host" },
		{ .name = "EXTENDED COPY", .key = "xcopy" },
	};
	struct prov p;
	char title[200], b[32], sb[32];

	prov_open(&p, o, 3);
	if (p.seg > 0xffff)
		lab_die("--segment %" PRIu64 " is more than the 65535 blocks an EXTENDED COPY segment "
			"holds", o->segment);
	lab_note("clone: %s from LBA %" PRIu64 " (%" PRIu64 " blocks of %u bytes), copies at LBA %"
		 PRIu64 " and %" PRIu64, lab_fmt_bytes(p.nblk * p.s->bs, b, sizeof(b)), p.lba, p.nblk,
		 p.s->bs, p.lba + p.nblk, p.lba + 2 * p.nblk);
	prov_run(&p, BULK_FILL, p.lba, 0, p.chunk, NULL);
	clone_method(&p, &m[0], BULK_HOST_COPY, p.lba + p.nblk, p.chunk);
	clone_method(&p, &m[1], BULK_XCOPY, p.lba + 2 * p.nblk, p.seg);
	verify(&p, &m[0], BULK_VERIFY_PATTERN, p.lba + p.nblk, p.lba);
	verify(&p, &m[1], BULK_VERIFY_PATTERN, p.lba + 2 * p.nblk, p.lba);
	{
		struct method src = { 0 };

		verify(&p, &src, BULK_VERIFY_PATTERN, p.lba, p.lba);
		if (src.bad_lba >= 0)
			lab_die("the source changed during the copies (LBA %" PRId64 " byte %" PRId64
				"): something else writes the region", src.bad_lba, src.bad_byte);
	}
	if (o->json) {
		struct json_object *j = methods_json(&p, m, 2, "targetd_xcopy_bytes");

		if (m[0].r.have_net && net(&m[0].r))
			json_object_object_add(j, "xcopy_network_ratio",
					       lab_json_double((double)net(&m[1].r) / (double)net(&m[0].r)));
		lab_json_print(j);
	} else {
		printf("clone: %s, EXTENDED COPY in %s segments, %u in flight\n\n",
		       lab_fmt_bytes(p.nblk * p.s->bs, b, sizeof(b)),
		       lab_fmt_bytes((uint64_t)p.seg * p.s->bs, sb, sizeof(sb)), p.qd);
		methods_table(&p, m, 2, "targetd XCOPY");
		if (m[0].r.have_net && net(&m[0].r))
			printf("EXTENDED COPY moved %.3f %% of the host copy's network bytes.\n",
			       100.0 * (double)net(&m[1].r) / (double)net(&m[0].r));
	}
	if (o->plot) {
		snprintf(title, sizeof(title), "vaai-lab clone: %s, host copy against EXTENDED COPY",
			 lab_fmt_bytes(p.nblk * p.s->bs, b, sizeof(b)));
		methods_plot(&p, m, 2, title);
	}
	lab_sess_close(p.s);
	return m[0].bad_lba < 0 && m[1].bad_lba < 0 ? 0 : 1;
}

/* ---- zero ----------------------------------------------------------------------- */

static void zero_method(struct prov *p, struct method *m, enum bulk_op op, uint32_t chunk)
{
	struct lab_counters c0, c1;
	int64_t a0, a1;

	prov_fresh(p, p->lba);
	a0 = lab_allocated(p->o);
	prov_run(p, BULK_FILL, p->lba, 0, p->chunk, NULL);   /* old data to zero */
	lab_ctl_read(p->o, &c0);
	prov_run(p, op, p->lba, 0, chunk, &m->r);
	lab_ctl_read(p->o, &c1);
	a1 = lab_allocated(p->o);
	m->space = space_delta(a0, a1);
	m->td = c0.valid && c1.valid;
	m->td_bytes = (c1.ws_blocks - c0.ws_blocks) * p->s->bs;
	verify(p, m, BULK_VERIFY_ZERO, p->lba, p->lba);
}

int lab_zero(const struct lab_opts *o)
{
	struct method m[2] = {
		{ .name = "zero buffers (WRITE)", .key = "buffers" },
		{ .name = "WRITE SAME", .key = "writesame" },
	};
	struct prov p;
	uint32_t ws;
	char title[200], b[32];

	prov_open(&p, o, 1);
	ws = p.seg;
	if (p.s->max_ws_blocks && ws > p.s->max_ws_blocks)
		ws = (uint32_t)p.s->max_ws_blocks;
	lab_note("zero: %s at LBA %" PRIu64 ", WRITE SAME of %u blocks per command",
		 lab_fmt_bytes(p.nblk * p.s->bs, b, sizeof(b)), p.lba, ws);
	zero_method(&p, &m[0], BULK_WRITE_ZEROES, p.chunk);
	zero_method(&p, &m[1], BULK_WRITE_SAME, ws);
	if (o->json) {
		lab_json_print(methods_json(&p, m, 2, "targetd_write_same_bytes"));
	} else {
		printf("zero: %s eager-zeroed, %u commands in flight\n\n",
		       lab_fmt_bytes(p.nblk * p.s->bs, b, sizeof(b)), p.qd);
		methods_table(&p, m, 2, "targetd WS");
		printf("space: what the zeroing left allocated, from an unmapped start.\n");
	}
	if (o->plot) {
		snprintf(title, sizeof(title), "vaai-lab zero: %s, zero buffers against WRITE SAME",
			 lab_fmt_bytes(p.nblk * p.s->bs, b, sizeof(b)));
		methods_plot(&p, m, 2, title);
	}
	lab_sess_close(p.s);
	return m[0].bad_lba < 0 && m[1].bad_lba < 0 ? 0 : 1;
}

/* ---- reclaim --------------------------------------------------------------------- */

struct step {
	const char *name;
	int64_t allocated;
	uint64_t mapped;                /* blocks of the region (GET LBA STATUS) */
	double seconds;
	uint64_t net;
};

static void reclaim_report(const struct prov *p, const struct step *st, unsigned n, bool zeroes)
{
	char c[5][48];
	const struct lab_opts *o = p->o;

	if (o->json) {
		struct json_object *r = json_object_new_object(), *a = json_object_new_array();

		json_object_object_add(r, "command", json_object_new_string("reclaim"));
		json_object_object_add(r, "url", json_object_new_string(o->url));
		json_object_object_add(r, "lba", lab_json_u64(p->lba));
		json_object_object_add(r, "size_bytes", lab_json_u64(p->nblk * p->s->bs));
		for (unsigned i = 0; i < n; i++) {
			struct json_object *e = json_object_new_object();

			json_object_object_add(e, "step", json_object_new_string(st[i].name));
			json_object_object_add(e, "allocated_bytes", st[i].allocated >= 0 ? json_object_new_int64(st[i].allocated) : NULL);
			json_object_object_add(e, "mapped_bytes", lab_json_u64(st[i].mapped * p->s->bs));
			json_object_object_add(e, "seconds", lab_json_double(st[i].seconds));
			json_object_object_add(e, "network_bytes", lab_json_u64(st[i].net));
			json_object_array_add(a, e);
		}
		json_object_object_add(r, "steps", a);
		json_object_object_add(r, "reads_zeroes_after_unmap", json_object_new_boolean(zeroes));
		lab_json_print(r);
	} else {
		static const char *const head[] = { "step", "allocated", "mapped (GET LBA STATUS)", "time s",
						    "network" };
		struct lab_table t;

		printf("reclaim: %s of a thin LUN at LBA %" PRIu64 "\n\n",
		       lab_fmt_bytes(p->nblk * p->s->bs, c[0], 48), p->lba);
		lab_table_init(&t, 5, head);
		for (unsigned i = 0; i < n; i++)
			lab_table_row(&t, st[i].name,
				      st[i].allocated >= 0 ? lab_fmt_bytes((uint64_t)st[i].allocated, c[1], 48) : "n/a",
				      lab_fmt_bytes(st[i].mapped * p->s->bs, c[2], 48),
				      lab_fmt(c[3], 48, "%.3f", st[i].seconds), lab_fmt_bytes(st[i].net, c[4], 48));
		lab_table_print(&t);
		printf("\nallocated: the backing file's allocated bytes (%s); after UNMAP the region "
		       "reads back %s.\n", o->control ? "targetd" : o->backing ? "--backing" : "give --control or --backing",
		       zeroes ? "zeroes" : "NOT zeroes");
	}
	if (o->plot) {
		double al[4], mp[4];
		const char *items[4];
		struct lab_plot_panel panels[2] = { { "allocated (MiB)", al }, { "mapped in the region (MiB)", mp } };

		for (unsigned i = 0; i < n; i++) {
			items[i] = st[i].name;
			al[i] = st[i].allocated >= 0 ? (double)st[i].allocated / (1 << 20) : -1;
			mp[i] = (double)(st[i].mapped * p->s->bs) / (1 << 20);
		}
		lab_plot_bars(o->plot, "vaai-lab reclaim: space held by a thin LUN", items, n, panels, 2);
	}
}

static void reclaim_step(struct prov *p, struct step *st, const char *name, enum bulk_op op,
			 uint32_t chunk)
{
	struct bulk_result r;

	st->name = name;
	if (op != (enum bulk_op)-1) {
		prov_run(p, op, p->lba, 0, chunk, &r);
		st->seconds = r.seconds;
		st->net = net(&r);
	}
	st->allocated = lab_allocated(p->o);
	st->mapped = lab_sync_mapped(p->s, p->lba, p->nblk);
}

int lab_reclaim(const struct lab_opts *o)
{
	struct prov p;
	struct step st[4];
	struct bulk_result r;
	uint8_t *blk;
	uint32_t um;
	uint64_t t0;

	memset(st, 0, sizeof(st));
	prov_open(&p, o, 1);
	if (!p.s->lbpme)
		lab_die("the LUN is not thin-provisioned (READ CAPACITY(16) says LBPME=0): reclaim "
			"needs a thin LUN (thin = true in targetd.conf)");
	um = p.s->max_unmap_blocks ? p.s->max_unmap_blocks : (1u << 30) / p.s->bs;
	reclaim_step(&p, &st[0], "start", (enum bulk_op)-1, 0);
	reclaim_step(&p, &st[1], "filled", BULK_FILL, p.chunk);
	/* "delete": the file system forgets its files; only a directory
	 * block changes, the data blocks stay where they are */
	blk = lab_xalloc_aligned(p.s->bs);
	t0 = lab_now_ns();
	lab_sync_write(p.s, p.lba, 1, blk);
	free(blk);
	reclaim_step(&p, &st[2], "deleted", (enum bulk_op)-1, 0);
	st[2].seconds = (double)(lab_now_ns() - t0) / 1e9;
	reclaim_step(&p, &st[3], "unmapped", BULK_UNMAP, um);
	prov_run(&p, BULK_VERIFY_ZERO, p.lba, 0, p.chunk, &r);
	reclaim_report(&p, st, 4, r.mismatch_lba < 0);
	lab_sess_close(p.s);
	return 0;
}
