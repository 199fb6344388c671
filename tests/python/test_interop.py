# SPDX-License-Identifier: MIT
"""zarr-python 2.13 reads what sluice's Python package writes, and sluice
reads what zarr-python writes; pickling; dask.array.from_array."""

import os
import pickle

import numpy as np
import pytest

import sluice
from conftest import random_values

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint32", "int64", "float32", "float64",
                                   "complex64", "bool"])
@pytest.mark.parametrize("codec", ["zstd:1", "none", "gzip:5", "blosc:lz4:5:shuffle"])
def test_zarr_python_reads_sluice(tmp_path, rng, dtype, codec):
    values = random_values(rng, (23, 17), dtype)
    path = str(tmp_path / "s.zarr")
    a = sluice.create(path, shape=values.shape, chunks=(5, 6), dtype=dtype, codec=codec,
                      zarr_format=2, fill_value=1, attrs={"k": "v"})
    a[2:, :] = values[2:, :]
    z = zarr.open(path, mode="r")
    assert z.shape == values.shape and z.chunks == (5, 6) and z.dtype == np.dtype(dtype)
    want = values.copy()
    want[:2] = 1
    np.testing.assert_array_equal(z[...], want)
    assert dict(z.attrs) == {"k": "v"}


@pytest.mark.parametrize("compressor", [None, "zstd", "zlib", "blosc"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_sluice_reads_zarr_python(tmp_path, rng, compressor, order):
    comp = {
        None: None,
        "zstd": numcodecs.Zstd(level=3),
        "zlib": numcodecs.Zlib(level=1),
        "blosc": numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
    }[compressor]
    values = random_values(rng, (31, 12, 9), "float32")
    path = str(tmp_path / "z.zarr")
    z = zarr.open(path, mode="w", shape=values.shape, chunks=(8, 5, 4), dtype="<f4",
                  compressor=comp, order=order, fill_value=np.nan)
    z[:, :, :] = values
    z.attrs["unit"] = "s"
    a = sluice.open(path)
    assert a.zarr_format == 2 and a.attrs == {"unit": "s"}
    np.testing.assert_array_equal(a[...], values)
    np.testing.assert_array_equal(a[::-2, 3, 1:8:3], values[::-2, 3, 1:8:3])


def test_big_endian_zarr_python(tmp_path, rng):
    values = random_values(rng, (10, 10), "int32").astype(">i4")
    path = str(tmp_path / "be.zarr")
    z = zarr.open(path, mode="w", shape=values.shape, chunks=(4, 4), dtype=">i4")
    z[...] = values
    a = sluice.open(path)
    assert a.dtype == np.dtype("int32")
    np.testing.assert_array_equal(a[...], values.astype("int32"))


def test_group_of_zarr_python(tmp_path):
    path = str(tmp_path / "g.zarr")
    g = zarr.open_group(path, mode="w")
    g.attrs["title"] = "t"
    g.create_dataset("a", data=np.arange(12).reshape(3, 4), chunks=(2, 2))
    sub = g.create_group("sub")
    sub.create_dataset("b", data=np.ones(5, "u1"), chunks=(2,))
    s = sluice.open(path)
    assert isinstance(s, sluice.Group)
    assert sorted(s) == ["a", "sub"] and len(s) == 2
    assert s.attrs == {"title": "t"}
    np.testing.assert_array_equal(s["a"][...], np.arange(12).reshape(3, 4))
    assert isinstance(s["sub"], sluice.Group)
    np.testing.assert_array_equal(s["sub"]["b"][...], np.ones(5, "u1"))
    np.testing.assert_array_equal(s["sub/b"][1:], np.ones(4, "u1"))
    with pytest.raises(KeyError):
        s["missing"]
    with pytest.raises(KeyError):
        s["../g.zarr"]
    with pytest.raises(TypeError):
        s[0]
    again = pickle.loads(pickle.dumps(s))
    assert sorted(again) == ["a", "sub"]


def test_pickle_reopens_by_location(tmp_path, rng):
    values = random_values(rng, (20, 20), "int32")
    path = tmp_path / "p.zarr"
    a = sluice.create(str(path), shape=values.shape, chunks=(7, 7), dtype="int32")
    a[...] = values
    here = os.getcwd()
    try:
        os.chdir(str(tmp_path))
        rel = sluice.open("p.zarr")
    finally:
        os.chdir(here)
    b = pickle.loads(pickle.dumps(rel))
    assert b.url == str(path)
    np.testing.assert_array_equal(b[...], values)
    with pytest.raises(sluice.Error):
        b[0, 0] = 1  # still read only
    w = pickle.loads(pickle.dumps(sluice.open(str(path), mode="r+")))
    w[0, 0] = 5
    assert sluice.open(str(path))[0, 0] == 5


def test_dask_from_array(tmp_path, rng):
    da = pytest.importorskip("dask.array")
    import dask

    values = random_values(rng, (64, 48), "float64")
    a = sluice.create(str(tmp_path / "d.zarr"), shape=values.shape, chunks=(16, 12),
                      dtype="float64")
    a[...] = values
    b = sluice.open(a.url)
    x = da.from_array(b, chunks=b.chunks)
    np.testing.assert_allclose(x.sum().compute(scheduler="threads"), values.sum())
    # The processes scheduler pickles the array into other processes.
    got = (x[::2, 5:] * 2).compute(scheduler="processes", num_workers=2)
    np.testing.assert_array_equal(got, values[::2, 5:] * 2)
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(x.max(axis=0).compute(), values.max(axis=0))


def test_dask_distributed(tmp_path, rng):
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    import dask.array as da

    values = random_values(rng, (40, 30), "int32")
    a = sluice.create(str(tmp_path / "dd.zarr"), shape=values.shape, chunks=(10, 10),
                      dtype="int32")
    a[...] = values
    # Worker processes of their own: each unpickles the array and reopens it.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster:
        with distributed.Client(cluster) as client:
            x = da.from_array(sluice.open(a.url), chunks=(10, 10))
            got = client.compute(x[::3, 2:] + 1).result()
    np.testing.assert_array_equal(got, values[::3, 2:] + 1)


def test_file_urls_and_error_paths(tmp_path, rng):
    values = random_values(rng, (6, 7), "int16")
    path = tmp_path / "f.zarr"
    a = sluice.create("file://" + str(path), shape=values.shape, chunks=(3, 3), dtype="int16",
                      zarr_format=2)
    a[...] = values
    np.testing.assert_array_equal(sluice.open(str(path))[...], values)
    np.testing.assert_array_equal(sluice.open("file://" + str(path))[1:, ::2], values[1:, ::2])
    (path / "1.2").write_bytes(b"\x00" * 7)
    with pytest.raises(sluice.Error) as e:
        sluice.open(str(path))[...]
    assert e.value.path is not None and "1.2" in e.value.path, (e.value.path, str(e.value))
    assert e.value.source == e.value.path
