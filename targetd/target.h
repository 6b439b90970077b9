/*
 * Runtime objects built from a validated configuration: targets (with their
 * SCSI target device and LUNs), portals, and the global settings the
 * network threads read.
 *
 * DESIGN: the runtime is built before any network thread starts. While
 * they run only a reload changes it (targetd/reload.c): it appends targets,
 * and publishes or unpublishes LUN pointers with scsi_target_set_lun()
 * (a release store that network threads read with scsi_target_lun(), and
 * REPORTED LUNS DATA HAS CHANGED for every nexus). Sessions hold pointers
 * into it; nothing on the data path locks it.
 */
#ifndef TARGETD_TARGET_H
#define TARGETD_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include "conf/config.h"
#include "scsi/scsi.h"
#include "targetd/params.h"

struct iscsi_portal {
	char host[64];
	char port[8];
	uint16_t tpgt;
	int fd;
	bool closing;            /* removed at runtime (atomic): skip it; the slot stays */
};

struct iscsi_target {
	char iqn[224];
	char alias[256];
	char **initiators;       /* allow-list */
	unsigned n_initiators;
	bool has_acl;
	bool chap;
	char *chap_user, *chap_secret;
	char *chap_mutual_user, *chap_mutual_secret;
	struct scsi_target st;
	struct backstore *bs[SCSI_MAX_LUNS];
	bool removed;            /* by a reload (atomic): the slot stays, never found */
	uint64_t n_logins, n_auth_failures, n_acl_refusals;   /* atomics (/metrics) */
};

struct targetd_runtime {
	struct conf *conf;
	struct iscsi_target *targets;
	unsigned n_targets;      /* published with a release store (reload appends) */
	unsigned cap_targets;    /* slots allocated: targets never move */
	struct iscsi_portal *portals;
	unsigned n_portals;      /* published with a release store (portal add appends) */
	unsigned cap_portals;    /* slots allocated: portals never move */
	struct iscsi_limits limits;
	/* discovery_chap: the credentials of discovery sessions (only the
	 * chap fields are used; reload swaps them like a target's) */
	struct iscsi_target discovery_auth;
	unsigned queue_depth;
	unsigned nop_interval, nop_timeout, login_timeout;
	struct conf_limits res;  /* resource limits (targetd/limits.h) */
	unsigned n_threads;
};

extern struct targetd_runtime *target_runtime;

/* Build targets and LUNs (opens backstores). Returns 0 or -1 (logged). */
int target_runtime_build(struct targetd_runtime *r, struct conf *c);
void target_runtime_flush(struct targetd_runtime *r);
void target_runtime_free(struct targetd_runtime *r);
struct iscsi_target *target_find(const char *iqn);
/* Set up the next target slot from its configuration (LUNs included) and
 * publish it; for the build and for reload. Returns 0 or -1 (logged). */
int target_add(struct targetd_runtime *r, const struct conf_target *ct);
/* Open the backstore of one LUN and publish the LUN (build and reload). */
int target_lun_build(struct iscsi_target *t, const struct conf_lun *cl);
/* The same without publishing: the LUN (lun->bs open) for the caller. */
/* A LUN's space, the NetApp "df -s" view (targetctl luns, stats, /metrics):
 * provisioned (its size), allocated (what its backstore holds), shared
 * (of allocated, by reflink with other files), saved (provisioned bytes
 * that take no space of their own: never written, deallocated by UNMAP or
 * zero detection, or shared), the pool under it. Walks the file's extents
 * (FIEMAP): for the control and metrics threads, never the data path.
 * false where the backstore cannot tell. */
struct target_space {
	uint64_t provisioned, allocated, shared, saved, pool_size, pool_free;
	bool shared_partial;
};
bool target_lun_space(struct scsi_lun *lun, struct target_space *out);

int target_lun_open(struct iscsi_target *t, const struct conf_lun *cl, struct scsi_lun **out);
/* ACL and CHAP settings are read under this lock (logins) and changed
 * under it by reload. */
/* Reload: apply nc's portal_groups states (ALUA) to every target; returns
 * how many group states changed. */
unsigned target_alua_reload(struct targetd_runtime *r, const struct conf *nc);
void target_acl_wrlock(void);
void target_acl_unlock(void);
bool target_initiator_allowed(const struct iscsi_target *t, const char *initiator);

#endif
