#!/usr/bin/env bash
# BIRD (patched, protocol fibd) exports through fibd into the kernel: static
# routes (IPv4, IPv6, ECMP, merged paths, blackhole, unreachable, prohibit) and
# routes learned over BGP from a second BIRD in another namespace; krt_prefsrc
# and krt_metric set by export filters; a withdraw; birdc configure with a
# changed filter; the BGP session going down takes its routes away.
# krt_realm, krt_mtu and krt_scope set by export filters too; the glue asks for
# failures only, so fibd sends no result for a route installed.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
require_bird
tap_plan 18
diag "$("$BIRD_DIR/bird" --version 2>&1)"

ns_with_link A b1
ns_new B b2
veth_pair "$A" x0 "$B" x1
ip -n "$A" addr add 203.0.113.1/24 dev x0
ip -n "$B" addr add 203.0.113.2/24 dev x1
scratch_dir W
SOCK=$W/fibd.sock
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts"; exit 1; }

# r2 announces ten prefixes over eBGP.
cat >"$W/r2.conf" <<EOF
router id 192.0.2.2;
log "$W/r2.conf.log" all;
protocol device {}
protocol static { ipv4; $(for i in $(seq 0 9); do printf 'route 10.20.%d.0/24 unreachable; ' "$i"; done) }
protocol bgp r1 { local 203.0.113.2 as 65002; neighbor 203.0.113.1 as 65001; ipv4 { import none; export all; }; }
EOF

# r1 exports to fibd: table 100 with the configured metric 32; table 101 with
# metric 0, where krt_metric from the filter is the kernel's metric.
r1_conf() { # the filter of f1, given as its body
	cat <<EOF
router id 192.0.2.1;
log "$W/r1.conf.log" all;
protocol device {}
protocol static s4 {
  ipv4;
  route 10.1.0.0/16 via 198.51.100.1;
  route 10.2.0.0/16 blackhole;
  # Next hops in BIRD 3's sort order (heaviest first): its static protocol ignores others.
  route 10.3.0.0/16 via 198.51.100.3 weight 3 via 198.51.100.1 weight 1;
  route 10.4.0.0/16 via 198.51.100.1;
  route 10.5.0.0/16 via 198.51.100.1;
  route 10.6.0.0/16 prohibit;
  route 10.7.0.0/16 via 198.51.100.4;
  route 10.9.0.0/16 via "va";
}
protocol static s4b { ipv4; route 10.7.0.0/16 via 198.51.100.5; route 10.8.0.0/16 via 198.51.100.1; }
protocol static s6 {
  ipv6;
  route 2001:db8:10::/48 via 2001:db8:ff::1;
  route 2001:db8:11::/48 unreachable;
  route 2001:db8:12::/48 via 2001:db8:ff::1 via 2001:db8:ff::3;
}
protocol bgp r2 { local 203.0.113.1 as 65001; neighbor 203.0.113.2 as 65002; ipv4 { import all; export none; }; }
filter to_fibd { $1 }
protocol fibd f1 {
  socket "$SOCK"; kernel table 100; merge paths on;
  ipv4 { export filter to_fibd; };
  ipv6 { export all; };
}
protocol fibd f2 {
  socket "$SOCK"; kernel table 101; metric 0;
  ipv4 { export filter {
    if net = 10.1.0.0/16 then { krt_metric = 500; accept; }
    if net = 10.8.0.0/16 then { krt_metric = 700; accept; }
    if net = 10.2.0.0/16 then accept;
    reject; }; };
}
protocol fibd f3 { disabled; socket "$SOCK"; kernel table 102; ipv4 { export all; }; }
EOF
}
r1_conf 'if net = 10.4.0.0/16 then krt_prefsrc = 198.51.100.2;
  if net = 10.1.0.0/16 then { krt_realm = 5; krt_mtu = 1400; }
  if net = 10.9.0.0/16 then krt_scope = 254;
  if net = 10.5.0.0/16 then reject; accept;' >"$W/r1.conf"
start_bird R2 "$B" "$W/r2.conf" || { not_ok "BIRD r2 starts"; exit 1; }
start_bird R1 "$A" "$W/r1.conf" || { not_ok "BIRD r1 starts"; exit 1; }

