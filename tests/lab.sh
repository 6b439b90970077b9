#!/bin/bash
# Integration test of vaai-lab (tools/vaai-lab) against targetd on small
# thin file LUNs, every subcommand, each sized by a count (updates, bytes,
# I/Os), never by time:
#   - a destructive subcommand without --region or --force refuses and
#     writes nothing;
#   - locking --modes none,reserve,ats: RESERVATION CONFLICTs only in
#     reserve, as many as targetd counted (control socket), none in ats,
#     no lost metadata update under a lock; the conflicts are shown
#     decoded; pr then reserve with VM writes; ATS contention on one file
#     (miscompares equal to targetd's, decoded "MISCOMPARE at byte N");
#   - clone verifies both copies and EXTENDED COPY moves < 1 % of the host
#     copy's network bytes; zero verifies, WRITE SAME sends < 1 %;
#   - reclaim: allocated space back near zero after UNMAP;
#   - bench --verify (random mixed, sequential writes) finds no mismatch;
#     bench --data zero writes zeroes (reads check them, the backing file
#     holds nothing else in the region) and refuses a read-only run;
#     a write to a read-only LUN is reported as DATA PROTECT;
#   - --plot writes a PNG (or SVG) that file(1) recognises.
#
# To run by hand from a build tree:  make check TESTS=tests/lab.sh
set -u
. "$(dirname "$0")/lib.sh"
td_init lab

: "${VAAI_LAB:=$(dirname "$TARGETD")/../tools/vaai-lab}"
td_need_cmd python3 file gnuplot stat
[ -x "$VAAI_LAB" ] || { td_log "ERROR: $VAAI_LAB not built"; exit 99; }
export TMPDIR=$TD_TMP

PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
IQN=iqn.2026-11.org.targetd.test:lab
SOCK=$TD_TMP/ctl.sock
URL=iscsi://127.0.0.1:$PORT/$IQN
truncate -s 8M "$TD_TMP/ro.img"
td_write_conf "$TD_TMP/targetd.conf" -p "$PORT" -s "$TD_TMP" -S "$SOCK" <<EOF
targets = (
  { iqn = "$IQN";
    luns = (
      { lun = 0; backstore = "file"; path = "$TD_TMP/lun0.img"; size = "64M"; thin = true; },
      { lun = 1; backstore = "file"; path = "$TD_TMP/lun1.img"; size = "32M"; thin = true; },
      { lun = 2; backstore = "file"; path = "$TD_TMP/ro.img"; read_only = true; }
    ); }
);
EOF
start_daemon "$PORT" -c "$TD_TMP/targetd.conf" || exit 1
if ! td_poll 30 test -S "$SOCK"; then
	td_log "FAIL: the daemon made no control socket $SOCK; its log:"
	sed 's/^/    | /' "$TD_DAEMON_LOG"
	exit 1
fi

LAB() { "$VAAI_LAB" "$@" --control "$SOCK"; }

# LUN 0 (131072 blocks of 512 bytes): locking 0:8192, clone 8192:49152,
# zero 57344:16384, bench 73728:16384. LUN 1: reclaim.

# jcheck FILE PYTHON: run the Python checks on the JSON in FILE (as d).
jcheck() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
bad = []
def want(ok, msg):
    if not ok:
        bad.append(msg)
exec(sys.argv[2])
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)' "$1" "$2"
}

case_refuse() {
	local out=$TD_TMP/refuse.err before after
	before=$(stat -c %b "$TD_TMP/lun0.img")
	if "$VAAI_LAB" zero "$URL/0" 2>"$out"; then
		echo "zero without --region or --force ran"
		return 1
	fi
	grep -q -- '--region' "$out" || { cat "$out"; return 1; }
	if "$VAAI_LAB" bench "$URL/0" --rw write --ios 10 2>"$out"; then
		echo "bench --rw write without --region or --force ran"
		return 1
	fi
	after=$(stat -c %b "$TD_TMP/lun0.img")
	[ "$before" = "$after" ] || { echo "the backing file changed: $before -> $after blocks"; return 1; }
	# an option of another subcommand is refused, not ignored
	if "$VAAI_LAB" clone "$URL/0" --vm-qd 3 --force 2>"$out"; then
		echo "clone accepted --vm-qd"
		return 1
	fi
	grep -q 'does not apply to clone' "$out" || { cat "$out"; return 1; }
}

