#!/usr/bin/env bash
# Operations: systemd notifications (READY once the known tables are scanned,
# STATUS, WATCHDOG from the loop) to a listener standing in for systemd; least
# privilege and reloads: fibd started as root with --user nobody holds
# exactly CAP_NET_ADMIN (permitted, effective and bounding sets) as nobody, and
# still installs routes; a world-writable socket directory is refused; SIGHUP
# applies a changed configuration and refuses a broken one, keeping the running
# one, the clients and the routes.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
id nobody >/dev/null 2>&1 || skip_all "no user nobody"
tap_plan 13

ns_with_link A pv
scratch_dir W
SOCK=$W/fibd.sock
FIBD_CONF="state_file = none"
routes_py gen 800 200 va 198.51.100.1 2001:db8:ff::1 71 >"$W/routes"

# notify_listener PATH OUT DOGS: a listener in systemd's place on PATH, writing
# every datagram it gets to OUT until READY=1, the STATUS after it and DOGS
# WATCHDOG=1 have come (or 30 s have gone: no fixed time for a busy machine to
# miss), and each WATCHDOG's arrival (monotonic seconds) to OUT.dogs; its PID in
# $listener.
notify_listener() {
	python3 - "$1" "$3" >"$2" 2>"$2.dogs" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.1)
end = time.monotonic() + 30
ready = status = False
dogs = 0
while time.monotonic() < end and not (status and dogs >= int(sys.argv[2])):
    try:
        m = s.recv(4096).decode()
    except socket.timeout:
        continue
    print(m, flush=True)
    status = status or (ready and m.startswith("STATUS="))
    ready = ready or m == "READY=1"
    if m == "WATCHDOG=1":
        dogs += 1
        print(time.monotonic(), file=sys.stderr, flush=True)
PY
	listener=$!
	_pids+=("$listener")
	wait_until 5 test -S "$1"
}

notify_listener "$W/notify" "$W/notify.log" 10
chmod 0777 "$W/notify" # nobody sends to it
export NOTIFY_SOCKET=$W/notify WATCHDOG_USEC=200000
start_fibd FIBD_PID "$A" "$SOCK" --user nobody || { not_ok "fibd starts with --user nobody"; exit 1; }
unset NOTIFY_SOCKET WATCHDOG_USEC
wait "$listener"
diag "systemd heard: $(sort "$W/notify.log" | uniq -c | tr '\n' ';')"
check "notify: READY=1 once the known tables are scanned" grep -qx "READY=1" "$W/notify.log"
check "notify: STATUS with tables, routes and clients" grep -Eq "^STATUS=[0-9]+ tables.*routes installed, [0-9]+ clients$" "$W/notify.log"
# Every 100 ms for WATCHDOG_USEC=200000: the median gap is inside systemd's
# 200 ms (a median, so that a busy machine's late one does not count).
check "notify: WATCHDOG=1 from the loop, 10 heard, their median gap under 200 ms" python3 -c '
import statistics, sys
t = [float(l) for l in open(sys.argv[1])]
gaps = [b - a for a, b in zip(t, t[1:])]
assert len(t) >= 10 and statistics.median(gaps) < 0.2, gaps
' "$W/notify.log.dogs"
status=/proc/$FIBD_PID/status
diag "$(grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)):' "$status")"
check "it runs as nobody (real, effective, saved and filesystem uid)" \
	grep -Eq "^Uid:\s+$(id -u nobody)\s+$(id -u nobody)\s+$(id -u nobody)\s+$(id -u nobody)$" "$status"
check "it holds exactly CAP_NET_ADMIN: permitted, effective and bounding" bash -c \
	"grep -q '^CapPrm:\s*0000000000001000$' $status && grep -q '^CapEff:\s*0000000000001000$' $status &&
	 grep -q '^CapBnd:\s*0000000000001000$' $status && grep -q '^CapInh:\s*0000000000000000$' $status"
