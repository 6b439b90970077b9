#!/bin/bash
# The Ceph RBD backstore against a throw-away cluster (tests/ceph.sh): the
# configuration's checks, an image created from the configuration, I/O
# and its range checks, VAAI primitives on librbd (COMPARE AND WRITE with
# its MISCOMPARE offset, WRITE SAME, UNMAP, GET LBA STATUS, EXTENDED COPY
# between an rbd and a file LUN), sizes (a reload or a restart never cuts
# an image, growing resizes it, `targetctl lun resize --shrink --force`
# alone cuts it), `targetctl lun add` of an rbd LUN (the file's checks, the
# keys written back), the data across a restart, and the daemon started
# in the background (it must connect to the cluster after it forked).
#
# Skipped (exit 77, with the reason) when the daemon is built without
# librbd or when the Ceph packages are missing or their daemons cannot
# start here; never passed silently.
#
# By hand from a build tree:  make check TESTS=tests/rbd.sh
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ceph.sh"

: "${ATSRACE:=$(dirname "$ITEST")/atsrace}"
: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"

td_init rbd
T=$TD_TMP

rbd_cleanup() {
	ceph_stop
	td_cleanup
}
trap rbd_cleanup EXIT

# Built with the RBD backstore? (--check-config names the reason if not)
printf 'targets = ( { iqn = "iqn.2026-11.org.targetd.test:probe"; luns = ( { lun = 0; backstore = "rbd"; pool = "p"; image = "i"; } ); } );\n' \
	>"$T/probe.conf"
if ! "$TARGETD" --check-config -c "$T/probe.conf" >"$T/probe.out" 2>&1; then
	grep -q 'built without Ceph RBD' "$T/probe.out" &&
		td_skip_all "targetd is built without the RBD backstore (configure --with-rbd, librbd-dev)"
	td_log "ERROR: --check-config refused a valid rbd LUN:"
	cat "$T/probe.out"
	exit 99
fi
ceph_start "$T/ceph" || td_skip_all "no Ceph cluster: $CEPH_WHY"

PORT=$(free_port) || exit 99
P=127.0.0.1:$PORT
IQN=iqn.2026-11.org.targetd.test:rbd
URL=iscsi://$P/$IQN
mkdir -p "$T/state"

# conf_with LUNS: the daemon's configuration with these LUN groups.
conf_with() {
	cat <<EOF
listen = [ "$P" ];
threads = 2;
state_dir = "$T/state";
control_socket = "$T/control.sock";
targets = ( { iqn = "$IQN"; luns = ( $1 ); } );
EOF
}
RBD0="{ lun = 0; backstore = \"rbd\"; pool = \"rbd\"; image = \"lun0\"; conf = \"$CEPH_CONF\"; size = \"256M\"; }"
FILE1="{ lun = 1; backstore = \"file\"; path = \"$T/lun1.img\"; size = \"64M\"; }"
conf_with "$RBD0, $FILE1" >"$T/targetd.conf"

# --- the configuration's checks ------------------------------------------
# bad_conf NAME LUN-GROUP MESSAGE: --check-config refuses it, saying MESSAGE.
bad_conf() {
	conf_with "$2" >"$T/bad.conf"
	if "$TARGETD" --check-config -c "$T/bad.conf" >"$T/bad.out" 2>&1; then
		echo "accepted: $2"
		return 1
	fi
	grep -F -e "$3" "$T/bad.out" || { echo "no \"$3\" in:"; cat "$T/bad.out"; return 1; }
}
run_test "conf: pool is required" bad_conf x \
	'{ lun = 0; backstore = "rbd"; image = "a"; }' 'pool: required for an rbd backstore'
run_test "conf: image is required" bad_conf x \
	'{ lun = 0; backstore = "rbd"; pool = "rbd"; }' 'image: required for an rbd backstore'
run_test "conf: no path on rbd" bad_conf x \
	'{ lun = 0; backstore = "rbd"; pool = "rbd"; image = "a"; path = "/tmp/x"; }' \
	'path: not applicable to an rbd backstore'
run_test "conf: image names have no '/'" bad_conf x \
	'{ lun = 0; backstore = "rbd"; pool = "rbd"; image = "rbd/a"; }' "must not contain '/' or '@'"
run_test "conf: the client is an id" bad_conf x \
	'{ lun = 0; backstore = "rbd"; pool = "rbd"; image = "a"; client = "client.admin"; }' \
	'is the id without "client."'
run_test "conf: pool only on rbd" bad_conf x \
	"{ lun = 0; backstore = \"file\"; path = \"$T/x.img\"; size = \"1M\"; pool = \"rbd\"; }" \
	'pool: only for backstore = "rbd"'
run_test "conf: a missing ceph.conf" bad_conf x \
	"{ lun = 0; backstore = \"rbd\"; pool = \"rbd\"; image = \"a\"; conf = \"$T/none.conf\"; }" \
	"none.conf: No such file or directory"

