#!/usr/bin/env python3
"""CmdSN order and SAM task attributes, over raw iSCSI PDUs.

RFC 7143 4.2.2.1: non-immediate commands reach the SCSI layer in CmdSN
order across the connections of a session. SAM-5 task attributes: an
ORDERED command waits for every older one, SIMPLE ones wait for older
ORDERED and HEAD OF QUEUE ones, HEAD OF QUEUE runs at once; ACA is refused
(no ACA condition can exist). The checks rely on two facts of targetd that
make the orders visible without timing: TEST UNIT READY is answered as soon
as it runs, and a connection's responses leave in the order they are made,
so a NOP-In answering a later NOP-Out proves what had not run by then.

usage: ordering.py HOST PORT TARGET_IQN
Prints one PASS/FAIL line per check and 'N passed, N failed'; exits 1 if
anything failed. Logins come from tests/mcs.py.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcs import Conn, check, pad4, recv_pdu, results  # noqa: E402

SIMPLE, ORDERED, HEAD_OF_QUEUE, ACA = 1, 2, 3, 4
OP_NOP_IN, OP_SCSI_RSP, OP_TMF_RSP, OP_DATA_IN, OP_R2T = 0x20, 0x21, 0x22, 0x25, 0x31
BLOCK = 512
TUR = bytes(6)


def write10(lba, n):
    return bytes([0x2a, 0]) + lba.to_bytes(4, "big") + bytes([0]) + n.to_bytes(2, "big") + bytes([0])


def read10(lba, n):
    return bytes([0x28, 0]) + lba.to_bytes(4, "big") + bytes([0]) + n.to_bytes(2, "big") + bytes([0])


class Pdu:
    def __init__(self, bhs, data):
        self.bhs, self.data = bhs, data
        self.op = bhs[0] & 0x3f
        self.itt = int.from_bytes(bhs[16:20], "big")
        self.status = bhs[3]
        self.ttt = int.from_bytes(bhs[20:24], "big")
        self.exp_cmdsn = int.from_bytes(bhs[28:32], "big")
        self.offset = int.from_bytes(bhs[40:44], "big")
        self.length = int.from_bytes(bhs[44:48], "big")

    def sense(self):
        """(key, asc, ascq) of a SCSI Response's fixed-format sense data."""
        s = self.data[2:]
        return (s[2] & 0x0f, s[12], s[13]) if len(s) >= 14 else (0, 0, 0)

    def __repr__(self):
        return "op %#x itt %#x status %#x" % (self.op, self.itt, self.status)


