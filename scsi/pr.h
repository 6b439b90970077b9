/*
 * Reservations: SPC-2 RESERVE/RELEASE and SPC-4 persistent reservations
 * (PERSISTENT RESERVE IN/OUT), with APTPL state kept in the state
 * directory; and asymmetric logical unit access (ALUA) target port groups.
 *
 * The SCSI core calls, for every command that reached a LUN:
 *   alua_check() -- is the command allowed in the access state of the
 *                   target port group it arrived through (NOT READY with
 *                   04/0A, 04/0B or 04/0C otherwise);
 *   pr_check()   -- is it allowed in the presence of the LUN's reservation
 *                   (RESERVATION CONFLICT otherwise).
 * Both are lock-free while the LUN has no reservation and every group is
 * active: one atomic load each.
 *
 * See scsi/pr.c for the locking of the shared per-LUN state.
 */
#ifndef SCSI_PR_H
#define SCSI_PR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "scsi/scsi.h"

/* PERSISTENT RESERVE OUT TYPE codes (SPC-4 6.16.4, table 169). */
enum pr_type {
	PR_TYPE_NONE = 0,
	PR_TYPE_WE = 0x1,        /* Write Exclusive */
	PR_TYPE_EA = 0x3,        /* Exclusive Access */
	PR_TYPE_WE_RO = 0x5,     /* Write Exclusive - Registrants Only */
	PR_TYPE_EA_RO = 0x6,     /* Exclusive Access - Registrants Only */
	PR_TYPE_WE_AR = 0x7,     /* Write Exclusive - All Registrants */
	PR_TYPE_EA_AR = 0x8,     /* Exclusive Access - All Registrants */
};

/* Most registrations one LUN keeps (beyond: INSUFFICIENT REGISTRATION
 * RESOURCES). */
#define PR_MAX_REGS 128

/* --- per-LUN life cycle (scsi/lun.c) --- */
int pr_lun_init(struct scsi_lun *lun);
void pr_lun_free(struct scsi_lun *lun);

/*
 * APTPL: bind a LUN to its state file "<dir>/pr-<target>-lun<N>.state" and
 * restore what it holds. Returns 0 (also when there is no file), -1 (out
 * of memory; err says so), or PR_LOAD_BAD when the file exists but cannot
 * be read or is not intact: err then says "FILE[:LINE]: what is wrong" and
 * what to do; the LUN is usable, without that file's registrations and
 * without APTPL, and the file is left as it is. Other LUNs are not
 * concerned: the caller logs err and goes on.
 * dir == NULL: no persistence (APTPL requests are then refused).
 */
#define PR_LOAD_BAD 1
int pr_lun_load(struct scsi_lun *lun, const char *dir, char *err, size_t errlen);

/* --- checks called from scsi_cmd_parse() --- */
enum sense_reason pr_check(struct scsi_cmd *cmd);

/* --- events (scsi/lun.c) --- */
/* I_T nexus loss: releases the SPC-2 reservation the nexus holds. */
void pr_nexus_loss(struct scsi_target *t, const struct scsi_nexus *n);
/* LOGICAL UNIT RESET / target reset: releases the SPC-2 reservation
 * (persistent reservations survive resets, SPC-4 5.13.1). */
void pr_lun_reset(struct scsi_lun *lun);
/* TARGET COLD RESET, a power on (RFC 7143 11.5.1): also drops the
 * persistent reservation state unless APTPL keeps it (SPC-4 5.13.4),
 * and PRGENERATION starts again from zero. */
void pr_lun_power_on(struct scsi_lun *lun);

/*
 * PREEMPT AND ABORT: the transport aborts the tasks of other I_T nexuses.
 * The handler gets the preempting command, the preempted nexuses (valid
 * only during the call: it runs under target->lock) and the LUN. It returns
 * true when it will finish the command later with scsi_cmd_done() on the
 * command's own thread, after every preempted nexus's tasks on the LUN were
 * aborted; false when it aborted nothing (the command then completes now).
 * Without a handler (unit tests) no task is aborted.
 */
typedef bool (*pr_abort_fn)(struct scsi_cmd *by, struct scsi_nexus *const *victims,
			    unsigned n, uint16_t lun);
void pr_set_abort_handler(pr_abort_fn fn);

/* Introspection for tests and the admin interface. */
struct pr_status {
	uint32_t generation;
	unsigned n_regs;
	bool pr_held;
	uint8_t type;
	bool spc2_held;
	uint64_t spc2_nexus;
	bool aptpl;
};
void pr_get_status(struct scsi_lun *lun, struct pr_status *st);

/* --- parse functions named by scsi/opcodes.c --- */
enum sense_reason pr_parse_reserve(struct scsi_cmd *cmd);   /* RESERVE(6)/(10) */
enum sense_reason pr_parse_release(struct scsi_cmd *cmd);   /* RELEASE(6)/(10) */
enum sense_reason pr_parse_in(struct scsi_cmd *cmd);        /* PERSISTENT RESERVE IN */
enum sense_reason pr_parse_out(struct scsi_cmd *cmd);       /* PERSISTENT RESERVE OUT */

/* ---------------------------------------------------------------------- */
/* ALUA (scsi/alua.c) */

/* Asymmetric access states (SPC-4 6.36.2, table 182). */
enum alua_state {
	ALUA_ACTIVE_OPTIMIZED = 0x0,
	ALUA_ACTIVE_NON_OPTIMIZED = 0x1,
	ALUA_STANDBY = 0x2,
	ALUA_UNAVAILABLE = 0x3,
	ALUA_TRANSITIONING = 0xf,
};

#define ALUA_MAX_GROUPS 32

/* One target port group as configured. In iSCSI a target port is the
 * target name plus a portal group tag, so each group has exactly one target
 * port, whose relative target port identifier is the tag too. */
struct alua_group_conf {
	uint16_t tpgt;
	enum alua_state state;
	bool preferred;
	bool remote;      /* another gateway's port (shared storage): reported by
	                   * RTPG, its state not set by STPG here */
};

/* Give a target its port groups (before sessions start). LUNs of the target
 * report TPGS (implicit and explicit) in INQUIRY. Returns 0 or -1 (too many
 * groups, duplicates). */
int alua_target_init(struct scsi_target *t, const struct alua_group_conf *g, unsigned n);
void alua_target_free(struct scsi_target *t);
/* Change a group's state at runtime (STPG, admin interface, reload):
 * ASYMMETRIC ACCESS STATE CHANGED for every nexus except 'by'. Returns 0,
 * or -1 if the group does not exist. */
int alua_set_state(struct scsi_target *t, uint16_t tpgt, enum alua_state st,
		   const struct scsi_nexus *by);
/* Whether the target has port group tpgt (portal_groups). */
bool alua_group_exists(const struct scsi_target *t, uint16_t tpgt);
/* Current state of a group (ACTIVE_OPTIMIZED for unknown groups, and when
 * the target has no groups configured). */
enum alua_state alua_get_state(const struct scsi_target *t, uint16_t tpgt);
/* Whether a relative target port identifier names a port of the target. */
bool alua_port_exists(const struct scsi_target *t, uint16_t rtpi);
const char *alua_state_name(enum alua_state st);

enum sense_reason alua_check(struct scsi_cmd *cmd);
enum sense_reason alua_parse_rtpg(struct scsi_cmd *cmd);   /* REPORT TARGET PORT GROUPS */
enum sense_reason alua_parse_stpg(struct scsi_cmd *cmd);   /* SET TARGET PORT GROUPS */

#endif
