# BGP peers for netns/85-bgp.sh, one driver per daemon, each from Debian's
# packages (BIRD: the one under test in BIRD_DIR, run as a stock BGP speaker).
# Every peer runs in namespace $A, speaks from 127.0.0.2 to fibd on 127.0.0.1
# port 1179 as AS $PEER_AS (fibd is AS 65000), with the TCP MD5 key
# fibd-test-key, announces the routes of a file
# of "PREFIX via GW [dev D]" lines with their gateways as BGP next hops, and
# can restart quickly. A driver defines, for peer P:
#   P_require            skip (or fail under BIRD_REQUIRED) if P is not installed
#   P_start FILE         start it announcing FILE; its PID in PEER_PID
#   P_announce FILE      announce FILE instead (what is no longer in it is withdrawn)
#   P_kill               kill -9 (as a crash: the connection drops, no NOTIFICATION)
#   P_stop               a clean stop: routes withdrawn
#   P_stop_notifies      true if its stop sends a NOTIFICATION (Cease)
#   P_start_without_gr FILE  (optional) start again without graceful restart,
#                        for a peer that closes silently when it has it
#   P_addpath            true if it sends several paths of a prefix (ADD-PATH)
#   P_version            its name and version, for the log
#   P_as                 its AS (the same as fibd's where an external session
#                        would put the peer's own address in as next hop)
#   P_table              (optional) "N4 N6": a smaller table for a slow peer
# $W is the scratch directory, $PEER_AS the peer's AS.

_routes_of() { # 4|6 FILE...: how many "PREFIX via GW" lines of the family the files hold
	awk -v fam="$1" '$2 == "via" && ((fam == 6) == (index($1, ":") > 0))' "${@:2}" | wc -l
}

# A stock BIRD (BIRD_DIR) as the source of a relaying peer's routes, as an
# edge router would be: external (AS 65100) and multihop from 127.0.0.5, where
# BIRD would put its own address in as next hop unless the export filter sets
# the gateway. _source_conf NAME FILE SESSION writes $W/NAME-source.conf
# announcing FILE (and $W/ecmp-alt, the second paths) over SESSION.
_source_conf() {
	bird_conf_for "$2" "$3" |
		sed 's/export all;/export filter { bgp_next_hop = gw; accept; };/' >"$W/$1-source.conf"
}

_source_start() { # VAR NAME: start the BIRD of $W/NAME-source.conf, its PID in VAR
	rm -f "$W/$2-source.conf.ctl"
	start_bird "$1" "$A" "$W/$2-source.conf"
}

# Peers that originate one path per prefix get the second paths of the ADD-PATH
# prefix ($W/ecmp-alt) from a source BIRD (so their P_addpath is bird_built).
# _second_paths_source VAR NAME SESSION: start it once (its PID in VAR),
# announcing nothing else over SESSION.
_second_paths_source() {
	[ -s "$W/ecmp-alt" ] && [ -z "${!1:-}" ] || return 0
	: >"$W/$2-source.routes"
	_source_conf "$2" "$W/$2-source.routes" "$3"
	_source_start "$1" "$2"
}

_wait_second_paths() { # CHECK: until CHECK PREFIX 2 holds for each prefix of $W/ecmp-alt
	local alt
	while read -r alt _; do
		wait_until 60 "$1" "$alt" 2 </dev/null || return 1
	done <"$W/ecmp-alt"
}

# ---- BIRD (stock BGP, no fibd protocol in its configuration) ----

bird_require() {
	require_bird
}

bird_conf_for() { # FILE [SESSION]: BIRD's configuration announcing FILE to fibd
	# (or, as a source for another peer, with SESSION's local/neighbor lines)
	local session="local 127.0.0.2 as $PEER_AS; neighbor 127.0.0.1 port 1179 as 65000;
  password \"fibd-test-key\";"
	cat <<B
router id 192.0.2.1;
log "$W/bird.log" all;
protocol device {}
$(routes_py bird-static s "$1")
$( [ -s "$W/ecmp-alt" ] && routes_py bird-static alt "$W/ecmp-alt")
protocol bgp tofibd {
  ${2:-$session}
  multihop 2;
  connect delay time 0; connect retry time 1; error wait time 1, 2;
  graceful restart on;
  ipv4 { import none; export all; next hop keep; add paths tx; };
  ipv6 { import none; export all; next hop keep; add paths tx; };
}
B
}

