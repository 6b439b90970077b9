#!/bin/bash
# Observation: workload histograms after a known command mix (lengths,
# LBAs, queue depths: targetctl histo --json and /metrics must hold
# exactly the expected buckets), the switch and reset, an initiator's own
# set; command traces (a libiscsi run traced, dumped, replayed against
# targetd with no difference and against a 4096-byte-block LUN with the
# expected ones; the writer under a 4 KiB QD32 load drops nothing or
# counts what it drops); the dashboard in headless Chromium.
. "$(dirname "$0")/lib.sh"
td_init observe

: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"
: "${HISTOMIX:=$(dirname "$ITEST")/histomix}"
: "${VAAI_LAB:=$(dirname "$TARGETD")/../tools/vaai-lab}"
td_need_cmd python3
for b in "$TARGETCTL" "$HISTOMIX"; do
	[ -x "$b" ] || { td_log "ERROR: $b not built"; exit 99; }
done

PORT=$(free_port)
MPORT=$(free_port)
HPORT=$(free_port)
SOCK=$TD_TMP/run/ctl.sock
IQN=iqn.2026-11.org.targetd:observe
MIXER=iqn.2026-11.org.targetd.test:histomix
CONF=$TD_TMP/targetd.conf
CTL() { "$TARGETCTL" -s "$SOCK" "$@"; }

td_write_conf "$CONF" -L "( \"127.0.0.1:$PORT\" )" -s "$TD_TMP" -S "$SOCK" <<EOF
metrics_listen = "127.0.0.1:$MPORT";
http_listen = "$HPORT";
nop_interval = 0;
targets = (
  { iqn = "$IQN";
    luns = (
      { lun = 0; backstore = "file"; path = "$TD_TMP/lun0.img"; size = "64M"; },
      { lun = 1; backstore = "file"; path = "$TD_TMP/lun1.img"; size = "64M"; block_size = 4096; }
    ); }
);
EOF
start_daemon "$PORT" -c "$CONF" || exit 1
if ! td_poll 30 test -S "$SOCK"; then
	td_log "FAIL: the daemon made no control socket $SOCK; its log:"
	sed 's/^/    | /' "$TD_DAEMON_LOG"
	exit 1
fi

metrics() {
	python3 - "$MPORT" <<'EOF'
import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode(), end="")
EOF
}

# run_mix: histomix's commands, with "reset" run after its login.
run_mix() {
	local line rc
	coproc HM { "$HISTOMIX" "127.0.0.1:$PORT" "$IQN"; }
	read -r -t 20 line <&"${HM[0]}" || { echo "histomix did not log in"; return 1; }
	[ "$line" = ready ] || { echo "histomix: $line"; return 1; }
	"$@" || return 1
	echo go >&"${HM[1]}"
	read -r -t 60 line <&"${HM[0]}"
	wait "$HM_PID"
	rc=$?
	[ "$rc" = 0 ] && [ "$line" = done ] || { echo "histomix failed ($rc): $line"; return 1; }
}

reset_both() {
	CTL histo reset "$IQN" 0 >/dev/null && CTL histo reset 0 --initiator "$MIXER" >/dev/null
}

