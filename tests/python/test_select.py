# SPDX-License-Identifier: MIT
"""a[sel] and a[sel] = v against numpy over random shapes, chunkings,
dtypes and selections."""

import numpy as np
import pytest

import sluice
from conftest import DTYPES, make_array, random_values


def random_slice(rng, n):
    def bound():
        r = rng.integers(0, 5)
        if r == 0:
            return None
        if r == 1:
            return int(rng.integers(-2 * n - 2, 2 * n + 3))  # out of range: clamped
        return int(rng.integers(-n - 1, n + 1))

    step = [None, 1, 1, 2, 3, -1, -2, 5, n + 1][rng.integers(0, 9)]
    if step is not None and step > n + 1:
        step = None
    return slice(bound(), bound(), step)


def random_selection(rng, shape):
    items = []
    for n in shape:
        r = rng.integers(0, 6)
        if r == 0 and n > 0:
            items.append(int(rng.integers(-n, n)))
        elif r == 1:
            items.append(slice(None))
        else:
            items.append(random_slice(rng, n))
    # Sometimes fewer items than dimensions, an Ellipsis, or a new axis.
    r = rng.integers(0, 5)
    if r == 0 and items:
        items = items[: rng.integers(0, len(items) + 1)]
    elif r == 1 and items:
        k = int(rng.integers(0, len(items) + 1))
        j = int(rng.integers(k, len(items) + 1))
        items = items[:k] + [Ellipsis] + items[j:]
    elif r == 2:
        items.insert(int(rng.integers(0, len(items) + 1)), None)
    if len(items) == 1 and rng.integers(0, 2):
        return items[0]
    return tuple(items)


