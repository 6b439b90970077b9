#!/bin/bash
# Out-of-space integration test: a thin file LUN on a small loop-mounted
# ext4 file system, and one with a hard_limit on the test's own disk.
#   - writing the LUN until the file system is full ends in CHECK
#     CONDITION, DATA PROTECT, SPACE ALLOCATION FAILED WRITE PROTECT
#     (07/27/07), and what was written before still reads back;
#   - UNMAP gives the space back and writes succeed again, with no reset;
#   - the same against hard_limit = "8M" (no mount needed);
#   - on a loop-mounted XFS with reflink, targetctl luns counts the blocks
#     two LUN files share (FIEMAP) and stops counting those rewritten.
# The loop-mounted part is skipped, with the reason, where loop devices or
# mounting are not permitted; the hard-limit part always runs.
#
# To run by hand from a build tree:  make check TESTS=tests/space.sh
set -u
. "$(dirname "$0")/lib.sh"

: "${ATSRACE:=$(dirname "$ITEST")/atsrace}"

td_init space
td_need_cmd stat mkfs.ext4
[ -x "$ATSRACE" ] || { td_log "ERROR: $ATSRACE not built"; exit 99; }

T=$TD_TMP
MNT=$T/mnt
# mount_small_fs: a 48 MiB ext4 on $MNT (td_loop_mount unmounts it at
# exit); the reason in WHY if this machine does not allow it.
WHY=
mount_small_fs() {
	local out
	truncate -s 48M "$T/fs.img" || { WHY="cannot create $T/fs.img"; return 1; }
	if ! out=$(mkfs.ext4 -q -F -O ^has_journal "$T/fs.img" 2>&1); then
		WHY="mkfs.ext4 failed: $(td_one_line "$out")"
		return 1
	fi
	td_loop_mount "$T/fs.img" "$MNT" || { WHY=$TD_WHY; return 1; }
}

LOOP=1
mount_small_fs || { td_log "the loop-mounted part is skipped: $WHY"; LOOP=0; }

# An XFS with reflink for the accounting of shared blocks: two LUN files,
# the second a reflink copy of the first.
XMNT=$T/xfs
XFS=0
if [ "$LOOP" = 1 ] && command -v mkfs.xfs >/dev/null 2>&1; then
	truncate -s 512M "$T/xfs.img"
	if mkfs.xfs -q -m reflink=1 "$T/xfs.img" >/dev/null 2>&1 &&
	   td_loop_mount "$T/xfs.img" "$XMNT"; then
		XFS=1
		dd if=/dev/urandom of="$XMNT/a.img" bs=1M count=8 status=none &&
			truncate -s 64M "$XMNT/a.img" && sync &&
			cp --reflink=always "$XMNT/a.img" "$XMNT/b.img" || XFS=0
	fi
fi
[ "$XFS" = 1 ] || td_log "the reflink accounting part is skipped: no XFS with reflink here"

PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
P=127.0.0.1:$PORT
IQN=iqn.2026-11.org.targetd.test:space
{
	td_conf_prologue -p "$PORT" -S "$T/state/ctl.sock"
	cat <<EOC
targets = ( { iqn = "$IQN"; luns = (
  { lun = 1; backstore = "file"; path = "$T/limit.img"; size = "64M"; hard_limit = "8M"; }
EOC
	[ "$LOOP" = 1 ] &&
		echo "  , { lun = 0; backstore = \"file\"; path = \"$MNT/lun.img\"; size = \"256M\"; }"
	[ "$XFS" = 1 ] &&
		echo "  , { lun = 2; backstore = \"file\"; path = \"$XMNT/a.img\"; }" &&
		echo "  , { lun = 3; backstore = \"file\"; path = \"$XMNT/b.img\"; }"
	echo "); } );"
} | write_conf "$T/targetd.conf"
start_daemon "$PORT" -c "$T/targetd.conf" || exit 99
URL=iscsi://$P/$IQN

FAILS=0
fail() { td_log "FAIL: $*"; FAILS=$((FAILS + 1)); }

# full_then_back LUN FILE BLOCKS LIMIT_BYTES: fill until 07/27/07, UNMAP,
# write again.
full_then_back() {
	local lun=$1 file=$2 blocks=$3 limit=$4 done alloc
	if ! done=$("$ATSRACE" fillfull "$URL/$lun" 0 "$blocks"); then
		fail "LUN $lun: no SPACE ALLOCATION FAILED WRITE PROTECT before $blocks blocks"
		return
	fi
	alloc=$(( $(stat -c %b "$file") * 512 ))
	td_log "LUN $lun: 07/27/07 after $((done * 512 / 1048576)) MiB written; the file holds $((alloc / 1048576)) MiB"
	[ "$alloc" -le "$limit" ] || fail "LUN $lun: the file holds $alloc bytes, more than $limit"
	[ "$done" -gt 0 ] || fail "LUN $lun: nothing could be written"
	"$ATSRACE" unmap "$URL/$lun" 0 "$done" || { fail "LUN $lun: UNMAP"; return; }
	# space is back: writes succeed again without any reset
	if "$ATSRACE" fill "$URL/$lun" 0 2048; then
		td_log "LUN $lun: writes succeed again after UNMAP"
	else
		fail "LUN $lun: still refusing writes after UNMAP gave space back"
	fi
}

full_then_back 1 "$T/limit.img" 131072 $((8 * 1048576))
if [ "$LOOP" = 1 ]; then
	full_then_back 0 "$MNT/lun.img" 524288 $((48 * 1048576))
fi
# lun_space LUN KEY: a figure of targetctl luns --json
: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"
lun_space() {
	"$TARGETCTL" -s "$T/state/ctl.sock" luns --json |
		python3 -c 'import json,sys; print(next(l for l in json.load(sys.stdin) if l["lun"] == int(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}
if [ "$XFS" = 1 ]; then
	MIB=1048576
	a_sh=$(lun_space 2 shared_bytes) b_sh=$(lun_space 3 shared_bytes)
	a_al=$(lun_space 2 allocated_bytes)
	[ "$a_sh" = $((8 * MIB)) ] && [ "$b_sh" = $((8 * MIB)) ] ||
		fail "reflinked 8 MiB: shared_bytes $a_sh and $b_sh, want $((8 * MIB))"
	[ "$a_al" = $(( $(stat -c %b "$XMNT/a.img") * 512 )) ] ||
		fail "allocated_bytes $a_al is not st_blocks of a.img"
	[ "$(lun_space 2 saved_bytes)" = $((64 * MIB)) ] ||
		fail "saved_bytes $(lun_space 2 saved_bytes): want all 64 MiB (8 shared, 56 never written)"
	# 2 MiB overwritten on the copy: no longer shared
	"$ATSRACE" fill "$URL/3" 0 4096 || fail "writing LUN 3"
	sync
	a_sh=$(lun_space 2 shared_bytes) b_sh=$(lun_space 3 shared_bytes)
	[ "$a_sh" = $((6 * MIB)) ] && [ "$b_sh" = $((6 * MIB)) ] ||
		fail "after 2 MiB written: shared_bytes $a_sh and $b_sh, want $((6 * MIB))"
	td_log "reflink accounting: 8 MiB shared, 6 MiB after 2 MiB rewritten"
fi
stop_daemon || fail "daemon did not stop cleanly"
[ "$FAILS" = 0 ] || exit 1
[ "$LOOP" = 1 ] || td_skip_all "the hard-limit part passed; the file-system-full part needs a loop mount: $WHY"
td_log "PASS"
exit 0
