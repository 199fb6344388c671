# SPDX-License-Identifier: MIT
"""Hostile input never crashes the interpreter: random graph dicts, random
create arguments, damaged metadata, and the C types used directly."""

import json

import numpy as np
import pytest

import sluice
from sluice import _sluice

ATOMS = [None, True, False, 0, -1, 1, 2**63, -(2**63) - 1, 2**64, 1.5, float("inf"), "",
         "x", "get", "put", "expr", "../../etc", "s3://", "http://127.0.0.1:1/a", [], {},
         [1, 2, 3], [[0, 1]], {"op": "get"}, "a" * 5000, "map", "fn0"]


def random_value(rng, depth=0):
    r = rng.integers(0, 10)
    if depth > 3 or r < 5:
        return ATOMS[rng.integers(0, len(ATOMS))]
    if r < 7:
        return [random_value(rng, depth + 1) for _ in range(rng.integers(0, 4))]
    keys = ["op", "input", "inputs", "array", "path", "create", "like", "expr", "axes", "factors",
            "method", "dtype", "chunks", "shape", "sluice", "arrays", "nodes", "run", "memory",
            "threads", "levels", "group", "per", "histogram", "percentiles", "fn", "z"]
    return {keys[rng.integers(0, len(keys))]: random_value(rng, depth + 1)
            for _ in range(rng.integers(0, 5))}


def test_random_graph_dicts(tmp_path, rng):
    src = tmp_path / "a.zarr"
    sluice.create(str(src), shape=(8, 8), chunks=(4, 4), dtype="float32")[...] = 1
    base = {
        "sluice": 1,
        "arrays": {"a": {"path": "a.zarr"}, "b": {"path": "b.zarr", "like": "a",
                                                  "overwrite": True}},
        "nodes": {"r": {"op": "get", "array": "a"}, "w": {"op": "put", "input": "r",
                                                          "array": "b"}},
    }
    for _ in range(300):
        doc = json.loads(json.dumps(base))
        # Damage one place of the good document, or replace it whole.
        where = rng.integers(0, 5)
        if where == 0:
            doc = random_value(rng)
            if not isinstance(doc, dict):
                doc = {"sluice": 1, "arrays": {}, "nodes": doc}
        elif where == 1:
            doc["nodes"]["r"][random_value(rng) if False else "array"] = random_value(rng)
        elif where == 2:
            doc["nodes"]["x"] = random_value(rng)
        elif where == 3:
            doc["arrays"]["b"]["create"] = random_value(rng)
        else:
            doc["run"] = random_value(rng)
        try:
            text = json.dumps(doc)
        except (TypeError, ValueError):
            continue
        try:
            sluice.run(json.loads(text), base_dir=str(tmp_path))
        except (sluice.Error, TypeError, ValueError):
            pass


def test_random_create_arguments(tmp_path, rng):
    choices = {
        "shape": [(), (4,), (0, 3), (2**64,), (-1,), (3, 3), "abc", None, (1.5,), [2] * 40],
        "chunks": [(), (2,), (0,), (2, 2), (2**63,), None, (True,)],
        "dtype": ["float32", "int8", "U3", "object", "datetime64[s]", "f2", "<c8", None, "zz"],
        "codec": ["zstd:1", "zstd:99", "none", "gzip:x", "blosc:nope:1", "", 5],
        "zarr_format": [2, 3, 4, "3"],
        "fill_value": [0, -1, 2**70, "NaN", float("nan"), None, [1, 2], "x"],
        "shards": [None, (4,), (3, 3), (0,)],
        "attrs": [None, {}, {"a": float("nan")}, [1], {"k": object()}],
    }
    for k in range(300):
        kwargs = {name: vals[rng.integers(0, len(vals))] for name, vals in choices.items()}
        try:
            a = sluice.create(str(tmp_path / ("c%d.zarr" % k)), **kwargs)
        except (sluice.Error, TypeError, ValueError, OverflowError):
            continue
        assert a.shape == tuple(kwargs["shape"])
        a[...] = 0


def test_damaged_metadata(tmp_path, rng):
    good = tmp_path / "g.zarr"
    sluice.create(str(good), shape=(6, 6), chunks=(3, 3), dtype="int16", zarr_format=2)
    text = (good / ".zarray").read_bytes()
    for k in range(150):
        b = bytearray(text)
        for _ in range(rng.integers(1, 6)):
            b[rng.integers(0, len(b))] = int(rng.integers(0, 256))
        d = tmp_path / ("d%d.zarr" % k)
        d.mkdir()
        (d / ".zarray").write_bytes(bytes(b))
        try:
            a = sluice.open(str(d))
            a[...]
        except (sluice.Error, TypeError, ValueError):
            pass


def test_c_types_used_directly(tmp_path):
    with pytest.raises(TypeError):
        sluice.Array()
    with pytest.raises(TypeError):
        sluice.Group()
    with pytest.raises(TypeError):
        _sluice.Store()
    with pytest.raises(TypeError):
        _sluice.Store(5)
    with pytest.raises(ValueError):
        _sluice.Store(str(tmp_path), retries=1000)
    s = _sluice.Store(str(tmp_path / "s"))
    with pytest.raises(sluice.Error):
        s.open_array("nothing")
    with pytest.raises(ValueError):
        s.create_array("x", (4,), (2,), "float32", None, "zstd:1", 3, b"\0", None, False)
    a = s.create_array("x", (4,), (2,), "float32", None, "zstd:1", 3, None, None, False)
    for bad in [(None, None), ((0,), (5,)), ((3,), (2,)), ((0, 0), (1, 1)), ("a", "b")]:
        with pytest.raises((TypeError, IndexError, ValueError)):
            a.read(*bad)
    with pytest.raises(TypeError):
        a.write((0,), (2,), np.zeros(2, "float64"))
    with pytest.raises(TypeError):
        a.write((0,), (2,), np.zeros(4, "float32")[::2])
    with pytest.raises(ValueError):
        a.write((0,), (2,), np.zeros(3, "float32"))
    with pytest.raises(TypeError):
        a.read_many([(0,)])
    with pytest.raises(TypeError):
        _sluice.run_graph("{}")
    with pytest.raises(sluice.Error):
        _sluice.run_graph("\xff{", "x", "/", False, 0, 0, -1, -1, -1, {})
    with pytest.raises(TypeError):
        _sluice.run_graph("{}", "x", "/", False, 0, 0, -1, -1, -1, {"f": 5})
    with pytest.raises(TypeError):
        _sluice.run_graph("{}", "x", "/", False, 0, 0, -1, -1, -1, [])
    with pytest.raises(ValueError):
        sluice.parse_size("12Q")
    assert sluice.parse_size("2K") == 2048
    assert sluice.status_name(0) == "OK"
