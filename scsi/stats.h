/*
 * Per-LUN statistics: what an array tells its operator (targetctl stats,
 * targetctl top, the Prometheus endpoint).
 *
 * DESIGN (threads): every LUN has one shard of counters per network thread
 * plus one shared shard, each shard on its own cache lines. A network
 * thread (registered with scsi_stats_thread_init()) writes only its own
 * shard, with relaxed atomic loads and stores (no locked instruction, no
 * lock); every other thread (the main thread, tests, the control thread)
 * writes the shared shard with relaxed atomic fetch-and-add. Readers sum
 * the shards with relaxed loads: a snapshot is not one instant across
 * counters, but every counter is exact once the commands it counts have
 * completed. "stats --reset" never writes a shard: it stores the current
 * sums as a baseline (under the LUN's stats mutex) that later snapshots
 * subtract.
 *
 * What is counted, and where:
 *   - scsi_stats_cmd_done() — called once for every command that gets a
 *     status (the transport's scsi_cmd_respond(), scsi/scsi.h): commands by opcode, status, sense key
 *     of CHECK CONDITION, bytes read/written, latency histograms (log2
 *     buckets of microseconds from cmd->start_ns) for reads, writes and
 *     VAAI primitives. It also derives everything that opcode, status and
 *     sense tell: COMPARE AND WRITE successes and miscompares, EXTENDED COPY
 *     (LID1) commands, segments and bytes from its parameter list, WRITE
 *     SAME commands and blocks, UNMAP commands and blocks from its
 *     parameter list, RESERVATION CONFLICT by opcode, RESERVE/RELEASE and
 *     persistent reservation operations by service action.
 *   - The explicit calls below let a handler report what only it knows:
 *     what a (possibly partial) EXTENDED COPY really copied, which takes
 *     the XCOPY counters over for that command (the derivation is skipped,
 *     cmd->stats_flags, so nothing is counted twice), and the blocks a
 *     copy shared by reflink.
 *   - Task management, aborts and unit attentions: scsi_stats_tmf(),
 *     scsi_stats_aborted() (from the transport's scsi_tmf_done() and
 *     scsi_cmd_abort()), and scsi_ua_take() (scsi/scsi.c).
 *
 * LUN lifetime (reload): a command that found its LUN holds it
 * (scsi_stats_hold(), from scsi_cmd_parse()) until its task is freed
 * (scsi_stats_release()). The hold count is per shard like every counter,
 * so it costs nothing shared. scsi_stats_lun_busy() tells whether any
 * command still holds a LUN; reload frees a removed LUN only once it is
 * unpublished, every network thread has passed a quiescent point and the
 * LUN is not busy. A handler that keeps a pointer to ANOTHER LUN across a
 * PENDING return (EXTENDED COPY between LUNs) must hold it the same way
 * with scsi_stats_lun_get()/scsi_stats_lun_put(), on the owning thread.
 */
#ifndef SCSI_STATS_H
#define SCSI_STATS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct scsi_cmd;
struct scsi_lun;

/* Latency buckets: bucket 0 counts latencies < 1 us, bucket i (1..N-2)
 * those in [2^(i-1), 2^i) us, the last bucket everything slower. */
#define SCSI_STATS_LAT_BUCKETS 28

enum scsi_stats_lat {
	STATS_LAT_READ = 0,   /* READ(6/10/12/16) */
	STATS_LAT_WRITE,      /* WRITE(6/10/12/16), WRITE AND VERIFY */
	STATS_LAT_VAAI,       /* COMPARE AND WRITE, EXTENDED COPY, WRITE SAME, UNMAP */
	STATS_LAT__COUNT
};

/* Status codes counted (index, not the SAM value). */
enum scsi_stats_status {
	STATS_ST_GOOD = 0,
	STATS_ST_CHECK_CONDITION,
	STATS_ST_CONDITION_MET,
	STATS_ST_BUSY,
	STATS_ST_RESERVATION_CONFLICT,
	STATS_ST_TASK_SET_FULL,
	STATS_ST_ACA_ACTIVE,
	STATS_ST_TASK_ABORTED,
	STATS_ST_OTHER,
	STATS_ST__COUNT
};

/* cmd->stats_flags */
#define SCSI_STATS_HELD     0x01  /* the command holds its LUN */
#define SCSI_STATS_OWN_XCOPY 0x04 /* the handler reported EXTENDED COPY */
#define SCSI_STATS_COUNTED  0x40  /* scsi_stats_cmd_done() ran */

/* Every counter of one LUN. All fields are uint64_t (the code treats the
 * struct as an array of words to sum and subtract). */
