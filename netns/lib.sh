# netns/lib.sh: the namespace harness for the integration scenarios.
#
# Source it from netns/NN-<scenario>.sh. It prints TAP (plan, ok / not ok lines,
# '#' diagnostics), makes throwaway network namespaces with unique names
# (fibdt-<pid>-<name>), connects them with veth pairs, starts processes and
# remembers their PIDs, and removes all of it from an EXIT trap, killing only
# the PIDs it started. Waiting is bounded polling (wait_until), never a bare sleep.
#
# Environment: BUILD_DIR (the meson build with fibd, fibctl...), set by meson.

NS_PREFIX="fibdt-$$"
# meson gives each test MALLOC_PERTURB_, so that glibc fills every block it
# hands out or takes back and a read of uninitialised or freed memory shows.
# That is meant for our programs: fibd, fibctl, BIRD and birdc get it through
# "${_ours[@]}" (env with it). The harness itself runs without it (the peers'
# daemons and bench/nlwriter too): the scenario that sources this starts again
# here without it (bash -x kept). With it, 15-dump took 70 s instead of 27 s,
# most of it bash's: 37 s to take the JSON of a 200,000-route table
# (`ip -j route show`) into a command substitution.
if [ -n "${MALLOC_PERTURB_:-}" ] && [ "${BASH_SOURCE[1]:-}" = "$0" ] && [ -f "$0" ]; then
	export FIBDT_MALLOC_PERTURB=$MALLOC_PERTURB_
	case $- in *x*) exec env -u MALLOC_PERTURB_ "$BASH" -x "$0" "$@" ;; esac
	exec env -u MALLOC_PERTURB_ "$BASH" "$0" "$@"
fi
_ours=(env)
[ -n "${FIBDT_MALLOC_PERTURB:-}" ] && _ours=(env "MALLOC_PERTURB_=$FIBDT_MALLOC_PERTURB")
_ns_list=()
_dirs=()
_made=()
_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$_lib_dir/link.sh"
_pids=()
# Processes whose end is looked at (watch_exit): PID -> "fail LOG" or "diag LOG".
declare -A _watch=()
_tap_n=0
_tap_failed=0

tap_plan() { echo "1..$1"; }

skip_all() { # reason
	echo "1..0 # SKIP $*"
	exit 0
}

diag() { printf '%s\n' "$*" | sed 's/^/# /'; }

ok() { # description
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - $*"
}

not_ok() { # description
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n - $*"
}

# check DESCRIPTION COMMAND...: one TAP line from a command's exit status; its
# output is shown as diagnostics when it fails.
check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		not_ok "$desc"
		[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/#   /'
	fi
}

# wait_until TIMEOUT_SECONDS COMMAND...: poll every 0.1 s until COMMAND succeeds.
# Returns 1 if it did not within the timeout.
wait_until() {
	local timeout=$1
	shift
	local deadline=$((SECONDS + timeout))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.1
	done
}

require_root() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root for network namespaces"
	command -v ip >/dev/null || skip_all "ip (iproute2) not installed"
	ip netns add "${NS_PREFIX}-probe" 2>/dev/null || skip_all "cannot create network namespaces"
	ip netns del "${NS_PREFIX}-probe"
}

# ns_new VAR NAME: a namespace named ${NS_PREFIX}-NAME with loopback up, put in
# VAR. In the caller's shell (not a subshell), so that the namespace is registered.
ns_new() {
	local ns="${NS_PREFIX}-$2"
	ip netns add "$ns" || return 1
	_ns_list+=("$ns")
	ip -n "$ns" link set lo up
	printf -v "$1" '%s' "$ns"
}

