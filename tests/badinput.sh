#!/bin/bash
# Bad input on the iSCSI transport: tests/pdufuzz (a raw-TCP initiator that
# writes its PDUs by hand) against the real daemon with a memory LUN and
# login_timeout = 2. Every case must end in a Reject or a clean drop of the
# offending connection only: never a crash, never harm to another session
# (pdufuzz keeps a healthy session open through each case and checks it
# after). At the end the daemon must still be running and must stop with
# exit status 0 on SIGTERM.
#
# Environment: PDUFUZZ (the client), PDUFUZZ_SEED and PDUFUZZ_COUNT (the
# random case), TARGETD_VALGRIND=1 (daemon under valgrind; see lib.sh).
# Closes with "N passed, N failed"; exits 1 if anything failed.
set -u
. "$(dirname "$0")/lib.sh"

: "${PDUFUZZ:=$PWD/tests/pdufuzz}"
: "${PDUFUZZ_SEED:=20261129}"
: "${PDUFUZZ_COUNT:=4000}"

td_init badinput
td_need_cmd python3 timeout
if [ ! -x "$PDUFUZZ" ]; then
	td_log "ERROR: $PDUFUZZ not built (make check builds it)"
	exit 99
fi

T=$TD_TMP
LOGIN_TIMEOUT=2
IQN=iqn.2026-11.org.targetd:default
SLOW=()
[ "$TARGETD_VALGRIND" = 1 ] && SLOW=(-S)

# write_config FILE PORT THREADS
write_config() {
	td_write_conf "$1" -p "$2" -t "$3" -S "$T/control-$2.sock" <<EOF
login_timeout = $LOGIN_TIMEOUT;
targets = (
  {
    iqn = "$IQN";
    luns = ( { lun = 0; backstore = "memory"; size = "64M"; } );
  }
);
EOF
}

# sanitizer_clean: the daemon's log holds no AddressSanitizer, UBSan or
# valgrind report.
sanitizer_clean() {
	if grep -n -E 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|==[0-9]+== (Invalid|Conditional|Use of|Syscall param)' \
		"$TD_DAEMON_LOG"; then
		echo "sanitizer report in $TD_DAEMON_LOG:"
		sed 's/^/    | /' "$TD_DAEMON_LOG" | head -200
		return 1
	fi
	return 0
}

# still_running PORT: the daemon is alive and serves: a new session logs
# in and gets REPORT LUNS answered (a daemon that crashed, even one that
# valgrind takes a while to end, cannot), and the process is still there.
still_running() {
	if ! timeout -k 10 $((120 * TD_TIME_SCALE)) "$ITEST" login "iscsi://127.0.0.1:$1/$IQN/0" || ! daemon_alive; then
		echo "the daemon does not serve any more; its log:"
		sed 's/^/    | /' "$TD_DAEMON_LOG" | tail -60
		return 1
	fi
}

PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
CONF=$T/targetd.conf
write_config "$CONF" "$PORT" 2
td_log "port $PORT, temp dir $T, seed $PDUFUZZ_SEED, $PDUFUZZ_COUNT random PDUs"

if ! start_daemon "$PORT" -c "$CONF"; then
	TD_FAIL=$((TD_FAIL + 1))
	TD_FAILED_NAMES+=("daemon start")
	td_summary
	exit 1
fi

pdufuzz() {
	"$PDUFUZZ" -a "127.0.0.1:$1" -t "$IQN" -T "$LOGIN_TIMEOUT" -s "$PDUFUZZ_SEED" \
		-n "$PDUFUZZ_COUNT" "${SLOW[@]}" "$2"
}

# Every case but mcs-pipelined, which needs a daemon of its own (below),
# and the limit-* cases (tests/limits.sh).
mapfile -t CASES < <("$PDUFUZZ" -l | awk '$1 != "mcs-pipelined" && $1 !~ /^limit-/ { print $1 }')
if [ "${#CASES[@]}" -lt 10 ]; then
	td_log "ERROR: pdufuzz -l listed only ${#CASES[@]} cases"
	exit 99
fi
for c in "${CASES[@]}"; do
	run_test "pdufuzz $c" pdufuzz "$PORT" "$c"
	if ! daemon_alive; then
		# A crash: count it, show it, and go on with a new daemon so
		# the remaining cases still say something.
		TD_FAIL=$((TD_FAIL + 1))
		TD_FAILED_NAMES+=("daemon survives $c")
		echo "FAIL: the daemon died during $c; its log:"
		sed 's/^/    | /' "$TD_DAEMON_LOG" | tail -60
		wait "$TD_DAEMON_PID" 2>/dev/null
		TD_DAEMON_PID=
		start_daemon "$PORT" -c "$CONF" || break
	fi
done

run_here "daemon still running after every case" still_running "$PORT"
run_here "no sanitizer or valgrind report in the daemon log" sanitizer_clean
run_here "SIGTERM: clean shutdown, exit 0" stop_daemon TERM

# A connection joining a session owned by another network thread, with a
# command pipelined behind its final Login Request: the reader of the
# accepting thread must not go on parsing after handing the connection
# over. Two threads, so the hand-over happens.
PORT2=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
CONF2=$T/targetd-mcs.conf
write_config "$CONF2" "$PORT2" 2
if start_daemon "$PORT2" -c "$CONF2"; then
	run_test "pdufuzz mcs-pipelined (2 network threads)" pdufuzz "$PORT2" mcs-pipelined
	run_here "daemon still running after mcs-pipelined" still_running "$PORT2"
	run_here "no sanitizer or valgrind report in the daemon log (mcs-pipelined)" sanitizer_clean
	if daemon_alive; then
		run_here "SIGTERM after mcs-pipelined: clean shutdown, exit 0" stop_daemon TERM
	fi
else
	TD_FAIL=$((TD_FAIL + 1))
	TD_FAILED_NAMES+=("daemon start for mcs-pipelined")
fi

td_summary
