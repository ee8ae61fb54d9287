#!/usr/bin/env bash
# BIRD's CLI while a full table arrives over BGP and part of it churns, with
# BIRD's kernel protocol and with protocol fibd, each in a fresh namespace:
#   source  a stock BIRD (the same binary) holding the routes as static
#           protocols, s4/s6 and the churning part c4/c6, exporting them over
#           an internal BGP session on lo (the source listens on port 1179,
#           the measured BIRD on 179); next hops kept: the link's gateway,
#           which the measured BIRD resolves through the link's prefix
#   BIRD    the BIRD measured: its BGP imports them, and one export protocol
#           writes them into kernel table 100:
#   none    no export protocol at all: what BIRD's own BGP import and churn
#           cost its CLI, the floor for both below (the routes count as held
#           once BIRD has imported them: bird_probe.py --held-by)
#   kernel  BIRD's own kernel protocol (k4 and k6, scan time 10), the reference
#   fibd    one protocol fibd for both families (f1), and fibd
# Once the kernel holds the table, c4 and c6 are disabled on the source until
# the kernel holds CHURN routes fewer, then enabled until it holds them all
# again, ROUNDS times; then STEADY seconds of steady state. birdc show status
# on the measured BIRD every 100 ms throughout (bench/bird_probe.py), from its
# start; its CPU, and fibd's, until then, in steady state, and in as long again
# with no probe. Figures only; nothing is asserted.
#
#   bench/churn.sh [--uniform] [N4 N6 CHURN ROUNDS STEADY]   (default 600000 150000 120000 2 30; as root)
# The routes are shaped like today's DFZ (routes.py gen-dfz: its length mix,
# clustered as allocations are, prefixes inside others); --uniform takes
# routes.py gen instead (/24s and /48s spread evenly), as measured before.
set -euo pipefail
gen=gen-dfz
[ "${1:-}" = --uniform ] && { gen=gen; shift; }
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD_DIR:-$here/../build-bench}
BIRD_DIR=${BIRD_DIR:-$here/../build/bird}
N4=${1:-600000}
N6=${2:-150000}
CHURN=${3:-120000}
ROUNDS=${4:-2}
STEADY=${5:-30}
N=$((N4 + N6))
. "$here/lib.sh"

python3 "$here/../netns/routes.py" "$gen" "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 7 >"$W/routes"
# The IPv4 prefixes the probe looks up before it counts (bird_probe.py --sample).
python3 "$here/../netns/sampler.py" sample "$W/routes" >"$W/sample4"
# The churning routes: CHURN of them, spread evenly over the table.
awk -v c="$CHURN" -v n="$N" 'int(NR * c / n) != int((NR - 1) * c / n)' "$W/routes" >"$W/churn"
awk -v c="$CHURN" -v n="$N" 'int(NR * c / n) == int((NR - 1) * c / n)' "$W/routes" >"$W/rest"
python3 "$here/../netns/sampler.py" sample "$W/churn" "$W/routes" >"$W/sample4-churn"
C6=$(grep -c : "$W/churn" || true)
C4=$((CHURN - C6))
python3 "$here/../netns/routes.py" bird-static s "$W/rest" >"$W/static.conf"
python3 "$here/../netns/routes.py" bird-static c "$W/churn" >>"$W/static.conf"

