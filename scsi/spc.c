/*
 * SPC-4 primary commands: TEST UNIT READY, INQUIRY (standard data and VPD
 * pages), REQUEST SENSE, REPORT LUNS, REPORT SUPPORTED OPERATION CODES and
 * REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS. Control responses are built
 * in a local buffer and truncated to the allocation length.
 */
#include "config.h"
#include <stdio.h>
#include "scsi/scsi_int.h"
#include "scsi/space.h"
#include "scsi/fault.h"
#include "scsi/vaai.h"

/* SPC-4 6.4.2 version descriptors */
#define VD_SAM5   0x00a0
#define VD_ISCSI  0x0960
#define VD_SPC4   0x0460
#define VD_SBC3   0x04c0

/* INQUIRY data length: standard data through the version descriptors. */
#define STD_INQ_LEN 96

static void spc_pad(uint8_t *dst, const char *src, size_t len)
{
	size_t n = strlen(src);

	memset(dst, ' ', len);
	memcpy(dst, src, MIN(n, len));
}

/* SPC-4 6.33 TEST UNIT READY: the medium checks ran at parse time. */
static enum sense_reason spc_exec_tur(struct scsi_cmd *cmd)
{
	return SR_OK;
}

enum sense_reason spc_parse_tur(struct scsi_cmd *cmd)
{
	cmd->execute = spc_exec_tur;
	return SR_OK;
}

/* --- INQUIRY (SPC-4 6.6) --- */

static const uint8_t vpd_pages[] = { 0x00, 0x80, 0x83, 0x8f, 0xb0, 0xb1, 0xb2 };

static bool spc_vpd_known(uint8_t page, const struct scsi_lun *lun)
{
	unsigned i;

	if (!lun)
		return page == 0x00;
	for (i = 0; i < sizeof(vpd_pages); i++)
		if (vpd_pages[i] == page)
			return true;
	return false;
}

/* SPC-4 6.6.2 standard INQUIRY data */
static uint32_t spc_std_inquiry(struct scsi_cmd *cmd, uint8_t *d)
{
	struct scsi_lun *lun = cmd->lun;

	memset(d, 0, STD_INQ_LEN);
	d[0] = lun ? 0x00 : 0x7f;     /* qualifier 011b, type 1Fh: no LUN here */
	d[1] = lun && lun->removable ? 0x80 : 0;
	d[2] = 0x06;                  /* SPC-4 */
	d[3] = 0x10 | 0x02;           /* HISUP, RESPONSE DATA FORMAT 2 */
	d[4] = STD_INQ_LEN - 5;
	if (lun) {
		d[5] = (uint8_t)((lun->tpgs & 3) << 4);
		if (atomic_load_explicit(&lun->tpc, memory_order_relaxed))
			d[5] |= 0x08; /* 3PC */
	}
	d[7] = 0x02;                  /* CMDQUE */
	spc_pad(d + 8, lun ? lun->vendor : "TARGETD", 8);
	spc_pad(d + 16, lun ? lun->product : "VIRTUAL-DISK", 16);
	if (lun) {
		spc_pad(d + 32, lun->revision, 4);
	} else {
		spc_pad(d + 32, SCSI_PRODUCT_VERSION, 4);
	}
	put_be16(d + 58, VD_SAM5);
	put_be16(d + 60, VD_ISCSI);
	put_be16(d + 62, VD_SPC4);
	put_be16(d + 64, VD_SBC3);
	return STD_INQ_LEN;
}

/* SPC-4 7.8.13 Supported VPD Pages */
static uint32_t vpd_supported(struct scsi_cmd *cmd, uint8_t *d)
{
	uint32_t n = cmd->lun ? sizeof(vpd_pages) : 1;

	memcpy(d + 4, vpd_pages, n);
	d[3] = (uint8_t)n;
	return 4 + n;
}

/* SPC-4 7.8.15 Unit Serial Number */
static uint32_t vpd_serial(struct scsi_cmd *cmd, uint8_t *d)
{
	size_t n = strlen(cmd->lun->serial);

	memcpy(d + 4, cmd->lun->serial, n);
	d[3] = (uint8_t)n;
	return (uint32_t)(4 + n);
}

/* One designation descriptor (SPC-4 7.8.6.1); returns its length. */
static uint32_t vpd_desig(uint8_t *p, uint8_t proto_codeset, uint8_t piv_assoc_type,
			  const void *id, uint32_t len)
{
	p[0] = proto_codeset;
	p[1] = piv_assoc_type;
	p[2] = 0;
	p[3] = (uint8_t)len;
	memcpy(p + 4, id, len);
	return 4 + len;
}

