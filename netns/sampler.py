#!/usr/bin/env python3
"""Count a kernel table's routes every INTERVAL ms, cheaply, until OUT.stop exists.

  sampler.py TABLE OUT [INTERVAL_MS]     (run inside the namespace)
  sampler.py sample FILE [AMONG]        (v4_sample's prefixes, one a line)

IPv4: the table's prefixes from /proc/net/fib_triestat. IPv6: all IPv6 routes
from /proc/net/rt6_stats, less those of other tables, counted at the start and
at the end; the larger of the two is taken off every sample, so that a count
is never too high (a link-local or multicast route coming and going elsewhere
cannot hide a missing one). Dumping a 200k-route table with ip takes
longer than the interval; rt6_stats costs microseconds, fib_triestat walks
every table's trie (26 ms of CPU for 200k routes, 75 ms for 600k; see
V4Lookup for a cheap gate). OUT.started appears
after the first sample. Writes to OUT, as JSON:
samples, the fewest routes seen, the most, the longest gap between samples, and
drops (samples lower than the one before), the largest of them and when the
first came (s after the first sample).
"""
import json
import os
import re
import socket
import struct
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


def v4_nets(path):
    """A routes file's IPv4 prefixes ("PREFIX ..." or "TYPE PREFIX" lines), as (address, length)."""
    nets = []
    for line in open(path):
        f = [w for w in line.split()[:2] if "/" in w]
        if f and ":" not in f[0]:
            a, n = f[0].split("/")
            nets.append((struct.unpack("!I", socket.inet_aton(a))[0], int(n)))
    return nets


def v4_sample(path, k=1024, among=None):
    """Up to K of a routes file's IPv4 prefixes, evenly spread, none with another
    of its prefixes (or of the file among) at its first address: the lookup of
    that address finds the prefix itself once it is in."""
    nets = v4_nets(path)
    held = set(nets) | set(v4_nets(among) if among else [])
    out = []
    for a, n in nets[::max(1, len(nets) // k)][:k]:
        if not any((a, m) in held for m in range(n + 1, 33)):
            out.append("%s/%d" % (socket.inet_ntoa(struct.pack("!I", a)), n))
    return out


class V4Lookup:
    """Whether a sample of IPv4 prefixes (v4_sample) is in the kernel, or out of
    it: an RTM_GETROUTE lookup each (RTM_F_FIB_MATCH: the route found, not the
    result), microseconds apiece, where reading /proc/net/fib_triestat walks
    every table's trie (75 ms of CPU with 600k routes here). A gate for the
    exact count while the table moves one way: a prefix seen as armed for
    (arm()) is not looked up again; due() says when to read the exact count.
    Lookups follow the routing rules, so a
    table other than main gets a rule of its own, after main's and default's
    (the namespace's traffic is routed as before)."""

    BATCH = 128  # requests per send; the replies fit the default receive buffer
    EXACT_EVERY = 5.0  # s: due() at least this often, should a prefix never be seen

    def __init__(self, table, nets):
        rule = ["pref", "40000", "lookup", str(table)]
        if table not in (254, 255) and not subprocess.run(["ip", "rule", "show", *rule],
                                                          capture_output=True, text=True).stdout.strip():
            subprocess.run(["ip", "rule", "add", *rule], check=True)
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
        self.s.bind((0, 0))
        self.nets = {}
        for seq, net in enumerate(nets, 1):
            a, n = net.split("/")
            self.nets[seq] = (socket.inet_aton(a), int(n))
        self.arm(True)

    def arm(self, present):
        """Wait for every prefix to be in the kernel (present) or out of it."""
        self.present = present
        self.waiting = dict(self.nets)
        self.due_at = time.monotonic()

    def due(self):
        """Whether to read the exact count now: done(), or EXACT_EVERY s since it was last due."""
        now = time.monotonic()
        if self.done() or now - self.due_at >= self.EXACT_EVERY:
            self.due_at = now
            return True
        return False

    def done(self):
        """True once every prefix has been seen as armed for; stops at the first batch with one not yet."""
        seqs = list(self.waiting)
        for i in range(0, len(seqs), self.BATCH):
            batch = seqs[i:i + self.BATCH]
            req = b""
            for seq in batch:
                # nlmsghdr, rtmsg (AF_INET, dst_len 32, flags RTM_F_FIB_MATCH), RTA_DST
                body = struct.pack("=BBBBBBBBIHH4s", socket.AF_INET, 32, 0, 0, 0, 0, 0, 0, 0x2000,
                                   8, 1, self.nets[seq][0])
                req += struct.pack("=IHHII", 16 + len(body), 26, 1, seq, 0) + body  # RTM_GETROUTE, NLM_F_REQUEST
            self.s.send(req)
            left = set(batch)
            while left:
                data = self.s.recv(1 << 20)
                off = 0
                while off + 16 <= len(data):
                    ln, typ, _, seq, _ = struct.unpack_from("=IHHII", data, off)
                    if seq in left:
                        left.discard(seq)
                        if self.found(data, off, ln, typ, seq) == self.present:
                            del self.waiting[seq]
                    off += (ln + 3) & ~3
            if any(seq in self.waiting for seq in batch):
                return False
        return True

    def found(self, data, off, ln, typ, seq):
        """Whether the reply at off is the prefix itself (RTM_NEWROUTE; else an error: none)."""
        if typ != 24:
            return False
        dst, plen = None, data[off + 17]
        a = off + 28
        while a + 4 <= off + ln:
            alen, atyp = struct.unpack_from("=HH", data, a)
            if atyp == 1 and alen == 8:  # RTA_DST
                dst = data[a + 4:a + 8]
            a += (alen + 3) & ~3
        return (dst, plen) == self.nets[seq]


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
    largest_drop, first_drop_s = 0, None
    prev_n, prev_t = None, None
    start = time.monotonic()
    end = start + 600
    while (samples == 0 or not os.path.exists(out + ".stop")) and time.monotonic() < end:
        t = time.monotonic()
        n = v4(table) + v6_all()  # the other tables' IPv6 routes come off at the end
        samples += 1
        low = n if low is None else min(low, n)
        high = max(high, n)
        if prev_n is not None and n < prev_n:
            drops += 1
            largest_drop = max(largest_drop, prev_n - n)
            if first_drop_s is None:
                first_drop_s = round(t - start, 2)
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
                   "largest_drop": largest_drop, "first_drop_s": first_drop_s,
                   "ipv6_elsewhere": [others_start, others_end]}, f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    if sys.argv[1] == "sample":
        print("\n".join(v4_sample(sys.argv[2], among=sys.argv[3] if len(sys.argv) > 3 else None)))
    else:
        main()
