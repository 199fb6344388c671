#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check `sluice run` on graph files whose paths alias each other or leave
their directory through a symbolic link (issue 18): each exits 2 (an invalid
graph), names both paths as written (or where the link leads and
--allow-outside), and creates nothing on disk; `validate` says the same.
"""
import hashlib
import json
import os
import sys
import tempfile

from launcher_util import expect, finish, run


def snapshot(root):
    """Every path under `root` with a digest of each file's bytes."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(d, name), root)] = "dir"
        for name in files:
            p = os.path.join(d, name)
            if os.path.islink(p):
                out[os.path.relpath(p, root)] = "link " + os.readlink(p)
            else:
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def graph(arrays, nodes):
    return {"sluice": 1, "arrays": arrays, "nodes": nodes}


def copy_nodes(src, dst):
    return {"r": {"op": "get", "array": src}, "c": {"op": "clip", "input": "r", "max": 10},
            "w": {"op": "put", "input": "c", "array": dst}}


def pyramid_nodes(src, group):
    return {"r": {"op": "get", "array": src},
            "p": {"op": "pyramid", "input": "r", "group": group, "levels": 2,
                  "factors": [2, 2, 2], "method": "mean", "overwrite": True}}


def check_refused(tmp, d, name, doc, words, code="EINVAL"):
    """`doc` written to d/name.json: run and validate exit 2 naming `words`;
    nothing under tmp changes."""
    path = os.path.join(d, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    before = snapshot(tmp)
    for cmd in (["run", "--no-progress"], ["validate"]):
        rc, out, err = run(*cmd, path)
        expect(rc == 2, f"{name}: sluice {cmd[0]} exits 2, not {rc}: {out}{err}")
        expect(code in err, f"{name}: sluice {cmd[0]} reports {code}: {err}")
        for w in words:
            expect(w in err, f"{name}: sluice {cmd[0]} names {w}: {err}")
    after = snapshot(tmp)
    os.remove(path)
    expect(after == {k: v for k, v in before.items() if k != os.path.relpath(path, tmp)}
           or after == before,
           f"{name}: nothing is created or changed: "
           f"{sorted(set(after.items()) ^ set(before.items()))}")


def main():
    with tempfile.TemporaryDirectory(prefix="sluice-alias-") as tmp:
        d = os.path.join(tmp, "work")
        far = os.path.join(tmp, "far")
        os.makedirs(d)
        os.makedirs(far)
        for where in (os.path.join(d, "raw.zarr"), os.path.join(d, "g.zarr", "raw"),
                      os.path.join(far, "raw.zarr")):
            rc, _, err = run("generate", where, "--shape", "8,8,8", "--chunks", "4,4,4",
                             "--no-progress")
            if rc != 0:
                print(f"sluice generate failed: {err}")
                return 1
        os.symlink("raw.zarr", os.path.join(d, "lnk.zarr"))
        os.symlink(far, os.path.join(d, "ext"))
        os.makedirs(os.path.join(d, "sub"))

        check_refused(tmp, d, "link_alias",
                      graph({"src": {"path": "raw.zarr"},
                             "dst": {"path": "lnk.zarr", "overwrite": True}},
                            copy_nodes("src", "dst")),
                      ['"lnk.zarr"', '"raw.zarr"', "/arrays/dst/path"])
        check_refused(tmp, d, "two_names",
                      graph({"src": {"path": "raw.zarr"}, "again": {"path": "lnk.zarr"},
                             "dst": {"path": "out.zarr", "like": "src"}},
                            copy_nodes("src", "dst")),
                      ['"lnk.zarr"', '"raw.zarr"', "one array"])
        check_refused(tmp, d, "nested",
                      graph({"src": {"path": "raw.zarr"},
                             "dst": {"path": "raw.zarr/inner.zarr", "like": "src"}},
                            copy_nodes("src", "dst")),
                      ['"raw.zarr/inner.zarr"', '"raw.zarr"', "lies inside"])
        check_refused(tmp, d, "pyramid_holds_input",
                      graph({"src": {"path": "g.zarr/raw"}}, pyramid_nodes("src", "g.zarr/")),
                      ['"g.zarr/raw"', '"g.zarr/"', "/nodes/p/group"])
        check_refused(tmp, d, "link_out",
                      graph({"src": {"path": "raw.zarr"},
                             "dst": {"path": "ext/out.zarr", "like": "src"}},
                            copy_nodes("src", "dst")),
                      ['"ext/out.zarr"', "leads to", "--allow-outside"], code="EACCES")

        # A graph with none of these runs (the check refuses only aliases).
        ok = os.path.join(d, "ok.json")
        with open(ok, "w") as f:
            json.dump(graph({"src": {"path": "lnk.zarr"},
                             "dst": {"path": "sub/../out.zarr", "like": "src"}},
                            copy_nodes("src", "dst")), f)
        rc, out, err = run("run", "--no-progress", "--allow-outside", ok)
        expect(rc == 0, f"a graph without aliases runs: {rc} {out}{err}")
        expect(os.path.isdir(os.path.join(d, "out.zarr")), "its output is created")

    return finish("graph aliases")


if __name__ == "__main__":
    sys.exit(main())