bird_start() {
	bird_conf_for "$1" >"$W/bird.conf"
	rm -f "$W/bird.conf.ctl"
	start_bird PEER_PID "$A" "$W/bird.conf"
}

bird_announce() {
	bird_conf_for "$1" >"$W/bird.conf"
	birdc_in "$A" "$W/bird.conf" configure >/dev/null
}

bird_kill() {
	stop_pid "$PEER_PID" KILL
}

bird_stop() {
	stop_pid "$PEER_PID" TERM
}

bird_stop_notifies() {
	true
}

bird_addpath() {
	true
}

bird_version() {
	"$BIRD_DIR/bird" --version
}

bird_as() { # internal: BIRD keeps the static routes' gateways as next hops
	echo 65000
}


# ---- ExaBGP (Debian's exabgp): routes fed by its API from netns/exabgp-feed.py ----

require_peer_pkg() { # NAME COMMAND: skip, or fail under BGP_PEERS_REQUIRED, if COMMAND is missing
	command -v "$2" >/dev/null && return 0
	if [ "${BGP_PEERS_REQUIRED:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - $1 not installed ($2 not found)"
		exit 1
	fi
	skip_all "$1 not installed ($2 not found)"
}

# ExaBGP encodes in Python, about 3,600 routes a second here: it feeds a fifth of
# the table the other peers feed (three feeds of the full one took 105 s of CI).
exabgp_table() {
	echo 20000 4000
}

exabgp_require() {
	require_peer_pkg ExaBGP exabgp
}

exabgp_start() {
	[ -p "$W/exabgp.fifo" ] || mkfifo "$W/exabgp.fifo"
	cat >"$W/exabgp.conf" <<X
process feed {
  run /usr/bin/python3 $_lib_dir/exabgp-feed.py $W/exabgp.fifo $1 $W/ecmp-alt;
  encoder text;
}
neighbor 127.0.0.1 {
  router-id 192.0.2.1;
  local-address 127.0.0.2;
  local-as $PEER_AS;
  peer-as 65000;
  connect 1179;
  md5-password fibd-test-key;
  manual-eor true;
  capability { $( [ "${EXABGP_GR:-1}" = 1 ] && echo "graceful-restart 120;") add-path send; route-refresh; }
  family { ipv4 unicast; ipv6 unicast; }
  add-path { ipv4 unicast; ipv6 unicast; }
  api { processes [ feed ]; neighbor-changes; }
}
X
	# As root, in the foreground, logging to a file, no CLI pipes, no API acks.
	start_bg PEER_PID ip netns exec "$A" env exabgp_daemon_user=root exabgp_daemon_drop=false \
		exabgp_daemon_daemonize=false exabgp_log_destination="$W/exabgp.log" \
		exabgp_log_routes=false exabgp_log_packets=false \
		exabgp_api_ack=false exabgp_api_cli=false exabgp_tcp_bind='' \
		exabgp "$W/exabgp.conf" >>"$W/exabgp.out" 2>&1
	sleep 1
	kill -0 "$PEER_PID" 2>/dev/null # a configuration it refuses ends it at once
}

exabgp_announce() { # bounded: with the feeder gone, nothing would read the FIFO
	timeout --foreground 10 bash -c 'echo "$1" >"$2"' _ "$1" "$W/exabgp.fifo"
}

exabgp_kill() {
	stop_pid "$PEER_PID" KILL
}

exabgp_stop() {
	stop_pid "$PEER_PID" TERM
}

# ExaBGP stops without a NOTIFICATION, so with graceful restart negotiated its
# stop is a restart (by design): the scenario starts it again without the
# capability before the clean stop, whose routes must then go.
exabgp_start_without_gr() {
	stop_pid "$PEER_PID" TERM
	EXABGP_GR=0 exabgp_start "$1"
}

exabgp_stop_notifies() { # SIGTERM closes the connection, with or without graceful restart
	false
}

exabgp_addpath() {
	true
}

exabgp_version() {
	exabgp --version 2>&1 | sed -n 's/^ExaBGP : /ExaBGP /p'
}

exabgp_as() {
	echo 65000
}

# ---- FRR (Debian's frr): bgpd alone, no zebra, routes as network statements ----
# For ADD-PATH, a stock BIRD (BIRD_DIR) feeds it the ADD-PATH prefix's second
# path over eBGP, as a neighbouring router would; bgpd sends fibd both paths
# (addpath-tx-all-paths), next hops kept.

frr_require() {
	require_peer_pkg FRR /usr/lib/frr/bgpd
	require_peer_pkg FRR vtysh
}

_frr_networks() { # FAMILY(4|6) FILE: network lines, each through a route map setting its next hop
	awk -v fam="$1" '$2 == "via" && ((fam == 6) == (index($1, ":") > 0)) {
		m = $3; gsub(/[.:]/, "-", m); print "  network " $1 " route-map via-" m }' "$2"
}

