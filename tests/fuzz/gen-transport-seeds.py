#!/usr/bin/env python3
"""Write the seed corpora of the transport harnesses.

    tests/fuzz/gen-transport-seeds.py [CORPUS_ROOT]   (default: tests/fuzz/corpus)

writes CORPUS_ROOT/ffp/seed-*.bin (fuzz_ffp programs: one initiator's
sessions told as operations, see fuzz_ffp.c) and CORPUS_ROOT/pdu/seed-*.bin
(fuzz_pdu byte streams, see fuzz_pdu.c), one file per real PDU sequence:
reads, writes with immediate, unsolicited and solicited data, task
management while an R2T waits in the transmit ring, timeouts, text,
logout, NOP, rejects, digests; and CORPUS_ROOT/ffp/regress-*.bin, the
inputs of bugs the harness found. Other files (regression inputs found by
libFuzzer and committed as they are) are left alone. Deterministic: running
it again writes the same bytes.
"""
import os
import struct
import sys

# ---- PDUs (RFC 7143 section 11) -----------------------------------------

OP_NOP_OUT, OP_SCSI_CMD, OP_TMF, OP_LOGIN, OP_TEXT, OP_DATA_OUT, OP_LOGOUT = 0, 1, 2, 3, 4, 5, 6
OP_SNACK = 0x10
IMM = 0x40
F = 0x80
R, W = 0x40, 0x20
RSVD = 0xFFFFFFFF


def bhs(op, b1=0, imm=False, lun=0, itt=0, f20=0, cmdsn=0, expstatsn=0, f32=0, f36=0, f40=0, f44=0,
        dlen=0, ahs_words=0, cdb=b"", b2=0, b3=0, isid_tsih=None):
    b = bytearray(48)
    b[0] = op | (IMM if imm else 0)
    b[1] = b1
    b[2] = b2
    b[3] = b3
    b[4] = ahs_words
    b[5:8] = dlen.to_bytes(3, "big")
    if isid_tsih is not None:
        b[8:16] = isid_tsih
    else:
        b[8:16] = struct.pack(">BB6x", 0, lun)
    struct.pack_into(">IIII", b, 16, itt, f20, cmdsn, expstatsn)
    if cdb:
        b[32:32 + len(cdb)] = cdb
    else:
        struct.pack_into(">IIII", b, 32, f32, f36, f40, f44)
    return bytes(b)


def cmd(itt, cdb, edtl, rw=0, final=True, dlen=0, lun=0, attr=1, cmdsn=0, imm=False):
    return bhs(OP_SCSI_CMD, (F if final else 0) | rw | attr, imm=imm, lun=lun, itt=itt, f20=edtl,
               cmdsn=cmdsn, dlen=dlen, cdb=cdb)


def read10(lba, n):
    return struct.pack(">BBIBHB", 0x28, 0, lba, 0, n, 0)


def write10(lba, n):
    return struct.pack(">BBIBHB", 0x2A, 0, lba, 0, n, 0)


def read16(lba, n):
    return struct.pack(">BBQIBB", 0x88, 0, lba, n, 0, 0)


def write16(lba, n):
    return struct.pack(">BBQIBB", 0x8A, 0, lba, n, 0, 0)


CDB = {
    "tur": bytes(6),
    "inquiry": bytes([0x12, 0, 0, 0, 96, 0]),
    "inquiry_vpd83": bytes([0x12, 1, 0x83, 0, 255, 0]),
    "report_luns": bytes([0xA0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0]),
    "read_capacity16": bytes([0x9E, 0x10]) + bytes(8) + struct.pack(">I", 32) + bytes(2),
    "mode_sense6": bytes([0x1A, 0, 0x3F, 0, 255, 0]),
    "request_sense": bytes([0x03, 0, 0, 0, 18, 0]),
    "sync_cache10": bytes([0x35]) + bytes(9),
}


def tmf(func, itt, ref_itt=RSVD, lun=0, refcmdsn=0, cmdsn=0):
    return bhs(OP_TMF, F | func, imm=True, lun=lun, itt=itt, f20=ref_itt, cmdsn=cmdsn, f32=refcmdsn)


def nop_out(itt, dlen=0, ttt=RSVD, imm=True):
    return bhs(OP_NOP_OUT, F, imm=imm, itt=itt, f20=ttt, dlen=dlen)


