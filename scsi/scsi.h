/*
 * The SCSI layer: everything that understands a CDB.
 *
 * Contract with the transport (targetd/ for iSCSI):
 *   1. The transport fills a struct scsi_cmd (nexus, lun_id, cdb, exp_xfer_len,
 *      exp_dir, eng, complete) and calls scsi_cmd_parse(). Parsing looks the
 *      LUN up, does the common checks (unknown LUN, unit attention, medium,
 *      reserved CDB bits, LBA range) and sets dir, xfer_len, lba, nblocks and
 *      the execute function. On failure the result is already set
 *      (scsi_cmd_set_result) and the transport sends it.
 *   2. The transport gives the command a data buffer of buf_cap >= xfer_len
 *      bytes (scsi_cmd_buf_need() tells how much); for data-out commands it
 *      receives min(xfer_len, exp_xfer_len) bytes into it (buf_len).
 *   3. scsi_cmd_execute(): returns false when the result is ready now, true
 *      when the command is PENDING; then cmd->complete(cmd) is called exactly
 *      once, later, on the same thread (the thread owning cmd->eng).
 *   4. The result: status, sense/sense_len, and for data-in data_len bytes in
 *      buf. The transport computes iSCSI residuals from exp_xfer_len vs
 *      xfer_len/data_len.
 *
 * Handlers return enum sense_reason; SR_PENDING means "will complete later
 * through scsi_cmd_done()". One table (scsi/sense.c) maps reasons to
 * key/ASC/ASCQ; fixed or descriptor format follows the LUN's D_SENSE.
 *
 * DESIGN (threads): a scsi_cmd belongs to one network thread. struct
 * scsi_lun is shared: immutable fields after creation, atomics for the mode
 * bits read on the data path, lun->lock (a mutex) for rare state changes
 * (mode select, medium, reservations), and the LBA range lock every writer
 * of the medium takes (lun->rangelock, its own short mutex:
 * scsi/rangelock.c). Unit attentions are per I_T nexus and per LUN, kept as
 * atomic bitmasks in the nexus so the data path reads them without a lock;
 * setting one for "every other nexus" walks the target's nexus list under
 * target->lock.
 */
#ifndef SCSI_SCSI_H
#define SCSI_SCSI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "backstore/backstore.h"
#include "scsi/rangelock.h"
#include "common/util.h"

#define SCSI_MAX_LUNS 256
#define SCSI_MAX_CDB 32
#define SCSI_SENSE_BUF 96

enum scsi_status {
	SAM_STAT_GOOD = 0x00,
	SAM_STAT_CHECK_CONDITION = 0x02,
	SAM_STAT_CONDITION_MET = 0x04,
	SAM_STAT_BUSY = 0x08,
	SAM_STAT_RESERVATION_CONFLICT = 0x18,
	SAM_STAT_TASK_SET_FULL = 0x28,
	SAM_STAT_ACA_ACTIVE = 0x30,
	SAM_STAT_TASK_ABORTED = 0x40,
};

enum scsi_dir {
	SCSI_DIR_NONE = 0,
	SCSI_DIR_READ,     /* data-in: target to initiator */
	SCSI_DIR_WRITE,    /* data-out: initiator to target */
	SCSI_DIR_BIDI,
};

enum scsi_sense_key {
	SK_NO_SENSE = 0x0, SK_RECOVERED_ERROR = 0x1, SK_NOT_READY = 0x2,
	SK_MEDIUM_ERROR = 0x3, SK_HARDWARE_ERROR = 0x4, SK_ILLEGAL_REQUEST = 0x5,
	SK_UNIT_ATTENTION = 0x6, SK_DATA_PROTECT = 0x7, SK_BLANK_CHECK = 0x8,
	SK_COPY_ABORTED = 0xa, SK_ABORTED_COMMAND = 0xb, SK_VOLUME_OVERFLOW = 0xd,
	SK_MISCOMPARE = 0xe,
};

/* Every way a command can end. scsi/sense.c maps each to status and sense.
 * The values are internal (never stored or sent): grouped by sense key. */
