#!/bin/bash
# The shell tests' own helpers (tests/lib.sh), checked before anything
# relies on them:
#  - many quick cases in a row: the temporary directory survives every one
#    and no case is reported as timed out (the watchdog of a case that
#    ended at once used to run the inherited EXIT trap, which removed the
#    directory under the running test, or to lose its signal);
#  - a case that runs too long ends with status 124 and leaves no process
#    behind;
#  - the clean-up runs only in the shell that ran td_init, not in a
#    subshell that exits or gets a signal;
#  - td_poll returns as soon as its condition holds, and fails at its
#    deadline;
#  - the shared configuration prologue gives a configuration the daemon
#    accepts, with the state and control socket in the test's directory;
#  - the loop-device probes answer yes, or no with a reason.
# Closes with "N passed, N failed"; exits 1 if anything failed.
set -u
. "$(dirname "$0")/lib.sh"

td_init harness
td_need_cmd pgrep timeout

QUICK=${HARNESS_QUICK_CASES:-400}

quick() { return 0; }
quick_fail() { return 3; }

# many_quick: QUICK cases of nothing at all, run by run_test in this very
# shell as every test does; each must pass at once
many_quick() {
	local i out=$TD_TMP/quick.out t0 t1 pass=$TD_PASS fail=$TD_FAIL rc=0
	for ((i = 1; i <= QUICK; i++)); do
		t0=$(td_now_ms)
		run_test "quick $i" quick >"$out" 2>&1
		t1=$(td_now_ms)
		if [ "$(cat "$out" 2>&1)" != "PASS: quick $i" ]; then
			echo "case $i: $(cat "$out" 2>&1)"
			rc=1
		elif [ ! -w "$TD_TMP/case.out" ]; then
			echo "case.out vanished after case $i"
			rc=1
		elif [ $((t1 - t0)) -ge $((60000 * TD_TIME_SCALE)) ]; then
			# far below the case timeout: a lost watchdog signal costs 300 s
			echo "case $i took $((t1 - t0)) ms"
			rc=1
		fi
		[ -d "$TD_TMP" ] || { echo "the temporary directory vanished after case $i"; exit 1; }
		[ "$rc" = 0 ] || break
	done
	# these cases are not counted in this script's total
	TD_PASS=$pass
	TD_FAIL=$fail
	[ "$rc" = 0 ] && echo "$QUICK quick cases passed; $TD_TMP is still there"
	return "$rc"
}

# failing_case: a function's exit status comes through run_test's wrapper
failing_case() {
	local rc
	td_timeout 60 quick_fail
	rc=$?
	[ "$rc" = 3 ] || { echo "status $rc, expected 3"; return 1; }
}

# long MARKER: a function that starts a child (its pid in MARKER) and
# would run for 1000 s
long() {
	sleep 1000 &
	echo "$!" >"$1"
	sleep 1000
}

# overrun: a function that outlives its timeout is stopped, with its
# children, and td_timeout says 124
overrun() {
	local rc t0 t1 marker=$TD_TMP/overrun.$$
	t0=$(td_now_ms)
	td_timeout 2 long "$marker"
	rc=$?
	t1=$(td_now_ms)
	echo "status $rc after $((t1 - t0)) ms"
	[ "$rc" = 124 ] || { echo "expected 124"; return 1; }
	[ -s "$marker" ] || { echo "the function did not start its child"; return 1; }
	if ! td_poll 30 td_gone "$(cat "$marker")"; then
		echo "the function's child $(cat "$marker") is still running"
		kill -KILL "$(cat "$marker")"
		return 1
	fi
}

# subshell_keeps_tmp: a subshell that exits, or is signalled (at once,
# while it may still hold the inherited traps, or later), runs no clean-up
subshell_keeps_tmp() {
	local pid sig i
	(exit 0)
	(td_cleanup)
	(td_exit)
	(exit 1)
	[ -d "$TD_TMP" ] || { echo "a subshell's exit removed $TD_TMP"; return 1; }
	for sig in TERM INT; do
		for ((i = 0; i < 20; i++)); do
			(
				sleep 0.1
				:
			) &
			pid=$!
			((i % 2)) && sleep 0.02
			kill -"$sig" "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			[ -d "$TD_TMP" ] || { echo "a subshell given SIG$sig removed $TD_TMP"; return 1; }
		done
	done
	echo "$TD_TMP survived 4 exits and 40 signalled subshells"
}

