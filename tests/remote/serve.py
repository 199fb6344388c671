#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A real HTTP server for the remote-store tests: nginx serving a directory
read-only on 127.0.0.1, and in front of it a fault-and-latency proxy whose
per-request rules (method, path and query globs, count, delay, status, S3
errors, broken bodies, hangs) are set at start and changed at run time
through its /__proxy/ endpoints.  The same proxy fronts s3rver for the S3
store's tests (s3serve.py): there it relays PUT, POST and DELETE with their
bodies and checks SigV4 signatures.  Standard library only;
tests/remote/README.md lists the rules.

    with serve(root, delay_ms=0) as s:
        s.nginx_url, s.proxy_url, s.control_url
        s.set_rules([{"path": "*/c/0/*", "status": 503, "retry_after": 1, "count": 1}])
        s.log()   # one dict per request the proxy saw

    serve.py --root DIR [--delay-ms N] [--rules FILE]   (prints the URLs as JSON)

DESIGN: nginx runs as a child in the foreground (`daemon off; master_process
off;`), with config, pid, logs and temp paths in a private temp dir, and dies
with its parent (PR_SET_PDEATHSIG, atexit, SIGTERM in the CLI).  The proxy is
thread-per-connection over raw sockets, so a `hang` or a slow client blocks
only its own connection, and a fault controls exactly which bytes leave and
how the socket closes (FIN, or RST through SO_LINGER 0).  Each client
connection keeps one keep-alive connection to its upstream.  Rules and the
log sit behind one lock; a rule's remaining count is taken under it, so with
N concurrent matching requests exactly `count` of them get the fault.  The
client's Host header goes upstream unchanged, so a signature made for the
proxy's host:port is the one the upstream sees; request bodies are read whole
(after `100 Continue` when asked) and sent upstream with Content-Length.
"""
import argparse
import atexit
import ctypes
import fcntl
import fnmatch
import http.client
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")
CONTROL_PREFIX = "/__proxy/"
STATUS_REASONS = {400: "Bad Request", 403: "Forbidden", 404: "Not Found",
                  405: "Method Not Allowed", 409: "Conflict", 412: "Precondition Failed",
                  429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
                  503: "Service Unavailable", 504: "Gateway Timeout"}
READ_METHODS = ("GET", "HEAD")
ALL_METHODS = ("GET", "HEAD", "PUT", "POST", "DELETE")
FAULTS = ("reset_mid_body", "truncate_body", "full_200", "hang", "drop_connection",
          "reset_mid_request", "reset_before_answer")
# Faults that cut bytes: after_bytes says where.
CUT_FAULTS = ("reset_mid_body", "truncate_body", "reset_mid_request")
RULE_KEYS = {"name", "path", "query", "method", "count", "delay_ms", "status", "retry_after",
             "body", "s3_error", "fault", "after_bytes"}
# Not relayed in either direction.  Host is relayed: SigV4 signs it.  Expect is
# answered by the proxy itself, which has the whole body before it asks upstream.
HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
               "proxy-authorization", "te", "trailer", "trailers", "transfer-encoding",
               "upgrade", "expect"}
# S3 error codes a rule's "s3_error" may name: status and message as S3 sends them.
S3_ERRORS = {
    "SlowDown": (503, "Please reduce your request rate."),
    "ServiceUnavailable": (503, "Service is unable to handle request."),
    "InternalError": (500, "We encountered an internal error. Please try again."),
    "AccessDenied": (403, "Access Denied"),
    "RequestTimeout": (400, "Your socket connection to the server was not read from or "
                            "written to within the timeout period."),
    "PreconditionFailed": (412, "At least one of the pre-conditions you specified did not "
                                "hold"),
    "NoSuchKey": (404, "The specified key does not exist."),
}


RELAY_PIPE_BYTES = 1 << 20  # the pipe a relayed body passes through (Linux's default maximum)
RELAY_WAIT_MS = 60000  # as long as the upstream connection's own timeout


def fd_splice(src, dst, count, event):
    """os.splice of up to `count` bytes, waiting for `event` on the socket end while
    it would block (http.client's sockets have timeouts, so are non-blocking);
    0 at end of file.  A client gone raises (EPIPE, ECONNRESET) as sendall would."""
    sock_fd = src if event == select.POLLIN else dst
    poller = None
    while True:
        try:
            return os.splice(src, dst, count, flags=os.SPLICE_F_MOVE)
        except BlockingIOError:
            if poller is None:
                poller = select.poll()
                poller.register(sock_fd, event)
            if not poller.poll(RELAY_WAIT_MS):
                raise TimeoutError("relay: no progress in %d ms" % RELAY_WAIT_MS)


def s3_error_xml(code, message, extra=None):
    """An S3 error document; `extra` adds elements after Message (XML-escaped)."""
    def esc(text):
        return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    more = "".join("<%s>%s</%s>" % (k, esc(v), k) for k, v in (extra or {}).items())
    return ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code>'
            '<Message>%s</Message>%s</Error>' % (code, esc(message), more))


S3_403_BODY = s3_error_xml("AccessDenied", "Access Denied")


class ServeError(RuntimeError):
    """nginx or the proxy could not start, or a rule is malformed."""


def find_nginx():
    """Path of the nginx binary ($SL_NGINX if set), or None."""
    if "SL_NGINX" in os.environ:
        p = os.environ["SL_NGINX"]
        return p if os.access(p, os.X_OK) else None
    for p in NGINX_CANDIDATES:
        if os.access(p, os.X_OK):
            return p
    return shutil.which("nginx")


# ---------------------------------------------------------------------------
# rules


def rule_check(rule, index):
    """Return a normalised copy of one rule dict, or raise ServeError saying what is wrong."""
    where = "rule %d" % index
    if not isinstance(rule, dict):
        raise ServeError("%s: not a JSON object: %r" % (where, rule))
    unknown = set(rule) - RULE_KEYS
    if unknown:
        raise ServeError("%s: unknown keys %s (known: %s)"
                         % (where, sorted(unknown), sorted(RULE_KEYS)))
    r = {"path": "*", "count": -1}
    r.update(rule)
    for k in ("path", "query"):
        if k in r and not isinstance(r[k], str):
            raise ServeError("%s: %s must be a glob string" % (where, k))
    methods = r.get("method", list(ALL_METHODS))
    methods = [methods] if isinstance(methods, str) else methods
    if not isinstance(methods, list) or not methods or not set(methods) <= set(ALL_METHODS):
        raise ServeError("%s: method must be one of %s or a list of them, not %r"
                         % (where, list(ALL_METHODS), r.get("method")))
    if not isinstance(r["count"], int) or r["count"] < -1:
        raise ServeError("%s: count must be -1 (always) or >= 0, not %r" % (where, r["count"]))
    for k in ("delay_ms", "after_bytes", "retry_after"):
        if k in r and (not isinstance(r[k], (int, float)) or r[k] < 0):
            raise ServeError("%s: %s must be a number >= 0, not %r" % (where, k, r[k]))
    if "s3_error" in r:
        if r["s3_error"] not in S3_ERRORS:
            raise ServeError("%s: s3_error %r is not one of %s"
                             % (where, r["s3_error"], sorted(S3_ERRORS)))
        if "body" in r or "fault" in r:
            raise ServeError("%s: s3_error goes without body or fault" % where)
        r.setdefault("status", S3_ERRORS[r["s3_error"]][0])
    r["_methods"] = tuple(methods)
    if "status" in r and "fault" in r:
        raise ServeError("%s: give status or fault, not both" % where)
    if "status" in r and (not isinstance(r["status"], int) or not 100 <= r["status"] <= 599):
        raise ServeError("%s: status must be an HTTP status code, not %r" % (where, r["status"]))
    if "fault" in r and r["fault"] not in FAULTS:
        raise ServeError("%s: fault %r is not one of %s" % (where, r["fault"], list(FAULTS)))
    if not ({"status", "fault", "delay_ms"} & set(r)):
        raise ServeError("%s: needs status, fault or delay_ms" % where)
    if ("retry_after" in r or "body" in r) and "status" not in r:
        raise ServeError("%s: retry_after and body go with status" % where)
    if "after_bytes" in r and r.get("fault") not in CUT_FAULTS:
        raise ServeError("%s: after_bytes goes with %s" % (where, " or ".join(CUT_FAULTS)))
    r["remaining"] = r["count"]
    return r


def rules_parse(payload):
    """Accept a rule list or {"rules": [...], "delay_ms": N}; return (rules, delay_ms or None)."""
    delay = None
    if isinstance(payload, dict):
        extra = set(payload) - {"rules", "delay_ms"}
        if extra:
            raise ServeError("unknown keys %s (expected rules, delay_ms)" % sorted(extra))
        delay = payload.get("delay_ms")
        if delay is not None and (not isinstance(delay, (int, float)) or delay < 0):
            raise ServeError("delay_ms must be a number >= 0, not %r" % (delay,))
        payload = payload.get("rules", None)
        if payload is None:
            return None, delay
    if not isinstance(payload, list):
        raise ServeError("rules must be a JSON list of objects")
    return [rule_check(r, i) for i, r in enumerate(payload)], delay


# ---------------------------------------------------------------------------
# the proxy


class ClientGone(Exception):
    """The client closed its connection, or a fault closed it on purpose."""


class Request:
    """One parsed request line and its headers (names lower-cased); `body` is None
    until request_body_read."""

    def __init__(self, method, target, version, headers):
        self.method = method
        self.target = target
        self.path, _, self.query = target.partition("?")
        self.version = version
        self.headers = headers
        self.body = None

    def is_chunked(self):
        return "chunked" in self.headers.get("transfer-encoding", "").lower()

    def has_body(self):
        return self.is_chunked() or int(self.headers.get("content-length", "0") or 0) > 0

    def wants_continue(self):
        return (self.headers.get("expect", "").lower() == "100-continue"
                and self.version == "HTTP/1.1" and self.has_body())

    def wants_close(self):
        conn = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" not in conn
        return "close" in conn


def request_read(rfile):
    """Read one request's line and headers from a buffered socket file; None at a
    clean EOF.  The body is left for request_body_read."""
    line = rfile.readline(65537)
    while line in (b"\r\n", b"\n"):  # tolerate blank lines between requests
        line = rfile.readline(65537)
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3:
        raise ValueError("bad request line %r" % line[:100])
    headers = {}
    while True:
        h = rfile.readline(65537)
        if not h:
            raise ClientGone()
        if h in (b"\r\n", b"\n"):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return Request(parts[0].upper(), parts[1], parts[2].upper(), headers)


def request_body_read(rfile, req):
    """Read the body (Content-Length or chunked) into req.body."""
    if not req.is_chunked():
        n = int(req.headers.get("content-length", "0") or 0)
        req.body = rfile.read(n) if n > 0 else b""
        if len(req.body) < n:
            raise ClientGone()
        return
    parts = []
    while True:
        line = rfile.readline(65537)
        if not line:
            raise ClientGone()
        size = int(line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            break
        data = rfile.read(size)
        if len(data) < size or rfile.readline(65537) not in (b"\r\n", b"\n"):
            raise ClientGone()
        parts.append(data)
    while rfile.readline(65537) not in (b"\r\n", b"\n", b""):  # trailers
        pass
    req.body = b"".join(parts)


class Proxy:
    """Threaded HTTP/1.1 proxy in front of `upstream` (host, port), with fault rules.

    `methods`: those relayed (others get 405); nginx's proxy relays GET and HEAD,
    s3rver's all of ALL_METHODS.  `verifier`: a sigv4.Verifier; when given, a request
    it refuses gets its S3 error from the proxy, before any rule or the upstream."""

    def __init__(self, upstream, delay_ms=0, rules=None, log_limit=100000,
                 methods=READ_METHODS, verifier=None):
        self.upstream = upstream
        self.methods = tuple(methods)
        self.verifier = verifier
        self.lock = threading.Lock()
        self.start_delay_ms = delay_ms
        self.start_rules = list(rules or [])
        self.rules = []
        self.delay_ms = delay_ms
        self.entries = []
        self.log_limit = log_limit
        self.conns = set()
        self.n_conns = 0
        self.n_upstream = 0  # upstream connections opened
        self.stopping = threading.Event()
        self.t0 = time.monotonic()
        self.set_rules(self.start_rules, delay_ms)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self.accept_loop, name="proxy-accept", daemon=True)

    # -- control ----------------------------------------------------------

    def set_rules(self, rules, delay_ms=None):
        """Replace the rules (counts re-armed); change the default delay if given."""
        parsed, delay = rules_parse({"rules": rules, "delay_ms": delay_ms})
        with self.lock:
            if parsed is not None:
                self.rules = parsed
            if delay is not None:
                self.delay_ms = delay

    def rules_view(self):
        with self.lock:
            return {"delay_ms": self.delay_ms,
                    "rules": [{k: v for k, v in r.items() if not k.startswith("_")}
                              for r in self.rules]}

    def reset(self):
        """Back to the start: start rules re-armed, start delay, empty log."""
        self.set_rules(self.start_rules, self.start_delay_ms)
        with self.lock:
            self.entries = []

    def log(self):
        """Copies of the log entries, oldest first (keys starting with _ are private)."""
        with self.lock:
            return [{k: v for k, v in e.items() if not k.startswith("_")} for e in self.entries]

    def clear_log(self):
        with self.lock:
            self.entries = []

    # -- lifecycle --------------------------------------------------------

    def start(self):
        self.thread.start()

    def stop(self):
        self.stopping.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            conns = list(self.conns)
        for c in conns:  # wakes threads blocked in recv (hang, keep-alive wait)
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(5)

    def accept_loop(self):
        while not self.stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.n_conns += 1
                conn_id = self.n_conns
                self.conns.add(sock)
            threading.Thread(target=self.serve_conn, args=(sock, conn_id),
                             name="proxy-conn-%d" % conn_id, daemon=True).start()

    # -- one connection ---------------------------------------------------

    def serve_conn(self, sock, conn_id):
        rfile = sock.makefile("rb")
        upstream = None
        abort = False
        try:
            while not self.stopping.is_set():
                req = request_read(rfile)
                if req is None:
                    break
                if req.wants_continue():
                    sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                if not req.path.startswith(CONTROL_PREFIX) and self.cut_request(
                        sock, rfile, req, conn_id):
                    abort = True
                    break
                request_body_read(rfile, req)
                if req.path.startswith(CONTROL_PREFIX):
                    keep = self.control(sock, req)
                else:
                    keep, upstream, abort = self.handle(sock, req, conn_id, upstream)
                if not keep or req.wants_close():
                    break
        except (ClientGone, OSError, ValueError):
            pass
        finally:
            if upstream is not None:
                upstream.close()
            rfile.close()
            with self.lock:
                self.conns.discard(sock)
            if not abort:
                try:
                    sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            sock.close()

    def match(self, req, early=False):
        """The rule for this request (its remaining count taken), its index and the delay.
        `early`: before the body is read, only reset_mid_request rules (which the
        match after the body leaves out)."""
        with self.lock:
            for i, r in enumerate(self.rules):
                if req.method not in r["_methods"]:
                    continue
                if early != (r.get("fault") == "reset_mid_request"):
                    continue
                if not fnmatch.fnmatchcase(req.path, r["path"]):
                    continue
                if "query" in r and not fnmatch.fnmatchcase(req.query, r["query"]):
                    continue
                if r["remaining"] == 0:
                    continue
                if r["remaining"] > 0:
                    r["remaining"] -= 1
                return r, i, r.get("delay_ms", self.delay_ms)
            return None, None, self.delay_ms

    def cut_request(self, sock, rfile, req, conn_id):
        """A reset_mid_request rule for `req`: read `after_bytes` of its body (default
        half; at most all but one byte), then reset the connection: nothing goes
        upstream.  True when one applied."""
        if req.method not in self.methods:
            return False
        rule, index, delay = self.match(req, early=True)
        if rule is None:
            return False
        entry = self.log_add(req, conn_id, rule, index)
        entry["_start"] = time.monotonic()
        if delay and self.stopping.wait(delay / 1000.0):
            return True
        total = int(req.headers.get("content-length", "0") or 0) if not req.is_chunked() \
            else 1 << 62
        limit = int(rule.get("after_bytes", total // 2 if not req.is_chunked() else 0))
        limit = max(0, min(limit, total - 1))
        got = 0
        while got < limit:
            block = rfile.read1(min(65536, limit - got)) if hasattr(rfile, "read1") \
                else rfile.read(min(65536, limit - got))
            if not block:
                break
            got += len(block)
        with self.lock:
            entry["req_bytes"] = got
        self.log_answer(entry, None)
        self.reset_socket(sock)
        return True

    def log_add(self, req, conn_id, rule, index):
        entry = {"seq": 0, "conn": conn_id, "method": req.method, "path": req.path,
                 "query": req.query or None, "range": req.headers.get("range"),
                 "req_bytes": len(req.body or b""), "status": None, "bytes": 0,
                 "rule": None if rule is None else rule.get("name", index),
                 "action": None, "t": round(time.monotonic() - self.t0, 4), "ms": None,
                 "upstream_status": None, "upstream_conn": None}
        if rule is not None:
            entry["action"] = (rule.get("fault") or ("status" if "status" in rule else "delay"))
        with self.lock:
            entry["seq"] = len(self.entries)
            if len(self.entries) < self.log_limit:
                self.entries.append(entry)
        return entry

    def handle(self, sock, req, conn_id, upstream):
        """Answer one proxied request; return (keep_alive, upstream, aborted)."""
        refusal = None
        if self.verifier is not None and req.method in self.methods:
            refusal = self.verifier.check(req.method, req.target, req.headers, req.body)
        if refusal is None:
            rule, index, delay = self.match(req)
        else:
            rule, index, delay = None, None, self.delay_ms
        entry = self.log_add(req, conn_id, rule, index)
        entry["_start"] = time.monotonic()
        try:
            if delay:
                if self.stopping.wait(delay / 1000.0):
                    return False, upstream, False
            if req.method not in self.methods:
                self.reply(sock, req, entry, 405, {"Allow": ", ".join(self.methods)},
                           b"method not allowed\n")
                return True, upstream, False
            if refusal is not None:
                entry["action"] = "sigv4"
                status, code, message, extra = refusal
                self.reply(sock, req, entry, status, {},
                           s3_error_xml(code, message, extra).encode(), "application/xml")
                return True, upstream, False
            fault = rule.get("fault") if rule else None
            if rule is not None and "status" in rule:
                self.reply_status(sock, req, entry, rule)
                return True, upstream, False
            if fault == "drop_connection":
                return False, upstream, False
            if fault == "hang":
                self.hang(sock)
                return False, upstream, False
            return self.forward(sock, req, entry, fault, rule, upstream)
        finally:
            self.log_answer(entry, entry.get("status"))

    def log_answer(self, entry, status, n_bytes=None):
        """Fill in what is about to be sent, before it is, so a client that has its
        answer finds the log entry complete.  `ms` runs from the request to the status
        line (or to the close, when none is sent)."""
        with self.lock:
            entry["status"] = status
            if n_bytes is not None:
                entry["bytes"] = n_bytes
            if "_start" in entry:
                entry["ms"] = round((time.monotonic() - entry.pop("_start")) * 1000.0, 1)

    def reply(self, sock, req, entry, status, headers, body, content_type="text/plain"):
        head = ["HTTP/1.1 %d %s" % (status, STATUS_REASONS.get(status, "Error"))]
        head += ["%s: %s" % kv for kv in headers.items()]
        head += ["Content-Length: %d" % len(body), "Content-Type: %s" % content_type, "", ""]
        out = "\r\n".join(head).encode("latin-1")
        if req.method != "HEAD":
            out += body
        self.log_answer(entry, status, 0 if req.method == "HEAD" else len(body))
        sock.sendall(out)

    def reply_status(self, sock, req, entry, rule):
        status = rule["status"]
        headers = {}
        if "retry_after" in rule:
            headers["Retry-After"] = str(int(rule["retry_after"]))
        content_type = "text/plain"
        if "body" in rule:
            body = str(rule["body"]).encode()
        elif "s3_error" in rule:
            code = rule["s3_error"]
            body = s3_error_xml(code, S3_ERRORS[code][1]).encode()
            content_type = "application/xml"
        elif status == 403:
            body = S3_403_BODY.encode()
            content_type = "application/xml"
        else:
            body = ("%d %s (sluice test proxy rule)\n"
                    % (status, STATUS_REASONS.get(status, "Error"))).encode()
        self.reply(sock, req, entry, status, headers, body, content_type)

    def hang(self, sock):
        """Never answer; return once the client closes or the proxy stops."""
        while not self.stopping.is_set():
            r, _, _ = select.select([sock], [], [], 0.2)
            if r:
                try:
                    if not sock.recv(65536):
                        return
                except OSError:
                    return

    def upstream_open(self):
        conn = http.client.HTTPConnection(self.upstream[0], self.upstream[1], timeout=60)
        with self.lock:
            self.n_upstream += 1
            conn.sl_number = self.n_upstream
        return conn

    def upstream_request(self, upstream, req, drop_range):
        """Send `req` upstream; return (connection, response)."""
        headers = {k: v for k, v in req.headers.items() if k not in HOP_HEADERS}
        if drop_range:
            headers.pop("range", None)
            headers.pop("if-range", None)
        if req.is_chunked():
            headers["content-length"] = str(len(req.body))
        if req.method in ("PUT", "POST") and upstream is not None:
            # s3rver (through s3rver_run.cjs) never answers a request with a
            # body on a kept-alive connection: such requests go on a fresh one.
            upstream.close()
            upstream = None
        for attempt in (0, 1):  # a kept-alive upstream connection may have timed out
            if upstream is None:
                upstream = self.upstream_open()
            try:
                upstream.request(req.method, req.target, body=req.body or None,
                                 headers=headers)
                return upstream, upstream.getresponse()
            except (http.client.HTTPException, OSError):
                upstream.close()
                upstream = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def forward(self, sock, req, entry, fault, rule, upstream):
        """Relay the upstream's answer, or break it as `fault` says."""
        try:
            upstream, resp = self.upstream_request(upstream, req, fault == "full_200")
        except (http.client.HTTPException, OSError) as e:
            self.reply(sock, req, entry, 502, {}, ("upstream: %s\n" % e).encode())
            return True, None, False
        with self.lock:
            entry["upstream_status"] = resp.status
            entry["upstream_conn"] = upstream.sl_number
        if fault == "reset_before_answer":  # the upstream has done it; the client hears nothing
            resp.read()
            upstream.close()
            self.log_answer(entry, None)
            self.reset_socket(sock)
            return False, None, True
        body = b""
        length = resp.getheader("content-length")
        bodiless = req.method == "HEAD" or resp.status in (204, 304)
        if not bodiless and length is None:  # a chunked answer goes on with Content-Length
            body = resp.read()
            length = str(len(body))
        head = ["HTTP/1.1 %d %s" % (resp.status, resp.reason)]
        head += ["%s: %s" % (k, v) for k, v in resp.getheaders() if k.lower() not in HOP_HEADERS
                 and k.lower() != "content-length"]
        if length is not None:
            head.append("Content-Length: %s" % length)
        head += ["", ""]
        head_bytes = "\r\n".join(head).encode("latin-1")
        total = int(length or 0) if not bodiless else 0
        if fault in ("reset_mid_body", "truncate_body") and total == 0:
            # No body to cut (a PUT's answer): cut inside the status line and headers.
            resp.read()
            upstream.close()
            cut = int(rule.get("after_bytes", len("HTTP/1.1 2")))
            cut = max(0, min(cut, len(head_bytes) - 1))
            self.log_answer(entry, None, 0)
            sock.sendall(head_bytes[:cut])
            if fault == "reset_mid_body":
                self.reset_socket(sock)
                return False, None, True
            return False, None, False
        self.log_answer(entry, resp.status)
        sock.sendall(head_bytes)
        limit = total
        if fault in ("reset_mid_body", "truncate_body"):
            limit = int(rule.get("after_bytes", total // 2))
            limit = max(0, min(limit, total - 1))
        sent = self.relay(sock, resp, body, limit, entry)
        if sent < total:  # a fault cut the body: close without reading the rest
            resp.close()
            upstream.close()
            if fault == "reset_mid_body":
                self.reset_socket(sock)
                return False, None, True
            return False, None, False
        # ... nor anything after one (see upstream_request).
        if resp.will_close or req.method in ("PUT", "POST"):
            upstream.close()
            upstream = None
        return True, upstream, False

    def relay(self, sock, resp, body, limit, entry):
        """Send at most `limit` body bytes (from `body`, else from `resp`); return bytes sent.
        A body still upstream goes socket to pipe to socket (splice) without passing
        through Python: the proxy's relay then costs about what a proxy in C would,
        so the benchmarks' floors through it measure the latency, not this script."""
        if body:
            block = body[:limit]
            with self.lock:
                entry["bytes"] = len(block)
            sock.sendall(block)
            return len(block)
        sent = 0
        if limit > 0:  # what http.client buffered past the headers goes first
            block = resp.fp.read1(min(65536, limit))
            if block:
                with self.lock:
                    entry["bytes"] = len(block)
                sock.sendall(block)
                sent = len(block)
        if 0 < sent < limit:
            sent = self.splice_body(sock, resp, sent, limit, entry)
        if sent == limit:
            # Read past http.client: tell it the body is over, as its own read
            # would at the end, or the kept-alive connection could not be reused.
            resp.close()
        return sent

    def splice_body(self, sock, resp, sent, limit, entry):
        """Move the body's bytes `sent` to `limit` from the upstream to the client
        through a pipe; return the bytes sent in all."""
        src, dst = resp.fp.fileno(), sock.fileno()
        pipe_r, pipe_w = os.pipe()
        try:
            try:
                fcntl.fcntl(pipe_w, fcntl.F_SETPIPE_SZ, RELAY_PIPE_BYTES)
            except OSError:
                pass  # the default 64 KiB pipe works, in more calls
            while sent < limit:
                got = fd_splice(src, pipe_w, min(RELAY_PIPE_BYTES, limit - sent), select.POLLIN)
                if got == 0:  # the upstream closed early: the caller sees a short body
                    break
                sent += got
                with self.lock:  # before the client has them, as the log's readers expect
                    entry["bytes"] = sent
                left = got
                while left:
                    left -= fd_splice(pipe_r, dst, left, select.POLLOUT)
        finally:
            os.close(pipe_r)
            os.close(pipe_w)
        return sent

    @staticmethod
    def reset_socket(sock):
        """Abort with an RST once what was sent has left (loopback: at once)."""
        deadline = time.monotonic() + 1.0
        tiocoutq = 0x5411
        buf = bytearray(4)
        while time.monotonic() < deadline:
            try:
                fcntl.ioctl(sock.fileno(), tiocoutq, buf)
            except OSError:
                break
            if struct.unpack("i", buf)[0] == 0:
                break
            time.sleep(0.005)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    # -- control endpoints -----------------------------------------------

    def control(self, sock, req):
        """Answer a /__proxy/ request; return keep-alive."""
        status, out = 200, None
        try:
            key = (req.method, req.path)
            if key == ("GET", "/__proxy/rules"):
                out = self.rules_view()
            elif key == ("POST", "/__proxy/rules"):
                rules, delay = rules_parse(json.loads(req.body or b"null"))
                with self.lock:
                    if rules is not None:
                        self.rules = rules
                    if delay is not None:
                        self.delay_ms = delay
                out = self.rules_view()
            elif key == ("GET", "/__proxy/log"):
                out = self.log()
            elif key == ("DELETE", "/__proxy/log"):
                self.clear_log()
                out = []
            elif key == ("POST", "/__proxy/reset"):
                self.reset()
                out = self.rules_view()
            else:
                status, out = 404, {"error": "no control endpoint %s %s" % key}
        except (ServeError, ValueError) as e:
            status, out = 400, {"error": str(e)}
        body = (json.dumps(out) + "\n").encode()
        head = "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
            status, "OK" if status == 200 else "Error", len(body))
        sock.sendall(head.encode() + body)
        return True


# ---------------------------------------------------------------------------
# nginx


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_config(tmp, root, port, nginx):
    """nginx.conf text for a foreground, single-process server of `root` on `port`."""
    try:
        built = subprocess.run([nginx, "-V"], capture_output=True, text=True).stderr
    except OSError:
        built = ""
    temps = ["client_body_temp_path %s/body;" % tmp]
    for mod in ("proxy", "fastcgi", "uwsgi", "scgi"):
        if "--without-http_%s_module" % mod not in built:
            temps.append("%s_temp_path %s/%s;" % (mod, tmp, mod))
    user = "user root root;\n" if os.geteuid() == 0 else ""
    return """%sdaemon off;
master_process off;
worker_processes 1;
pid %s/nginx.pid;
error_log %s/error.log warn;
events { worker_connections 1024; }
http {
    access_log %s/access.log;
    %s
    default_type application/octet-stream;
    types { }
    sendfile on;
    tcp_nodelay on;
    keepalive_timeout 120s;
    keepalive_requests 1000000;
    server_tokens off;
    server {
        listen 127.0.0.1:%d;
        root %s;
        autoindex off;
        location / {
            limit_except GET HEAD { deny all; }
            try_files $uri =404;
        }
    }
}
""" % (user, tmp, tmp, tmp, "\n    ".join(temps), port, root)


def set_pdeathsig():
    """In the child: die with the parent (Linux PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def port_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Nginx:
    """nginx serving `root` read-only on 127.0.0.1:port, as a child process."""

    def __init__(self, root, nginx=None):
        self.root = os.path.realpath(root)
        self.nginx = nginx or find_nginx()
        if not self.nginx:
            raise ServeError("nginx not found (Debian: apt-get install nginx-light)")
        if not os.path.isdir(self.root):
            raise ServeError("root %s is not a directory" % root)
        self.tmp = tempfile.mkdtemp(prefix="sl-nginx-")
        self.name = "nginx"
        self.proc = None
        self.port = None

    def start(self, timeout=10.0):
        for _ in range(5):  # another process may take the free port first
            self.port = free_port()
            conf = os.path.join(self.tmp, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_config(self.tmp, self.root, self.port, self.nginx))
            errlog = open(os.path.join(self.tmp, "stderr.log"), "wb")
            self.proc = subprocess.Popen(
                [self.nginx, "-p", self.tmp + "/", "-c", conf, "-e", self.tmp + "/error.log"],
                stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog,
                preexec_fn=set_pdeathsig)
            errlog.close()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                if port_answers(self.port):
                    return
                time.sleep(0.02)
            why = self.why()
            self.stop()
            if "Address already in use" not in why:
                raise ServeError("nginx did not start on port %d: %s" % (self.port, why))
        raise ServeError("nginx: no free port after 5 tries")

    def why(self):
        text = ""
        for name in ("stderr.log", "error.log"):
            try:
                with open(os.path.join(self.tmp, name), errors="replace") as f:
                    text += f.read()
            except OSError:
                pass
        return text.strip()[-2000:] or "(no message)"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# both together

_live = set()
_live_lock = threading.Lock()


def _stop_all():
    with _live_lock:
        servers = list(_live)
    for s in servers:
        s.stop()


atexit.register(_stop_all)


class Servers:
    """A server (nginx here, s3rver in s3serve.py) and the proxy in front of it;
    stop() (or leaving `with`) ends both.  `upstream` has start(), cleanup(), port,
    proc, why() and name; `proxy_opts` go to Proxy (methods, verifier, ...)."""

    def __init__(self, upstream, delay_ms=0, rules=None, proxy=True, **proxy_opts):
        self.upstream = upstream
        self.proxy = None
        self.want_proxy = proxy
        self.proxy_opts = proxy_opts
        self.delay_ms = delay_ms
        self.rules = rules
        self.upstream_url = self.proxy_url = self.control_url = None

    # serve()'s callers name the upstream nginx.
    nginx = property(lambda self: self.upstream)
    nginx_url = property(lambda self: self.upstream_url)

    def start(self):
        with _live_lock:
            _live.add(self)
        try:
            self.upstream.start()
            if self.want_proxy:
                self.proxy = Proxy(("127.0.0.1", self.upstream.port), self.delay_ms,
                                   self.rules, **self.proxy_opts)
                self.proxy.start()
        except BaseException:
            self.stop()
            raise
        self.upstream_url = "http://127.0.0.1:%d/" % self.upstream.port
        if self.proxy is not None:
            self.proxy_url = "http://127.0.0.1:%d/" % self.proxy.port
            self.control_url = self.proxy_url + CONTROL_PREFIX.lstrip("/")
        return self

    def stop(self):
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        self.upstream.cleanup()
        with _live_lock:
            _live.discard(self)

    def set_rules(self, rules, delay_ms=None):
        self.proxy.set_rules(rules, delay_ms)

    def log(self):
        return self.proxy.log()

    def clear_log(self):
        self.proxy.clear_log()

    def reset(self):
        self.proxy.reset()

    def urls(self):
        return {self.upstream.name: self.upstream_url, "proxy": self.proxy_url,
                "control": self.control_url}

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def serve(root, delay_ms=0, rules=None, nginx=None):
    """Servers for `root`, not yet started: use as `with serve(root) as s:`."""
    return Servers(Nginx(root, nginx), delay_ms, rules)


def rules_file_load(path, delay_ms):
    """(rules, delay) from a --rules file; the command line's delay wins when not 0."""
    with open(path) as f:
        rules, file_delay = rules_parse(json.load(f))
    rules = [{k: v for k, v in r.items() if k != "remaining" and not k.startswith("_")}
             for r in rules or []]
    if file_delay is not None and not delay_ms:
        delay_ms = file_delay
    return rules, delay_ms


def cli_run(servers, prog):
    """Print the servers' URLs as one JSON line, then run until SIGTERM, SIGINT or
    SIGHUP (exit 0) or the upstream's death (exit 1); stop the servers either way."""
    def on_signal(signum, frame):
        raise SystemExit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        print(json.dumps(servers.urls()), flush=True)
        while servers.upstream.proc is not None and servers.upstream.proc.poll() is None:
            time.sleep(0.5)
        print("%s: %s exited: %s" % (prog, servers.upstream.name, servers.upstream.why()),
              file=sys.stderr)
        return 1
    finally:
        servers.stop()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="directory to serve read-only")
    ap.add_argument("--delay-ms", type=float, default=0, help="latency added to every request")
    ap.add_argument("--rules", help="JSON file: a rule list or {\"rules\": [...], \"delay_ms\": N}")
    args = ap.parse_args(argv)
    rules = []
    delay = args.delay_ms
    try:
        if args.rules:
            rules, delay = rules_file_load(args.rules, delay)
        servers = serve(args.root, delay, rules).start()
    except (ServeError, OSError, ValueError) as e:
        print("serve.py: %s" % e, file=sys.stderr)
        return 1
    return cli_run(servers, "serve.py")


if __name__ == "__main__":
    sys.exit(main())
