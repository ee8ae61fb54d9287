#!/usr/bin/python3
"""Write the golden vectors in this folder from the protocol spec, independently
of the C encoder.

Each vector is built here with python3-msgpack (Debian: python3-msgpack) from
the key numbers in docs/PROTOCOL.md, and states by hand what a correct decoder
must make of it. The C test (tests/unit/proto-shim/test_vectors.c) decodes the
bytes, compares the text form, and for canonical vectors re-encodes them and
compares the bytes. So a disagreement between the spec, this file and the C
code fails the unit suite.

Run it after changing the spec: /usr/bin/python3 tests/vectors/make-vectors.py
"""
import os
import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))

V4 = lambda *b: bytes(b)


def v6(text):
    import ipaddress
    return ipaddress.IPv6Address(text).packed


def v4(text):
    import ipaddress
    return ipaddress.IPv4Address(text).packed


VECTORS = []


def vec(name, doc, obj, text=None, error=None, canonical=True, raw=None):
    VECTORS.append(dict(name=name, doc=doc, obj=obj, text=text, error=error,
                        canonical=canonical, raw=raw))


# Message types
HELLO, WELCOME, ERROR, PING, PONG, BYE = 1, 2, 3, 4, 5, 6
ROUTE, WITHDRAW, FEED_BEGIN, FEED_END = 10, 11, 12, 13
ROUTE_STATUS, LEARN, REFEED, LEARN_REFRESH = 20, 21, 22, 23
CTL_REQUEST, CTL_CHUNK, CTL_END = 30, 31, 32

vec("hello-feed", "a bird-glue HELLO with every optional field",
    [HELLO, {1: [1], 2: 1, 3: "bird1", 4: 100, 5: [4, 6], 6: 32, 7: 12, 8: 300,
             9: False, 10: True}],
    'HELLO versions 1 role feed name "bird1" table 100 families 4,6 metric 32 '
    'protocol 12 stale 300 persist 0 learn 1')
vec("hello-control", "fibctl's HELLO: required fields only",
    [HELLO, {1: [1, 2], 2: 2, 3: "fibctl"}],
    'HELLO versions 1,2 role control name "fibctl"')
vec("welcome", "fibd's answer to HELLO",
    [WELCOME, {1: 1, 2: "fibd-0.1.0", 3: 1764450000}],
    'WELCOME version 1 server "fibd-0.1.0" epoch 1764450000')
vec("error", "a session-closing error naming a field",
    [ERROR, {1: 4, 2: "plen", 3: "prefix length 33 is over 32 for IPv4"}],
    'ERROR code FIELD field plen text "prefix length 33 is over 32 for IPv4"')
vec("ping", "PING with a token", [PING, {1: 42}], "PING token 42")
vec("pong", "PONG echoing a 64-bit token", [PONG, {1: 2**64 - 1}],
    "PONG token 18446744073709551615")
vec("bye-flush", "goodbye that withdraws everything", [BYE, {1: 1}], "BYE flags 0x1")
vec("feed-begin", "start of a feed generation", [FEED_BEGIN, {1: 7}],
    "FEED_BEGIN generation 7")
vec("feed-end", "end of a feed generation", [FEED_END, {1: 7}], "FEED_END generation 7")
vec("route-v4", "the common case: one gateway and an interface",
    [ROUTE, {2: 4, 3: v4("192.0.2.0"), 4: 24,
             8: [{1: v4("198.51.100.1"), 2: "veth0"}]}],
    "ROUTE unicast 192.0.2.0/24 nexthop via 198.51.100.1 dev veth0 weight 1")
vec("route-v4-default-table", "default route in table 100 with metric and tos",
    [ROUTE, {1: 100, 2: 4, 3: v4("0.0.0.0"), 4: 0, 5: 0, 6: 10,
             8: [{1: v4("198.51.100.1")}]}],
    "ROUTE unicast table 100 0.0.0.0/0 tos 0 metric 10 nexthop via 198.51.100.1 weight 1")
vec("route-v4-host-onlink", "a /32 through an onlink gateway",
    [ROUTE, {2: 4, 3: v4("203.0.113.7"), 4: 32,
             8: [{1: v4("198.51.100.1"), 2: "veth0", 4: 1}]}],
    "ROUTE unicast 203.0.113.7/32 nexthop via 198.51.100.1 dev veth0 weight 1 onlink")
vec("route-v6-ecmp", "IPv6 ECMP with weights, prefsrc, scope and mtu",
    [ROUTE, {2: 6, 3: v6("2001:db8:1::"), 4: 48,
             8: [{1: v6("fe80::1"), 2: "veth0", 3: 3}, {1: v6("fe80::2"), 2: "veth1", 3: 256}],
             9: v6("2001:db8::1"), 10: 5, 11: 0, 12: 1400}],
    "ROUTE unicast 2001:db8:1::/48 nexthop via fe80::1 dev veth0 weight 3 "
    "nexthop via fe80::2 dev veth1 weight 256 src 2001:db8::1 realm 5 scope 0 mtu 1400")
