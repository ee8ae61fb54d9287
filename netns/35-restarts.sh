#!/usr/bin/env bash
# Restart independence at scale, with a sampler counting the table every 50 ms
# for the whole of each step (netns/sampler.py):
#   1. 200k routes; fibd killed with SIGKILL and started again; the client feeds
#      again: no sample short of a route, the kernel equals the feed, no write;
#   2. the same with a feed changed while fibd was down (10k withdrawn, 10k
#      added, 10k with another gateway): the kernel ends equal to the new feed
#      and the withdrawn ones are pruned;
#   3. a client's stale time: it returns within it (nothing missing), then goes
#      for good (its routes pruned once it is over; another client's untouched);
#   4. fibd killed and started five times during a large feed: the table never
#      shrinks, and it converges on the feed;
#   5. flush_on_exit: SIGTERM withdraws every route of fibd's.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 16

N4=${RESTARTS_V4:-160000}
N6=${RESTARTS_V6:-40000}
N=$((N4 + N6))
ns_with_link A rs
scratch_dir W
SOCK=$W/fibd.sock
FIBD_CONF="startup_grace = 15" # past the re-feed (7.4 s after a restart under ASan once)
routes_py gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 41 >"$W/all"
feed() { fibctl_in "$A" "$SOCK" feed --wait "$@" 2>&1; }
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(now)"; }

start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts"; exit 1; }
out=$(feed --name a --table 100 "$W/all")
check "$N routes installed" grep -q "installed $N, removed 0, failed 0" <<<"$out"

# 1. SIGKILL, start, the same feed again.
sampler_start S "$A" 100 "$W/s1"
stop_pid "$FIBD_PID" KILL
t0=$(now)
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
out=$(feed --name a --table 100 "$W/all")
took=$(since "$t0")
read -r min samples drops gap _ <<<"$(sampler_stop "$S" "$W/s1")"
status=$(fibctl_in "$A" "$SOCK" -j status)
writes=$(python3 -c 'import json,sys; n=json.loads(sys.argv[1])["netlink"]; print(n["adds"] + n["replaces"] + n["deletes"])' "$status")
diag "kill -9 and restart: in sync ${took} s after the restart; $writes netlink writes; $samples samples (longest gap $gap ms), fewest routes $min"
check "kill -9: no sample short of a route ($samples samples)" test "$min" -ge "$N"
check "kill -9: the kernel equals the feed" kernel_table_is "$A" 100 "$W/all"
check "kill -9: the unchanged feed cost no netlink write" test "$writes" -eq 0

# 2. A feed changed while fibd is down.
{
	tail -n +10001 "$W/all" | head -n 10000 | sed 's/via 198.51.100.1 /via 198.51.100.3 /'
	tail -n +20001 "$W/all"
	routes_py gen 10000 0 va 198.51.100.1 2001:db8:ff::1 42 | grep -v -F -x -f "$W/all"
} >"$W/changed"
sampler_start S "$A" 100 "$W/s2"
stop_pid "$FIBD_PID" KILL
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
out=$(feed --name a --table 100 "$W/changed")
diag "$out"
check "changed feed: the withdrawn routes are pruned after the grace time; the kernel equals it" \
	wait_until 60 kernel_table_is "$A" 100 "$W/changed"
read -r min samples drops gap _ <<<"$(sampler_stop "$S" "$W/s2")"
diag "changed feed: $samples samples (longest gap $gap ms), fewest routes $min"
check "changed feed: no sample short of a route kept or changed ($samples samples)" \
	test "$min" -ge $((N - 10000))
status=$(fibctl_in "$A" "$SOCK" -j status)
check "changed feed: 10000 unclaimed routes pruned, nothing stale remains" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["sync"]["routes_pruned"] == 10000, s["sync"]
assert all(c["stale_routes"] == 0 for c in s["clients"]), s["clients"]
' "$status"

