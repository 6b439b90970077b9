#!/bin/bash
# Runtime administration with targetctl: every command's live effect (seen
# by an initiator), its persistence (the file is rewritten; a restart
# serves the same), and its errors as JSON (code, message, data.errors).
#   target add|remove, lun add|remove|resize|offline|online, acl add|remove,
#   chap set, session list|close, portal add|remove, config show|diff.
set -u
. "$(dirname "$0")/lib.sh"
td_init runtime

: "${TARGETCTL:=$(dirname "$TARGETD")/../tools/targetctl}"
: "${STATMIX:=$(dirname "$ITEST")/statmix}"
td_need_cmd iscsi-inq iscsi-ls iscsi-readcapacity16 python3 sha256sum diff
for b in "$TARGETCTL" "$STATMIX" "$ITEST"; do
	[ -x "$b" ] || { td_log "ERROR: $b not built"; exit 99; }
done

T=$TD_TMP
PORT=$(free_port) || exit 99
PORT2=$(free_port) || exit 99
SOCK=$T/ctl.sock
CONF=$T/targetd.conf
A=iqn.2026-11.org.targetd.test:rt-a
B=iqn.2026-11.org.targetd.test:rt-b
INI=iqn.2026-11.org.targetd.test:host1
CTL() { "$TARGETCTL" -s "$SOCK" "$@"; }
URL() { echo "iscsi://127.0.0.1:$PORT/$1/$2"; }
MiB=$((1 << 20))

write_conf "$CONF" <<EOF
# an operator's comment: kept in targetd.conf.bak after the first change
listen = [ "127.0.0.1:$PORT" ];
threads = 2;
state_dir = "$T";
control_socket = "$SOCK";
nop_interval = 0;
targets = (
  { iqn = "$A"; luns = ( { lun = 0; backstore = "memory"; size = "8M"; } ); }
);
EOF
start_daemon "$PORT" -c "$CONF" || exit 1
for i in $(seq 1 50); do [ -S "$SOCK" ] && break; sleep 0.1; done

# json_err CODE CMD...: the command fails (status 1) and prints, with -j,
# an error object with that code
json_err() {
	local code=$1 out=$T/err.json
	shift
	if CTL -j "$@" >"$out" 2>&1; then
		echo "targetctl $* succeeded; expected error $code"; cat "$out"; return 1
	fi
	python3 - "$out" "$code" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))
assert e["code"] == int(sys.argv[2]) and e["message"], e
print("error %d: %s" % (e["code"], e["message"]), e.get("data", ""))
EOF
}
# jq-like: python expression over the JSON of a targetctl command
jcheck() {
	local expr=$1
	shift
	CTL -j "$@" | python3 -c 'import json, sys
d = json.load(sys.stdin)
ok = eval(sys.argv[1])
sys.exit(0 if ok else "not %s: %s" % (sys.argv[1], json.dumps(d)[:2000]))' "$expr"
}
# saved: the file holds the running configuration
saved() { CTL config diff >/dev/null; }

case_target_add() {
	CTL target add "$B" --alias "second target" || return 1
	iscsi-ls "iscsi://127.0.0.1:$PORT" | grep -q "$B" || { echo "discovery does not show $B"; return 1; }
	jcheck "[t['alias'] for t in d if t['iqn'] == '$B'] == ['second target']" targets || return 1
	grep -q "$B" "$CONF" && saved || return 1
	grep -q "an operator's comment" "$CONF.bak" || { echo "the previous version was not kept"; return 1; }
	json_err 3 target add "$B" || return 1
	json_err 2 target add "iqn.2026-11.org.Bad_Name"
}
run_test "target add: live in discovery, written to the file; exists (3), invalid (2)" case_target_add

case_lun_add() {
	CTL lun add "$B" 0 file "$T/b0.img" --size 16M || return 1
	CTL lun add "$B" 1 memory --size 4M --block-size 4096 || return 1
	"$ITEST" readcap "$(URL "$B" 0)" $((16 * MiB)) 512 >/dev/null || return 1
	"$ITEST" readcap "$(URL "$B" 1)" $((4 * MiB)) 4096 >/dev/null || return 1
	saved || return 1
	json_err 3 lun add "$B" 1 memory --size 4M || return 1
	json_err 2 lun add "$B" 2 tape --size 4M || return 1
	json_err 2 lun add "$B" 2 file "$T/no/such/dir/x.img" --size 4M || return 1
	json_err 2 lun add "$B" 2 file "$T/b0.img" || return 1   # already used by LUN 0
	json_err 1 lun add iqn.2026-11.org.targetd.test:none 0 memory --size 4M || return 1
	# the errors name the problem with FILE:LINE
	CTL -j lun add "$B" 2 tape --size 4M | python3 -c '
import json, sys
e = json.load(sys.stdin)
assert any("backstore" in m and "tape" in m for m in e["data"]["errors"]), e'
	[ $? = 0 ] || return 1
	jcheck "sorted(l['lun'] for l in d if l['target'] == '$B') == [0, 1]" luns
}
run_test "lun add: served at once, written; exists (3), invalid (2) with the reasons, no target (1)" case_lun_add

