#!/usr/bin/env python3
"""Multiple connections per session and session reinstatement, over raw
iSCSI PDUs (RFC 7143): libiscsi does not open several connections per
session, so this client builds the PDUs itself.

usage: mcs.py HOST PORT TARGET_IQN
Prints one PASS/FAIL line per check and 'N passed, N failed' at the end;
exits 1 if anything failed.
"""
import os
import socket
import struct
import sys

INITIATOR = "iqn.2026-11.org.targetd:mcs-test"
# how long to wait for an answer or a close: a deadline that only a fault
# reaches, whatever the machine's load (TD_TIME_SCALE as in tests/lib.sh)
TIMEOUT = 60 * int(os.environ.get("TD_TIME_SCALE", "1") or 1)
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("PASS: " if ok else "FAIL: ") + name + ("" if ok or not detail else " (%s)" % detail))
    return ok


def pad4(n):
    return (4 - n % 4) % 4


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def recv_pdu(s):
    bhs = recv_exact(s, 48)
    ahs = bhs[4] * 4
    dlen = int.from_bytes(bhs[5:8], "big")
    rest = recv_exact(s, ahs + dlen + pad4(dlen)) if ahs + dlen else b""
    return bhs, rest[ahs:ahs + dlen]


class Conn:
    def __init__(self, host, port, isid, tsih, cid, cmdsn, target):
        self.s = socket.create_connection((host, port), timeout=TIMEOUT)
        self.itt = 0x100 * (cid + 1)
        self.cid = cid
        keys = ["InitiatorName=" + INITIATOR, "TargetName=" + target, "SessionType=Normal"]
        if tsih == 0:
            keys += ["MaxConnections=4", "ImmediateData=Yes", "InitialR2T=No"]
        keys += ["HeaderDigest=None", "DataDigest=None", "MaxRecvDataSegmentLength=262144"]
        data = b"".join(k.encode() + b"\0" for k in keys)
        bhs = bytearray(48)
        bhs[0] = 0x43                 # Login Request, immediate
        bhs[1] = 0x80 | (1 << 2) | 3  # T=1, CSG=1 (operational), NSG=3 (full feature)
        bhs[5:8] = len(data).to_bytes(3, "big")
        bhs[8:14] = isid
        bhs[14:16] = tsih.to_bytes(2, "big")
        bhs[16:20] = self.itt.to_bytes(4, "big")
        bhs[20:22] = cid.to_bytes(2, "big")
        bhs[24:28] = cmdsn.to_bytes(4, "big")
        self.s.sendall(bytes(bhs) + data + b"\0" * pad4(len(data)))
        rsp, _ = recv_pdu(self.s)
        self.status = rsp[36] << 8 | rsp[37]
        self.tsih = int.from_bytes(rsp[14:16], "big")
        self.statsn = int.from_bytes(rsp[24:28], "big")
        self.exp_cmdsn = int.from_bytes(rsp[28:32], "big")
        self.max_cmdsn = int.from_bytes(rsp[32:36], "big")

    def command(self, cmdsn, cdb, read_len=0):
        """Send a SCSI command; return (status, sense key, data)."""
        self.itt += 1
        bhs = bytearray(48)
        bhs[0] = 0x01
        bhs[1] = 0x80 | (0x40 if read_len else 0) | 1   # F, R, SIMPLE
        bhs[16:20] = self.itt.to_bytes(4, "big")
        bhs[20:24] = read_len.to_bytes(4, "big")
        bhs[24:28] = cmdsn.to_bytes(4, "big")
        bhs[28:32] = (self.statsn + 1).to_bytes(4, "big")
        bhs[32:32 + len(cdb)] = cdb
        self.s.sendall(bytes(bhs))
        data = b""
        while True:
            rsp, seg = recv_pdu(self.s)
            op = rsp[0] & 0x3f
            if int.from_bytes(rsp[16:20], "big") != self.itt:
                continue
            if op == 0x25:            # Data-In
                data += seg
                if rsp[1] & 0x01:     # status collapsed
                    self.statsn = int.from_bytes(rsp[24:28], "big")
                    return rsp[3], 0, data
            elif op == 0x21:          # SCSI Response
                self.statsn = int.from_bytes(rsp[24:28], "big")
                key = seg[4] & 0x0f if len(seg) > 4 else 0
                return rsp[3], key, data

    def logout(self, cmdsn, reason):
        bhs = bytearray(48)
        bhs[0] = 0x46                 # Logout, immediate
        bhs[1] = 0x80 | reason
        bhs[16:20] = (self.itt + 0x7777).to_bytes(4, "big")
        bhs[20:22] = self.cid.to_bytes(2, "big")
        bhs[24:28] = cmdsn.to_bytes(4, "big")
        self.s.sendall(bytes(bhs))
        rsp, _ = recv_pdu(self.s)
        return rsp[0] & 0x3f, rsp[2]

    def closed_by_peer(self):
        self.s.settimeout(TIMEOUT)
        try:
            while True:
                if not self.s.recv(4096):
                    return True
        except (ConnectionResetError, EOFError):
            return True
        except socket.timeout:
            return False


