#!/usr/bin/env python3
"""Route sets for the netns scenarios.

  routes.py canon-json        JSON arrays from `ip -j route show` on stdin (one or
                              more, back to back) -> canonical lines, sorted
  routes.py canon-text FILE   ip-route lines (as fed) -> the same canonical lines
  routes.py bird-static NAME FILE
                              ip-route lines -> BIRD static protocols NAME4 (ipv4)
                              and NAME6 (ipv6) holding the same routes
  routes.py gen N4 N6 DEV GW4 GW6 [SEED]
                              a realistic set: IPv4 mostly /24../22, IPv6 mostly
                              /48 and /32, distinct prefixes, ip-route syntax

The canonical form is "type prefix metric M via|dev ..." with IPv6 metric 0
written as 1024, as the kernel stores it.
"""
import ipaddress
import json
import random
import sys


def canon(dst, typ, metric, fam, hops):
    if dst == "default":
        dst = "0.0.0.0/0" if fam == 4 else "::/0"
    if "/" not in dst:
        dst += "/32" if fam == 4 else "/128"
    if fam == 6 and metric == 0:
        metric = 1024
    hops = " ".join(sorted(hops))
    return f"{typ} {dst} metric {metric} {hops}".rstrip()


def from_json(text):
    dec = json.JSONDecoder()
    out, i = [], 0
    text = text.strip()
    while i < len(text):
        arr, j = dec.raw_decode(text, i)
        i = j
        while i < len(text) and text[i].isspace():
            i += 1
        for r in arr:
            fam = 6 if ":" in r["dst"] else 4
            hops = []
            if r.get("type", "unicast") != "unicast":
                pass  # the kernel shows IPv6 unreachable etc. on dev lo
            elif "nexthops" in r:
                for h in r["nexthops"]:
                    hops.append(f"nh:{h.get('gateway', '-')}@{h.get('dev', '-')}*{h.get('weight', 1)}")
            elif "gateway" in r or "dev" in r:
                hops.append(f"nh:{r.get('gateway', '-')}@{r.get('dev', '-')}*1")
            out.append(canon(r["dst"], r.get("type", "unicast"), r.get("metric", 0), fam, hops))
    return sorted(out)


def from_text(path):
    out = []
    for line in open(path):
        w = line.split("#")[0].split()
        if not w:
            continue
        typ = "unicast"
        if w[0] in ("unicast", "blackhole", "unreachable", "prohibit"):
            typ = w.pop(0)
        dst = w.pop(0)
        fam = 6 if ":" in dst else 4
        metric, hops, i = 0, [], 0
        gw = dev = None
        weight = 1
        cur = None
        while i < len(w):
            k = w[i]
            if k == "nexthop":
                if cur:
                    hops.append(cur)
                cur = {"gw": "-", "dev": "-", "w": 1}
                i += 1
                continue
            v = w[i + 1] if i + 1 < len(w) else None
            if k == "via":
                if v in ("inet", "inet6"):
                    i += 1
                    v = w[i + 1]
                if cur is not None:
                    cur["gw"] = v
                else:
                    gw = v
            elif k == "dev":
                if cur is not None:
                    cur["dev"] = v
                else:
                    dev = v
            elif k == "weight":
                if cur is not None:
                    cur["w"] = int(v)
                else:
                    weight = int(v)
            elif k in ("metric", "priority", "preference"):
                metric = int(v)
            elif k == "onlink":
                i += 1
                continue
            i += 2
        if cur:
            hops.append(cur)
        if hops:
            hh = [f"nh:{h['gw']}@{h['dev']}*{h['w']}" for h in hops]
        elif gw or dev:
            hh = [f"nh:{gw or '-'}@{dev or '-'}*1"]
        else:
            hh = []
        out.append(canon(dst, typ, metric, fam, hh))
    return sorted(out)


def gen(n4, n6, dev, gw4, gw6, seed=1):
    rnd = random.Random(seed)
    seen = set()
    lines = []
    # IPv4: about 60% /24, the rest /23../16 and a few longer, from 1.0.0.0 up
    while len(seen) < n4:
        plen = rnd.choices([24, 23, 22, 21, 20, 19, 18, 16, 25, 28], [60, 10, 12, 5, 4, 3, 2, 2, 1, 1])[0]
        a = rnd.randrange(1 << 24, 224 << 24)
        net = ipaddress.IPv4Network((a >> (32 - plen) << (32 - plen), plen))
        if net in seen or (a >> 24) == 127:
            continue
        seen.add(net)
        lines.append(f"{net} via {gw4} dev {dev}")
    seen6 = set()
    while len(seen6) < n6:
        plen = rnd.choices([48, 32, 44, 40, 36, 29, 64], [55, 15, 10, 8, 6, 4, 2])[0]
        a = (0x2001 << 112) | (rnd.getrandbits(96) << 16)
        net = ipaddress.IPv6Network((a >> (128 - plen) << (128 - plen), plen))
        if net in seen6:
            continue
        seen6.add(net)
        lines.append(f"{net} via {gw6} dev {dev}")
    sys.stdout.write("\n".join(lines) + "\n")


def bird_static(name, path):
    """Plain routes only: "PREFIX via GW [dev D]", or a type and a prefix."""
    fams = {4: [], 6: []}
    for line in open(path):
        w = line.split("#")[0].split()
        if not w:
            continue
        if w[0] in ("blackhole", "unreachable", "prohibit"):
            fams[6 if ":" in w[1] else 4].append(f"route {w[1]} {w[0]};")
        elif len(w) >= 3 and w[1] == "via":
            fams[6 if ":" in w[0] else 4].append(f"route {w[0]} via {w[2]};")
        else:
            sys.exit(f"routes.py: bird-static takes plain routes only: {line.strip()}")
    for fam, routes in fams.items():
        if routes:
            print(f"protocol static {name}{fam} {{\n  ipv{fam};\n  " + "\n  ".join(routes) + "\n}")


def main():
    cmd = sys.argv[1]
    if cmd == "canon-json":
        print("\n".join(from_json(sys.stdin.read())))
    elif cmd == "canon-text":
        print("\n".join(from_text(sys.argv[2])))
    elif cmd == "bird-static":
        bird_static(sys.argv[2], sys.argv[3])
    elif cmd == "gen":
        n4, n6 = int(sys.argv[2]), int(sys.argv[3])
        seed = int(sys.argv[7]) if len(sys.argv) > 7 else 1
        gen(n4, n6, sys.argv[4], sys.argv[5], sys.argv[6], seed)
    else:
        sys.exit("usage: routes.py canon-json | canon-text FILE | bird-static NAME FILE |"
                 " gen N4 N6 DEV GW4 GW6 [SEED]")


if __name__ == "__main__":
    main()