# The expected buckets of histomix's mix, by "le" (an edge, or "+Inf"),
# worked out by hand from its LBAs (see tests/histomix.c):
#   order  R0 R8 R16 R24 (together), W100 W101 R1000(256) R40(64) W5000(2048) TUR
#   seek   reads +1 +1 +1, 1000-31=+969, 40-1255=-1215; writes 101-100=+1,
#          5000-101=+4899; all +1 +1 +1, 100-31=+69, +1, 1000-101=+899,
#          -1215, 5000-103=+4897
#   closest: reads +1 +1 +1 +969, 40-31=+9; all adds +69 (W100), +899
#          (R1000) and 5000-1255=+3745 (W5000)
EXPECT='{
 "io_length":   {"read":  {"4096":4, "32768":1, "131072":1},
                 "write": {"512":2, "+Inf":1},
                 "all":   {"512":3, "4096":4, "32768":1, "131072":1, "+Inf":1}},
 "seek_distance": {"read":  {"1":3, "1000":1, "-1000":1},
                   "write": {"1":1, "5000":1},
                   "all":   {"1":4, "128":1, "1000":1, "-1000":1, "5000":1}},
 "seek_closest":  {"read":  {"1":3, "1000":1, "16":1},
                   "write": {"1":1, "5000":1},
                   "all":   {"1":4, "128":1, "1000":1, "16":1, "5000":1}},
 "outstanding":   {"read":  {"1":3, "2":1, "4":2},
                   "write": {"1":3},
                   "all":   {"1":7, "2":1, "4":2}},
 "counts": {"interarrival": [5, 2, 10], "latency": [6, 3, 10]}
}'

# check_histo JSON PROMFILE INITIATOR: every bucket as expected, in both.
check_histo() {
	python3 - "$1" "$2" "$IQN" "$3" "$EXPECT" <<'EOF'
import json, re, sys
h = json.load(open(sys.argv[1]))["histograms"]
prom = open(sys.argv[2]).read()
iqn, who, want = sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
fam = {"io_length": "targetd_workload_io_length_bytes",
       "seek_distance": "targetd_workload_seek_distance_blocks",
       "seek_closest": "targetd_workload_seek_closest_blocks",
       "outstanding": "targetd_workload_outstanding_commands",
       "interarrival": "targetd_workload_interarrival_seconds",
       "latency": "targetd_workload_latency_seconds",
       "latency_backstore": "targetd_workload_backstore_latency_seconds"}
series = {}
for line in prom.splitlines():
    m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
    if m:
        lab = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        if lab.get("target") == iqn and lab.get("lun") == "0" and lab.get("initiator") == who:
            series[(m.group(1), lab.get("op"), lab.get("le"))] = float(m.group(3))
bad = []
def label(edges, i):
    return "+Inf" if i == len(edges) else str(edges[i])
for kind in ("io_length", "seek_distance", "seek_closest", "outstanding"):
    for cls in ("read", "write", "all"):
        edges = h[kind]["edges"]
        got = {label(edges, i): n for i, n in enumerate(h[kind][cls]["buckets"]) if n}
        if got != want[kind][cls]:
            bad.append("%s %s: JSON buckets %s, expected %s" % (kind, cls, got, want[kind][cls]))
        cum = 0
        for i, n in enumerate(h[kind][cls]["buckets"]):
            cum += n
            le = "+Inf" if i == len(edges) else "%.9g" % edges[i]
            p = series.get((fam[kind] + "_bucket", cls, le))
            if p != cum:
                bad.append("%s %s le=%s: /metrics %s, JSON cumulates %d" % (kind, cls, le, p, cum))
        c = series.get((fam[kind] + "_count", cls, None))
        if c != sum(want[kind][cls].values()):
            bad.append("%s %s: /metrics count %s" % (kind, cls, c))
for kind, counts in want["counts"].items():
    for cls, n in zip(("read", "write", "all"), counts):
        if h[kind][cls]["count"] != n:
            bad.append("%s %s: %d samples, expected %d" % (kind, cls, h[kind][cls]["count"], n))
        if series.get((fam[kind] + "_count", cls, None)) != n:
            bad.append("%s %s: /metrics count %s, expected %d" %
                       (kind, cls, series.get((fam[kind] + "_count", cls, None)), n))
# backstore latency: every write; reads that the page cache served without
# a backstore request (zero-copy) have none
bs = h["latency_backstore"]
if bs["write"]["count"] != 3 or bs["read"]["count"] > 6 or \
   bs["all"]["count"] != bs["read"]["count"] + 3:
    bad.append("latency_backstore: %s" % {c: bs[c]["count"] for c in ("read", "write", "all")})
print("\n".join(bad) if bad else "every bucket as expected")
sys.exit(1 if bad else 0)
EOF
}

