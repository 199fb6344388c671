#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""--resume into s3:// outputs (issue 21), against s3rver behind the proxy
that checks every signature (s3serve.py).  S3 outputs are written in place,
so a resume opens the earlier run's node (deleting nothing) and skips the
units its journals hold.

1. `sluice pyramid` of a local input with a corrupt chunk into s3:// fails
   in some units (exit 1) and leaves its node; with the chunk repaired,
   --resume writes exactly the units the journal did not hold (the
   report's objects_written; a unit reading a unit that runs again runs
   again too) and every level's `sluice checksum` equals an uninterrupted
   run's.  Under mpirun (when there) the failed run has 2 ranks and the
   resume 1 and 3.
2. A changed option (--missing-is-error) is refused (exit 2, naming it),
   and so is a resume with no node at the URL; the node is untouched.
3. A graph file creating an s3:// array, one whose pyramid node writes an
   s3:// group, and one whose copy node copies a group to s3://, fail in
   some units (on 2 ranks too, resumed on 3 and
   1, with mpirun): --resume opens the node at the URL and writes exactly
   the units its journals lack (and, in the pyramid, those reading them),
   the checksums equal to the input's or an uninterrupted run's; another node put at the URL since refuses the resume (exit 2,
   naming the object that differs) and is left as it is.
4. A run begun afresh (--overwrite, no --resume) removes the earlier
   journals before it deletes the node.

    check_s3_resume.py    (SL_SLUICE_EXE names the sluice binary)
Exit 77 (skipped) without node or s3rver, unless SL_REQUIRE_S3RVER=1.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(HERE, "..", "launcher"))
import s3serve  # noqa: E402
from launcher_util import (PYRAMID_LAYOUT, PYRAMID_LEVELS, journal_units,  # noqa: E402
                           pyramid_trusted)

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
# The runs across ranks need a sluice built with MPI (meson sets SL_MPI).
MPIRUN = shutil.which("mpirun") if os.environ.get("SL_MPI", "1") == "1" else None
LEVELS = PYRAMID_LEVELS
LAYOUT = PYRAMID_LAYOUT
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what, flush=True)


