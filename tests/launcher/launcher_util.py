# SPDX-License-Identifier: MIT
"""What the launcher checks (check_*.py beside this file) share: where the
sluice program and the source tree are, running sluice, collecting failed
expectations, `sluice checksum`, reading stores with zarrita
(tests/tools/zarr_read.mjs; zarr_read.py, zarr-python's reading, imports
once this module is imported), and what the checks of graph files against
numpy share (writing inputs and graphs, reading outputs, `sluice explain`,
refused graphs; these import zarr when called, so a script calls
skip_without("numpy", "zarr") first).  A script imports it as
`launcher_util` (Python puts the script's own directory first on sys.path).

    SL_SLUICE_EXE       the sluice program (meson sets it); run by hand,
                        build/launcher/sluice of this tree, else PATH
    SL_SOURCE_ROOT      the source tree (meson sets it); else two folders up
    SL_REQUIRE_ZARRITA  1: a missing node or zarrita fails instead of skipping
    SL_KEEP_TMP         1: scratch_dir() keeps its directory and prints where it is
"""
import contextlib
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

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


@contextlib.contextmanager
def scratch_dir(prefix):
    """A new temporary directory, removed afterwards (kept, and its path
    printed, with SL_KEEP_TMP=1)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp
    finally:
        if os.environ.get("SL_KEEP_TMP") == "1":
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


# ---- graph files checked against numpy ------------------------------------------

RUN = ("run", "--no-progress")
OUT_CREATE = {"format": 2, "codec": "zstd:1"}  # Zarr v2, so that zarr-python 2 reads it


def write_zarr(path, data, chunks):
    """Store numpy array `data` at `path` with zarr-python: Zarr v2 in
    `chunks`, zstd level 1."""
    import zarr
    from numcodecs import Zstd
    z = zarr.open_array(path, mode="w", shape=data.shape, chunks=chunks, dtype=data.dtype,
                        compressor=Zstd(level=1))
    z[...] = data


def read_zarr(path):
    """(values, dtype, chunk shape) of a stored array."""
    import zarr
    z = zarr.open_array(path, mode="r")
    return z[...], z.dtype, tuple(z.chunks)


def write_graph(d, doc, name="graph.json"):
    """Write graph document `doc` as `d`/`name`; its path."""
    path = os.path.join(d, name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def leftovers(d, out_names):
    """What a refused graph wrongly left in `d`: outputs or staging."""
    return sorted(e for e in os.listdir(d) if e in out_names or e.startswith(".sluice-tmp"))


class Graph:
    """A graph file being written in directory `d`: inputs stored with
    zarr-python as they are added, outputs o<k>.zarr created as Zarr v2."""

    def __init__(self, d):
        self.d = d
        os.makedirs(d, exist_ok=True)
        self.arrays, self.nodes, self.outs = {}, {}, []

    def get(self, name, data, chunks):
        """Store `data` as `name`.zarr and read it with node g<name>; its id."""
        write_zarr(os.path.join(self.d, f"{name}.zarr"), data, chunks)
        self.arrays[name] = {"path": f"{name}.zarr"}
        self.nodes[f"g{name}"] = {"op": "get", "array": name}
        return f"g{name}"

    def add(self, nid, node):
        assert nid not in self.nodes
        self.nodes[nid] = node
        return nid

    def put(self, nid, what=None):
        """Write node `nid` into a new array o<k>.zarr (`what` it should
        hold kept in self.outs); its path."""
        k = len(self.outs)
        self.arrays[f"o{k}"] = {"path": f"o{k}.zarr", "create": dict(OUT_CREATE)}
        self.nodes[f"w{k}"] = {"op": "put", "input": nid, "array": f"o{k}"}
        self.outs.append((nid, what))
        return os.path.join(self.d, f"o{k}.zarr")

    def write(self):
        return write_graph(self.d, {"sluice": 1, "arrays": self.arrays, "nodes": self.nodes})


EXPLAIN_NODE = re.compile(r"^\s+(\S+)\s+(\S+)\s+(.*?)\s+(\S+)\s+shape \[([^\]]*)\] "
                          r"chunks \[([^\]]*)\] grid \[([^\]]*)\]$", re.MULTILINE)
EXPLAIN_EDGE = re.compile(r"^\s+(\S+ -> \S+): (.*)$", re.MULTILINE)


def explain(graph, what):
    """`sluice explain GRAPH`: ({node id: (kind, op, dtype, shape)},
    {"a -> b": what it says of the edge}, its text); a failure when it fails."""
    rc, out, err = run("explain", graph)
    expect(rc == 0, f"{what}: sluice explain exits {rc}: {out}{err}")
    nodes = {m.group(1): (m.group(2), m.group(3), m.group(4),
                          [int(v) for v in m.group(5).split(",") if v.strip()])
             for m in EXPLAIN_NODE.finditer(out)}
    return nodes, {m.group(1): m.group(2) for m in EXPLAIN_EDGE.finditer(out)}, out


def expect_refused(what, graph, d, out_names, words, line_with=None):
    """`sluice run` and `sluice validate` of `graph` both exit 2, saying
    every one of `words` (on the line of stderr holding `line_with`, or
    anywhere), run saying that nothing was run, and leave none of
    `out_names` nor staging in `d`."""
    for cmd in (RUN, ("validate",)):
        rc, out, err = run(*cmd, graph)
        expect(rc == 2, f"{what}: sluice {cmd[0]} exits {rc}, not 2: {out}{err}")
        said = err if line_with is None else \
            next((ln for ln in err.splitlines() if line_with in ln), "")
        missing = [w for w in words if w not in said]
        expect(not missing, f"{what}: sluice {cmd[0]}'s error lacks {missing}: {err}")
        if cmd == RUN:
            expect("nothing was run" in err, f"{what}: sluice run says nothing ran: {err}")
        left = leftovers(d, out_names)
        expect(not left, f"{what}: sluice {cmd[0]} left {left}")
