#!/usr/bin/env python3
"""Time a command that writes a table to stdout: first byte, total, peak RSSes.

  dump_probe.py FIBD_PID COMMAND...

Reads the command's output as fast as it comes (and throws it away), sampling
fibd's RSS every 10 ms meanwhile. Prints one JSON object: first_byte_ms,
total_s, bytes, lines, fibd_cpu_s (user + system during the command),
fibd_rss_before_mib, fibd_rss_peak_mib, client_peak_mib.
"""
import json
import os
import resource
import select
import subprocess
import sys
import time


from bird_probe import cpu_s, mem_kib


def rss_kib(pid):
    return mem_kib(pid, "VmRSS")


def main():
    fibd, cmd = int(sys.argv[1]), sys.argv[2:]
    before = peak = rss_kib(fibd)
    cpu0 = cpu_s(fibd)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    fd = p.stdout.fileno()
    first = None
    nbytes = lines = 0
    last_sample = 0.0
    while True:
        r, _, _ = select.select([fd], [], [], 0.01)
        now = time.monotonic()
        if now - last_sample >= 0.01:
            peak = max(peak, rss_kib(fibd))
            last_sample = now
        if not r:
            continue
        data = os.read(fd, 1 << 20)
        if not data:
            break
        if first is None:
            first = now - t0
        nbytes += len(data)
        lines += data.count(b"\n")
    p.wait()
    total = time.monotonic() - t0
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"first_byte_ms": round((first or total) * 1000, 1), "total_s": round(total, 3),
                      "bytes": nbytes, "lines": lines, "fibd_cpu_s": round(cpu_s(fibd) - cpu0, 2),
                      "fibd_rss_before_mib": round(before / 1024, 1),
                      "fibd_rss_peak_mib": round(peak / 1024, 1), "client_peak_mib": round(child / 1024, 1)}))


if __name__ == "__main__":
    main()