case_locking() {
	local j=$TD_TMP/locking.json e=$TD_TMP/locking.err
	LAB locking "$URL/0" --region 0:8192 --vm-size 3M --modes none,reserve,ats --updates 300 \
		--json --plot "$TD_TMP/locking.png" -v >"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
m = {x["mode"]: x for x in d["modes"]}
want(list(m) == ["none", "reserve", "ats"], "modes %s" % list(m))
for k, x in m.items():
    c, t = x["client"], x["targetd"]
    want(t is not None, "%s: no targetd counters" % k)
    want(c["conflicts"] == t["conflicts"], "%s: the client saw %d conflicts, targetd counted %d" % (k, c["conflicts"], t["conflicts"]))
    want(c["miscompares"] == t["miscompares"], "%s: miscompares client %d targetd %d" % (k, c["miscompares"], t["miscompares"]))
    want(x["hosts"]["updates"] >= 300, "%s: %d updates" % (k, x["hosts"]["updates"]))
    want(x["hosts"]["lost_updates"] == 0, "%s: %d lost updates" % (k, x["hosts"]["lost_updates"]))
want(m["none"]["client"]["conflicts"] == 0, "conflicts in none")
want(m["reserve"]["client"]["conflicts"] > 0, "no conflict in reserve")
want(m["ats"]["client"]["conflicts"] == 0, "conflicts in ats")
want(m["ats"]["targetd"]["ats_success"] >= 600, "ats: %d COMPARE AND WRITEs succeeded" % m["ats"]["targetd"]["ats_success"])
want(m["none"]["vm"]["ios"] > 0 and m["ats"]["vm"]["ios"] > 0, "the VM did no I/O")
' || return 1
	grep -q 'RESERVATION CONFLICT' "$e" || { echo "no decoded RESERVATION CONFLICT on stderr:"; cat "$e"; return 1; }
	file "$TD_TMP/locking.png" | grep -q 'PNG image data' || { file "$TD_TMP/locking.png"; return 1; }
}

case_locking_pr() {
	local j=$TD_TMP/pr.json e=$TD_TMP/pr.err
	LAB locking "$URL/0" --region 0:8192 --vm-size 3M --modes pr,reserve --vm-rw write \
		--updates 200 --json >"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
for x in d["modes"]:
    c, t = x["client"], x["targetd"]
    want(c["conflicts"] == t["conflicts"], "%s: conflicts client %d targetd %d" % (x["mode"], c["conflicts"], t["conflicts"]))
    want(c["conflicts"] > 0, "%s: no conflict" % x["mode"])
    want(x["hosts"]["lost_updates"] == 0, "%s: lost updates" % x["mode"])
' || return 1
}

case_locking_contention() {
	local j=$TD_TMP/ats1.json e=$TD_TMP/ats1.err
	LAB locking "$URL/0" --region 0:8192 --vm-size 3M --modes ats --hosts 3 --files 1 \
		--updates 300 --json -v >"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
x = d["modes"][0]
c, t = x["client"], x["targetd"]
want(c["miscompares"] == t["miscompares"], "miscompares client %d targetd %d" % (c["miscompares"], t["miscompares"]))
want(c["conflicts"] == 0 and t["conflicts"] == 0, "conflicts in ats")
want(x["hosts"]["lost_updates"] == 0, "%d lost updates under ATS" % x["hosts"]["lost_updates"])
want(x["hosts"]["updates"] >= 300, "updates")
open(sys.argv[1] + ".n", "w").write(str(c["miscompares"]))
' || return 1
	if [ "$(cat "$j.n")" -gt 0 ]; then
		grep -q 'COMPARE AND WRITE LBA [0-9]*: MISCOMPARE at byte [0-9]' "$e" ||
			{ echo "miscompares, but none shown decoded:"; cat "$e"; return 1; }
	fi
}