case_lun_resize() {
	local s0 out=$T/resize.out
	head -c $((16 * MiB)) /dev/urandom >"$T/pattern"
	"$ITEST" readcap "$(URL "$B" 0)" $((16 * MiB)) >/dev/null || return 1
	CTL lun resize "$B" 0 24M || return 1
	"$ITEST" readcap "$(URL "$B" 0)" $((24 * MiB)) >/dev/null || return 1
	[ "$(stat -c %s "$T/b0.img")" = $((24 * MiB)) ] || return 1
	grep -q 'size = "24M"' "$CONF" && saved || return 1
	# write known data through the daemon's file, then shrink without force
	dd if="$T/pattern" of="$T/b0.img" bs=1M count=16 conv=notrunc status=none
	s0=$(head -c $((16 * MiB)) "$T/b0.img" | sha256sum)
	if CTL lun resize "$B" 0 8M >"$out" 2>&1; then cat "$out"; return 1; fi
	grep -q -- "--shrink --force" "$out" || { cat "$out"; return 1; }
	json_err 4 lun resize "$B" 0 8M --shrink || return 1
	[ "$(stat -c %s "$T/b0.img")" = $((24 * MiB)) ] || { echo "refused, yet the file changed"; return 1; }
	"$ITEST" readcap "$(URL "$B" 0)" $((24 * MiB)) >/dev/null || return 1
	# asked for, destructive: the LUN and the file are 8M, the rest intact
	CTL lun resize "$B" 0 8M --shrink --force || return 1
	"$ITEST" readcap "$(URL "$B" 0)" $((8 * MiB)) >/dev/null || return 1
	[ "$(stat -c %s "$T/b0.img")" = $((8 * MiB)) ] || { echo "file is $(stat -c %s "$T/b0.img")"; return 1; }
	[ "$(head -c $((8 * MiB)) "$T/pattern" | sha256sum)" = "$(sha256sum <"$T/b0.img")" ] ||
		{ echo "the kept part changed"; return 1; }
	[ -n "$s0" ] && saved && json_err 3 lun resize "$B" 0 8M
}
run_test "lun resize: grows live; shrinking refused (4) unless --shrink --force, which cuts the file" case_lun_resize

case_lun_offline() {
	local out=$T/off.out
	CTL lun offline "$B" 0 || return 1
	if iscsi-readcapacity16 "$(URL "$B" 0)" >"$out" 2>&1; then cat "$out"; echo "an offline LUN answered"; return 1; fi
	cat "$out"
	# NOT READY, LOGICAL UNIT NOT READY, MANUAL INTERVENTION REQUIRED
	grep -qi "not.ready" "$out" && grep -q "0x0403" "$out" || return 1
	jcheck "[l for l in d if l['target'] == '$B' and l['lun'] == 0 and l['offline']]" luns || return 1
	grep -q "offline = true" "$CONF" && saved || return 1
	json_err 3 lun offline "$B" 0 || return 1
	CTL lun online "$B" 0 || return 1
	iscsi-readcapacity16 "$(URL "$B" 0)" >/dev/null || return 1
	! grep -q "offline = true" "$CONF" && saved
}
run_test "lun offline/online: NOT READY (04/03) while offline; listed as offline; written" case_lun_offline

case_acl() {
	CTL acl add "$B" "$INI" || return 1
	if iscsi-inq -i iqn.2026-11.org.targetd.test:stranger "$(URL "$B" 1)" >/dev/null 2>&1; then
		echo "an initiator not on the list logged in"; return 1
	fi
	iscsi-inq -i "$INI" "$(URL "$B" 1)" >/dev/null || return 1
	grep -q "$INI" "$CONF" && saved || return 1
	json_err 3 acl add "$B" "$INI" || return 1
	json_err 2 acl add "$B" "not-an-iqn" || return 1
	CTL acl remove "$B" "$INI" || return 1
	if iscsi-inq -i "$INI" "$(URL "$B" 1)" >/dev/null 2>&1; then
		echo "a removed initiator still logs in"; return 1
	fi
	json_err 1 acl remove "$B" "$INI" || return 1
	CTL acl add "$B" "$INI" >/dev/null
}
run_test "acl add/remove: who may log in changes live; written; exists (3), invalid (2), absent (1)" case_acl

