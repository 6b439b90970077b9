#!/bin/bash
# Fault injection (targetd-faults(7)): every action armed from targetctl,
# and what a libiscsi initiator (tests/ftest) or a raw-PDU client
# (tests/fconn) then sees, exactly: status, sense bytes and INFORMATION,
# residuals, a dropped connection, a stall that ABORT TASK and LUN RESET
# end, latency measured like a benchmark (figures printed; only the lower
# bound is asserted, never a speed), data intact afterwards; the rules of
# the configuration and their FILE:LINE: errors; hit counts in targetctl
# fault stats and /metrics (promtool checks the exposition); and
# determinism: two daemons, the same rules, seed and commands, give the
# same injection log.
#
# To run by hand from a build tree:  make check TESTS=tests/faults.sh
set -u
. "$(dirname "$0")/lib.sh"

: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"
: "${FTEST:=$(dirname "$ITEST")/ftest}"
: "${FCONN:=$(dirname "$ITEST")/fconn}"

td_init faults
td_need_cmd python3 promtool
for b in "$TARGETCTL" "$FTEST" "$FCONN"; do
	[ -x "$b" ] || { td_log "ERROR: $b not built"; exit 99; }
done

T=$TD_TMP
P1=$(free_port) || exit 99
P2=$(free_port) || exit 99
MPORT=$(free_port) || exit 99
SOCK=$T/control.sock
IQN=iqn.2026-11.org.targetd.test:faults
mkdir -p "$T/state"
write_conf "$T/targetd.conf" <<EOF
# written by tests/faults.sh
listen = ( "127.0.0.1:$P1", { address = "127.0.0.1:$P2"; tpgt = 2; } );
portal_groups = ( { tpgt = 1; state = "active/optimized"; }, { tpgt = 2; state = "active/optimized"; } );
threads = 2;
state_dir = "$T/state";
control_socket = "$SOCK";
metrics_listen = "127.0.0.1:$MPORT";
targets = (
  {
    iqn = "$IQN";
    luns = (
      { lun = 0; backstore = "file"; path = "$T/lun0.img"; size = "64M"; thin = true; },
      { lun = 1; backstore = "file"; path = "$T/lun1.img"; size = "64M"; thin = true; },
      { lun = 2; backstore = "memory"; size = "16M";
        faults = ( { name = "bad-sectors"; action = "medium-error"; lba = "100-199"; op = "read"; } ); }
    );
  }
);
EOF
U=iscsi://127.0.0.1:$P1/$IQN/0
U1=iscsi://127.0.0.1:$P1/$IQN/1
U2=iscsi://127.0.0.1:$P1/$IQN/2
UP2=iscsi://127.0.0.1:$P2/$IQN/0

CTL() { "$TARGETCTL" -s "$SOCK" "$@"; }
FT() { "$FTEST" "$@"; }
ADD() { CTL fault add "$IQN" "$@" >/dev/null; }
CLEAR() { CTL fault clear >/dev/null; }

# the configuration: its errors name FILE:LINE: key
case_conf_errors() {
	local bad=$T/bad.conf out=$T/bad.out
	write_conf "$bad" <<EOF
listen = [ "127.0.0.1:$(free_port)" ];
state_dir = "$T/state";
control_socket = "$T/bad.sock";
targets = ( { iqn = "$IQN-bad";
  luns = ( { lun = 0; backstore = "memory"; size = "1M";
    faults = ( { action = "medium-eror"; },
               { action = "latency"; lba = "9-1"; delay = "20ms"; },
               { action = "latency"; },
               { action = "busy"; evry = 3; }
    ); } ); } );
EOF
	if "$TARGETD" -f -c "$bad" >"$out" 2>&1; then
		echo "the daemon started with a bad faults list"
		return 1
	fi
	cat "$out"
	grep -q "bad.conf:6: targets\[0\].luns\[0\].faults\[0\].action: \"medium-eror\" is not an action" "$out" &&
		grep -q "bad.conf:7: targets\[0\].luns\[0\].faults\[1\].lba: \"9-1\" is not an LBA range" "$out" &&
		grep -q "bad.conf:8: targets\[0\].luns\[0\].faults\[2\].delay: required by latency" "$out" &&
		grep -q "bad.conf:9: targets\[0\].luns\[0\].faults\[3\].evry: unknown key (did you mean every?)" "$out"
}