enum sense_reason {
	SR_OK = 0,
	SR_PENDING,                     /* not a result: completes later */
	SR_RESERVATION_CONFLICT,        /* status only */
	SR_BUSY,
	SR_TASK_SET_FULL,
	SR_TASK_ABORTED,
	/* ILLEGAL REQUEST */
	SR_INVALID_OPCODE,              /* 20/00 */
	SR_INVALID_FIELD_CDB,           /* 24/00 + field pointer */
	SR_INVALID_FIELD_PARAM,         /* 26/00 + field pointer */
	SR_PARAM_LIST_LENGTH_ERROR,     /* 1A/00 */
	SR_LBA_OUT_OF_RANGE,            /* 21/00 */
	SR_LUN_NOT_SUPPORTED,           /* 25/00 */
	SR_SAVING_PARAMS_UNSUPPORTED,   /* 39/00 */
	SR_MEDIUM_REMOVAL_PREVENTED,    /* 53/02 */
	SR_TOO_MANY_SEGMENT_DESCRIPTORS,/* 26/08 */
	SR_TOO_MANY_TARGET_DESCRIPTORS, /* 26/06 */
	SR_UNSUPPORTED_TARGET_DESCRIPTOR,  /* 26/07 */
	SR_UNSUPPORTED_SEGMENT_DESCRIPTOR, /* 26/09 */
	SR_INVALID_RELEASE_OF_PR,       /* 26/04 */
	SR_INSUFFICIENT_REGISTRATION_RESOURCES, /* 55/04 */
	SR_INVALID_FIELD_IU,            /* 0E/03: data-out shorter than the CDB's
	                                 * transfer length */
	SR_OPERATION_IN_PROGRESS,       /* 00/16 (EXTENDED COPY list ID in use) */
	SR_INVALID_MESSAGE,             /* 49/00 (ACA task attribute, scsi/taskset.c) */
	/* MISCOMPARE */
	SR_MISCOMPARE_VERIFY,           /* 1D/00 + INFORMATION */
	/* NOT READY */
	SR_MEDIUM_NOT_PRESENT,          /* 3A/00 */
	SR_LUN_NOT_READY_MANUAL,        /* 04/03 manual intervention required (offline) */
	SR_LUN_NOT_ACCESSIBLE_STANDBY,  /* 04/0B */
	SR_LUN_NOT_ACCESSIBLE_UNAVAIL,  /* 04/0C */
	SR_LUN_NOT_ACCESSIBLE_TRANSITION, /* 04/0A */
	SR_SANITIZE_IN_PROGRESS,        /* 04/1B */
	/* DATA PROTECT */
	SR_WRITE_PROTECTED,             /* 27/00 */
	SR_SPACE_ALLOC_FAILED,          /* 27/07 SPACE ALLOCATION FAILED WRITE PROTECT */
	/* MEDIUM ERROR */
	SR_READ_ERROR,                  /* 11/00 unrecovered read error */
	SR_WRITE_ERROR,                 /* 0C/00 write error */
	SR_SANITIZE_FAILED,             /* 31/03 */
	/* HARDWARE ERROR */
	SR_INTERNAL_ERROR,              /* 44/00 internal target failure */
	/* ABORTED COMMAND */
	SR_DATA_PHASE_ERROR,            /* 4B/00 (transport: bad Data-Out sequence) */
	SR_INITIATOR_RESPONSE_TIMEOUT,  /* 4B/06 (transport: no Data-Out in time) */
	/* COPY ABORTED */
	SR_COPY_TARGET_DEVICE_NOT_REACHABLE, /* 0D/02 */
	SR_COPY_ABORTED,                /* 00/00 (EXTENDED COPY segment error) */
	/* UNIT ATTENTION: produced by the UA machinery, one per ua_bit */
	SR_UA,
	/* fault injection: the sense a rule gives (cmd->fault_key, ua_asc, ua_ascq) */
	SR_FAULT_SENSE,
	SR__COUNT
};

