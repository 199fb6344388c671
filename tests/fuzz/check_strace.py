#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Run `sluice info`, `sluice checksum` and `sluice copy` under strace on
stores whose chunks, chunk directories and metadata are symbolic links
leading out of the store root, and on a clean store, and check that every
file the program opens, creates, renames, links or removes lies inside a
store root (or is one of the system's own: shared libraries, /proc, /sys,
/dev, the build directory).  The escapes must also be refused with a
message naming the store root.

Exits 77 (skipped, with the reason) when strace is missing or cannot trace
(ptrace not permitted, as in some containers).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SLUICE = os.environ.get("SL_SLUICE_EXE", "sluice")
BUILD = os.environ.get("SL_BUILD_ROOT", os.path.dirname(os.path.dirname(SLUICE)))
TRACED = ("open,openat,openat2,creat,truncate,mkdir,mkdirat,rename,renameat,renameat2,"
          "unlink,unlinkat,rmdir,link,linkat,symlink,symlinkat")
# What a program may open outside the stores: its loader, libraries, the
# kernel's views, and the build tree holding libsluice and the program.
SYSTEM = ("/etc/ld.so.cache", "/etc/ld.so.preload", "/lib/", "/lib64/", "/usr/lib/",
          "/usr/lib64/", "/usr/local/lib/", "/proc/", "/sys/", "/dev/",
          "/usr/share/locale/", "/usr/lib/locale/", "/etc/localtime")
# How sluice refuses a link out of its root ("... resolves to X, outside the
# store root"; the launcher's summary may cut the line short).
ESCAPE = "outside the"
failures = []


def skip(why):
    print(f"skipped: {why}")
    sys.exit(77)


def expect(cond, what):
    if not cond:
        failures.append(what)


strace = shutil.which("strace")
if strace is None:
    skip("strace is not installed (apt-get install strace)")
probe = subprocess.run([strace, "-f", "-qq", "-o", os.devnull, "true"],
                       capture_output=True, text=True)
if probe.returncode != 0:
    skip(f"strace cannot trace here (ptrace not permitted?): {probe.stderr.strip()}")


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def v3_array(root, shape, chunks):
    """A uint8 v3 array with raw chunks: chunk (i, 0) holds bytes i*16..."""
    doc = {"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
           "codecs": [{"name": "bytes"}]}
    write(os.path.join(root, "zarr.json"), json.dumps(doc).encode())
    n = chunks[0] * chunks[1]
    for i in range(shape[0] // chunks[0]):
        write(os.path.join(root, "c", str(i), "0"), bytes(range(i * 16, i * 16 + n)))


def v2_array(root):
    doc = {"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "|u1", "order": "C",
           "compressor": None, "filters": None, "fill_value": 0}
    write(os.path.join(root, ".zarray"), json.dumps(doc).encode())
    write(os.path.join(root, "0"), bytes([1, 2, 3, 4]))


def setup(tmp):
    """Stores under tmp/stores; everything a link may point at under tmp/elsewhere."""
    stores, outside = os.path.join(tmp, "stores"), os.path.join(tmp, "elsewhere")
    write(os.path.join(outside, "secret"), bytes(8))
    write(os.path.join(outside, "dir", "0"), bytes(8))
    write(os.path.join(outside, "zarr.json"), b"{}")
    write(os.path.join(outside, "attrs.json"), b'{"stolen": true}')
    clean = os.path.join(stores, "clean")
    v3_array(clean, [6, 4], [2, 4])
    links = os.path.join(stores, "links")
    v3_array(links, [6, 4], [2, 4])
    os.remove(os.path.join(links, "c", "1", "0"))
    os.symlink(os.path.join(outside, "secret"), os.path.join(links, "c", "1", "0"))
    shutil.rmtree(os.path.join(links, "c", "2"))
    os.symlink(os.path.join(outside, "dir"), os.path.join(links, "c", "2"))
    meta_link = os.path.join(stores, "meta-link")
    os.makedirs(meta_link)
    os.symlink(os.path.join(outside, "zarr.json"), os.path.join(meta_link, "zarr.json"))
    attrs_link = os.path.join(stores, "attrs-link")
    v2_array(attrs_link)
    os.symlink(os.path.join(outside, "attrs.json"), os.path.join(attrs_link, ".zattrs"))
    return stores, outside


QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
DIRFD = re.compile(r'^\d+</([^>]*)>')


def traced_paths(log, cwd):
    """(syscall, absolute path) for every path argument in an strace -y log."""
    out = []
    with open(log) as f:
        for line in f:
            m = re.match(r"^\d+\s+(\w+)\((.*)", line)
            if m is None:
                continue
            call, args = m.groups()
            base = cwd
            d = DIRFD.match(args)
            if d is not None:
                base = "/" + d.group(1)
            for p in QUOTED.findall(args):
                p = p.encode().decode("unicode_escape")
                out.append((call, p if p.startswith("/") else os.path.join(base, p)))
    return out


def inside(path, roots):
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r + "/") for r in roots)


