#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The HTTP store end to end: the `sluice` launcher reading arrays served by
nginx (tests/remote/serve.py), directly and through the fault-and-latency
proxy.

1. Interop: arrays written by zarr-python 2.13 (v2; zstd and blosc; several
   dtypes) and by `sluice generate` (v3, sharded and not) give the same
   `sluice checksum` over HTTP (nginx, and the proxy with 5 ms of latency) as
   on disk; `sluice info URL` describes them; `sluice copy URL DIR` copies
   them whole.
2. Faults through the proxy (503 with Retry-After, 429, 500 forever, reset
   and truncated bodies, 200 for a range, 403 and 404 on an absent chunk, a
   hung answer, a dropped connection): transient ones recover (the copy's
   checksum is the source's, the log shows the tries), permanent ones fail
   exactly the chunks they hit (the --report JSON names them, each message
   the URL), and every chunk reported ok reads back equal to the source.
   Every sluice call runs under a timeout, so a hang is a failure, not a
   stuck test.
3. Concurrency: --io-concurrency 1 against 16 with 20 ms of latency; the
   wall times and the most requests the proxy saw at once are printed;
   only the window of 1 is asserted (never more than one request at once).

Slow parts: a 500 forever takes the default 10 attempts with backoff (about
20 s, at most about 40 s), and a hung answer waits out the 30 s low-speed
cutoff; the launcher has no option to shorten either, so these two cases run
at the same time, in two sluice processes.  Whole test: about 45 s.
Exit 77 (skipped) without nginx or without numpy/zarr (python3-zarr).
"""
import glob
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve  # noqa: E402

try:
    import numpy as np
    import zarr
    from numcodecs import Blosc, Zstd
except ImportError as e:
    print(f"skipped: {e} (install python3-zarr)")
    sys.exit(77)

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
CALL_TIMEOUT = 150  # seconds for any one sluice call; the slowest expected is ~40 s
failures = []
known = []
timings = {}


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def run(*args, timeout=CALL_TIMEOUT):
    """(rc, stdout, stderr, seconds); rc None when the call ran past `timeout`."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        dt = time.monotonic() - t0
        expect(False, f"sluice {' '.join(args)}: no answer after {dt:.0f} s (hang); "
                      f"stderr: {(e.stderr or b'')[-500:]!r}")
        return None, "", "", dt
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def checksum(path):
    rc, out, err, _ = run("checksum", path)
    if not expect(rc == 0 and out.split(), f"sluice checksum {path}: rc {rc}: {err.strip()}"):
        return None
    return out.split()[0]


# ---------------------------------------------------------------------------
# arrays


def write_arrays(root):
    """Write the served arrays under `root`; return {name: numpy data or None (v3)}."""
    rng = np.random.default_rng(19)
    data = {}

    def v2(name, arr, chunks, compressor, **kw):
        z = zarr.open(os.path.join(root, name), mode="w", shape=arr.shape, chunks=chunks,
                      dtype=arr.dtype, compressor=compressor, **kw)
        z[...] = arr
        data[name] = arr

    # 64 chunks of incompressible data: the fault cases' source
    v2("v2u16", rng.integers(1, 65535, (64, 64), dtype=np.uint16), (8, 8), Zstd(level=3))
    f = rng.standard_normal((50, 70)).astype(np.float32)
    f[3, 4] = f[40, 60] = np.nan
    v2("v2f32", f, (16, 16), Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE))
    v2("v2i32", rng.integers(-2**31, 2**31 - 1, (10, 20, 30), dtype=np.int32), (4, 8, 16),
       Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE), dimension_separator="/")
    v2("v2f64", np.linspace(-1e6, 1e6, 1000).reshape(10, 100), (3, 32), Zstd(level=1),
       fill_value=np.nan)
    v2("v2u8", rng.integers(0, 255, (40, 41), dtype=np.uint8), (16, 16),
       Blosc(cname="blosclz", clevel=9, shuffle=Blosc.NOSHUFFLE))
    # a copy with one chunk deleted (404 / 403 on an absent key), and a twin
    # of v2u16 for the hang case, which runs beside the 500 one
    shutil.copytree(os.path.join(root, "v2u16"), os.path.join(root, "v2hole"))
    os.unlink(os.path.join(root, "v2hole", "5.5"))
    hole = data["v2u16"].copy()
    hole[40:48, 40:48] = 0
    data["v2hole"] = hole
    shutil.copytree(os.path.join(root, "v2u16"), os.path.join(root, "v2u16b"))
    data["v2u16b"] = data["v2u16"]
    for name, extra in (("v3", []), ("v3s", ["--shards", "32,32"]),
                        ("v3f32s", ["--shards", "4,16,32", "--dtype", "float32"])):
        shape, chunks = ("8,32,64", "2,8,16") if name == "v3f32s" else ("64,64", "8,8")
        rc, _, err, _ = run("generate", os.path.join(root, name), "--format", "v3",
                            "--shape", shape, "--chunks", chunks, "--no-progress", *extra)
        expect(rc == 0, f"sluice generate {name}: rc {rc}: {err.strip()}")
        data[name] = None
    return data


