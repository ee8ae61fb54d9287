#!/usr/bin/env bash
# Route installation, side by side, same route set, each in a fresh namespace:
#   fibd      fibctl feed --wait into fibd
#   ip-batch  ip -batch, inline nexthops, and with kernel nexthop objects
#   nlwriter  the kernel's limit: prebuilt messages, batches, an ACK a batch,
#             inline nexthops and nexthop objects; and nexthop objects with an
#             ACK a message (as fibd wrote before)
# For fibd also: CPU time, RSS and bytes per route, loop lag and the longest
# callback (from fibctl status), and fibctl status round trips every 50 ms
# during the load (ctl_probe.py). Figures only; nothing is asserted.
#
# The route set is shaped like today's DFZ by default (routes.py gen-dfz: its
# length mix, clustered as allocations are; 564,579 IPv4 + 167,903 IPv6 as in
# the reference table); --uniform takes the old set (routes.py gen: spread
# uniformly, 80 % IPv4, default 700000). --no-dev feeds fibd the routes
# without their device (`via GW` alone, as most people write them): the kernel
# resolves it, and fibd makes its nexthop objects on the device it picked. The
# references install the same routes with the device.
#
#   bench/feed.sh [--uniform] [--no-dev] [ROUTES]      (as root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD_DIR:-$here/../build-bench}
shape=dfz
nodev=0
while [ $# -gt 0 ]; do
	case $1 in
	--uniform) shape=uniform; shift ;;
	--no-dev) nodev=1; shift ;;
	*) break ;;
	esac
done
if [ "$shape" = dfz ]; then
	N=${1:-732482}
	N4=$((N * 564579 / 732482))
else
	N=${1:-700000}
	N4=$((N * 8 / 10))
fi
N6=$((N - N4))
. "$here/lib.sh"

count_routes() {
	echo $(( $(ip -n "$NS" -4 route show table 100 | wc -l) + $(ip -n "$NS" -6 route show table 100 | wc -l) ))
}

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

rows=()
row() { rows+=("$(printf '%-28s %9s %10s %10s  %s' "$1" "$2" "$3" "$4" "$5")"); }

echo "generating $N routes ($N4 IPv4, $N6 IPv6, $shape)..."
gen=gen-dfz
[ "$shape" = uniform ] && gen=gen
python3 "$here/../netns/routes.py" "$gen" "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 11 >"$W/routes"
sed 's/^/route add /; s/$/ table 100 proto 12/' "$W/routes" >"$W/batch-inline"
if [ "$nodev" = 1 ]; then
	sed 's/ dev va$//' "$W/routes" >"$W/feed-routes"
else
	cp "$W/routes" "$W/feed-routes"
fi
{
	echo "nexthop add id 1 via 198.51.100.1 dev va"
	echo "nexthop add id 2 via 2001:db8:ff::1 dev va"
	awk '{ id = ($3 ~ /:/) ? 2 : 1; print "route add " $1 " nhid " id " table 100 proto 12" }' "$W/routes"
} >"$W/batch-nhid"

# fibd
fresh_ns fibd
sock="$W/fibd.sock"
echo "state_file = $W/fibd.state" >"$W/fibd.conf"
ip netns exec "$NS" "$B/fibd/fibd" -f -c "$W/fibd.conf" -s "$sock" 2>"$W/fibd.log" &
fpid=$!
pids+=("$fpid")
for _ in $(seq 100); do ip netns exec "$NS" "$B/fibd/fibctl/fibctl" -s "$sock" status >/dev/null 2>&1 && break; sleep 0.1; done
# The daemon's own process is the child of `ip netns exec`.
dpid=$(pgrep -P "$fpid" -x fibd || echo "$fpid")
rss0=$(proc_rss "$dpid")
cpu0=$(proc_cpu "$dpid")
probe_start # fibctl status every 50 ms during the load
t0=$(date +%s.%N)
out=$(ip netns exec "$NS" "$B/fibd/fibctl/fibctl" -s "$sock" feed --wait --table 100 "$W/feed-routes")
t1=$(date +%s.%N)
probe_stop
cpu1=$(proc_cpu "$dpid")
rss1=$(proc_rss "$dpid")
status=$(ip netns exec "$NS" "$B/fibd/fibctl/fibctl" -s "$sock" -j status)
installed=$(count_routes)
fibd_time=$(calc %.3f "$t1 - $t0")
fibd_row="fibd (fibctl feed --wait)"
[ "$nodev" = 1 ] && fibd_row="fibd (feed without dev)"
row "$fibd_row" "$fibd_time" "$(calc %.0f "$installed / $fibd_time")" "$installed" \
	"cpu $(calc %.2f "$cpu1 - $cpu0") s, rss $((rss0 / 1024))->$((rss1 / 1024)) MiB, $(( (rss1 - rss0) * 1024 / N )) B/route"
loop=$(python3 -c '
import json, sys
s = json.loads(sys.argv[1])
l, n = s["loop"], s["netlink"]
print("loop lag p99 %.2f ms, max %.2f ms; longest callback %.2f ms (%s); longest send %.1f ms" % (
    l["lag_p99_ms"], l["lag_max_ms"], l["callback_max_ms"], l["callback_max"], n["send_max_us"] / 1e3))
' "$status")
kill "$fpid"
wait "$fpid" 2>/dev/null || true

# ip -batch, inline and nexthop objects
for kind in inline nhid; do
	fresh_ns "ip-$kind"
	t0=$(date +%s.%N)
	ip -n "$NS" -batch "$W/batch-$kind"
	t1=$(date +%s.%N)
	n=$(count_routes)
	t=$(calc %.3f "$t1 - $t0")
	row "ip -batch ($kind)" "$t" "$(calc %.0f "$n / $t")" "$n" ""
done

# the minimal writer: an ACK a batch as fibd asks, and an ACK a message as it used to
for kind in inline nhid nhid-ack-each; do
	fresh_ns "nlw-$kind"
	flags=()
	case $kind in
	nhid) flags=(--nhid) ;;
	nhid-ack-each) flags=(--nhid --ack-each) ;;
	esac
	line=$(ip netns exec "$NS" "$B/bench/nlwriter" "${flags[@]}" --table 100 "$W/routes")
	n=$(count_routes)
	t=$(sed -E 's/.* in ([0-9.]+) s.*/\1/' <<<"$line")
	row "nlwriter ($kind)" "$t" "$(calc %.0f "$n / $t")" "$n" "$(sed -E 's/.*(longest send.*)/\1/' <<<"$line")"
done

echo
if [ "$shape" = dfz ]; then
	desc="shaped like today's DFZ: length mix, clustered"
else
	desc="IPv4 mostly /24../22, IPv6 mostly /48 and /32, spread uniformly"
fi
echo "$N routes ($N4 IPv4, $N6 IPv6; $desc), one table, $(nproc) cores, kernel $(uname -r)"
printf '%-28s %9s %10s %10s  %s\n' "method" "seconds" "routes/s" "in kernel" "notes"
printf '%s\n' "${rows[@]}"
echo "fibd: $loop"
echo "fibd: fibctl status during the load: $(python3 -c '
import json, sys
p = json.loads(sys.argv[1])
print("%d probes, p50 %.2f ms, p99 %.2f ms, max %.2f ms" % (p["probes"], p["p50_ms"], p["p99_ms"], p["max_ms"]))
' "$probe")"
echo "fibd: $(sed -n 's/^fibd: info: //p' "$W/fibd.log" | grep -c . ) log lines; $out"
