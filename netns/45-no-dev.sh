#!/usr/bin/env bash
# Routes fed without a device, as most people write `ip route add PREFIX via GW`:
# the kernel resolves the device itself and shows it in every dump. fibd must
# compare what a route means, not how it was written (docs/design.md, invariant 10): a
# table in sync diffs clean, rescans of it write nothing, and routes someone
# deletes are put back within seconds, however large the table.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 14

N4=${NODEV_V4:-80000}
N6=${NODEV_V6:-20000}
N=$((N4 + N6))
ns_with_link NS n
scratch_dir W
SOCK=$W/fibd.sock
FIBD_CONF="nexthop_objects = ${NEXTHOP_OBJECTS:-auto}"
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }

routes_py gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 5 >"$W/dev.routes"
sed 's/ dev va$//' "$W/dev.routes" >"$W/nodev.routes"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name nodev --table 100 "$W/nodev.routes" 2>&1)
diag "$out"
check "feed --wait: $N routes without dev installed, none failed" \
	grep -q "installed $N, removed 0, failed 0, waiting 0, rejected 0" <<<"$out"
# The kernel resolved every one to va: the table is the feed with its device.
check "the kernel's table is the feed, each route through va" kernel_table_is "$NS" 100 "$W/dev.routes"
if [ "${NEXTHOP_OBJECTS:-auto}" = off ]; then
	ok "routes use nexthop objects # SKIP nexthop_objects = off"
else
	# One route per gateway asks the kernel which device it picks, written inline.
	inline=$( { ip -n "$NS" -4 route show table 100 proto 12; ip -n "$NS" -6 route show table 100 proto 12; } |
		grep -vc ' nhid ')
	objs=$(ip -n "$NS" nexthop show | grep -c ' dev va ')
	diag "routes without a nexthop object: $inline; objects on va: $objs"
	check "all but one route per gateway use a nexthop object on va" \
		test "$inline" -le 2 -a "$objs" -ge 2
fi

writes() { # netlink messages fibd sent so far (routes and nexthop objects)
	fibctl_in "$NS" "$SOCK" -j status | python3 -c '
import json, sys
print(json.load(sys.stdin)["netlink"]["messages"])'
}
idle() { # nothing queued or in flight
	fibctl_in "$NS" "$SOCK" -j status | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if all(t["pending"] == 0 for t in s["tables"]) else 1)'
}

fibctl_in "$NS" "$SOCK" diff --table 100 >"$W/diff0"
rc=$?
diag "$(tail -n 3 "$W/diff0")"
check "diff of the table in sync: exit 0, only its summary" \
	test "$rc" -eq 0 -a "$(wc -l <"$W/diff0")" -eq 1
wait_until 30 idle
before=$(writes)
# Two rescans; the diff after them waits for a third, so both are over by then.
fibctl_in "$NS" "$SOCK" resync --table 100 >/dev/null
fibctl_in "$NS" "$SOCK" resync --table 100 >/dev/null
fibctl_in "$NS" "$SOCK" diff --table 100 >"$W/diff1"
rc=$?
wait_until 30 idle
after=$(writes)
diag "netlink messages before the rescans: $before, after: $after"
check "two resyncs and a diff of the table in sync write nothing" test "$before" -eq "$after"
check "the diff after them is clean too" test "$rc" -eq 0 -a "$(wc -l <"$W/diff1")" -eq 1
changed=$(fibctl_in "$NS" "$SOCK" -j status | python3 -c 'import json,sys; print(json.load(sys.stdin)["sync"]["routes_changed"])')
check "no route was taken for changed by someone else (routes_changed $changed)" test "$changed" -eq 0

# Someone deletes 1,000 of them: fibd hears it and writes them back.
# (Named by prefix alone: with "via" the kernel matches no route that uses an object.)
head -n 1000 "$W/nodev.routes" | awk '{ print "route del " $1 " table 100 proto 12" }' >"$W/del.batch"
ip -n "$NS" -batch "$W/del.batch"
check "1,000 routes deleted with ip route are back within 15 s" \
	wait_until 15 kernel_table_is "$NS" 100 "$W/dev.routes"
after2=$(writes)
diag "netlink messages to put them back: $((after2 - after))"
check "putting them back took about one write each (at most 1,100)" test $((after2 - after)) -le 1100

# fibd killed and started again adopts the routes in the kernel's form (with
# their device); the client's feed of them without it writes nothing.
stop_pid "$FIBD_PID" KILL
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name nodev --table 100 "$W/nodev.routes" 2>&1)
diag "after the restart: $out"
check "after a restart, the same feed: nothing removed or failed, the table intact" \
	bash -c 'grep -q "removed 0, failed 0, waiting 0, rejected 0" <<<"$1"' _ "$out"
check "... the kernel's table still the feed" kernel_table_is "$NS" 100 "$W/dev.routes"
check "... with no write at all (netlink messages: $(writes))" test "$(writes)" -eq 0

# A link goes down: the kernel drops the nexthop objects on it and the routes
# using them, and says nothing. When it is back, fibd asks again which device
# each gateway is on and puts the routes back.
ip -n "$NS" link add wa type veth peer name wb
ip -n "$NS" link set wa up
ip -n "$NS" link set wb up
ip -n "$NS" addr add 203.0.113.2/24 dev wa
printf '10.40.0.0/16 via 203.0.113.1\n10.41.0.0/16 via 203.0.113.1\n10.42.0.0/16 via 203.0.113.1\n' >"$W/wa.routes"
sed 's/$/ dev wa/' "$W/wa.routes" >"$W/wa-dev.routes"
fibctl_in "$NS" "$SOCK" feed --wait --name wa --table 101 "$W/wa.routes" >/dev/null 2>&1
ip -n "$NS" link set wa down
check "link down: the kernel dropped the routes through it" \
	wait_until 5 bash -c "! ip -n $NS route show table 101 | grep -q '^10.4'"
ip -n "$NS" link set wa up
check "link up: fibd puts them back through it" \
	wait_until 15 kernel_table_is "$NS" 101 "$W/wa-dev.routes"
diag "$(ip -n "$NS" route show table 101)"
if [ "$_tap_failed" -gt 0 ]; then
	fibctl_in "$NS" "$SOCK" status 2>/dev/null | sed "s/^/# /"
	tail -n 40 "$SOCK.log" | sed "s/^/# fibd: /"
fi
stop_pid "$FIBD_PID" TERM
