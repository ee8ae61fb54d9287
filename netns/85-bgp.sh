#!/usr/bin/env bash
# BGP ingest with a real, unpatched peer (BGP_PEER: bird, exabgp, frr, openbgpd, ...; netns/bgp-peers.sh):
# 100 k IPv4 + 20 k IPv6 routes land exactly over a session signed with a TCP
# MD5 key, through the BGP next hops (the
# kernel picks the device); two paths of a prefix (ADD-PATH) make one ECMP
# route; a withdrawal of 10 k routes; the peer killed and started again
# (graceful restart: no route missing at any 50 ms sample, and what it no
# longer sends is pruned after its End-of-RIB); fibd killed and started again
# (no route missing); the peer stopped cleanly (a NOTIFICATION: its routes
# are withdrawn).
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bgp-peers.sh"

PEER=${BGP_PEER:-bird}
require_root
require_fibd
"${PEER}_require"
PEER_AS=$("${PEER}_as")
PEER_OPTS=
declare -F "${PEER}_fibd_options" >/dev/null && PEER_OPTS=$("${PEER}_fibd_options")
plan=13
[ -n "$PEER_OPTS" ] && plan=$((plan + 1))
declare -F "${PEER}_start_without_gr" >/dev/null && plan=$((plan + 1))
"${PEER}_stop_notifies" && plan=$((plan + 1))
tap_plan "$plan"
diag "peer: $PEER ($("${PEER}_version" 2>&1 | head -n 1))${PEER_OPTS:+; fibd: $PEER_OPTS}"

# The table: BGP_V4 and BGP_V6, else the peer's own size (PEER_table), else 100,000 + 20,000.
read -r N4 N6 <<<"$(declare -F "${PEER}_table" >/dev/null && "${PEER}_table" || echo 100000 20000)"
N4=${BGP_V4:-$N4}
N6=${BGP_V6:-$N6}
ns_with_link A bgp
scratch_dir W
SOCK=$W/fibd.sock
routes_py gen "$N4" "$N6" va 198.51.100.1 2001:db8:ff::1 85 >"$W/all"
sed 's/ dev va$//' "$W/all" >"$W/routes"
head -n $((N4 - 10000)) "$W/routes" >"$W/fewer"
tail -n "$N6" "$W/routes" >>"$W/fewer"
cp "$W/all" "$W/want"
head -n $((N4 - 10000)) "$W/all" >"$W/want-fewer"
tail -n "$N6" "$W/all" >>"$W/want-fewer"
: >"$W/ecmp-alt"
N=$((N4 + N6))
NF=$((N4 - 10000 + N6))
if "${PEER}_addpath"; then
	# One prefix through two next hops, from two sources of the peer's: two paths.
	echo "203.0.113.0/24 via 198.51.100.1" >>"$W/routes"
	echo "203.0.113.0/24 via 198.51.100.1" >>"$W/fewer"
	echo "203.0.113.0/24 via 198.51.100.3" >"$W/ecmp-alt"
	ecmp="203.0.113.0/24 nexthop via 198.51.100.1 dev va nexthop via 198.51.100.3 dev va"
	echo "$ecmp" >>"$W/want"
	echo "$ecmp" >>"$W/want-fewer"
	N=$((N + 1))
	NF=$((NF + 1))
fi

FIBD_CONF="startup_grace = 600
bgp_listen = 127.0.0.1 1179
bgp_as = 65000
bgp_router_id = 192.0.2.254
bgp_peer = p address 127.0.0.2 as $PEER_AS table 100 stale_time 120 md5 fibd-test-key $PEER_OPTS"
settled() { # N K: fibd holds N routes of the peer's, connected, nothing pending, and
	# its feed completed by End-of-RIB (not by stale_time) for the K-th time
	fibctl_in "$A" "$SOCK" status | grep -Eq "client bgp:p +connected +routes $1 pending 0" &&
		[ "$(grep -c 'bgp p: End-of-RIB of every family: the feed is complete' "$SOCK.log")" -ge "$2" ]
}
notifications() { # how many of the peer's sessions ended by its NOTIFICATION
	grep -c 'bgp p: session with .* ends: the peer sent a NOTIFICATION' "$SOCK.log"
}

start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts"; exit 1; }
t0=$(date +%s.%N)
"${PEER}_start" "$W/routes" || { not_ok "$PEER starts"; exit 1; }
check "$N routes from $PEER over BGP are in the kernel exactly, through its next hops" \
	wait_until 300 kernel_table_is "$A" 100 "$W/want"
diag "in $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s; $(grep 'bgp p: established' "$SOCK.log" | tail -n 1 | sed 's/.*established/established/')"
check "... and the peer's feed is complete (End-of-RIB), its marker after all of its routes" \
	wait_until 60 settled "$N" 1
