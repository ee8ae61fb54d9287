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
#   P_stop               a clean stop: a Cease NOTIFICATION, routes withdrawn
#   P_start_without_gr FILE  (optional) start again without graceful restart,
#                        for a peer that closes silently when it has it
#   P_addpath            true if it sends several paths of a prefix (ADD-PATH)
#   P_version            its name and version, for the log
#   P_as                 its AS (the same as fibd's where an external session
#                        would put the peer's own address in as next hop)
# $W is the scratch directory, $PEER_AS the peer's AS.

# ---- BIRD (stock BGP, no fibd protocol in its configuration) ----

bird_require() {
	require_bird
}

bird_conf_for() { # FILE: BIRD's configuration announcing FILE
	cat <<B
router id 192.0.2.1;
log "$W/bird.log" all;
protocol device {}
$(routes_py bird-static s "$1")
$( [ -s "$W/ecmp-alt" ] && routes_py bird-static alt "$W/ecmp-alt")
protocol bgp tofibd {
  local 127.0.0.2 as $PEER_AS;
  neighbor 127.0.0.1 port 1179 as 65000;
  multihop 2;
  connect delay time 0; connect retry time 1; error wait time 1, 2;
  password "fibd-test-key";
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
}

exabgp_announce() {
	echo "$1" >"$W/exabgp.fifo"
}

exabgp_kill() {
	stop_pid "$PEER_PID" KILL
}

exabgp_stop() {
	stop_pid "$PEER_PID" TERM
}

# With graceful restart negotiated ExaBGP closes its sessions without a
# NOTIFICATION even when it stops (a restart, by design): the scenario starts
# it again without the capability before a clean stop.
exabgp_start_without_gr() {
	stop_pid "$PEER_PID" TERM
	EXABGP_GR=0 exabgp_start "$1"
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