# no size and no image: the daemon refuses to start, naming the image
start_fails() {
	conf_with "{ lun = 0; backstore = \"rbd\"; pool = \"rbd\"; image = \"absent\"; conf = \"$CEPH_CONF\"; }" \
		>"$T/absent.conf"
	timeout 120 "$TARGETD" -f -c "$T/absent.conf" >"$T/absent.out" 2>&1 && return 1
	grep -F 'rbd rbd/absent: No such file or directory (give a size to create it' "$T/absent.out" ||
		{ cat "$T/absent.out"; return 1; }
}
run_test "an absent image without size is refused" start_fails

# --- the image created, I/O ---------------------------------------------
if ! start_daemon "$PORT" -c "$T/targetd.conf"; then
	td_log "the daemon did not start with an rbd LUN"
	exit 1
fi
wait_log "started " 60
image_size_is() {
	local got
	got=$(ceph_rbd info rbd/lun0 --format json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["size"])')
	[ "$got" = "$1" ] || { echo "image size $got, expected $1"; return 1; }
	echo "image size $got"
}
run_test "the image was created with the configured size" image_size_is $((256 << 20))
run_test "a new image reads zeroes" "$ITEST" zeroed "$URL/0"
run_test "INQUIRY and VPD pages" "$ITEST" inq "$URL/0"
run_test "READ CAPACITY and range checks" "$ITEST" readcap "$URL/0" $((256 << 20)) 512
run_test "write, read, compare" "$ITEST" rw "$URL/0"
run_test "8 sessions at queue depth 32" "$ITEST" concurrency "$URL/0" 8
run_test "marked extents" "$ITEST" mark "$URL/0" 1234
run_test "COMPARE AND WRITE lock race, 4 sessions" "$ATSRACE" race "$URL/0" 4 400
# librbd 16 reports the mismatch offset plus the object's image offset:
# blocks in the first object, the second (4 MiB = LBA 8192) and later ones
run_test "MISCOMPARE offsets, object 0" "$ATSRACE" miscompare "$URL/0" 3
run_test "MISCOMPARE offsets, object 1" "$ATSRACE" miscompare "$URL/0" 8193
run_test "MISCOMPARE offsets, object 5" "$ATSRACE" miscompare "$URL/0" $((5 * 8192 + 4000))
run_test "COMPARE AND WRITE aborted" "$ATSRACE" abort "$URL/0" 20
run_test "EXTENDED COPY rbd to file and within rbd" "$ATSRACE" copy "$URL/0" "$URL/1" 8
run_test "EXTENDED COPY file to rbd" "$ATSRACE" copy "$URL/1" "$URL/0" 8
lbastat() {
	"$ATSRACE" fill "$URL/0" 65536 16384 &&
		"$ATSRACE" lbastatus "$URL/0" 65536 mapped 16384 &&
		"$ATSRACE" unmap "$URL/0" 65536 8192 &&
		"$ATSRACE" lbastatus "$URL/0" 65536 deallocated 8192 &&
		"$ATSRACE" wsunmap "$URL/0" 73728 8192 &&
		"$ATSRACE" lbastatus "$URL/0" 65536 deallocated 16384
}
run_test "UNMAP and WRITE SAME UNMAP=1 deallocate whole objects (GET LBA STATUS)" lbastat

