#!/bin/bash
# Login against the real daemon with hand-made Login Requests
# (tests/logintest):
#  - names: InitiatorName/TargetName that are not valid iSCSI names (a
#    space, a newline, bytes >= 0x7f, '_', no iqn./eui./naa.) refused with
#    Initiator error 0x0200, missing ones with 0x0207; an upper-case
#    spelling of a good name logs in;
#  - a discovery login that then says SessionType=Normal is refused;
#  - two spellings of one initiator name with one ISID: one session (the
#    second reinstates the first);
#  - mutual CHAP with an initiator challenge shorter than 16 bytes refused;
#  - a login paused after its first request while a reload takes the
#    initiator off the ACL (0x0202) or turns CHAP on (0x0201) does not
#    complete; with a reload that changes nothing it does;
#  - SPEC_I_PT TransportIDs with a space, a newline or 0xff refused with
#    INVALID FIELD IN PARAMETER LIST, and the APTPL state file restores
#    after a restart.
# Closes with "N passed, N failed"; exits 1 if anything failed.
set -u
. "$(dirname "$0")/lib.sh"

: "${LOGINTEST:=$PWD/tests/logintest}"
td_init login
td_need_cmd timeout mkfifo
if [ ! -x "$LOGINTEST" ]; then
	td_log "ERROR: $LOGINTEST not built (make check builds it)"
	exit 99
fi

T=$TD_TMP
PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
P=127.0.0.1:$PORT
IQN=iqn.2026-11.org.targetd.test
ALLOWED=$IQN:allowed
CHAP_USER=alice
CHAP_SECRET=alice-secret-0123
MUTUAL_USER=array
MUTUAL_SECRET=array-secret-4567
CONF=$T/targetd.conf
td_log "port $PORT, temp dir $T"

# write_config VARIANT: base | acl-revoked | chap-on
write_config() {
	local acl=$ALLOWED chap=""
	[ "$1" = acl-revoked ] && acl=$IQN:someone-else
	[ "$1" = chap-on ] && chap="chap = { user = \"$CHAP_USER\"; secret = \"$CHAP_SECRET\"; };"
	td_write_conf "$CONF" -p "$PORT" <<EOF
# variant $1
login_timeout = 30;
targets = (
  { iqn = "$IQN:disk"; luns = ( { lun = 0; backstore = "memory"; size = "16M"; } ); },
  { iqn = "$IQN:acl"; initiators = [ "$acl" ];
    luns = ( { lun = 0; backstore = "memory"; size = "16M"; } ); },
  { iqn = "$IQN:open"; $chap
    luns = ( { lun = 0; backstore = "memory"; size = "16M"; } ); },
  { iqn = "$IQN:mutual";
    chap = { user = "$CHAP_USER"; secret = "$CHAP_SECRET";
             mutual_user = "$MUTUAL_USER"; mutual_secret = "$MUTUAL_SECRET"; };
    luns = ( { lun = 0; backstore = "memory"; size = "16M"; } ); }
);
EOF
}

lt() { "$LOGINTEST" -a "$P" "$@"; }

# reload_lines N: the daemon's log has N "reload result=" lines or more.
reload_lines() {
	[ "$(grep -c ': reload result=' "$TD_DAEMON_LOG")" -ge "$1" ]
}

# paused_or_gone OUT PID: the paused login said "paused", or it ended.
paused_or_gone() {
	grep -qx paused "$1" || td_gone "$2"
}

# reload VARIANT: rewrite the configuration, SIGHUP, and wait until the
# daemon has logged the outcome of this reload.
reload() {
	local before
	before=$(grep -c ': reload result=' "$TD_DAEMON_LOG")
	write_config "$1"
	kill -HUP "$TD_DAEMON_PID"
	# the reload's outcome: "reload result=applied ..." (or refused)
	td_poll 60 reload_lines "$((before + 1))" && return 0
	echo "the reload to $1 did not finish; daemon log:"
	tail -n 20 "$TD_DAEMON_LOG"
	return 1
}

# paused TARGET INITIATOR STATUS VARIANT: a login stops after its first
# request; the configuration becomes VARIANT (reload); the final request
# must get STATUS.
paused() {
	local target=$1 initiator=$2 status=$3 variant=$4 in=$T/paused.in out=$T/paused.out
	local pid rc
	rm -f "$in"
	mkfifo "$in"
	lt -t "$target" paused "$initiator" "$status" <"$in" >"$out" 2>&1 &
	pid=$!
	exec 7>"$in"
	td_poll 60 paused_or_gone "$out" "$pid"
	if ! grep -qx paused "$out"; then
		exec 7>&-
		kill "$pid" 2>/dev/null
		wait "$pid"
		cat "$out"
		return 1
	fi
	reload "$variant" || { exec 7>&-; kill "$pid"; wait "$pid"; return 1; }
	echo go >&7
	exec 7>&-
	wait "$pid"
	rc=$?
	cat "$out"
	reload base || return 1
	return "$rc"
}

write_config base
start_daemon "$PORT" -c "$CONF" || { echo "0 passed, 1 failed"; exit 1; }

run_test "names: invalid or missing InitiatorName/TargetName refused (0x0200/0x0207)" \
	lt -t "$IQN:disk" names
run_test "a discovery login that says SessionType=Normal later is refused" lt session-type
run_test "two spellings of one initiator name with one ISID: reinstated" \
	lt -t "$IQN:disk" reinstate
run_test "mutual CHAP: an initiator challenge under 16 bytes is refused" \
	lt -t "$IQN:mutual" mutual-short "$CHAP_USER" "$CHAP_SECRET"
run_test "a login paused across a reload that changes nothing completes" \
	paused "$IQN:acl" "$ALLOWED" 0 base
run_test "a login paused across a reload that revokes its initiator: 0x0202" \
	paused "$IQN:acl" "$ALLOWED" 0x0202 acl-revoked
run_test "a login paused across a reload that turns CHAP on: 0x0201" \
	paused "$IQN:open" "$IQN:logintest" 0x0201 chap-on
run_test "SPEC_I_PT: TransportIDs that are not iSCSI names are refused" \
	lt -t "$IQN:disk" spec-i-pt
# (the reason is a quoted key=value field: its quotes and backslashes escaped)
run_test "the daemon logs refused names printably" \
	grep -qF 'InitiatorName \"iqn.2026-11.org.targetd.test:x\\x0areg' "$TD_DAEMON_LOG"
run_here "SIGTERM: clean shutdown" stop_daemon
# the state file of the good SPEC_I_PT: both registrations come back
STATE=$T/state/pr-$IQN:disk-lun0.state
two_good_regs() {
	cat "$STATE"
	[ "$(grep -c '^reg ' "$STATE")" = 2 ] &&
		grep -q "^reg 0000000000007777 1 0 1 $IQN:other\$" "$STATE" &&
		grep -q "^reg 0000000000007777 1 0 0 $IQN:pdufuzz,i,0x" "$STATE"
}
run_test "the state file holds exactly the two good registrations" two_good_regs
if start_daemon "$PORT" -c "$CONF"; then
	run_test "restart: the state file restores" wait_log "restored 2 registrations"
	run_here "SIGTERM after the restart" stop_daemon
else
	TD_FAIL=$((TD_FAIL + 1))
	TD_FAILED_NAMES+=("restart with the state file")
fi

td_summary
