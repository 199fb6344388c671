#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Run journals (issue 21): what recording costs, and what resuming saves.

On the 5-D demo pyramid (examples/graphs/pyramid.json's layout: a uint16
TCZYX image of 4,2,32,1024,1024 in chunks of 1,1,32,256,256, four levels
halving y and x, shards of 1,1,32,1024,1024), runs of `sluice pyramid`
without and with --journal alternate (SL_BENCH_REPEAT pairs, default 5, in
ABBA order, each after os.sync() so that no run pays for the last one's
writeback) and the median of the pairs' differences is the journal's
cost, beside the time the run itself spent in its journal (the report's
`journal_s`: opening, records, syncs, closing) over its wall; then SL_BENCH_REPEAT journaled runs are each killed at half a run's
time and `--resume` timed against a full run (the median kept).  Prints `name: value unit` lines
(tests/bench/bench.h's form) for tests/bench/run.sh.

    SL_SLUICE_EXE=build/launcher/sluice tests/bench/graph/bench_resume.py
    SL_BENCH_RESUME_SHAPE=2,2,32,512,512      a smaller image
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
SHAPE = os.environ.get("SL_BENCH_RESUME_SHAPE", "4,2,32,1024,1024")
REPEAT = int(os.environ.get("SL_BENCH_REPEAT", "5"))
DATA = os.environ.get("SL_BENCH_DATA", tempfile.gettempdir())
LAYOUT = ["--levels", "4", "--factors", "1,1,1,2,2", "--chunks", "1,1,32,256,256",
          "--shards", "1,1,32,1024,1024", "--no-progress"]


def timed(argv):
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(argv)} exits {p.returncode}: {p.stderr}")
    return time.monotonic() - t0


def main():
    src = os.path.join(DATA, f"resume_tczyx_{SHAPE.replace(',', 'x')}.zarr")
    if not os.path.isdir(src):
        timed([SLUICE, "generate", src, "--shape", SHAPE, "--chunks", "1,1,32,256,256",
               "--no-progress"])
    work = tempfile.mkdtemp(prefix="sl-bench-resume-", dir=DATA)
    dst = os.path.join(work, "pyr.zarr")
    journal = os.path.join(work, "run.journal")
    report = os.path.join(work, "run.json")
    try:
        plain, journaled, pairs, inside = [], [], [], []
        for i in range(REPEAT):
            # Alternate which goes first (ABBA), and let the previous run's
            # writeback finish before each one starts.
            order = (False, True) if i % 2 == 0 else (True, False)
            t = {}
            for with_journal in order:
                shutil.rmtree(dst, ignore_errors=True)
                for f in (journal,):
                    if os.path.exists(f):
                        os.unlink(f)
                os.sync()
                extra = ["--journal", journal, "--report", report] if with_journal else []
                t[with_journal] = timed([SLUICE, "pyramid", src, dst, *LAYOUT, *extra])
                if with_journal:
                    with open(report) as f:
                        inside.append(json.load(f)["summary"]["journal_s"] / t[True])
            plain.append(t[False])
            journaled.append(t[True])
            pairs.append((t[True] - t[False]) / t[False])
        full, with_j = statistics.median(plain), statistics.median(journaled)
        spread = (max(plain) - min(plain)) / full
        print(f"resume.pyramid_s: {full:.3f} s (median of {REPEAT}, {SHAPE})")
        print(f"resume.pyramid_journaled_s: {with_j:.3f} s")
        print(f"resume.pyramid_spread: {100 * spread:.1f} % (max - min of the runs without, "
              f"over their median)")
        print(f"resume.journal_overhead: {100 * statistics.median(pairs):.1f} % (median of "
              f"{REPEAT} paired runs; target <= 2)")
        # The same cost measured inside the run, free of the runs' noise:
        # the time its threads spent in the journal (report's journal_s).
        print(f"resume.journal_time_share: {100 * statistics.median(inside):.2f} % of a run's "
              f"wall (max {100 * max(inside):.2f}; target <= 2)")
        ratios, units = [], []
        for _ in range(REPEAT):
            shutil.rmtree(dst, ignore_errors=True)
            os.sync()
            p = subprocess.Popen([SLUICE, "pyramid", src, dst, *LAYOUT, "--journal", journal],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(with_j / 2)
            p.send_signal(signal.SIGKILL)
            p.wait()
            with open(journal, "rb") as f:
                units.append(sum(line.startswith(b"u ") for line in f))
            os.sync()
            resumed = timed([SLUICE, "pyramid", src, dst, *LAYOUT, "--journal", journal,
                             "--resume"])
            ratios.append(resumed / full)
        k = ratios.index(statistics.median_low(ratios))
        print(f"resume.units_journaled_at_kill50: {units[k]} units")
        print(f"resume.after_kill50_s: {ratios[k] * full:.3f} s (median of {REPEAT} kills)")
        print(f"resume.after_kill50_ratio: {100 * ratios[k]:.1f} % of a full run "
              f"(target <= 55; {100 * min(ratios):.1f}-{100 * max(ratios):.1f} %)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