case_conf_rule() {
	CTL fault list | tee "$T/list.txt" &&
		grep -q "bad-sectors.*action=medium-error lun=2 op=read lba=100-199" "$T/list.txt" &&
		FT expect "$U2" read 96 8 3/11/00@100 read 200 8 good write 150 1 good
}

# the control methods: a bad rule is a JSON-RPC error with a reason per key
case_rpc_errors() {
	CTL -j fault add "$IQN" 0 action=medium-eror lba=5-1 >"$T/rpc1.json" && return 1
	CTL -j fault add "$IQN-nosuch" action=busy >"$T/rpc2.json" && return 1
	CTL -j fault add "$IQN" 0 action=busy count=1 >"$T/rpc3.json" || return 1
	CTL -j fault list "$IQN" 0 >"$T/rpc4.json" && CTL -j methods >"$T/rpc5.json" || return 1
	CTL fault clear >/dev/null || return 1
	python3 - "$T" <<'EOF' || return 1
import json, sys
d = sys.argv[1]
e = json.load(open(d + "/rpc1.json"))
assert e["code"] == 2 and e["message"].startswith("the rule was refused (2 problems"), e
errs = e["data"]["errors"]
assert any(x.startswith('action: "medium-eror" is not an action') for x in errs), errs
assert any(x.startswith("lba: ") for x in errs), errs
e = json.load(open(d + "/rpc2.json"))
assert e["code"] == 1, e
r = json.load(open(d + "/rpc3.json"))
assert r["id"] > 0 and r["luns"] == [0] and "action=busy" in r["rule"], r
l = json.load(open(d + "/rpc4.json"))
assert [x["id"] for x in l] == [r["id"]] and l[0]["kind"] == "scsi", l
m = {x["method"]: x["params"] for x in json.load(open(d + "/rpc5.json"))}
assert m["fault.add"] == "target lun? rule" and "fault.clear" in m, m
print("fault.add: code 2 with", len(errs), "reasons; code 1 for a missing target; armed", r["id"])
EOF
}

# CHECK CONDITION with any sense, and the named ones
case_sense() {
	ADD 0 action=check-condition sense=4/44/0 info=77 op=read lba=10 count=1 &&
		FT expect "$U" read 8 4 4/44/00@77 read 8 4 good &&
		ADD 0 action=not-ready op=read count=1 && FT expect "$U" read 0 1 2/04/00 &&
		ADD 0 action=lun-not-supported op=read count=1 && FT expect "$U" read 0 1 5/25/00 &&
		ADD 0 action=aborted-command op=read count=1 && FT expect "$U" read 0 1 b/00/00 &&
		ADD 0 action=hardware-error op=read count=1 && FT expect "$U" read 0 1 4/44/00 &&
		ADD 0 action=space-allocation-failed count=1 && FT expect "$U" write 4000 1 7/27/07 &&
		ADD 0 action=power-on op=read count=1 && FT expect "$U" read 0 1 6/29/00 read 0 1 good &&
		ADD 0 action=capacity-changed op=read count=1 && FT expect "$U" read 0 1 6/2a/09 &&
		CLEAR
}

case_medium_error() {
	ADD 0 action=medium-error lba=1000-1999 &&
		FT expect "$U" read 996 8 3/11/00@1000 read 1500 8 3/11/00@1500 write 1990 20 3/0c/00@1990 \
			read 2000 8 good read 992 8 good &&
		CLEAR
}

case_status() {
	ADD 0 action=busy op=read count=1 && ADD 0 action=task-set-full op=read count=1 &&
		ADD 0 action=reservation-conflict op=write count=1 &&
		FT expect "$U" read 0 8 busy read 0 8 task-set-full write 4000 8 reservation-conflict \
			read 0 8 good write 4000 8 good &&
		CLEAR
}

case_ats() {
	ADD 0 scenario=ats-heartbeat-miscompare offset=42 &&
		FT expect "$U" caw 3000 1 e/1d/00@42 caw 3000 1 good &&
		CLEAR
}

case_data_intact() {
	FT check "$U" 0 2048 11
}

case_stall_abort() {
	ADD 0 action=stall op=read && FT stall "$U" 64 abort && CLEAR
}

case_stall_reset() {
	ADD 0 scenario=apd op=read && FT stall "$U" 64 lun-reset && CLEAR
}

case_stall_timeout() {
	ADD 0 action=stall op=read timeout=400ms && FT held "$U" 64 400 && CLEAR
}

