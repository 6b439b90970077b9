# shellcheck shell=bash
# A throw-away single-node Ceph cluster for the RBD tests: one monitor and
# one OSD on 127.0.0.1, the OSD on memstore (RAM), no authentication, no
# manager, everything (config, data, logs, sockets, pid files) under one
# directory. Source it after lib.sh:
#
#   . "$(dirname "$0")/ceph.sh"
#   ceph_start "$TD_TMP/ceph" || td_skip_all "$CEPH_WHY"
#   ... CEPH_CONF is the client configuration; pool "rbd" exists ...
#   ceph_stop                     (also run by td_cleanup through the trap)
#
# ceph_start fails (returning 1 with the reason in CEPH_WHY) when the Ceph
# packages are missing or a daemon cannot start here: the caller skips
# (exit 77, the reason printed), never passes. Daemons are stopped by the
# PIDs they wrote, nothing else is touched. The monitor's port comes from
# free_port; the OSD binds ports the kernel has free in Ceph's range.
#
# Environment: CEPH_MEMSTORE_BYTES (default 1 GiB) bounds the OSD's RAM for
# data; TARGETD_KEEP_TMP=1 keeps the directory (and its logs).

CEPH_DIR=
CEPH_CONF=
CEPH_WHY=
CEPH_POOL=rbd
CEPH_PIDS=()

# ceph_available: the programs the cluster and the tests need are here.
ceph_available() {
	local c
	for c in ceph-mon ceph-osd ceph monmaptool rbd rados uuidgen; do
		if ! command -v "$c" >/dev/null 2>&1; then
			CEPH_WHY="$c not installed (the Ceph packages of .ci/install-deps: ceph-mon ceph-osd ceph-common)"
			return 1
		fi
	done
	return 0
}

# ceph_cmd ARGS...: the ceph CLI against this cluster, bounded in time.
ceph_cmd() {
	timeout 30 ceph -c "$CEPH_CONF" --connect-timeout 20 "$@"
}

# ceph_rbd ARGS...: the rbd CLI against this cluster.
ceph_rbd() {
	timeout 120 rbd -c "$CEPH_CONF" "$@"
}

# ceph_rados ARGS...: the rados CLI against this cluster.
ceph_rados() {
	timeout 60 rados -c "$CEPH_CONF" "$@"
}

# ceph_write_conf DIR MON_PORT: the one configuration file that daemons,
# the CLI tools and targetd (librados) all read.
ceph_write_conf() {
	local dir=$1 port=$2 fsid
	fsid=$(uuidgen)
	cat >"$dir/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$port
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
ms bind ipv6 = false
ms mon client mode = crc
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = ${CEPH_MEMSTORE_BYTES:-1073741824}
osd op num shards = 1
osd op num threads per shard = 2
osd max object name len = 256
osd max object namespace len = 64
osd heartbeat grace = 60
rbd cache = false
rbd default features = 1
run dir = $dir/run
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
mon cluster log file = $dir/log/cluster.log
mon data = $dir/mon/\$name
osd data = $dir/osd/\$name
keyring = $dir/keyring
crash dir = $dir/crash
[client]
# one admin socket per process: targetd and the rbd CLI run side by side
admin socket = $dir/run/\$name.\$pid.asok
EOF
}

# ceph_pid_of NAME: the pid the daemon NAME (mon.a, osd.0) wrote.
ceph_pid_of() {
	cat "$CEPH_DIR/run/$1.pid" 2>/dev/null
}

