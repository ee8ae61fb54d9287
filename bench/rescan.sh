#!/usr/bin/env bash
# The sync engine on two tables of N routes each (default 500k: 80% IPv4):
#   startup scan  fibd started again on tables a previous fibd filled: it dumps
#                 both and adopts every route (the first scans)
#   rescan        fibctl resync on the same tables, already in sync
# Figures for each: time to complete, fibd CPU, fibctl status round trips (one
# every 50 ms, bench/ctl_probe.py) p50/p99/max, and fibd's loop lag and
# longest callback: all-time maxima, so after the startup scan they are the
# scan's own, and after the rescan the larger of the two. For scale, in the
# same run: ip route show on the same tables. Nothing is asserted.
#
#   bench/rescan.sh [N]     (as root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD_DIR:-$here/../build-bench}
N=${1:-500000}
N4=$((N * 8 / 10))
N6=$((N - N4))
. "$here/lib.sh"

fresh_ns rescan
echo "state_file = $W/tables" >"$W/fibd.conf"
python3 "$here/../netns/routes.py" gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 51 >"$W/t100"
python3 "$here/../netns/routes.py" gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 52 >"$W/t101"
start_fibd
fibctl feed --wait --name a --table 100 "$W/t100" >/dev/null
fibctl feed --wait --name b --table 101 "$W/t101" >/dev/null
stop_fibd
echo "two tables of $N routes ($N4 IPv4, $N6 IPv6): $((2 * N)) routes; $(nproc) CPUs"

: >"$W/fibd.log"
t0=$(now)
start_fibd
probe_start
wait_log 4 "first scan done"
took=$(since "$t0")
probe_stop
echo "startup scan: ${took} s from start to every table adopted; fibd CPU $(proc_cpu "$fibd_pid") s"
echo "  status round trips: $probe"
echo "  fibd: $(loop_stats)"

# The clients claim their routes again (no write), then the rescan.
fibctl feed --wait --name a --table 100 "$W/t100" >/dev/null
fibctl feed --wait --name b --table 101 "$W/t101" >/dev/null
cpu0=$(proc_cpu "$fibd_pid")
resync_timed 4
echo "rescan: ${took} s for both tables; fibd CPU $(cpu_since "$fibd_pid" "$cpu0") s"
echo "  status round trips: $probe"
echo "  fibd (all-time maxima, startup scan included): $(loop_stats)"
fibctl status | grep -E "^(sync|netlink|  messages|  monitor)" | sed "s/^/  /"

t0=$(now)
ip -n "$NS" route show table 100 >/dev/null
ip -n "$NS" -6 route show table 100 >/dev/null
ip -n "$NS" route show table 101 >/dev/null
ip -n "$NS" -6 route show table 101 >/dev/null
echo "for scale: ip route show of both tables (both families) took $(since "$t0") s"
stop_fibd