_frr_route_maps() { # FILE: one route map per next hop of FILE
	awk '$2 == "via" && !seen[$3]++ {
		m = $3; gsub(/[.:]/, "-", m)
		print "route-map via-" m " permit 10"
		if (index($3, ":")) print " set ipv6 next-hop global " $3; else print " set ip next-hop " $3
	}' "$1"
}

frr_conf_for() { # FILE: bgpd's configuration announcing FILE
	local addpath=""
	[ -s "$W/ecmp-alt" ] && addpath="  neighbor 127.0.0.1 addpath-tx-all-paths"
	cat <<X
frr defaults traditional
hostname fibd-peer
log file $W/frr.log informational
!
router bgp $PEER_AS
 bgp router-id 192.0.2.1
 no bgp network import-check
 no bgp ebgp-requires-policy
$( [ "${FRR_GR:-1}" = 1 ] && echo " bgp graceful-restart")
 neighbor 127.0.0.1 remote-as 65000
 neighbor 127.0.0.1 port 1179
 neighbor 127.0.0.1 update-source 127.0.0.2
 neighbor 127.0.0.1 password fibd-test-key
 neighbor 127.0.0.1 timers connect 1
 neighbor 127.0.0.1 shutdown
 neighbor 127.0.0.5 remote-as 65100
 neighbor 127.0.0.5 ebgp-multihop 2
 neighbor 127.0.0.5 passive
 address-family ipv4 unicast
$addpath
$(_frr_networks 4 "$1")
 exit-address-family
 address-family ipv6 unicast
  neighbor 127.0.0.1 activate
$addpath
$(_frr_networks 6 "$1")
 exit-address-family
!
$(_frr_route_maps "$1")
X
}

_frr_vtysh() {
	ip netns exec "$A" vtysh --vty_socket "$W" -d bgpd "$@"
}

_frr_loaded() { # FAMILY N: N routes of the family through best-path selection
	# (the table's version counts selections: one per prefix of a first load)
	_frr_vtysh -c "show bgp ipv$1 unicast summary json" | python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin).get("tableVersion", 0) >= int(sys.argv[1]) else 1)
' "$2"
}

_frr_paths() { # PREFIX N: bgpd holds N paths of PREFIX
	local fam=ipv4
	[ "${1#*:}" != "$1" ] && fam=ipv6
	_frr_vtysh -c "show bgp $fam unicast $1 json" | python3 -c '
import json, sys
sys.exit(0 if len(json.load(sys.stdin).get("paths", [])) >= int(sys.argv[1]) else 1)
' "$2"
}

