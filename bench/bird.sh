#!/usr/bin/env bash
# BIRD loading a table into the kernel, side by side, same route set (BIRD
# static protocols), each in a fresh namespace with one veth link:
#   start   the same BIRD and routes with no export protocol, five times: how
#           long BIRD takes to answer at all (the median); the other runs count
#           probes from then on
#   floor   the minimal writer (bench/nlwriter) installing the same routes:
#           with the median start-up, about the soonest any export could
#           converge here (a BIRD that starts faster than its median may beat it)
#   none    the same BIRD and routes with no export protocol, probed as the
#           others are, the routes held once BIRD has imported them
#           (bird_probe.py --held-by), its steady state from when fibd f1's
#           began (BGP to fibd's for bench/run.sh bgp): what BIRD's CLI and CPU
#           cost with nothing to export, the reference for both
#   kernel  BIRD's own kernel protocol (k4 and k6, scan time 10), the reference
#   fibd    the same BIRD with one protocol fibd for both families (f1)
#   fibd46  and with two, f4 and f6, as operators write k4 and k6 today
#   bgp     stock BIRD (no fibd protocol) feeding fibd over BGP (an internal
#           session on lo; fibd's BGP ingest), BIRD's kernel protocol removed
#   frr     (bench/run.sh bgp only) the same BGP session to FRR's bgpd, its
#           zebra installing the routes (into the main table: FRR picks no
#           other outside a VRF)
#   feed    (bench/run.sh bgp only) the same routes, without dev, fed to a fresh
#           fibd by fibctl feed --wait: the reference for BGP ingest
#   replay  (bench/run.sh bgp only) the same routes over BGP to a fresh fibd
#           from UPDATEs encoded beforehand (bgp_replay.py): fibd's BGP ingest
#           without the peer's cost
# The BIRD binary is the one bird-glue/build.sh makes (BIRD_DIR; bench/run.sh
# bird --bird VERSION picks 2.0.12, 2.19.2 or 3.3.2): stock BIRD plus a
# protocol that the kernel run does not configure, so that run is stock BIRD
# (3.3.2: with the start-up fix build.sh carries, docs/bird-glue.md).
# Figures (bench/bird_probe.py): time from BIRD's start until the kernel holds
# every route; birdc show status latency, probed every 100 ms, during the load
# (and of the probes answered, without those that waited out BIRD's start-up)
# and in STEADY seconds of steady state; fibctl status, every 50 ms, during the
# load; CPU until converged, in steady state, and in as long again with no probe,
# and memory, of BIRD and of what takes its routes into the kernel (fibd, or
# bgpd and zebra); the glue's peak
# pending set. Nothing is asserted.
#
#   bench/bird.sh [--uniform] [N4 N6 STEADY]   (default 600000 150000 120; as root)
# The routes are shaped like today's DFZ (routes.py gen-dfz: its length mix,
# clustered as allocations are, prefixes inside others); --uniform takes
# routes.py gen instead (/24s and /48s spread evenly), as measured before.
# BENCH_ONLY=bgp runs the start-up, no export, kernel, bgp, frr, feed and replay runs (bench/run.sh bgp).
set -euo pipefail
gen=gen-dfz
[ "${1:-}" = --uniform ] && { gen=gen; shift; }
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD_DIR:-$here/../build-bench}
BIRD_DIR=${BIRD_DIR:-$here/../build/bird}
N4=${1:-600000}
N6=${2:-150000}
STEADY=${3:-120}
N=$((N4 + N6))
STARTS=${BENCH_STARTS:-5}
if ! [[ $STARTS =~ ^[1-9][0-9]*$ ]] || [ $((STARTS % 2)) -ne 1 ]; then
	echo "$(basename "$0"): BENCH_STARTS must be an odd number of start-ups, not '$STARTS'" >&2
	exit 2
fi
. "$here/lib.sh"

python3 "$here/../netns/routes.py" "$gen" "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 7 >"$W/routes"
# The IPv4 prefixes the probe looks up before it counts (bird_probe.py --sample).
python3 "$here/../netns/sampler.py" sample "$W/routes" >"$W/sample4"
python3 "$here/../netns/routes.py" bird-static s "$W/routes" >"$W/static.conf"