nsrun() { # NS COMMAND...
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# veth_pair NS1 IF1 NS2 IF2: a veth pair between two namespaces, both ends up.
veth_pair() {
	ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" || return 1
	ip -n "$1" link set "$2" up
	ip -n "$3" link set "$4" up
}

# start_bg VAR COMMAND...: start a process in the background, remember its PID
# for cleanup and put it in VAR.
start_bg() {
	local var=$1
	shift
	"$@" &
	local pid=$!
	_pids+=("$pid")
	printf -v "$var" '%s' "$pid"
}

# watch_exit PID fail|diag LOG: how the process ends when stop_pid or the
# cleanup stops it is looked at: on TERM or INT it must exit 0, on another
# signal die of it. If not (a crash, a sanitizer's report at exit, a hang
# ended by KILL), "fail" is a failed test and "diag" (another project's
# daemon) a diagnostic; either shows LOG's tail.
watch_exit() {
	_watch[$1]="$2 $3"
}

# _exit_seen PID SIGNAL|none STATUS: the verdict of watch_exit on a process stopped
# with SIGNAL, or that ended by itself (none).
_exit_seen() {
	local pid=$1 sig=$2 status=$3 mode log want=0
	[ -n "${_watch[$pid]:-}" ] || return 0
	read -r mode log <<<"${_watch[$pid]}"
	unset "_watch[$pid]"
	local how="on SIG$sig"
	case $sig in
	TERM | INT) ;;
	none) how="by itself" ;;
	*) want=$((128 + $(kill -l "$sig"))) ;;
	esac
	[ "$status" -eq "$want" ] && return 0
	local what="process $pid ended with status $status $how (expected $want)"
	[ "$status" -gt 128 ] && what+=", killed by SIG$(kill -l $((status - 128)))"
	if [ "$mode" = fail ]; then
		not_ok "$what"
	else
		diag "$what"
	fi
	[ -f "$log" ] && tail -n 30 "$log" | sed 's/^/#   /'
	return 0
}

# _child PID: PID is a running child of this shell. One that ended may have had
# its PID given to another process since, another scenario's perhaps (two
# run at once): that is not to be signalled.
_child() {
	local stat f
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	read -r -a f <<<"${stat##*) }" # past the command's name, which may hold anything
	[ "${f[1]}" = "$BASHPID" ]      # state, then the parent's PID
}

# stop_pid PID [SIGNAL]: signal one of our processes and wait (bounded) for it.
stop_pid() {
	local pid=$1 sig=${2:-TERM} status=0
	_child "$pid" || return 0
	kill -s "$sig" "$pid" 2>/dev/null || return 0
	# bash reports a killed job on its stderr when it reaps it: not a failure.
	{
		wait_until 10 bash -c "! kill -0 $pid" || { _child "$pid" && kill -s KILL "$pid"; }
		wait "$pid" || status=$?
	} 2>/dev/null
	_exit_seen "$pid" "$sig" "$status"
}

# reap_pid PID: a watched process that ends by itself (BIRD after birdc
# graceful restart): it must exit 0. One still running after 20 s is stopped
# (stop_pid).
reap_pid() {
	local pid=$1 status=0
	wait_until 20 bash -c "! kill -0 $pid" || { stop_pid "$pid" TERM; return 0; }
	{ wait "$pid" || status=$?; } 2>/dev/null
	_exit_seen "$pid" none "$status"
}

# routes_json NS [ip route selectors...]: the kernel's routes as JSON.
routes_json() {
	local ns=$1
	shift
	ip -n "$ns" -j route show "$@"
}

# scratch_dir VAR: a temporary directory for the scenario's files (fibd's
# socket, log, configuration and state go in it too), put in VAR. Removed at
# exit; kept, and named, when a test failed.
scratch_dir() {
	local d
	d=$(mktemp -d /tmp/fibd-test.XXXXXX) || return 1
	_dirs+=("$d")
	printf -v "$1" '%s' "$d"
}

# made_dir DIR: a directory a peer needs outside the scratch directory; one
# that was not there before is removed at exit, if it is empty by then.
made_dir() {
	[ -d "$1" ] && return 0
	mkdir -p "$1" && _made+=("$1")
}

