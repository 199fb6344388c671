#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Run journals (issue 21): what recording costs, and what resuming saves.

On the 5-D demo pyramid (examples/graphs/pyramid.json's layout: a uint16
TCZYX image of 4,2,32,1024,1024 in chunks of 1,1,32,256,256, four levels
halving y and x, shards of 1,1,32,1024,1024), runs of `sluice pyramid`
without and with --journal alternate (SL_BENCH_REPEAT each, default 3) and
the medians are compared; then a journaled run is killed at half its time
and `--resume` timed against a full run.  Prints `name: value unit` lines
(tests/bench/bench.h's form) for tests/bench/run.sh.

    SL_SLUICE_EXE=build/launcher/sluice tests/bench/graph/bench_resume.py
    SL_BENCH_RESUME_SHAPE=2,2,32,512,512      a smaller image
"""
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
REPEAT = int(os.environ.get("SL_BENCH_REPEAT", "3"))
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
    try:
        plain, journaled = [], []
        for _ in range(REPEAT):
            for with_journal, times in ((False, plain), (True, journaled)):
                shutil.rmtree(dst, ignore_errors=True)
                extra = ["--journal", journal] if with_journal else []
                times.append(timed([SLUICE, "pyramid", src, dst, *LAYOUT, *extra]))
        full, with_j = statistics.median(plain), statistics.median(journaled)
        print(f"resume.pyramid_s: {full:.3f} s (median of {REPEAT}, {SHAPE})")
        print(f"resume.pyramid_journaled_s: {with_j:.3f} s")
        print(f"resume.journal_overhead: {100 * (with_j - full) / full:.1f} % (target <= 2)")
        shutil.rmtree(dst, ignore_errors=True)
        p = subprocess.Popen([SLUICE, "pyramid", src, dst, *LAYOUT, "--journal", journal],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(with_j / 2)
        p.send_signal(signal.SIGKILL)
        p.wait()
        with open(journal, "rb") as f:
            units = sum(line.startswith(b"u ") for line in f)
        resumed = timed([SLUICE, "pyramid", src, dst, *LAYOUT, "--journal", journal,
                         "--resume"])
        print(f"resume.units_journaled_at_kill50: {units} units")
        print(f"resume.after_kill50_s: {resumed:.3f} s")
        print(f"resume.after_kill50_ratio: {100 * resumed / full:.1f} % of a full run "
              f"(target <= 55)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
