#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""examples/chunkstore_custom.c: an array written by `sluice generate` is
laid out as a katdal-like archive on disk (each chunk a file "vis/<i>_<j>",
the metadata elsewhere) and copied through the example's own store
(sl_store_open_custom): the copy's checksum equals the original's, and
with one chunk's file replaced by a directory (a read error that never
clears) exactly that chunk fails, after the example's 3 attempts, named
"katdal://c/I/J", while the others are copied.

    check_chunkstore_custom.py EXAMPLE_EXE
"""
import os
import shutil
import subprocess
import sys
import tempfile

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")


def sluice(*args):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"sluice {' '.join(args)}: {p.stderr}")
    return p.stdout


def main():
    example = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix="sluice-chunkstore-custom-") as tmp:
        src = os.path.join(tmp, "src.zarr")
        sluice("generate", src, "--shape", "200,300", "--chunks", "64,64", "--no-progress")
        archive = os.path.join(tmp, "archive")
        os.makedirs(os.path.join(archive, "vis"))
        meta = os.path.join(tmp, "zarr.json")
        shutil.copy(os.path.join(src, "zarr.json"), meta)
        n = 0
        for i in os.listdir(os.path.join(src, "c")):
            for j in os.listdir(os.path.join(src, "c", i)):
                shutil.copy(os.path.join(src, "c", i, j),
                            os.path.join(archive, "vis", f"{int(i):05d}_{int(j):05d}"))
                n += 1

        out = os.path.join(tmp, "copy.zarr")
        p = subprocess.run([example, archive, "vis", meta, out], capture_output=True, text=True,
                           timeout=120)
        print(p.stdout.strip())
        if p.returncode != 0:
            failures.append(f"the example failed: {p.returncode} {p.stderr}")
        elif sluice("checksum", out).split()[0] != sluice("checksum", src).split()[0]:
            failures.append("the copy differs from the original")

        bad = os.path.join(archive, "vis", "00001_00002")
        os.remove(bad)
        os.mkdir(bad)
        out2 = os.path.join(tmp, "copy2.zarr")
        p = subprocess.run([example, archive, "vis", meta, out2], capture_output=True, text=True,
                           timeout=120)
        print(p.stdout.strip())
        failed = [ln for ln in p.stdout.splitlines() if ln.startswith("failed:")]
        if p.returncode != 1:
            failures.append(f"with a bad chunk: exit {p.returncode}, expected 1 ({p.stderr})")
        if len(failed) != 1 or "katdal://c/1/2" not in failed[0] or "3 attempts" not in failed[0]:
            failures.append(f"with a bad chunk: failures {failed}, expected one naming "
                            "katdal://c/1/2 after 3 attempts")
        if "1 failed" not in p.stdout or "2 retries" not in p.stdout:
            failures.append("with a bad chunk: the summary lacks '1 failed' or '2 retries'")
        for i in range(4):
            for j in range(5):
                if (i, j) != (1, 2) and not os.path.exists(os.path.join(out2, "c", str(i), str(j))):
                    failures.append(f"chunk ({i}, {j}) was not copied beside the failed one")
    for f in failures:
        print("FAIL:", f)
    print(f"chunkstore_custom: {n} chunks, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