vec("route-v6-host", "an IPv6 /128", [ROUTE, {2: 6, 3: v6("2001:db8::1"), 4: 128,
                                              8: [{2: "veth0"}]}],
    "ROUTE unicast 2001:db8::1/128 nexthop dev veth0 weight 1")
vec("route-v4-via-v6", "IPv4 route through an IPv6 gateway (RFC 5549)",
    [ROUTE, {2: 4, 3: v4("198.51.100.0"), 4: 24, 8: [{1: v6("fe80::1"), 2: "veth0"}]}],
    "ROUTE unicast 198.51.100.0/24 nexthop via inet6 fe80::1 dev veth0 weight 1")
vec("route-blackhole", "blackhole: type 6, no nexthops",
    [ROUTE, {2: 4, 3: v4("203.0.113.0"), 4: 24, 7: 6}], "ROUTE blackhole 203.0.113.0/24")
vec("route-unreachable", "unreachable: type 7",
    [ROUTE, {2: 6, 3: v6("2001:db8::"), 4: 32, 7: 7}], "ROUTE unreachable 2001:db8::/32")
vec("route-prohibit", "prohibit: type 8",
    [ROUTE, {2: 4, 3: v4("192.0.2.128"), 4: 25, 7: 8}], "ROUTE prohibit 192.0.2.128/25")
vec("withdraw", "withdraw by key", [WITHDRAW, {1: 100, 2: 4, 3: v4("192.0.2.0"), 4: 24, 6: 10}],
    "WITHDRAW table 100 192.0.2.0/24 metric 10")
vec("route-status", "two results: installed, and failed with the kernel's text",
    [ROUTE_STATUS, {1: [
        {1: 100, 2: 4, 3: v4("192.0.2.0"), 4: 24, 5: 0, 6: 0, 7: 1},
        {1: 100, 2: 4, 3: v4("198.51.100.0"), 4: 24, 5: 0, 6: 0, 7: 3, 8: 101,
         9: "Nexthop has invalid gateway"}]}],
    'ROUTE_STATUS [ table 100 192.0.2.0/24 tos 0 metric 0 state 1 errno 0 text "" ] '
    '[ table 100 198.51.100.0/24 tos 0 metric 0 state 3 errno 101 '
    'text "Nexthop has invalid gateway" ]')
vec("hello-failures", "a HELLO asking for failed results only (results 1)",
    [HELLO, {1: [1], 2: 1, 3: "bird1", 11: 1}],
    'HELLO versions 1 role feed name "bird1" results 1')
vec("route-status-counts", "failures only: no result, the counts so far",
    [ROUTE_STATUS, {1: [], 2: 700000, 3: 12}],
    'ROUTE_STATUS installed 700000 removed 12')
vec("bad-status-empty", "no result and no counts",
    [ROUTE_STATUS, {1: []}], error="FIELD results")
vec("bad-status-half-counts", "installed without removed",
    [ROUTE_STATUS, {1: [], 2: 5}], error="FIELD removed")
vec("bad-hello-results", "results 2 is neither all nor failures",
    [HELLO, {1: [1], 2: 1, 3: "bird1", 11: 2}], error="FIELD results")
vec("learn-add", "a foreign kernel route reported to a learning client",
    [LEARN, {1: 254, 2: 4, 3: v4("192.0.2.0"), 4: 24, 6: 0, 8: [{2: "veth0"}], 11: 253,
             13: 2, 14: 1}],
    "LEARN add protocol 2 unicast table 254 192.0.2.0/24 metric 0 nexthop dev veth0 weight 1 "
    "scope 253")
vec("hello-refresh", "a learning HELLO asking for learn dumps framed by LEARN_REFRESH",
    [HELLO, {1: [1], 2: 1, 3: "bird1", 10: True, 12: True}],
    'HELLO versions 1 role feed name "bird1" learn 1 refresh 1')
vec("bad-hello-refresh", "refresh without learn",
    [HELLO, {1: [1], 2: 1, 3: "bird1", 12: True}], error="FIELD refresh")
vec("learn-refresh-begin", "a learn dump of table 100, IPv6, begins",
    [LEARN_REFRESH, {1: 100, 2: 6, 3: 1}], "LEARN_REFRESH table 100 family 6 phase begin")
vec("learn-refresh-end", "it ended: what was not sent again is gone",
    [LEARN_REFRESH, {1: 254, 2: 4, 3: 2}], "LEARN_REFRESH table 254 family 4 phase end")
