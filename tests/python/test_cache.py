# SPDX-License-Identifier: MIT
"""sluice.open(..., cache=...): reads within one chunk from kept chunks,
against numpy; writes through the Array drop what they touch; the budget
holds; threads share it."""

import pickle

import numpy as np
import pytest

import sluice
from conftest import in_threads, make_array, random_values
from test_select import random_selection


def test_cached_reads_match_numpy(tmp_path, rng):
    v = random_values(rng, (37, 29), "float32")
    make_array(str(tmp_path / "c.zarr"), v, (8, 6))
    a = sluice.open(str(tmp_path / "c.zarr"), cache="1M")
    for _ in range(300):
        sel = random_selection(rng, v.shape)
        got, want = a[sel], v[sel]
        assert type(got) is type(want) and np.shape(got) == np.shape(want), sel
        np.testing.assert_array_equal(got, want)
    for i in range(37):
        for j in range(0, 29, 5):
            assert a[i, j] == v[i, j]
    info = a.cache_info
    assert info["hits"] > 0 and info["chunks"] <= 5 * 5 and info["bytes"] <= info["budget"]
    # What a read returns is the caller's: changing it changes nothing kept.
    x = a[3:5, 1:4]
    x[...] = -1
    np.testing.assert_array_equal(a[3:5, 1:4], v[3:5, 1:4])


def test_writes_drop_what_they_touch(tmp_path):
    v = np.arange(100, dtype="int32").reshape(10, 10)
    make_array(str(tmp_path / "w.zarr"), v, (5, 5))
    a = sluice.open(str(tmp_path / "w.zarr"), mode="r+", cache=True)
    assert a[1, 1] == 11 and a[7, 7] == 77
    a[0:3, 0:3] = 0
    v[0:3, 0:3] = 0
    assert a[1, 1] == 0 and a[7, 7] == 77
    a[::3, 6] = -5
    v[::3, 6] = -5
    np.testing.assert_array_equal(np.array([[a[i, j] for j in range(10)] for i in range(10)]), v)


def test_the_budget_holds(tmp_path, rng):
    v = random_values(rng, (64, 64), "float64")
    make_array(str(tmp_path / "b.zarr"), v, (8, 8))  # 512 B chunks
    a = sluice.open(str(tmp_path / "b.zarr"), cache=2048)
    for i in range(0, 64, 8):
        for j in range(0, 64, 8):
            assert a[i + 1, j + 2] == v[i + 1, j + 2]
            assert a.cache_info["bytes"] <= 2048 and a.cache_info["chunks"] <= 4
    assert a.cache_info["misses"] == 64
    assert a[63, 63] == v[63, 63] and a.cache_info["hits"] == 1  # the last one kept


def test_threads_share_a_cache(tmp_path, rng):
    v = random_values(rng, (40, 40), "uint16")
    make_array(str(tmp_path / "t.zarr"), v, (10, 10))
    a = sluice.open(str(tmp_path / "t.zarr"), cache="4K")

    def reader(seed):
        r = np.random.default_rng(seed)
        for _ in range(400):
            i, j = (int(x) for x in r.integers(0, 40, size=2))
            assert a[i, j] == v[i, j]

    in_threads(reader, 4)


def test_cache_arguments_and_pickling(tmp_path):
    make_array(str(tmp_path / "p.zarr"), np.zeros(10, "uint8"), (5,))
    for bad, exc in [(-1, ValueError), ("lots", ValueError), (1.5, TypeError), ([], TypeError)]:
        with pytest.raises(exc):
            sluice.open(str(tmp_path / "p.zarr"), cache=bad)
    assert sluice.open(str(tmp_path / "p.zarr")).cache_info is None
    assert sluice.open(str(tmp_path / "p.zarr"), cache=0).cache_info is None
    a = pickle.loads(pickle.dumps(sluice.open(str(tmp_path / "p.zarr"), cache="1K")))
    assert a.cache_info["budget"] == 1024 and a[3] == 0
