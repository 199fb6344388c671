#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A real S3 server for the S3 store's tests: s3rver (npm, pinned in
tests/tools/package-lock.json) on 127.0.0.1 with its data in a temp dir and
its buckets made at start, and in front of it serve.py's fault-and-latency
proxy, which relays every S3 method and checks SigV4 signatures (s3rver does
not).  s3rver runs through tests/tools/s3rver_run.cjs, which closes its gaps
to S3 (suffix ranges, conditional writes, listing order, ...), or alone with
raw=True.  Standard library only; tests/remote/README.md says what s3rver
does and does not do, alone and wrapped.

    with s3serve(buckets=("sluice",)) as s:
        s.proxy_url, s.s3rver_url, s.control_url, s.bucket, s.access_key, s.secret_key
        s.set_rules([{"method": "PUT", "s3_error": "SlowDown", "count": 2}])
        s.log()

    s3serve.py [--bucket NAME]... [--delay-ms N] [--rules FILE] [--no-proxy] [--anonymous]
               [--raw]
    (prints the URLs and credentials as JSON, runs until SIGTERM)

DESIGN: s3rver runs under `node --openssl-legacy-provider`: its
ListObjectsV2 continuation tokens are DES-encrypted, which OpenSSL 3 offers
only through the legacy provider (without it a truncated listing is a 500).
It listens on port 0 and the port is read from its "listening on" line, so
no other process can take the port in between.  It dies with its parent like
serve.py's nginx (PR_SET_PDEATHSIG, atexit, SIGTERM in the CLI).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve  # noqa: E402
import sigv4  # noqa: E402

TOOLS_DIR = os.path.join(os.path.dirname(HERE), "tools")
S3RVER_BIN = os.path.join(TOOLS_DIR, "node_modules", "s3rver", "bin", "s3rver.js")
S3RVER_RUN = os.path.join(TOOLS_DIR, "s3rver_run.cjs")
ACCESS_KEY = "S3RVER"  # the one key pair s3rver knows (lib/models/account.js)
SECRET_KEY = "S3RVER"
REGION = "us-east-1"
DEFAULT_BUCKET = "sluice-test"
LISTENING_RE = re.compile(r"S3rver listening on [^\s:]+:(\d+)")


def find_node():
    """Path of node ($SL_NODE if set), or None."""
    if "SL_NODE" in os.environ:
        p = os.environ["SL_NODE"]
        return p if os.access(p, os.X_OK) else None
    return shutil.which("node") or shutil.which("nodejs")


def find_s3rver():
    """Path of s3rver's bin/s3rver.js in tests/tools/node_modules, or None."""
    return S3RVER_BIN if os.path.isfile(S3RVER_BIN) else None


def missing():
    """Why s3rver cannot run here, or None."""
    if find_node() is None:
        return "node not found (tests/deps.sh installs nodejs)"
    if find_s3rver() is None:
        return "s3rver not installed (npm ci --prefix tests/tools)"
    return None


class S3rver:
    """s3rver on 127.0.0.1 as a child process, data in a temp dir, `buckets` made at
    start; the `upstream` of serve.Servers.  `raw`: s3rver's own CLI, without
    s3rver_run.cjs's fixes."""

    def __init__(self, buckets=(DEFAULT_BUCKET,), node=None, raw=False):
        self.node = node or find_node()
        self.script = find_s3rver()
        if not self.node or not self.script:
            raise serve.ServeError(missing() or "node or s3rver not found")
        self.raw = raw
        self.buckets = list(buckets)
        self.tmp = tempfile.mkdtemp(prefix="sl-s3rver-")
        self.data = os.path.join(self.tmp, "data")
        self.logfile = os.path.join(self.tmp, "s3rver.log")
        self.name = "s3rver"
        self.proc = None
        self.port = None

    def start(self, timeout=20.0):
        if self.raw:
            argv = [self.node, "--openssl-legacy-provider", self.script, "-d", self.data,
                    "-a", "127.0.0.1", "-p", "0", "--no-vhost-buckets"]
            for b in self.buckets:
                argv += ["--configure-bucket", b]
        else:
            argv = [self.node, "--openssl-legacy-provider", S3RVER_RUN, self.data] + self.buckets
        with open(self.logfile, "wb") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT,
                                         preexec_fn=serve.set_pdeathsig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = LISTENING_RE.search(self.why())
            if m:
                self.port = int(m.group(1))
                return
            time.sleep(0.02)
        why = self.why()
        self.stop()
        raise serve.ServeError("s3rver did not start: %s" % why)

    def why(self):
        """The tail of s3rver's output (its request log, a crash's stack)."""
        try:
            with open(self.logfile, errors="replace") as f:
                return f.read()[-4000:].strip() or "(no message)"
        except OSError:
            return "(no log)"

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


class S3Servers(serve.Servers):
    """s3rver and, unless `proxy` is False, the proxy in front of it, which relays every
    S3 method and checks SigV4 for the s3rver key pair (lets unsigned requests
    through when `anonymous`)."""

    def __init__(self, buckets=(DEFAULT_BUCKET,), delay_ms=0, rules=None, proxy=True,
                 anonymous=False, raw=False, node=None, secret_key=SECRET_KEY):
        # s3rver checks no signature: the proxy's secret may be any, so a
        # test can use one no output could contain by chance.
        verifier = sigv4.Verifier({ACCESS_KEY: secret_key}, REGION, anonymous=anonymous)
        super().__init__(S3rver(buckets, node, raw), delay_ms, rules, proxy,
                         methods=serve.ALL_METHODS, verifier=verifier)
        self.buckets = list(buckets)
        self.bucket = self.buckets[0] if self.buckets else None
        self.access_key = ACCESS_KEY
        self.secret_key = secret_key
        self.region = REGION

    s3rver = property(lambda self: self.upstream)
    s3rver_url = property(lambda self: self.upstream_url)

    def urls(self):
        out = super().urls()
        out.update({"bucket": self.bucket, "buckets": self.buckets, "region": self.region,
                    "access_key": self.access_key, "secret_key": self.secret_key})
        return out


def s3serve(buckets=(DEFAULT_BUCKET,), delay_ms=0, rules=None, proxy=True, anonymous=False,
            raw=False, secret_key=SECRET_KEY):
    """S3Servers, not yet started: use as `with s3serve() as s:`."""
    return S3Servers(buckets, delay_ms, rules, proxy, anonymous, raw, secret_key=secret_key)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bucket", action="append", help="bucket to make (repeatable; default "
                    + DEFAULT_BUCKET + ")")
    ap.add_argument("--delay-ms", type=float, default=0, help="latency added to every request")
    ap.add_argument("--rules", help="JSON file: a rule list or {\"rules\": [...], \"delay_ms\": N}")
    ap.add_argument("--no-proxy", action="store_true", help="s3rver alone")
    ap.add_argument("--anonymous", action="store_true",
                    help="the proxy lets unsigned requests through")
    ap.add_argument("--raw", action="store_true", help="s3rver without s3rver_run.cjs's fixes")
    args = ap.parse_args(argv)
    rules = []
    delay = args.delay_ms
    try:
        if args.rules:
            rules, delay = serve.rules_file_load(args.rules, delay)
        servers = s3serve(args.bucket or [DEFAULT_BUCKET], delay, rules,
                          not args.no_proxy, args.anonymous, args.raw).start()
    except (serve.ServeError, OSError, ValueError) as e:
        print("s3serve.py: %s" % e, file=sys.stderr)
        return 1
    return serve.cli_run(servers, "s3serve.py")


if __name__ == "__main__":
    sys.exit(main())
