# SPDX-License-Identifier: MIT
"""sluice.run with graph files, dicts and Graphs: results against numpy,
failed chunks in the report, load errors, bad arguments."""

import json

import numpy as np
import pytest

import sluice
from conftest import make_array, random_values


def test_flat_field_graph_matches_numpy(tmp_path, rng):
    raw = random_values(rng, (4, 30, 40), "uint16")
    dark = rng.integers(0, 100, size=(30, 40)).astype("uint16")
    flat = rng.uniform(0.5, 2.0, size=(30, 40)).astype("float32")
    make_array(str(tmp_path / "raw.zarr"), raw, (1, 16, 16))
    make_array(str(tmp_path / "dark.zarr"), dark, (16, 16))
    make_array(str(tmp_path / "flat.zarr"), flat, (16, 16))
    g = sluice.Graph(run={"memory": "64M"})
    r, d, f = (g.get(tmp_path / n) for n in ("raw.zarr", "dark.zarr", "flat.zarr"))
    ff = g.expr("(raw - dark) / max(flat, 1)", raw=r, dark=d, flat=f, dtype="float32",
                compute="float32")
    g.put(ff, tmp_path / "ff.zarr")
    mip = g.reduce(ff, "max", axes=[0])
    g.put(mip, tmp_path / "mip.zarr", name="mip_put")
    g.stats(r, percentiles=[1, 50, 99], name="raw_stats")
    report = sluice.run(g, threads=2)
    assert report.ok and report.n_failed == 0 and report.failed == []
    want = (raw.astype("float32") - dark.astype("float32")) / np.maximum(flat, np.float32(1))
    got = sluice.open(tmp_path / "ff.zarr")[...]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(sluice.open(tmp_path / "mip.zarr")[...], want.max(axis=0))
    (s,) = report.stats["raw_stats"]
    assert s["count"] == raw.size and s["min"] == raw.min() and s["max"] == raw.max()
    assert s["sum"] == raw.sum()
    np.testing.assert_allclose(s["mean"], raw.mean(), rtol=1e-12)
    np.testing.assert_allclose(s["std"], raw.std(), rtol=1e-9)
    for q, v in zip([1, 50, 99], np.percentile(raw, [1, 50, 99])):
        assert s["percentiles"][q] == v  # exact for 16-bit integers
    status = report.status("mip_put")
    assert status.shape == (2, 3) and status.dtype == np.uint8 and not status.any()
    with pytest.raises(KeyError):
        report.status("nothing")


def test_graph_file_on_disk(tmp_path, rng):
    v = random_values(rng, (16, 16), "float64")
    make_array(str(tmp_path / "in.zarr"), v, (4, 4))
    doc = {
        "sluice": 1,
        "arrays": {"in": {"path": "in.zarr"}, "out": {"path": "out/half.zarr", "like": "in"}},
        "nodes": {
            "read": {"op": "get", "array": "in"},
            "down": {"op": "downsample", "input": "read", "factors": [2, 2]},
            "write": {"op": "put", "input": "down", "array": "out"},
        },
    }
    (tmp_path / "g.json").write_text(json.dumps(doc))
    report = sluice.run(str(tmp_path / "g.json"), check=True)
    want = v.reshape(8, 2, 8, 2).mean(axis=(1, 3))
    np.testing.assert_allclose(sluice.open(tmp_path / "out" / "half.zarr")[...], want,
                               rtol=1e-15)
    assert report.puts == ["write"]
    # A dict's relative paths are taken from base_dir.
    doc["arrays"]["out"] = {"path": "other.zarr", "like": "in"}
    assert sluice.run(doc, base_dir=str(tmp_path)).ok
    assert sluice.open(tmp_path / "other.zarr").shape == (8, 8)


def test_failed_chunks_are_reported(tmp_path):
    v = np.arange(64, dtype="int32").reshape(8, 8)
    src = tmp_path / "src.zarr"
    make_array(str(src), v, (4, 4), zarr_format=2)
    (src / "1.1").write_bytes(b"\x28\xb5\x2f\xfd garbage")
    g = sluice.Graph()
    g.put(g.get(src), tmp_path / "dst.zarr", name="copy")
    report = sluice.run(g)
    assert not report.ok and report.n_failed == 1
    (f,) = report.failed
    assert f["put"] == "copy" and tuple(f["chunk"]) == (1, 1)
    assert f["code"] in ("ECORRUPT", "EIO") and f["message"]
    status = report.status("copy")
    assert status[1, 1] != 0 and status.sum() == status[1, 1]
    assert sluice.status_name(int(status[1, 1])) == f["code"]
    with pytest.raises(sluice.Error) as e:
        report.raise_if_failed()
    assert e.value.chunk == (1, 1)
    with pytest.raises(sluice.Error):
        sluice.run(g, check=True)


