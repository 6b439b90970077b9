#!/bin/bash
# Resource limits (targetd.conf(5), RESOURCE LIMITS): tests/pdufuzz's
# limit-* cases against a daemon configured with small limits (the LIM_*
# values of tests/pdufuzz.h), each driving one limit and checking the
# answer the initiator gets (TASK SET FULL, CHECK CONDITION 4B/06, login
# status 0x0302, Reject 0x0a, a clean close, backpressure) and that the
# daemon's resident memory stays bounded (/proc/PID/status). Then every
# limit's counter in `targetctl stats`, the rate limit of the log lines,
# and a second daemon at a low file descriptor limit (ulimit -n), which
# must refuse connections without spinning.
#
# Environment: PDUFUZZ (the client), TARGETCTL; TARGETD_VALGRIND=1 skips
# (memory and CPU figures mean nothing under valgrind).
set -u
. "$(dirname "$0")/lib.sh"

: "${PDUFUZZ:=$PWD/tests/pdufuzz}"
: "${TARGETCTL:=$PWD/tools/targetctl}"

td_init limits
td_need_cmd python3
[ "$TARGETD_VALGRIND" = 1 ] && td_skip_all "memory and CPU limits cannot be measured under valgrind"
for p in "$PDUFUZZ" "$TARGETCTL"; do
	[ -x "$p" ] || { td_log "ERROR: $p not built (make check builds it)"; exit 99; }
done
# AddressSanitizer's quarantine keeps freed memory: no RSS figures then
# (LeakSanitizer reports leaks at exit, checked below).
if grep -qa __asan_init "$TARGETD"; then
	export PF_RSS_CHECKS=0
	td_log "AddressSanitizer build: RSS checks off, leaks checked by LeakSanitizer"
fi

T=$TD_TMP
IQN=iqn.2026-11.org.targetd:default
IQN_B=iqn.2026-11.org.targetd.test:limits-b

