/* iSCSI PDU layout (RFC 7143 section 11): opcodes, flags and field offsets
 * of the 48-byte Basic Header Segment. */
#ifndef TARGETD_ISCSI_PDU_H
#define TARGETD_ISCSI_PDU_H

#include <stdint.h>
#include "common/util.h"

/* Serial number arithmetic (RFC 1982, 32 bits) for CmdSN/StatSN/DataSN. */
static inline int sn_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static inline int sn_le(uint32_t a, uint32_t b) { return (int32_t)(a - b) <= 0; }

#define ISCSI_BHS_LEN 48
#define ISCSI_DIGEST_LEN 4
#define ISCSI_RSVD_TAG 0xffffffffu

/* Initiator opcodes */
#define ISCSI_OP_NOP_OUT      0x00
#define ISCSI_OP_SCSI_CMD     0x01
#define ISCSI_OP_TMF_REQ      0x02
#define ISCSI_OP_LOGIN_REQ    0x03
#define ISCSI_OP_TEXT_REQ     0x04
#define ISCSI_OP_DATA_OUT     0x05
#define ISCSI_OP_LOGOUT_REQ   0x06
#define ISCSI_OP_SNACK_REQ    0x10
/* Target opcodes */
#define ISCSI_OP_NOP_IN       0x20
#define ISCSI_OP_SCSI_RSP     0x21
#define ISCSI_OP_TMF_RSP      0x22
#define ISCSI_OP_LOGIN_RSP    0x23
#define ISCSI_OP_TEXT_RSP     0x24
#define ISCSI_OP_DATA_IN      0x25
#define ISCSI_OP_LOGOUT_RSP   0x26
#define ISCSI_OP_R2T          0x31
#define ISCSI_OP_ASYNC_MSG    0x32
#define ISCSI_OP_REJECT       0x3f

#define ISCSI_OPCODE_MASK     0x3f
#define ISCSI_FLAG_IMMEDIATE  0x40   /* byte 0 */
#define ISCSI_FLAG_FINAL      0x80   /* byte 1 */

/* SCSI Command byte 1 */
#define ISCSI_CMD_READ        0x40
#define ISCSI_CMD_WRITE       0x20
#define ISCSI_CMD_ATTR_MASK   0x07
/* SCSI Response / Data-In byte 1 */
#define ISCSI_FLAG_BIDI_OVERFLOW  0x10
#define ISCSI_FLAG_BIDI_UNDERFLOW 0x08
#define ISCSI_FLAG_OVERFLOW   0x04
#define ISCSI_FLAG_UNDERFLOW  0x02
#define ISCSI_DATAIN_ACK      0x40
#define ISCSI_DATAIN_STATUS   0x01
/* Login byte 1 */
#define ISCSI_LOGIN_TRANSIT   0x80
#define ISCSI_LOGIN_CONTINUE  0x40
#define ISCSI_LOGIN_CSG(b)    (((b) >> 2) & 3)
#define ISCSI_LOGIN_NSG(b)    ((b) & 3)
#define ISCSI_STAGE_SECURITY  0
#define ISCSI_STAGE_OPERATIONAL 1
#define ISCSI_STAGE_FULL_FEATURE 3
/* Text byte 1 */
#define ISCSI_TEXT_CONTINUE   0x40

