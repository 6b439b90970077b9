#!/bin/bash
# Integration tests of the admin interface: per-LUN counters after a known
# mix of commands (targetctl stats --json and /metrics must match exactly),
# promtool's check of the exposition, targetctl's other commands, `top`
# under tmux, and a configuration reload (add, resize, remove LUNs) while a
# session does I/O on another LUN that must never fail. The clients doing
# I/O beside a step (statmix io URL @STOPFILE) run until the step is over:
# every wait is a poll for what the step needs (the session logged in,
# top showing a rate), never a sleep.
. "$(dirname "$0")/lib.sh"
td_init admin

: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"
: "${STATMIX:=$(dirname "$ITEST")/statmix}"
td_need_cmd python3 promtool tmux
for b in "$TARGETCTL" "$STATMIX"; do
	[ -x "$b" ] || { td_log "ERROR: $b not built"; exit 99; }
done

PORT=$(free_port)
MPORT=$(free_port)
SOCK=$TD_TMP/run/ctl.sock
IQN=iqn.2026-11.org.targetd:admin
CONF=$TD_TMP/targetd.conf
CTL() { "$TARGETCTL" -s "$SOCK" "$@"; }

# write_admin_conf EXTRA_LUNS: LUNs 0 and 4 always; the rest as given.
write_admin_conf() {
	td_write_conf "$CONF" -L "( \"127.0.0.1:$PORT\" )" -s "$TD_TMP" -S "$SOCK" <<EOF
metrics_listen = "127.0.0.1:$MPORT";
nop_interval = 0;
targets = (
  { iqn = "$IQN";
    $2
    luns = (
      { lun = 0; backstore = "file"; path = "$TD_TMP/lun0.img"; size = "64M"; },
      { lun = 4; backstore = "file"; path = "$TD_TMP/lun4.img"; size = "16M"; }
      $1
    ); }
);
EOF
}

write_admin_conf ', { lun = 2; backstore = "file"; path = "'"$TD_TMP"'/lun2.img"; size = "32M"; },
      { lun = 3; backstore = "memory"; size = "8M"; }'
start_daemon "$PORT" -c "$CONF" || exit 1
if ! td_poll 30 test -S "$SOCK"; then
	td_log "FAIL: the daemon made no control socket $SOCK; its log:"
	sed 's/^/    | /' "$TD_DAEMON_LOG"
	exit 1
fi

# io_start NAME LUN [INITIATOR]: statmix io on LUN in the background until
# io_stop NAME; its pid in IO_PID, its output in $TD_TMP/io-NAME.log. Waits
# until the session has logged in and done its first write and read (fails
# if it does not).
io_start() {
	local name=$1 log=$TD_TMP/io-$1.log
	rm -f "$TD_TMP/io-$name.stop"
	"$STATMIX" io "iscsi://127.0.0.1:$PORT/$IQN/$2" "@$TD_TMP/io-$name.stop" ${3:+"$3"} >"$log" 2>&1 &
	IO_PID=$!
	if ! td_poll 60 io_started "$log" "$IO_PID"; then
		echo "statmix io ($name) did not start its I/O:"
		cat "$log"
		return 1
	fi
	grep -q "^io started" "$log" || { echo "statmix io ($name) ended before its I/O:"; cat "$log"; return 1; }
}

# io_started LOG PID: the client said it started, or it is gone.
io_started() {
	grep -q "^io started" "$1" || td_gone "$2"
}

# io_stop NAME PID: tell the client to stop (it sends one more write and
# read after that) and wait for it; its exit status.
io_stop() {
	: >"$TD_TMP/io-$1.stop"
	wait "$2"
}

metrics() {
	python3 - "$MPORT" <<'EOF'
import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode(), end="")
EOF
}

