#!/bin/bash
# Durability: an acknowledged write survives the daemon's death.
#
# Three file LUNs: LUN 0 (512-byte blocks) gets WRITE(10)/WRITE(16) with
# FUA=1; LUN 1 (4096-byte blocks) first has its write cache turned off
# (MODE SELECT, Caching page, WCE=0) and then gets plain writes; LUN 2
# (512-byte blocks) keeps its write cache on and gets plain writes, which
# the daemon copies into the page cache on its network thread where the
# file system cannot write without blocking (backstore/bs_file.c, "Inline
# writes"; the daemon's log says which, and the round checks it). `itest
# durable-write` keeps 32 writes in flight on each LUN, pass after pass
# over the region, and sends SIGKILL to the daemon itself once every LUN
# has 64 writes acknowledged (one at least in its current pass) and more
# in flight: the kill is set by progress, never by time, so the machine's
# speed and load do not matter. It records which extents were acknowledged GOOD and which
# were still in flight. The daemon is restarted on the same files and
# `itest durable-check` reads every block back: acknowledged blocks must
# hold the new data, blocks in flight the data before or the new data
# (never anything else), blocks not yet written in that pass the data
# before it (which the previous pass wrote and had acknowledged).
#
# What this proves and what it cannot: kill -9 loses everything the daemon
# held in its own memory, so an acknowledgement given before the data
# reached the kernel shows up as a lost block. The kernel's page cache
# survives a process kill, so a missing fdatasync behind FUA or WCE=0 would
# only show after a power loss, which this test does not emulate.
set -u
. "$(dirname "$0")/lib.sh"

ROUNDS=${DURABILITY_ROUNDS:-3}
NBLOCKS=${DURABILITY_BLOCKS:-32768}   # per LUN: 16 MiB of 512-byte, 128 MiB of 4096-byte blocks (at least 8192)

td_init durability
td_need_cmd timeout
[ -x "$ITEST" ] || { td_log "ERROR: test client not found at $ITEST"; exit 99; }

T=$TD_TMP
PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
P=127.0.0.1:$PORT
IQN=iqn.2026-11.org.targetd.test:durability
CONF=$T/targetd.conf
td_write_conf "$CONF" -p "$PORT" <<EOF
targets = (
  {
    iqn = "$IQN";
    luns = (
      { lun = 0; backstore = "file"; path = "$T/fua.img"; size = "256M"; thin = true; },
      { lun = 1; backstore = "file"; path = "$T/wce.img"; size = "256M"; thin = true; block_size = 4096; },
      { lun = 2; backstore = "file"; path = "$T/cache.img"; size = "256M"; thin = true; }
    );
  }
);
EOF
URL0=iscsi://$P/$IQN/0
URL1=iscsi://$P/$IQN/1
URL2=iscsi://$P/$IQN/2

# kill_round N: writes in flight on both LUNs, the daemon killed by the
# client; then the daemon must really be gone (status 137 = SIGKILL).
kill_round() {
	local rc
	# the last round kills in the second pass over the region, so that
	# data written and acknowledged by a whole pass is checked as well
	local passes=1
	[ "$1" = "$ROUNDS" ] && passes=2
	ITEST_DURABLE_PASSES=$passes timeout -k 10 $((300 * TD_TIME_SCALE)) "$ITEST" -s "$((0x5eed0000 + $1))" durable-write "$TD_DAEMON_PID" "$T/state.$1" "$NBLOCKS" \
		"$URL0" "$URL1,wce-off" "$URL2,cache" || return 1
	wait "$TD_DAEMON_PID"
	rc=$?
	TD_DAEMON_PID=
	echo "daemon exit status $rc"
	[ "$rc" = 137 ] || { echo "expected 137 (SIGKILL)"; return 1; }
	# LUN 2's writes took the inline path, or the file system writes
	# without blocking and they stayed on the I/O engine: either way the
	# daemon said which when it first wrote there
	if grep -q "cache.img: the file system cannot write without blocking" "$TD_DAEMON_LOG"; then
		echo "LUN 2: page-cache writes done on the network thread"
	elif grep -q "cache.img: the file system writes without blocking" "$TD_DAEMON_LOG"; then
		echo "LUN 2: the file system writes without blocking; writes stayed on the I/O engine"
	else
		echo "LUN 2: the daemon never decided how to write its page-cache writes"
		return 1
	fi
}

td_kill_rounds "$ROUNDS" "$PORT" "$CONF" "$T/state" kill_round \
	"FUA, WCE-off and write-cache writes in flight, kill -9" \
	"after restart every acknowledged block reads back"

td_summary