check "... so nothing of the first feed was pruned: the generation completed with all $N routes" \
	grep -q "feed bgp:p: generation 1 complete, $N routes" "$SOCK.log"
check "status and metrics show the peer established, its UPDATEs counted" python3 -c '
import json, sys
p = [b for b in json.loads(sys.argv[1])["bgp"] if b["name"] == "p"][0]
assert p["state"] == "established" and p["sessions"] == 1 and p["prefixes"] >= int(sys.argv[2]), p
assert "fibd_bgp_peer_up{peer=\"p\"} 1" in sys.argv[3], sys.argv[3]
' "$(fibctl_in "$A" "$SOCK" -j status)" "$N" "$(fibctl_in "$A" "$SOCK" metrics)"
check "a connection from an address no bgp_peer names gets a NOTIFICATION (Cease, rejected)" \
	ip netns exec "$A" python3 -c '
import socket
s = socket.socket()
s.settimeout(5)
s.bind(("127.0.0.3", 0))
s.connect(("127.0.0.1", 1179))
m = s.recv(64)
assert m[:16] == b"\xff" * 16 and m[18:21] == bytes([3, 6, 5]), m
'
if "${PEER}_addpath"; then
	check "two paths of a prefix (ADD-PATH) are one ECMP route" bash -c \
		"ip -n $A route show table 100 203.0.113.0/24 | grep -c 'nexthop via' | grep -qx 2"
else
	ok "ECMP through ADD-PATH # SKIP $PEER sends one path of a prefix here (no source BIRD built to give it a second)"
fi

"${PEER}_announce" "$W/fewer"
check "10,000 routes withdrawn by the peer leave the kernel" wait_until 120 kernel_table_is "$A" 100 "$W/want-fewer"

# The peer crashes and starts again: graceful restart keeps its routes meanwhile.
sampler_start S "$A" 100 "$W/s1"
"${PEER}_kill"
"${PEER}_start" "$W/fewer" || { not_ok "$PEER starts again"; exit 1; }
check "peer restart: its feed completes again" wait_until 300 settled "$NF" 2
read -r min samples _ gap _ <<<"$(sampler_stop "$S" "$W/s1")"
diag "peer restart: $samples samples (longest gap $gap ms), fewest routes $min"
check "peer restart: no route missing at any sample ($samples samples)" test "$min" -ge "$NF"
check "peer restart: table 100 is exactly the peer's routes" kernel_table_is "$A" 100 "$W/want-fewer"

# fibd killed and started again: the kernel keeps the routes; the peer feeds the new fibd.
sampler_start S "$A" 100 "$W/s2"
stop_pid "$FIBD_PID" KILL
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
wait_until 300 settled "$NF" 3
read -r min samples _ gap _ <<<"$(sampler_stop "$S" "$W/s2")"
diag "fibd restart: $samples samples (longest gap $gap ms), fewest routes $min"
check "fibd restart: no route missing at any sample ($samples samples)" test "$min" -ge "$NF"
check "fibd restart: table 100 is exactly the peer's routes" kernel_table_is "$A" 100 "$W/want-fewer"

# A clean stop: the peer says so (NOTIFICATION), so graceful restart does not apply.
if declare -F "${PEER}_start_without_gr" >/dev/null; then
	"${PEER}_start_without_gr" "$W/fewer"
	check "the peer started again without graceful restart: its feed completes" \
		wait_until 300 settled "$NF" 4
fi
before=$(notifications)
"${PEER}_stop"
if "${PEER}_stop_notifies"; then
	notified() { [ "$(notifications)" -gt "$before" ]; }
	check "the peer's clean stop sends a NOTIFICATION" wait_until 60 notified
fi
gone() { [ -z "$(ip -n "$A" route show table 100 proto 12; ip -n "$A" -6 route show table 100 proto 12)" ]; }
if [ -n "$PEER_OPTS" ]; then
	# persist: the routes stay whatever ends the session, until the line says otherwise.
	sleep 2
	check "the peer stopped, but with persist its routes stay" kernel_table_is "$A" 100 "$W/want-fewer"
	sed -i "s/ $PEER_OPTS\$//" "$SOCK.conf"
	kill -HUP "$FIBD_PID"
	check "persist taken off the peer's line (SIGHUP): its routes are withdrawn" wait_until 60 gone
else
	check "the peer stopped (a NOTIFICATION, or no graceful restart): its routes are withdrawn" \
		wait_until 60 gone
fi
if [ "$_tap_failed" -gt 0 ]; then
	fibctl_in "$A" "$SOCK" status 2>/dev/null | sed "s/^/# /"
	grep -v ': debug:' "$SOCK.log" | tail -n 30 | sed "s/^/# fibd: /"
fi
stop_pid "$FIBD_PID" TERM