# polls: td_poll waits for a condition, at most its deadline
polls() {
	local f=$TD_TMP/poll.flag t0 t1
	rm -f "$f"
	(sleep 0.5; : >"$f") &
	t0=$(td_now_ms)
	td_poll 30 test -e "$f" || { echo "td_poll missed a file that appeared"; return 1; }
	t1=$(td_now_ms)
	echo "the condition held after $((t1 - t0)) ms"
	[ $((t1 - t0)) -lt $((20000 * TD_TIME_SCALE)) ] || { echo "td_poll did not return when the condition held"; return 1; }
	wait
	t0=$(td_now_ms)
	if td_poll 1 false; then
		echo "td_poll of false succeeded"
		return 1
	fi
	t1=$(td_now_ms)
	echo "a condition that never held: deadline after $((t1 - t0)) ms"
	[ $((t1 - t0)) -ge $((1000 * TD_TIME_SCALE)) ] || { echo "td_poll gave up before its deadline"; return 1; }
}

# prologue: the shared prologue, checked by the daemon itself
prologue() {
	local c=$TD_TMP/prologue.conf
	td_write_conf "$c" -p 3260 -p 3261 <<EOF
targets = ( { iqn = "iqn.2026-11.org.targetd.test:harness"; luns = ( { lun = 0; backstore = "memory"; size = "1M"; } ); } );
EOF
	cat "$c"
	"$TARGETD" --check-config -c "$c" || return 1
	grep -qx "state_dir = \"$TD_TMP/state\";" "$c" || { echo "state_dir not in the test's directory"; return 1; }
	grep -qx "control_socket = \"$TD_TMP/control.sock\";" "$c" || { echo "control socket not in the test's directory"; return 1; }
	grep -qx 'listen = \[ "127.0.0.1:3260","127.0.0.1:3261" \];' "$c" || { echo "listen line"; return 1; }
	[ -d "$TD_TMP/state" ] || { echo "the state directory was not created"; return 1; }
}

# loop_probes: each probe answers; a "no" always has a reason
loop_probes() {
	local img=$TD_TMP/probe.img
	if td_can_loop_mount xfs; then
		echo "td_can_loop_mount xfs: yes"
	else
		echo "td_can_loop_mount xfs: no: $TD_WHY"
		[ -n "$TD_WHY" ] || { echo "no reason given"; return 1; }
	fi
	truncate -s 1M "$img"
	if td_loop_attach "$img"; then
		echo "td_loop_attach: $TD_LOOPDEV"
		[ -b "$TD_LOOPDEV" ] || { echo "$TD_LOOPDEV is not a block device"; return 1; }
		td_loop_detach "$TD_LOOPDEV" || { echo "cannot detach $TD_LOOPDEV"; return 1; }
		[ "${#TD_LOOPDEVS[@]}" = 0 ] || { echo "still listed for detaching: ${TD_LOOPDEVS[*]}"; return 1; }
	else
		echo "td_loop_attach: no: $TD_WHY"
		[ -n "$TD_WHY" ] || { echo "no reason given"; return 1; }
	fi
	rm -f "$img"
}

run_here "$QUICK quick cases in a row keep the temporary directory" many_quick
run_here "a subshell's exit or signal runs no clean-up" subshell_keeps_tmp
run_test "a function's exit status comes through td_timeout" failing_case
run_test "a case over its time is stopped with its children (status 124)" overrun
run_test "td_poll returns when the condition holds, fails at the deadline" polls
run_test "the shared configuration prologue is accepted by the daemon" prologue
run_here "loop-device probes answer, with a reason when they cannot" loop_probes
td_summary