# start_frr: FRR's zebra and bgpd (Debian's frr, as user frr, files in $W/frr)
# in the namespace; bgpd listens on 203.0.113.1 port 1179 for BIRD at 203.0.113.2,
# one internal session, and zebra installs what bgpd selects into the main
# table (FRR has no kernel table of its own choice outside a VRF). Their PIDs
# in frr_pids. zebra's options are those of Debian's /etc/frr/daemons (-s: a
# 90 MB netlink receive buffer; FRR 8.4's zebra exits on an overrun) and -r:
# at exit it leaves its routes to the namespace's removal.
start_frr() {
	local F=$W/frr
	chmod 711 "$W"
	install -d -o frr -g frr "$F"
	printf 'hostname bench\n' >"$F/zebra.conf"
	cat >"$F/bgpd.conf" <<-EOF
		frr defaults traditional
		hostname bench
		log file $F/bgpd.log informational
		router bgp 65000
		 bgp router-id 192.0.2.254
		 no bgp network import-check
		 neighbor 203.0.113.2 remote-as 65000
		 neighbor 203.0.113.2 passive
		 address-family ipv6 unicast
		  neighbor 203.0.113.2 activate
		 exit-address-family
	EOF
	chown frr:frr "$F/zebra.conf" "$F/bgpd.conf"
	ip netns exec "$NS" /usr/lib/frr/zebra -u frr -g frr -s 90000000 -r -z "$F/zserv.api" \
		-i "$F/zebra.pid" --vty_socket "$F" -f "$F/zebra.conf" >>"$W/frr.out" 2>&1 &
	frr_pids=($!)
	pids+=("$!")
	if ! wait_file "$F/zserv.api"; then
		echo "$(basename "$0"): zebra did not start ($W/frr.out: $(cat "$W/frr.out"))" >&2
		exit 1
	fi
	ip netns exec "$NS" /usr/lib/frr/bgpd -u frr -g frr -z "$F/zserv.api" -l 203.0.113.1 -p 1179 \
		-i "$F/bgpd.pid" --vty_socket "$F" -f "$F/bgpd.conf" >>"$W/frr.out" 2>&1 &
	frr_pids+=($!)
	pids+=("$!")
	wait_file "$F/bgpd.vty" && return 0
	echo "$(basename "$0"): bgpd did not start ($W/frr.out: $(cat "$W/frr.out"))" >&2
	exit 1
}

