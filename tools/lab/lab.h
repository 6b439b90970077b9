/*
 * vaai-lab: the lab client of targetd (vaai-lab(1)). One header for its
 * modules:
 *
 *   main.c       options, usage, dispatch
 *   session.c    iSCSI sessions (one libiscsi context each), the event
 *                loop, timers, command submission and completion
 *   sense.c      SCSI status and sense data as text
 *   control.c    targetd's control socket (JSON lines, targetctl(8))
 *   util.c       latency histograms, sizes, patterns, tables, JSON
 *   plot.c       charts drawn by gnuplot
 *   bulk.c       pipelined region operations (fill, copy, zero, unmap, verify)
 *   locking.c    ATS against SCSI reservations (hosts, VM, phases)
 *   provision.c  clone, zero, reclaim
 *   bench.c      the load generator
 *   replay.c     a targetd command trace replayed, differences reported
 *
 * DESIGN (threads, queues): one thread. Every session's socket is polled
 * by one loop (lab_run_until) that also fires timers (retry back-off,
 * think times); a command is queued with libiscsi's asynchronous API and
 * its completion runs its owner's callback from that loop. Nothing is
 * shared between threads because there is only one.
 *
 * vaai-lab is a client: it speaks iSCSI (libiscsi) and targetd's control
 * protocol, and includes no header of the daemon's beyond the protocol's.
 */
#ifndef VAAI_LAB_H
#define VAAI_LAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

struct json_object;

#define LAB_MAX_SESS 64
#define LAB_NS 1000000000ull

/* ---- options (main.c) -------------------------------------------------- */

enum lab_cmd { LAB_LOCKING, LAB_CLONE, LAB_ZERO, LAB_RECLAIM, LAB_BENCH, LAB_REPLAY, LAB__NCMD };

enum lock_mode { LOCK_NONE, LOCK_RESERVE, LOCK_ATS, LOCK_PR, LOCK__NMODE };

struct lab_opts {
	enum lab_cmd cmd;
	const char *url;
	const char *initiator;          /* prefix of the initiator names */
	const char *control;            /* targetd's control socket, or NULL */
	const char *plot;               /* FILE.png or FILE.svg, or NULL */
	const char *backing;            /* backing file to stat, or NULL */
	bool json, force, verbose;
	bool have_region;
	uint64_t region_lba, region_blocks;
	/* locking */
	unsigned hosts, files, vm_qd, burst;
	enum lock_mode modes[8];
	unsigned n_modes, rounds;
	bool snapshots;                 /* --scenario snapshots */
	double seconds;                 /* locking: per mode; bench: run */
	uint64_t updates;               /* locking: per mode, instead of seconds */
	double pause_ms, think_ms;
	bool vm_write;
	uint32_t vm_bs;                 /* bytes */
	uint64_t vm_size;               /* bytes, 0 = default */
	double backoff_min_ms, backoff_max_ms;
	/* clone, zero, reclaim */
	uint64_t size;                  /* bytes, 0 = default */
	uint64_t segment;               /* bytes per command */
	unsigned qd;
	/* bench */
	int read_pct;                   /* 100 read, 0 write */
	bool random;
	uint32_t bs;                    /* bytes per I/O */
	unsigned sessions;
	double warmup;
	uint64_t ios;                   /* instead of seconds */
	bool verify;
	bool zero_data;                 /* --data zero: writes carry zeroes */
	/* replay */
	const char *trace;              /* the trace file */
	bool fast;                      /* as fast as the queue depths allow */
	double speed;                   /* original timing divided by this (1) */
};

extern const char *lab_cmd_names[LAB__NCMD];
extern const char *lab_mode_names[LOCK__NMODE];

int lab_locking(const struct lab_opts *o);
int lab_clone(const struct lab_opts *o);
int lab_zero(const struct lab_opts *o);
int lab_reclaim(const struct lab_opts *o);
int lab_bench(const struct lab_opts *o);
int lab_replay(const struct lab_opts *o);

