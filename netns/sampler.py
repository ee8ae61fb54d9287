#!/usr/bin/env python3
"""Count a kernel table's routes every INTERVAL ms, cheaply, until OUT.stop exists.

  sampler.py TABLE OUT [INTERVAL_MS]     (run inside the namespace)

IPv4: the table's prefixes from /proc/net/fib_triestat. IPv6: all IPv6 routes
from /proc/net/rt6_stats, less those of other tables, counted at the start and
at the end; the larger of the two is taken off every sample, so that a count
is never too high (a link-local or multicast route coming and going elsewhere
cannot hide a missing one). Dumping a 200k-route table with ip takes
longer than the interval; these files cost microseconds. OUT.started appears
after the first sample. Writes to OUT, as JSON:
samples, the fewest routes seen, the most, the longest gap between samples, and
drops (samples lower than the one before).
"""
import json
import os
import re
import subprocess
import sys
import time


def v4(table):
    # (With no rule of one's own, the kernel keeps the main and local tables
    # in one trie, and both entries show its prefixes: the main table's count
    # includes the local addresses.)
    text = open("/proc/net/fib_triestat").read()
    name = {254: "Main", 255: "Local"}.get(table, "Id %d" % table)
    m = re.search(r"^%s:\n(?:.*\n)*?\s+Prefixes:\s+(\d+)" % name, text, re.M)
    return int(m.group(1)) if m else 0


def v6_all():
    return int(open("/proc/net/rt6_stats").read().split()[3], 16)


def v6_table(table):
    # -o: one line per route, also for multipath ones
    r = subprocess.run(["ip", "-6", "-o", "route", "show", "table", str(table)], capture_output=True)
    return r.stdout.count(b"\n") if r.returncode == 0 else 0


def held_besides(table, routes):
    """(IPv4, IPv6): what TABLE holds now (as v4() and v6_table() count) less
    the prefixes of the routes file ("PREFIX ..." lines) among them: what
    stays there besides those routes once they are in (the link's routes in
    the main table; a route with the link's own prefix loses to the connected
    one, which then counts as that route)."""
    ours = {line.split()[0] for line in open(routes) if line.strip()}

    def overlap(fam):
        out = subprocess.run(["ip", fam, "-o", "route", "show", "table", str(table)], capture_output=True,
                             text=True).stdout
        return sum(1 for line in out.splitlines() if line.split()[0] in ours)
    return v4(table) - overlap("-4"), v6_table(table) - overlap("-6")


def main():
    table, out = int(sys.argv[1]), sys.argv[2]
    interval = (int(sys.argv[3]) if len(sys.argv) > 3 else 50) / 1000
    others6 = v6_all() - v6_table(table)
    samples, low, high, drops, gap = 0, None, 0, 0, 0.0
    prev_n, prev_t = None, None
    end = time.monotonic() + 600
    while (samples == 0 or not os.path.exists(out + ".stop")) and time.monotonic() < end:
        t = time.monotonic()
        n = v4(table) + v6_all()  # the other tables' IPv6 routes come off at the end
        samples += 1
        low = n if low is None else min(low, n)
        high = max(high, n)
        if prev_n is not None and n < prev_n:
            drops += 1
        if prev_t is not None:
            gap = max(gap, t - prev_t)
        prev_n, prev_t = n, t
        if samples == 1:
            open(out + ".started", "w").close()
        time.sleep(max(0.0, interval - (time.monotonic() - t)))
    others_start, others_end = others6, v6_all() - v6_table(table)
    others6 = max(others_start, others_end)
    low, high = low - others6, high - others6
    with open(out + ".tmp", "w") as f:
        json.dump({"samples": samples, "min": low, "max": high, "drops": drops,
                   "max_gap_ms": round(gap * 1000, 1), "last": prev_n - others6,
                   "ipv6_elsewhere": [others_start, others_end]}, f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main()
