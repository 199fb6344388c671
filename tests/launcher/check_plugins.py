#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check plugins through the sluice program: graph files naming the test
plugins of tests/graph/plugins/ (built into SL_BUILD_ROOT/tests/graph) and
the example plugin (SL_BUILD_ROOT/examples/libinvert.so).  A file that
names plugins is refused without --allow-plugins, by run, validate and
explain, with a message naming the flag; SL_ALLOW_PLUGINS=1 allows it too.
Plugin ops of each kind (map, halo, regrid) compute what numpy does; an ABI
mismatch, a missing symbol, a duplicate name and a bad descriptor exit 2
naming the library and what is wrong, before anything is created; a
kernel's error fails its chunks, with the plugin's message in the report;
a journaled run of a plugin op resumes; a changed plugin
parameter is refused on resume; `sluice ops` lists plugin ops (text and
JSON, against docs/ops.schema.json).  Exits 77 (skipped) without numpy and
zarr (python3-zarr).
"""
import json
import os
import shutil
import sys

from launcher_util import (RUN, SOURCE, expect, finish, leftovers, read_zarr, run, scratch_dir,
                           skip_without, tree, write_graph, write_zarr)

skip_without("numpy", "zarr")
import numpy as np  # noqa: E402

BUILD = os.environ.get("SL_BUILD_ROOT", os.path.join(SOURCE, "build"))
PLUGINS = os.path.join(BUILD, "tests", "graph")
INVERT = os.path.join(BUILD, "examples", "libinvert.so")
SHAPE, CHUNKS = (24, 40), (8, 16)


def lib(variant):
    return os.path.join(PLUGINS, f"libtest_plugin_{variant}.so")


def workdir(tmp, name, variants=("good",)):
    """A folder with in.zarr (uint16, value = C-order index) and copies of
    the test plugins `variants` beside it."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    data = np.arange(np.prod(SHAPE), dtype=np.uint16).reshape(SHAPE)
    write_zarr(os.path.join(d, "in.zarr"), data, CHUNKS)
    for v in variants:
        shutil.copy(lib(v), d)
    return d, data


def graph_doc(plugins, node):
    """in.zarr -> the plugin op `node` -> out.zarr (shape and dtype the op's)."""
    doc = {
        "sluice": 1,
        "plugins": plugins,
        "arrays": {
            "in": {"path": "in.zarr"},
            "out": {"path": "out.zarr", "overwrite": True,
                    "create": {"format": 2, "codec": "zstd:1"}},
        },
        "nodes": {
            "read": {"op": "get", "array": "in"},
            "p": dict(node, input="read"),
            "write": {"op": "put", "input": "p", "array": "out"},
        },
    }
    return doc


def check_permission(tmp):
    d, _ = workdir(tmp, "permission")
    graph = write_graph(d, graph_doc(["./libtest_plugin_good.so"], {"op": "add_const", "value": 1}))
    for cmd in (RUN, ("validate",), ("explain",)):
        rc, out, err = run(*cmd, graph)
        expect(rc == 2 and "--allow-plugins" in err and "/plugins" in err,
               f"without permission sluice {cmd[0]} exits 2 naming the flag: {rc} {err}")
        expect("unknown op" not in err, f"{cmd[0]}: the refusal is not followed by noise: {err}")
    expect(leftovers(d, ["out.zarr"]) == [], "a refused file creates nothing")
    rc, out, err = run("validate", "--allow-plugins", graph)
    expect(rc == 0, f"validate --allow-plugins accepts it: {err}")
    env = dict(os.environ, SL_ALLOW_PLUGINS="1")
    rc, out, err = run("validate", graph, env=env)
    expect(rc == 0, f"SL_ALLOW_PLUGINS=1 allows it too: {err}")
    rc, out, err = run("explain", "--allow-plugins", graph)
    expect(rc == 0 and "map     add_const  float64" in out,
           f"explain shows the plugin op: {out}{err}")


def check_kinds(tmp):
    d, data = workdir(tmp, "kinds")
    x = data.astype(np.float64)
    left = np.concatenate([x[:, :1], x[:, :-1]], axis=1)
    right = np.concatenate([x[:, 1:], x[:, -1:]], axis=1)
    cases = [
        ("map", {"op": "add_const", "value": 0.25}, x + 0.25),
        ("halo", {"op": "sum3"}, left + x + right),
        ("regrid", {"op": "pick", "factors": [2, 4]}, data[::2, ::4]),
    ]
    for what, node, want in cases:
        graph = write_graph(d, graph_doc(["./libtest_plugin_good.so"], node))
        rc, out, err = run(*RUN, "--allow-plugins", graph)
        expect(rc == 0, f"{what}: a plugin op runs: {err}")
        if rc == 0:
            got, _, _ = read_zarr(os.path.join(d, "out.zarr"))
            expect(got.shape == want.shape and np.array_equal(got, want),
                   f"{what}: {node['op']} computes what numpy does")