class Io:
    """Sends PDUs on one connection of the session without waiting."""
    next_itt = 0x1000

    def __init__(self, conn):
        self.c = conn

    @classmethod
    def itt(cls):
        cls.next_itt += 1
        return cls.next_itt

    def cmd(self, cmdsn, cdb, attr=SIMPLE, read_len=0, write_len=0, data=b"", immediate=False):
        itt = Io.itt()
        bhs = bytearray(48)
        bhs[0] = 0x01 | (0x40 if immediate else 0)
        bhs[1] = 0x80 | (0x40 if read_len else 0) | (0x20 if write_len else 0) | attr
        bhs[5:8] = len(data).to_bytes(3, "big")
        bhs[16:20] = itt.to_bytes(4, "big")
        bhs[20:24] = (read_len or write_len).to_bytes(4, "big")
        bhs[24:28] = cmdsn.to_bytes(4, "big")
        bhs[28:32] = (self.c.statsn + 1).to_bytes(4, "big")
        bhs[32:32 + len(cdb)] = cdb
        self.c.s.sendall(bytes(bhs) + data + b"\0" * pad4(len(data)))
        return itt

    def data_out(self, itt, ttt, offset, data):
        bhs = bytearray(48)
        bhs[0] = 0x05
        bhs[1] = 0x80
        bhs[5:8] = len(data).to_bytes(3, "big")
        bhs[16:20] = itt.to_bytes(4, "big")
        bhs[20:24] = ttt.to_bytes(4, "big")
        bhs[28:32] = (self.c.statsn + 1).to_bytes(4, "big")
        bhs[40:44] = offset.to_bytes(4, "big")
        self.c.s.sendall(bytes(bhs) + data + b"\0" * pad4(len(data)))

    def nop(self, cmdsn):
        """An immediate NOP-Out ping; its NOP-In comes after everything
        the target had answered on this connection before reading it."""
        itt = Io.itt()
        bhs = bytearray(48)
        bhs[0] = 0x40
        bhs[1] = 0x80
        bhs[16:20] = itt.to_bytes(4, "big")
        bhs[20:24] = (0xffffffff).to_bytes(4, "big")
        bhs[24:28] = cmdsn.to_bytes(4, "big")
        self.c.s.sendall(bytes(bhs))
        return itt

    def abort_task(self, cmdsn, ref_itt, ref_cmdsn):
        itt = Io.itt()
        bhs = bytearray(48)
        bhs[0] = 0x42                 # Task Management, immediate
        bhs[1] = 0x80 | 1             # ABORT TASK
        bhs[16:20] = itt.to_bytes(4, "big")
        bhs[20:24] = ref_itt.to_bytes(4, "big")
        bhs[24:28] = cmdsn.to_bytes(4, "big")
        bhs[32:36] = ref_cmdsn.to_bytes(4, "big")
        self.c.s.sendall(bytes(bhs))
        return itt

    def until(self, stop):
        """PDUs received until stop(pdu) is true (that one included);
        a silent target ends it with socket.timeout after mcs.TIMEOUT
        seconds."""
        got = []
        while True:
            bhs, data = recv_pdu(self.c.s)
            p = Pdu(bhs, data)
            if p.op == OP_SCSI_RSP or (p.op == OP_DATA_IN and bhs[1] & 0x01):
                self.c.statsn = int.from_bytes(bhs[24:28], "big")
            got.append(p)
            if stop(p):
                return got

    def until_itt(self, itt, op=None):
        return self.until(lambda p: p.itt == itt and (op is None or p.op == op))

    def until_all(self, itts):
        left = set(itts)

        def stop(p):
            if p.op in (OP_SCSI_RSP, OP_TMF_RSP, OP_NOP_IN) or (p.op == OP_DATA_IN and p.bhs[1] & 1):
                left.discard(p.itt)
            return not left
        return self.until(stop)


def responses(pdus):
    """ITTs of the SCSI Responses (or status-bearing Data-In) in order."""
    return [p.itt for p in pdus if p.op == OP_SCSI_RSP or (p.op == OP_DATA_IN and p.bhs[1] & 1)]


def status_of(pdus, itt):
    for p in pdus:
        if p.itt == itt and (p.op == OP_SCSI_RSP or (p.op == OP_DATA_IN and p.bhs[1] & 1)):
            return p.status
    return None


