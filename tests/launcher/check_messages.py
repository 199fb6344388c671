#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check that the launcher's messages name what they are about, whole:
a source path as typed (never the store key ""), a long path's message
with its tail in stderr and in the --report JSON, one line and no usage
text after an invalid option (exit 2), list options without empty items,
and refusals of an existing destination that name --overwrite.
Needs only the sluice program (arrays are made with `sluice generate`).
"""
import json
import os
import sys
import tempfile

from launcher_util import expect, finish, run


def generate(path, *extra):
    rc, _, err = run("generate", path, "--shape", "8,8", "--chunks", "4,4", "--no-progress",
                     *extra)
    expect(rc == 0, f"generate {path}: {err}")


def check_paths_as_typed(d):
    os.mkdir(os.path.join(d, "empty"))
    rc, _, err = run("copy", "empty", "out.zarr", cwd=d)
    expect(rc != 0, f"copy from an empty directory succeeded: {err}")
    expect('no Zarr array at "empty"' in err, f"missing array not named as typed: {err}")
    expect('""' not in err, f"message quotes the store key \"\": {err}")

    generate(os.path.join(d, "src.zarr"))
    rc, _, err = run("pyramid", "src.zarr", "pyr", "--levels", "2", "--factors", "2,2",
                     "--no-progress", cwd=d)
    expect(rc == 0, f"pyramid: {err}")
    # copy takes groups (issue 23); downsample still wants an array.
    rc, _, err = run("downsample", "pyr", "out.zarr", "--factors", "2,2", cwd=d)
    expect(rc != 0, f"downsample from a group succeeded: {err}")
    expect('"pyr" is a group, not an array' in err, f"group not named as typed: {err}")
    expect('""' not in err, f"message quotes the store key \"\": {err}")


def check_long_path_not_cut(d):
    deep = os.path.join(d, *[f"level{i:02d}-" + "x" * 50 for i in range(6)])
    os.makedirs(deep)
    src = os.path.join(deep, "in.zarr")
    generate(src, "--format", "v2", "--codec", "none")
    # A chunk that is a link out of the store fails alone, with a message
    # naming the chunk's whole path and, at its end, why.
    outside = os.path.join(d, "outside")
    with open(outside, "wb") as f:
        f.write(b"not a chunk")
    chunk = os.path.join(src, "0.1")
    os.remove(chunk)
    os.symlink(outside, chunk)
    report = os.path.join(d, "report.json")
    rc, _, err = run("copy", src, os.path.join(d, "long_out.zarr"), "--no-progress",
                     "--report", report)
    expect(rc == 1, f"copy with a refused chunk: rc {rc}: {err}")
    whole = f'"{chunk}" refused: it resolves to {outside}, outside the store root'
    expect(len(chunk) > 300, f"the test path is short: {len(chunk)}")
    expect(whole in err, f"stderr cuts the long message: {err}")
    try:
        with open(report) as f:
            rep = json.load(f)
        msgs = [e["message"] for p in rep["puts"] for e in p["failures"]]
    except (OSError, ValueError, KeyError) as e:
        msgs = []
        expect(False, f"report unreadable: {e}")
    expect(any(whole in m for m in msgs), f"report cuts the long message: {msgs}")


def check_usage_errors(d):
    rc, _, err = run("generate", os.path.join(d, "x.zarr"), "--shape", "8,8", "--chunks", "4,4",
                     "--dtype", "complex7")
    expect(rc == 2, f"unsupported dtype: rc {rc}")
    expect("complex7" in err, f"unsupported dtype not named: {err}")
    expect("Options:" not in err and "usage:" not in err, f"usage text printed: {err}")
    expect('"sluice generate --help"' in err, f"no pointer to --help: {err}")
    expect(len(err.strip().splitlines()) == 2, f"more than the error and the pointer: {err}")

    src = os.path.join(d, "src.zarr")
    for bad in ["2,2,", "2,,2", ",2,2"]:
        rc, _, err = run("downsample", src, os.path.join(d, "ds.zarr"), "--factors", bad)
        expect(rc == 2, f"--factors {bad} accepted: rc {rc}: {err}")
        expect("--factors" in err and bad in err, f"--factors {bad}: option or text unnamed: {err}")
        expect("Options:" not in err, f"usage text printed: {err}")
    rc, _, err = run("copy", src, os.path.join(d, "c.zarr"), "--chunks", "4,4,")
    expect(rc == 2 and "--chunks" in err, f"--chunks 4,4, accepted: rc {rc}: {err}")


def check_overwrite_named(d):
    dst = os.path.join(d, "dst.zarr")
    generate(dst)
    rc, _, err = run("copy", os.path.join(d, "src.zarr"), dst, "--no-progress")
    expect(rc != 0, f"copy over an existing array succeeded: {err}")
    expect("--overwrite" in err, f"refusal does not name --overwrite: {err}")
    rc, _, err = run("pyramid", os.path.join(d, "src.zarr"), os.path.join(d, "pyr"), "--levels",
                     "2", "--factors", "2,2", "--no-progress")
    expect(rc != 0, f"pyramid over an existing group succeeded: {err}")
    expect("--overwrite" in err, f"pyramid refusal does not name --overwrite: {err}")


def main():
    with tempfile.TemporaryDirectory() as d:
        check_paths_as_typed(d)
        check_long_path_not_cut(d)
        check_usage_errors(d)
        check_overwrite_named(d)
    sys.exit(finish("messages"))


main()
