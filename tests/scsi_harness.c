/*
 * The unit-test harness of the SCSI layer: see tests/scsi_harness.h.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/scsi_harness.h"
#include "scsi/stats.h"
#include "common/util.h"

#ifdef SCSI_HARNESS_NO_CHECK
#define sh_assert(c) \
	do { \
		if (!(c)) { \
			fprintf(stderr, "%s:%d: harness: %s\n", __FILE__, __LINE__, #c); \
			abort(); \
		} \
	} while (0)
#else
#include <check.h>
#define sh_assert(c) ck_assert(c)
#endif

struct io_engine *sh_eng;
uint8_t *sh_buf;
uint32_t sh_buf_cap;
int sh_completed;
bool sh_zc_ok, sh_defer_release;
static uint8_t *sh_buf_own;

void sh_setup(uint32_t buf_cap)
{
	sh_eng = io_engine_create(64, false);
	sh_assert(sh_eng != NULL);
	sh_buf_own = aligned_alloc(4096, ALIGN_UP(buf_cap, 4096u));
	sh_assert(sh_buf_own != NULL);
	memset(sh_buf_own, 0, buf_cap);
	sh_buf = sh_buf_own;
	sh_buf_cap = buf_cap;
	sh_completed = 0;
	sh_zc_ok = sh_defer_release = false;
}

void sh_teardown(void)
{
	sh_drain();
	io_engine_destroy(sh_eng);
	sh_eng = NULL;
	free(sh_buf_own);
	sh_buf_own = sh_buf = NULL;
	sh_buf_cap = 0;
}

void sh_drain(void)
{
	while (io_engine_inflight(sh_eng) || io_engine_busy(sh_eng))
		io_engine_wait(sh_eng);
}

struct backstore *sh_memory_bs(uint64_t bytes, bool thin)
{
	struct bs_params bp = { .type = "memory", .size = bytes, .block_size = 512, .thin = thin };
	struct backstore *bs = NULL;
	char err[128];

	sh_assert(backstore_open(&bs, &bp, err, sizeof(err)) == 0);
	return bs;
}

void sh_nexus_attach(struct scsi_target *t, struct scsi_nexus *n, uint64_t id)
{
	memset(n, 0, sizeof(*n));
	n->id = id;
	n->rel_tport_id = 1;
	n->tpgt = 1;
	scsi_nexus_attach(t, n);
	for (unsigned i = 0; i < SCSI_MAX_LUNS; i++)
		scsi_ua_clear(n, (uint16_t)i);
}

/* --- the fake asynchronous backstore --- */

static void sh_fake_submit(struct io_engine *eng, struct bs_io *io)
{
	struct sh_fake *f = container_of(io->bs, struct sh_fake, bs);

	(void)eng;
	sh_assert(f->npending < SH_FAKE_MAX);
	f->last_flags = io->flags;
	f->last_op = io->op;
	if ((unsigned)io->op < ARRAY_SIZE(f->submitted))
		f->submitted[io->op]++;
	f->pending[f->npending++] = io;
}

static const struct backstore_ops sh_fake_ops = {
	.name = "fake",
	.submit = sh_fake_submit,
};

void sh_fake_init(struct sh_fake *f, uint64_t bytes)
{
	memset(f, 0, sizeof(*f));
	f->bs.ops = &sh_fake_ops;
	f->bs.fd = -1;
	atomic_init(&f->bs.size, bytes);
}

bool sh_is_fake(const struct backstore *bs)
{
	return bs && bs->ops == &sh_fake_ops;
}

struct bs_io *sh_fake_release(struct sh_fake *f, int64_t result, uint8_t fill)
{
	struct bs_io *io;

	sh_assert(f->npending > 0);
	io = f->pending[0];
	memmove(f->pending, f->pending + 1, sizeof(f->pending[0]) * (size_t)--f->npending);
	io->result = result < 0 ? result : (int64_t)io->len;
	if (io->op == BS_OP_READ && result >= 0) {
		if (!io->iov) {
			io->iov = &io->iov1;
			io->iovcnt = 1;
		}
		for (int i = 0; i < io->iovcnt; i++)
			memset(io->iov[i].iov_base, fill, io->iov[i].iov_len);
	}
	io->done_ns = backstore_now_ns();   /* as the engine does */
	io->done(io);
	return io;
}

