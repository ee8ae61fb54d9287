#!/usr/bin/env bash
# The harness itself: namespaces, veth, the kernel's route table read back as
# JSON, bounded waiting, cleanup that leaves nothing behind, and a watched
# process (fibd, a BIRD running protocol fibd) that does not end cleanly failing the test.
set -u
. "$(dirname "$0")/lib.sh"

require_root
tap_plan 13

ns_new A a
ns_new B b
check "two namespaces exist" bash -c "ip netns list | grep -q '^$A' && ip netns list | grep -q '^$B'"

veth_pair "$A" va "$B" vb
ip -n "$A" addr add 192.0.2.1/24 dev va
ip -n "$B" addr add 192.0.2.2/24 dev vb
ip -n "$A" addr add 2001:db8::1/64 dev va nodad
ip -n "$B" addr add 2001:db8::2/64 dev vb nodad
check "IPv4 across the veth pair" nsrun "$A" ping -c 1 -W 2 192.0.2.2
check "IPv6 across the veth pair" nsrun "$A" ping -6 -c 1 -W 2 2001:db8::2

ip -n "$A" route add 198.51.100.0/24 via 192.0.2.2 proto 12 table 100
ip -n "$A" route add 203.0.113.0/24 via 192.0.2.2 proto static table 100
json=$(routes_json "$A" table 100 proto 12)
check "proto 12 route read back as JSON, foreign route not matched" \
	python3 -c '
import json, sys
r = json.loads(sys.argv[1])
assert [x["dst"] for x in r] == ["198.51.100.0/24"], r
assert r[0]["gateway"] == "192.0.2.2" and r[0]["dev"] == "va", r
' "$json"

start=$SECONDS
if wait_until 1 false; then
	not_ok "wait_until gives up on a false condition"
else
	ok "wait_until gives up on a false condition"
fi
check "wait_until is bounded" test $((SECONDS - start)) -le 3

# A child script's namespaces and processes are gone once it exits.
child=$(bash -c '
	. "'"$(dirname "$0")"'/lib.sh"
	ns_new X x
	start_bg P sleep 600
	echo "$X $P"
' | tail -n 1)
read -r child_ns child_pid <<<"$child"
check "a finished script leaves no namespace and no process" \
	bash -c "! ip netns list | grep -q '^$child_ns' && ! kill -0 $child_pid 2>/dev/null"

# The cleanup and stop_pid signal only the script's own children: a PID it
# started may name another's process once it has ended (PIDs are reused; two
# scenarios run at once).
sleep 600 &
other=$!
bash -c '
	. "'"$(dirname "$0")"'/lib.sh"
	_pids+=("$1")
	stop_pid "$1" KILL
' _ "$other"
check "stop_pid and the cleanup leave a process that is not the script's child alone" kill -0 "$other"
kill "$other"
wait "$other" 2>/dev/null

# watch_exit: a watched process that exits 3 on TERM fails its script, whether
# stop_pid or the cleanup stops it; one that exits 0 does not.
watched() { # how the process ends on TERM, who stops it
	bash -c '
		. "'"$(dirname "$0")"'/lib.sh"
		: >"$3"
		rm -f "$3.trap"
		start_bg P bash -c "trap \"kill \\\$!; exit $1\" TERM; : >$3.trap; sleep 600 & wait"
		watch_exit "$P" fail "$3"
		wait_until 10 test -e "$3.trap" # its trap is set
		[ "$2" = stop_pid ] && stop_pid "$P" TERM
		true
	' _ "$@"
}
log=$(mktemp)
out=$(watched 3 stop_pid "$log")
check "stop_pid: a watched process that exits 3 on TERM fails the script" \
	bash -c 'grep -q "^not ok .*ended with status 3 on SIGTERM" <<<"$1"' _ "$out"
out=$(watched 3 cleanup "$log")
check "cleanup: a watched process that exits 3 on TERM fails the script" \
	bash -c '[ "$2" -ne 0 ] && grep -q "^not ok .*ended with status 3 on SIGTERM" <<<"$1"' _ "$out" "$(watched 3 cleanup "$log" >/dev/null; echo $?)"
out=$(watched 0 stop_pid "$log")
rc=$?
check "a watched process that exits 0 on TERM passes" bash -c '[ "$2" -eq 0 ] && ! grep -q "^not ok" <<<"$1"' _ "$out" "$rc"
# reap_pid: one that ends by itself (BIRD after a graceful restart) must exit 0.
reaped() { # its exit status
	bash -c '
		. "'"$(dirname "$0")"'/lib.sh"
		start_bg P bash -c "sleep 0.2; exit $1"
		watch_exit "$P" fail "$2"
		reap_pid "$P"
	' _ "$@"
}
out=$(reaped 3 "$log")
check "reap_pid: a watched process that exits 3 by itself fails the script" \
	bash -c 'grep -q "^not ok .*ended with status 3 by itself" <<<"$1"' _ "$out"
out=$(reaped 0 "$log")
check "reap_pid: one that exits 0 by itself passes" bash -c '! grep -q "^not ok" <<<"$1"' _ "$out"
rm -f "$log" "$log.trap"