case_histo_mix() {
	CTL histo on 0 --initiator "$MIXER" || return 1
	run_mix reset_both || return 1
	CTL histo "$IQN" 0 --json >"$TD_TMP/histo.json" || return 1
	CTL histo 0 --initiator "$MIXER" --json >"$TD_TMP/histo-mixer.json" || return 1
	metrics >"$TD_TMP/metrics.txt" || return 1
	check_histo "$TD_TMP/histo.json" "$TD_TMP/metrics.txt" all || return 1
	check_histo "$TD_TMP/histo-mixer.json" "$TD_TMP/metrics.txt" "$MIXER" || return 1
	# the text chart says the same
	CTL histo 0 >"$TD_TMP/histo.txt" || return 1
	cat "$TD_TMP/histo.txt"
	grep -Eq '^ +<= 4K +4 +0 +4 ' "$TD_TMP/histo.txt" || { echo "no '<= 4K 4 0 4' row"; return 1; }
	grep -Eq '^ +> 512K +0 +1 +1 ' "$TD_TMP/histo.txt" || { echo "no '> 512K 0 1 1' row"; return 1; }
}
run_test "histograms: a known mix gives the expected buckets (JSON, /metrics, chart)" case_histo_mix

case_histo_switch() {
	CTL histo off 0 | grep -q "histograms off" || return 1
	run_mix true || return 1
	CTL histo 0 --json >"$TD_TMP/off.json" || return 1
	metrics >"$TD_TMP/metrics-off.txt" || return 1
	# off: nothing new counted (the initiator sets neither)
	check_histo "$TD_TMP/off.json" "$TD_TMP/metrics-off.txt" all || return 1
	CTL histo on 0 | grep -q "histograms on" || return 1
	CTL histo reset 0 >/dev/null || return 1
	CTL histo 0 --json | python3 -c '
import json, sys
h = json.load(sys.stdin)["histograms"]
left = {k: v["all"]["count"] for k, v in h.items() if v["all"]["count"]}
sys.exit("after reset: %s" % left if left else 0)' || return 1
	CTL histo off 0 --initiator "$MIXER" >/dev/null || return 1
	if CTL histo 0 --initiator "$MIXER" 2>"$TD_TMP/err.txt"; then
		echo "the mixer's set is still there"; return 1
	fi
	grep -q "keeps no histograms" "$TD_TMP/err.txt"
}
run_test "histograms: off counts nothing, reset zeroes, an initiator set goes" case_histo_switch

# --- command traces -----------------------------------------------------------
URL0="iscsi://127.0.0.1:$PORT/$IQN/0"
URL1="iscsi://127.0.0.1:$PORT/$IQN/1"

# A libiscsi run (vaai-lab bench: random 4 KiB reads and writes, QD8, then
# a few sequential 64 KiB reads), traced with data digests.
case_trace_run() {
	CTL trace start "$IQN" 0 --file "$TD_TMP/run.tdt" --data | grep -q "trace running" || return 1
	"$VAAI_LAB" bench "$URL0" --rw mixed --qd 8 --ios 3000 --force --json >/dev/null || return 1
	"$VAAI_LAB" bench "$URL0" --pattern seq --bs 64k --qd 2 --ios 200 --json >/dev/null || return 1
	CTL trace status | grep -q "trace running" || return 1
	CTL trace stop --json >"$TD_TMP/stop.json" || return 1
	CTL trace status | grep -q "no trace runs" || return 1
	CTL trace dump "$TD_TMP/run.tdt" >"$TD_TMP/dump.txt" || return 1
	CTL trace dump "$TD_TMP/run.tdt" --json >"$TD_TMP/dump.json" || return 1
	head -5 "$TD_TMP/dump.txt"
	python3 - "$TD_TMP/stop.json" "$TD_TMP/dump.json" <<'EOF2'
import json, sys
st = json.load(open(sys.argv[1]))
recs = [json.loads(l) for l in open(sys.argv[2])]
ops = {}
for r in recs:
    ops[r["op"]] = ops.get(r["op"], 0) + 1
print("stop:", {k: st[k] for k in ("commands", "dropped", "dropped_file_full", "bytes")}, "ops:", ops)
assert st["commands"] == len(recs), "the file holds %d commands, the daemon wrote %d" % (len(recs), st["commands"])
assert st["dropped"] == 0 and st["dropped_file_full"] == 0, "dropped commands at QD8"
assert ops.get("READ(16)", 0) >= 3000 * 0.5 and ops.get("WRITE(16)", 0) >= 3000 * 0.2, ops
assert all("data_crc32c" in r for r in recs), "a command without its data CRC32C"
arr = [r["arrival_ns"] for r in recs]
assert arr == sorted(arr), "dump is not in arrival order"
EOF2
}

