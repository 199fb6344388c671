#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs across processes with mpirun (1, 2 and 3 ranks, oversubscribed on
this machine): outputs byte-identical to a single-process run, every shard
written by one rank only and exactly once, a failing chunk of the last
rank's part in rank 0's report, the exit status the same on every rank,
and a killed rank ending the run with an error within a bounded time.
Graph files run across ranks too (rank 0 creates the outputs, the others
open them); an output of one shard is written by one rank.  s3:// outputs
(against s3rver behind the signing proxy of tests/remote/s3serve.py):
`copy`, `pyramid`, `generate`, `downsample` and a graph file on 2 ranks
give the checksums of one process, each shard written once; that part is skipped without node or
s3rver, unless SL_REQUIRE_S3RVER=1.
Exits 77 (skipped) without mpirun, numpy or zarr.
"""
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "remote"))
import s3serve  # noqa: E402
import launcher_util  # noqa: E402
from launcher_util import SLUICE, expect, finish, skip_without  # noqa: E402

MPIRUN = shutil.which("mpirun")
skip_without("numpy", "zarr", "numcodecs", hint=None)
import numpy as np  # noqa: E402
import zarr  # noqa: E402
from numcodecs import Zstd  # noqa: E402

if MPIRUN is None:
    print("skipped: mpirun not found (install openmpi-bin)")
    sys.exit(77)

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def run(np_, *args, timeout=120):
    cmd = ([MPIRUN, "--oversubscribe", "-np", str(np_)] if np_ else []) + [SLUICE, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def same_tree(a, b):
    """Every stored object of `a` and `b` has the same bytes."""
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


def make_input(path, shape, chunks):
    z = zarr.open_array(path, mode="w", shape=shape, chunks=chunks, dtype="u2",
                        compressor=Zstd(level=1))
    z[...] = (np.arange(np.prod(shape), dtype=np.uint64) * 7919 % 65521).astype("u2").reshape(shape)


def check_identical(tmp):
    src = os.path.join(tmp, "in.zarr")
    make_input(src, (96, 80, 20), (8, 16, 20))
    opts = ["--format", "v3", "--chunks", "4,8,20", "--shards", "16,16,20", "--no-progress"]
    ref = os.path.join(tmp, "ref.zarr")
    rc, _, err = run(0, "copy", src, ref, *opts)
    expect(rc == 0, f"single-process copy: {err}")
    n_shards = 6 * 5
    for n in (1, 2, 3):
        dst = os.path.join(tmp, f"np{n}.zarr")
        report = os.path.join(tmp, f"np{n}.json")
        rc, _, err = run(n, "copy", src, dst, *opts, "--report", report)
        expect(rc == 0, f"copy on {n} ranks exits 0: {err}")
        expect(same_tree(ref, dst), f"copy on {n} ranks is byte-identical to one process")
        rep = json.load(open(report))["summary"]
        expect(rep["ok"] == rep["chunks"] == 24 * 10, f"{n} ranks: every chunk ok: {rep}")
        expect(rep["objects_written"] == n_shards,
               f"{n} ranks: {rep['objects_written']} shard writes for {n_shards} shards")


def check_one_shard(tmp):
    """An output of one shard goes whole to one rank: written once."""
    src = os.path.join(tmp, "in.zarr")
    opts = ["--format", "v3", "--chunks", "8,16,20", "--shards", "96,80,20", "--no-progress"]
    ref = os.path.join(tmp, "one-ref.zarr")
    rc, _, err = run(0, "copy", src, ref, *opts)
    expect(rc == 0, f"single-process copy into one shard: {err}")
    dst = os.path.join(tmp, "one-np2.zarr")
    report = os.path.join(tmp, "one-np2.json")
    rc, _, err = run(2, "copy", src, dst, *opts, "--report", report)
    expect(rc == 0, f"copy into one shard on 2 ranks exits 0: {err}")
    expect(same_tree(ref, dst), "copy into one shard on 2 ranks is byte-identical")
    rep = json.load(open(report))["summary"]
    expect(rep["objects_written"] == 1, f"one shard on 2 ranks: {rep['objects_written']} writes")


def check_remote_failure(tmp):
    src = os.path.join(tmp, "bad.zarr")
    make_input(src, (96, 80, 20), (8, 16, 20))
    # The last chunk row belongs to the last rank's part.
    with open(os.path.join(src, "11.4.0"), "wb") as f:
        f.write(b"corrupt")
    dst = os.path.join(tmp, "bad_out.zarr")
    report = os.path.join(tmp, "bad.json")
    rc, out, err = run(3, "copy", src, dst, "--format", "v3", "--chunks", "8,16,20",
                       "--shards", "32,80,20", "--no-progress", "--report", report)
    expect(rc == 1, f"a failed chunk on rank 2 makes every rank exit 1 (got {rc}): {err}")
    rep = json.load(open(report))
    fails = rep["puts"][0]["failures"]
    expect([f["chunk"] for f in fails] == [[11, 4, 0]] and fails[0]["code"] == "ECORRUPT",
           f"rank 0's report holds rank 2's failure: {fails}")
    expect(rep["summary"]["ok"] == rep["summary"]["chunks"] - 1, "the other chunks are ok")


def check_killed_rank(tmp):
    src = os.path.join(tmp, "big.zarr")
    make_input(src, (512, 512, 40), (16, 64, 40))
    killer = os.path.join(tmp, "kill_rank1.sh")
    with open(killer, "w") as f:
        f.write('#!/bin/sh\n"$@" & pid=$!\n'
                'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then sleep 0.3; kill -9 $pid; fi\n'
                'wait $pid\n')
    os.chmod(killer, 0o755)
    t0 = time.monotonic()
    p = subprocess.run([MPIRUN, "--oversubscribe", "-np", "3", killer, SLUICE, "copy", src,
                        os.path.join(tmp, "killed.zarr"), "--codec", "gzip:9", "--threads", "1",
                        "--no-progress"],
                       capture_output=True, text=True, env=ENV, timeout=120)
    took = time.monotonic() - t0
    expect(p.returncode != 0, "a killed rank fails the run")
    expect(took < 60, f"the run ended {took:.1f} s after starting")
    said = [line for line in p.stderr.splitlines()
            if "signal" in line or "killed" in line or "non-zero status" in line]
    expect(said, f"mpirun says a rank was killed: {p.stderr[-500:]}")
    print(f"killed rank: mpirun exited {p.returncode} after {took:.1f} s: "
          f"{said[0].strip() if said else '(no message)'}")


def checksum(path, *args, env=None):
    return launcher_util.checksum(path, *args, env=env, timeout=120)


def copy_graph(tmp, name, dst):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump({"sluice": 1,
                   "arrays": {"src": {"path": "in.zarr"},
                              "out": {"path": dst, "like": "src",
                                      "create": {"format": 3, "chunks": [4, 8, 20],
                                                 "shards": [16, 16, 20]}}},
                   "nodes": {"read": {"op": "get", "array": "src"},
                             "write": {"op": "put", "input": "read", "array": "out"}}}, f)
    return path


def check_graph_file(tmp):
    """A graph file on 2 ranks: the bytes of one process's run."""
    ref = os.path.join(tmp, "g-ref.zarr")
    rc, _, err = run(0, "run", copy_graph(tmp, "g-ref.json", "g-ref.zarr"), "--no-progress")
    expect(rc == 0, f"single-process graph file: {err}")
    rc, _, err = run(2, "run", copy_graph(tmp, "g-np2.json", "g-np2.zarr"), "--no-progress")
    expect(rc == 0, f"graph file on 2 ranks exits 0: {err}")
    expect(same_tree(ref, os.path.join(tmp, "g-np2.zarr")),
           "graph file on 2 ranks is byte-identical to one process")


