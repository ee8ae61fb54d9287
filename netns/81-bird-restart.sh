#!/usr/bin/env bash
# Restarts with BIRD: fibd killed and started again while BIRD runs; BIRD killed
# and started again within the stale time; BIRD restarted gracefully with a
# configuration that lacks some routes (pruned after its full feed); fibd absent
# when BIRD starts (birdc keeps answering, routes come once fibd does). No
# wanted route is missing from the kernel at any 100 ms sample, and the table
# is exactly BIRD's routes after each step; BIRD's restart after a crash costs
# fibd no write. A plain BIRD shutdown withdraws them, as the kernel protocol
# does.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
require_bird
tap_plan 16
diag "$("$BIRD_DIR/bird" --version 2>&1)"

# 50,000 routes: BIRD 3's static import of 20,000 ended before a feed that did
# not wait for it began, and its early end (see the crash below) went unnoticed.
N4=${BIRD_RESTART_V4:-40000}
N6=${BIRD_RESTART_V6:-10000}
N=$((N4 + N6))
ns_with_link A br
scratch_dir W
SOCK=$W/fibd.sock
routes_py gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 31 >"$W/routes"
sed 's/$/ metric 32/' "$W/routes" >"$W/want"
head -n $((N4 - 1000)) "$W/routes" >"$W/fewer"
tail -n "$N6" "$W/routes" >>"$W/fewer"
sed 's/$/ metric 32/' "$W/fewer" >"$W/want-fewer"

bird_conf() { # route file, extra fibd protocol options
	cat <<EOF
router id 192.0.2.1;
log "$W/bird.conf.log" all;
protocol device {}
$(routes_py bird-static s "$1")
protocol fibd f1 {
  socket "$SOCK"; kernel table 100; stale time 60; graceful restart on; $2
  ipv4 { export all; }; ipv6 { export all; };
}
EOF
}
connects_is() { # N: BIRD's fibd protocol has connected N times
	[ "$(birdc_in "$A" "$W/bird.conf" show protocols all f1 | sed -n 's/.*Sessions: *\([0-9]*\) connects.*/\1/p')" = "$1" ]
}
settled() { # N: fibd holds N routes of BIRD's, connected, nothing pending (the feed swept)
	fibctl_in "$A" "$SOCK" status | grep -Eq "client bird:f1 +connected +routes $1 pending 0"
}

bird_conf "$W/routes" "" >"$W/bird.conf"
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts"; exit 1; }
start_bird BIRD_PID "$A" "$W/bird.conf" || { not_ok "BIRD starts"; exit 1; }
check "BIRD's $N routes reach the kernel through fibd" wait_until 60 kernel_table_is "$A" 100 "$W/want"

# fibd killed and started again while BIRD runs.
sampler_start S "$A" 100 "$W/s1"
stop_pid "$FIBD_PID" KILL
check "BIRD notices fibd is gone and keeps answering birdc" wait_until 20 \
	bash -c "ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show protocols f1 | grep -q connecting"
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
check "BIRD reconnects to the new fibd" wait_until 60 connects_is 2
wait_until 60 settled "$N"
status=$(fibctl_in "$A" "$SOCK" -j status)
read -r min samples _ gap _ <<<"$(sampler_stop "$S" "$W/s1")"
diag "fibd restart: $samples samples (longest gap $gap ms), fewest routes $min"
check "fibd restart: no route missing at any sample ($samples samples)" test "$min" -ge "$N"
check "fibd restart: table 100 is exactly BIRD's routes" kernel_table_is "$A" 100 "$W/want"
check "fibd restart: the new fibd adopted the routes; the feed cost no write" python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["sync"]["routes_adopted"] == int(sys.argv[2]), s["sync"]
assert s["netlink"]["adds"] == 0 and s["netlink"]["replaces"] == 0, s["netlink"]
' "$status" "$N"