# ceph_wait_pid NAME SECONDS: wait until daemon NAME wrote its pid file.
ceph_wait_pid() {
	local name=$1 t=$2 i p
	for ((i = 0; i < t * 10; i++)); do
		p=$(ceph_pid_of "$name")
		if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
			CEPH_PIDS+=("$p")
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# ceph_fail WHY: record the reason, show the daemon logs' tails, stop what
# started.
ceph_fail() {
	local f
	CEPH_WHY=$1
	for f in "$CEPH_DIR"/log/*.log; do
		[ -s "$f" ] || continue
		echo "ceph: last lines of $f:" >&2
		tail -n 15 "$f" | sed 's/^/    | /' >&2
	done
	ceph_stop
	return 1
}

# ceph_start DIR: bring the cluster up in DIR (created) and create the
# pool "rbd". Sets CEPH_CONF. 0 when the pool is usable.
ceph_start() {
	local dir=$1 port uuid id i t0=$SECONDS
	ceph_available || return 1
	CEPH_DIR=$dir
	mkdir -p "$dir/run" "$dir/log" "$dir/mon/mon.a" "$dir/osd/osd.0" "$dir/crash" || {
		CEPH_WHY="cannot create $dir"
		return 1
	}
	port=$(free_port) || { CEPH_WHY="no free port"; return 1; }
	ceph_write_conf "$dir" "$port"
	CEPH_CONF=$dir/ceph.conf
	: >"$dir/keyring"
	if ! monmaptool --create --clobber --fsid "$(ceph-conf -c "$CEPH_CONF" fsid)" \
		--addv a "[v2:127.0.0.1:$port]" "$dir/monmap" >"$dir/log/mkfs.log" 2>&1; then
		ceph_fail "monmaptool failed: $(tail -n 1 "$dir/log/mkfs.log")"
		return 1
	fi
	if ! ceph-mon -c "$CEPH_CONF" --mkfs -i a --monmap "$dir/monmap" \
		>>"$dir/log/mkfs.log" 2>&1; then
		ceph_fail "ceph-mon --mkfs failed: $(tail -n 1 "$dir/log/mkfs.log")"
		return 1
	fi
	if ! ceph-mon -c "$CEPH_CONF" -i a >>"$dir/log/mkfs.log" 2>&1 ||
		! ceph_wait_pid mon.a 20; then
		ceph_fail "ceph-mon did not start (see $dir/log/mon.a.log)"
		return 1
	fi
	uuid=$(uuidgen)
	id=$(ceph_cmd osd new "$uuid" 2>>"$dir/log/mkfs.log") || {
		ceph_fail "the monitor does not answer on 127.0.0.1:$port (ceph osd new)"
		return 1
	}
	if ! ceph-osd -c "$CEPH_CONF" -i "$id" --mkfs --osd-uuid "$uuid" \
		>>"$dir/log/mkfs.log" 2>&1; then
		ceph_fail "ceph-osd --mkfs failed: $(tail -n 1 "$dir/log/mkfs.log")"
		return 1
	fi
	if ! ceph-osd -c "$CEPH_CONF" -i "$id" >>"$dir/log/mkfs.log" 2>&1 ||
		! ceph_wait_pid "osd.$id" 20; then
		ceph_fail "ceph-osd did not start (see $dir/log/osd.$id.log)"
		return 1
	fi
	if ! ceph_cmd osd pool create "$CEPH_POOL" 8 8 >>"$dir/log/mkfs.log" 2>&1 ||
		! ceph_cmd osd pool application enable "$CEPH_POOL" rbd >>"$dir/log/mkfs.log" 2>&1; then
		ceph_fail "cannot create the pool $CEPH_POOL: $(tail -n 1 "$dir/log/mkfs.log")"
		return 1
	fi
	# usable when a client can write an object (the PGs are active)
	for ((i = 0; i < 600; i++)); do
		if echo probe | timeout 10 rados -c "$CEPH_CONF" -p "$CEPH_POOL" put probe - \
			2>/dev/null; then
			ceph_rados -p "$CEPH_POOL" rm probe 2>/dev/null
			echo "ceph: cluster up in $((SECONDS - t0)) s (mon 127.0.0.1:$port, $dir)"
			return 0
		fi
		sleep 0.1
	done
	ceph_fail "the pool $CEPH_POOL did not become writable in 60 s"
	return 1
}

# ceph_stop: stop the daemons by their pids (TERM, then KILL after 10 s).
ceph_stop() {
	local p i alive
	[ "${#CEPH_PIDS[@]}" = 0 ] && return 0
	for p in "${CEPH_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for ((i = 0; i < 100; i++)); do
		alive=0
		for p in "${CEPH_PIDS[@]}"; do
			kill -0 "$p" 2>/dev/null && alive=1
		done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	for p in "${CEPH_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	CEPH_PIDS=()
}
