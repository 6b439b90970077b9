#!/bin/bash
# Reservations and multipath against the real daemon: one LUN reached
# through two portals in two target portal groups.
#  - libiscsi's persistent reservation, RESERVE(6) and multipath suites
#    (iscsi-test-cu with URL1 URL2): every test must pass, none skipped;
#  - tests/prtest: the access rules of each reservation type for holder,
#    registrant and non-registrant; PREEMPT AND ABORT of WRITEs in flight;
#    RESERVE(6) against COMPARE AND WRITE; an APTPL registration and
#    reservation surviving kill -9; a damaged state file costing only its
#    own LUN its registrations (the daemon starts, the other LUN serves, the
#    file is kept as it was and restores once repaired);
#  - ALUA: SendTargets lists both portals, REPORT TARGET PORT GROUPS from
#    each portal gives the configured states, a standby path refuses media
#    access with NOT READY 04/0B, SET TARGET PORT GROUPS reaches the other
#    session as a unit attention.
# Closes with "N passed, N failed"; exits 1 if anything failed.
set -u
. "$(dirname "$0")/lib.sh"

: "${PRTEST:=$PWD/tests/prtest}"
td_init reservations
td_need_cmd iscsi-test-cu iscsi-ls timeout
if [ ! -x "$PRTEST" ]; then
	td_log "ERROR: $PRTEST not built (make check builds it)"
	exit 99
fi

T=$TD_TMP
PORT1=$(free_port) || exit 99
PORT2=$(free_port) || exit 99
while [ "$PORT2" = "$PORT1" ]; do PORT2=$(free_port) || exit 99; done
IQN=iqn.2026-11.org.targetd.test:pr
URL1=iscsi://127.0.0.1:$PORT1/$IQN/0
URL2=iscsi://127.0.0.1:$PORT2/$IQN/0
STATE=$T/state/pr-$IQN-lun0.state
td_log "portals $PORT1 (tpgt 1) and $PORT2 (tpgt 2), temp dir $T"

# write_pr_conf STATE2: the configuration, portal group 2 in STATE2
write_pr_conf() {
	td_write_conf "$T/targetd.conf" -L "( { address = \"127.0.0.1:$PORT1\"; tpgt = 1; },
           { address = \"127.0.0.1:$PORT2\"; tpgt = 2; } )" <<EOF
portal_groups = ( { tpgt = 1; state = "active/optimized"; preferred = true; },
                  { tpgt = 2; state = "$1"; } );
targets = ( { iqn = "$IQN";
              luns = ( { lun = 0; backstore = "file"; path = "$T/lun0.img"; size = "128M"; },
                       { lun = 1; backstore = "memory"; size = "16M"; } ); } );
EOF
}

# libiscsi_family FAMILY: run one iscsi-test-cu family through both paths.
# A test passes when CUnit says "passed" and it printed no [SKIPPED];
# output after a verdict belongs to the suite's clean-up and is shown.
libiscsi_family() {
	local fam=$1 out=$T/cu-$1.log
	timeout -k 10 600 iscsi-test-cu -d -v --test "ALL.$fam" "$URL1" "$URL2" >"$out" 2>&1
	awk -v fam="$fam" '
	function done_test() {
		if (name == "") return
		if (verdict == "passed" && !skipped) np++
		else if (verdict == "passed") { ns++; printf "    skipped %s: %s\n", name, why }
		else { nf++; printf "    failed %s%s\n", name, verdict == "" ? " (no verdict)" : "" }
		name = ""
	}
	function see(s) {
		if (verdict == "") {
			if (s ~ /^passed/) { verdict = "passed"; rest = s; sub(/^passed */, "", rest)
				if (rest != "") printf "    after %s: %s\n", name, rest }
			else if (s ~ /^FAILED/) verdict = "FAILED"
			else if (index(s, "[SKIPPED]")) { skipped = 1; if (why == "") why = s }
		} else if (s != "") printf "    after %s: %s\n", name, s
	}
	/^Suite: / { done_test(); suite = substr($0, 8); next }
	/^  Test: / { done_test(); l = substr($0, 9); p = index(l, " ...")
		name = suite "." substr(l, 1, p - 1); verdict = ""; skipped = 0; why = ""
		see(substr(l, p + 4)); next }
	/^Run Summary:/ { done_test(); over = 1; next }
	!over && name != "" { see($0) }
	END { done_test(); printf "%s: %d passed, %d failed, %d skipped\n", fam, np, nf, ns
	      exit (nf || ns || np == 0) ? 1 : 0 }
	' "$out"
}

write_pr_conf active/optimized
start_daemon "$PORT1" -c "$T/targetd.conf" || { echo "0 passed, 1 failed"; exit 1; }

# SendTargets through one portal lists both
sendtargets() {
	local out
	out=$(iscsi-ls "iscsi://127.0.0.1:$PORT1") || return 1
	echo "$out"
	grep -q "127.0.0.1:$PORT1,1" <<<"$out" && grep -q "127.0.0.1:$PORT2,2" <<<"$out"
}
run_test "SendTargets reports both portals with their tags" sendtargets

for fam in PrinReadKeys PrinServiceactionRange PrinReportCapabilities ProutRegister \
	ProutReserve ProutClear ProutPreempt Reserve6 MultipathIO; do
	run_test "libiscsi $fam through two portals" libiscsi_family "$fam"
done

run_test "access rules of every type (holder, registrant, non-registrant)" \
	"$PRTEST" access "$URL1" "$URL2"
run_test "PREEMPT AND ABORT aborts the preempted WRITEs in flight" \
	"$PRTEST" preempt-abort "$URL1" "$URL2"
"$PRTEST" caw "$URL1" "$URL2" >"$T/caw.out" 2>&1
case $? in
0) TD_PASS=$((TD_PASS + 1)); echo "PASS: RESERVE(6) against COMPARE AND WRITE" ;;
77) skip_test "RESERVE(6) against COMPARE AND WRITE" "$(grep SKIP "$T/caw.out")" ;;
*) TD_FAIL=$((TD_FAIL + 1)); TD_FAILED_NAMES+=("RESERVE(6) against COMPARE AND WRITE")
   echo "FAIL: RESERVE(6) against COMPARE AND WRITE"; sed 's/^/    | /' "$T/caw.out" ;;