def main():
    host, port, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    isid = bytes([0x80, 0x21, 0x43, 0x65, 0x87, 0x09])

    c1 = Conn(host, port, isid, 0, 0, 1, target)
    if not check("leading connection logs in", c1.status == 0 and c1.tsih != 0, "status %#x" % c1.status):
        print("0 passed, 1 failed")
        return 1
    a = Io(c1)
    sn = c1.exp_cmdsn
    for _ in range(2):                       # the first reports POWER ON
        a.until_itt(a.cmd(sn, TUR))
        sn += 1
    c2 = Conn(host, port, isid, c1.tsih, 1, sn, target)
    if not check("second connection joins the session", c2.status == 0 and c2.tsih == c1.tsih,
                 "status %#x" % c2.status):
        print("%d passed, %d failed" % (sum(results), len(results) - sum(results)))
        return 1
    b = Io(c2)

    # 1. A command ahead of a hole waits for the hole, across connections.
    t_late = b.cmd(sn + 1, TUR)
    got = b.until_itt(b.nop(sn + 2), OP_NOP_IN)
    check("a command ahead of a CmdSN hole is held (not run)", responses(got) == [],
          "answered: %s" % got)
    check("ExpCmdSN stays at the hole", got[-1].exp_cmdsn == sn, "ExpCmdSN %d, hole %d" % (got[-1].exp_cmdsn, sn))
    t_first = a.cmd(sn, TUR)
    got_a = a.until_itt(t_first)
    got_b = b.until_itt(t_late)
    check("the hole closes: both run, in CmdSN order",
          status_of(got_a, t_first) == 0 and status_of(got_b, t_late) == 0)
    check("ExpCmdSN moves past the held command",
          got_b[-1].exp_cmdsn == sn + 2, "ExpCmdSN %d, want %d" % (got_b[-1].exp_cmdsn, sn + 2))
    sn += 2

    # 2. WRITEs to one LBA sent out of CmdSN order over two connections, then
    #    a READ: the data is that of the higher CmdSN (ORDERED, so it runs
    #    after the lower one ends; in arrival order it would run first).
    lba = 16
    w_hi = b.cmd(sn + 1, write10(lba, 1), attr=ORDERED, write_len=BLOCK, data=b"H" * BLOCK)
    b.until_itt(b.nop(sn + 2), OP_NOP_IN)    # read by the target before the lower one is sent
    w_lo = a.cmd(sn, write10(lba, 1), attr=SIMPLE, write_len=BLOCK, data=b"L" * BLOCK)
    st_lo = status_of(a.until_itt(w_lo), w_lo)
    st_hi = status_of(b.until_itt(w_hi), w_hi)
    check("two WRITEs out of CmdSN order on two connections succeed", st_lo == 0 and st_hi == 0,
          "status %s %s" % (st_lo, st_hi))
    sn += 2
    r = a.cmd(sn, read10(lba, 1), read_len=BLOCK)
    sn += 1
    got = a.until_itt(r)
    data = b"".join(p.data for p in got if p.op == OP_DATA_IN and p.itt == r)
    check("the READ sees the WRITE with the higher CmdSN", data == b"H" * BLOCK,
          "got %r..." % data[:8])

    # 3. ORDERED waits for the SIMPLE command before it, a SIMPLE one waits
    #    for the ORDERED one, HEAD OF QUEUE passes both.
    lba = 32
    w1 = a.cmd(sn, write10(lba, 1), attr=SIMPLE, write_len=BLOCK)   # data on R2T
    got = a.until(lambda p: p.op == OP_R2T and p.itt == w1)
    r2t1 = got[-1]
    w2 = a.cmd(sn + 1, write10(lba, 1), attr=ORDERED, write_len=BLOCK)
    got = a.until(lambda p: p.op == OP_R2T and p.itt == w2)
    a.data_out(w2, got[-1].ttt, 0, b"2" * BLOCK)                   # W2's data is in, W1's not
    t_simple = a.cmd(sn + 2, TUR, attr=SIMPLE)
    t_hoq = a.cmd(sn + 3, TUR, attr=HEAD_OF_QUEUE)
    got = a.until_itt(a.nop(sn + 4), OP_NOP_IN)
    check("HEAD OF QUEUE runs before the queued commands", responses(got) == [t_hoq],
          "responses before the ping: %s" % [hex(i) for i in responses(got)])
    check("HEAD OF QUEUE command succeeds", status_of(got, t_hoq) == 0)
    a.data_out(w1, r2t1.ttt, 0, b"1" * BLOCK)
    got = a.until_all([w1, w2, t_simple])
    order = [i for i in responses(got) if i in (w1, w2, t_simple)]
    check("the ORDERED WRITE waited for the SIMPLE WRITE before it", order[:2] == [w1, w2],
          "order %s" % [hex(i) for i in order])
    check("the SIMPLE command waited for the ORDERED one before it", order == [w1, w2, t_simple],
          "order %s" % [hex(i) for i in order])
    check("all three succeed", all(status_of(got, i) == 0 for i in (w1, w2, t_simple)))
    sn += 4
    r = a.cmd(sn, read10(lba, 1), read_len=BLOCK)
    sn += 1
    got = a.until_itt(r)
    data = b"".join(p.data for p in got if p.op == OP_DATA_IN and p.itt == r)
    check("the ORDERED WRITE's data is what remains", data == b"2" * BLOCK, "got %r..." % data[:8])

    # 4. ACA: no ACA condition can exist, so the command is refused.
    t = a.cmd(sn, TUR, attr=ACA)
    sn += 1
    got = a.until_itt(t)
    rsp = got[-1]
    check("an ACA command gets CHECK CONDITION, ILLEGAL REQUEST, INVALID MESSAGE ERROR",
          rsp.op == OP_SCSI_RSP and rsp.status == 2 and rsp.sense() == (5, 0x49, 0),
          "status %#x sense %s" % (rsp.status, rsp.sense()))

    # 5. A second copy of a CmdSN already received (held) is ignored.
    t_held = b.cmd(sn + 1, TUR)
    b.until_itt(b.nop(sn + 2), OP_NOP_IN)
    t_copy = a.cmd(sn + 1, TUR)
    got = a.until_itt(a.nop(sn + 2), OP_NOP_IN)
    check("a copy of a held CmdSN is ignored", responses(got) == [], "answered: %s" % got)
    t0 = a.cmd(sn, TUR)
    got_a = a.until_itt(t0)
    got_b = b.until_itt(t_held)
    check("the held original runs once the hole closes", status_of(got_b, t_held) == 0)
    got = a.until_itt(a.nop(sn + 2), OP_NOP_IN)
    check("the copy is never answered", t_copy not in responses(got_a + got))
    sn += 2

    # 6. ABORT TASK naming a command that never arrived closes its hole
    #    (RFC 7143 11.5.1: it counts as received).
    t_held = b.cmd(sn + 1, TUR)
    b.until_itt(b.nop(sn + 2), OP_NOP_IN)
    lost_itt = Io.itt()
    tmf = a.abort_task(sn + 2, lost_itt, sn)
    got = a.until_itt(tmf, OP_TMF_RSP)
    check("ABORT TASK for a command not received: function complete", got[-1].bhs[2] == 0,
          "response %d" % got[-1].bhs[2])
    got_b = b.until_itt(t_held)
    check("the command held behind the aborted one runs", status_of(got_b, t_held) == 0)
    sn += 2

    # 7. Commands outside the window are ignored; the session goes on.
    t_out = a.cmd(sn + 100000, TUR)
    got = a.until_itt(a.nop(sn), OP_NOP_IN)
    check("a CmdSN beyond MaxCmdSN is ignored", t_out not in responses(got))
    t = a.cmd(sn, TUR)
    check("the session still works", status_of(a.until_itt(t), t) == 0)
    sn += 1

    # 8. What the Control mode page says about it (SPC-4 7.5.8): a task
    #    set per I_T nexus (TST 001b), SIMPLE reordering allowed (QAM 1).
    r = a.cmd(sn, bytes([0x1a, 0x08, 0x0a, 0, 255, 0]), read_len=255)
    sn += 1
    got = a.until_itt(r)
    data = b"".join(p.data for p in got if p.op == OP_DATA_IN and p.itt == r)
    page = data[4:] if len(data) >= 4 + 12 else b""
    check("Control mode page: TST 001b, QAM 1",
          len(page) >= 12 and page[0] & 0x3f == 0x0a and page[2] >> 5 == 1 and page[3] >> 4 == 1,
          "page %s" % page[:6].hex())

    passed = sum(1 for x in results if x)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (socket.timeout, EOFError, ConnectionError) as e:
        print("FAIL: the target stopped answering (%s)" % e)
        sys.exit(1)