# routes_py ARGS...: the route set generator and canonicaliser (netns/routes.py).
routes_py() {
	python3 "$_lib_dir/routes.py" "$@"
}

_cleanup() {
	local rc=$? alive=() status
	for pid in "${_pids[@]}"; do
		_child "$pid" && kill -s TERM "$pid" 2>/dev/null && alive+=("$pid")
	done
	for pid in "${alive[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		_child "$pid" && kill -s KILL "$pid" 2>/dev/null
		status=0
		wait "$pid" 2>/dev/null || status=$?
		_exit_seen "$pid" TERM "$status"
	done
	for ns in "${_ns_list[@]}"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	for d in "${_made[@]}"; do
		rmdir "$d" 2>/dev/null || true
	done
	for d in "${_dirs[@]}"; do
		if [ "$_tap_failed" -gt 0 ] || [ "$rc" -ne 0 ]; then
			echo "# kept for inspection: $d"
		else
			rm -rf "$d"
		fi
	done
	if [ "$_tap_failed" -gt 0 ] && [ "$rc" -eq 0 ]; then
		rc=1
	fi
	exit "$rc"
}
trap _cleanup EXIT
trap 'exit 130' INT TERM

# ns_with_link VAR NAME: a namespace with one veth pair, va (198.51.100.2/24,
# 2001:db8:ff::2/64) and vb, both up: a link for routes via 198.51.100.1 and
# 2001:db8:ff::1.
ns_with_link() {
	ns_new "$1" "$2" || return 1
	link_setup "${!1}" va vb
}

# ---- fibd helpers ----

FIBD=${BUILD_DIR:-build}/fibd/fibd
FIBCTL=${BUILD_DIR:-build}/fibd/fibctl/fibctl

require_fibd() {
	[ -x "$FIBD" ] && [ -x "$FIBCTL" ] || skip_all "fibd or fibctl not built (BUILD_DIR=${BUILD_DIR:-})"
}

# start_fibd VAR NS SOCKET [fibd options...]: fibd in the foreground inside NS,
# logging to $SOCKET.log, with a configuration of its own ($SOCKET.conf: the
# state file beside the socket, plus the lines in $FIBD_CONF if set); waits
# until it answers fibctl status.
start_fibd() {
	local var=$1 ns=$2 sock=$3
	shift 3
	{
		echo "state_file = $sock.state"
		[ -n "${FIBD_CONF:-}" ] && printf '%s\n' "$FIBD_CONF"
	} >"$sock.conf"
	start_bg "$var" "${_ours[@]}" ip netns exec "$ns" "$FIBD" -f -s "$sock" -c "$sock.conf" "$@" 2>>"$sock.log"
	watch_exit "${!var}" fail "$sock.log"
	wait_until 10 ip netns exec "$ns" "$FIBCTL" -s "$sock" status
}

# fibctl_in NS SOCKET ARGS...: fibctl inside a namespace.
fibctl_in() {
	local ns=$1 sock=$2
	shift 2
	"${_ours[@]}" ip netns exec "$ns" "$FIBCTL" -s "$sock" "$@"
}

# fibd_counters NS SOCKET SECTION.NAME...: those counters of `fibctl -j status`,
# on one line (netlink.adds netlink.replaces netlink.deletes: fibd's writes).
fibd_counters() {
	local ns=$1 sock=$2
	shift 2
	fibctl_in "$ns" "$sock" -j status | python3 -c 'import json, sys
s = json.load(sys.stdin)
print(" ".join(str(s[f.split(".")[0]][f.split(".")[1]]) for f in sys.argv[1:]))' "$@"
}

# kernel_routes NS TABLE: fibd's routes (proto 12) of one table, both families,
# one per line in a canonical text form, sorted.
kernel_routes() {
	local ns=$1 table=$2
	local fam out
	for fam in -4 -6; do
		# A family without the table fails, after printing half a JSON array.
		out=$(ip -n "$ns" "$fam" -j route show table "$table" proto 12 2>/dev/null) && echo "$out"
	done | routes_py canon-json
}

