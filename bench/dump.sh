#!/usr/bin/env bash
# fibctl dump beside ip route show, on two tables of N routes each (default
# 500k, 80% IPv4): for one table, both families, in each format, time to the
# first byte, total time, fibd's CPU, its RSS before and at its peak, the
# client's peak RSS
# (bench/dump_probe.py); then fibctl status round trips (bench/ctl_probe.py)
# while four dumps of both tables run at once. Nothing is asserted.
#
#   bench/dump.sh [N]     (as root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD_DIR:-$here/../build-bench}
N=${1:-500000}
N4=$((N * 8 / 10))
N6=$((N - N4))
. "$here/lib.sh"

fresh_ns dump
echo "state_file = none" >"$W/fibd.conf"
start_fibd
python3 "$here/../netns/routes.py" gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 91 >"$W/t100"
python3 "$here/../netns/routes.py" gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 92 >"$W/t101"
fibctl feed --wait --name a --table 100 "$W/t100" >/dev/null
fibctl feed --wait --name b --table 101 "$W/t101" >/dev/null
echo "two tables of $N routes ($N4 IPv4, $N6 IPv6); table 100 dumped; $(nproc) CPUs"

probe() { # label, command...
	local label=$1
	shift
	local out
	out=$(ip netns exec "$NS" python3 "$here/dump_probe.py" "$fibd_pid" "$@")
	printf '%-34s %s\n' "$label" "$out"
	printf '%s\t%s\n' "$label" "$out" >>"$W/probes"
}
F="$B/fibd/fibctl/fibctl -s $W/fibd.sock"
probe "fibctl dump --format text" $F dump --table 100 --format text
probe "fibctl dump --format json" $F dump --table 100 --format json
probe "fibctl dump --format binary" $F dump --table 100 --format binary
probe "ip route show (both families)" sh -c "ip -4 route show table 100; ip -6 route show table 100"
probe "ip -j route show (both families)" sh -c "ip -4 -j route show table 100; ip -6 -j route show table 100"

probe_start
dumpers=()
for i in 1 2 3 4; do
	fibctl dump >/dev/null &
	dumpers+=("$!")
done
for p in "${dumpers[@]}"; do wait "$p"; done
probe_stop
echo "fibctl status while four dumps of both tables ran: $probe"

# The ratios the targets speak of (text at most 0.6x, binary 0.3x of ip route
# show), from the figures above.
python3 - "$W/probes" <<'PY'
import json, sys
t = {l.split("\t")[0].split(" (")[0]: json.loads(l.split("\t")[1]) for l in open(sys.argv[1])}
ip = t["ip route show"]["total_s"]
for fmt in ("text", "json", "binary"):
    print("fibctl dump --format %-6s / ip route show: %.2fx" % (fmt, t["fibctl dump --format " + fmt]["total_s"] / ip))
PY