# bgpd sends End-of-RIB as soon as its queue to the peer is empty, even while
# its own network statements still wait for best-path selection: after a
# restart, the marker would come before the routes and the receiver prune
# them. So it starts with the session shut down and opens it once its table is
# in (an operator starting FRR with a large static table meets the same race).
frr_start() {
	frr_conf_for "$1" >"$W/frr.conf"
	cp "$1" "$W/frr.routes"
	# No zebra (-Z), so nothing of its own goes into the kernel; it listens on
	# 127.0.0.2 port 2179 for its source BIRD only, and keeps root (-S): the
	# scratch directory is root's.
	start_bg PEER_PID ip netns exec "$A" /usr/lib/frr/bgpd -Z -S -l 127.0.0.2 -p 2179 -P 0 \
		-f "$W/frr.conf" -i "$W/frr.pid" --vty_socket "$W" >>"$W/frr.out" 2>&1
	_second_paths_source FRR_SOURCE_PID frr \
		"local 127.0.0.5 as 65100; neighbor 127.0.0.2 port 2179 as $PEER_AS;" || return 1
	wait_until 120 _frr_loaded 4 "$(_routes_of 4 "$1")" && wait_until 120 _frr_loaded 6 "$(_routes_of 6 "$1")" &&
		_wait_second_paths _frr_paths || return 1
	_frr_vtysh -c "configure terminal" -c "router bgp $PEER_AS" -c "no neighbor 127.0.0.1 shutdown"
}

frr_announce() { # the difference from what it announces now, through vtysh
	{
		echo "router bgp $PEER_AS"
		for fam in 4 6; do
			echo "address-family ipv$fam unicast"
			_frr_networks "$fam" "$W/frr.routes" | sort >"$W/frr.old"
			_frr_networks "$fam" "$1" | sort >"$W/frr.new"
			comm -23 "$W/frr.old" "$W/frr.new" | sed 's/^  network \([^ ]*\).*/no network \1/'
			comm -13 "$W/frr.old" "$W/frr.new"
			echo "exit-address-family"
		done
	} >"$W/frr.cmds"
	cp "$1" "$W/frr.routes"
	_frr_vtysh -f "$W/frr.cmds" >>"$W/frr.out" 2>&1
}

frr_kill() {
	stop_pid "$PEER_PID" KILL
	rm -rf "/var/tmp/frr/bgpd.$PEER_PID" # what a killed bgpd leaves behind
}

frr_stop() {
	stop_pid "$PEER_PID" TERM
	rm -rf "/var/tmp/frr/bgpd.$PEER_PID"
}

# bgpd stops without a NOTIFICATION, so with graceful restart its stop is a
# restart: the scenario starts it again without it before the clean stop.
frr_start_without_gr() {
	frr_stop
	FRR_GR=0 frr_start "$1"
}

frr_stop_notifies() { # SIGTERM closes the connection, with or without graceful restart
	false
}

frr_addpath() { # its own path and its source BIRD's
	bird_built
}

frr_version() {
	/usr/lib/frr/bgpd --version | head -n 1 | sed 's/^bgpd version/FRR/'
}

frr_as() {
	echo 65000
}

# ---- OpenBGPD (Debian's openbgpd): networks added in bulk with bgpctl ----
# Its graceful restart capability carries End-of-RIB only, for no family
# (bgpd.conf(5): announce restart), so a restarted bgpd's routes would go at
# once: as an operator would, fibd's peer line says persist (openbgpd_fibd_options).
# For ADD-PATH, a stock BIRD feeds it the second path over eBGP, as for FRR.

openbgpd_require() {
	require_peer_pkg OpenBGPD bgpd
	require_peer_pkg OpenBGPD bgpctl
}

openbgpd_fibd_options() {
	echo persist
}

openbgpd_conf() {
	# connect-retry: after fibd restarts, bgpd tries again in 5 s, not 120
	cat <<X
AS $PEER_AS
router-id 192.0.2.1
connect-retry 5
socket "$W/bgpd.sock"
listen on 127.0.0.2
fib-update no
neighbor 127.0.0.1 {
	remote-as 65000
	local-address 127.0.0.2
	port 1179
	tcp md5sig password fibd-test-key
	announce IPv4 unicast
	announce IPv6 unicast
	announce add-path send all
	down
}
neighbor 127.0.0.5 {
	remote-as 65100
	multihop 2
	passive
}
allow from any
allow to any
X
}

