#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs under mpirun that resume (issue 21, deliverable 5): each rank
journals its own units (J.rank-R-of-N), and a --resume with the same
number of ranks or another one skips every unit any rank journaled.

1. A 2-rank `sluice pyramid` over an existing node fails in some units (a
   corrupt input chunk); its output stays in the staging directory.  With
   the chunk repaired, --resume on 1, 2 and 3 ranks (each from the same
   failed state, made again): exit 0, every level's `sluice checksum` and
   every file equal an uninterrupted run's, no staging directory left, the
   report's objects_written is exactly the units the union of the
   journals did not hold and those reading units that run again (a unit of
   a level whose input units are all trusted is skipped), and the journals left are those of the resumed run's
   ranks.  --rerun-failed REPORT on 2 ranks does the same.
2. A changed option (--missing-is-error) is refused on 2 ranks (exit 2,
   naming it); the earlier output is kept and the right resume completes.
3. A graph file naming its journal fails on 2 ranks into a new output and
   is resumed on 3 and on 1 rank: only the units no rank journaled are
   written, and the output equals an uninterrupted run's.
4. A 2-rank run killed (SIGKILL of mpirun and its ranks) part way is
   resumed on 3 ranks, and another on 1, with the checks of 1.

Exits 77 (skipped) without mpirun.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from launcher_util import (PYRAMID_LAYOUT, PYRAMID_LEVELS, journal_units,
                           pyramid_trusted, tree)

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
MPIRUN = shutil.which("mpirun")
if MPIRUN is None:
    print("skipped: mpirun not found (install openmpi-bin)")
    sys.exit(77)

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
LEVELS = PYRAMID_LEVELS
LAYOUT = PYRAMID_LAYOUT
failures = []


def fail(msg):
    failures.append(msg)
    print(f"FAIL {msg}", flush=True)


def cmd(np_, *args):
    return ([MPIRUN, "--oversubscribe", "-np", str(np_)] if np_ else []) + [SLUICE, *args]


def run(np_, *args, timeout=180):
    p = subprocess.run(cmd(np_, *args), capture_output=True, text=True, env=ENV,
                       timeout=timeout)
    return p.returncode, p.stderr