case_chap() {
	CTL chap set "$B" alice alice-secret-123 || return 1
	if iscsi-inq -i "$INI" "$(URL "$B" 1)" >/dev/null 2>&1; then echo "logged in without CHAP"; return 1; fi
	iscsi-inq -i "$INI" "iscsi://alice%alice-secret-123@127.0.0.1:$PORT/$B/1" >/dev/null || return 1
	# a secret from standard input stays out of ps and the history
	echo "bob-secret-4567" | CTL chap set "$B" bob - || return 1
	iscsi-inq -i "$INI" "iscsi://bob%bob-secret-4567@127.0.0.1:$PORT/$B/1" >/dev/null || return 1
	grep -q 'user = "bob"' "$CONF" && saved || return 1
	json_err 2 chap set "$B" bob short || return 1
	CTL chap set "$B" --off || return 1
	iscsi-inq -i "$INI" "$(URL "$B" 1)" >/dev/null
}
run_test "chap set: required at once, a secret from stdin, --off; too short a secret (2)" case_chap

case_sessions() {
	local io tsih i
	"$STATMIX" io "$(URL "$B" 0)" 30 "$INI" >"$T/io.log" 2>&1 &
	io=$!
	for i in $(seq 1 50); do
		tsih=$(CTL -j session list | python3 -c "import json,sys
s = [x['tsih'] for x in json.load(sys.stdin) if x['initiator'] == '$INI']
print(s[0] if s else '')")
		[ -n "$tsih" ] && break
		sleep 0.1
	done
	[ -n "$tsih" ] || { echo "no session listed"; cat "$T/io.log"; kill "$io"; return 1; }
	json_err 1 session close 65000 || { kill "$io"; return 1; }
	json_err 1 session close "$tsih" --cid 9 || { kill "$io"; return 1; }
	CTL session close "$tsih" || { kill "$io"; return 1; }
	if wait "$io"; then echo "the closed session kept running"; return 1; fi
	for i in $(seq 1 50); do
		jcheck "not [x for x in d if x['tsih'] == $tsih]" sessions 2>/dev/null && return 0
		sleep 0.1
	done
	echo "session $tsih still listed"
	return 1
}
run_test "session list/close: a session is closed at once; unknown TSIH or CID (1)" case_sessions

case_portals() {
	CTL portal add "127.0.0.1:$PORT2" || return 1
	iscsi-inq "iscsi://127.0.0.1:$PORT2/$A/0" >/dev/null || { echo "the new portal does not serve"; return 1; }
	iscsi-ls "iscsi://127.0.0.1:$PORT2" | grep -q "127.0.0.1:$PORT2" || return 1
	grep -q "127.0.0.1:$PORT2" "$CONF" && saved || return 1
	json_err 3 portal add "127.0.0.1:$PORT2" || return 1
	json_err 4 portal add "127.0.0.1:$(free_port)" --tpgt 7 || return 1
	json_err -32602 portal add "localhost:$PORT2" || return 1
	CTL portal remove "127.0.0.1:$PORT2" || return 1
	if port_open "$PORT2"; then echo "the removed portal still accepts"; return 1; fi
	json_err 1 portal remove "127.0.0.1:$PORT2" || return 1
	# add it back for the restart below
	CTL portal add "127.0.0.1:$PORT2" >/dev/null
}
run_test "portal add/remove: listening starts and stops live; written; errors 3, 4, -32602, 1" case_portals

case_target_remove() {
	"$STATMIX" io "$(URL "$A" 0)" 30 >"$T/ioa.log" 2>&1 &
	local io=$! i
	for i in $(seq 1 50); do
		jcheck "[x for x in d if x['target'] == '$A']" sessions 2>/dev/null && break
		sleep 0.1
	done
	json_err 4 target remove "$A" || { kill "$io"; return 1; }
	json_err 4 lun remove "$A" 0 || { kill "$io"; return 1; }
	CTL target remove "$A" --force || { kill "$io"; return 1; }
	if wait "$io"; then echo "a session on the removed target kept running"; return 1; fi
	if iscsi-ls "iscsi://127.0.0.1:$PORT" | grep -q "$A"; then echo "$A still discovered"; return 1; fi
	! grep -q "$A" "$CONF" && saved || return 1
	json_err 1 target remove "$A"
}
run_test "target remove: refused with sessions (4) unless --force; gone from discovery; written" case_target_remove

case_lun_remove() {
	CTL lun add "$B" 5 memory --size 4M >/dev/null || return 1
	CTL lun remove "$B" 5 || return 1
	if iscsi-inq "$(URL "$B" 5)" >/dev/null 2>&1; then echo "LUN 5 still answers"; return 1; fi
	saved && json_err 1 lun remove "$B" 5
}
run_test "lun remove: gone at once; written; absent (1)" case_lun_remove

case_command_help() {
	local out
	out=$("$TARGETCTL" lun add --help) || { echo "lun add --help: status $?"; return 1; }
	for w in "targetctl lun add" --block-size --thick --read-only --serial; do
		grep -q -- "$w" <<<"$out" || { echo "lun add --help lacks $w"; echo "$out"; return 1; }
	done
	grep -q "lun remove" <<<"$out" && { echo "lun add --help shows other commands"; return 1; }
	out=$("$TARGETCTL" lun --help) || return 1
	for w in "lun add" "lun remove" "lun resize" "lun clone" "lun offline"; do
		grep -q -- "$w" <<<"$out" || { echo "lun --help lacks $w"; return 1; }
	done
	"$TARGETCTL" nosuch --help >/dev/null 2>&1
	[ $? = 2 ] || { echo "an unknown command with --help is not a usage error (2)"; return 1; }
}
run_test "COMMAND --help: the usage of that command with all its options" case_command_help

case_config() {
	CTL config show >"$T/show.txt" || return 1
	grep -q "$B" "$T/show.txt" && grep -q "b0.img" "$T/show.txt" || return 1
	CTL config diff >/dev/null || { echo "config diff differs right after a change"; return 1; }
	# an edit not reloaded: diff shows it, changes are refused until reload
	sed -i 's/threads = 2;/threads = 2;\nqueue_depth = 64;/' "$CONF"
	CTL config diff >"$T/diff.txt"
	[ $? = 1 ] || { cat "$T/diff.txt"; return 1; }
	cat "$T/diff.txt"
	grep -q "^-queue_depth = 64;" "$T/diff.txt" || return 1
	json_err 4 lun add "$B" 6 memory --size 4M || return 1
	CTL reload >/dev/null || return 1
	CTL config diff >/dev/null || return 1
	CTL lun add "$B" 6 memory --size 4M >/dev/null
}
run_test "config show/diff; a file edited since is never overwritten (4) until reloaded" case_config

# --- persistence: a restart serves what targetctl set ---------------------------
case_restart() {
	CTL -j targets >"$T/targets.before" || return 1
	CTL -j luns >"$T/luns.before" || return 1
	stop_daemon || return 1
	start_daemon "$PORT" -c "$CONF" || return 1
	for i in $(seq 1 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
	CTL -j targets >"$T/targets.after" || return 1
	CTL -j luns >"$T/luns.after" || return 1
	diff "$T/targets.before" "$T/targets.after" || return 1
	python3 - "$T/luns.before" "$T/luns.after" <<'EOF' || return 1
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
key = lambda l: (l["target"], l["lun"], l["backstore"], l["size_bytes"], l["block_size"])
assert sorted(map(key, a)) == sorted(map(key, b)), (a, b)
EOF
	iscsi-inq -i "$INI" "iscsi://127.0.0.1:$PORT2/$B/1" >/dev/null || { echo "the added portal is gone"; return 1; }
	iscsi-inq -i "$INI" "$(URL "$B" 1)" >/dev/null || return 1
	if iscsi-inq -i iqn.2026-11.org.targetd.test:stranger "$(URL "$B" 1)" >/dev/null 2>&1; then
		echo "the ACL did not survive the restart"; return 1
	fi
	CTL config diff >/dev/null
}
run_here "a restart serves the same targets, LUNs, ACL and portals" case_restart

case_embedded() {
	local p3 s3=$T/emb pid
	p3=$(free_port)
	mkdir -p "$s3"
	"$TARGETD" -f -s "$s3" -l "127.0.0.1:$p3" >"$T/emb.log" 2>&1 &
	pid=$!
	for i in $(seq 1 50); do [ -S "$s3/control.sock" ] && break; sleep 0.1; done
	"$TARGETCTL" -s "$s3/control.sock" -j target add "$B" >"$T/emb.json"
	kill "$pid"
	wait "$pid"
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); sys.exit(0 if e["code"] == 5 and "-c FILE" in e["message"] else e)' "$T/emb.json"
}
run_test "the embedded default: changes refused (5), it has no file to keep them" case_embedded

run_here "daemon stops" stop_daemon
td_summary
