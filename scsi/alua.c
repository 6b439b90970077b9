/*
 * Asymmetric logical unit access (SPC-4 5.15): target port groups, REPORT
 * TARGET PORT GROUPS, SET TARGET PORT GROUPS and the per-state command
 * filter.
 *
 * In iSCSI a SCSI target port is the target name plus a target portal
 * group tag (RFC 7143 4.4.1), so every portal group of the configuration is
 * one target port and one target port group: its TPGT is both the target
 * port group identifier and the relative target port identifier. The
 * access state belongs to the group and applies to every LUN of the target
 * (all LUNs share the groups).
 *
 * DESIGN (threads): struct alua_target (scsi_target.priv_alua) is built
 * before sessions start and its shape never changes; only each group's
 * state and status change, as atomics, so alua_check() on the data path is
 * one atomic load. A change (STPG on any thread, or the admin interface)
 * stores the new state and establishes ASYMMETRIC ACCESS STATE CHANGED
 * through the target's nexus list (target->lock), which is how it reaches
 * every session on every thread.
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "scsi/scsi_int.h"
#include "scsi/pr.h"

struct alua_group {
	uint16_t id;
	bool preferred;
	bool remote;               /* another gateway's: STPG cannot change it */
	_Atomic uint8_t state;
	_Atomic uint8_t status;    /* RTPG STATUS CODE: 0 none, 1 set by STPG, 2 implicit */
};

struct alua_target {
	unsigned n;
	struct alua_group g[ALUA_MAX_GROUPS];
};

static const struct {
	const char *name;
	enum alua_state st;
} alua_names[] = {
	{ "active/optimized", ALUA_ACTIVE_OPTIMIZED },
	{ "active/non-optimized", ALUA_ACTIVE_NON_OPTIMIZED },
	{ "standby", ALUA_STANDBY },
	{ "unavailable", ALUA_UNAVAILABLE },
};

const char *alua_state_name(enum alua_state st)
{
	for (unsigned i = 0; i < ARRAY_SIZE(alua_names); i++)
		if (alua_names[i].st == st)
			return alua_names[i].name;
	return st == ALUA_TRANSITIONING ? "transitioning" : "unknown";
}

int alua_target_init(struct scsi_target *t, const struct alua_group_conf *g, unsigned n)
{
	struct alua_target *a;

	if (n == 0 || n > ALUA_MAX_GROUPS)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		for (unsigned k = 0; k < i; k++) {
			if (g[k].tpgt == g[i].tpgt) {
				free(a);
				return -EEXIST;
			}
		}
		a->g[i].id = g[i].tpgt;
		a->g[i].preferred = g[i].preferred;
		a->g[i].remote = g[i].remote;
		atomic_init(&a->g[i].state, (uint8_t)g[i].state);
		atomic_init(&a->g[i].status, 0);
	}
	a->n = n;
	free(t->priv_alua);
	t->priv_alua = a;
	for (unsigned i = 0; i < SCSI_MAX_LUNS; i++) {
		struct scsi_lun *lun = scsi_target_lun(t, i);

		if (lun)
			lun->tpgs = 0x3;   /* implicit and explicit ALUA */
	}
	return 0;
}

void alua_target_free(struct scsi_target *t)
{
	free(t->priv_alua);
	t->priv_alua = NULL;
}

static struct alua_group *alua_find(const struct scsi_target *t, uint16_t id)
{
	struct alua_target *a = t->priv_alua;

	if (!a)
		return NULL;
	for (unsigned i = 0; i < a->n; i++)
		if (a->g[i].id == id)
			return &a->g[i];
	return NULL;
}

bool alua_group_exists(const struct scsi_target *t, uint16_t tpgt)
{
	return alua_find(t, tpgt) != NULL;
}

enum alua_state alua_get_state(const struct scsi_target *t, uint16_t tpgt)
{
	struct alua_group *g = alua_find(t, tpgt);

	if (!g)
		return ALUA_ACTIVE_OPTIMIZED;
	return (enum alua_state)atomic_load_explicit(&g->state, memory_order_acquire);
}