class Case:
    def __init__(self, tmp):
        self.tmp = tmp
        self.src = os.path.join(tmp, "src.zarr")
        self.ref = os.path.join(tmp, "ref", "dst.zarr")  # the name is in the OME metadata
        self.work = os.path.join(tmp, "work")
        self.dst = os.path.join(self.work, "dst.zarr")
        self.journal = os.path.join(tmp, "J")
        self.report = os.path.join(tmp, "report.json")
        self.chunk = os.path.join(self.src, "c", "1", "2", "1")

    def argv(self, *extra):
        return ["pyramid", self.src, self.dst, *LAYOUT, *self.codec, "--journal", self.journal,
                "--overwrite", *extra]

    def setup(self, shape, codec=()):
        self.codec = list(codec)
        shutil.rmtree(self.src, ignore_errors=True)
        shutil.rmtree(self.ref, ignore_errors=True)
        rc, err = run(0, "generate", self.src, "--shape", shape, "--chunks", "8,32,32",
                      "--no-progress")
        if rc != 0:
            sys.exit(f"cannot make the input: {err}")
        rc, err = run(0, "pyramid", self.src, self.ref, *LAYOUT, *self.codec, "--report",
                      self.report)
        if rc != 0:
            sys.exit(f"an uninterrupted run fails: {err}")
        with open(self.report) as f:
            self.total = json.load(f)["summary"]["objects_written"]
        # Units per level (put p is level p): its shard files.
        self.per_level = [sum(len(fs) for _, _, fs in os.walk(os.path.join(self.ref, str(k), "c")))
                          for k in range(LEVELS)]
        if sum(self.per_level) != self.total:
            sys.exit(f"levels hold {self.per_level} shards; the run wrote {self.total}")
        self.sums = self.checksums(self.ref)
        self.files = tree(self.ref)

    def checksums(self, root):
        out = []
        for k in range(LEVELS):
            p = subprocess.run([SLUICE, "checksum", os.path.join(root, str(k))],
                               capture_output=True, text=True)
            out.append(p.stdout.split()[0] if p.returncode == 0 and p.stdout.strip() else
                       f"error: {p.stderr.strip()}")
        return out

    def journals(self):
        d, base = os.path.split(self.journal)
        return sorted(f for f in os.listdir(d)
                      if f == base or (f.startswith(base + ".rank-") and not f.endswith(".tmp")))

    def trusted(self):
        """Units the union of the journals holds that a resume trusts: a
        unit reading a unit of the level below that runs again runs again
        too (launcher_util.pyramid_trusted)."""
        union = set()
        d = os.path.dirname(self.journal)
        for f in self.journals():
            union |= journal_units(os.path.join(d, f))
        return len(pyramid_trusted(self.ref, union)), len(union)

    def staging(self):
        return sorted(e for e in os.listdir(self.work) if e.startswith(".sluice-tmp"))

    def wait_owners(self):
        """Wait until the processes named by staging directories and
        temporary files are gone (killed ranks may linger as zombies until
        reaped, and sluice keeps what a live process owns)."""
        t_end = time.monotonic() + 60
        pids = set()
        for d, dirs, files in os.walk(self.work):
            for name in dirs + files:
                m = re.match(r"\.sluice-tmp\.(?:[a-z]+\.)?(\d+)[@.]", name)
                if m:
                    pids.add(int(m.group(1)))
        for pid in pids:
            while time.monotonic() < t_end:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)

    def clean(self):
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        for f in self.journals():
            os.unlink(os.path.join(os.path.dirname(self.journal), f))
        # An old node is there: the run writes beside it, in staging.
        shutil.copytree(self.ref, self.dst)

    def failed_state(self):
        """A 2-rank run that failed in some units, its chunk repaired."""
        self.clean()
        with open(self.chunk, "rb") as f:
            good = f.read()
        with open(self.chunk, "wb") as f:
            f.write(b"not a zstd frame" * 4)
        try:
            rc, err = run(2, *self.argv("--report", self.report))
        finally:
            with open(self.chunk, "wb") as f:
                f.write(good)
        if rc != 1:
            sys.exit(f"a 2-rank run reading a corrupt chunk exits {rc}, not 1: {err}")
        if self.journals() != ["J.rank-0-of-2", "J.rank-1-of-2"] or len(self.staging()) != 1:
            sys.exit(f"a failed 2-rank run left journals {self.journals()} and staging "
                     f"{self.staging()}")
        self.wait_owners()

    def resume_and_check(self, np_, what, *extra):
        trusted, recorded = self.trusted()
        rc, err = run(np_, *self.argv("--report", self.report, *extra))
        if rc != 0:
            fail(f"{what}: exits {rc}: {err.strip()[-2000:]}")
            return
        with open(self.report) as f:
            s = json.load(f)["summary"]
        if s["objects_written"] != self.total - trusted:
            fail(f"{what}: the journals held {trusted} trusted units of {self.total} "
                 f"({recorded} recorded), but the resumed run wrote {s['objects_written']}")
        if trusted > 0 and s["resumed"] == 0:
            fail(f"{what}: {trusted} units journaled but no chunk counted as resumed")
        sums = self.checksums(self.dst)
        if sums != self.sums:
            fail(f"{what}: checksums {sums} differ from an uninterrupted run's {self.sums}")
        if tree(self.dst) != self.files:
            fail(f"{what}: files differ from an uninterrupted run's")
        if self.staging():
            fail(f"{what}: staging left: {self.staging()}")
        want = ["J"] if np_ <= 1 else [f"J.rank-{r}-of-{np_}" for r in range(np_)]
        if self.journals() != want:
            fail(f"{what}: journals left {self.journals()}, want {want}")
        print(f"{what}: {trusted} of {self.total} units journaled ({recorded} recorded); "
              f"wrote {s['objects_written']}, skipped {s['resumed']} chunks", flush=True)

    def failed_units(self):
        for np_ in (1, 2, 3):
            self.failed_state()
            self.resume_and_check(np_, f"failed on 2 ranks, resumed on {np_}", "--resume")
        self.failed_state()
        saved = os.path.join(self.tmp, "failed.json")
        shutil.copy(self.report, saved)
        self.resume_and_check(2, "failed on 2 ranks, --rerun-failed on 2", "--rerun-failed",
                              saved)

    def refusal(self):
        self.failed_state()
        rc, err = run(2, *self.argv("--resume", "--missing-is-error"))
        if rc < 0 and "libopen-rte" in err:
            # Every rank refuses and calls MPI_Abort at once; Debian's OpenMPI
            # 4.1 mpirun itself once died of SIGSEGV in its abort logging
            # (orte_rml_oob_send_buffer_nb) in CI.  A refusal writes nothing,
            # so it is asked again, once, and said.
            print(f"mpirun died of signal {-rc} inside OpenMPI; refusal asked again",
                  flush=True)
            rc, err = run(2, *self.argv("--resume", "--missing-is-error"))
        said = [ln for ln in err.splitlines() if "refused" in ln]
        if rc != 2 or not said or "option:missing changed" not in said[0]:
            fail(f"a changed option on 2 ranks: --resume exits {rc} (want 2) saying "
                 f"{err.strip()[-1500:]!r}")
        else:
            print(f"changed option: {said[0]}", flush=True)
        if len(self.staging()) != 1:
            fail(f"a refused resume left staging {self.staging()}")
        self.wait_owners()
        self.resume_and_check(3, "after the refusal, resumed on 3", "--resume")

    def killed(self):
        """SIGKILL 2-rank runs (mpirun and its ranks, as a lost job) once
        their journals hold some units, not all; resume one on 3 ranks and
        one on 1."""
        for np_, target in ((3, self.total // 8), (1, self.total // 3)):
            self.kill_resume(np_, target)

    def kill_resume(self, np_, target):
        """A kill once at least `target` units are recorded (the records
        come faster than this looks: it lands later), resumed on `np_`."""
        for attempt in range(10):
            self.clean()
            p = subprocess.Popen(cmd(2, *self.argv()), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=ENV, start_new_session=True)
            t_end = time.monotonic() + 120
            while p.poll() is None and time.monotonic() < t_end:
                try:
                    if self.trusted()[1] >= target:
                        break
                except (OSError, ValueError):
                    pass  # a journal being replaced
                time.sleep(0.001)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            self.wait_owners()
            trusted, recorded = self.trusted()
            if 0 < recorded < self.total and self.staging():
                self.resume_and_check(np_, f"killed on 2 ranks ({recorded} units recorded), "
                                      f"resumed on {np_}", "--resume")
                return
            target = max(1, target // 2)
        fail(f"no kill of a 2-rank run left a partial journal in 10 tries (resume on {np_})")


def graph_file(c):
    """`sluice run` of a graph file whose "run" names its journal: on 2
    ranks it fails in some units into a new output (kept, in place); with
    the chunk repaired --resume on 3 ranks and, from the same state made
    again, on 1 rank writes only the units no rank journaled, and the output
    equals an uninterrupted run's."""
    gdir = os.path.join(c.tmp, "gf")
    out = os.path.join(gdir, "scaled.zarr")
    journal = os.path.join(gdir, "g.journal")
    shutil.rmtree(gdir, ignore_errors=True)
    os.makedirs(gdir)
    doc = {"sluice": 1,
           "arrays": {"image": {"path": c.src},
                      "out": {"path": "scaled.zarr", "like": "image",
                              "create": {"chunks": [8, 16, 16], "shards": [8, 64, 64],
                                         "dtype": "float32"}}},
           "nodes": {"read": {"op": "get", "array": "image"},
                     "f": {"op": "cast", "input": "read", "dtype": "float32"},
                     "s": {"op": "scale", "input": "f", "scale": 2.0},
                     "w": {"op": "put", "input": "s", "array": "out"}},
           "run": {"journal": "g.journal"}}
    with open(os.path.join(gdir, "g.json"), "w") as f:
        json.dump(doc, f)
    argv = ["run", os.path.join(gdir, "g.json"), "--allow-outside", "--no-progress",
            "--threads", "1", "--report", c.report]
    rc, err = run(0, *argv)
    if rc != 0:
        sys.exit(f"an uninterrupted graph file run fails: {err}")
    with open(c.report) as f:
        total = json.load(f)["summary"]["objects_written"]
    ref = tree(out)

    def journals():
        return sorted(f for f in os.listdir(gdir) if f.startswith("g.journal"))

    for np_ in (3, 1):
        shutil.rmtree(out)
        for f in journals():
            os.unlink(os.path.join(gdir, f))
        with open(c.chunk, "rb") as f:
            good = f.read()
        with open(c.chunk, "wb") as f:
            f.write(b"not a zstd frame" * 4)
        try:
            rc, err = run(2, *argv)
        finally:
            with open(c.chunk, "wb") as f:
                f.write(good)
        units = set()
        for f in journals():
            units |= journal_units(os.path.join(gdir, f))
        if rc != 1 or journals() != ["g.journal.rank-0-of-2", "g.journal.rank-1-of-2"]:
            fail(f"graph file: a 2-rank run reading a corrupt chunk exits {rc} (want 1), "
                 f"journals {journals()}: {err.strip()[-1500:]}")
            return
        rc, err = run(np_, *argv, "--resume")
        with open(c.report) as f:
            wrote = json.load(f)["summary"]["objects_written"]
        want = ["g.journal"] if np_ == 1 else [f"g.journal.rank-{r}-of-{np_}" for r in range(np_)]
        if rc != 0 or wrote != total - len(units) or tree(out) != ref or journals() != want:
            fail(f"graph file: failed on 2 ranks, resumed on {np_}: exit {rc}, wrote {wrote} "
                 f"units (want {total - len(units)}), output same: {tree(out) == ref}, journals "
                 f"{journals()}: {err.strip()[-1500:]}")
        else:
            print(f"graph file: failed on 2 ranks ({len(units)} of {total} units journaled), "
                  f"resumed on {np_}: wrote {wrote}", flush=True)


def main():
    tmp = tempfile.mkdtemp(prefix="sluice-mpi-resume-")
    try:
        c = Case(tmp)
        c.setup("32,128,128")
        c.failed_units()
        c.refusal()
        graph_file(c)
        c.setup("64,1024,1024")
        c.killed()
    finally:
        if os.environ.get("SL_KEEP_TMP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}")
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