/* ---- messages (util.c) -------------------------------------------------- */

void lab_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void lab_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern bool lab_verbose;
void *lab_xalloc(size_t n);            /* zeroed, dies on failure */
void *lab_xalloc_aligned(size_t n);    /* zeroed, 4096-aligned */
uint64_t lab_now_ns(void);
double lab_cpu_seconds(void);          /* this process, user + system */

/* ---- sessions and the loop (session.c) --------------------------------- */

struct lab_url {
	char portal[256];
	char target[256];
	int lun;
};

struct lab_sess {
	struct iscsi_context *ctx;
	char name[32];                  /* "host1", "vm", "bench2", ... */
	char initiator[300];
	int lun;
	uint32_t bs;                    /* logical block size */
	uint64_t nblocks;
	bool lbpme, lbprz;              /* READ CAPACITY(16) */
	/* VPD B0 (0 = not reported) */
	uint32_t max_caw_blocks, max_unmap_blocks, max_unmap_desc, max_xfer_blocks;
	uint64_t max_ws_blocks;
	unsigned inflight;
	uint64_t cmds;                  /* commands completed */
};

struct lab_io;
typedef void (*lab_io_fn)(struct lab_io *io, struct scsi_task *t);

/* One command in flight. The owner embeds it, sets done (and priv), and
 * keeps any data buffer alive until done runs. */
struct lab_io {
	struct lab_sess *s;
	lab_io_fn done;
	void *priv;
	const char *what;               /* "READ(16)", ... for messages */
	uint64_t lba;
	uint64_t t0_ns;                 /* submitted */
	uint64_t lat_ns;                /* set before done() */
	int status;                     /* SCSI status, set before done() */
	struct scsi_iovec iov;
	bool busy;
};

struct lab_timer {
	uint64_t at_ns;
	void (*fn)(struct lab_timer *t);
	void *arg;
	int slot;                       /* index in the armed list, -1 = idle */
};

int lab_parse_url(const char *url, struct lab_url *u);
/* Log in (blocking), clear unit attentions, read capacity and limits. */
struct lab_sess *lab_sess_open(const struct lab_opts *o, const char *name);
/* The same; without setup only the login (no command sent: a unit
 * attention is still pending, bs and nblocks unknown). */
struct lab_sess *lab_sess_login(const struct lab_opts *o, const char *name, bool setup);
void lab_sess_close(struct lab_sess *s);
/* TCP payload bytes sent (acknowledged) and received on the session's
 * socket (Linux TCP_INFO); false when the kernel does not say. */
bool lab_sess_net_bytes(struct lab_sess *s, uint64_t *tx, uint64_t *rx);
/* The 16-byte NAA designator of the logical unit (VPD 0x83). */
void lab_sess_naa(struct lab_sess *s, uint8_t naa[16]);

void lab_timer_init(struct lab_timer *t, void (*fn)(struct lab_timer *), void *arg);
void lab_timer_arm(struct lab_timer *t, uint64_t delay_ns);
void lab_timer_cancel(struct lab_timer *t);
static inline bool lab_timer_armed(const struct lab_timer *t) { return t->slot >= 0; }
/* Run the loop until done(arg) is true; dies after timeout_s seconds
 * (0 = no limit) saying what was still in flight. */
void lab_run_until(bool (*done)(void *arg), void *arg, double timeout_s, const char *what);

/* Asynchronous commands; each dies when libiscsi cannot queue it. */
void lab_read16(struct lab_io *io, uint64_t lba, uint32_t nblocks, void *buf);
void lab_write16(struct lab_io *io, uint64_t lba, uint32_t nblocks, const void *buf);
void lab_caw(struct lab_io *io, uint64_t lba, const void *cmp_and_write); /* 1 block */
void lab_writesame16(struct lab_io *io, uint64_t lba, uint32_t nblocks, const void *blk, bool unmap);
void lab_unmap(struct lab_io *io, uint64_t lba, uint32_t nblocks);
void lab_xcopy(struct lab_io *io, void *list, size_t len);
void lab_reserve6(struct lab_io *io);
void lab_release6(struct lab_io *io);
void lab_pr_out(struct lab_io *io, int sa, int type, uint64_t key, uint64_t sa_key);
/* Any CDB: dir SCSI_XFER_NONE/READ/WRITE, xfer bytes in or out of buf. */
void lab_raw(struct lab_io *io, const uint8_t *cdb, unsigned cdb_len, int dir, uint32_t xfer,
	     void *buf);

