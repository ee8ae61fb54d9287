#!/usr/bin/env python3
"""ExaBGP's API process for netns/bgp-peers.sh.

exabgp-feed.py FIFO ROUTES [ALT]: announce the routes of ROUTES ("PREFIX via GW
[dev D]" lines; the gateway is the BGP next hop) as path 1 and those of ALT as
path 2 (ADD-PATH), and End-of-RIB for IPv4 and IPv6 unicast after them each
time the session comes up (ExaBGP runs with manual-eor and tells this process
"neighbor ... up" on stdin, so the marker follows the routes it sends again,
not the start of the session).
Each line later written to FIFO names a file of routes to announce instead:
what is no longer in it is withdrawn. Exits when ExaBGP, its parent, is gone.
"""
import os
import select
import sys

CHUNK = 400  # prefixes per API line: ExaBGP packs one line into few UPDATEs


def load(path, path_id, routes):
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[1] == "via":
                routes[(w[0], path_id)] = w[2]


def routes_of(main, alt):
    routes = {}
    load(main, 1, routes)
    if alt and os.path.exists(alt):
        load(alt, 2, routes)
    return routes


def send(verb, routes):
    """verb every (prefix, path) of routes. Path 1 goes in bulk, grouped by
    next hop, in the "attributes ... nlri" form, which has no path identifier
    (ExaBGP sends path 0); path 2 goes one route a line, with its identifier."""
    groups = {}
    for (prefix, path_id), gw in routes.items():
        if path_id == 1:
            groups.setdefault(gw, []).append(prefix)
        else:
            sys.stdout.write("%s route %s path-information 0.0.0.%d next-hop %s\n"
                             % (verb, prefix, path_id, gw))
    for gw, prefixes in sorted(groups.items()):
        for i in range(0, len(prefixes), CHUNK):
            sys.stdout.write("%s attributes next-hop %s nlri %s\n"
                             % (verb, gw, " ".join(prefixes[i:i + CHUNK])))
    sys.stdout.flush()


def main():
    fifo, main_file = sys.argv[1], sys.argv[2]
    alt = sys.argv[3] if len(sys.argv) > 3 else None
    parent = os.getppid()
    # Read and write, so that the FIFO has a writer and never reads as EOF.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    current = routes_of(main_file, alt)
    send("announce", current)
    pending = events = b""
    stdin = sys.stdin.fileno()
    while os.getppid() == parent:
        ready, _, _ = select.select([fd, stdin], [], [], 0.5)
        if stdin in ready:
            event = os.read(stdin, 4096)
            if not event:
                return
            events += event
            while b"\n" in events:
                line, events = events.split(b"\n", 1)
                if line.startswith(b"neighbor ") and line.endswith(b" up"):
                    sys.stdout.write("announce eor ipv4 unicast\nannounce eor ipv6 unicast\n")
                    sys.stdout.flush()
        if fd not in ready:
            continue
        pending += os.read(fd, 4096)
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if not line.strip():
                continue
            new = routes_of(line.decode().strip(), alt)
            send("withdraw", {k: v for k, v in current.items() if k not in new})
            send("announce", {k: v for k, v in new.items() if current.get(k) != v})
            current = new


if __name__ == "__main__":
    # ExaBGP does not keep what its processes print: errors go beside the FIFO.
    sys.stderr = open(sys.argv[1] + ".err", "a")
    try:
        main()
    except BrokenPipeError:
        pass