/* SCSI name string (SPC-4 7.8.6.10): null terminated, padded to 4n bytes. */
static uint32_t vpd_name(uint8_t *p, uint8_t piv_assoc_type, const char *name)
{
	char s[300];
	size_t n = (size_t)snprintf(s, sizeof(s), "%s", name);
	uint32_t len = (uint32_t)ALIGN_UP(n + 1, 4);

	if (n >= sizeof(s))
		n = sizeof(s) - 1;
	memset(p + 4, 0, len);
	memcpy(p + 4, s, n);
	p[0] = 0x50 | 0x03;           /* iSCSI, UTF-8 */
	p[1] = piv_assoc_type;
	p[2] = 0;
	p[3] = (uint8_t)len;
	return 4 + len;
}

/* SPC-4 7.8.6 Device Identification */
static uint32_t vpd_devid(struct scsi_cmd *cmd, uint8_t *d)
{
	struct scsi_lun *lun = cmd->lun;
	struct scsi_nexus *n = cmd->nexus;
	uint8_t naa[16], t10[8 + 64], rtp[4];
	char port[300];
	uint32_t off = 4;
	size_t sl = strlen(lun->serial);

	/* NAA IEEE Registered Extended, associated with the LU */
	put_be64(naa, lun->naa);
	put_be64(naa + 8, lun->naa_ext);
	off += vpd_desig(d + off, 0x01, 0x03, naa, 16);
	/* T10 vendor ID based: vendor + serial */
	spc_pad(t10, lun->vendor, 8);
	memcpy(t10 + 8, lun->serial, sl);
	off += vpd_desig(d + off, 0x02, 0x01, t10, (uint32_t)(8 + sl));
	/* target port name "iqn...,t,0x<TPGT>": PIV, target port, SCSI name */
	snprintf(port, sizeof(port), "%s,t,0x%04x", lun->target->name, n->tpgt);
	off += vpd_name(d + off, 0x80 | 0x10 | 0x08, port);
	/* relative target port: PIV, target port, type 4 */
	put_be16(rtp, 0);
	put_be16(rtp + 2, n->rel_tport_id ? n->rel_tport_id : 1);
	off += vpd_desig(d + off, 0x50 | 0x01, 0x80 | 0x10 | 0x04, rtp, 4);
	if (lun->tpgs) {
		/* target port group (SPC-4 7.8.6.7): PIV, target port, type 5;
		 * one group per portal group tag (scsi/alua.c) */
		put_be16(rtp, 0);
		put_be16(rtp + 2, n->tpgt);
		off += vpd_desig(d + off, 0x50 | 0x01, 0x80 | 0x10 | 0x05, rtp, 4);
	}
	/* target device name: PIV, target device, SCSI name string */
	off += vpd_name(d + off, 0x80 | 0x20 | 0x08, lun->target->name);
	put_be16(d + 2, (uint16_t)(off - 4));
	return off;
}

/* SBC-4 6.6.4 Block Limits. Every limit advertised is enforced. */
static uint32_t vpd_block_limits(struct scsi_cmd *cmd, uint8_t *d)
{
	struct scsi_lun *lun = cmd->lun;

	put_be16(d + 2, 0x3c);
	d[5] = 0;                                    /* no COMPARE AND WRITE */
	/* OPTIMAL TRANSFER LENGTH GRANULARITY: one physical block. Less (one
	 * logical block on a 512e LUN) is refused by Linux ("Preferred minimum
	 * I/O size ... not a multiple of physical block size"), and a transfer
	 * shorter than the backstore's block costs it a read-modify-write. */
	put_be16(d + 6, (uint16_t)(1u << lun->lbppb_exp));
	put_be32(d + 8, lun->max_xfer_blocks);       /* MAXIMUM TRANSFER LENGTH */
	put_be32(d + 12, SCSI_OPT_XFER_BYTES >> lun->block_shift);
	/* MAXIMUM PREFETCH LENGTH 0: no limit; COMPARE AND WRITE, UNMAP and
	 * WRITE SAME limits: scsi/vaai.c */
	vaai_vpd_block_limits(lun, d);
	scsi_atomic_vpd(lun, d);     /* atomic write limits: scsi/sbc_atomic.c */
	return 64;
}

/* SBC-4 6.6.2 Block Device Characteristics */
static uint32_t vpd_bdc(struct scsi_cmd *cmd, uint8_t *d)
{
	put_be16(d + 2, 0x3c);
	put_be16(d + 4, 1);           /* non-rotating medium */
	return 64;
}

