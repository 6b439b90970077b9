#!/bin/bash
# VAAI integration test: the daemon with two targets (A: three thin file
# LUNs, B: one), then
#   - libiscsi's conformance families CompareAndWrite, ExtendedCopy,
#     ReceiveCopyResults, WriteSame10, WriteSame16, Unmap, GetLBAStatus and
#     MultipathIO's CompareAndWrite tests, through two URLs to one LUN
#     (two sessions, like a multipath pair), on 512e and 4Kn LUNs; every
#     test must pass, and a test that prints [SKIPPED] counts as skipped,
#     which fails the case;
#   - the COMPARE AND WRITE race: 4 sessions using a block as a lock for
#     10,000 acquisitions, a counter in another block (no lost update, every
#     outcome GOOD or MISCOMPARE), and COMPARE AND WRITEs aborted in flight
#     (never a torn block, never a false miscompare);
#   - EXTENDED COPY within a LUN and across two LUNs with several segments
#     (data verified), refused with COPY ABORTED for another target's LUN;
#   - UNMAP of 1 GiB and WRITE SAME UNMAP=1 of 256 MiB give the space back
#     (st_blocks of the backing file) and GET LBA STATUS then reports the
#     range deallocated;
#   - on a loop-mounted XFS with reflink, a 256 MiB EXTENDED COPY leaves
#     the filesystem's used space nearly unchanged, and the statistics
#     count its blocks as reflinked (skipped, with the reason, where the
#     machine cannot make, attach or mount a loop XFS: not root, no
#     mkfs.xfs, a container without loop devices or without the right to
#     mount).
# VAAI_BENCH=1 also prints the benchmark (EXTENDED COPY vs a host copy,
# WRITE SAME vs zero buffers, 1 GiB); it is not a timed test.
#
# To run by hand from a build tree:  make check TESTS=tests/vaai.sh
set -u
. "$(dirname "$0")/lib.sh"

: "${ATSRACE:=$(dirname "$ITEST")/atsrace}"
: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"
FAMILY_TIMEOUT=${VAAI_FAMILY_TIMEOUT:-900}

td_init vaai
td_need_cmd iscsi-test-cu timeout stat
[ -x "$ATSRACE" ] || { td_log "ERROR: $ATSRACE not built"; exit 99; }

T=$TD_TMP
PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
P=127.0.0.1:$PORT
IQN=iqn.2026-11.org.targetd.test:vaai
IQN_B=iqn.2026-11.org.targetd.test:vaai-other
td_write_conf "$T/targetd.conf" -p "$PORT" <<EOF
targets = (
  {
    iqn = "$IQN";
    luns = (
      { lun = 0; backstore = "file"; path = "$T/lun0.img"; size = "1G"; thin = true; },
      { lun = 1; backstore = "file"; path = "$T/lun1.img"; size = "1G"; thin = true; },
      { lun = 2; backstore = "file"; path = "$T/lun2.img"; size = "1536M"; thin = true; },
      { lun = 3; backstore = "file"; path = "$T/lun3.img"; size = "1G"; thin = true; block_size = 4096; }
    );
  },
  {
    iqn = "$IQN_B";
    luns = ( { lun = 0; backstore = "file"; path = "$T/b0.img"; size = "64M"; thin = true; } );
  }
);
EOF
URL=iscsi://$P/$IQN
XFS_PID=

vaai_cleanup() {
	if [ -n "$XFS_PID" ]; then
		kill -KILL "$XFS_PID" 2>/dev/null
		wait "$XFS_PID" 2>/dev/null
	fi
}
td_on_exit vaai_cleanup

# cunit_verdict FILE: one line "passed failed skipped summary_seen"; the
# names of failed and skipped tests go to stderr. A test is skipped when
# anything it printed says [SKIPPED]; it fails on FAILED or on no verdict.
cunit_verdict() {
	awk '
	function done_test() {
		if (name == "") return
		if (verdict == "FAILED" || verdict == "") {
			nf++; printf "    FAILED  %s%s\n", name, verdict == "" ? " (no verdict)" : "" > "/dev/stderr"
		} else if (skip) {
			ns++; printf "    SKIPPED %s: %s\n", name, why > "/dev/stderr"
		} else {
			np++
		}
		name = ""
	}
	function scan(s) {
		if (index(s, "[SKIPPED]") && !skip) { skip = 1; why = s; sub(/^.*\[SKIPPED\] */, "", why) }
		if (verdict != "") return
		if (s ~ /(^|[ \t])passed[ \t]*$/) verdict = "passed"
		else if (s ~ /(^|[ \t])FAILED[ \t]*$/ || s ~ /^FAILED/) verdict = "FAILED"
	}
	/^Suite: / { done_test(); suite = substr($0, 8); next }
	/^  Test: / {
		done_test()
		line = substr($0, 9); p = index(line, " ...")
		name = suite "." substr(line, 1, p - 1)
		verdict = ""; skip = 0; why = ""
		scan(substr(line, p + 4))
		next
	}
	/^Run Summary:/ { done_test(); summary = 1; next }
	name != "" { scan($0) }
	END { done_test(); printf "%d %d %d %d\n", np, nf, ns, summary + 0 }
	' "$1"
}