# kernel_table_is NS TABLE FILE: fibd's routes in TABLE are exactly those of
# FILE (ip route lines), compared in the canonical form; for check and wait_until.
kernel_table_is() {
	[ "$(kernel_routes "$1" "$2")" = "$(routes_py canon-text "$3")" ]
}

# sampler_start VAR NS TABLE OUT: count TABLE's routes (both families) every
# 50 ms (netns/sampler.py, cheap: /proc counters) until sampler_stop; returns
# once the first sample is taken. The sampler's PID goes in VAR.
sampler_start() {
	local var=$1 ns=$2 table=$3 out=$4
	rm -f "$out" "$out.stop" "$out.started"
	start_bg "$var" ip netns exec "$ns" python3 "$_lib_dir/sampler.py" "$table" "$out" 50
	wait_until 10 test -e "$out.started"
}

# sampler_stop PID OUT: stop the sampler; prints "fewest samples drops
# longest-gap-ms most". (Polls for OUT: it may run in a command substitution,
# which cannot wait for the sampler.)
sampler_stop() {
	touch "$2.stop"
	wait_until 10 test -s "$2"
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))
print(s["min"], s["samples"], s["drops"], s["max_gap_ms"], s["max"])' "$2"
}

# ---- BIRD helpers (bird-glue/build.sh leaves bird and birdc in BIRD_DIR) ----

BIRD_DIR=${BIRD_DIR:-$(dirname "$_lib_dir")/build/bird}

# require_bird: skip without the patched BIRD, unless BIRD_REQUIRED=1 (the
# README's test command sets it: there a missing BIRD is a failure).
# bird_built: the patched BIRD is there (BIRD_DIR).
bird_built() {
	[ -x "${BIRD_DIR:-}/bird" ] && [ -x "${BIRD_DIR:-}/birdc" ]
}

require_bird() {
	bird_built && return 0
	if [ "${BIRD_REQUIRED:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - patched BIRD not found in $BIRD_DIR (bird-glue/build.sh)"
		exit 1
	fi
	skip_all "patched BIRD not built (bird-glue/build.sh; BIRD_DIR=$BIRD_DIR)"
}

# bird_major: the major version of the BIRD under test (2 or 3).
bird_major() {
	"$BIRD_DIR/bird" --version 2>&1 | sed -n 's/^BIRD version \([0-9]*\)\..*/\1/p'
}

# start_bird VAR NS CONF [BIRD OPTIONS...]: BIRD in the foreground inside NS
# with configuration CONF, its control socket at CONF.ctl and its log at
# CONF.log; waits until birdc answers. A BIRD that runs protocol fibd runs our
# code: it must stop cleanly (watch_exit fail); another is a peer, reported (diag).
start_bird() {
	local var=$1 ns=$2 conf=$3 watch=diag
	shift 3
	grep -Eq '^[[:space:]]*protocol[[:space:]]+fibd' "$conf" && watch=fail
	start_bg "$var" "${_ours[@]}" ip netns exec "$ns" "$BIRD_DIR/bird" -f -c "$conf" -s "$conf.ctl" \
		-P "$conf.pid" "$@" 2>>"$conf.log"
	watch_exit "${!var}" "$watch" "$conf.log"
	wait_until 20 ip netns exec "$ns" "$BIRD_DIR/birdc" -s "$conf.ctl" show status
}

# birdc_in NS CONF ARGS...: birdc for the BIRD started with CONF; a BIRD that
# has not answered in 120 s is hung, and the command fails (timeout).
# --foreground: birdc stays in the scenario's process group, so that it ends
# with the scenario if meson kills that (ip netns exec execs birdc: no child).
birdc_in() {
	local ns=$1 conf=$2
	shift 2
	"${_ours[@]}" timeout --foreground 120 ip netns exec "$ns" "$BIRD_DIR/birdc" -s "$conf.ctl" "$@"
}
