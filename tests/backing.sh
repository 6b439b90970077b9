#!/bin/bash
# Backing files are never shortened, cut or overwritten unless the operator
# asks for exactly that. Every path that touches a backing file:
#   - a reload that shrinks a LUN is refused, the file's bytes unchanged;
#     the same through SIGHUP;
#   - a reload that grows a LUN grows the file, the old bytes unchanged;
#   - at start-up a file longer than `size` stays whole (the LUN is its
#     first `size` bytes), and growing that LUN later leaves the tail;
#     a file shorter than `size` is extended, its bytes unchanged;
#   - a restart on a configuration with a smaller size leaves the file whole;
#   - a path that is a directory, a FIFO, a symbolic link to a device, or
#     a dangling symbolic link is refused and left as it was;
#   - two LUNs naming one file (same name, a symbolic link, a hard link;
#     also a reload adding the second) are refused.
set -u
. "$(dirname "$0")/lib.sh"
td_init backing

: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"
td_need_cmd sha256sum python3 timeout mkfifo
[ -x "$TARGETCTL" ] || { td_log "ERROR: $TARGETCTL not built"; exit 99; }

T=$TD_TMP
PORT=$(free_port) || exit 99
SOCK=$T/ctl.sock
IQN=iqn.2026-11.org.targetd.test:backing
CONF=$T/targetd.conf
CTL() { "$TARGETCTL" -s "$SOCK" "$@"; }

# conf LUNS...: a configuration with the given LUN groups
conf() {
	local luns
	luns=$(printf '%s,\n' "$@")
	write_conf "$CONF" <<EOF
listen = [ "127.0.0.1:$PORT" ];
threads = 1;
state_dir = "$T";
control_socket = "$SOCK";
nop_interval = 0;
targets = ( { iqn = "$IQN"; luns = ( ${luns%,} ); } );
EOF
}
lun() { echo "{ lun = $1; backstore = \"file\"; path = \"$2\"; size = \"$3\"; }"; }
sum() { sha256sum <"$1" | cut -d' ' -f1; }
# sum_head FILE BYTES: checksum of the first BYTES bytes
sum_head() { head -c "$2" "$1" | sha256sum | cut -d' ' -f1; }
size() { stat -c %s "$1"; }
lun_bytes() {
	CTL luns --json | python3 -c 'import json,sys
print({l["lun"]: l["size_bytes"] for l in json.load(sys.stdin)}[int(sys.argv[1])])' "$1"
}
wait_sock() { local i; for i in $(seq 1 100); do [ -S "$SOCK" ] && return 0; sleep 0.1; done; return 1; }
random_file() { head -c "$2" /dev/urandom >"$1"; }

MiB=$((1 << 20))

# --- reload -------------------------------------------------------------------
random_file "$T/a.img" $((32 * MiB))
A0=$(sum "$T/a.img")
conf "$(lun 0 "$T/a.img" 32M)"
start_daemon "$PORT" -c "$CONF" || exit 1
wait_sock

case_reload_shrink() {
	local out=$T/shrink.out
	conf "$(lun 0 "$T/a.img" 16M)"
	if CTL reload >"$out" 2>&1; then
		cat "$out"; echo "a shrinking reload was accepted"; return 1
	fi
	cat "$out"
	grep -q "never shrinks a LUN" "$out" || return 1
	grep -q -- "--shrink --force" "$out" || { echo "the message does not say how to shrink on purpose"; return 1; }
	grep -q "targetd.conf:[0-9]*:" "$out" || { echo "no FILE:LINE in the message"; return 1; }
	[ "$(size "$T/a.img")" = $((32 * MiB)) ] || { echo "file size now $(size "$T/a.img")"; return 1; }
	[ "$(sum "$T/a.img")" = "$A0" ] || { echo "file contents changed"; return 1; }
	[ "$(lun_bytes 0)" = $((32 * MiB)) ] || { echo "LUN size now $(lun_bytes 0)"; return 1; }
	# the same refusal as JSON (on stdout, exit status 1)
	CTL reload --json >"$out" 2>&1 && return 1
	python3 - "$out" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))
