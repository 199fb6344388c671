#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The zarr-python counterpart of zarr_read.mjs: describe Zarr nodes as JSON
(kind, zarr_format, and for an array shape, dtype, chunks, the sum of all
elements and the SHA-256 of the decoded contents in C order, little-endian,
as `sluice checksum` prints it).  zarr-python 2.13 (python3-zarr) reads only
Zarr v2: a v3 node is described from its zarr.json, with "sum" and "sha256"
null (its data is checked by zarrita and `sluice checksum`).  Metadata of
both formats in one directory is reported in "formats".

    python3 tests/tools/zarr_read.py PATH...       one JSON line per path
    from zarr_read import describe                 in one long-lived process
"""
import hashlib
import json
import os
import sys

import numpy as np
import zarr

V2_FILES = (".zarray", ".zgroup")


def _formats(path):
    found = []
    if any(os.path.isfile(os.path.join(path, f)) for f in V2_FILES):
        found.append(2)
    if os.path.isfile(os.path.join(path, "zarr.json")):
        found.append(3)
    return found


def _data_fields(a):
    le = a.astype(a.dtype.newbyteorder("<"), copy=False)
    if a.dtype.kind in "iub":
        total = float(a.sum(dtype=np.float64))
    elif a.dtype.kind in "fc":
        total = complex(a.sum(dtype=np.complex128)) if a.dtype.kind == "c" else float(
            a.sum(dtype=np.float64))
    else:
        total = None
    return total, hashlib.sha256(np.ascontiguousarray(le).tobytes()).hexdigest()


def _describe_v3(path, out):
    with open(os.path.join(path, "zarr.json"), "rb") as f:
        meta = json.load(f)
    out["kind"] = "group" if meta.get("node_type") == "group" else "array"
    if out["kind"] == "group":
        out["attributes"] = sorted(meta.get("attributes", {}))
        return out
    chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
    for codec in meta.get("codecs", []):
        if codec.get("name") == "sharding_indexed":
            chunks = codec["configuration"]["chunk_shape"]
    out.update(shape=meta["shape"], dtype=meta["data_type"], chunks=chunks, sum=None, sha256=None)
    return out


def _describe_v2(path, out):
    node = zarr.open(zarr.DirectoryStore(path), mode="r")
    if isinstance(node, zarr.hierarchy.Group):
        out["kind"] = "group"
        out["attributes"] = sorted(node.attrs.asdict())
        return out
    a = node[...]
    total, digest = _data_fields(a)
    out.update(kind="array", shape=list(node.shape), dtype=node.dtype.name,
               chunks=list(node.chunks), sum=total, sha256=digest)
    return out


def describe(path):
    """One node's description, or {"path", "ok": False, "error"}."""
    out = {"path": path, "ok": True}
    try:
        formats = _formats(path)
        if not formats:
            raise FileNotFoundError(f"no .zarray, .zgroup or zarr.json in {path}")
        if len(formats) > 1:
            out["formats"] = formats
        out["zarr_format"] = formats[-1]
        return _describe_v3(path, out) if formats[-1] == 3 else _describe_v2(path, out)
    except Exception as e:  # noqa: BLE001 -- any failure to read is the answer
        return {"path": path, "ok": False, "error": f"{type(e).__name__}: {e}"}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(json.dumps(describe(p)))