# write_config FILE PORT EXTRA: the limits of tests/pdufuzz.h (LIM_*),
# target A (the default name), target B and 140 small targets (so that
# SendTargets=All answers about 12 KiB).
write_config() {
	{
		td_conf_prologue -p "$2" -S "$T/control-$2.sock"
		cat <<EOC
login_timeout = 2;
queue_depth = 4;
max_connections = 8;
max_connections_per_target = 4;
max_sessions_per_initiator = 2;
max_buffer_per_connection = "16M";
max_buffer_total = "32M";
max_pending_tx_per_connection = "1M";
max_text_response = 16384;
data_out_timeout = 3;
$3
targets = (
  { iqn = "$IQN"; luns = ( { lun = 0; backstore = "memory"; size = "256M"; } ); },
  { iqn = "$IQN_B"; luns = ( { lun = 0; backstore = "memory"; size = "1M"; } ); }
EOC
		for i in $(seq 100 239); do
			printf '  , { iqn = "iqn.2026-11.org.targetd.test:limits-f%s"; luns = ( { lun = 0; backstore = "memory"; size = "1M"; } ); }\n' "$i"
		done
		echo ");"
	} >"$1"
}

sanitizer_clean() {
	if grep -n -E 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|BUG:' "$TD_DAEMON_LOG"; then
		sed 's/^/    | /' "$TD_DAEMON_LOG" | head -200
		return 1
	fi
}

pdufuzz() {
	TARGETD_PID=$TD_DAEMON_PID "$PDUFUZZ" -a "127.0.0.1:$1" -t "$IQN" -T 2 "$2"
}

# every limit counted in the stats JSON; no data buffer left
counters_ok() {
	"$TARGETCTL" -s "$T/control-$1.sock" -j stats >"$T/stats.json" || return 1
	python3 - "$T/stats.json" <<'EOP'
import json, sys
g = json.load(open(sys.argv[1]))
g = g.get("result", g)["global"]
hit = g["limits_reached"]
want = ["max_connections", "max_connections_per_target", "max_sessions_per_initiator",
        "queue_depth", "max_buffer_per_connection", "max_buffer_total",
        "max_pending_tx_per_connection", "max_text_response", "data_out_timeout", "login_timeout"]
bad = [k for k in want if not hit.get(k)]
print("limits_reached:", json.dumps(hit, sort_keys=True))
if bad:
    sys.exit("not counted: " + ", ".join(bad))
if g["data_buffer_bytes"] != 0:
    sys.exit("data_buffer_bytes %d with no command running" % g["data_buffer_bytes"])
EOP
}

# login_timeout: a connection that says nothing is closed (and counted)
idle_closed() {
	python3 - "$1" <<'EOP'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
t = time.time()
if s.recv(1) != b"":
    sys.exit("the daemon sent data to a silent connection")
print("closed after %.1f s" % (time.time() - t))
EOP
}

# the log says each limit at most once per 10 s (plus one)
log_rate_limited() {
	local k n
	grep 'limit .* reached' "$TD_DAEMON_LOG" | sed 's/^/    | /' | head -40
	for k in max_pending_tx_per_connection max_buffer_per_connection queue_depth max_connections; do
		n=$(grep -c "limit $k reached" "$TD_DAEMON_LOG")
		if [ "$n" -gt 4 ]; then
			echo "limit $k logged $n times"
			return 1
		fi
	done
}

PORT=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
write_config "$T/limits.conf" "$PORT" ""
td_log "port $PORT, temp dir $T"
if start_daemon "$PORT" -c "$T/limits.conf"; then
	for c in limit-pending-tx limit-buffers limit-queue-depth limit-connections limit-sessions \
		limit-text limit-text-leak; do
		run_test "pdufuzz $c" pdufuzz "$PORT" "$c"
		daemon_alive || break
	done
	run_test "login_timeout closes a silent connection" idle_closed "$PORT"
	run_here "every limit counted in targetctl stats, no buffer left" counters_ok "$PORT"
	run_here "limit log lines rate-limited" log_rate_limited
	run_here "SIGTERM: clean shutdown, exit 0" stop_daemon TERM
	run_here "no sanitizer report or BUG line in the daemon log" sanitizer_clean
else
	TD_FAIL=$((TD_FAIL + 1))
	TD_FAILED_NAMES+=("daemon start")
fi

# At the file descriptor limit: a wrapper lowers it, then execs the daemon.
PORT2=$(free_port) || { td_log "ERROR: no free port"; exit 99; }
write_config "$T/fd.conf" "$PORT2" ""
sed -i -e 's/^login_timeout = 2;/login_timeout = 10;/' -e 's/^max_connections = 8;/max_connections = 1000;/' \
	-e 's/^max_connections_per_target = 4;/max_connections_per_target = 1000;/' "$T/fd.conf"
cat >"$T/lowfd" <<EOW
#!/bin/bash
ulimit -n 64 || exit 1
exec "$TARGETD" "\$@"
EOW
chmod +x "$T/lowfd"
fd_log_quiet() {
	local n
	n=$(grep -c 'limit file_descriptors reached' "$TD_DAEMON_LOG")
	echo "$n 'file_descriptors' lines"
	[ "$n" -ge 1 ] && [ "$n" -le 4 ]
}
if TARGETD=$T/lowfd start_daemon "$PORT2" -c "$T/fd.conf"; then
	run_test "pdufuzz limit-fd (ulimit -n 64)" pdufuzz "$PORT2" limit-fd
	run_here "descriptor limit: logged, at most once per 10 s" fd_log_quiet
	run_here "SIGTERM at the descriptor limit: clean shutdown, exit 0" stop_daemon TERM
else
	TD_FAIL=$((TD_FAIL + 1))
	TD_FAILED_NAMES+=("daemon start (low descriptor limit)")
fi

td_summary