def read_v2(path):
    return zarr.open(path, mode="r")[...]


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


# ---------------------------------------------------------------------------
# 1. interop


def check_interop(s, root, tmp, data):
    sums = {name: checksum(os.path.join(root, name)) for name in data}
    for name in data:
        for via, url in (("nginx", s.nginx_url), ("proxy", s.proxy_url)):
            got = checksum(url + name)
            expect(got is not None and got == sums[name],
                   f"interop {name} via {via}: checksum {got}, on disk {sums[name]}")
    for name, shape in (("v2f32", "[50, 70]"), ("v3s", "[64, 64]")):
        rc, out, err, _ = run("info", s.proxy_url + name)
        expect(rc == 0 and shape in out and s.proxy_url + name in out,
               f"sluice info {s.proxy_url + name}: rc {rc}, out {out!r}, err {err.strip()}")
    # sluice preview over HTTP draws the same picture as from disk, reading
    # only the plane's chunks (one row of 8 chunks of v2u16's 8 x 8 grid).
    for name, extra in (("v2u16", ["--axes", "0,1"]), ("v3f32s", ["--index", "3"])):
        pics = []
        for src in (os.path.join(root, name), s.proxy_url + name):
            png = os.path.join(tmp, "preview-%d.png" % len(pics))
            s.clear_log()
            rc, _, err, _ = run("preview", src, "-o", png, "--range", "0,1000", *extra)
            expect(rc == 0, f"preview of {src}: rc {rc}: {err.strip()}")
            pics.append(open(png, "rb").read() if rc == 0 else b"")
        expect(pics[0] and pics[0] == pics[1],
               f"preview of {name} over HTTP: the PNG differs from the one read from disk")
    # Plane 5 of v2i32 (10 x 20 x 30 in 4 x 8 x 16 chunks, "/" keys) lies in
    # chunk row 1: its 3 x 2 chunks are read, none of the other 12.
    s.clear_log()
    rc, _, err, _ = run("preview", s.proxy_url + "v2i32", "-o", os.path.join(tmp, "plane.png"),
                        "--index", "5")
    keys = sorted(e["path"].split("/v2i32/", 1)[1] for e in s.log()
                  if e["method"] == "GET" and re.search(r"/v2i32/\d+/\d+/\d+$", e["path"]))
    want = sorted(f"1/{j}/{k}" for j in range(3) for k in range(2))
    expect(rc == 0 and keys == want,
           f"preview over HTTP reads only the plane's chunks: {keys}, expected {want}: {err}")
    for name in data:
        dst = os.path.join(tmp, "interop-" + name)
        s.clear_log()
        rc, _, err, _ = run("copy", s.proxy_url + name, dst, "--no-progress")
        if name == "v3s":
            # A shard's index is fetched once, not once per inner chunk: far
            # fewer than two requests per chunk.
            gets = [e for e in s.log() if e["method"] == "GET" and "/c/" in e["path"]]
            shards = len(glob.glob(os.path.join(root, name, "c", "*", "*")))
            inner = shards * 16  # 32x32 shards of 8x8 chunks
            expect(shards > 0 and len(gets) < 1.5 * inner,
                   f"copy of {name}: {len(gets)} shard requests for {inner} inner chunks "
                   f"in {shards} shards (an index per chunk would make {2 * inner})")
            # Inner chunks are hinted (once their shard's index is known), so
            # more requests are in flight than the 2 workers would make.
            m = re.search(r"at most (\d+) in flight", err)
            expect(m is not None and int(m.group(1)) > 2,
                   f"copy of {name}: inner chunks not fetched ahead: {err.strip()}")
        expect(rc == 0, f"sluice copy {s.proxy_url + name}: rc {rc}: {err.strip()}")
        got = checksum(dst)
        expect(got == sums[name], f"copy of {name} over HTTP: checksum {got}, source {sums[name]}")
        if data[name] is not None and rc == 0:
            expect(same(read_v2(dst), data[name]),
                   f"copy of {name} over HTTP: zarr-python reads other values than the source")
    return sums


