#!/usr/bin/env python3
"""Probe a running BIRD while it loads a table into the kernel, then in steady state.

  bird_probe.py [--from S] [--mark FILE] [--base B4,B6] [--sample FILE] [--churn SPEC [--churn-sample FILE]] [--held-by PROTO[+PROTO...]] [--steady-from S] CTL_SOCKET TABLE N4 N6 STEADY_S BIRD_PID [RECEIVER_PID...]
  bird_probe.py --startup CTL_SOCKET [AFTER_S]

Run inside BIRD's network namespace, started together with BIRD.

--startup: print how long BIRD takes to answer at all (its greeting on the
control socket), in seconds from the probe's start; run it on a BIRD with the
same routes and no export protocol, to learn when a probe may fairly expect an
answer; with AFTER_S, then probe as below for AFTER_S seconds: the latency BIRD's
own work right after start-up gives (stock BIRD 3.3.2 returns the pages its slow
start-up freed to the OS then, one madvise each, in its main loop: 28-170 ms seen;
under 10 ms with the start-up fix bird-glue carries). --from S: probes count from S seconds after the start. Until BIRD
answers, the probes it would have got every 100 ms from S on all wait for that
first answer, and count so: a probe must not wait out the greeting, or it
hides exactly the stall at start-up that an export protocol may cause.
--mark FILE: FILE is created once the kernel holds every route.
--steady-from S: steady state begins no sooner than S seconds after the start;
the probes between the end of the load and then are not counted (for a BIRD
with no export protocol, whose routes are held long before any export's: its
steady state then starts when theirs did, past BIRD's own work after start-up).

Then every 100 ms:
one `show status` on BIRD's control socket (one connection, one request at a
time; the latency is from sending it to the reply's last line; a reply over 1 s
counts as a timeout too), and whether the kernel holds every route. Load ends when
the kernel holds N4 and N6 routes more than --base says the table had before
(none in a table of its own; the link's routes in the main table); steady state is the
STEADY_S seconds after that; then STEADY_S seconds with no probe at all (quiet):
only the CPU of BIRD and of the receivers, as a router nobody asks anything
spends it (each probe costs BIRD's main loop a parse and a reply; the
receivers never see them); CPU in both from each thread's schedstat (from
the processes' ticks for a window in which a thread ended). The IPv6 count
comes cheaply from /proc/net/rt6_stats (IPv6 routes of all tables); the exact
counts cost: /proc/net/fib_triestat walks every table's trie (75 ms of CPU
with 600k routes), and the IPv6 count of TABLE dumps it. They are read only
once the cheap checks pass: the IPv6 count, and with --sample FILE (IPv4
prefixes, one a line: netns/sampler.py's v4_sample) a lookup of each of them
that is not in yet (sampler.V4Lookup), or 5 s after the last exact read. Read
every 100 ms, they took a third of a core from what is measured.

--churn SRC_CTL,PROTOS,C4,C6,ROUNDS: between load and steady state, ROUNDS
times, the protocols PROTOS (names joined by '+') of another BIRD, on control
socket SRC_CTL, are disabled until the kernel holds C4 IPv4 and C6 IPv6 routes
fewer, then enabled until it holds them all again; the probes go on, and are
summed up as the churn phase, with the time each step took. --churn-sample FILE:
IPv4 prefixes of those protocols, looked up before the exact counts as for the load.
--held-by PROTO[+PROTO...]: for a BIRD with no export protocol, the reference: the routes
count as held once BIRD's protocols PROTO have imported them (their channels'
counts in `show protocols all PROTO`, asked on the same connection right after
each probe), not the kernel's (in BIRD 3 that command waits for PROTO's loop,
so the probes after it may too). BIRD 2 has one thread, so its process CPU is its
main loop's. The receivers are the processes that take BIRD's routes into the
kernel (fibd; FRR's bgpd and zebra): their CPU and memory are summed. For
each phase, how long BIRD's main thread (its main loop, which answers the CLI)
waited on a run queue for a CPU during the slowest probe and ran on one, and
the longest it waited during any one probe (/proc/PID/task/PID/schedstat: the
kernel accounts the run time at switches and ticks, so that one is good to a
tick, 4 ms at HZ 250), and how long the probe itself waited for a CPU while
it timed the slowest probe (at most that much of the answer was the probe's
own wait): how much of a slow answer was the machine's. With
BIRD_PROBE_TRACE set, each probe over 3 ms goes to stderr with its start on
CLOCK_MONOTONIC, as `perf record -k mono` stamps samples. Prints one JSON
object.
"""
import json
import os
import re
import select
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "netns"))
from sampler import V4Lookup, v4 as v4_count, v6_all as v6_count, v6_table as v6_exact  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ


