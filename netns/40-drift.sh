#!/usr/bin/env bash
# The kernel changed behind fibd's back: a route of fibd's deleted with ip route
# (IPv4 and IPv6), one replaced by a route of another protocol, a link taken
# down (the kernel drops IPv4 routes through it without a notification) and up
# again, and a route with fibd's protocol that fibd never installed. fibd puts
# back what it wants, leaves the foreign route alone, and prunes the stranger
# after the grace time.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 10

ns_with_link NS d
ip -n "$NS" link add wa type veth peer name wb
ip -n "$NS" link set wa up
ip -n "$NS" link set wb up
ip -n "$NS" addr add 203.0.113.2/24 dev wa
ip -n "$NS" addr add 2001:db8:fe::2/64 dev wa nodad
scratch_dir W
SOCK=$W/fibd.sock
cat >"$W/routes" <<'R'
192.0.2.0/24 via 198.51.100.1 dev va
192.0.2.128/25 via 198.51.100.1 dev va
2001:db8:1::/48 via 2001:db8:ff::1 dev va
10.40.0.0/16 via 203.0.113.1 dev wa
10.41.0.0/16 via 203.0.113.1 dev wa
2001:db8:40::/48 via 2001:db8:fe::1 dev wa
R
FIBD_CONF="startup_grace = 2
nexthop_objects = ${NEXTHOP_OBJECTS:-auto}"
diag "nexthop_objects = ${NEXTHOP_OBJECTS:-auto}"
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/routes" 2>&1)
check "six routes installed" grep -q "installed 6, removed 0, failed 0" <<<"$out"
want=$(routes_py canon-text "$W/routes")

ip -n "$NS" route del 192.0.2.0/24 table 100 proto 12
ip -n "$NS" -6 route del 2001:db8:1::/48 table 100 proto 12
check "routes deleted with ip route come back" wait_until 10 bash -c \
	"ip -n $NS route show table 100 proto 12 | grep -q '^192.0.2.0/24' &&
	 ip -n $NS -6 route show table 100 proto 12 | grep -q '^2001:db8:1::/48'"

ip -n "$NS" route replace 192.0.2.128/25 via 198.51.100.1 table 100 proto static
ip -n "$NS" route add 10.99.0.0/16 via 198.51.100.1 table 100 proto 12   # a stranger
ip -n "$NS" link set wa down
check "link down: the kernel dropped the IPv4 routes through it" \
	wait_until 5 bash -c "! ip -n $NS route show table 100 | grep -q '^10.40.0.0/16'"
sleep 1
ip -n "$NS" link set wa up
ip -n "$NS" link set wb up
# IPv6 drops the link's addresses when it goes down (keep_addr_on_down is 0):
# the system puts the address back, as an operator's network configuration would.
ip -n "$NS" addr replace 2001:db8:fe::2/64 dev wa nodad
check "link up: fibd puts its routes through it back" wait_until 15 bash -c \
	"ip -n $NS route show table 100 proto 12 | grep -q '^10.40.0.0/16' &&
	 ip -n $NS route show table 100 proto 12 | grep -q '^10.41.0.0/16' &&
	 ip -n $NS -6 route show table 100 proto 12 | grep -q '^2001:db8:40::/48'"
check "the route replaced by another protocol is left to it" bash -c \
	"ip -n $NS route show table 100 | grep -q '^192.0.2.128/25 via 198.51.100.1 dev va proto static'"
check "the stranger with fibd's protocol is pruned after the grace time" wait_until 15 bash -c \
	"! ip -n $NS route show table 100 | grep -q '^10.99.0.0/16'"
# Changed behind fibd's back but keeping fibd's protocol: no notification says
# so; a rescan (fibctl resync) finds it and puts fibd's route back.
ip -n "$NS" route replace 192.0.2.0/24 via 198.51.100.3 dev va table 100 proto 12
check "fibctl resync asks for a rescan" bash -c \
	"ip netns exec $NS $FIBCTL -s $SOCK resync | grep -q 'rescan of every table'"
check "the rescan finds the changed route and writes fibd's back" wait_until 10 bash -c \
	"ip -n $NS route show table 100 proto 12 | grep -q '^192.0.2.0/24 .*via 198.51.100.1 dev va'"
status=$(fibctl_in "$NS" "$SOCK" -j status)
diag "$(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["sync"], "lost:", s["netlink"]["routes_lost"])' "$status")"
check "counters: routes lost and written again, rescans, one pruned" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["netlink"]["routes_lost"] >= 3, s["netlink"]
assert s["sync"]["rescans_triggered"] >= 1 and s["sync"]["routes_pruned"] == 1, s["sync"]
assert s["sync"]["routes_changed"] == 1, s["sync"]
' "$status"
# Everything fibd wants is there, except the key the foreign route holds.
have=$(kernel_routes "$NS" 100)
check "every other route fibd wants is in the kernel" test "$(grep -v 192.0.2.128 <<<"$want")" = "$have"
if [ "$_tap_failed" -gt 0 ]; then
	ip -n "$NS" route show table 100 | sed "s/^/# kernel: /"
	ip -n "$NS" -6 route show table 100 | sed "s/^/# kernel: /"
	fibctl_in "$NS" "$SOCK" status 2>/dev/null | sed "s/^/# /"
	sed "s/^/# fibd: /" "$SOCK.log"
fi
stop_pid "$FIBD_PID" TERM
