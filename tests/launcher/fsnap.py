# SPDX-License-Identifier: MIT
"""Snapshots of a directory tree for the overwrite tests (check_overwrite.py,
check_overwrite_kill.py): every entry under a root, by relative path, as
("d",) for a directory, ("f", size, sha256) for a file and ("l", target) for
a symbolic link (never followed).  Two snapshots equal means the tree is the
same byte for byte; `listing` drops chunk contents and keeps Zarr metadata
files whole, for comparing a node with one written by another run.
"""
import hashlib
import os

METADATA = frozenset((".zarray", ".zgroup", ".zattrs", "zarr.json"))
TMP_MARK = ".sluice-tmp"


def _entry(path):
    st = os.lstat(path)
    if os.path.islink(path):
        return ("l", os.readlink(path))
    if os.path.isdir(path):
        return ("d",)
    with open(path, "rb") as f:
        return ("f", st.st_size, hashlib.sha256(f.read()).hexdigest())


def snapshot(root):
    """{relative path: entry} for everything under `root` (not root itself);
    {} when root is absent.  A root that is a file or link maps "" to it."""
    if not os.path.lexists(root):
        return {}
    if os.path.islink(root) or not os.path.isdir(root):
        return {"": _entry(root)}
    out = {}
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        for name in dirs + files:
            key = name if rel == "." else rel + "/" + name
            out[key] = _entry(os.path.join(d, name))
    return out


def subtree(snap, rel):
    """The entries at or under `rel`, keyed relative to it ("" for rel)."""
    out = {}
    for k, v in snap.items():
        if k == rel:
            out[""] = v
        elif k.startswith(rel + "/"):
            out[k[len(rel) + 1:]] = v
    return out


def without(snap, rel):
    return {k: v for k, v in snap.items() if k != rel and not k.startswith(rel + "/")}


def graft(snap, rel, sub):
    """`snap` with the tree `sub` (from subtree) placed at `rel`, and any
    missing parent directories of `rel`."""
    out = without(snap, rel)
    parts = rel.split("/")
    for i in range(1, len(parts)):
        out.setdefault("/".join(parts[:i]), ("d",))
    for k, v in sub.items():
        out[rel if k == "" else rel + "/" + k] = v
    return out


def listing(snap):
    """Entry types, with the contents of Zarr metadata files only."""
    return {k: (v if os.path.basename(k) in METADATA or v[0] == "l" else v[:1])
            for k, v in snap.items()}


def describe_diff(want, got, limit=6):
    """A short text: what appeared (+), vanished (-) and changed (~)."""
    plus = sorted(set(got) - set(want))
    minus = sorted(set(want) - set(got))
    changed = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    parts = []
    for sign, keys in (("+", plus), ("-", minus), ("~", changed)):
        if keys:
            shown = ", ".join(k or "." for k in keys[:limit])
            more = f" and {len(keys) - limit} more" if len(keys) > limit else ""
            parts.append(f"{sign}{len(keys)} [{shown}{more}]")
    return "; ".join(parts) or "no difference"


def leftovers(snap):
    """Paths whose name starts with .sluice-tmp (hidden staging directories)."""
    return sorted(k for k in snap if os.path.basename(k).startswith(TMP_MARK))


def nodes(snap, rel=""):
    """Relative paths (under `rel`) of the directories holding Zarr metadata,
    sorted, as (path, has_v2_metadata, has_v3_metadata)."""
    found = {}
    for k, v in subtree(snap, rel).items() if rel else snap.items():
        name = os.path.basename(k)
        if v[0] == "f" and name in METADATA:
            d = os.path.dirname(k)
            v2, v3 = found.get(d, (False, False))
            found[d] = (v2 or name != "zarr.json", v3 or name == "zarr.json")
    return [(d, v2, v3) for d, (v2, v3) in sorted(found.items())]
