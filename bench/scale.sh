#!/usr/bin/env bash
# Four full tables at once, as a router with several VRFs or views keeps them:
# the same DFZ-shaped table (routes.py gen-dfz, default 770k IPv4 + 230k IPv6)
# in kernel tables 100..103, in one namespace:
#   minimal writer  bench/nlwriter, nexthop objects, the four tables one after
#                   another: the kernel's limit for the same routes
#   load            four fibctl feed --wait clients at once into one fibd
#   resync          fibctl resync of the four tables, already in sync
#   restart         fibd killed (-9) and started again over them, then the four
#                   clients feed again: it must write nothing
# For each: time, fibd CPU, fibctl status round trips (one every 50 ms,
# ctl_probe.py) and fibd's loop lag; after the load, RSS and where it goes (the
# slabs and the attribute sets). Every table is checked with fibctl diff.
# Figures only; nothing is asserted.
#
#   bench/scale.sh [N4 N6]      (as root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD_DIR:-$here/../build-bench}
N4=${1:-770000}
N6=${2:-230000}
N=$((N4 + N6))
TABLES="100 101 102 103"
. "$here/lib.sh"

echo "generating $N routes per table ($N4 IPv4, $N6 IPv6, shaped like the DFZ)..."
python3 "$here/../netns/routes.py" gen-dfz "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 21 >"$W/routes"
echo "four tables of $N routes: $((4 * N)) routes; $(nproc) CPUs, kernel $(uname -r)"

# The minimal writer, the same 4 N routes.
# Its own figure: from the first send to the last ACK (it parses the file first).
fresh_ns nlw
nlw=0
for t in $TABLES; do
	line=$(ip netns exec "$NS" "$B/bench/nlwriter" --nhid --table "$t" "$W/routes")
	nlw=$(awk -v a="$nlw" -v b="$(sed -E 's/.* in ([0-9.]+) s.*/\1/' <<<"$line")" 'BEGIN { printf "%.2f", a + b }')
done
echo "minimal writer (nexthop objects, table after table, its files parsed beforehand): $nlw s"

status_json() { fibctl -j status; }
netlink_msgs() { status_json | python3 -c 'import json, sys; print(json.load(sys.stdin)["netlink"]["messages"])'; }
# in_sync: fibctl diff of every table; prints the tables that differ.
in_sync() {
	local bad=""
	for t in $TABLES; do
		fibctl diff --table "$t" >/dev/null 2>&1 || bad="$bad $t"
	done
	echo "${bad:- none}"
}
feed_all() {
	local p=()
	for t in $TABLES; do
		fibctl feed --wait --name "scale-$t" --table "$t" "$W/routes" >"$W/feed-$t.out" &
		p+=($!)
	done
	for x in "${p[@]}"; do wait "$x"; done
}

fresh_ns fibd
echo "state_file = $W/fibd.state" >"$W/fibd.conf"
start_fibd
dpid=$(pgrep -P "$fibd_pid" -x fibd || echo "$fibd_pid")
rss0=$(proc_rss "$dpid")
cpu0=$(proc_cpu "$dpid")
probe_start
t0=$(now)
feed_all
took=$(since "$t0")
probe_stop
rss1=$(proc_rss "$dpid")
echo "load: four clients at once: ${took} s; fibd CPU $(cpu_since "$dpid" "$cpu0") s;" \
	"RSS $((rss0 / 1024)) -> $((rss1 / 1024)) MiB, $(( (rss1 - rss0) * 1024 / (4 * N) )) bytes per route"
echo "  status round trips: $probe"
echo "  fibd: $(loop_stats)"
echo "  tables that differ from what the clients want (fibctl diff):$(in_sync)"
echo "  where the memory goes:"
fibctl status | grep -E "^(slab|route attributes)" | sed 's/^/    /'

cpu0=$(proc_cpu "$dpid")
: >"$W/fibd.log"
resync_timed 8
echo "resync of the four tables: ${took} s; fibd CPU $(cpu_since "$dpid" "$cpu0") s"
echo "  status round trips: $probe"
echo "  fibd (all-time maxima, the load included): $(loop_stats)"

# Restart: kill -9, start again over the four tables, the clients feed again.
kill -9 "$dpid"
wait "$fibd_pid" 2>/dev/null || true
: >"$W/fibd.log"
t0=$(now)
start_fibd
dpid=$(pgrep -P "$fibd_pid" -x fibd || echo "$fibd_pid")
wait_log 8 "first scan done"
scanned=$(since "$t0")
probe_start
feed_all
took=$(since "$t0")
probe_stop
echo "restart: every table adopted ${scanned} s after the start, the four feeds done after ${took} s;" \
	"netlink messages written since the start: $(netlink_msgs)"
echo "  status round trips during the feeds: $probe"
echo "  tables that differ from what the clients want (fibctl diff):$(in_sync)"
stop_fibd
