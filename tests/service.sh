#!/bin/bash
# Install and service:
#   - make install into a DESTDIR puts the daemon, targetctl, the man
#     pages, the example configuration and the systemd unit where
#     configure said, the unit naming those paths and hardened;
#   - the binaries' defaults follow configure's directories;
#   - systemd-analyze verify accepts the unit (skipped, saying why, where
#     systemd-analyze cannot run);
#   - --check-config warns about a portal that cannot be bound;
#   - discovery_chap: discovery sessions must authenticate, and a reload
#     turns it off.
set -u
. "$(dirname "$0")/lib.sh"
td_init service

: "${BUILDDIR:=$(cd "$(dirname "$TARGETD")/.." && pwd)}"
: "${TARGETCTL:=$BUILDDIR/tools/targetctl}"
td_need_cmd make iscsi-ls python3
T=$TD_TMP
ROOT=$T/root

# where make install puts things (make check exports them)
for v in sbindir sysconfdir localstatedir runstatedir mandir systemdsystemunitdir; do
	[ -n "${!v:-}" ] || { td_log "ERROR: \$$v is not set (run through make check)"; exit 99; }
done

case_install() {
	local f
	# a make of its own, not a part of make check's (whose jobs run the tests)
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$BUILDDIR" \
		install DESTDIR="$ROOT" >"$T/install.log" 2>&1 || { cat "$T/install.log"; return 1; }
	for f in "$sbindir/targetd" "$sbindir/targetctl"; do
		[ -x "$ROOT$f" ] || { echo "missing program $f"; return 1; }
	done
	for f in "$mandir/man8/targetd.8" "$mandir/man8/targetctl.8" "$mandir/man5/targetd.conf.5" \
		"$sysconfdir/targetd/targetd.conf.example" "$systemdsystemunitdir/targetd.service"; do
		[ -f "$ROOT$f" ] || { echo "missing $f"; return 1; }
	done
	find "$ROOT" -type f | sed "s|^$ROOT||" | sort
}
run_test "make install DESTDIR: programs, man pages, example configuration, systemd unit" case_install

UNIT=$ROOT$systemdsystemunitdir/targetd.service
case_unit() {
	local k
	grep -qx "ExecStart=$sbindir/targetd --foreground -c $sysconfdir/targetd/targetd.conf" "$UNIT" ||
		{ echo "ExecStart does not use the configured paths"; grep Exec "$UNIT"; return 1; }
	grep -q "^ReadWritePaths=.*$sysconfdir/targetd" "$UNIT" &&
		grep -q "^ReadWritePaths=.*$localstatedir/lib/targetd" "$UNIT" || { echo "ReadWritePaths"; return 1; }
	for k in "Type=notify" "ProtectSystem=strict" "PrivateTmp=yes" "NoNewPrivileges=yes" \
		"CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_DAC_OVERRIDE" "ProtectHome=yes" \
		"StateDirectory=targetd" "RuntimeDirectory=targetd"; do
		grep -qx "$k" "$UNIT" || { echo "the unit lacks $k"; return 1; }
	done
}
run_test "the unit names the configured paths and is hardened" case_unit

case_defaults() {
	"$ROOT$sbindir/targetd" --help | grep -q -- "$sysconfdir/targetd/targetd.conf" ||
		{ echo "targetd --help does not name $sysconfdir/targetd/targetd.conf"; return 1; }
	"$ROOT$sbindir/targetctl" --help | grep -q -- "$runstatedir/targetd/control.sock" ||
		{ echo "targetctl --help does not name $runstatedir/targetd/control.sock"; return 1; }
	"$ROOT$sbindir/targetd" -s "$T/emb" --check-config | grep -q "configuration is valid"
}
run_test "the installed programs' defaults follow sysconfdir and runstatedir" case_defaults