def test_stats_per_channel_and_histogram(tmp_path, rng):
    v = random_values(rng, (3, 20, 20), "uint8")
    make_array(str(tmp_path / "c.zarr"), v, (1, 8, 8))
    g = sluice.Graph()
    g.stats(g.get(tmp_path / "c.zarr"), per=[0], histogram={"bins": 16}, name="ch")
    sets = sluice.run(g).stats["ch"]
    assert len(sets) == 3
    for k, s in enumerate(sets):
        assert s["index"] == (k,)
        h, _ = np.histogram(v[k], bins=16, range=(0, 255))
        np.testing.assert_array_equal(s["histogram"], h)
        assert s["count"] == v[k].size and s["max"] == v[k].max()


def test_pyramid_and_downsample_helpers(tmp_path, rng):
    v = random_values(rng, (40, 36), "uint16")
    make_array(str(tmp_path / "img.zarr"), v, (16, 16))
    r = sluice.pyramid(tmp_path / "img.zarr", tmp_path / "pyr.zarr", 3, [2, 2], omero=True)
    assert r.ok and r.puts == ["levels.0", "levels.1", "levels.2"]
    p = sluice.open(tmp_path / "pyr.zarr")
    assert sorted(p) == ["0", "1", "2"]
    assert p["2"].shape == (10, 9)
    omero = p.attrs["ome"]["omero"]
    assert omero["channels"][0]["window"]["max"] == v.max()
    r = sluice.downsample(tmp_path / "img.zarr", tmp_path / "d.zarr", [2, 3], method="max",
                          create={"chunks": [5, 5]})
    d = sluice.open(tmp_path / "d.zarr")
    assert d.chunks == (5, 5)
    np.testing.assert_array_equal(d[...], v.reshape(20, 2, 12, 3).max(axis=(1, 3)))


def test_load_errors_raise_with_pointer(tmp_path):
    with pytest.raises(sluice.Error) as e:
        sluice.run({"sluice": 1, "arrays": {}, "nodes": {"a": {"op": "frob"}}})
    assert e.value.pointer == "/nodes/a/op" and e.value.code == "EINVAL"
    assert "frob" in e.value.message and e.value.errors
    (tmp_path / "bad.json").write_text('{"sluice": 1,\n "arrays": {,}}')
    with pytest.raises(sluice.Error) as e:
        sluice.run(str(tmp_path / "bad.json"))
    assert e.value.line == 2 and e.value.column is not None
    with pytest.raises(FileNotFoundError):
        sluice.run(str(tmp_path / "absent.json"))


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"threads": 0}, ValueError),
        ({"threads": "2"}, TypeError),
        ({"threads": True}, TypeError),
        ({"memory": -5}, ValueError),
        ({"memory": "lots"}, ValueError),
        ({"memory": 1.5}, TypeError),
        ({"error_policy": "panic"}, ValueError),
        ({"missing": "zero"}, ValueError),
        ({"retries": -1}, ValueError),
        ({"nonsense": 1}, TypeError),
    ],
)
def test_bad_run_arguments(tmp_path, kwargs, exc):
    doc = {"sluice": 1, "arrays": {}, "nodes": {}}
    with pytest.raises(exc):
        sluice.run(doc, **kwargs)


def test_bad_graphs(tmp_path):
    for bad in [None, 5, [1, 2], {"sluice": float("nan")}, {"x": object()}]:
        with pytest.raises((TypeError, ValueError)):
            sluice.run(bad)
    g = sluice.Graph()
    other = sluice.Graph()
    n = other.get(tmp_path / "x.zarr")
    with pytest.raises(ValueError):
        g.put(n, tmp_path / "y.zarr")
    with pytest.raises(TypeError):
        g.put("nonexistent", tmp_path / "y.zarr")
    g.get(tmp_path / "x.zarr", name="a")
    with pytest.raises(ValueError):
        g.get(tmp_path / "x.zarr", name="a")


def test_map_calls_python_per_block(tmp_path, rng):
    v = random_values(rng, (30, 44), "int16")
    make_array(str(tmp_path / "in.zarr"), v, (8, 16))
    seen = []

    def fn(block, where):
        assert not block.flags.writeable
        seen.append(tuple((s.start, s.stop) for s in where))
        # The location is the block's: offsets make every block different.
        return block.astype("float64") * 0.5 + where[0].start * 1000 + where[1].start

    g = sluice.Graph()
    m = g.map(fn, g.get(tmp_path / "in.zarr"), dtype="float64")
    g.put(m, tmp_path / "out.zarr")
    report = sluice.run(g, threads=2, check=True)
    assert report.ok
    want = v.astype("float64") * 0.5
    for i in range(0, 30, 8):
        for j in range(0, 44, 16):
            want[i:i + 8, j:j + 16] += i * 1000 + j
    np.testing.assert_array_equal(sluice.open(tmp_path / "out.zarr")[...], want)
    assert sorted(seen) == sorted({((i, min(i + 8, 30)), (j, min(j + 16, 44)))
                                   for i in range(0, 30, 8) for j in range(0, 44, 16)})


