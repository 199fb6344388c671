#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The servers and the Python peers of bench_io_remote and bench_io_s3:
reads of the zarr-python #3175 array (b3.zarr: 10^8 float64 normals,
chunks of 10^6, numcodecs Zstd(level=1), Zarr v2) over HTTP, through nginx
and the latency proxy of tests/remote/serve.py; s3rver behind the same
proxy (tests/remote/s3serve.py) for bench_io_s3.

  peer_remote.py serve ROOT          start nginx + proxy on ROOT; print one
                                     line "PID NGINX_URL PROXY_URL CONTROL_URL",
                                     run until SIGTERM or the parent dies
  peer_remote.py s3serve BUCKET      start s3rver + the signature-checking
                                     proxy with BUCKET made; print one line
                                     "PID PROXY_URL CONTROL_URL ACCESS_KEY
                                     SECRET_KEY", run as serve
  peer_remote.py delay CONTROL MS    every request waits MS before it is relayed
  peer_remote.py clear CONTROL       empty the proxy's log
  peer_remote.py log CONTROL         print the log's totals: requests (and by
                                     method: get, put, other), body bytes
                                     sent (bytes) and received (req_bytes),
                                     the most requests open at once (of all,
                                     GETs, PUTs: max_open, get_max_open, ...),
                                     seconds with a GET (PUT) open: get_busy
  peer_remote.py bandwidth ROOT URL REPS
                                     best MB/s of REPS GETs with curl of
                                     URL/remote_bw.bin, 256 MiB made once in ROOT
  peer_remote.py s3upload URL BUCKET DIR PREFIX THREADS
                                     PUT every file under DIR (an array on
                                     disk) as BUCKET/PREFIX/<its path>, signed
                                     with its body's SHA-256 as sluice signs,
                                     THREADS at once, each on a kept-alive
                                     connection: S3 writes with a window
  peer_remote.py s3bandwidth ROOT URL BUCKET REPS
                                     best MB/s of REPS signed PUTs, then GETs,
                                     of a 64 MiB object (curl --aws-sigv4) at
                                     URL/BUCKET/remote_bw64.bin
  peer_remote.py peers CONTROL URL REPS NSLICES
                                     time zarr-python 2.13 over fsspec's HTTP
                                     filesystem and dask's from_zarr on the
                                     same store: one warm-up, then best of REPS

The slices are those of bench_io_remote.c: NSLICES disjoint chunk-sized
slices, slice k on chunk (k * 100) // NSLICES when NSLICES > 8 (spread over
the array), else chunk 2k (every other chunk, as #3175).  Each peer is
checked against the slices read from the same URL one by one.  Prints
`name: value unit` lines; requests are the proxy's count per read.
"""
import ctypes
import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse

N, CH = 100_000_000, 1_000_000


def slices(n):
    step = 2 if n <= 8 else None
    return [((2 * k if step else (k * 100) // n) * CH,
             (2 * k if step else (k * 100) // n) * CH + CH) for k in range(n)]


def control(url, method, path, body=None):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request(method, u.path.rstrip("/") + "/" + path,
              body=None if body is None else json.dumps(body))
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:200]))
    return json.loads(data)


def log_totals(url, entries=None):
    """(requests, body bytes, most open at once) of the proxy's log."""
    if entries is None:
        entries = control(url, "GET", "log")
    events = []
    for e in entries:
        events.append((e["t"], 1))
        events.append((e["t"] + (e["ms"] or 0) / 1e3, -1))
    most = now = 0
    for _, d in sorted(events, key=lambda x: (x[0], x[1])):
        now += d
        most = max(most, now)
    return len(entries), sum(e["bytes"] for e in entries), most


def busy_seconds(entries):
    """Seconds during which at least one of `entries` was open."""
    spans = sorted((e["t"], e["t"] + (e["ms"] or 0) / 1e3) for e in entries)
    total, end = 0.0, None
    for a, b in spans:
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def log_main(url):
    entries = control(url, "GET", "log")
    n, nbytes, most = log_totals(url, entries)
    print("requests: %d" % n)
    for m in ("GET", "PUT"):
        mine = [e for e in entries if e["method"] == m]
        print("%s: %d\n%s_max_open: %d\n%s_busy: %.6g s"
              % (m.lower(), len(mine), m.lower(), log_totals(url, mine)[2], m.lower(),
                 busy_seconds(mine)))
    print("other: %d" % sum(1 for e in entries if e["method"] not in ("GET", "PUT")))
    print("bytes: %d\nreq_bytes: %d\nmax_open: %d"
          % (nbytes, sum(e["req_bytes"] for e in entries), most))


def remote_import(name):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "remote"))
    return __import__(name)


def run_until_stopped(servers, urls):
    """Print "PID URL..." and keep `servers` (a context manager) up until
    SIGTERM or the parent's death."""
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with servers as s:
        print(os.getpid(), *urls(s), flush=True)
        while not stop:
            time.sleep(0.1)


def serve_main(root):
    serve = remote_import("serve")
    run_until_stopped(serve.serve(root, delay_ms=0),
                      lambda s: (s.nginx_url, s.proxy_url, s.control_url))


def s3serve_main(bucket):
    s3serve = remote_import("s3serve")
    why = s3serve.missing()
    if why:
        sys.exit("peer_remote.py: s3rver cannot run: " + why)
    run_until_stopped(s3serve.s3serve(buckets=(bucket,)),
                      lambda s: (s.proxy_url, s.control_url, s.access_key, s.secret_key))