/* Login status (class << 8 | detail) */
#define ISCSI_LOGIN_OK                 0x0000
#define ISCSI_LOGIN_INITIATOR_ERROR    0x0200
#define ISCSI_LOGIN_AUTH_FAILED        0x0201
#define ISCSI_LOGIN_AUTHZ_FAILED       0x0202
#define ISCSI_LOGIN_NOT_FOUND          0x0203
#define ISCSI_LOGIN_TARGET_REMOVED     0x0204
#define ISCSI_LOGIN_UNSUPPORTED_VER    0x0205
#define ISCSI_LOGIN_TOO_MANY_CONNS     0x0206
#define ISCSI_LOGIN_MISSING_PARAM      0x0207
#define ISCSI_LOGIN_CANT_INCLUDE       0x0208
#define ISCSI_LOGIN_SESSION_TYPE       0x0209
#define ISCSI_LOGIN_NO_SESSION         0x020a
#define ISCSI_LOGIN_INVALID_REQUEST    0x020b
#define ISCSI_LOGIN_TARGET_ERROR       0x0300
#define ISCSI_LOGIN_SERVICE_UNAVAIL    0x0301
#define ISCSI_LOGIN_OUT_OF_RESOURCES   0x0302

/* Task management functions and responses */
#define ISCSI_TMF_ABORT_TASK          1
#define ISCSI_TMF_ABORT_TASK_SET      2
#define ISCSI_TMF_CLEAR_ACA           3
#define ISCSI_TMF_CLEAR_TASK_SET      4
#define ISCSI_TMF_LUN_RESET           5
#define ISCSI_TMF_TARGET_WARM_RESET   6
#define ISCSI_TMF_TARGET_COLD_RESET   7
#define ISCSI_TMF_TASK_REASSIGN       8
#define ISCSI_TMF_RSP_COMPLETE        0
#define ISCSI_TMF_RSP_NO_TASK         1
#define ISCSI_TMF_RSP_NO_LUN          2
#define ISCSI_TMF_RSP_ALLEGIANT       3
#define ISCSI_TMF_RSP_NO_REASSIGN     4
#define ISCSI_TMF_RSP_NOT_SUPPORTED   5
#define ISCSI_TMF_RSP_AUTH_FAILED     6
#define ISCSI_TMF_RSP_REJECTED        255

/* Reject reasons */
#define ISCSI_REJECT_DATA_DIGEST      0x02
#define ISCSI_REJECT_SNACK            0x03
#define ISCSI_REJECT_PROTOCOL_ERROR   0x04
#define ISCSI_REJECT_CMD_NOT_SUPPORTED 0x05
#define ISCSI_REJECT_IMM_CMD          0x06
#define ISCSI_REJECT_TASK_IN_PROGRESS 0x07
#define ISCSI_REJECT_INVALID_DATA_ACK 0x08
#define ISCSI_REJECT_INVALID_FIELD    0x09
#define ISCSI_REJECT_LONG_OP          0x0a
#define ISCSI_REJECT_WAITING_LOGOUT   0x0c

/* Logout */
#define ISCSI_LOGOUT_CLOSE_SESSION    0
#define ISCSI_LOGOUT_CLOSE_CONN       1
#define ISCSI_LOGOUT_RECOVERY         2

/* Accessors on a BHS. */
static inline uint8_t bhs_opcode(const uint8_t *b) { return b[0] & ISCSI_OPCODE_MASK; }
static inline int bhs_immediate(const uint8_t *b) { return !!(b[0] & ISCSI_FLAG_IMMEDIATE); }
static inline uint32_t bhs_ahs_len(const uint8_t *b) { return (uint32_t)b[4] * 4; }
static inline uint32_t bhs_dlen(const uint8_t *b) { return get_be24(b + 5); }
static inline uint32_t bhs_itt(const uint8_t *b) { return get_be32(b + 16); }
static inline void bhs_set_dlen(uint8_t *b, uint32_t len) { put_be24(b + 5, len); }

/* Decode an 8-byte SAM LUN (peripheral or flat addressing) into an index;
 * returns UINT64_MAX for formats we do not serve. */
uint64_t iscsi_lun_decode(const uint8_t *lun);
void iscsi_lun_encode(uint8_t *out, uint64_t lun);
/* Validate a received BHS for a phase: 0 ok, else a Reject reason. */
int iscsi_bhs_check(const uint8_t *bhs, int full_feature);
const char *iscsi_opcode_name(uint8_t op);

#endif
