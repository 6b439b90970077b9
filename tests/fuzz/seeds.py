#!/usr/bin/env python3
"""Write the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<harness>/).

Run from anywhere: python3 tests/fuzz/seeds.py. The seeds are small valid
inputs that reach each stage, so that the fuzzer starts deep: Login Request
sequences (login), key=value texts (params), APTPL state files (pr_file).
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def text(*pairs):
    return b"".join(k.encode() + b"=" + v.encode() + b"\0" for k, v in pairs)


def login_pdu(flags, data, itt=1, isid=b"\x80\x00\x00\x01\x00\x01", tsih=0):
    bhs = bytearray(48)
    bhs[0] = 0x43
    bhs[1] = flags
    bhs[5:8] = struct.pack(">I", len(data))[1:]
    bhs[8:14] = isid
    bhs[14:16] = struct.pack(">H", tsih)
    bhs[16:20] = struct.pack(">I", itt)
    bhs[24:28] = struct.pack(">I", 1)
    return bytes(bhs) + data  # the harness reads no padding


T, C = 0x80, 0x40


def stage(csg, nsg):
    return csg << 2 | nsg


OPER = [("HeaderDigest", "CRC32C,None"), ("DataDigest", "None"),
        ("MaxRecvDataSegmentLength", "262144"), ("ImmediateData", "Yes"),
        ("InitialR2T", "No"), ("MaxBurstLength", "262144"),
        ("FirstBurstLength", "65536"), ("MaxConnections", "2"),
        ("ErrorRecoveryLevel", "0"), ("DefaultTime2Wait", "2"),
        ("DefaultTime2Retain", "20"), ("MaxOutstandingR2T", "1"),
        ("DataPDUInOrder", "Yes"), ("DataSequenceInOrder", "Yes"),
        ("iSCSIProtocolLevel", "1"), ("TaskReporting", "RFC3720")]
INI = ("InitiatorName", "iqn.2026-11.org.fuzz:initiator")


def login_seeds():
    open_ = ("TargetName", "iqn.2026-11.org.fuzz:open")
    return {
        "normal-one-request": login_pdu(T | stage(1, 3), text(INI, open_, ("SessionType", "Normal"), *OPER)),
        "security-then-operational":
            login_pdu(T | stage(0, 1), text(INI, open_, ("AuthMethod", "None"))) +
            login_pdu(T | stage(1, 3), text(*OPER), itt=2),
        "discovery": login_pdu(T | stage(1, 3), text(INI, ("SessionType", "Discovery"),
                                                    ("MaxRecvDataSegmentLength", "65536"))),
        "acl": login_pdu(T | stage(1, 3), text(("InitiatorName", "IQN.2026-11.org.fuzz:Allowed"),
                                               ("TargetName", "iqn.2026-11.org.fuzz:acl"))),
        "chap": login_pdu(T | stage(0, 1), text(INI, ("TargetName", "iqn.2026-11.org.fuzz:chap"),
                                                ("AuthMethod", "CHAP,None"))) +
                login_pdu(T | stage(0, 1), text(("CHAP_A", "5")), itt=2) +
                login_pdu(T | stage(0, 1), text(("CHAP_N", "alice"),
                                                ("CHAP_R", "0x" + "00" * 16)), itt=3),
        "mutual-chap": login_pdu(T | stage(0, 1), text(INI, ("TargetName", "iqn.2026-11.org.fuzz:mutual"),
                                                       ("AuthMethod", "CHAP"))) +
                       login_pdu(T | stage(0, 1), text(("CHAP_A", "5")), itt=2) +
                       login_pdu(T | stage(0, 1), text(("CHAP_N", "alice"), ("CHAP_R", "0b" + "A" * 22),
                                                       ("CHAP_I", "7"),
                                                       ("CHAP_C", "0x" + "a5" * 16)), itt=3),
        "continue": login_pdu(C | stage(1, 3), b"InitiatorName=iqn.2026-11.org.fuzz:in") +
                    login_pdu(T | stage(1, 3), b"itiator\0TargetName=iqn.2026-11.org.fuzz:open\0", itt=2),
        "session-type-change":
            login_pdu(T | stage(0, 1), text(INI, ("SessionType", "Discovery"), ("AuthMethod", "None"))) +
            login_pdu(T | stage(1, 3), text(("SessionType", "Normal")), itt=2),
    }


def params_seeds():
    return {
        "all-keys": b"\x3f" + text(*OPER),
        "discovery": b"\x03" + text(("MaxRecvDataSegmentLength", "8192"), ("MaxBurstLength", "512"),
                                     ("X-org.example.key", "1"), ("X#1", "v")),
        "non-leading": b"\x04" + text(("MaxConnections", "1"), ("HeaderDigest", "None,CRC32C"),
                                       ("MaxRecvDataSegmentLength", "0x2000")),
        "markers": b"\x01" + text(("IFMarker", "No"), ("OFMarker", "Yes"), ("IFMarkInt", "1~65535"),
                                   ("InitialR2T", "Yes"), ("ImmediateData", "No"),
                                   ("FirstBurstLength", "512")),
    }


def state_file(body):
    """Mode 0: the harness appends the checksum line."""
    return b"\0" + body.encode("latin-1")


def raw_state_file(body):
    """Mode 1: the whole file, checksum line included."""
    b = body.encode("latin-1")
    return b"\1" + b + b"end %08x\n" % crc32c(b)


def pr_file_seeds():
    return {
        "v2": state_file("targetd-pr 2\ngeneration 7\n"
                         "reg 00000000000000ab 1 0 0 iqn.1994-05.com.example:host1,i,0x23d000000001\n"
                         "reg 00000000000000cd 2 1 1 iqn.1994-05.com.example:host2\n"
                         "resv 5 0 1\n"),
        "v2-escaped": state_file("targetd-pr 2\ngeneration 1\n"
                                 "reg 0000000000000001 1 0 0 iqn.2026-01.org.example:a%20b%0Areg%25\n"
                                 "reg 0000000000000002 1 0 0 %FF%7F\n"
                                 "resv 8 0 -1\n"),
        "v1": state_file("targetd-pr 1\ngeneration 4\n"
                         "reg 00000000000000ab 1 0 0 iqn.1994-05.com.example:Host1,i,0x23d000000001\n"
                         "resv 1 0 0\n"),
        "empty": state_file("targetd-pr 2\ngeneration 0\n"),
        "whole-file": raw_state_file("targetd-pr 2\ngeneration 3\n"
                                     "reg 0000000000000009 7 1 0 eui.0123456789abcdef,i,0x400000000001\n"
                                     "resv 3 0 0\n"),
    }


def main():
    for harness, seeds in (("login", login_seeds()), ("params", params_seeds()),
                           ("pr_file", pr_file_seeds())):
        d = os.path.join(HERE, "corpus", harness)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
