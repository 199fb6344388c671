#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Self-test of tests/remote/s3serve.py, the S3 harness: s3rver (through
tests/tools/s3rver_run.cjs) behind the test proxy, driven with real
SigV4-signed requests (curl --aws-sigv4, and sigv4.py's signer over
http.client): PUT and GET give the same bytes (plain and chunked bodies),
ranges (suffix ones too) give 206, a missing key 404 NoSuchKey, ListObjectsV2
pages in S3's order with continuation tokens, DELETE and DeleteObjects
remove, multipart uploads assemble and bad ones are refused, conditional
writes hold under concurrency, a bad signature is refused, the SlowDown rule
answers 503 `count` times and then lets requests through, a delay rule
delays.  It also pins what README.md reports of s3rver alone (no signature
check, conditional PUT headers ignored, suffix ranges and listing order
wrong, no AbortMultipartUpload), so a new s3rver that changes any of it fails
here rather than in the store's tests.  Exit 77 (skip) without node or
s3rver, unless SL_REQUIRE_S3RVER=1.  Standard library only.
"""
import base64
import datetime
import hashlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import s3serve  # noqa: E402
import serve  # noqa: E402
import sigv4  # noqa: E402

BUCKET = "sluice-test"
SLOWDOWN_XML = serve.s3_error_xml("SlowDown", "Please reduce your request rate.")
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def host_port(url):
    hp = url.split("//", 1)[1].rstrip("/")
    host, port = hp.rsplit(":", 1)
    return host, int(port)


def xml_all(body, tag):
    """Texts of every element named `tag` (any namespace) in an XML document."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return []
    return [e.text or "" for e in root.iter() if e.tag.rsplit("}", 1)[-1] == tag]


def xml_one(body, tag):
    found = xml_all(body, tag)
    return found[0] if found else None