_openbgpd_paths() { # PREFIX N: bgpd holds N paths of PREFIX
	[ "$(_openbgpd_ctl show rib "$1" | grep -c " $1 ")" -ge "$2" ]
}

_openbgpd_ctl() {
	ip netns exec "$A" bgpctl -s "$W/bgpd.sock" "$@"
}

_openbgpd_bulk() { # add|delete FILE: its routes' prefixes, added through their next hops or deleted
	local gw
	if [ "$1" = delete ]; then
		awk '$2 == "via" { print $1 }' "$2" | _openbgpd_ctl network bulk delete >/dev/null
		return
	fi
	for gw in $(awk '$2 == "via" { print $3 }' "$2" | sort -u); do
		awk -v gw="$gw" '$2 == "via" && $3 == gw { print $1 }' "$2" |
			_openbgpd_ctl network bulk nexthop "$gw" add >/dev/null
	done
}

_openbgpd_loaded() { # FILE: its RDE holds as many IPv4 and IPv6 networks as FILE has
	local mem
	mem=$(_openbgpd_ctl show rib memory) || return 1
	grep -Eq "^ *$(_routes_of 4 "$1") IPv4 unicast network entries" <<<"$mem" &&
		grep -Eq "^ *$(_routes_of 6 "$1") IPv6 unicast network entries" <<<"$mem"
}

# bgpd takes networks from bgpctl in bulk quickly, and from its configuration
# slowly (a reload with 100 k network lines ran for minutes). Like FRR's, it
# would send End-of-RIB before its RDE has the networks: the session starts
# down and comes up once they are all in.
openbgpd_start() {
	openbgpd_conf >"$W/bgpd.conf"
	made_dir /run/openbgpd # its chroot, the home of its user _openbgpd
	start_bg PEER_PID ip netns exec "$A" bgpd -d -f "$W/bgpd.conf" >>"$W/bgpd.out" 2>&1
	wait_until 60 _openbgpd_ctl show summary >/dev/null || return 1
	cp "$1" "$W/bgpd.routes"
	_openbgpd_bulk add "$1"
	# (the source's listening socket on its own address: bgpd listens on port 179 too)
	_second_paths_source OPENBGPD_SOURCE_PID openbgpd \
		"local 127.0.0.5 as 65100; neighbor 127.0.0.2 as $PEER_AS; strict bind yes;" || return 1
	wait_until 120 _openbgpd_loaded "$1" && _wait_second_paths _openbgpd_paths || return 1
	_openbgpd_ctl neighbor 127.0.0.1 up >/dev/null
}

openbgpd_announce() { # what is gone deleted, what is new added
	sort "$W/bgpd.routes" >"$W/bgpd.old"
	sort "$1" >"$W/bgpd.new"
	comm -23 "$W/bgpd.old" "$W/bgpd.new" >"$W/bgpd.gone"
	comm -13 "$W/bgpd.old" "$W/bgpd.new" >"$W/bgpd.added"
	_openbgpd_bulk delete "$W/bgpd.gone"
	_openbgpd_bulk add "$W/bgpd.added"
	cp "$1" "$W/bgpd.routes"
}

openbgpd_kill() {
	stop_pid "$PEER_PID" KILL
}

openbgpd_stop() {
	stop_pid "$PEER_PID" TERM
}

openbgpd_stop_notifies() {
	true
}

openbgpd_addpath() { # its own path and its source BIRD's
	bird_built
}

openbgpd_version() {
	bgpd -V 2>&1 | head -n 1
}

openbgpd_as() {
	echo 65000
}

# ---- GoBGP (Debian's gobgpd): relays routes a BIRD feeds it ----
# gobgpd originates nothing from its configuration (its API takes routes one
# call at a time), so a stock BIRD (BIRD_DIR) feeds it over eBGP, as an edge
# router would, two paths for the ADD-PATH prefix; gobgpd sends them on to
# fibd over iBGP, next hops kept.