# --- the mix --------------------------------------------------------------
case_mix() {
	local mix=$TD_TMP/mix.json stats=$TD_TMP/stats.json prom=$TD_TMP/metrics.txt
	"$STATMIX" mix "iscsi://127.0.0.1:$PORT/$IQN/0" \
		--reset-cmd "$TARGETCTL -s $SOCK stats --reset >/dev/null" >"$mix" || return 1
	CTL stats "$IQN" 0 --json >"$stats" || return 1
	metrics >"$prom" || return 1
	python3 - "$mix" "$stats" "$prom" "$IQN" <<'EOF'
import json, re, sys
mix = json.load(open(sys.argv[1]))
st = json.load(open(sys.argv[2]))["luns"][0]
prom = open(sys.argv[3]).read()
iqn = sys.argv[4]
bad = []
def check(what, got, want):
    if got != want:
        bad.append("%s: daemon says %s, the client counted %s" % (what, got, want))
def path(o, p):
    for k in p.split("."):
        o = o[k]
    return o
def metric(name, **labels):
    lab = dict(target=iqn, lun="0", **labels)
    total = None
    for line in prom.splitlines():
        m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        if all(got.get(k) == v for k, v in lab.items()):
            total = (total or 0) + float(m.group(3))
    return None if total is None else int(total)

def snake(n):
    return re.sub(r'[^a-z0-9]+', '_', n.lower()).strip('_')
byop = {o["opcode"]: o for o in st["commands"]["by_opcode"]}
good = cc = conflict = 0
for op, s in mix["sent"].items():
    op = int(op)
    check("commands with opcode 0x%02x" % op, byop.get(op, {}).get("count", 0), s["count"])
    name = snake(byop.get(op, {}).get("name", "0x%02x" % op))
    check("/metrics targetd_commands_total{op=%r}" % name, metric("targetd_commands_total", op=name), s["count"])
    good += s["good"]; cc += s["check_condition"]; conflict += s["reservation_conflict"]
# nothing but the mix reached the LUN after the reset
check("commands in all", st["commands"]["total"], sum(s["count"] for s in mix["sent"].values()))
check("GOOD", st["status"]["good"], good)
check("CHECK CONDITION", st["status"]["check_condition"], cc)
check("RESERVATION CONFLICT", st["status"]["reservation_conflict"], conflict)
check("/metrics good", metric("targetd_command_status_total", status="good") or 0, good)
check("/metrics reservation_conflict", metric("targetd_command_status_total", status="reservation_conflict") or 0, conflict)
names = ["NO SENSE", "RECOVERED ERROR", "NOT READY", "MEDIUM ERROR", "HARDWARE ERROR",
         "ILLEGAL REQUEST", "UNIT ATTENTION", "DATA PROTECT", "BLANK CHECK", "VENDOR SPECIFIC",
         "COPY ABORTED", "ABORTED COMMAND", "RESERVED 0xC", "VOLUME OVERFLOW", "MISCOMPARE"]
for k, n in mix["sense_keys"].items():
    check("sense key %s" % names[int(k)], st["sense_keys"].get(names[int(k)], 0), n)
    check("/metrics sense key %s" % names[int(k)], metric("targetd_sense_key_total", sense_key=snake(names[int(k)])) or 0, n)
prom_of = {
    "read.commands": ("targetd_read_commands_total", {}),
    "read.bytes": ("targetd_read_bytes_total", {}),
    "write.commands": ("targetd_write_commands_total", {}),
    "write.bytes": ("targetd_written_bytes_total", {}),
    "vaai.compare_and_write.success": ("targetd_compare_and_write_total", {"result": "success"}),
    "vaai.compare_and_write.miscompare": ("targetd_compare_and_write_total", {"result": "miscompare"}),
    "vaai.extended_copy.commands": ("targetd_xcopy_commands_total", {}),
    "vaai.extended_copy.segments": ("targetd_xcopy_segments_total", {}),
    "vaai.extended_copy.bytes": ("targetd_xcopy_bytes_total", {}),
    "vaai.write_same.commands": ("targetd_write_same_commands_total", {}),
    "vaai.write_same.blocks": ("targetd_write_same_blocks_total", {}),
    "vaai.unmap.commands": ("targetd_unmap_commands_total", {}),
    "vaai.unmap.blocks": ("targetd_unmap_blocks_total", {}),
    "reservations.reserve": ("targetd_reserve_total", {}),
    "reservations.release": ("targetd_release_total", {}),
    "reservations.conflicts.total": ("targetd_reservation_conflicts_total", {}),
}
for k, want in mix["expect"].items():
    check(k, path(st, k), want)
    name, lab = prom_of[k]
    check("/metrics " + name + (str(lab) if lab else ""), metric(name, **lab) or 0, want)
# latency histograms: one sample per read, write and VAAI command
lat = {"read": (0x88,), "write": (0x8a,), "vaai": (0x89, 0x83, 0x93, 0x42)}
for cls, ops in lat.items():
    n = sum(mix["sent"].get(str(o), {}).get("count", 0) for o in ops)
    check("latency samples (%s)" % cls, st["latency"][cls]["count"], n)
    check("/metrics latency _count (%s)" % cls, metric("targetd_command_latency_seconds_count", op=cls), n)
    check("/metrics latency +Inf bucket (%s)" % cls,
          metric("targetd_command_latency_seconds_bucket", op=cls, le="+Inf"), n)
for part in mix["unavailable"]:
    print("NOT YET AVAILABLE: %s (INVALID COMMAND OPERATION CODE): its counters were not checked" % part)
for b in bad:
    print("MISMATCH:", b)
print("checked %d opcodes, %d derived counters" % (len(mix["sent"]), len(mix["expect"])))
sys.exit(1 if bad else 0)
EOF
}
run_test "counters match a known mix exactly (targetctl stats --json and /metrics)" case_mix
if [ -s "$TD_TMP/mix.json" ]; then
	for part in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["unavailable"]))' "$TD_TMP/mix.json"); do
		skip_test "counters of $part" "not yet available in the target"
	done