TUR = bytes(6)


def read10(lba, n):
    return bytes([0x28, 0]) + lba.to_bytes(4, "big") + bytes([0]) + n.to_bytes(2, "big") + bytes([0])


def main():
    host, port, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    isid = bytes([0x80, 0x12, 0x34, 0x56, 0x78, 0x9a])

    c1 = Conn(host, port, isid, 0, 0, 1, target)
    if not check("leading connection logs in", c1.status == 0 and c1.tsih != 0, "status %#x" % c1.status):
        print("0 passed, 1 failed")
        return 1
    sn = c1.exp_cmdsn
    st, _, _ = c1.command(sn, TUR)          # clears POWER ON unit attention
    sn += 1
    st, _, _ = c1.command(sn, TUR)
    sn += 1
    check("TUR on the first connection", st == 0, "status %#x" % st)

    # More connections, which the acceptor deals to other network threads.
    extra = []
    for cid in (1, 2, 3):
        c = Conn(host, port, isid, c1.tsih, cid, sn, target)
        ok = c.status == 0 and c.tsih == c1.tsih
        check("connection CID %d joins the session" % cid, ok, "status %#x tsih %d" % (c.status, c.tsih))
        if ok:
            extra.append(c)
    c5 = Conn(host, port, isid, c1.tsih, 4, sn, target)
    check("a fifth connection is refused (MaxConnections=4)", c5.status == 0x0206, "status %#x" % c5.status)

    # Commands alternate between connections; CmdSN is session-wide.
    conns = [c1] + extra
    good = True
    for i in range(40):
        c = conns[i % len(conns)]
        st, _, data = c.command(sn, read10(i, 1), 512)
        sn += 1
        if st != 0 or len(data) != 512:
            good = False
            break
    check("40 READ(10)s spread over %d connections" % len(conns), good)

    if extra:
        op, rc = extra[-1].logout(sn, 1)     # close this connection only
        check("logout of one connection", op == 0x26 and rc == 0, "op %#x response %d" % (op, rc))
        st, _, _ = c1.command(sn, TUR)
        sn += 1
        check("the session goes on after one connection logs out", st == 0, "status %#x" % st)

    # Session reinstatement: same initiator name and ISID, TSIH 0.
    n1 = Conn(host, port, isid, 0, 0, 1, target)
    check("reinstating login succeeds with a new TSIH", n1.status == 0 and n1.tsih != c1.tsih,
          "status %#x" % n1.status)
    check("the old session's connections are closed", c1.closed_by_peer())
    st, _, _ = n1.command(n1.exp_cmdsn, TUR)
    st, _, _ = n1.command(n1.exp_cmdsn + 1, TUR)
    check("the new session works", st == 0, "status %#x" % st)
    op, rc = n1.logout(n1.exp_cmdsn + 2, 0)
    check("session logout", op == 0x26 and rc == 0)

    passed = sum(1 for r in results if r)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
