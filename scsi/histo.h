/*
 * Workload histograms per LUN, in the manner of vscsiStats: what the
 * initiators send (I/O length, seek distance, outstanding commands,
 * interarrival time) and what they get (latency end to end and in the
 * backstore), each for reads, writes and all commands.
 *
 * What is measured, for every command that parsed on a LUN (a command
 * refused by the common checks -- unit attention, reservation conflict,
 * an invalid CDB -- moves no data and is only in scsi/stats.h):
 *   io_length      bytes of the data transfer the CDB asks for (xfer_len)
 *   seek_distance  LBAs from the last block of the previous command of the
 *                  same class to the first block of this one: +1 is
 *                  sequential, 0 re-reads the last block, negative goes
 *                  back (commands that address blocks in the CDB only)
 *   seek_closest   the same distance from the closest of the last
 *                  HISTO_RECENT commands of the class (interleaved
 *                  sequential streams look sequential here)
 *   outstanding    commands of the class in flight when this one arrived,
 *                  itself included (QD1 is 1)
 *   interarrival   time since the previous command of the class arrived
 *   latency        command PDU received to its status sent on the socket
 *   latency_backstore  the command's backstore request, submitted to
 *                  completed (the last one, for the few commands that
 *                  make several; none for commands without one, such
 *                  as a READ sent straight from the page cache)
 * Classes: read = READ(6/10/12/16); write = WRITE(6/10/12/16) and WRITE
 * AND VERIFY; all = every command, those included. Buckets hold values
 * <= their edge, the last one everything above the last edge (vscsiStats'
 * edges; times in microseconds, kept in nanoseconds).
 *
 * DESIGN (threads): a LUN has one histogram set for all initiators and up
 * to HISTO_MAX_INITIATORS more, each for one initiator, added on request.
 * A set has one shard per network thread plus one shared shard, like
 * scsi/stats.c: a network thread writes only its own shard, with relaxed
 * loads and stores (no locked instruction); other threads (tests, the
 * main thread) write the shared shard under histo_shared_lock. Readers
 * sum the shards; reset stores the sums as a baseline that later
 * snapshots subtract. The streams that seek distance and interarrival
 * time compare against are per shard, so with several network threads a
 * class's "previous command" is the previous one that the same thread saw
 * (every command of a session is on one thread: for one initiator the
 * stream is exact). Outstanding counts are per shard too and summed at
 * each arrival (relaxed loads of other threads' lines, no writes).
 *
 * Switching: histograms are on when a LUN is created; `histo off` makes
 * scsi_histo_arrive() return after one relaxed load (a predictable
 * branch). A command counted at arrival is finished by scsi_histo_sent()
 * and scsi_histo_end() whatever the switch says by then (cmd->histo_sets
 * names the sets that counted it), so outstanding counts stay balanced.
 * Initiator sets are allocated when asked for and freed with the LUN
 * only, so a thread that saw one published can always write it; reusing
 * a slot for another initiator resets it by baseline.
 */
#ifndef SCSI_HISTO_H
#define SCSI_HISTO_H

#include <stdbool.h>
#include <stdint.h>

struct scsi_cmd;
struct scsi_lun;

enum scsi_histo_kind {
	HISTO_IO_LENGTH = 0,
	HISTO_SEEK,
	HISTO_SEEK_CLOSEST,
	HISTO_OUTSTANDING,
	HISTO_INTERARRIVAL,
	HISTO_LATENCY,
	HISTO_LATENCY_BS,
	HISTO__KINDS
};

enum scsi_histo_class {
	HISTO_READ = 0,
	HISTO_WRITE,
	HISTO_ALL,
	HISTO__CLASSES
};

#define HISTO_MAX_BUCKETS 34     /* seek distance: 33 edges and above */
#define HISTO_RECENT 16          /* seek_closest looks this far back */
#define HISTO_MAX_INITIATORS 4   /* initiator sets per LUN */

/* cmd->histo_sets: bit 0 the all-initiators set, bit 1 + k initiator set
 * k; HISTO_SENT once the latency is counted. */
#define HISTO_SENT 0x80

struct scsi_histo_desc {
	const char *name;          /* "io_length" (JSON, Prometheus) */
	const char *title;         /* "I/O length" */
	const char *unit;          /* "bytes", "blocks", "commands", "ns" */
	unsigned n_buckets;        /* edges + 1 */
	const int64_t *edges;      /* n_buckets - 1 upper bounds, ascending */
};

struct scsi_histo_snap {
	uint64_t b[HISTO__KINDS][HISTO__CLASSES][HISTO_MAX_BUCKETS];
	int64_t sum[HISTO__KINDS][HISTO__CLASSES];    /* of the values counted */
	uint64_t count[HISTO__KINDS][HISTO__CLASSES]; /* sum of the buckets */
};

const struct scsi_histo_desc *scsi_histo_desc(enum scsi_histo_kind k);
const char *scsi_histo_class_name(enum scsi_histo_class c);  /* "read", "write", "all" */
/* The bucket a value falls in. */
unsigned scsi_histo_bucket(enum scsi_histo_kind k, int64_t v);

/* Shards: set by scsi_stats_configure() / scsi_stats_thread_init() too. */
void scsi_histo_configure(unsigned n_net_threads);
void scsi_histo_thread_init(unsigned idx);

/* LUN life (scsi/lun.c). */
int scsi_histo_lun_init(struct scsi_lun *lun);
void scsi_histo_lun_free(struct scsi_lun *lun);

/* Command path, on the command's thread. arrive: once parsing succeeded
 * (cmd->start_ns set by the transport at PDU receipt, else now). sent:
 * its status left on the socket. end: the command is freed (status sent
 * or not). */
void scsi_histo_arrive(struct scsi_cmd *cmd);
void scsi_histo_sent(struct scsi_cmd *cmd);
void scsi_histo_end(struct scsi_cmd *cmd);

/* Control (any thread; never the data path). */
void scsi_histo_set_enabled(struct scsi_lun *lun, bool on);
bool scsi_histo_enabled(struct scsi_lun *lun);
/* Keep a set for one more initiator (iSCSI name, compared without case):
 * 0, -EEXIST, -ENOSPC (HISTO_MAX_INITIATORS already), -ENOMEM. */
int scsi_histo_add_initiator(struct scsi_lun *lun, const char *iqn);
/* Stop keeping it: 0 or -ENOENT. */
int scsi_histo_remove_initiator(struct scsi_lun *lun, const char *iqn);
/* The initiators with a set of their own (k < HISTO_MAX_INITIATORS; NULL
 * where the slot is free). The string stays valid while the control
 * thread does not remove it. */
const char *scsi_histo_initiator(struct scsi_lun *lun, unsigned k);
/* Zero one set (iqn) or every set (iqn NULL): 0 or -ENOENT. */
int scsi_histo_reset(struct scsi_lun *lun, const char *iqn);
/* Sum of one set (iqn NULL: all initiators): 0 or -ENOENT. */
int scsi_histo_snapshot(struct scsi_lun *lun, const char *iqn, struct scsi_histo_snap *out);
/* Value below which a fraction q (0 < q <= 1) of the samples of one
 * histogram lie, interpolated linearly in the bucket that holds it (the
 * last bucket answers its lower edge); 0 when empty. In the kind's unit. */
double scsi_histo_quantile(const struct scsi_histo_snap *s, enum scsi_histo_kind k,
			   enum scsi_histo_class c, double q);

#endif
