"""The figures of bench/bird_probe.py's JSON as a table, one column a run:
what bench/bird.sh and bench/churn.sh print. Labels say what a row is;
bench/README.md says what each means."""


def get(d, *path):
    """d[path[0]][path[1]]...; '-' for a figure a run does not have."""
    for p in path:
        d = d.get(p) if isinstance(d, dict) else None
    return "-" if d is None else d


def probe_rows(phases):
    """birdc show status in each phase: the latencies and, for the slowest
    probe (of the load: the slowest one BIRD answered), how long BIRD's main
    loop waited for a CPU and ran on one (good to a tick), the longest it
    waited in any one, and how long the probe itself waited for a CPU during
    the slowest: the machine's share of a slow answer."""
    rows = []
    for phase in phases:
        for key in ("probes", "p50_ms", "p95_ms", "p99_ms", "max_ms", "timeouts_1s"):
            rows.append((f"birdc show status, {phase}: {key}", (phase, key)))
        if phase == "load":
            # the same without the probes counted for BIRD's start-up (BIRD 3's
            # start-up alone varies by half a second from run to run)
            rows += [(f"birdc show status, load answered: {key}", ("load_answered", key))
                     for key in ("probes", "p99_ms", "max_ms")]
        ph = "load_answered" if phase == "load" else phase
        rows += [(f"birdc show status, {phase}: wait_slowest_ms", (ph, "slowest_cpu_wait_ms")),
                 (f"birdc show status, {phase}: run_slowest_ms", (ph, "slowest_cpu_run_ms")),
                 (f"birdc show status, {phase}: wait_max_ms", (ph, "max_cpu_wait_ms")),
                 (f"birdc show status, {phase}: probe_wait_ms", (ph, "slowest_probe_wait_ms"))]
    return rows


def cpu_rows(recv, until):
    """BIRD's CPU, and that of RECV (what takes its routes into the kernel),
    until UNTIL (converged, or steady state), in the steady state while probed,
    and in as long with no probe."""
    return [(f"BIRD CPU until {until} (s)", ("bird_load_cpu_s",)),
            (f"BIRD loop's wait for CPU until {until} (s)", ("bird_load_cpu_wait_s",)),
            ("BIRD CPU in steady state (%)", ("bird_steady_cpu_pct",)),
            ("BIRD CPU in steady state, no probe (%)", ("bird_quiet_cpu_pct",)),
            (f"{recv} CPU until {until} (s)", ("recv_load_cpu_s",)),
            (f"{recv} CPU in steady state (%)", ("recv_steady_cpu_pct",)),
            (f"{recv} CPU in steady state, no probe (%)", ("recv_quiet_cpu_pct",))]


def rss_rows(recv):
    """BIRD's memory and RECV's, at the end and at their peak."""
    return [("BIRD RSS at the end (MiB)", ("bird_rss_mib",)),
            ("BIRD peak RSS (MiB)", ("bird_peak_rss_mib",)),
            (f"{recv} RSS at the end (MiB)", ("recv_rss_mib",)),
            (f"{recv} peak RSS, sum of peaks (MiB)", ("recv_peak_rss_mib",))]


def print_table(heads, runs, rows, width):
    """One line a row: its label, then each run's figure (a list joined by
    commas) in WIDTH columns."""
    label_w = max(len(label) for label, _ in rows) + 2
    print(" " * label_w + "".join(f"{h:>{width}}" for h in heads))
    for label, path in rows:
        cells = [get(r, *path) for r in runs]
        cells = [", ".join(map(str, c)) if isinstance(c, list) else c for c in cells]
        print(f"{label:{label_w}}" + "".join(f"{c!s:>{width}}" for c in cells))
