#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check `sluice copy`: every format pair (v2, v3, v3 sharded) with
rechunking and recompression keeps the contents (equal checksums, and
zarr-python reads the v2 results back equal); a corrupt chunk fails alone
with exit status 1 and appears in the JSON report; a budget too small and
usage errors are refused with clear messages; `--codec zstd:3,crc32c`
writes a crc32c codec that zarrita reads (v3, sharded or not), and a byte
flipped inside a compressed chunk then fails that chunk alone with ECORRUPT
naming it.  Exits 77 (skipped) without numpy and zarr (python3-zarr).
"""
import json
import os
import shutil
import sys
import tempfile

from launcher_util import checksum, expect, finish, run, skip_without, zarrita_read

skip_without("numpy", "zarr", "numcodecs")
import numpy as np  # noqa: E402
import zarr  # noqa: E402
from numcodecs import Zstd  # noqa: E402


def make_input(path):
    data = (np.arange(37 * 45 * 11, dtype=np.float32).reshape(37, 45, 11) * 0.25 - 100)
    z = zarr.open_array(path, mode="w", shape=data.shape, chunks=(8, 10, 4), dtype="f4",
                        compressor=Zstd(level=1), fill_value=-1)
    z[...] = data
    return data


def check_format_pairs(tmp, data):
    src = os.path.join(tmp, "in.zarr")
    want = checksum(src)
    layouts = {
        "v2": ["--format", "v2", "--chunks", "16,16,16"],
        "v3": ["--format", "v3", "--chunks", "7,9,11", "--codec", "gzip:5"],
        "v3s": ["--format", "v3", "--chunks", "5,5,5", "--shards", "10,15,10", "--codec", "none"],
    }
    made = {"in": src}
    for name, opts in layouts.items():
        dst = os.path.join(tmp, name + ".zarr")
        rc, _, err = run("copy", src, dst, "--no-progress", *opts)
        expect(rc == 0, f"copy in -> {name}: {err}")
        expect(checksum(dst) == want, f"copy in -> {name} changed the contents")
        made[name] = dst
    for a in layouts:
        for b, opts in layouts.items():
            dst = os.path.join(tmp, f"{a}_{b}.zarr")
            rc, _, err = run("copy", made[a], dst, "--no-progress", *opts)
            expect(rc == 0, f"copy {a} -> {b}: {err}")
            expect(checksum(dst) == want, f"copy {a} -> {b} changed the contents")
            if b == "v2":
                got = zarr.open_array(dst, mode="r")[...]
                expect(np.array_equal(got, data), f"zarr-python reads {a} -> v2 differently")


def check_failures(tmp, data):
    src = os.path.join(tmp, "bad.zarr")
    shutil.copytree(os.path.join(tmp, "in.zarr"), src)
    with open(os.path.join(src, "1.2.0"), "wb") as f:
        f.write(b"not a zstd frame")
    dst = os.path.join(tmp, "bad_out.zarr")
    report = os.path.join(tmp, "report.json")
    rc, _, err = run("copy", src, dst, "--no-progress", "--report", report)
    expect(rc == 1, f"a corrupt chunk makes copy exit 1 (got {rc}): {err}")
    expect("1 failed" in err and "ECORRUPT" in err, f"the failure is summarized: {err}")
    rep = json.load(open(report))
    fails = rep["puts"][0]["failures"]
    expect(len(fails) == 1 and fails[0]["chunk"] == [1, 2, 0] and fails[0]["code"] == "ECORRUPT",
           f"the report names chunk [1, 2, 0]: {fails}")
    expect(rep["summary"]["ok"] == rep["summary"]["chunks"] - 1, "the other chunks are copied")
    out = zarr.open_array(dst, mode="r")[...]
    expect(np.array_equal(out[:8], data[:8]), "chunks before the corrupt one are copied")

    rc, _, err = run("copy", os.path.join(tmp, "in.zarr"), os.path.join(tmp, "small.zarr"),
                     "--memory", "100", "--no-progress")
    expect(rc == 2 and "EBUDGET" in err and "100 bytes" in err, f"a tiny budget is refused: {err}")
    expect(not os.path.exists(os.path.join(tmp, "small.zarr")) and
           not [n for n in os.listdir(tmp) if n.startswith(".sluice-tmp")],
           f"a refused budget leaves nothing behind: {os.listdir(tmp)}")


def check_usage(tmp):
    src = os.path.join(tmp, "in.zarr")
    rc, out, _ = run("copy", "--help")
    expect(rc == 0 and "usage: sluice copy SRC DST" in out, "copy --help")
    for args, msg in ((["copy", src], "need SRC and DST"),
                      (["copy", src, "x", "--chunks", "4,0"], "not a list of positive"),
                      (["copy", src, "x", "--chunks", "4,4"], "has 2 values"),
                      (["copy", src, "x", "--format", "v9"], "neither v2 nor v3"),
                      (["copy", src, "x", "--codec", "lzma:3"], "lzma"),
                      (["copy", src, "x", "--threads", "0"], "--threads"),
                      (["copy", src, "x", "--bogus"], "unknown option"),
                      (["copy", src, "x", "y"], "too many paths (\"y\")")):
        rc, _, err = run(*args)
        expect(rc == 2 and msg in err, f"{' '.join(args[2:])} exits 2 with '{msg}': {rc} {err}")
    dst = os.path.join(tmp, "exists.zarr")
    expect(run("copy", src, dst, "--no-progress")[0] == 0, "first copy")
    rc, _, err = run("copy", src, dst, "--no-progress")
    expect(rc == 2 and "--overwrite" in err, f"copying onto an existing array is refused: {err}")
    rc, _, err = run("copy", src, dst, "--no-progress", "--overwrite")
    expect(rc == 0, f"--overwrite replaces it: {err}")
    rc, _, err = run("copy", src, os.path.join(tmp, "p.zarr"), "--progress")
    expect(rc == 0 and "100%" in err, f"--progress reports progress: {err}")


def check_side_files(tmp):
    """--report and --trace never land in SRC or DST, and a file that cannot
    be written is refused before the run (exit 2), leaving DST as it was."""
    src = os.path.join(tmp, "in.zarr")
    dst = os.path.join(tmp, "side.zarr")
    expect(run("copy", src, dst, "--no-progress")[0] == 0, "side: first copy")
    before_src, before_dst = checksum(src), checksum(dst)
    cases = ((["--report", os.path.join(src, "zarr.json")], "--report", "lies inside"),
             (["--trace", os.path.join(src, ".zarray")], "--trace", "lies inside"),
             (["--report", os.path.join(dst, "r.json"), "--overwrite"], "--report", "lies inside"),
             (["--report", src], "--report", "is"),
             (["--trace", os.path.join(tmp, "no", "such", "t.json"), "--overwrite"], "--trace",
              "cannot write"))
    for extra, flag, words in cases:
        rc, _, err = run("copy", src, dst, "--no-progress", "--chunks", "4,4,4", *extra)
        expect(rc == 2 and flag in err and (words in err or "same" in err or "holds" in err),
               f"side files: {' '.join(extra)} is refused, exit 2: {rc} {err}")
    expect(checksum(src) == before_src and checksum(dst) == before_dst,
           "side files: SRC and DST are untouched")
    expect(not [n for n in os.listdir(tmp) if n.startswith(".sluice-tmp")],
           f"side files: nothing left behind: {os.listdir(tmp)}")


def check_crc32c(tmp):
    src = os.path.join(tmp, "in.zarr")
    want = checksum(src)
    for name, extra in (("crc", []), ("crcs", ["--chunks", "8,10,4", "--shards", "16,20,8"])):
        dst = os.path.join(tmp, name + ".zarr")
        rc, _, err = run("copy", src, dst, "--format", "v3", "--codec", "zstd:3,crc32c", *extra)
        expect(rc == 0, f"copy --codec zstd:3,crc32c {extra}: {err}")
        meta = json.load(open(os.path.join(dst, "zarr.json")))
        codecs = meta["codecs"]
        if extra:
            codecs = codecs[0]["configuration"]["codecs"]
        names = [c["name"] for c in codecs]
        expect(names == ["bytes", "zstd", "crc32c"], f"{name}: chain {names}")
        expect(checksum(dst) == want, f"{name}: contents kept")
        got = zarrita_read([dst])
        if got is not None:
            r = got.get(dst, {"ok": False, "error": "no answer from zarr_read.mjs"})
            expect(r.get("ok", True) and r.get("sha256") == want,
                   f"{name}: zarrita reads the crc32c chain equal: {r}")
    # flip one byte inside the compressed payload of one chunk
    dst = os.path.join(tmp, "crc.zarr")
    key = os.path.join(dst, "c", "1", "2", "0")
    blob = bytearray(open(key, "rb").read())
    blob[len(blob) // 2] ^= 0x40
    open(key, "wb").write(bytes(blob))
    rc, _, err = run("copy", dst, os.path.join(tmp, "crc-out.zarr"))
    expect(rc == 1 and "ECORRUPT" in err and "(1, 2, 0)" in err and "crc32c" in err
           and "1 failed" in err, f"a flipped byte fails chunk (1, 2, 0) alone: {err}")
    # the same chain from a graph file
    graph = os.path.join(tmp, "crc.json")
    json.dump({"sluice": 1,
               "arrays": {"raw": {"path": "in.zarr"},
                          "out": {"path": "gcrc.zarr", "like": "raw",
                                  "create": {"format": 3, "codec": "gzip:2,crc32c"}}},
               "nodes": {"read": {"op": "get", "array": "raw"},
                         "write": {"op": "put", "input": "read", "array": "out"}}},
              open(graph, "w"))
    rc, _, err = run("run", graph)
    meta = json.load(open(os.path.join(tmp, "gcrc.zarr", "zarr.json"))) if rc == 0 else {}
    expect(rc == 0 and [c["name"] for c in meta["codecs"]] == ["bytes", "gzip", "crc32c"]
           and checksum(os.path.join(tmp, "gcrc.zarr")) == want,
           f"a graph file's \"codec\": \"gzip:2,crc32c\" writes the chain: {err}")
    rc, _, err = run("copy", src, os.path.join(tmp, "v2crc.zarr"), "--format", "v2",
                     "--codec", "zstd:1,crc32c")
    expect(rc == 2 and "crc32c" in err, f"crc32c in v2 is refused before writing: {err}")
    expect(not os.path.exists(os.path.join(tmp, "v2crc.zarr")), "nothing left of a refused v2")


def main():
    with tempfile.TemporaryDirectory(prefix="sluice-copy-") as tmp:
        data = make_input(os.path.join(tmp, "in.zarr"))
        check_crc32c(tmp)
        check_format_pairs(tmp, data)
        check_failures(tmp, data)
        check_usage(tmp)
        check_side_files(tmp)
    return finish("copy")


if __name__ == "__main__":
    sys.exit(main())