def text(itt, body, ttt=RSVD):
    return bhs(OP_TEXT, F, imm=True, itt=itt, f20=ttt, dlen=len(body)), body


def logout(itt, reason, cid=0):
    return bhs(OP_LOGOUT, F | reason, imm=True, itt=itt, f20=cid << 16)


def data_out(itt, ttt, datasn, off, n, final):
    return bhs(OP_DATA_OUT, F if final else 0, itt=itt, f20=ttt, f36=datasn, f40=off, dlen=n)


# ---- fuzz_ffp programs ---------------------------------------------------

def cfg(imm_data=True, initial_r2t=False, hdigest=False, ddigest=False, mrdsl=2, burst=0,
        max_r2t=1, slow=False, no_login=False):
    b0 = (0 if imm_data else 1) | (2 if initial_r2t else 0) | (4 if hdigest else 0) | \
        (8 if ddigest else 0) | (mrdsl << 4) | (burst << 6)
    b1 = max_r2t | (4 if slow else 0) | (8 if no_login else 0)
    return bytes([b0, b1])


AUTO = 0x08 | 0x10   # CmdSN and ExpStatSN from the bench


def PDU(h, data=None, flags=AUTO):
    """op 0: a PDU; data (bytes) travels in the input with flag 0x80."""
    if data is not None:
        return bytes([0x80 | flags]) + h + data
    return bytes([flags]) + h


def DATA(which=0, flags=0):
    return bytes([0x01 | flags, which])


def UNSOL(units=0, final=False):
    return bytes([0x02 | (0x08 if final else 0), units])


def DRAIN(n=0):
    return bytes([0x03, n])


def TURN(n=0):
    return bytes([0x04, n])


def TIME(half_seconds):
    return bytes([0x05, half_seconds - 1])


def RAW(b):
    return bytes([0x06, len(b)]) + b


def SHUT():
    return bytes([0x0F])


def CLOSE():
    return bytes([0x07])


def SWITCH():
    """go on on the other connection (the first time it logs in)"""
    return bytes([0x27])


def BATCH():
    """toggle: PDUs pile up unread until the next TURN/DRAIN/TIME"""
    return bytes([0x17])