def check_refusals(tmp):
    cases = [
        ("abi", "EUNSUPPORTED", ["built for plugin ABI version 42", "loads version 1"]),
        ("no_abi", "ENOTFOUND", ["does not export sl_plugin_abi_version"]),
        ("no_register", "ENOTFOUND", ["does not export sl_plugin_register"]),
        ("dup_builtin", "EEXIST", ['op "cast" exists: a built-in operation']),
        ("dup_self", "EEXIST", ['op "twice" is added twice']),
        ("bad_desc", "EINVAL", ['"halo_without_apply_at": a halo op without apply_at']),
    ]
    for variant, code, words in cases:
        d, _ = workdir(tmp, f"refused_{variant}", (variant,))
        name = f"./libtest_plugin_{variant}.so"
        graph = write_graph(d, graph_doc([name], {"op": "add_const", "value": 1}))
        for cmd in (RUN, ("validate",)):
            rc, out, err = run(*cmd, "--allow-plugins", graph)
            missing = [w for w in [code, "/plugins/0", f"libtest_plugin_{variant}.so"] + words
                       if w not in err]
            expect(rc == 2 and not missing,
                   f"{variant}: sluice {cmd[0]} exits 2 ({rc}) saying {missing}: {err}")
        expect(leftovers(d, ["out.zarr"]) == [], f"{variant}: nothing is created")
    # Two plugins adding the same name: the second is refused, naming the first.
    d, _ = workdir(tmp, "refused_dup_other", ("good", "dup_other"))
    graph = write_graph(d, graph_doc(["./libtest_plugin_good.so", "./libtest_plugin_dup_other.so"],
                                     {"op": "add_const", "value": 1}))
    rc, out, err = run(*RUN, "--allow-plugins", graph)
    expect(rc == 2 and "/plugins/1" in err and 'op "add_const" exists: an operation of plugin'
           in err, f"a name two plugins add is refused at the second: {rc} {err}")
    d, _ = workdir(tmp, "refused_absent", ())
    graph = write_graph(d, graph_doc(["./libmissing.so"], {"op": "add_const", "value": 1}))
    rc, out, err = run(*RUN, "--allow-plugins", graph)
    expect(rc == 2 and "libmissing.so" in err and "cannot load" in err,
           f"a library that is not there: {rc} {err}")


def check_kernel_error(tmp):
    d, data = workdir(tmp, "kernel_error")
    limit = 16 * 40 - 1  # rows 16 and on (chunk row 2) hold larger elements
    graph = write_graph(d, graph_doc(["./libtest_plugin_good.so"],
                                     {"op": "fail_above", "limit": limit}))
    report = os.path.join(d, "report.json")
    rc, out, err = run(*RUN, "--allow-plugins", "--report", report, graph)
    expect(rc == 1 and "EFUNC" in err, f"a kernel error makes run exit 1: {rc} {err}")
    if not os.path.exists(report):
        expect(False, f"no report: {err}")
        return
    rep = json.load(open(report))
    fails = rep["puts"][0]["failures"]
    expect(sorted(f["chunk"] for f in fails) == [[2, 0], [2, 1], [2, 2]],
           f"the chunks of rows 16..23 fail: {[f['chunk'] for f in fails]}")
    expect(all(f["code"] == "EFUNC" and f"above limit {limit}" in f["message"] for f in fails),
           f"each with the plugin's message: {fails}")
    got, _, _ = read_zarr(os.path.join(d, "out.zarr"))
    expect(np.array_equal(got[:16], data[:16].astype(np.float64)), "the other chunks are written")


