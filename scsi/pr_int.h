/*
 * Private to scsi/pr.c and scsi/pr_file.c: the per-LUN reservation state.
 */
#ifndef SCSI_PR_INT_H
#define SCSI_PR_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "scsi/pr.h"

/* Longest initiator port name kept: "iqn...,i,0x" + 12 hex digits. */
#define PR_PORT_MAX 300

/*
 * One registration (SPC-4 5.13.5): a reservation key for an I_T nexus,
 * named by its initiator port and its relative target port identifier, so
 * that it outlives the nexus (a reconnecting initiator port finds its
 * registration again, and an APTPL registration survives a restart).
 */
struct pr_reg {
	uint64_t key;
	uint16_t rtpi;          /* relative target port identifier */
	bool all_tg_pt;         /* registered through every target port */
	bool name_only;         /* TransportID format 00b: every port of the initiator */
	char port[PR_PORT_MAX]; /* "iqn,i,0x<ISID>" or, name_only, "iqn" */
};

/* pr_lun.active bits: what the lock-free fast path of pr_check() reads. */
#define PR_ACT_SPC2 0x1u     /* an SPC-2 reservation is held */
#define PR_ACT_PR   0x2u     /* a persistent reservation is held */

struct pr_lun {
	pthread_mutex_t lock;
	_Atomic unsigned active;
	uint32_t generation;    /* PRGENERATION */
	struct pr_reg *regs;
	unsigned n, cap;
	bool resv;              /* a persistent reservation exists */
	uint8_t type;           /* its TYPE (enum pr_type) */
	uint8_t scope;          /* LU_SCOPE (0) */
	int holder;             /* index in regs; -1 for the all-registrants types */
	bool spc2;              /* SPC-2 reservation */
	uint64_t spc2_nexus;    /* its holder (scsi_nexus.id) */
	bool aptpl;             /* activate persist through power loss */
	char *path;             /* APTPL state file; NULL: no state directory */
	struct pr_shared *shared; /* the record shared with other gateways
	                         * (scsi/pr_shared.c); NULL: this process only */
};

static inline bool pr_type_all_reg(uint8_t type)
{
	return type == PR_TYPE_WE_AR || type == PR_TYPE_EA_AR;
}

static inline bool pr_type_valid(uint8_t type)
{
	return type == PR_TYPE_WE || type == PR_TYPE_EA || type == PR_TYPE_WE_RO ||
	       type == PR_TYPE_EA_RO || type == PR_TYPE_WE_AR || type == PR_TYPE_EA_AR;
}

/* pr.c, for pr_shared.c: republish p->active (under p->lock); establish
 * ua for the attached nexuses that regs[0..n) name, except 'except'. */
void pr_publish(struct pr_lun *p);
void pr_ua_regs(struct scsi_lun *lun, const struct pr_reg *regs, unsigned n, enum scsi_ua ua,
		const struct scsi_nexus *except);

/* pr_shared.c: reservations shared by the gateways of one store. */
#define PR_NEXUS_REMOTE UINT64_MAX  /* spc2_nexus of an SPC-2 holder on another gateway */
#define PR_SHARED_TRIES 16          /* decisions before a command gives up on a race */
struct pr_note {                    /* a committed change, to announce */
	char *buf;
	size_t len;
};
/* Bind the LUN to its backstore's shared record when it has one (else
 * nothing): the working copy becomes the record's. 0 or -1 (err). */
int pr_shared_attach(struct scsi_lun *lun, char *err, size_t errlen);
void pr_shared_detach(struct pr_lun *p);
/* Under p->lock: notes may have been missed; then pr_shared_sync reads
 * the record (0 or -errno). */
bool pr_shared_stale(const struct pr_lun *p);
int pr_shared_sync(struct pr_lun *p);
/* Under p->lock, after the working copy changed: write it. 0 (note set);
 * -ECANCELED: another gateway changed the record first, the working copy
 * now holds its state and the caller decides again; other -errno: the
 * caller rolls the change back. removed/ua/released: the unit attentions
 * the change establishes on the other gateways. */
int pr_shared_commit(struct pr_lun *p, const struct pr_reg *removed, unsigned n_removed,
		     enum scsi_ua ua, bool released, struct pr_note *note);
/* A note that only establishes ua for every nexus of the LUN on the
 * other gateways (no note without a shared record). 0 or -ENOMEM. */
int pr_shared_ua_note(struct pr_lun *p, enum scsi_ua ua, struct pr_note *note);
/* Without p->lock: send the note to the other gateways (and free it). */
void pr_shared_announce(struct scsi_lun *lun, struct pr_note *note);

/* pr_file.c: the APTPL state file. Loading returns 0 (restored, or no
 * file), PR_LOAD_BAD (scsi/pr.h: the file cannot be read or parsed; err
 * says "FILE[:LINE]: what is wrong"; p is unchanged) or -1 (out of
 * memory). */
int pr_file_save(const struct pr_lun *p, char *err, size_t errlen);
int pr_file_remove(const struct pr_lun *p, char *err, size_t errlen);
int pr_file_load(struct pr_lun *p, char *err, size_t errlen);
/* What pr_file_save writes (malloc'd, *len bytes and a NUL), and the parser itself
 * on a file's bytes (the fuzzer checks that one undoes the other): buf holds len bytes and room for
 * one more (a NUL is written there); path names the file in messages. */
char *pr_file_format(const struct pr_lun *p, size_t *len);
int pr_file_parse(struct pr_lun *p, char *buf, size_t len, const char *path, char *err,
		  size_t errlen);

#endif