case_trace_same() {
	"$VAAI_LAB" replay "$TD_TMP/run.tdt" "$URL0" --fast --force >"$TD_TMP/replay0.txt"
	local rc=$?
	cat "$TD_TMP/replay0.txt"
	[ "$rc" = 0 ] && grep -q " 0 different" "$TD_TMP/replay0.txt"
}

# Against the 4096-byte-block LUN of the same size: every command that
# reaches past its 16384 blocks is LBA OUT OF RANGE there, nothing else
# differs.
case_trace_other_lun() {
	"$VAAI_LAB" replay "$TD_TMP/run.tdt" "$URL1" --fast --force --json >"$TD_TMP/replay1.json"
	local rc=$?
	[ "$rc" = 3 ] || { echo "replay exit $rc, expected 3 (differences)"; return 1; }
	python3 - "$TD_TMP/dump.json" "$TD_TMP/replay1.json" <<'EOF2'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))
want = set()
for r in recs:
    cdb = bytes.fromhex(r["cdb"])
    if cdb[0] in (0x88, 0x8a):
        lba, n = int.from_bytes(cdb[2:10], "big"), int.from_bytes(cdb[10:14], "big")
    elif cdb[0] in (0x28, 0x2a):
        lba, n = int.from_bytes(cdb[2:6], "big"), int.from_bytes(cdb[7:9], "big")
    else:
        continue
    if r["sent"] and r["status"] == 0 and lba + n > 16384:
        want.add((r["nexus"], r["cmdsn"]))
got = {(d["nexus"], d["cmdsn"]): d for d in rep["different"]}
print("%d commands past the end of the 4 KiB LUN, %d differences" % (len(want), rep["differences"]))
assert want, "the run never reached past 8 MiB: the test proves nothing"
assert set(got) == want, "differences %s, expected %s" % (sorted(set(got) ^ want)[:10], "")
bad = [d for d in got.values() if d["trace"] != "GOOD" or d["replay"] != "CHECK CONDITION 5/21/00"]
assert not bad, bad[:3]
EOF2
}

# The writer under a 4 KiB QD32 load: every command is in the file or
# counted as dropped.
case_trace_load() {
	command -v iscsi-perf >/dev/null || { echo "iscsi-perf missing"; return 1; }
	CTL stats --reset >/dev/null || return 1
	CTL trace start "$IQN" 0 --file "$TD_TMP/load.tdt" >/dev/null || return 1
	iscsi-perf -r -m 32 -t 3 "$URL0" >/dev/null 2>&1
	CTL trace stop --json >"$TD_TMP/load.json" || return 1
	CTL stats "$IQN" 0 --json >"$TD_TMP/load-stats.json" || return 1
	CTL trace dump "$TD_TMP/load.tdt" | head -2
	python3 - "$TD_TMP/load.json" "$TD_TMP/load-stats.json" <<'EOF2'
import json, sys
st = json.load(open(sys.argv[1]))
lun = json.load(open(sys.argv[2]))["luns"][0]
total = sum(o["count"] for o in lun["commands"]["by_opcode"])
print("%d commands: %d in the file, %d dropped (writer behind), %d dropped (file full)" %
      (total, st["commands"], st["dropped"], st["dropped_file_full"]))
assert total > 10000, "too little load to say anything"
assert st["commands"] + st["dropped"] + st["dropped_file_full"] == total, "commands lost without a count"
EOF2
}

