#!/usr/bin/env bash
# SIGTERM while fibd is scanning a table of 500,000 of its routes at start: it
# exits without finishing the scan, and every route stays in the kernel.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
[ -x "${BUILD_DIR:-build}/bench/nlwriter" ] || skip_all "bench/nlwriter not built"
tap_plan 4

ns_with_link NS s
scratch_dir W
SOCK=$W/fibd.sock
routes_py gen 400000 100000 va 198.51.100.1 2001:db8:ff::1 17 >"$W/routes"
# The routes a previous fibd left: written straight with fibd's protocol.
nsrun "$NS" "${BUILD_DIR:-build}/bench/nlwriter" --table 100 "$W/routes" >/dev/null
count() { echo $(( $(ip -n "$NS" -4 route show table 100 proto 12 | wc -l) + $(ip -n "$NS" -6 route show table 100 proto 12 | wc -l) )); }
check "500,000 routes of fibd's protocol in table 100" test "$(count)" -eq 500000

printf 'table 100 inet\ntable 100 inet6\n' >"$SOCK.state"
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
# Stop it as soon as its first scan has begun: the state file asks for it at
# start, and fibd logs "started" after the scan's dump request has gone out.
if ! wait_until 10 grep -q "started" "$SOCK.log"; then
	not_ok "fibd logs that it started"
	exit 1
fi
t0=$(date +%s%N)
stop_pid "$FIBD_PID" TERM
t1=$(date +%s%N)
done_scans=$(grep -c 'first scan done' "$SOCK.log")
diag "fibd stopped $(( (t1 - t0) / 1000000 )) ms after SIGTERM; first scans finished before: $done_scans of 2"
# Not a duration: that fibd did not finish its scans first shows it did not wait for them.
check "SIGTERM came while a scan ran, and fibd exited without finishing it" test "$done_scans" -lt 2
check "fibd exited cleanly" grep -q "stopped" "$SOCK.log"
check "every route is still in the kernel" test "$(count)" -eq 500000