case_clone() {
	local j=$TD_TMP/clone.json e=$TD_TMP/clone.err
	LAB clone "$URL/0" --region 8192:49152 --size 8M --json --plot "$TD_TMP/clone.png" \
		>"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
m = {x["method"]: x for x in d["methods"]}
for k, x in m.items():
    want(x["verified"], "%s: the copy differs at LBA %s byte %s" % (k, x.get("mismatch_lba"), x.get("mismatch_byte")))
h, x = m["host"], m["xcopy"]
want(h["network_bytes"] >= 2 * (8 << 20), "host copy: only %d network bytes" % h["network_bytes"])
want(x["network_bytes"] < h["network_bytes"] / 100, "EXTENDED COPY: %d network bytes against %d" % (x["network_bytes"], h["network_bytes"]))
want(x["targetd_xcopy_bytes"] == 8 << 20, "targetd counted %d EXTENDED COPY bytes" % x["targetd_xcopy_bytes"])
want(h["targetd_xcopy_bytes"] == 0, "host copy counted as EXTENDED COPY")
' || return 1
	file "$TD_TMP/clone.png" | grep -q 'PNG image data' || { file "$TD_TMP/clone.png"; return 1; }
}

case_zero() {
	local j=$TD_TMP/zero.json e=$TD_TMP/zero.err
	LAB zero "$URL/0" --region 57344:16384 --size 8M --json >"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
m = {x["method"]: x for x in d["methods"]}
for k, x in m.items():
    want(x["verified"], "%s: not zero at LBA %s" % (k, x.get("mismatch_lba")))
b, w = m["buffers"], m["writesame"]
want(w["network_bytes"] < b["network_bytes"] / 100, "WRITE SAME: %d network bytes against %d" % (w["network_bytes"], b["network_bytes"]))
want(w["targetd_write_same_bytes"] == 8 << 20, "targetd counted %d WRITE SAME bytes" % w["targetd_write_same_bytes"])
' || return 1
}