# benchmark-style: the figures are printed; the added delay is a floor
lat_p50() { sed -n 's/.*p50_us=\([0-9]*\).*/\1/p'; }
case_latency() {
	local base fixed uni expo spike
	base=$(FT lat "$U" 300) || return 1
	ADD 0 action=latency delay=2ms op=read && fixed=$(FT lat "$U" 300) && CLEAR &&
		ADD 0 action=latency delay=uniform:1ms:3ms op=read && uni=$(FT lat "$U" 300) && CLEAR &&
		ADD 0 scenario=slow-disk delay=exp:2ms && expo=$(FT lat "$U" 300) && CLEAR &&
		ADD 0 action=latency delay=spike:50ms:0.02 op=read && spike=$(FT lat "$U" 300) && CLEAR ||
		return 1
	printf '%-28s %s\n' "no rule:" "$base" "latency 2ms:" "$fixed" "uniform 1ms..3ms:" "$uni" \
		"slow-disk exp:2ms:" "$expo" "spike 50ms p=0.02:" "$spike"
	[ "$(lat_p50 <<<"$fixed")" -ge 2000 ] && [ "$(lat_p50 <<<"$uni")" -ge 1000 ] &&
		[ "$(sed -n 's/.*max_us=\([0-9]*\).*/\1/p' <<<"$spike")" -ge 50000 ]
}

case_drop() {
	ADD 0 action=drop op=read lba=5000 count=1 && FT dropped "$U" 5000 &&
		FT expect "$U" read 5000 8 good && CLEAR
}

case_withhold_r2t() {
	FT fill "$U" 6000 128 13 && ADD 0 action=withhold-r2t op=write &&
		FT no-r2t "$U" 6000 13 && CLEAR
}

case_digest() {
	ADD 0 action=corrupt-digest op=read count=1 &&
		"$FCONN" 127.0.0.1 "$P1" "$IQN" iqn.2026-11.org.targetd.test:digest digest && CLEAR
}

case_vaai() {
	ADD 0 action=withdraw what=vaai && FT vaai "$U" withdrawn && CLEAR && FT vaai "$U" offered &&
		ADD 0 action=withdraw what=caw && FT expect "$U" caw 3000 1 5/20/00 write 3000 1 good && CLEAR
}

case_capacity() {
	FT -x "$TARGETCTL -s $SOCK fault add $IQN 1 action=capacity size=32M" capacity "$U1" 65536 &&
		FT -x "$TARGETCTL -s $SOCK fault clear" capacity "$U1" 131072
}

case_alua() {
	FT -x "$TARGETCTL -s $SOCK fault add $IQN action=alua tpgt=2 state=standby" \
		expect "$UP2" read 0 8 6/2a/06 read 0 8 2/04/0b inquiry 0 0 good &&
		FT rtpg "$U" 2 2 && FT expect "$U" read 0 8 good && CLEAR && FT rtpg "$U" 2 0
}

# (armed with the session up: libiscsi's login itself sends TEST UNIT READY)
case_pdl() {
	FT -x "$TARGETCTL -s $SOCK fault add $IQN 0 scenario=pdl" \
		expect "$U" read 0 8 5/25/00 tur 0 0 5/25/00 write 4000 1 5/25/00 inquiry 0 0 good &&
		FT expect "$U1" read 0 8 good && CLEAR && FT expect "$U" read 0 8 good
}

case_out_of_space() {
	ADD 1 scenario=out-of-space after_bytes=3M && FT oos "$U1" 3 && FT expect "$U1" read 0 8 good && CLEAR
}

case_per_initiator() {
	ADD 0 action=hardware-error op=read initiator=iqn.2026-11.org.targetd.test:victim &&
		FT -i iqn.2026-11.org.targetd.test:victim expect "$U" read 0 8 4/44/00 &&
		FT -i iqn.2026-11.org.targetd.test:bystander expect "$U" read 0 8 good &&
		ADD 0 action=busy op=read portal=127.0.0.1:$P2 &&
		FT expect "$U" read 0 8 good && FT expect "$UP2" read 0 8 busy && CLEAR
}

case_every_count() {
	ADD 0 action=aborted-command op=read every=3 count=2 &&
		FT expect "$U" read 0 1 good read 0 1 good read 0 1 b/00/00 read 0 1 good read 0 1 good \
			read 0 1 b/00/00 read 0 1 good read 0 1 good read 0 1 good &&
		CLEAR
}

