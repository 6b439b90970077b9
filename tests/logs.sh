#!/bin/bash
# Logs an operator can read: under -f every line has a timestamp; the
# start-up line names the control socket and the metrics URL; a login,
# a logout, a CHAP failure, an ACL refusal, a discovery session (libiscsi
# 1.19 sends InitiatorName twice there), task management and a reload are
# one line each with key=value fields. Also: --pidfile, what targetctl
# says when it cannot reach the daemon, and the messages for
# -l localhost:PORT and a syntax error.
set -u
. "$(dirname "$0")/lib.sh"
td_init logs

: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"
td_need_cmd iscsi-inq iscsi-ls python3 timeout
[ -x "$TARGETCTL" ] || { td_log "ERROR: $TARGETCTL not built"; exit 99; }

T=$TD_TMP
PORT=$(free_port) || exit 99
MPORT=$(free_port) || exit 99
SOCK=$T/ctl.sock
IQN=iqn.2026-11.org.targetd.test:logs
OPEN=iqn.2026-11.org.targetd.test:open
INI=iqn.2026-11.org.targetd.test:initiator-a
OTHER=iqn.2026-11.org.targetd.test:initiator-b
CONF=$T/targetd.conf
PIDF=$T/targetd.pid
CTL() { "$TARGETCTL" -s "$SOCK" "$@"; }

write_conf "$CONF" <<EOF
listen = [ "127.0.0.1:$PORT" ];
threads = 1;
state_dir = "$T";
control_socket = "$SOCK";
metrics_listen = "127.0.0.1:$MPORT";
nop_interval = 0;
targets = (
  { iqn = "$IQN";
    initiators = [ "$INI" ];
    chap = { user = "alice"; secret = "alice-secret-123"; };
    luns = ( { lun = 0; backstore = "memory"; size = "8M"; } ); },
  { iqn = "$OPEN";
    luns = ( { lun = 0; backstore = "memory"; size = "8M"; } ); }
);
EOF

start_daemon "$PORT" -c "$CONF" --pidfile "$PIDF" || exit 1
wait_log "started " 10

# has_line EVENT KEY=VALUE...: a line of the daemon's log is that event
# with these fields (each KEY=VALUE a fixed string inside the line)
has_line() {
	local ev=$1
	shift
	python3 - "$TD_DAEMON_LOG" "$ev" "$@" <<'EOF'
import re, sys
log, ev, want = sys.argv[1], sys.argv[2], sys.argv[3:]
for line in open(log, errors="replace"):
    m = re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4} targetd: \w+: (\S+)( .*)?$', line.rstrip("\n"))
    if not m or m.group(1) != ev:
        continue
    fields = " " + (m.group(2) or "") + " "
    if all((" " + w + " ") in fields for w in want):
        print("found:", line.rstrip())
        sys.exit(0)
print("no '%s' line with %s in the log:" % (ev, " ".join(want)))
print(open(log, errors="replace").read())
sys.exit(1)
EOF
}
# wait_line EVENT KEY=VALUE...: has_line, polled for up to 10 s
wait_line() {
	local i
	for i in $(seq 1 50); do
		has_line "$@" >/dev/null && { has_line "$@"; return; }
		sleep 0.2
	done
	has_line "$@"
}

case_startup() {
	local bad
	has_line started "control_socket=$SOCK" "metrics=http://127.0.0.1:$MPORT/metrics" \
		"config=$CONF" || return 1
	# every log line starts with a timestamp
	bad=$(grep "targetd: [a-z]*:" "$TD_DAEMON_LOG" |
		grep -Evc '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{4} targetd: ')
	[ "$bad" = 0 ] || { echo "$bad log lines without a timestamp"; return 1; }
	[ "$(cat "$PIDF")" = "$TD_DAEMON_PID" ] || { echo "pid file holds '$(cat "$PIDF")'"; return 1; }
}
run_test "start-up line: control socket, metrics URL, config; timestamps; pid file" case_startup

case_login_logout() {
	iscsi-inq -i "$INI" "iscsi://alice%alice-secret-123@127.0.0.1:$PORT/$IQN/0" >/dev/null || return 1
	wait_line login "initiator=$INI" "target=$IQN" type=normal auth=chap "portal=127.0.0.1:$PORT" \
		tpgt=1 header_digest=none data_digest=none max_burst=262144 first_burst=65536 || return 1
	has_line login "initiator=$INI" | grep -Eq 'isid=0x[0-9a-f]{12} tsih=[0-9]+ cid=0 ' ||
		{ echo "no ISID/TSIH/CID fields"; return 1; }
	has_line login "initiator=$INI" | grep -Eq 'peer=127\.0\.0\.1:[0-9]+ ' || return 1
	wait_line logout "initiator=$INI" "target=$IQN" 'reason="logout complete"'
}
run_test "a login and a logout are one line each with their fields" case_login_logout

