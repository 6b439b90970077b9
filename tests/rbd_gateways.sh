#!/bin/bash
# Two targetd gateways exporting one RBD image (tests/ceph.sh's throw-away
# cluster): gateway A on 127.0.0.1 (portal group 1), gateway B on 127.0.0.2
# (portal group 2), each with its own state directory, the same target
# name and LUN. Checks that the LUN is one logical unit seen through two
# target ports (VPD 0x80 and 0x83 alike), that COMPARE AND WRITE is atomic
# across the gateways (a lock race with sessions on both loses no update),
# that SPC-2 and persistent reservations taken through one gateway are
# enforced by the other (RESERVATION CONFLICT), with the unit attentions
# of a preemption reaching the other gateway's nexus, that a LUN RESET on
# one gateway releases an SPC-2 reservation the other took, and libiscsi's
# MultipathIO family with one URL on each gateway.
#
# Skipped (exit 77, with the reason) without the RBD backstore or a Ceph
# cluster (see tests/rbd.sh).
#
# By hand from a build tree:  make check TESTS=tests/rbd_gateways.sh
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ceph.sh"

: "${ATSRACE:=$(dirname "$ITEST")/atsrace}"
: "${PRTEST:=$(dirname "$ITEST")/prtest}"
ACQ=${RBD_GATEWAYS_ACQUISITIONS:-2000}

td_init rbd_gateways
T=$TD_TMP
PID_A=
PID_B=

gw_cleanup() {
	local p
	for p in $PID_A $PID_B; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	ceph_stop
	td_cleanup
}
trap gw_cleanup EXIT

printf 'targets = ( { iqn = "iqn.2026-11.org.targetd.test:probe"; luns = ( { lun = 0; backstore = "rbd"; pool = "p"; image = "i"; } ); } );\n' \
	>"$T/probe.conf"
if ! "$TARGETD" --check-config -c "$T/probe.conf" >"$T/probe.out" 2>&1; then
	grep -q 'built without Ceph RBD' "$T/probe.out" &&
		td_skip_all "targetd is built without the RBD backstore (configure --with-rbd, librbd-dev)"
	cat "$T/probe.out"
	exit 99
fi
(exec 3<>/dev/tcp/127.0.0.2/9) 2>/dev/null
case $? in
0 | 1) ;;
*) td_skip_all "127.0.0.2 is not reachable here (loopback has only 127.0.0.1)" ;;
esac
ceph_start "$T/ceph" || td_skip_all "no Ceph cluster: $CEPH_WHY"

IQN=iqn.2026-11.org.targetd.test:shared
PORT_A=$(free_port) || exit 99
PORT_B=$(free_port) || exit 99
URL_A=iscsi://127.0.0.1:$PORT_A/$IQN/0
URL_B=iscsi://127.0.0.2:$PORT_B/$IQN/0

# gw_conf NAME ADDR:PORT TPGT STATE OTHER-TPGT OTHER-STATE: one gateway's
# configuration: its own portal group and the other gateway's (remote).
gw_conf() {
	mkdir -p "$T/$1"
	cat >"$T/$1/targetd.conf" <<EOF
listen = ( { address = "$2"; tpgt = $3; } );
portal_groups = ( { tpgt = $3; state = "$4"; preferred = $7; },
                  { tpgt = $5; state = "$6"; remote = true; preferred = $8; } );
threads = 2;
nop_interval = 0;
state_dir = "$T/$1";
control_socket = "$T/$1/control.sock";
targets = ( { iqn = "$IQN";
  luns = ( { lun = 0; backstore = "rbd"; pool = "rbd"; image = "shared"; conf = "$CEPH_CONF";
             size = "512M"; } ); } );
EOF
}
# active/optimized through A, active/non-optimized through B
gw_conf a "127.0.0.1:$PORT_A" 1 active/optimized 2 active/non-optimized true false
gw_conf b "127.0.0.2:$PORT_B" 2 active/non-optimized 1 active/optimized false true

# gw_start NAME HOST PORT: start a gateway, wait until it accepts.
gw_start() {
	local i pid
	"$TARGETD" -f -c "$T/$1/targetd.conf" >"$T/$1/log" 2>&1 &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || { echo "gateway $1 exited:"; cat "$T/$1/log"; return 1; }
		(exec 3<>"/dev/tcp/$2/$3") 2>/dev/null && break
		sleep 0.1
	done
	eval "PID_${1^^}=$pid"
}
gw_start a 127.0.0.1 "$PORT_A" || exit 1
gw_start b 127.0.0.2 "$PORT_B" || exit 1
td_log "gateway A $URL_A (pid $PID_A), gateway B $URL_B (pid $PID_B)"

