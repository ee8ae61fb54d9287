#!/usr/bin/env bash
# learn on: foreign kernel routes in the protocol's table are imported into
# BIRD through fibd (LEARN), as the kernel protocol learns alien routes: those
# there when BIRD connects, those added and deleted later, one route per kernel
# metric with the lowest preferred, ECMP; never fibd's own routes, never proto
# kernel ones. Across a fibd restart, what was deleted meanwhile is gone. A
# kernel protocol beside it still hears the kernel's route notifications. When
# fibd's monitor loses notifications (a tiny buffer, fibd stopped for a moment),
# fibd learns the table again as a refresh, and BIRD drops what the lost
# deletes would have taken.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
require_bird
tap_plan 14
diag "$("$BIRD_DIR/bird" --version 2>&1)"

ns_with_link A bl
scratch_dir W
SOCK=$W/fibd.sock
k() { ip -n "$A" "$@"; }
k route add 10.50.0.0/16 via 198.51.100.1 table 100 proto static
k route add blackhole 10.51.0.0/16 table 100 proto static
k route add 10.52.0.0/16 table 100 proto static nexthop via 198.51.100.1 weight 1 nexthop via 198.51.100.3 weight 2
k route add 10.53.0.0/16 via 198.51.100.1 table 100 proto static metric 10
k route add 10.53.0.0/16 via 198.51.100.3 table 100 proto static metric 20
k -6 route add 2001:db8:50::/48 via 2001:db8:ff::1 table 100 proto static
k route add 10.54.0.0/16 dev va table 100 proto kernel
k route add 10.81.0.0/16 via 198.51.100.1 table 150 proto static

start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts"; exit 1; }
cat >"$W/bird.conf" <<EOF
router id 192.0.2.1;
log "$W/bird.conf.log" all;
protocol device {}
protocol static s4 { ipv4; route 10.70.0.0/16 via 198.51.100.1; }
# A kernel protocol beside fibd's: the patch has BIRD join the kernel's route
# groups only when one starts; it must still hear a change at once.
ipv4 table t150;
protocol kernel k150 { kernel table 150; learn; scan time 600; ipv4 { table t150; import all; export none; }; }
protocol fibd f1 {
  socket "$SOCK"; kernel table 100; learn on;
  ipv4 { import all; export all; };
  ipv6 { import all; export all; };
}
EOF
start_bird BIRD_PID "$A" "$W/bird.conf" || { not_ok "BIRD starts"; exit 1; }
learned() { # the networks BIRD learned through f1, sorted
	birdc_in "$A" "$W/bird.conf" show route protocol f1 table all |
		awk '$1 ~ /^[0-9a-f:.]+\/[0-9]+$/ { print $1 }' | sort
}
learned_is() { [ "$(learned | tr '\n' ' ')" = "$1" ]; }

check "the foreign routes there at start are learned (not proto kernel ones)" wait_until 20 \
	learned_is "10.50.0.0/16 10.51.0.0/16 10.52.0.0/16 10.53.0.0/16 2001:db8:50::/48 "
diag "$(birdc_in "$A" "$W/bird.conf" show route protocol f1 table all)"
r52=$(birdc_in "$A" "$W/bird.conf" show route 10.52.0.0/16 protocol f1)
check "an ECMP route is learned with both next hops and weights" bash -c \
	"grep -q 'via 198.51.100.1 on va weight 1' <<<\"\$1\" && grep -q 'via 198.51.100.3 on va weight 2' <<<\"\$1\"" _ "$r52"
check "of two metrics, BIRD prefers the lower (krt_metric 10)" bash -c \
	"birdc_out=\$(ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show route all 10.53.0.0/16 primary);
	 grep -Eq '(krt_|Kernel\.)metric: 10$' <<<\"\$birdc_out\" && ! grep -q 'metric: 20' <<<\"\$birdc_out\""
# (the learned routes BIRD lists must include one still learned, so that a
# birdc that failed or answered nothing cannot pass for a route's absence)
check "fibd's own routes (exported from BIRD) are not learned back" wait_until 10 bash -c \
	"ip -n $A route show table 100 proto 12 | grep -q '^10.70.0.0/16' &&
	 birdc_out=\$(ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show route protocol f1) &&
	 grep -q '^10.51.0.0/16' <<<\"\$birdc_out\" && ! grep -q '^10.70' <<<\"\$birdc_out\""

k route add 10.60.0.0/16 via 198.51.100.1 table 100 proto static
check "a route added later is learned" wait_until 10 bash -c \
	"ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show route protocol f1 | grep -q '^10.60.0.0/16'"
