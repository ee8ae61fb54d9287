#!/usr/bin/env bash
# fibd core against the real kernel: fibctl feed installs IPv4, IPv6, ECMP with
# weights, blackhole/unreachable/prohibit; a new generation withdraws and
# replaces; a nexthop behind a down link waits and installs when the link comes
# up; foreign routes stay untouched, even on the same key; two feeds in two
# tables; a malformed client beside a good one; SIGTERM leaves the routes.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 23

# NEXTHOP_OBJECTS=on|off|auto runs the scenario with that fibd setting.
FIBD_CONF="nexthop_objects = ${NEXTHOP_OBJECTS:-auto}"
diag "$FIBD_CONF"

ns_with_link NS f
ip -n "$NS" link add wa type veth peer name wb
ip -n "$NS" addr add 203.0.113.2/24 dev wa   # wa stays down for now
scratch_dir W
SOCK=$W/fibd.sock
start_fibd FIBD_PID "$NS" "$SOCK" || { not_ok "fibd starts"; exit 1; }
ok "fibd starts and answers status"
# The loop runs nice 5 below the priority fibd was started with (this
# script's), the writer thread (named fibd-writer) SCHED_BATCH (policy 3), 10
# nice steps below the loop: /proc's stat fields 19 (nice) and 41 (policy).
check "the loop runs nice 5, the writer thread SCHED_BATCH, nice 10 below the loop" wait_until 5 python3 -c '
import os, sys
pid = sys.argv[1]
def f(t): return open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
def comm(t): return open(f"/proc/{pid}/task/{t}/comm").read().strip()
main = f(pid)
assert int(main[16]) == min(19, os.nice(0) + 5), (main[16], os.nice(0))
w = [f(t) for t in os.listdir(f"/proc/{pid}/task") if comm(t) == "fibd-writer"]
assert len(w) == 1, len(w)
assert w[0][38] == "3", w[0][38]
assert int(w[0][16]) == min(19, int(main[16]) + 10), (w[0][16], main[16])
' "$FIBD_PID"

cat >"$W/a.routes" <<'R'
# table 100, one of each kind
192.0.2.0/24 via 198.51.100.1 dev va
192.0.2.128/25 via 198.51.100.1 dev va metric 20 mtu 1400 src 198.51.100.2
198.51.100.128/25 nexthop via 198.51.100.1 dev va weight 1 nexthop via 198.51.100.3 dev va weight 3
2001:db8:1::/48 via 2001:db8:ff::1 dev va
2001:db8:2::/48 nexthop via 2001:db8:ff::1 dev va weight 2 nexthop via 2001:db8:ff::3 dev va weight 7
blackhole 203.0.113.128/25
unreachable 2001:db8:dead::/48
prohibit 198.51.100.64/26
R
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/a.routes" 2>&1)
check "feed --wait installs all 8 routes" grep -q "installed 8, removed 0, failed 0, waiting 0, rejected 0" <<<"$out"
want=$(routes_py canon-text "$W/a.routes")
have=$(kernel_routes "$NS" 100)
check "kernel table 100 equals the feed (v4, v6, ECMP weights, types)" test "$want" = "$have"
check "mtu and src reach the kernel" bash -c \
	"ip -n $NS route show table 100 192.0.2.128/25 | grep -q 'src 198.51.100.2' && ip -n $NS route show table 100 192.0.2.128/25 | grep -q 'mtu 1400'"

# fibctl show route: exact, longest, longer; text and JSON; fed back, the same table.
out=$(fibctl_in "$NS" "$SOCK" show route table 100 192.0.2.128/25)
check "show route PREFIX: the route, its attributes, state and client" grep -Eq \
	"^192.0.2.128/25 via 198.51.100.1 dev va src 198.51.100.2 mtu 1400 table 100 metric 20  # installed, client fibctl$" <<<"$out"
out=$(fibctl_in "$NS" "$SOCK" show route 192.0.2.200 longest)
check "show route ADDRESS longest: the most specific covering prefix" grep -q "^192.0.2.128/25 " <<<"$out"
out=$(fibctl_in "$NS" "$SOCK" -j show route table 100 192.0.2.0/24 longer)
check "show route -j PREFIX longer: valid JSON, the prefix and what is more specific" python3 -c '
import json, sys
r = json.loads(sys.argv[1])
assert sorted(x["prefix"] for x in r) == ["192.0.2.0/24", "192.0.2.128/25"], r
x = [x for x in r if x["prefix"] == "192.0.2.128/25"][0]
assert x["state"] == "installed" and x["client"] == "fibctl" and x["metric"] == 20, x
assert x["desired"] == x["kernel"] == {"type": "unicast", "route": "via 198.51.100.1 dev va src 198.51.100.2 mtu 1400"}, x
' "$out"
fibctl_in "$NS" "$SOCK" show route table 100 | sed 's/ table 100 / /' >"$W/shown"
fibctl_in "$NS" "$SOCK" feed --wait --name copy --table 102 "$W/shown" >/dev/null 2>&1
check "show route output is ip route syntax: fed back into table 102, the same table" \
	test "$(kernel_routes "$NS" 102)" = "$(kernel_routes "$NS" 100)"

# A new generation: one route changed, two gone, one new.
sed -e 's|^192.0.2.0/24 via 198.51.100.1 dev va|192.0.2.0/24 via 198.51.100.3 dev va|' \
	-e '/^blackhole/d' -e '/^prohibit/d' "$W/a.routes" >"$W/b.routes"
