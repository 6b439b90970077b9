/*
 * Mode parameters (SPC-4 7.5, SBC-4 6.5): MODE SENSE(6/10), MODE
 * SELECT(6/10) with the Caching, Control and Informational Exceptions
 * Control pages. No parameters are saved (saved values = defaults, PC=3 and
 * SP=1 are refused), every changeable field is honoured:
 *   Caching: WCE (writes become FUA when clear).
 *   Control: D_SENSE (sense format), SWP (software write protect).
 *   Informational Exceptions: PERF, DEXCPT, MRIE, INTERVAL TIMER, REPORT
 *   COUNT (no exception is ever predicted, so any setting is honoured).
 *
 * DESIGN (locks): lun->mode changes under lun->lock only; the bits the data
 * path reads are published to atomics (scsi_mode_publish) before the lock is
 * dropped.
 */
#include "config.h"
#include "scsi/scsi_int.h"

#define PAGE_CACHING  0x08
#define PAGE_CONTROL  0x0a
#define PAGE_IEC      0x1c
#define PAGE_ALL      0x3f

enum mode_pc { PC_CURRENT = 0, PC_CHANGEABLE = 1, PC_DEFAULT = 2, PC_SAVED = 3 };

static const uint8_t mode_pages[] = { PAGE_CACHING, PAGE_CONTROL, PAGE_IEC };

static uint8_t mode_page_len(uint8_t page)
{
	switch (page) {
	case PAGE_CACHING: return 20;
	case PAGE_CONTROL: return 12;
	case PAGE_IEC: return 12;
	default: return 0;
	}
}

/* SBC-4 6.5.5 Caching mode page */
static void mode_caching(const struct scsi_mode_state *m, uint8_t *p)
{
	memset(p, 0, 20);
	p[0] = PAGE_CACHING;
	p[1] = 0x12;
	p[2] = (uint8_t)((m->wce ? 0x04 : 0) | (m->rcd ? 0x01 : 0));
}

/* SPC-4 7.5.8 Control mode page */
static void mode_control(const struct scsi_mode_state *m, uint8_t *p)
{
	memset(p, 0, 12);
	p[0] = PAGE_CONTROL;
	p[1] = 0x0a;
	/* TST 001b: a task set per I_T nexus; QAM 1: SIMPLE commands may be
	 * reordered (scsi/taskset.c) */
	p[2] = (uint8_t)(0x20 | (m->d_sense ? 0x04 : 0));
	p[3] = (uint8_t)(0x10 | (m->qerr & 3) << 1);
	p[4] = m->swp ? 0x08 : 0;
	p[5] = m->tas ? 0x40 : 0;
	put_be16(p + 8, 0xffff);      /* BUSY TIMEOUT PERIOD: unlimited */
}

/* SPC-4 7.5.11 Informational Exceptions Control mode page */
static void mode_iec(const struct scsi_mode_state *m, uint8_t *p)
{
	memset(p, 0, 12);
	p[0] = PAGE_IEC;
	p[1] = 0x0a;
	p[2] = (uint8_t)((m->perf ? 0x80 : 0) | (m->dexcpt ? 0x08 : 0));
	p[3] = m->mrie & 0x0f;
	put_be32(p + 4, m->ie_interval);
	put_be32(p + 8, m->ie_report_count);
}

static void mode_changeable(uint8_t page, uint8_t *p)
{
	memset(p, 0, mode_page_len(page));
	p[0] = page;
	p[1] = (uint8_t)(mode_page_len(page) - 2);
	switch (page) {
	case PAGE_CACHING:
		p[2] = 0x04;                  /* WCE */
		break;
	case PAGE_CONTROL:
		p[2] = 0x04;                  /* D_SENSE */
		p[4] = 0x08;                  /* SWP */
		break;
	case PAGE_IEC:
		p[2] = 0x80 | 0x08;           /* PERF, DEXCPT */
		p[3] = 0x0f;                  /* MRIE */
		memset(p + 4, 0xff, 8);       /* INTERVAL TIMER, REPORT COUNT */
		break;
	}
}

static uint32_t mode_build_page(uint8_t page, enum mode_pc pc,
				const struct scsi_mode_state *cur, uint8_t *p)
{
	struct scsi_mode_state def;
	const struct scsi_mode_state *m = cur;

	if (pc == PC_CHANGEABLE) {
		mode_changeable(page, p);
		return mode_page_len(page);
	}
	if (pc == PC_DEFAULT) {
		scsi_mode_defaults(&def);
		m = &def;
	}
	switch (page) {
	case PAGE_CACHING: mode_caching(m, p); break;
	case PAGE_CONTROL: mode_control(m, p); break;
	case PAGE_IEC: mode_iec(m, p); break;
	default: return 0;
	}
	return mode_page_len(page);
}