check "it says so in the log" grep -q "running as nobody (uid $(id -u nobody)), keeping only CAP_NET_ADMIN" "$SOCK.log"
out=$(fibctl_in "$A" "$SOCK" feed --wait --table 100 "$W/routes" 2>&1)
check "as nobody it still installs routes" grep -q "installed 1000, removed 0, failed 0" <<<"$out"
fibctl_in "$A" "$SOCK" metrics >"$W/metrics"
check "fibctl metrics: valid exposition; the table's gauges and the latency histogram count the routes" python3 -c '
import re, sys
samples = {}
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("#"):
        assert re.match(r"^# (HELP|TYPE) [a-z0-9_]+ .+$", line), line
        continue
    m = re.match(r"^([a-z0-9_]+)(\{[^}]*\})? (\S+)$", line)
    assert m, line
    samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
assert samples["fibd_routes_installed{table=\"100\",family=\"inet\"}"] == 800, samples
assert samples["fibd_routes_installed{table=\"100\",family=\"inet6\"}"] == 200
assert samples["fibd_route_programming_seconds_count"] >= 1000
assert samples["fibd_route_programming_seconds_bucket{le=\"+Inf\"}"] == samples["fibd_route_programming_seconds_count"]
assert samples["fibd_client_routes{client=\"fibctl\"}"] == 1000
' "$W/metrics"

# SIGHUP: a changed configuration is applied; a broken one is refused.
printf 'log_level = debug\nrescan_interval = 600\nmonitor_buffer = 8388608\nstartup_grace = 30\n' >>"$SOCK.conf"
kill -HUP "$FIBD_PID"
check "SIGHUP with a changed configuration: reloaded, all of it applied" bash -c \
	"for _ in \$(seq 100); do grep -q 'configuration reloaded' $SOCK.log && break; sleep 0.1; done
	 grep -q 'configuration reloaded' $SOCK.log && ! grep -q 'only with a restart' $SOCK.log"
sed -i "s/^log_level = debug$/log_level = loud/" "$SOCK.conf"
kill -HUP "$FIBD_PID"
check "SIGHUP with a broken configuration: refused with the line and the reason" wait_until 10 \
	grep -q "reload refused, the running configuration stays: .*line 3: log_level must be debug, info or warning" "$SOCK.log"
check "after the refused reload fibd answers and every route is in place" bash -c \
	"ip netns exec $A $FIBCTL -s $SOCK status >/dev/null &&
	 [ \$(( \$(ip -n $A route show table 100 proto 12 | wc -l) + \$(ip -n $A -6 route show table 100 proto 12 | wc -l) )) -eq 1000 ]"
stop_pid "$FIBD_PID" TERM

# READY waits for the first scans of the tables fibd knew: restarted with a
# state file naming table 100 (where the 1000 routes stay), it first reports
# the scans under way, then READY.
printf 'table 100 inet\ntable 100 inet6\n' >"$W/tables"
echo "state_file = $W/tables" >"$W/ready.conf"
notify_listener "$W/notify2" "$W/notify2.log" 0
NOTIFY_SOCKET=$W/notify2 start_bg FIBD_PID "${_ours[@]}" ip netns exec "$A" "$FIBD" -f -s "$SOCK" -c "$W/ready.conf" 2>>"$SOCK.log"
watch_exit "$FIBD_PID" fail "$SOCK.log"
wait "$listener"
stop_pid "$FIBD_PID" TERM
diag "systemd heard: $(grep -v WATCHDOG "$W/notify2.log" | tr '\n' ';')"
check "notify: with known tables, STATUS says the first scans are under way, then READY" python3 -c '
import sys
lines = [l.strip() for l in open(sys.argv[1]) if l.strip()]
first = next(i for i, l in enumerate(lines) if "first scans under way" in l)
ready = lines.index("READY=1")
assert first < ready, lines
' "$W/notify2.log"

# A socket directory anyone may write to is refused.
mkdir -m 0777 "$W/open"
chmod 0777 "$W/open"
echo "state_file = none" >"$W/open.conf"
timeout --foreground 10 "${_ours[@]}" ip netns exec "$A" "$FIBD" -f -s "$W/open/fibd.sock" -c "$W/open.conf" 2>"$W/open.log"
check "a world-writable socket directory is refused" \
	grep -q "writable by anyone: refusing to run" "$W/open.log"
