#!/usr/bin/env python3
"""Feed fibd a routes file over BGP from UPDATEs encoded beforehand, and time it.

  bgp_replay.py LOCAL PEER PORT ROUTES TABLE     (run inside fibd's namespace)

A BGP speaker that costs nothing while it is timed: every UPDATE is built
before it connects (iBGP, AS 65000, router id 192.0.2.1; the routes of one next
hop packed up to 4,096 bytes a message; IPv6 in MP_REACH_NLRI), then it sends
OPEN, KEEPALIVE, all the UPDATEs and End-of-RIB of both families as fast as the
socket takes them, and polls the kernel's counts of TABLE (netns/sampler.py)
every 10 ms until it holds every route of ROUTES ("PREFIX via GW [dev D]"
lines; then the table's IPv6 routes are counted exactly, untimed). The
session stays up until then. Prints one JSON object: seconds from the connect
to the last byte sent, and to the kernel holding every route.
"""
import ipaddress
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "netns"))
from sampler import v4 as v4_count, v6_all, v6_table  # noqa: E402

AS = 65000
MAX = 4096


def msg(kind, body):
    return b"\xff" * 16 + struct.pack("!HB", 19 + len(body), kind) + body


def open_msg():
    caps = bytes([1, 4, 0, 1, 0, 1]) + bytes([1, 4, 0, 2, 0, 1]) + bytes([65, 4]) + struct.pack("!I", AS)
    params = bytes([2, len(caps)]) + caps
    return msg(1, struct.pack("!BHH4sB", 4, AS, 90, socket.inet_aton("192.0.2.1"), len(params)) + params)


def attr(flags, kind, value):
    if len(value) > 255:
        return struct.pack("!BBH", flags | 0x10, kind, len(value)) + value
    return struct.pack("!BBB", flags, kind, len(value)) + value


def nlri(net):
    n = (net.prefixlen + 7) // 8
    return bytes([net.prefixlen]) + net.network_address.packed[:n]


def updates(gw, nets):
    """The UPDATEs announcing nets (one family) through gw."""
    common = attr(0x40, 1, b"\x00") + attr(0x40, 2, b"") + attr(0x40, 5, struct.pack("!I", 100))
    out, batch = [], []
    v6 = gw.version == 6

    def flush():
        if not batch:
            return
        if v6:
            reach = struct.pack("!HBB", 2, 1, 16) + gw.packed + b"\x00" + b"".join(batch)
            attrs = common + attr(0x80, 14, reach)
            out.append(msg(2, struct.pack("!HH", 0, len(attrs)) + attrs))
        else:
            attrs = common + attr(0x40, 3, gw.packed)
            out.append(msg(2, struct.pack("!HH", 0, len(attrs)) + attrs + b"".join(batch)))
        batch.clear()

    room = MAX - 19 - 4 - 64  # header, lengths, attributes (the MP_REACH head included)
    used = 0
    for net in nets:
        b = nlri(net)
        if used + len(b) > room:
            flush()
            used = 0
        batch.append(b)
        used += len(b)
    flush()
    return out


def main():
    local, peer, port, path, table = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    groups, n4, n6 = {}, 0, 0
    for line in open(path):
        f = line.split()
        if len(f) < 3 or f[1] != "via":
            continue
        net, gw = ipaddress.ip_network(f[0]), ipaddress.ip_address(f[2])
        groups.setdefault(gw, []).append(net)
        if net.version == 4:
            n4 += 1
        else:
            n6 += 1
    wire = b"".join(m for gw, nets in groups.items() for m in updates(gw, nets))
    eor = msg(2, b"\x00\x00\x00\x00") + msg(2, struct.pack("!HH", 0, 6) + attr(0x80, 15, struct.pack("!HB", 2, 1)))
    others6 = v6_all() - v6_table(table)

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((local, 0))
    t0 = time.monotonic()
    s.connect((peer, port))
    s.sendall(open_msg())
    got, kinds = b"", []
    while kinds[-1:] != [4]:  # fibd's OPEN, then its KEEPALIVE
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("bgp_replay: fibd closed the session during the OPEN exchange")
        got += chunk
        while len(got) >= 19 and len(got) >= struct.unpack("!H", got[16:18])[0]:
            n = struct.unpack("!H", got[16:18])[0]
            if got[18] == 3:
                sys.exit("bgp_replay: fibd sent a NOTIFICATION: %s" % got[19:n].hex())
            kinds.append(got[18])
            got = got[n:]
    s.sendall(msg(4, b""))
    s.sendall(wire + eor)
    sent = time.monotonic() - t0
    # Timed on the cheap counts (no other table's IPv6 routes change here);
    # the exact IPv6 count (a dump of the table) is checked after, untimed.
    while not (v4_count(table) >= n4 and v6_all() - others6 >= n6):
        if time.monotonic() - t0 > 600:
            sys.exit("bgp_replay: the kernel did not get every route in 600 s")
        time.sleep(0.01)
    done = time.monotonic() - t0
    if v6_table(table) < n6:
        sys.exit("bgp_replay: table %d has fewer than %d IPv6 routes" % (table, n6))
    s.sendall(msg(3, bytes([6, 2])))  # Cease, administrative shutdown
    s.close()
    print(json.dumps({"routes": n4 + n6, "updates_bytes": len(wire), "sent_s": round(sent, 2),
                      "kernel_s": round(done, 2)}))


if __name__ == "__main__":
    main()