def random_layout(rng):
    rank = int(rng.integers(1, 5))
    shape = tuple(int(rng.integers(0 if rng.integers(0, 12) == 0 else 1, 40 // rank + 8)) for _ in range(rank))
    chunks = tuple(int(rng.integers(1, max(2, s + 3))) for s in shape)
    return shape, chunks


@pytest.mark.parametrize("dtype", DTYPES)
def test_reads_match_numpy(tmp_path, rng, dtype):
    for trial in range(6):
        shape, chunks = random_layout(rng)
        values = random_values(rng, shape, dtype)
        fmt = 2 if trial % 3 == 2 else 3
        a = make_array(str(tmp_path / ("a%d.zarr" % trial)), values, chunks, zarr_format=fmt)
        b = sluice.open(str(tmp_path / ("a%d.zarr" % trial)))
        assert b.shape == shape and b.dtype == np.dtype(dtype) and b.chunks == chunks
        np.testing.assert_array_equal(b[...], values)
        for _ in range(40):
            sel = random_selection(rng, shape)
            want = values[sel]
            got = b[sel]
            # numpy's rule: integers in every dimension give a scalar.
            assert type(got) is type(want), (sel, type(got), type(want))
            assert got.shape == want.shape, (sel, got.shape, want.shape)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=repr(sel))
        del a


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32", "complex128", "bool"])
def test_writes_match_numpy(tmp_path, rng, dtype):
    for trial in range(5):
        shape, chunks = random_layout(rng)
        values = random_values(rng, shape, dtype)
        a = make_array(str(tmp_path / ("w%d.zarr" % trial)), values, chunks)
        b = sluice.open(str(tmp_path / ("w%d.zarr" % trial)), mode="r+")
        model = values.copy()
        for _ in range(25):
            sel = random_selection(rng, shape)
            target = model[sel]
            if rng.integers(0, 3) == 0:
                value = random_values(rng, (), dtype)[()]  # a scalar, broadcast
            else:
                value = random_values(rng, target.shape, dtype)
            model[sel] = value
            b[sel] = value
        np.testing.assert_array_equal(sluice.open(b.url)[...], model)
        del a


def test_sharded_writes_go_through_transactions(tmp_path, rng):
    values = random_values(rng, (30, 40), "uint16")
    path = str(tmp_path / "s.zarr")
    a = sluice.create(path, shape=values.shape, chunks=(4, 5), shards=(8, 10), dtype="uint16")
    a[...] = values
    a[3:17:2, ::-3] = 7
    values[3:17:2, ::-3] = 7
    b = sluice.open(path)
    assert b.shards == (8, 10) and b.chunks == (4, 5)
    np.testing.assert_array_equal(b[...], values)
    np.testing.assert_array_equal(b[5:29, 1:39:4], values[5:29, 1:39:4])


def test_zero_dimensional(tmp_path):
    a = sluice.create(str(tmp_path / "z.zarr"), shape=(), chunks=(), dtype="float64", fill_value=2.5)
    assert a.shape == () and a.ndim == 0
    assert a[()] == 2.5 and a[...].shape == ()
    a[...] = 4
    assert sluice.open(a.url)[()] == 4.0


def test_fill_value_and_attrs(tmp_path):
    a = sluice.create(str(tmp_path / "f.zarr"), shape=(10,), chunks=(3,), dtype="int16",
                      fill_value=-7, attrs={"unit": "photons", "n": [1, 2]})
    assert a.fill_value == -7
    np.testing.assert_array_equal(a[...], np.full(10, -7, "int16"))
    assert sluice.open(a.url).attrs == {"unit": "photons", "n": [1, 2]}
    np.testing.assert_array_equal(np.asarray(a), a[...])


@pytest.mark.parametrize(
    "sel, exc",
    [
        (10, IndexError),
        (-11, IndexError),
        ((0, 0, 0), IndexError),
        ((Ellipsis, Ellipsis), IndexError),
        (1.5, TypeError),
        ("a", TypeError),
        ([1, 2], TypeError),
        (np.array([True, False]), TypeError),
        (slice(0, 5, 0), ValueError),
        (slice(0.5, 2), TypeError),
        (2**70, IndexError),
        ({}, TypeError),
        (object(), TypeError),
    ],
)
def test_hostile_selections(tmp_path, sel, exc):
    a = make_array(str(tmp_path / "h.zarr"), np.arange(60, dtype="int32").reshape(10, 6), (3, 4))
    with pytest.raises(exc):
        a[sel]
    b = sluice.open(a.url, mode="r+")
    with pytest.raises(exc):
        b[sel] = 1
    np.testing.assert_array_equal(b[...], np.arange(60, dtype="int32").reshape(10, 6))


def test_write_shape_mismatch_and_bad_values(tmp_path):
    a = make_array(str(tmp_path / "m.zarr"), np.zeros((8, 8), "float32"), (4, 4))
    with pytest.raises(ValueError):
        a[0:4, 0:4] = np.ones((3, 4))
    with pytest.raises(TypeError):
        a[0] = "text"
    with pytest.raises(TypeError):
        a[0] = {"a": 1}
    with pytest.raises(sluice.Error) as e:
        sluice.open(a.url)[0] = 1
    assert e.value.code == "EACCES"
    np.testing.assert_array_equal(a[...], np.zeros((8, 8), "float32"))


def test_huge_steps_and_bounds(tmp_path):
    v = np.arange(60, dtype="int32").reshape(10, 6)
    a = make_array(str(tmp_path / "b.zarr"), v, (3, 4))
    for sel in [np.s_[:: 2**70], np.s_[::-(2**70)], np.s_[-(2**70) : 2**70, 2**65 :],
                np.s_[5:2], np.s_[..., None, 1], np.s_[None, ..., None]]:
        np.testing.assert_array_equal(a[sel], v[sel])
        assert a[sel].shape == v[sel].shape


def test_strided_writes_touch_only_units_with_selected_elements(tmp_path):
    v = np.arange(1000, dtype="int32")
    path = tmp_path / "u.zarr"
    make_array(str(path), v, (100,), zarr_format=2)
    # Chunk 2 holds no element of [0:1000:500]: the write must not read,
    # nor rewrite it, so its damaged bytes stay as they are.
    (path / "2").write_bytes(b"not a chunk")
    b = sluice.open(str(path), mode="r+")
    b[0:1000:500] = 7
    assert (path / "2").read_bytes() == b"not a chunk"
    assert b[0] == 7 and b[500] == 7 and b[1] == 1 and b[501] == 501
    # Sharded: the unit is the shard.
    s = sluice.create(str(tmp_path / "s.zarr"), shape=(40, 40), chunks=(5, 5), shards=(20, 20),
                      dtype="uint8")
    s[...] = 1
    s[::19, ::-13] = 9
    want = np.ones((40, 40), "uint8")
    want[::19, ::-13] = 9
    np.testing.assert_array_equal(sluice.open(s.url)[...], want)


def test_store_is_opened_once(tmp_path):
    from sluice import _sluice

    st = _sluice.Store(str(tmp_path / "x"))
    with pytest.raises(TypeError):
        st.__init__(str(tmp_path / "y"))
    for bad in (2**32 + 1, -1, 5000):
        with pytest.raises((ValueError, OverflowError)):
            _sluice.Store(str(tmp_path), io_concurrency=bad)