/* Unit attention conditions, one bit each, reported in this order. */
enum scsi_ua {
	UA_POWER_ON = 0,          /* 29/00 POWER ON, RESET, OR BUS DEVICE RESET OCCURRED */
	UA_BUS_RESET,             /* 29/02 SCSI BUS RESET OCCURRED (target reset) */
	UA_LUN_RESET,             /* 29/03 BUS DEVICE RESET FUNCTION OCCURRED */
	UA_NEXUS_LOSS,            /* 29/07 I_T NEXUS LOSS OCCURRED */
	UA_COMMANDS_CLEARED,      /* 2F/00 COMMANDS CLEARED BY ANOTHER INITIATOR */
	UA_MODE_CHANGED,          /* 2A/01 MODE PARAMETERS CHANGED */
	UA_RESERVATIONS_PREEMPTED,/* 2A/03 */
	UA_RESERVATIONS_RELEASED, /* 2A/04 */
	UA_REGISTRATIONS_PREEMPTED, /* 2A/05 */
	UA_ALUA_CHANGED,          /* 2A/06 ASYMMETRIC ACCESS STATE CHANGED */
	UA_CAPACITY_CHANGED,      /* 2A/09 CAPACITY DATA HAS CHANGED */
	UA_MEDIUM_CHANGED,        /* 28/00 NOT READY TO READY CHANGE, MEDIUM MAY HAVE CHANGED */
	UA_LUNS_CHANGED,          /* 3F/0E REPORTED LUNS DATA HAS CHANGED */
	UA_SOFT_THRESHOLD,        /* 38/07 THIN PROVISIONING SOFT THRESHOLD REACHED */
	UA__COUNT
};

struct scsi_lun;
struct scsi_target;
struct scsi_cmd;
struct io_engine;
struct pr_lun;                /* scsi/pr.c */
struct xcopy_lun;             /* scsi/xcopy.c */
struct xcopy_job;
struct scsi_lun_stats;        /* scsi/stats.c */
struct scsi_lun_histo;        /* scsi/histo.c */
struct alua_target;           /* scsi/alua.c */
struct scsi_fault_set;       /* scsi/fault.c */

/* One I_T nexus (an iSCSI session). Owned by the transport. */
struct scsi_nexus {
	uint64_t id;                       /* unique in the process */
	char initiator_port[300];          /* "iqn...,i,0x<ISID>" */
	char initiator_name[224];
	uint8_t isid[6];
	uint16_t rel_tport_id;             /* relative target port identifier */
	uint16_t tpgt;
	struct scsi_target *target;
	struct list_head target_link;      /* in target->nexus_list, under target->lock */
	_Atomic uint32_t ua[SCSI_MAX_LUNS]; /* pending UA bits per LUN id */
	/* LUNs on which this nexus holds a PREVENT ALLOW MEDIUM REMOVAL
	 * prevention (bit per LUN id), released on I_T nexus loss. */
	_Atomic uint32_t prevent[SCSI_MAX_LUNS / 32];
	void *priv;                        /* transport session */
};

struct scsi_mode_state {
	bool wce;       /* Caching page: write cache enable */
	bool rcd;       /* read cache disable */
	bool d_sense;   /* Control page: descriptor format sense */
	bool swp;       /* Control page: software write protect */
	uint8_t qerr;
	uint8_t tas;
	uint8_t mrie;   /* Informational Exceptions page */
	bool dexcpt;
	bool perf;
	uint32_t ie_interval;
	uint16_t ie_report_count;
};

/* Zero detection (scsi/space.c): what a WRITE of nothing but zeroes does
 * on a thin LUN. */
enum scsi_zero_detect {
	SCSI_ZD_OFF = 0,             /* written like any other data */
	SCSI_ZD_ON,                  /* zeroed in place (WRITE ZEROES: ZERO_RANGE) */
	SCSI_ZD_UNMAP,               /* deallocated (DISCARD: punch holes) */
};

struct scsi_lun_params {
	uint16_t id;
	uint32_t block_size;         /* 512 or 4096 */
	uint64_t nblocks;
	bool read_only;
	bool removable;
	bool thin;
	bool sanitize;               /* SANITIZE allowed */
	enum scsi_zero_detect zero_detect; /* asked for; see scsi_lun.zero_detect */
	uint64_t hard_limit;         /* bytes the backstore may hold (0: no limit) */
	uint64_t soft_threshold;     /* bytes held that raise 06/38/07 (0: none) */
	uint8_t pool_threshold_pct;  /* percent of the pool used that does (0: none) */
	uint64_t space_sample_ns;    /* thresholds: least time between two looks
	                              * at the backstore's space (0: every write) */
	const char *serial;          /* NULL: derived from target + LUN */
	const char *vendor;          /* NULL: "TARGETD" */
	const char *product;         /* NULL: "VIRTUAL-DISK" */
};