def check_resume(tmp):
    """A journaled run of a plugin op that failed in one chunk (a corrupt
    input chunk, then repaired) resumes, writing only that chunk; a changed
    parameter of the plugin op is refused."""
    d, data = workdir(tmp, "resume")
    journal, report = os.path.join(d, "j.journal"), os.path.join(d, "report.json")
    graph = write_graph(d, graph_doc(["./libtest_plugin_good.so"],
                                     {"op": "fail_above", "limit": 1e9}))
    # The input's last row of chunks is corrupt first, so the op never sees it.
    chunk = os.path.join(d, "in.zarr", "2.0")
    good = open(chunk, "rb").read()
    with open(chunk, "wb") as f:
        f.write(b"not a zstd frame" * 4)
    rc, out, err = run(*RUN, "--allow-plugins", "--journal", journal, graph)
    expect(rc == 1, f"resume: the run with a corrupt chunk exits 1: {rc} {err}")
    with open(chunk, "wb") as f:
        f.write(good)
    rc, out, err = run(*RUN, "--allow-plugins", "--journal", journal, "--resume", "--report",
                       report, graph)
    expect(rc == 0, f"resume: --resume of the plugin graph exits 0: {rc} {out}{err}")
    if rc == 0:
        s = json.load(open(report))["summary"]
        expect(s["resumed"] == s["chunks"] - 1 and s["objects_written"] == 1,
               f"resume: only the failed chunk is written again: {s}")
        got, _, _ = read_zarr(os.path.join(d, "out.zarr"))
        expect(np.array_equal(got, data.astype(np.float64)), "resume: the output is whole")
    # A run that fails again, then the plugin op's parameter changed.
    with open(chunk, "wb") as f:
        f.write(b"not a zstd frame" * 4)
    rc, out, err = run(*RUN, "--allow-plugins", "--journal", journal, graph)
    with open(chunk, "wb") as f:
        f.write(good)
    kept = tree(os.path.join(d, "out.zarr"))
    graph = write_graph(d, graph_doc(["./libtest_plugin_good.so"],
                                     {"op": "fail_above", "limit": 2e9}))
    rc, out, err = run(*RUN, "--allow-plugins", "--journal", journal, "--resume", graph)
    expect(rc == 2 and "graph changed" in err,
           f"resume: a changed plugin parameter is refused: {rc} {err}")
    expect(tree(os.path.join(d, "out.zarr")) == kept, "resume: the refusal keeps the output")


def check_ops_listing(tmp):
    rc, out, err = run("ops")
    expect(rc == 0 and out.startswith("cast (map): ") and "downsample (regrid)" in out,
           f"sluice ops lists the built-ins: {out}{err}")
    rc, out, err = run("ops", "--plugin", lib("good"))
    expect(rc == 2 and "--allow-plugins" in err, f"--plugin needs permission: {rc} {err}")
    rc, out, err = run("ops", "--allow-plugins", "--plugin", lib("good"), "--plugin", INVERT)
    expect(rc == 0 and "sum3 (halo, plugin " in out and "invert (map, plugin " in out and
           "limit" in out, f"and the plugins' ops: {out}{err}")
    rc, out, err = run("ops", "--allow-plugins", "--plugin", lib("abi"))
    expect(rc == 2 and "ABI version" in err, f"a refused plugin exits 2: {rc} {err}")
    rc, out, err = run("ops", "--json", "--allow-plugins", "--plugin", lib("good"))
    expect(rc == 0, f"sluice ops --json: {err}")
    if rc != 0:
        return
    doc = json.loads(out)
    by_name = {o["name"]: o for o in doc["ops"]}
    expect(by_name["cast"]["origin"] == "builtin" and by_name["cast"]["library"] is None,
           f"built-ins say so: {by_name['cast']}")
    fa = by_name.get("fail_above", {})
    expect(fa.get("origin") == "plugin" and fa.get("library") == lib("good") and
           fa.get("kind") == "map" and fa.get("params") == [
               {"name": "limit", "type": "number", "required": True,
                "doc": "a block holding an element above it fails"}],
           f"a plugin op with its parameters: {fa}")
    try:
        import jsonschema
    except ImportError:
        print("ops schema check skipped: no python3-jsonschema")
        return
    schema = json.load(open(os.path.join(SOURCE, "docs", "ops.schema.json")))
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as e:
        expect(False, f"sluice ops --json follows docs/ops.schema.json: {e.message}")


def main():
    for path in (lib("good"), INVERT):
        if not os.path.exists(path):
            print(f"FAIL: {path} is not built")
            return 1
    with scratch_dir("sluice-plugins-") as tmp:
        check_permission(tmp)
        check_kinds(tmp)
        check_refusals(tmp)
        check_kernel_error(tmp)
        check_resume(tmp)
        check_ops_listing(tmp)
    return finish("check_plugins")


if __name__ == "__main__":
    sys.exit(main())
