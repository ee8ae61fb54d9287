#!/usr/bin/env bash
# Every fibctl command against a live fibd: clients and tables (JSON parsed),
# diff (missing, differs, extra, failed, from a fresh dump), decouple and couple,
# watch, dump --format binary (decoded and compared with the text form), access
# control by peer credentials, and a stalled reader dropped after
# control_timeout.
set -u
. "$(dirname "$0")/lib.sh"

require_root
require_fibd
tap_plan 36

ns_with_link A fc
scratch_dir W
chmod 755 "$W"
SOCK=$W/fibd.sock
FIBD_CONF="read_group = nogroup
admin_group = users
control_timeout = 2"
routes_py gen 3000 1000 va 198.51.100.1 2001:db8:ff::1 7 >"$W/routes"
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts"; exit 1; }
out=$(fibctl_in "$A" "$SOCK" feed --wait --name one --table 100 "$W/routes" 2>&1)
check "4000 routes installed in table 100" grep -q "installed 4000, removed 0, failed 0" <<<"$out"

# ---- clients, tables ----
check "clients -j: client one, 4000 routes, persisting" python3 -c '
import json, sys
c = {x["name"]: x for x in json.load(sys.stdin)}
assert c["one"]["routes"] == 4000 and c["one"]["state"] == "persisting", c
' < <(fibctl_in "$A" "$SOCK" -j clients)
check "clients: a text table with the client" grep -q "^one .*persisting .* 4000 " < <(fibctl_in "$A" "$SOCK" clients)
check "tables -j: both families of table 100 in sync, with their last dump" python3 -c '
import json, sys
t = {(x["table"], x["family"]): x for x in json.load(sys.stdin)}
for fam, n in (("inet", 3000), ("inet6", 1000)):
    x = t[(100, fam)]
    assert x["state"] == "in sync" and x["installed"] == n and x["last_dump"] > 0 and not x["decoupled"], x
' < <(fibctl_in "$A" "$SOCK" -j tables)

# ---- diff ----
fibctl_in "$A" "$SOCK" diff --table 100 >"$W/diff0"
rc=$?
check "diff of a table in sync: exit 0, no entry, only its summary: 0 differences" \
	test "$rc" -eq 0 -a "$(wc -l <"$W/diff0")" -eq 1 -a "$(grep -c '^diff: 0 differences .* of 4000 routes$' "$W/diff0")" -eq 1
fibctl_in "$A" "$SOCK" decouple --table 100 >/dev/null
check "decouple --table 100: tables says decoupled" grep -q "^100 .*inet .*decoupled" < <(fibctl_in "$A" "$SOCK" tables)
first=$(head -1 "$W/routes" | awk '{print $1}')
second=$(sed -n 2p "$W/routes" | awk '{print $1}')
ip -n "$A" route del "$first" table 100 proto 12
ip -n "$A" route replace "$second" via 198.51.100.3 table 100 proto 12
ip -n "$A" route add 203.0.113.0/24 via 198.51.100.1 table 100 proto 12
sleep 0.5
check "decoupled: the deleted route is not written again" \
	test -z "$(ip -n "$A" route show "$first" table 100)"
fibctl_in "$A" "$SOCK" diff --table 100 >"$W/diff1"
rc=$?
diag "$(cat "$W/diff1")"
check "diff exits 5 when something differs" test "$rc" -eq 5
check "diff: the deleted route is missing" grep -q "^missing  $first " "$W/diff1"
check "diff: the replaced route differs, with what the kernel has" \
	grep -q "^differs  $second .*the kernel has: via 198.51.100.3" "$W/diff1"
check "diff: the route nobody wants is extra" grep -q "^extra    203.0.113.0/24 via 198.51.100.1" "$W/diff1"
check "diff: its summary counts 1 missing, 1 differing, 1 extra of 4000 routes dumped" \
	grep -q "1 missing, 1 differing, 1 extra, 0 failed) against fresh dumps of 4000 routes" "$W/diff1"
check "diff -j: one JSON object per entry" python3 -c '
import json, sys
kinds = sorted(json.loads(l)["diff"] for l in sys.stdin)
assert kinds == ["differs", "extra", "missing"], kinds
' < <(fibctl_in "$A" "$SOCK" -j diff --table 100 2>/dev/null)

# Route changes are taken while decoupled, and wait.
printf '192.0.2.0/24 via 198.51.100.1\n' >"$W/two"
fibctl_in "$A" "$SOCK" feed --name two --table 100 "$W/two" >/dev/null
sleep 0.3
check "decoupled: a new feed is taken, not written" \
	test -z "$(ip -n "$A" route show 192.0.2.0/24 table 100)"