vec("bad-learn-refresh-phase", "phase 3 is neither begin nor end",
    [LEARN_REFRESH, {1: 100, 2: 4, 3: 3}], error="FIELD phase")
vec("bad-learn-refresh-table", "a refresh names its table",
    [LEARN_REFRESH, {2: 4, 3: 1}], error="FIELD table")
vec("refeed", "fibd asks for a full feed", [REFEED, {1: "fibd restarted"}],
    'REFEED reason "fibd restarted"')
vec("ctl-request", "fibctl show route, JSON output",
    [CTL_REQUEST, {1: 5, 2: "show", 3: ["route", "table", "100"], 4: 1}],
    'CTL_REQUEST req 5 cmd show flags 0x1 "route" "table" "100"')
vec("ctl-chunk", "one chunk of a streamed answer",
    [CTL_CHUNK, {1: 5, 2: b"192.0.2.0/24 via 198.51.100.1 dev veth0\n"}],
    'CTL_CHUNK req 5 data "192.0.2.0/24 via 198.51.100.1 dev veth0\\x0a"')
vec("ctl-end", "end of a successful answer", [CTL_END, {1: 5, 2: 0}],
    'CTL_END req 5 code OK text ""')
vec("ctl-end-error", "a request that failed; the session stays open",
    [CTL_END, {1: 6, 2: 11, 3: "no command 'shwo'"}],
    'CTL_END req 6 code UNKNOWN_CMD text "no command \'shwo\'"')

# Accepted, but not canonical: re-encoding gives other bytes.
vec("route-unknown-keys", "unknown keys, any key order, wide integers: all accepted",
    [ROUTE, {99: {"future": [1.5, None]}, 4: 24, 8: [{2: "veth0", 50: True}], 3: v4("192.0.2.0"),
             2: 4}],
    "ROUTE unicast 192.0.2.0/24 nexthop dev veth0 weight 1", canonical=False)

# Refused, with the error code and the field a decoder must name.
vec("bad-plen", "IPv4 prefix length over 32",
    [ROUTE, {2: 4, 3: v4("192.0.2.0"), 4: 33, 8: [{2: "veth0"}]}], error="FIELD plen")
vec("bad-host-bits", "host bits set",
    [ROUTE, {2: 4, 3: v4("192.0.2.1"), 4: 24, 8: [{2: "veth0"}]}], error="FIELD prefix")
vec("bad-weight", "weight 0", [ROUTE, {2: 4, 3: v4("192.0.2.0"), 4: 24, 8: [{2: "veth0", 3: 0}]}],
    error="FIELD weight")
vec("bad-ifname", "interface name of 16 bytes",
    [ROUTE, {2: 4, 3: v4("192.0.2.0"), 4: 24, 8: [{2: "abcdefghijklmnop"}]}], error="FIELD ifname")
vec("bad-type", "unknown route type", [ROUTE, {2: 4, 3: v4("192.0.2.0"), 4: 24, 7: 2}],
    error="FIELD type")
vec("bad-no-nexthop", "unicast route with no nexthop", [ROUTE, {2: 4, 3: v4("192.0.2.0"), 4: 24}],
    error="FIELD nexthops")
vec("bad-missing-name", "HELLO without a name", [HELLO, {1: [1], 2: 1}], error="FIELD name")
vec("bad-unknown-type", "message type 99", [99, {}], error="UNKNOWN_TYPE type")
vec("bad-not-array", "a bare map is not a message", {1: 2}, error="MALFORMED -")
vec("bad-dup-key", "the same key twice", None, error="MALFORMED body",
    raw=bytes([0x92, PING, 0x82, 0x01, 0x05, 0x01, 0x06]))
vec("bad-reserved-byte", "0xc1 is not msgpack", None, error="MALFORMED -",
    raw=bytes([0x92, PING, 0xc1]))


def hexlines(b):
    h = b.hex()
    pairs = [h[i:i + 2] for i in range(0, len(h), 2)]
    return "\n".join("bytes: " + " ".join(pairs[i:i + 32]) for i in range(0, len(pairs), 32))


def main():
    for old in os.listdir(HERE):
        if old.endswith(".vec"):
            os.unlink(os.path.join(HERE, old))
    for v in VECTORS:
        data = v["raw"] if v["raw"] is not None else msgpack.packb(v["obj"], use_bin_type=True)
        with open(os.path.join(HERE, v["name"] + ".vec"), "w") as f:
            f.write("# %s\n" % v["doc"])
            f.write(hexlines(data) + "\n")
            if v["error"]:
                f.write("error: %s\n" % v["error"])
            else:
                f.write("text: %s\n" % v["text"])
                f.write("canonical: %s\n" % ("yes" if v["canonical"] else "no"))
    print("wrote %d vectors" % len(VECTORS))


if __name__ == "__main__":
    main()
