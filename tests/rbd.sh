#!/bin/bash
# The Ceph RBD backstore against a throw-away cluster (tests/ceph.sh): the
# configuration's checks, an image created from the configuration, I/O
# and its range checks, VAAI primitives on librbd (COMPARE AND WRITE with
# its MISCOMPARE offset, WRITE SAME, UNMAP, GET LBA STATUS, EXTENDED COPY
# between an rbd and a file LUN), the data across a restart, and the
# daemon started in the background (it must connect to the cluster after
# it forked).
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
wait_log "ready" 60
image_size_is() {
	local got
	got=$(ceph_rbd info rbd/lun0 --format json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["size"])')
	[ "$got" = "$1" ] || { echo "image size $got, expected $1"; return 1; }
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
run_here "stop" stop_daemon

# --- across a restart, in the background ----------------------------------
background() {
	local pid i
	"$TARGETD" -c "$T/targetd.conf" -s "$T/state" >"$T/bg.out" 2>&1 || {
		echo "the daemon's start in the background failed:"; cat "$T/bg.out"; return 1; }
	for ((i = 0; i < 600; i++)); do
		pid=$(pgrep -f -n -- "-c $T/targetd.conf -s $T/state" || true)
		[ -n "$pid" ] && port_open "$PORT" && break
		sleep 0.1
	done
	[ -n "$pid" ] || { echo "no daemon"; return 1; }
	"$ITEST" check-mark "$URL/0" 1234
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