def curl_has_sigv4():
    try:
        out = subprocess.run(["curl", "--help", "all"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return "--aws-sigv4" in out


class Answer:
    """status, headers (lower-case names) and body of one response."""

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def __repr__(self):
        return "<%s %r>" % (self.status, self.body[:300])


class Client:
    """Signed S3 requests to `url` (the proxy or s3rver), by curl or by sigv4.py.

    `target` is the path and query as sent, already percent-encoded; curl 7.88
    (Debian 12's) signs the query as written, so targets keep parameters sorted
    and give each an "=" (what the SigV4 canonical form has)."""

    def __init__(self, url, key=s3serve.ACCESS_KEY, secret=s3serve.SECRET_KEY, use_curl=True):
        self.url = url.rstrip("/")
        self.key, self.secret, self.use_curl = key, secret, use_curl

    def request(self, method, target, body=None, headers=None, payload=sigv4.UNSIGNED,
                chunked=False, secret=None):
        if self.use_curl:
            return self.curl(method, target, body, headers or {}, payload, chunked,
                             secret or self.secret)
        return self.python(method, target, body, headers or {}, payload, secret or self.secret)

    def curl(self, method, target, body, headers, payload, chunked, secret):
        with tempfile.TemporaryDirectory(prefix="sl-s3check-") as tmp:
            hdr, out = os.path.join(tmp, "h"), os.path.join(tmp, "b")
            argv = ["curl", "-s", "-S", "--max-time", "20", "-X", method, "-D", hdr, "-o", out,
                    "-w", "%{http_code}", "--aws-sigv4", "aws:amz:%s:s3" % s3serve.REGION,
                    "--user", "%s:%s" % (self.key, secret)]
            if payload == "sha256":
                payload = sigv4.sha256_hex(body or b"")
            argv += ["-H", "x-amz-content-sha256: " + payload]
            for k, v in headers.items():
                argv += ["-H", "%s: %s" % (k, v)]
            stdin = None
            if body is not None and chunked:
                argv += ["-T", "-"]
                stdin = body
            elif body is not None:
                path = os.path.join(tmp, "in")
                with open(path, "wb") as f:
                    f.write(body)
                argv += (["-T", path] if method == "PUT" else ["--data-binary", "@" + path])
            if method == "HEAD":  # -I, not -X HEAD, or curl waits for a body
                argv[argv.index("-X"):argv.index("-X") + 2] = ["-I"]
            p = subprocess.run(argv + [self.url + target], input=stdin, capture_output=True)
            if p.returncode != 0:
                raise RuntimeError("curl %s %s: rc %d %s" % (method, target, p.returncode,
                                                              p.stderr.decode()))
            body = b""
            if method != "HEAD" and os.path.exists(out):  # -I writes the headers there
                with open(out, "rb") as f:
                    body = f.read()
            return Answer(int(p.stdout), curl_headers(hdr), body)

    def python(self, method, target, body, headers, payload, secret, host=None, now=None):
        h, port = host_port(self.url)
        signed_host = host or "%s:%d" % (h, port)
        if payload == "sha256":
            payload = None
        add = sigv4.sigv4_sign(method, signed_host, target, headers, body, self.key, secret,
                               s3serve.REGION, now=now, payload_hash=payload)
        conn = http.client.HTTPConnection(h, port, timeout=20)
        try:
            conn.request(method, target, body=body, headers=dict(headers, **add))
            r = conn.getresponse()
            return Answer(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()


def curl_headers(path):
    """Headers of the last response in a curl -D file (after any 100 Continue)."""
    text = open(path, "rb").read().decode("latin-1")
    block = [b for b in text.split("\r\n\r\n") if b.strip()][-1]
    out = {}
    for line in block.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        out[k.strip().lower()] = v.strip()
    return out


def key_url(key, query=""):
    return "/%s/%s%s" % (BUCKET, urllib.parse.quote(key, safe="/~"),
                         "?" + query if query else "")


def put_get(c, key, data, what, **kw):
    a = c.request("PUT", key_url(key), data, **kw)
    md5 = '"%s"' % hashlib.md5(data).hexdigest()
    expect(a.status == 200 and a.headers.get("etag") == md5,
           "%s: PUT %s gave %r etag %s" % (what, key, a, a.headers.get("etag")))
    a = c.request("GET", key_url(key))
    expect(a.status == 200 and a.body == data,
           "%s: GET %s gave %s, %d bytes of %d" % (what, key, a.status, len(a.body), len(data)))


def check_put_get(s, c, py):
    blob = os.urandom(300000)
    put_get(c, "data/blob.bin", blob, "curl, sha256 payload", payload="sha256")
    put_get(c, "data/chunked.bin", blob[:70000], "curl, chunked body", chunked=True)
    put_get(c, "data/odd name+%.bin", b"odd\n", "curl, escaped key")
    put_get(py, "data/py.bin", blob[:5000], "python signer", payload="sha256")
    put_get(py, "data/empty", b"", "python signer, empty")
    a = c.request("HEAD", key_url("data/blob.bin"))
    expect(a.status == 200 and a.headers.get("content-length") == str(len(blob)) and not a.body,
           "HEAD: %r %s" % (a, a.headers.get("content-length")))
    log = [e for e in s.log() if e["method"] == "PUT"]
    expect([e["req_bytes"] for e in log] == [300000, 70000, 4, 5000, 0],
           "request bytes in the log: %r" % [e["req_bytes"] for e in log])


def check_ranges(s, c):
    data = bytes(range(256)) * 40
    c.request("PUT", key_url("r/obj"), data)
    n = len(data)
    for rng, first, last in (("bytes=10-19", 10, 19), ("bytes=-7", n - 7, n - 1),
                             ("bytes=10000-", 10000, n - 1), ("bytes=-99999", 0, n - 1)):
        a = c.request("GET", key_url("r/obj"), headers={"Range": rng})
        expect(a.status == 206 and a.body == data[first:last + 1]
               and a.headers.get("content-range") == "bytes %d-%d/%d" % (first, last, n),
               "%s: %s %s, %d bytes" % (rng, a.status, a.headers.get("content-range"),
                                        len(a.body)))
    for rng in ("bytes=%d-" % n, "bytes=-0"):
        a = c.request("GET", key_url("r/obj"), headers={"Range": rng})
        expect(a.status == 416 and xml_one(a.body, "Code") == "InvalidRange",
               "%s: %r" % (rng, a))
    a = c.request("HEAD", key_url("r/obj"), headers={"Range": "bytes=-7"})
    expect(a.status == 206 and a.headers.get("content-length") == "7", "HEAD suffix: %r %s"
           % (a, a.headers))


def check_missing(s, c):
    a = c.request("GET", key_url("no/such/key"))
    expect(a.status == 404 and xml_one(a.body, "Code") == "NoSuchKey"
           and xml_one(a.body, "Key") == "no/such/key", "missing key: %r" % a)
    a = c.request("HEAD", key_url("no/such/key"))
    expect(a.status == 404 and a.body == b"", "HEAD missing key: %r" % a)
    a = c.request("GET", "/no-such-bucket/k")
    expect(a.status == 404 and xml_one(a.body, "Code") == "NoSuchBucket", "missing bucket: %r" % a)


def list_all(c, prefix, max_keys):
    """Keys of every page of a ListObjectsV2 walk, page by page."""
    pages, token = [], None
    for _ in range(20):
        q = {"list-type": "2", "max-keys": str(max_keys), "prefix": prefix}
        if token:
            q["continuation-token"] = token
        query = "&".join("%s=%s" % (k, urllib.parse.quote(v, safe="~")) for k, v in sorted(q.items()))
        a = c.request("GET", "/%s?%s" % (BUCKET, query))
        expect(a.status == 200, "list page %d: %r" % (len(pages), a))
        pages.append(xml_all(a.body, "Key"))
        token = xml_one(a.body, "NextContinuationToken")
        truncated = xml_one(a.body, "IsTruncated") == "true"
        expect(truncated == bool(token), "IsTruncated %s with token %r" % (truncated, token))
        if not truncated:
            break
    return pages


ORDER_KEYS = ["o/a", "o/a-b", "o/a.txt", "o/a/x", "o/b"]  # S3's order: '-' < '.' < '/'


def check_list(s, c):
    keys = ["list/k%d" % i for i in range(5)] + ["list/sub/x"]
    for k in keys:
        c.request("PUT", key_url(k), k.encode())
    pages = list_all(c, "list/", 2)
    expect(pages == [keys[0:2], keys[2:4], [keys[4], keys[5]]], "pages: %r" % pages)
    pages = list_all(c, "list/", 6)
    expect(pages == [keys], "one full page: %r" % pages)
    for k in ORDER_KEYS:
        c.request("PUT", key_url(k), b"o")
    pages = list_all(c, "o/", 100)
    expect(pages == [ORDER_KEYS], "listing order: %r" % pages)
    pages = list_all(c, "o/", 1)
    expect(pages == [[k] for k in ORDER_KEYS], "one key a page: %r" % pages)
    a = c.request("GET", "/%s?delimiter=%%2F&list-type=2&prefix=list%%2F" % BUCKET)
    expect(xml_all(a.body, "Key") == keys[:5] and xml_all(a.body, "Prefix")[-1:] == ["list/sub/"],
           "delimiter: %r" % a)


def check_delete(s, c):
    for k in ("del/a", "del/b", "del/c"):
        c.request("PUT", key_url(k), b"x")
    a = c.request("DELETE", key_url("del/a"))
    expect(a.status == 204 and a.body == b"", "DELETE: %r" % a)
    a = c.request("GET", key_url("del/a"))
    expect(a.status == 404, "GET after DELETE: %r" % a)
    a = c.request("DELETE", key_url("del/a"))
    expect(a.status == 204, "DELETE of an absent key: %r" % a)
    doc = ("<Delete><Object><Key>del/b</Key></Object><Object><Key>del/c</Key></Object>"
           "<Object><Key>del/absent</Key></Object></Delete>").encode()
    md5 = base64.b64encode(hashlib.md5(doc).digest()).decode()
    a = c.request("POST", "/%s?delete=" % BUCKET, doc, {"Content-MD5": md5,
                                                      "Content-Type": "application/xml"})
    expect(a.status == 200 and sorted(xml_all(a.body, "Key")) == ["del/absent", "del/b", "del/c"]
           and not xml_all(a.body, "Error"), "DeleteObjects: %r" % a)
    expect(list_all(c, "del/", 100) == [[]], "keys left after deleting")
    keys = ["del2/d/%d" % i for i in range(8)]
    for k in keys:
        c.request("PUT", key_url(k), b"x")
    doc = ("<Delete>%s</Delete>" % "".join("<Object><Key>%s</Key></Object>" % k
                                           for k in keys)).encode()
    # The proxy checks Content-MD5 as S3 does (s3rver ignores it).
    a = c.request("POST", "/%s?delete=" % BUCKET, doc)
    expect(a.status == 400 and xml_one(a.body, "Code") == "InvalidRequest",
           "DeleteObjects without Content-MD5: %r" % a)
    wrong = base64.b64encode(hashlib.md5(doc + b" ").digest()).decode()
    a = c.request("POST", "/%s?delete=" % BUCKET, doc, {"Content-MD5": wrong})
    expect(a.status == 400 and xml_one(a.body, "Code") == "BadDigest",
           "DeleteObjects with another body's Content-MD5: %r" % a)
    a = c.request("POST", "/%s?delete=" % BUCKET, doc, {"Content-MD5": "bm90IGFuIE1ENQ=="})
    expect(a.status == 400 and xml_one(a.body, "Code") == "InvalidDigest",
           "DeleteObjects with a Content-MD5 of 10 bytes: %r" % a)
    a = c.request("PUT", key_url("del2/md5"), b"body", {"Content-MD5": wrong})
    expect(a.status == 400 and xml_one(a.body, "Code") == "BadDigest", "PUT, bad MD5: %r" % a)
    md5 = base64.b64encode(hashlib.md5(doc).digest()).decode()
    a = c.request("POST", "/%s?delete=" % BUCKET, doc, {"Content-MD5": md5})
    expect(a.status == 200 and len(xml_all(a.body, "Key")) == len(keys),
           "DeleteObjects emptying a directory: %r" % a)
    expect(list_all(c, "del2/", 100) == [[]], "keys left after emptying a directory")
    c.request("PUT", key_url("del2/d/again"), b"y")
    expect(c.request("GET", key_url("del2/d/again")).body == b"y", "PUT after emptying")


MIB = 1024 * 1024


def upload_start(c, key):
    a = c.request("POST", key_url(key, "uploads="))
    upload = xml_one(a.body, "UploadId")
    expect(a.status == 200 and upload, "initiate %s: %r" % (key, a))
    return upload or "none"


def upload_parts(c, key, upload, parts):
    """ETags of `parts` uploaded as parts 1, 2, ..."""
    etags = []
    for i, p in enumerate(parts, 1):
        a = c.request("PUT", key_url(key, "partNumber=%d&uploadId=%s" % (i, upload)), p)
        etags.append(a.headers.get("etag"))
        expect(a.status == 200 and etags[-1] == '"%s"' % hashlib.md5(p).hexdigest(),
               "%s part %d: %r" % (key, i, a))
    return etags


def upload_complete(c, key, upload, numbered_etags, headers=None):
    doc = "<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
        "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % ne for ne in numbered_etags)
    return c.request("POST", key_url(key, "uploadId=" + upload), doc.encode(), headers)


def check_multipart(s, c):
    parts = [os.urandom(5 * MIB), os.urandom(777)]
    upload = upload_start(c, "mp/obj")
    etags = upload_parts(c, "mp/obj", upload, parts)
    a = upload_complete(c, "mp/obj", upload, [(1, etags[0]), (2, etags[1])])
    expect(a.status == 200 and xml_one(a.body, "Key") == "mp/obj", "complete: %r" % a)
    a = c.request("GET", key_url("mp/obj"))
    expect(a.status == 200 and a.body == b"".join(parts), "multipart GET: %s, %d bytes"
           % (a.status, len(a.body)))
    a = upload_complete(c, "mp/obj", upload, [(1, etags[0])])
    expect(a.status == 404 and xml_one(a.body, "Code") == "NoSuchUpload", "completed twice: %r" % a)
    upload = upload_start(c, "mp/bad")
    etags = upload_parts(c, "mp/bad", upload, [b"small", b"last"])
    for what, listed, code in (
            ("small first part", [(1, etags[0]), (2, etags[1])], "EntityTooSmall"),
            ("part never uploaded", [(1, etags[0]), (7, etags[1])], "InvalidPart"),
            ("wrong etag", [(1, '"%s"' % ("0" * 32))], "InvalidPart"),
            ("descending parts", [(2, etags[1]), (1, etags[0])], "InvalidPartOrder")):
        a = upload_complete(c, "mp/bad", upload, listed)
        expect(a.status == 400 and xml_one(a.body, "Code") == code, "%s: %r" % (what, a))
    a = c.request("DELETE", key_url("mp/bad", "uploadId=" + upload))
    expect(a.status == 204, "abort: %r" % a)
    a = upload_complete(c, "mp/bad", upload, [(1, etags[0])])
    expect(a.status == 404 and xml_one(a.body, "Code") == "NoSuchUpload", "after abort: %r" % a)
    a = c.request("DELETE", key_url("mp/bad", "uploadId=nosuch"))
    expect(a.status == 404 and xml_one(a.body, "Code") == "NoSuchUpload", "abort unknown: %r" % a)
    expect(c.request("GET", key_url("mp/bad")).status == 404, "a refused upload left an object")


def check_signatures(s, c, py):
    a = c.request("GET", key_url("data/blob.bin"), secret="not-the-secret")
    expect(a.status == 403 and xml_one(a.body, "Code") == "SignatureDoesNotMatch"
           and xml_one(a.body, "CanonicalRequest"), "wrong secret via the proxy: %r" % a)
    expect(s.log()[-1]["action"] == "sigv4", "refusal log: %r" % s.log()[-1:])
    a = Client(s.proxy_url, key="NOBODY").request("GET", key_url("data/blob.bin"))
    expect(a.status == 403 and xml_one(a.body, "Code") == "InvalidAccessKeyId",
           "unknown key: %r" % a)
    conn = http.client.HTTPConnection(*host_port(s.proxy_url), timeout=10)
    conn.request("GET", key_url("data/blob.bin"))
    r = conn.getresponse()
    body = r.read()
    conn.close()
    expect(r.status == 403 and xml_one(body, "Code") == "AccessDenied", "anonymous: %s" % r.status)
    other = "127.0.0.1:%d" % host_port(s.s3rver_url)[1]
    a = py.python("GET", key_url("data/blob.bin"), None, {}, sigv4.UNSIGNED, py.secret, host=other)
    expect(a.status == 403 and xml_one(a.body, "Code") == "SignatureDoesNotMatch",
           "signed for s3rver's host, sent to the proxy: %r" % a)
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
    a = py.python("GET", key_url("data/blob.bin"), None, {}, sigv4.UNSIGNED, py.secret, now=old)
    expect(a.status == 403 and xml_one(a.body, "Code") == "RequestTimeTooSkewed",
           "20 minutes old: %r" % a)
    a = c.request("PUT", key_url("data/sha"), b"body", headers={"x-amz-content-sha256":
                                                                  "0" * 64}, payload="0" * 64)
    expect(a.status == 400 and xml_one(a.body, "Code") == "XAmzContentSHA256Mismatch",
           "wrong payload hash: %r" % a)


def check_conditional(s, c):
    """Conditional writes as S3 does them (s3rver_run.cjs; s3rver alone ignores them)."""
    a = c.request("PUT", key_url("cond/k"), b"first", {"If-None-Match": "*"})
    expect(a.status == 200, "create with If-None-Match: *: %r" % a)
    etag = a.headers.get("etag")
    a = c.request("PUT", key_url("cond/k"), b"second", {"If-None-Match": "*"})
    expect(a.status == 412 and xml_one(a.body, "Code") == "PreconditionFailed",
           "If-None-Match: * on an existing key: %r" % a)
    a = c.request("PUT", key_url("cond/k"), b"third", {"If-Match": '"%s"' % ("0" * 32)})
    expect(a.status == 412, "If-Match: another etag: %r" % a)
    expect(c.request("GET", key_url("cond/k")).body == b"first", "a refused PUT wrote")
    a = c.request("PUT", key_url("cond/k"), b"fourth", {"If-Match": etag})
    expect(a.status == 200 and c.request("GET", key_url("cond/k")).body == b"fourth",
           "If-Match: its etag: %r" % a)
    a = c.request("PUT", key_url("cond/k"), b"x", {"If-None-Match": etag})
    expect(a.status == 501 and xml_one(a.body, "Code") == "NotImplemented",
           "If-None-Match: an etag, on a write: %r" % a)
    a = c.request("PUT", key_url("cond/absent"), b"x", {"If-Match": etag})
    expect(a.status == 404 and xml_one(a.body, "Code") == "NoSuchKey", "If-Match, absent: %r" % a)
    etag = c.request("HEAD", key_url("cond/k")).headers.get("etag")
    a = c.request("GET", key_url("cond/k"), headers={"If-None-Match": etag})
    expect(a.status == 304, "GET If-None-Match: its etag: %r" % a)
    a = c.request("GET", key_url("cond/k"), headers={"If-Match": '"0123"'})
    expect(a.status == 412, "GET If-Match: another etag: %r" % a)
    a = c.request("GET", key_url("cond/k"), headers={"If-Match": etag})
    expect(a.status == 200 and a.body == b"fourth", "GET If-Match: its etag: %r" % a)
    upload = upload_start(c, "cond/k")
    etags = upload_parts(c, "cond/k", upload, [b"mp"])
    a = upload_complete(c, "cond/k", upload, [(1, etags[0])], {"If-None-Match": "*"})
    expect(a.status == 412, "CompleteMultipartUpload If-None-Match: *, key exists: %r" % a)


def check_conditional_race(s, py):
    """Of 8 concurrent If-None-Match: * creates of one key, exactly one wins."""
    results = []
    lock = threading.Lock()

    def one(i):
        a = py.request("PUT", key_url("race/k"), b"writer %d" % i, {"If-None-Match": "*"})
        with lock:
            results.append((a.status, i))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    won = [i for st, i in results if st == 200]
    expect(sorted(st for st, _ in results) == [200] + [412] * 7,
           "8 concurrent creates: %r" % results)
    got = py.request("GET", key_url("race/k")).body
    expect(len(won) == 1 and got == b"writer %d" % won[0], "race winner %r, stored %r"
           % (won, got))


def check_raw(c):
    """s3rver alone, as README.md reports it; `c` signs with a wrong secret."""
    c.request("PUT", key_url("raw/k"), b"0123456789")
    a = c.request("GET", key_url("raw/k"), headers={"Range": "bytes=-3"})
    expect(a.status == 206 and a.body == b"0123" and
           a.headers.get("content-range") == "bytes 0-3/10",
           "raw s3rver: wrong secret and bytes=-3 gave %r %s (README: accepted; bytes 0-3)"
           % (a, a.headers.get("content-range")))
    a = c.request("PUT", key_url("raw/k"), b"second", {"If-None-Match": "*"})
    b = c.request("PUT", key_url("raw/k"), b"third", {"If-Match": '"0123"'})
    expect(a.status == 200 and b.status == 200
           and c.request("GET", key_url("raw/k")).body == b"third",
           "raw s3rver: conditional PUTs gave %r %r (README: ignored)" % (a, b))
    a = c.request("GET", key_url("raw/k"), headers={"If-Match": '"0123"'})
    expect(a.status == 200, "raw s3rver: GET If-Match another etag: %r (README: 200)" % a)
    for k in ORDER_KEYS:
        c.request("PUT", key_url(k), b"o")
    pages = list_all(c, "o/", 100)
    expect(pages == [["o/a/x", "o/a-b", "o/a", "o/a.txt", "o/b"]],
           "raw s3rver: listing order %r (README: directory walk order)" % pages)
    pages = list_all(c, "o/", 1)
    expect(pages == [["o/a/x"], ["o/b"]],
           "raw s3rver: one key a page %r (README: keys skipped)" % pages)
    a = c.request("POST", key_url("raw/mp", "uploads="))
    a = c.request("DELETE", key_url("raw/mp", "uploadId=" + (xml_one(a.body, "UploadId") or "")))
    expect(a.status == 405, "raw s3rver: AbortMultipartUpload gave %r (README: 405)" % a)


def check_slowdown(s, c):
    s.set_rules([{"path": "/%s/slow/*" % BUCKET, "method": "PUT", "s3_error": "SlowDown",
                  "count": 2, "name": "slow"},
                 {"path": "/%s/slow/*" % BUCKET, "method": ["POST", "DELETE"],
                  "s3_error": "InternalError", "retry_after": 1, "count": 1}])
    for i in range(2):
        a = c.request("PUT", key_url("slow/k"), b"data")
        expect(a.status == 503 and a.body == SLOWDOWN_XML.encode()
               and a.headers.get("content-type") == "application/xml",
               "SlowDown #%d: %r %s" % (i, a, a.headers.get("content-type")))
        a = c.request("GET", key_url("slow/k"))
        expect(a.status == 404, "a PUT answered SlowDown reached s3rver: %r" % a)
    a = c.request("PUT", key_url("slow/k"), b"data")
    expect(a.status == 200, "after count 2: %r" % a)
    a = c.request("DELETE", key_url("slow/k"))
    expect(a.status == 500 and xml_one(a.body, "Code") == "InternalError"
           and a.headers.get("retry-after") == "1", "DELETE rule: %r" % a)
    a = c.request("DELETE", key_url("slow/k"))
    expect(a.status == 204, "DELETE after its rule: %r" % a)
    log = s.log()
    expect([(e["method"], e["rule"]) for e in log] ==
           [("PUT", "slow"), ("GET", None), ("PUT", "slow"), ("GET", None), ("PUT", None),
            ("DELETE", 1), ("DELETE", None)],
           "rules in the log: %r" % [(e["method"], e["rule"]) for e in log])


def broken(fn, *args):
    """What `fn(*args)` raised (its class name), or None when it answered."""
    try:
        fn(*args)
    except (http.client.HTTPException, OSError) as e:
        return type(e).__name__
    return None


def check_write_faults(s, py):
    """Faults on writes and listings: a PUT reset while its body arrives writes nothing;
    one reset before its answer, or with its answer cut inside the headers, is written
    whole; a part upload and a list page take the same rules (by query), a
    CompleteMultipartUpload's answer is cut inside its body; each is logged with what
    reached s3rver (upstream_status)."""
    body = bytes(range(256)) * 8
    p = "/%s/wf/" % BUCKET
    s.set_rules([{"path": p + "cut", "method": "PUT", "fault": "reset_mid_request",
                  "after_bytes": 100, "name": "cut"},
                 {"path": p + "lost", "method": "PUT", "fault": "reset_before_answer",
                  "name": "lost"},
                 {"path": p + "head", "method": "PUT", "fault": "truncate_body", "name": "head"},
                 {"path": p + "mp", "method": "PUT", "query": "partNumber=2&*",
                  "fault": "reset_mid_request", "count": 1, "name": "part"},
                 {"path": p + "mp", "method": "POST", "query": "uploadId=*",
                  "fault": "truncate_body", "count": 1, "name": "complete"},
                 {"path": "/%s" % BUCKET, "method": "GET", "query": "list-type=2&prefix=wf*",
                  "fault": "reset_mid_body", "after_bytes": 50, "count": 1, "name": "page"},
                 {"path": "/%s" % BUCKET, "method": "GET", "query": "list-type=2&prefix=wf*",
                  "s3_error": "SlowDown", "count": 1, "name": "slow page"}])
    s.clear_log()
    for key in ("cut", "lost", "head"):
        why = broken(py.request, "PUT", key_url("wf/" + key), body)
        expect(why is not None, "PUT with fault %s answered" % key)
    expect(py.request("GET", key_url("wf/cut")).status == 404,
           "a PUT reset while its body arrived reached s3rver")
    for key in ("lost", "head"):
        a = py.request("GET", key_url("wf/" + key))
        expect(a.status == 200 and a.body == body, "PUT %s: not written whole: %r" % (key, a))
    log = {e["rule"]: e for e in s.log() if e["rule"] is not None}
    e = log.get("cut", {})
    expect(e.get("action") == "reset_mid_request" and e.get("req_bytes") == 100 and
           e.get("status") is None and e.get("upstream_status") is None,
           "reset_mid_request's log entry: %r" % e)
    for key in ("lost", "head"):
        e = log.get(key, {})
        expect(e.get("status") is None and e.get("upstream_status") == 200 and
               e.get("req_bytes") == len(body), "%s's log entry: %r" % (key, e))
    # A part reset once, then sent again; the completion's answer cut once.
    upload = upload_start(py, "wf/mp")
    parts = [b"a" * (5 << 20), b"b" * 1000]  # all but the last at least 5 MiB
    target = key_url("wf/mp", "partNumber=2&uploadId=%s" % upload)
    expect(broken(py.request, "PUT", target, parts[1]) is not None, "part 2: not reset")
    etags = upload_parts(py, "wf/mp", upload, parts)
    doc = "<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
        "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % ne
        for ne in enumerate(etags, 1))
    why = broken(py.request, "POST", key_url("wf/mp", "uploadId=" + upload), doc.encode())
    expect(why is not None, "CompleteMultipartUpload's answer was not cut")
    a = py.request("GET", key_url("wf/mp"))
    expect(a.status == 200 and a.body == b"".join(parts), "multipart after faults: %r %r"
           % (a, [(e["method"], e["query"], e["rule"], e["status"], e["upstream_status"])
                  for e in s.log()]))
    # A list page reset after 50 bytes, then SlowDown, then whole.
    q = "list-type=2&prefix=wf%2F"
    expect(broken(py.request, "GET", "/%s?%s" % (BUCKET, q)) is not None, "page: not reset")
    a = py.request("GET", "/%s?%s" % (BUCKET, q))
    expect(a.status == 503 and xml_one(a.body, "Code") == "SlowDown", "page: %r" % a)
    a = py.request("GET", "/%s?%s" % (BUCKET, q))
    expect(a.status == 200 and xml_all(a.body, "Key") == ["wf/head", "wf/lost", "wf/mp"],
           "page after its faults: %r" % a)
    s.set_rules([])


def check_delay(s, c):
    c.request("PUT", key_url("delay/k"), b"d")
    s.set_rules([{"path": "/%s/delay/*" % BUCKET, "delay_ms": 300, "count": 1}])
    t = time.monotonic()
    a = c.request("GET", key_url("delay/k"))
    dt1 = time.monotonic() - t
    t = time.monotonic()
    b = c.request("GET", key_url("delay/k"))
    dt2 = time.monotonic() - t
    expect(a.status == 200 and a.body == b"d" and dt1 >= 0.3, "delay: %r after %.3f s" % (a, dt1))
    expect(b.status == 200 and dt2 < dt1, "count 1 delay applied twice (%.3f s)" % dt2)


def check_cli():
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "s3serve.py"), "--bucket", "cli",
                          "--bucket", "cli-2"], stdout=subprocess.PIPE, text=True)
    try:
        urls = json.loads(p.stdout.readline())
        c = Client(urls["proxy"], urls["access_key"], urls["secret_key"])
        a = c.request("PUT", "/cli-2/k", b"cli")
        b = c.request("GET", "/cli-2/k")
        expect(a.status == 200 and b.body == b"cli", "CLI proxy: %r %r" % (a, b))
        expect(urls["bucket"] == "cli" and urls["control"] == urls["proxy"] + "__proxy/",
               "CLI urls: %r" % urls)
    finally:
        p.terminate()
        rc = p.wait(10)
    expect(rc == 0, "CLI exit status after SIGTERM: %s" % rc)
    for u in ("s3rver", "proxy"):
        expect(not serve.port_answers(host_port(urls[u])[1]), "CLI left %s answering" % u)