# What table 100 must hold (ip route syntax; routes.py puts it in canonical form).
{
	echo "10.1.0.0/16 via 198.51.100.1 dev va metric 32"
	echo "blackhole 10.2.0.0/16 metric 32"
	echo "10.3.0.0/16 metric 32 nexthop via 198.51.100.1 dev va weight 1 nexthop via 198.51.100.3 dev va weight 3"
	echo "10.4.0.0/16 via 198.51.100.1 dev va metric 32"
	echo "prohibit 10.6.0.0/16 metric 32"
	echo "10.7.0.0/16 metric 32 nexthop via 198.51.100.4 dev va nexthop via 198.51.100.5 dev va"
	echo "10.8.0.0/16 via 198.51.100.1 dev va metric 32"
	echo "10.9.0.0/16 dev va metric 32"
	for i in $(seq 0 9); do echo "10.20.$i.0/24 via 203.0.113.2 dev x0 metric 32"; done
	echo "2001:db8:10::/48 via 2001:db8:ff::1 dev va metric 32"
	echo "unreachable 2001:db8:11::/48 metric 32"
	echo "2001:db8:12::/48 metric 32 nexthop via 2001:db8:ff::1 dev va nexthop via 2001:db8:ff::3 dev va"
} >"$W/want"

check "BIRD's fibd protocol connects and feeds" wait_until 20 \
	bash -c "ip netns exec $A $BIRD_DIR/birdc -s $W/r1.conf.ctl show protocols f1 | grep -q connected"
if ! wait_until 30 kernel_table_is "$A" 100 "$W/want"; then
	diag "$(diff <(routes_py canon-text "$W/want") <(kernel_routes "$A" 100))"
	diag "$(birdc_in "$A" "$W/r1.conf" show protocols all f1)"
fi
check "table 100: v4, v6, ECMP with weights, merged paths, blackhole, unreachable, prohibit, BGP" \
	kernel_table_is "$A" 100 "$W/want"
# With no kernel protocol, BIRD's netlink sockets are in no route group
# (RTMGRP_IPV4_ROUTE 0x40, RTMGRP_IPV6_ROUTE 0x400; the patch): fibd's writes
# do not flood BIRD's loop. Its sockets by inode in the namespace's table.
check "without a kernel protocol, BIRD takes no route notifications" ip netns exec "$A" python3 -c '
import os, sys
pid = sys.argv[1]
inodes = set()
for fd in os.listdir(f"/proc/{pid}/fd"):
    link = os.readlink(f"/proc/{pid}/fd/{fd}")
    if link.startswith("socket:["):
        inodes.add(link[8:-1])
groups = [int(f[3], 16) for f in (l.split() for l in open("/proc/net/netlink").readlines()[1:])
          if f[1] == "0" and f[-1] in inodes]
assert groups and any(g & 0x1 for g in groups), groups       # the link group: its async socket
assert not any(g & 0x440 for g in groups), [hex(g) for g in groups]
' "$R1"
check "krt_prefsrc from the export filter reaches the kernel" bash -c \
	"ip -n $A route show table 100 10.4.0.0/16 | grep -q 'src 198.51.100.2'"
diag "$(ip -n "$A" route show table 100 10.1.0.0/16; ip -n "$A" route show table 100 10.9.0.0/16)"
# (a device route fibd writes with scope link unless krt_scope says otherwise)
check "krt_realm, krt_mtu and krt_scope from the export filter reach the kernel" bash -c \
	"ip -n $A route show table 100 10.1.0.0/16 | grep -Eq ' mtu 1400( |\$)' &&
	 ip -n $A route show table 100 10.1.0.0/16 | grep -Eq ' realms? 5( |\$)' &&
	 ip -n $A route show table 100 10.9.0.0/16 | grep -q ' scope host'"
{
	echo "10.1.0.0/16 via 198.51.100.1 dev va metric 500"
	echo "blackhole 10.2.0.0/16"
	echo "10.8.0.0/16 via 198.51.100.1 dev va metric 700"
} >"$W/want101"
diag "table 101: $(ip -n "$A" route show table 101)"
check "metric 0: krt_metric from the export filter is the kernel's metric" \
	kernel_table_is "$A" 101 "$W/want101"
info=$(birdc_in "$A" "$W/r1.conf" show protocols all f1)
diag "$(grep -E 'Session|fibd:|Routes sent|Pending|Kernel results' <<<"$info")"
check "birdc show protocols all: session, fibd, counters" bash -c \
	"grep -q 'Session: *connected' <<<\"\$1\" && grep -q 'fibd: *fibd-' <<<\"\$1\" &&
	 grep -Eq 'Kernel results: *[0-9]+ installed, 0 removed, 0 failed' <<<\"\$1\"" _ "$info"