assert isinstance(e["code"], int) and "refused" in e["message"], e
assert any("never shrinks" in m for m in e["data"]["errors"]), e
EOF
}
run_test "a reload that shrinks a LUN is refused; file and LUN keep every byte" case_reload_shrink

case_sighup_shrink() {
	conf "$(lun 0 "$T/a.img" 8M)"
	kill -HUP "$TD_DAEMON_PID"
	wait_log "never shrinks a LUN" 10 || { echo "no refusal in the log"; return 1; }
	[ "$(size "$T/a.img")" = $((32 * MiB)) ] && [ "$(sum "$T/a.img")" = "$A0" ] ||
		{ echo "file changed"; return 1; }
	[ "$(lun_bytes 0)" = $((32 * MiB)) ]
}
run_test "SIGHUP with a smaller size: refused, file intact" case_sighup_shrink

case_reload_grow() {
	conf "$(lun 0 "$T/a.img" 48M)"
	CTL reload || return 1
	[ "$(size "$T/a.img")" = $((48 * MiB)) ] || { echo "file size $(size "$T/a.img")"; return 1; }
	[ "$(sum_head "$T/a.img" $((32 * MiB)))" = "$A0" ] || { echo "old bytes changed"; return 1; }
	[ "$(lun_bytes 0)" = $((48 * MiB)) ]
}
run_test "a reload that grows a LUN extends the file; the old bytes unchanged" case_reload_grow

case_reload_shared() {
	local out=$T/shared.out
	conf "$(lun 0 "$T/a.img" 48M)" "$(lun 1 "$T/a.img" 48M)"
	if CTL reload >"$out" 2>&1; then cat "$out"; return 1; fi
	cat "$out"
	grep -q "already used by" "$out" && [ "$(sum_head "$T/a.img" $((32 * MiB)))" = "$A0" ]
}
run_test "a reload adding a second LUN on the same file is refused" case_reload_shared
run_here "daemon stops" stop_daemon

# --- start-up -------------------------------------------------------------------
case_start_longer() {
	local b0
	random_file "$T/b.img" $((64 * MiB))
	b0=$(sum "$T/b.img")
	conf "$(lun 0 "$T/b.img" 16M)"
	start_daemon "$PORT" -c "$CONF" || return 1
	wait_sock || return 1
	[ "$(lun_bytes 0)" = $((16 * MiB)) ] || { echo "LUN size $(lun_bytes 0)"; return 1; }
	[ "$(size "$T/b.img")" = $((64 * MiB)) ] && [ "$(sum "$T/b.img")" = "$b0" ] ||
		{ echo "a longer file was changed at start-up"; return 1; }
	grep -q "longer than" "$TD_DAEMON_LOG" || { echo "no warning about the longer file"; return 1; }
	# growing the LUN (still smaller than the file) leaves the file's tail
	conf "$(lun 0 "$T/b.img" 32M)"
	CTL reload || return 1
	[ "$(lun_bytes 0)" = $((32 * MiB)) ] || return 1
	[ "$(size "$T/b.img")" = $((64 * MiB)) ] && [ "$(sum "$T/b.img")" = "$b0" ] ||
		{ echo "growing the LUN cut the file to $(size "$T/b.img") bytes"; return 1; }
	stop_daemon || return 1
	# a restart on the smaller size still keeps the whole file
	conf "$(lun 0 "$T/b.img" 8M)"
	start_daemon "$PORT" -c "$CONF" || return 1
	[ "$(size "$T/b.img")" = $((64 * MiB)) ] && [ "$(sum "$T/b.img")" = "$b0" ] || return 1
	stop_daemon
}
run_here "start-up: a file longer than size stays whole (also after growing and restarting)" case_start_longer

