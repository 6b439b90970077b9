#!/bin/bash
# CmdSN order across the connections of a session (RFC 7143 4.2.2.1) and
# SAM task attributes (ORDERED, HEAD OF QUEUE, ACA), driven by a raw-PDU
# client (tests/ordering.py).
set -u
. "$(dirname "$0")/lib.sh"

td_init ordering
td_need_cmd python3
PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
IQN=iqn.2026-11.org.targetd.test:ordering
td_write_conf "$TD_TMP/targetd.conf" -p "$PORT" <<CONF
targets = ( { iqn = "$IQN"; luns = ( { lun = 0; backstore = "memory"; size = "16M"; } ); } );
CONF
start_daemon "$PORT" -c "$TD_TMP/targetd.conf" || exit 1
run_test "CmdSN order and task attributes" \
	python3 "$SRCDIR/tests/ordering.py" 127.0.0.1 "$PORT" "$IQN"
run_here "SIGTERM: clean shutdown" stop_daemon TERM
td_summary