fi

case_promtool() {
	metrics >"$TD_TMP/m.txt" && promtool check metrics <"$TD_TMP/m.txt"
}
run_test "promtool check metrics accepts /metrics" case_promtool

# the shape of /metrics: snake_case label values, no series for statuses
# that never happened, build and process metrics, login counters, per
# session and per initiator series, and latencies that are the truth
# (a command's time contains its backstore request's)
case_metrics_shape() {
	"$STATMIX" io "iscsi://127.0.0.1:$PORT/$IQN/0" 3 iqn.2026-11.org.targetd:shape >/dev/null 2>&1 &
	local io=$! i
	for i in $(seq 1 50); do
		metrics >"$TD_TMP/shape.txt" || return 1
		grep -q 'initiator="iqn.2026-11.org.targetd:shape"' "$TD_TMP/shape.txt" && break
		sleep 0.1
	done
	wait "$io" || return 1
	python3 - "$TD_TMP/shape.txt" "$IQN" <<'EOF'
import re, sys
prom, iqn = open(sys.argv[1]).read(), sys.argv[2]
series = []
for line in prom.splitlines():
    if line.startswith("#") or not line:
        continue
    m = re.match(r'^(\w+)(?:\{(.*)\})? (\S+)$', line)
    assert m, line
    series.append((m.group(1), dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")), float(m.group(3))))
def find(name, **lab):
    return [v for n, l, v in series if n == name and all(l.get(k) == x for k, x in lab.items())]
bad = []
for n, l, v in series:
    for k in ("op", "status", "sense_key", "function", "result", "reason", "limit"):
        if k in l and not re.match(r'^[a-z0-9_]+$', l[k]) and not re.match(r'^0x[0-9a-f]{2}$', l[k]):
            bad.append("%s{%s=%r} is not snake_case" % (n, k, l[k]))
    if n in ("targetd_command_status_total", "targetd_sense_key_total", "targetd_task_management_total",
             "targetd_lun_task_management_total", "targetd_compare_and_write_total") and v == 0:
        bad.append("%s %s: a series for something that never happened" % (n, l))
assert find("targetd_build_info") == [1.0], "no targetd_build_info"
for p in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds",
          "process_start_time_seconds", "process_virtual_memory_bytes"):
    assert find(p) and find(p)[0] > 0, "no %s" % p
assert find("targetd_logins_total", target=iqn)[0] > 0, "no logins counted"
assert len(find("targetd_login_failures_total")) == 3
assert find("targetd_session_commands_total", target=iqn, initiator="iqn.2026-11.org.targetd:shape"), "no session series"
assert find("targetd_initiator_sessions", target=iqn, initiator="iqn.2026-11.org.targetd:shape") == [1.0]
for cls in ("read", "write"):
    cmd = find("targetd_command_latency_seconds_sum", target=iqn, lun="0", op=cls)[0]
    bs = find("targetd_backstore_latency_seconds_sum", target=iqn, lun="0", op=cls)[0]
    n = find("targetd_command_latency_seconds_count", target=iqn, lun="0", op=cls)[0]
    nbs = find("targetd_backstore_latency_seconds_count", target=iqn, lun="0", op=cls)[0]
    # reads of pages already in the cache are sent from the mapping,
    # without a backstore request; a command refused before execution
    # (a unit attention, a conflict) makes none
    print("%s: %d commands, %.1f us each; %d backstore requests, %.1f us each" %
          (cls, n, 1e6 * cmd / n, nbs, 1e6 * bs / nbs if nbs else 0))
    if not (bs <= cmd and nbs <= n) or (cls == "write" and not (bs > 0 and nbs > 0.9 * n)):
        bad.append("%s: backstore latency %g s (%d) does not fit the command latency %g s (%d)" % (cls, bs, nbs, cmd, n))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF
}
run_test "/metrics: snake_case labels, only statuses that happened, build/process/login/session series, latency truth" case_metrics_shape

case_http_errors() {
	python3 - "$MPORT" <<'EOF'
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen("http://127.0.0.1:%s/nothing" % sys.argv[1], timeout=5)
    sys.exit("a path other than /metrics was served")
except urllib.error.HTTPError as e:
    sys.exit(0 if e.code == 404 else "status %d" % e.code)
EOF
}
run_test "/metrics only: other paths are 404" case_http_errors

case_reset() {
	CTL stats --reset >/dev/null || return 1
	CTL stats "$IQN" 0 --json | python3 -c '
import json, sys
l = json.load(sys.stdin)["luns"][0]
sys.exit(0 if l["commands"]["total"] == 0 and l["read"]["bytes"] == 0 else "not reset: %s" % l["commands"])' || return 1
	# the text view says there is nothing yet instead of two empty headings
	CTL stats "$IQN" 0 >"$TD_TMP/reset.txt" || return 1
	[ "$(grep -c 'latency: .*: no samples yet' "$TD_TMP/reset.txt")" = 2 ] ||
		{ echo "targetctl stats after --reset:"; cat "$TD_TMP/reset.txt"; return 1; }
}
run_test "stats --reset zeroes the counters" case_reset

case_info() {
	CTL status | grep -q "targets   1" || return 1
	CTL status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["luns"] == 4 else d)' || return 1
	CTL targets --json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d[0]["luns"] == [0,2,3,4] else d)' || return 1
	CTL luns | grep -q "lun2.img" || return 1
	CTL stats "$IQN" 9 --json 2>&1 | grep -q "no such target or LUN" || return 1
	CTL stats no.such.target 2>&1 | grep -q "no such target" || return 1
	[ "$(stat -c %a "$SOCK")" = 600 ] || { echo "socket mode $(stat -c %a "$SOCK")"; return 1; }
	# the protocol is JSON-RPC 2.0, versioned; the old envelope is told so
	python3 - "$SOCK" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
