#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""AWS Signature Version 4 for S3 requests, standard library only: sign a
request (check_s3serve.py's second signer beside curl --aws-sigv4) and verify
one (the test proxy in serve.py, because s3rver 3.7.1 checks only that the
access key id exists and accepts any signature; tests/remote/README.md).

    headers.update(sigv4_sign("GET", "127.0.0.1:9000", "/bkt/key?x=1", {}, b"",
                              "S3RVER", "S3RVER"))
    v = Verifier({"S3RVER": "S3RVER"})
    v.check(method, target, headers, body)  # None, or (status, code, message, extra)

DESIGN: one canonicalisation serves both directions, so signer and verifier
cannot drift apart; what keeps them honest is curl, an independent signer,
whose requests check_s3serve.py sends through the verifying proxy.  The
canonical URI is the path decoded once and encoded again (RFC 3986 unreserved
and "/" kept), never encoded twice: S3's rule, unlike other AWS services.  The
canonical query decodes and re-encodes each name and value and sorts the
pairs.  `headers` are a dict with lower-case names and one value each (what
serve.py's request parser gives).
"""
import base64
import binascii
import datetime
import hashlib
import hmac
import re
import urllib.parse

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED = "UNSIGNED-PAYLOAD"
STREAMING = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
MAX_SKEW_S = 900  # S3 refuses a request dated more than 15 minutes off
HEX64 = re.compile(r"[0-9a-f]{64}")
AUTH_RE = re.compile(r"AWS4-HMAC-SHA256\s+Credential=([^,\s]+)\s*,\s*"
                     r"SignedHeaders=([^,\s]+)\s*,\s*Signature=([0-9a-f]+)\s*$")


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def canonical_uri(path):
    """The path as S3 signs it: decoded once, each byte outside RFC 3986's unreserved
    set (and "/") percent-encoded; "/" for an empty path."""
    return urllib.parse.quote(urllib.parse.unquote(path or "/"), safe="/~")


def canonical_query(query, drop=()):
    """name=value pairs of `query` (raw, as sent) re-encoded and sorted; names in `drop`
    left out (X-Amz-Signature of a presigned URL)."""
    pairs = []
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        name = urllib.parse.unquote(name)
        if name in drop:
            continue
        pairs.append((urllib.parse.quote(name, safe="~"),
                      urllib.parse.quote(urllib.parse.unquote(value), safe="~")))
    return "&".join("%s=%s" % kv for kv in sorted(pairs))


def canonical_request(method, target, headers, signed, payload_hash, drop=()):
    """The canonical request text for `target` (path?query as sent); `signed` is the
    sorted list of lower-case header names."""
    path, _, query = target.partition("?")
    lines = [method, canonical_uri(path), canonical_query(query, drop)]
    lines += ["%s:%s" % (h, " ".join(headers.get(h, "").split())) for h in signed]
    lines += ["", ";".join(signed), payload_hash]
    return "\n".join(lines)


def signing_key(secret, date, region, service):
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def string_to_sign(amz_date, scope, creq):
    return "\n".join((ALGORITHM, amz_date, scope, sha256_hex(creq.encode())))


def signature(secret, amz_date, scope, creq):
    _, region, service, _ = scope.split("/", 3)
    key = signing_key(secret, amz_date[:8], region, service)
    return hmac.new(key, string_to_sign(amz_date, scope, creq).encode(),
                    hashlib.sha256).hexdigest()


def sigv4_sign(method, host, target, headers, body, access_key, secret_key,
               region="us-east-1", service="s3", now=None, payload_hash=None):
    """Headers to add to a request so that it is signed: x-amz-date, x-amz-content-sha256
    (the body's hash unless `payload_hash` says otherwise, e.g. UNSIGNED-PAYLOAD) and
    Authorization.  Every header in `headers` is signed, with `host`."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    payload = payload_hash or sha256_hex(body or b"")
    all_headers = {k.lower(): str(v) for k, v in headers.items()}
    all_headers.update({"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload})
    signed = sorted(all_headers)
    scope = "%s/%s/%s/aws4_request" % (amz_date[:8], region, service)
    creq = canonical_request(method, target, all_headers, signed, payload)
    auth = "%s Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        ALGORITHM, access_key, scope, ";".join(signed),
        signature(secret_key, amz_date, scope, creq))
    return {"x-amz-date": amz_date, "x-amz-content-sha256": payload, "Authorization": auth}


def amz_date_parse(text):
    try:
        return datetime.datetime.strptime(text, "%Y%m%dT%H%M%SZ").replace(
            tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return None


def check_digest(method, target, headers, body):
    """S3's checks of Content-MD5, which s3rver 3.7.1 ignores: a value that is
    not the base64 of 16 bytes is 400 InvalidDigest, one that is not the MD5 of
    the body 400 BadDigest; DeleteObjects (POST ?delete) without it (or an
    x-amz-checksum-* header) is 400 InvalidRequest.  None when all is well."""
    md5 = headers.get("content-md5")
    names = {urllib.parse.unquote(p.partition("=")[0])
             for p in target.partition("?")[2].split("&")}
    if md5 is None:
        if (method == "POST" and "delete" in names
                and not any(h.startswith("x-amz-checksum-") for h in headers)):
            return (400, "InvalidRequest",
                    "Missing required header for this request: Content-MD5", {})
        return None
    try:
        given = base64.b64decode(md5.strip(), validate=True)
    except (binascii.Error, ValueError):
        given = b""
    if len(given) != 16:
        return (400, "InvalidDigest", "The Content-MD5 you specified was invalid.",
                {"Content-MD5": md5})
    computed = hashlib.md5(body or b"").digest()
    if given != computed:
        return (400, "BadDigest", "The Content-MD5 you specified did not match what we "
                "received.", {"ExpectedDigest": given.hex(),
                              "CalculatedDigest": base64.b64encode(computed).decode()})
    return None


class Verifier:
    """Checks SigV4 signatures (Authorization header or presigned query) as S3 does,
    for the keys in `keys` (access key id -> secret) and one region."""

    def __init__(self, keys, region="us-east-1", service="s3", anonymous=False):
        self.keys = dict(keys)
        self.region = region
        self.service = service
        self.anonymous = anonymous

    def check(self, method, target, headers, body, now=None):
        """None if the request may go on; else (status, S3 error code, message, extra
        dict of further XML elements, e.g. the canonical request a mismatch was
        computed from).  After the signature, the body's Content-MD5 as S3 checks
        it (check_digest)."""
        return (self.check_auth(method, target, headers, body, now)
                or check_digest(method, target, headers, body))

    def check_auth(self, method, target, headers, body, now=None):
        now = now or datetime.datetime.now(datetime.timezone.utc)
        query = target.partition("?")[2]
        names = {urllib.parse.unquote(p.partition("=")[0]) for p in query.split("&")}
        auth = headers.get("authorization")
        if auth is not None and "X-Amz-Algorithm" in names:
            return (400, "InvalidArgument", "Only one auth mechanism allowed", {})
        if auth is not None:
            return self.check_header(method, target, headers, body, auth, now)
        if "X-Amz-Algorithm" in names:
            return self.check_presigned(method, target, headers, now)
        if "Signature" in names or "AWSAccessKeyId" in names:
            return (400, "InvalidRequest", "The authorization mechanism you have provided "
                    "is not supported. Please use AWS4-HMAC-SHA256.", {})
        if self.anonymous:
            return None
        return (403, "AccessDenied", "Access Denied", {})

    def check_header(self, method, target, headers, body, auth, now):
        if not auth.startswith(ALGORITHM + " "):
            return (400, "InvalidRequest", "The authorization mechanism you have provided "
                    "is not supported. Please use AWS4-HMAC-SHA256.", {})
        m = AUTH_RE.match(auth)
        if not m:
            return (400, "AuthorizationHeaderMalformed",
                    "The authorization header is malformed: %s" % auth, {})
        credential, signed, provided = m.group(1), m.group(2).split(";"), m.group(3)
        payload = headers.get("x-amz-content-sha256")
        if payload is None:
            return (400, "InvalidRequest",
                    "Missing required header for this request: x-amz-content-sha256", {})
        if payload not in (UNSIGNED, STREAMING) and not HEX64.fullmatch(payload):
            return (400, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD, or a valid sha256 value.", {})
        if HEX64.fullmatch(payload) and payload != sha256_hex(body or b""):
            return (400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' "
                    "header does not match what was computed.",
                    {"ClientComputedContentSHA256": payload,
                     "S3ComputedContentSHA256": sha256_hex(body or b"")})
        amz_date = headers.get("x-amz-date")
        return self.check_signature(method, target, headers, credential, signed, provided,
                                    amz_date, payload, now, ())

    def check_presigned(self, method, target, headers, now):
        params = dict(urllib.parse.parse_qsl(target.partition("?")[2], keep_blank_values=True))
        need = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
                "X-Amz-SignedHeaders", "X-Amz-Signature")
        if any(k not in params for k in need) or params["X-Amz-Algorithm"] != ALGORITHM:
            return (400, "AuthorizationQueryParametersError", "Query-string authentication "
                    "version 4 requires the %s parameters." % ", ".join(need), {})
        issued = amz_date_parse(params["X-Amz-Date"])
        try:
            expires = int(params["X-Amz-Expires"])
        except ValueError:
            expires = -1
        if issued is None or not 0 <= expires <= 604800:
            return (400, "AuthorizationQueryParametersError",
                    "X-Amz-Date or X-Amz-Expires is malformed", {})
        if now > issued + datetime.timedelta(seconds=expires):
            return (403, "AccessDenied", "Request has expired",
                    {"X-Amz-Expires": str(expires)})
        return self.check_signature(method, target, headers, params["X-Amz-Credential"],
                                    params["X-Amz-SignedHeaders"].split(";"),
                                    params["X-Amz-Signature"], params["X-Amz-Date"],
                                    UNSIGNED, None, ("X-Amz-Signature",))

    def check_signature(self, method, target, headers, credential, signed, provided,
                        amz_date, payload, now, drop):
        """The checks common to both mechanisms; `now` None skips the clock-skew test
        (a presigned URL's own expiry replaces it)."""
        parts = credential.split("/")
        if len(parts) != 5 or parts[4] != "aws4_request":
            return (400, "AuthorizationHeaderMalformed",
                    "The credential %s is malformed" % credential, {})
        access_key, date, region, service = parts[:4]
        if access_key not in self.keys:
            return (403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not "
                    "exist in our records.", {"AWSAccessKeyId": access_key})
        if region != self.region or service != self.service:
            return (400, "AuthorizationHeaderMalformed", "The authorization header is "
                    "malformed; the region '%s' or service '%s' is wrong; expecting '%s', "
                    "'%s'" % (region, service, self.region, self.service),
                    {"Region": self.region})
        when = amz_date_parse(amz_date)
        if when is None or date != amz_date[:8]:
            return (403, "AccessDenied", "AWS authentication requires a valid x-amz-date "
                    "whose date matches the credential scope", {})
        if now is not None and abs((now - when).total_seconds()) > MAX_SKEW_S:
            return (403, "RequestTimeTooSkewed", "The difference between the request time "
                    "and the current time is too large.", {"RequestTime": amz_date})
        if "host" not in signed or signed != sorted(signed):
            return (400, "AuthorizationHeaderMalformed", "SignedHeaders must be sorted and "
                    "include host: %s" % ";".join(signed), {})
        creq = canonical_request(method, target, headers, signed, payload, drop)
        scope = "/".join(parts[1:])
        expected = signature(self.keys[access_key], amz_date, scope, creq)
        if hmac.compare_digest(expected, provided):
            return None
        return (403, "SignatureDoesNotMatch", "The request signature we calculated does not "
                "match the signature you provided. Check your key and signing method.",
                {"AWSAccessKeyId": access_key,
                 "StringToSign": string_to_sign(amz_date, scope, creq),
                 "CanonicalRequest": creq})
