# shellcheck shell=bash
# Shared helpers for targetd's shell tests (bash). Source it:
#   . "$(dirname "$0")/lib.sh"
#
# Environment (set by `make check`, guessed when a script is run by hand
# from the top of a build tree):
#   TARGETD           the daemon binary
#   ITEST             the libiscsi test client (tests/itest)
#   SRCDIR            the source tree
#   TARGETD_VALGRIND  1 = run the daemon under valgrind (memcheck)
#   TARGETD_KEEP_TMP  1 = keep the temporary directory for a post-mortem
#
# Exit code 77 tells automake's test driver "skipped"; td_skip_all uses it
# and always says why.

: "${TARGETD:=$PWD/targetd/targetd}"
: "${ITEST:=$PWD/tests/itest}"
: "${SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${TARGETD_VALGRIND:=0}"
export TARGETD ITEST SRCDIR

TD_NAME="test"
TD_TMP=
TD_PASS=0
TD_FAIL=0
TD_SKIP=0
TD_FAILED_NAMES=()
TD_DAEMON_PID=
TD_DAEMON_LOG=
TD_DAEMON_SEQ=0

td_log() { printf '%s: %s\n' "$TD_NAME" "$*"; }

# td_init NAME: a temporary directory ($TD_TMP) removed on exit, and a
# trap that stops a daemon left running.
td_init() {
	TD_NAME=$1
	TD_TMP=$(mktemp -d "${TMPDIR:-/tmp}/targetd-$TD_NAME.XXXXXX") || exit 99
	trap td_cleanup EXIT
	trap 'td_log "interrupted"; exit 130' INT TERM
	if [ ! -x "$TARGETD" ]; then
		td_log "ERROR: daemon not found at $TARGETD (build it first, or set TARGETD)"
		exit 99
	fi
}

td_cleanup() {
	if [ -n "$TD_DAEMON_PID" ] && kill -0 "$TD_DAEMON_PID" 2>/dev/null; then
		kill -KILL "$TD_DAEMON_PID" 2>/dev/null
		wait "$TD_DAEMON_PID" 2>/dev/null
	fi
	if [ -n "$TD_TMP" ] && [ -d "$TD_TMP" ]; then
		if [ "${TARGETD_KEEP_TMP:-0}" = 1 ]; then
			td_log "kept $TD_TMP"
		else
			rm -rf "$TD_TMP"
		fi
	fi
}

# td_skip_all REASON: skip the whole script (exit 77) with the reason printed.
td_skip_all() {
	td_log "SKIP: $*"
	exit 77
}

