#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs that resume where they stopped (issue 21).

1. SIGKILL a local `sluice pyramid ... --journal J` at random moments (some
   resumed runs are killed again), then `--resume` it: it must exit 0,
   every file must equal an uninterrupted run's byte for byte (and every
   fourth time every level's `sluice checksum` is compared too), no
   hidden staging directory may be left, and the resumed run must write
   exactly the units the journal did not hold (its report's
   objects_written: a unit the journal had and that was written again
   would count).  Sharded levels (a unit is a shard) and, every third
   time, unsharded Zarr v2 levels (a unit is a chunk).
2. A changed downsample method (named by the group's metadata), a changed
   input (its codec), a changed option (--missing-is-error) and a changed
   output layout (--codec) are refused with exit 2 and a message naming
   what changed; the earlier output is kept, and the right --resume still
   completes it.  `sluice run` of a graph file whose "run" names its
   journal is killed and resumed 10 times (SL_RESUME_GRAPH_KILLS), and a
   changed map parameter is refused naming the graph.
3. A run that failed in some units (a corrupt input chunk) is resumed once
   the chunk is repaired: the failed units (and those reading them) run
   again, the rest are skipped, and the output is right.
4. A journal damaged at a byte (one bit flipped) or cut short at a byte:
   the resume is refused (exit 2, the header) or completes with the right
   bytes, having trusted exactly the records before the damaged line
   (never skipping a unit the damaged part named).  A sample of offsets
   (every line start and end, and random ones); SL_RESUME_ALL_BYTES=1
   tries every offset.

    check_resume_kill.py
    SL_RESUME_KILLS=1000 check_resume_kill.py    a soak (default 100 kills)
    SL_RESUME_SEED=1234 check_resume_kill.py     replay one sequence
    SL_KEEP_TMP=1                                keep the directory
"""
import functools
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from launcher_util import SLUICE, run, tree

COMMON = ["--no-progress", "--threads", "2"]
LEVELS = 3
CONFIGS = {  # name: layout options
    "sharded": ["--chunks", "8,32,32", "--shards", "8,64,64"],
    "v2": ["--chunks", "8,32,32", "--format", "v2"],
}

failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 10:
        print(f"FAIL {msg}", flush=True)


sluice = functools.partial(run, timeout=120)


def journal_trusted(data):
    """(header ok, staging line index, records trusted) as sluice reads
    `data`: every line "<payload> <16 hex of sha256>"; records up to the
    first damaged line."""
    lines = data.split(b"\n")
    complete = lines[:-1]  # the last piece has no newline: never a line

    def check(line):
        if len(line) < 18 or line[-17:-16] != b" ":
            return None
        payload = line[:-17]
        if b"\0" in line or hashlib.sha256(payload).hexdigest()[:16].encode() != line[-16:]:
            return None
        return payload

    i = 0
    if not complete or check(complete[0]) != b"sluice-journal 1":
        return False, 0
    i = 1
    while True:
        if i >= len(complete):
            return False, 0
        p = check(complete[i])
        i += 1
        if p is None:
            return False, 0
        if p == b"begin":
            break
        if not (p.startswith(b"fp ") or p.startswith(b"staging ")):
            return False, 0
    n = 0
    for line in complete[i:]:
        p = check(line)
        if p is None or not p.startswith(b"u "):
            break
        n += 1
    return True, n


class Resume:
    def __init__(self, tmp, rng):
        self.tmp = tmp
        self.rng = rng
        self.src = os.path.join(tmp, "src.zarr")
        self.work = os.path.join(tmp, "work")
        self.dst = os.path.join(self.work, "dst.zarr")
        self.journal = os.path.join(tmp, "run.journal")
        self.report = os.path.join(tmp, "report.json")
        self.ref = {}
        self.ref_tree = {}
        self.n_checked = 0
        self.units = {}
        self.full = {}

    def argv(self, config, *extra):
        return [SLUICE, "pyramid", self.src, self.dst, "--levels", str(LEVELS), "--factors",
                "1,2,2", *CONFIGS[config], "--journal", self.journal, *COMMON, *extra]

    def setup(self):
        rc, _, err = sluice("generate", self.src, "--shape", "32,128,128", "--chunks", "8,32,32",
                            *COMMON)
        if rc != 0:
            sys.exit(f"cannot make the input: {err}")
        os.makedirs(self.work)
        for config in CONFIGS:
            self.clean()
            times = []
            for _ in range(3):  # the first is slow (a cold cache): the fastest counts
                self.clean()
                t0 = time.monotonic()
                p = subprocess.run(self.argv(config, "--report", self.report),
                                   capture_output=True, text=True)
                times.append(time.monotonic() - t0)
            self.full[config] = min(times)
            if p.returncode != 0:
                sys.exit(f"an uninterrupted {config} run fails: {p.stderr}")
            with open(self.report) as f:
                self.units[config] = json.load(f)["summary"]["objects_written"]
            self.ref[config] = self.checksums()
            self.ref_tree[config] = tree(self.dst)
            with open(self.journal, "rb") as f:
                ok, n = journal_trusted(f.read())
            if not ok or n != self.units[config]:
                fail(f"{config}: an uninterrupted run's journal holds {n} units (header ok: {ok}); "
                     f"it wrote {self.units[config]}")
            print(f"{config}: a run writes {self.units[config]} units in "
                  f"{self.full[config] * 1000:.0f} ms", flush=True)

    def clean(self):
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        for f in (self.journal, self.report):
            if os.path.exists(f):
                os.unlink(f)

    def checksums(self):
        out = []
        for k in range(LEVELS):
            rc, so, err = sluice("checksum", os.path.join(self.dst, str(k)))
            out.append(so.split()[0] if rc == 0 and so.strip() else f"error: {err.strip()}")
        return out

    def check_output(self, config, what):
        """Every file byte for byte as an uninterrupted run's; every fourth
        time also every level's `sluice checksum`."""
        got = tree(self.dst)
        if got != self.ref_tree[config]:
            diff = sorted(k for k in set(got) | set(self.ref_tree[config])
                          if got.get(k) != self.ref_tree[config].get(k))
            fail(f"{what}: {len(diff)} files differ from an uninterrupted run's, e.g. {diff[:3]}")
        self.n_checked += 1
        if self.n_checked % 4 == 1:
            sums = self.checksums()
            if sums != self.ref[config]:
                fail(f"{what}: checksums {sums} differ from an uninterrupted run's "
                     f"{self.ref[config]}")

    def leftovers(self):
        return sorted(e for e in os.listdir(self.work) if e.startswith(".sluice-tmp"))

    def kill_run(self, argv, delay):
        """Start `argv`, SIGKILL it after `delay` s; whether the kill hit."""
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            p.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
        p.wait()
        return p.returncode == -signal.SIGKILL

    def resume(self, config):
        """--resume with a report: (the process, the report's summary; None
        when the run failed)."""
        p = subprocess.run(self.argv(config, "--resume", "--report", self.report),
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            return p, None
        with open(self.report) as f:
            return p, json.load(f)["summary"]

    def resume_and_check(self, config, what):
        """--resume to the end; check exit, bytes, leftovers and writes."""
        trusted = 0
        if os.path.exists(self.journal):
            with open(self.journal, "rb") as f:
                ok, trusted = journal_trusted(f.read())
            if not ok:
                fail(f"{what}: a killed run's journal has a bad header")
        p, s = self.resume(config)
        if s is None:
            fail(f"{what}: --resume exits {p.returncode}: {p.stderr.strip()}")
            return
        wrote = s["objects_written"]
        if wrote != self.units[config] - trusted:
            fail(f"{what}: the journal held {trusted} of {self.units[config]} units, but the "
                 f"resumed run wrote {wrote}")
        if trusted > 0 and s["resumed"] == 0:
            fail(f"{what}: {trusted} units journaled but no chunk counted as resumed")
        self.check_output(config, what)
        if self.leftovers():
            fail(f"{what}: staging left after the resume: {self.leftovers()}")
        return trusted

    def kill_loop(self, n_kills, t_end):
        kills = iterations = partial = 0
        while kills < n_kills and time.monotonic() < t_end:
            iterations += 1
            config = "v2" if iterations % 3 == 0 else "sharded"
            self.clean()
            full = self.full[config]
            hit = self.kill_run(self.argv(config), self.rng.uniform(0, 0.95 * full))
            kills += hit
            if hit and self.rng.random() < 0.3:
                kills += self.kill_run(self.argv(config, "--resume"),
                                       self.rng.uniform(0, 1.0 * full))
            trusted = self.resume_and_check(config, f"iteration {iterations} ({config})")
            partial += bool(trusted) and trusted < self.units[config]
        print(f"{kills} kills in {iterations} runs; {partial} resumes found a partial journal",
              flush=True)
        if kills < n_kills:
            fail(f"only {kills} kills of {n_kills} in the time allowed")
        if partial < n_kills // 10:
            fail(f"only {partial} resumes went on from a partial journal: the kills miss the runs")

    def killed_state(self, config, min_units=3):
        """A killed run with at least `min_units` journaled, not all: the
        kill comes later while too few are, earlier once all are."""
        delay = 0.6 * self.full[config]
        for _ in range(200):
            self.clean()
            self.kill_run(self.argv(config), delay * self.rng.uniform(0.9, 1.1))
            n = 0
            if os.path.exists(self.journal):
                with open(self.journal, "rb") as f:
                    ok, n = journal_trusted(f.read())
            if min_units <= n < self.units[config]:
                return n
            delay *= 0.8 if n >= self.units[config] else 1.25
        sys.exit("no kill left a partial journal in 200 tries")

    def refusals(self):
        config = "sharded"
        self.killed_state(config)
        alt_src = os.path.join(self.tmp, "src_gzip.zarr")
        rc, _, err = sluice("copy", self.src, alt_src, "--codec", "gzip:1", *COMMON)
        if rc != 0:
            sys.exit(f"cannot copy the input: {err}")
        cases = [
            # The method is in the group's OME metadata too: named there.
            ("graph", self.argv(config, "--resume", "--method", "max"), '"zarr.json"'),
            ("input", [a if a != self.src else alt_src
                       for a in self.argv(config, "--resume")], "input:input changed"),
            ("option", self.argv(config, "--resume", "--missing-is-error"),
             "option:missing changed"),
            ("layout", self.argv(config, "--resume", "--codec", "zstd:5"), '"0/zarr.json"'),
        ]
        for name, argv, expect in cases:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
            said = [ln for ln in p.stderr.splitlines() if "refused" in ln]
            if p.returncode != 2 or not said or expect not in said[0]:
                fail(f"a changed {name}: --resume exits {p.returncode} (want 2) saying "
                     f"{p.stderr.strip()!r} (want it to name {expect!r})")
            else:
                print(f"changed {name}: {said[0]}", flush=True)
        self.resume_and_check(config, "resume after the refusals")

    def failed_units(self):
        """A run with a corrupt input chunk fails in its units (exit 1);
        with the chunk repaired, --resume runs them again (and whatever
        reads them), skips the rest, and the output is right."""
        config = "sharded"
        self.clean()
        chunk = os.path.join(self.src, "c", "1", "2", "1")
        with open(chunk, "rb") as f:
            good = f.read()
        with open(chunk, "wb") as f:
            f.write(b"not a zstd frame" * 4)
        p = subprocess.run(self.argv(config, "--report", self.report), capture_output=True,
                           text=True, timeout=120)
        with open(chunk, "wb") as f:
            f.write(good)
        if p.returncode != 1:
            fail(f"a run reading a corrupt chunk exits {p.returncode}, not 1: {p.stderr}")
            return
        with open(self.journal, "rb") as f:
            ok, trusted = journal_trusted(f.read())
        p, s = self.resume(config)
        if s is None:
            fail(f"--resume after failed units exits {p.returncode}: {p.stderr.strip()}")
            return
        # A unit reading a failed one failed too (upstream), so the
        # journal lacks exactly the units to redo: the others are skipped,
        # those of the levels above the failure too.
        if s["objects_written"] != self.units[config] - trusted or s["resumed"] == 0:
            fail(f"--resume after failed units wrote {s['objects_written']} of "
                 f"{self.units[config]} units ({trusted} journaled) and skipped {s['resumed']} "
                 f"chunks: it should redo the failed ones only (and what reads them)")
        self.check_output(config, "resume after failed units")
        print(f"failed units: {self.units[config] - trusted} not journaled; the resume wrote "
              f"{s['objects_written']}, skipped {s['resumed']} chunks", flush=True)

    def graph_file(self, n_kills):
        """`sluice run` of a graph file naming its journal ("run"/"journal"):
        killed and resumed like the pyramid; then a changed parameter of a
        map (the outputs' metadata unchanged) is refused as "graph"."""
        gdir = os.path.join(self.tmp, "gf")
        shutil.rmtree(gdir, ignore_errors=True)
        os.makedirs(gdir)

        def write(scale):
            doc = {"sluice": 1,
                   "arrays": {"image": {"path": self.src},
                              "out": {"path": "scaled.zarr", "like": "image",
                                      "create": {"chunks": [8, 16, 16], "dtype": "float32"}}},
                   "nodes": {"read": {"op": "get", "array": "image"},
                             "f": {"op": "cast", "input": "read", "dtype": "float32"},
                             "s": {"op": "scale", "input": "f", "scale": scale},
                             "w": {"op": "put", "input": "s", "array": "out"}},
                   "run": {"journal": "g.journal"}}
            with open(os.path.join(gdir, "g.json"), "w") as f:
                json.dump(doc, f)

        def run(*extra):
            return subprocess.run([SLUICE, "run", os.path.join(gdir, "g.json"), "--allow-outside",
                                   *COMMON, *extra], capture_output=True, text=True, timeout=120)

        write(2.0)
        t0 = time.monotonic()
        if run().returncode != 0:
            sys.exit("an uninterrupted graph file run fails")
        full = time.monotonic() - t0
        out = os.path.join(gdir, "scaled.zarr")
        ref = tree(out)
        journal = os.path.join(gdir, "g.journal")
        kills = 0
        while kills < n_kills:
            shutil.rmtree(out)
            os.unlink(journal)
            p = subprocess.Popen([SLUICE, "run", os.path.join(gdir, "g.json"), "--allow-outside",
                                  *COMMON], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                p.wait(timeout=self.rng.uniform(0.2, 1.0) * full)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
            p.wait()
            kills += p.returncode == -signal.SIGKILL
            r = run("--resume")
            if r.returncode != 0 or tree(out) != ref:
                fail(f"graph file: --resume exits {r.returncode} or differs: {r.stderr.strip()}")
        # A state to refuse: killed part way, then the scale changed.
        shutil.rmtree(out)
        self.kill_run([SLUICE, "run", os.path.join(gdir, "g.json"), "--allow-outside", *COMMON],
                      0.6 * full)
        write(3.0)
        r = run("--resume")
        said = [ln for ln in r.stderr.splitlines() if "refused" in ln]
        if r.returncode != 2 or not said or "graph changed" not in said[0]:
            fail(f"graph file: a changed scale: --resume exits {r.returncode} saying "
                 f"{r.stderr.strip()!r} (want 2, naming the graph)")
        else:
            print(f"graph file, changed scale: {said[0]}", flush=True)
        write(2.0)
        r = run("--resume")
        if r.returncode != 0 or tree(out) != ref:
            fail(f"graph file: the resume after a refusal exits {r.returncode} or differs: "
                 f"{r.stderr.strip()}")
        print(f"graph file: {kills} kills resumed", flush=True)

    def damage(self, all_bytes):
        """Journals damaged or cut at byte offsets over one killed state."""
        config = "sharded"
        self.killed_state(config, 4)
        staging = self.leftovers()
        if len(staging) != 1:
            sys.exit(f"a killed run left {staging} staging directories")
        path = os.path.join(self.work, staging[0])
        saved = os.path.join(self.tmp, "saved")
        shutil.rmtree(saved, ignore_errors=True)
        shutil.copytree(path, saved)
        with open(self.journal, "rb") as f:
            base = f.read()
        lines = base.split(b"\n")
        starts, pos, body = [], 0, False
        for line in lines[:-1]:
            # Each line's first byte, and a record's newline.
            starts += [pos, pos + len(line)] if body else [pos]
            body = body or line.startswith(b"begin ")
            pos += len(line) + 1
        offsets = list(range(len(base))) if all_bytes else sorted(
            set(starts) | set(self.rng.sample(range(len(base)), min(20, len(base)))))
        refused = completed = 0
        for off in offsets:
            for kind in ("flip", "cut"):
                # The staging directory afresh (a new inode): the journal's
                # staging line is rewritten to name it, its sum recomputed.
                shutil.rmtree(self.work, ignore_errors=True)
                os.makedirs(self.work)
                shutil.copytree(saved, path)
                st = os.stat(path)
                fixed = []
                for line in lines[:-1]:
                    if line.startswith(b"staging "):
                        payload = f"staging {st.st_dev} {st.st_ino} {path}".encode()
                        line = payload + b" " + hashlib.sha256(payload).hexdigest()[:16].encode()
                    fixed.append(line)
                good = b"\n".join(fixed) + b"\n"
                o = min(off, len(good) - 1)
                bad = (good[:o] + bytes([good[o] ^ 0x01]) + good[o + 1:]) if kind == "flip" \
                    else good[:o]
                with open(self.journal, "wb") as f:
                    f.write(bad)
                ok, trusted = journal_trusted(bad)
                p = subprocess.run(self.argv(config, "--resume", "--report", self.report),
                                   capture_output=True, text=True, timeout=120)
                what = f"journal {kind} at byte {o}"
                if not ok:
                    if p.returncode != 2:
                        fail(f"{what}: a damaged header; --resume exits {p.returncode}, not 2: "
                             f"{p.stderr.strip()}")
                    refused += 1
                    continue
                if p.returncode != 0:
                    fail(f"{what}: --resume exits {p.returncode}: {p.stderr.strip()}")
                    continue
                with open(self.report) as f:
                    wrote = json.load(f)["summary"]["objects_written"]
                if wrote != self.units[config] - trusted:
                    fail(f"{what}: {trusted} records before the damage, but the resumed run wrote "
                         f"{wrote} of {self.units[config]} units")
                self.check_output(config, what)
                completed += 1
        print(f"damaged journals at {len(offsets)} offsets: {refused} refused (header), "
              f"{completed} completed trusting the records before the damage", flush=True)


def main():
    seed = int(os.environ.get("SL_RESUME_SEED") or random.randrange(1 << 30))
    print(f"seed {seed}", flush=True)
    rng = random.Random(seed)
    n_kills = int(os.environ.get("SL_RESUME_KILLS", "100"))
    tmp = tempfile.mkdtemp(prefix="sl-resume-")
    try:
        r = Resume(tmp, rng)
        r.setup()
        t0 = time.monotonic()
        r.kill_loop(n_kills, t0 + float(os.environ.get("SL_RESUME_MAX_SECONDS", "400")))
        print(f"kills took {time.monotonic() - t0:.1f} s", flush=True)
        r.refusals()
        r.failed_units()
        r.graph_file(int(os.environ.get("SL_RESUME_GRAPH_KILLS", "10")))
        r.damage(os.environ.get("SL_RESUME_ALL_BYTES") == "1")
    finally:
        if os.environ.get("SL_KEEP_TMP") == "1":
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