# family NAME TEST-SPEC URL: one iscsi-test-cu run; no failure, no skip.
family() {
	local name=$1 spec=$2 url=$3 out p f s sum
	out=$T/cu-$name.out
	timeout -k 10 "$FAMILY_TIMEOUT" iscsi-test-cu -d -v --test "$spec" "$url" "$url" >"$out" 2>&1
	read -r p f s sum < <(cunit_verdict "$out")
	echo "$name: $p passed, $f failed, $s skipped"
	if [ "$sum" != 1 ]; then
		echo "no CUnit summary (crashed or timed out)"
		return 1
	fi
	[ $((p + f + s)) -gt 0 ] || { echo "ran no test"; return 1; }
	if [ "$f" != 0 ] || [ "$s" != 0 ]; then
		sed -n '/^Suite:/,$p' "$out" | grep -E "Test:|FAILED|SKIPPED" | head -n 60
		return 1
	fi
	return 0
}

# blocks_of FILE: allocated 512-byte blocks.
blocks_of() { stat -c %b "$1"; }

space_unmap() {
	local lba=$1 n=$2 before after mid freed want
	"$ATSRACE" fill "$URL/2" "$lba" "$n" || return 1
	before=$(blocks_of "$T/lun2.img")
	"$ATSRACE" unmap "$URL/2" "$lba" "$n" || return 1
	after=$(blocks_of "$T/lun2.img")
	freed=$((before - after))
	want=$((n * 99 / 100))
	echo "UNMAP of $n blocks: allocated 512-byte blocks $before -> $after (freed $freed, need >= $want)"
	[ "$freed" -ge "$want" ] || return 1
	"$ATSRACE" lbastatus "$URL/2" "$lba" deallocated "$n" || return 1
	# and WRITE SAME(16) UNMAP=1 of 256 MiB
	mid=$((lba + n))
	"$ATSRACE" fill "$URL/2" "$mid" 524288 || return 1
	"$ATSRACE" lbastatus "$URL/2" "$mid" mapped 524288 || return 1
	before=$(blocks_of "$T/lun2.img")
	"$ATSRACE" wsunmap "$URL/2" "$mid" 524288 || return 1
	after=$(blocks_of "$T/lun2.img")
	freed=$((before - after))
	echo "WRITE SAME UNMAP of 524288 blocks: $before -> $after (freed $freed, need >= 519045)"
	[ "$freed" -ge 519045 ] || return 1
	"$ATSRACE" lbastatus "$URL/2" "$mid" deallocated 524288
}