# --- one logical unit --------------------------------------------------------
same_identity() {
	local a b p
	for p in 0x80 0x83; do
		a=$(iscsi-inq -e 1 -c "$p" "$URL_A" 2>&1) || { echo "$a"; return 1; }
		b=$(iscsi-inq -e 1 -c "$p" "$URL_B" 2>&1) || { echo "$b"; return 1; }
		# VPD 0x83 also names the target port (relative port, group): keep the LU's
		a=$(grep -viE 'relative|port group|target port' <<<"$a")
		b=$(grep -viE 'relative|port group|target port' <<<"$b")
		[ "$a" = "$b" ] || { printf 'page %s differs:\n%s\n---\n%s\n' "$p" "$a" "$b"; return 1; }
	done
	iscsi-inq -e 1 -c 0x80 "$URL_A"
}
run_test "the same serial number and NAA name through both gateways" same_identity
run_test "REPORT TARGET PORT GROUPS through A: both gateways' groups" "$PRTEST" rtpg "$URL_A" "1:ao:p,2:an"
run_test "REPORT TARGET PORT GROUPS through B: the same" "$PRTEST" rtpg "$URL_B" "1:ao:p,2:an"
run_test "data written through A reads back through B" bash -c \
	"'$ITEST' mark '$URL_A' 77 && '$ITEST' check-mark '$URL_B' 77"

# --- COMPARE AND WRITE across gateways ------------------------------------------
run_test "COMPARE AND WRITE lock race, 4 sessions over both gateways, $ACQ acquisitions" \
	"$ATSRACE" race "$URL_A,$URL_B" 4 "$ACQ"
run_test "MISCOMPARE offsets through B" "$ATSRACE" miscompare "$URL_B" 8200

# --- reservations across gateways ----------------------------------------------
run_test "persistent reservations: holder on A, registrant on B" "$PRTEST" access "$URL_A" "$URL_B"
run_test "persistent reservations: holder on B, registrant on A" "$PRTEST" access "$URL_B" "$URL_A"
run_test "preempted through the other gateway: unit attention, conflict; RESERVE(6)" \
	"$PRTEST" preempt-ua "$URL_A" "$URL_B"
run_test "RESERVE(6) through A against COMPARE AND WRITE through B" "$PRTEST" caw "$URL_A" "$URL_B"
run_test "a LUN RESET through B releases A's RESERVE(6), unit attention on A" \
	"$PRTEST" reset-release "$URL_A" "$URL_B"

# the lab's locking demonstration with its hosts on both gateways
: "${VAAI_LAB:=$(dirname "$ITEST")/../tools/vaai-lab}"
lab_locking() {
	"$VAAI_LAB" locking "$URL_A,$URL_B" --force --hosts 2 --modes none,reserve,ats,pr \
		--seconds 2 >"$T/locking.out" 2>&1
	local rc=$?
	cat "$T/locking.out"
	return $rc
}
if [ -x "$VAAI_LAB" ]; then
	run_test "vaai-lab locking with its hosts on both gateways" lab_locking
else
	skip_test "vaai-lab locking" "tools/vaai-lab not built"
fi

# libiscsi's MultipathIO family with one path through each gateway. Its
# CompareAndWrite test zeroes LBAs 0..255 but compares 0..256 (see
# tests/conformance.sh): LBA 256 is zeroed first. Every test must pass;
# a skip counts as a failure here.
multipath() {
	local out=$T/multipath.log
	"$ITEST" write-zeros "$URL_A" 0 512 || return 1
	timeout 600 iscsi-test-cu -d -v --test ALL.MultipathIO "$URL_A" "$URL_B" >"$out" 2>&1
	grep -E 'Test: |SKIPPED|FAILED' "$out"
	if grep -qE 'FAILED|SKIPPED' "$out" || ! grep -q 'Run Summary' "$out"; then
		cat "$out"
		return 1
	fi
	grep -A4 'Run Summary' "$out"
}
run_test "libiscsi MultipathIO, one path through each gateway" multipath

# both gateways stop cleanly on SIGTERM (their watches on the record end)
gw_stop() {
	local pid=$1 i rc
	kill -TERM "$pid" || return 1
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && { echo "still running 30 s after SIGTERM"; return 1; }
	wait "$pid"
	rc=$?
	[ "$rc" = 0 ] || { echo "exit status $rc"; return 1; }
}
run_here "gateway A stops cleanly" gw_stop "$PID_A"
run_here "gateway B stops cleanly" gw_stop "$PID_B"
[ -s "$T/a/log" ] && grep -E 'ERROR|error:' "$T/a/log" "$T/b/log" | head -5
PID_A=
PID_B=
td_summary
