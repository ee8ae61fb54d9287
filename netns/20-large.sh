#!/usr/bin/env bash
# A large feed: 400,000 IPv4 and 100,000 IPv6 routes from fibctl feed into fibd;
# the kernel's table is compared exactly with what was fed. Then half of them go
# in a second generation, and the table is compared again.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 6

N4=${LARGE_V4:-400000}
N6=${LARGE_V6:-100000}
ns_with_link NS l
scratch_dir W
SOCK=$W/fibd.sock
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }

routes_py gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 3 >"$W/all.routes"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name large --table 100 "$W/all.routes" 2>&1)
diag "$out"
check "feed --wait: $((N4 + N6)) routes installed, none failed" \
	grep -q "installed $((N4 + N6)), removed 0, failed 0, waiting 0, rejected 0" <<<"$out"
routes_py canon-text "$W/all.routes" >"$W/want"
kernel_routes "$NS" 100 >"$W/have"
check "the kernel's table equals the feed exactly" cmp -s "$W/want" "$W/have"

# Second generation: every other route.
awk 'NR % 2' "$W/all.routes" >"$W/half.routes"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name large --table 100 "$W/half.routes" 2>&1)
diag "$out"
check "a generation with half of them removes the other half" \
	grep -q "removed $(( (N4 + N6) / 2 ))" <<<"$out"
routes_py canon-text "$W/half.routes" >"$W/want"
kernel_routes "$NS" 100 >"$W/have"
check "the kernel's table equals the second generation exactly" cmp -s "$W/want" "$W/have"
status=$(fibctl_in "$NS" "$SOCK" status)
diag "$(grep -E 'loop:|slab|netlink|messages' <<<"$status")"
check "status: desired = installed, nothing pending, failed or waiting" grep -Eq "^  100 +inet +$(( N4 / 2 )) +$(( N4 / 2 )) +0 +0 +0$" <<<"$status"
# The kernel notifies every write; fibd filters its own echoes off the monitor
# socket, so a bulk load alone never overruns it.
check "fibd's own writes did not overrun the monitor" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["netlink"]["monitor_overruns"] == 0, s["netlink"]
' "$(fibctl_in "$NS" "$SOCK" -j status)"
stop_pid "$FIBD_PID" TERM