# ---------------------------------------------------------------------------
# 2. faults


def log_for(entries, path):
    return [e for e in entries if e["path"] == path and e["method"] == "GET"]


def copy_case(s, tmp, name, array, rules, extra=(), want_rc=0, want_failed=(),
              sums=None, data=None, want_sum=None, start=None, names="key"):
    """Copy proxy_url+array to a new dir under rules; check rc, the report (exactly
    want_failed, keyed (i, j), each message naming its URL) and the output (every
    chunk not failed equal to the source; the checksum equal to want_sum, or the
    source's, when nothing fails); names="array": the messages need name only the
    array's URL (an absent chunk's message names the array and the chunk).  With
    `start` the rules are already set and the copy is only started (Popen); call
    the returned function to finish and check."""
    dst = os.path.join(tmp, "case-" + name)
    report = os.path.join(tmp, "report-" + name + ".json")
    url = s.proxy_url + array
    args = [SLUICE, "copy", url, dst, "--no-progress", "--report", report, *extra]
    if start is None:
        s.clear_log()
        s.set_rules(rules)
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL)

    def finish():
        try:
            _, err = p.communicate(timeout=CALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            expect(False, f"{name}: {' '.join(args)}: no answer after {CALL_TIMEOUT} s (hang)")
            return None
        dt = time.monotonic() - t0
        timings[name] = dt
        rc = p.returncode
        expect(rc == want_rc, f"{name}: {' '.join(args)}: exit {rc}, expected {want_rc}; "
                              f"stderr: {err.strip()[-600:]}")
        failed = {}
        try:
            with open(report) as f:
                rep = json.load(f)
            for put in rep["puts"]:
                for fl in put["failures"]:
                    failed[tuple(fl["chunk"])] = fl["message"]
        except (OSError, ValueError, KeyError) as e:
            expect(False, f"{name}: report {report} unreadable: {e}")
        expect(set(failed) == set(want_failed),
               f"{name}: failed chunks {sorted(failed)}, expected {sorted(want_failed)}")
        for c, msg in failed.items():
            sep = "/" if array.startswith("v3") else "."
            key = ("c/" if array.startswith("v3") else "") + sep.join(map(str, c))
            want = f"{url}/{key}" if names == "key" else f'"{url}"'
            expect(want in msg, f"{name}: message for chunk {c} lacks {want}: {msg}")
            print(f"  {name}: chunk {c}: {msg}")
        src = data.get(array) if data else None
        if src is not None and os.path.isdir(dst):
            out = zarr.open(dst, mode="r")
            for idx in np.ndindex(*out.cdata_shape):
                sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, out.chunks))
                key = ".".join(map(str, idx))
                stored = os.path.exists(os.path.join(dst, key))
                if idx in failed:
                    expect(not stored, f"{name}: failed chunk {idx} was written to {dst}/{key}")
                else:
                    expect(stored or not src[sl].any(), f"{name}: ok chunk {idx} missing in {dst}")
                    expect(same(out[sl], src[sl]),
                           f"{name}: chunk {idx} reported ok but reads back unlike the source")
        if not want_failed:
            want = want_sum or (sums or {}).get(array)
            got = checksum(dst) if os.path.isdir(dst) else None
            expect(got == want, f"{name}: checksum of the copy {got}, expected {want}")
        return rc, failed, err

    if start is not None:
        return finish
    return finish()


def attempts(entries, path):
    got = log_for(entries, path)
    return len(got), [e["status"] for e in got], [e["t"] for e in got]


