/*
 * The opcode table: one static const entry per opcode (and per service
 * action), with designated initializers. The usage bitmap is at once the
 * CDB USAGE DATA of REPORT SUPPORTED OPERATION CODES (SPC-4 6.35.3) and the
 * mask of bits a CDB may set: any other bit is reserved and rejected with
 * INVALID FIELD IN CDB (SPC-4 4.4.1). usage[0] is the opcode, and for
 * service-action opcodes the service action sits in its CDB field.
 *
 * CONTROL byte (SAM-5 5.2): usage 0x00. NACA=1 is rejected since ACA is not
 * supported; the obsolete and reserved bits must be zero; the two vendor
 * specific bits are ignored (scsi.c masks them).
 *
 * SANITIZE BLOCK ERASE is not offered until logical block provisioning
 * (LBPME) is: SBC-4 ties block erase to it. CRYPTO ERASE: no encryption.
 *
 * Lookup is O(1): an array indexed by the opcode byte, and for opcodes with
 * service actions a second array indexed by the 5-bit service action.
 */
#include "config.h"
#include "scsi/scsi_int.h"
#include "scsi/space.h"
#include "scsi/pr.h"
#include "scsi/vaai.h"

#define LBA4 0xff, 0xff, 0xff, 0xff
#define LBA8 LBA4, LBA4

