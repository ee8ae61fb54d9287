# bench/lib.sh: what the benchmarks share. Sourced; sets an EXIT trap (also run
# on INT and TERM) that kills the PIDs in pids[], removes the namespace and the
# scratch directory W.
. "$(dirname "${BASH_SOURCE[0]}")/../netns/link.sh"

W=$(mktemp -d)
NS=""
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
# (a signal ends the script through exit, so that the EXIT trap runs)
trap 'exit 130' INT TERM

# proc_cpu PID: user+system seconds; proc_rss PID: resident KiB.
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
proc_rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

# fresh_ns NAME: a new namespace (the previous one removed) with loopback and
# the link va/vb (netns/link.sh). The previous one's link goes first: that
# takes every route through it out before the call returns (0.99 s for 750 k
# routes here). Left to the namespace's removal, they would be freed in the
# background, at about 1.2 of two CPUs for a second, while the next run starts.
fresh_ns() {
	if [ -n "$NS" ]; then
		ip -n "$NS" link del va
		ip netns del "$NS"
	fi
	NS="fibdbench-$$-$1"
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	link_setup "$NS" va vb
}

# PY: a python3 with msgpack (Debian's python3-msgpack is for /usr/bin/python3),
# for the probes that speak proto-shim (ctl_probe.py).
PY=$(for p in python3 /usr/bin/python3; do "$p" -c 'import msgpack' 2>/dev/null && echo "$p" && break; done)
need_msgpack_python() {
	[ -n "$PY" ] || { echo "$(basename "$0"): needs python3-msgpack (scripts/setup.sh)" >&2; exit 1; }
}

# fibctl ARGS...: fibctl of the build in B, on the namespace's fibd.
fibctl() { ip netns exec "$NS" "$B/fibd/fibctl/fibctl" -s "$W/fibd.sock" "$@"; }

# start_fibd: fibd of the build in B in the namespace, with $W/fibd.conf, its
# log appended to $W/fibd.log; returns once it answers (its PID in fibd_pid).
start_fibd() {
	ip netns exec "$NS" "$B/fibd/fibd" -f -c "$W/fibd.conf" -s "$W/fibd.sock" 2>>"$W/fibd.log" &
	fibd_pid=$!
	pids+=("$fibd_pid")
	for _ in $(seq 100); do fibctl status >/dev/null 2>&1 && return 0; sleep 0.05; done
	echo "$(basename "$0"): fibd did not start" >&2
	exit 1
}

# start_bird CONF CTL: BIRD_DIR's bird in the namespace with CONF and control
# socket CTL, its log appended to CONF's .log and its PID file beside CTL;
# returns at once (its PID in bird_started).
start_bird() {
	ip netns exec "$NS" "$BIRD_DIR/bird" -f -c "$1" -s "$2" -P "${2%.ctl}.pid" 2>>"${1%.conf}.log" &
	bird_started=$!
	pids+=("$bird_started")
}

# glue_pending CTL NAME...: what each protocol fibd NAME of the BIRD on
# control socket CTL (in NS) says of its pending set, a line each (birdc
# fails for a name this BIRD does not have: no line).
glue_pending() {
	local ctl=$1 f
	shift
	for f in "$@"; do
		ip netns exec "$NS" "$BIRD_DIR/birdc" -s "$ctl" show protocols all "$f" |
			sed -n "s/^ *Pending: */$f: /p; s/^ *Export paused: */$f export paused /p; s/^ *Export past mark: */$f export past the mark: /p" || true
	done
}

stop_fibd() {
	kill "$fibd_pid"
	wait "$fibd_pid" 2>/dev/null || true
}

# probe_start / probe_stop: fibctl status round trips every 50 ms over one
# control session (ctl_probe.py); probe_stop leaves the figures in $probe.
probe_start() {
	need_msgpack_python
	rm -f "$W/probe" "$W/probe.stop" "$W/probe.started"
	ip netns exec "$NS" "$PY" "$(dirname "${BASH_SOURCE[0]}")/ctl_probe.py" "$W/fibd.sock" "$W/probe" 50 &
	probe_pid=$!
	pids+=("$probe_pid")
	wait_file "$W/probe.started"
}

probe_stop() {
	touch "$W/probe.stop"
	wait "$probe_pid" 2>/dev/null || true
	probe=$(cat "$W/probe")
}

# wait_file FILE: until FILE exists (up to 5 s); false if it never did.
wait_file() {
	for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.05; done
	return 1
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# wait_log COUNT TEXT: until fibd's log has COUNT lines with TEXT.
wait_log() {
	while [ "$(grep -c "$2" "$W/fibd.log" || true)" -lt "$1" ]; do sleep 0.02; done
}
loop_stats() {
	fibctl -j status | python3 -c 'import json, sys
l = json.load(sys.stdin)["loop"]
print("lag max %.1f ms, longest callback %.1f ms (%s)" % (l["lag_max_all_ms"], l["callback_max_all_ms"], l["callback_max_all"]))'
}
# cpu_since PID CPU0: fibd's CPU seconds since proc_cpu gave CPU0.
cpu_since() { awk -v a="$2" -v b="$(proc_cpu "$1")" 'BEGIN { printf "%.2f", b - a }'; }
# resync_timed COUNT: fibctl resync, until fibd's log has COUNT "rescan done"
# lines (one per table and family), with the status probe running; the
# seconds it took in $took, the probe's figures in $probe.
resync_timed() {
	local t0
	probe_start
	t0=$(now)
	fibctl resync >/dev/null
	wait_log "$1" "rescan done"
	took=$(since "$t0")
	probe_stop
}