# xfs_reflink: a second daemon on a loop-mounted XFS; used space after a
# 256 MiB EXTENDED COPY between two LUNs there grows by < 8192 KiB, and the
# reflinked blocks counted (targetctl stats) are the 524288 copied.
xfs_reflink() {
	local img=$T/xfs.img mnt=$T/xfs port2 used0 used1 url2 refl rc=0
	truncate -s 1536M "$img" || return 1
	mkfs.xfs -q -m reflink=1 "$img" || return 1
	td_loop_mount "$img" "$mnt" || { echo "$TD_WHY"; return 1; }
	port2=$(free_port) || return 1
	td_write_conf "$T/xfs.conf" -p "$port2" -s "$T/state2" -S "$T/control2.sock" <<EOF
targets = ( { iqn = "$IQN"; luns = (
  { lun = 0; backstore = "file"; path = "$mnt/a.img"; size = "512M"; thin = true; },
  { lun = 1; backstore = "file"; path = "$mnt/b.img"; size = "512M"; thin = true; } ); } );
EOF
	td_launch "$port2" "$T/xfs-daemon.log" -c "$T/xfs.conf" || return 1
	XFS_PID=$TD_LAUNCHED_PID
	url2=iscsi://127.0.0.1:$port2/$IQN
	if "$ATSRACE" fill "$url2/0" 0 524288; then
		sync
		used0=$(df -k --output=used "$mnt" | tail -1)
		if "$ATSRACE" copy "$url2/0" "$url2/1" 256; then
			sync
			used1=$(df -k --output=used "$mnt" | tail -1)
			refl=$("$TARGETCTL" -s "$T/control2.sock" stats --json | python3 -c '
import json, sys
print(sum(l["vaai"]["extended_copy"]["reflink_blocks"] for l in json.load(sys.stdin)["luns"]))')
			echo "XFS used space: $used0 KiB -> $used1 KiB after a 256 MiB EXTENDED COPY (must grow < 8192 KiB)"
			echo "reflinked blocks counted: ${refl:-none} (want 524288)"
			[ $((used1 - used0)) -lt 8192 ] && [ "${refl:-0}" = 524288 ] || rc=1
		else
			rc=1
		fi
	else
		rc=1
	fi
	td_stop "$XFS_PID" "$T/xfs-daemon.log" TERM || rc=1
	XFS_PID=
	td_umount "$mnt" || { echo "cannot unmount $mnt"; rc=1; }
	rm -f "$img"
	return "$rc"
}

if ! start_daemon "$PORT" -c "$T/targetd.conf"; then
	echo "FAIL: the daemon did not start"
	echo "0 passed, 1 failed"
	exit 1
fi

# MultipathIO first, on a LUN nothing wrote yet: its CompareAndWrite test
# expects LBA 256 to hold zeroes although it only initialises LBAs 0-255.
run_test "MultipathIO.CompareAndWrite" family MultipathIO.CompareAndWrite ALL.MultipathIO.CompareAndWrite "$URL/1"
run_test "MultipathIO.CompareAndWriteAsync" family MultipathIO.CompareAndWriteAsync ALL.MultipathIO.CompareAndWriteAsync "$URL/1"
# LUN 0 has 512-byte logical blocks in 4 KiB physical ones (the file
# system's block): the tests of unaligned and short requests
# (InvalidDataOutSize, UnmapUnaligned) run only when LBPPB > 1.
for fam in CompareAndWrite ExtendedCopy ReceiveCopyResults WriteSame10 WriteSame16 Unmap; do
	run_test "libiscsi $fam" family "$fam" "ALL.$fam" "$URL/0"
done
# GetLBAStatus.UnmapSingle (libiscsi 1.19) asks for the status of LBA i+1
# and wants the first descriptor to start at i+LBPPB, which SBC-4 5.8
# forbids unless LBPPB is 1: it runs on LUN 3, 4 KiB logical blocks
# (LBPPB 1). Its other tests pass on LUN 0 as well.
run_test "libiscsi GetLBAStatus (4 KiB blocks)" family GetLBAStatus ALL.GetLBAStatus "$URL/3"
run_test "libiscsi GetLBAStatus.Simple (512e)" family GetLBAStatus-512e \
	"ALL.GetLBAStatus.Simple" "$URL/0"
run_test "libiscsi GetLBAStatus.BeyondEol (512e)" family GetLBAStatus-512e-eol \
	"ALL.GetLBAStatus.BeyondEol" "$URL/0"

run_test "COMPARE AND WRITE race, 4 sessions, 10000 acquisitions" "$ATSRACE" race "$URL/0" 4 10000
run_test "COMPARE AND WRITE aborted in flight" "$ATSRACE" abort "$URL/0" 300
run_test "EXTENDED COPY within and across LUNs; another target refused" \
	"$ATSRACE" xcopy "$URL/0" "$URL/1" "iscsi://$P/$IQN_B/0"
run_test "UNMAP and WRITE SAME UNMAP give space back" space_unmap 0 2097152

if td_can_loop_mount xfs; then
	run_here "XFS reflink EXTENDED COPY" xfs_reflink
else
	skip_test "XFS reflink EXTENDED COPY" "$TD_WHY"
fi

if [ "${VAAI_BENCH:-0}" = 1 ]; then
	echo "--- benchmark (not a test) ---"
	"$ATSRACE" bench "$URL/0" "$URL/1" 1024
fi

if daemon_alive; then
	run_here "clean shutdown" stop_daemon TERM
else
	TD_FAIL=$((TD_FAIL + 1))
	TD_FAILED_NAMES+=("the daemon died")
	tail -n 40 "$TD_DAEMON_LOG"
fi
td_summary