struct scsi_lun {
	uint16_t id;
	struct scsi_target *target;
	struct backstore *bs;
	uint32_t block_size;
	uint8_t block_shift;
	_Atomic uint64_t nblocks;     /* may change on resize */
	bool read_only;
	bool removable;
	bool thin;
	bool sanitize_ok;
	/* In effect: SCSI_ZD_OFF unless asked for on a thin LUN whose
	 * backstore deallocates and reads zeroes back (scsi_lun_create()). */
	enum scsi_zero_detect zero_detect;
	/* Space the backstore may hold, bytes (0: as much as the file system
	 * gives): a request that would allocate past it fails with SPACE
	 * ALLOCATION FAILED WRITE PROTECT (scsi/space.c). */
	uint64_t hard_limit;
	/* Thin provisioning soft thresholds (scsi/space.c): bytes the LUN
	 * holds, percent of its pool used; crossing either establishes THIN
	 * PROVISIONING SOFT THRESHOLD REACHED for every nexus, once, until
	 * the LUN drops below again. Looked at on writes, at most once per
	 * space_sample_ns (space_next_ns, the next time, shared). */
	uint64_t soft_threshold;
	uint8_t pool_threshold_pct;
	uint64_t space_sample_ns;
	_Atomic uint64_t space_next_ns;
	_Atomic bool soft_reached;
	/* hard_limit, soft_threshold or pool_threshold_pct set: scsi_submit()
	 * calls scsi/space.c for each request that allocates (one branch) */
	bool space_watch;
	char serial[64];
	char vendor[9];
	char product[17];
	char revision[5];
	uint64_t naa;                 /* NAA-6 high 64 bits, stable (from serial) */
	uint64_t naa_ext;             /* NAA-6 low 64 bits */

	pthread_mutex_t lock;         /* mode, medium, prevent, sanitize state */
	struct scsi_mode_state mode;  /* current values, under lock */
	_Atomic bool wce;             /* mirrors mode.wce for the data path */
	_Atomic bool d_sense;         /* mirrors mode.d_sense */
	_Atomic bool swp;             /* mirrors mode.swp */
	_Atomic bool medium_present;  /* removable: loaded; START STOP */
	_Atomic bool stopped;         /* START STOP UNIT START=0 */
	_Atomic unsigned prevent;     /* PREVENT ALLOW MEDIUM REMOVAL holders */
	_Atomic bool sanitizing;
	_Atomic bool offline;         /* set by the admin: medium access is NOT READY */

	_Atomic bool tpc;             /* INQUIRY 3PC: EXTENDED COPY offered */
	uint8_t tpgs;                 /* INQUIRY TPGS (0: no ALUA) */
	uint8_t lbppb_exp;            /* READ CAPACITY(16) LOGICAL BLOCKS PER PHYSICAL
	                               * BLOCK EXPONENT: log2(backstore physical
	                               * block / block_size), 0 when not larger */
	uint32_t max_xfer_blocks;     /* VPD B0 MAXIMUM TRANSFER LENGTH, honoured */
	/* WRITE ATOMIC (scsi/sbc_atomic.c), set at creation: ATOMIC TRANSFER
	 * LENGTH GRANULARITY (= ATOMIC ALIGNMENT) and MAXIMUM ATOMIC TRANSFER
	 * LENGTH in blocks, powers of two, 0 when not offered; the backstore's
	 * own atomic write units in blocks (0: any write is atomic). */
	uint32_t atomic_gran, atomic_max;
	uint32_t atomic_unit_min, atomic_unit_max;
	_Atomic uint32_t sanitize_progress; /* 0..65535 while sanitizing */
	_Atomic bool sanitize_failed; /* last SANITIZE failed: EXIT FAILURE MODE */

	/* The LBA range lock every writer of the medium takes (scsi/rangelock.c;
	 * scsi_rl_lock() in scsi/scsi.c): what makes COMPARE AND WRITE atomic. */
	struct rangelock rangelock;
	struct xcopy_lun *priv_xcopy; /* EXTENDED COPY results (scsi/xcopy.c) */
	struct pr_lun *priv_pr;       /* reservations (scsi/pr.c) */
	struct scsi_lun_stats *priv_stats; /* statistics (scsi/stats.c) */
	struct scsi_lun_histo *priv_histo; /* workload histograms (scsi/histo.c) */
	_Atomic(struct scsi_fault_set *) faults; /* armed fault rules, NULL: none (scsi/fault.h) */
};