bool alua_port_exists(const struct scsi_target *t, uint16_t rtpi)
{
	struct list_head *pos;
	bool found = false;

	if (t->priv_alua)
		return alua_find(t, rtpi) != NULL;
	/* no groups configured: the ports are those sessions came through */
	pthread_mutex_lock((pthread_mutex_t *)&t->lock);
	list_for_each(pos, &t->nexus_list) {
		const struct scsi_nexus *n = list_entry(pos, struct scsi_nexus, target_link);

		if (n->rel_tport_id == rtpi)
			found = true;
	}
	pthread_mutex_unlock((pthread_mutex_t *)&t->lock);
	return found;
}

int alua_set_state(struct scsi_target *t, uint16_t tpgt, enum alua_state st,
		   const struct scsi_nexus *by)
{
	struct alua_group *g = alua_find(t, tpgt);
	uint8_t old;

	if (!g)
		return -1;
	old = atomic_exchange(&g->state, (uint8_t)st);
	atomic_store(&g->status, by ? 1 : 2);
	/* SPC-4 5.15.2.5 / 6.45: every other I_T nexus hears of the change */
	if (old != (uint8_t)st)
		scsi_ua_establish_all_luns(t, UA_ALUA_CHANGED, by);
	return 0;
}

/*
 * SPC-4 5.15.2.4.3 - 5.15.2.4.5: the commands each state still accepts.
 * Everything else ends with NOT READY, LOGICAL UNIT NOT ACCESSIBLE and the
 * state in the ASCQ (04/0B standby, 04/0C unavailable, 04/0A transitioning).
 */
static bool alua_allowed(enum alua_state st, const uint8_t *cdb)
{
	uint8_t sa = cdb[1] & 0x1f;

	/* every state: INQUIRY, REPORT LUNS, REQUEST SENSE, REPORT TARGET
	 * PORT GROUPS, and the REPORT SUPPORTED ... commands */
	switch (cdb[0]) {
	case 0x12: case 0xa0: case 0x03:
		return true;
	case 0xa3:
		if (sa == 0x0a || sa == 0x0c || sa == 0x0d)
			return true;
		break;
	}
	if (st == ALUA_TRANSITIONING)
		return false;
	/* standby and unavailable: SET TARGET PORT GROUPS, READ/WRITE BUFFER */
	switch (cdb[0]) {
	case 0xa4:
		if (sa == 0x0a)
			return true;
		break;
	case 0x3b: case 0x3c:
		return true;
	}
	if (st == ALUA_UNAVAILABLE)
		return false;
	/* standby: also LOG SELECT/SENSE, MODE SELECT/SENSE, RECEIVE and SEND
	 * DIAGNOSTIC, PERSISTENT RESERVE IN/OUT */
	switch (cdb[0]) {
	case 0x4c: case 0x4d:
	case 0x15: case 0x1a: case 0x55: case 0x5a:
	case 0x1c: case 0x1d:
	case 0x5e: case 0x5f:
		return true;
	}
	return false;
}

enum sense_reason alua_check(struct scsi_cmd *cmd)
{
	struct scsi_target *t = cmd->lun->target;
	enum alua_state st;

	if (likely(!t->priv_alua))
		return SR_OK;
	st = alua_get_state(t, cmd->nexus->tpgt);
	if (likely(st == ALUA_ACTIVE_OPTIMIZED || st == ALUA_ACTIVE_NON_OPTIMIZED))
		return SR_OK;
	if (alua_allowed(st, cmd->cdb))
		return SR_OK;
	switch (st) {
	case ALUA_STANDBY:
		return SR_LUN_NOT_ACCESSIBLE_STANDBY;
	case ALUA_UNAVAILABLE:
		return SR_LUN_NOT_ACCESSIBLE_UNAVAIL;
	default:
		return SR_LUN_NOT_ACCESSIBLE_TRANSITION;
	}
}

/* --- REPORT TARGET PORT GROUPS (SPC-4 6.36) ----------------------------- */