f = s.makefile("rw")
def call(line):
    f.write(line + "\n"); f.flush()
    return json.loads(f.readline())
r = call('{"version":1,"command":"status"}')
assert r["jsonrpc"] == "2.0" and r["error"]["code"] == -32600 and "JSON-RPC 2.0" in r["error"]["message"], r
r = call('{"jsonrpc":"2.0","method":"status","id":"x1"}')
assert r["id"] == "x1" and r["result"]["protocol_version"] == 2, r
r = call('{"jsonrpc":"2.0","method":"stats","params":{"target":"no.such"},"id":2}')
assert r["id"] == 2 and r["error"]["code"] == 1 and "no such target" in r["error"]["message"], r
r = call('[{"jsonrpc":"2.0","method":"luns","id":1},{"jsonrpc":"2.0","method":"nope","id":2}]')
assert [x["id"] for x in r] == [1, 2] and "result" in r[0] and r[1]["error"]["code"] == -32601, r
EOF
}
run_test "targetctl status, targets, luns; unknown LUN; socket mode 0600; protocol version" case_info

case_tmf() {
	CTL stats --reset >/dev/null || return 1
	"$ITEST" tmf "iscsi://127.0.0.1:$PORT/$IQN/0" || return 1
	CTL stats "$IQN" 0 --json >"$TD_TMP/tmf.json" || return 1
	metrics >"$TD_TMP/tmf.txt" || return 1
	python3 - "$TD_TMP/tmf.json" "$TD_TMP/tmf.txt" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
l, g = d["luns"][0], d["global"]["task_management"]
f = l["task_management"]["by_function"]
prom = open(sys.argv[2]).read()
def m(fn):
    x = re.search(r'^targetd_task_management_total\{function="%s"\} (\d+)$' % fn.lower().replace(" ", "_"), prom, re.M)
    return int(x.group(1)) if x else None
print(f, g, l["task_management"]["aborts"], l["unit_attentions"])
assert f.get("ABORT TASK", 0) >= 2 and f.get("ABORT TASK SET", 0) >= 1, f
assert f.get("LOGICAL UNIT RESET") == 1, f
assert l["task_management"]["aborts"] >= 1, l["task_management"]
# process-wide counts include functions addressed to no LUN
for fn in ("ABORT TASK", "ABORT TASK SET", "LOGICAL UNIT RESET"):
    assert g.get(fn, 0) >= f.get(fn, 0) and m(fn) == g.get(fn, 0), (fn, f, g)
assert l["unit_attentions"] >= 1, l["unit_attentions"]   # the reset's 29/03
EOF
}
run_test "task management functions, aborts and unit attentions are counted" case_tmf

