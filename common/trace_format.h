/*
 * The command trace file (targetctl trace, vaai-lab replay): format
 * version 1. Documented for other programs in targetctl(8), TRACE FILES.
 *
 * Every integer is little-endian; every record starts on an 8-byte
 * boundary and its length (a multiple of 8) includes its header, so a
 * reader skips a record type it does not know. Times are CLOCK_MONOTONIC
 * nanoseconds since the trace started (start_mono_ns in the header).
 *
 *   file    = header, record*
 *   header  = 64 bytes, struct trace_file_header
 *   record  = struct trace_rec_hdr, body, padding to 8 bytes
 *
 * Records:
 *   NEXUS    (1) once per I_T nexus, before its first command: its id in
 *                this file, the initiator port name (name,i,0x<ISID>), the
 *                target name, the portal group tag
 *   COMMAND  (2) one per command, written when its status was sent (or
 *                the command ended without one): arrival time, nexus, LUN,
 *                CmdSN, ITT, the CDB, the expected and actual transfer
 *                length, status, sense, latency, optionally CRC32C of the
 *                data moved
 *   DROPPED  (3) commands that were not recorded since the previous marker
 *                (the writer fell behind, the ring was full)
 *   END      (4) the last record of a trace that was stopped cleanly:
 *                totals
 *   PAD      (0) nothing (may appear anywhere; readers skip it)
 * Records of one nexus are in completion order; sort by arrival_ns
 * (stable) for arrival order. Commands of different nexuses interleave.
 */
#ifndef COMMON_TRACE_FORMAT_H
#define COMMON_TRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_MAGIC "TGTDTRCE"       /* 8 bytes, no NUL */
#define TRACE_VERSION 1
#define TRACE_HEADER_LEN 64

/* trace_file_header.flags */
#define TRACE_F_DATA_CRC 0x1u        /* COMMAND records carry data_crc */

struct trace_file_header {
	char magic[8];
	uint16_t version;
	uint16_t header_len;             /* TRACE_HEADER_LEN */
	uint32_t flags;
	uint64_t start_real_ns;          /* CLOCK_REALTIME at the start */
	uint64_t start_mono_ns;          /* CLOCK_MONOTONIC at the start */
	uint64_t max_bytes;              /* the file stops growing here */
	uint16_t lun;                    /* LUN traced, or 0xffff: every LUN */
	uint16_t reserved0;
	uint32_t reserved1;
	uint64_t reserved2[2];
};

enum trace_rec_type {
	TRACE_REC_PAD = 0,
	TRACE_REC_NEXUS = 1,
	TRACE_REC_COMMAND = 2,
	TRACE_REC_DROPPED = 3,
	TRACE_REC_END = 4,
};

struct trace_rec_hdr {
	uint16_t type;
	uint16_t len;                    /* bytes of the record, header included */
};

struct trace_rec_nexus {
	struct trace_rec_hdr h;
	uint16_t tpgt;
	uint16_t initiator_len;          /* bytes after the fixed part */
	uint64_t nexus;                  /* the id COMMAND records use */
	uint8_t isid[6];
	uint16_t target_len;             /* bytes after the initiator port name */
	/* initiator port name, then target name; no NULs */
};

/* trace_rec_command.flags */
#define TRACE_C_SENT 0x01            /* the status was sent (else: aborted, lost) */
#define TRACE_C_CRC 0x02             /* data_crc is valid */
#define TRACE_C_READ 0x04            /* data-in command (EDTL from the R bit) */
#define TRACE_C_WRITE 0x08           /* data-out command (W bit) */
#define TRACE_C_IMMEDIATE 0x10       /* sent as an immediate command */

struct trace_rec_command {
	struct trace_rec_hdr h;
	uint8_t cdb_len;                 /* 6..32 */
	uint8_t sense_len;               /* 0..96 */
	uint8_t status;                  /* SAM status */
	uint8_t flags;                   /* TRACE_C_* */
	uint64_t arrival_ns;
	uint64_t nexus;
	uint64_t lun;
	uint32_t cmdsn;
	uint32_t itt;
	uint32_t exp_xfer_len;           /* iSCSI Expected Data Transfer Length */
	uint32_t data_len;               /* data-in bytes sent or data-out bytes received */
	uint64_t latency_ns;             /* PDU received to status sent */
	uint32_t data_crc;               /* CRC32C of the data moved (TRACE_C_CRC) */
	uint8_t task_attr;
	uint8_t reserved[3];
	/* cdb[cdb_len], then sense[sense_len] */
};

struct trace_rec_dropped {
	struct trace_rec_hdr h;
	uint32_t reserved;
	uint64_t count;
	uint64_t at_ns;
};

struct trace_rec_end {
	struct trace_rec_hdr h;
	uint32_t reserved;
	uint64_t commands;               /* COMMAND records written */
	uint64_t dropped;                /* commands not recorded */
	uint64_t bytes;                  /* file length, this record included */
	uint64_t at_ns;
};

_Static_assert(sizeof(struct trace_file_header) == TRACE_HEADER_LEN, "header is 64 bytes");
_Static_assert(sizeof(struct trace_rec_nexus) == 24, "nexus fixed part");
_Static_assert(sizeof(struct trace_rec_command) == 64, "command fixed part");
_Static_assert(sizeof(struct trace_rec_dropped) == 24, "dropped");
_Static_assert(sizeof(struct trace_rec_end) == 40, "end");

#define TRACE_REC_MAX 1024           /* no record is longer */
#define TRACE_ALIGN(n) (((n) + 7u) & ~7u)

/*
 * Reading (common/trace_read.c): the whole file in memory, checked. A
 * reader that meets a record it cannot trust stops there and says so;
 * every string and length is bounded by the record it is in.
 */
struct trace_nexus_info {
	uint64_t id;
	uint16_t tpgt;
	uint8_t isid[6];
	char initiator[256];             /* initiator port name */
	char target[256];
};

struct trace_cmd_info {
	uint64_t arrival_ns;
	uint64_t nexus;
	uint64_t lun;
	uint32_t cmdsn, itt;
	uint32_t exp_xfer_len, data_len;
	uint64_t latency_ns;
	uint32_t data_crc;
	uint8_t status, flags, task_attr;
	uint8_t cdb_len, sense_len;
	uint8_t cdb[32];
	uint8_t sense[96];
};

struct trace_file {
	struct trace_file_header hdr;
	struct trace_nexus_info *nexus;
	unsigned n_nexus;
	struct trace_cmd_info *cmds;     /* in file order */
	size_t n_cmds;
	uint64_t dropped;                /* DROPPED records summed */
	bool ended;                      /* an END record was seen */
	uint64_t end_commands, end_dropped;
	char error[256];                 /* why reading stopped early, "" if it did not */
};

/* 0, or -1 with a message in err (cannot open, not a trace, a newer
 * version). A damaged tail is not an error: t->error says where. */
int trace_file_read(const char *path, struct trace_file *t, char *err, size_t errlen);
void trace_file_free(struct trace_file *t);
const struct trace_nexus_info *trace_file_nexus(const struct trace_file *t, uint64_t id);

#endif