# --- sizes: an image is never cut unless asked for --------------------------
MiB=$((1 << 20))
TAIL=$((256 * 2048 - 8))   # a block near the end of the 256M image
CTL() { "$TARGETCTL" -s "$T/control.sock" "$@"; }
# tail_sum: the 4 KiB at block TAIL of the image, read with the rbd CLI
tail_sum() {
	ceph_rbd export rbd/lun0 - 2>/dev/null |
		dd bs=4096 skip=$((TAIL / 8)) count=1 iflag=fullblock status=none | sha256sum
}
ZERO_SUM=$(head -c 4096 /dev/zero | sha256sum)
# tail_same: the block still holds what tail_sum saw first (in $T/tail.sum)
tail_same() {
	local now was
	now=$(tail_sum)
	was=$(cat "$T/tail.sum")
	[ "$now" = "$was" ] || { echo "the image's block $TAIL changed: $now, was $was"; return 1; }
}
rbd_conf_size() {
	conf_with "{ lun = 0; backstore = \"rbd\"; pool = \"rbd\"; image = \"lun0\"; conf = \"$CEPH_CONF\"; size = \"$1\"; }, $FILE1" \
		>"$T/targetd.conf"
}
reload_shrink_refused() {
	"$ATSRACE" fill "$URL/0" "$TAIL" 8 >/dev/null || return 1
	tail_sum >"$T/tail.sum"
	[ "$(cat "$T/tail.sum")" != "$ZERO_SUM" ] || { echo "the pattern did not reach the image"; return 1; }
	rbd_conf_size 128M
	if CTL reload >"$T/shrink.out" 2>&1; then
		cat "$T/shrink.out"; echo "a shrinking reload was accepted"; return 1
	fi
	grep -q "never shrinks a LUN" "$T/shrink.out" &&
		grep -q -- "--shrink --force" "$T/shrink.out" ||
		{ cat "$T/shrink.out"; return 1; }
	image_size_is $((256 * MiB)) && "$ITEST" readcap "$URL/0" $((256 * MiB)) 512 &&
		tail_same || return 1
	rbd_conf_size 256M   # back to what runs, so that targetctl may write the file
	CTL reload >/dev/null
}
run_test "a reload with a smaller size is refused; the image and its tail stay" reload_shrink_refused
reload_grows() {
	rbd_conf_size 320M
	CTL reload || return 1
	image_size_is $((320 * MiB)) && "$ITEST" readcap "$URL/0" $((320 * MiB)) 512 &&
		tail_same
}
run_test "a reload with a larger size grows the image (rbd resize), the data kept" reload_grows
ctl_resize() {
	CTL lun resize "$IQN" 0 384M || return 1
	image_size_is $((384 * MiB)) && "$ITEST" readcap "$URL/0" $((384 * MiB)) 512 ||
		return 1
	if CTL lun resize "$IQN" 0 300M >"$T/resize.out" 2>&1; then cat "$T/resize.out"; return 1; fi
	grep -q -- "--shrink --force" "$T/resize.out" || { cat "$T/resize.out"; return 1; }
	image_size_is $((384 * MiB)) || return 1
	# asked for, destructive: the image itself is cut
	CTL lun resize "$IQN" 0 300M --shrink --force || return 1
	image_size_is $((300 * MiB)) && "$ITEST" readcap "$URL/0" $((300 * MiB)) 512 &&
		tail_same && grep -q 'size = "300M"' "$T/targetd.conf"
}
run_test "lun resize grows the image; shrinks it only with --shrink --force" ctl_resize
ctl_lun_add() {
	local out=$T/add.out
	# the checks of the file, through the control socket
	if CTL lun add "$IQN" 2 rbd --size 64M >"$out" 2>&1; then cat "$out"; return 1; fi
	grep -F -q "luns[2].pool: required for an rbd backstore" "$out" || { cat "$out"; return 1; }
	if CTL lun add "$IQN" 2 rbd --pool rbd --image a/b >"$out" 2>&1; then cat "$out"; return 1; fi
	grep -F -q "must not contain '/' or '@'" "$out" || { cat "$out"; return 1; }
	CTL lun add "$IQN" 2 rbd --pool rbd --image lun2 --ceph-conf "$CEPH_CONF" --size 64M ||
		return 1
	"$ITEST" rw "$URL/2" >/dev/null || return 1
	[ "$(ceph_rbd info rbd/lun2 --format json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["size"])')" = $((64 * MiB)) ] ||
		return 1
	# written back as the file's keys, and valid as a file
	grep -q 'image = "lun2"' "$T/targetd.conf" && grep -q "conf = \"$CEPH_CONF\"" "$T/targetd.conf" &&
		"$TARGETD" --check-config -c "$T/targetd.conf" >/dev/null || { cat "$T/targetd.conf"; return 1; }
	CTL luns -j | python3 -c '
import json, sys
l = [x for x in json.load(sys.stdin) if x["lun"] == 2][0]
assert l["backstore"] == "rbd" and l["image"] == "rbd/lun2", l' || return 1
	CTL lun remove "$IQN" 2 --force
}
run_test "targetctl lun add with an rbd backstore: checked as the file, written back" ctl_lun_add
run_here "stop" stop_daemon

restart_smaller() {
	rbd_conf_size 128M
	start_daemon "$PORT" -c "$T/targetd.conf" || return 1
	wait_log "started " 60
	"$ITEST" readcap "$URL/0" $((128 * MiB)) 512 || return 1
	image_size_is $((300 * MiB)) || { echo "the image was cut at start-up"; return 1; }
	grep -q "rbd_image_longer" "$TD_DAEMON_LOG" || { echo "no word of the longer image"; return 1; }
	stop_daemon
	rbd_conf_size 300M
	start_daemon "$PORT" -c "$T/targetd.conf" || return 1
	wait_log "started " 60
	"$ITEST" readcap "$URL/0" $((300 * MiB)) 512 && tail_same &&
		"$ITEST" mark "$URL/0" 4321 >/dev/null   # checked after the next start
	local rc=$?
	stop_daemon
	return $rc
}
run_test "a restart with a smaller size serves the first bytes; the image stays whole" restart_smaller

# --- across a restart, in the background ----------------------------------
background() {
	local pid i
	# the starting process exits once the daemon serves: no wait needed
	"$TARGETD" -c "$T/targetd.conf" -s "$T/state" --pidfile "$T/bg.pid" >"$T/bg.out" 2>&1 || {
		echo "the daemon's start in the background failed:"; cat "$T/bg.out"; return 1; }
	pid=$(cat "$T/bg.pid" 2>/dev/null)
	[ -n "$pid" ] && kill -0 "$pid" && port_open "$PORT" ||
		{ echo "no daemon serving (pid file: ${pid:-none})"; cat "$T/bg.out"; return 1; }
	"$ITEST" check-mark "$URL/0" 4321
	local rc=$?
	kill -TERM "$pid"
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 "$pid" 2>/dev/null || { kill -KILL "$pid"; echo "did not stop"; return 1; }
	return $rc
}
run_test "in the background (fork before connecting), the data kept" background
td_summary
