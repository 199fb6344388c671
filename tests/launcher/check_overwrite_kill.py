#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Kill `sluice copy NEW DST --format v2 --overwrite` with SIGKILL at random
moments (issue 18): before it writes anything, while it writes, around the
swap and after it.  DST starts as an old Zarr v3 array whose chunk grid is
not the new one's, so a mix shows as stray files.  After every kill DST
must be exactly the old array (byte for byte) or exactly the new one (the
listing and metadata of a reference run, and its data by zarr-python in this
process and by `sluice checksum`): never a mix, never unreadable.  Hidden
.sluice-tmp.* siblings that killed runs leave are allowed until the next
run removes them; a final run without a kill must succeed and leave none.

    check_overwrite_kill.py
    SL_KILL_COUNT=5000 check_overwrite_kill.py      a soak (default 200 kills)
    SL_KILL_SEED=1234 check_overwrite_kill.py       replay one sequence
    SL_KILL_MAX_SECONDS=240                         stop killing after this long
    SL_KEEP_TMP=1                                   keep the directory

The seed is printed first.  Exits 77 (skipped) without numpy and zarr.
"""
import functools
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import fsnap  # beside this file
from launcher_util import SLUICE, run, skip_without, zarrita_command

skip_without("zarr_read")  # numpy and zarr
from zarr_read import describe  # noqa: E402

COMMON = ["--no-progress", "--threads", "2"]
MAX_LEFTOVERS = 10  # staging siblings at once: more means killed runs' are never removed
PHASES = ((0.0, 0.1), (0.1, 0.4), (0.4, 0.8), (0.8, 1.0), (1.0, 9.9))  # of a full run's time


sluice = functools.partial(run, timeout=120)


def checksum(path):
    rc, out, err = sluice("checksum", path)
    return out.split()[0] if rc == 0 and out.strip() else None, err


class Kill:
    def __init__(self, tmp):
        self.tmp = tmp
        self.new = os.path.join(tmp, "new.zarr")
        self.old = os.path.join(tmp, "old.zarr")
        self.work = os.path.join(tmp, "work")
        self.dst = os.path.join(self.work, "dst.zarr")
        self.argv = [SLUICE, "copy", self.new, self.dst, "--format", "v2", "--overwrite", *COMMON]
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)
        if len(self.failures) <= 8:
            print(f"FAIL {msg}", flush=True)

    def setup(self):
        for args in (["generate", self.new, "--shape", "48,192,256", "--chunks", "16,64,64",
                      "--format", "v3", "--seed", "2"],
                     ["generate", self.old, "--shape", "72,128,192", "--chunks", "32,64,64",
                      "--format", "v3", "--seed", "1"]):
            rc, _, err = sluice(*args, *COMMON)
            if rc != 0:
                sys.exit(f"cannot make the inputs: {err}")
        ref_dir = os.path.join(self.tmp, "ref")
        ref = os.path.join(ref_dir, "dst.zarr")
        rc, _, err = sluice("copy", self.new, ref, "--format", "v2", *COMMON)
        if rc != 0:
            sys.exit(f"the reference copy fails: {err}")
        self.old_snap = fsnap.snapshot(self.old)
        self.new_listing = fsnap.listing(fsnap.snapshot(ref))
        self.old_sum, _ = checksum(self.old)
        self.new_sum, _ = checksum(ref)
        self.new_desc = describe(ref)
        if self.new_sum != checksum(self.new)[0] or self.new_desc.get("sha256") != self.new_sum:
            sys.exit("the reference copy, zarr-python and sluice checksum disagree")
        os.makedirs(self.work)

    def reset(self):
        """DST back to the old array; staging siblings are left alone."""
        shutil.rmtree(self.dst, ignore_errors=True)
        if os.path.lexists(self.dst):
            os.unlink(self.dst)
        shutil.copytree(self.old, self.dst)

    def classify(self, snap):
        """"old", "new", or a text saying what is wrong, for the subtree
        snapshot of DST."""
        if snap.pop("", ("d",)) != ("d",):
            return "not a directory"
        if snap == self.old_snap:
            s, err = checksum(self.dst)
            return "old" if s == self.old_sum else f"old bytes but sluice checksum {s}: {err}"
        if fsnap.listing(snap) != self.new_listing:
            return ("a mix: against the old " + fsnap.describe_diff(self.old_snap, snap, 3) +
                    "; against the new " + fsnap.describe_diff(self.new_listing,
                                                               fsnap.listing(snap), 3))
        d = describe(self.dst)
        if not d.get("ok") or d.get("sha256") != self.new_sum:
            return f"the new listing but zarr-python reads {d.get('sha256') or d.get('error')}"
        s, err = checksum(self.dst)
        if s != self.new_sum:
            return f"the new listing but sluice checksum gives {s}: {err.strip()}"
        return "new"

    def timed_run(self):
        self.reset()
        t0 = time.monotonic()
        p = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = p.communicate()
        t = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"an overwriting run without a kill exits {p.returncode}: {err.decode()}")
        return t

    def one(self, delay):
        """Start a run, SIGKILL it after `delay` s unless it has finished;
        (killed, state, parent snapshot, seconds it ran when it finished)."""
        t0 = time.monotonic()
        p = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            p.wait(timeout=delay)
            ran = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            ran = None
        _, err = p.communicate()
        killed = p.returncode == -signal.SIGKILL
        if not killed and p.returncode != 0:
            self.fail(f"a run that finished before its kill exits {p.returncode}: {err.decode()}")
        parent = fsnap.snapshot(self.work)
        return killed, self.classify(fsnap.subtree(parent, "dst.zarr")), parent, ran

    def loop(self, rng, n_kills):
        recent = [self.timed_run() for _ in range(5)]
        full = statistics.median(recent)
        print(f"an overwriting run takes {full * 1000:.0f} ms; kills at 0 .. "
              f"{1.2 * full * 1000:.0f} ms", flush=True)
        counts = {"old": 0, "new": 0, "bad": 0}
        by_phase = {ph: {"old": 0, "new": 0, "bad": 0} for ph in PHASES}
        kills = finished = max_left = 0
        seen = {}  # (state, whether the run left a new staging sibling) -> kills
        self.reset()
        started = time.monotonic()
        left_before = set()
        t_end = time.monotonic() + float(os.environ.get("SL_KILL_MAX_SECONDS", "240"))
        i = 0
        while kills < n_kills and time.monotonic() < t_end:
            # Every 8th run goes unkilled, to follow the run time (the first
            # runs are slower); timing only runs that beat their kill would
            # drift short.
            i += 1
            delay = 120.0 if i % 8 == 0 else rng.uniform(0, 1.2 * full)
            killed, state, parent, ran = self.one(delay)
            if delay == 120.0 and ran is not None:
                recent = (recent + [ran])[-7:]
                full = statistics.median(recent)
            left = fsnap.leftovers(parent)
            staged = bool({k.split("/")[0] for k in left} - left_before)
            left_before = {k.split("/")[0] for k in left}
            top = {k.split("/")[0] for k in parent} - {"dst.zarr"} - {k.split("/")[0] for k in left}
            if top:
                self.fail(f"kill at {delay * 1000:.1f} ms: unexpected entries beside DST: "
                          f"{sorted(top)}")
            max_left = max(max_left, len({k.split("/")[0] for k in left}))
            kind = state if state in ("old", "new") else "bad"
            if not killed:
                finished += delay != 120.0
                if state != "new":
                    self.fail(f"a run that finished before its kill leaves DST {state}")
            else:
                kills += 1
                counts[kind] += 1
                ph = next(p for p in PHASES if p[0] <= delay / full < p[1])
                by_phase[ph][kind] += 1
                seen[(kind, staged)] = seen.get((kind, staged), 0) + 1
                if kind == "bad":
                    self.fail(f"kill {kills} at {delay * 1000:.1f} ms "
                              f"({delay / full:.2f} of a run): DST is {state}")
            if state != "old":
                self.reset()
        if max_left > MAX_LEFTOVERS:
            self.fail(f"{max_left} staging siblings at once: killed runs' are not removed")
        print(f"last run time {full * 1000:.0f} ms; {kills} kills: {counts['old']} old, {counts['new']} new, {counts['bad']} "
              f"neither; {finished} runs finished before their kill, {i // 8} were not killed; at most {max_left} "
              "staging siblings at once")
        print(f"  in {time.monotonic() - started:.1f} s; what the kills left: "
              f"old alone {seen.get(('old', False), 0)} (before any write), "
              f"old + staging {seen.get(('old', True), 0)} (while writing), "
              f"new + staging {seen.get(('new', True), 0)} (after the swap), "
              f"new alone {seen.get(('new', False), 0)} (done)")
        for ph, c in by_phase.items():
            print(f"  kills at {ph[0]:.1f}-{ph[1]:.1f} of a run: {c['old']} old, {c['new']} new, "
                  f"{c['bad']} neither")
        if kills < n_kills:
            self.fail(f"only {kills} of {n_kills} kills in the time allowed")
        if counts["old"] == 0 or counts["new"] == 0:
            self.fail("the kills never left the old array or never the new one: their "
                      "moments do not cover the run")

    def final(self):
        """A run without a kill replaces DST and removes every leftover."""
        self.reset()
        p = subprocess.run(self.argv, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            self.fail(f"the final run exits {p.returncode}: {p.stderr.strip()}")
        parent = fsnap.snapshot(self.work)
        state = self.classify(fsnap.subtree(parent, "dst.zarr"))
        if state != "new":
            self.fail(f"after the final run DST is {state}")
        left = fsnap.leftovers(parent)
        if left:
            self.fail(f"the final run leaves staging behind: {left[:4]}")
        extra = sorted({k.split("/")[0] for k in parent} - {"dst.zarr"})
        if extra:
            self.fail(f"the final run leaves entries beside DST: {extra}")
        self.zarrita_final()

    def zarrita_final(self):
        """zarrita reads the final DST as the new array (skipped, saying so,
        without node or `npm ci --prefix tests/tools`)."""
        cmd, why = zarrita_command()
        if cmd is None:
            print(f"zarrita check skipped: {why}")
            return
        p = subprocess.run([*cmd, self.dst], capture_output=True, text=True, timeout=120)
        got = json.loads(p.stdout or "{}")
        if got.get("sha256") != self.new_sum or got.get("zarr_format") != 2:
            self.fail(f"zarrita reads the final DST as {got or p.stderr.strip()}")


def main():
    seed = int(os.environ.get("SL_KILL_SEED") or random.SystemRandom().randrange(1 << 31))
    n_kills = int(os.environ.get("SL_KILL_COUNT", "200"))
    print(f"seed {seed} (SL_KILL_SEED={seed} replays it), {n_kills} kills of {SLUICE}",
          flush=True)
    tmp = tempfile.mkdtemp(prefix="sluice-kill-")
    try:
        k = Kill(tmp)
        k.setup()
        k.loop(random.Random(seed), n_kills)
        k.final()
        if len(k.failures) > 8:
            print(f"... and {len(k.failures) - 8} more failures")
        print(f"overwrite kill: {len(k.failures)} failures (seed {seed})")
        return 1 if k.failures else 0
    finally:
        if os.environ.get("SL_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
