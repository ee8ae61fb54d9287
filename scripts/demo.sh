#!/usr/bin/env bash
# The main job, as far as it exists today: set up, build, then start fibd in a
# throwaway network namespace, feed it a generated route set with fibctl feed
# (BIRD's protocol comes with its own issue), and show what the kernel and fibd
# hold. Everything it starts is stopped and removed at the end.
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
build/fibd/fibd --version

NS="fibd-demo-$$"
W=$(mktemp -d)
FIBD_PID=""
cleanup() {
	[ -n "$FIBD_PID" ] && kill "$FIBD_PID" 2>/dev/null && wait "$FIBD_PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

echo "== a namespace with one link: $NS"
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add uplink type veth peer name peer
ip -n "$NS" link set uplink up
ip -n "$NS" link set peer up
ip -n "$NS" addr add 198.51.100.2/24 dev uplink
ip -n "$NS" addr add 2001:db8:ff::2/64 dev uplink nodad

echo "== fibd"
echo "state_file = $W/fibd.state" >"$W/fibd.conf"
ip netns exec "$NS" build/fibd/fibd -f -c "$W/fibd.conf" -s "$W/fibd.sock" 2>"$W/fibd.log" &
FIBD_PID=$!
for _ in $(seq 50); do
	ip netns exec "$NS" build/fibd/fibctl/fibctl -s "$W/fibd.sock" status >/dev/null 2>&1 && break
	sleep 0.1
done

N4=$((N * 8 / 10))
echo "== fibctl feed: $N routes ($N4 IPv4, $((N - N4)) IPv6) into table 100"
python3 netns/routes.py gen "$N4" "$((N - N4))" uplink 198.51.100.1 2001:db8:ff::1 >"$W/routes"
ip netns exec "$NS" build/fibd/fibctl/fibctl -s "$W/fibd.sock" feed --wait --name demo --table 100 "$W/routes"

echo "== the kernel (ip route show table 100 proto 12), a sample"
ip -n "$NS" route show table 100 proto 12 >"$W/k4"
ip -n "$NS" -6 route show table 100 proto 12 >"$W/k6"
head -5 "$W/k4"
head -3 "$W/k6"
echo "... $(wc -l <"$W/k4") IPv4 and $(wc -l <"$W/k6") IPv6 routes"

echo "== fibctl status"
ip netns exec "$NS" build/fibd/fibctl/fibctl -s "$W/fibd.sock" status

echo "== stopping fibd: the routes stay"
kill "$FIBD_PID"
wait "$FIBD_PID" 2>/dev/null || true
FIBD_PID=""
ip -n "$NS" route show table 100 proto 12 >"$W/k4"
echo "$(wc -l <"$W/k4") IPv4 routes still in the kernel"
