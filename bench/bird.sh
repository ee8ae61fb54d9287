#!/usr/bin/env bash
# BIRD loading a table into the kernel, side by side, same route set (BIRD
# static protocols), each in a fresh namespace with one veth link:
#   start   the same BIRD and routes with no export protocol, three times: how
#           long BIRD takes to answer at all (the median); the other runs count
#           probes from then on
#   kernel  BIRD's own kernel protocol (k4 and k6, scan time 10), the reference
#   fibd    the same BIRD with one protocol fibd for both families (f1)
#   fibd46  and with two, f4 and f6, as operators write k4 and k6 today
#   bgp     stock BIRD (no fibd protocol) feeding fibd over BGP (an internal
#           session on loopback; fibd's BGP ingest), BIRD's kernel protocol removed
#   feed    (bench/run.sh bgp only) the same routes, without dev, fed to a fresh
#           fibd by fibctl feed --wait: the reference for BGP ingest
# The BIRD binary is the one bird-glue/build.sh makes (BIRD_DIR; bench/run.sh
# bird --bird VERSION picks 2.0.12, 2.19.2 or 3.3.2): stock BIRD plus a
# protocol that the kernel run does not configure, so that run is stock BIRD.
# Figures (bench/bird_probe.py): time from BIRD's start until the kernel holds
# every route; birdc show status latency, probed every 100 ms, during the load
# and in STEADY seconds of steady state; BIRD's CPU in steady state; BIRD and
# fibd memory; the glue's peak pending set. Nothing is asserted.
#
#   bench/bird.sh [N4 N6 STEADY]   (default 600000 150000 120; as root)
# BENCH_ONLY=bgp runs the start-up, kernel and bgp runs alone (bench/run.sh bgp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD_DIR:-$here/../build-bench}
BIRD_DIR=${BIRD_DIR:-$here/../build/bird}
N4=${1:-600000}
N6=${2:-150000}
STEADY=${3:-120}
N=$((N4 + N6))
. "$here/lib.sh"

python3 "$here/../netns/routes.py" gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 7 >"$W/routes"
python3 "$here/../netns/routes.py" bird-static s "$W/routes" >"$W/static.conf"

# run NAME EXPORT_CONFIG [FIBD [FIBD_CONF]]: BIRD with the static routes and
# the given export protocols; the probe's JSON into $W/NAME.json. With no
# export protocol, only the time until BIRD answers (the probe's --startup).
run() {
	local name=$1 export=$2 with_fibd=${3:-} fibd_conf=${4:-} fibd_pid="" bird_pid
	fresh_ns "$name"
	if [ -n "$with_fibd" ]; then
		printf 'state_file = none\n%s\n' "$fibd_conf" >"$W/fibd.conf"
		start_fibd
	fi
	{
		echo "router id 192.0.2.1;"
		echo "log \"$W/bird-$name.log\" all;"
		echo "protocol device {}"
		cat "$W/static.conf"
		echo "$export"
	} >"$W/bird-$name.conf"
	rm -f "$W/bird.ctl"
	ip netns exec "$NS" "$BIRD_DIR/bird" -f -c "$W/bird-$name.conf" -s "$W/bird.ctl" -P "$W/bird.pid" \
		2>>"$W/bird-$name.log" &
	bird_pid=$!
	pids+=("$bird_pid")
	if [ -z "$export" ]; then
		ip netns exec "$NS" python3 "$here/bird_probe.py" --startup "$W/bird.ctl" >"$W/$name.json"
	else
		ip netns exec "$NS" python3 "$here/bird_probe.py" --from "$STARTUP" "$W/bird.ctl" 100 \
			"$N4" "$N6" "$STEADY" "$bird_pid" $fibd_pid >"$W/$name.json"
	fi
	if [ -n "$with_fibd" ]; then
		for f in f1 f4 f6; do
			# (birdc fails for the names this run does not have)
			ip netns exec "$NS" "$BIRD_DIR/birdc" -s "$W/bird.ctl" show protocols all "$f" |
				sed -n "s/^ *Pending: */$f: /p" || true
		done >"$W/$name.pending"
	fi
	kill "$bird_pid"
	wait "$bird_pid" 2>/dev/null || true
	if [ -n "$fibd_pid" ]; then
		stop_fibd
	fi
}

echo "BIRD $("$BIRD_DIR/bird" --version 2>&1 | awk '{ print $3 }'): $N routes ($N4 IPv4, $N6 IPv6)" \
	"as static routes, into kernel table 100; steady state $STEADY s; $(nproc) CPUs"
# BIRD's start-up varies from run to run (BIRD 3: 3.2 to 7.1 s in a day): the
# median of three.
for i in 1 2 3; do
	run "start$i" ""