if [ -x "$VAAI_LAB" ]; then
	run_test "trace: a libiscsi run traced with data CRC32C, dumped" case_trace_run
	run_test "trace: replayed against the same LUN, no difference" case_trace_same
	run_test "trace: replayed against a 4096-byte-block LUN, the expected differences" case_trace_other_lun
else
	skip_test "trace and replay" "vaai-lab not built (libiscsi missing)"
fi
run_test "trace: the writer under 4 KiB QD32 load loses nothing uncounted" case_trace_load

# --max-mb bounds the file (what does not fit is counted), an existing file
# is never overwritten, and a file cut short still reads up to the cut.
case_trace_bounds() {
	echo keep >"$TD_TMP/exists.tdt"
	if CTL trace start 0 --file "$TD_TMP/exists.tdt" 2>"$TD_TMP/err.txt"; then
		echo "a trace started over an existing file"; return 1
	fi
	grep -q "never overwrites" "$TD_TMP/err.txt" && [ "$(cat "$TD_TMP/exists.tdt")" = keep ] || return 1
	CTL trace start 0 --file "$TD_TMP/small.tdt" --max-mb 1 >/dev/null || return 1
	if CTL trace start 0 --file "$TD_TMP/second.tdt" 2>/dev/null; then
		echo "two traces at once"; return 1
	fi
	CTL stats --reset >/dev/null || return 1
	iscsi-perf -r -m 32 -t 2 "$URL0" >/dev/null 2>&1
	CTL trace stop --json >"$TD_TMP/small.json" || return 1
	CTL stats "$IQN" 0 --json >"$TD_TMP/small-stats.json" || return 1
	head -c 100000 "$TD_TMP/small.tdt" >"$TD_TMP/cut.tdt"
	CTL trace dump "$TD_TMP/cut.tdt" >"$TD_TMP/cut.txt" || return 1
	head -2 "$TD_TMP/cut.txt"
	python3 - "$TD_TMP/small.json" "$TD_TMP/small-stats.json" "$TD_TMP/small.tdt" "$TD_TMP/cut.txt" <<'EOF2'
import json, os, sys
st = json.load(open(sys.argv[1]))
lun = json.load(open(sys.argv[2]))["luns"][0]
total = sum(o["count"] for o in lun["commands"]["by_opcode"])
size = os.path.getsize(sys.argv[3])
print("file %d bytes; %d commands written, %d dropped (file full), %d total" %
      (size, st["commands"], st["dropped_file_full"], total))
assert size <= 1 << 20 and st["bytes"] == size, "the file outgrew --max-mb 1"
assert st["dropped_file_full"] > 0, "nothing dropped at the bound: the test proves nothing"
assert st["commands"] + st["dropped"] + st["dropped_file_full"] == total
cut = open(sys.argv[4]).read()
assert "not stopped cleanly" in cut, "a cut file is not said to be cut"
EOF2
}
run_test "trace: --max-mb bounds the file, no overwrite, one at a time, a cut file reads" case_trace_bounds