# run NAME EXPORT_CONFIG [fibd FIBD_CONF | frr | held]: BIRD with the static
# routes and the given export protocols, and what takes the routes into the
# kernel: BIRD itself, fibd (with FIBD_CONF; fibctl status probed during the
# load) or FRR. The probe's JSON into $W/NAME.json. With no export protocol,
# only the time until BIRD answers (the probe's --startup); with held, probed
# as the others until BIRD's static protocols hold the routes, then in steady
# state.
run() {
	local name=$1 export=$2 recv=${3:-} fibd_conf=${4:-} fibd_pid="" frr_pids=() bird_pid table=100 base mark held=()
	fresh_ns "$name"
	# BGP sessions between addresses of lo: FRR's zebra ignores 127.0.0.0/8
	ip -n "$NS" addr add 203.0.113.1/32 dev lo
	ip -n "$NS" addr add 203.0.113.2/32 dev lo
	[ "$recv" = frr ] && table=254
	# What the table holds before anything starts that the routes do not
	# replace (the main table: the link's routes; the generated table may hold
	# the link's own prefix, and the connected route wins over BGP's).
	base=$(ip netns exec "$NS" python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sampler
print("%d,%d" % sampler.held_besides(int(sys.argv[2]), sys.argv[3]))' "$here/../netns" "$table" "$W/routes")
	mark=()
	if [ "$recv" = fibd ]; then
		printf 'state_file = none\n%s\n%s\n' "$fibd_conf" "${BENCH_FIBD_CONF:-}" >"$W/fibd.conf"
		start_fibd
		probe_start
		mark=(--mark "$W/probe.stop") # the status probe stops once the kernel holds every route
	elif [ "$recv" = frr ]; then
		start_frr
	fi
	{
		echo "router id 192.0.2.1;"
		echo "log \"$W/bird-$name.log\" all;"
		echo "${BENCH_BIRD_CONF:-}"
		echo "protocol device {}"
		cat "$W/static.conf"
		echo "$export"
	} >"$W/bird-$name.conf"
	rm -f "$W/bird.ctl"
	start_bird "$W/bird-$name.conf" "$W/bird.ctl"
	bird_pid=$bird_started
	# (routes.py bird-static s: protocols s4 and s6)
	[ "$recv" = held ] && held=(--held-by s4+s6 --steady-from "$STEADY_FROM")
	if [ -z "$export" ] && [ "$recv" != held ]; then
		ip netns exec "$NS" python3 "$here/bird_probe.py" --startup "$W/bird.ctl" 2 >"$W/$name.json"
	else
		ip netns exec "$NS" python3 "$here/bird_probe.py" --from "$STARTUP" "${mark[@]}" "${held[@]}" --base "$base" --sample "$W/sample4" \
			"$W/bird.ctl" "$table" "$N4" "$N6" "$STEADY" "$bird_pid" $fibd_pid "${frr_pids[@]}" >"$W/$name.json"
	fi
	if [ "$recv" = fibd ]; then
		probe_stop
		echo "$probe" >"$W/$name.status"
		glue_pending "$W/bird.ctl" f1 f4 f6 >"$W/$name.pending"
	fi
	kill "$bird_pid"
	wait "$bird_pid" 2>/dev/null || true
	[ -z "${BENCH_LOGS:-}" ] || cp "$W/bird-$name.log" "$BENCH_LOGS/"
	if [ -n "$fibd_pid" ]; then
		stop_fibd
	fi
	if [ "${#frr_pids[@]}" -gt 0 ]; then
		kill "${frr_pids[@]}"
		wait "${frr_pids[@]}" 2>/dev/null || true
	fi
}

echo "BIRD $("$BIRD_DIR/bird" --version 2>&1 | awk '{ print $3 }'): $N routes ($N4 IPv4, $N6 IPv6, routes.py $gen)" \
	"as static routes, into kernel table 100 (zebra: the main table); steady state $STEADY s; $(nproc) CPUs"
# BIRD's start-up varies from run to run (BIRD 3.3.2 with the start-up fix: 2.0
# to 2.7 s in a day; 3.5 to 5.5 s in 12 start-ups within 2 minutes on another
# machine of the kind; 5.3 to 9.8 s without the fix): the median of
# BENCH_STARTS (odd; 5 by default).
starts=()
for i in $(seq "$STARTS"); do
	run "start$i" ""
	starts+=("$W/start$i.json")
done
# The median start-up (the last line), and the slowest answer in the 2 s after
# it, with no export protocol: what BIRD's own work right then costs a probe.
startup=$(python3 -c 'import json, sys
r = [json.load(open(p)) for p in sys.argv[1:]]
median = sorted(x["startup_s"] for x in r)[len(r) // 2]
print("BIRD with these routes and no export protocol answers after %s s (median of %s s); probes count from then;"
      % (median, ", ".join(str(x["startup_s"]) for x in r)))
print("  its slowest answer in the 2 s after: %s ms" % ", ".join(str(x.get("after_startup", {}).get("max_ms", "-")) for x in r))
print(median)' "${starts[@]}")
head -n 2 <<<"$startup"
STARTUP=$(tail -n 1 <<<"$startup")
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
bgp_export="protocol bgp tofibd { local 203.0.113.2 as 65000; neighbor 203.0.113.1 port 1179 as 65000; connect delay time 0;
  ipv4 { import none; export all; next hop keep; }; ipv6 { import none; export all; next hop keep; }; }"
run bgp "$bgp_export" fibd "bgp_listen = 203.0.113.1 1179
bgp_as = 65000
bgp_router_id = 192.0.2.254
bgp_peer = bird address 203.0.113.2 as 65000 table 100"
# No export protocol, its steady state from when fibd f1's began (bench/run.sh
# bgp: BGP to fibd's), so that both leave BIRD's work after start-up behind.
ref=fibd
[ -f "$W/fibd.json" ] || ref=bgp
STEADY_FROM=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("converge_s") or 0)' "$W/$ref.json")
[ "$STEADY_FROM" != 0 ] ||
	echo "$(basename "$0"): the $ref run did not converge: the no-export steady state starts at its import" >&2
run none "" held
feed_s=- feed_cpu=- replay_cpu=-
echo '{}' >"$W/replay.json"
if [ "${BENCH_ONLY:-}" = bgp ]; then
	# The same BIRD session to FRR's bgpd, whose zebra installs the routes.
	run frr "$bgp_export" frr
	# The reference for BGP ingest: the same routes (without dev, as BGP
	# gives them) fed to a fresh fibd by fibctl feed --wait.
	fresh_ns feed
	printf 'state_file = none\n' >"$W/fibd.conf"
	start_fibd
	sed 's/ dev va$//' "$W/routes" >"$W/routes-nodev"
	c0=$(proc_cpu "$fibd_pid")
	t0=$(now)
	fibctl feed --wait --table 100 "$W/routes-nodev" >/dev/null
	feed_s=$(since "$t0")
	feed_cpu=$(cpu_since "$fibd_pid" "$c0")
	stop_fibd
	# The same routes over BGP from UPDATEs encoded beforehand (bgp_replay.py):
	# fibd's BGP ingest without the peer's cost.
	fresh_ns replay
	ip -n "$NS" addr add 203.0.113.1/32 dev lo
	ip -n "$NS" addr add 203.0.113.2/32 dev lo
	printf 'state_file = none\nbgp_listen = 203.0.113.1 1179\nbgp_as = 65000\nbgp_router_id = 192.0.2.254\n%s\n' \
		"bgp_peer = replay address 203.0.113.2 as 65000 table 100" >"$W/fibd.conf"
	start_fibd
	c0=$(proc_cpu "$fibd_pid")
	ip netns exec "$NS" python3 "$here/bgp_replay.py" 203.0.113.2 203.0.113.1 1179 "$W/routes-nodev" 100 \
		>"$W/replay.json"
	replay_cpu=$(cpu_since "$fibd_pid" "$c0")
	stop_fibd
fi
# The kernel's floor: the minimal writer (bench/nlwriter: messages built before
# its clock starts, nexthop objects, an ACK a batch) installing the same routes
# in a fresh namespace. BIRD's median start-up plus this is about the soonest any
# export could converge on this machine in this run.
fresh_ns floor
floor_s=$(ip netns exec "$NS" "$B/bench/nlwriter" --nhid --table 100 "$W/routes" | sed -E 's/.* in ([0-9.]+) s.*/\1/')
for f in fibd fibd46 bgp frr; do
	[ -f "$W/$f.json" ] || echo '{}' >"$W/$f.json"
	[ -f "$W/$f.status" ] || echo '{}' >"$W/$f.status"
	[ -f "$W/$f.pending" ] || : >"$W/$f.pending"
done

python3 - "$W" "$feed_s" "$feed_cpu" "$replay_cpu" "$STARTUP" "$floor_s" "$here" <<'PY'
import json, sys
w, feed_s, feed_cpu, replay_cpu, startup_s, floor_s, here = sys.argv[1:8]
sys.path.insert(0, here)
from probe_table import cpu_rows, print_table, probe_rows, rss_rows  # noqa: E402
replay = json.load(open(f"{w}/replay.json"))
names = ("none", "kernel", "fibd", "fibd46", "bgp", "frr")
heads = ("no export", "kernel k4/k6", "fibd f1", "fibd f4/f6", "BGP to fibd", "BGP to zebra")
runs = {n: json.load(open(f"{w}/{n}.json")) for n in names}
for n in names[2:]:
    runs[n]["status"] = json.load(open(f"{w}/{n}.status"))
pend = {n: "; ".join(open(f"{w}/{n}.pending").read().split("\n")).strip("; ") for n in ("fibd", "fibd46")}
rows = [("time to converge (s; no export: imported)", ("converge_s",)), ("first answer (s)", ("first_answer_s",)),
        ("no export: steady state from (s)", ("steady_from_s",))]
rows += probe_rows(("load", "steady"))
rows += [("fibctl status in the load: p99_ms", ("status", "p99_ms")),
         ("fibctl status in the load: max_ms", ("status", "max_ms"))]
rows += cpu_rows("fibd/bgpd+zebra", "converged")
rows += rss_rows("fibd/bgpd+zebra")
print_table(heads, [runs[n] for n in names], rows, 14)
ck, b, z = runs["kernel"].get("converge_s"), runs["bgp"], runs["frr"]
for n, h in zip(names[2:5], heads[2:5]):
    if ck and runs[n].get("converge_s"):
        print(f"converge time, {h} / kernel protocol: {runs[n]['converge_s'] / ck:.2f}x")
if ck:
    floor = float(startup_s) + float(floor_s)
    print(f"the kernel's floor: the minimal writer (bench/nlwriter) installs the routes in {float(floor_s):.2f} s; "
          f"BIRD's median start-up + that = {floor:.2f} s, {floor / ck:.2f}x the kernel protocol")
    for n, h in zip(names[2:5], heads[2:5]):
        r = runs[n]
        if r.get("converge_s") and r.get("first_answer_s"):
            after = r["converge_s"] - r["first_answer_s"]
            print(f"  {h}: every route in the kernel {after:.2f} s after BIRD's first answer, "
                  f"{after / float(floor_s):.2f}x the minimal writer")
if b.get("converge_s") and z.get("converge_s"):
    print(f"converge time, BGP to fibd / BGP to FRR's zebra: {b['converge_s'] / z['converge_s']:.2f}x")
if feed_s != "-" and b.get("converge_s"):
    after = b["converge_s"] - b["first_answer_s"]
    print(f"fibctl feed --wait of the same routes into a fresh fibd: {float(feed_s):.2f} s, fibd CPU {feed_cpu} s; "
          f"BGP to fibd from BIRD's first answer ({b['first_answer_s']} s): {after:.2f} s, {after / float(feed_s):.2f}x")
if feed_s != "-" and replay.get("kernel_s"):
    print(f"BGP to fibd from UPDATEs encoded beforehand (bgp_replay.py): {replay['kernel_s']:.2f} s from the connect "
          f"(all sent after {replay['sent_s']:.2f} s), fibd CPU {replay_cpu} s; {replay['kernel_s'] / float(feed_s):.2f}x "
          f"fibctl feed")
if pend["fibd"] or pend["fibd46"]:
    print(f"glue pending set (peak is the full feed's), f1: {pend['fibd']}")
    print(f"glue pending set, f4/f6: {pend['fibd46']}")
PY
