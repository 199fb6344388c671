#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check `sluice info` and `sluice checksum` on the zarr-python fixtures.

Every fixture array whose manifest says "ok" must checksum to the
manifest's sha256 (which zarr-python and zarrita.js agree on); every other
array must fail with EUNSUPPORTED naming what is missing.  `info` must
describe arrays and groups, and usage errors exit 2.  Exits 77 (skipped)
when the fixtures are absent.
"""
import json
import os
import subprocess
import sys

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
FIXTURES = os.environ.get("SL_FIXTURES_DIR", "")
failures = []


def run(*args):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what):
    if not cond:
        failures.append(what)


def check_usage():
    rc, out, _ = run("--help")
    expect(rc == 0 and "info" in out and "checksum" in out, "sluice --help lists the commands")
    for cmd in ("info", "checksum"):
        rc, out, _ = run(cmd, "--help")
        expect(rc == 0 and out.startswith(("describe", "SHA-256")) and "usage: sluice " + cmd in out,
               f"sluice {cmd} --help")
        rc, _, err = run(cmd)
        expect(rc == 2 and "PATH is missing" in err, f"sluice {cmd} without PATH exits 2")
        rc, _, err = run(cmd, "--bogus", "x")
        expect(rc == 2 and "unknown option" in err, f"sluice {cmd} --bogus exits 2")
    rc, _, err = run("bogus")
    expect(rc == 2 and "unknown command" in err, "an unknown command exits 2")
    rc, _, err = run("checksum", "/nonexistent/sluice/path")
    expect(rc == 1 and "ENOTFOUND" in err, "checksum of a missing path fails with ENOTFOUND")


def check_fixtures(root):
    manifest = json.load(open(os.path.join(root, "MANIFEST.json")))
    n_ok = n_refused = 0
    for store in manifest["stores"]:
        for arr in store["arrays"]:
            path = os.path.join(root, store["root"], arr["path"])
            rc, out, err = run("checksum", path)
            if arr["expect"] == "ok":
                got = out.split()[0] if rc == 0 and out else err.strip()
                expect(rc == 0 and got == arr["sha256"], f"checksum {path}: {got}")
                n_ok += 1
            else:
                expect(rc == 1 and "EUNSUPPORTED" in err, f"{path} must be refused: {err}")
                n_refused += 1
    expect(n_ok == 56 and n_refused == 21, f"{n_ok} ok and {n_refused} refused arrays")

    rc, out, _ = run("info", os.path.join(root, "v3/data.zarr/3d.chunked.compressed.sharded.i2"))
    for line in ("format:      Zarr v3 array", "shape:       [4, 4, 4]", "dtype:       int16",
                 "chunks:      [1, 1, 1]  (grid [4, 4, 4], 64 chunks)",
                 "shards:      [2, 2, 2]  (grid [2, 2, 2], 8 shards)", "fill value:  0",
                 "stored:      8 shards, 2442 bytes"):
        expect(rc == 0 and line in out, f"info of a sharded array shows {line!r}:\n{out}")
    rc, out, _ = run("info", os.path.join(root, "v2/data.zarr/3d.chunked.mixed.i2.F"))
    expect(rc == 0 and "transpose(order=[2,1,0]) > bytes(little) > blosc" in out,
           f"info shows v2 order F as a transpose:\n{out}")
    rc, out, _ = run("info", os.path.join(root, "v3/data.zarr"))
    expect(rc == 0 and "Zarr v3 group" in out and "consolidated/nested/1d.i2" in out
           and "vlen-utf8" in out, f"info lists a group's members:\n{out}")


def main():
    check_usage()
    root = os.path.join(FIXTURES, "zarr-python")
    if not os.path.isfile(os.path.join(root, "MANIFEST.json")):
        print(f"skipped: no fixtures at {root}")
        return 77
    check_fixtures(root)
    for f in failures:
        print("FAILED:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
