# SPDX-License-Identifier: MIT
"""What the launcher checks (check_*.py beside this file) share: where the
sluice program and the source tree are, running sluice, collecting failed
expectations, `sluice checksum`, and reading stores with zarrita
(tests/tools/zarr_read.mjs; zarr_read.py, zarr-python's reading, imports
once this module is imported).  A script imports it as `launcher_util`
(Python puts the script's own directory first on sys.path).

    SL_SLUICE_EXE       the sluice program (meson sets it); run by hand,
                        build/launcher/sluice of this tree, else PATH
    SL_SOURCE_ROOT      the source tree (meson sets it); else two folders up
    SL_REQUIRE_ZARRITA  1: a missing node or zarrita fails instead of skipping
"""
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys

SOURCE = os.environ.get("SL_SOURCE_ROOT",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SLUICE = os.environ.get("SL_SLUICE_EXE") or next(
    (p for p in [os.path.join(SOURCE, "build", "launcher", "sluice")] if os.access(p, os.X_OK)),
    shutil.which("sluice") or "sluice")
TOOLS = os.path.join(SOURCE, "tests", "tools")
sys.path.append(TOOLS)  # for zarr_read (zarr-python's reading)

# The small sharded pyramid the resume tests (check_mpi_resume.py here,
# tests/remote/check_s3_resume.py) kill, fail and resume.
PYRAMID_LEVELS = 3
PYRAMID_LAYOUT = ["--levels", str(PYRAMID_LEVELS), "--factors", "1,2,2", "--chunks", "8,32,32",
                  "--shards", "8,64,64", "--no-progress", "--threads", "1"]

# What expect() found wrong, in order; a script prints them with finish().
failures = []


def skip_without(*modules, hint="install python3-zarr"):
    """Exit 77 (skipped), naming the first of `modules` that does not import."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as e:
            print(f"skipped: {e}" + (f" ({hint})" if hint else ""))
            sys.exit(77)


def run(*args, cwd=None, env=None, timeout=None):
    """`sluice ARGS...`: (exit status, stdout, stderr)."""
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, cwd=cwd, env=env,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what):
    if not cond:
        failures.append(what)


def checksum(path, *args, env=None, timeout=None):
    """`sluice checksum PATH ARGS...`'s digest; None (and a failure) when it fails."""
    rc, out, err = run("checksum", path, *args, env=env, timeout=timeout)
    expect(rc == 0, f"checksum {path}: {err}")
    return out.split()[0] if rc == 0 else None


def finish(what=None):
    """Print every failure and a count (after `what`); the exit status."""
    for f in failures:
        print("FAIL:", f)
    print(f"{what}: {len(failures)} failures" if what else f"{len(failures)} failures")
    return 1 if failures else 0


def zarrita_command():
    """([node, zarr_read.mjs], None), or (None, why zarrita cannot run here)."""
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        return None, "node is not installed (apt-get install nodejs npm)"
    if not os.path.isdir(os.path.join(TOOLS, "node_modules", "zarrita")):
        return None, "tests/tools/node_modules has no zarrita (run: npm ci --prefix tests/tools)"
    return [node, os.path.join(TOOLS, "zarr_read.mjs")], None


def zarrita_read(paths):
    """{path: zarrita's description} for each of `paths`, or None when zarrita
    cannot run (said; a failure with SL_REQUIRE_ZARRITA=1)."""
    cmd, why = zarrita_command()
    if cmd is None:
        expect(os.environ.get("SL_REQUIRE_ZARRITA") != "1", f"SL_REQUIRE_ZARRITA=1 but {why}")
        print(f"zarrita checks skipped: {why}")
        return None
    p = subprocess.run([*cmd, *paths], capture_output=True, text=True)
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    expect(len(lines) == len(paths), f"zarrita described {len(lines)} of {len(paths)}: {p.stderr}")
    return {d["path"]: d for d in lines}


def tree(path):
    """{relative path: bytes} of every file under `path`."""
    out = {}
    for d, _, files in os.walk(path):
        for f in files:
            full = os.path.join(d, f)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, path)] = fh.read()
    return out


def journal_units(path):
    """The (put, unit) records of one run journal up to its first bad line
    (every line "<payload> <16 hex of its sha256>", units after "begin")."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    out, body = set(), False
    for line in lines:
        payload = line[:-17]
        if hashlib.sha256(payload).hexdigest()[:16].encode() != line[-16:]:
            break
        if payload == b"begin":
            body = True
        elif body and payload.startswith(b"u "):
            _, p, u = payload.split()
            out.add((int(p), int(u)))
    return out


def pyramid_trusted(root, units, factors=(1, 2, 2)):
    """The (put, unit) records of `units` that a resume of a pyramid laid
    out as `root` (a local pyramid, put k writing level k, each level read
    back for the next with `factors`) trusts: level 0's as recorded, a
    higher level's unit only where every unit of the level below that its
    region reads is trusted itself (units redone make the units reading
    them redone, and no other)."""
    grids = []
    for k in range(len(os.listdir(root))):
        meta = os.path.join(root, str(k), "zarr.json")
        if not os.path.exists(meta):
            break
        with open(meta) as f:
            m = json.load(f)
        grids.append((m["shape"], m["chunk_grid"]["configuration"]["chunk_shape"]))
    trusted = {(p, u) for p, u in units if p == 0}
    for k in range(1, len(grids)):
        (shape, us), (pshape, pus) = grids[k], grids[k - 1]
        n = [-(-s // u) for s, u in zip(shape, us)]
        pn = [-(-s // u) for s, u in zip(pshape, pus)]
        for p, u in sorted(units):
            if p != k:
                continue
            coords, rest = [], u
            for d in reversed(range(len(n))):
                coords.append(rest % n[d])
                rest //= n[d]
            coords.reverse()
            ranges = []
            for d, c in enumerate(coords):
                lo = c * us[d] * factors[d]
                hi = min(min((c + 1) * us[d], shape[d]) * factors[d], pshape[d])
                ranges.append(range(lo // pus[d], (hi - 1) // pus[d] + 1))
            below = [0]
            for d, r in enumerate(ranges):
                below = [b * pn[d] + i for b in below for i in r]
            if all((k - 1, b) in trusted for b in below):
                trusted.add((k, u))
    return trusted