# td_need_cmd CMD...: these commands are part of the test suite's
# dependencies (.ci/install-deps installs them): missing ones are an error,
# not a skip.
td_need_cmd() {
	local c missing=0
	for c in "$@"; do
		if ! command -v "$c" >/dev/null 2>&1; then
			td_log "ERROR: required command '$c' not found; run .ci/install-deps"
			missing=1
		fi
	done
	[ "$missing" = 0 ] || exit 99
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
		return
	fi
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

# port_open PORT: true if something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# write_conf FILE: the config text comes on stdin.
write_conf() {
	cat >"$1"
}

# td_daemon_cmd: the command line prefix that runs the daemon (with valgrind
# when asked). Under valgrind the backstores use the worker pool
# (TARGETD_NO_URING=1): memcheck cannot see the kernel filling read buffers
# through io_uring and would report every byte read from a file LUN as
# uninitialised when it is sent.
td_daemon_cmd() {
	if [ "$TARGETD_VALGRIND" = 1 ]; then
		printf '%s\n' env TARGETD_NO_URING=1 valgrind -q --error-exitcode=99 --leak-check=full \
			--errors-for-leak-kinds=definite --show-leak-kinds=definite \
			--track-origins=yes --num-callers=30 "$TARGETD"
	else
		printf '%s\n' "$TARGETD"
	fi
}

# start_daemon PORT ARGS...: run the daemon in the foreground mode in the
# background with ARGS (e.g. -c FILE), its output in $TD_DAEMON_LOG, and
# wait until 127.0.0.1:PORT accepts connections. Fails (printing the log)
# if the daemon exits or does not listen in time.
start_daemon() {
	local port=$1 wait_s=20 i
	shift
	local -a cmd
	mapfile -t cmd < <(td_daemon_cmd)
	[ "$TARGETD_VALGRIND" = 1 ] && wait_s=90
	TD_DAEMON_SEQ=$((TD_DAEMON_SEQ + 1))
	TD_DAEMON_LOG=$TD_TMP/targetd.$TD_DAEMON_SEQ.log
	"${cmd[@]}" -f "$@" >"$TD_DAEMON_LOG" 2>&1 &
	TD_DAEMON_PID=$!
	for ((i = 0; i < wait_s * 10; i++)); do
		if ! kill -0 "$TD_DAEMON_PID" 2>/dev/null; then
			wait "$TD_DAEMON_PID"
			td_log "daemon exited with status $? before listening on port $port; its log:"
			sed 's/^/    | /' "$TD_DAEMON_LOG"
			TD_DAEMON_PID=
			return 1
		fi
		if port_open "$port"; then
			return 0
		fi
		sleep 0.1
	done
	td_log "daemon did not listen on 127.0.0.1:$port within ${wait_s}s; its log:"
	sed 's/^/    | /' "$TD_DAEMON_LOG"
	kill -KILL "$TD_DAEMON_PID" 2>/dev/null
	wait "$TD_DAEMON_PID" 2>/dev/null
	TD_DAEMON_PID=
	return 1
}

# stop_daemon [SIGNAL]: send SIGTERM (or SIGNAL), wait up to 20 s (valgrind:
# 60 s) and require exit status 0. Prints the log on failure.
stop_daemon() {
	local sig=${1:-TERM} wait_s=20 i rc
	[ "$TARGETD_VALGRIND" = 1 ] && wait_s=60
	if [ -z "$TD_DAEMON_PID" ]; then
		td_log "stop_daemon: no daemon running"
		return 1
	fi
	if ! kill -"$sig" "$TD_DAEMON_PID" 2>/dev/null; then
		wait "$TD_DAEMON_PID"
		rc=$?
		td_log "daemon had already exited (status $rc) before SIG$sig; its log:"
		sed 's/^/    | /' "$TD_DAEMON_LOG"
		TD_DAEMON_PID=
		return 1
	fi
	for ((i = 0; i < wait_s * 10; i++)); do
		kill -0 "$TD_DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$TD_DAEMON_PID" 2>/dev/null; then
		td_log "daemon still running ${wait_s}s after SIG$sig; killing it; its log:"
		sed 's/^/    | /' "$TD_DAEMON_LOG"
		kill -KILL "$TD_DAEMON_PID" 2>/dev/null
		wait "$TD_DAEMON_PID" 2>/dev/null
		TD_DAEMON_PID=
		return 1
	fi
	wait "$TD_DAEMON_PID"
	rc=$?
	TD_DAEMON_PID=
	if [ "$rc" != 0 ]; then
		td_log "daemon exited with status $rc after SIG$sig (expected 0); its log:"
		sed 's/^/    | /' "$TD_DAEMON_LOG"
		return 1
	fi
	return 0
}

# wait_log PATTERN [SECONDS]: wait until the daemon's log has a line with
# the fixed string PATTERN (the daemon may accept connections a moment
# before it prints its start-up lines).
wait_log() {
	local pat=$1 t=${2:-10} i
	[ "$TARGETD_VALGRIND" = 1 ] && t=$((t * 6))
	for ((i = 0; i < t * 10; i++)); do
		grep -q -F -e "$pat" "$TD_DAEMON_LOG" && return 0
		sleep 0.1
	done
	return 1
}

# daemon_alive: the daemon started by start_daemon is still running.
daemon_alive() {
	[ -n "$TD_DAEMON_PID" ] && kill -0 "$TD_DAEMON_PID" 2>/dev/null
}

# run_test NAME CMD...: run one test case, its output captured; print PASS
# or FAIL (with the output, and the daemon log's tail if the daemon died).
# Test cases are time-bounded (TD_TEST_TIMEOUT seconds, default 300).
run_test() {
	local name=$1 out rc
	shift
	out=$TD_TMP/case.out
	td_timeout "${TD_TEST_TIMEOUT:-300}" "$@" >"$out" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		TD_PASS=$((TD_PASS + 1))
		echo "PASS: $name"
		[ "${TD_VERBOSE:-0}" = 1 ] && sed 's/^/    | /' "$out"
	else
		TD_FAIL=$((TD_FAIL + 1))
		TD_FAILED_NAMES+=("$name")
		[ "$rc" = 124 ] && echo "    (timed out after ${TD_TEST_TIMEOUT:-300}s)"
		echo "FAIL: $name (exit $rc)"
		sed 's/^/    | /' "$out"
		if [ -n "$TD_DAEMON_PID" ] && ! daemon_alive; then
			echo "    the daemon is gone; last lines of its log:"
			tail -n 40 "$TD_DAEMON_LOG" | sed 's/^/    | /'
		fi
	fi
	return 0
}

# td_timeout SECONDS CMD...: run CMD (a program or a shell function) and
# stop it after SECONDS; exit status 124 then, like timeout(1).
td_timeout() {
	local t=$1 pid wd rc
	shift
	if ! declare -F "$1" >/dev/null; then
		timeout -k 10 "$t" "$@"
		return
	fi
	("$@") &
	pid=$!
	(
		sleep "$t" &
		s=$!
		trap 'kill $s 2>/dev/null; exit 0' TERM
		wait $s
		echo "timed out after ${t}s" >&2
		pkill -TERM -P "$pid" 2>/dev/null
		kill -TERM "$pid" 2>/dev/null
		exit 1
	) &
	wd=$!
	wait "$pid"
	rc=$?
	if kill -TERM "$wd" 2>/dev/null; then
		wait "$wd" 2>/dev/null
	else
		wait "$wd" 2>/dev/null
		rc=124
	fi
	return "$rc"
}

# run_here NAME FUNCTION ARGS...: like run_test, but in the current shell
# (no timeout wrapper): for steps that must change this shell's state or
# wait for its children, such as stop_daemon. Bound the time inside.
run_here() {
	local name=$1 out rc
	shift
	out=$TD_TMP/case.out
	"$@" >"$out" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		TD_PASS=$((TD_PASS + 1))
		echo "PASS: $name"
	else
		TD_FAIL=$((TD_FAIL + 1))
		TD_FAILED_NAMES+=("$name")
		echo "FAIL: $name (exit $rc)"
		sed 's/^/    | /' "$out"
	fi
	return 0
}

# skip_test NAME REASON: count a case as skipped, saying why.
skip_test() {
	TD_SKIP=$((TD_SKIP + 1))
	echo "SKIP: $1 ($2)"
}

# expect_fail NAME CMD...: like run_test, but the command must fail (exit != 0).
expect_fail() {
	local name=$1
	shift
	run_test "$name" td_negate "$@"
}

td_negate() {
	if "$@"; then
		echo "expected failure, but the command succeeded: $*"
		return 1
	fi
	return 0
}

# td_summary: the closing line "N passed, N failed" and the exit status
# (1 if anything failed).
td_summary() {
	local n
	if [ "$TD_SKIP" != 0 ]; then
		echo "$TD_NAME: $TD_SKIP case(s) skipped, see SKIP lines above"
	fi
	if [ "$TD_FAIL" != 0 ]; then
		echo "$TD_NAME: failed cases:"
		for n in "${TD_FAILED_NAMES[@]}"; do
			echo "    $n"
		done
	fi
	echo "$TD_PASS passed, $TD_FAIL failed"
	[ "$TD_FAIL" = 0 ]
}
