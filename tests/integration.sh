#!/bin/bash
# Integration tests: the real daemon on a free 127.0.0.1 port, driven by a
# real initiator (tests/itest, built on libiscsi) and libiscsi's tools.
# Closes with "N passed, N failed"; exits 1 if anything failed.
set -u
. "$(dirname "$0")/lib.sh"

td_init integration
td_need_cmd iscsi-ls iscsi-inq python3 timeout
if [ ! -x "$ITEST" ]; then
	td_log "ERROR: $ITEST not built (make check builds it)"
	exit 99
fi

T=$TD_TMP
PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
P=127.0.0.1:$PORT
IQN=iqn.2026-11.org.targetd.test
ALLOWED=iqn.2026-11.org.targetd:itest-allowed
CHAP_USER=alice
CHAP_SECRET=alice-secret-0123
MUTUAL_USER=array
MUTUAL_SECRET=array-secret-4567
SEED=$(( (RANDOM << 15) | RANDOM ))
td_log "port $PORT, temp dir $T, seed $SEED"

CONF=$T/targetd.conf
td_write_conf "$CONF" -p "$PORT" <<EOF
targets = (
  {
    iqn = "$IQN:disk";
    luns = (
      { lun = 0; backstore = "file"; path = "$T/lun0.img"; size = "1G"; thin = true; },
      { lun = 1; backstore = "memory"; size = "128M"; }
    );
  },
  {
    iqn = "$IQN:chap";
    chap = { user = "$CHAP_USER"; secret = "$CHAP_SECRET"; };
    luns = ( { lun = 0; backstore = "memory"; size = "32M"; } );
  },
  {
    iqn = "$IQN:mutual";
    chap = { user = "$CHAP_USER"; secret = "$CHAP_SECRET";
             mutual_user = "$MUTUAL_USER"; mutual_secret = "$MUTUAL_SECRET"; };
    luns = ( { lun = 0; backstore = "memory"; size = "32M"; } );
  },
  {
    iqn = "$IQN:acl";
    initiators = [ "$ALLOWED" ];
    luns = ( { lun = 0; backstore = "memory"; size = "32M"; } );
  }
);
EOF

DISK0=iscsi://$P/$IQN:disk/0
DISK1=iscsi://$P/$IQN:disk/1
CHAP0=iscsi://$CHAP_USER%$CHAP_SECRET@$P/$IQN:chap/0
CHAPBAD=iscsi://$CHAP_USER%not-the-secret-99@$P/$IQN:chap/0
MUTUAL0=iscsi://$CHAP_USER%$CHAP_SECRET@$P/$IQN:mutual/0
ACL0=iscsi://$P/$IQN:acl/0

# ---------------------------------------------------------------- options

opt_version() {
	local out
	out=$("$TARGETD" --version) || { echo "--version exited $?"; return 1; }
	echo "$out"
	grep -q 'targetd' <<<"$out" || { echo "--version does not name targetd"; return 1; }
}

opt_help() {
	local out o
	out=$("$TARGETD" --help) || { echo "--help exited $?"; return 1; }
	echo "$out"
	for o in -c --foreground --verbose --check-config --version --help; do
		grep -q -e "$o" <<<"$out" || { echo "--help does not mention $o"; return 1; }
	done
}

opt_unknown() {
	local rc
	"$TARGETD" --no-such-option >"$T/unknown.out" 2>&1
	rc=$?
	cat "$T/unknown.out"
	[ "$rc" != 0 ] || { echo "an unknown option was accepted"; return 1; }
	[ -s "$T/unknown.out" ] || { echo "no message for an unknown option"; return 1; }
}

# ------------------------------------------------------------ check-config

check_good() {
	"$TARGETD" --check-config -c "$CONF"
	local rc=$?
	[ "$rc" = 0 ] || { echo "--check-config of a good config exited $rc"; return 1; }
}

