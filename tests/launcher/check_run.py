#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check `sluice run`, `validate` and `explain` on JSON graph files: every
example graph of examples/graphs/ validates, dry-runs and runs end to end on
the input make_raw.py writes, and its outputs hold what numpy computes; a dry
run lists missing chunks and creates nothing; failed chunks give exit status 1
and a report; invalid files give 2 with line and column or a JSON pointer;
run options in the file and on the command line; help, version and usage
errors.  Exits 77 (skipped) without numpy and zarr (python3-zarr).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

from launcher_util import SOURCE, checksum, expect, finish, run, skip_without

skip_without("numpy", "zarr")
import numpy as np  # noqa: E402
import zarr  # noqa: E402

EXAMPLES = os.path.join(SOURCE, "examples", "graphs")
BUILD = os.environ.get("SL_BUILD_ROOT", os.path.join(SOURCE, "build"))


def workdir(tmp, name):
    """A folder holding the example graphs and a fresh raw.zarr."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    for g in glob.glob(os.path.join(EXAMPLES, "*.json")):
        shutil.copy(g, d)
    subprocess.run([sys.executable, os.path.join(EXAMPLES, "make_raw.py"), d], check=True)
    # plugin.json's library, the example plugin, beside it.
    shutil.copy(os.path.join(BUILD, "examples", "libinvert.so"), d)
    # pyramid.json's input, small: a 5-D TCZYX sample from sluice itself.
    rc, _, err = run("generate", os.path.join(d, "tczyx.zarr"), "--shape", "2,1,32,96,160",
                     "--chunks", "1,1,32,64,64", "--no-progress")
    expect(rc == 0, f"sluice generate writes the 5-D input: {err}")
    return d


def read(d, path):
    return zarr.open_array(os.path.join(d, path), mode="r")[...]


def block_mean(a, factors):
    """Mean over blocks of `factors`, rounded half to even (shapes divide)."""
    shape = []
    for n, f in zip(a.shape, factors):
        shape += [n // f, f]
    m = a.astype(np.float64).reshape(shape).mean(axis=tuple(range(1, 2 * a.ndim, 2)))
    return np.rint(m).astype(a.dtype)


def check_copy_rechunk(d, raw):
    copy = os.path.join(d, "out", "copy.zarr")
    expect(checksum(copy) == checksum(os.path.join(d, "raw.zarr")), "copy_rechunk keeps the values")
    rc, out, _ = run("info", copy)
    expect("Zarr v3" in out and "[16, 48, 128]" in out and "[8, 16, 64]" in out,
           f"copy_rechunk writes the asked format, shards and chunks: {out}")


def check_select(d, raw):
    expect(np.array_equal(read(d, "out/crop.zarr"), raw[4:28, 16:80, :]), "select: the crop")
    expect(np.array_equal(read(d, "out/slabs.zarr"), np.concatenate([raw[0:8], raw[24:32]])),
           "select: the slabs stacked along z")


def check_preview8(d, raw):
    want = np.rint(np.clip((raw.astype(np.float64) - 1000) / 16, 0, 255)).astype(np.uint8)
    got = read(d, "out/preview.zarr")
    expect(got.dtype == np.uint8 and np.array_equal(got, want), "preview8: scaled and clipped")
    attrs = dict(zarr.open_array(os.path.join(d, "out/preview.zarr"), mode="r").attrs)
    expect(attrs.get("scale") == "(x - 1000) / 16", f"preview8: attributes written: {attrs}")


def check_downsample(d, raw):
    half = block_mean(raw, (2, 2, 2))
    expect(np.array_equal(read(d, "out/pyramid/1"), half), "downsample: level 1 is the 2x mean")
    expect(np.array_equal(read(d, "out/pyramid/2"), block_mean(half, (1, 2, 2))),
           "downsample: level 2 is the mean of level 1")
    expect(zarr.open_array(os.path.join(d, "out/pyramid/2"), mode="r").chunks == (8, 24, 32),
           "downsample: level 2 has the chunks asked for")


def check_flatfield(d, raw):
    dark, flat = read(d, "dark.zarr"), read(d, "flat.zarr")
    want = (raw.astype(np.float32) - dark) / np.maximum(flat, np.float32(1))
    got = read(d, "out/corrected.zarr")
    expect(got.dtype == np.float32 and np.array_equal(got, want),
           "flatfield: (raw - dark) / max(flat, 1) as numpy computes it in float32")


def check_mip(d, raw):
    expect(np.array_equal(read(d, "out/mip.zarr"), raw.max(axis=0)), "mip: the maximum along z")
    got, want = read(d, "out/xmean.zarr"), raw.mean(axis=2)
    expect(got.dtype == np.float64 and np.allclose(got, want, rtol=1e-12, atol=0),
           "mip: the mean along x, in float64 as numpy's")


def check_stats(d, raw):
    report = json.load(open(os.path.join(d, "report.json")))
    sets = report["stats"][0]["sets"] if report.get("stats") else []
    expect(len(sets) == 1, f"stats: one set in the report: {report.get('stats')}")
    if not sets:
        return
    s = sets[0]
    pct = np.percentile(raw, [0.5, 99.5])
    hist = np.histogram(raw, bins=64, range=(0, 4096))[0]
    expect(s["count"] == raw.size and s["min"] == raw.min() and s["max"] == raw.max(),
           f"stats: count, min, max: {s}")
    expect(abs(s["mean"] - raw.mean()) <= 1e-12 * raw.mean() and
           abs(s["std"] - raw.std()) <= 1e-9 * raw.std(), f"stats: mean and std: {s}")
    expect([p["value"] for p in s["percentiles"]] == list(pct) and s["percentiles_exact"],
           f"stats: percentiles as numpy's: {s['percentiles']} vs {pct}")
    expect(s["histogram"]["counts"] == list(hist), "stats: the histogram as numpy's")


def check_pyramid(d, raw):
    group = os.path.join(d, "out", "tczyx_pyramid.zarr")
    meta = json.load(open(os.path.join(group, "zarr.json")))
    ms = meta["attributes"]["ome"]["multiscales"][0]
    expect([ds["path"] for ds in ms["datasets"]] == ["0", "1", "2", "3"],
           f"pyramid: four levels in the OME-Zarr metadata: {ms['datasets']}")
    expect(ms["datasets"][3]["coordinateTransformations"][0]["scale"] == [1, 1, 2, 4, 4],
           f"pyramid: level 3's scale: {ms['datasets'][3]}")
    expect(checksum(os.path.join(group, "0")) == checksum(os.path.join(d, "tczyx.zarr")),
           "pyramid: level 0 holds the input")
    prev = None
    for level, shape in enumerate([(2, 1, 32, 96, 160), (2, 1, 32, 48, 80), (2, 1, 32, 24, 40),
                                   (2, 1, 32, 12, 20)]):
        v2 = os.path.join(d, f"pyr_v2_{level}.zarr")
        rc, _, err = run("copy", os.path.join(group, str(level)), v2, "--format", "v2",
                         "--no-progress")
        expect(rc == 0, f"pyramid: level {level} converts to v2: {err}")
        got = read(d, f"pyr_v2_{level}.zarr")
        expect(got.shape == shape, f"pyramid: level {level} shape {got.shape}")
        if prev is not None:
            expect(np.array_equal(got, block_mean(prev, (1, 1, 1, 2, 2))),
                   f"pyramid: level {level} is the 2x mean of level {level - 1}")
        prev = got


def check_plugin(d, raw):
    got = read(d, "out/inverted.zarr")
    expect(got.dtype == np.uint16 and np.array_equal(got, 65535 - raw),
           "plugin: the example plugin's invert is 65535 - x for uint16")


def check_copy_group(d, raw):
    group = os.path.join(d, "out", "image_v3.zarr")
    meta = json.load(open(os.path.join(group, "zarr.json")))
    expect(meta.get("zarr_format") == 3 and
           meta["attributes"] == {"description": "the example image with its labels"} and
           sorted(meta.get("consolidated_metadata", {}).get("metadata", {})) ==
           ["labels", "labels/cells", "raw"],
           f"copy_group: a v3 group with the source's attributes, consolidated: {meta}")
    for member in ("raw", "labels/cells"):
        expect(checksum(os.path.join(group, member)) == checksum(os.path.join(d, "image.zarr",
                                                                              member)),
               f"copy_group: {member} holds the source's contents")
        codecs = json.dumps(json.load(open(os.path.join(group, member, "zarr.json")))["codecs"])
        expect("crc32c" in codecs, f"copy_group: {member} has a crc32c checksum: {codecs}")
    rawmeta = json.load(open(os.path.join(group, "raw", "zarr.json")))
    expect(rawmeta["chunk_grid"]["configuration"]["chunk_shape"] == [16, 96, 128],
           f"copy_group: raw in its own shards: {rawmeta['chunk_grid']}")


CHECKS = {
    "copy_group.json": check_copy_group,
    "pyramid.json": check_pyramid,
    "copy_rechunk.json": check_copy_rechunk,
    "select.json": check_select,
    "preview8.json": check_preview8,
    "downsample.json": check_downsample,
    "flatfield.json": check_flatfield,
    "mip.json": check_mip,
    "stats.json": check_stats,
    "plugin.json": check_plugin,
}


def check_examples(tmp):
    d = workdir(tmp, "examples")
    raw = read(d, "raw.zarr")
    names = sorted(os.path.basename(g) for g in glob.glob(os.path.join(d, "*.json")))
    expect(len(names) >= 4, f"the examples are found: {names}")
    for name in names:
        graph = os.path.join(d, name)
        # Graphs that load plugins need the permission.
        allow = ["--allow-plugins"] if "plugins" in json.load(open(graph)) else []
        rc, out, err = run("validate", *allow, graph)
        expect(rc == 0 and "valid" in out, f"{name} validates: {err}")
        rc, out, err = run("run", "--dry-run", *allow, graph)
        expect(rc == 0 and ", 0 missing" in out, f"{name} dry-runs with nothing missing: {out}{err}")
        expect(not os.path.exists(os.path.join(d, "out")), f"{name}: a dry run creates nothing")
        report = os.path.join(d, "report.json")
        rc, out, err = run("run", "--no-progress", *allow, "--report", report, graph)
        expect(rc == 0, f"{name} runs: {err}")
        summary = json.load(open(report))["summary"] if rc == 0 else {}
        expect(summary.get("ok") == summary.get("chunks") and summary.get("failed") == 0,
               f"{name}: the report counts every chunk ok: {summary}")
        expect(name in CHECKS, f"{name} has a content check in check_run.py")
        if rc == 0 and name in CHECKS:
            CHECKS[name](d, raw)
        shutil.rmtree(os.path.join(d, "out"), ignore_errors=True)


def check_dry_run_missing(tmp):
    d = workdir(tmp, "missing")
    os.remove(os.path.join(d, "raw.zarr", "1.2.3"))
    graph = os.path.join(d, "downsample.json")
    report = os.path.join(d, "dry.json")
    rc, out, err = run("run", "--dry-run", "--report", report, graph)
    expect(rc == 1, f"a missing chunk makes the dry run exit 1: {rc} {err}")
    expect('missing: get "read" chunk (1, 2, 3)' in out, f"the dry run lists it: {out}")
    expect('get "read": 48 chunks to read, 1 missing' in out, f"with counts: {out}")
    rep = json.load(open(report))
    expect(rep["inputs"][0]["missing"] == [[1, 2, 3]] and rep["missing_count"] == 1,
           f"the dry-run report lists it: {rep}")
    expect(not os.path.exists(os.path.join(d, "out")), "the dry run creates nothing")
    rc, _, err = run("run", "--no-progress", "--missing-is-error", "--report", report, graph)
    rep = json.load(open(report))
    fails = [f for p in rep["puts"] for f in p["failures"]]
    expect(rc == 1 and fails and all("ENOTFOUND" in f["message"] and "(1, 2, 3)" in f["message"]
                                     for f in fails),
           f"--missing-is-error fails what needs the chunk: {rc} {fails}")
    rc, _, err = run("run", "--no-progress", graph)
    expect(rc == 0, f"missing chunks read as fill by default: {err}")


def check_chunk_failures(tmp):
    d = workdir(tmp, "corrupt")
    with open(os.path.join(d, "raw.zarr", "1.1.1"), "wb") as f:
        f.write(b"not a zstd frame")
    report = os.path.join(d, "report.json")
    rc, _, err = run("run", "--no-progress", "--retries", "3", "--report", report,
                     os.path.join(d, "select.json"))
    expect(rc == 1 and "ECORRUPT" in err, f"a corrupt chunk makes run exit 1: {rc} {err}")
    rep = json.load(open(report))
    expect(rep["summary"]["retries"] == 0 and all(p["retries"] == 0 for p in rep["puts"])
           and "tried again" not in err,
           f"--retries does not retry a corrupt chunk: {rep['summary']} {err}")
    failed = {p["name"]: [f["chunk"] for f in p["failures"]] for p in rep["puts"]}
    messages = [f["message"] for p in rep["puts"] for f in p["failures"]]
    expect(failed == {"write_crop": [[0, 0, 1], [0, 1, 1], [1, 0, 1], [1, 1, 1]],
                      "write_slabs": []}, f"the report names the crop chunks that failed: {failed}")
    expect(all("ECORRUPT" in m and 'get "read" chunk (1, 1, 1)' in m for m in messages),
           f"and why: {messages}")
    expect(rep["summary"]["ok"] == rep["summary"]["chunks"] - 4, "the other chunks are written")
    rc, _, err = run("run", "--no-progress", "--fail-fast", os.path.join(d, "select.json"))
    expect(rc == 1 and "cancelled" in err, f"--fail-fast stops: {err}")


def check_rerun_failed(tmp):
    """--rerun-failed REPORT reruns exactly the units REPORT lists as failed."""
    d = workdir(tmp, "rerun")
    graph = os.path.join(d, "select.json")
    chunk = os.path.join(d, "raw.zarr", "1.1.1")
    good = open(chunk, "rb").read()
    with open(chunk, "wb") as f:
        f.write(b"not a zstd frame")
    report = os.path.join(d, "report.json")
    rc, _, err = run("run", "--no-progress", "--report", report, graph)
    expect(rc == 1, f"the corrupt input fails some units: {rc} {err}")
    rep = json.load(open(report))
    n_failed = sum(len(p["failures"]) for p in rep["puts"])
    expect(n_failed == 4, f"4 units failed (unsharded: a unit is a chunk): {n_failed}")
    outs = [os.path.join(d, "out", "crop.zarr"), os.path.join(d, "out", "slabs.zarr")]
    before = [checksum(o) for o in outs]
    with open(chunk, "wb") as f:
        f.write(good)
    # A report that is not the journal's run: one failure left out.
    tampered = dict(rep, puts=[dict(p, failures=p["failures"][1:]) if p["failures"] else p
                               for p in rep["puts"]])
    bad = write_graph(d, "tampered.json", json.dumps(tampered))
    shutil.copy(report + ".journal", bad + ".journal")
    rc, _, err = run("run", "--no-progress", "--rerun-failed", bad, graph)
    expect(rc == 2 and "--rerun-failed refused" in err and "is not done in the journal" in err,
           f"a report that disagrees with the journal is refused: {rc} {err}")
    expect([checksum(o) for o in outs] == before, "and the outputs are left as they were")
    rc, _, err = run("run", "--no-progress", "--rerun-failed", os.path.join(d, "none.json"),
                     graph)
    expect(rc == 2 and "no journal" in err, f"no journal, no rerun: {rc} {err}")
    report2 = os.path.join(d, "report2.json")
    rc, _, err = run("run", "--no-progress", "--rerun-failed", report, "--report", report2,
                     graph)
    expect(rc == 0 and "rerunning the 4 units" in err, f"--rerun-failed fixes them: {rc} {err}")
    s = json.load(open(report2))["summary"]
    expect(s["objects_written"] == 4 and s["resumed"] == s["chunks"] - 4 and s["failed"] == 0,
           f"exactly the failed units are written again: {s}")
    # The journal's own time, measured inside the run: some, and a small
    # part of the run (a few records and syncs); none without a journal.
    expect(0 < s["journal_s"] < s["elapsed_s"] + 1, f"the report times the journal: {s}")
    expect(json.load(open(report))["summary"]["journal_s"] > 0, "the first run's journal too")
    clean = workdir(tmp, "rerun_clean")
    rc, _, err = run("run", "--no-progress", os.path.join(clean, "select.json"))
    expect(rc == 0, f"a clean run: {err}")
    expect([checksum(o) for o in outs] ==
           [checksum(os.path.join(clean, "out", n)) for n in ("crop.zarr", "slabs.zarr")],
           "the output is byte-identical to a clean run's")
    # A pyramid: the levels above a failed unit read it, so they run again.
    raw5 = os.path.join(d, "tczyx.zarr")
    chunk = os.path.join(raw5, "c", "0", "0", "0", "1", "1")
    good = open(chunk, "rb").read()
    with open(chunk, "wb") as f:
        f.write(b"not a zstd frame")
    pyr, report = os.path.join(d, "pyr.zarr"), os.path.join(d, "pyr.json")
    args = ("pyramid", raw5, pyr, "--levels", "3", "--factors", "1,1,1,2,2", "--no-progress")
    rc, _, err = run(*args, "--report", report)
    expect(rc == 1, f"the pyramid fails where it reads the corrupt chunk: {rc} {err}")
    with open(chunk, "wb") as f:
        f.write(good)
    rc, _, err = run(*args, "--rerun-failed", report, "--report", report2)
    expect(rc == 0 and "or that read them" in err, f"--rerun-failed of a pyramid: {rc} {err}")
    s = json.load(open(report2))["summary"]
    expect(s["failed"] == 0 and 0 < s["resumed"] < s["chunks"], f"part of it is redone: {s}")
    clean = os.path.join(d, "clean.zarr")
    rc, _, err = run(*args[:2], clean, *args[3:])
    expect(rc == 0, f"a clean pyramid: {err}")
    for level in ("0", "1", "2"):
        expect(checksum(os.path.join(pyr, level)) == checksum(os.path.join(clean, level)),
               f"level {level} is byte-identical to a clean run's")


def write_graph(d, name, doc):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc, indent=2))
    return path


def check_invalid(tmp):
    d = workdir(tmp, "invalid")
    dup = write_graph(d, "dup.json", '{\n  "sluice": 1,\n  "sluice": 1\n}\n')
    for cmd in ("validate", "run", "explain"):
        rc, _, err = run(cmd, dup)
        expect(rc == 2 and "EPARSE" in err and "dup.json:3:10" in err,
               f"{cmd}: a syntax error exits 2 with line and column: {rc} {err}")
    many = write_graph(d, "many.json", {
        "sluice": 1,
        "arrays": {"raw": {"path": "raw.zarr"},
                   "out": {"path": "../out.zarr", "like": "raw"}},
        "nodes": {"read": {"op": "get", "array": "raw"},
                  "half": {"op": "downsample", "input": "read", "factors": [2, 0, 2]},
                  "bad": {"op": "scael", "input": "read"},
                  "write": {"op": "put", "input": "half", "array": "out"}}})
    rc, _, err = run("run", many)
    for want in ("many.json: at /arrays/out/path: path \"../out.zarr\" leaves",
                 "at /nodes/half/factors/1: expected a positive integer, found 0",
                 'at /nodes/bad/op: unknown op "scael"', "3 errors; nothing was run"):
        expect(want in err, f"every error is reported ({want}): {err}")
    expect(rc == 2 and not os.path.exists(os.path.join(tmp, "out.zarr")),
           "an invalid graph exits 2 and creates nothing")
    outside = write_graph(d, "outside.json", {
        "sluice": 1,
        "arrays": {"raw": {"path": "raw.zarr"},
                   "out": {"path": "../outside.zarr", "like": "raw"}},
        "nodes": {"read": {"op": "get", "array": "raw"},
                  "write": {"op": "put", "input": "read", "array": "out"}}})
    rc, _, err = run("validate", outside)
    expect(rc == 2 and "EACCES" in err, f"a path outside is refused: {err}")
    rc, out, err = run("validate", "--allow-outside", outside)
    expect(rc == 0 and "create ../outside.zarr" in out, f"--allow-outside accepts it: {err}")
    rc, _, err = run("validate", os.path.join(d, "nonexistent.json"))
    expect(rc == 2 and "ENOTFOUND" in err, f"a missing graph file: {rc} {err}")


def check_explain_and_options(tmp):
    d = workdir(tmp, "explain")
    graph = os.path.join(d, "downsample.json")
    dot = os.path.join(d, "plan.dot")
    rc, out, err = run("explain", graph, "--dot", dot)
    expect(rc == 0 and "stages:" in out and "array level1: create out/pyramid/1" in out,
           f"explain prints the arrays and the plan: {out}{err}")
    expect(open(dot).read().startswith("digraph"), "--dot writes Graphviz DOT")
    expect(not os.path.exists(os.path.join(d, "out")), "explain creates nothing")
    small = json.load(open(graph))
    small["run"]["memory"] = "1K"
    small_graph = write_graph(d, "small.json", small)
    rc, _, err = run("run", "--no-progress", small_graph)
    expect(rc == 2 and "EBUDGET" in err, f"the file's memory budget is used: {err}")
    rc, _, err = run("run", "--no-progress", "--memory", "64M", small_graph)
    expect(rc == 0, f"--memory overrides the file's budget: {err}")
    small["run"]["retries"] = 2
    rc, _, err = run("run", "--no-progress", "--memory", "64M", write_graph(d, "retries.json", small))
    expect(rc == 0, f"the file's run.retries is taken: {err}")
    rc, _, err = run("run", "--progress", graph)
    expect(rc == 0 and "100%" in err and "chunks" in err, f"--progress reports progress: {err}")


def check_usage():
    rc, out, _ = run("--help")
    for cmd in ("run", "validate", "explain", "info", "checksum", "copy"):
        expect(rc == 0 and f"\n  {cmd} " in out, f"--help lists {cmd}: {out}")
    for cmd in ("run", "validate", "explain"):
        rc, out, _ = run(cmd, "--help")
        expect(rc == 0 and f"usage: sluice {cmd} GRAPH.json" in out, f"{cmd} --help: {out}")
        rc, out, _ = run("help", cmd)
        expect(rc == 0 and f"usage: sluice {cmd}" in out, f"help {cmd}: {out}")
    rc, out, _ = run("--version")
    expect(rc == 0 and out.startswith("sluice "), f"--version: {out}")
    for args, msg in ((["run"], "GRAPH.json is missing"),
                      (["run", "a.json", "b.json"], "more than one graph file"),
                      (["run", "--bogus", "a.json"], "unknown option"),
                      (["run", "--threads", "0", "a.json"], "--threads"),
                      (["run", "--retries", "101", "a.json"], '--retries: "101" is not a count from 0 to 100'),
                      (["run", "--retries", "-1", "a.json"], "--retries"),
                      (["copy", "--retries", "x", "a.zarr", "b.zarr"], "--retries"),
                      (["explain", "a.json", "--dot"], "--dot needs a value"),
                      (["validate"], "GRAPH.json is missing")):
        rc, _, err = run(*args)
        expect(rc == 2 and msg in err, f"{' '.join(args)} exits 2 with '{msg}': {rc} {err}")


def main():
    with tempfile.TemporaryDirectory(prefix="sluice-run-") as tmp:
        check_examples(tmp)
        check_dry_run_missing(tmp)
        check_chunk_failures(tmp)
        check_rerun_failed(tmp)
        check_invalid(tmp)
        check_explain_and_options(tmp)
        check_usage()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
