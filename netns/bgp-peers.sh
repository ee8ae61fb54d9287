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

