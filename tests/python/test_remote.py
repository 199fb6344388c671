# SPDX-License-Identifier: MIT
"""Arrays over HTTP (nginx, and the fault proxy in front of it) and S3
(s3rver behind the signing proxy): reads against numpy, a failed chunk
raising or reported, never read as the fill value."""

import os
import pickle
import sys

import numpy as np
import pytest

import sluice
from conftest import make_array, random_values

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "remote"))
import serve  # noqa: E402
import s3serve  # noqa: E402


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    if serve.find_nginx() is None:
        pytest.skip("nginx is not installed")
    root = tmp_path_factory.mktemp("http")
    rng = np.random.default_rng(36)
    values = {
        "v2.zarr": random_values(rng, (40, 30), "float32"),
        "v3s.zarr": random_values(rng, (32, 32), "int16"),
    }
    make_array(str(root / "v2.zarr"), values["v2.zarr"], (8, 8), zarr_format=2)
    a = sluice.create(str(root / "v3s.zarr"), shape=(32, 32), chunks=(4, 4), shards=(16, 16),
                      dtype="int16")
    a[...] = values["v3s.zarr"]
    with serve.serve(str(root), delay_ms=0) as s:
        yield s, values


@pytest.mark.parametrize("via", ["nginx", "proxy"])
def test_http_reads_match_numpy(http, via):
    s, values = http
    base = s.nginx_url if via == "nginx" else s.proxy_url
    for name, v in values.items():
        a = sluice.open(base.rstrip("/") + "/" + name)
        np.testing.assert_array_equal(a[...], v)
        np.testing.assert_array_equal(a[3:-2:3, ::-5], v[3:-2:3, ::-5])
        got = a.read_many([np.s_[0:4], np.s_[10:20, 5:7], np.s_[-1]])
        for g, sel in zip(got, [np.s_[0:4], np.s_[10:20, 5:7], np.s_[-1]]):
            np.testing.assert_array_equal(g, v[sel])
        b = pickle.loads(pickle.dumps(a))
        np.testing.assert_array_equal(b[1], v[1])


def test_http_is_read_only(http):
    s, _ = http
    with pytest.raises(sluice.Error):
        sluice.create(s.nginx_url.rstrip("/") + "/new.zarr", shape=(4,), chunks=(2,),
                      dtype="uint8")
    with pytest.raises(sluice.Error):
        sluice.open(s.nginx_url.rstrip("/") + "/v2.zarr", mode="r+")[0] = 1


def test_http_transient_fault_is_retried(http):
    s, values = http
    s.set_rules([{"path": "*/v2.zarr/1.1", "status": 503, "count": 1}])
    try:
        a = sluice.open(s.proxy_url.rstrip("/") + "/v2.zarr", retries=3)
        np.testing.assert_array_equal(a[...], values["v2.zarr"])
    finally:
        s.set_rules([])


@pytest.mark.parametrize("fault", [{"status": 500}, {"fault": "reset_mid_body"},
                                   {"fault": "truncate_body"}])
def test_http_failed_chunk_raises_never_fill(http, fault):
    s, values = http
    s.set_rules([dict({"path": "*/v2.zarr/2.1"}, **fault)])
    try:
        a = sluice.open(s.proxy_url.rstrip("/") + "/v2.zarr", retries=1)
        np.testing.assert_array_equal(a[0:8], values["v2.zarr"][0:8])  # other chunks read
        with pytest.raises(sluice.Error) as e:
            a[16:24, 8:16]
        assert e.value.code not in (None, "OK")
        with pytest.raises(sluice.Error):
            a.read_many([np.s_[0:8], np.s_[20, 10]])
    finally:
        s.set_rules([])


def test_http_failed_chunk_in_a_run_report(http, tmp_path):
    s, values = http
    s.set_rules([{"path": "*/v2.zarr/4.0", "status": 500}])
    try:
        g = sluice.Graph()
        g.put(g.get(s.proxy_url.rstrip("/") + "/v2.zarr"), tmp_path / "copy.zarr", name="copy")
        report = sluice.run(g, retries=0)
    finally:
        s.set_rules([])
    assert not report.ok and [tuple(f["chunk"]) for f in report.failed] == [(4, 0)]
    status = report.status("copy")
    assert status[4, 0] != 0 and np.count_nonzero(status) == 1


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    why = s3serve.missing()
    if why:
        if os.environ.get("SL_REQUIRE_S3RVER") == "1":
            pytest.fail("s3rver is required (SL_REQUIRE_S3RVER=1): %s" % why)
        pytest.skip(why)
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                            "AWS_REGION", "AWS_PROFILE")}
    os.environ.update(AWS_ACCESS_KEY_ID=s3serve.ACCESS_KEY,
                      AWS_SECRET_ACCESS_KEY=s3serve.SECRET_KEY, AWS_REGION=s3serve.REGION)
    os.environ.pop("AWS_PROFILE", None)
    try:
        with s3serve.s3serve() as s:
            yield s
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_s3_write_and_read(s3, rng):
    values = random_values(rng, (24, 20), "float64")
    url = "s3://%s/py/a.zarr" % s3.bucket
    a = sluice.create(url, shape=values.shape, chunks=(5, 5), shards=(10, 10), dtype="float64",
                      endpoint=s3.proxy_url, attrs={"where": "s3"})
    a[...] = values
    a[2:7, ::3] = -1
    values[2:7, ::3] = -1
    b = sluice.open(url, endpoint=s3.proxy_url)
    assert b.shards == (10, 10) and b.attrs == {"where": "s3"}
    np.testing.assert_array_equal(b[...], values)
    np.testing.assert_array_equal(b.read_many([np.s_[::-1, 3]])[0], values[::-1, 3])
    c = pickle.loads(pickle.dumps(b))  # reopened with the same endpoint
    np.testing.assert_array_equal(c[5], values[5])


def test_s3_failed_chunk_raises(s3, rng):
    values = random_values(rng, (10, 10), "uint8")
    url = "s3://%s/py/f.zarr" % s3.bucket
    make_array(url, values, (5, 5), endpoint=s3.proxy_url, zarr_format=2)
    s3.set_rules([{"method": "GET", "path": "*/py/f.zarr/1.1", "s3_error": "InternalError"}])
    try:
        b = sluice.open(url, endpoint=s3.proxy_url, retries=1)
        np.testing.assert_array_equal(b[0:5], values[0:5])
        with pytest.raises(sluice.Error):
            b[7, 7]
    finally:
        s3.set_rules([])
    np.testing.assert_array_equal(sluice.open(url, endpoint=s3.proxy_url)[...], values)


def test_http_array_in_a_child_after_fork(http):
    s, values = http
    a = sluice.open(s.proxy_url.rstrip("/") + "/v2.zarr")
    np.testing.assert_array_equal(a[0:8], values["v2.zarr"][0:8])
    pid = os.fork()
    if pid == 0:  # the parent's I/O thread is not here: the child opens its own
        ok = False
        try:
            ok = np.array_equal(a[...], values["v2.zarr"])
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    np.testing.assert_array_equal(a[-8:], values["v2.zarr"][-8:])
