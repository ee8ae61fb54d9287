#!/usr/bin/env python3
"""Time fibd's status request, one every INTERVAL ms, until OUT.stop exists.

  ctl_probe.py SOCKET OUT [INTERVAL_MS]

One control session (proto-shim over msgpack, docs/PROTOCOL.md), one request at
a time: the latency is from sending CTL_REQUEST status to receiving its
CTL_END, so a busy fibd loop shows as a late answer. Writes JSON to OUT:
probes, p50/p95/p99/max in ms and replies over 1 s (bird_probe.summary).
"""
import json
import os
import socket
import sys
import time

import msgpack

from bird_probe import summary


def main():
    path, out = sys.argv[1], sys.argv[2]
    interval = (int(sys.argv[3]) if len(sys.argv) > 3 else 50) / 1000
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    unp = msgpack.Unpacker(raw=False, strict_map_key=False)

    def next_msg():
        while True:
            for m in unp:
                return m
            data = s.recv(1 << 20)
            if not data:
                sys.exit("ctl_probe: fibd closed the session")
            unp.feed(data)

    s.sendall(msgpack.packb([1, {1: [1], 2: 2, 3: "ctl-probe"}]))
    if next_msg()[0] != 2:
        sys.exit("ctl_probe: no WELCOME")
    open(out + ".started", "w").close()
    lat, req = [], 0
    while not os.path.exists(out + ".stop"):
        t0 = time.monotonic()
        req += 1
        s.sendall(msgpack.packb([30, {1: req, 2: "status"}]))
        while True:
            m = next_msg()
            if m[0] == 32 and m[1][1] == req:
                break
        lat.append(time.monotonic() - t0)
        time.sleep(max(0.0, interval - (time.monotonic() - t0)))
    with open(out, "w") as f:
        json.dump(summary(lat), f)


if __name__ == "__main__":
    main()
