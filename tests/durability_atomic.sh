#!/bin/bash
# Atomic writes survive a kill -9 whole: WRITE ATOMIC(16) in flight when the
# daemon dies leaves each of its block ranges wholly old or wholly new.
#
# Two file LUNs on a file system that offers atomic writes (RWF_ATOMIC with
# O_DIRECT, statx STATX_WRITE_ATOMIC: XFS on Linux 6.16 and later does so
# in software): LUN 0 with 512-byte blocks, LUN 1 with 4096-byte blocks.
# `itest durable-write` fills a region with an old pattern, then sends
# WRITE ATOMIC(16) of the new pattern in shuffled extents (multiples of the
# atomic granularity, powers of two and not, so that both the direct path
# and the widened one run), 32 in flight per LUN, and kills the daemon
# with SIGKILL once 64 writes per LUN are acknowledged and more are in
# flight. After a restart on the same files `itest durable-check` reads
# every block: acknowledged extents hold the new data, and every extent in
# flight at the kill holds the old or the new data as a whole. ROUNDS
# rounds (default 12), each killing the daemon at a different point.
#
# The file system: $ATOMIC_DIR if set (it must offer atomic writes), else
# an XFS image on a loop device under the test's directory (needs root,
# mkfs.xfs, loop devices and the right to mount them: td_can_loop_mount
# tries it first). Where neither is possible, or the kernel
# offers no atomic writes there (Linux before 6.11, XFS before 6.16), the
# test is skipped with the reason: the LUNs then offer no WRITE ATOMIC.
set -u
. "$(dirname "$0")/lib.sh"

ROUNDS=${DURABILITY_ROUNDS:-12}
NBLOCKS=${DURABILITY_BLOCKS:-16384}   # per LUN: 8 MiB of 512-byte, 64 MiB of 4096-byte blocks

td_init durability-atomic
td_need_cmd timeout
[ -x "$ITEST" ] || { td_log "ERROR: test client not found at $ITEST"; exit 99; }

T=$TD_TMP

# (the daemon is stopped, then the XFS unmounted, by lib.sh at exit)
if [ -n "${ATOMIC_DIR:-}" ]; then
	D=$ATOMIC_DIR
else
	td_can_loop_mount xfs ||
		td_skip_all "$TD_WHY (set ATOMIC_DIR to a directory on a file system with atomic writes)"
	truncate -s 1G "$T/xfs.img" || exit 99
	mkfs.xfs -q -f "$T/xfs.img" >"$T/mkfs.out" 2>&1 || { cat "$T/mkfs.out"; td_log "ERROR: mkfs.xfs failed"; exit 99; }
	td_loop_mount "$T/xfs.img" "$T/mnt" || { td_log "ERROR: $TD_WHY"; exit 99; }
	D=$T/mnt
fi

PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
P=127.0.0.1:$PORT
IQN=iqn.2026-12.org.targetd.test:atomic
CONF=$T/targetd.conf
td_write_conf "$CONF" -p "$PORT" <<EOF
targets = (
  {
    iqn = "$IQN";
    luns = (
      { lun = 0; backstore = "file"; path = "$D/atomic512.img"; size = "64M"; thin = true; },
      { lun = 1; backstore = "file"; path = "$D/atomic4k.img"; size = "128M"; thin = true; block_size = 4096; }
    );
  }
);
EOF
URL0=iscsi://$P/$IQN/0
URL1=iscsi://$P/$IQN/1

start_daemon "$PORT" -c "$CONF" || exit 99
if ! grep -q "atomic writes of" "$TD_DAEMON_LOG"; then
	stop_daemon TERM
	td_skip_all "the file system under $D offers no atomic writes to this kernel ($(uname -r)): statx reports no STATX_WRITE_ATOMIC, so the LUNs offer no WRITE ATOMIC"
fi
grep "atomic writes of" "$TD_DAEMON_LOG" | sed 's/^/    | /'
stop_daemon TERM || exit 99

kill_round() {
	local rc
	timeout -k 10 $((300 * TD_TIME_SCALE)) "$ITEST" -s "$((0x5eed1000 + $1))" durable-write "$TD_DAEMON_PID" "$T/state.$1" \
		"$NBLOCKS" "$URL0,atomic" "$URL1,atomic" || return 1
	wait "$TD_DAEMON_PID"
	rc=$?
	TD_DAEMON_PID=
	echo "daemon exit status $rc"
	[ "$rc" = 137 ] || { echo "expected 137 (SIGKILL)"; return 1; }
}

td_kill_rounds "$ROUNDS" "$PORT" "$CONF" "$T/state" kill_round \
	"WRITE ATOMIC in flight, kill -9" \
	"every atomic write in flight is wholly old or wholly new"

td_summary