# A protocol that never started (disabled) is shown too, and BIRD lives on.
check "birdc show protocols all of a disabled fibd protocol" bash -c \
	"ip netns exec $A $BIRD_DIR/birdc -s $W/r1.conf.ctl show protocols all f3 | grep -q 'Session: *down' &&
	 ip netns exec $A $BIRD_DIR/birdc -s $W/r1.conf.ctl show status | grep -q 'Daemon is up'"

# BIRD 3 runs the protocol in a loop of its own, in a worker thread.
if [ "$(bird_major)" = 3 ]; then
	threads=$(birdc_in "$A" "$W/r1.conf" show threads all)
	check "BIRD 3: protocol f1 runs in its own loop, in a worker thread" bash -c \
		"awk '/^Thread /{t=1} t && /Loop Protocol f1\$/{f=1} END{exit !f}' <<<\"\$1\"" _ "$threads"
else
	ok "BIRD 3 only # SKIP BIRD $(bird_major) runs every protocol in its one loop"
fi

# A withdraw: one static protocol goes down; 10.7 falls back to one path.
birdc_in "$A" "$W/r1.conf" disable s4b >/dev/null
grep -v -e '^10.8.0.0/16' -e '^10.7.0.0/16' "$W/want" >"$W/want2"
echo "10.7.0.0/16 via 198.51.100.4 dev va metric 32" >>"$W/want2"
check "a static protocol disabled: its route withdrawn, a merged route back to one path" \
	wait_until 20 kernel_table_is "$A" 100 "$W/want2"
# The withdraw of a route that went with krt_metric 700 from the filter (the
# table's route has none) takes that kernel route, and no other.
grep -v '^10.8.0.0/16' "$W/want101" >"$W/want101b"
check "metric 0: a withdraw finds the metric the filter gave the route" \
	wait_until 20 kernel_table_is "$A" 101 "$W/want101b"

# birdc configure with a changed filter: 10.5 now accepted, 10.1 rejected (and
# s4b, enabled in the configuration, comes back).
r1_conf 'if net = 10.1.0.0/16 then reject; accept;' >"$W/r1.conf"
out=$(birdc_in "$A" "$W/r1.conf" configure 2>&1)
diag "$out"
grep -v -e '^10.1.0.0/16' -e '^10.4.0.0/16' "$W/want" >"$W/want3"
echo "10.4.0.0/16 via 198.51.100.1 dev va metric 32" >>"$W/want3"
echo "10.5.0.0/16 via 198.51.100.1 dev va metric 32" >>"$W/want3"
check "birdc configure with a new filter: the table follows it" wait_until 20 kernel_table_is "$A" 100 "$W/want3"
# (the table compared above ignores source and scope: their replaces may come later)
check "... and krt_prefsrc and krt_scope are gone with the filter that set them" wait_until 20 bash -c \
	"ip -n $A route show table 100 10.4.0.0/16 | grep -q 'dev va' &&
	 ! ip -n $A route show table 100 10.4.0.0/16 | grep -q src &&
	 ip -n $A route show table 100 10.9.0.0/16 | grep -q ' scope link'"
check "the session survived the reconfiguration (a refeed, no reconnect)" bash -c \
	"birdc_out=\$(ip netns exec $A $BIRD_DIR/birdc -s $W/r1.conf.ctl show protocols all f1);
	 grep -q 'Sessions: *1 connects, 0 disconnects' <<<\"\$birdc_out\""

# The BGP session goes down: its ten routes go.
birdc_in "$A" "$W/r1.conf" disable r2 >/dev/null
grep -v '^10.20.' "$W/want3" >"$W/want4"
check "BGP session down: its routes are withdrawn" wait_until 20 kernel_table_is "$A" 100 "$W/want4"
status=$(fibctl_in "$A" "$SOCK" status)
diag "$(grep -E 'client|^  10[01]' <<<"$status")"
check "fibd: two BIRD clients, nothing failed or waiting" bash -c \
	"grep -Eq 'client bird:f1 +connected' <<<\"\$1\" && grep -Eq 'client bird:f2 +connected' <<<\"\$1\" &&
	 grep -Eq '^  100 +inet +[0-9]+ +[0-9]+ +0 +0 +0$' <<<\"\$1\"" _ "$status"
fed=$(fibctl_in "$A" "$SOCK" -j status)
check "the glue asked for failures only: fibd sent no result for the routes it installed" python3 -c '
import json, sys
f = json.loads(sys.argv[1])["feed"]
assert f["routes"] > 0 and f["results_sent"] == 0, f
' "$fed"
check "BIRD logged no error" bash -c "! grep -E '<(ERR|BUG|FATAL)>' $W/r1.conf.log"
stop_pid "$R1" TERM
stop_pid "$R2" TERM
stop_pid "$FIBD_PID" TERM