# polled with deadlines: busy only inside [after, after + duration)
case_window() {
	local t0 i state=before
	t0=$(date +%s%N)
	ADD 0 action=busy op=read after=2s duration=2s || return 1
	if FT expect "$U" read 0 1 good; then
		:
	elif [ $(($(date +%s%N) - t0)) -lt 2000000000 ]; then
		echo "BUSY before the window opened"
		return 1
	fi
	for ((i = 0; i < 100; i++)); do
		[ "$state" = after ] && break
		if FT expect "$U" read 0 1 busy >/dev/null 2>&1; then
			state=inside
		elif [ "$state" = inside ]; then
			state=after
		fi
		sleep 0.2
	done
	echo "window: $state"
	CLEAR
	[ "$state" = after ]
}

case_drop_after() {
	ADD action=drop-after pdus=5 count=1 initiator=iqn.2026-11.org.targetd.test:dropper &&
		"$FCONN" 127.0.0.1 "$P1" "$IQN" iqn.2026-11.org.targetd.test:dropper drop-after 5 && CLEAR
}

case_nop_storm() {
	ADD action=nop-storm rate=40 initiator=iqn.2026-11.org.targetd.test:stormy &&
		"$FCONN" 127.0.0.1 "$P1" "$IQN" iqn.2026-11.org.targetd.test:stormy nop-storm 3 40 &&
		FT -i iqn.2026-11.org.targetd.test:stormy nops "$U" 2 && CLEAR
}

case_refuse_login() {
	ADD action=refuse-login count=1 initiator=iqn.2026-11.org.targetd.test:late &&
		"$FCONN" 127.0.0.1 "$P1" "$IQN" iqn.2026-11.org.targetd.test:late login-refused 0x0301 &&
		FT -i iqn.2026-11.org.targetd.test:late expect "$U" read 0 1 good && CLEAR
}

case_close_portal() {
	ADD action=close-portal portal=127.0.0.1:$P2 &&
		"$FCONN" 127.0.0.1 "$P2" "$IQN" iqn.2026-11.org.targetd.test:path portal-down &&
		FT expect "$U" read 0 1 good && CLEAR && FT expect "$UP2" read 0 1 good
}

# path-flap: down, up, down again, within a few periods (polled, bounded)
case_path_flap() {
	local i saw_down=0 saw_up=0
	ADD scenario=path-flap portal=127.0.0.1:$P2 period=2s down=1s || return 1
	for ((i = 0; i < 40 && (saw_down < 2 || saw_up < 1); i++)); do
		if "$FTEST" expect "$UP2" tur 0 0 good >/dev/null 2>&1; then
			saw_up=$((saw_up + 1))
		else
			saw_down=$((saw_down + 1))
		fi
		sleep 0.3
	done
	echo "portal $P2: down $saw_down times, up $saw_up times"
	CLEAR
	[ "$saw_down" -ge 2 ] && [ "$saw_up" -ge 1 ]
}

case_stats_metrics() {
	ADD 0 name=counted action=medium-error op=read lba=7000 count=3 &&
		FT expect "$U" read 7000 1 3/11/00@7000 read 7000 1 3/11/00@7000 read 7000 1 3/11/00@7000 \
			read 7000 1 good || return 1
	CTL fault stats --json >"$T/fstats.json" &&
		python3 -c 'import urllib.request, sys
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode(), end="")' \
			"$MPORT" >"$T/metrics.txt" || return 1
	promtool check metrics <"$T/metrics.txt" || return 1
	python3 - "$T/fstats.json" "$T/metrics.txt" <<'EOF' || return 1
import json, re, sys
st = json.load(open(sys.argv[1]))
r = [x for x in st["rules"] if x["name"] == "counted"][0]
assert r["matched"] == 4 and r["injected"] == 3, r
text = open(sys.argv[2]).read()
m = re.search(r'^targetd_faults_injected_total\{target="[^"]+",rule="counted",action="medium_error"\} (\d+)$',
              text, re.M)
assert m and int(m.group(1)) == 3, "no targetd_faults_injected_total for rule counted = 3"
m = re.search(r'^targetd_lun_faults_injected_total\{target="[^"]+",lun="0"\} (\d+)$', text, re.M)
assert m and int(m.group(1)) >= 3, "no targetd_lun_faults_injected_total for LUN 0 >= 3"
lun0 = [l for l in st["luns"] if l["lun"] == 0][0]
assert lun0["faults_injected"] >= 3, lun0
print("fault stats: counted matched 4, injected 3; /metrics agrees; LUN 0 faults_injected", lun0["faults_injected"])
EOF
	CLEAR
}