static bool mode_is_10(const struct scsi_cmd *cmd)
{
	return cmd->cdb[0] == 0x5a || cmd->cdb[0] == 0x55;
}

/* SPC-4 6.11 MODE SENSE(6), 6.12 MODE SENSE(10) */
static enum sense_reason mode_exec_sense(struct scsi_cmd *cmd)
{
	struct scsi_lun *lun = cmd->lun;
	bool ten = mode_is_10(cmd);
	bool dbd = cmd->cdb[1] & 0x08;
	bool llbaa = ten && (cmd->cdb[1] & 0x10);
	enum mode_pc pc = (enum mode_pc)(cmd->cdb[2] >> 6);
	uint8_t page = cmd->cdb[2] & 0x3f;
	uint8_t d[512];
	struct scsi_mode_state cur;
	uint32_t hdr = ten ? 8 : 4, off, bdl = 0;
	uint64_t nb = scsi_lun_nblocks(lun);
	unsigned i;

	memset(d, 0, sizeof(d));
	pthread_mutex_lock(&lun->lock);
	cur = lun->mode;
	pthread_mutex_unlock(&lun->lock);

	off = hdr;
	if (!dbd) {
		/* SBC-4 6.5.2 block descriptors (not changeable) */
		if (llbaa) {
			bdl = 16;
			if (pc != PC_CHANGEABLE) {
				put_be64(d + off, nb);
				put_be32(d + off + 12, lun->block_size);
			}
		} else {
			bdl = 8;
			if (pc != PC_CHANGEABLE) {
				put_be32(d + off, nb > 0xffffffffull ? 0xffffffffu : (uint32_t)nb);
				put_be24(d + off + 5, lun->block_size);
			}
		}
		off += bdl;
	}
	if (page == PAGE_ALL) {
		for (i = 0; i < sizeof(mode_pages); i++)
			off += mode_build_page(mode_pages[i], pc, &cur, d + off);
	} else {
		off += mode_build_page(page, pc, &cur, d + off);
	}

	/* header: device-specific parameter WP and DPOFUA (SBC-4 6.5.1) */
	if (ten) {
		put_be16(d, (uint16_t)(off - 2));
		d[3] = (uint8_t)((lun->read_only || cur.swp ? 0x80 : 0) | 0x10);
		d[4] = llbaa && bdl ? 0x01 : 0;
		put_be16(d + 6, (uint16_t)bdl);
	} else {
		d[0] = (uint8_t)(off - 1);
		d[2] = (uint8_t)((lun->read_only || cur.swp ? 0x80 : 0) | 0x10);
		d[3] = (uint8_t)bdl;
	}
	scsi_datain(cmd, d, off);
	return SR_OK;
}

enum sense_reason mode_parse_sense(struct scsi_cmd *cmd)
{
	bool ten = mode_is_10(cmd);
	uint8_t pc = cmd->cdb[2] >> 6;
	uint8_t page = cmd->cdb[2] & 0x3f;
	uint8_t subpage = cmd->cdb[3];

	if (pc == PC_SAVED)
		return SR_SAVING_PARAMS_UNSUPPORTED;
	if (page != PAGE_ALL && !mode_page_len(page))
		return scsi_invalid_cdb(cmd, 2, 5);
	if (subpage != 0x00 && subpage != 0xff)
		return scsi_invalid_cdb(cmd, 3, 7);
	if (ten)
		scsi_set_alloc(cmd, get_be16(cmd->cdb + 7), 512);
	else
		scsi_set_alloc(cmd, cmd->cdb[4], 255);
	cmd->execute = mode_exec_sense;
	return SR_OK;
}

/* Apply one page's bytes to a mode state (after validation). */
static void mode_apply_page(struct scsi_mode_state *m, const uint8_t *p)
{
	switch (p[0] & 0x3f) {
	case PAGE_CACHING:
		m->wce = p[2] & 0x04;
		break;
	case PAGE_CONTROL:
		m->d_sense = p[2] & 0x04;
		m->swp = p[4] & 0x08;
		break;
	case PAGE_IEC:
		m->perf = p[2] & 0x80;
		m->dexcpt = p[2] & 0x08;
		m->mrie = p[3] & 0x0f;
		m->ie_interval = get_be32(p + 4);
		m->ie_report_count = (uint16_t)MIN(get_be32(p + 8), 0xffffu);
		break;
	}
}

static bool mode_equal(const struct scsi_mode_state *a, const struct scsi_mode_state *b)
{
	return a->wce == b->wce && a->rcd == b->rcd && a->d_sense == b->d_sense &&
	       a->swp == b->swp && a->qerr == b->qerr && a->tas == b->tas &&
	       a->mrie == b->mrie && a->dexcpt == b->dexcpt && a->perf == b->perf &&
	       a->ie_interval == b->ie_interval && a->ie_report_count == b->ie_report_count;
}

