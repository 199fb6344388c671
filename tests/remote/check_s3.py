#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The launcher over S3 end to end, against s3rver behind the proxy that
checks every signature (s3serve.py): an array made by `sluice generate`
(unsharded v2 and sharded v3) is uploaded object by object with signed PUTs
from this script; then `sluice info`, `sluice checksum` and `sluice copy` of
its s3:// URL (with --endpoint and credentials from the environment, then
from a profile in AWS's files) give what they give on the local directory;
a wrong secret fails every chunk with S3's SignatureDoesNotMatch and never
prints the secret; --no-sign-request is refused by the signing server; a
graph file reads an s3:// array with a per-array "endpoint".  Graph files
write s3:// outputs: an array created from a local one (the same checksum),
a pyramid group (each level's checksum equal to a local run's), an existing
node refused without "overwrite" (nothing touched) and replaced with it, a
put into an existing s3:// array, a chunk whose PUT is denied reported
alone while the others are written, two outputs one inside the other
refused, and `run --dry-run` and `explain` of such a file writing nothing.
A group (a pyramid) copied to s3:// and back keeps its levels and attributes.
Two `sluice run` processes putting into one s3:// array at once: each shard
holds one writer's bytes and the other writer reports its chunks ECONFLICT.
`sluice copy` to s3:// through the proxy's write faults (resets, a cut
answer, SlowDown on shard PUTs and list pages): once each, every object
byte-identical; on every try, exactly the affected shards' chunks fail.

    check_s3.py    (SL_SLUICE_EXE names the sluice binary)
Exit 77 (skipped) without node or s3rver, unless SL_REQUIRE_S3RVER=1.
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import s3serve  # noqa: E402
import sigv4  # noqa: E402

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
SECRET_WRONG = "not-The-Secret-7d1c9e"
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, env=None, want=0):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=120, env=env)
    expect(p.returncode == want, f"sluice {' '.join(args)}: exit {p.returncode}, expected {want}: "
                                 f"{p.stderr.strip()[-500:]}")
    return p


def upload(s, local, prefix):
    """PUT every file under `local` as prefix/<relative path>; the number of objects."""
    u = urllib.parse.urlsplit(s.proxy_url)
    n = 0
    for root, _, files in os.walk(local):
        for f in files:
            path = os.path.join(root, f)
            rel = os.path.relpath(path, local).replace(os.sep, "/")
            target = "/%s/%s/%s" % (s.bucket, prefix, urllib.parse.quote(rel))
            with open(path, "rb") as fh:
                body = fh.read()
            headers = sigv4.sigv4_sign("PUT", u.netloc, target, {}, body, "S3RVER", "S3RVER")
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
            c.request("PUT", target, body=body, headers=headers)
            r = c.getresponse()
            r.read()
            c.close()
            if r.status != 200:
                raise SystemExit(f"PUT {target}: HTTP {r.status}")
            n += 1
    return n