/* A SCSI target device: its LUNs and its I_T nexuses. */
struct scsi_target {
	char name[224];
	uint16_t id;                       /* index among targets (for NAA etc.) */
	/* NULL where no LUN. Published with a release store
	 * (scsi_target_set_lun()) and read with scsi_target_lun() only. */
	struct scsi_lun *_Atomic luns[SCSI_MAX_LUNS];
	pthread_mutex_t lock;              /* nexus_list */
	struct list_head nexus_list;
	struct alua_target *priv_alua;     /* target port groups (scsi/alua.c) */
};

/* The LUN of a target at id, or NULL: the one reader of luns[] (an
 * acquire load, paired with scsi_target_set_lun()'s release store). */
static inline struct scsi_lun *scsi_target_lun(const struct scsi_target *t, uint64_t id)
{
	if (id >= SCSI_MAX_LUNS)
		return NULL;
	return atomic_load_explicit(&t->luns[id], memory_order_acquire);
}

/* CDB usage map and handler for one opcode (or opcode + service action). */
struct scsi_opcode {
	uint8_t opcode;
	uint16_t service_action;
	bool has_sa;                 /* service action in CDB byte 1 (bits 4..0) */
	const char *name;
	uint8_t cdb_len;
	uint8_t usage[SCSI_MAX_CDB]; /* REPORT SUPPORTED OPCODES CDB usage data;
	                              * bits not set here must be zero (else
	                              * INVALID FIELD IN CDB) */
	enum sense_reason (*parse)(struct scsi_cmd *cmd);
	unsigned flags;
};

/* scsi_opcode.flags */
#define OPF_NO_LUN      0x001  /* valid without a configured LUN (REPORT LUNS, INQUIRY, REQUEST SENSE) */
#define OPF_NO_UA       0x002  /* not blocked by (and does not report) unit attention */
#define OPF_MEDIUM      0x004  /* needs the medium (NOT READY otherwise) */
#define OPF_WRITES      0x008  /* modifies the medium (WRITE PROTECTED checks) */
#define OPF_CONFLICT_OK 0x010  /* allowed while another nexus holds a reservation */
#define OPF_VAAI        0x020  /* counted as a VAAI primitive */
#define OPF_REMOVABLE   0x040  /* exists only on removable LUNs */
#define OPF_SANITIZE    0x080  /* exists only where SANITIZE is allowed */
#define OPF_SANITIZE_OK 0x100  /* allowed while a SANITIZE is in progress */
#define OPF_THIN        0x200  /* exists only with logical block provisioning (UNMAP) */
#define OPF_ATOMIC      0x800  /* exists only where atomic writes are offered */
#define OPF_SHRINK      0x400  /* a short data-out may shrink it to the whole blocks
                                * received (scsi_cmd_shrink_dataout()) */

struct scsi_cmd {
	/* Set by the transport before scsi_cmd_parse(). */
	struct scsi_nexus *nexus;
	uint64_t lun_id;                /* decoded LUN (flat/peripheral addressing) */
	uint8_t cdb[SCSI_MAX_CDB];
	uint8_t cdb_len;                /* 16 unless an AHS extended it */
	uint8_t task_attr;              /* SAM task attribute */
	uint32_t exp_xfer_len;          /* iSCSI Expected Data Transfer Length */
	enum scsi_dir exp_dir;          /* from the iSCSI R/W bits */
	struct io_engine *eng;          /* owning thread's engine */
	void (*complete)(struct scsi_cmd *cmd); /* for PENDING commands */

	/* Set by parsing. */
	struct scsi_lun *lun;           /* NULL if the LUN does not exist */
	const struct scsi_opcode *op;
	enum scsi_dir dir;
	uint32_t xfer_len;              /* bytes of the data phase the CDB asks for */
	uint64_t lba;
	uint32_t nblocks;
	bool fua;
	uint8_t bytchk;                 /* VERIFY, WRITE AND VERIFY: BYTCHK */
	enum sense_reason (*execute)(struct scsi_cmd *cmd);