def check_s3(tmp):
    """copy and a graph file to s3:// on 2 ranks: one process's checksums."""
    why = s3serve.missing()
    if why:
        if os.environ.get("SL_REQUIRE_S3RVER") == "1":
            expect(False, f"s3rver is required (SL_REQUIRE_S3RVER=1): {why}")
        else:
            print(f"s3:// across ranks skipped: {why}")
        return
    env = {k: v for k, v in ENV.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1")
    src = os.path.join(tmp, "in.zarr")
    want = checksum(src)
    opts = ["--format", "v3", "--chunks", "4,8,20", "--shards", "16,16,20", "--no-progress"]
    with s3serve.s3serve() as s:
        ep = ["--endpoint", s.proxy_url]
        for n in (1, 2):
            url = "s3://%s/mpi/np%d.zarr" % (s.bucket, n)
            report = os.path.join(tmp, f"s3-np{n}.json")
            cmd = [MPIRUN, "--oversubscribe", "-np", str(n), SLUICE, "copy", src, url, *opts,
                   *ep, "--report", report]
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
            expect(p.returncode == 0, f"copy to s3:// on {n} ranks exits 0: {p.stderr[-800:]}")
            expect(checksum(url, *ep, env=env) == want, f"copy to s3:// on {n} ranks: checksum")
            rep = json.load(open(report))["summary"]
            expect(rep["ok"] == rep["chunks"] == 24 * 10 and rep["objects_written"] == 30,
                   f"copy to s3:// on {n} ranks: every chunk ok, 30 shards written once: {rep}")
        # The node exists now: refused on every rank, then replaced.
        url = "s3://%s/mpi/np2.zarr" % s.bucket
        cmd = [MPIRUN, "--oversubscribe", "-np", "2", SLUICE, "copy", src, url, *opts, *ep]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        expect(p.returncode != 0 and "--overwrite" in p.stderr,
               f"copy over an S3 node on 2 ranks is refused: {p.stderr[-800:]}")
        p = subprocess.run(cmd + ["--overwrite"], capture_output=True, text=True, env=env,
                           timeout=120)
        expect(p.returncode == 0, f"--overwrite on 2 ranks: {p.stderr[-800:]}")
        expect(checksum(url, *ep, env=env) == want, "--overwrite on 2 ranks: checksum")
        # A pyramid whose last levels are one shard each (a conflict on S3,
        # which answers 412 to a lost update, if two ranks wrote one).
        levels = {}
        for n in (1, 2):
            url = "s3://%s/mpi/pyr-np%d.zarr" % (s.bucket, n)
            cmd = [MPIRUN, "--oversubscribe", "-np", str(n), SLUICE, "pyramid", src, url,
                   "--levels", "3", "--factors", "2,2,1", *opts, *ep]
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
            expect(p.returncode == 0, f"pyramid to s3:// on {n} ranks: {p.stderr[-800:]}")
            levels[n] = [checksum("%s/%d" % (url, k), *ep, env=env) for k in range(3)]
        expect(levels[1] == levels[2], f"pyramid to s3:// on 2 ranks: {levels}")
        # generate and downsample on 2 ranks, against one process on disk.
        gen = ["--shape", "64,96", "--chunks", "16,16", "--shards", "32,48", "--no-progress"]
        rc, _, err = run(0, "generate", os.path.join(tmp, "gen.zarr"), *gen)
        expect(rc == 0, f"generate on disk: {err}")
        url = "s3://%s/mpi/gen.zarr" % s.bucket
        p = subprocess.run([MPIRUN, "--oversubscribe", "-np", "2", SLUICE, "generate", url, *gen,
                            *ep], capture_output=True, text=True, env=env, timeout=120)
        expect(p.returncode == 0, f"generate to s3:// on 2 ranks: {p.stderr[-800:]}")
        expect(checksum(url, *ep, env=env) == checksum(os.path.join(tmp, "gen.zarr")),
               "generate to s3:// on 2 ranks: checksum")
        down = ["--factors", "2,2", "--no-progress"]
        rc, _, err = run(0, "downsample", os.path.join(tmp, "gen.zarr"),
                         os.path.join(tmp, "half.zarr"), *down)
        expect(rc == 0, f"downsample on disk: {err}")
        half = "s3://%s/mpi/half.zarr" % s.bucket
        p = subprocess.run([MPIRUN, "--oversubscribe", "-np", "2", SLUICE, "downsample", url, half,
                            *down, *ep], capture_output=True, text=True, env=env, timeout=120)
        expect(p.returncode == 0, f"downsample S3 to S3 on 2 ranks: {p.stderr[-800:]}")
        expect(checksum(half, *ep, env=env) == checksum(os.path.join(tmp, "half.zarr")),
               "downsample S3 to S3 on 2 ranks: checksum")
        url = "s3://%s/mpi/graph.zarr" % s.bucket
        cmd = [MPIRUN, "--oversubscribe", "-np", "2", SLUICE, "run",
               copy_graph(tmp, "g-s3.json", url), "--no-progress", *ep]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        expect(p.returncode == 0, f"graph file to s3:// on 2 ranks: {p.stderr[-800:]}")
        expect(checksum(url, *ep, env=env) == want, "graph file to s3:// on 2 ranks: checksum")
    print("s3:// across ranks: copy, refusal, --overwrite, pyramid, generate, downsample and a "
          "graph file agree with one process")


def main():
    with tempfile.TemporaryDirectory(prefix="sluice-mpi-") as tmp:
        check_identical(tmp)
        check_one_shard(tmp)
        check_graph_file(tmp)
        check_s3(tmp)
        check_remote_failure(tmp)
        check_killed_rank(tmp)
    return finish("mpi")


if __name__ == "__main__":
    sys.exit(main())