/* --- running a command --- */

/* What the transport does when a command has its status. */
static void sh_finish(struct sh_run *r)
{
	struct scsi_cmd *c = &r->cmd;

	r->done = true;
	r->pending = false;
	scsi_stats_cmd_done(c);
	scsi_stats_cmd_sent(c);   /* and the status goes out: the latency */
	/* a command that found its LUN holds it until it is let go */
	sh_assert(!c->lun || scsi_stats_lun_busy(c->lun));
	if (!sh_defer_release)
		scsi_cmd_release(c);
}

static void sh_complete(struct scsi_cmd *cmd)
{
	struct sh_run *r = container_of(cmd, struct sh_run, cmd);

	sh_completed++;
	sh_finish(r);
}

void sh_run(struct sh_run *r, struct scsi_nexus *n, uint64_t lun, const void *cdb,
	    unsigned cdb_len, const void *out, uint32_t out_len)
{
	struct scsi_cmd *c = &r->cmd;

	memset(r, 0, sizeof(*r));
	c->buf = sh_buf;
	c->buf_cap = sh_buf_cap;
	scsi_cmd_reset(c);
	c->nexus = n;
	c->lun_id = lun;
	sh_assert(cdb_len <= SCSI_MAX_CDB);
	memcpy(c->cdb, cdb, cdb_len);
	if (cdb_len > 16)
		c->cdb_len = (uint8_t)cdb_len;
	c->eng = sh_eng;
	c->complete = sh_complete;
	c->zc_ok = sh_zc_ok;
	c->exp_xfer_len = out ? out_len : 0;
	c->exp_dir = out ? SCSI_DIR_WRITE : SCSI_DIR_READ;
	c->start_ns = scsi_stats_now_ns();
	if (scsi_cmd_parse(c) != SR_OK) {
		r->parse_failed = true;
		sh_finish(r);
		return;
	}
	sh_assert(scsi_cmd_buf_need(c) <= sh_buf_cap);
	if (!out)
		c->exp_xfer_len = c->xfer_len;
	if (c->dir == SCSI_DIR_WRITE) {
		/* what the transport receives: the data-out up to xfer_len */
		c->buf_len = MIN(c->xfer_len, c->exp_xfer_len);
		if (out)
			memcpy(c->buf, out, c->buf_len);
	}
	r->pending = true;
	if (!scsi_cmd_execute(c)) {
		sh_finish(r);
		return;
	}
	if (c->lun && sh_is_fake(c->lun->bs))
		return;
	sh_wait(r);
}

void sh_wait(struct sh_run *r)
{
	while (!r->done)
		io_engine_wait(sh_eng);
}

#ifndef SCSI_HARNESS_NO_CHECK
void sh_expect_good(const struct scsi_cmd *c)
{
	ck_assert_msg(c->status == SAM_STAT_GOOD, "status %#x reason %d sense %02x/%02x/%02x",
		      c->status, c->reason, c->sense[2] & 0x0f, c->sense[12], c->sense[13]);
}

void sh_expect_sense(const struct scsi_cmd *c, uint8_t key, uint8_t asc, uint8_t ascq)
{
	ck_assert_msg(c->status == SAM_STAT_CHECK_CONDITION, "status %#x, want CHECK CONDITION",
		      c->status);
	ck_assert_uint_ge(c->sense_len, 8);
	if ((c->sense[0] & 0x7f) == 0x70) {
		ck_assert_uint_eq(c->sense[2] & 0x0f, key);
		ck_assert_uint_eq(c->sense[12], asc);
		ck_assert_uint_eq(c->sense[13], ascq);
	} else {
		ck_assert_uint_eq(c->sense[0], 0x72);
		ck_assert_uint_eq(c->sense[1] & 0x0f, key);
		ck_assert_uint_eq(c->sense[2], asc);
		ck_assert_uint_eq(c->sense[3], ascq);
	}
}

void sh_expect_fixed_sense(const struct scsi_cmd *c, uint8_t key, uint8_t asc, uint8_t ascq)
{
	sh_expect_sense(c, key, asc, ascq);
	ck_assert_uint_eq(c->sense[0] & 0x7f, 0x70);
}
#endif
