#!/usr/bin/env bash
# fibd killed with SIGKILL and started again. From its state file it scans the
# tables it managed before any client returns and adopts the routes it left, with
# their attributes (and the nexthop objects they use), so that a client feeding
# them again unchanged costs no write at all; routes no client claims within the
# startup grace time are withdrawn. Nothing fed is missing at any point, and
# routes of other protocols are untouched.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 10

ns_with_link NS r
scratch_dir W
SOCK=$W/fibd.sock
routes_py gen 16000 4000 va 198.51.100.1 2001:db8:ff::1 9 >"$W/routes"
echo "192.0.2.0/24 nexthop via 198.51.100.1 dev va weight 2 nexthop via 198.51.100.3 dev va weight 1" >>"$W/routes"
printf '10.77.%d.0/24 via 198.51.100.1 dev va\n' 1 2 3 4 5 >"$W/other"
ip -n "$NS" route add 203.0.113.0/24 via 198.51.100.1 table 100 proto static

FIBD_CONF="startup_grace = 6
nexthop_objects = ${NEXTHOP_OBJECTS:-auto}"
diag "nexthop_objects = ${NEXTHOP_OBJECTS:-auto}"
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/routes" 2>&1)
check "first fibd installs 20001 routes" grep -q "installed 20001, removed 0, failed 0" <<<"$out"
fibctl_in "$NS" "$SOCK" feed --wait --name other --table 300 "$W/other" >/dev/null
stop_pid "$FIBD_PID" KILL
check "after SIGKILL every route is still in the kernel" \
	bash -c "[ \$(ip -n $NS route show table 100 proto 12 | grep -c '^[0-9]') -eq 16001 ] &&
		 [ \$(ip -n $NS route show table 300 proto 12 | wc -l) -eq 5 ]"

# A sampler counts fibd's routes in table 100 while fibd restarts and the client
# feeds again; the count must never drop below what stays wanted.
head -n 19001 "$W/routes" >"$W/again"
sampler_start S "$NS" 100 "$W/sampled"

start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/again" 2>&1)
diag "$out"
check "the same feed, less 1000 routes: nothing fails" grep -q "failed 0, waiting 0, rejected 0" <<<"$out"
status=$(fibctl_in "$NS" "$SOCK" -j status)
check "the start-up scans adopted all 20006 routes left behind" python3 -c '
import json, sys
s = json.loads(sys.argv[1])["sync"]
assert s["routes_adopted"] == 20006, s
' "$status"
check "routes fed again unchanged cost no write at all" python3 -c '
import json, sys
n = json.loads(sys.argv[1])["netlink"]
assert n["adds"] == 0 and n["replaces"] == 0, n
' "$status"

# After the grace time the unclaimed ones go: 1000 in table 100, all of table 300.
check "after the grace time, routes nobody claimed are withdrawn" wait_until 30 python3 -c '
import json, subprocess, sys
s = json.loads(subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout)
assert s["sync"]["routes_pruned"] == 1005 and s["netlink"]["queued"] == 0 and s["netlink"]["inflight"] == 0, s["sync"]
' ip netns exec "$NS" "$FIBCTL" -s "$SOCK" -j status
read -r min samples _ gap _ <<<"$(sampler_stop "$S" "$W/sampled")"
diag "sampler: $samples samples (longest gap $gap ms), fewest routes seen $min"
check "no sample saw fewer than the 19001 routes still wanted" test "$min" -ge 19001
want=$(routes_py canon-text "$W/again")
have=$(kernel_routes "$NS" 100)
check "table 100 equals the feed again" test "$want" = "$have"
check "table 300, which nobody fed again, is empty of fibd's routes" \
	test "$(ip -n "$NS" route show table 300 proto 12 | wc -l)" -eq 0
check "the foreign route is untouched" bash -c \
	"ip -n $NS route show table 100 proto static | grep -q '^203.0.113.0/24 via 198.51.100.1 dev va'"
stop_pid "$FIBD_PID" TERM