/* SBC-4 6.6.5 Logical Block Provisioning */
static uint32_t vpd_lbp(struct scsi_cmd *cmd, uint8_t *d)
{
	put_be16(d + 2, 4);
	vaai_vpd_lbp(cmd->lun, d);            /* LBPU, LBPWS, LBPWS10, LBPRZ */
	d[6] = cmd->lun->thin ? 0x02 : 0x00;  /* PROVISIONING TYPE */
	space_vpd_lbp(cmd->lun, d);           /* THRESHOLD EXPONENT, PERCENTAGE */
	return 8;
}

static enum sense_reason spc_exec_inquiry(struct scsi_cmd *cmd)
{
	uint8_t d[SCSI_CTL_BUF];
	uint32_t len;
	uint8_t page = cmd->cdb[2];

	if (!(cmd->cdb[1] & 0x01)) {
		len = spc_std_inquiry(cmd, d);
		scsi_datain(cmd, d, len);
		return SR_OK;
	}
	memset(d, 0, sizeof(d));
	d[0] = cmd->lun ? 0x00 : 0x7f;
	d[1] = page;
	switch (page) {
	case 0x00: len = vpd_supported(cmd, d); break;
	case 0x80: len = vpd_serial(cmd, d); break;
	case 0x83: len = vpd_devid(cmd, d); break;
	case 0x8f: len = xcopy_vpd_tpc(cmd->lun, d); break;
	case 0xb0: len = vpd_block_limits(cmd, d); break;
	case 0xb1: len = vpd_bdc(cmd, d); break;
	case 0xb2: len = vpd_lbp(cmd, d); break;
	default: return scsi_invalid_cdb(cmd, 2, -1);
	}
	scsi_datain(cmd, d, len);
	return SR_OK;
}

/* SPC-4 6.6 INQUIRY */
enum sense_reason spc_parse_inquiry(struct scsi_cmd *cmd)
{
	bool evpd = cmd->cdb[1] & 0x01;
	uint8_t page = cmd->cdb[2];

	if (!evpd && page)
		return scsi_invalid_cdb(cmd, 2, -1);
	if (evpd && !spc_vpd_known(page, cmd->lun))
		return scsi_invalid_cdb(cmd, 2, -1);
	/* VPD 0x83 with long iSCSI names exceeds 512 bytes */
	scsi_set_alloc(cmd, get_be16(cmd->cdb + 3), 1024);
	cmd->execute = spc_exec_inquiry;
	return SR_OK;
}

/* --- REQUEST SENSE (SPC-4 6.39) --- */

static enum sense_reason spc_exec_request_sense(struct scsi_cmd *cmd)
{
	struct scsi_lun *lun = cmd->lun;
	bool desc = cmd->cdb[1] & 0x01;
	enum sense_reason r = SR_OK;
	uint8_t d[64];
	uint8_t len;

	cmd->field_valid = false;
	cmd->info_valid = false;
	if (!lun)
		r = SR_LUN_NOT_SUPPORTED;
	else if (scsi_ua_take(cmd->nexus, scsi_cmd_lun_index(cmd), &cmd->ua_asc, &cmd->ua_ascq))
		r = SR_UA;
	else if (atomic_load(&lun->sanitizing))
		r = SR_SANITIZE_IN_PROGRESS;
	else if (lun->removable && !atomic_load(&lun->medium_present))
		r = SR_MEDIUM_NOT_PRESENT;
	len = scsi_sense_fill(d, sizeof(d), cmd, r, desc);
	scsi_datain(cmd, d, len);
	return SR_OK;
}

enum sense_reason spc_parse_request_sense(struct scsi_cmd *cmd)
{
	scsi_set_alloc(cmd, cmd->cdb[4], 252);
	cmd->execute = spc_exec_request_sense;
	return SR_OK;
}

/* --- REPORT LUNS (SPC-4 6.33) --- */

static enum sense_reason spc_exec_report_luns(struct scsi_cmd *cmd)
{
	uint8_t d[8 + 8 * SCSI_MAX_LUNS];
	struct scsi_target *t = cmd->nexus->target;
	uint32_t off = 8;
	unsigned i;

	memset(d, 0, sizeof(d));
	if (cmd->cdb[2] != 0x01) {
		for (i = 0; i < SCSI_MAX_LUNS; i++) {
			if (!scsi_target_lun(t, i))
				continue;
			/* SAM-5 4.7.7.2 peripheral device addressing, bus 0 */
			d[off] = 0x00;
			d[off + 1] = (uint8_t)i;
			off += 8;
		}
	}
	put_be32(d, off - 8);
	scsi_datain(cmd, d, off);
	return SR_OK;
}

enum sense_reason spc_parse_report_luns(struct scsi_cmd *cmd)
{
	uint32_t alloc = get_be32(cmd->cdb + 6);