def threads_run(pids):
    """How long each thread of PIDS has run on a CPU, in ns, by (pid, tid)
    (/proc/PID/task/TID/schedstat: the scheduler's own sum, finer than the
    10 ms ticks of /proc/PID/stat, which are 0.017 % of a minute); None if
    the kernel keeps no schedstat."""
    if not os.path.exists("/proc/self/schedstat"):
        return None
    out = {}
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                out[pid, tid] = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass  # (a thread that has just ended)
            except (OSError, IndexError, ValueError):
                return None
    return out if out or not pids else None


def cpu_pct(groups, work):
    """For each group of PIDs, the share of one core its threads took while
    work() ran, in percent; for a group with a thread that ended meanwhile,
    from its processes' ticks instead (an ended thread's run time is gone
    from schedstat, not from /proc/PID/stat)."""
    pids = [p for g in groups for p in g]
    t0, c0, start = threads_run(pids), {p: cpu_s(p) for p in pids}, time.monotonic()
    work()
    t1, c1, span = threads_run(pids), {p: cpu_s(p) for p in pids}, time.monotonic() - start
    out = []
    for g in groups:
        if t0 is None or t1 is None or any(k not in t1 for k in t0 if k[0] in g):
            out.append(round(100 * sum(c1[p] - c0[p] for p in g) / span, 2))
        else:
            ns = sum(v - t0.get(k, 0) for k, v in t1.items() if k[0] in g)
            out.append(round(100 * ns / 1e9 / span, 3))
    return out


def schedstat(pid):
    """PID's main thread (BIRD's main loop, which answers the CLI): how long it
    has run on a CPU and how long it has waited on a run queue for one, in
    seconds (/proc/PID/task/PID/schedstat)."""
    try:
        f = open(f"/proc/{pid}/task/{pid}/schedstat").read().split()
        return int(f[0]) / 1e9, int(f[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0, 0.0


def mem_kib(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class Cli:
    """BIRD's control protocol: replies end with a line 'NNNN text' (a space, not '-')."""

    def __init__(self, path):
        for _ in range(1200):
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.s.connect(path)
                break
            except OSError:
                time.sleep(0.01)
        else:
            sys.exit(f"bird_probe: cannot connect to {path}")
        self.buf = b""
        # With pid (BIRD's), each probe's latency and how long BIRD's main
        # thread waited for a CPU and ran meanwhile: a slow answer from a BIRD
        # that waited for a core is the machine's, not BIRD's own work.
        self.pid, self.log = None, []
        if self.wait_reply(600) is None:  # the greeting
            sys.exit("bird_probe: BIRD sent no greeting in 600 s")

    def wait_reply(self, timeout):
        """The reply's text once its last line is in; None after TIMEOUT s."""
        end = time.monotonic() + timeout
        while True:
            at = 0
            for line in self.buf.split(b"\n")[:-1]:
                at += len(line) + 1
                if re.match(rb"^\d{4} ", line):
                    reply, self.buf = self.buf[:at], self.buf[at:]
                    return reply.decode(errors="replace")
            left = end - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.s], [], [], left)
            if r:
                data = self.s.recv(65536)
                if not data:
                    sys.exit("bird_probe: BIRD closed the control socket")
                self.buf += data

    def probe(self):
        c0, w0 = schedstat(self.pid) if self.pid else (0.0, 0.0)
        m0 = schedstat(os.getpid())[1]
        t0 = time.monotonic()
        self.command("show status")
        lat = time.monotonic() - t0
        m1 = schedstat(os.getpid())[1]
        if self.pid:
            c1, w1 = schedstat(self.pid)
            self.log.append((lat, w1 - w0, c1 - c0, m1 - m0))
            if os.environ.get("BIRD_PROBE_TRACE") and lat > 0.003:
                print(f"probe at {t0:.4f}: {lat * 1000:.2f} ms, BIRD waited {(w1 - w0) * 1000:.2f} ms, "
                      f"ran {(c1 - c0) * 1000:.2f} ms; the probe waited {(m1 - m0) * 1000:.2f} ms", file=sys.stderr)
        return lat

    def command(self, text):
        self.s.sendall(text.encode() + b"\n")
        reply = self.wait_reply(600)
        if reply is None:
            sys.exit(f"bird_probe: no reply to '{text}' in 600 s")
        return reply


def imported(cli, protos):
    """--held-by PROTO[+PROTO...]: the routes BIRD holds from those protocols,
    (IPv4, IPv6), as their channels count them in `show protocols all` (little
    work in BIRD 2; BIRD 3 answers it on its main loop holding PROTO's loop, so
    it waits for PROTO's current run)."""
    counts = {"ipv4": 0, "ipv6": 0}
    for proto in protos.split("+"):
        channel = None
        for line in cli.command(f"show protocols all {proto}").splitlines():
            m = re.search(r"Channel (ipv4|ipv6)$", line.rstrip())
            if m:
                channel = m.group(1)
            m = re.search(r"Routes:\s+(\d+) imported", line)
            if m and channel:
                counts[channel] += int(m.group(1))
    return counts["ipv4"], counts["ipv6"]


def imported_all(cli, proto, n4, n6):
    """--held-by PROTO[+PROTO...]: whether BIRD has imported N4 IPv4 and N6 IPv6 routes from them."""
    h4, h6 = imported(cli, proto)
    return h4 >= n4 and h6 >= n6


def pct(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def summary(lat):
    ms = [x * 1000 for x in lat]
    return {"probes": len(ms), "p50_ms": round(pct(ms, 50), 2), "p95_ms": round(pct(ms, 95), 2),
            "p99_ms": round(pct(ms, 99), 2), "max_ms": round(max(ms) if ms else 0, 2),
            "timeouts_1s": sum(1 for x in ms if x > 1000)}


def cpu_waits(log):
    """Of probes' (latency, CPU wait, CPU run, the probe's own CPU wait)
    figures: how long BIRD waited for a CPU during the slowest probe, and ran
    on one, and how long it waited during any one probe at most; and how long
    the probe itself waited for a CPU during the slowest one (a reply the
    probe was not running to read), in ms."""
    if not log:
        return {}
    slowest = max(log)
    return {"slowest_cpu_wait_ms": round(slowest[1] * 1000, 2), "slowest_cpu_run_ms": round(slowest[2] * 1000, 2),
            "max_cpu_wait_ms": round(max(x[1] for x in log) * 1000, 2),
            "slowest_probe_wait_ms": round(slowest[3] * 1000, 2)}


def pause(tick):
    """Until the next probe, 100 ms after the one started at tick."""
    time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))


