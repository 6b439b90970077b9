#!/bin/bash
# Clones and snapshots of whole LUNs (targetctl lun clone, lun snapshot,
# lun revert):
#   - on a file system without reflink, a clone without --copy is refused
#     with a message naming the file system and --copy, and nothing is
#     created; an existing file is never taken for a new LUN;
#   - clone --copy and snapshot --copy under concurrent writes: every write
#     acknowledged before the command is in the clone, none sent after it
#     returned (itest clone-write, checked block by block with itest
#     durable-check), and the source keeps every write;
#   - --copy keeps holes (st_blocks of the copy, not its size);
#   - a snapshot is read-only: WRITE gets DATA PROTECT, WRITE PROTECTED
#     (07/27/00), MODE SENSE has WP; targetctl luns lists it under its LUN;
#   - revert gives the LUN the snapshot's blocks back, with NOT READY TO
#     READY CHANGE (28/00) to a logged-in initiator, and CAPACITY DATA HAS
#     CHANGED (2A/09) too when the LUN was grown since; the size is written
#     back and survives a restart, and so do the snapshots;
#   - a revert that fails half way leaves the LUN's blocks as they were;
#   - a LUN with snapshots cannot be removed before them;
#   - on a loop-mounted XFS with reflink: the clone shares every block
#     (no space taken, O(1)), under concurrent writes, and revert without
#     --copy. Skipped, with the reason, where loop mounts are not allowed.
#
# To run by hand from a build tree:  make check TESTS=tests/clones.sh
set -u
. "$(dirname "$0")/lib.sh"

: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"

td_init clones
td_need_cmd stat cmp cp python3

T=$TD_TMP
MIB=1048576
NBLOCKS=16384          # the region clone-write writes: 8 MiB of 512-byte blocks

# A directory on a file system without reflink: the test's own if cp
# cannot share blocks there, else a loop-mounted ext4.
NOREF=
printf 'probe' >"$T/probe"
if ! cp --reflink=always "$T/probe" "$T/probe2" 2>/dev/null; then
	NOREF=$T/noref
	mkdir -p "$NOREF"
elif td_can_loop_mount ext4; then
	truncate -s 256M "$T/ext4.img" && mkfs.ext4 -q -F "$T/ext4.img" &&
		td_loop_mount "$T/ext4.img" "$T/ext4" && NOREF=$T/ext4
fi
rm -f "$T/probe" "$T/probe2"
[ -n "$NOREF" ] || td_skip_all "no file system without reflink here (and no loop mount: $TD_WHY)"

# An XFS with reflink for the O(1) clone.
XFS=
if td_can_loop_mount xfs; then
	truncate -s 512M "$T/xfs.img"
	if mkfs.xfs -q -m reflink=1 "$T/xfs.img" >/dev/null 2>&1 &&
	   td_loop_mount "$T/xfs.img" "$T/xfs"; then
		XFS=$T/xfs
	else
		TD_WHY="mkfs.xfs -m reflink=1 or its mount failed"
	fi
fi
XFS_WHY=${TD_WHY:-}