gobgp_require() {
	require_peer_pkg GoBGP gobgpd
	require_peer_pkg GoBGP gobgp
	require_bird
}

_gobgp_families() { # ADD-PATH: send or receive
	local fam
	for fam in ipv4-unicast ipv6-unicast; do
		cat <<X
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "$fam"
    [neighbors.afi-safis.mp-graceful-restart.config]
      enabled = true
    [neighbors.afi-safis.add-paths.config]
      $( [ "$1" = send ] && echo "send-max = 8" || echo "receive = true")
X
	done
}

gobgp_conf() {
	cat <<X
[global.config]
  as = $PEER_AS
  router-id = "192.0.2.1"
  port = 2179
  local-address-list = ["127.0.0.2"]

[[neighbors]]
  [neighbors.config]
    neighbor-address = "127.0.0.1"
    peer-as = 65000
    auth-password = "fibd-test-key"
    admin-down = true
  [neighbors.transport.config]
    local-address = "127.0.0.2"
    remote-port = 1179
  [neighbors.timers.config]
    connect-retry = 1
  [neighbors.graceful-restart.config]
    enabled = $( [ "${GOBGP_GR:-1}" = 1 ] && echo true || echo false)
    restart-time = 120
$(_gobgp_families send)

[[neighbors]]
  [neighbors.config]
    neighbor-address = "127.0.0.5"
    peer-as = 65100
  [neighbors.transport.config]
    local-address = "127.0.0.2"
    passive-mode = true
  [neighbors.ebgp-multihop.config]
    enabled = true
    multihop-ttl = 2
$(_gobgp_families receive)
X
}

_gobgp() {
	ip netns exec "$A" gobgp --target "unix://$W/gobgp.api" "$@"
}

_gobgp_has() { # FAMILY N: gobgpd holds N paths of the family
	_gobgp global rib summary -a "ipv$1" 2>/dev/null | grep -q "Path: $2\$"
}

_gobgp_source() { # FILE: the BIRD feeding gobgpd announces FILE
	_source_conf gobgp "$1" "local 127.0.0.5 as 65100; neighbor 127.0.0.2 port 2179 as $PEER_AS;"
}

# gobgpd too would send End-of-RIB to fibd before it has the routes it relays:
# its session to fibd starts down and is enabled once it holds every path.
gobgp_start() {
	gobgp_conf >"$W/gobgpd.toml"
	rm -f "$W/gobgp.api" # left by a killed gobgpd
	# Started again while its source runs: a graceful restart (-r), in which
	# gobgpd sends nothing until each peer's End-of-RIB, fibd's included.
	start_bg PEER_PID ip netns exec "$A" gobgpd -f "$W/gobgpd.toml" -p --pprof-disable \
		${GOBGP_SOURCE_PID:+-r} --api-hosts "unix://$W/gobgp.api" >>"$W/gobgpd.out" 2>&1
	if [ -z "${GOBGP_SOURCE_PID:-}" ]; then
		_gobgp_source "$1"
		_source_start GOBGP_SOURCE_PID gobgp || return 1
	fi
	wait_until 120 _gobgp_has 4 "$(_routes_of 4 "$1" "$W/ecmp-alt")" &&
		wait_until 120 _gobgp_has 6 "$(_routes_of 6 "$1" "$W/ecmp-alt")" &&
		_gobgp neighbor 127.0.0.1 enable >/dev/null
}

gobgp_announce() {
	_gobgp_source "$1"
	birdc_in "$A" "$W/gobgp-source.conf" configure >/dev/null
}

gobgp_kill() {
	stop_pid "$PEER_PID" KILL
}

gobgp_stop() {
	stop_pid "$PEER_PID" TERM
}

gobgp_stop_notifies() {
	true
}

gobgp_addpath() {
	true
}

gobgp_version() {
	gobgpd --version | sed 's/^gobgpd version/GoBGP/'
}

gobgp_as() {
	echo 65000
}