case_chap_failure() {
	if iscsi-inq -i "$INI" "iscsi://alice%wrong-secret-1234@127.0.0.1:$PORT/$IQN/0" >/dev/null 2>&1; then
		echo "a wrong secret logged in"; return 1
	fi
	wait_line chap_failed "initiator=$INI" "target=$IQN" status=0x201 \
		'reason="CHAP authentication failed"' || return 1
	wait_line connection_closed 'reason="login refused"'
}
run_test "a CHAP failure is one line: initiator, target, status, reason" case_chap_failure

case_acl_refusal() {
	if iscsi-inq -i "$OTHER" "iscsi://alice%alice-secret-123@127.0.0.1:$PORT/$IQN/0" >/dev/null 2>&1; then
		echo "an initiator not on the list logged in"; return 1
	fi
	wait_line acl_refused "initiator=$OTHER" "target=$IQN" status=0x202 "portal=127.0.0.1:$PORT"
}
run_test "an ACL refusal is one line" case_acl_refusal

case_discovery() {
	# libiscsi 1.19 declares InitiatorName twice in a discovery login
	iscsi-ls -i "$OTHER" "iscsi://127.0.0.1:$PORT" >"$T/ls.out" || { cat "$T/ls.out"; return 1; }
	cat "$T/ls.out"
	grep -q "$OPEN" "$T/ls.out" || return 1
	if grep -q "$IQN" "$T/ls.out"; then echo "discovery showed a target the initiator may not use"; return 1; fi
	wait_line login "initiator=$OTHER" type=discovery target=-
}
run_test "discovery (InitiatorName twice, as libiscsi 1.19 sends it) logs in, shows only allowed targets" case_discovery

case_tmf() {
	"$ITEST" tmf "iscsi://127.0.0.1:$PORT/$OPEN/0" >"$T/tmf.out" 2>&1 || { cat "$T/tmf.out"; return 1; }
	wait_line tmf 'function="LOGICAL UNIT RESET"' lun=0 response=0 "initiator=iqn.2026-11.org.targetd:itest" || return 1
	wait_line tmf 'function="ABORT TASK"' lun=0
}
run_test "task management functions are logged" case_tmf

case_reload() {
	sed -i "s|size = \"8M\"; } ); }\$|size = \"8M\"; }, { lun = 1; backstore = \"memory\"; size = \"4M\"; } ); }|" "$CONF"
	CTL reload || return 1
	wait_line lun_added "target=$OPEN" lun=1 backstore=memory size_bytes=4194304 by=reload || return 1
	wait_line reload result=applied "file=$CONF" by=reload || return 1
	cp "$CONF" "$T/good.conf"
	echo "threads = ;" >>"$CONF"
	CTL reload >/dev/null 2>&1 && return 1
	cp "$T/good.conf" "$CONF"
	wait_line reload result=refused "file=$CONF"
}
run_test "a reload's outcome and its LUN changes are logged" case_reload

case_pidfile_held() {
	local out=$T/second.out p2
	p2=$(free_port)
	if timeout 20 "$TARGETD" -f -c "$CONF" -l "127.0.0.1:$p2" --pidfile "$PIDF" >"$out" 2>&1; then
		echo "a second daemon started on a held pid file"; return 1
	fi
	cat "$out"
	grep -q "another targetd (pid $TD_DAEMON_PID) holds it" "$out" || return 1
	[ "$(cat "$PIDF")" = "$TD_DAEMON_PID" ]
}
run_test "--pidfile held by a running daemon: a second one refuses to start" case_pidfile_held

run_here "daemon stops" stop_daemon

case_pidfile_removed() {
	[ ! -e "$PIDF" ] || { echo "pid file left behind"; return 1; }
	has_line stopped
}
run_test "the pid file is removed at exit" case_pidfile_removed

case_unreachable() {
	local out=$T/unreach.out
	if "$TARGETCTL" -s "$T/nothing.sock" status >"$out" 2>&1; then return 1; fi
	cat "$out"
	grep -q "cannot reach targetd at $T/nothing.sock (from -s)" "$out" &&
		grep -q -- "-s PATH or TARGETD_CONTROL=PATH" "$out" || return 1
	if TARGETD_CONTROL=$T/env.sock "$TARGETCTL" status >"$out" 2>&1; then return 1; fi
	grep -q "cannot reach targetd at $T/env.sock (from TARGETD_CONTROL)" "$out"
}
run_test "targetctl that cannot reach the daemon names the socket and how to point elsewhere" case_unreachable

case_messages() {
	local out=$T/msg.out
	"$TARGETD" -l localhost:3260 --check-config >"$out" 2>&1 && return 1
	cat "$out"
	grep -q "numeric address expected: 127.0.0.1:3260" "$out" || return 1
	printf 'threads = 2;\ntargets = ( { iqn = "%s"; luns = ( { lun = 0 backstore = "memory"; } ) } ;\n' "$IQN" >"$T/bad.conf"
	"$TARGETD" -c "$T/bad.conf" --check-config >"$out" 2>&1 && return 1
	cat "$out"
	grep -q "bad.conf:2: syntax error near 'targets = ( { iqn" "$out"
}
run_test "messages: -l localhost:PORT, a syntax error names the line's text" case_messages

td_summary
