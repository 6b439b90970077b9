# shellcheck shell=bash disable=SC2034
# (SC2034: TD_WHY, TD_LOOPDEV and the counters are set here for the scripts)
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
#   TD_TIME_SCALE     multiply every deadline by this (default 1; 4 under
#                     valgrind)
#
# Exit code 77 tells automake's test driver "skipped"; td_skip_all uses it
# and always says why.
#
# Nothing here depends on the machine's speed: every wait is a poll with a
# deadline (td_poll), and a deadline is only reached when something is
# wrong, so they are generous. Work is sized by progress, never by time.

: "${TARGETD:=$PWD/targetd/targetd}"
: "${ITEST:=$PWD/tests/itest}"
: "${SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${TARGETD_VALGRIND:=0}"
if ((BASH_VERSINFO[0] < 5)); then
	echo "tests/lib.sh: bash 5 or later needed (EPOCHREALTIME), this is $BASH_VERSION" >&2
	exit 99
fi
if [ -z "${TD_TIME_SCALE:-}" ]; then
	TD_TIME_SCALE=1
	[ "$TARGETD_VALGRIND" = 1 ] && TD_TIME_SCALE=4
fi
export TARGETD ITEST SRCDIR TD_TIME_SCALE

TD_NAME="test"
TD_TMP=
TD_PASS=0
TD_FAIL=0
TD_SKIP=0
TD_FAILED_NAMES=()
TD_DAEMON_PID=
TD_DAEMON_LOG=
TD_DAEMON_SEQ=0
TD_MAIN_PID=
TD_EXIT_HOOKS=()
TD_LOOPDEVS=()
TD_MOUNTS=()
# results of the helpers, read by the scripts
TD_WHY=
TD_LOOPDEV=
TD_LAUNCHED_PID=

td_log() { printf '%s: %s\n' "$TD_NAME" "$*"; }

# td_init NAME: a temporary directory ($TD_TMP) removed on exit, and a
# trap that stops a daemon left running, unmounts what td_loop_mount
# mounted and detaches what td_loop_attach attached.
td_init() {
	TD_NAME=$1
	TD_MAIN_PID=$BASHPID
	TD_TMP=$(mktemp -d "${TMPDIR:-/tmp}/targetd-$TD_NAME.XXXXXX") || exit 99
	trap td_exit EXIT
	trap td_interrupted INT TERM
	td_need_cmd python3 pgrep mkfifo
	if [ ! -x "$TARGETD" ]; then
		td_log "ERROR: daemon not found at $TARGETD (build it first, or set TARGETD)"
		exit 99
	fi
}

# td_on_exit FUNCTION: run FUNCTION when the script exits, before the
# daemon is stopped and the temporary directory removed (the last one
# registered runs first). Scripts register here instead of replacing the
# EXIT trap.
td_on_exit() {
	TD_EXIT_HOOKS=("$1" "${TD_EXIT_HOOKS[@]}")
}

# Every subshell ( ... ), $( ... ) and background job inherits the traps,
# and bash runs an inherited trap in a subshell that receives the signal
# before it has reset its traps (td_timeout's watchdog, killed a moment
# after it was forked, did: its "exit" ran td_cleanup and removed $TD_TMP
# under the running test). So the clean-up runs only in the shell that ran
# td_init, whichever process the trap fires in.
td_in_main_shell() {
	[ -n "$TD_MAIN_PID" ] && [ "$BASHPID" = "$TD_MAIN_PID" ]
}

td_interrupted() {
	td_in_main_shell && td_log "interrupted"
	exit 130
}

td_exit() {
	local h
	td_in_main_shell || return 0
	for h in "${TD_EXIT_HOOKS[@]}"; do
		"$h"
	done
	td_cleanup
}

