#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The example graph files that read over HTTP (examples/graphs/remote/)
run end to end: each has its SERVER placeholder replaced by the URL of nginx
(tests/remote/serve.py) serving a raw.zarr made by `sluice generate`, and
BUCKET (s3:// outputs) by a bucket of s3rver behind the signing proxy
(tests/remote/s3serve.py), runs with `sluice run`, and its outputs equal the
same graph run on the local directory (s3://BUCKET/ becoming out/s3/).
Exit 77 (skipped) without nginx; an example writing to S3 is skipped without
node or s3rver, unless SL_REQUIRE_S3RVER=1.
"""
import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import s3serve  # noqa: E402
import serve  # noqa: E402

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
ROOT = os.environ.get("SL_SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))
failures = []


def run(*args, env=None):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=120, env=env)
    return p.returncode, p.stdout, p.stderr


def expect(cond, what):
    if not cond:
        failures.append(what)


def checksum(path, *args, env=None):
    rc, out, err = run("checksum", path, *args, env=env)
    expect(rc == 0, f"checksum {path}: {err}")
    return out.split()[0] if rc == 0 else None


def s3_env(s3):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=s3.access_key, AWS_SECRET_ACCESS_KEY=s3.secret_key,
               AWS_REGION="us-east-1", AWS_ENDPOINT_URL=s3.proxy_url)
    return env


def s3_outputs(text, bucket):
    """(URL on s3rver, local twin) of each level of every pyramid written to S3."""
    pairs = []
    for node in json.loads(text)["nodes"].values():
        group = node.get("group", "") if isinstance(node, dict) else ""
        if node.get("op") == "pyramid" and group.startswith("s3://BUCKET/"):
            rest = group[len("s3://BUCKET/"):]
            for level in range(node["levels"]):
                pairs.append(("s3://%s/%s/%d" % (bucket, rest, level),
                              os.path.join("out", "s3", rest, str(level))))
    return pairs


def run_example(ex, tmp, data, s, s3, why):
    name = os.path.basename(ex)
    text = open(ex).read()
    if "s3://BUCKET/" in text and s3 is None:
        print(f"{name}: skipped ({why})")
        return
    stem = os.path.splitext(name)[0]
    remote = os.path.join(tmp, "remote", stem, name)
    local = os.path.join(tmp, "local", stem, name)
    os.makedirs(os.path.dirname(remote))
    os.makedirs(os.path.dirname(local))
    host = s.proxy_url.split("://", 1)[1].rstrip("/")
    env = s3_env(s3) if s3 is not None else None
    bucket = s3.bucket if s3 is not None else ""
    open(remote, "w").write(text.replace("SERVER", host).replace("BUCKET", bucket))
    open(local, "w").write(text.replace("http://SERVER/", "").replace("s3://BUCKET/", "out/s3/"))
    shutil.copytree(os.path.join(data, "raw.zarr"),
                    os.path.join(os.path.dirname(local), "raw.zarr"))
    rc, _, err = run("run", "--no-progress", remote, env=env)
    expect(rc == 0 and "remote:" in err, f"{name} over HTTP: {rc} {err}")
    rc, _, err = run("run", "--no-progress", local)
    expect(rc == 0, f"{name} locally: {rc} {err}")
    for out in glob.glob(os.path.join(os.path.dirname(local), "out", "*.zarr")):
        twin = os.path.join(os.path.dirname(remote), "out", os.path.basename(out))
        expect(checksum(out) == checksum(twin),
               f"{name}: {os.path.basename(out)} differs over HTTP")
    pairs = s3_outputs(text, bucket)
    expect(bool(pairs) == ("s3://BUCKET/" in text), f"{name}: S3 outputs found: {pairs}")
    for url, twin in pairs:
        want = checksum(os.path.join(os.path.dirname(local), twin))
        expect(checksum(url, env=env) == want, f"{name}: {url} differs from the local run")
    print(f"{name}: ran over HTTP and locally")


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
        needs_s3 = any("s3://BUCKET/" in open(ex).read() for ex in examples)
        why = s3serve.missing() if needs_s3 else None
        if why and os.environ.get("SL_REQUIRE_S3RVER") == "1":
            expect(False, f"s3rver is required (SL_REQUIRE_S3RVER=1): {why}")
        with serve.serve(data, delay_ms=5) as s, \
                (s3serve.s3serve() if needs_s3 and not why else contextlib.nullcontext()) as s3:
            for ex in examples:
                run_example(ex, tmp, data, s, s3, why)
    for f in failures:
        print("FAIL:", f)
    print(f"remote examples: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