def ffp_seeds():
    s = {}
    blk = 512
    # the first command of a session gets the power-on unit attention:
    # every program starts with a TEST UNIT READY that takes it
    ua = PDU(cmd(100, CDB["tur"], 0)) + DRAIN()

    def start(**kw):
        return cfg(**kw) + ua
    s["read10"] = start() + PDU(cmd(1, read10(0, 8), 8 * blk, R)) + DRAIN()
    s["read16-small-pdus"] = start(mrdsl=0) + PDU(cmd(1, read16(8, 64), 64 * blk, R)) + DRAIN()
    s["read-overflow-underflow"] = start() + PDU(cmd(1, read10(0, 4), 1024, R)) + \
        PDU(cmd(2, read10(0, 4), 4096, R)) + PDU(cmd(3, read10(0, 4), 0, R)) + DRAIN()
    s["read-lun1"] = start() + PDU(cmd(1, read10(0, 2), 8192, R, lun=1)) + DRAIN()
    s["write-immediate"] = start() + PDU(cmd(1, write10(0, 1), blk, W, dlen=blk), b"\xa5" * blk) + DRAIN()
    s["write-unsolicited"] = start() + PDU(cmd(1, write10(0, 16), 16 * blk, W, final=False, dlen=blk)) + \
        UNSOL(4) + UNSOL(4) + UNSOL(7, final=True) + DRAIN()
    s["write-solicited"] = start(imm_data=False, initial_r2t=True) + \
        PDU(cmd(1, write10(0, 64), 64 * blk, W)) + DRAIN() + DATA(0) + DRAIN() + DATA(0) + DRAIN()
    s["write-r2t-outstanding"] = start(imm_data=False, initial_r2t=True, max_r2t=2, burst=2) + \
        PDU(cmd(1, write16(0, 64), 64 * blk, W)) + DRAIN() + DATA(1) + DATA(0) + DRAIN() + \
        DATA(1) + DATA(0) + DRAIN() + DATA(0) + DRAIN()
    s["write-overflow-truncated"] = start(imm_data=False, initial_r2t=True) + \
        PDU(cmd(1, write10(0, 8), 2048, W)) + DRAIN() + DATA(0) + DRAIN()
    s["write-underflow"] = start() + PDU(cmd(1, write10(0, 1), 4096, W, dlen=blk)) + DRAIN() + DATA(0) + DRAIN()
    # A WRITE's R2T waits in the transmit ring (a READ filled the socket of
    # an initiator that reads slowly), then the task ends some other way.
    slow = start(imm_data=False, initial_r2t=True, slow=True)
    fill = PDU(cmd(1, read10(0, 128), 128 * blk, R))
    w = PDU(cmd(2, write10(0, 16), 16 * blk, W))
    s["r2t-queued-abort-task"] = slow + fill + w + PDU(tmf(1, 3, ref_itt=2)) + TURN(3) + DRAIN() + TURN(3) + DRAIN()
    s["r2t-queued-lun-reset"] = slow + fill + w + PDU(tmf(5, 3)) + TURN(3) + DRAIN() + TURN(3) + DRAIN()
    s["r2t-queued-abort-task-set"] = slow + fill + w + PDU(tmf(2, 3)) + DRAIN() + TURN(3) + DRAIN()
    s["r2t-queued-wrong-offset"] = slow + fill + w + \
        PDU(data_out(2, 0x20000, 0, 512, 512, True), flags=0x10) + TURN(3) + DRAIN() + DRAIN()
    s["r2t-queued-all-data-early"] = slow + fill + w + \
        PDU(data_out(2, 0x20000, 0, 0, 8192, True), flags=0x10) + TURN(3) + DRAIN() + DRAIN()
    s["r2t-queued-close"] = slow + fill + w + TURN(3) + CLOSE()
    s["r2t-queued-cold-reset"] = slow + fill + w + PDU(tmf(7, 3)) + DRAIN() + DRAIN()
    # ... and the session goes on: new commands, several at once, take the
    # task slots again (a slot freed twice would be handed out twice)
    after = PDU(cmd(20, read10(0, 16), 16 * blk, R)) + PDU(cmd(21, read10(0, 16), 16 * blk, R)) + \
        PDU(cmd(22, CDB["tur"], 0)) + PDU(cmd(23, write10(0, 4), 4 * blk, W)) + DRAIN() + DATA(0) + DRAIN()
    for k in ("abort-task", "lun-reset", "wrong-offset", "all-data-early"):
        s["r2t-queued-%s-then-more" % k] = s["r2t-queued-" + k] + after
    # several PDUs read in one go: a TMF or a close finds commands still in
    # the SCSI layer (EXEC), which end when the backstore completes them
    # (a READ of a memory LUN without data digest completes at once, zero-copy)
    rd = PDU(cmd(1, read16(0, 64), 64 * blk, R)) + PDU(cmd(2, write10(0, 1), blk, W, dlen=blk))
    s["abort-in-exec"] = start() + BATCH() + rd + PDU(tmf(1, 3, ref_itt=2)) + BATCH() + TURN() + DRAIN()
    s["abort-read-in-exec-ddigest"] = start(ddigest=True) + BATCH() + rd + PDU(tmf(1, 3, ref_itt=1)) + \
        PDU(tmf(1, 4, ref_itt=2)) + BATCH() + TURN() + DRAIN()
    s["lun-reset-in-exec"] = start() + BATCH() + rd + PDU(tmf(5, 3)) + BATCH() + TURN() + DRAIN()
    s["warm-reset-in-exec"] = start() + BATCH() + rd + PDU(tmf(6, 3)) + BATCH() + TURN() + DRAIN()
    s["abort-task-set-in-exec"] = start() + BATCH() + rd + PDU(tmf(2, 3)) + PDU(tmf(4, 4)) + BATCH() + \
        TURN() + DRAIN()
    s["close-in-exec"] = start() + BATCH() + rd + TURN() + CLOSE()
    s["logout-in-exec"] = start() + BATCH() + rd + PDU(logout(3, 0)) + BATCH() + TURN() + DRAIN()
    caw = bytes([0x89, 0]) + struct.pack(">Q", 8) + bytes(3) + bytes([1, 0, 0])
    s["caw-race"] = start() + BATCH() + PDU(cmd(1, caw, 2 * blk, W, dlen=2 * blk)) + \
        PDU(cmd(2, caw, 2 * blk, W, dlen=2 * blk)) + PDU(cmd(3, write10(8, 1), blk, W, dlen=blk)) + \
        PDU(tmf(1, 4, ref_itt=2)) + BATCH() + TURN() + DRAIN()
    s["abort-not-arrived"] = start() + PDU(tmf(1, 2, ref_itt=7, refcmdsn=2, cmdsn=3), flags=0x10) + \
        PDU(cmd(1, CDB["tur"], 0, cmdsn=1), flags=0x10) + PDU(cmd(7, CDB["tur"], 0, cmdsn=2), flags=0x10) + \
        PDU(cmd(8, CDB["tur"], 0, cmdsn=3), flags=0x10) + DRAIN()
    s["tmf-all"] = start() + b"".join(PDU(tmf(f, 10 + f, ref_itt=1)) for f in range(1, 9)) + DRAIN()
    s["tmf-no-lun"] = start() + PDU(tmf(5, 2, lun=9)) + PDU(tmf(2, 3, lun=200)) + DRAIN()
    s["data-out-timeout"] = start(imm_data=False, initial_r2t=True) + PDU(cmd(1, write10(0, 8), 4096, W)) + \
        DRAIN() + TIME(12) + TIME(2) + DRAIN()
    s["nop-ping-timeout"] = start() + TIME(12) + DRAIN() + TIME(12) + TIME(2) + DRAIN()
    s["nop-echo"] = start() + PDU(nop_out(1, dlen=100), b"ping" * 25) + PDU(nop_out(2, imm=False)) + \
        PDU(nop_out(RSVD)) + DRAIN()
    h, body = text(1, b"SendTargets=All\0")
    s["text-sendtargets"] = start() + PDU(h, body) + DRAIN()
    h, body = text(1, b"SendTargets=All\0X-vendor=1\0MaxBurstLength=512\0")
    s["text-continued"] = start(mrdsl=0) + PDU(h, body) + DRAIN() + \
        PDU(bhs(OP_TEXT, F, imm=True, itt=2, f20=1)) + DRAIN()
    s["logout-session"] = start() + PDU(cmd(1, read10(0, 8), 4096, R)) + PDU(logout(2, 0)) + DRAIN()
    s["logout-connection"] = start() + PDU(logout(2, 1)) + DRAIN()
    s["logout-other-cid"] = start() + PDU(logout(2, 1, cid=5)) + PDU(logout(3, 2)) + DRAIN()
    s["rejects"] = start() + PDU(bhs(OP_SNACK, F, itt=1)) + PDU(bhs(0x1C, F, itt=2, dlen=8), bytes(8)) + \
        PDU(bhs(OP_LOGIN, 0x87, imm=True, itt=3)) + DRAIN()
    s["data-digest-error"] = start(hdigest=True, ddigest=True) + \
        bytes([0x40 | AUTO]) + cmd(1, write10(0, 1), blk, W, dlen=blk) + \
        PDU(cmd(2, write10(0, 1), blk, W, dlen=blk)) + DRAIN()
    s["digests"] = start(hdigest=True, ddigest=True, mrdsl=1) + PDU(cmd(1, read10(0, 16), 8192, R)) + \
        PDU(cmd(2, write10(0, 2), 1024, W, dlen=1024)) + PDU(nop_out(3, dlen=16), bytes(16)) + DRAIN()
    s["task-set-full"] = start() + b"".join(PDU(cmd(i, read10(i, 1), blk, R)) for i in range(1, 12)) + DRAIN()
    s["cmdsn-window"] = start() + PDU(cmd(1, CDB["tur"], 0, cmdsn=3), flags=0x10) + \
        PDU(cmd(2, CDB["tur"], 0, cmdsn=2), flags=0x10) + PDU(cmd(3, CDB["tur"], 0, cmdsn=1), flags=0x10) + \
        PDU(cmd(4, CDB["tur"], 0, cmdsn=100), flags=0x10) + PDU(cmd(5, CDB["tur"], 0, cmdsn=0), flags=0x10) + \
        DRAIN()
    s["spc-commands"] = start() + b"".join(
        PDU(cmd(i + 1, CDB[k], 255, R)) for i, k in enumerate(sorted(CDB))) + DRAIN()
    s["bidi"] = start() + PDU(cmd(1, write10(0, 1), blk, R | W, dlen=blk)) + DRAIN()
    caw = bytes([0x89, 0]) + struct.pack(">Q", 0) + bytes(3) + bytes([1, 0, 0])
    s["compare-and-write"] = start() + PDU(cmd(1, caw, 2 * blk, W, dlen=2 * blk)) + DRAIN()
    ws = bytes([0x93, 0x08]) + struct.pack(">QI", 0, 64) + bytes(2)
    s["write-same-unmap"] = start() + PDU(cmd(1, ws, blk, W, dlen=blk)) + DRAIN()
    unmap_list = struct.pack(">HH4xQI4x", 22, 16, 8, 32)
    unmap = bytes([0x42]) + bytes(6) + struct.pack(">H", len(unmap_list)) + bytes(1)
    s["unmap"] = start() + PDU(cmd(1, unmap, len(unmap_list), W, dlen=len(unmap_list)), unmap_list) + DRAIN()
    prout_list = struct.pack(">QQ", 0, 0x1234) + bytes(8)
    prout = bytes([0x5F, 0x00, 0x00, 0, 0, 0]) + struct.pack(">I", len(prout_list)) + bytes(2)
    prout_res = bytes([0x5F, 0x01, 0x03, 0, 0, 0]) + struct.pack(">I", 24) + bytes(2)
    s["persistent-reserve"] = start() + \
        PDU(cmd(1, prout, len(prout_list), W, dlen=len(prout_list)), prout_list) + \
        PDU(cmd(2, prout_res, 24, W, dlen=24), struct.pack(">Q", 0x1234) + bytes(16)) + \
        PDU(cmd(3, bytes([0x5E, 0]) + bytes(5) + struct.pack(">H", 256) + bytes(1), 256, R)) + DRAIN()
    # Extended CDB in an AHS (RFC 7143 11.2.1.3): a 32-byte CDB.
    ext = cmd(1, bytes([0x7F, 0, 0, 0, 0, 0, 0, 24]) + bytes(8), 512, R)
    ext = ext[:4] + bytes([5]) + ext[5:]
    s["extended-cdb-ahs"] = start() + bytes([AUTO]) + ext + struct.pack(">HBB", 17, 1, 0) + bytes(16) + DRAIN()
    s["half-close"] = start() + PDU(cmd(1, read10(0, 64), 64 * blk, R)) + SHUT() + DRAIN() + TURN(5) + DRAIN()
    s["tasks-exhausted"] = start(slow=True) + \
        b"".join(PDU(cmd(i, read10(0, 16), 16 * blk, R, imm=True)) for i in range(1, 40)) + DRAIN()
    s["immediate-data-refused"] = start(imm_data=False) + PDU(cmd(1, write10(0, 1), blk, W, dlen=blk)) + DRAIN()
    s["unsolicited-refused"] = start(initial_r2t=True) + PDU(cmd(1, write10(0, 8), 8 * blk, W, final=False)) + \
        UNSOL(2) + DRAIN()
    s["data-out-unknown-ttt"] = start(imm_data=False, initial_r2t=True) + PDU(cmd(1, write10(0, 8), 8 * blk, W)) + \
        DRAIN() + PDU(data_out(1, 0x7770000, 0, 0, 512, True), flags=0x10) + DRAIN()
    s["data-out-too-long"] = start(imm_data=False, initial_r2t=True) + PDU(cmd(1, write10(0, 64), 64 * blk, W)) + \
        DRAIN() + PDU(data_out(1, 0x10000, 0, 0, 16384, True), flags=0x10) + DRAIN()
    s["data-out-digest-error"] = start(imm_data=False, initial_r2t=True, ddigest=True) + \
        PDU(cmd(1, write10(0, 8), 8 * blk, W)) + DRAIN() + DATA(0, 0x40) + DRAIN()
    s["data-out-datasn-wrong"] = start(imm_data=False, initial_r2t=True) + PDU(cmd(1, write10(0, 64), 64 * blk, W)) + \
        DRAIN() + DATA(0, 0x80) + DRAIN()
    s["data-out-partial-then-abort"] = start(imm_data=False, initial_r2t=True) + \
        PDU(cmd(1, write10(0, 64), 64 * blk, W)) + DRAIN() + DATA(0, 0x08) + PDU(tmf(1, 2, ref_itt=1)) + DRAIN()
    s["nop-digest-error"] = start(ddigest=True) + bytes([0x40 | AUTO]) + nop_out(1, dlen=8) + DRAIN()
    s["text-digest-error"] = start(ddigest=True) + bytes([0x40 | AUTO]) + text(1, b"SendTargets=All\0")[0] + DRAIN()
    s["logout-then-command"] = start() + PDU(logout(1, 0)) + PDU(cmd(2, CDB["tur"], 0)) + DRAIN()
    s["close-with-output-queued"] = start(slow=True) + PDU(cmd(1, read10(0, 128), 128 * blk, R)) + \
        PDU(cmd(2, write10(0, 16), 16 * blk, W)) + PDU(nop_out(3, dlen=512)) + TURN(3) + CLOSE()
    s["pending-tx-limit"] = start(slow=True) + \
        b"".join(PDU(nop_out(i, dlen=8192)) for i in range(1, 12)) + TURN(5) + DRAIN(4) + TURN(5) + DRAIN()
    # two connections in the session (MC/S)
    s["mcs-read-both"] = start() + SWITCH() + PDU(cmd(1, read10(0, 8), 8 * blk, R)) + DRAIN() + \
        SWITCH() + PDU(cmd(2, read10(8, 8), 8 * blk, R)) + DRAIN()
    s["mcs-logout-other-cid"] = start() + SWITCH() + SWITCH() + PDU(logout(1, 1, cid=1)) + DRAIN() + \
        SWITCH() + PDU(cmd(2, CDB["tur"], 0)) + DRAIN()
    s["mcs-logout-session"] = start() + SWITCH() + PDU(cmd(1, write10(0, 8), 8 * blk, W)) + \
        PDU(logout(2, 0)) + DRAIN() + SWITCH() + DRAIN()
    s["mcs-close-one-in-exec"] = start() + SWITCH() + BATCH() + rd + TURN() + SHUT() + BATCH() + \
        SWITCH() + PDU(cmd(5, CDB["tur"], 0)) + DRAIN()
    # a Data-Out half received on one connection when a TMF on the other
    # ends its task: the rest of that PDU must go nowhere near the buffer
    half = data_out(1, 0x10000, 0, 0, 8192, True) + bytes(100)
    s["mcs-abort-during-data-out"] = start(imm_data=False, initial_r2t=True) + \
        PDU(cmd(1, write10(0, 16), 16 * blk, W)) + DRAIN() + RAW(half) + TURN() + \
        SWITCH() + PDU(tmf(1, 2, ref_itt=1)) + DRAIN() + SWITCH() + \
        RAW(bytes(255)) + RAW(bytes(255)) + TURN() + PDU(cmd(3, CDB["tur"], 0)) + DRAIN()
    s["mcs-lun-reset-during-data-out"] = start(imm_data=False, initial_r2t=True) + \
        PDU(cmd(1, write10(0, 16), 16 * blk, W)) + DRAIN() + RAW(half) + TURN() + \
        SWITCH() + PDU(tmf(5, 2)) + DRAIN() + SWITCH() + RAW(bytes(255)) + DRAIN()
    s["raw-short-pdu"] = start() + RAW(bytes([0x01, 0x81]) + bytes(20)) + TURN(2) + DRAIN()
    return s


