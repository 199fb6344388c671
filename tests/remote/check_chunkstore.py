#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""examples/chunkstore_http.c against a real server: an array written by
`sluice generate` is laid out as a katdal-like archive (each chunk an object
"vis/<i>_<j>", the metadata elsewhere), served by nginx behind the fault
proxy with 5 ms of latency and a few 503s; the example copies it through a
mapped HTTP store, and the copy's checksum equals the original's.

    check_chunkstore.py EXAMPLE_EXE
Exit 77 (skipped) without nginx.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve  # noqa: E402

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")


def sluice(*args):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"sluice {' '.join(args)}: {p.stderr}")
    return p.stdout


def main():
    example = sys.argv[1]
    if serve.find_nginx() is None:
        print("skipped: nginx is not installed (Debian nginx-light)")
        return 77
    with tempfile.TemporaryDirectory(prefix="sluice-chunkstore-") as tmp:
        src = os.path.join(tmp, "src.zarr")
        sluice("generate", src, "--shape", "200,300", "--chunks", "64,64", "--no-progress")
        archive = os.path.join(tmp, "archive")
        os.makedirs(os.path.join(archive, "vis"))
        os.makedirs(os.path.join(archive, "meta"))
        shutil.copy(os.path.join(src, "zarr.json"), os.path.join(archive, "meta", "zarr.json"))
        n = 0
        for i in os.listdir(os.path.join(src, "c")):
            for j in os.listdir(os.path.join(src, "c", i)):
                shutil.copy(os.path.join(src, "c", i, j),
                            os.path.join(archive, "vis", f"{int(i):05d}_{int(j):05d}"))
                n += 1
        rules = [{"path": "*/vis/00001_*", "status": 503, "retry_after": 0, "count": 3}]
        with serve.serve(archive, delay_ms=5, rules=rules) as s:
            base = s.proxy_url.rstrip("/")
            out = os.path.join(tmp, "copy.zarr")
            p = subprocess.run([example, base, "vis", base + "/meta/zarr.json", out],
                               capture_output=True, text=True, timeout=120)
            print(p.stdout.strip())
            failures = []
            if p.returncode != 0:
                failures.append(f"the example failed: {p.returncode} {p.stderr}")
            elif sluice("checksum", out).split()[0] != sluice("checksum", src).split()[0]:
                failures.append("the copy differs from the original")
            asked = [e for e in s.log() if "/vis/" in e["path"]]
            if len(asked) < n + 3:
                failures.append(f"{len(asked)} chunk requests for {n} chunks and 3 faults")
        for f in failures:
            print("FAIL:", f)
        print(f"chunkstore: {n} chunks, {len(failures)} failures")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