# --- top under tmux, with I/O running ---------------------------------------
case_top() {
	local sess=targetd-admin-$$ out=$TD_TMP/top.txt rc=0
	io_start top 0 || { io_stop top "$IO_PID"; return 1; }
	local io=$IO_PID
	tmux -L "$sess" new-session -d -s top -x 150 -y 20 "$TARGETCTL -s $SOCK top" || { io_stop top "$io"; return 1; }
	# top samples the counters once a second: wait for a sample that
	# shows the columns and a live, non-zero rate on LUN 0
	if ! td_poll 60 top_shows_rate "$sess" "$out"; then
		echo "top never showed its columns and a non-zero rate for $IQN/0:"
		rc=1
	fi
	cat "$out"
	tmux -L "$sess" send-keys -t top q
	if ! td_poll 30 top_gone "$sess"; then
		echo "top did not quit on q"
		tmux -L "$sess" kill-server
		rc=1
	fi
	io_stop top "$io" || rc=1
	return $rc
}

# top_shows_rate SESSION OUT: the tmux pane, captured into OUT, shows top's
# columns and a non-zero rate for LUN 0.
top_shows_rate() {
	tmux -L "$1" capture-pane -p -t top >"$2" 2>/dev/null || return 1
	grep -q "IOPS" "$2" && grep -q "ATS/s" "$2" && grep -q "CONFL/s" "$2" &&
		awk -v k="$IQN/0" '$1 == k && $2 + 0 > 0 { found = 1 } END { exit !found }' "$2"
}

top_gone() {
	! tmux -L "$1" has-session -t top 2>/dev/null
}
run_test "targetctl top shows live per-LUN rates in a terminal and quits on q" case_top

