#!/bin/bash
# Several connections per session (handed to the session's network thread
# at the end of login), connection logout, MaxConnections, and session
# reinstatement, driven by a raw-PDU client (tests/mcs.py).
set -u
. "$(dirname "$0")/lib.sh"

td_init mcs
td_need_cmd python3
PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
IQN=iqn.2026-11.org.targetd.test:mcs
td_write_conf "$TD_TMP/targetd.conf" -p "$PORT" <<CONF
targets = ( { iqn = "$IQN"; luns = ( { lun = 0; backstore = "memory"; size = "16M"; } ); } );
CONF
start_daemon "$PORT" -c "$TD_TMP/targetd.conf" || exit 1
run_test "multiple connections per session, reinstatement" \
	python3 "$SRCDIR/tests/mcs.py" 127.0.0.1 "$PORT" "$IQN"
run_here "SIGTERM: clean shutdown" stop_daemon TERM
td_summary