def s3upload(url, bucket, root, prefix, threads):
    import concurrent.futures
    import threading
    s3serve = remote_import("s3serve")
    sigv4 = remote_import("sigv4")
    u = urllib.parse.urlsplit(url)
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
    local = threading.local()

    def put(path):
        with open(path, "rb") as f:
            body = f.read()
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        target = "/%s/%s/%s" % (bucket, prefix, urllib.parse.quote(rel))
        headers = sigv4.sigv4_sign("PUT", u.netloc, target, {}, body, s3serve.ACCESS_KEY,
                                   s3serve.SECRET_KEY, s3serve.REGION)
        if getattr(local, "conn", None) is None:
            local.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        local.conn.request("PUT", target, body=body, headers=headers)
        r = local.conn.getresponse()
        answer = r.read()
        if r.status != 200:
            raise RuntimeError("PUT %s: %d %s" % (target, r.status, answer[:200]))

    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(put, files))
    print("objects: %d" % len(files))


def s3bandwidth(root, url, bucket, reps):
    """Signed PUTs and GETs of 64 MiB through the S3 proxy, as curl moves them."""
    s3serve = remote_import("s3serve")
    path = os.path.join(root, "remote_bw64.bin")
    if not os.path.exists(path):
        with open(path + ".partial", "wb") as f:
            f.write(os.urandom(64 << 20))
        os.rename(path + ".partial", path)
    url = "%s/%s/remote_bw64.bin" % (url.rstrip("/"), bucket)
    sign = ["--aws-sigv4", "aws:amz:%s:s3" % s3serve.REGION, "--user",
            "%s:%s" % (s3serve.ACCESS_KEY, s3serve.SECRET_KEY),
            "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-H", "Expect:"]
    for what, how, field in (("put", ["-T", path], "size_upload"),
                             ("get", [], "size_download")):
        best = 0.0
        for _ in range(reps):
            out = subprocess.run(["curl", "-sS", "-f", "-o", "/dev/null", "-w",
                                  "%%{%s} %%{time_total}" % field, *sign, *how, url],
                                 check=True, capture_output=True, text=True).stdout.split()
            best = max(best, float(out[0]) / float(out[1]) / 1e6)
        print("%s_bandwidth: %.6g MB/s" % (what, best))


def bandwidth(root, url, reps):
    path = os.path.join(root, "remote_bw.bin")
    if not os.path.exists(path):
        with open(path + ".partial", "wb") as f:
            for _ in range(16):
                f.write(os.urandom(16 << 20))
        os.rename(path + ".partial", path)
    url = url.rstrip("/") + "/remote_bw.bin"
    best = 0.0
    for _ in range(reps):
        out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w",
                              "%{size_download} %{time_total}", url],
                             check=True, capture_output=True, text=True).stdout.split()
        best = max(best, float(out[0]) / float(out[1]) / 1e6)
    print("bandwidth: %.6g MB/s" % best)


def best_of(name, fn, expect, reps, ctl):
    import numpy as np
    out = fn()  # warm-up: imports, connections
    assert np.array_equal(out, expect), name
    control(ctl, "DELETE", "log")
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
        assert np.array_equal(out, expect), name
    n, nbytes, most = log_totals(ctl)
    print("%s: %.6g s" % (name, min(ts)))
    print("%s_requests: %.6g requests" % (name, n / reps))
    print("%s_bytes: %.6g bytes" % (name, nbytes / reps))
    print("%s_max_open: %d requests" % (name, most), flush=True)


def peers_main(ctl, url, reps, nslices):
    import dask
    import dask.array as da
    import fsspec
    import numpy as np
    import zarr
    sl = slices(nslices)
    z = zarr.open_array(fsspec.get_mapper(url), mode="r")
    expect = np.concatenate([z[a:b] for a, b in sl])
    dask.config.set(scheduler="threads")

    def zarr_fsspec():
        # One call for all slices: zarr 2.13 fetches one selection's chunks
        # concurrently (FSStore.getitems); a loop of z[a:b] would wait per slice.
        idx = np.concatenate([np.arange(a, b) for a, b in sl])
        return z.oindex[idx]

    def zarr_loop():
        return np.concatenate([z[a:b] for a, b in sl])

    def dask_read():
        d = da.from_zarr(z)
        return da.concatenate([d[a:b] for a, b in sl]).compute()

    best_of("zarr_fsspec_loop", zarr_loop, expect, reps, ctl)
    best_of("zarr_fsspec_oindex", zarr_fsspec, expect, reps, ctl)
    best_of("dask", dask_read, expect, reps, ctl)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        serve_main(args[0])
    elif cmd == "s3serve":
        s3serve_main(args[0])
    elif cmd == "delay":
        control(args[0], "POST", "rules", {"rules": [], "delay_ms": float(args[1])})
        control(args[0], "DELETE", "log")
    elif cmd == "clear":
        control(args[0], "DELETE", "log")
    elif cmd == "log":
        log_main(args[0])
    elif cmd == "bandwidth":
        bandwidth(args[0], args[1], int(args[2]))
    elif cmd == "s3upload":
        s3upload(args[0], args[1], args[2], args[3], int(args[4]))
    elif cmd == "s3bandwidth":
        s3bandwidth(args[0], args[1], args[2], int(args[3]))
    elif cmd == "peers":
        peers_main(args[0], args[1], int(args[2]), int(args[3]))
    else:
        sys.exit("usage: see the docstring of " + sys.argv[0])


if __name__ == "__main__":
    main()