done
STARTUP=$(python3 -c 'import json, sys
t = sorted(json.load(open(p))["startup_s"] for p in sys.argv[1:])
print(t[1])' "$W/start1.json" "$W/start2.json" "$W/start3.json")
echo "BIRD with these routes and no export protocol answers after $STARTUP s" \
	"(median of $(python3 -c 'import json, sys; print(", ".join(str(json.load(open(p))["startup_s"]) for p in sys.argv[1:]))' \
	"$W/start1.json" "$W/start2.json" "$W/start3.json") s); probes count from then"
run kernel "protocol kernel k4 { kernel table 100; scan time 10; ipv4 { export all; }; }
protocol kernel k6 { kernel table 100; scan time 10; ipv6 { export all; }; }"
if [ "${BENCH_ONLY:-}" != bgp ]; then
	run fibd "protocol fibd f1 { socket \"$W/fibd.sock\"; kernel table 100; ipv4 { export all; }; ipv6 { export all; }; }" fibd
	# Two instances, f4 and f6, as operators write k4 and k6 today.
	run fibd46 "protocol fibd f4 { socket \"$W/fibd.sock\"; kernel table 100; ipv4 { export all; }; }
protocol fibd f6 { socket \"$W/fibd.sock\"; kernel table 100; ipv6 { export all; }; }" fibd
fi
# BIRD unpatched in what it runs: BGP to fibd (README, "Routes over BGP").
# connect delay time 0: BIRD otherwise waits 5 s before its first connection.
run bgp "protocol bgp tofibd { local 127.0.0.2 as 65000; neighbor 127.0.0.1 port 1179 as 65000; connect delay time 0;
  ipv4 { import none; export all; next hop keep; }; ipv6 { import none; export all; next hop keep; }; }" fibd \
	"bgp_listen = 127.0.0.1 1179
bgp_as = 65000
bgp_router_id = 192.0.2.254
bgp_peer = bird address 127.0.0.2 as 65000 table 100"
# The reference for BGP ingest: the same routes (without dev, as BGP gives them)
# fed to a fresh fibd by fibctl feed --wait.
feed_s=-
if [ "${BENCH_ONLY:-}" = bgp ]; then
	fresh_ns feed
	printf 'state_file = none\n' >"$W/fibd.conf"
	start_fibd
	sed 's/ dev va$//' "$W/routes" >"$W/routes-nodev"
	t0=$(now)
	fibctl feed --wait --table 100 "$W/routes-nodev" >/dev/null
	feed_s=$(since "$t0")
	stop_fibd
fi
for f in fibd fibd46; do
	[ -f "$W/$f.json" ] || echo '{}' >"$W/$f.json"
	[ -f "$W/$f.pending" ] || : >"$W/$f.pending"
done

python3 - "$W/kernel.json" "$W/fibd.json" "$W/fibd46.json" "$W/bgp.json" "$W/fibd.pending" "$W/fibd46.pending" \
	"$feed_s" "$STARTUP" <<'PY'
import json, sys
k, f, f2, b = (json.load(open(p)) for p in sys.argv[1:5])
pend = ["; ".join(open(p).read().split("\n")).strip("; ") for p in sys.argv[5:7]]
feed_s, startup = sys.argv[7], float(sys.argv[8])
def g(d, *path):
    for p in path:
        d = d.get(p) if isinstance(d, dict) else None
    return "-" if d is None else d
rows = [("time to converge (s)", ("converge_s",)), ("first answer (s)", ("first_answer_s",))]
for phase in ("load", "steady"):
    for key in ("probes", "p50_ms", "p95_ms", "p99_ms", "max_ms", "timeouts_1s"):
        rows.append((f"birdc show status, {phase}: {key}", (phase, key)))
rows += [("BIRD CPU in steady state (%)", ("bird_steady_cpu_pct",)),
         ("fibd CPU in steady state (%)", ("fibd_steady_cpu_pct",)),
         ("BIRD RSS at the end (MiB)", ("bird_rss_mib",)),
         ("BIRD peak RSS (MiB)", ("bird_peak_rss_mib",)),
         ("fibd RSS at the end (MiB)", ("fibd_rss_mib",)),
         ("fibd peak RSS (MiB)", ("fibd_peak_rss_mib",))]
print(f"{'':44} {'kernel k4/k6':>14} {'fibd f1':>14} {'fibd f4/f6':>14} {'BGP to fibd':>14}")
for label, path in rows:
    print(f"{label:44} {g(k, *path)!s:>14} {g(f, *path)!s:>14} {g(f2, *path)!s:>14} {g(b, *path)!s:>14}")
ck = k.get("converge_s")
for name, d in (("fibd f1", f), ("fibd f4/f6", f2), ("BGP to fibd", b)):
    if ck and d.get("converge_s"):
        print(f"converge time, {name} / kernel protocol: {d['converge_s'] / ck:.2f}x")
if feed_s != "-" and b.get("converge_s"):
    after = b["converge_s"] - startup
    print(f"fibctl feed --wait of the same routes into a fresh fibd: {float(feed_s):.2f} s; BGP to fibd "
          f"from BIRD's first answer ({startup} s): {after:.2f} s, {after / float(feed_s):.2f}x")
print(f"glue pending set (peak is the full feed's), f1: {pend[0]}")
print(f"glue pending set, f4/f6: {pend[1]}")
PY