/* Blocking helpers for set-up and checks (the session must be idle). */
void lab_sync_write(struct lab_sess *s, uint64_t lba, uint32_t nblocks, const void *buf);
void lab_sync_read(struct lab_sess *s, uint64_t lba, uint32_t nblocks, void *buf);
/* Mapped blocks in [lba, lba + nblocks) by GET LBA STATUS. */
uint64_t lab_sync_mapped(struct lab_sess *s, uint64_t lba, uint64_t nblocks);

/* ---- status and sense (sense.c) ---------------------------------------- */

/* "GOOD", "RESERVATION CONFLICT", "MISCOMPARE at byte 17",
 * "ILLEGAL REQUEST: LBA OUT OF RANGE", ... */
const char *lab_status_text(int status, const struct scsi_task *t, char *buf, size_t n);
bool lab_is_miscompare(int status, const struct scsi_task *t, int64_t *offset);
bool lab_is_unit_attention(int status, const struct scsi_task *t);
/* Die with "WHO: WHAT LBA n: <status text>" */
void lab_die_status(const struct lab_io *io, const struct scsi_task *t) __attribute__((noreturn));

/* ---- targetd's control socket (control.c) ------------------------------ */

struct lab_counters {
	bool valid;
	uint64_t conflicts;             /* RESERVATION CONFLICT statuses */
	uint64_t ats_ok, ats_miscompare;
	uint64_t xcopy_cmds, xcopy_bytes;
	uint64_t ws_cmds, ws_blocks;
	uint64_t unmap_cmds, unmap_blocks;
	uint64_t write_bytes, read_bytes;
	int64_t allocated_bytes;        /* -1: not reported */
};

/* Read the counters of the URL's LUN; dies with a message saying what to
 * do when the socket does not answer. Without --control: valid = false. */
void lab_ctl_read(const struct lab_opts *o, struct lab_counters *c);
/* targetd's CPU seconds so far (user + system), -1 when unknown. */
double lab_ctl_target_cpu(const struct lab_opts *o);
/* Allocated bytes: targetd's counter, else --backing's st_blocks, else -1. */
int64_t lab_allocated(const struct lab_opts *o);

/* ---- utilities (util.c) ------------------------------------------------- */

#define LAB_HIST_N 1184
struct lab_hist {
	uint64_t count, sum_ns, max_ns;
	uint32_t b[LAB_HIST_N];
};
void lab_hist_add(struct lab_hist *h, uint64_t ns);
double lab_hist_quantile_us(const struct lab_hist *h, double q);
void lab_hist_merge(struct lab_hist *dst, const struct lab_hist *src);
struct json_object *lab_hist_json(const struct lab_hist *h);

/* "4096", "4k", "1M", "2G" (powers of 1024). */
bool lab_parse_size(const char *s, uint64_t *out);
char *lab_fmt_bytes(uint64_t v, char *buf, size_t n);   /* "32.0 MiB" */

uint64_t lab_rand(void);                /* xorshift, seeded once */
double lab_rand01(void);
/* Exponential back-off with jitter: attempt 0, 1, ... -> nanoseconds. */
uint64_t lab_backoff_ns(const struct lab_opts *o, unsigned attempt);

/* A block pattern that names its LBA and a generation: every logical
 * block starts with a header and goes on with a stream seeded by it. */
void lab_pattern_fill(uint8_t *buf, uint32_t nblocks, uint32_t bs, uint64_t lba, uint64_t gen,
		      uint64_t salt);
