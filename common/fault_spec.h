/*
 * One fault-injection rule, as data: its scope, its trigger and its action
 * (targetd-faults(7)). Only the description lives here, so that every layer
 * can read it: conf/fault.c parses and validates it (the configuration's
 * `faults` lists and the control socket's "fault-add" requests share that
 * one vocabulary), scsi/fault.c runs the rules a SCSI command can meet,
 * targetd/fault_conn.c the ones a connection, a login or a portal meets.
 */
#ifndef COMMON_FAULT_SPEC_H
#define COMMON_FAULT_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#define FAULT_NAME_MAX 48
#define FAULT_MAX_RULES 64          /* rules per LUN, and connection rules in all */
#define FAULT_NOP_STORM_MAX 1000u   /* NOP-In PDUs per second and connection */

enum fault_action {
	FAULT_NONE = 0,
	/* per SCSI command: the answer */
	FAULT_SENSE,            /* CHECK CONDITION with key/asc/ascq (and INFORMATION) */
	FAULT_MEDIUM_ERROR,     /* MEDIUM ERROR 11/00 (reads) or 0C/00 (writes), INFORMATION = LBA */
	FAULT_STATUS,           /* BUSY, TASK SET FULL, RESERVATION CONFLICT: status only */
	FAULT_MISCOMPARE,       /* MISCOMPARE 1D/00, INFORMATION = offset (a false ATS miscompare) */
	/* per SCSI command: when it is answered */
	FAULT_LATENCY,          /* added before the command runs */
	FAULT_STALL,            /* no answer until aborted (or the timeout, then it runs) */
	/* per SCSI command: the transport */
	FAULT_DROP,             /* drop the connection that carries the command */
	FAULT_WITHHOLD_R2T,     /* never ask for the command's data */
	FAULT_CORRUPT_DIGEST,   /* the first data PDU of the answer carries a wrong data digest */
	/* state of the LUN or target while the rule is armed */
	FAULT_WITHDRAW,         /* commands withdrawn (FAULT_CAP_*) */
	FAULT_CAPACITY,         /* the LUN reports another capacity (CAPACITY DATA HAS CHANGED) */
	FAULT_ALUA,             /* a target port group's access state */
	/* connections, logins, portals */
	FAULT_DROP_AFTER,       /* drop the connection that carries the Nth PDU */
	FAULT_NOP_STORM,        /* NOP-In PDUs every second on each connection */
	FAULT_CLOSE_PORTAL,     /* connections to the portal closed, new ones refused */
	FAULT_REFUSE_LOGIN,     /* logins answered with a status class 3 */
	FAULT__COUNT
};

/* FAULT_WITHDRAW: what an array that lost its VAAI support no longer has */
#define FAULT_CAP_CAW        0x01u   /* COMPARE AND WRITE */
#define FAULT_CAP_XCOPY      0x02u   /* EXTENDED COPY, RECEIVE COPY RESULTS, 3PC */
#define FAULT_CAP_UNMAP      0x04u   /* UNMAP, LBPU */
#define FAULT_CAP_WRITE_SAME 0x08u   /* WRITE SAME(10/16), LBPWS, LBPWS10 */

/* Where a rule came from: a reload swaps the file's rules and keeps the
 * ones armed at runtime (targetd-faults(7) RELOAD). */
enum fault_origin {
	FAULT_FROM_RUNTIME = 0, /* targetctl fault add: lasts until cleared */
	FAULT_FROM_TARGET,      /* a target's faults list in the file */
	FAULT_FROM_LUN,         /* a LUN's faults list in the file */
};

enum fault_dist {
	FAULT_DIST_FIXED = 0,   /* delay */
	FAULT_DIST_UNIFORM,     /* uniform in [delay, delay_max] */
	FAULT_DIST_EXP,         /* exponential with mean delay */
	FAULT_DIST_SPIKE,       /* delay with probability spike_p, else none */
};

struct fault_spec {
	char name[FAULT_NAME_MAX];  /* label in statistics; "" = "rule<id>" */
	char scenario[32];          /* the named scenario it came from, or "" */
	int line;                   /* configuration line, 0 if none */
	enum fault_origin origin;

	/* scope */
	int lun;                    /* -1: every LUN of the target */
	char initiator[224];        /* "" = any initiator */
	char portal[64];            /* "" = any; "host:port" as in listen */
	int tpgt;                   /* -1 = any target portal group */

	/* trigger */
	uint8_t ops[32];            /* operation codes (bitmap) */
	bool has_lba;
	uint64_t lba_first, lba_last;   /* inclusive */
	uint32_t every;             /* every Nth matching command (0, 1: each) */
	bool has_probability;
	double probability;         /* 0..1, drawn from (seed, match number) */
	uint64_t seed;
	uint64_t count;             /* at most this many injections (0: no limit) */
	uint64_t after_ns;          /* armed this long after it is added */
	uint64_t duration_ns;       /* and for this long (0: for ever) */
	uint64_t after_bytes;       /* only once this many bytes of matching commands passed */

	/* action */
	enum fault_action action;
	uint8_t status;             /* FAULT_STATUS */
	uint8_t key, asc, ascq;     /* FAULT_SENSE */
	bool has_info;
	uint64_t info;              /* FAULT_SENSE: INFORMATION */
	uint32_t offset;            /* FAULT_MISCOMPARE */
	enum fault_dist dist;       /* FAULT_LATENCY */
	uint64_t delay_ns, delay_max_ns;
	double spike_p;
	uint64_t timeout_ns;        /* FAULT_STALL: 0 = until aborted */
	uint32_t withdraw;          /* FAULT_WITHDRAW: FAULT_CAP_* */
	uint64_t size_bytes;        /* FAULT_CAPACITY */
	uint16_t alua_tpgt;         /* FAULT_ALUA */
	uint8_t alua_state;         /* FAULT_ALUA: enum alua_state (scsi/pr.h) */
	uint32_t pdus;              /* FAULT_DROP_AFTER */
	uint32_t rate;              /* FAULT_NOP_STORM: per second */
	uint64_t period_ns;         /* FAULT_CLOSE_PORTAL: down every period ... */
	uint64_t down_ns;           /* ... for this long (0 period: down while armed) */
	uint16_t login_status;      /* FAULT_REFUSE_LOGIN: 0x03xx */
};

static inline bool fault_spec_op(const struct fault_spec *s, uint8_t op)
{
	return s->ops[op >> 3] & (1u << (op & 7));
}

/* Rules a SCSI command meets (scsi/fault.c), as opposed to the ones of
 * connections, logins and portals (targetd/fault_conn.c). */
static inline bool fault_spec_is_scsi(const struct fault_spec *s)
{
	return s->action >= FAULT_SENSE && s->action <= FAULT_ALUA;
}

/* Rules evaluated per command (as opposed to a state held while armed). */
static inline bool fault_spec_per_command(const struct fault_spec *s)
{
	return s->action >= FAULT_SENSE && s->action <= FAULT_CORRUPT_DIGEST;
}

/* Rules that need the transport's hooks (targetd/fault_conn.c). */
static inline bool fault_spec_needs_transport(const struct fault_spec *s)
{
	return (s->action >= FAULT_DROP && s->action <= FAULT_CORRUPT_DIGEST) ||
	       s->action >= FAULT_DROP_AFTER;
}

#endif
