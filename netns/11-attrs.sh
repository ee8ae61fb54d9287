#!/usr/bin/env bash
# Route attributes where the kernel keeps them: a realm on IPv4 routes of one
# nexthop and of several (the kernel keeps a realm per nexthop, a nexthop
# object has none, and a route-level realm on an ECMP route it refuses), on an
# IPv6 route (the kernel drops it), beside an MTU, a preferred source and a
# scope. fibd installs them as written, and a fresh dump finds every route as
# fibd wants it: fibctl diff (a rescan) shows no difference, twice, and neither
# rescan writes anything again. Run with nexthop objects where the kernel takes
# them and with none (NEXTHOP_OBJECTS=off).
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 7

ns_with_link NS at
scratch_dir W
SOCK=$W/fibd.sock
FIBD_CONF="nexthop_objects = ${NEXTHOP_OBJECTS:-auto}"
diag "nexthop_objects = ${NEXTHOP_OBJECTS:-auto}"
cat >"$W/routes" <<'R'
192.0.2.0/24 via 198.51.100.1 dev va realm 7
192.0.2.128/25 via 198.51.100.1 dev va realm 8 mtu 1400 src 198.51.100.2
198.51.100.128/25 realm 5 nexthop via 198.51.100.1 dev va weight 1 nexthop via 198.51.100.3 dev va weight 3
203.0.113.0/24 dev va scope host realm 9
10.1.0.0/16 via 198.51.100.1 dev va mtu 1280
2001:db8:1::/48 via 2001:db8:ff::1 dev va realm 6
2001:db8:2::/48 nexthop via 2001:db8:ff::1 dev va realm 4 nexthop via 2001:db8:ff::3 dev va
R
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/routes" 2>&1)
diag "$out"
check "the seven routes installed" grep -q "installed 7, removed 0, failed 0" <<<"$out"
check "kernel table 100 holds them (prefixes, types, nexthops, metrics)" \
	kernel_table_is "$NS" 100 "$W/routes"
shown() { ip -n "$NS" "$@" table 100 | tr -s ' \t\n' ' '; }
diag "$(ip -n "$NS" route show table 100; ip -n "$NS" -6 route show table 100)"
check "IPv4 realms reach the kernel: a route's own, and each nexthop's of ECMP" bash -c '
	grep -Eq "realm 7( |$)" <<<"$1" && grep -Eq "realm 8 .*mtu 1400|mtu 1400 .*realm 8" <<<"$2" &&
	[ "$(grep -o "realm 5" <<<"$3" | wc -l)" -eq 2 ] &&
	grep -q "scope host" <<<"$4" && grep -Eq "realm 9( |$)" <<<"$4"' _ \
	"$(shown route show 192.0.2.0/24)" "$(shown route show 192.0.2.128/25)" \
	"$(shown route show 198.51.100.128/25)" "$(shown route show 203.0.113.0/24)"
check "the MTU and the source beside them" bash -c '
	grep -q "src 198.51.100.2" <<<"$1" && grep -q "mtu 1280" <<<"$2"' _ \
	"$(shown route show 192.0.2.128/25)" "$(shown route show 10.1.0.0/16)"

writes() { # fibd's writes, and routes a rescan took for changed
	fibd_counters "$NS" "$SOCK" netlink.adds netlink.replaces netlink.deletes sync.routes_changed
}
# diff N: fibctl diff of table 100 into $W/diffN (a fresh dump of each family,
# answered once its rescan is over, repair walk included); its exit in rc
diff_table() {
	fibctl_in "$NS" "$SOCK" diff --table 100 >"$W/diff$1"
	rc=$?
	diag "$(cat "$W/diff$1")"
}
before=$(writes)
diff_table 1
check "fibctl diff from a fresh dump: no difference (exit $rc)" \
	bash -c '[ "$1" -eq 0 ] && grep -q "^diff: 0 differences" "$2"' _ "$rc" "$W/diff1"
diff_table 2
check "and again, after the first one's rescan (exit $rc)" \
	bash -c '[ "$1" -eq 0 ] && grep -q "^diff: 0 differences" "$2"' _ "$rc" "$W/diff2"
after=$(writes)
diag "fibd's adds, replaces, deletes, routes changed: before the diffs $before, after them $after"
check "neither rescan wrote a route again" test "$before" = "$after"
if [ "$_tap_failed" -gt 0 ]; then
	fibctl_in "$NS" "$SOCK" status 2>/dev/null | sed "s/^/# /"
	sed "s/^/# fibd: /" "$SOCK.log"
fi
stop_pid "$FIBD_PID" TERM
