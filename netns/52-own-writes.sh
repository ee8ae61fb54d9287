#!/usr/bin/env bash
# Rescans while fibd itself writes the table: a second client feeds two sets
# of 4000 IPv6 routes in turn (each feed adds one set and deletes the other),
# among a first client's 100000, while fibd is asked to rescan the table every
# 0.1 s. The kernel's IPv6 walker, restarted by a change to the tree, skips by
# a count that deletes since made stale, and so leaves routes nobody touched
# out of a dump without saying so; fibd's own writes move it as others' do,
# and no notification tells fibd of them (fibd before this scenario took
# thousands of the first client's routes for lost here, and left some failed
# with EEXIST). Such a rescan's repair waits for more dumps and takes for lost
# only what none showed: none of the first client's routes may be taken for
# lost (unless fibd wrote during every dump a repair waited for, which it
# counts) or written again, nothing may be left failed, and the table ends as
# the first client fed it. (A dump may show the second client's routes while
# their writes are in flight: those count as adopted.)
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 6

ns_with_link NS o
scratch_dir W
SOCK=$W/fibd.sock
routes_py gen 20000 100000 va 198.51.100.1 2001:db8:ff::1 13 >"$W/routes"
for set in a b; do
	routes_py gen 0 4000 va 198.51.100.1 2001:db8:ff::1 "$([ "$set" = a ] && echo 52 || echo 53)" >"$W/second-$set"
done
: >"$W/none"
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name first --table 100 "$W/routes" 2>&1)
check "the first client's 120000 routes installed" grep -q "installed 120000, removed 0, failed 0" <<<"$out"
before=$(fibctl_in "$NS" "$SOCK" -j status)

# The second client: two sets of 4000 IPv6 routes each fed in turn, 2 x ROUNDS
# times (each feed adds the one set and deletes the other), then withdrawn;
# each feed waited for; what each said in $W/second.out.
rounds=6
(
	for _ in $(seq "$rounds"); do
		for set in a b; do
			fibctl_in "$NS" "$SOCK" feed --wait --timeout 60 --name second --metric 50 --table 100 \
				"$W/second-$set" || exit 1
		done
	done
	fibctl_in "$NS" "$SOCK" feed --wait --timeout 60 --name second --table 100 "$W/none"
) >"$W/second.out" 2>&1 &
second=$!
_pids+=("$second")
rescans=0
while kill -0 "$second" 2>/dev/null; do
	fibctl_in "$NS" "$SOCK" resync --table 100 >/dev/null && rescans=$((rescans + 1))
	sleep 0.1
done
second_ok=yes
wait "$second" || second_ok=no
diag "rescans asked for during the second client's writes: $rescans"
diag "second client: $(grep -v 'failed 0,' "$W/second.out" | head -n 3)"
check "the second client's $((2 * rounds + 1)) feeds completed" \
	eval '[ "$second_ok" = yes ] && [ "$(grep -c "routes sent for second" "$W/second.out")" = $((2 * rounds + 1)) ]'
# Let the last rescans, their repair walks and what those wrote end (a route
# that failed is retried: up to 30 s for it to be written).
settled() {
	fibctl_in "$NS" "$SOCK" -j tables | python3 -c '
import json, sys
assert all(t["state"] == "in sync" and t["pending"] == t["failed"] == t["waiting"] == 0
           for t in json.load(sys.stdin))'
}
wait_until 30 settled
sleep 1
after=$(fibctl_in "$NS" "$SOCK" -j status)
diag "$(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["sync"]); print(s["netlink"])' "$after")"
check "IPv6 rescans met fibd's own writes, and their repair waited for another dump" python3 -c '
import json, sys
b, a = (json.loads(x)["sync"] for x in sys.argv[1:3])
assert a["dumps_completed"] > b["dumps_completed"] + 4, (b, a)
assert a["repairs_deferred"] > b["repairs_deferred"], (b, a)
' "$before" "$after"
check "no route of fibd's taken for lost (unless a repair had to go ahead) or changed; none written but the second client's, none of those failed" python3 -c '
import json, sys
b, a = (json.loads(x) for x in sys.argv[1:3])
lost = a["netlink"]["routes_lost"] - b["netlink"]["routes_lost"]
assert lost == 0 or a["sync"]["repairs_forced"] > 0, (a["netlink"], a["sync"])
assert a["sync"]["routes_changed"] == 0, a["sync"]
if lost == 0:
    import re
    out = open(sys.argv[3]).read()
    writes = sum(int(i) + int(r) for i, r in re.findall(r"installed (\d+), removed (\d+)", out))
    assert a["netlink"]["messages"] - b["netlink"]["messages"] == writes, (writes, b["netlink"], a["netlink"])
    assert not re.search(r"failed [1-9]", out), out
' "$before" "$after" "$W/second.out"
check "no route left failed, none waiting" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert all(t["failed"] == 0 and t["waiting"] == 0 for t in s["tables"]), s["tables"]
' "$after"
want=$(routes_py canon-text "$W/routes")
have=$(kernel_routes "$NS" 100)
check "the kernel's table holds exactly the first client's routes" test "$want" = "$have"
stop_pid "$FIBD_PID" TERM