def test_map_failures_fail_their_chunks_only(tmp_path):
    v = np.arange(64, dtype="float32").reshape(8, 8)
    make_array(str(tmp_path / "in.zarr"), v, (4, 4))

    def picky(block, where):
        if (where[0].start, where[1].start) == (4, 0):
            raise KeyError("no such thing")
        if (where[0].start, where[1].start) == (0, 4):
            return block[:2]  # a wrong shape
        if (where[0].start, where[1].start) == (4, 4):
            return np.array([["a"] * 4] * 4)  # not numbers
        return -block

    g = sluice.Graph()
    g.put(g.map(picky, g.get(tmp_path / "in.zarr")), tmp_path / "out.zarr", name="w")
    report = sluice.run(g)
    assert not report.ok and report.n_failed == 3
    msgs = {tuple(f["chunk"]): f["message"] for f in report.failed}
    assert set(msgs) == {(1, 0), (0, 1), (1, 1)}
    assert all(f["code"] == "EFUNC" for f in report.failed)
    assert "KeyError" in msgs[(1, 0)] and "no such thing" in msgs[(1, 0)]
    assert "picky" in msgs[(1, 0)] and "python function" in msgs[(1, 0)]
    assert "ValueError" in msgs[(0, 1)] and "(2, 4)" in msgs[(0, 1)]
    assert "TypeError" in msgs[(1, 1)]
    status = report.status("w")
    assert status[0, 0] == 0 and np.count_nonzero(status) == 3


def test_map_in_a_chain_and_bad_uses(tmp_path):
    v = np.arange(100, dtype="uint8").reshape(10, 10)
    make_array(str(tmp_path / "in.zarr"), v, (5, 5))
    g = sluice.Graph()
    r = g.get(tmp_path / "in.zarr")
    e = g.expr("x * 2", x=r, dtype="float32")
    m = g.map(lambda b, w: np.sqrt(b), e)
    g.put(g.reduce(m, "sum", axes=[0]), tmp_path / "sum.zarr")
    assert sluice.run(g).ok
    np.testing.assert_allclose(sluice.open(tmp_path / "sum.zarr")[...],
                               np.sqrt(v.astype("float32") * 2).sum(axis=0), rtol=1e-6)
    with pytest.raises(TypeError):
        g.map(5, r)
    with pytest.raises(TypeError):
        g.map(np.sqrt)
    # A dict naming a function the run was not given is refused when loaded.
    doc = g.to_dict()
    with pytest.raises(sluice.Error) as err:
        sluice.run(doc)
    assert any("no function" in m and "supplies none" in m for m in err.value.errors), \
        err.value.errors
    # ... and runs with the function given by name.
    for a in doc["arrays"].values():
        if "create" in a:
            a["overwrite"] = True
    assert sluice.run(doc, functions={"_lambda_": lambda b, w: np.sqrt(b)}).ok


def test_map_over_several_inputs(tmp_path, rng):
    raw = random_values(rng, (3, 20, 24), "uint16")
    dark = rng.integers(0, 50, size=(3, 20, 24)).astype("uint16")
    gain = rng.uniform(0.5, 2, size=(3, 20, 24)).astype("float32")
    for name, v in (("raw", raw), ("dark", dark), ("gain", gain)):
        make_array(str(tmp_path / (name + ".zarr")), v, (1, 10, 12))

    def correct(r, d, k, where):
        assert r.shape == d.shape == k.shape
        assert r.dtype == np.uint16 and k.dtype == np.float32
        return (r.astype("float32") - d) * k

    g = sluice.Graph()
    ins = [g.get(tmp_path / (n + ".zarr")) for n in ("raw", "dark", "gain")]
    g.put(g.map(correct, *ins, dtype="float32"), tmp_path / "out.zarr")
    assert sluice.run(g, threads=2).ok
    np.testing.assert_array_equal(sluice.open(tmp_path / "out.zarr")[...],
                                  (raw.astype("float32") - dark) * gain)
    # Inputs on different chunk grids are refused, naming the node.
    make_array(str(tmp_path / "other.zarr"), dark, (3, 5, 5))
    g2 = sluice.Graph()
    g2.put(g2.map(correct, g2.get(tmp_path / "raw.zarr"), g2.get(tmp_path / "other.zarr"),
                  g2.get(tmp_path / "gain.zarr"), name="m"), tmp_path / "bad.zarr")
    with pytest.raises(sluice.Error) as err:
        sluice.run(g2)
    assert err.value.pointer == "/nodes/m/inputs", (err.value.pointer, str(err.value))