def probe_for(cli, seconds):
    """show status every 100 ms for SECONDS: the latencies."""
    lat = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tick = time.monotonic()
        lat.append(cli.probe())
        pause(tick)
    return lat


def churn_phase(cli, spec, table, base4, n4, n6, sample, held_by):
    """--churn: withdraw and announce again another BIRD's protocols, probing on."""
    src_ctl, protos, c4, c6, rounds = spec[0], spec[1].split("+"), int(spec[2]), int(spec[3]), int(spec[4])
    src = Cli(src_ctl)
    at = len(cli.log)
    v6_full = v6_count()
    gate = V4Lookup(table, sample)
    lat, steps = [], []
    for _ in range(rounds):
        if held_by:
            # what BIRD holds: the routes PROTO imported
            withdrawn = lambda: all(h <= n - c for h, n, c in zip(imported(cli, held_by), (n4, n6), (c4, c6)))
            announced = lambda: imported_all(cli, held_by, n4, n6)
        else:
            # what the kernel holds, the cheap checks first, as for the load
            withdrawn = lambda: (v6_count() <= v6_full - c6 and gate.due()
                                 and v4_count(table) - base4 <= n4 - c4)
            announced = lambda: v6_count() >= v6_full and gate.due() and v4_count(table) - base4 >= n4
        for cmd, present, done in (("disable", False, withdrawn), ("enable", True, announced)):
            gate.arm(present)
            t0 = time.monotonic()
            for p in protos:
                src.command(f"{cmd} {p}")
            while True:
                tick = time.monotonic()
                lat.append(cli.probe())
                if done():
                    break
                if time.monotonic() - t0 > 300:
                    sys.exit(f"bird_probe: {'BIRD' if held_by else 'the kernel'} did not follow '{cmd}' in 300 s")
                pause(tick)
            steps.append(round(time.monotonic() - t0, 2))
    return {"churn": {**summary(lat), **cpu_waits(cli.log[at:])}, "churn_steps_s": steps}


