#!/bin/bash
# Conformance: libiscsi's iscsi-test-cu against the real daemon, one test
# family (CUnit suite) at a time, on a 1 GiB thin file LUN reached through
# two URLs (two sessions to the same LUN, like a multipath pair).
#
# Every family in the lists below must pass. A test that prints [SKIPPED]
# counts as skipped, not passed; a FAILED test fails the run. Closes with
# "N passed, N failed, N skipped" (counted per test) and exits 1 on any
# failure.
#
# To run one family by hand:  CONFORMANCE_FAMILIES="Read10 Write10" make check TESTS=tests/conformance.sh
set -u
. "$(dirname "$0")/lib.sh"

# iSCSI protocol families. iSCSISendTargets and iSCSINop exist only in newer
# libiscsi releases; a family the installed iscsi-test-cu does not have is
# reported as skipped, by name.
ISCSI_FAMILIES="iSCSIcmdsn iSCSIdatasn iSCSIResiduals iSCSITMF iSCSISendTargets iSCSINop"

# SCSI families that must pass today.
SCSI_FAMILIES="
	TestUnitReady Inquiry ReadCapacity10 ReadCapacity16
	Read6 Read10 Read12 Read16
	Write10 Write12 Write16
	Verify10 Verify12 Verify16
	WriteVerify10 WriteVerify12 WriteVerify16
	OrWrite Prefetch10 Prefetch16
	ReportSupportedOpcodes ModeSense6 Mandatory NoMedia
"

# Families that belong to later work; move a name up into SCSI_FAMILIES
# once its owner has made it pass:
#   CompareAndWrite ExtendedCopy ReceiveCopyResults WriteSame10 WriteSame16
#   Unmap GetLBAStatus Reserve6 MultipathIO
#   PrinReadKeys PrinReportCapabilities PrinServiceactionRange
#   ProutClear ProutPreempt ProutRegister ProutReserve
#   ReadDefectData10 ReadDefectData12 StartStopUnit PreventAllow ReadOnly
#   WriteAtomic16 Sanitize
# Note on MultipathIO: libiscsi 1.19's MultipathIO.CompareAndWrite zeroes
# LBAs 0..255 with WRITE SAME but then runs COMPARE AND WRITE on LBAs
# 0..256, so it miscompares at LBA 256 whenever an earlier family left data
# there. Run it first, or on a LUN of its own, not after the write families.

FAMILIES=${CONFORMANCE_FAMILIES:-$ISCSI_FAMILIES $SCSI_FAMILIES}
FAMILY_TIMEOUT=${CONFORMANCE_TIMEOUT:-300}   # seconds for one family
BUDGET=${CONFORMANCE_BUDGET:-1500}           # seconds for the whole run

td_init conformance
td_need_cmd iscsi-test-cu timeout

T=$TD_TMP
PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
P=127.0.0.1:$PORT
IQN=iqn.2026-11.org.targetd.test:conformance
CONF=$T/targetd.conf
mkdir -p "$T/state"
write_conf "$CONF" <<EOF
# written by tests/conformance.sh
listen = [ "$P" ];
threads = 2;
state_dir = "$T/state";
control_socket = "$T/control.sock";
targets = (
  {
    iqn = "$IQN";
    luns = ( { lun = 0; backstore = "file"; path = "$T/lun0.img"; size = "1G"; thin = true; } );
  }
);
EOF
URL=iscsi://$P/$IQN/0

AVAILABLE=$(iscsi-test-cu -l 2>/dev/null | sed -n 's/^ALL\.\([^.]*\)$/\1/p' | sort -u)
[ -n "$AVAILABLE" ] || { td_log "ERROR: iscsi-test-cu -l lists no test families"; exit 99; }

NPASS=0
NFAIL=0
NSKIP=0
FAILED_FAMILIES=()