# run NAME EXPORT_CONFIG [fibd]: the source BIRD, then the measured one with
# EXPORT_CONFIG (and fibd); the probe's JSON into $W/NAME.json. With no
# EXPORT_CONFIG, the routes are held once BIRD has imported them.
run() {
	local name=$1 export=$2 recv=${3:-} fibd_pid="" bird_pid src_pid base held=()
	[ -n "$export" ] || held=(--held-by upstream)
	fresh_ns "$name"
	ip -n "$NS" addr add 203.0.113.2/32 dev lo
	ip -n "$NS" addr add 203.0.113.3/32 dev lo
	base=$(ip netns exec "$NS" python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sampler
print("%d,%d" % sampler.held_besides(100, sys.argv[2]))' "$here/../netns" "$W/routes")
	{
		echo "router id 192.0.2.3;"
		echo "log \"$W/src-$name.log\" all;"
		echo "protocol device {}"
		cat "$W/static.conf"
		echo "protocol bgp measured { local 203.0.113.3 port 1179 as 65000; neighbor 203.0.113.2 as 65000; passive on;"
		echo "  ipv4 { import none; export all; next hop keep; }; ipv6 { import none; export all; next hop keep; }; }"
	} >"$W/src-$name.conf"
	start_bird "$W/src-$name.conf" "$W/src.ctl"
	src_pid=$bird_started
	# The source has its routes before the measured BIRD starts.
	ip netns exec "$NS" python3 "$here/bird_probe.py" --startup "$W/src.ctl" >/dev/null
	if [ "$recv" = fibd ]; then
		printf 'state_file = none\n' >"$W/fibd.conf"
		start_fibd
	fi
	{
		echo "router id 192.0.2.2;"
		echo "log \"$W/bird-$name.log\" all;"
		echo "${BENCH_BIRD_CONF:-}"
		echo "protocol device {}"
		# The next hops resolve through the link's prefixes, in tables of their own.
		echo "ipv4 table igp4; ipv6 table igp6;"
		echo "protocol direct { ipv4 { table igp4; }; ipv6 { table igp6; }; interface \"va\"; }"
		echo "protocol bgp upstream { local 203.0.113.2 as 65000; neighbor 203.0.113.3 port 1179 as 65000; connect delay time 0;"
		echo "  ipv4 { import all; export none; igp table igp4; }; ipv6 { import all; export none; igp table igp6; }; }"
		echo "$export"
	} >"$W/bird-$name.conf"
	start_bird "$W/bird-$name.conf" "$W/bird.ctl"
	bird_pid=$bird_started
	ip netns exec "$NS" python3 "$here/bird_probe.py" "${held[@]}" --base "$base" --sample "$W/sample4" \
		--churn "$W/src.ctl,c4+c6,$C4,$C6,$ROUNDS" --churn-sample "$W/sample4-churn" \
		"$W/bird.ctl" 100 "$N4" "$N6" "$STEADY" "$bird_pid" $fibd_pid >"$W/$name.json"
	if [ "$recv" = fibd ]; then
		glue_pending "$W/bird.ctl" f1 >"$W/$name.pending"
	fi
	kill "$bird_pid" "$src_pid"
	wait "$bird_pid" "$src_pid" 2>/dev/null || true
	[ -z "${BENCH_LOGS:-}" ] || cp "$W/bird-$name.log" "$BENCH_LOGS/churn-bird-$name.log"
	if [ -n "$fibd_pid" ]; then
		stop_fibd
	fi
}

echo "BIRD $("$BIRD_DIR/bird" --version 2>&1 | awk '{ print $3 }'): $N routes ($N4 IPv4, $N6 IPv6, routes.py $gen) over BGP" \
	"from another BIRD, into kernel table 100; $CHURN of them ($C4 IPv4, $C6 IPv6) withdrawn and" \
	"announced again $ROUNDS times; steady state $STEADY s; $(nproc) CPUs"
run none ""
run kernel "protocol kernel k4 { kernel table 100; scan time 10; ipv4 { export all; }; }
protocol kernel k6 { kernel table 100; scan time 10; ipv6 { export all; }; }"
run fibd "protocol fibd f1 { socket \"$W/fibd.sock\"; kernel table 100; ipv4 { export all; }; ipv6 { export all; }; }" fibd

python3 - "$W" "$here" <<'PY'
import json, sys
w, here = sys.argv[1:3]
sys.path.insert(0, here)
from probe_table import cpu_rows, print_table, probe_rows, rss_rows  # noqa: E402
names, heads = ("none", "kernel", "fibd"), ("no export", "kernel k4/k6", "fibd f1")
rows = [("time to converge (s; no export: imported)", ("converge_s",))]
rows += probe_rows(("load", "churn", "steady"))
rows += [("churn steps: withdraw, announce, ... (s)", ("churn_steps_s",))]
rows += cpu_rows("fibd", "steady state")
rows += rss_rows("fibd")
print_table(heads, [json.load(open(f"{w}/{n}.json")) for n in names], rows, 26)
PY
echo "glue pending set (peak: the full feed's or the churn's), $(tr '\n' ';' <"$W/fibd.pending")"
