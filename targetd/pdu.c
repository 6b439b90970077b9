/* PDU helpers: LUN encoding (SAM-5 4.7), basic header checks (RFC 7143 11). */
#include "config.h"
#include "targetd/iscsi_pdu.h"

/* SAM-5 4.7: single level LUNs, peripheral (00b) or flat (01b) addressing. */
uint64_t iscsi_lun_decode(const uint8_t *lun)
{
	for (int i = 2; i < 8; i++)
		if (lun[i])
			return UINT64_MAX;
	switch (lun[0] >> 6) {
	case 0:
		if (lun[0] & 0x3f)
			return UINT64_MAX;   /* bus identifier must be 0 */
		return lun[1];
	case 1:
		return (uint64_t)(lun[0] & 0x3f) << 8 | lun[1];
	default:
		return UINT64_MAX;
	}
}

void iscsi_lun_encode(uint8_t *out, uint64_t lun)
{
	memset(out, 0, 8);
	if (lun < 256) {
		out[1] = (uint8_t)lun;
	} else {
		out[0] = 0x40 | (uint8_t)((lun >> 8) & 0x3f);
		out[1] = (uint8_t)lun;
	}
}

const char *iscsi_opcode_name(uint8_t op)
{
	switch (op) {
	case ISCSI_OP_NOP_OUT: return "NOP-Out";
	case ISCSI_OP_SCSI_CMD: return "SCSI Command";
	case ISCSI_OP_TMF_REQ: return "Task Management Request";
	case ISCSI_OP_LOGIN_REQ: return "Login Request";
	case ISCSI_OP_TEXT_REQ: return "Text Request";
	case ISCSI_OP_DATA_OUT: return "SCSI Data-Out";
	case ISCSI_OP_LOGOUT_REQ: return "Logout Request";
	case ISCSI_OP_SNACK_REQ: return "SNACK Request";
	default: return "unknown";
	}
}

/* Returns 0 if the BHS may be processed in this phase, else a Reject
 * reason. Before full feature phase only Login requests are allowed
 * (RFC 7143 6.3: anything else is a protocol error). */
int iscsi_bhs_check(const uint8_t *bhs, int full_feature)
{
	uint8_t op = bhs_opcode(bhs);

	if (!full_feature)
		return op == ISCSI_OP_LOGIN_REQ ? 0 : ISCSI_REJECT_PROTOCOL_ERROR;
	switch (op) {
	case ISCSI_OP_NOP_OUT:
	case ISCSI_OP_SCSI_CMD:
	case ISCSI_OP_TMF_REQ:
	case ISCSI_OP_TEXT_REQ:
	case ISCSI_OP_DATA_OUT:
	case ISCSI_OP_LOGOUT_REQ:
		return 0;
	case ISCSI_OP_SNACK_REQ:
		return ISCSI_REJECT_CMD_NOT_SUPPORTED; /* ErrorRecoveryLevel 0 */
	case ISCSI_OP_LOGIN_REQ:
		return ISCSI_REJECT_PROTOCOL_ERROR;
	default:
		return ISCSI_REJECT_CMD_NOT_SUPPORTED;
	}
}
