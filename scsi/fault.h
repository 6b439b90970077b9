/*
 * Fault injection in the SCSI layer (targetd-faults(7)): the rules a SCSI
 * command can meet, kept per LUN, and the two seams of the command path.
 *
 *   after parse      scsi_cmd_parse() -> scsi_fault_parse(): withdrawn
 *                    commands, CHECK CONDITION / status / false miscompare
 *                    answers, and the decisions the later seams carry out
 *                    (cmd->xfault, cmd->fault_ns)
 *   before execute   scsi_cmd_execute() -> scsi_fault_hold(): latency and
 *                    stalls, before the command reaches the backstore
 *   the transport    reads cmd->xfault (drop the connection, withhold R2T,
 *                    corrupt a data digest): targetd/fault_conn.c
 *
 * Each seam is one predictable branch when nothing is armed: the LUN's
 * rule set pointer is NULL, cmd->xfault is 0.
 *
 * DESIGN (threads): a LUN's rules form an immutable struct scsi_fault_set
 * published with a release store in lun->faults and read by the network
 * threads with acquire loads, without a lock. Changes (the control thread,
 * the configuration) are serialised by one mutex in scsi/fault.c: a new
 * set is built, published, and the old one goes into a struct
 * scsi_fault_retired that the caller frees once every network thread has
 * passed a quiescent point (net_synchronize() in targetd/), so no thread
 * still reads it. Rules are shared between sets (and between the LUNs of a
 * target-wide rule) and freed with the last set that holds them. What a
 * rule counts (matches, injections, bytes) is atomic in the rule.
 * Commands keep no pointer to a rule: the decision is copied into the
 * command at parse time.
 *
 * Delayed and stalled commands wait in a list owned by one timer thread
 * (scsi/fault_hold.c), which gives them back to their network thread with
 * io_engine_complete_remote() when the delay ends, the stall times out,
 * the command is aborted (cmd->aborted: ABORT TASK, LUN RESET, a lost
 * connection) or its rule is cleared.
 *
 * Determinism: a rule counts the commands it matches; whether the Nth one
 * is hit (every, probability) and how long it waits (latency) are drawn
 * from (seed, N) only, so the same rules, seed and command sequence give
 * the same injections. Every injection is logged at debug level with that
 * N, and counted in the rule and in the LUN's statistics.
 */
#ifndef SCSI_FAULT_H
#define SCSI_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/fault_spec.h"
#include "scsi/scsi.h"

struct scsi_cmd;
struct scsi_lun;
struct scsi_opcode;

/* cmd->xfault: what the later seams do with the command */
#define SCSI_FAULT_X_DELAY  0x01u  /* wait cmd->fault_ns before it runs */
#define SCSI_FAULT_X_STALL  0x02u  /* wait until aborted or cmd->fault_ns (0: no end) */
#define SCSI_FAULT_X_HOLD   (SCSI_FAULT_X_DELAY | SCSI_FAULT_X_STALL)
#define SCSI_FAULT_X_DROP   0x04u  /* the transport drops the connection */
#define SCSI_FAULT_X_NO_R2T 0x08u  /* the transport never asks for the data */
#define SCSI_FAULT_X_DIGEST 0x10u  /* the transport corrupts the first data digest */

struct scsi_fault_rule;
struct scsi_fault_set;

/* Old sets to free after a grace period (see DESIGN). */
struct scsi_fault_retired {
	struct scsi_fault_set *sets[8];
	unsigned n;
};

/* A rule from its spec. text describes it (listing), action names its
 * action (logs). id is the caller's, unique in the process. NULL: no
 * memory. The caller's reference goes with the first scsi_fault_add();
 * one that is never added is given back with scsi_fault_rule_drop(). */
struct scsi_fault_rule *scsi_fault_rule_new(const struct fault_spec *s, unsigned id,
					    const char *text, const char *action);
void scsi_fault_rule_drop(struct scsi_fault_rule *r);

/* Arm r on lun (state actions take effect now: withdrawn commands, the
 * capacity, the ALUA state). Returns 0, or -1 with err (r is then not on
 * the LUN). ret must have room for one more set. */
int scsi_fault_add(struct scsi_lun *lun, struct scsi_fault_rule *r, struct scsi_fault_retired *ret,
		   char *err, size_t errlen);
/* Disarm the rules of lun for which match(r, arg) is true (NULL: all):
 * state actions are undone and commands they hold are let go. Returns how
 * many were removed. */
unsigned scsi_fault_remove(struct scsi_lun *lun, bool (*match)(const struct scsi_fault_rule *r, void *arg),
			   void *arg, struct scsi_fault_retired *ret);
/* After the grace period. */
void scsi_fault_retired_free(struct scsi_fault_retired *ret);
/* The LUN is being destroyed (no command can reach it any more). */
void scsi_fault_lun_free(struct scsi_lun *lun);

/* Readers (any thread): fn(r, arg) for each rule of lun, in id order,
 * under the rules' mutex (fn must not call back in here). */
void scsi_fault_for_each(struct scsi_lun *lun, void (*fn)(const struct scsi_fault_rule *r, void *arg),
			 void *arg);
struct scsi_fault_counts {
	uint64_t matched;       /* commands the rule looked at past its scope and filters */
	uint64_t injected;      /* injections */
	uint64_t bytes;         /* bytes counted toward after_bytes */
};
void scsi_fault_rule_counts(const struct scsi_fault_rule *r, struct scsi_fault_counts *c);
unsigned scsi_fault_rule_id(const struct scsi_fault_rule *r);
const char *scsi_fault_rule_label(const struct scsi_fault_rule *r);
const char *scsi_fault_rule_text(const struct scsi_fault_rule *r);
const struct fault_spec *scsi_fault_rule_spec(const struct scsi_fault_rule *r);
/* Whether any rule is armed on lun. */
bool scsi_fault_armed(struct scsi_lun *lun);
/* The transport injected a fault of its own (a connection dropped, a
 * digest corrupted, a NOP-In storm) for lun's target: counted with the
 * LUN's faults (lun NULL: nothing to count on). */
void scsi_fault_injected(struct scsi_lun *lun);

/* --- the seams (scsi/scsi.c) --- */
/* After a successful parse, when lun->faults is set. SR_OK: run the
 * command (perhaps held or marked for the transport); else its answer. */
enum sense_reason scsi_fault_parse(struct scsi_cmd *cmd);
/* A command that failed parsing on a LUN with rules: INVALID COMMAND
 * OPERATION CODE if its command was withdrawn (not for a unit attention),
 * else r. */
enum sense_reason scsi_fault_refine(struct scsi_cmd *cmd, enum sense_reason r);
/* Before execute, when cmd->xfault asks for a hold: true if the command is
 * now PENDING (it runs, or ends aborted, when the hold is over);
 * scsi/fault_hold.c. */
bool scsi_fault_hold(struct scsi_cmd *cmd);

/* --- what the LUN offers (scsi/spc.c, scsi/vaai.c) --- */
/* FAULT_CAP_* withdrawn from lun now. */
uint32_t scsi_fault_withdrawn(const struct scsi_lun *lun);
/* REPORT SUPPORTED OPERATION CODES: the command exists for lun and has not
 * been withdrawn. */
bool scsi_op_offered(const struct scsi_opcode *op, const struct scsi_lun *lun);

/* --- scsi/fault_hold.c --- */
/* Let every command held for lun go now (its rules were cleared). */
void scsi_fault_hold_release(const struct scsi_lun *lun);
/* Commands held now (statistics, tests). */
unsigned scsi_fault_held(void);

#endif