def ffp_regressions():
    """Inputs of bugs the harness found, kept so that make check replays them."""
    s = {}
    # A NOP-Out the target accepts (8192 >= 4096 bytes) echoed whole to an
    # initiator whose MaxRecvDataSegmentLength is 512.
    s["nop-echo-over-mrdsl"] = cfg(mrdsl=0) + PDU(nop_out(1, dlen=4096)) + DRAIN()
    return s


# ---- fuzz_pdu streams ------------------------------------------------------

def login_request(params, isid=b"\x80\x00\x00\x00\x00\x02", itt=0x20000, csg=1, nsg=3, transit=True):
    body = b"".join(k.encode() + b"=" + v.encode() + b"\0" for k, v in params)
    b1 = (F if transit else 0) | (csg << 2) | (nsg if transit else 0)
    return bhs(OP_LOGIN, b1, imm=True, itt=itt, dlen=len(body), isid_tsih=isid + b"\0\0", cmdsn=1) + \
        pad(body)


def pad(b):
    return b + bytes(-len(b) % 4)


def pdu(h, data=b""):
    return h + pad(data)


NORMAL = [("InitiatorName", "iqn.2025-01.org.targetd.fuzz:raw"),
          ("TargetName", "iqn.2025-01.org.targetd.fuzz:target"), ("SessionType", "Normal"),
          ("HeaderDigest", "None"), ("DataDigest", "None"), ("MaxRecvDataSegmentLength", "8192"),
          ("ImmediateData", "Yes"), ("InitialR2T", "No")]


