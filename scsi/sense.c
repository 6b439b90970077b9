/*
 * Sense data: one table maps every enum sense_reason to status, sense key,
 * ASC and ASCQ; scsi_build_sense() lays it out in fixed (SPC-4 4.5.3) or
 * descriptor (SPC-4 4.5.2) format.
 */
#include "config.h"
#include "scsi/scsi_int.h"

struct sense_entry {
	uint8_t status;
	uint8_t key;
	uint8_t asc;
	uint8_t ascq;
};

#define CC SAM_STAT_CHECK_CONDITION
static const struct sense_entry sense_table[SR__COUNT] = {
	[SR_OK] = { SAM_STAT_GOOD, 0, 0, 0 },
	[SR_PENDING] = { SAM_STAT_GOOD, 0, 0, 0 },
	[SR_RESERVATION_CONFLICT] = { SAM_STAT_RESERVATION_CONFLICT, 0, 0, 0 },
	[SR_BUSY] = { SAM_STAT_BUSY, 0, 0, 0 },
	[SR_TASK_SET_FULL] = { SAM_STAT_TASK_SET_FULL, 0, 0, 0 },
	[SR_TASK_ABORTED] = { SAM_STAT_TASK_ABORTED, 0, 0, 0 },
	[SR_INVALID_OPCODE] = { CC, SK_ILLEGAL_REQUEST, 0x20, 0x00 },
	[SR_INVALID_FIELD_CDB] = { CC, SK_ILLEGAL_REQUEST, 0x24, 0x00 },
	[SR_INVALID_FIELD_PARAM] = { CC, SK_ILLEGAL_REQUEST, 0x26, 0x00 },
	[SR_PARAM_LIST_LENGTH_ERROR] = { CC, SK_ILLEGAL_REQUEST, 0x1a, 0x00 },
	[SR_LBA_OUT_OF_RANGE] = { CC, SK_ILLEGAL_REQUEST, 0x21, 0x00 },
	[SR_LUN_NOT_SUPPORTED] = { CC, SK_ILLEGAL_REQUEST, 0x25, 0x00 },
	[SR_SAVING_PARAMS_UNSUPPORTED] = { CC, SK_ILLEGAL_REQUEST, 0x39, 0x00 },
	[SR_MEDIUM_REMOVAL_PREVENTED] = { CC, SK_ILLEGAL_REQUEST, 0x53, 0x02 },
	[SR_TOO_MANY_SEGMENT_DESCRIPTORS] = { CC, SK_ILLEGAL_REQUEST, 0x26, 0x08 },
	[SR_TOO_MANY_TARGET_DESCRIPTORS] = { CC, SK_ILLEGAL_REQUEST, 0x26, 0x06 },
	[SR_UNSUPPORTED_TARGET_DESCRIPTOR] = { CC, SK_ILLEGAL_REQUEST, 0x26, 0x07 },
	[SR_UNSUPPORTED_SEGMENT_DESCRIPTOR] = { CC, SK_ILLEGAL_REQUEST, 0x26, 0x09 },
	[SR_INVALID_RELEASE_OF_PR] = { CC, SK_ILLEGAL_REQUEST, 0x26, 0x04 },
	[SR_INSUFFICIENT_REGISTRATION_RESOURCES] = { CC, SK_ILLEGAL_REQUEST, 0x55, 0x04 },
	[SR_MISCOMPARE_VERIFY] = { CC, SK_MISCOMPARE, 0x1d, 0x00 },
	[SR_MEDIUM_NOT_PRESENT] = { CC, SK_NOT_READY, 0x3a, 0x00 },
	[SR_LUN_NOT_READY_MANUAL] = { CC, SK_NOT_READY, 0x04, 0x03 },
	[SR_LUN_NOT_ACCESSIBLE_STANDBY] = { CC, SK_NOT_READY, 0x04, 0x0b },
	[SR_LUN_NOT_ACCESSIBLE_UNAVAIL] = { CC, SK_NOT_READY, 0x04, 0x0c },
	[SR_LUN_NOT_ACCESSIBLE_TRANSITION] = { CC, SK_NOT_READY, 0x04, 0x0a },
	[SR_WRITE_PROTECTED] = { CC, SK_DATA_PROTECT, 0x27, 0x00 },
	[SR_SPACE_ALLOC_FAILED] = { CC, SK_DATA_PROTECT, 0x27, 0x07 },
	[SR_READ_ERROR] = { CC, SK_MEDIUM_ERROR, 0x11, 0x00 },
	[SR_WRITE_ERROR] = { CC, SK_MEDIUM_ERROR, 0x0c, 0x00 },
	[SR_INTERNAL_ERROR] = { CC, SK_HARDWARE_ERROR, 0x44, 0x00 },
	[SR_COPY_TARGET_DEVICE_NOT_REACHABLE] = { CC, SK_COPY_ABORTED, 0x0d, 0x02 },
	[SR_UA] = { CC, SK_UNIT_ATTENTION, 0, 0 },    /* ASC/ASCQ from the UA */
	[SR_INVALID_FIELD_IU] = { CC, SK_ILLEGAL_REQUEST, 0x0e, 0x03 },
	[SR_SANITIZE_IN_PROGRESS] = { CC, SK_NOT_READY, 0x04, 0x1b },
	[SR_SANITIZE_FAILED] = { CC, SK_MEDIUM_ERROR, 0x31, 0x03 },
	[SR_DATA_PHASE_ERROR] = { CC, SK_ABORTED_COMMAND, 0x4b, 0x00 },
	[SR_COPY_ABORTED] = { CC, SK_COPY_ABORTED, 0x00, 0x00 },
	[SR_OPERATION_IN_PROGRESS] = { CC, SK_ILLEGAL_REQUEST, 0x00, 0x16 },
	[SR_INITIATOR_RESPONSE_TIMEOUT] = { CC, SK_ABORTED_COMMAND, 0x4b, 0x06 },
	[SR_INVALID_MESSAGE] = { CC, SK_ILLEGAL_REQUEST, 0x49, 0x00 },
	/* key/ASC/ASCQ from the command (cmd->fault_key, ua_asc, ua_ascq) */
	[SR_FAULT_SENSE] = { CC, SK_HARDWARE_ERROR, 0x44, 0x00 },
};
#undef CC

