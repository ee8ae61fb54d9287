#!/usr/bin/env bash
# The monitor socket overruns (forced with a tiny receive buffer and fibd
# stopped for a moment), so fibd misses
# notifications, among them deletions of its routes by someone else: the overrun
# makes it rescan, and the table converges on what fibd wants. The kernel says
# ENOBUFS once and drops the rest silently: fibd reads its drop counter.
# Churn in a table fibd has nothing in does not reach the socket at all.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 6

ns_with_link NS o
scratch_dir W
SOCK=$W/fibd.sock
routes_py gen 16000 4000 va 198.51.100.1 2001:db8:ff::1 21 >"$W/routes"
FIBD_CONF="monitor_buffer = 4096"
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/routes" 2>&1)
check "20000 routes installed" grep -q "installed 20000, removed 0, failed 0" <<<"$out"

# 20000 changes in tables 200 and 70000, fibd's in none: filtered off in the
# kernel (a table over 255 by its RTA_TABLE attribute).
python3 - >"$W/other" <<'PY'
for op in ("add", "del"):
    for i in range(5000):
        print(f"route {op} 10.201.{i // 250}.{i % 250}/32 via 198.51.100.1 table 200")
        print(f"route {op} 2001:db8:201::{i:x}/128 via 2001:db8:ff::1 table 70000")
PY
# Then one foreign route in table 100: once fibd has read its notification,
# it has read (or lost) every one before it.
events() { fibctl_in "$NS" "$SOCK" -j status | python3 -c 'import json, sys
n = json.load(sys.stdin)["netlink"]; print(n["monitor_events"] + n["monitor_drops"])'; }
events_past() { [ "$(events)" -gt "$1" ]; }
e0=$(events)
other_ok=no
ip -n "$NS" -batch "$W/other" && ip -n "$NS" route add 10.255.0.0/24 via 198.51.100.1 table 100 &&
	wait_until 30 events_past "$e0" && other_ok=yes
e1=$(events)
diag "monitor events and drops: $e0 before the churn in tables 200 and 70000, $e1 after"
check "20000 changes in tables fibd has nothing in (one over 255): neither read nor dropped" \
	eval '[ "$other_ok" = yes ] && [ $((e1 - e0)) -lt 100 ]'
ip -n "$NS" route del 10.255.0.0/24 table 100

# Someone deletes 2000 of them while fibd is stopped: far more notifications
# than the buffer holds. (fibd keeps up with ip -batch when it runs.)
head -n 2000 "$W/routes" | awk '{ print "route del " $1 " table 100 proto 12" }' >"$W/del"
kill -STOP "$FIBD_PID"
ip -n "$NS" -batch "$W/del"
kill -CONT "$FIBD_PID"
want=$(routes_py canon-text "$W/routes")
converged() { [ "$(kernel_routes "$NS" 100)" = "$want" ]; }
check "the table converges on the feed again" wait_until 30 converged
status=$(fibctl_in "$NS" "$SOCK" -j status)
diag "$(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); n=s["netlink"]; print("overruns", n["monitor_overruns"], "drops", n["monitor_drops"], "lost", n["routes_lost"], s["sync"])' "$status")"
check "the monitor overran" python3 -c '
import json, sys
assert json.loads(sys.argv[1])["netlink"]["monitor_overruns"] > 0
' "$status"
# The buffer holds a few notifications of the 2000: the rest were dropped.
check "the kernel's drop counter told fibd how many notifications it lost" python3 -c '
import json, sys
n = json.loads(sys.argv[1])["netlink"]
assert 1000 <= n["monitor_drops"] <= 2000, n
' "$status"
check "the overrun made fibd rescan and write the deleted routes again" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["sync"]["rescans_triggered"] >= 1 and s["netlink"]["routes_lost"] >= 2000, s
' "$status"
stop_pid "$FIBD_PID" TERM