# BIRD killed (a crash) and started again within the stale time.
writes() { fibd_counters "$A" "$SOCK" netlink.adds netlink.replaces netlink.deletes; }
before=$(writes)
sampler_start S "$A" 100 "$W/s2"
stop_pid "$BIRD_PID" KILL
rm -f "$W/bird.conf.ctl"
start_bird BIRD_PID "$A" "$W/bird.conf" || { not_ok "BIRD starts again"; exit 1; }
wait_until 60 connects_is 1
wait_until 60 settled "$N"
read -r min samples _ gap _ <<<"$(sampler_stop "$S" "$W/s2")"
diag "BIRD crash: $samples samples (longest gap $gap ms), fewest routes $min"
check "BIRD crash and restart: no route missing at any sample ($samples samples)" test "$min" -ge "$N"
check "BIRD crash and restart: table 100 is exactly BIRD's routes" kernel_table_is "$A" 100 "$W/want"
# (BIRD 3 starts the protocol before its static protocols import: a full feed
# that ended before they were done would make fibd prune and write again. The
# glue's first connect waits for the commit; without the wait this failed.)
after=$(writes)
diag "BIRD crash: fibd's adds, replaces, deletes before $before, after $after"
# When the glue connected (its last "connected") against BIRD's start-up (its
# last "Started"): after it, as long as the first connect waits for the commit.
diag "BIRD crash: $(python3 -c 'import re, sys
from datetime import datetime
last = {}
for line in open(sys.argv[1]):
    m = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) .*<INFO> (Started|f1: connected)", line)
    if m:
        last[m.group(2)] = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f")
if len(last) == 2:
    ms = (last["Started"] - last["f1: connected"]).total_seconds() * 1000
    print("the feed began %.0f ms %s BIRD had started" % (abs(ms), "before" if ms > 0 else "after"))
else:
    print("BIRD logged no start or no connect")' "$W/bird.conf.log")"
check "BIRD crash and restart: the new feed cost fibd no write (adds, replaces, deletes: $before, then $after)" \
	test "$before" = "$after"

# A graceful restart of BIRD into a configuration with 1000 routes fewer.
sampler_start S "$A" 100 "$W/s3"
birdc_in "$A" "$W/bird.conf" graceful restart >/dev/null
reap_pid "$BIRD_PID"
bird_conf "$W/fewer" "" >"$W/bird.conf"
start_bird BIRD_PID "$A" "$W/bird.conf" -R || { not_ok "BIRD starts for a graceful restart"; exit 1; }
wait_until 60 settled $((N - 1000))
check "after a graceful restart, the routes no longer configured are pruned" kernel_table_is "$A" 100 "$W/want-fewer"
read -r min samples _ gap _ <<<"$(sampler_stop "$S" "$W/s3")"
diag "graceful restart: $samples samples (longest gap $gap ms), fewest routes $min"
check "graceful restart: none of the routes still wanted went missing ($samples samples)" \
	test "$min" -ge $((N - 1000))
check "BIRD logged the kept routes" grep -q "f1: fibd keeps our routes" "$W/bird.conf.log"

# fibd absent when BIRD starts: BIRD answers birdc, and installs once fibd is up.
stop_pid "$FIBD_PID" TERM
stop_pid "$BIRD_PID" TERM
# Deleting fibd's nexthop objects takes the routes using them along.
ip -n "$A" nexthop flush >/dev/null 2>&1
ip -n "$A" route flush table 100
ip -n "$A" -6 route flush table 100
rm -f "$SOCK.state"
start_bird BIRD_PID "$A" "$W/bird.conf" || { not_ok "BIRD starts without fibd"; exit 1; }
answered=0
for _ in $(seq 20); do
	birdc_in "$A" "$W/bird.conf" show status >/dev/null 2>&1 && answered=$((answered + 1))
	sleep 0.1
done
check "without fibd, birdc answers (20 of 20 probes)" test "$answered" -eq 20
check "without fibd, the protocol keeps trying to connect" bash -c \
	"ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show protocols all f1 | grep -q 'Session: *connecting'"
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts late"; exit 1; }
check "fibd appears: BIRD connects and its routes are installed" wait_until 90 kernel_table_is "$A" 100 "$W/want-fewer"

# A plain shutdown of BIRD withdraws its routes (persist off).
stop_pid "$BIRD_PID" TERM
check "BIRD shut down: fibd withdraws its routes, IPv4 and IPv6" wait_until 30 kernel_table_is "$A" 100 /dev/null
stop_pid "$FIBD_PID" TERM