	/* Zero-copy data-in. The transport sets zc_ok when it can send
	 * data-in from data_ptr instead of buf; a READ handler may then point
	 * there rather than copy. Whatever lies there when the transport
	 * sends it is what the initiator gets (SCSI orders no concurrent
	 * READ against WRITE of the same blocks). */
	bool zc_ok;
	const uint8_t *data_ptr;

	/* Data buffer, owned by the transport. */
	uint8_t *buf;
	uint32_t buf_cap;
	uint32_t buf_len;               /* data-out bytes received */
	uint32_t data_len;              /* data-in bytes produced */

	/* Result. */
	uint8_t status;
	enum sense_reason reason;
	uint8_t sense[SCSI_SENSE_BUF];
	uint8_t sense_len;
	bool info_valid;
	uint64_t info;                  /* INFORMATION field */
	bool field_valid;               /* sense-key specific field pointer */
	bool field_in_cdb;
	uint16_t field_byte;
	int8_t field_bit;               /* -1: no bit pointer */
	uint8_t ua_asc, ua_ascq;        /* SR_UA */

	/* Execution state for handlers (async I/O, multi-step commands),
	 * touched by the command's thread only. */
	struct bs_io io;                /* the request in flight (scsi_submit()) */
	struct rangelock_req rl;        /* LBA range lock (scsi_rl_lock()):
	                                 * released when the command ends, or,
	                                 * with rl_keep, by scsi_cmd_release() */
	bool rl_keep;                   /* a zero-copy READ: the transport sends
	                                 * from the backstore's bytes after the
	                                 * end, so the range stays locked */
	enum sense_reason (*rl_cont)(struct scsi_cmd *cmd); /* run once rl is held */
	void (*on_end)(struct scsi_cmd *cmd); /* handler's last word: runs once
	                                 * when the command ends, result set */
	uint8_t *scratch;               /* a second buffer (scsi_scratch()),
	                                 * freed when the command ends */
	union {                         /* per command family, set by its parse
	                                 * or execute function */
		struct {                /* WRITE AND VERIFY, ORWRITE */
			uint8_t step;   /* 0: first request, 1: second */
		} rmw;
		struct {                /* WRITE SAME */
			bool unmap;     /* UNMAP bit: deallocate */
			uint64_t done;  /* bytes written so far (pattern) */
		} ws;
		struct {                /* UNMAP */
			uint32_t ndesc; /* block descriptors in the list */
			uint32_t next;  /* the next one to deallocate */
			bool dirty;     /* something was deallocated */
		} unmap;
		struct xcopy_job *xcopy; /* EXTENDED COPY (scsi/xcopy.c) */
		struct {                /* WRITE ATOMIC: the blocks written */
			uint64_t wlba;  /* as one atomic write (the command's */
			uint32_t wn;    /* own, or the window holding them) */
		} atomic;
	};
	uint32_t buf_extra;             /* scratch bytes a handler wants after
	                                 * xfer_len (set by parsing) */
	uint64_t start_ns;              /* for latency statistics */
	uint8_t stats_flags;            /* scsi/stats.h SCSI_STATS_* */
	uint8_t histo_sets;             /* scsi/histo.h: the sets that counted it */
	_Atomic bool aborted;           /* set by task management */

	/* Fault injection (scsi/fault.h), decided at parse; zero when none. */
	uint8_t xfault;                 /* SCSI_FAULT_X_* */
	uint8_t fault_key;              /* SR_FAULT_SENSE: the sense key */
	uint64_t fault_ns;              /* hold: delay, or stall timeout (0: none) */
};