	if (cmd->cdb[2] > 0x02)
		return scsi_invalid_cdb(cmd, 2, -1);
	if (alloc < 16)
		return scsi_invalid_cdb(cmd, 6, -1);
	scsi_set_alloc(cmd, alloc, 8 + 8 * SCSI_MAX_LUNS);
	cmd->execute = spc_exec_report_luns;
	return SR_OK;
}

/* --- REPORT SUPPORTED OPERATION CODES (SPC-4 6.35) --- */

/* SPC-4 6.35.4 command timeouts descriptor */
static uint32_t rsoc_timeouts(uint8_t *p)
{
	memset(p, 0, 12);
	put_be16(p, 0x0a);
	put_be32(p + 4, 0);           /* nominal: not specified */
	put_be32(p + 8, 30);          /* recommended: 30 s */
	return 12;
}

static enum sense_reason spc_exec_rsoc(struct scsi_cmd *cmd)
{
	uint8_t d[SCSI_CTL_BUF];
	bool rctd = cmd->cdb[2] & 0x80;
	uint8_t opt = cmd->cdb[2] & 0x07;
	uint8_t req_op = cmd->cdb[3];
	uint16_t req_sa = get_be16(cmd->cdb + 4);
	const struct scsi_opcode *op;
	uint32_t off;
	bool has_sa;
	unsigned i;

	memset(d, 0, sizeof(d));
	if (opt == 0) {
		/* 6.35.2: all commands descriptor */
		off = 4;
		for (i = 0; i < scsi_opcodes_count; i++) {
			op = scsi_opcodes[i];
			if (!scsi_op_offered(op, cmd->lun))
				continue;
			d[off] = op->opcode;
			put_be16(d + off + 2, op->has_sa ? op->service_action : 0);
			d[off + 5] = (uint8_t)((rctd ? 0x02 : 0) | (op->has_sa ? 0x01 : 0));
			put_be16(d + off + 6, op->cdb_len);
			off += 8;
			if (rctd)
				off += rsoc_timeouts(d + off);
		}
		put_be32(d, off - 4);
		scsi_datain(cmd, d, off);
		return SR_OK;
	}

	/* 6.35.3: one command parameter data */
	op = scsi_opcode_get(req_op, req_sa, &has_sa);
	switch (opt) {
	case 1:
		if (has_sa)
			return scsi_invalid_cdb(cmd, 2, 2);
		break;
	case 2:
		if (!has_sa)
			return scsi_invalid_cdb(cmd, 2, 2);
		break;
	case 3:
		break;
	default:
		return scsi_invalid_cdb(cmd, 2, 2);
	}
	if (!scsi_op_offered(op, cmd->lun)) {
		d[1] = 0x01;                  /* SUPPORT 001b: not supported */
		off = 4;
	} else {
		d[1] = (uint8_t)((rctd ? 0x80 : 0) | 0x03); /* supported per standard */
		put_be16(d + 2, op->cdb_len);
		memcpy(d + 4, op->usage, op->cdb_len);
		off = 4u + op->cdb_len;
		if (rctd)
			off += rsoc_timeouts(d + off);
	}
	scsi_datain(cmd, d, off);
	return SR_OK;
}

enum sense_reason spc_parse_rsoc(struct scsi_cmd *cmd)
{
	uint8_t opt = cmd->cdb[2] & 0x07;

	if (opt > 3)
		return scsi_invalid_cdb(cmd, 2, 2);
	scsi_set_alloc(cmd, get_be32(cmd->cdb + 6), SCSI_CTL_BUF);
	cmd->execute = spc_exec_rsoc;
	return SR_OK;
}

/* --- REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS (SPC-4 6.37) --- */

static enum sense_reason spc_exec_rstmf(struct scsi_cmd *cmd)
{
	uint8_t d[16];
	bool repd = cmd->cdb[2] & 0x80;

	memset(d, 0, sizeof(d));
	/* what the iSCSI transport offers: ABORT TASK, ABORT TASK SET,
	 * CLEAR TASK SET, LOGICAL UNIT RESET, TARGET RESET */
	d[0] = 0x80 | 0x40 | 0x10 | 0x08 | 0x02;
	if (repd) {
		d[3] = 0x0c;          /* extended format */
		scsi_datain(cmd, d, 16);
	} else {
		scsi_datain(cmd, d, 4);
	}
	return SR_OK;
}

enum sense_reason spc_parse_rstmf(struct scsi_cmd *cmd)
{
	uint32_t alloc = get_be32(cmd->cdb + 6);

	if (alloc < 4)
		return scsi_invalid_cdb(cmd, 6, -1);
	scsi_set_alloc(cmd, alloc, 16);
	cmd->execute = spc_exec_rstmf;
	return SR_OK;
}