/* SPC-4 6.9 MODE SELECT(6), 6.10 MODE SELECT(10) */
static enum sense_reason mode_exec_select(struct scsi_cmd *cmd)
{
	struct scsi_lun *lun = cmd->lun;
	bool ten = mode_is_10(cmd);
	const uint8_t *d = cmd->buf;
	uint32_t len = cmd->xfer_len, hdr = ten ? 8 : 4, bdl, off;
	struct scsi_mode_state next;
	enum sense_reason r = SR_OK;
	bool changed;

	if (len == 0)
		return SR_OK;
	if (len < hdr)
		return SR_PARAM_LIST_LENGTH_ERROR;
	bdl = ten ? get_be16(d + 6) : d[3];
	if (hdr + bdl > len)
		return SR_PARAM_LIST_LENGTH_ERROR;
	if (bdl) {
		/* one block descriptor that restates the current format */
		bool longlba = ten && (d[4] & 0x01);
		uint32_t want = longlba ? 16 : 8;
		uint64_t nb;
		uint32_t bl;

		if (bdl != want)
			return scsi_invalid_param(cmd, ten ? 6 : 3, -1);
		if (longlba) {
			nb = get_be64(d + hdr);
			bl = get_be32(d + hdr + 12);
		} else {
			nb = get_be32(d + hdr);
			bl = get_be24(d + hdr + 5);
		}
		if (bl != lun->block_size)
			return scsi_invalid_param(cmd, (uint16_t)(hdr + (longlba ? 12 : 5)), -1);
		if (nb != 0 && nb != scsi_lun_nblocks(lun) &&
		    !(!longlba && nb == 0xffffffffu))
			return scsi_invalid_param(cmd, (uint16_t)hdr, -1);
	}

	pthread_mutex_lock(&lun->lock);
	next = lun->mode;
	off = hdr + bdl;
	while (off < len) {
		uint8_t page, plen, cur[32], mask[32], want;
		const uint8_t *p = d + off;
		unsigned i;

		if (len - off < 2) {
			r = SR_PARAM_LIST_LENGTH_ERROR;
			break;
		}
		page = p[0] & 0x3f;
		if (p[0] & 0x80) {            /* PS is reserved in MODE SELECT */
			r = scsi_invalid_param(cmd, (uint16_t)off, 7);
			break;
		}
		if (p[0] & 0x40) {            /* no subpages here */
			r = scsi_invalid_param(cmd, (uint16_t)off, 6);
			break;
		}
		want = mode_page_len(page);
		if (!want) {
			r = scsi_invalid_param(cmd, (uint16_t)off, 5);
			break;
		}
		plen = p[1];
		if (plen != want - 2) {
			r = scsi_invalid_param(cmd, (uint16_t)(off + 1), -1);
			break;
		}
		if (len - off < want) {
			r = SR_PARAM_LIST_LENGTH_ERROR;
			break;
		}
		mode_build_page(page, PC_CURRENT, &next, cur);
		mode_changeable(page, mask);
		for (i = 2; i < want; i++) {
			uint8_t bad = (uint8_t)((p[i] ^ cur[i]) & ~mask[i]);

			if (bad) {
				r = scsi_invalid_param(cmd, (uint16_t)(off + i),
						       31 - __builtin_clz(bad));
				break;
			}
		}
		if (r)
			break;
		if (page == PAGE_IEC && (p[3] & 0x0f) > 6) {
			r = scsi_invalid_param(cmd, (uint16_t)(off + 3), 3);
			break;
		}
		mode_apply_page(&next, p);
		off += want;
	}
	changed = r == SR_OK && !mode_equal(&next, &lun->mode);
	if (changed) {
		lun->mode = next;
		scsi_mode_publish(lun);
	}
	pthread_mutex_unlock(&lun->lock);
	/* SPC-4 6.9: MODE PARAMETERS CHANGED for every other I_T nexus */
	if (changed)
		scsi_ua_establish(lun->target, lun->id, UA_MODE_CHANGED, cmd->nexus);
	return r;
}

enum sense_reason mode_parse_select(struct scsi_cmd *cmd)
{
	bool ten = mode_is_10(cmd);

	if (!(cmd->cdb[1] & 0x10))
		return scsi_invalid_cdb(cmd, 1, 4);   /* PF must be one */
	if (cmd->cdb[1] & 0x01)
		return scsi_invalid_cdb(cmd, 1, 0);   /* no saved pages */
	scsi_set_dataout(cmd, ten ? get_be16(cmd->cdb + 7) : cmd->cdb[4]);
	if (cmd->xfer_len > 512)
		return scsi_invalid_cdb(cmd, ten ? 7 : 4, -1);
	cmd->execute = mode_exec_select;
	return SR_OK;
}