def main():
    args = sys.argv[1:]
    start = time.monotonic()
    if args[0] == "--startup":
        cli = Cli(args[1])
        out = {"startup_s": round(time.monotonic() - start, 3)}
        # then AFTER_S seconds of probes: what BIRD's own work right after
        # start-up costs them, with no export protocol to blame
        lat = probe_for(cli, float(args[2] if len(args) > 2 else 0))
        if lat:
            out["after_startup"] = summary(lat)
        print(json.dumps(out))
        return
    count_from, mark, base4, base6, churn, sample, churn_sample = 0.0, None, 0, 0, None, [], []
    held_by = None
    steady_from = 0.0
    while args[0] in ("--from", "--mark", "--base", "--sample", "--churn", "--churn-sample", "--held-by",
                      "--steady-from"):
        if args[0] == "--from":
            count_from = float(args[1])
        elif args[0] == "--steady-from":
            steady_from = float(args[1])
        elif args[0] == "--sample":
            sample = open(args[1]).read().split()
        elif args[0] == "--churn-sample":
            churn_sample = open(args[1]).read().split()
        elif args[0] == "--held-by":
            held_by = args[1]
        elif args[0] == "--mark":
            mark = args[1]
        elif args[0] == "--churn":
            churn = args[1].split(",")
        else:
            base4, base6 = (int(x) for x in args[1].split(","))
        args = args[2:]
    ctl, table, n4, n6 = args[0], int(args[1]), int(args[2]), int(args[3])
    steady_s, bird = float(args[4]), int(args[5])
    recv = [int(a) for a in args[6:]]
    # The lookup gate first: it runs ip (a rule for the table), 3.7 ms on an
    # idle machine, more on a busy one, which counted as BIRD's start-up when
    # it ran after the greeting.
    gate = V4Lookup(table, sample)
    cli = Cli(ctl)
    cli.pid = bird
    gate.arm(True)  # (its exact counts are due from here on, as before)
    load = []
    # The probes BIRD would have got from count_from on, had it answered.
    first = time.monotonic() - start
    t = count_from
    while t < first:
        load.append(first - t)
        t += 0.1
    waited = len(load)
    converged = None
    while True:
        tick = time.monotonic()
        lat = cli.probe()
        now = time.monotonic()
        load.append(lat)
        # (now was taken before the counts: the exact ones take a while)
        if held_by:
            done = imported_all(cli, held_by, n4, n6)
        else:
            done = (v6_count() >= n6 and gate.due() and v4_count(table) - base4 >= n4
                    and v6_exact(table) - base6 >= n6)
        if done:
            converged = now - start
            if mark:
                open(mark, "w").close()
            break
        if now - start > 600:
            break
        pause(tick)
    out = {"converge_s": round(converged, 2) if converged is not None else None,
           "first_answer_s": round(first, 2),
           "load": summary(load),
           # the probes that got an answer, without those BIRD's start-up made wait
           "load_answered": {**summary(load[waited:]), **cpu_waits(cli.log)}}
    if converged is not None and churn:
        out.update(churn_phase(cli, churn, table, base4, n4, n6, churn_sample, held_by))
    if converged is not None:
        out["bird_load_cpu_s"] = round(cpu_s(bird), 2)
        out["bird_load_cpu_wait_s"] = round(schedstat(bird)[1], 2)
        if recv:
            out["recv_load_cpu_s"] = round(sum(cpu_s(p) for p in recv), 2)
        probe_for(cli, steady_from - (time.monotonic() - start))  # (not counted)
        if steady_from:
            out["steady_from_s"] = round(time.monotonic() - start, 2)
        at = len(cli.log)
        steady = []
        # probed, then as long again with no probe, as a router nobody asks
        # anything spends it (each probe costs BIRD's main loop a parse and a
        # reply; 0.15 to 0.30 points of a core here, ten a second)
        cpu = cpu_pct([[bird], recv], lambda: steady.extend(probe_for(cli, steady_s)))
        quiet = cpu_pct([[bird], recv], lambda: time.sleep(steady_s))
        out["steady"] = {**summary(steady), **cpu_waits(cli.log[at:])}
        out["bird_steady_cpu_pct"], out["bird_quiet_cpu_pct"] = cpu[0], quiet[0]
        if recv:
            out["recv_steady_cpu_pct"], out["recv_quiet_cpu_pct"] = cpu[1], quiet[1]
    out["bird_rss_mib"] = round(mem_kib(bird, "VmRSS") / 1024, 1)
    out["bird_peak_rss_mib"] = round(mem_kib(bird, "VmHWM") / 1024, 1)
    if recv:
        out["recv_rss_mib"] = round(sum(mem_kib(p, "VmRSS") for p in recv) / 1024, 1)
        out["recv_peak_rss_mib"] = round(sum(mem_kib(p, "VmHWM") for p in recv) / 1024, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