/* One target port group descriptor (6.36.2, table 181); returns its length. */
static uint32_t alua_desc(uint8_t *d, uint16_t id, bool pref, uint8_t state, uint8_t status)
{
	memset(d, 0, 12);
	d[0] = (uint8_t)((pref ? 0x80 : 0) | (state & 0x0f));
	/* supported states: U_SUP, S_SUP, AN_SUP, AO_SUP (T_SUP: transitions
	 * are instantaneous, never reported) */
	d[1] = 0x08 | 0x04 | 0x02 | 0x01;
	put_be16(d + 2, id);
	d[5] = status;
	d[7] = 1;                 /* TARGET PORT COUNT */
	put_be16(d + 10, id);     /* RELATIVE TARGET PORT IDENTIFIER */
	return 12;
}

static enum sense_reason alua_exec_rtpg(struct scsi_cmd *cmd)
{
	struct scsi_target *t = cmd->lun->target;
	struct alua_target *a = t->priv_alua;
	bool ext = (cmd->cdb[1] >> 5) == 0x1;
	uint8_t d[8 + ALUA_MAX_GROUPS * 12];
	uint32_t off = ext ? 8 : 4;

	memset(d, 0, sizeof(d));
	if (a) {
		for (unsigned i = 0; i < a->n; i++)
			off += alua_desc(d + off, a->g[i].id, a->g[i].preferred,
					 atomic_load(&a->g[i].state), atomic_load(&a->g[i].status));
	} else {
		/* no groups configured: the port of this nexus, active/optimized */
		off += alua_desc(d + off, cmd->nexus->tpgt, false, ALUA_ACTIVE_OPTIMIZED, 0);
	}
	put_be32(d, off - 4);
	if (ext) {
		d[4] = 0x10;          /* FORMAT TYPE 001b: extended header */
		d[5] = 0;             /* IMPLICIT TRANSITION TIME */
	}
	scsi_datain(cmd, d, off);
	return SR_OK;
}

enum sense_reason alua_parse_rtpg(struct scsi_cmd *cmd)
{
	uint8_t fmt = cmd->cdb[1] >> 5;

	if (fmt > 1)
		return scsi_invalid_cdb(cmd, 1, 7);
	scsi_set_alloc(cmd, get_be32(cmd->cdb + 6), 8 + ALUA_MAX_GROUPS * 12);
	cmd->execute = alua_exec_rtpg;
	return SR_OK;
}

/* --- SET TARGET PORT GROUPS (SPC-4 6.45) -------------------------------- */

static enum sense_reason alua_exec_stpg(struct scsi_cmd *cmd)
{
	struct scsi_target *t = cmd->lun->target;
	const uint8_t *d = cmd->buf;
	uint32_t len = cmd->xfer_len, off;
	struct alua_group *g;

	if (!t->priv_alua)
		return SR_INVALID_OPCODE;
	if (len < 4 || (len - 4) % 4)
		return SR_PARAM_LIST_LENGTH_ERROR;
	/* all descriptors are checked before any takes effect */
	for (off = 4; off < len; off += 4) {
		uint8_t st = d[off] & 0x0f;

		if (st != ALUA_ACTIVE_OPTIMIZED && st != ALUA_ACTIVE_NON_OPTIMIZED &&
		    st != ALUA_STANDBY && st != ALUA_UNAVAILABLE)
			return scsi_invalid_param(cmd, (uint16_t)off, 3);
		g = alua_find(t, get_be16(d + off + 2));
		/* a remote group's state is its own gateway's to set */
		if (!g || g->remote)
			return scsi_invalid_param(cmd, (uint16_t)(off + 2), -1);
	}
	for (off = 4; off < len; off += 4)
		alua_set_state(t, get_be16(d + off + 2), (enum alua_state)(d[off] & 0x0f),
			       cmd->nexus);
	return SR_OK;
}

enum sense_reason alua_parse_stpg(struct scsi_cmd *cmd)
{
	uint32_t len = get_be32(cmd->cdb + 6);

	if (!cmd->lun->target->priv_alua)
		return SR_INVALID_OPCODE;
	if (len > 4 + ALUA_MAX_GROUPS * 4 * 4)
		return SR_PARAM_LIST_LENGTH_ERROR;
	scsi_set_dataout(cmd, len);
	cmd->execute = alua_exec_stpg;
	return SR_OK;
}
