# SPDX-License-Identifier: MIT
"""read_many against single reads; several Python threads on one Array."""

import numpy as np
import pytest

import sluice
from conftest import in_threads, make_array, random_values
from test_select import random_selection


@pytest.mark.parametrize("shards", [None, (12, 20)])
def test_read_many_matches_single_reads(tmp_path, rng, shards):
    values = random_values(rng, (48, 60), "float64")
    path = str(tmp_path / "r.zarr")
    a = sluice.create(path, shape=values.shape, chunks=(6, 10), shards=shards, dtype="float64")
    a[...] = values
    b = sluice.open(path)
    sels = [random_selection(rng, values.shape) for _ in range(60)]
    sels += [np.s_[0:0], np.s_[3, 4], np.s_[...], np.s_[0:6, 0:10], np.s_[0:6, 0:10]]
    many = b.read_many(sels)
    assert len(many) == len(sels)
    for sel, got in zip(sels, many):
        want = values[sel]
        assert np.shape(got) == np.shape(want), sel
        np.testing.assert_array_equal(got, want, err_msg=repr(sel))
        np.testing.assert_array_equal(got, b[sel])
    assert b.read_many([]) == []


def test_read_many_bad_arguments(tmp_path):
    a = make_array(str(tmp_path / "x.zarr"), np.zeros((4, 4), "uint8"), (2, 2))
    for bad in [None, 3, "ab", b"ab"]:
        with pytest.raises(TypeError):
            a.read_many(bad)
    with pytest.raises(IndexError):
        a.read_many([np.s_[0], np.s_[9]])
    with pytest.raises(TypeError):
        a.read_many([np.s_[0], [1, 2]])


def test_read_many_reports_a_corrupt_chunk(tmp_path):
    v = np.arange(100, dtype="int32").reshape(10, 10)
    path = tmp_path / "c.zarr"
    make_array(str(path), v, (5, 5), zarr_format=2)
    (path / "1.0").write_bytes(b"this is not a zstd frame")
    b = sluice.open(str(path))
    np.testing.assert_array_equal(b.read_many([np.s_[0:5, :]])[0], v[0:5])
    with pytest.raises(sluice.Error) as e:
        b.read_many([np.s_[0:5, :], np.s_[5:, 0:5]])
    assert e.value.code in ("ECORRUPT", "EIO"), e.value.code
    assert "1.0" in str(e.value) or e.value.chunk == (1, 0), str(e.value)
    with pytest.raises(sluice.Error):
        b[7, 2]


def test_threads_share_one_array(tmp_path, rng):
    values = random_values(rng, (64, 64), "uint16")
    a = make_array(str(tmp_path / "t.zarr"), values, (8, 16))
    b = sluice.open(a.url)

    def reader(seed):
        r = np.random.default_rng(seed)
        for _ in range(60):
            sel = random_selection(r, values.shape)
            np.testing.assert_array_equal(b[sel], values[sel])
        for got, sel in zip(b.read_many([np.s_[::3], np.s_[5:9, ::-1]]),
                            [np.s_[::3], np.s_[5:9, ::-1]]):
            np.testing.assert_array_equal(got, values[sel])

    in_threads(reader, 6)


def test_threads_write_disjoint_regions(tmp_path):
    path = str(tmp_path / "w.zarr")
    a = sluice.create(path, shape=(8, 256), chunks=(1, 64), dtype="int64", fill_value=-1)

    def writer(row):
        for k in range(4):
            a[row, k * 64:(k + 1) * 64] = row * 1000 + k

    in_threads(writer, 8)
    want = np.repeat(np.arange(8)[:, None] * 1000, 256, axis=1) + np.arange(256) // 64
    np.testing.assert_array_equal(sluice.open(path)[...], want)


def test_a_child_after_fork_reopens_its_arrays(tmp_path, rng):
    import os

    values = random_values(rng, (20, 30), "float32")
    a = make_array(str(tmp_path / "f.zarr"), values, (5, 10))
    b = sluice.open(a.url, cache="1M")
    np.testing.assert_array_equal(b[...], values)
    pid = os.fork()
    if pid == 0:  # the child: every read must work, then exit at once
        ok = False
        try:
            ok = (np.array_equal(b[...], values) and np.array_equal(b[3, 4:9], values[3, 4:9])
                  and np.array_equal(b.read_many([np.s_[::2]])[0], values[::2])
                  and b.checksum() == a.checksum())
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    np.testing.assert_array_equal(b[...], values)  # the parent's own still works