# not on a terminal: one plain screen with rates, then exit (no escapes);
# on one, -n COUNT screens
case_top_plain() {
	local out=$TD_TMP/top-plain.txt
	"$STATMIX" io "iscsi://127.0.0.1:$PORT/$IQN/0" 3 >/dev/null 2>&1 &
	local io=$!
	sleep 0.5
	timeout 20 "$TARGETCTL" -s "$SOCK" top -d 0.5 >"$out" || { wait "$io"; return 1; }
	wait "$io" || return 1
	cat "$out"
	if grep -q $'\033' "$out"; then echo "escape sequences off a terminal"; return 1; fi
	awk -v k="$IQN/0" '$1 == k && $2 + 0 > 0 { found = 1 } END { exit !found }' "$out" || return 1
	[ "$(grep -c "^$IQN/" "$out")" = 4 ] || { echo "not one screen of 4 LUNs"; return 1; }
	# in a terminal, -n 3: three screens and the shell gets control back
	local sess=targetd-admin-n-$$ done=0
	tmux -L "$sess" new-session -d -s top -x 150 -y 20 \
		"$TARGETCTL -s $SOCK top -d 0.2 -n 3; echo top-ended-\$?; sleep 30" || return 1
	for i in $(seq 1 100); do
		if tmux -L "$sess" capture-pane -p -t top | grep -q "top-ended-0"; then done=1; break; fi
		sleep 0.1
	done
	tmux -L "$sess" kill-server
	[ "$done" = 1 ] || { echo "top -n 3 did not end in a terminal"; return 1; }
}
run_test "targetctl top: one plain screen off a terminal, -n COUNT screens in one" case_top_plain

# --- sessions ------------------------------------------------------------------
case_sessions() {
	local io rc=0
	io_start sessions 4 || { io_stop sessions "$IO_PID"; return 1; }
	io=$IO_PID
	CTL sessions --json | python3 -c '
import json, sys
ss = [s for s in json.load(sys.stdin) if s["initiator"].endswith("statmix-io")]
s = ss[0]
assert s["target"] == sys.argv[1] and s["tsih"] > 0 and s["isid"].startswith("0x"), s
assert s["connections"][0]["portal"] == "127.0.0.1", s
assert s["parameters"]["MaxBurstLength"] > 0, s
st = s["statistics"]
assert st["commands"] > 0 and st["data_in_bytes"] > 0 and st["data_out_bytes"] > 0, st' "$IQN" || rc=1
	CTL sessions | grep -q "statmix-io" || rc=1
	io_stop sessions "$io" || rc=1
	return $rc
}
run_test "targetctl sessions: initiator, ISID, TSIH, portal, negotiated parameters" case_sessions

# --- reload ----------------------------------------------------------------------
case_reload() {
	local rc=0 io out=$TD_TMP/reload.out
	io_start reload 4 || { io_stop reload "$IO_PID"; return 1; }
	io=$IO_PID
	# add LUN 5, resize LUN 2 (32M -> 48M), remove LUN 3
	write_admin_conf ', { lun = 2; backstore = "file"; path = "'"$TD_TMP"'/lun2.img"; size = "48M"; },
      { lun = 5; backstore = "memory"; size = "4M"; }'
	CTL reload >"$out" || { cat "$out"; rc=1; }
	cat "$out"
	grep -q "LUN 5 added" "$out" && grep -q "LUN 3 removed" "$out" &&
		grep -q "LUN 2 resized to 98304 blocks" "$out" || rc=1
	CTL luns --json | python3 -c '
import json, sys
l = {x["lun"]: x for x in json.load(sys.stdin)}
assert sorted(l) == [0, 2, 4, 5], sorted(l)
assert l[2]["size_bytes"] == 48 << 20 and l[5]["size_bytes"] == 4 << 20, l' || rc=1
	[ "$(stat -c %s "$TD_TMP/lun2.img")" = $((48 << 20)) ] || { echo "lun2.img not grown"; rc=1; }
	# LUN 5 answers, LUN 3 is gone
	iscsi-inq "iscsi://127.0.0.1:$PORT/$IQN/5" >/dev/null || { echo "LUN 5 does not answer"; rc=1; }
	if iscsi-inq "iscsi://127.0.0.1:$PORT/$IQN/3" >/dev/null 2>&1; then
		echo "LUN 3 still answers"; rc=1
	fi
	# its last commands go out after the reload
	io_stop reload "$io" || { echo "the session doing I/O on LUN 4 saw an error:"; rc=1; }
	cat "$TD_TMP/io-reload.log"
	# it was told that the LUN inventory changed (REPORTED LUNS
	# DATA HAS CHANGED), which an initiator answers by retrying
	grep -Eq "io ok: [0-9]+ commands, [1-9][0-9]* unit attentions" "$TD_TMP/io-reload.log" || rc=1
	return $rc
}
run_test "reload adds, resizes and removes LUNs while I/O on another LUN never fails" case_reload

