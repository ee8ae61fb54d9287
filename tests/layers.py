#!/usr/bin/env python3
"""The layers of fibd's daemon (docs/design.md), checked on its sources.

Each module (a .c and its .h in fibd/src; NAME-internal.h is NAME's) has a layer. A module may include the
headers of its own layer and of the layers below; never above. And no modules
include each other, directly or around a circle, within a layer either: news
goes up through hooks that main.c wires. Exits 1 naming every include that
breaks a rule; with --map, prints the module map (layer, file, lines, role).
"""
import os
import re
import sys

LAYERS = [
    ("base", "data types and utilities every layer uses",
     ["log", "conf", "slab", "slab_verify", "rattr", "table", "health", "state", "format", "privs"]),
    ("codec", "kernel route messages to keys and attributes and back, BGP messages; no sockets",
     ["kmsg", "bgp_msg"]),
    ("kernel I/O", "the writer, the dump socket, the monitor; they report through hooks",
     ["nl", "nl_send", "nl_ack", "nl_writer", "dump", "monitor"]),
    ("engine", "scans, replay, prune, repair; learn; owners of desired routes; events",
     ["sync", "sync_queue", "sync_notify", "prune", "learn", "event", "owner"]),
    ("front", "sessions and access, BGP sessions, control commands, watch, systemd notify",
     ["feed", "feed_out", "access", "ctl", "status", "show", "reply", "watch", "notify", "bgp", "bgp_rib", "bgp_peer"]),
    ("main", "wires the hooks, runs the loop", ["main"]),
]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fibd", "src")
    layer_of = {}
    for i, (_, _, mods) in enumerate(LAYERS):
        for m in mods:
            layer_of[m] = i
    edges = {}
    lines = {}
    bad = []
    for f in sorted(os.listdir(src)):
        if not f.endswith((".c", ".h")):
            continue
        mod = f[:-2].replace("-internal", "")  # a module's private header is the module's
        text = open(os.path.join(src, f)).read()
        lines[mod] = lines.get(mod, 0) + text.count("\n")
        if mod not in layer_of:
            bad.append(f"{f}: module {mod} has no layer in tests/layers.py")
            continue
        for inc in re.findall(r'^#include "([a-z_]+)\.h"', text, re.M):
            if inc == mod or inc == "config":
                continue
            if inc not in layer_of:
                bad.append(f"{f}: includes {inc}.h, which has no layer")
                continue
            edges.setdefault(mod, set()).add(inc)
            if layer_of[inc] > layer_of[mod]:
                bad.append(f"{f}: {LAYERS[layer_of[mod]][0]} module {mod} includes {inc}.h "
                           f"of the {LAYERS[layer_of[inc]][0]} layer above it")
    # Cycles: a depth-first search reports each back edge's circle once.
    state = {}

    def visit(m, path):
        state[m] = 1
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                circle = path[path.index(n):] + [n]
                bad.append("circle: " + " -> ".join(circle))
            elif not state.get(n):
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(edges):
        if not state.get(m):
            visit(m, [m])
    if "--map" in sys.argv:
        for i, (name, role, mods) in enumerate(LAYERS):
            print(f"{i} {name}: {role}")
            for m in mods:
                if m in lines:
                    print(f"    {m:8} {lines[m]:5} lines  (.c and .h)")
    for b in bad:
        print("layers: " + b)
    print(f"{len(edges)} modules, {sum(len(v) for v in edges.values())} includes between them, "
          f"{len(bad)} breaking the layers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