def aws_env(tmp, secret="S3RVER", profile=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_CONFIG_FILE"] = os.path.join(tmp, "aws-config")
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(tmp, "aws-credentials")
    if profile:
        with open(env["AWS_SHARED_CREDENTIALS_FILE"], "w") as f:
            f.write("[test]\naws_access_key_id = S3RVER\naws_secret_access_key = %s\n" % secret)
        with open(env["AWS_CONFIG_FILE"], "w") as f:
            f.write("[profile test]\nregion = us-east-1\n")
        env["AWS_PROFILE"] = "test"
    else:
        env["AWS_ACCESS_KEY_ID"] = "S3RVER"
        env["AWS_SECRET_ACCESS_KEY"] = secret
        env["AWS_REGION"] = "us-east-1"
    return env


def write_graph(tmp, name, doc):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def copy_graph(src, dst, **dst_fields):
    return {"sluice": 1,
            "arrays": {"src": {"path": src}, "out": dict({"path": dst}, **dst_fields)},
            "nodes": {"read": {"op": "get", "array": "src"},
                      "write": {"op": "put", "input": "read", "array": "out"}}}


def check_graph_writes(s, tmp):
    """Graph files writing s3:// arrays and pyramid groups."""
    env = aws_env(tmp)
    ep = ("--endpoint", s.proxy_url)
    v3s, v2 = os.path.join(tmp, "v3s.zarr"), os.path.join(tmp, "v2.zarr")
    want_v3s = run("checksum", v3s).stdout.split()[0]
    want_v2 = run("checksum", v2).stdout.split()[0]
    base = "s3://%s/graph" % s.bucket

    # Rehearsals write nothing: --dry-run and explain of a file creating one.
    url = base + "/made.zarr"
    g = write_graph(tmp, "make.json", copy_graph("v3s.zarr", url, like="src"))
    p = run("run", g, "--dry-run", *ep, env=env)
    expect("create " + url in p.stdout, f"dry run: the s3:// array is not listed: {p.stdout}")
    run("explain", g, *ep, env=env)
    p = run("checksum", url, *ep, env=env, want=1)
    expect("ENOTFOUND" in p.stderr, f"--dry-run or explain wrote {url}: {p.stderr}")

    # Created from a local array: the same checksum.
    run("run", g, "--no-progress", *ep, env=env)
    got = run("checksum", url, *ep, env=env).stdout.split()
    expect(got and got[0] == want_v3s, f"graph file to s3://: checksum {got[:1]}, local {want_v3s}")

    # There now: refused in the document pass (nothing touched), then
    # replaced with "overwrite" by another array's content.
    g = write_graph(tmp, "remake.json", copy_graph("v2.zarr", url, like="src"))
    p = run("run", g, "--no-progress", *ep, env=env, want=2)
    expect("EEXIST" in p.stderr and url in p.stderr and "overwrite" in p.stderr,
           f"graph file over an S3 node: {p.stderr}")
    got = run("checksum", url, *ep, env=env).stdout.split()
    expect(got and got[0] == want_v3s, f"a refused graph file changed {url}: {got[:1]}")
    g = write_graph(tmp, "remake.json", copy_graph("v2.zarr", url, like="src", overwrite=True))
    run("run", g, "--no-progress", *ep, env=env)
    got = run("checksum", url, *ep, env=env).stdout.split()
    expect(got and got[0] == want_v2, f"\"overwrite\" on s3://: checksum {got[:1]}, want {want_v2}")

    # A put into an existing s3:// array (no "create"): v3s's data over an
    # array of its layout holding other values ("overwrite" lets a put write
    # into a stored array).
    into = base + "/into.zarr"
    other = os.path.join(tmp, "other.zarr")
    run("generate", other, "--shape", "150,200", "--chunks", "32,32", "--shards", "64,64",
        "--seed", "7", "--no-progress")
    run("copy", other, into, *ep, "--no-progress", env=env)
    g = write_graph(tmp, "into.json", copy_graph("v3s.zarr", into, overwrite=True))
    p = run("run", g, "--dry-run", *ep, env=env)
    expect("write " + into in p.stdout, f"dry run: the put target is not listed: {p.stdout}")
    run("run", g, "--no-progress", *ep, env=env)
    got = run("checksum", into, *ep, env=env).stdout.split()
    expect(got and got[0] == want_v3s, f"put into s3://: checksum {got[:1]}, want {want_v3s}")

    # A chunk whose PUT is denied fails alone; the others are written.
    bad = base + "/denied.zarr"
    s.set_rules([{"method": "PUT", "path": "/%s/graph/denied.zarr/c/1/2" % s.bucket,
                  "s3_error": "AccessDenied"}])
    report = os.path.join(tmp, "denied.json")
    g = write_graph(tmp, "denied-graph.json",
                    copy_graph("v2.zarr", bad, create={"format": 3}, like="src"))
    run("run", g, "--no-progress", "--io-attempts", "1", "--report", report, *ep, env=env, want=1)
    s.set_rules([])
    rep = json.load(open(report))
    fails = rep["puts"][0]["failures"]
    expect([f["chunk"] for f in fails] == [[1, 2]],
           f"denied PUT: the failures are {[f['chunk'] for f in fails]}, not [[1, 2]]")
    expect(rep["summary"]["ok"] == rep["summary"]["chunks"] - 1,
           f"denied PUT: the other chunks are not ok: {rep['summary']}")

    # Two S3 outputs of one file, one inside the other: refused before
    # anything is written.
    nested = copy_graph("v2.zarr", base + "/nest.zarr", like="src")
    nested["arrays"]["out2"] = {"path": base + "/nest.zarr/inner", "like": "src"}
    nested["nodes"]["write2"] = {"op": "put", "input": "read", "array": "out2"}
    p = run("run", write_graph(tmp, "nested.json", nested), "--no-progress", *ep, env=env, want=2)
    expect("lies inside" in p.stderr, f"nested S3 outputs: {p.stderr}")
    p = run("checksum", base + "/nest.zarr", *ep, env=env, want=1)
    expect("ENOTFOUND" in p.stderr, f"a refused file wrote {base}/nest.zarr: {p.stderr}")

    # A pyramid group on S3, level by level equal to the same file's local run.
    pyr = {"sluice": 1, "arrays": {"src": {"path": "v3s.zarr"}},
           "nodes": {"read": {"op": "get", "array": "src"},
                     "pyr": {"op": "pyramid", "input": "read", "group": base + "/pyr.zarr",
                             "levels": 3, "factors": [2, 2],
                             "create": {"chunks": [16, 16], "shards": [32, 32]}}}}
    run("run", write_graph(tmp, "pyr-s3.json", pyr), "--no-progress", *ep, env=env)
    pyr["nodes"]["pyr"]["group"] = "pyr.zarr"
    run("run", write_graph(tmp, "pyr-local.json", pyr), "--no-progress")
    for level in range(3):
        want = run("checksum", os.path.join(tmp, "pyr.zarr", str(level))).stdout.split()[0]
        got = run("checksum", "%s/pyr.zarr/%d" % (base, level), *ep, env=env).stdout.split()
        expect(got and got[0] == want, f"pyramid level {level} on s3://: {got[:1]}, local {want}")
    info = run("info", base + "/pyr.zarr", *ep, env=env).stdout
    expect("group" in info, f"the pyramid's group on s3:// is not a group: {info}")
    print("  graph files write s3:// arrays, puts and pyramids; refusal, overwrite, a denied "
          "chunk and rehearsals as for local outputs")


def s3_get(s, key):
    """The bytes of object `key` of the bucket (a signed GET through the proxy), or None."""
    u = urllib.parse.urlsplit(s.proxy_url)
    target = "/%s/%s" % (s.bucket, key)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("GET", target, headers=sigv4.sigv4_sign("GET", u.netloc, target, {}, b"",
                                                      "S3RVER", "S3RVER"))
    r = c.getresponse()
    body = r.read()
    c.close()
    return body if r.status == 200 else None


def check_race(s, tmp):
    """Two `sluice run` processes put different data into one stored s3:// sharded array
    at once, their PUTs of each shard in flight together (the proxy holds every shard PUT,
    writer a's of c/0/0 and of c/1/1 longer, so that each writer wins two shards).  Each
    shard must hold exactly one writer's bytes, and the other writer must report every
    chunk of that shard failed with ECONFLICT: no writer reports ok a shard that is not
    its own."""
    env = aws_env(tmp)
    ep = ("--endpoint", s.proxy_url)
    shape, chunks, shards = "128,128", "32,32", "64,64"
    for name, seed in (("race-base", 3), ("race-a", 11), ("race-b", 12)):
        run("generate", os.path.join(tmp, name + ".zarr"), "--shape", shape, "--chunks", chunks,
            "--shards", shards, "--seed", str(seed), "--no-progress")
    url = "s3://%s/race/x.zarr" % s.bucket
    run("copy", os.path.join(tmp, "race-base.zarr"), url, *ep, "--no-progress", env=env)
    # Each writer's bytes for each shard: the same put into a local copy of the array.
    want = {}
    for w in ("a", "b"):
        local = os.path.join(tmp, "race-%s-local.zarr" % w)
        run("copy", os.path.join(tmp, "race-base.zarr"), local, "--no-progress")
        run("run", write_graph(tmp, "race-%s-local.json" % w,
                               copy_graph("race-%s.zarr" % w, os.path.basename(local),
                                          overwrite=True)), "--no-progress")
        for i in range(2):
            for j in range(2):
                with open(os.path.join(local, "c", str(i), str(j)), "rb") as f:
                    want[w, i, j] = f.read()
    graphs = {w: write_graph(tmp, "race-%s.json" % w,
                             copy_graph("race-%s.zarr" % w, url, overwrite=True)) for w in "ab"}
    # Writer b starts once writer a's four shard PUTs have come (their 8 PUTs
    # interleave otherwise, and which writer wins a shard is then chance: in CI one
    # run had b win all four).  Every shard PUT is held 3 s (b reaches its PUTs
    # within that, even on a loaded machine), the first of c/0/0 and of c/1/1 (a's)
    # 6 s, so that b's land first there and a's first on c/0/1 and c/1/0.
    hold, held = 3000, {"c/0/0": 6000, "c/1/1": 6000}
    s.set_rules([{"name": "first " + k, "method": "PUT", "path": "*/race/x.zarr/" + k,
                  "delay_ms": ms, "count": 1} for k, ms in held.items()] +
                [{"name": "shard", "method": "PUT", "path": "*/race/x.zarr/c/*", "delay_ms": hold}])
    s.clear_log()

    def start(w):
        return subprocess.Popen([SLUICE, "run", graphs[w], "--no-progress", *ep, "--report",
                                 os.path.join(tmp, "race-%s-report.json" % w)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    procs = {"a": start("a")}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(
            1 for e in s.log() if e["method"] == "PUT" and "/race/x.zarr/c/" in e["path"]) < 4:
        time.sleep(0.02)
    procs["b"] = start("b")
    out = {w: p.communicate(timeout=120) for w, p in procs.items()}
    log = s.log()
    s.set_rules([])
    reports = {w: json.load(open(os.path.join(tmp, "race-%s-report.json" % w))) for w in "ab"}
    # The PUTs of each shard overlapped, and every listing (each writer learns the
    # versions stored) ended before the first shard PUT reached s3rver.
    puts = [e for e in log if e["method"] == "PUT" and "/race/x.zarr/c/" in e["path"]]
    lists = [e for e in log if e["method"] == "GET" and (e["query"] or "").startswith("list-type")]
    expect(len(puts) == 8, f"race: {len(puts)} shard PUTs, expected 2 writers x 4 shards: "
                           f"{[(e['path'], e['status']) for e in puts]}")
    first_landing = min((e["t"] + (held.get(e["path"].split("x.zarr/")[1], hold)
                                    if e["rule"] != "shard" else hold) / 1000 for e in puts),
                        default=0)
    expect(len(lists) >= 2 and all(e["t"] + e["ms"] / 1000 < first_landing for e in lists),
           f"race: a listing ended after a shard PUT landed at {first_landing}: "
           f"{[(e['t'], e['ms']) for e in lists]}")
    for i in range(2):
        for j in range(2):
            two = [e for e in puts if e["path"].endswith("/c/%d/%d" % (i, j))]
            expect(len(two) == 2 and max(e["t"] for e in two) <
                   min(e["t"] + e["ms"] / 1000 for e in two),
                   f"race: the PUTs of shard c/{i}/{j} did not overlap: "
                   f"{[(e['t'], e['ms']) for e in two]}")
    wins = {"a": 0, "b": 0}
    for i in range(2):
        for j in range(2):
            got = s3_get(s, "race/x.zarr/c/%d/%d" % (i, j))
            owner = [w for w in "ab" if got == want[w, i, j]]
            expect(len(owner) == 1, f"race: shard c/{i}/{j} holds neither writer's bytes "
                                    f"({len(got or b'')} bytes)")
            if len(owner) != 1:
                continue
            wins[owner[0]] += 1
            loser = "b" if owner[0] == "a" else "a"
            inner = {(2 * i + di, 2 * j + dj) for di in range(2) for dj in range(2)}
            for w in "ab":
                failed = {tuple(f["chunk"]): f for f in reports[w]["puts"][0]["failures"]}
                mine = {c for c in inner if c in failed}
                if w == owner[0]:
                    expect(not mine, f"race: writer {w} owns c/{i}/{j} but reports {sorted(mine)}"
                                     " failed")
                    continue
                expect(mine == inner, f"race: writer {loser} lost c/{i}/{j} but reports only "
                                      f"{sorted(mine)} of its chunks failed")
                for c in mine:
                    m = failed[c]["message"]
                    expect(failed[c]["code"] == "ECONFLICT" and "another writer" in m and
                           "/race/x.zarr/c/%d/%d" % (i, j) in m,
                           f"race: writer {loser}, chunk {c}: {failed[c]['code']}: {m}")
    for w in "ab":
        rc = procs[w].returncode
        expect(rc == (0 if wins[w] == 4 else 1),
               f"race: writer {w} owns {wins[w]} of 4 shards, exit {rc}: {out[w][1][-300:]}")
        expect(reports[w]["summary"]["ok"] == 4 * wins[w],
               f"race: writer {w} owns {wins[w]} shards, reports {reports[w]['summary']['ok']} "
               "chunks ok")
    expect(wins == {"a": 2, "b": 2}, f"race: the writers did not win two shards each: {wins}")
    print(f"  two processes putting into one s3:// array at once: each of 4 shards is one "
          f"writer's ({wins}), the other writer reports its chunks ECONFLICT")


def check_write_faults(s, tmp):
    """`sluice copy` to s3:// through the proxy's write faults.  Once each (a shard PUT
    reset while its body arrives, reset before its answer, its answer cut, SlowDown; the
    listing of the versions stored reset and throttled): the run succeeds and every
    object is byte-identical to a local copy's.  On every try (a reset, SlowDown): exactly
    the chunks of those shards fail, with ENETWORK / EHTTP and the shard's URL, the shard
    is not stored, and every other object is byte-identical."""
    env = aws_env(tmp)
    ep = ("--endpoint", s.proxy_url)
    src = os.path.join(tmp, "v3s.zarr")  # 150 x 200, chunks 32, shards 64: 3 x 4 shards
    local = os.path.join(tmp, "faults-local.zarr")
    run("copy", src, local, "--no-progress")
    shards = [(i, j) for i in range(3) for j in range(4)]

    def stored(prefix, i, j):
        return s3_get(s, "%s/c/%d/%d" % (prefix, i, j))

    def local_shard(i, j):
        with open(os.path.join(local, "c", str(i), str(j)), "rb") as f:
            return f.read()

    once = {"0/0": '"fault": "reset_mid_request"', "0/1": '"fault": "reset_before_answer"',
            "0/2": '"fault": "truncate_body"', "1/0": '"s3_error": "SlowDown"'}
    p = "/%s/faults/once.zarr/c/" % s.bucket
    rules = [dict(json.loads("{%s}" % v), method="PUT", path=p + k, count=1, name="shard " + k)
             for k, v in once.items()]
    page = {"method": "GET", "query": "list-type=2&prefix=faults%2Fonce.zarr%2F*", "count": 1}
    rules += [dict(page, fault="reset_mid_body", after_bytes=40, name="page reset"),
              dict(page, fault="truncate_body", name="page cut"),
              dict(page, s3_error="SlowDown", name="page SlowDown")]
    s.set_rules(rules)
    s.clear_log()
    report = os.path.join(tmp, "faults-once.json")
    dst = "s3://%s/faults/once.zarr" % s.bucket
    run("copy", src, dst, *ep, "--no-progress", "--report", report, env=env)
    hit = {e["rule"] for e in s.log() if e["rule"] is not None}
    s.set_rules([])
    expect(hit == {r["name"] for r in rules}, f"write faults once: rules not applied: "
                                              f"{sorted({r['name'] for r in rules} - hit)}")
    rep = json.load(open(report))
    expect(rep["summary"]["failed"] == 0, f"write faults once: {rep['summary']}")
    bad = [(i, j) for i, j in shards if stored("faults/once.zarr", i, j) != local_shard(i, j)]
    expect(not bad, f"write faults once: shards not byte-identical to a local copy's: {bad}")

    p = "/%s/faults/always.zarr/c/" % s.bucket
    s.set_rules([{"method": "PUT", "path": p + "1/1", "fault": "reset_mid_request"},
                 {"method": "PUT", "path": p + "2/0", "s3_error": "SlowDown"}])
    report = os.path.join(tmp, "faults-always.json")
    dst = "s3://%s/faults/always.zarr" % s.bucket
    run("copy", src, dst, *ep, "--no-progress", "--io-attempts", "3", "--report", report,
        env=env, want=1)
    s.set_rules([])
    fails = {tuple(f["chunk"]): f for f in json.load(open(report))["puts"][0]["failures"]}
    want = {(2, 2): ("ENETWORK", "1/1"), (2, 3): ("ENETWORK", "1/1"),
            (3, 2): ("ENETWORK", "1/1"), (3, 3): ("ENETWORK", "1/1"),
            (4, 0): ("EHTTP", "2/0"), (4, 1): ("EHTTP", "2/0")}
    expect(set(fails) == set(want), f"write faults always: failed chunks {sorted(fails)}, "
                                    f"expected {sorted(want)}")
    for c, (code, key) in want.items():
        f = fails.get(c, {"code": None, "message": ""})
        expect(f["code"] == code and p + key in f["message"] and
               ("SlowDown" in f["message"]) == (code == "EHTTP"),
               f"write faults always: chunk {c}: {f['code']}: {f['message']}")
    for i, j in shards:
        got = stored("faults/always.zarr", i, j)
        if (i, j) in ((1, 1), (2, 0)):
            expect(got is None, f"write faults always: failed shard c/{i}/{j} is stored")
        else:
            expect(got == local_shard(i, j),
                   f"write faults always: shard c/{i}/{j} not byte-identical")
    print("  write faults: once each retried, every shard byte-identical; on every try only "
          "the affected shards' chunks fail, naming their URL")


SECRET_MARK = "Zq8v3kP0tWm9sJ4xR2"


def check_secret_kept(s3serve):
    """The secret never shows: not in any output, report, journal, trace or status map of a
    run writing to S3, an explain, a dry run, or the failures of a wrong secret."""
    with tempfile.TemporaryDirectory(prefix="sluice-keep-") as tmp, \
            s3serve.s3serve(secret_key=SECRET_MARK) as s:
        env = aws_env(tmp, SECRET_MARK)
        ep = ("--endpoint", s.proxy_url)
        local = os.path.join(tmp, "in.zarr")
        run("generate", local, "--shape", "64,64", "--chunks", "32,32", "--no-progress")
        url = "s3://%s/secret/out.zarr" % s.bucket
        files = [os.path.join(tmp, n) for n in ("report.json", "trace.json", "map.png")]
        outputs = [run("copy", local, url, *ep, "--report", files[0], "--trace", files[1],
                       "--status-map", files[2], "--no-progress", env=env)]
        g = write_graph(tmp, "g.json", copy_graph("in.zarr", url + "2", like="src"))
        outputs += [run("explain", g, *ep, env=env), run("run", g, "--dry-run", *ep, env=env),
                    run("info", url, *ep, env=env), run("checksum", url, *ep, env=env)]
        # A wrong secret whose first characters are the right one's: no part shows.
        bad = aws_env(tmp, SECRET_MARK[:12] + "wrong")
        outputs.append(run("copy", local, url + "3", *ep, "--report", files[0] + ".bad",
                           "--no-progress", "--io-attempts", "1", env=bad, want=2))
        files.append(files[0] + ".bad")
        texts = [p.stdout + p.stderr for p in outputs]
        texts += [open(f, "rb").read().decode("latin-1") for f in files if os.path.exists(f)]
        journals = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".journal")]
        texts += [open(f, "rb").read().decode("latin-1") for f in journals]
        expect(len(texts) >= 10, f"the secret check saw only {len(texts)} outputs")
        leaks = [t[:200] for t in texts if SECRET_MARK[:12] in t]
        expect(not leaks, f"the secret (or its first 12 characters) shows in: {leaks}")
        expect("S3 SignatureDoesNotMatch" in outputs[-1].stderr and
               "(access key id S3RVER)" in outputs[-1].stderr,
               f"a wrong secret is named by its access key id: {outputs[-1].stderr[-300:]}")
    print("  the secret shows in no output, report, trace, journal or map")


def main():
    why = s3serve.missing()
    if why:
        if os.environ.get("SL_REQUIRE_S3RVER") == "1":
            print("FAIL: s3rver is required (SL_REQUIRE_S3RVER=1):", why)
            return 1
        print("skipped:", why)
        return 77
    with tempfile.TemporaryDirectory(prefix="sluice-check-s3-") as tmp, \
            s3serve.s3serve() as s:
        arrays = {"v2.zarr": ["--format", "2"], "v3s.zarr": ["--shards", "64,64"]}
        for name, extra in arrays.items():
            local = os.path.join(tmp, name)
            run("generate", local, "--shape", "150,200", "--chunks", "32,32", "--no-progress",
                *extra)
            n = upload(s, local, "data/" + name)
            want = run("checksum", local).stdout.split()[0]
            url = "s3://%s/data/%s" % (s.bucket, name)
            for how, env in (("environment", aws_env(tmp)), ("profile", aws_env(tmp, profile=True))):
                got = run("checksum", url, "--endpoint", s.proxy_url, env=env).stdout.split()
                expect(got and got[0] == want, f"{name} ({how}): checksum {got[:1]}, local {want}")
            info = run("info", url, "--endpoint", s.proxy_url, env=aws_env(tmp)).stdout
            expect("150" in info and "200" in info, f"{name}: info lacks the shape: {info}")
            out = os.path.join(tmp, "copy-" + name)
            run("copy", url, out, "--endpoint", s.proxy_url, "--no-progress", env=aws_env(tmp))
            got = run("checksum", out).stdout.split()[0]
            expect(got == want, f"{name}: the copy's checksum {got}, local {want}")
            print(f"  {name}: {n} objects; checksum, info and copy over s3:// agree")

        url = "s3://%s/data/v2.zarr" % s.bucket
        p = run("checksum", url, "--endpoint", s.proxy_url, env=aws_env(tmp, SECRET_WRONG),
                want=1)
        expect("SignatureDoesNotMatch" in p.stderr, f"wrong secret: no S3 code: {p.stderr}")
        expect(SECRET_WRONG not in p.stdout + p.stderr, "wrong secret: the secret was printed")
        p = run("checksum", url, "--endpoint", s.proxy_url, "--no-sign-request",
                env=aws_env(tmp), want=1)
        expect("AccessDenied" in p.stderr or "403" in p.stderr,
               f"--no-sign-request: not refused by the server: {p.stderr}")
        p = run("checksum", url, "--io-attempts", "1", env=aws_env(tmp), want=1)
        expect("sluice-test.s3.us-east-1.amazonaws.com" in p.stderr,
               f"without --endpoint: not AWS's virtual-hosted URL: {p.stderr}")

        # Writing to s3://: copy, refuse an existing node, replace it with
        # --overwrite, downsample S3 to S3, refuse an output inside the input.
        env = aws_env(tmp)
        ep = ("--endpoint", s.proxy_url)
        local = os.path.join(tmp, "v3s.zarr")
        want = run("checksum", local).stdout.split()[0]
        dst = "s3://%s/out/copy.zarr" % s.bucket
        report = os.path.join(tmp, "s3-report.json")
        run("copy", local, dst, *ep, "--no-progress", "--shards", "64,64", "--report", report,
            env=env)
        puts = json.load(open(report))["puts"] if os.path.exists(report) else []
        # s3rver (through s3rver_run.cjs) honours If-None-Match / If-Match: the
        # store's probe finds so, and the report says the writes were conditional.
        expect(len(puts) == 1 and puts[0].get("conditional_writes") == "honoured",
               f"the report says S3 writes were conditional: {puts}")
        got = run("checksum", dst, *ep, env=env).stdout.split()
        expect(got and got[0] == want, f"copy to s3://: checksum {got[:1]}, local {want}")
        p = run("copy", local, dst, *ep, "--no-progress", env=env, want=2)
        expect("--overwrite" in p.stderr, f"copy over an S3 node: {p.stderr}")
        run("copy", local, dst, *ep, "--no-progress", "--overwrite", env=env)  # same keys
        run("copy", os.path.join(tmp, "v2.zarr"), dst, *ep, "--no-progress", "--overwrite",
            env=env)
        got = run("checksum", dst, *ep, env=env).stdout.split()
        want2 = run("checksum", os.path.join(tmp, "v2.zarr")).stdout.split()[0]
        expect(got and got[0] == want2, f"--overwrite on s3://: checksum {got[:1]}, want {want2}")
        half = "s3://%s/out/half.zarr" % s.bucket
        run("downsample", dst, half, *ep, "--factors", "2,2", "--no-progress", env=env)
        run("downsample", os.path.join(tmp, "v2.zarr"), os.path.join(tmp, "half.zarr"),
            "--factors", "2,2", "--no-progress")
        got = run("checksum", half, *ep, env=env).stdout.split()
        want3 = run("checksum", os.path.join(tmp, "half.zarr")).stdout.split()[0]
        expect(got and got[0] == want3, f"downsample S3 to S3: checksum {got[:1]}, local {want3}")
        p = run("copy", dst, dst + "/inner", *ep, "--no-progress", env=env, want=2)
        expect("inside" in p.stderr, f"an S3 output inside its input: {p.stderr}")
        print("  writing to s3://: copy, refusal, --overwrite and downsample agree")

        # A whole group to s3:// and back (issue 23): a local pyramid (OME
        # attributes), copied up as one run, listed and copied back down.
        pyr = os.path.join(tmp, "group-up.zarr")
        run("pyramid", local, pyr, "--levels", "2", "--factors", "2,2", "--no-progress")
        grp = "s3://%s/out/group.zarr" % s.bucket
        run("copy", pyr, grp, *ep, "--no-progress", "--format", "v2", env=env)
        back = os.path.join(tmp, "group-back.zarr")
        run("copy", grp, back, *ep, "--no-progress", "--format", "v3", env=env)
        for level in ("0", "1"):
            got = run("checksum", os.path.join(back, level)).stdout.split()
            want4 = run("checksum", os.path.join(pyr, level)).stdout.split()[0]
            expect(got and got[0] == want4, f"group via s3://, level {level}: {got[:1]}")
        with open(os.path.join(back, "zarr.json")) as f:
            ome = json.load(f).get("attributes", {}).get("ome", {})
        expect(ome.get("multiscales"), f"group via s3://: its attributes came back: {ome}")
        print("  a group copied to s3:// and back keeps its levels and attributes")

        graph = os.path.join(tmp, "graph.json")
        with open(graph, "w") as f:
            json.dump({"sluice": 1,
                       "arrays": {"src": {"path": url, "endpoint": s.proxy_url},
                                  "out": {"path": "g-out.zarr", "like": "src"}},
                       "nodes": {"read": {"op": "get", "array": "src"},
                                 "write": {"op": "put", "input": "read", "array": "out"}}}, f)
        run("run", graph, "--no-progress", env=aws_env(tmp))
        got = run("checksum", os.path.join(tmp, "g-out.zarr")).stdout.split()[0]
        want = run("checksum", os.path.join(tmp, "v2.zarr")).stdout.split()[0]
        expect(got == want, f"graph file over s3://: checksum {got}, local {want}")
        check_graph_writes(s, tmp)
        check_race(s, tmp)
        check_write_faults(s, tmp)
    check_secret_kept(s3serve)
    print(f"check_s3: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