# luns_config: targetctl luns --json without the live space figures (what
# the LUNs hold and their pools have left change on their own).
luns_config() {
	CTL luns --json | python3 -c '
import json, sys
live = ("allocated_bytes", "pool_size_bytes", "pool_free_bytes", "shared_bytes",
        "saved_bytes", "saved_percent", "shared_partial", "soft_threshold_reached")
print(json.dumps([{k: v for k, v in l.items() if k not in live} for l in json.load(sys.stdin)]))'
}

case_reload_invalid() {
	local before after
	before=$(luns_config)
	cp "$CONF" "$CONF.good"
	# valid syntax, two semantic errors (a LUN number out of range, a
	# backstore type that does not exist)
	write_admin_conf ', { lun = 999; backstore = "memory"; size = "4M"; },
      { lun = 7; backstore = "tape"; size = "4M"; }'
	if CTL reload >"$TD_TMP/bad.out" 2>&1; then
		echo "an invalid configuration was accepted"; cp "$CONF.good" "$CONF"; return 1
	fi
	cat "$TD_TMP/bad.out"
	grep -q "refused" "$TD_TMP/bad.out" || return 1
	[ "$(grep -c "targetd.conf:[0-9]*:" "$TD_TMP/bad.out")" -ge 2 ] || { echo "not every error reported"; return 1; }
	after=$(luns_config)
	cp "$CONF.good" "$CONF"
	[ "$before" = "$after" ] || { echo "the running configuration changed"; return 1; }
}
run_test "an invalid configuration is refused with its errors; the running one is kept" case_reload_invalid

# lun6_listed: the running configuration has LUN 6.
lun6_listed() {
	CTL targets --json | python3 -c 'import json,sys; sys.exit(0 if 6 in json.load(sys.stdin)[0]["luns"] else 1)'
}

case_sighup() {
	write_admin_conf ', { lun = 2; backstore = "file"; path = "'"$TD_TMP"'/lun2.img"; size = "48M"; },
      { lun = 5; backstore = "memory"; size = "4M"; }, { lun = 6; backstore = "memory"; size = "4M"; }'
	kill -HUP "$TD_DAEMON_PID"
	td_poll 30 lun6_listed && return 0
	echo "LUN 6 did not appear after SIGHUP"
	return 1
}
run_test "SIGHUP reloads the configuration" case_sighup

KEEP_LUNS=', { lun = 2; backstore = "file"; path = "'"$TD_TMP"'/lun2.img"; size = "48M"; },
      { lun = 5; backstore = "memory"; size = "4M"; }, { lun = 6; backstore = "memory"; size = "4M"; }'
case_acl() {
	local rc=0 keep drop out=$TD_TMP/acl.out
	io_start keep 4 iqn.2026-11.org.targetd:keep || rc=1
	keep=$IO_PID
	io_start drop 0 iqn.2026-11.org.targetd:drop || rc=1
	drop=$IO_PID
	if [ "$rc" != 0 ]; then
		io_stop keep "$keep"
		io_stop drop "$drop"
		return 1
	fi
	write_admin_conf "$KEEP_LUNS" 'initiators = [ "iqn.2026-11.org.targetd:keep" ];'
	CTL reload >"$out" || rc=1
	cat "$out"
	grep -q "initiator ACL changed" "$out" && grep -q "1 sessions of initiators no longer allowed closed" "$out" || rc=1
	io_stop keep "$keep" || { echo "the allowed session was disturbed:"; cat "$TD_TMP/io-keep.log"; rc=1; }
	# told to stop after the reload, it sends one more command: on a
	# connection the reload closed, that fails
	if io_stop drop "$drop"; then
		echo "the session of the initiator no longer allowed kept running:"
		cat "$TD_TMP/io-drop.log"
		rc=1
	fi
	CTL targets --json | python3 -c 'import json,sys; t=json.load(sys.stdin)[0]; sys.exit(0 if t["initiators"] == ["iqn.2026-11.org.targetd:keep"] else t)' || rc=1
	if "$STATMIX" io "iscsi://127.0.0.1:$PORT/$IQN/0" 0.1 iqn.2026-11.org.targetd:drop >/dev/null 2>&1; then
		echo "a login of an initiator not allowed succeeded"; rc=1
	fi
	return $rc
}
run_test "reload of an initiator ACL closes only the sessions no longer allowed" case_acl

