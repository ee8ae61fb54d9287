#!/usr/bin/env bash
# Rescans under churn: another process adds and deletes thousands of foreign
# routes in the table while fibd rescans it again and again. IPv4 dumps are
# used: the notifications that came during each are kept and replayed on its
# snapshot. The kernel does not flag every inconsistent IPv6 dump (under churn
# they miss and double routes without NLM_F_DUMP_INTR), so fibd discards the
# IPv6 dumps during which the table changed, a few times in a row, then uses
# one for what it shows only. Either way none of its routes may be taken for
# lost, adopted, deleted or written again; the counters show the replays and
# the discards. And the first scan of an IPv6 table that another process keeps
# changing does not wait for the churn to end.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 10

ns_with_link NS c
scratch_dir W
SOCK=$W/fibd.sock
routes_py gen 20000 50000 va 198.51.100.1 2001:db8:ff::1 13 >"$W/routes"
python3 - >"$W/churn" <<'PY'
for op in ("add", "del"):
    for i in range(2000):
        print(f"route {op} 10.200.{i // 250}.{i % 250}/32 via 198.51.100.1 table 100 proto static")
        print(f"route {op} 2001:db8:77::{i:x}/128 via 2001:db8:ff::1 table 100 proto static")
PY
# Table 102: 30000 foreign IPv6 routes (so that a dump of it takes a while),
# and churn of its own.
python3 - >"$W/fill102" <<'PY'
for i in range(30000):
    print(f"route add 2001:db8:{0x100 + i // 60000:x}:{i % 60000:x}::/64 via 2001:db8:ff::1 table 102 proto static")
PY
for half in a b; do
	python3 - "$half" >"$W/churn102$half" <<'PY'
import sys
h = "ab".index(sys.argv[1])
for op in ("add", "del"):
    for i in range(2000):
        print(f"route {op} 2001:db8:88:{h}::{i:x}/128 via 2001:db8:ff::1 table 102 proto static")
PY
done
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
ip -n "$NS" -batch "$W/fill102"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/routes" 2>&1)
check "70000 routes installed" grep -q "installed 70000, removed 0, failed 0" <<<"$out"
before=$(fibctl_in "$NS" "$SOCK" -j status)

# Churn for a bounded time while fibd is asked to rescan every 0.2 s: table
# 100's churner runs its batch 25 times; two more keep table 102 from being
# quiet for long while it runs. A churner whose batch fails stops (it would
# otherwise spin on the error and starve the rest) and says so in
# $W/NAME.end, as each says how many batches it ran.
churner() { # NAME BATCH [ROUNDS]: ROUNDS times, or while table 100's churner runs
	local n=0
	while if [ -n "${3:-}" ]; then [ "$n" -lt "$3" ]; else kill -0 "$churn" 2>/dev/null; fi; do
		ip -n "$NS" -batch "$2" || { echo "$1: a batch failed after $n" >"$W/$1.end"; return 1; }
		n=$((n + 1))
	done
	echo "$1: $n batches" >"$W/$1.end"
}
churner t100 "$W/churn" 25 &
churn=$!
churner t102a "$W/churn102a" &
churn102=$!
churner t102b "$W/churn102b" &
churn102b=$!
_pids+=("$churn" "$churn102" "$churn102b")
# A feed into table 102 while it churns: its first scan cannot wait for quiet.
python3 -c '
for i in range(1000):
    print(f"2001:db8:99:{i:x}::/64 via 2001:db8:ff::1 dev va")' >"$W/v6feed"
fibctl_in "$NS" "$SOCK" feed --wait --name six --table 102 "$W/v6feed" >"$W/six.out" 2>&1 &
six=$!
_pids+=("$six")
# Meanwhile a feed into another table: its first scan must not wait behind
# table 100's rescans, which the churn keeps discarding.
routes_py gen 3000 1000 va 198.51.100.1 2001:db8:ff::1 14 >"$W/other"
fibctl_in "$NS" "$SOCK" feed --wait --name other --table 101 "$W/other" >"$W/other.out" 2>&1 &
other=$!
_pids+=("$other")
while kill -0 "$churn" 2>/dev/null; do
	fibctl_in "$NS" "$SOCK" resync --table 100 >/dev/null
	sleep 0.2
done
other_in_time=no
kill -0 "$other" 2>/dev/null || other_in_time=yes
six_in_time=no
kill -0 "$six" 2>/dev/null || six_in_time=yes
wait "$other" "$six"
churners_ok=yes
for p in "$churn" "$churn102" "$churn102b"; do
	wait "$p" || churners_ok=no
done
diag "churners: $(cat "$W"/t1*.end 2>/dev/null | paste -sd ';')"
check "the three churners ran to the end without an error, table 102's a batch each at least" \
	eval '[ "$churners_ok" = yes ] && grep -q " [1-9][0-9]* batches" "$W/t102a.end" &&
		grep -q " [1-9][0-9]* batches" "$W/t102b.end"'
diag "table 102: $(cat "$W/six.out")"
check "a feed into an IPv6 table that another process kept changing completed during the churn" \
	eval '[ "$six_in_time" = yes ] && grep -q "installed 1000, removed 0, failed 0" "$W/six.out"'
diag "table 101: $(cat "$W/other.out")"
check "a feed into another table completed during the churn" \
	eval '[ "$other_in_time" = yes ] && grep -q "installed 4000, removed 0, failed 0" "$W/other.out"'
after=$(fibctl_in "$NS" "$SOCK" -j status)
diag "$(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["sync"]); print(s["netlink"]); print(s["loop"])' "$after")"
check "IPv6 dumps during which the table changed were discarded" python3 -c '
import json, sys
b, a = (json.loads(x)["sync"] for x in sys.argv[1:3])
assert a["dumps_interrupted"] > b["dumps_interrupted"], (b, a)
' "$before" "$after"
check "after a few IPv6 dumps discarded in a row, one was used for what it shows" python3 -c '
import json, sys
b, a = (json.loads(x)["sync"] for x in sys.argv[1:3])
assert a["dumps_unsure"] > b["dumps_unsure"], (b, a)
' "$before" "$after"
check "IPv4 dumps under churn were used, the notifications during them replayed" python3 -c '
import json, sys
b, a = (json.loads(x)["sync"] for x in sys.argv[1:3])
assert a["notifications_replayed"] > b["notifications_replayed"], (b, a)
assert a["dumps_completed"] > b["dumps_completed"], (b, a)
' "$before" "$after"
check "no route of fibd's taken for lost, adopted or changed" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["netlink"]["routes_lost"] == 0, s["netlink"]
assert s["sync"]["routes_adopted"] == 0 and s["sync"]["routes_changed"] == 0, s["sync"]
' "$after"
check "nothing deleted, nothing written again" python3 -c '
import json, sys
b, a = (json.loads(x)["netlink"] for x in sys.argv[1:3])
assert a["deletes"] == 0 and a["messages"] == b["messages"] + 5000, (b["messages"], a["messages"], a["deletes"])
' "$before" "$after"
want=$(routes_py canon-text "$W/routes")
have=$(kernel_routes "$NS" 100)
check "the kernel's table equals the feed after the churn" test "$want" = "$have"
stop_pid "$FIBD_PID" TERM