/* Offset of the first byte that differs from the pattern, or -1. */
int64_t lab_pattern_check(const uint8_t *buf, uint32_t nblocks, uint32_t bs, uint64_t lba,
			  uint64_t gen, uint64_t salt);
int64_t lab_zero_check(const uint8_t *buf, size_t len);

/* Aligned text tables: add cells row by row, print once. */
struct lab_table {
	unsigned ncols, nrows, cap;
	char **cells;                   /* nrows * ncols */
	bool right[16];                 /* right-align column */
};
void lab_table_init(struct lab_table *t, unsigned ncols, const char *const *head);
void lab_table_row(struct lab_table *t, ...);       /* ncols strings */
void lab_table_print(struct lab_table *t);          /* and free */
char *lab_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

void lab_json_print(struct json_object *o);         /* pretty, and put */
struct json_object *lab_json_u64(uint64_t v);
struct json_object *lab_json_double(double v);      /* rounded to 3 decimals */

/* ---- destructive regions (util.c) -------------------------------------- */

/* The region a destructive subcommand may write: --region, or with
 * --force the LUN from LBA 0. need = blocks it needs; dies (with what
 * to do) when it may not or the region is too small. */
void lab_region(const struct lab_opts *o, const struct lab_sess *s, uint64_t need, uint64_t *lba,
		uint64_t *blocks);

/* ---- charts (plot.c) ---------------------------------------------------- */

struct lab_plot;
/* Start a chart for --plot FILE: a private directory for data files. */
struct lab_plot *lab_plot_new(const char *out);
/* Open a data file in the chart's directory; returns its FILE (the
 * caller writes and must not close it); *path gets its quoted name. */
void *lab_plot_data(struct lab_plot *p, const char *name, const char **path);
/* Run gnuplot with the terminal and output set, then the script text;
 * removes the directory. Dies when gnuplot fails. */
void lab_plot_run(struct lab_plot *p, unsigned width, unsigned height, const char *script);
/* gnuplot string literal of s (single-quoted). */
const char *lab_plot_str(const char *s, char *buf, size_t n);
struct lab_plot_panel {
	const char *title;              /* "time (s)", ... */
	const double *values;           /* one per item; < 0: not measured */
};
void lab_plot_bars(const char *out, const char *title, const char *const *items, unsigned n_items,
		   const struct lab_plot_panel *panels, unsigned n_panels);

/* ---- bulk region operations (bulk.c) ------------------------------------ */

enum bulk_op {
	BULK_FILL,              /* WRITE(16) of the pattern */
	BULK_WRITE_ZEROES,      /* WRITE(16) of zero buffers */
	BULK_WRITE_SAME,        /* WRITE SAME(16) of one zero block */
	BULK_UNMAP,             /* UNMAP, one descriptor per command */
	BULK_XCOPY,             /* EXTENDED COPY, one block-to-block segment */
	BULK_HOST_COPY,         /* READ(16) then WRITE(16) */
	BULK_VERIFY_PATTERN,    /* READ(16), compare with the pattern */
	BULK_VERIFY_ZERO,       /* READ(16), compare with zeroes */
};

struct bulk_result {
	double seconds;
	uint64_t cmds;
	uint64_t payload;       /* data bytes carried (data-out + data-in) */
	bool have_net;
	uint64_t net_tx, net_rx;        /* TCP payload bytes on the socket */
	int64_t mismatch_lba;           /* verify: first bad block, or -1 */
	int64_t mismatch_byte;          /* ... and the byte in it */
};

struct bulk_args {
	enum bulk_op op;
	uint64_t lba, blocks;           /* destination region */
	uint64_t src_lba;               /* copies; verify: the pattern's LBA */
	uint32_t chunk_blocks;          /* blocks per command */
	unsigned qd;
	uint64_t gen, salt;             /* the pattern */
};

void lab_bulk(struct lab_sess *s, const struct bulk_args *a, struct bulk_result *r);

#endif