/* SPC-4 4.5.6 Table 49: sense key descriptions. */
const char *scsi_sense_key_name(unsigned key)
{
	static const char *const names[16] = {
		"NO SENSE", "RECOVERED ERROR", "NOT READY", "MEDIUM ERROR",
		"HARDWARE ERROR", "ILLEGAL REQUEST", "UNIT ATTENTION", "DATA PROTECT",
		"BLANK CHECK", "VENDOR SPECIFIC", "COPY ABORTED", "ABORTED COMMAND",
		"RESERVED 0xC", "VOLUME OVERFLOW", "MISCOMPARE", "RESERVED 0xF",
	};

	return names[key & 15];
}

void scsi_reason_info(enum sense_reason r, uint8_t *status, uint8_t *key, uint8_t *asc, uint8_t *ascq)
{
	const struct sense_entry *e;

	if ((unsigned)r >= SR__COUNT)
		r = SR_INTERNAL_ERROR;
	e = &sense_table[r];
	if (status)
		*status = e->status;
	if (key)
		*key = e->key;
	if (asc)
		*asc = e->asc;
	if (ascq)
		*ascq = e->ascq;
}

/* SPC-4 4.5.2.4.2: field pointer sense-key specific bytes (3 bytes). */
static bool sense_sks(const struct scsi_cmd *cmd, enum sense_reason r, uint8_t sks[3])
{
	if (cmd->field_valid && (r == SR_INVALID_FIELD_CDB || r == SR_INVALID_FIELD_PARAM)) {
		sks[0] = 0x80;                           /* SKSV */
		if (cmd->field_in_cdb)
			sks[0] |= 0x40;                  /* C/D */
		if (cmd->field_bit >= 0)
			sks[0] |= 0x08 | (cmd->field_bit & 7); /* BPV, BIT POINTER */
		put_be16(sks + 1, cmd->field_byte);
		return true;
	}
	if (r == SR_SANITIZE_IN_PROGRESS && cmd->lun) {
		/* SPC-4 4.5.2.4.4: progress indication */
		sks[0] = 0x80;
		put_be16(sks + 1, (uint16_t)atomic_load(&cmd->lun->sanitize_progress));
		return true;
	}
	return false;
}

uint8_t scsi_sense_fill(uint8_t *out, size_t cap, const struct scsi_cmd *cmd,
			enum sense_reason r, bool descriptor)
{
	uint8_t buf[64];
	uint8_t key, asc, ascq, sks[3];
	bool has_sks, info = cmd->info_valid &&
		(r == SR_MISCOMPARE_VERIFY || r == SR_READ_ERROR || r == SR_WRITE_ERROR ||
		 r == SR_LBA_OUT_OF_RANGE || r == SR_FAULT_SENSE);
	size_t len;

	scsi_reason_info(r, NULL, &key, &asc, &ascq);
	if (r == SR_UA || r == SR_FAULT_SENSE) {
		asc = cmd->ua_asc;
		ascq = cmd->ua_ascq;
		if (r == SR_FAULT_SENSE)
			key = cmd->fault_key;
	}
	has_sks = sense_sks(cmd, r, sks);
	memset(buf, 0, sizeof(buf));
	if (descriptor) {
		/* SPC-4 4.5.2: descriptor format, current error */
		buf[0] = 0x72;
		buf[1] = key;
		buf[2] = asc;
		buf[3] = ascq;
		len = 8;
		if (info) {
			/* SPC-4 4.5.2.2 information descriptor */
			buf[len] = 0x00;
			buf[len + 1] = 0x0a;
			buf[len + 2] = 0x80;       /* VALID */
			put_be64(buf + len + 4, cmd->info);
			len += 12;
		}
		if (has_sks) {
			/* SPC-4 4.5.2.4 sense key specific descriptor */
			buf[len] = 0x02;
			buf[len + 1] = 0x06;
			memcpy(buf + len + 4, sks, 3);
			len += 8;
		}
		buf[7] = (uint8_t)(len - 8);
	} else {
		/* SPC-4 4.5.3: fixed format, current error */
		buf[0] = 0x70;
		buf[2] = key;
		if (info) {
			/* INFORMATION is 4 bytes: VALID only if it fits */
			if (cmd->info <= 0xffffffffu) {
				buf[0] |= 0x80;
				put_be32(buf + 3, (uint32_t)cmd->info);
			}
		}
		buf[7] = 10;
		buf[12] = asc;
		buf[13] = ascq;
		if (has_sks)
			memcpy(buf + 15, sks, 3);
		len = 18;
	}
	len = MIN(len, cap);
	memcpy(out, buf, len);
	return (uint8_t)len;
}

void scsi_build_sense(struct scsi_cmd *cmd, bool descriptor)
{
	cmd->sense_len = scsi_sense_fill(cmd->sense, sizeof(cmd->sense), cmd,
					 cmd->reason, descriptor);
}