def root_parent(call, path, roots):
    """mkdir of a directory above a root: making the root, as mkdir -p does."""
    return call in ("mkdir", "mkdirat") and any(r.startswith(path.rstrip("/") + "/")
                                                for r in roots)


def staging_sibling(path, roots):
    """A root's parent, or inside the hidden sibling a new node is written in
    before it is put in place (.sluice-tmp.node.<pid>@<host>+<root's name>)."""
    real = os.path.realpath(path)
    for r in roots:
        parent, base = os.path.dirname(r), os.path.basename(r)
        if real == parent:
            return True
        rel = os.path.relpath(real, parent)
        top = rel.split("/")[0]
        if top.startswith(".sluice-tmp.node.") and (top.endswith("+" + base) or
                                                     top.endswith("+" + base + ".old")):
            return True
    return False


def system(path):
    real = os.path.realpath(path)
    build = os.path.realpath(BUILD)
    return (any(path.startswith(s) or real.startswith(s) for s in SYSTEM)
            or real.startswith(build + "/"))


def traced(tmp, name, args, roots):
    """Run sluice ARGS under strace; return (rc, stderr); check the paths."""
    log = os.path.join(tmp, f"{name}.strace")
    env = dict(os.environ)
    # LeakSanitizer cannot run under ptrace; the other sanitizers can.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    p = subprocess.run([strace, "-f", "-qq", "-y", "-s", "4096", "-e", f"trace={TRACED}",
                        "-o", log, SLUICE, *args], capture_output=True, text=True, cwd=tmp,
                       env=env)
    paths = traced_paths(log, tmp)
    expect(paths, f"{name}: strace recorded no file operations")
    expect(os.path.basename(SLUICE) in open(log).read(), f"{name}: strace did not see sluice")
    bad = sorted({f"{c} {p}" for c, p in paths
                  if not inside(p, roots) and not system(p) and not root_parent(c, p, roots)
                  and not staging_sibling(p, roots)})
    expect(not bad, f"{name}: touched outside the store roots: {bad}")
    store_ops = sum(1 for _, p in paths if inside(p, roots))
    print(f"{name}: exit {p.returncode}, {len(paths)} file operations traced, "
          f"{store_ops} inside the stores, {len(bad)} elsewhere")
    return p.returncode, p.stderr


def main():
    with tempfile.TemporaryDirectory(prefix="sluice-strace-") as tmp:
        tmp = os.path.realpath(tmp)
        stores, outside = setup(tmp)
        links, clean = os.path.join(stores, "links"), os.path.join(stores, "clean")
        out = os.path.join(stores, "copies")
        # Each command may only use its own stores.
        rc, err = traced(tmp, "info-links", ["info", links], [links])
        expect(rc == 0, f"info of a store with links: {rc} {err}")
        rc, err = traced(tmp, "checksum-links", ["checksum", links], [links])
        expect(rc != 0 and ESCAPE in err,
               f"checksum through links: exit {rc}, stderr {err!r}")
        rc, err = traced(tmp, "copy-links", ["copy", "--no-progress", links, out + "/a"],
                         [links, out + "/a"])
        expect(rc == 1 and ESCAPE in err,
               f"copy through links: exit {rc}, stderr {err!r}")
        rc, err = traced(tmp, "info-meta-link", ["info", stores + "/meta-link"],
                         [stores + "/meta-link"])
        expect(rc != 0 and ESCAPE in err,
               f"zarr.json linked outside: exit {rc}, stderr {err!r}")
        rc, err = traced(tmp, "info-attrs-link", ["info", stores + "/attrs-link"],
                         [stores + "/attrs-link"])
        expect(rc != 0 and ESCAPE in err,
               f".zattrs linked outside: exit {rc}, stderr {err!r}")
        rc, err = traced(tmp, "copy-clean", ["copy", "--no-progress", clean, out + "/b"],
                         [clean, out + "/b"])
        expect(rc == 0, f"clean copy: exit {rc}, stderr {err!r}")
        rc, err = traced(tmp, "checksum-clean", ["checksum", clean, out + "/b"],
                         [clean, out + "/b"])
        sums = {line.split()[0] for line in
                subprocess.run([SLUICE, "checksum", clean, out + "/b"], capture_output=True,
                               text=True).stdout.splitlines()}
        expect(rc == 0 and len(sums) == 1, f"clean copy checksums differ: {sums} {err!r}")
        expect(not os.path.exists(os.path.join(outside, "dir", "1")) and
               sorted(os.listdir(outside)) == ["attrs.json", "dir", "secret", "zarr.json"],
               f"something was written outside: {os.listdir(outside)}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


sys.exit(main())