printf '192.0.2.0/24 via 198.51.100.1\n198.51.100.128/25 dev va\n' >"$W/two-more"
fed=$(fibctl_in "$A" "$SOCK" feed --wait --timeout 1 --name two --table 100 "$W/two-more" 2>&1)
rc=$?
check "feed --wait --timeout 1 into a decoupled table: exit 4, timed out, routes still desired" \
	eval '[ $rc -eq 4 ] && grep -q "timed out after 1 s: 0 results so far" <<<"$fed" &&
		fibctl_in "$A" "$SOCK" show route table 100 198.51.100.128/25 | grep -q "pending, client two"'
check "couple --table 100" fibctl_in "$A" "$SOCK" couple --table 100
check "coupled: what waited is written, the deleted route again, the changed one repaired" \
	wait_until 10 sh -c "ip -n $A route show 192.0.2.0/24 table 100 | grep -q . &&
		ip -n $A route show $first table 100 | grep -q . &&
		ip -n $A route show $second table 100 | grep -q 198.51.100.1"
# The route nobody wants came in after fibd's first scan: a rescan adopts it,
# and it goes after the startup grace; it still shows as extra until then.
check "couple: the tables are in sync again" wait_until 10 sh -c \
	"'$FIBCTL' -s '$SOCK' tables | grep -q '^100 .*inet .*in sync'"

# ---- failed ----
printf '10.99.0.0/16 via 192.0.2.77\n' >"$W/bad"
fibctl_in "$A" "$SOCK" feed --wait --name bad --table 100 "$W/bad" >/dev/null 2>&1
fibctl_in "$A" "$SOCK" diff --table 100 >"$W/diff2"
check "diff: a route the kernel refused is failed, with the kernel's reason" \
	grep -q "^failed   10.99.0.0/16 via 192.0.2.77 .*client bad; " "$W/diff2"

# ---- watch ----
fibctl_in "$A" "$SOCK" watch --table 100 >"$W/watch" 2>&1 &
WATCH=$!
fibctl_in "$A" "$SOCK" -j watch >"$W/watch.json" 2>&1 &
WATCHJ=$!
_pids+=("$WATCH" "$WATCHJ")
both_show() { grep -q "$1" "$W/watch" && grep -q "$1" "$W/watch.json"; }
# Both watch once each has shown an event: another's route, added and deleted
# again until they have (a fixed wait lost to a busy machine).
watching() {
	ip -n "$A" route del 198.19.0.0/24 table 100 2>/dev/null
	ip -n "$A" route add 198.19.0.0/24 via 198.51.100.1 table 100 proto 99 && both_show 198.19.0.0/24
}
wait_until 20 watching
ip -n "$A" route del 198.19.0.0/24 table 100
printf '192.0.2.0/24 via 198.51.100.1\n192.0.2.128/25 via 198.51.100.1\n' >"$W/two"
fibctl_in "$A" "$SOCK" feed --wait --name two --table 100 "$W/two" >/dev/null
ip -n "$A" route add 198.18.0.0/15 via 198.51.100.1 table 100 proto static
# Events come in order: once both show the last one, they have the others.
wait_until 20 both_show 198.18.0.0/15
kill "$WATCH" "$WATCHJ"
wait "$WATCH" "$WATCHJ" 2>/dev/null
diag "$(cat "$W/watch")"
check "watch: the client's new route, desired then installed" sh -c \
	"grep -q 'desired    192.0.2.128/25 via 198.51.100.1 .*client two' '$W/watch' &&
	 grep -q 'installed  192.0.2.128/25' '$W/watch'"
check "watch: another's route added to the table" grep -q "kernel-add 198.18.0.0/15 .* proto 4" "$W/watch"
check "watch -j: one JSON object per line, the same events" python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin]
got = [(e["event"], e["prefix"]) for e in ev]
assert ("desired", "192.0.2.128/25") in got and ("installed", "192.0.2.128/25") in got, got
assert any(e["event"] == "kernel-add" and e["prefix"] == "198.18.0.0/15" and e["protocol"] == 4 for e in ev), got
' <"$W/watch.json"

# ---- dump --format binary ----
fibctl_in "$A" "$SOCK" dump --table 100 --format binary >"$W/bin"
fibctl_in "$A" "$SOCK" dump --table 100 >"$W/text"
# A reader written from docs/PROTOCOL.md ("Binary dump"): version 2, the lengths
# the header gives, the trailer's count; a file cut at a record boundary is told
# from a whole one.
cat >"$W/binread.py" <<'PY'
import ipaddress, struct, sys