case_start_shorter() {
	local c0
	random_file "$T/c.img" $((8 * MiB))
	c0=$(sum "$T/c.img")
	conf "$(lun 0 "$T/c.img" 16M)"
	start_daemon "$PORT" -c "$CONF" || return 1
	[ "$(size "$T/c.img")" = $((16 * MiB)) ] || { echo "file size $(size "$T/c.img")"; stop_daemon; return 1; }
	[ "$(sum_head "$T/c.img" $((8 * MiB)))" = "$c0" ] || { echo "old bytes changed"; stop_daemon; return 1; }
	[ "$(tail -c $((8 * MiB)) "$T/c.img" | tr -d '\0' | wc -c)" = 0 ] || { echo "the new part is not zeroes"; stop_daemon; return 1; }
	stop_daemon
}
run_here "start-up: a file shorter than size is extended with zeroes, its bytes unchanged" case_start_shorter

# --- paths that are not regular files ---------------------------------------------
# refused PATTERN: --check-config and a start both fail, naming the problem
refused() {
	local out=$T/refused.out
	if timeout 20 "$TARGETD" -c "$CONF" --check-config >"$out" 2>&1; then
		cat "$out"; echo "--check-config accepted it"; return 1
	fi
	cat "$out"
	grep -q -- "$1" "$out" || { echo "no '$1' in the message"; return 1; }
	timeout 20 "$TARGETD" -f -c "$CONF" >"$out" 2>&1
	[ $? = 1 ] || { cat "$out"; echo "the daemon did not refuse to start"; return 1; }
}

case_directory() {
	mkdir -p "$T/dir.img"
	touch "$T/dir.img/keep"
	conf "$(lun 0 "$T/dir.img" 16M)"
	refused "is a directory" || return 1
	[ -d "$T/dir.img" ] && [ -e "$T/dir.img/keep" ]
}
run_test "a path that is a directory is refused and left alone" case_directory

case_fifo() {
	mkfifo "$T/fifo.img"
	conf "$(lun 0 "$T/fifo.img" 16M)"
	refused "not a regular file" || return 1
	conf '{ lun = 0; backstore = "file"; path = "'"$T"'/fifo.img"; read_only = true; }'
	refused "not a regular file" || return 1
	[ -p "$T/fifo.img" ]
}
run_test "a path that is a FIFO is refused (no hang) and left alone" case_fifo

case_symlink_device() {
	ln -s /dev/null "$T/null.img"
	conf "$(lun 0 "$T/null.img" 16M)"
	refused "not a regular file" || return 1
	[ -c /dev/null ] && [ -L "$T/null.img" ] || return 1
	ln -s "$T/does-not-exist/x.img" "$T/dangling.img"
	conf "$(lun 0 "$T/dangling.img" 16M)"
	refused "dangling.img" || return 1
	[ ! -e "$T/does-not-exist" ]
}
run_test "a symbolic link to a device, or a dangling one, is refused" case_symlink_device

case_shared() {
	random_file "$T/s.img" $((4 * MiB))
	ln -s "$T/s.img" "$T/s-link.img"
	ln "$T/s.img" "$T/s-hard.img"
	conf "$(lun 0 "$T/s.img" 4M)" "$(lun 1 "$T/s.img" 4M)"
	refused "already used by" || return 1
	conf "$(lun 0 "$T/s.img" 4M)" "$(lun 1 "$T/s-link.img" 4M)"
	refused "already used by" || return 1
	conf "$(lun 0 "$T/s.img" 4M)" "$(lun 1 "$T/s-hard.img" 4M)"
	refused "already used by" || return 1
	# read-only on both sides is no exception: one file, one LUN
	conf '{ lun = 0; backstore = "file"; path = "'"$T"'/s.img"; read_only = true; },
	      { lun = 1; backstore = "file"; path = "'"$T"'/s-link.img"; read_only = true; }'
	refused "already used by"
}
run_test "two LUNs naming one file (name, symbolic link, hard link) are refused" case_shared

td_summary
