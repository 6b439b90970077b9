/*
 * Fault injection in the daemon (targetd-faults(7)): the control commands
 * and the configuration's rules (fault_ctl.c), and the rules of
 * connections, logins and portals with the transport's seams
 * (fault_conn.c). The SCSI-level rules live in scsi/fault.h.
 *
 * The transport's seams cost one predictable branch while nothing is
 * armed: each tests fault_conn_armed (a process-wide counter of the rules
 * that need the transport), or the command's xfault byte.
 */
#ifndef TARGETD_FAULT_H
#define TARGETD_FAULT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "common/fault_spec.h"
#include "scsi/scsi.h"   /* SCSI_MAX_LUNS */

struct conf_fault;
struct conf_lun;
struct conf_target;
struct iscsi_conn;
struct iscsi_portal;
struct iscsi_target;
struct iscsi_task;
struct json_object;
struct scsi_lun;
struct tx_slot;

/* Rules that need the transport's seams, armed now (atomic, relaxed). */
extern unsigned fault_conn_armed;

static inline bool fault_conn_on(void)
{
	return __builtin_expect(__atomic_load_n(&fault_conn_armed, __ATOMIC_RELAXED) != 0, 0);
}

/* --- fault_ctl.c --- */
/* The control methods fault.add, fault.list, fault.stats and fault.clear
 * are declared in control_int.h (entries of control.c's method table). */
/* Arm a LUN's configured rules (before the LUN is published) and the
 * target's own (after its LUNs). 0, or -1 with FILE:LINE: errors logged. */
int fault_config_lun(struct iscsi_target *t, struct scsi_lun *lun, const struct conf_lun *cl);
int fault_config_target(struct iscsi_target *t, const struct conf_target *ct);
/* Whether two faults lists of the file hold the same rules (reload). */
bool fault_config_equal(const struct conf_fault *a, unsigned na, const struct conf_fault *b, unsigned nb);

/* A reload (reload.c) of target t, which stays: the rules its old file
 * armed are swapped for the new file's where a list changed (the
 * target's own, or a LUN's that otherwise stays as it is); rules armed at
 * runtime stay. */
struct fault_reload {
	struct iscsi_target *t;
	const struct conf_target *ct;            /* the new file's */
	unsigned ct_index;                       /* its place in the file (keys) */
	bool target;                             /* ct->faults changed */
	bool luns[SCSI_MAX_LUNS];                /* that LUN's faults changed */
	struct scsi_lun *after[SCSI_MAX_LUNS];   /* the target's LUNs once applied */
};
struct fault_reload_result {
	unsigned disarmed, armed, failed;
};
/* Before anything changes: could the new rules be armed? 0, or -1 with
 * err = "FILE:LINE: KEY: message". */
int fault_reload_check(const struct fault_reload *fr, const char *file, char *err, size_t errlen);
/* Apply (with the reload's write lock): disarm the rules of the old file
 * (of the target's own list, or of LUN cl->lun's), arm the new ones. */
void fault_reload_target(struct iscsi_target *t, const struct conf_target *ct,
			 struct fault_reload_result *res);
void fault_reload_lun(struct iscsi_target *t, struct scsi_lun *lun, const struct conf_lun *cl,
		      struct fault_reload_result *res);
/* targetd_faults_injected_total and targetd_fault_commands_held (metrics.c). */
void fault_metrics(FILE *f);

/* --- fault_conn.c --- */
struct fault_conn_rule;
/* Arm a connection rule of target t (already validated). Returns the
 * rule's id, or 0 with err. */
unsigned fault_conn_add(struct iscsi_target *t, const struct fault_spec *s, unsigned id,
			const char *text, const char *action, char *err, size_t errlen);
/* Which connection rules (of target t, NULL: of every target). */
typedef bool fault_conn_match_fn(unsigned id, const char *label, const struct iscsi_target *t,
				 const struct fault_spec *s, void *arg);
/* Disarm the connection rules for which match(...) is true (NULL: all);
 * returns how many. */
unsigned fault_conn_remove(fault_conn_match_fn *match, void *arg);
/* How many connection rules match (NULL: all). */
unsigned fault_conn_count(fault_conn_match_fn *match, void *arg);
/* fn for each connection rule, under the rules' lock. */
void fault_conn_for_each(void (*fn)(unsigned id, const char *label, const char *text,
				    const struct iscsi_target *t, uint64_t matched, uint64_t injected,
				    void *arg),
			 void *arg);
/* SCSI rules that need the transport (drop, withhold-r2t, corrupt-digest):
 * counted into fault_conn_armed by fault_ctl.c. */
void fault_conn_scsi_rules(unsigned n);
/* A portal as rules name it: "host:port" or "[v6]:port". */
void fault_portal_name(const struct iscsi_portal *p, char *buf, size_t len);

/* The seams (conn.c, login.c, net.c), behind fault_conn_on() or xfault: */
/* A whole PDU arrived on a full-feature connection; true if the rules
 * closed the connection (the PDU is then dropped). */
bool fault_conn_rx(struct iscsi_conn *c);
/* Once a second per connection: NOP-In storms, portals going down. */
void fault_conn_timer(struct iscsi_conn *c, uint64_t now_ms);
/* The acceptor: refuse a new connection on this portal? (acceptor thread) */
bool fault_conn_refuse_accept(const struct iscsi_portal *p);
/* The first login request named target t: refuse it with *status? */
bool fault_conn_refuse_login(struct iscsi_conn *c, const struct iscsi_target *t,
			     const char *initiator, uint16_t *status);
/* A task's data PDU was laid out in sl: spoil its data digest. */
void fault_conn_digest(struct iscsi_conn *c, struct iscsi_task *t, struct tx_slot *sl);

#endif
