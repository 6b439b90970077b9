/*
 * SCSI status and sense data as text: what the target said, in words
 * (SPC-4 4.5 sense data, 4.5.6 sense key and ASC/ASCQ, SAM-5 5.3 status).
 * libiscsi names some additional sense codes; the ones a lab meets most
 * often are named here first, the rest fall back to libiscsi's names.
 */
#include "config.h"
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "tools/lab/lab.h"

static const char *const sense_keys[16] = {
	"NO SENSE", "RECOVERED ERROR", "NOT READY", "MEDIUM ERROR", "HARDWARE ERROR",
	"ILLEGAL REQUEST", "UNIT ATTENTION", "DATA PROTECT", "BLANK CHECK", "VENDOR SPECIFIC",
	"COPY ABORTED", "ABORTED COMMAND", "RESERVED (0x0C)", "VOLUME OVERFLOW", "MISCOMPARE",
	"RESERVED (0x0F)",
};

/* SPC-4 Annex F.2, the codes vaai-lab's commands can meet. */
static const struct {
	uint16_t code;
	const char *text;
} asc_names[] = {
	{ 0x0000, "NO ADDITIONAL SENSE INFORMATION" },
	{ 0x0401, "LOGICAL UNIT IS IN PROCESS OF BECOMING READY" },
	{ 0x0402, "LOGICAL UNIT NOT READY, INITIALIZING COMMAND REQUIRED" },
	{ 0x0D02, "COPY TARGET DEVICE NOT REACHABLE" },
	{ 0x0D03, "INCORRECT COPY TARGET DEVICE TYPE" },
	{ 0x0D05, "COPY TARGET DEVICE DATA UNDERRUN" },
	{ 0x1100, "UNRECOVERED READ ERROR" },
	{ 0x1D00, "MISCOMPARE DURING VERIFY OPERATION" },
	{ 0x1A00, "PARAMETER LIST LENGTH ERROR" },
	{ 0x2000, "INVALID COMMAND OPERATION CODE" },
	{ 0x2100, "LOGICAL BLOCK ADDRESS OUT OF RANGE" },
	{ 0x2400, "INVALID FIELD IN CDB" },
	{ 0x2500, "LOGICAL UNIT NOT SUPPORTED" },
	{ 0x2600, "INVALID FIELD IN PARAMETER LIST" },
	{ 0x2605, "DATA DECRYPTION ERROR" },
	{ 0x2606, "TOO MANY TARGET DESCRIPTORS" },
	{ 0x2607, "UNSUPPORTED TARGET DESCRIPTOR TYPE CODE" },
	{ 0x2608, "TOO MANY SEGMENT DESCRIPTORS" },
	{ 0x2609, "UNSUPPORTED SEGMENT DESCRIPTOR TYPE CODE" },
	{ 0x2700, "WRITE PROTECTED" },
	{ 0x2900, "POWER ON, RESET, OR BUS DEVICE RESET OCCURRED" },
	{ 0x2A01, "MODE PARAMETERS CHANGED" },
	{ 0x2A03, "RESERVATIONS PREEMPTED" },
	{ 0x2A04, "RESERVATIONS RELEASED" },
	{ 0x2A05, "REGISTRATIONS PREEMPTED" },
	{ 0x2A09, "CAPACITY DATA HAS CHANGED" },
	{ 0x2C00, "COMMAND SEQUENCE ERROR" },
	{ 0x3F0E, "REPORTED LUNS DATA HAS CHANGED" },
	{ 0x5507, "INSUFFICIENT REGISTRATION RESOURCES" },
	{ 0x5506, "INSUFFICIENT RESOURCES" },
};

struct sense {
	bool valid;
	unsigned key, asc, ascq;
	bool have_info;
	uint64_t info;
	bool have_field;                /* sense-key specific field pointer */
	bool in_cdb;
	unsigned field, bit;            /* bit: 8 = not given */
};

/* SPC-4 4.5.2.4.2 field pointer (ILLEGAL REQUEST): SKSV, C/D, BPV. */
static void sense_sks(struct sense *s, const uint8_t *p)
{
	if (s->key != SCSI_SENSE_ILLEGAL_REQUEST || !(p[0] & 0x80))
		return;
	s->have_field = true;
	s->in_cdb = p[0] & 0x40;
	s->bit = p[0] & 0x08 ? p[0] & 7 : 8;
	s->field = (unsigned)p[1] << 8 | p[2];
}

/* The sense data of a CHECK CONDITION: libiscsi leaves the response's data
 * segment in datain (two bytes of length, then the sense data), fixed
 * (0x70/0x71) or descriptor (0x72/0x73) format. */