td_cleanup() {
	local i
	td_in_main_shell || return 0
	if [ -n "$TD_DAEMON_PID" ] && kill -0 "$TD_DAEMON_PID" 2>/dev/null; then
		kill -KILL "$TD_DAEMON_PID" 2>/dev/null
		wait "$TD_DAEMON_PID" 2>/dev/null
	fi
	for ((i = ${#TD_MOUNTS[@]} - 1; i >= 0; i--)); do
		td_umount "${TD_MOUNTS[i]}" || td_log "WARNING: could not unmount ${TD_MOUNTS[i]}"
	done
	for ((i = ${#TD_LOOPDEVS[@]} - 1; i >= 0; i--)); do
		td_loop_detach "${TD_LOOPDEVS[i]}" || td_log "WARNING: could not detach ${TD_LOOPDEVS[i]}"
	done
	td_release_ports
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

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now and
# that no other test running on this machine has taken. The ports come
# from below the kernel's ephemeral range (net.ipv4.ip_local_port_range),
# so that no client connection (of this test or another) can be given the
# port between this choice and the daemon's bind, and each is reserved for
# this script until it exits: a directory named by the port under
# ${TMPDIR:-/tmp}/targetd-test-ports-UID, holding the script's pid (a
# reservation whose script is gone is taken over).
TD_PORT_DIR=${TMPDIR:-/tmp}/targetd-test-ports-$(id -u)
free_port() {
	local lo=10000 hi=32767 elo p i dir=$TD_PORT_DIR
	if read -r elo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null &&
		[ "$elo" -gt $((lo + 1000)) ] 2>/dev/null; then
		hi=$((elo - 1))
	fi
	mkdir -p "$dir" 2>/dev/null
	for ((i = 0; i < 1000; i++)); do
		p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
		td_port_reserve "$dir/$p" || continue
		if td_port_bindable "$p"; then
			echo "$p"
			return 0
		fi
		rm -rf "$dir/$p"
	done
	td_log "ERROR: no free port in $lo-$hi"
	return 1
}

# td_port_reserve DIR: take the reservation DIR for this script (the
# shell that ran td_init), or take it over from a script that is gone.
td_port_reserve() {
	local owner
	if ! mkdir "$1" 2>/dev/null; then
		read -r owner <"$1/owner" 2>/dev/null || return 1   # being made, or broken: leave it
		[ -n "$owner" ] && [ ! -d "/proc/$owner" ] || return 1
		rm -rf "$1"
		mkdir "$1" 2>/dev/null || return 1
	fi
	echo "${TD_MAIN_PID:-$$}" >"$1/owner"
}

# td_port_bindable PORT: a listening socket can be bound to 127.0.0.1:PORT
# (as the daemon binds it, with SO_REUSEADDR).
td_port_bindable() {
	python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
s.close()' "$1" 2>/dev/null
}

# td_release_ports: drop this script's port reservations (at exit).
td_release_ports() {
	local d owner
	for d in "$TD_PORT_DIR"/*; do
		[ -d "$d" ] || continue
		read -r owner <"$d/owner" 2>/dev/null || continue
		[ "$owner" = "$TD_MAIN_PID" ] && rm -rf "$d"
	done
}

# port_open PORT: true if something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# td_now_ms: milliseconds on the wall clock (bash's EPOCHREALTIME).
td_now_ms() {
	local t=${EPOCHREALTIME/[.,]/}
	echo $((10#$t / 1000))
}

# td_poll SECONDS CMD...: run CMD (a program or a shell function) until it
# succeeds, every 0.1 s, for at most SECONDS (times TD_TIME_SCALE; the
# deadline is reached only when something is wrong, so give plenty).
# Status 0 once CMD succeeded, 1 at the deadline. CMD runs at least once.
td_poll() {
	local end
	end=$(($(td_now_ms) + $1 * TD_TIME_SCALE * 1000))
	shift
	while :; do
		"$@" && return 0
		[ "$(td_now_ms)" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# td_gone PID...: none of these processes exists (any more).
td_gone() {
	local p
	for p in "$@"; do
		kill -0 "$p" 2>/dev/null && return 1
	done
	return 0
}

# td_descendants PID: the process ids below PID, deepest first.
td_descendants() {
	local c
	for c in $(pgrep -P "$1"); do
		td_descendants "$c"
		echo "$c"
	done
}

# td_kill_tree PID: SIGTERM to PID and everything below it, SIGKILL to what
# is left after 10 s.
td_kill_tree() {
	local -a pids
	mapfile -t pids < <(td_descendants "$1")
	pids+=("$1")
	kill -TERM "${pids[@]}" 2>/dev/null
	td_poll 10 td_gone "${pids[@]}" || kill -KILL "${pids[@]}" 2>/dev/null
}

# write_conf FILE: the config text comes on stdin, written as is (for the
# configurations a test wants to be wrong, line by line).
write_conf() {
	cat >"$1"
}

# td_conf_prologue [-p PORT]... [-L LISTEN] [-t THREADS] [-s STATE_DIR]
#                  [-S CONTROL_SOCKET]: print the settings every test's
# configuration starts with:
#   listen = [ "127.0.0.1:PORT", ... ];  (-L: this value as written instead)
#   threads = 2;                         (-t; -t '' leaves the default)
#   state_dir = "$TD_TMP/state";         (-s; the directory is created)
#   control_socket = "$TD_TMP/control.sock";   (-S)
# The state and the control socket always live in the test's temporary
# directory: the daemon's defaults (/var/lib/targetd, /run/targetd) are
# the system's, and shared by every test running at the same time.
td_conf_prologue() {
	local OPTIND opt listen='' threads=2 state=$TD_TMP/state sock=$TD_TMP/control.sock
	local -a ports=()
	while getopts 'p:L:t:s:S:' opt; do
		case $opt in
		p) ports+=("\"127.0.0.1:$OPTARG\"") ;;
		L) listen=$OPTARG ;;
		t) threads=$OPTARG ;;
		s) state=$OPTARG ;;
		S) sock=$OPTARG ;;
		*) td_log "ERROR: td_conf_prologue: bad option"; return 2 ;;
		esac
	done
	if [ -z "$listen" ]; then
		[ "${#ports[@]}" != 0 ] || { td_log "ERROR: td_conf_prologue: no -p PORT or -L"; return 2; }
		listen="[ $(IFS=,; echo "${ports[*]}") ]"
	fi
	mkdir -p "$state" || return 1
	printf '# written by tests/%s.sh\n' "$TD_NAME"
	printf 'listen = %s;\n' "$listen"
	[ -n "$threads" ] && printf 'threads = %s;\n' "$threads"
	printf 'state_dir = "%s";\n' "$state"
	printf 'control_socket = "%s";\n' "$sock"
}

# td_write_conf FILE [td_conf_prologue options]: write FILE, the shared
# prologue followed by stdin (the targets and any other setting).
td_write_conf() {
	local f=$1
	shift
	{ td_conf_prologue "$@" && cat; } >"$f"
}

# ---------------------------------------------------------- loop devices
# A container or chroot may have no loop devices, or forbid attaching or
# mounting them (no CAP_SYS_ADMIN in the initial namespace). The helpers
# below try the real operation; on failure they return 1 with the reason
# in TD_WHY, and the test reports SKIP with it (never FAIL).

# td_one_line TEXT: TEXT on one line (a tool's message, for a SKIP reason).
td_one_line() {
	local t=${1//$'\n'/ }
	t=${t//$'\t'/ }
	while [[ $t == *"  "* ]]; do t=${t//  / }; done
	printf '%s\n' "${t% }"
}

# td_loop_devices_present: /dev has loop devices (TD_WHY says so if not).
td_loop_devices_present() {
	TD_WHY=
	if [ ! -e /dev/loop-control ] && ! compgen -G '/dev/loop[0-9]*' >/dev/null; then
		TD_WHY="no loop devices here (no /dev/loop-control, no /dev/loopN: a container?)"
		return 1
	fi
}

# td_loop_attach FILE: attach FILE to a free loop device; its name in
# TD_LOOPDEV. Detached at exit if the test does not (td_loop_detach).
td_loop_attach() {
	local out
	TD_LOOPDEV=
	TD_WHY=
	if ! command -v losetup >/dev/null 2>&1; then
		TD_WHY="no losetup (util-linux) on this machine"
		return 1
	fi
	td_loop_devices_present || return 1
	if ! out=$(losetup -f --show "$1" 2>&1) || [ ! -b "$out" ]; then
		TD_WHY="cannot attach a loop device (uid $(id -u)): $(td_one_line "${out:-losetup printed nothing}")"
		return 1
	fi
	TD_LOOPDEV=$out
	TD_LOOPDEVS+=("$out")
}

# td_loop_detach DEV: detach a loop device attached by td_loop_attach.
td_loop_detach() {
	local i rc=0
	losetup -d "$1" || rc=1
	for i in "${!TD_LOOPDEVS[@]}"; do
		[ "${TD_LOOPDEVS[i]}" = "$1" ] && unset 'TD_LOOPDEVS[i]'
	done
	TD_LOOPDEVS=("${TD_LOOPDEVS[@]}")
	return "$rc"
}

# td_loop_mount IMAGE DIR [MOUNT OPTIONS]: mount the file system in IMAGE
# on DIR through a loop device; unmounted at exit if the test does not
# (td_umount). The reason of a failure in TD_WHY.
td_loop_mount() {
	local img=$1 dir=$2 opts=loop out
	[ -n "${3:-}" ] && opts=loop,$3
	TD_WHY=
	mkdir -p "$dir" || return 1
	if ! out=$(mount -o "$opts" "$img" "$dir" 2>&1); then
		TD_WHY="cannot mount a loop device (uid $(id -u)): $(td_one_line "$out")"
		return 1
	fi
	TD_MOUNTS+=("$dir")
}

# td_umount DIR: unmount what td_loop_mount mounted.
td_umount() {
	local i rc=0
	if mountpoint -q "$1" 2>/dev/null; then
		umount "$1" || rc=1
	fi
	for i in "${!TD_MOUNTS[@]}"; do
		[ "${TD_MOUNTS[i]}" = "$1" ] && unset 'TD_MOUNTS[i]'
	done
	TD_MOUNTS=("${TD_MOUNTS[@]}")
	return "$rc"
}

# td_can_loop_mount FSTYPE: can this machine make, attach and mount an
# FSTYPE file system on a loop device? Tries it on a small sparse image
# (make, mount, unmount) and says why not in TD_WHY. Every test that needs
# loop devices or mounting asks here (or td_loop_attach) first.
td_can_loop_mount() {
	local fs=$1 img=$TD_TMP/probe-$1.img dir=$TD_TMP/probe-$1.mnt size=16M out
	TD_WHY=
	if [ "$(id -u)" != 0 ]; then
		TD_WHY="mounting a loop device needs root"
		return 1
	fi
	td_loop_devices_present || return 1
	if ! command -v "mkfs.$fs" >/dev/null 2>&1; then
		TD_WHY="no mkfs.$fs on this machine"
		return 1
	fi
	[ "$fs" = xfs ] && size=300M   # the smallest XFS that mkfs.xfs makes
	truncate -s "$size" "$img" || { TD_WHY="cannot create $img"; return 1; }
	if ! out=$("mkfs.$fs" -q "$img" 2>&1); then
		rm -f "$img"
		TD_WHY="mkfs.$fs of a $size image failed: $(td_one_line "$out")"
		return 1
	fi
	if ! td_loop_mount "$img" "$dir"; then
		rm -f "$img"
		rmdir "$dir" 2>/dev/null
		return 1
	fi
	td_umount "$dir"
	rm -f "$img"
	rmdir "$dir"
	return 0
}

# ------------------------------------------------------------- the daemon

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

# td_launch PORT LOG ARGS...: run the daemon in the foreground mode in the
# background with ARGS, its output in LOG, its pid in TD_LAUNCHED_PID, and
# wait until 127.0.0.1:PORT accepts connections. Fails (printing the log,
# TD_LAUNCHED_PID empty) if the daemon exits or does not listen in time.
# For a second daemon beside the one of start_daemon.
td_launch() {
	local port=$1 log=$2 rc
	shift 2
	local -a cmd
	mapfile -t cmd < <(td_daemon_cmd)
	"${cmd[@]}" -f "$@" >"$log" 2>&1 &
	TD_LAUNCHED_PID=$!
	if td_poll 60 td_listening "$port" "$TD_LAUNCHED_PID" &&
		kill -0 "$TD_LAUNCHED_PID" 2>/dev/null; then
		return 0
	fi
	if ! kill -0 "$TD_LAUNCHED_PID" 2>/dev/null; then
		wait "$TD_LAUNCHED_PID"
		rc=$?
		td_log "daemon exited with status $rc before listening on port $port; its log:"
	else
		td_log "daemon did not listen on 127.0.0.1:$port within $((60 * TD_TIME_SCALE))s; its log:"
		kill -KILL "$TD_LAUNCHED_PID" 2>/dev/null
		wait "$TD_LAUNCHED_PID" 2>/dev/null
	fi
	sed 's/^/    | /' "$log"
	TD_LAUNCHED_PID=
	return 1
}

# td_listening PORT PID: PID has exited (stop polling: false is final, see
# td_launch) or 127.0.0.1:PORT accepts connections.
td_listening() {
	! kill -0 "$2" 2>/dev/null || port_open "$1"
}

# start_daemon PORT ARGS...: the daemon of this test (TD_DAEMON_PID, its
# log in TD_DAEMON_LOG), started with td_launch.
start_daemon() {
	local port=$1
	shift
	TD_DAEMON_SEQ=$((TD_DAEMON_SEQ + 1))
	TD_DAEMON_LOG=$TD_TMP/targetd.$TD_DAEMON_SEQ.log
	TD_DAEMON_PID=
	td_launch "$port" "$TD_DAEMON_LOG" "$@" || return 1
	TD_DAEMON_PID=$TD_LAUNCHED_PID
}

# td_stop PID LOG [SIGNAL]: send SIGTERM (or SIGNAL) to a daemon this shell
# started, wait for it to exit (60 s times TD_TIME_SCALE) and require exit
# status 0. Prints LOG on failure.
td_stop() {
	local pid=$1 log=$2 sig=${3:-TERM} rc
	if ! kill -"$sig" "$pid" 2>/dev/null; then
		wait "$pid"
		rc=$?
		td_log "daemon had already exited (status $rc) before SIG$sig; its log:"
		sed 's/^/    | /' "$log"
		return 1
	fi
	if ! td_poll 60 td_gone "$pid"; then
		td_log "daemon still running $((60 * TD_TIME_SCALE))s after SIG$sig; killing it; its log:"
		sed 's/^/    | /' "$log"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 1
	fi
	wait "$pid"
	rc=$?
	if [ "$rc" != 0 ]; then
		td_log "daemon exited with status $rc after SIG$sig (expected 0); its log:"
		sed 's/^/    | /' "$log"
		return 1
	fi
	return 0
}

# stop_daemon [SIGNAL]: td_stop of the daemon started by start_daemon.
stop_daemon() {
	local pid=$TD_DAEMON_PID
	if [ -z "$pid" ]; then
		td_log "stop_daemon: no daemon running"
		return 1
	fi
	TD_DAEMON_PID=
	td_stop "$pid" "$TD_DAEMON_LOG" "${1:-TERM}"
}

# wait_log PATTERN [SECONDS]: wait until the daemon's log has a line with
# the fixed string PATTERN (the daemon may accept connections a moment
# before it prints its start-up lines).
wait_log() {
	td_poll "${2:-30}" grep -q -F -e "$1" "$TD_DAEMON_LOG"
}

# td_kill_rounds ROUNDS PORT CONF STATE KILL_FN KILL_NAME CHECK_NAME: the
# kill -9 durability rounds. Each round starts the daemon on CONF, runs
# KILL_FN ROUND (which kills the daemon with writes in flight and records
# what was acknowledged in STATE.ROUND), restarts the daemon on the same
# files, checks STATE.ROUND with `itest durable-check`, and stops it.
td_kill_rounds() {
	local rounds=$1 port=$2 conf=$3 state=$4 kill_fn=$5 kill_name=$6 check_name=$7 r
	for r in $(seq 1 "$rounds"); do
		if ! start_daemon "$port" -c "$conf"; then
			TD_FAIL=$((TD_FAIL + 1))
			TD_FAILED_NAMES+=("round $r: daemon start")
			break
		fi
		run_here "round $r: $kill_name" "$kill_fn" "$r"
		sed 's/^/    | /' "$TD_TMP/case.out"
		if daemon_alive; then
			echo "    the daemon survived; stopping it"
			kill -KILL "$TD_DAEMON_PID"
			wait "$TD_DAEMON_PID" 2>/dev/null
			TD_DAEMON_PID=
			break
		fi
		[ -s "$state.$r" ] || break
		if ! start_daemon "$port" -c "$conf"; then
			TD_FAIL=$((TD_FAIL + 1))
			TD_FAILED_NAMES+=("round $r: restart on the same files")
			break
		fi
		TD_VERBOSE=1 run_test "round $r: $check_name" "$ITEST" durable-check "$state.$r"
		run_here "round $r: clean shutdown" stop_daemon TERM
	done
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
# stop it after SECONDS; exit status 124 then, like timeout(1). A function
# runs in a subshell, watched by another subshell that waits in the read
# builtin (no child process) and, at the deadline, leaves a mark and kills
# the function's process tree. When the function ends first, the watchdog
# gets SIGKILL, which no trap can catch, defer or lose. (The watchdog used
# to be a subshell stopped with SIGTERM: killed a moment after it was
# forked, before it had set its own trap, it ran the inherited traps,
# whose "exit" removed $TD_TMP under the running test, or it lost the
# signal and the case was reported as timed out 300 s later.)
td_timeout() {
	local t=$1 pid wd rc mark
	shift
	if ! declare -F "$1" >/dev/null; then
		timeout -k 10 "$t" "$@"
		return
	fi
	[ -p "$TD_TMP/.watchdog" ] || mkfifo "$TD_TMP/.watchdog" || return 99
	("$@") &
	pid=$!
	mark=$TD_TMP/.timed-out.$pid
	(
		read -r -t "$t" _ <>"$TD_TMP/.watchdog"
		: >"$mark"
		echo "timed out after ${t}s" >&2
		td_kill_tree "$pid"
	) &
	wd=$!
	wait "$pid"
	rc=$?
	if [ -e "$mark" ]; then
		wait "$wd"
		rm -f "$mark"
		return 124
	fi
	{ kill -KILL "$wd"; wait "$wd"; } 2>/dev/null
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