def attempt(fn, *args):
    """Run one check; an exception it did not expect is a failure, not the end."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 -- report and go on to the next check
        expect(False, "%s raised %s: %s" % (fn.__name__, type(e).__name__, e))


def main():
    why = s3serve.missing()
    if why:
        if os.environ.get("SL_REQUIRE_S3RVER") == "1":
            print("FAIL: SL_REQUIRE_S3RVER=1 but %s" % why)
            return 1
        print("SKIP: %s" % why)
        return 77
    t0 = time.monotonic()
    use_curl = curl_has_sigv4()
    if not use_curl:
        print("note: curl lacks --aws-sigv4; signing every request with sigv4.py")
    with s3serve.s3serve(buckets=(BUCKET,)) as s:
        c = Client(s.proxy_url, use_curl=use_curl)
        py = Client(s.proxy_url, use_curl=False)
        checks = [(check_put_get, s, c, py), (check_ranges, s, c), (check_missing, s, c),
                  (check_list, s, c), (check_delete, s, c), (check_multipart, s, c),
                  (check_signatures, s, c, py), (check_conditional, s, c),
                  (check_conditional_race, s, py), (check_slowdown, s, c), (check_delay, s, c),
                  (check_write_faults, s, py)]
        for fn, *args in checks:
            s.reset()
            attempt(fn, *args)
        port = s.s3rver.port
        alive = s.s3rver.proc is not None and s.s3rver.proc.poll() is None
        expect(alive, "s3rver died: %s" % s.s3rver.why())
    expect(not serve.port_answers(port), "s3rver still answers after the with block")
    with s3serve.s3serve(buckets=(BUCKET,), proxy=False, raw=True) as raw:
        attempt(check_raw, Client(raw.s3rver_url, secret="not-the-secret", use_curl=use_curl))
    attempt(check_cli)
    print("check_s3serve: %d failures in %.1f s" % (len(failures), time.monotonic() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
