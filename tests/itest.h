/*
 * itest: what the subcommand files share (tests/itest.c holds the
 * sessions, patterns and most subcommands; tests/itest_durable.c the
 * durability subcommands, tests/itest_lun.c the checks of LUN options that
 * need two nexuses). Single-threaded, like the whole program.
 */
#ifndef TARGETD_TESTS_ITEST_H
#define TARGETD_TESTS_ITEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define ITEST_DEFAULT_INITIATOR "iqn.2026-11.org.targetd:itest"
#define ITEST_QD 32
#define ITEST_TIMEOUT_S 120

struct itest_opts {
	const char *initiator;
	const char *mutual;     /* "user%secret" the target must prove, or NULL */
	bool header_digest;
	uint64_t seed;
	int verbose;
};
extern struct itest_opts opts;

/* output: a failure names what was expected and what came back, then exits 1 */
void itest_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void itest_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CHECK(cond, ...) do { if (!(cond)) itest_fail(__VA_ARGS__); } while (0)

uint64_t itest_rand(void);
double itest_now(void);

const char *itest_task_str(struct iscsi_context *iscsi, struct scsi_task *task);
void itest_expect_good(struct iscsi_context *iscsi, struct scsi_task *task, const char *what);

struct itest_conn {
	struct iscsi_context *iscsi;
	struct iscsi_url *url;
	int lun;
};

enum {
	ITEST_R2T_DEFAULT = 0,   /* libiscsi default: ImmediateData=Yes, InitialR2T=No */
	ITEST_R2T_ONLY = 1,      /* ImmediateData=No, InitialR2T=Yes: every byte by R2T */
};

/* login (no automatic reconnection), unit attentions consumed */
void itest_open(struct itest_conn *c, const char *url_str, int mode);
void itest_close(struct itest_conn *c);
/* TEST UNIT READY until GOOD, unit attentions consumed (any other answer fails) */
int itest_clear_ua(struct itest_conn *c);

struct itest_geom {
	uint64_t nblocks;
	uint32_t bs;
	uint32_t max_xfer_blocks;   /* from VPD 0xB0; 0 = no limit reported */
	uint32_t atomic_gran;       /* VPD 0xB0 ATOMIC TRANSFER LENGTH GRANULARITY */
	uint32_t atomic_max;        /* VPD 0xB0 MAXIMUM ATOMIC TRANSFER LENGTH (0: none) */
};
void itest_geometry(struct itest_conn *c, struct itest_geom *g);

/* the block pattern: LBA and seed in the first 16 bytes, then bytes derived from both */
void itest_fill(unsigned char *buf, uint64_t lba, uint32_t nblocks, uint32_t bs, uint64_t seed);

/* subcommands of tests/itest_durable.c */
int itest_write_zeros(int argc, char **argv);
int itest_durable_write(int argc, char **argv);
int itest_durable_check(int argc, char **argv);

/* subcommands of tests/itest_lun.c */
int itest_prevent_2nexus(int argc, char **argv);

/* subcommands of tests/itest_clone.c */
int itest_clone_write(int argc, char **argv);
int itest_write_protected(int argc, char **argv);
int itest_ua_after(int argc, char **argv);

#endif