# --- the dashboard --------------------------------------------------------------
# Headless Chromium driven over the DevTools protocol (tests/cdp.py): the
# page runs for real seconds under load, then its DOM is read back; every
# console error and uncaught exception is reported.
case_dashboard() {
	local load
	curl -sf "http://127.0.0.1:$HPORT/metrics" | grep -q '^targetd_workload_io_length_bytes_bucket' ||
		{ echo "no /metrics on http_listen"; return 1; }
	curl -sf "http://127.0.0.1:$HPORT/api/luns" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert len(d["luns"]) == 2 and "histograms" in d["luns"][0], d' || return 1
	# load on LUN 0 while the page polls
	"$VAAI_LAB" bench "$URL0" --rw read --qd 8 --seconds 30 --json >/dev/null 2>&1 &
	load=$!
	python3 "$SRCDIR/tests/cdp.py" --url "http://127.0.0.1:$HPORT/" --wait 6 \
		--profile "$(mktemp -d "$TD_TMP/chromium.XXXXXX")" --screenshot "$TD_TMP/dashboard.png" \
		--eval 'JSON.stringify([...document.querySelectorAll(".lun")].map(c => [c.dataset.target,
			c.dataset.lun, +c.querySelector(".iops").dataset.iops]))' \
		--eval 'document.getElementById("status").dataset.polls' \
		--eval 'document.getElementById("errors").textContent' >"$TD_TMP/cdp.json"
	local rc=$?
	kill "$load" 2>/dev/null
	wait "$load" 2>/dev/null
	cat "$TD_TMP/cdp.json"
	[ "$rc" = 2 ] && { echo "could not drive Chromium"; return 1; }
	python3 - "$TD_TMP/cdp.json" "$IQN" "$TD_TMP/dashboard.png" <<'EOF2'
import json, sys
r = json.load(open(sys.argv[1]))
iqn, png = sys.argv[2], sys.argv[3]
cards = {(t, l): n for t, l, n in json.loads(r["eval"][0])}
polls, page_errors = int(r["eval"][1] or 0), r["eval"][2]
print("polls:", polls, "IOPS per LUN:", cards)
assert not r["errors"], "console errors: %s" % r["errors"]
assert not page_errors.strip(), "errors on the page: " + page_errors
assert polls >= 3, "the page polled %d times" % polls
assert cards.get((iqn, "0"), 0) > 0, "LUN 0 under load shows no IOPS"
assert (iqn, "1") in cards, "LUN 1 has no chart"
data = open(png, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000, "no screenshot"
print("screenshot: %d bytes" % len(data))
EOF2
}
if command -v chromium >/dev/null && [ -x "$VAAI_LAB" ] && command -v curl >/dev/null; then
	run_test "dashboard: headless Chromium shows LUN 0's IOPS under load, no console error" case_dashboard
else
	skip_test "dashboard" "chromium, curl or vaai-lab missing (Debian: chromium curl libiscsi-dev)"
fi

# Every series the Grafana dashboard names is one targetd exports.
case_grafana() {
	curl -sf "http://127.0.0.1:$HPORT/metrics" >"$TD_TMP/metrics-all.txt" || return 1
	python3 - "$SRCDIR/contrib/grafana-targetd.json" "$TD_TMP/metrics-all.txt" <<'EOF2'
import json, re, sys
dash = json.load(open(sys.argv[1]))
prom = open(sys.argv[2]).read()
types = dict(re.findall(r'^# TYPE (\S+) (\S+)$', prom, re.M))
def exprs(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("expr", "query") and isinstance(v, str):
                yield v
            else:
                yield from exprs(v)
    elif isinstance(o, list):
        for v in o:
            yield from exprs(v)
names = set()
for e in exprs(dash):
    names.update(re.findall(r'\btargetd_[a-z0-9_]+', e))
def exported(n):
    if n in types:
        return True
    base = re.sub(r'_(bucket|sum|count)$', '', n)
    return types.get(base) == "histogram"
missing = sorted(n for n in names if not exported(n))
print("%d series named, %d missing: %s" % (len(names), len(missing), missing))
assert names and not missing
EOF2
}
if command -v curl >/dev/null; then
	run_test "grafana: every series contrib/grafana-targetd.json names exists in /metrics" case_grafana
else
	skip_test "grafana" "curl missing"
fi

td_summary