# Same rules, seed and commands: the same injections, in two daemons.
det_run() {
	local n=$1 port conf=$T/det.conf
	port=$(free_port) || return 1
	write_conf "$conf" <<EOF
listen = [ "127.0.0.1:$port" ];
threads = 2;
state_dir = "$T/state";
control_socket = "$T/det.sock";
targets = ( { iqn = "$IQN-det";
  luns = ( { lun = 0; backstore = "memory"; size = "8M";
    faults = ( { name = "flaky"; action = "medium-error"; op = "read"; probability = 0.2; seed = 1234; },
               { name = "jitter"; action = "latency"; op = "read"; delay = "exp:200us"; seed = 99; every = 3; } );
  } ); } );
EOF
	start_daemon "$port" -v -c "$conf" || return 1
	"$FTEST" seq "iscsi://127.0.0.1:$port/$IQN-det/0" 200 77 >"$T/det.client.$n" || return 1
	stop_daemon || return 1
	grep -o 'fault_injected .*' "$TD_DAEMON_LOG" >"$T/det.log.$n"
}

case_determinism() {
	det_run 1 && det_run 2 || return 1
	wc -l "$T/det.log.1" "$T/det.client.1"
	[ -s "$T/det.log.1" ] && grep -q "^fault_injected rule=flaky action=medium-error " "$T/det.log.1" &&
		grep -q "^fault_injected rule=jitter action=latency delay_us=" "$T/det.log.1" &&
		diff "$T/det.log.1" "$T/det.log.2" && diff "$T/det.client.1" "$T/det.client.2"
}

# A reload (targetd-faults(7) RELOAD): the rules of the file that changed
# are swapped, the ones armed at runtime stay, a LUN whose only change is
# its faults is not reopened (its memory keeps its data), and a rule that
# cannot be armed refuses the whole reload with FILE:LINE: key.
RIQN=$IQN-reload
RPORT=$(free_port) || exit 99
UR=iscsi://127.0.0.1:$RPORT/$RIQN/0
rl_conf() {   # TARGET-RULES LUN-RULES
	write_conf "$T/reload.conf" <<EOF
listen = [ "127.0.0.1:$RPORT" ];
threads = 2;
state_dir = "$T/state";
control_socket = "$T/reload.sock";
targets = ( { iqn = "$RIQN";
  faults = ( $1 );
  luns = ( { lun = 0; backstore = "memory"; size = "8M";
    faults = ( $2 ); } ); } );
EOF
}
RCTL() { "$TARGETCTL" -s "$T/reload.sock" "$@"; }

rl_start() {
	rl_conf '{ name = "t-old"; action = "busy"; op = "read"; lba = "0-9"; }' \
		'{ name = "l-old"; action = "medium-error"; op = "read"; lba = "100-109"; }' &&
		start_daemon "$RPORT" -c "$T/reload.conf"
}

rl_arm() {
	RCTL fault add "$RIQN" 0 name=rt action=task-set-full op=read lba=200-209 >/dev/null &&
		FT fill "$UR" 1000 64 5 &&
		FT expect "$UR" read 0 8 busy read 100 8 3/11/00@100 read 200 8 task-set-full read 20 8 good
}

case_reload_swap() {
	rl_conf '{ name = "t-new"; action = "busy"; op = "read"; lba = "20-29"; }' \
		'{ name = "l-new"; action = "medium-error"; op = "read"; lba = "120-129"; }' &&
		RCTL reload | tee "$T/reload.out" || return 1
	RCTL fault list | tee "$T/reload.list" || return 1
	grep -q "target $RIQN: faults of the file changed: 1 rules disarmed, 1 armed" "$T/reload.out" &&
		grep -q "target $RIQN LUN 0: faults of the file changed: 1 rules disarmed, 1 armed" "$T/reload.out" &&
		! grep -q "replaced" "$T/reload.out" &&
		grep -q "faults_changed target=$RIQN disarmed=1 armed=1" "$TD_DAEMON_LOG" &&
		grep -q "faults_changed target=$RIQN lun=0 disarmed=1 armed=1" "$TD_DAEMON_LOG" &&
		! grep -q "t-old\|l-old" "$T/reload.list" &&
		grep -q "t-new" "$T/reload.list" && grep -q "l-new" "$T/reload.list" &&
		grep -q "rt " "$T/reload.list" &&
		FT expect "$UR" read 0 8 good read 20 8 busy read 100 8 good read 120 8 3/11/00@120 \
			read 200 8 task-set-full &&
		FT check "$UR" 1000 64 5
}

