#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Self-test of tests/remote/serve.py, the harness the HTTP store's tests run
against: nginx answers ranges (206, Content-Range, suffix ranges) and 404s;
the proxy relays them untouched over keep-alive, and each rule (delay,
status with and without Retry-After, counts, reset, truncation, full 200,
hang, drop) is seen by an http.client client as README.md says, and logged.
Exit 77 (skip) when nginx is not installed.  Standard library only.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve  # noqa: E402

SIZE = 100000
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def host_port(url):
    hp = url.split("//", 1)[1].rstrip("/")
    host, port = hp.rsplit(":", 1)
    return host, int(port)


def get(url, path, headers=None, method="GET", timeout=10, conn=None):
    """(status, headers dict lower-cased, body, connection) for one request."""
    c = conn or http.client.HTTPConnection(*host_port(url), timeout=timeout)
    c.request(method, path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body, c


def check_ranges(url, blob, name):
    conn = None
    st, h, body, conn = get(url, "/d/blob", {"Range": "bytes=10-19"}, conn=conn)
    expect(st == 206 and body == blob[10:20] and h.get("content-range") == "bytes 10-19/%d" % SIZE,
           "%s: range 10-19 gave %s %s %r" % (name, st, h.get("content-range"), body[:20]))
    st, h, body, conn = get(url, "/d/blob", {"Range": "bytes=-7"}, conn=conn)
    expect(st == 206 and body == blob[-7:]
           and h.get("content-range") == "bytes %d-%d/%d" % (SIZE - 7, SIZE - 1, SIZE),
           "%s: suffix range gave %s %s" % (name, st, h.get("content-range")))
    st, h, body, conn = get(url, "/d/blob", {"Range": "bytes=99990-"}, conn=conn)
    expect(st == 206 and body == blob[99990:], "%s: open range gave %s" % (name, st))
    st, h, body, conn = get(url, "/d/blob", conn=conn)
    expect(st == 200 and body == blob and h.get("content-length") == str(SIZE),
           "%s: whole GET gave %s, %d bytes" % (name, st, len(body)))
    st, h, body, conn = get(url, "/d/blob", method="HEAD", conn=conn)
    expect(st == 200 and body == b"" and h.get("content-length") == str(SIZE),
           "%s: HEAD gave %s %s" % (name, st, h.get("content-length")))
    for path in ("/d/absent", "/d/", "/d", "/nothing/here"):
        st, h, body, conn = get(url, path, conn=conn)
        expect(st == 404, "%s: %s gave %s, not 404" % (name, path, st))
    st, h, body, conn = get(url, "/d/blob", {"Range": "bytes=%d-" % SIZE}, conn=conn)
    expect(st == 416, "%s: range past the end gave %s, not 416" % (name, st))
    conn.close()


def check_relay(s, blob):
    """The proxy with no rules relays what nginx says, over one keep-alive connection."""
    check_ranges(s.proxy_url, blob, "proxy")
    log = s.log()
    expect(len(log) == 10, "log has %d entries, not 10" % len(log))
    expect(len({e["conn"] for e in log}) == 1, "requests did not share one keep-alive connection")
    # Bodies past http.client's buffer go by splice: the upstream connection
    # is still kept alive for the next request.
    expect(len({e["upstream_conn"] for e in log}) == 1,
           "the proxy opened upstream connections %s" % sorted({e["upstream_conn"] for e in log}))
    expect(log and log[0]["range"] == "bytes=10-19" and log[0]["status"] == 206
           and log[0]["bytes"] == 10 and log[0]["rule"] is None,
           "first log entry: %r" % (log[:1],))


def check_delay(s, url):
    s.set_rules([], delay_ms=150)
    t = time.monotonic()
    st, _, _, c = get(url, "/d/small")
    c.close()
    dt = time.monotonic() - t
    expect(st == 200 and dt >= 0.14, "default delay 150 ms: %s after %.3f s" % (st, dt))
    s.set_rules([{"path": "/d/small", "delay_ms": 300, "count": 1}], delay_ms=0)
    t = time.monotonic()
    st, _, body, c = get(url, "/d/small")
    dt1 = time.monotonic() - t
    t = time.monotonic()
    st2, _, _, c = get(url, "/d/small", conn=c)
    c.close()
    dt2 = time.monotonic() - t
    expect(st == 200 and body == b"small\n" and dt1 >= 0.29,
           "rule delay 300 ms: %s after %.3f s" % (st, dt1))
    expect(st2 == 200 and dt2 < dt1, "count 1 delay applied twice (%.3f s)" % dt2)
    log = s.log()
    expect(log[-2]["action"] == "delay" and log[-2]["ms"] >= 290 and log[-1]["rule"] is None,
           "delay log: %r" % log[-2:])


def check_statuses(s, url):
    s.set_rules([
        {"path": "/d/blob", "status": 503, "retry_after": 2, "count": 2, "name": "busy"},
        {"path": "/d/s*", "status": 503, "count": 1},
        {"path": "/d/small", "status": 429, "count": 1},
        {"path": "/e/*", "status": 500},
        {"path": "/f/*", "status": 403},
    ])
    c = None
    for i in range(2):
        st, h, _, c = get(url, "/d/blob", {"Range": "bytes=0-9"}, conn=c)
        expect(st == 503 and h.get("retry-after") == "2",
               "503 #%d: %s retry-after %r" % (i, st, h.get("retry-after")))
    st, h, body, c = get(url, "/d/blob", {"Range": "bytes=0-9"}, conn=c)
    expect(st == 206 and len(body) == 10, "after count 2: %s" % st)
    st, h, _, c = get(url, "/d/small", conn=c)
    expect(st == 503 and "retry-after" not in h, "503 without Retry-After: %s %r" % (st, h))
    st, h, _, c = get(url, "/d/small", conn=c)
    expect(st == 429, "429: %s" % st)
    st, h, _, c = get(url, "/d/small", conn=c)
    expect(st == 200, "after 503 and 429 rules used up: %s" % st)
    for i in range(3):
        st, _, _, c = get(url, "/e/%d" % i, conn=c)
        expect(st == 500, "500 forever, #%d: %s" % (i, st))
    st, _, body, c = get(url, "/f/key", conn=c)
    expect(st == 403 and b"AccessDenied" in body, "403: %s %r" % (st, body[:60]))
    st, h, body, c = get(url, "/e/x", method="HEAD", conn=c)
    expect(st == 500 and body == b"", "HEAD 500: %s %r" % (st, body))
    c.close()
    log = s.log()[-11:]
    expect([e["rule"] for e in log] == ["busy", "busy", None, 1, 2, None, 3, 3, 3, 4, 3],
           "rules in the log: %r" % [e["rule"] for e in log])
    expect([e["status"] for e in log] == [503, 503, 206, 503, 429, 200, 500, 500, 500, 403, 500],
           "statuses in the log: %r" % [e["status"] for e in log])


def check_count_concurrent(s, url):
    s.set_rules([{"path": "/d/small", "status": 503, "count": 3}])
    results = []
    lock = threading.Lock()

    def one():
        st, _, _, c = get(url, "/d/small")
        c.close()
        with lock:
            results.append(st)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    expect(sorted(results) == [200] * 5 + [503] * 3, "count 3 over 8 concurrent: %r" % results)


def check_reset(s, url, blob):
    s.set_rules([{"path": "/d/blob", "fault": "reset_mid_body", "after_bytes": 1000}])
    c = http.client.HTTPConnection(*host_port(url), timeout=10)
    c.request("GET", "/d/blob", headers={"Range": "bytes=0-49999"})
    r = c.getresponse()
    got = b""
    err = None
    try:
        while True:
            b = r.read1(4096) if hasattr(r, "read1") else r.read(4096)
            if not b:
                break
            got += b
    except (ConnectionResetError, http.client.IncompleteRead) as e:
        err = e
    c.close()
    expect(r.status == 206 and r.getheader("content-length") == "50000",
           "reset: headers %s %s" % (r.status, r.getheader("content-length")))
    expect(isinstance(err, ConnectionResetError), "reset: client saw %r, not a reset" % (err,))
    expect(got == blob[:len(got)] and len(got) <= 1000, "reset: %d body bytes" % len(got))
    e = s.log()[-1]
    expect(e["action"] == "reset_mid_body" and e["bytes"] == 1000 and e["status"] == 206,
           "reset log: %r" % e)


def check_truncate(s, url, blob):
    s.set_rules([{"path": "/d/blob", "fault": "truncate_body", "count": 1},
                 {"path": "/d/small", "fault": "truncate_body", "after_bytes": 99}])
    c = http.client.HTTPConnection(*host_port(url), timeout=10)
    c.request("GET", "/d/blob")
    r = c.getresponse()
    try:
        body = r.read()
        err = None
    except http.client.IncompleteRead as e:
        body, err = e.partial, e
    c.close()
    expect(r.getheader("content-length") == str(SIZE) and err is not None
           and body == blob[:SIZE // 2],
           "truncate: content-length %s, %d bytes, %r" % (r.getheader("content-length"),
                                                           len(body), err))
    c = http.client.HTTPConnection(*host_port(url), timeout=10)
    c.request("GET", "/d/small")
    r = c.getresponse()
    try:
        body = r.read()
    except http.client.IncompleteRead as e:
        body = e.partial
    c.close()
    expect(body == b"small", "truncate after_bytes past the end: %r" % body)
    st, _, body, c = get(url, "/d/blob")
    c.close()
    expect(st == 200 and body == blob, "truncate count 1 applied twice")


def check_full_200(s, url, blob):
    s.set_rules([{"path": "/d/*", "fault": "full_200"}])
    st, h, body, c = get(url, "/d/blob", {"Range": "bytes=100-199"})
    c.close()
    expect(st == 200 and body == blob and "content-range" not in h,
           "full_200: %s, %d bytes, %r" % (st, len(body), h.get("content-range")))
    e = s.log()[-1]
    expect(e["range"] == "bytes=100-199" and e["status"] == 200 and e["bytes"] == SIZE,
           "full_200 log: %r" % e)


def check_hang(s, url, blob):
    s.set_rules([{"path": "/d/blob", "fault": "hang", "count": 1}])
    outcome = {}

    def hang_client():
        t = time.monotonic()
        try:
            get(url, "/d/blob", timeout=1.5)
            outcome["err"] = None
        except (TimeoutError, socket.timeout) as e:
            outcome["err"] = e
        outcome["dt"] = time.monotonic() - t

    th = threading.Thread(target=hang_client)
    th.start()
    time.sleep(0.1)
    t = time.monotonic()
    st, _, body, c = get(url, "/d/blob", {"Range": "bytes=0-9"}, timeout=10)
    c.close()
    dt = time.monotonic() - t
    alive = th.is_alive()
    th.join(10)
    expect(st == 206 and body == blob[:10] and alive,
           "hang blocked another request: %s after %.3f s (hanging client still waiting: %s)"
           % (st, dt, alive))
    expect(isinstance(outcome.get("err"), (TimeoutError, socket.timeout))
           and 1.4 <= outcome["dt"] < 6, "hang: client saw %r after %s s"
           % (outcome.get("err"), outcome.get("dt")))
    hung = [e for e in s.log() if e["action"] == "hang"]
    expect(len(hung) == 1 and hung[0]["status"] is None, "hang log: %r" % hung)


def check_drop(s, url):
    s.set_rules([{"path": "/d/small", "fault": "drop_connection", "method": "GET"}])
    try:
        get(url, "/d/small")
        err = None
    except (http.client.RemoteDisconnected, ConnectionResetError) as e:
        err = e
    expect(isinstance(err, http.client.RemoteDisconnected), "drop: client saw %r" % (err,))
    st, h, _, c = get(url, "/d/small", method="HEAD")
    c.close()
    expect(st == 200, "drop with method GET applied to HEAD: %s" % st)


def control(url, method, path, payload=None):
    """(status, decoded JSON) of one request to the proxy's /__proxy/ endpoints."""
    c = http.client.HTTPConnection(*host_port(url), timeout=10)
    body = None if payload is None else json.dumps(payload)
    c.request(method, "/__proxy/" + path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    st, out = r.status, r.read()
    c.close()
    return st, json.loads(out)


def check_control(s, url):
    st, out = control(url, "POST", "rules", {"rules": [{"path": "*", "status": 503, "count": 1}],
                                             "delay_ms": 0})
    expect(st == 200 and out["rules"][0]["remaining"] == 1, "POST rules: %s %r" % (st, out))
    st, out = control(url, "POST", "rules", [{"path": "*", "fault": "explode"}])
    expect(st == 400 and "explode" in out["error"], "bad rule: %s %r" % (st, out))
    st, out = control(url, "POST", "rules", [{"path": "*", "stauts": 503}])
    expect(st == 400 and "stauts" in out["error"], "misspelt key: %s %r" % (st, out))
    st, out = control(url, "GET", "rules")
    expect(st == 200 and len(out["rules"]) == 1, "bad rules replaced the good ones: %r" % out)
    st, _, _, c = get(url, "/d/small")
    c.close()
    expect(st == 503, "rule set over HTTP not applied: %s" % st)
    st, out = control(url, "GET", "log")
    expect(st == 200 and out[-1]["status"] == 503 and out[-1]["path"] == "/d/small",
           "GET log: %r" % out[-1:])
    st, out = control(url, "DELETE", "log")
    expect(st == 200 and s.log() == [], "DELETE log left %d entries" % len(s.log()))
    s.set_rules([{"path": "*", "status": 500}], delay_ms=5)
    st, out = control(url, "POST", "reset", {})
    expect(st == 200 and out == {"delay_ms": 0, "rules": []} and s.log() == [],
           "reset: %r" % out)


def check_cli(root):
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "serve.py"), "--root", root,
                          "--delay-ms", "1"], stdout=subprocess.PIPE, text=True)
    try:
        urls = json.loads(p.stdout.readline())
        st, _, body, c = get(urls["proxy"], "/d/small")
        c.close()
        expect(st == 200 and body == b"small\n", "CLI proxy: %s %r" % (st, body))
        st, out = control(urls["proxy"], "GET", "rules")
        expect(out["delay_ms"] == 1 and urls["control"] == urls["proxy"] + "__proxy/",
               "CLI control: %r %r" % (out, urls))
    finally:
        p.terminate()
        rc = p.wait(10)
    expect(rc == 0, "CLI exit status after SIGTERM: %s" % rc)
    for u in ("nginx", "proxy"):
        expect(not serve.port_answers(host_port(urls[u])[1]), "CLI left %s answering" % u)


