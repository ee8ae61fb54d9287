#!/usr/bin/env bash
# The main job: set up, build fibd and BIRD 2.0.12 with the fibd protocol, then
# in a throwaway network namespace start fibd and BIRD with a built-in route set
# (BIRD static protocols, ROUTES routes), wait until the kernel holds every one,
# and show what BIRD, fibd and the kernel say. Everything it starts is stopped
# and removed at the end.
#   scripts/demo.sh [ROUTES]     (default 100000; as root)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}

scripts/setup.sh
if [ -f build/build.ninja ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
ninja -C build >/dev/null
echo "== building BIRD with the fibd protocol (bird-glue/build.sh; the first time takes a minute)"
bird-glue/build.sh build/bird | tail -n 1
build/fibd/fibd --version

NS="fibd-demo-$$"
W=$(mktemp -d)
FIBD_PID="" BIRD_PID=""
stop() { # PID
	[ -n "$1" ] && kill "$1" 2>/dev/null && wait "$1" 2>/dev/null
	return 0
}
cleanup() {
	stop "$BIRD_PID"
	stop "$FIBD_PID"
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
fibctl() { ip netns exec "$NS" build/fibd/fibctl/fibctl -s "$W/fibd.sock" "$@"; }
birdc() { ip netns exec "$NS" build/bird/birdc -s "$W/bird.ctl" "$@"; }

echo "== a namespace with one link: $NS"
ip netns add "$NS"
ip -n "$NS" link set lo up
. netns/link.sh
link_setup "$NS" uplink peer

echo "== fibd"
echo "state_file = $W/fibd.state" >"$W/fibd.conf"
ip netns exec "$NS" build/fibd/fibd -f -c "$W/fibd.conf" -s "$W/fibd.sock" 2>"$W/fibd.log" &
FIBD_PID=$!
for _ in $(seq 50); do
	fibctl status >/dev/null 2>&1 && break
	sleep 0.1
done

N4=$((N * 8 / 10))
echo "== BIRD: $N static routes ($N4 IPv4, $((N - N4)) IPv6), exported by protocol fibd to table 100"
python3 netns/routes.py gen "$N4" "$((N - N4))" uplink 198.51.100.1 2001:db8:ff::1 >"$W/routes"
cat >"$W/bird.conf" <<EOF
router id 192.0.2.1;
log "$W/bird.log" all;
protocol device {}
$(python3 netns/routes.py bird-static demo "$W/routes")
protocol fibd fibd1 {
  socket "$W/fibd.sock";
  kernel table 100;
  ipv4 { export all; };
  ipv6 { export all; };
}
EOF
start=$(date +%s.%N)
ip netns exec "$NS" build/bird/bird -f -c "$W/bird.conf" -s "$W/bird.ctl" -P "$W/bird.pid" 2>>"$W/bird.log" &
BIRD_PID=$!
installed() {
	# (before the first route, the table does not exist yet)
	echo $(( $(ip -n "$NS" route show table 100 proto 12 2>/dev/null | wc -l) +
		$(ip -n "$NS" -6 route show table 100 proto 12 2>/dev/null | wc -l) ))
}
for _ in $(seq 600); do
	[ "$(installed)" -ge "$N" ] && break
	sleep 0.5
done
echo "kernel table 100 holds $(installed) of $N routes," \
	"$(python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$start") s after BIRD started"

echo "== birdc show protocols all fibd1"
birdc show protocols all fibd1 >"$W/birdc"
sed -n '1,14p' "$W/birdc"

echo "== fibctl status"
fibctl status

echo "== the kernel (ip route show table 100 proto bird), a sample"
ip -n "$NS" route show table 100 proto 12 >"$W/k4"
ip -n "$NS" -6 route show table 100 proto 12 >"$W/k6"
head -5 "$W/k4"
head -3 "$W/k6"

echo "== stopping BIRD (its routes are withdrawn, as with the kernel protocol) and fibd"
stop "$BIRD_PID"
BIRD_PID=""
for _ in $(seq 100); do
	[ "$(installed)" -eq 0 ] && break
	sleep 0.2
done
echo "kernel table 100 holds $(installed) routes of BIRD's"