# k150's first scan is over once it shows the route there before BIRD started.
wait_until 20 bash -c "ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show route table t150 | grep -q '^10.81.0.0/16'"
k route add 10.80.0.0/16 via 198.51.100.1 table 150 proto static
check "a kernel protocol beside it learns a route at once (scan time 600)" wait_until 5 bash -c \
	"ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show route table t150 | grep -q '^10.80.0.0/16'"
k route del 10.50.0.0/16 table 100
check "a route deleted later is withdrawn from BIRD" wait_until 10 bash -c \
	"birdc_out=\$(ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show route protocol f1) &&
	 grep -q '^10.51.0.0/16' <<<\"\$birdc_out\" && ! grep -q '^10.50.0.0/16' <<<\"\$birdc_out\""
k route del 10.53.0.0/16 table 100 metric 10
check "deleting the metric 10 route leaves the metric 20 one" wait_until 10 bash -c \
	"birdc_out=\$(ip netns exec $A $BIRD_DIR/birdc -s $W/bird.conf.ctl show route all 10.53.0.0/16 protocol f1);
	 grep -Eq '(krt_|Kernel\.)metric: 20$' <<<\"\$birdc_out\" && ! grep -q 'metric: 10$' <<<\"\$birdc_out\""

# fibd away; meanwhile a foreign route goes and another comes.
stop_pid "$FIBD_PID" TERM
k route del 10.51.0.0/16 table 100
k route add 10.61.0.0/16 via 198.51.100.1 table 100 proto static
# This time with a monitor buffer of a few notifications, for what follows.
FIBD_CONF="monitor_buffer = 4096" start_fibd FIBD_PID "$A" "$SOCK" ||
	{ not_ok "fibd starts again"; exit 1; }
check "after fibd restarts, BIRD's learned routes match the kernel again" wait_until 40 \
	learned_is "10.52.0.0/16 10.53.0.0/16 10.60.0.0/16 10.61.0.0/16 2001:db8:50::/48 "

# Others add 3000 routes while fibd is stopped, then delete one BIRD learned
# and add another: far more notifications than fibd's buffer holds, so the
# kernel drops the last ones, the delete among them.
python3 - >"$W/many" <<'PY'
for i in range(3000):
    print(f"route add 10.90.{i // 250}.{i % 250}/32 via 198.51.100.1 table 100 proto static")
print("route del 10.60.0.0/16 table 100")
print("route add 10.62.0.0/16 via 198.51.100.1 table 100 proto static")
PY
want_after_loss() {
	{
		printf '%s\n' 10.52.0.0/16 10.53.0.0/16 10.61.0.0/16 10.62.0.0/16 2001:db8:50::/48
		for i in $(seq 0 2999); do echo "10.90.$((i / 250)).$((i % 250))/32"; done
	} | sort
}
want=$(want_after_loss | tr '\n' ' ')
learn_field() { fibctl_in "$A" "$SOCK" -j status | python3 -c 'import json, sys
s = json.load(sys.stdin); print(s["learn"]["refreshes"], s["netlink"]["monitor_overruns"])'; }
read -r refreshes0 overruns0 < <(learn_field)
kill -STOP "$FIBD_PID"
k -batch "$W/many"
kill -CONT "$FIBD_PID"
check "notifications lost: BIRD learns the table again, and drops the route deleted meanwhile" \
	wait_until 40 learned_is "$want"
read -r refreshes1 overruns1 < <(learn_field)
diag "refreshes ended $refreshes0 -> $refreshes1, monitor overruns $overruns0 -> $overruns1"
check "the monitor overran, and fibd ended a refresh of the table after it" \
	eval '[ "$overruns1" -gt "$overruns0" ] && [ "$refreshes1" -gt "$refreshes0" ]'
# And the 3000 go again, fibd running (its monitor may overrun again).
sed -n 's/^route add \(10\.90\.[^ ]*\) .*/route del \1 table 100/p' "$W/many" >"$W/del"
k -batch "$W/del"
check "the 3000 deleted: BIRD's learned routes match the kernel again" wait_until 40 \
	learned_is "10.52.0.0/16 10.53.0.0/16 10.61.0.0/16 10.62.0.0/16 2001:db8:50::/48 "

status=$(fibctl_in "$A" "$SOCK" -j status)
diag "monitor: $(python3 -c 'import json,sys; n=json.loads(sys.argv[1])["netlink"]; print("overruns", n["monitor_overruns"], "drops", n["monitor_drops"])' "$status")"
diag "learn: $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["learn"])' "$status")"
check "fibd counts the LEARN messages it sent" python3 -c '
import json, sys
learn = json.loads(sys.argv[1])["learn"]
assert learn["sent"] >= 5 and learn["refreshes"] >= 1, learn
' "$status"
check "BIRD logged no error" bash -c "! grep -E '<(ERR|BUG|FATAL)>' $W/bird.conf.log"
stop_pid "$BIRD_PID" TERM
stop_pid "$FIBD_PID" TERM
