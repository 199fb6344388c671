#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Interleaved A/B of `sluice downsample` builds on the inputs of
bench_graph_downsample: each round runs every variant once, in turn, as a
child process (wall time, CPU time and peak RSS from wait4, as the bench
measures sluice), so that a neighbour's load falls on all alike; prints
medians (and minima) per variant.

    ab_downsample.py KIND REPS [--cold] NAME=SLUICE[:VAR=VALUE,...] ...

KIND is 3d or 5d (the bench's cases, under $SL_BENCH_DATA, default
/tmp/sluice-bench-data; run the bench once to create them).  VAR=VALUE
pairs go to that variant's environment (e.g. LD_PRELOAD=...).  With
--cold, the input's pages are dropped from the page cache before every run
(posix_fadvise DONTNEED on each file, as bench_graph_downsample does).
"""
import os
import statistics
import sys
import time

FACTORS = {"3d": "2,2,2", "5d": "1,1,1,2,2"}


def parse(arg):
    name, spec = arg.split("=", 1)
    exe, _, pairs = spec.partition(":")
    env = dict(os.environ)
    for kv in filter(None, pairs.split(",")):
        k, v = kv.split("=", 1)
        env[k] = v
    return name, exe, env


def evict(tree):
    """Drop the cached pages of every file under `tree` (clean: read only)."""
    for root, _, files in os.walk(tree):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def run_once(exe, env, argv):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execve(exe, argv, env)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{exe} failed: {argv}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_stime, ru.ru_maxrss / 1024


def main(argv):
    if len(argv) < 4 or argv[1] not in FACTORS:
        print(__doc__)
        return 2
    kind, reps = argv[1], int(argv[2])
    cold = "--cold" in argv[3:]
    data = os.environ.get("SL_BENCH_DATA", "/tmp/sluice-bench-data")
    variants = [parse(a) for a in argv[3:] if a != "--cold"]
    rows = {name: [] for name, _, _ in variants}
    for _ in range(reps):
        for name, exe, env in variants:
            out = os.path.join(data, f"{kind}_out_ab_{name}.zarr")
            if cold:
                evict(f"{data}/{kind}_in.zarr")
            rows[name].append(run_once(exe, env, [exe, "downsample", f"{data}/{kind}_in.zarr", out,
                                                  "--factors", FACTORS[kind], "--overwrite",
                                                  "--no-progress"]))
    print(f"# {kind}{' cold' if cold else ''}, {reps} interleaved runs each, load average "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    for name, r in rows.items():
        med = [statistics.median(c) for c in zip(*r)]
        lo = [min(c) for c in zip(*r)]
        hi = max(x[3] for x in r)
        print(f"{name:12s} wall {med[0]:.3f} s (min {lo[0]:.3f})  cpu {med[1]:.3f} s  "
              f"sys {med[2]:.3f} s  peak_rss {med[3]:.1f} MiB (min {lo[3]:.1f}, max {hi:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