case_reload_refused() {
	local line
	rl_conf '{ name = "t-new"; action = "busy"; op = "read"; lba = "20-29"; },
             { name = "t-bad"; action = "busy"; portal = "127.0.0.1:1"; }' \
		'{ name = "l-bad"; action = "busy"; op = "read"; }' || return 1
	if RCTL reload >"$T/refused.out" 2>&1; then
		cat "$T/refused.out"
		echo "a reload with a rule that cannot be armed was applied"
		return 1
	fi
	cat "$T/refused.out"
	line=$(grep -n 't-bad' "$T/reload.conf" | cut -d: -f1)
	grep -q "reload.conf:$line: targets\[0\].faults\[1\].portal: portal 127.0.0.1:1 is not one this daemon listens on" \
		"$T/refused.out" || return 1
	RCTL fault list | tee "$T/refused.list" || return 1
	grep -q "t-new" "$T/refused.list" && grep -q "l-new" "$T/refused.list" &&
		! grep -q "t-bad\|l-bad" "$T/refused.list" &&
		FT expect "$UR" read 20 8 busy read 120 8 3/11/00@120 read 200 8 task-set-full read 300 8 good
}

case_reload_clear() {
	rl_conf '' '' && RCTL reload | tee "$T/cleared.out" || return 1
	grep -q "faults of the file changed: 1 rules disarmed, 0 armed" "$T/cleared.out" &&
		FT expect "$UR" read 20 8 good read 120 8 good read 200 8 task-set-full &&
		RCTL fault clear >/dev/null && FT expect "$UR" read 200 8 good
}

run_test "configuration errors name FILE:LINE: key" case_conf_errors
start_daemon "$P1" -v -c "$T/targetd.conf" || exit 1
run_test "write the reference pattern" FT fill "$U" 0 2048 11
run_test "a configured rule: medium error on LUN 2" case_conf_rule
run_test "control methods: JSON-RPC errors for bad rules, --json" case_rpc_errors
run_test "CHECK CONDITION: any sense, named ones, INFORMATION" case_sense
run_test "medium error on a range: INFORMATION = first LBA, writes too" case_medium_error
run_test "BUSY, TASK SET FULL, RESERVATION CONFLICT" case_status
run_test "ATS heartbeat miscompare with its offset" case_ats
run_test "data intact after failed writes" case_data_intact
run_test "stall until ABORT TASK" case_stall_abort
run_test "apd: stall until LUN RESET" case_stall_reset
run_test "stall with a timeout: answered late" case_stall_timeout
run_test "latency: fixed, uniform, exponential, spikes (figures)" case_latency
run_test "drop the connection on a matching command" case_drop
run_test "withhold R2T: no data asked for, ABORT TASK, data intact" case_withhold_r2t
run_test "corrupt a data digest (data itself intact)" case_digest
run_test "VAAI withdrawn from a live LUN and given back" case_vaai
run_test "capacity change with CAPACITY DATA HAS CHANGED" case_capacity
run_test "switch an ALUA group to standby" case_alua
run_test "pdl: LOGICAL UNIT NOT SUPPORTED" case_pdl
run_test "out-of-space after N MiB" case_out_of_space
run_test "scope: one initiator, one portal" case_per_initiator
run_test "trigger: every Nth, at most K" case_every_count
run_test "trigger: after a delay, for a time window" case_window
run_test "drop the connection after N PDUs" case_drop_after
run_test "NOP-In storm" case_nop_storm
run_test "refuse logins" case_refuse_login
run_test "close a portal" case_close_portal
run_test "path-flap" case_path_flap
run_test "fault stats and /metrics" case_stats_metrics
run_test "data intact at the end" case_data_intact
run_here "daemon stops cleanly" stop_daemon
run_here "reload: a daemon with rules in its file" rl_start
run_test "reload: a rule armed at runtime, data written" rl_arm
run_test "reload: changed faults lists swapped, runtime rule kept, LUN not reopened" case_reload_swap
run_test "reload: a rule that cannot be armed refuses it, old rules stay" case_reload_refused
run_test "reload: emptied faults lists disarm the file's rules only" case_reload_clear
run_here "reload daemon stops cleanly" stop_daemon
run_test "determinism: two runs, same injection log" case_determinism
td_summary
