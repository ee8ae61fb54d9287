#!/usr/bin/env bash
# fibd killed with SIGKILL and started again: its first scan adopts the routes
# it left, so the same feed replaces them instead of failing with EEXIST, and
# nothing is missing at the end. Routes of other protocols are untouched.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 7

ns_with_link NS r
SOCK=$(mktemp -u /tmp/fibd-test.XXXXXX).sock
W=$(mktemp -d)
python3 "$(dirname "$0")/routes.py" gen 16000 4000 va 198.51.100.1 2001:db8:ff::1 9 >"$W/routes"
echo "192.0.2.0/24 nexthop via 198.51.100.1 dev va weight 2 nexthop via 198.51.100.3 dev va weight 1" >>"$W/routes"
ip -n "$NS" route add 203.0.113.0/24 via 198.51.100.1 table 100 proto static

start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/routes" 2>&1)
check "first fibd installs 20001 routes" grep -q "installed 20001, removed 0, failed 0" <<<"$out"
stop_pid "$FIBD_PID" KILL
check "after SIGKILL every route is still in the kernel" \
	bash -c "[ \$(ip -n $NS route show table 100 proto 12 | grep -c '^[0-9]') -eq 16001 ]"

start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/routes" 2>&1)
diag "$out"
check "the same feed again: nothing fails" grep -q "failed 0, waiting 0, rejected 0" <<<"$out"
status=$(fibctl_in "$NS" "$SOCK" -j status)
check "the first scans adopted the 20001 routes left behind" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["sync"]["routes_adopted"] == 20001, s["sync"]
assert s["sync"]["dumps_completed"] >= 2, s["sync"]
' "$status"
check "adopted routes were replaced, not added" python3 -c '
import json, sys
n = json.loads(sys.argv[1])["netlink"]
assert n["adds"] == 0 and n["replaces"] == 20001, n
' "$status"
want=$(python3 "$(dirname "$0")/routes.py" canon-text "$W/routes")
have=$(kernel_routes "$NS" 100)
check "the kernel's table equals the feed" test "$want" = "$have"
check "the foreign route is untouched" bash -c \
	"ip -n $NS route show table 100 proto static | grep -q '^203.0.113.0/24 via 198.51.100.1 dev va'"
stop_pid "$FIBD_PID" TERM
rm -rf "$W" "$SOCK" "$SOCK.log"