# parse_cunit FILE: count the tests of one iscsi-test-cu run. Prints
# "passed failed skipped cunit_failed summary_seen" and lists each failed
# or skipped test on stderr.
parse_cunit() {
	awk '
	function finish() {
		if (name == "") return
		if (verdict == "FAILED") { nf++; printf "    FAILED  %s\n", name > "/dev/stderr" }
		else if (verdict == "passed" && skipped) { ns++; printf "    skipped %s: %s\n", name, why > "/dev/stderr" }
		else if (verdict == "passed") np++
		else { nf++; printf "    FAILED  %s (no verdict: crashed or timed out)\n", name > "/dev/stderr" }
		name = ""
	}
	function look(s) {
		if (verdict != "") return
		if (s ~ /^passed/) { verdict = "passed"; return }
		if (s ~ /^FAILED/) { verdict = "FAILED"; return }
		if (index(s, "[SKIPPED]")) {
			skipped = 1
			if (why == "") { why = s; sub(/^.*\[SKIPPED\] */, "", why) }
		}
	}
	/^Suite: / { finish(); suite = substr($0, 8); next }
	/^  Test: / {
		finish()
		line = substr($0, 9)
		p = index(line, " ...")
		name = suite "." substr(line, 1, p - 1)
		verdict = ""; skipped = 0; why = ""
		look(substr(line, p + 4))
		next
	}
	/^Run Summary:/ { finish(); summary = 1; next }
	summary && $1 == "tests" { cunit_failed = $5; next }
	name != "" { look($0) }
	END { finish(); printf "%d %d %d %d %d\n", np, nf, ns, cunit_failed + 0, summary + 0 }
	' "$1"
}

if ! start_daemon "$PORT" -c "$CONF"; then
	echo "FAIL: the daemon did not start"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

for fam in $FAMILIES; do
	if ! grep -qx "$fam" <<<"$AVAILABLE"; then
		echo "SKIP: $fam (this iscsi-test-cu has no such family)"
		NSKIP=$((NSKIP + 1))
		continue
	fi
	if ! daemon_alive; then
		echo "    restarting the daemon"
		start_daemon "$PORT" -c "$CONF" || { NFAIL=$((NFAIL + 1)); FAILED_FAMILIES+=("$fam (daemon would not restart)"); continue; }
	fi
	if [ "$SECONDS" -ge "$BUDGET" ]; then
		echo "FAIL: $fam: not run, the run's time budget of ${BUDGET}s is used up"
		NFAIL=$((NFAIL + 1))
		FAILED_FAMILIES+=("$fam (not run)")
		continue
	fi
	out=$T/$fam.out
	start=$SECONDS
	# libiscsi keeps reconnecting to a daemon that died: stop the run a few
	# seconds after the daemon is gone instead of waiting for the timeout.
	timeout -k 10 "$FAMILY_TIMEOUT" iscsi-test-cu -d -v --test "ALL.$fam" "$URL" "$URL" >"$out" 2>&1 &
	tpid=$!
	while kill -0 "$tpid" 2>/dev/null; do
		if ! daemon_alive; then
			sleep 3
			kill -TERM "$tpid" 2>/dev/null
			break
		fi
		sleep 0.2
	done
	wait "$tpid"
	rc=$?
	read -r p f s cf summary < <(parse_cunit "$out" 2>"$T/$fam.detail")
	why=
	[ "$rc" = 124 ] && why="timed out after ${FAMILY_TIMEOUT}s"
	[ -z "$why" ] && [ "$summary" != 1 ] && why="no CUnit summary (exit $rc)"
	[ -z "$why" ] && [ "$cf" != "$f" ] && why="CUnit counts $cf failed test(s), parsed $f"
	[ -z "$why" ] && [ $((p + f + s)) = 0 ] && why="ran no test"
	if ! daemon_alive; then
		why="${why:+$why; }the daemon died"
	fi
	if [ -n "$why" ] && [ "$f" = 0 ]; then
		f=1
	fi
	NPASS=$((NPASS + p))
	NFAIL=$((NFAIL + f))
	NSKIP=$((NSKIP + s))
	if [ "$f" != 0 ]; then
		FAILED_FAMILIES+=("$fam")
		echo "FAIL: $fam: $p passed, $f failed, $s skipped ($((SECONDS - start))s)${why:+ - $why}"
		cat "$T/$fam.detail"
		echo "    --- iscsi-test-cu output ---"
		sed -n '/^Suite:/,$p' "$out" | sed 's/^/    | /' | head -n 200
		if ! daemon_alive; then
			echo "    --- daemon log (tail) ---"
			tail -n 40 "$TD_DAEMON_LOG" | sed 's/^/    | /'
		fi
	else
		echo "PASS: $fam: $p passed, $s skipped ($((SECONDS - start))s)"
		[ "$s" != 0 ] && cat "$T/$fam.detail"
	fi
done

if daemon_alive; then
	if ! stop_daemon TERM; then
		NFAIL=$((NFAIL + 1))
		FAILED_FAMILIES+=("clean shutdown")
	fi
fi

if [ "${#FAILED_FAMILIES[@]}" != 0 ]; then
	echo "conformance: failed families: ${FAILED_FAMILIES[*]}"
fi
echo "$NPASS passed, $NFAIL failed, $NSKIP skipped"
[ "$NFAIL" = 0 ]