/* Bytes of buffer the transport must give the command (after parsing).
 * Data-out: xfer_len. Data-in: xfer_len, which parsing clamps to what the
 * command can ever produce (an allocation length of 4 GiB for REPORT LUNS
 * does not ask for a 4 GiB buffer). Plus buf_extra: scratch space after the
 * data that some handlers use (COMPARE AND WRITE reads the medium there,
 * WRITE SAME keeps its iovecs there) instead of allocating per command;
 * a handler given less falls back to an allocation or fails cleanly.
 *
 * Short data-out (exp_xfer_len < xfer_len, so buf_len < xfer_len): per
 * FCP-4 9.4.2 the device server may process only the data received or
 * refuse the command (libiscsi's residual tests accept both). The iSCSI
 * transport shrinks a plain WRITE / WRITE AND VERIFY to the whole blocks
 * received (nblocks and xfer_len, before the data phase) and refuses a
 * partial block; whatever still reaches scsi_cmd_execute() with buf_len <
 * xfer_len is refused with CHECK CONDITION, ILLEGAL REQUEST, INVALID FIELD
 * IN COMMAND INFORMATION UNIT (0E/03) without touching any block. The
 * transport reports the overflow residual either way. Extra data-out
 * (exp_xfer_len > xfer_len) is ignored past xfer_len (underflow residual). */
static inline uint32_t scsi_cmd_buf_need(const struct scsi_cmd *cmd)
{
	return cmd->xfer_len + cmd->buf_extra;
}

/* Short data-out, before the data phase (see above): shrink a parsed
 * command whose opcode allows it (OPF_SHRINK: WRITE, WRITE AND VERIFY) to
 * the whole blocks of the bytes the initiator sends. Returns false, and
 * changes nothing, for any other command or a partial block. */
bool scsi_cmd_shrink_dataout(struct scsi_cmd *cmd, uint32_t bytes);

/* --- core (scsi/scsi.c) --- */
enum sense_reason scsi_cmd_parse(struct scsi_cmd *cmd);
/* Returns true if PENDING. On false the result is set. */
bool scsi_cmd_execute(struct scsi_cmd *cmd);
/* Handlers finishing a PENDING command: set the result, call complete(). */
void scsi_cmd_done(struct scsi_cmd *cmd, enum sense_reason r);
/* Set status/sense from a reason (builds sense per the LUN's D_SENSE). */
void scsi_cmd_set_result(struct scsi_cmd *cmd, enum sense_reason r);
/* Reset a command for reuse (keeps buf/buf_cap). */
void scsi_cmd_reset(struct scsi_cmd *cmd);
/* The transport is done with a parsed command (its data sent or dropped):
 * releases what outlives the command's end, the LBA range lock of a
 * zero-copy READ (rl_keep) and the statistics' hold on the LUN. Once per
 * parsed command, before it is reset or freed; the LUN may go after it. */
void scsi_cmd_release(struct scsi_cmd *cmd);
static inline enum sense_reason scsi_invalid_cdb(struct scsi_cmd *cmd, uint16_t byte, int bit)
{
	cmd->field_valid = true;
	cmd->field_in_cdb = true;
	cmd->field_byte = byte;
	cmd->field_bit = (int8_t)bit;
	return SR_INVALID_FIELD_CDB;
}
static inline enum sense_reason scsi_invalid_param(struct scsi_cmd *cmd, uint16_t byte, int bit)
{
	cmd->field_valid = true;
	cmd->field_in_cdb = false;
	cmd->field_byte = byte;
	cmd->field_bit = (int8_t)bit;
	return SR_INVALID_FIELD_PARAM;
}

/* What the transport reports of a command's life (scsi/scsi.c), on the
 * command's thread; the statistics and the workload histograms are kept
 * from these, so a transport never calls them itself:
 *   scsi_cmd_arrived   its request is in, before scsi_cmd_parse(): the
 *                      latencies count from here;
 *   scsi_cmd_respond   its status is final (from parse, execution or the
 *                      transport) and goes to the initiator: counted once,
 *                      by opcode, status, sense, bytes and what the
 *                      opcode implies (scsi/stats.h);
 *   scsi_cmd_status_sent  the status left on the wire: the latency to it;
 *   scsi_cmd_forget    the transport drops the command (sent, aborted or
 *                      never parsed): it is no longer in flight;
 *   scsi_cmd_abort     task management aborts it (SAM-5 7.2): counted, and
 *                      a command that is running (in_flight) is told, so a
 *                      handler may stop early;
 *   scsi_tmf_done      a task management function on lun (NULL: none
 *                      known) ended with the transport's response code. */