class Case:
    def __init__(self, tmp, s, env):
        self.tmp, self.s, self.env = tmp, s, env
        self.ep = ["--endpoint", s.proxy_url]
        self.src = os.path.join(tmp, "src.zarr")
        self.journal = os.path.join(tmp, "J")
        self.report = os.path.join(tmp, "report.json")
        self.chunk = os.path.join(self.src, "c", "1", "2", "1")
        self.n_url = 0

    def run(self, np_, *args):
        cmd = ([MPIRUN, "--oversubscribe", "-np", str(np_)] if np_ else []) + [SLUICE, *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=self.env)
        return p.returncode, p.stderr

    def checksums(self, url):
        out = []
        for k in range(LEVELS):
            p = subprocess.run([SLUICE, "checksum", f"{url}/{k}", *self.ep], capture_output=True,
                               text=True, timeout=120, env=self.env)
            out.append(p.stdout.split()[0] if p.returncode == 0 and p.stdout.strip() else
                       f"error: {p.stderr.strip()[-300:]}")
        return out

    def argv(self, url, *extra):
        return ["pyramid", self.src, url, *LAYOUT, *self.ep, "--journal", self.journal, *extra]

    def run_corrupt(self, np_, *argv):
        """Run `argv` on `np_` ranks with one input chunk corrupt (so that
        its units fail), the chunk repaired after: (exit, stderr)."""
        with open(self.chunk, "rb") as f:
            good = f.read()
        with open(self.chunk, "wb") as f:
            f.write(b"not a zstd frame" * 4)
        try:
            return self.run(np_, *argv)
        finally:
            with open(self.chunk, "wb") as f:
                f.write(good)

    def journals(self):
        return sorted(f for f in os.listdir(self.tmp) if f == "J" or f.startswith("J.rank-"))

    def setup(self):
        rc, err = self.run(0, "generate", self.src, "--shape", "32,128,128", "--chunks",
                           "8,32,32", "--no-progress")
        if rc != 0:
            sys.exit(f"cannot make the input: {err}")
        url = f"s3://{self.s.bucket}/ref.zarr"
        rc, err = self.run(0, "pyramid", self.src, url, *LAYOUT, *self.ep, "--report",
                           self.report)
        if rc != 0:
            sys.exit(f"an uninterrupted run to s3:// fails: {err}")
        with open(self.report) as f:
            self.total = json.load(f)["summary"]["objects_written"]
        self.sums = self.checksums(url)
        # Units per level (put k is level k): the shard files of a local run.
        local = self.local = os.path.join(self.tmp, "local.zarr")
        rc, err = self.run(0, "pyramid", self.src, local, *LAYOUT)
        if rc != 0:
            sys.exit(f"an uninterrupted local run fails: {err}")
        self.per_level = [sum(len(fs) for _, _, fs in os.walk(os.path.join(local, str(k), "c")))
                          for k in range(LEVELS)]
        if sum(self.per_level) != self.total:
            sys.exit(f"levels hold {self.per_level} shards; the s3:// run wrote {self.total}")

    def trusted(self):
        """Units the journals hold that a resume trusts: not those reading
        a unit that runs again (launcher_util.pyramid_trusted)."""
        union = set()
        for f in self.journals():
            union |= journal_units(os.path.join(self.tmp, f))
        return len(pyramid_trusted(self.local, union))

    def failed_state(self, np_):
        """A new URL, written by a run that failed in some units."""
        self.n_url += 1
        url = f"s3://{self.s.bucket}/resume/{self.n_url}.zarr"
        for f in self.journals():
            os.unlink(os.path.join(self.tmp, f))
        rc, err = self.run_corrupt(np_, *self.argv(url))
        if rc != 1:
            sys.exit(f"a run to s3:// reading a corrupt chunk exits {rc}, not 1: {err}")
        return url

    def resume(self, np_, url, what):
        trusted = self.trusted()
        rc, err = self.run(np_, *self.argv(url, "--resume", "--report", self.report))
        if rc != 0:
            fail(f"{what}: --resume exits {rc}: {err.strip()[-1500:]}")
            return
        with open(self.report) as f:
            s = json.load(f)["summary"]
        if s["objects_written"] != self.total - trusted or (trusted > 0 and s["resumed"] == 0):
            fail(f"{what}: the journals held {trusted} of {self.total} units; the resume wrote "
                 f"{s['objects_written']} and skipped {s['resumed']} chunks")
        sums = self.checksums(url)
        if sums != self.sums:
            fail(f"{what}: checksums {sums}, an uninterrupted run's {self.sums} (the journals "
                 f"held {trusted} trusted units, the resume wrote {s['objects_written']} and "
                 f"skipped {s['resumed']} chunks; its stderr: {err.strip()[-1500:]})")
        else:
            print(f"{what}: {trusted} of {self.total} units journaled, the resume wrote "
                  f"{s['objects_written']}; checksums equal", flush=True)

    def refusals(self):
        url = self.failed_state(0)
        before = self.checksums(url)
        rc, err = self.run(0, *self.argv(url, "--resume", "--missing-is-error"))
        if rc != 2 or "option:missing changed" not in err:
            fail(f"a changed option: --resume exits {rc} (want 2): {err.strip()[-800:]}")
        missing = f"s3://{self.s.bucket}/resume/none.zarr"
        rc, err = self.run(0, *self.argv(missing, "--resume"))
        if rc != 2 or "no Zarr node" not in err:
            fail(f"--resume to a URL without a node exits {rc} (want 2): {err.strip()[-800:]}")
        if self.checksums(url) != before:
            fail("a refused --resume changed the s3:// node")
        self.resume(0, url, "after the refusals")
        # Afresh: the journals go before the node is deleted.
        rc, err = self.run(0, *self.argv(url, "--overwrite"))
        if rc != 0 or self.journals() != ["J"] or self.checksums(url) != self.sums:
            fail(f"a run afresh over the node: exit {rc}, journals {self.journals()}: "
                 f"{err.strip()[-800:]}")

    def graph_file_copy(self):
        """A graph file's copy node writing an s3:// group (a copy of the
        local pyramid, levels rechunked into v3 shards of 8,64,64) fails in
        the units of one corrupt source chunk; --resume opens the group and
        its members at the URL and writes exactly the units the journal
        lacks; every level's checksum equals the source's."""
        src = os.path.join(self.tmp, "copy_src.zarr")
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(self.local, src)
        url = f"s3://{self.s.bucket}/graph/copy.zarr"
        g = os.path.join(self.tmp, "gc.json")
        with open(g, "w") as f:
            json.dump({"sluice": 1, "arrays": {},
                       "nodes": {"c": {"op": "copy", "source": src, "group": url,
                                       "create": {"format": 3, "shards": [8, 64, 64]},
                                       "overwrite": True}},
                       "run": {"journal": "gc.journal"}}, f)
        argv = ["run", g, "--allow-outside", "--no-progress", *self.ep]
        chunk = os.path.join(src, "0", "c", "1", "0", "0")
        with open(chunk, "rb") as f:
            good = f.read()
        with open(chunk, "wb") as f:
            f.write(b"not a shard" * 8)
        try:
            rc, err = self.run(0, *argv)
        finally:
            with open(chunk, "wb") as f:
                f.write(good)
        units = journal_units(os.path.join(self.tmp, "gc.journal"))
        if rc != 1 or not units:
            fail(f"graph file (copy): the failed run exits {rc} (want 1) with {len(units)} units "
                 f"journaled: {err.strip()[-800:]}")
            return
        rc, err = self.run(0, *argv, "--resume", "--report", self.report)
        wrote = json.load(open(self.report))["summary"]["objects_written"] if rc == 0 else None
        got = [self.checksums_of(f"{url}/{k}") for k in range(LEVELS)]
        want = [self.checksums_of(os.path.join(src, str(k))) for k in range(LEVELS)]
        if rc != 0 or wrote != self.total - len(units) or got != want:
            fail(f"graph file (copy): exit {rc}, wrote {wrote} units (want "
                 f"{self.total - len(units)}), checksums {got} (want {want}): "
                 f"{err.strip()[-1200:]}")
        else:
            print(f"graph file (copy): {len(units)} of {self.total} units journaled, the resume "
                  f"wrote {wrote}; checksums equal", flush=True)

    def graph_file(self, np_fail, np_resume, pyramid=False):
        """A graph file creating an s3:// array (shards of 8,64,64: 16
        units), or with `pyramid` a pyramid node's s3:// group (LAYOUT's:
        24 units), fails in some units on `np_fail` ranks (0: no mpirun);
        with the chunk repaired, --resume on `np_resume` opens the node at
        the URL (deleting nothing) and writes exactly the units the journals
        lack (or that read those, in a pyramid)."""
        self.n_url += 1
        url = f"s3://{self.s.bucket}/graph/{self.n_url}.zarr"
        g = os.path.join(self.tmp, "g.json")
        doc = {"sluice": 1,
               "arrays": {"image": {"path": self.src},
                          "out": {"path": url, "endpoint": self.s.proxy_url, "like": "image",
                                  "overwrite": True, "create": {"shards": [8, 64, 64]}}},
               "nodes": {"read": {"op": "get", "array": "image"},
                         "w": {"op": "put", "input": "read", "array": "out"}},
               "run": {"journal": "g.journal"}}
        total = 16
        if pyramid:
            del doc["arrays"]["out"]
            doc["nodes"]["w"] = {"op": "pyramid", "input": "read", "group": url,
                                 "levels": LEVELS,
                                 "factors": [1, 2, 2], "overwrite": True,
                                 "create": {"format": 3, "chunks": [8, 32, 32],
                                            "shards": [8, 64, 64]}}
            total = self.total
        with open(g, "w") as f:
            json.dump(doc, f)
        # (A pyramid node's group takes the run's --endpoint.)
        argv = ["run", g, "--allow-outside", "--no-progress", *self.ep]
        for f in os.listdir(self.tmp):
            if f.startswith("g.journal"):
                os.unlink(os.path.join(self.tmp, f))
        rc, err = self.run_corrupt(np_fail, *argv)
        units = set()
        for f in os.listdir(self.tmp):
            if f.startswith("g.journal") and not f.endswith(".tmp"):
                units |= journal_units(os.path.join(self.tmp, f))
        what = (f"graph file ({'pyramid' if pyramid else 'put'}) failed on {np_fail or 1} "
                f"process(es), resumed on {np_resume or 1}")
        if rc != 1 or not 0 < len(units) < total:
            fail(f"{what}: the failed run exits {rc} (want 1) with {len(units)} of {total} units "
                 f"journaled: {err.strip()[-800:]}")
            return None, None
        trusted = len(pyramid_trusted(self.local, units)) if pyramid else len(units)
        rc, err = self.run(np_resume, *argv, "--resume", "--report", self.report)
        wrote = json.load(open(self.report))["summary"]["objects_written"] if rc == 0 else None
        if pyramid:
            got, want = self.checksums(url), self.sums
        else:
            got, want = [self.checksums_of(url)], [self.checksums_of(self.src)]
        if rc != 0 or wrote != total - trusted or got != want:
            fail(f"{what}: exit {rc}, wrote {wrote} units (want {total - trusted}), checksums "
                 f"{got} (want {want}): {err.strip()[-1200:]}")
        else:
            print(f"{what}: {len(units)} of {total} units journaled ({trusted} trusted), the "
                  f"resume wrote {wrote}; checksums equal", flush=True)
        return g, url

    def checksums_of(self, path):
        p = subprocess.run([SLUICE, "checksum", path, *self.ep], capture_output=True, text=True,
                           timeout=120, env=self.env)
        return p.stdout.split()[0] if p.returncode == 0 and p.stdout.strip() else \
            f"error: {p.stderr.strip()[-300:]}"

    def graph_file_refusals(self):
        """Another node put at the URL since (another layout) refuses the
        resume, naming the object that differs; the node is left as it
        is."""
        g, url = self.graph_file(0, 0)
        if g is None:
            return
        argv = ["run", g, "--allow-outside", "--no-progress"]
        rc, err = self.run_corrupt(0, *argv)
        rc, err = self.run(0, "copy", self.src, url, *self.ep, "--overwrite", "--chunks",
                           "8,16,16", "--no-progress")
        if rc != 0:
            fail(f"cannot put another node at {url}: {err.strip()[-800:]}")
            return
        rc, err = self.run(0, *argv, "--resume")
        if rc != 2 or "--resume refused" not in err or '"zarr.json" differs' not in err or \
                url not in err:
            fail(f"a graph file resumed over another node exits {rc} (want 2): "
                 f"{err.strip()[-800:]}")
        else:
            print(f"another node at the URL: {err.strip().splitlines()[-1]}", flush=True)
        p = subprocess.run([SLUICE, "info", url, *self.ep, "--json"], capture_output=True,
                           text=True, timeout=120, env=self.env)
        if p.returncode != 0 or json.loads(p.stdout)["node"]["chunks"] != [8, 16, 16]:
            fail(f"the refused resume changed the node at {url}: {p.stdout[:300]} {p.stderr}")


def main():
    why = s3serve.missing()
    if why:
        if os.environ.get("SL_REQUIRE_S3RVER") == "1":
            print(f"s3rver is required (SL_REQUIRE_S3RVER=1): {why}")
            sys.exit(1)
        print(f"skipped: {why}")
        sys.exit(77)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER",
               AWS_REGION="us-east-1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    tmp = tempfile.mkdtemp(prefix="sluice-s3-resume-")
    try:
        with s3serve.s3serve() as s:
            c = Case(tmp, s, env)
            c.setup()
            url = c.failed_state(0)
            c.resume(0, url, "failed, resumed")
            if MPIRUN is not None:
                for np_ in (1, 3):
                    url = c.failed_state(2)
                    c.resume(np_, url, f"failed on 2 ranks, resumed on {np_}")
            else:
                print("mpirun not found, or sluice built without MPI (SL_MPI=0): the runs "
                      "across ranks are skipped")
            c.refusals()
            c.graph_file(0, 0)
            c.graph_file(0, 0, pyramid=True)
            c.graph_file_copy()
            if MPIRUN is not None:
                c.graph_file(2, 3)
                c.graph_file(2, 1, pyramid=True)
            c.graph_file_refusals()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