# 3. Stale time: b returns within it, then leaves for good; c stays.
routes_py gen 4000 1000 va 198.51.100.1 2001:db8:ff::1 43 >"$W/b"
routes_py gen 800 200 va 198.51.100.1 2001:db8:ff::1 44 | grep -v -F -x -f "$W/b" >"$W/c"
feed --name c --table 101 "$W/c" >/dev/null
feed --name b --table 101 --stale-time 60 "$W/b" >/dev/null
cat "$W/b" "$W/c" >"$W/bc"
stale=$(fibctl_in "$A" "$SOCK" -j status)
check "status: b is stale with its 5000 routes and the time left" python3 -c '
import json, sys
b = [c for c in json.loads(sys.argv[1])["clients"] if c["name"] == "b"][0]
assert not b["connected"] and b["stale_routes"] == 5000 and 0 < b["stale_left_s"] <= 60, b
' "$stale"
sampler_start S "$A" 101 "$W/s3"
feed --name b --table 101 --stale-time 2 "$W/b" >/dev/null
read -r min samples _ gap _ <<<"$(sampler_stop "$S" "$W/s3")"
check "b back within its stale time: nothing missing ($samples samples)" test "$min" -ge "$(wc -l <"$W/bc")"
check "b gone for good: its routes pruned after 2 s, c's untouched" wait_until 20 kernel_table_is "$A" 101 "$W/c"

# 4. Five restarts during a large feed into table 102.
routes_py gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 45 >"$W/big"
# The sampler counts every IPv6 route of the namespace. Routes of a and c that
# fibd adopts again after a restart and no client claims are pruned once
# startup_grace is over: on a loaded machine within this step, counted as a
# drop of table 102. a and c withdraw theirs first (an empty full feed), so
# that only 102 moves.
feed --name a --table 100 /dev/null >/dev/null
feed --name c --table 101 /dev/null >/dev/null
emptied() { kernel_table_is "$A" 100 /dev/null && kernel_table_is "$A" 101 /dev/null; }
check "a and c withdrew every route of theirs (empty full feeds)" wait_until 30 emptied
FIBD_CONF="startup_grace = 60"
stop_pid "$FIBD_PID" TERM
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts"; exit 1; }
sampler_start S "$A" 102 "$W/s4"
prefixes102() { # IPv4 prefixes in table 102, from the kernel's own counter
	local n
	n=$(ip netns exec "$A" awk '/^Id 102:/ { f = 1 } f && /Prefixes:/ { print $2; exit }' /proc/net/fib_triestat)
	echo "${n:-0}"
}
grown() { [ "$(prefixes102)" -gt "$1" ]; }
for i in 1 2 3 4 5; do
	fibctl_in "$A" "$SOCK" feed --name d --table 102 "$W/big" >/dev/null 2>&1 &
	feeder=$!
	_pids+=("$feeder")
	# Kill fibd once this round's feed has installed something more.
	before=$(prefixes102)
	wait_until 30 grown "$before"
	stop_pid "$FIBD_PID" KILL
	wait "$feeder" 2>/dev/null
	start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts (round $i)"; exit 1; }
done
out=$(feed --name d --table 102 "$W/big")
diag "after five restarts: $out"
check "five restarts during a large feed: it converges on the feed" wait_until 60 kernel_table_is "$A" 102 "$W/big"
read -r min samples drops gap max <<<"$(sampler_stop "$S" "$W/s4")"
diag "five restarts: $samples samples (longest gap $gap ms), $drops drops, most routes $max"
[ "$drops" -eq 0 ] || diag "five restarts: sampler $(cat "$W/s4"); fibd's log: $(tail -n 20 "$SOCK.log")"
check "five restarts: the table never shrank ($samples samples)" test "$drops" -eq 0
check "five restarts: nothing failed" grep -q "failed 0, waiting 0, rejected 0" <<<"$out"

# 5. flush_on_exit: SIGTERM withdraws every route of fibd's, then fibd stops.
echo "flush_on_exit = yes" >>"$SOCK.conf"
kill -HUP "$FIBD_PID"
wait_until 10 grep -q "configuration reloaded" "$SOCK.log"
kill -TERM "$FIBD_PID"
wait_until 120 bash -c "! kill -0 $FIBD_PID"
stop_pid "$FIBD_PID" KILL
left=$(( $(ip -n "$A" route show table all proto 12 | wc -l) + $(ip -n "$A" -6 route show table all proto 12 | wc -l) ))
check "flush_on_exit: no route of fibd's is left in any table" test "$left" -eq 0
check "flush_on_exit: fibd logged the flush" grep -q "flush_on_exit: every route of fibd's withdrawn" "$SOCK.log"