struct scsi_stats_counters {
	uint64_t ops[256];                  /* commands completed, by opcode */
	uint64_t status[STATS_ST__COUNT];
	uint64_t sense_key[16];             /* CHECK CONDITION by sense key */
	uint64_t read_bytes, write_bytes;   /* READ/WRITE family, GOOD */
	uint64_t read_cmds, write_cmds;     /* READ/WRITE family, GOOD */
	/* command PDU received to its status sent (scsi_stats_cmd_sent): what
	 * the initiator sees, less the wire */
	uint64_t lat[STATS_LAT__COUNT][SCSI_STATS_LAT_BUCKETS];
	uint64_t lat_sum_ns[STATS_LAT__COUNT];
	/* the command's backstore request (the last, for the few commands
	 * that make several), submitted to completed */
	uint64_t lat_bs[STATS_LAT__COUNT][SCSI_STATS_LAT_BUCKETS];
	uint64_t lat_bs_sum_ns[STATS_LAT__COUNT];
	uint64_t ats_ok, ats_miscompare;    /* COMPARE AND WRITE */
	uint64_t xcopy_cmds, xcopy_segments, xcopy_bytes, xcopy_reflink_blocks;
	uint64_t ws_cmds, ws_blocks;        /* WRITE SAME */
	uint64_t unmap_cmds, unmap_blocks;  /* UNMAP */
	uint64_t reserve, release;          /* SPC-2 RESERVE/RELEASE, GOOD */
	uint64_t conflicts[256];            /* RESERVATION CONFLICT by opcode */
	uint64_t pr_in[32], pr_out[32];     /* PR IN/OUT by service action, GOOD */
	uint64_t tmf[16];                   /* task management by function code */
	uint64_t aborts;                    /* commands ended by an abort */
	uint64_t ua;                        /* unit attentions delivered */
	/* zero detection (scsi/space.c): writes of zeroes turned into
	 * deallocation (zero_detect = "unmap") or zeroing in place ("on") */
	uint64_t zero_detect_cmds, zero_detect_bytes;
	uint64_t faults;                    /* fault injections (scsi/fault.h) */
};

/* Process-wide counters (not tied to a LUN). */
struct scsi_stats_global {
	uint64_t tmf[16];                   /* by function code */
	uint64_t tmf_rsp[256];              /* by response code */
};

/* Number of network threads that will register (before LUNs exist). */
void scsi_stats_configure(unsigned n_net_threads);
/* Called by network thread idx once, at its start. */
void scsi_stats_thread_init(unsigned idx);

/* LUN life (scsi/lun.c). */
int scsi_stats_lun_init(struct scsi_lun *lun);
void scsi_stats_lun_free(struct scsi_lun *lun);

/* Command path. */
void scsi_stats_hold(struct scsi_cmd *cmd);
void scsi_stats_release(struct scsi_cmd *cmd);
void scsi_stats_cmd_done(struct scsi_cmd *cmd);
/* The command's status left the socket (latency; the transport's
 * scsi_cmd_status_sent()). */
void scsi_stats_cmd_sent(struct scsi_cmd *cmd);
uint64_t scsi_stats_now_ns(void);

/* Another LUN used across a PENDING return (see above). */
void scsi_stats_lun_get(struct scsi_lun *lun);
void scsi_stats_lun_put(struct scsi_lun *lun);
/* True while a command or handler holds the LUN. */
bool scsi_stats_lun_busy(struct scsi_lun *lun);

/*
 * Explicit reports from handlers (on the command's thread, before the
 * command completes).
 */
/* SPC-4 6.4 EXTENDED COPY: segments processed and bytes copied (may be
 * called several times for one command; the command is counted once).
 * Takes the XCOPY counters over for cmd. */
void scsi_stats_xcopy(struct scsi_cmd *cmd, unsigned segments, uint64_t bytes);
/* Bytes of zeroes zero detection did not write (deallocated or zeroed in
 * place), once per command. */
void scsi_stats_zero_detect(struct scsi_cmd *cmd, uint64_t bytes);
/* Blocks an EXTENDED COPY shared (reflink) instead of copying. */
void scsi_stats_xcopy_reflink(struct scsi_cmd *cmd, uint64_t blocks);

/* Task management (targetd/tmf.c): function code and response; lun may be
 * NULL (target-wide functions, unknown LUN). */
void scsi_stats_tmf(struct scsi_lun *lun, uint8_t function, uint8_t response);
/* A command ended by an abort (ABORT TASK, a set abort, a reset, a lost
 * connection). */
void scsi_stats_aborted(struct scsi_cmd *cmd);
/* A unit attention was reported for this LUN. */
void scsi_stats_ua(struct scsi_lun *lun);
/* A fault was injected into a command of this LUN (or a rule took effect). */
void scsi_stats_fault(struct scsi_lun *lun);

/* Readers. */
void scsi_stats_snapshot(struct scsi_lun *lun, struct scsi_stats_counters *out);
void scsi_stats_reset(struct scsi_lun *lun);
void scsi_stats_global_snapshot(struct scsi_stats_global *out);
void scsi_stats_global_reset(void);
/* Latency quantile (0 < q <= 1) in microseconds from a histogram: the upper
 * bound of the bucket holding it, interpolated linearly inside it; 0 when
 * empty. */
double scsi_stats_quantile_us(const uint64_t *buckets, double q);
/* Upper bound (microseconds) of bucket i; UINT64_MAX for the last. */
uint64_t scsi_stats_bucket_le_us(unsigned i);
/* Name of an opcode ("READ(16)"), or NULL when this table does not know it. */
const char *scsi_stats_opcode_name(uint8_t opcode);
/* Name of a task management function code, or NULL. */
const char *scsi_stats_tmf_name(uint8_t function);

#endif