# LUN 0 on the file system without reflink: 64 MiB with data at 0..8 MiB
# (written by the tests) and an island of 1 MiB at 40 MiB, holes elsewhere.
truncate -s 64M "$NOREF/vm.img"
dd if=/dev/urandom of="$NOREF/vm.img" bs=1M count=1 seek=40 conv=notrunc status=none
PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
IQN=iqn.2026-11.org.targetd.test:clones
{
	td_conf_prologue -p "$PORT" -S "$T/ctl.sock"
	cat <<EOC
targets = ( { iqn = "$IQN"; luns = (
  { lun = 0; backstore = "file"; path = "$NOREF/vm.img"; size = "64M"; }
EOC
	if [ -n "$XFS" ]; then
		truncate -s 64M "$XFS/x.img"
		echo "  , { lun = 10; backstore = \"file\"; path = \"$XFS/x.img\"; }"
	fi
	echo "); } );"
} | write_conf "$T/targetd.conf"
start_daemon "$PORT" -c "$T/targetd.conf" || exit 99
td_poll 30 test -S "$T/ctl.sock" || { td_log "ERROR: no control socket $T/ctl.sock"; exit 99; }
URL=iscsi://127.0.0.1:$PORT/$IQN
TC=("$TARGETCTL" -s "$T/ctl.sock")

# lun_json LUN EXPR: a Python expression of LUN's object in luns --json (l)
lun_json() {
	"${TC[@]}" luns --json |
		python3 -c 'import json,sys; l=next(x for x in json.load(sys.stdin) if x["lun"] == int(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

refused_without_copy() {
	local out
	if out=$("${TC[@]}" lun clone 0 1 2>&1); then
		echo "the clone was made: $out"
		return 1
	fi
	echo "$out"
	grep -q -- '--copy' <<<"$out" || { echo "the message does not name --copy"; return 1; }
	grep -Eq 'is on (ext4|tmpfs|[a-z0-9]+|a file system of type)' <<<"$out" ||
		{ echo "the message does not name the file system"; return 1; }
	[ ! -e "$NOREF/vm-lun1.img" ] || { echo "$NOREF/vm-lun1.img was left behind"; return 1; }
	[ "$("${TC[@]}" luns --json | python3 -c 'import json,sys; print(1 in [l["lun"] for l in json.load(sys.stdin)])')" = False ] ||
		{ echo "LUN 1 was added"; return 1; }
}
run_test "clone without --copy is refused on a file system without reflink" refused_without_copy

never_overwrites() {
	local out
	echo "precious" >"$NOREF/vm-lun5.img"
	if out=$("${TC[@]}" lun clone 0 5 --copy 2>&1); then
		echo "the clone was made over an existing file: $out"
		return 1
	fi
	echo "$out"
	grep -q 'never overwritten' <<<"$out" || { echo "the message does not say why"; return 1; }
	[ "$(cat "$NOREF/vm-lun5.img")" = precious ] || { echo "the file was changed"; return 1; }
	rm -f "$NOREF/vm-lun5.img"
}
run_test "an existing file is never taken for a clone" never_overwrites

# clone_under_writes NAME LUN CLONE-LUN CMD...: clone-write, then the clone
# and the source checked block by block
clone_under_writes() {
	local name=$1 src=$2 dst=$3
	shift 3
	"$ITEST" clone-write "$T/$name.state" "$NBLOCKS" "$URL/$src" "$URL/$dst" "$@" &&
		"$ITEST" durable-check "$T/$name.state" &&
		"$ITEST" durable-check "$T/$name.state.origin"
}
run_test "clone --copy under concurrent writes holds exactly the acknowledged writes" \
	clone_under_writes copy 0 1 "${TC[@]}" lun clone 0 1 --copy

keeps_holes() {
	local src=$NOREF/vm.img dst=$NOREF/vm-lun1.img sa da
	sa=$(($(stat -c %b "$src") * 512)) da=$(($(stat -c %b "$dst") * 512))
	echo "source holds $sa bytes, the copy $da, of $(stat -c %s "$dst")"
	[ "$(stat -c %s "$dst")" = $((64 * MIB)) ] || { echo "the copy is not 64 MiB long"; return 1; }
	[ "$da" -le $((sa + MIB)) ] && [ "$da" -lt $((16 * MIB)) ] ||
		{ echo "the copy filled holes"; return 1; }
	[ "$da" -ge $((9 * MIB)) ] || { echo "the copy lost data runs"; return 1; }
	cmp -s <(dd if="$src" bs=1M skip=40 count=1 status=none) \
		<(dd if="$dst" bs=1M skip=40 count=1 status=none) ||
		{ echo "the island at 40 MiB differs"; return 1; }
	[ "$(lun_json 1 'l["read_only"]')" = False ] || { echo "the clone is read-only"; return 1; }
}
run_test "--copy keeps holes as holes (st_blocks)" keeps_holes

run_test "snapshot --copy under concurrent writes holds exactly the acknowledged writes" \
	clone_under_writes snap 0 2 "${TC[@]}" lun snapshot 0 s1 --lun 2 --copy
run_test "a snapshot is read-only: 07/27/00 and WP" "$ITEST" write-protected "$URL/2"

listed() {
	local out
	[ "$(lun_json 0 '[(s["name"], s["lun"]) for s in l["snapshots"]]')" = "[('s1', 2)]" ] ||
		{ echo "LUN 0 lists $(lun_json 0 'l["snapshots"]')"; return 1; }
	[ "$(lun_json 2 '(l["snapshot_of"], l["snapshot_name"], l["read_only"])')" = "(0, 's1', True)" ] ||
		{ echo "LUN 2: $(lun_json 2 'l')"; return 1; }
	[ "$(lun_json 0 'l["snapshots"][0]["allocated_bytes"] > 0')" = True ] ||
		{ echo "no space figures"; return 1; }
	out=$("${TC[@]}" luns) && echo "$out" && grep -q 's1' <<<"$out"
}
run_test "targetctl luns lists the snapshot with its space" listed

# refused CMD... PATTERN: the command fails, saying PATTERN
refused() {
	local out pat=${*: -1}
	if out=$("${@:1:$#-1}" 2>&1); then
		echo "done, but it should have been refused: $out"
		return 1
	fi
	echo "$out"
	grep -q -- "$pat" <<<"$out" || { echo "the message does not say \"$pat\""; return 1; }
}
run_test "a LUN with snapshots is not removed before them" \
	refused "${TC[@]}" lun remove "$IQN" 0 --force "remove each snapshot first"
run_test "revert to a snapshot that does not exist" \
	refused "${TC[@]}" lun revert 0 nosuch --copy 'has no snapshot "nosuch"'
run_test "a snapshot of a snapshot is refused" \
	refused "${TC[@]}" lun snapshot 2 again --copy "is a snapshot itself"

# revert: marked data A, snapshot, data B, revert: A again
revert_same_size() {
	"$ITEST" -s 11 mark "$URL/0" 101 &&
		"${TC[@]}" lun snapshot 0 s2 --lun 3 --copy &&
		"$ITEST" mark "$URL/0" 202 &&
		"$ITEST" check-mark "$URL/0" 202 &&
		"$ITEST" ua-after "$URL/0" 2800 "${TC[@]}" lun revert 0 s2 --copy &&
		"$ITEST" check-mark "$URL/0" 101 &&
		cmp "$NOREF/vm.img" "$NOREF/vm@s2.img" &&
		[ "$(lun_json 0 'l["offline"]')" = False ] &&
		! ls "$NOREF" | grep -q targetd-
}
run_test "revert restores the snapshot's blocks (28/00 to a logged-in initiator)" revert_same_size

# grown since the snapshot: revert gives it the snapshot's size back
revert_grown() {
	"${TC[@]}" lun resize "$IQN" 0 96M &&
		[ "$(lun_json 0 'l["size_bytes"]')" = $((96 * MIB)) ] &&
		"$ITEST" ua-after "$URL/0" 2a09,2800 "${TC[@]}" lun revert 0 s2 --copy &&
		[ "$(lun_json 0 'l["size_bytes"]')" = $((64 * MIB)) ] &&
		"$ITEST" check-mark "$URL/0" 101
}
run_test "revert after a resize: the snapshot's size, 2A/09 and 28/00, written back" revert_grown

# a revert that fails half way (after the LUN went offline: the old file
# cannot be kept) leaves the LUN with its blocks, online
revert_fails() {
	local out rc=0
	"$ITEST" -s 13 mark "$URL/0" 505 || return 1
	mkdir "$NOREF/vm.img.targetd-old"
	if out=$("${TC[@]}" lun revert 0 s2 --copy 2>&1); then
		echo "the revert went through: $out"
		rc=1
	fi
	echo "$out"
	rmdir "$NOREF/vm.img.targetd-old"
	[ "$rc" = 0 ] && grep -q "nothing was changed" <<<"$out" &&
		"$ITEST" check-mark "$URL/0" 505 &&
		[ "$(lun_json 0 'l["offline"]')" = False ] &&
		! ls "$NOREF" | grep -q targetd- &&
		"${TC[@]}" lun revert 0 s2 --copy && "$ITEST" check-mark "$URL/0" 101
}
run_test "a revert that fails half way changes nothing" revert_fails

restart_keeps() {
	stop_daemon || return 1
	start_daemon "$PORT" -c "$T/targetd.conf" || return 1
	td_poll 30 test -S "$T/ctl.sock" || return 1
	"$ITEST" check-mark "$URL/0" 101 &&
		[ "$(lun_json 0 'sorted(s["name"] for s in l["snapshots"])')" = "['s1', 's2']" ] &&
		[ "$(lun_json 0 'l["size_bytes"]')" = $((64 * MIB)) ]
}
run_here "a restart serves the reverted LUN and its snapshots" restart_keeps

if [ -n "$XFS" ]; then
	reflink_clone() {
		local before after sh al
		"$ITEST" clone-write "$T/x.state" $((64 * 2048)) "$URL/10" "$URL/11" \
			sh -c '"$@" >"'"$T"'/x.json"' sh "${TC[@]}" -j lun clone 10 11 &&
			"$ITEST" durable-check "$T/x.state" && "$ITEST" durable-check "$T/x.state.origin" ||
			return 1
		cat "$T/x.json"
		python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["reflinked"] else 1)' \
			"$T/x.json" || { echo "not reflinked"; return 1; }
		# O(1): a clone of the 64 MiB LUN, now quiet, takes no space and
		# shares every block it holds
		sync
		before=$(lun_json 10 'l["pool_free_bytes"]')
		"${TC[@]}" lun clone 10 13 || return 1
		sync
		after=$(lun_json 10 'l["pool_free_bytes"]')
		sh=$(lun_json 13 'l["shared_bytes"]') al=$(lun_json 13 'l["allocated_bytes"]')
		echo "pool free before $before, after $after; the clone holds $al bytes, shares $sh"
		[ "$sh" -ge $((64 * MIB)) ] && [ $((al - sh)) -lt "$MIB" ] ||
			{ echo "the clone does not share all it holds"; return 1; }
		[ $((before - after)) -lt $((4 * MIB)) ] || { echo "the clone took space"; return 1; }
	}
	run_test "XFS: reflink clone under concurrent writes, blocks shared" reflink_clone
	reflink_revert() {
		"$ITEST" -s 12 mark "$URL/10" 303 &&
			"${TC[@]}" lun snapshot 10 x1 --lun 12 &&
			[ "$(lun_json 12 'l["shared_bytes"] > 0')" = True ] &&
			"$ITEST" mark "$URL/10" 404 &&
			"$ITEST" ua-after "$URL/10" 2800 "${TC[@]}" lun revert 10 x1 &&
			"$ITEST" check-mark "$URL/10" 303 &&
			"$ITEST" write-protected "$URL/12"
	}
	run_test "XFS: snapshot and revert by reflink" reflink_revert
else
	skip_test "XFS: reflink clone under concurrent writes" "$XFS_WHY"
	skip_test "XFS: snapshot and revert by reflink" "$XFS_WHY"
fi

run_here "the daemon stops cleanly" stop_daemon
td_summary
