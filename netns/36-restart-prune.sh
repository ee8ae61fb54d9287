#!/usr/bin/env bash
# fibd killed while its clients' desired state changes, then started again: the
# routes no client wants any more go as soon as every client that fed the table
# before the restart has ended its feed again (docs/design.md, invariant 8), as BIRD's
# kernel protocol prunes right after its first feed; the startup grace time
# (120 s, the default, here) is only for clients that never come back.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 7

ns_with_link NS p
scratch_dir W
SOCK=$W/fibd.sock
routes_py gen 16000 4000 va 198.51.100.1 2001:db8:ff::1 11 >"$W/all"
head -n 10000 "$W/all" >"$W/a"
tail -n 10000 "$W/all" >"$W/b"
# a's desired state while fibd is down: 2,500 of its routes gone
awk 'NR % 4' "$W/a" >"$W/a2"
cat "$W/a2" "$W/b" >"$W/want"

start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
fibctl_in "$NS" "$SOCK" feed --wait --name a --table 100 "$W/a" >/dev/null
fibctl_in "$NS" "$SOCK" feed --wait --name b --table 100 "$W/b" >/dev/null
check "two clients fed 20,000 routes into table 100" kernel_table_is "$NS" 100 "$W/all"
check "the state file names both clients of table 100" \
	bash -c "grep -q '^fed 100 inet a$' $SOCK.state && grep -q '^fed 100 inet6 b$' $SOCK.state"
stop_pid "$FIBD_PID" KILL

start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name a --table 100 "$W/a2" 2>&1)
diag "a again: $out"
# b has not come back: what a no longer sends may still be b's (fibd cannot
# tell), so nothing is pruned yet.
check "with b still away, nothing is pruned" kernel_table_is "$NS" 100 "$W/all"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name b --table 100 "$W/b" 2>&1)
diag "b again: $out"
check "once b's feed ends too, the 2,500 routes nobody sent go within 10 s" \
	wait_until 10 kernel_table_is "$NS" 100 "$W/want"
pruned=$(fibctl_in "$NS" "$SOCK" -j status | python3 -c 'import json,sys; print(json.load(sys.stdin)["sync"]["routes_pruned"])')
check "sync counts 2,500 routes pruned ($pruned)" test "$pruned" -eq 2500
grep -q "every client that fed it before fibd started has fed it again" "$SOCK.log"
check "the log says why table 100 was pruned early" test $? -eq 0

# A client the state file names that never comes back: the grace time applies.
stop_pid "$FIBD_PID" KILL
FIBD_CONF="startup_grace = 3"
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts a third time"; exit 1; }
fibctl_in "$NS" "$SOCK" feed --wait --name a --table 100 "$W/a2" >/dev/null
check "b never returns: its routes go after the grace time (3 s)" \
	wait_until 15 kernel_table_is "$NS" 100 "$W/a2"
if [ "$_tap_failed" -gt 0 ]; then
	sed "s/^/# state: /" "$SOCK.state"
	grep -v "a route of fibd's" "$SOCK.log" | tail -n 40 | sed "s/^/# fibd: /"
fi
stop_pid "$FIBD_PID" TERM
