#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The example graph files that read over HTTP (examples/graphs/remote/)
run end to end: each has its SERVER placeholder replaced by the URL of nginx
(tests/remote/serve.py) serving a raw.zarr made by `sluice generate`, runs
with `sluice run`, and its output equals the same graph run on the local
directory.  Exit 77 (skipped) without nginx.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve  # noqa: E402

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
ROOT = os.environ.get("SL_SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))
failures = []


def run(*args):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what):
    if not cond:
        failures.append(what)


def checksum(path):
    rc, out, err = run("checksum", path)
    expect(rc == 0, f"checksum {path}: {err}")
    return out.split()[0] if rc == 0 else None


def main():
    if serve.find_nginx() is None:
        print("skipped: nginx is not installed (Debian nginx-light)")
        return 77
    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "graphs", "remote", "*.json")))
    expect(examples, "no example in examples/graphs/remote")
    with tempfile.TemporaryDirectory(prefix="sluice-remote-ex-") as tmp:
        data = os.path.join(tmp, "data")
        rc, _, err = run("generate", os.path.join(data, "raw.zarr"), "--shape", "16,96,128",
                         "--chunks", "8,32,32", "--no-progress")
        expect(rc == 0, f"generate: {err}")
        with serve.serve(data, delay_ms=5) as s:
            for ex in examples:
                name = os.path.basename(ex)
                text = open(ex).read()
                remote = os.path.join(tmp, "remote", name)
                local = os.path.join(tmp, "local", name)
                os.makedirs(os.path.dirname(remote))
                os.makedirs(os.path.dirname(local))
                host = s.proxy_url.split("://", 1)[1].rstrip("/")
                open(remote, "w").write(text.replace("SERVER", host))
                open(local, "w").write(text.replace("http://SERVER/", ""))
                shutil.copytree(os.path.join(data, "raw.zarr"),
                                os.path.join(os.path.dirname(local), "raw.zarr"))
                rc, _, err = run("run", "--no-progress", remote)
                expect(rc == 0 and "remote:" in err, f"{name} over HTTP: {rc} {err}")
                rc, _, err = run("run", "--no-progress", local)
                expect(rc == 0, f"{name} locally: {rc} {err}")
                for out in glob.glob(os.path.join(os.path.dirname(local), "out", "*.zarr")):
                    twin = os.path.join(os.path.dirname(remote), "out", os.path.basename(out))
                    expect(checksum(out) == checksum(twin),
                           f"{name}: {os.path.basename(out)} differs over HTTP")
                print(f"{name}: ran over HTTP and locally")
    for f in failures:
        print("FAIL:", f)
    print(f"remote examples: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