case_verify() {
	local copy=$T/verify/targetd.service
	command -v systemd-analyze >/dev/null 2>&1 ||
		{ echo "SKIP: systemd-analyze is not installed"; return 77; }
	mkdir -p "$T/verify" "$T/known"
	# can systemd-analyze verify anything here? (a known-good unit)
	printf '[Unit]\nDescription=known good\n[Service]\nExecStart=/bin/true\n' >"$T/known/known-good.service"
	if ! systemd-analyze verify --man=no "$T/known/known-good.service" >"$T/known.out" 2>&1; then
		echo "SKIP: systemd-analyze verify cannot run here: $(head -n 2 "$T/known.out" | tr '\n' ' ')"
		return 77
	fi
	# the installed unit, its programs taken from the DESTDIR tree
	sed "s|$sbindir/|$ROOT$sbindir/|g" "$UNIT" >"$copy"
	systemd-analyze verify --man=no "$copy"
}
verify_or_skip() {
	local rc
	td_timeout 120 case_verify >"$T/verify.out" 2>&1
	rc=$?
	if [ "$rc" = 77 ]; then
		skip_test "systemd-analyze verify of the installed unit" "$(grep SKIP "$T/verify.out" | sed 's/^SKIP: //')"
		return 0
	fi
	if [ "$rc" = 0 ]; then
		TD_PASS=$((TD_PASS + 1))
		echo "PASS: systemd-analyze verify of the installed unit"
	else
		TD_FAIL=$((TD_FAIL + 1))
		TD_FAILED_NAMES+=("systemd-analyze verify of the installed unit")
		echo "FAIL: systemd-analyze verify of the installed unit"
		sed 's/^/    | /' "$T/verify.out"
	fi
}
verify_or_skip

# --- --check-config and portals ----------------------------------------------------
PORT=$(free_port) || exit 99
SOCK=$T/ctl.sock
IQN=iqn.2026-11.org.targetd.test:service
CONF=$T/targetd.conf
conf() {
	write_conf "$CONF" <<EOF
listen = [ "127.0.0.1:$PORT" $2 ];
threads = 1;
state_dir = "$T";
control_socket = "$SOCK";
nop_interval = 0;
$1
targets = ( { iqn = "$IQN"; luns = ( { lun = 0; backstore = "memory"; size = "4M"; } ); } );
EOF
}

case_check_portals() {
	local out=$T/check.out busy
	busy=$(free_port)
	python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(20)' "$busy" &
	local holder=$!
	for i in $(seq 1 50); do port_open "$busy" && break; sleep 0.1; done
	conf "" ", \"192.0.2.1:3260\", \"127.0.0.1:$busy\""
	"$TARGETD" -c "$CONF" --check-config >"$out" 2>&1
	local rc=$?
	kill "$holder"
	wait "$holder" 2>/dev/null
	cat "$out"
	[ "$rc" = 0 ] || { echo "a warning made --check-config fail"; return 1; }
	grep -q "warning: listen 192.0.2.1:3260 cannot be bound now: .*no interface of this host has that address" "$out" &&
		grep -q "warning: listen 127.0.0.1:$busy cannot be bound now: .*another program listens" "$out" &&
		grep -q "configuration is valid (with warnings" "$out"
}
run_test "--check-config warns about portals that cannot be bound (status 0)" case_check_portals

# --- discovery_chap ----------------------------------------------------------------
case_discovery_chap() {
	conf 'discovery_chap = { user = "disco"; secret = "disco-secret-12"; };' ""
	start_daemon "$PORT" -c "$CONF" || return 1
	if iscsi-ls "iscsi://127.0.0.1:$PORT" >"$T/ls.out" 2>&1; then
		cat "$T/ls.out"; echo "a discovery session without CHAP was let in"; return 1
	fi
	wait_log "chap_failed" 10 || { echo "no chap_failed line"; return 1; }
	iscsi-ls "iscsi://disco%wrong-secret-123@127.0.0.1:$PORT" >/dev/null 2>&1 && { echo "a wrong secret was let in"; return 1; }
	iscsi-ls "iscsi://disco%disco-secret-12@127.0.0.1:$PORT" >"$T/ls.out" 2>&1 || { cat "$T/ls.out"; return 1; }
	grep -q "$IQN" "$T/ls.out" || return 1
	grep -q "login .*type=discovery .*auth=chap" "$TD_DAEMON_LOG" || { echo "no CHAP discovery login logged"; return 1; }
	# normal sessions are not concerned
	iscsi-ls -s "iscsi://disco%disco-secret-12@127.0.0.1:$PORT" >/dev/null || return 1
	# a reload turns it off
	conf "" ""
	"$TARGETCTL" -s "$SOCK" reload | grep -q "discovery CHAP turned off" || return 1
	iscsi-ls "iscsi://127.0.0.1:$PORT" | grep -q "$IQN"
}
run_here "discovery_chap: discovery sessions authenticate; a reload turns it off" case_discovery_chap
run_here "daemon stops" stop_daemon

td_summary
