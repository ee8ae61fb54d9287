# bench/lib.sh: what the benchmarks share. Sourced; sets an EXIT trap that
# kills the PIDs in pids[], removes the namespace and the scratch directory W.
. "$(dirname "${BASH_SOURCE[0]}")/../netns/link.sh"

W=$(mktemp -d)
NS=""
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

# fresh_ns NAME: a new namespace (the previous one removed) with loopback and
# the link va/vb (netns/link.sh).
fresh_ns() {
	[ -n "$NS" ] && ip netns del "$NS"
	NS="fibdbench-$$-$1"
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	link_setup "$NS" va vb
}

# PY: a python3 with msgpack (Debian's python3-msgpack is for /usr/bin/python3),
# for the probes that speak proto-shim (ctl_probe.py).
PY=$(for p in python3 /usr/bin/python3; do "$p" -c 'import msgpack' 2>/dev/null && echo "$p" && break; done)
need_msgpack_python() {
	[ -n "$PY" ] || { echo "$(basename "$0"): needs python3-msgpack (scripts/setup.sh)" >&2; exit 1; }
}