echo "198.51.100.0/26 via 198.51.100.1 dev va metric 5" >>"$W/b.routes"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/b.routes" 2>&1)
check "a new generation replaces, adds and removes" grep -q "installed 2, removed 2" <<<"$out"
want=$(routes_py canon-text "$W/b.routes")
have=$(kernel_routes "$NS" 100)
check "kernel table 100 equals the new generation" test "$want" = "$have"

# Kernel nexthop objects (when fibd uses them): each used by a route of fibd's,
# none left over from the routes the second generation removed.
check "fibd's nexthop objects are exactly those its routes use" python3 -c '
import json, subprocess, sys
ns = sys.argv[1]
def j(*a):
    out = subprocess.run(["ip", "-n", ns, "-j"] + list(a), capture_output=True, text=True).stdout
    return json.loads(out or "[]")
objs = {o["id"]: o for o in j("nexthop", "show") if o.get("protocol") in ("bird", "12", 12)}
used = set()
for fam in ("-4", "-6"):
    for r in j(fam, "route", "show", "table", "all", "proto", "12"):
        if "nhid" in r:
            used.add(r["nhid"])
            for g in objs.get(r["nhid"], {}).get("group", []):
                used.add(g["id"])
assert used <= set(objs), ("routes refer to missing objects", used - set(objs))
assert set(objs) <= used, ("objects nobody uses", set(objs) - used)
' "$NS"

# Nexthop behind a link that is down: waits, then installs when the link comes up.
echo "10.20.0.0/16 via 203.0.113.1 dev wa" >"$W/c.routes"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name wait --table 101 "$W/c.routes" 2>&1)
check "route via a down link is reported waiting" grep -q "waiting 1" <<<"$out"
check "and is not in the kernel" bash -c "! ip -n $NS route show table 101 | grep -q 10.20.0.0"
ip -n "$NS" link set wa up
ip -n "$NS" link set wb up
check "link up: the waiting route is installed" \
	wait_until 10 bash -c "ip -n $NS route show table 101 proto 12 | grep -q '^10.20.0.0/16 .*via 203.0.113.1 dev wa'"

# Foreign routes: a different key beside ours, and the same key as one we want.
ip -n "$NS" route add 192.0.2.64/26 via 198.51.100.1 table 100 proto static
ip -n "$NS" route add 10.30.0.0/16 via 198.51.100.1 table 100 proto static
echo "10.30.0.0/16 via 198.51.100.3 dev va" >>"$W/b.routes"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --table 100 "$W/b.routes" 2>&1)
check "a key held by a foreign route is refused, not replaced" grep -q "failed 1" <<<"$out"
check "foreign routes untouched" bash -c \
	"ip -n $NS route show table 100 proto static | grep -q '^10.30.0.0/16 via 198.51.100.1 dev va' &&
	 ip -n $NS route show table 100 proto static | grep -q '^192.0.2.64/26 via 198.51.100.1 dev va'"

# Two feeds in two tables, and a second client wanting a key the first owns.
printf '192.0.2.0/24 via 198.51.100.1 dev va\n2001:db8:1::/48 via 2001:db8:ff::1 dev va\n' >"$W/d.routes"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name second --table 200 "$W/d.routes" 2>&1)
check "a second client feeds table 200" bash -c \
	"grep -q 'installed 2' <<<'$out' && [ \$(ip -n $NS route show table 200 proto 12 | wc -l) = 1 ] &&
	 [ \$(ip -n $NS -6 route show table 200 proto 12 | wc -l) = 1 ]"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name third --table 100 "$W/d.routes" 2>&1)
check "a key owned by another client is rejected, naming the owner" \
	grep -q "rejected: table 100 192.0.2.0/24.*owned by client fibctl" <<<"$out"

# A malformed client beside a good one: the bad session gets ERROR and is
# closed; the good feed is unaffected.
python3 - "$SOCK" >"$W/bad.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
# HELLO: [1, {1: [1], 2: 1, 3: "bad"}], then a ROUTE whose prefix length is 33
s.sendall(bytes([0x92, 0x01, 0x83, 0x01, 0x91, 0x01, 0x02, 0x01, 0x03, 0xa3]) + b"bad")
s.sendall(bytes([0x92, 0x0a, 0x84, 0x02, 0x04, 0x03, 0xc4, 0x04, 192, 0, 2, 0, 0x04, 33,
                 0x08, 0x91, 0x81, 0x02, 0xa2]) + b"va")
s.settimeout(5)
data = b""
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    pass
print("closed" if b"prefix length 33" in data else "no error seen: %r" % data)
PY
bad_pid=$!
routes_py gen 2000 500 va 198.51.100.1 2001:db8:ff::1 7 >"$W/e.routes"
out=$(fibctl_in "$NS" "$SOCK" feed --wait --name good --table 300 "$W/e.routes" 2>&1)
wait "$bad_pid"
check "malformed client gets an ERROR naming the field and is closed" grep -q closed "$W/bad.out"
want=$(routes_py canon-text "$W/e.routes")
have=$(kernel_routes "$NS" 300)
check "the good client's 2500 routes are all in the kernel" test "$want" = "$have"

# SIGTERM: fibd stops and every route stays.
before=$(kernel_routes "$NS" 100; kernel_routes "$NS" 200; kernel_routes "$NS" 300)
stop_pid "$FIBD_PID" TERM
after=$(kernel_routes "$NS" 100; kernel_routes "$NS" 200; kernel_routes "$NS" 300)
check "SIGTERM leaves every route in the kernel" test "$before" = "$after"
check "fibd logged a clean stop" grep -q "stopping; the kernel's routes stay in place" "$SOCK.log"
if [ "$_tap_failed" -gt 0 ]; then
	sed 's/^/# fibd: /' "$SOCK.log"
fi