void scsi_cmd_arrived(struct scsi_cmd *cmd);
void scsi_cmd_respond(struct scsi_cmd *cmd);
void scsi_cmd_status_sent(struct scsi_cmd *cmd);
void scsi_cmd_forget(struct scsi_cmd *cmd);
void scsi_cmd_abort(struct scsi_cmd *cmd, bool in_flight);
void scsi_tmf_done(struct scsi_lun *lun, uint8_t function, uint8_t response);

/* Opcode table (scsi/opcodes.c). */
const struct scsi_opcode *scsi_opcode_lookup(const uint8_t *cdb);
extern const struct scsi_opcode *const scsi_opcodes[];
extern const unsigned scsi_opcodes_count;

/* Sense (scsi/sense.c): fill cmd->sense from cmd->reason and fields. */
void scsi_build_sense(struct scsi_cmd *cmd, bool descriptor);
/* Key/ASC/ASCQ/status of a reason (for tests, statistics). */
void scsi_reason_info(enum sense_reason r, uint8_t *status, uint8_t *key, uint8_t *asc, uint8_t *ascq);
/* Name of a sense key ("ILLEGAL REQUEST"), for statistics and logs. */
const char *scsi_sense_key_name(unsigned key);

/* LUNs (scsi/lun.c). */
int scsi_lun_create(struct scsi_lun **out, struct scsi_target *t,
		    const struct scsi_lun_params *p, struct backstore *bs);
void scsi_lun_destroy(struct scsi_lun *lun);
static inline uint64_t scsi_lun_nblocks(const struct scsi_lun *lun)
{
	return atomic_load_explicit(&lun->nblocks, memory_order_relaxed);
}

/* Targets and nexuses (scsi/lun.c). */
void scsi_target_init(struct scsi_target *t, const char *name, uint16_t id);
void scsi_target_destroy(struct scsi_target *t);
/* Register a new I_T nexus: gets POWER ON UA on every LUN. */
void scsi_nexus_attach(struct scsi_target *t, struct scsi_nexus *n);
void scsi_nexus_detach(struct scsi_nexus *n);
/* End what an I_T nexus loss ends (reservations, preventions) ahead of
 * the detach, e.g. when a logout closes the session; idempotent. */
void scsi_nexus_release(struct scsi_nexus *n);
/* Establish a UA on one LUN for every nexus except 'except' (may be NULL). */
void scsi_ua_establish(struct scsi_target *t, uint16_t lun, enum scsi_ua ua,
		       const struct scsi_nexus *except);
void scsi_ua_establish_all_luns(struct scsi_target *t, enum scsi_ua ua,
				const struct scsi_nexus *except);
/* Clear every UA of a nexus on a LUN. */
void scsi_ua_clear(struct scsi_nexus *n, uint16_t lun);

/* Task management effects on SCSI state (reservations, UA). */
void scsi_lun_reset(struct scsi_lun *lun, const struct scsi_nexus *by);
void scsi_target_reset(struct scsi_target *t, const struct scsi_nexus *by, bool cold);
/* Resize: sets nblocks and establishes CAPACITY DATA HAS CHANGED for every
 * nexus. */
void scsi_lun_set_capacity(struct scsi_lun *lun, uint64_t nblocks);
/* Whole-LUN operations (targetctl lun clone, snapshot, revert), from a
 * thread that is not a network thread; scsi/lun.c. scsi_lun_freeze():
 * every write acknowledged so far is in the backstore and no other write
 * starts until scsi_lun_thaw() (the exclusive range lock over every LBA;
 * waits for the writes in flight). 0 or -ENOMEM. */
struct scsi_lun_freeze {
	struct rangelock_req rl;
	struct io_engine *eng;    /* private: receives the grant */
	struct bs_io notify;
};
int scsi_lun_freeze(struct scsi_lun *lun, struct scsi_lun_freeze *f);
void scsi_lun_thaw(struct scsi_lun_freeze *f);
/* The LUN's blocks were replaced (revert) and it has nblocks now: unit
 * attentions for every nexus (see scsi/lun.c for which and why). */
void scsi_lun_content_replaced(struct scsi_lun *lun, uint64_t nblocks);
/* Add (or remove, lun == NULL) a LUN while sessions run: REPORTED LUNS DATA
 * HAS CHANGED for every nexus on every LUN. */
void scsi_target_set_lun(struct scsi_target *t, uint16_t id, struct scsi_lun *lun);

#endif
