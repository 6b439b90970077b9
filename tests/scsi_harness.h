/*
 * The unit-test harness of the SCSI layer, shared by the Check suites of
 * scsi/ (check_scsi.c, check_vaai.c, check_pr.c, check_stats.c) and by the
 * fuzz targets (tests/fuzz/): one engine, one data buffer, memory and fake
 * backstores, and a way to run one CDB the way the transport does.
 *
 * The fake backstore is asynchronous on purpose: it holds every request
 * until the test releases it, so a test sees a command PENDING, then the
 * status and sense it ends with, in the order it chooses (SPDK's
 * scsi_bdev_ut.c does the same).
 *
 *     sh_run(&r, &nx, 2, cdb, 10, data, 512);     // LUN 2 on a fake
 *     ck_assert(r.pending);
 *     sh_fake_release(&fake, -EIO, 0);            // the WRITE fails
 *     sh_expect_sense(&r.cmd, 3, 0x0c, 0x00);
 *
 * DESIGN (threads): everything runs on the test's thread; the engine has
 * no ring (the worker pool only), so a test never depends on io_uring.
 * Build with SCSI_HARNESS_NO_CHECK for programs without Check (fuzzers):
 * a broken expectation of the harness itself then aborts.
 */
#ifndef TESTS_SCSI_HARNESS_H
#define TESTS_SCSI_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include "scsi/scsi.h"
#include "backstore/backstore.h"
#include "backstore/io_engine.h"

/* --- the environment (sh_setup() .. sh_teardown()) --- */

extern struct io_engine *sh_eng;
/* The data buffer of the next sh_run() (4096-aligned). A test that keeps
 * several commands in flight points it at a buffer of its own per command
 * (and back). */
extern uint8_t *sh_buf;
extern uint32_t sh_buf_cap;
/* Commands completed later (PENDING, then cmd->complete) since sh_setup(). */
extern int sh_completed;
/* The next sh_run()s offer zero-copy data-in (cmd.zc_ok), and leave the
 * command unreleased at its end (the test calls scsi_cmd_release(), as the
 * transport does once the data is sent). Both false after sh_setup(). */
extern bool sh_zc_ok, sh_defer_release;

void sh_setup(uint32_t buf_cap);
void sh_teardown(void);
/* Run the engine until nothing is in flight (jobs such as SANITIZE with
 * IMMED=1 included). */
void sh_drain(void);

/* A memory backstore of bytes (thin: deallocates on UNMAP). */
struct backstore *sh_memory_bs(uint64_t bytes, bool thin);
/* Zero n, give it id, relative target port 1 and TPGT 1, attach it to t and
 * clear the power-on unit attentions (most tests start without them). */
void sh_nexus_attach(struct scsi_target *t, struct scsi_nexus *n, uint64_t id);

/* --- the fake asynchronous backstore --- */

#define SH_FAKE_MAX 16
struct sh_fake {
	struct backstore bs;              /* give &fake.bs to scsi_lun_create() */
	struct bs_io *pending[SH_FAKE_MAX]; /* held requests, oldest first */
	int npending;
	unsigned submitted[BS_OP_COPY + 1]; /* requests seen, by operation */
	unsigned last_flags;
	enum bs_op last_op;
};

void sh_fake_init(struct sh_fake *f, uint64_t bytes);
/* Complete the oldest held request: result < 0 is the error (-errno), else
 * success (len bytes); a READ's buffers are filled with fill. Returns it. */
struct bs_io *sh_fake_release(struct sh_fake *f, int64_t result, uint8_t fill);
bool sh_is_fake(const struct backstore *bs);

/* --- running a command --- */

struct sh_run {
	struct scsi_cmd cmd;
	bool parse_failed;     /* the result came from scsi_cmd_parse() */
	bool pending;          /* PENDING on a fake backstore: not completed yet */
	bool done;             /* the result is there */
};

/*
 * Parse and execute one CDB (cdb_len bytes) on lun of nexus n, as the
 * transport does: Expected Data Transfer Length out_len with data-out out
 * (or, when out is NULL, the CDB's own transfer length, data-in or
 * whatever sh_buf holds), the data buffer sh_buf, the statistics hooks
 * (hold at parse, cmd_done at the status, release). Waits for the result
 * unless the LUN lives on a fake backstore; then r->pending says whether
 * the command is still waiting for the test.
 */
void sh_run(struct sh_run *r, struct scsi_nexus *n, uint64_t lun, const void *cdb,
	    unsigned cdb_len, const void *out, uint32_t out_len);
/* Run the engine until r has its result. */
void sh_wait(struct sh_run *r);

#ifndef SCSI_HARNESS_NO_CHECK
/* Expectations on a result (fixed or descriptor format sense). */
void sh_expect_good(const struct scsi_cmd *c);
void sh_expect_sense(const struct scsi_cmd *c, uint8_t key, uint8_t asc, uint8_t ascq);
/* The same, and the sense data must be in fixed format (D_SENSE=0). */
void sh_expect_fixed_sense(const struct scsi_cmd *c, uint8_t key, uint8_t asc, uint8_t ascq);
#endif

#endif