# A config with two semantic errors on known lines: both must be reported
# as FILE:LINE: message, and the exit status must be 1.
check_bad_semantic() {
	local bad=$T/bad.conf out rc
	write_conf "$bad" <<EOF
listen = [ "$P" ];
threads = "many";
targets = (
  {
    iqn = "$IQN:bad";
    luns = ( { lun = 0; backstore = "tape"; size = "1G"; } );
  }
);
EOF
	out=$("$TARGETD" --check-config -c "$bad" 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" = 1 ] || { echo "exit status $rc, expected 1"; return 1; }
	grep -q "^$bad:2: " <<<"$out" || { echo "no '$bad:2: ...' line for threads = \"many\""; return 1; }
	grep -q "^$bad:6: " <<<"$out" || { echo "no '$bad:6: ...' line for backstore = \"tape\""; return 1; }
	# every non-empty line is FILE:LINE: message or FILE: message
	if grep -v -e "^$bad:[0-9][0-9]*: ." -e "^$bad: ." -e '^$' <<<"$out" | grep -q .; then
		echo "lines not in the FILE:LINE: message format:"
		grep -v -e "^$bad:[0-9][0-9]*: ." -e "^$bad: ." -e '^$' <<<"$out"
		return 1
	fi
}

check_bad_syntax() {
	local bad=$T/syntax.conf out rc
	printf 'listen = [ "%s" ];\nthreads = = 2;\ntargets = ( { iqn = "%s:x"; luns = ( ); } )\n' \
		"$P" "$IQN" >"$bad"
	# line 2 has '=' twice (a missing ';' is no error: libconfig's
	# terminators are optional)
	out=$("$TARGETD" --check-config -c "$bad" 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" = 1 ] || { echo "exit status $rc, expected 1"; return 1; }
	grep -q "^$bad:2: syntax error near 'threads = = 2;'" <<<"$out" ||
		{ echo "no '$bad:LINE: syntax error near ...' message"; return 1; }
}

check_missing_file() {
	local out rc
	out=$("$TARGETD" --check-config -c "$T/does-not-exist.conf" 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" = 1 ] || { echo "exit status $rc, expected 1"; return 1; }
	grep -q "does-not-exist.conf" <<<"$out" || { echo "the message does not name the file"; return 1; }
}

run_test "--version" opt_version
run_test "--help" opt_help
run_test "unknown option is refused" opt_unknown
run_test "--check-config accepts a good config" check_good
run_test "--check-config reports FILE:LINE: errors, exit 1" check_bad_semantic
run_test "--check-config reports a syntax error, exit 1" check_bad_syntax
run_test "--check-config of a missing file, exit 1" check_missing_file

# ------------------------------------------------------------- the daemon

if ! start_daemon "$PORT" -c "$CONF"; then
	TD_FAIL=$((TD_FAIL + 1))
	TD_FAILED_NAMES+=("daemon start")
	echo "FAIL: daemon start"
	td_summary
	exit 1
fi
echo "PASS: daemon started (pid $TD_DAEMON_PID)"
TD_PASS=$((TD_PASS + 1))

lun_file_sparse() {
	local size alloc
	[ -f "$T/lun0.img" ] || { echo "$T/lun0.img was not created"; return 1; }
	size=$(stat -c %s "$T/lun0.img")
	alloc=$(($(stat -c %b "$T/lun0.img") * $(stat -c %B "$T/lun0.img")))
	echo "lun0.img: size $size, allocated $alloc"
	[ "$size" = 1073741824 ] || { echo "size $size, expected 1073741824"; return 1; }
	[ "$alloc" -lt $((64 * 1048576)) ] || { echo "a thin LUN file is not sparse"; return 1; }
}

iscsi_inq_works() {
	local out
	out=$(iscsi-inq "$DISK0") || { echo "iscsi-inq failed"; return 1; }
	echo "$out"
	grep -q 'Peripheral Device Type:DIRECT_ACCESS' <<<"$out" || return 1
	out=$(iscsi-inq -e 1 -c 0x80 "$DISK0") || { echo "iscsi-inq VPD 0x80 failed"; return 1; }
	echo "$out"
}

run_test "file LUN created sparse, 1 GiB" lun_file_sparse
run_test "discovery: SendTargets lists the open and CHAP targets" \
	"$ITEST" discovery "iscsi://$P" "$IQN:disk" "$IQN:chap" "$IQN:mutual"
run_test "discovery: a listed initiator also sees the ACL target" \
	"$ITEST" -i "$ALLOWED" discovery "iscsi://$P" "$IQN:disk" "$IQN:chap" "$IQN:mutual" "$IQN:acl"
run_test "login/logout, REPORT LUNS (file LUN)" "$ITEST" login "$DISK0"
run_test "login/logout (memory LUN)" "$ITEST" login "$DISK1"
run_test "login with HeaderDigest=CRC32C" "$ITEST" -H login "$DISK0"
run_test "INQUIRY and VPD pages" "$ITEST" inq "$DISK0"
run_test "READ CAPACITY, file LUN 1 GiB" "$ITEST" readcap "$DISK0" 1073741824 512
run_test "READ CAPACITY, memory LUN 128 MiB" "$ITEST" readcap "$DISK1" 134217728 512
run_test "iscsi-inq" iscsi_inq_works
run_test "write/read/compare, file LUN" "$ITEST" -s "$SEED" rw "$DISK0"
run_test "write/read/compare, memory LUN" "$ITEST" -s "$((SEED + 1))" rw "$DISK1"
run_test "write/read/compare with header digests" "$ITEST" -H -s "$((SEED + 2))" rw "$DISK1"
run_test "CHAP login" "$ITEST" chap-ok "$CHAP0"
run_test "CHAP: wrong or no secret refused" "$ITEST" chap-bad "$CHAPBAD"
run_test "mutual CHAP login" "$ITEST" -T "$MUTUAL_USER%$MUTUAL_SECRET" chap-ok "$MUTUAL0"
expect_fail "mutual CHAP: wrong target secret refused" \
	"$ITEST" -T "$MUTUAL_USER%wrong-target-secret" chap-ok "$MUTUAL0"
run_test "ACL: unlisted initiator refused" "$ITEST" acl-refused "$ACL0"
run_test "ACL: listed initiator admitted" "$ITEST" -i "$ALLOWED" login "$ACL0"
run_test "task management" "$ITEST" -s "$SEED" tmf "$DISK1"
run_test "8 sessions x queue depth 32, file LUN" "$ITEST" -s "$SEED" concurrency "$DISK0" 8
run_test "4 sessions x queue depth 32, memory LUN" "$ITEST" -s "$SEED" concurrency "$DISK1" 4
run_test "mark data for the restart check" "$ITEST" mark "$DISK0" "$SEED"

# a TCP connection that never logs in must not keep the daemon from stopping
exec 5<>"/dev/tcp/127.0.0.1/$PORT" || true
run_here "SIGTERM: clean shutdown, exit 0 (idle connection open)" stop_daemon TERM
exec 5>&- 2>/dev/null || true

# --------------------------------------- restart: data persists, iscsi-ls

CONF2=$T/targetd2.conf
td_write_conf "$CONF2" -p "$PORT" -t '' <<EOF
targets = (
  {
    iqn = "$IQN:disk";
    luns = (
      { lun = 0; backstore = "file"; path = "$T/lun0.img"; },
      { lun = 1; backstore = "memory"; size = "64M"; }
    );
  }
);
EOF

iscsi_ls_lists() {
	local out
	out=$(iscsi-ls -s "iscsi://$P/") || { echo "iscsi-ls failed: $out"; return 1; }
	echo "$out"
	grep -q "^Target:$IQN:disk Portal:$P," <<<"$out" || { echo "target or portal not listed"; return 1; }
	grep -q '^Lun:0 .*DIRECT_ACCESS (Size:1023M)' <<<"$out" || \
		grep -q '^Lun:0 .*DIRECT_ACCESS (Size:1024M)' <<<"$out" || { echo "LUN 0 (1 GiB) not listed"; return 1; }
	grep -q '^Lun:1 .*DIRECT_ACCESS' <<<"$out" || { echo "LUN 1 not listed"; return 1; }
}

# An existing file LUN needs no size (targetd.conf(5)); if the daemon
# refuses that, say so and go on with the size given, to test the rest.
restarted=0
if start_daemon "$PORT" -c "$CONF2"; then
	echo "PASS: daemon restarted on the existing file LUN (no size given)"
	TD_PASS=$((TD_PASS + 1))
	restarted=1
else
	TD_FAIL=$((TD_FAIL + 1))
	TD_FAILED_NAMES+=("daemon restart on an existing file LUN without a size")
	echo "FAIL: daemon restart on an existing file LUN without a size"
	sed -i 's|path = "'"$T"'/lun0.img"; }|path = "'"$T"'/lun0.img"; size = "1G"; }|' "$CONF2"
	if start_daemon "$PORT" -c "$CONF2"; then
		echo "    (restarted with size = \"1G\" to run the remaining checks)"
		restarted=1
	else
		TD_FAIL=$((TD_FAIL + 1))
		TD_FAILED_NAMES+=("daemon restart")
		echo "FAIL: daemon restart"
	fi
fi
if [ "$restarted" = 1 ]; then
	run_test "data written before the restart is intact" "$ITEST" check-mark "$DISK0" "$SEED"
	run_test "iscsi-ls -s lists the target and its LUNs" iscsi_ls_lists
	run_test "a new memory LUN reads as zeros" "$ITEST" zeroed "$DISK1"
	run_here "SIGINT: clean shutdown, exit 0" stop_daemon INT
fi

# ------------------------------------------- the embedded default config
# Without -c the daemon reads /etc/targetd/targetd.conf or, if there is
# none, runs its embedded default: one target, LUN 0 = 1 GiB sparse
# lun0.img in the state directory, on 127.0.0.1:3260. The test keeps it
# out of the system: --state-dir points at a temporary directory and
# --listen moves the portal to a free port.

default_mode() {
	local state=$T/default-state dport url
	dport=$(free_port) || return 1
	start_daemon "$dport" --state-dir "$state" --listen "127.0.0.1:$dport" || return 1
	url=iscsi://127.0.0.1:$dport/iqn.2026-11.org.targetd:default/0
	wait_log "$url" || { echo "the daemon did not print $url:"; cat "$TD_DAEMON_LOG"; stop_daemon; return 1; }
	[ -f "$state/lun0.img" ] || { echo "no lun0.img in the state directory"; stop_daemon; return 1; }
	"$ITEST" readcap "$url" 1073741824 512 || { stop_daemon; return 1; }
	"$ITEST" login "$url" || { stop_daemon; return 1; }
	stop_daemon INT
}

default_help() {
	local help
	help=$("$TARGETD" --help 2>&1)
	grep -q -e '127.0.0.1:3260' <<<"$help" || { echo "--help does not state the default portal 127.0.0.1:3260"; return 1; }
}

if [ -e /etc/targetd/targetd.conf ]; then
	skip_test "embedded default config" "/etc/targetd/targetd.conf exists on this machine and would be read instead"
else
	run_here "embedded default: 1 GiB sparse LUN in the state dir, URL printed" default_mode
	run_test "--help states the default portal" default_help
fi

td_summary