def attempt(fn, *args):
    """Run one check; an exception it did not expect is a failure, not the end."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 -- report and go on to the next check
        expect(False, "%s raised %s: %s" % (fn.__name__, type(e).__name__, e))


def main():
    if serve.find_nginx() is None:
        print("SKIP: nginx not found (tests/deps.sh installs nginx-light)")
        return 77
    t0 = time.monotonic()
    blob = os.urandom(SIZE)
    with tempfile.TemporaryDirectory(prefix="sl-serve-") as root:
        os.mkdir(os.path.join(root, "d"))
        with open(os.path.join(root, "d", "blob"), "wb") as f:
            f.write(blob)
        with open(os.path.join(root, "d", "small"), "wb") as f:
            f.write(b"small\n")
        with serve.serve(root) as s:
            url = s.proxy_url
            checks = [(check_ranges, s.nginx_url, blob, "nginx"), (check_relay, s, blob),
                      (check_delay, s, url), (check_statuses, s, url),
                      (check_count_concurrent, s, url), (check_reset, s, url, blob),
                      (check_truncate, s, url, blob), (check_full_200, s, url, blob),
                      (check_hang, s, url, blob), (check_drop, s, url), (check_control, s, url)]
            for fn, *args in checks:
                s.reset()
                attempt(fn, *args)
            nginx_port = s.nginx.port
        expect(not serve.port_answers(nginx_port), "nginx still answers after the with block")
        attempt(check_cli, root)
    print("check_serve: %d failures in %.1f s" % (len(failures), time.monotonic() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
