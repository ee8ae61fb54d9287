#!/usr/bin/env python3
"""Route sets for the netns scenarios.

  routes.py canon-json        JSON arrays from `ip -j route show` on stdin (one or
                              more, back to back) -> canonical lines, sorted
  routes.py canon-text FILE   ip-route lines (as fed) -> the same canonical lines
  routes.py bird-static NAME FILE
                              ip-route lines -> BIRD static protocols NAME4 (ipv4)
                              and NAME6 (ipv6) holding the same routes
  routes.py gen N4 N6 DEV GW4 GW6 [SEED]
                              the old set: IPv4 mostly /24../22, IPv6 mostly /48
                              and /32, spread uniformly; distinct prefixes, ip-route
                              syntax
  routes.py gen-dfz N4 N6 DEV GW4 GW6 [SEED]
                              a table shaped like today's DFZ: today's length mix,
                              clustered as allocations are (runs of /24s and /22s in
                              the same /16s; IPv6 /48s and /32s under shared /29s
                              and /32s)

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


# Today's DFZ length mix (percent), about: IPv4 39 % /24, 18 % /23, 18 % /22,
# 8 % /21, 6 % /20, the rest /8../19 and a few longer; IPv6 25 % /48, 17 % /32,
# 6 % /29, 6 % /44, the rest spread to /64 and a few longer.
DFZ4 = {24: 39, 23: 18, 22: 18, 21: 8, 20: 6, 19: 3.3, 18: 2.2, 17: 1.5, 16: 2.3,
        15: 0.3, 14: 0.3, 13: 0.2, 12: 0.1, 11: 0.05, 10: 0.03, 9: 0.01, 8: 0.01,
        25: 0.2, 26: 0.2, 27: 0.1, 28: 0.1, 29: 0.1, 30: 0.05, 32: 0.05}
DFZ6 = {48: 25, 32: 17, 29: 6, 44: 6, 40: 5, 36: 4, 46: 4, 47: 3, 45: 2, 42: 3, 33: 2,
        34: 2, 35: 1.5, 30: 1.5, 31: 1, 28: 1.5, 38: 2, 39: 1.5, 41: 1, 43: 1, 37: 1,
        56: 2, 64: 2, 52: 1, 60: 1, 57: 0.5, 63: 0.5, 120: 0.1, 127: 0.1, 128: 0.2}


def gen_dfz(n4, n6, dev, gw4, gw6, seed=1):
    """Clusters as allocations make them: blocks, and runs of prefixes in them."""
    rnd = random.Random(seed)
    lines = []

    def clustered(n, bits, block_len, mix, pick_block, pick_short, gw):
        """Exactly the mix's share of n per length; runs of one length side by side
        in a busy block; lengths shorter than a block are blocks of their own."""
        total = sum(mix.values())
        want = {plen: int(n * w / total) for plen, w in mix.items()}
        want[max(mix, key=mix.get)] += n - sum(want.values())
        seen = set()
        for plen, count in want.items():
            got = 0
            while got < count:
                if plen <= block_len:
                    net = pick_short(plen) if plen < block_len else pick_block()
                    net = net >> (bits - plen) << (bits - plen)
                    run, step, at, end = 1, 0, net, net + 1
                    if plen == block_len:  # neighbours: the next /16s or /32s of the area
                        run, step = int(rnd.paretovariate(1.5) * 2), 1 << (bits - plen)
                        end = net + 8 * step
                else:
                    base = pick_block()
                    step = 1 << (bits - plen)
                    at = base + rnd.randrange(0, 1 << (bits - block_len)) // step * step
                    end = base + (1 << (bits - block_len))
                    run = int(rnd.paretovariate(1.2) * 4)
                for _ in range(max(1, run)):
                    if at >= end or got >= count:
                        break
                    if (at, plen) not in seen:
                        seen.add((at, plen))
                        got += 1
                    at += step
        cls = ipaddress.IPv4Network if bits == 32 else ipaddress.IPv6Network
        for net, plen in seen:
            lines.append(f"{cls((net, plen))} via {gw} dev {dev}")

    # IPv4: /16 blocks in the /8s of unicast space (not 0, 10, 127, 224 and up).
    eights = [e for e in range(1, 224) if e not in (10, 127)]
    busy16 = [(rnd.choice(eights) << 24) | (rnd.randrange(256) << 16) for _ in range(max(64, n4 // 40))]
    clustered(n4, 32, 16, DFZ4, lambda: rnd.choice(busy16),
              lambda plen: (rnd.choice(eights) << 24) | rnd.getrandbits(24), gw4)
    # IPv6: /32s under shared /29s in the /16s the RIRs hand out.
    tops = [0x2001, 0x2400, 0x2401, 0x2402, 0x2403, 0x2404, 0x2600, 0x2602, 0x2604, 0x2605,
            0x2606, 0x2607, 0x2620, 0x2800, 0x2801, 0x2803, 0x2a00, 0x2a01, 0x2a02, 0x2a03,
            0x2a04, 0x2a05, 0x2a06, 0x2a07, 0x2a09, 0x2a0a, 0x2a0b, 0x2a0c, 0x2a0d, 0x2a0e,
            0x2a0f, 0x2a10, 0x2c0f]
    busy29 = [(rnd.choice(tops) << 112) | (rnd.randrange(1 << 13) << 99) for _ in range(max(32, n6 // 30))]
    clustered(n6, 128, 32, DFZ6, lambda: rnd.choice(busy29) | (rnd.randrange(8) << 96),
              lambda plen: (rnd.choice(tops) << 112) | (rnd.getrandbits(16) << 96), gw6)
    rnd.shuffle(lines)
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
    elif cmd in ("gen", "gen-dfz"):
        n4, n6 = int(sys.argv[2]), int(sys.argv[3])
        seed = int(sys.argv[7]) if len(sys.argv) > 7 else 1
        (gen if cmd == "gen" else gen_dfz)(n4, n6, sys.argv[4], sys.argv[5], sys.argv[6], seed)
    else:
        sys.exit("usage: routes.py canon-json | canon-text FILE | bird-static NAME FILE |"
                 " gen|gen-dfz N4 N6 DEV GW4 GW6 [SEED]")


if __name__ == "__main__":
    main()
