#!/usr/bin/env python3
"""Write the seed corpora of the SCSI fuzz targets (tests/fuzz/corpus/<name>/
for tests/fuzz/fuzz_<name>).

Each seed is a well-formed input of its target's format (see the comment at
the top of tests/fuzz/fuzz_<target>.c): valid commands and parameter lists
of every kind the target takes, so that libFuzzer starts from inputs that
reach deep into the handlers and mutates from there. Run from anywhere:

    python3 tests/fuzz/seeds_scsi.py

The output is deterministic; the files are committed.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def be16(v):
    return struct.pack(">H", v)


def be32(v):
    return struct.pack(">I", v)


def be64(v):
    return struct.pack(">Q", v)


def write(target, name, data):
    d = os.path.join(OUT, target[len("fuzz_"):])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes(data))


def cdb(*b, n=16):
    c = bytes(b)
    return c + bytes(n - len(c))


# ---------------------------------------------------------------- fuzz_cdb


def rec(c, lun=0, nexus=0, out=b""):
    """One fuzz_cdb record: the CDB padded to 16 (or 32) bytes."""
    n = 32 if len(c) > 16 else 16
    sel = (lun & 7) | ((nexus & 3) << 4) | (0x40 if n == 32 else 0)
    return bytes([sel]) + c + bytes(n - len(c)) + be16(len(out)) + out


def rw10(op, lba, n):
    return cdb(op, 0, *be32(lba), 0, *be16(n), 0)


def rw16(op, b1, lba, n):
    return cdb(op, b1, *be64(lba), *be32(n), 0, 0)


BLK = bytes(range(256)) * 2            # one 512-byte block


def unmap_list(descs):
    body = b"".join(be64(lba) + be32(n) + bytes(4) for lba, n in descs)
    return be16(6 + len(body)) + be16(len(body)) + bytes(4) + body


def cscd(lun):
    """0xE4 identification CSCD naming fuzz LUN `lun` (fz_patch_designator)."""
    bsz = 4096 if lun == 1 else 512
    return (bytes([0xE4, 0, 0, 0, 0x01, 0x03, 0, 16]) + b"LUN" + bytes([lun]) +
            bytes(12) + bytes(5) + bsz.to_bytes(3, "big"))


def segment(si, di, nblocks, src, dst, dc=False):
    return (bytes([0x02, 0x02 if dc else 0]) + be16(0x18) + be16(si) + be16(di) +
            bytes(2) + be16(nblocks) + be64(src) + be64(dst))


def xcopy_list(list_id, cscds, segs, usage=0):
    t = b"".join(cscds)
    s = b"".join(segs)
    return (bytes([list_id, usage << 3]) + be16(len(t)) + bytes(4) + be32(len(s)) +
            be32(0) + t + s)


def prout_cdb(sa, type_, plen):
    return cdb(0x5F, sa, type_, 0, 0, *be32(plen), 0, n=10)


def prout_basic(rk, sark, flags=0, tail=b""):
    return be64(rk) + be64(sark) + bytes(4) + bytes([flags, 0]) + bytes(2) + tail


def tid(name, isid=None):
    """iSCSI TransportID (SPC-4 7.6.4.6), format 0 or 1, padded to 4."""
    s = name if isid is None else "%s,i,0x%s" % (name, isid)
    b = s.encode() + b"\0"
    b += bytes(-len(b) % 4)
    return bytes([0x05 if isid is None else 0x45, 0]) + be16(len(b)) + b


HOST = ["iqn.2026-01.org.targetd.fuzz:host-%d" % i for i in range(3)]
ISID = ["23d00000000%d" % (i + 1) for i in range(3)]


def caching_page(wce):
    return bytes([0x08, 0x12, 0x04 if wce else 0]) + bytes(17)


def control_page(d_sense=False, swp=False):
    return bytes([0x0A, 0x0A, 0x04 if d_sense else 0, 0, 0x08 if swp else 0, 0, 0, 0,
                  0xFF, 0xFF, 0, 0])


def iec_page(mrie=0, interval=0, count=0):
    return bytes([0x1C, 0x0A, 0x08, mrie]) + be32(interval) + be32(count)


def mode6(pages, bd=b""):
    return bytes([0, 0, 0, len(bd)]) + bd + pages


def mode10(pages, bd=b""):
    return bytes(6) + be16(len(bd)) + bd + pages


def main():
    # --- fuzz_cdb: one command per seed, then a few sequences ---
    one = {
        "tur": cdb(0x00, n=6),
        "inquiry": cdb(0x12, 0, 0, 0, 96, 0, n=6),
        "inquiry-vpd00": cdb(0x12, 1, 0x00, 0, 255, 0, n=6),
        "inquiry-vpd83": cdb(0x12, 1, 0x83, 0, 255, 0, n=6),
        "inquiry-vpdb0": cdb(0x12, 1, 0xB0, 0, 255, 0, n=6),
        "inquiry-vpdb2": cdb(0x12, 1, 0xB2, 0, 255, 0, n=6),
        "inquiry-vpd8f": cdb(0x12, 1, 0x8F, 0x02, 0, 0, n=6),
        "request-sense": cdb(0x03, 0, 0, 0, 252, 0, n=6),
        "report-luns": cdb(0xA0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, n=12),
        "rsoc-all": cdb(0xA3, 0x0C, 0x80, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, n=12),
        "rsoc-one": cdb(0xA3, 0x0C, 0x82, 0x89, 0, 0, 0, 0, 1, 0, 0, 0, n=12),
        "rstmf": cdb(0xA3, 0x0D, 0x80, 0, 0, 0, 0, 0, 0, 16, 0, 0, n=12),
        "rtpg": cdb(0xA3, 0x0A, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, n=12),
        "read-capacity10": cdb(0x25, n=10),
        "read-capacity16": cdb(0x9E, 0x10, *bytes(8), *be32(32), 0, 0),
        "get-lba-status": cdb(0x9E, 0x12, *be64(0), *be32(1024), 0, 0),
        "read6": cdb(0x08, 0, 0, 8, 4, 0, n=6),
        "read10": rw10(0x28, 16, 8),
        "read12": cdb(0xA8, 0, *be32(16), *be32(8), 0, 0, n=12),
        "read16": rw16(0x88, 0, 16, 8),
        "verify10": rw10(0x2F, 0, 8),
        "sync-cache10": rw10(0x35, 0, 0),
        "sync-cache16": rw16(0x91, 0, 0, 0),
        "prefetch10": rw10(0x34, 0, 8),
        "read-defect10": cdb(0x37, 0, 0x18, 0, 0, 0, 0, 0, 8, 0, n=10),
        "read-defect12": cdb(0xB7, 0x1F, 0, 0, 0, 0, *be32(8), 0, 0, n=12),
        "mode-sense6": cdb(0x1A, 0, 0x3F, 0, 255, 0, n=6),
        "mode-sense10": cdb(0x5A, 0, 0x3F, 0, 0, 0, 0, 0x10, 0, 0, n=10),
        "start": cdb(0x1B, 0, 0, 0, 0x01, 0, n=6),
        "stop": cdb(0x1B, 0, 0, 0, 0x00, 0, n=6),
        "reserve6": cdb(0x16, n=6),
        "release6": cdb(0x17, n=6),
        "prin-read-keys": cdb(0x5E, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, n=10),
        "prin-full-status": cdb(0x5E, 3, 0, 0, 0, 0, 0, 0x10, 0, 0, n=10),
        "prin-caps": cdb(0x5E, 2, 0, 0, 0, 0, 0, 0x10, 0, 0, n=10),
        "rcr-op-params": cdb(0x84, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, *be32(64), 0, 0),
        "write-same16-unmap-ndob": rw16(0x93, 0x09, 0, 64),
        "sanitize-exit": cdb(0x48, 0x1F, n=10),
    }
    for name, c in one.items():
        write("fuzz_cdb", name, rec(c))
    write("fuzz_cdb", "write10", rec(rw10(0x2A, 8, 1), out=BLK))
    write("fuzz_cdb", "write6", rec(cdb(0x0A, 0, 0, 8, 1, 0, n=6), out=BLK))
    write("fuzz_cdb", "write16-fua", rec(rw16(0x8A, 0x08, 8, 1), out=BLK))
    write("fuzz_cdb", "write-short-edtl", rec(rw10(0x2A, 8, 4), out=BLK))
    write("fuzz_cdb", "write-4k", rec(rw10(0x2A, 2, 1), lun=1, out=bytes(4096)))
    write("fuzz_cdb", "write-readonly", rec(rw10(0x2A, 8, 1), lun=2, out=BLK))
    write("fuzz_cdb", "write-verify10", rec(cdb(0x2E, 0x02, *be32(8), 0, *be16(1), 0, n=10),
                                            out=BLK))
    write("fuzz_cdb", "verify-bytchk1", rec(cdb(0x2F, 0x02, *be32(8), 0, *be16(1), 0, n=10),
                                            out=BLK))
    write("fuzz_cdb", "verify-bytchk3", rec(cdb(0x2F, 0x06, *be32(8), 0, *be16(4), 0, n=10),
                                            out=BLK))
    write("fuzz_cdb", "orwrite16", rec(rw16(0x8B, 0, 8, 1), out=BLK))
    write("fuzz_cdb", "caw", rec(cdb(0x89, 0, *be64(8), 0, 0, 0, 1, 0, 0), out=bytes(512) + BLK))
    write("fuzz_cdb", "write-same10", rec(rw10(0x41, 0, 16), out=BLK))
    write("fuzz_cdb", "write-same16-zero", rec(rw16(0x93, 0, 0, 16), out=bytes(512)))
    write("fuzz_cdb", "write-same16-unmap", rec(rw16(0x93, 0x08, 0, 16), out=bytes(512)))
    write("fuzz_cdb", "unmap", rec(cdb(0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0, n=10),
                                   out=unmap_list([(0, 64)])))
    lst = xcopy_list(1, [cscd(0), cscd(3)], [segment(0, 1, 16, 0, 100)])
    write("fuzz_cdb", "xcopy-bad-names",
          rec(cdb(0x83, 0, *bytes(8), *be32(len(lst)), 0, 0), out=lst))
    write("fuzz_cdb", "mode-select6-caching",
          rec(cdb(0x15, 0x10, 0, 0, 24, 0, n=6), out=mode6(caching_page(False))))
    write("fuzz_cdb", "prout-register",
          rec(prout_cdb(0, 0, 24), out=prout_basic(0, 0x1111)))
    write("fuzz_cdb", "sanitize-overwrite",
          rec(cdb(0x48, 0x81, 0, 0, 0, 0, 0, 0, 8, 0, n=10),
              out=bytes([0x01, 0, 0, 4]) + b"\xde\xad\xbe\xef"))
    write("fuzz_cdb", "prevent-eject",
          rec(cdb(0x1E, 0, 0, 0, 1, 0, n=6), lun=1) +
          rec(cdb(0x1B, 0, 0, 0, 0x02, 0, n=6), lun=1) +
          rec(cdb(0x1E, 0, 0, 0, 0, 0, n=6), lun=1) +
          rec(cdb(0x1B, 0, 0, 0, 0x02, 0, n=6), lun=1) +
          rec(rw10(0x28, 0, 1), lun=1))
    write("fuzz_cdb", "reserve-conflict",
          rec(cdb(0x16, n=6)) + rec(rw10(0x2A, 0, 1), nexus=1, out=BLK) +
          rec(cdb(0x17, n=6)))
    write("fuzz_cdb", "standby-port",
          rec(rw10(0x28, 0, 1), nexus=2) +
          rec(cdb(0xA4, 0x0A, 0, 0, 0, 0, *be32(8), 0, 0, n=12), nexus=2,
              out=bytes(4) + bytes([0x00, 0]) + be16(2)))
    write("fuzz_cdb", "no-lun", rec(cdb(0x00, n=6), lun=5) + rec(cdb(0x12, 0, 0, 0, 36, 0, n=6),
                                                                  lun=5))
    write("fuzz_cdb", "cdb32", rec(cdb(0x7F, 0, 0, 0, 0, 0, 0, 0x18, 0, 0x0D, n=32)))

    # --- fuzz_xcopy: parameter lists ---
    x = "fuzz_xcopy"
    write(x, "within-lun0", xcopy_list(1, [cscd(0)], [segment(0, 0, 64, 0, 1000)]))
    write(x, "lun0-to-lun3", xcopy_list(2, [cscd(0), cscd(3)], [segment(0, 1, 64, 0, 0)]))
    write(x, "lun3-to-lun1-4k", xcopy_list(3, [cscd(3), cscd(1)],
                                           [segment(0, 1, 64, 0, 0, dc=False)]))
    write(x, "dc-bit", xcopy_list(4, [cscd(3), cscd(1)], [segment(0, 1, 8, 0, 0, dc=True)]))
    write(x, "to-readonly", xcopy_list(5, [cscd(0), cscd(2)], [segment(0, 1, 8, 0, 0)]))
    write(x, "other-target", xcopy_list(6, [cscd(0), cscd(4)], [segment(0, 1, 8, 0, 0)]))
    write(x, "segments", xcopy_list(7, [cscd(0), cscd(3)],
                                    [segment(0, 1, 8, 0, 0), segment(1, 0, 8, 0, 100),
                                     segment(0, 0, 0, 0, 0), segment(0, 0, 16, 50, 40)]))
    write(x, "overlap-forward", xcopy_list(8, [cscd(0)], [segment(0, 0, 2048, 0, 100)]))
    write(x, "overlap-backward", xcopy_list(9, [cscd(0)], [segment(0, 0, 2048, 100, 0)]))
    write(x, "no-hold", xcopy_list(10, [cscd(0)], [segment(0, 0, 8, 0, 64)], usage=2))
    write(x, "no-list-id", xcopy_list(0, [cscd(0)], [segment(0, 0, 8, 0, 64)], usage=3))
    write(x, "past-end", xcopy_list(11, [cscd(0)], [segment(0, 0, 16, 8190, 0)]))
    write(x, "header-only", xcopy_list(12, [], []))

    # --- fuzz_unmap: byte 0 (ANCHOR), then the parameter list ---
    u = "fuzz_unmap"
    write(u, "one", b"\0" + unmap_list([(0, 64)]))
    write(u, "two", b"\0" + unmap_list([(0, 8), (4096, 4096)]))
    write(u, "zero-count", b"\0" + unmap_list([(10, 0), (20, 1)]))
    write(u, "end", b"\0" + unmap_list([(8191, 1)]))
    write(u, "empty", b"\0" + unmap_list([]))
    write(u, "anchor", b"\1" + unmap_list([(0, 8)]))

    # --- fuzz_prout: records (sa | nexus << 6, scope/type, length, list) ---
    def prec(sa, type_, plist, nexus=0):
        return bytes([sa | (nexus << 6), type_, len(plist)]) + plist

    p = "fuzz_prout"
    reg_a = prec(0, 0, prout_basic(0, 0xAAAA))
    reg_b = prec(0, 0, prout_basic(0, 0xBBBB), nexus=1)
    write(p, "register", reg_a)
    write(p, "register-reserve-we", reg_a + prec(1, 0x01, prout_basic(0xAAAA, 0)))
    write(p, "reserve-ea-ro", reg_a + reg_b + prec(1, 0x06, prout_basic(0xAAAA, 0)))
    write(p, "reserve-all-reg", reg_a + reg_b + prec(1, 0x08, prout_basic(0xBBBB, 0), nexus=1))
    write(p, "release", reg_a + prec(1, 0x03, prout_basic(0xAAAA, 0)) +
          prec(2, 0x03, prout_basic(0xAAAA, 0)))
    write(p, "clear", reg_a + reg_b + prec(3, 0, prout_basic(0xBBBB, 0), nexus=1))
    write(p, "preempt", reg_a + reg_b + prec(1, 0x01, prout_basic(0xAAAA, 0)) +
          prec(4, 0x01, prout_basic(0xBBBB, 0xAAAA), nexus=1))
    write(p, "preempt-abort", reg_a + reg_b + prec(1, 0x03, prout_basic(0xAAAA, 0)) +
          prec(5, 0x03, prout_basic(0xBBBB, 0xAAAA), nexus=1))
    write(p, "register-ignore", prec(6, 0, prout_basic(0, 0x1234)) +
          prec(6, 0, prout_basic(0, 0)))
    write(p, "unregister", reg_a + prec(0, 0, prout_basic(0xAAAA, 0)))
    spec = tid(HOST[1]) + tid(HOST[2], ISID[2])
    write(p, "spec-i-pt", prec(0, 0, prout_basic(0, 0xAAAA, 0x08, be32(len(spec)) + spec)))
    write(p, "all-tg-pt", prec(0, 0, prout_basic(0, 0xAAAA, 0x04)))
    write(p, "aptpl-refused", prec(0, 0, prout_basic(0, 0xAAAA, 0x01)))
    mv = tid(HOST[1], ISID[1])
    write(p, "register-move", reg_a + prec(1, 0x01, prout_basic(0xAAAA, 0)) +
          prec(7, 0x01, be64(0xAAAA) + be64(0xCCCC) + bytes([0, 0]) + be16(1) +
               be32(len(mv)) + mv))

    # --- fuzz_modeselect: byte 0 (10-byte, SP, PF clear, LUN), the list ---
    m = "fuzz_modeselect"
    write(m, "caching-wce-off", b"\x00" + mode6(caching_page(False)))
    write(m, "caching-wce-on", b"\x00" + mode6(caching_page(True)))
    write(m, "control-dsense", b"\x00" + mode6(control_page(d_sense=True)))
    write(m, "control-swp", b"\x00" + mode6(control_page(swp=True)))
    write(m, "iec", b"\x00" + mode6(iec_page(mrie=4, interval=100, count=1)))
    write(m, "all-pages", b"\x00" + mode6(caching_page(False) + control_page(True) +
                                          iec_page()))
    write(m, "block-descriptor", b"\x00" + mode6(caching_page(True),
                                                 bd=bytes(5) + (512).to_bytes(3, "big")))
    write(m, "ten-caching", b"\x01" + mode10(caching_page(False)))
    write(m, "ten-lun1", b"\x09" + mode10(control_page(d_sense=True),
                                          bd=bytes(5) + (4096).to_bytes(3, "big")))
    write(m, "saved-refused", b"\x02" + mode6(caching_page(False)))
    write(m, "pf-clear", b"\x04" + mode6(caching_page(False)))


if __name__ == "__main__":
    main()