run_here "daemon stops cleanly" stop_daemon

# A detached daemon (no -f): its threads (HTTP included) are started after
# the fork, and SIGTERM still stops it.
case_detached() {
	local p2 m2 s2=$TD_TMP/run2/ctl.sock conf2=$TD_TMP/detached.conf pid
	p2=$(free_port)
	m2=$(free_port)
	td_write_conf "$conf2" -L "( \"127.0.0.1:$p2\" )" -t 1 -s "$TD_TMP" -S "$s2" <<EOF
metrics_listen = "127.0.0.1:$m2";
targets = ( { iqn = "$IQN-detached"; luns = ( { lun = 0; backstore = "memory"; size = "4M"; } ); } );
EOF
	"$TARGETD" -c "$conf2" || return 1
	td_poll 30 test -S "$s2" || { echo "no control socket $s2 from the detached daemon"; return 1; }
	pid=$("$TARGETCTL" -s "$s2" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])') || return 1
	MPORT=$m2 metrics | grep -q '^targetd_lun_capacity_bytes{target="'"$IQN"'-detached",lun="0"} 4194304$' ||
		{ echo "no /metrics from the detached daemon"; kill -KILL "$pid"; return 1; }
	kill -TERM "$pid"
	if ! td_poll 60 td_gone "$pid"; then
		echo "the detached daemon did not stop on SIGTERM"; kill -KILL "$pid"; return 1
	fi
	[ ! -e "$s2" ] || { echo "control socket left behind"; return 1; }
}
run_test "detached daemon: control socket and /metrics answer, SIGTERM stops it" case_detached

# readies N LOG: LOG has at least N READY=1 notifications.
readies() {
	[ "$(grep -c "READY=1" "$2" 2>/dev/null)" -ge "$1" ]
}

# systemd's notification protocol, with a stand-in for systemd: READY at
# start, RELOADING then READY around a SIGHUP reload, STOPPING at the end.
case_notify() {
	local p3 nsock=$TD_TMP/notify.sock nlog=$TD_TMP/notify.log conf3=$TD_TMP/notify.conf lst
	p3=$(free_port)
	td_write_conf "$conf3" -L "( \"127.0.0.1:$p3\" )" -t 1 -s "$TD_TMP" -S "$TD_TMP/run3/ctl.sock" <<EOF
targets = ( { iqn = "$IQN-notify"; luns = ( { lun = 0; backstore = "memory"; size = "4M"; } ); } );
EOF
	python3 - "$nsock" "$nlog" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
with open(sys.argv[2], "w") as f:
    while True:
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            break
        f.write(m.replace("\n", " ") + "\n"); f.flush()
        if "STOPPING=1" in m:
            break
EOF
	lst=$!
	td_poll 30 test -S "$nsock" || { echo "the stand-in for systemd did not bind $nsock"; kill "$lst"; return 1; }
	NOTIFY_SOCKET=$nsock start_daemon "$p3" -c "$conf3" || { kill "$lst"; return 1; }
	td_poll 30 readies 1 "$nlog" || echo "no READY=1 after the start"
	kill -HUP "$TD_DAEMON_PID"
	td_poll 30 readies 2 "$nlog" || echo "no second READY=1 after SIGHUP"
	stop_daemon || { kill "$lst"; return 1; }
	wait "$lst"
	cat "$nlog"
	# as a service it logs through syslog (levels in the journal), not stderr
	if grep -q "targetd: info:" "$TD_DAEMON_LOG"; then
		echo "logged to stderr under systemd"; return 1
	fi
	python3 - "$nlog" <<'EOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
kinds = [k for l in lines for k in ("RELOADING=1", "READY=1", "STOPPING=1") if k in l]
sys.exit(0 if kinds == ["READY=1", "RELOADING=1", "READY=1", "STOPPING=1"] else "got %s" % kinds)
EOF
}
run_here "systemd notifications: READY, RELOADING on SIGHUP, STOPPING" case_notify
td_summary