case_reclaim() {
	local j=$TD_TMP/reclaim.json e=$TD_TMP/reclaim.err
	LAB reclaim "$URL/1" --force --size 16M --json --plot "$TD_TMP/reclaim.svg" >"$j" 2>"$e" ||
		{ cat "$e"; return 1; }
	jcheck "$j" '
s = {x["step"]: x for x in d["steps"]}
size = 16 << 20
want(s["filled"]["allocated_bytes"] >= size, "filled: %d bytes allocated" % s["filled"]["allocated_bytes"])
want(s["deleted"]["allocated_bytes"] >= size, "deleted: the space went before UNMAP")
want(s["unmapped"]["allocated_bytes"] <= size // 20, "after UNMAP %d bytes still allocated" % s["unmapped"]["allocated_bytes"])
want(s["filled"]["mapped_bytes"] == size and s["unmapped"]["mapped_bytes"] == 0, "GET LBA STATUS: %d then %d mapped" % (s["filled"]["mapped_bytes"], s["unmapped"]["mapped_bytes"]))
want(d["reads_zeroes_after_unmap"], "the region does not read zeroes after UNMAP")
' || return 1
	file "$TD_TMP/reclaim.svg" | grep -q 'SVG' || { file "$TD_TMP/reclaim.svg"; return 1; }
}

case_bench_verify() {
	local j=$TD_TMP/bench.json e=$TD_TMP/bench.err
	LAB bench "$URL/0" --region 73728:16384 --rw mixed --bs 8k --qd 8 --sessions 2 --verify \
		--ios 6000 --json --plot "$TD_TMP/bench.png" >"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
v = d["verify"]
want(v["mismatches"] == 0, "%d mismatches" % v["mismatches"])
want(v["blocks_checked"] > 0, "nothing checked")
want(d["ios"] == 6000, "%d I/Os measured" % d["ios"])
want(d["read"]["ios"] > 0 and d["write"]["ios"] > 0, "not a mix")
' || return 1
	LAB bench "$URL/0" --region 73728:16384 --rw write --pattern seq --bs 64k --qd 4 --verify \
		--ios 500 --json >"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
want(d["verify"]["mismatches"] == 0, "sequential: %d mismatches" % d["verify"]["mismatches"])
want(d["verify"]["blocks_checked"] > 0, "sequential: nothing checked")
' || return 1
	file "$TD_TMP/bench.png" | grep -q 'PNG image data' || { file "$TD_TMP/bench.png"; return 1; }
}

case_bench_zero() {
	local j=$TD_TMP/bzero.json e=$TD_TMP/bzero.err
	# the region holds patterns from case_bench_verify: zero all of it
	LAB bench "$URL/0" --region 73728:16384 --rw write --pattern seq --bs 64k --qd 4 --verify \
		--data zero --ios 128 --json >"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
want(d["data"] == "zero", "data is %r" % d["data"])
want("of zeroes" in d["workload"], "workload: %r" % d["workload"])
want(d["verify"]["mismatches"] == 0, "%d mismatches" % d["verify"]["mismatches"])
want(d["verify"]["blocks_checked"] == 16384, "%d blocks read back, not 16384" % d["verify"]["blocks_checked"])
' || return 1
	python3 -c 'import sys
f = open(sys.argv[1], "rb"); f.seek(73728 * 512); b = f.read(16384 * 512)
n = len(b) - b.count(0)
sys.exit("%d bytes of the region are not zero in the backing file" % n if n or len(b) != 16384 * 512 else 0)' \
		"$TD_TMP/lun0.img" || return 1
	LAB bench "$URL/0" --region 73728:16384 --rw mixed --bs 8k --qd 8 --verify --data zero \
		--ios 2000 --json >"$j" 2>"$e" || { cat "$e"; return 1; }
	jcheck "$j" '
want(d["verify"]["mismatches"] == 0, "mixed: %d mismatches" % d["verify"]["mismatches"])
want(d["read"]["ios"] > 0 and d["write"]["ios"] > 0, "not a mix")
' || return 1
	if "$VAAI_LAB" bench "$URL/0" --data zero --ios 10 2>"$e" >/dev/null; then
		echo "bench --data zero of reads ran"
		return 1
	fi
	grep -q -- '--data zero: a read run writes nothing' "$e" || { cat "$e"; return 1; }
	if "$VAAI_LAB" bench "$URL/0" --rw write --force --data ones --ios 10 2>"$e" >/dev/null; then
		echo "bench --data ones ran"
		return 1
	fi
	grep -q -- '--data ones: random or zero' "$e" || { cat "$e"; return 1; }
}

case_sense() {
	local e=$TD_TMP/ro.err
	if "$VAAI_LAB" bench "$URL/2" --rw write --force --ios 10 2>"$e" >/dev/null; then
		echo "writes to a read-only LUN succeeded"
		return 1
	fi
	grep -q 'WRITE(16) LBA [0-9]*: DATA PROTECT: WRITE PROTECTED' "$e" || { cat "$e"; return 1; }
}

run_test "refuses without --region or --force" case_refuse
run_test "locking none,reserve,ats: conflicts only in reserve, as targetd counted" case_locking
run_test "locking pr,reserve with VM writes" case_locking_pr
run_test "locking ats: contention on one lock" case_locking_contention
run_test "clone: verified, EXTENDED COPY < 1% of the host copy's network bytes" case_clone
run_test "zero: verified, WRITE SAME < 1% of the network bytes" case_zero
run_test "reclaim: space back after UNMAP" case_reclaim
run_test "bench --verify: no mismatch" case_bench_verify
run_test "bench --data zero: zeroes written and read back" case_bench_zero
run_test "target errors shown as decoded sense" case_sense
run_here "daemon stops cleanly" stop_daemon
td_summary