/* --- SPC-4 --- */
static const struct scsi_opcode op_tur = {
	.opcode = 0x00, .name = "TEST UNIT READY", .cdb_len = 6,
	.usage = { 0x00, 0, 0, 0, 0, 0 },
	.parse = spc_parse_tur, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_request_sense = {
	.opcode = 0x03, .name = "REQUEST SENSE", .cdb_len = 6,
	.usage = { 0x03, 0x01, 0, 0, 0xff, 0 },
	.parse = spc_parse_request_sense,
	.flags = OPF_NO_LUN | OPF_NO_UA | OPF_CONFLICT_OK | OPF_SANITIZE_OK,
};
static const struct scsi_opcode op_inquiry = {
	.opcode = 0x12, .name = "INQUIRY", .cdb_len = 6,
	.usage = { 0x12, 0x01, 0xff, 0xff, 0xff, 0 },
	.parse = spc_parse_inquiry,
	.flags = OPF_NO_LUN | OPF_NO_UA | OPF_CONFLICT_OK | OPF_SANITIZE_OK,
};
static const struct scsi_opcode op_mode_select6 = {
	.opcode = 0x15, .name = "MODE SELECT(6)", .cdb_len = 6,
	.usage = { 0x15, 0x11, 0, 0, 0xff, 0 },
	.parse = mode_parse_select,
};
static const struct scsi_opcode op_mode_sense6 = {
	.opcode = 0x1a, .name = "MODE SENSE(6)", .cdb_len = 6,
	.usage = { 0x1a, 0x08, 0xff, 0xff, 0xff, 0 },
	.parse = mode_parse_sense,
};
static const struct scsi_opcode op_mode_select10 = {
	.opcode = 0x55, .name = "MODE SELECT(10)", .cdb_len = 10,
	.usage = { 0x55, 0x11, 0, 0, 0, 0, 0, 0xff, 0xff, 0 },
	.parse = mode_parse_select,
};
static const struct scsi_opcode op_mode_sense10 = {
	.opcode = 0x5a, .name = "MODE SENSE(10)", .cdb_len = 10,
	.usage = { 0x5a, 0x18, 0xff, 0xff, 0, 0, 0, 0xff, 0xff, 0 },
	.parse = mode_parse_sense,
};
static const struct scsi_opcode op_report_luns = {
	.opcode = 0xa0, .name = "REPORT LUNS", .cdb_len = 12,
	.usage = { 0xa0, 0, 0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = spc_parse_report_luns,
	.flags = OPF_NO_LUN | OPF_NO_UA | OPF_CONFLICT_OK | OPF_SANITIZE_OK,
};
static const struct scsi_opcode op_log_sense = {
	.opcode = 0x4d, .name = "LOG SENSE", .cdb_len = 10,
	.usage = { 0x4d, 0, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0xff, 0 },
	.parse = space_parse_log_sense,
};
static const struct scsi_opcode op_rsoc = {
	.opcode = 0xa3, .service_action = 0x0c, .has_sa = true,
	.name = "REPORT SUPPORTED OPERATION CODES", .cdb_len = 12,
	.usage = { 0xa3, 0x0c, 0x87, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = spc_parse_rsoc, .flags = OPF_CONFLICT_OK,
};
static const struct scsi_opcode op_rstmf = {
	.opcode = 0xa3, .service_action = 0x0d, .has_sa = true,
	.name = "REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS", .cdb_len = 12,
	.usage = { 0xa3, 0x0d, 0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = spc_parse_rstmf, .flags = OPF_CONFLICT_OK,
};

/* --- SBC-4 --- */
static const struct scsi_opcode op_read6 = {
	.opcode = 0x08, .name = "READ(6)", .cdb_len = 6,
	.usage = { 0x08, 0x1f, 0xff, 0xff, 0xff, 0 },
	.parse = sbc_parse_rw, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_write6 = {
	.opcode = 0x0a, .name = "WRITE(6)", .cdb_len = 6,
	.usage = { 0x0a, 0x1f, 0xff, 0xff, 0xff, 0 },
	.parse = sbc_parse_rw, .flags = OPF_MEDIUM | OPF_WRITES | OPF_SHRINK,
};
static const struct scsi_opcode op_start_stop = {
	.opcode = 0x1b, .name = "START STOP UNIT", .cdb_len = 6,
	.usage = { 0x1b, 0x01, 0, 0x0f, 0xf7, 0 },
	.parse = sbc_parse_start_stop,
};
static const struct scsi_opcode op_prevent_allow = {
	.opcode = 0x1e, .name = "PREVENT ALLOW MEDIUM REMOVAL", .cdb_len = 6,
	.usage = { 0x1e, 0, 0, 0, 0x03, 0 },
	.parse = sbc_parse_prevent_allow, .flags = OPF_REMOVABLE,
};
static const struct scsi_opcode op_read_capacity10 = {
	.opcode = 0x25, .name = "READ CAPACITY(10)", .cdb_len = 10,
	.usage = { 0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	.parse = sbc_parse_read_capacity10, .flags = OPF_MEDIUM | OPF_CONFLICT_OK,
};
static const struct scsi_opcode op_read10 = {
	.opcode = 0x28, .name = "READ(10)", .cdb_len = 10,
	.usage = { 0x28, 0x18, LBA4, 0x1f, 0xff, 0xff, 0 },
	.parse = sbc_parse_rw, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_write10 = {
	.opcode = 0x2a, .name = "WRITE(10)", .cdb_len = 10,
	.usage = { 0x2a, 0x18, LBA4, 0x1f, 0xff, 0xff, 0 },
	.parse = sbc_parse_rw, .flags = OPF_MEDIUM | OPF_WRITES | OPF_SHRINK,
};
static const struct scsi_opcode op_write_verify10 = {
	.opcode = 0x2e, .name = "WRITE AND VERIFY(10)", .cdb_len = 10,
	.usage = { 0x2e, 0x16, LBA4, 0x1f, 0xff, 0xff, 0 },
	.parse = sbc_parse_write_verify, .flags = OPF_MEDIUM | OPF_WRITES | OPF_SHRINK,
};
static const struct scsi_opcode op_verify10 = {
	.opcode = 0x2f, .name = "VERIFY(10)", .cdb_len = 10,
	.usage = { 0x2f, 0x16, LBA4, 0x1f, 0xff, 0xff, 0 },
	.parse = sbc_parse_verify, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_prefetch10 = {
	.opcode = 0x34, .name = "PRE-FETCH(10)", .cdb_len = 10,
	.usage = { 0x34, 0x02, LBA4, 0x1f, 0xff, 0xff, 0 },
	.parse = sbc_parse_prefetch, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_sync_cache10 = {
	.opcode = 0x35, .name = "SYNCHRONIZE CACHE(10)", .cdb_len = 10,
	.usage = { 0x35, 0x06, LBA4, 0x1f, 0xff, 0xff, 0 },
	.parse = sbc_parse_sync_cache, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_read_defect10 = {
	.opcode = 0x37, .name = "READ DEFECT DATA(10)", .cdb_len = 10,
	.usage = { 0x37, 0, 0x1f, 0, 0, 0, 0, 0xff, 0xff, 0 },
	.parse = sbc_parse_read_defect, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_sanitize_overwrite = {
	.opcode = 0x48, .service_action = 0x01, .has_sa = true,
	.name = "SANITIZE OVERWRITE", .cdb_len = 10,
	.usage = { 0x48, 0xa1, 0, 0, 0, 0, 0, 0xff, 0xff, 0 },
	.parse = sbc_parse_sanitize, .flags = OPF_WRITES | OPF_SANITIZE,
};
static const struct scsi_opcode op_sanitize_exit = {
	.opcode = 0x48, .service_action = 0x1f, .has_sa = true,
	.name = "SANITIZE EXIT FAILURE MODE", .cdb_len = 10,
	.usage = { 0x48, 0xbf, 0, 0, 0, 0, 0, 0xff, 0xff, 0 },
	.parse = sbc_parse_sanitize, .flags = OPF_SANITIZE,
};
/* --- VAAI (SBC-4, SPC-4): scsi/vaai.c, scsi/xcopy.c --- */
static const struct scsi_opcode op_write_same10 = {
	.opcode = 0x41, .name = "WRITE SAME(10)", .cdb_len = 10,
	/* UNMAP; not ANCHOR (ANC_SUP 0), not WRPROTECT, not the obsolete bits */
	.usage = { 0x41, 0x08, LBA4, 0x1f, 0xff, 0xff, 0 },
	.parse = vaai_parse_write_same, .flags = OPF_MEDIUM | OPF_WRITES | OPF_VAAI,
};
static const struct scsi_opcode op_unmap = {
	.opcode = 0x42, .name = "UNMAP", .cdb_len = 10,
	.usage = { 0x42, 0x00, 0, 0, 0, 0, 0x1f, 0xff, 0xff, 0 },
	.parse = vaai_parse_unmap, .flags = OPF_MEDIUM | OPF_WRITES | OPF_VAAI | OPF_THIN,
};
static const struct scsi_opcode op_extended_copy = {
	.opcode = 0x83, .service_action = 0x00, .has_sa = true,
	.name = "EXTENDED COPY(LID1)", .cdb_len = 16,
	.usage = { 0x83, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = xcopy_parse_extended_copy, .flags = OPF_MEDIUM | OPF_VAAI,
};
static const struct scsi_opcode op_rcr_status = {
	.opcode = 0x84, .service_action = 0x00, .has_sa = true,
	.name = "RECEIVE COPY STATUS(LID1)", .cdb_len = 16,
	.usage = { 0x84, 0x00, 0xff, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = xcopy_parse_receive_copy_results, .flags = OPF_CONFLICT_OK,
};
static const struct scsi_opcode op_rcr_op_params = {
	.opcode = 0x84, .service_action = 0x03, .has_sa = true,
	.name = "RECEIVE COPY OPERATING PARAMETERS", .cdb_len = 16,
	.usage = { 0x84, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = xcopy_parse_receive_copy_results, .flags = OPF_CONFLICT_OK,
};
static const struct scsi_opcode op_rcr_failed = {
	.opcode = 0x84, .service_action = 0x04, .has_sa = true,
	.name = "RECEIVE COPY FAILURE DETAILS(LID1)", .cdb_len = 16,
	.usage = { 0x84, 0x04, 0xff, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = xcopy_parse_receive_copy_results, .flags = OPF_CONFLICT_OK,
};
static const struct scsi_opcode op_compare_and_write = {
	.opcode = 0x89, .name = "COMPARE AND WRITE", .cdb_len = 16,
	/* DPO, FUA; not WRPROTECT (no protection information) */
	.usage = { 0x89, 0x18, LBA8, 0, 0, 0, 0xff, 0x1f, 0 },
	.parse = vaai_parse_caw, .flags = OPF_MEDIUM | OPF_WRITES | OPF_VAAI,
};
static const struct scsi_opcode op_write_same16 = {
	.opcode = 0x93, .name = "WRITE SAME(16)", .cdb_len = 16,
	/* UNMAP, NDOB; not ANCHOR, not WRPROTECT */
	.usage = { 0x93, 0x09, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = vaai_parse_write_same, .flags = OPF_MEDIUM | OPF_WRITES | OPF_VAAI,
};
static const struct scsi_opcode op_get_lba_status = {
	.opcode = 0x9e, .service_action = 0x12, .has_sa = true,
	.name = "GET LBA STATUS", .cdb_len = 16,
	.usage = { 0x9e, 0x12, LBA8, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = vaai_parse_get_lba_status, .flags = OPF_MEDIUM,
};

static const struct scsi_opcode op_read16 = {
	.opcode = 0x88, .name = "READ(16)", .cdb_len = 16,
	.usage = { 0x88, 0x18, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_rw, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_write16 = {
	.opcode = 0x8a, .name = "WRITE(16)", .cdb_len = 16,
	.usage = { 0x8a, 0x18, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_rw, .flags = OPF_MEDIUM | OPF_WRITES | OPF_SHRINK,
};
static const struct scsi_opcode op_write_atomic16 = {
	.opcode = 0x9c, .name = "WRITE ATOMIC(16)", .cdb_len = 16,
	.usage = { 0x9c, 0x18, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_write_atomic16, .flags = OPF_MEDIUM | OPF_WRITES | OPF_ATOMIC,
};
static const struct scsi_opcode op_orwrite16 = {
	.opcode = 0x8b, .name = "ORWRITE(16)", .cdb_len = 16,
	.usage = { 0x8b, 0x18, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_orwrite, .flags = OPF_MEDIUM | OPF_WRITES,
};
static const struct scsi_opcode op_write_verify16 = {
	.opcode = 0x8e, .name = "WRITE AND VERIFY(16)", .cdb_len = 16,
	.usage = { 0x8e, 0x16, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_write_verify, .flags = OPF_MEDIUM | OPF_WRITES | OPF_SHRINK,
};
static const struct scsi_opcode op_verify16 = {
	.opcode = 0x8f, .name = "VERIFY(16)", .cdb_len = 16,
	.usage = { 0x8f, 0x16, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_verify, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_prefetch16 = {
	.opcode = 0x90, .name = "PRE-FETCH(16)", .cdb_len = 16,
	.usage = { 0x90, 0x02, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_prefetch, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_sync_cache16 = {
	.opcode = 0x91, .name = "SYNCHRONIZE CACHE(16)", .cdb_len = 16,
	.usage = { 0x91, 0x06, LBA8, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_sync_cache, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_read_capacity16 = {
	.opcode = 0x9e, .service_action = 0x10, .has_sa = true,
	.name = "READ CAPACITY(16)", .cdb_len = 16,
	.usage = { 0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = sbc_parse_read_capacity16, .flags = OPF_MEDIUM | OPF_CONFLICT_OK,
};
static const struct scsi_opcode op_read12 = {
	.opcode = 0xa8, .name = "READ(12)", .cdb_len = 12,
	.usage = { 0xa8, 0x18, LBA4, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_rw, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_write12 = {
	.opcode = 0xaa, .name = "WRITE(12)", .cdb_len = 12,
	.usage = { 0xaa, 0x18, LBA4, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_rw, .flags = OPF_MEDIUM | OPF_WRITES | OPF_SHRINK,
};
static const struct scsi_opcode op_write_verify12 = {
	.opcode = 0xae, .name = "WRITE AND VERIFY(12)", .cdb_len = 12,
	.usage = { 0xae, 0x16, LBA4, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_write_verify, .flags = OPF_MEDIUM | OPF_WRITES | OPF_SHRINK,
};
static const struct scsi_opcode op_verify12 = {
	.opcode = 0xaf, .name = "VERIFY(12)", .cdb_len = 12,
	.usage = { 0xaf, 0x16, LBA4, 0xff, 0xff, 0xff, 0xff, 0x1f, 0 },
	.parse = sbc_parse_verify, .flags = OPF_MEDIUM,
};
static const struct scsi_opcode op_read_defect12 = {
	.opcode = 0xb7, .name = "READ DEFECT DATA(12)", .cdb_len = 12,
	.usage = { 0xb7, 0x1f, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = sbc_parse_read_defect, .flags = OPF_MEDIUM,
};

/* --- reservations (scsi/pr.c) and target port groups (scsi/alua.c) --- */
static const struct scsi_opcode op_reserve6 = {
	.opcode = 0x16, .name = "RESERVE(6)", .cdb_len = 6,
	.usage = { 0x16, 0, 0, 0, 0, 0 },
	.parse = pr_parse_reserve,
};
static const struct scsi_opcode op_release6 = {
	.opcode = 0x17, .name = "RELEASE(6)", .cdb_len = 6,
	.usage = { 0x17, 0, 0, 0, 0, 0 },
	.parse = pr_parse_release,
};
static const struct scsi_opcode op_reserve10 = {
	.opcode = 0x56, .name = "RESERVE(10)", .cdb_len = 10,
	.usage = { 0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	.parse = pr_parse_reserve,
};
static const struct scsi_opcode op_release10 = {
	.opcode = 0x57, .name = "RELEASE(10)", .cdb_len = 10,
	.usage = { 0x57, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	.parse = pr_parse_release,
};
#define OP_PRIN(var, sa, nm) \
	static const struct scsi_opcode var = { \
		.opcode = 0x5e, .service_action = sa, .has_sa = true, \
		.name = "PERSISTENT RESERVE IN " nm, .cdb_len = 10, \
		.usage = { 0x5e, sa, 0, 0, 0, 0, 0, 0xff, 0xff, 0 }, \
		.parse = pr_parse_in, \
	}
OP_PRIN(op_prin_read_keys, 0x00, "READ KEYS");
OP_PRIN(op_prin_read_resv, 0x01, "READ RESERVATION");
OP_PRIN(op_prin_report_caps, 0x02, "REPORT CAPABILITIES");
OP_PRIN(op_prin_full_status, 0x03, "READ FULL STATUS");
#define OP_PROUT(var, sa, nm) \
	static const struct scsi_opcode var = { \
		.opcode = 0x5f, .service_action = sa, .has_sa = true, \
		.name = "PERSISTENT RESERVE OUT " nm, .cdb_len = 10, \
		.usage = { 0x5f, sa, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0 }, \
		.parse = pr_parse_out, \
	}
OP_PROUT(op_prout_register, 0x00, "REGISTER");
OP_PROUT(op_prout_reserve, 0x01, "RESERVE");
OP_PROUT(op_prout_release, 0x02, "RELEASE");
OP_PROUT(op_prout_clear, 0x03, "CLEAR");
OP_PROUT(op_prout_preempt, 0x04, "PREEMPT");
OP_PROUT(op_prout_preempt_abort, 0x05, "PREEMPT AND ABORT");
OP_PROUT(op_prout_register_ignore, 0x06, "REGISTER AND IGNORE EXISTING KEY");
OP_PROUT(op_prout_register_move, 0x07, "REGISTER AND MOVE");
static const struct scsi_opcode op_rtpg = {
	.opcode = 0xa3, .service_action = 0x0a, .has_sa = true,
	.name = "REPORT TARGET PORT GROUPS", .cdb_len = 12,
	.usage = { 0xa3, 0xea, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = alua_parse_rtpg, .flags = OPF_CONFLICT_OK,
};
static const struct scsi_opcode op_stpg = {
	.opcode = 0xa4, .service_action = 0x0a, .has_sa = true,
	.name = "SET TARGET PORT GROUPS", .cdb_len = 12,
	.usage = { 0xa4, 0x0a, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	.parse = alua_parse_stpg,
};

/* Every entry, by opcode then service action (REPORT SUPPORTED OPERATION
 * CODES lists them in this order). */
const struct scsi_opcode *const scsi_opcodes[] = {
	&op_tur, &op_request_sense, &op_read6, &op_write6, &op_inquiry,
	&op_mode_select6, &op_reserve6, &op_release6, &op_mode_sense6, &op_start_stop, &op_prevent_allow,
	&op_read_capacity10, &op_read10, &op_write10, &op_write_verify10,
	&op_verify10, &op_prefetch10, &op_sync_cache10, &op_read_defect10,
	&op_write_same10, &op_unmap,
	&op_sanitize_overwrite, &op_sanitize_exit, &op_log_sense,
	&op_mode_select10, &op_reserve10, &op_release10, &op_mode_sense10,
	&op_prin_read_keys, &op_prin_read_resv, &op_prin_report_caps, &op_prin_full_status,
	&op_prout_register, &op_prout_reserve, &op_prout_release, &op_prout_clear,
	&op_prout_preempt, &op_prout_preempt_abort, &op_prout_register_ignore,
	&op_prout_register_move,
	&op_extended_copy, &op_rcr_status, &op_rcr_op_params, &op_rcr_failed,
	&op_read16, &op_compare_and_write, &op_write16, &op_orwrite16,
	&op_write_verify16, &op_verify16,
	&op_prefetch16, &op_sync_cache16, &op_write_same16, &op_write_atomic16,
	&op_read_capacity16,
	&op_get_lba_status,
	&op_report_luns, &op_rtpg, &op_rsoc, &op_rstmf, &op_stpg,
	&op_read12, &op_write12, &op_write_verify12, &op_verify12,
	&op_read_defect12,
};
const unsigned scsi_opcodes_count = ARRAY_SIZE(scsi_opcodes);

/* Service-action tables, indexed by CDB byte 1 bits 4..0. */
static const struct scsi_opcode *const sa_sanitize[32] = {
	[0x01] = &op_sanitize_overwrite,
	[0x1f] = &op_sanitize_exit,
};
static const struct scsi_opcode *const sa_service_action_in16[32] = {
	[0x10] = &op_read_capacity16,
	[0x12] = &op_get_lba_status,
};
static const struct scsi_opcode *const sa_extended_copy[32] = {
	[0x00] = &op_extended_copy,
};
static const struct scsi_opcode *const sa_receive_copy[32] = {
	[0x00] = &op_rcr_status,
	[0x03] = &op_rcr_op_params,
	[0x04] = &op_rcr_failed,
};
static const struct scsi_opcode *const sa_maintenance_in[32] = {
	[0x0a] = &op_rtpg,
	[0x0c] = &op_rsoc,
	[0x0d] = &op_rstmf,
};

static const struct scsi_opcode *const sa_maintenance_out[32] = {
	[0x0a] = &op_stpg,
};
static const struct scsi_opcode *const sa_prin[32] = {
	[0x00] = &op_prin_read_keys, [0x01] = &op_prin_read_resv,
	[0x02] = &op_prin_report_caps, [0x03] = &op_prin_full_status,
};
static const struct scsi_opcode *const sa_prout[32] = {
	[0x00] = &op_prout_register, [0x01] = &op_prout_reserve,
	[0x02] = &op_prout_release, [0x03] = &op_prout_clear,
	[0x04] = &op_prout_preempt, [0x05] = &op_prout_preempt_abort,
	[0x06] = &op_prout_register_ignore, [0x07] = &op_prout_register_move,
};

static const struct scsi_opcode *const *const sa_index[256] = {
	[0x5e] = sa_prin,
	[0x5f] = sa_prout,
	[0xa4] = sa_maintenance_out,
	[0x48] = sa_sanitize,
	[0x83] = sa_extended_copy,
	[0x84] = sa_receive_copy,
	[0x9e] = sa_service_action_in16,
	[0xa3] = sa_maintenance_in,
};

static const struct scsi_opcode *const op_index[256] = {
	[0x00] = &op_tur, [0x03] = &op_request_sense, [0x08] = &op_read6,
	[0x0a] = &op_write6, [0x12] = &op_inquiry, [0x15] = &op_mode_select6,
	[0x16] = &op_reserve6, [0x17] = &op_release6, [0x56] = &op_reserve10,
	[0x57] = &op_release10,
	[0x1a] = &op_mode_sense6, [0x1b] = &op_start_stop,
	[0x1e] = &op_prevent_allow, [0x25] = &op_read_capacity10,
	[0x28] = &op_read10, [0x2a] = &op_write10, [0x2e] = &op_write_verify10,
	[0x2f] = &op_verify10, [0x34] = &op_prefetch10, [0x35] = &op_sync_cache10,
	[0x37] = &op_read_defect10, [0x41] = &op_write_same10, [0x42] = &op_unmap,
	[0x4d] = &op_log_sense, [0x55] = &op_mode_select10,
	[0x5a] = &op_mode_sense10, [0x88] = &op_read16, [0x8a] = &op_write16,
	[0x89] = &op_compare_and_write, [0x8b] = &op_orwrite16, [0x8e] = &op_write_verify16, [0x8f] = &op_verify16,
	[0x90] = &op_prefetch16, [0x91] = &op_sync_cache16, [0x93] = &op_write_same16,
	[0x9c] = &op_write_atomic16,
	[0xa0] = &op_report_luns, [0xa8] = &op_read12, [0xaa] = &op_write12,
	[0xae] = &op_write_verify12, [0xaf] = &op_verify12,
	[0xb7] = &op_read_defect12,
};

const struct scsi_opcode *scsi_opcode_find(const uint8_t *cdb, bool *bad_sa)
{
	const struct scsi_opcode *const *sa = sa_index[cdb[0]];

	*bad_sa = false;
	if (sa) {
		const struct scsi_opcode *op = sa[cdb[1] & 0x1f];

		if (!op)
			*bad_sa = true;
		return op;
	}
	return op_index[cdb[0]];
}

const struct scsi_opcode *scsi_opcode_lookup(const uint8_t *cdb)
{
	bool bad_sa;

	return scsi_opcode_find(cdb, &bad_sa);
}

const struct scsi_opcode *scsi_opcode_get(uint8_t opcode, uint16_t sa, bool *has_sa)
{
	const struct scsi_opcode *const *sat = sa_index[opcode];

	*has_sa = sat != NULL;
	if (sat)
		return sa < 32 ? sat[sa] : NULL;
	return op_index[opcode];
}

bool scsi_op_available(const struct scsi_opcode *op, const struct scsi_lun *lun)
{
	if (!op)
		return false;
	if ((op->flags & OPF_REMOVABLE) && (!lun || !lun->removable))
		return false;
	if ((op->flags & OPF_SANITIZE) && (!lun || !lun->sanitize_ok))
		return false;
	if ((op->flags & OPF_THIN) && (!lun || !vaai_lbp(lun)))
		return false;
	if ((op->flags & OPF_ATOMIC) && (!lun || !scsi_lun_atomic(lun)))
		return false;
	return true;
}