esac
run_test "RTPG through portal 1" "$PRTEST" rtpg "$URL1" "1:ao:p,2:ao"
run_test "RTPG through portal 2" "$PRTEST" rtpg "$URL2" "1:ao:p,2:ao"

# APTPL: a registration and reservation survive kill -9
run_test "APTPL registration and reservation" "$PRTEST" aptpl-set "$URL1"
run_test "state file written" test -s "$STATE"
kill -KILL "$TD_DAEMON_PID"
wait "$TD_DAEMON_PID" 2>/dev/null
TD_DAEMON_PID=
start_daemon "$PORT1" -c "$T/targetd.conf" || { td_summary; exit 1; }
run_test "the daemon says it restored them" grep -q "restored 1 registration and a reservation" "$TD_DAEMON_LOG"
run_test "READ FULL STATUS after kill -9 and restart" "$PRTEST" aptpl-check "$URL1"

# a damaged state file costs only its own LUN: the daemon starts, that LUN
# serves without the file's registrations (and without APTPL), the other
# LUN as usual; the log names the file and what to do; the file is kept
run_test "APTPL registration again" "$PRTEST" aptpl-set "$URL1"
stop_daemon
cp "$STATE" "$T/state.good"
sed -i 's/^reg 0/reg 1/' "$STATE"
cp "$STATE" "$T/state.damaged"
start_daemon "$PORT1" -c "$T/targetd.conf" || { td_summary; exit 1; }
damaged_logged() {
	grep "$STATE" "$TD_DAEMON_LOG"
	grep -q "$STATE: checksum mismatch.*starts without the persistent reservations.*repair or remove it" \
		"$TD_DAEMON_LOG"
}
run_test "a damaged state file: the daemon starts and says which file and what to do" damaged_logged
run_test "the other LUN serves" "$PRTEST" active "iscsi://127.0.0.1:$PORT1/$IQN/1"
run_test "the LUN of the damaged file serves, its reservation not restored" "$PRTEST" active "$URL1"
stop_daemon
run_test "the damaged file is kept as it was" cmp -s "$STATE" "$T/state.damaged"
cp "$T/state.good" "$STATE"
start_daemon "$PORT1" -c "$T/targetd.conf" || { td_summary; exit 1; }
run_test "the repaired file restores" "$PRTEST" aptpl-check "$URL1"
stop_daemon

# ALUA: portal group 2 in standby
write_pr_conf standby
start_daemon "$PORT1" -c "$T/targetd.conf" || { td_summary; exit 1; }
run_test "RTPG through portal 1 (group 2 standby)" "$PRTEST" rtpg "$URL1" "1:ao:p,2:s"
run_test "RTPG through portal 2 (group 2 standby)" "$PRTEST" rtpg "$URL2" "1:ao:p,2:s"
run_test "the standby path refuses media access with 04/0B" "$PRTEST" standby "$URL2"
run_test "SET TARGET PORT GROUPS: group 2 active/non-optimized" \
	"$PRTEST" stpg "$URL1" "$URL2" 2 an
run_test "RTPG after SET TARGET PORT GROUPS" "$PRTEST" rtpg "$URL2" "1:ao:p,2:an"
run_test "the path of group 2 accepts media access again" "$PRTEST" active "$URL2"
# a reload that changes portal_groups reaches the running sessions
write_pr_conf unavailable
kill -HUP "$TD_DAEMON_PID"
reloaded() {
	wait_log "portal group 2 now unavailable" && return 0
	cat "$TD_DAEMON_LOG"
	return 1
}
run_test "SIGHUP reload applies portal_groups" reloaded
run_test "RTPG after the reload" "$PRTEST" rtpg "$URL1" "1:ao:p,2:u"
stop_daemon

td_summary