def pdu_seeds():
    s = {}
    blk = 512
    # the bench logs in: the stream is full feature phase, and its first
    # command (CmdSN 1) takes the power-on unit attention
    ua = pdu(cmd(99, CDB["tur"], 0, cmdsn=1))
    base = cfg() + b"\x01" + ua
    s["read-write"] = base + pdu(cmd(1, read10(0, 8), 4096, R, cmdsn=2)) + \
        pdu(cmd(2, write10(0, 1), blk, W, dlen=blk, cmdsn=3), b"\x5a" * blk) + \
        pdu(cmd(3, write10(8, 4), 4 * blk, W, final=False, dlen=blk, cmdsn=4), bytes(blk)) + \
        pdu(data_out(3, RSVD, 0, blk, 3 * blk, True), bytes(3 * blk))
    s["r2t-guessed-ttt"] = cfg(imm_data=False, initial_r2t=True) + b"\x02" + ua + \
        pdu(cmd(1, write10(0, 16), 16 * blk, W, cmdsn=2)) + \
        pdu(data_out(1, 0x10000, 0, 0, 8192, True), bytes(8192))
    s["nop-text-tmf-logout"] = base + pdu(nop_out(1, dlen=7), b"1234567") + \
        pdu(*text(2, b"SendTargets=All\0")) + pdu(tmf(2, 3)) + pdu(tmf(1, 4, ref_itt=99)) + \
        pdu(bhs(OP_SNACK, F, itt=5)) + pdu(logout(6, 0))
    s["ahs-and-padding"] = base + \
        (lambda h: h[:4] + bytes([2]) + h[5:])(cmd(1, CDB["inquiry"], 96, R, cmdsn=2)) + \
        struct.pack(">HBB", 5, 1, 0) + bytes(4) + pdu(nop_out(2, dlen=3), b"abc")
    s["too-long-segment"] = base + cmd(1, write10(0, 64), 32768, W, dlen=16384, cmdsn=2) + bytes(64)
    s["digests-wrong"] = cfg(hdigest=True) + b"\x04" + ua + bytes(4) + pdu(cmd(1, CDB["tur"], 0, cmdsn=2))
    # the stream logs in itself: the Login Requests are read raw
    raw = cfg(no_login=True) + b"\x03"
    s["login-operational"] = raw + login_request(NORMAL) + ua + pdu(cmd(1, CDB["inquiry"], 96, R, cmdsn=2))
    s["login-security-stage"] = raw + \
        login_request(NORMAL[:3] + [("AuthMethod", "None")], csg=0, nsg=1) + \
        login_request(NORMAL[3:], csg=1, nsg=3) + ua + pdu(cmd(1, CDB["tur"], 0, cmdsn=2))
    s["login-discovery"] = raw + \
        login_request([("InitiatorName", "iqn.2025-01.org.targetd.fuzz:raw"), ("SessionType", "Discovery")]) + \
        pdu(*text(1, b"SendTargets=All\0")) + pdu(cmd(2, CDB["tur"], 0, cmdsn=1)) + pdu(logout(3, 0))
    s["login-continue"] = raw + login_request(NORMAL[:2], transit=False) + login_request(NORMAL[2:])
    s["login-then-garbage"] = raw + login_request(NORMAL) + bytes(range(256))
    s["login-digests"] = raw + login_request(NORMAL[:3] + [("HeaderDigest", "CRC32C,None"),
                                                         ("DataDigest", "CRC32C")]) + ua
    s["not-login-first"] = raw + pdu(cmd(1, CDB["tur"], 0))
    return s


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    for name, seeds, regress in (("ffp", ffp_seeds(), ffp_regressions()), ("pdu", pdu_seeds(), {})):
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.startswith("seed-"):
                os.remove(os.path.join(d, f))
        for prefix, table in (("seed", seeds), ("regress", regress)):
            for k, v in table.items():
                with open(os.path.join(d, "%s-%s.bin" % (prefix, k)), "wb") as f:
                    f.write(v)
        print("%s: %d seeds, %d regression inputs in %s" % (name, len(seeds), len(regress), d))


if __name__ == "__main__":
    main()