def check_faults(s, tmp, data, sums):
    kw = dict(sums=sums, data=data)
    p = "/v2u16/"

    # 503 + Retry-After: 1, twice: recovers on the third try, after >= 1 s each
    copy_case(s, tmp, "503-retry-after", "v2u16",
              [{"path": p + "2.3", "status": 503, "retry_after": 1, "count": 2}], **kw)
    n, st, ts = attempts(s.log(), p + "2.3")
    expect(n == 3 and st == [503, 503, 200], f"503-retry-after: tries {n} {st}, expected 3 [503, 503, 200]")
    if n == 3:
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        expect(min(gaps) >= 0.9, f"503-retry-after: Retry-After: 1 not honoured: gaps {gaps}")
        print(f"  503-retry-after: gaps between tries {[round(g, 2) for g in gaps]} s")

    # 429 three times: recovers on the fourth
    copy_case(s, tmp, "429", "v2u16", [{"path": p + "4.5", "status": 429, "count": 3}], **kw)
    n, st, _ = attempts(s.log(), p + "4.5")
    expect(n == 4 and st[-1] == 200, f"429: tries {n} {st}, expected 3 x 429 then 200")

    # a body cut by RST, a body cut short by FIN, a connection closed unanswered
    for fault, key in (("reset_mid_body", "1.1"), ("truncate_body", "1.2"),
                       ("drop_connection", "6.1")):
        copy_case(s, tmp, fault, "v2u16", [{"path": p + key, "fault": fault, "count": 1}], **kw)
        n, st, _ = attempts(s.log(), p + key)
        expect(n == 2 and st[-1] == 200, f"{fault}: tries of {key} {n} {st}, expected 2 ending 200")

    # the same faults on a shard's ranged reads (the first request is its index)
    copy_case(s, tmp, "reset_mid_body-shard", "v3s",
              [{"path": "/v3s/c/0/1", "fault": "reset_mid_body", "count": 1},
               {"path": "/v3s/c/1/0", "fault": "truncate_body", "count": 2}], **kw)
    for key, want in (("/v3s/c/0/1", 1), ("/v3s/c/1/0", 2)):
        got = [e for e in log_for(s.log(), key) if e["action"] is not None]
        expect(len(got) == want, f"reset_mid_body-shard: {key} faulted {len(got)} times, rule {want}")

    # Range ignored, 200 with the whole object, on every request: sliced
    copy_case(s, tmp, "full_200", "v3s", [{"path": "*", "fault": "full_200"}], **kw)
    ranged = [e for e in s.log() if e["range"]]
    expect(ranged and all(e["status"] == 200 for e in ranged),
           f"full_200: {len(ranged)} range requests, statuses {sorted({e['status'] for e in ranged})}")
    for name in ("v3s", "v3f32s"):
        got = checksum(s.proxy_url + name)
        expect(got == sums[name], f"full_200: checksum {s.proxy_url + name} {got}, on disk {sums[name]}")

    # 404 (the chunk file deleted): the fill value, or an error when asked
    hole_sum = sums["v2hole"]
    copy_case(s, tmp, "404-fill", "v2hole", [], want_sum=hole_sum, **kw)
    rc, failed, _ = copy_case(s, tmp, "404-missing-is-error", "v2hole", [],
                              extra=["--missing-is-error"], want_rc=1, want_failed=[(5, 5)],
                              names="array", **kw)
    # 403 on that absent chunk: an error (one try: 403 is not transient) ...
    rule403 = [{"path": "/v2hole/5.5", "status": 403}]
    rc, failed, _ = copy_case(s, tmp, "403-error", "v2hole", rule403, want_rc=1,
                              want_failed=[(5, 5)], **kw)
    msg = failed.get((5, 5), "")
    expect("HTTP 403" in msg and "AccessDenied" in msg,
           f"403-error: message lacks HTTP 403 / the body's first bytes: {msg}")
    n, st, _ = attempts(s.log(), "/v2hole/5.5")
    expect(n == 1, f"403-error: {n} tries of a 403, expected 1")
    # ... unless --missing-on-403 (the fill value)
    copy_case(s, tmp, "403-missing-on-403", "v2hole", rule403, extra=["--missing-on-403"],
              want_sum=hole_sum, **kw)

    # --io-attempts 3: 500 forever fails after exactly 3 tries, naming them
    rc, failed, _ = copy_case(s, tmp, "500-io-attempts-3", "v2u16",
                              [{"path": p + "3.4", "status": 500}], extra=["--io-attempts", "3"],
                              want_rc=1, want_failed=[(3, 4)], **kw)
    msg = failed.get((3, 4), "")
    expect("3 attempts" in msg, f"500-io-attempts-3: message lacks '3 attempts': {msg}")
    n, st, _ = attempts(s.log(), p + "3.4")
    expect(n == 3, f"500-io-attempts-3: {n} tries, expected 3")
    # --io-deadline 0.5 with Retry-After: 2: no retry starts after the deadline
    rc, failed, _ = copy_case(s, tmp, "503-io-deadline", "v2u16",
                              [{"path": p + "4.4", "status": 503, "retry_after": 2}],
                              extra=["--io-deadline", "0.5"], want_rc=1, want_failed=[(4, 4)],
                              **kw)
    n, st, _ = attempts(s.log(), p + "4.4")
    expect(n == 1, f"503-io-deadline: {n} tries within a 0.5 s deadline, expected 1")

    # 500 forever on one chunk (10 tries, ~20 s of backoff) and a hung answer
    # (30 s low-speed cutoff, then a retry) at the same time, in two processes
    s.clear_log()
    s.set_rules([{"path": p + "7.7", "status": 500},
                 {"path": "/v2u16b/3.3", "fault": "hang", "count": 1}])
    fin500 = copy_case(s, tmp, "500-forever", "v2u16", None, want_rc=1, want_failed=[(7, 7)],
                       start=True, **kw)
    finhang = copy_case(s, tmp, "hang", "v2u16b", None, start=True, **kw)
    rc, failed, _ = fin500()
    msg = failed.get((7, 7), "")
    expect("HTTP 500" in msg and "10 attempts" in msg,
           f"500-forever: message lacks 'HTTP 500' / '10 attempts': {msg}")
    finhang()
    log = s.log()
    n, st, _ = attempts(log, p + "7.7")
    expect(n == 10 and set(st) == {500}, f"500-forever: tries {n} {st}, expected 10 x 500")
    n, st, ts = attempts(log, "/v2u16b/3.3")
    expect(n == 2 and st == [None, 200], f"hang: tries {n} {st}, expected a hang then 200")
    if n == 2:
        timings["hang: cut after"] = ts[1] - ts[0]