static void sense_parse(const struct scsi_task *t, struct sense *s)
{
	const uint8_t *p;
	size_t n;

	memset(s, 0, sizeof(*s));
	if (!t || !t->datain.data || t->datain.size < 4)
		return;
	n = ((size_t)t->datain.data[0] << 8 | t->datain.data[1]);
	if (n > (size_t)t->datain.size - 2)
		n = (size_t)t->datain.size - 2;
	p = t->datain.data + 2;
	if (n < 2)
		return;
	switch (p[0] & 0x7f) {
	case 0x70: case 0x71:
		if (n < 14)
			return;
		s->valid = true;
		s->key = p[2] & 15;
		s->asc = p[12];
		s->ascq = p[13];
		if (p[0] & 0x80) {
			s->have_info = true;
			s->info = (uint64_t)p[3] << 24 | (uint64_t)p[4] << 16 | (uint64_t)p[5] << 8 | p[6];
		}
		if (n >= 18)
			sense_sks(s, p + 15);
		break;
	case 0x72: case 0x73: {
		size_t len = n < 8 ? 0 : 8 + (size_t)p[7];

		if (n < 4)
			return;
		s->valid = true;
		s->key = p[1] & 15;
		s->asc = p[2];
		s->ascq = p[3];
		/* SPC-4 4.5.2.2 information descriptor (type 0, 12 bytes) */
		for (size_t off = 8; off + 2 <= len && off + 2 <= n;) {
			size_t dl = (size_t)p[off + 1] + 2;

			if (p[off] == 0 && off + 12 <= n && dl >= 12 && (p[off + 2] & 0x80)) {
				s->have_info = true;
				s->info = 0;
				for (int i = 0; i < 8; i++)
					s->info = s->info << 8 | p[off + 4 + i];
			}
			if (p[off] == 2 && off + 8 <= n && dl >= 8)
				sense_sks(s, p + off + 4);
			off += dl;
		}
		break;
	}
	default:
		break;
	}
}

static const char *asc_text(unsigned asc, unsigned ascq, char *buf, size_t n)
{
	uint16_t code = (uint16_t)(asc << 8 | ascq);
	const char *lib;

	for (size_t i = 0; i < sizeof(asc_names) / sizeof(asc_names[0]); i++)
		if (asc_names[i].code == code)
			return asc_names[i].text;
	lib = scsi_sense_ascq_str(code);
	if (lib) {
		size_t i;

		for (i = 0; lib[i] && i + 1 < n; i++)
			buf[i] = lib[i] == '_' ? ' ' : (char)toupper((unsigned char)lib[i]);
		buf[i] = 0;
		return buf;
	}
	snprintf(buf, n, "ADDITIONAL SENSE CODE 0x%02X/0x%02X", asc, ascq);
	return buf;
}

const char *lab_status_text(int status, const struct scsi_task *t, char *buf, size_t n)
{
	struct sense s;
	char tmp[96];

	switch (status) {
	case SCSI_STATUS_GOOD: return "GOOD";
	case SCSI_STATUS_CONDITION_MET: return "CONDITION MET";
	case SCSI_STATUS_BUSY: return "BUSY";
	case SCSI_STATUS_RESERVATION_CONFLICT: return "RESERVATION CONFLICT";
	case SCSI_STATUS_TASK_SET_FULL: return "TASK SET FULL";
	case SCSI_STATUS_ACA_ACTIVE: return "ACA ACTIVE";
	case SCSI_STATUS_TASK_ABORTED: return "TASK ABORTED";
	case SCSI_STATUS_CANCELLED: return "cancelled (the connection was closed)";
	case SCSI_STATUS_ERROR: return "transport error (the connection failed)";
	case SCSI_STATUS_TIMEOUT: return "timed out";
	case SCSI_STATUS_CHECK_CONDITION: break;
	default:
		snprintf(buf, n, "status 0x%02x", (unsigned)status);
		return buf;
	}
	sense_parse(t, &s);
	if (!s.valid)
		return "CHECK CONDITION without sense data";
	if (s.key == SCSI_SENSE_MISCOMPARE && s.asc == 0x1d && s.ascq == 0) {
		if (s.have_info)
			snprintf(buf, n, "MISCOMPARE at byte %" PRIu64, s.info);
		else
			snprintf(buf, n, "MISCOMPARE (no offset given)");
		return buf;
	}
	if (s.have_field && s.bit < 8)
		snprintf(buf, n, "%s: %s (byte %u bit %u of the %s)", sense_keys[s.key],
			 asc_text(s.asc, s.ascq, tmp, sizeof(tmp)), s.field, s.bit,
			 s.in_cdb ? "CDB" : "parameter list");
	else if (s.have_field)
		snprintf(buf, n, "%s: %s (byte %u of the %s)", sense_keys[s.key],
			 asc_text(s.asc, s.ascq, tmp, sizeof(tmp)), s.field, s.in_cdb ? "CDB" : "parameter list");
	else
		snprintf(buf, n, "%s: %s", sense_keys[s.key], asc_text(s.asc, s.ascq, tmp, sizeof(tmp)));
	return buf;
}

bool lab_is_miscompare(int status, const struct scsi_task *t, int64_t *offset)
{
	struct sense s;

	if (status != SCSI_STATUS_CHECK_CONDITION)
		return false;
	sense_parse(t, &s);
	if (!s.valid || s.key != SCSI_SENSE_MISCOMPARE)
		return false;
	if (offset)
		*offset = s.have_info ? (int64_t)s.info : -1;
	return true;
}

bool lab_is_unit_attention(int status, const struct scsi_task *t)
{
	struct sense s;

	if (status != SCSI_STATUS_CHECK_CONDITION)
		return false;
	sense_parse(t, &s);
	return s.valid && s.key == SCSI_SENSE_UNIT_ATTENTION;
}

void lab_die_status(const struct lab_io *io, const struct scsi_task *t)
{
	char buf[160];

	lab_die("%s: %s LBA %" PRIu64 ": %s", io->s->name, io->what, io->lba,
		lab_status_text(io->status, t, buf, sizeof(buf)));
}