def read(data):
    assert data[:8] == b"FIBDBIN1", data[:8]
    version, hlen, rlen, nlen = struct.unpack_from("<HHHH", data, 8)
    assert version >= 2 and rlen >= 64 and nlen >= 40, (version, rlen, nlen)
    at, routes = hlen, []
    while True:
        if at + 4 > len(data):
            raise EOFError("no trailer: the dump was cut")
        length, mark = struct.unpack_from("<HB", data, at)
        if mark == 0xFF:
            count, = struct.unpack_from("<Q", data, at + 8)
            assert count == len(routes), (count, len(routes))
            assert at + length == len(data), "bytes after the trailer"
            return routes
        (fam, plen, table, metric, tos, rtype, state, has) = struct.unpack_from("<BBIIBBBB", data, at + 2)
        n_nh, err = struct.unpack_from("<HH", data, at + 58)
        assert length == rlen + n_nh * nlen and at + length <= len(data)
        pfx = ipaddress.ip_address(data[at + 16:at + 16 + (4 if fam == 4 else 16)])
        line = "%s/%d" % (pfx, plen)
        for i in range(n_nh):
            q = at + rlen + i * nlen
            gfam = data[q + 16]
            if gfam:
                line += " via %s" % ipaddress.ip_address(data[q:q + (4 if gfam == 4 else 16)])
            dev = data[q + 24:q + 40].rstrip(b"\0").decode()
            if dev:
                line += " dev " + dev
        assert state in (1, 3, 4, 16, 17), state
        routes.append((line, table, metric))
        at += length

data = open(sys.argv[1], "rb").read()
got = read(data)
want = []
for l in open(sys.argv[2]):
    w = l.split()
    i = w.index("table")
    want.append((" ".join(w[:i]), int(w[i + 1]), int(w[w.index("metric") + 1])))
assert sorted(got) == sorted(want), (len(got), len(want), sorted(set(got) ^ set(want))[:5])
# Cut after its last record, the trailer gone: the reader must say so.
try:
    read(data[:-16])
    sys.exit("a dump without its trailer was read as whole")
except EOFError:
    pass
print("# %d records, %d bytes" % (len(got), len(data)))
PY
check "dump --format binary: the same routes as the text form, counted by its trailer" \
	/usr/bin/python3 "$W/binread.py" "$W/bin" "$W/text"
check "dump --format binary to a terminal is refused" sh -c \
	"script -qec '$FIBCTL -s $SOCK dump --format binary' /dev/null | grep -q 'not a terminal'"

# ---- access ----
as() { # UID GID [GROUPS] -- fibctl args
	local uid=$1 gid=$2 groups=$3
	shift 3
	if [ -n "$groups" ]; then
		set -- --groups="$groups" "$@"
	else
		set -- --clear-groups "$@"
	fi
	"${_ours[@]}" ip netns exec "$A" setpriv --reuid="$uid" --regid="$gid" "$1" "$FIBCTL" -s "$SOCK" "${@:2}"
}
out=$(as 65534 1 "" status 2>&1)
rc=$?
check "a user in neither group is refused, exit 1, with who may" \
	sh -c "[ $rc -eq 1 ] && grep -q 'DENIED.*uid 65534.*may not use fibd: only root, fibd.s user or members of groups root, nogroup and users' <<'EOF2'
$out
EOF2"
check "the refusal is logged" grep -q "uid 65534 (pid [0-9]*) may not use fibd" "$SOCK.log"
check "the read group may read: status" as 65534 65534 "" status
out=$(as 65534 65534 "" resync 2>&1)
check "the read group may not resync" grep -q "DENIED: resync changes fibd's state" <<<"$out"
out=$(printf '10.0.0.0/8 via 198.51.100.1\n' | as 65534 65534 "" feed - 2>&1)
check "the read group may not feed" grep -q "DENIED.*may not feed routes" <<<"$out"
check "a supplementary admin group may resync" as 65534 1 100 resync --table 100

# ---- a stalled reader is dropped ----
( exec 3< <("${_ours[@]}" ip netns exec "$A" "$FIBCTL" -s "$SOCK" dump --format json); sleep 6 ) &
STALL=$!
_pids+=("$STALL")
check "a reader that stops is dropped after control_timeout" \
	wait_until 10 grep -q "has read nothing for [0-9]* s; closing its session" "$SOCK.log"
kill "$STALL" 2>/dev/null
check "fibd still answers" fibctl_in "$A" "$SOCK" status

# ---- decouple of every table, across a restart ----
fibctl_in "$A" "$SOCK" decouple >/dev/null
stop_pid "$FIBD_PID" TERM
start_fibd FIBD_PID "$A" "$SOCK" || { not_ok "fibd starts again"; exit 1; }
check "after a restart, table 100 is still decoupled" \
	grep -q "^100 .*inet .*decoupled" < <(fibctl_in "$A" "$SOCK" tables)
printf '192.0.2.0/24 via 198.51.100.1\n' >"$W/three"
fibctl_in "$A" "$SOCK" feed --name three --table 300 "$W/three" >/dev/null
sleep 0.3
tables=$(fibctl_in "$A" "$SOCK" tables)
check "after a restart, a table made later starts decoupled too, and is not written" \
	eval 'grep -q "^300 .*inet .*decoupled" <<<"$tables" && [ -z "$(ip -n "$A" route show table 300)" ]'
check "couple: every table" fibctl_in "$A" "$SOCK" couple
check "coupled: table 300 written" wait_until 10 sh -c "ip -n $A route show table 300 | grep -q 192.0.2.0/24"