# ---------------------------------------------------------------------------
# 3. concurrency


def max_overlap(entries):
    """The most requests in progress at once, from each entry's start and `ms`
    (both rounded by the log: 2 ms of slack, far under the 20 ms delay)."""
    ev = []
    for e in entries:
        if e["ms"] is None:
            continue
        ev.append((e["t"], 1))
        ev.append((e["t"] + e["ms"] / 1000.0 - 0.002, -1))
    ev.sort(key=lambda x: (x[0], x[1]))
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def check_concurrency(s, tmp, sums):
    s.set_rules([], delay_ms=20)
    rows = []
    for conc, threads in ((1, None), (16, None), (16, 8)):
        s.clear_log()
        dst = os.path.join(tmp, f"conc-{conc}-{threads}")
        extra = ["--threads", str(threads)] if threads else []
        rc, _, err, dt = run("copy", s.proxy_url + "v3", dst, "--no-progress",
                             "--io-concurrency", str(conc), *extra)
        expect(rc == 0, f"concurrency {conc}: rc {rc}: {err.strip()}")
        expect(checksum(dst) == sums["v3"], f"concurrency {conc}: the copy's checksum differs")
        log = s.log()
        over = max_overlap(log)
        conns = len({e["conn"] for e in log})
        rows.append((conc, threads or "default", len(log), dt, over, conns))
        if conc == 1:
            expect(over <= 1, f"--io-concurrency 1: the proxy saw {over} requests at once")
    s.set_rules([], delay_ms=0)
    print("  concurrency (64 chunks, 20 ms per request):")
    for conc, threads, n, dt, over, conns in rows:
        print(f"    --io-concurrency {conc:2d} --threads {threads}: {n} requests, "
              f"{dt:.2f} s, at most {over} at once, {conns} connections")


def main():
    if serve.find_nginx() is None:
        print("skipped: nginx not found (apt-get install nginx-light)")
        return 77
    tmp = tempfile.mkdtemp(prefix="sl-check-http-")
    try:
        root = os.path.join(tmp, "root")
        os.mkdir(root)
        data = write_arrays(root)
        with serve.serve(root) as s:
            t0 = time.monotonic()
            s.set_rules([], delay_ms=5)
            sums = check_interop(s, root, tmp, data)
            s.set_rules([], delay_ms=0)
            timings["interop"] = time.monotonic() - t0
            check_faults(s, tmp, data, sums)
            check_concurrency(s, tmp, sums)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("  timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    for k in known:
        print("KNOWN:", k)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
