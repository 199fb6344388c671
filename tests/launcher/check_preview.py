#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check the launcher's pictures.  `sluice preview`: the PNG it writes is decoded here (a small
decoder of 8-bit grey PNGs on zlib, so the check does not trust the writer's
library) and its pixels compared with the array zarr-python wrote: a plane
at fixed indices by position and by name, a transposed plane, max and mean
projections, the fit to --max-size (one factor for both sides, mean of the
blocks), percentile contrast, the level a multiscale group is read at, and
usage errors.  `--status-map`: a copy and a pyramid with a corrupt and an
absent input chunk draw each chunk's square in its outcome's colour at its
grid position (the panels' geometry read from the run's stderr), the levels
above a failure in the upstream colour, and a legend; the run's --report
validates against docs/report.schema.json and names the same chunks in the
same grid.
"""
import re
import json
import os
import struct
import sys
import tempfile
import zlib

import jsonschema
import numpy as np
import zarr

from launcher_util import expect, failures, finish, run

def png_read(path):
    """Decode an 8-bit greyscale (or RGB) non-interlaced PNG into a numpy array."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        assert zlib.crc32(kind + body) == crc, f"bad CRC in chunk {kind}"
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, colour, _, _, interlace = ihdr
    assert depth == 8 and colour in (0, 2) and interlace == 0, f"unexpected IHDR {ihdr}"
    bpp = 1 if colour == 0 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = np.zeros((height, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (int(line[x]) + p) & 0xFF
        out[y] = cur
        prev = cur
    return out if bpp == 1 else out.reshape(height, width, 3)


def preview(src, out, *opts):
    rc, _, err = run("preview", src, "-o", out, *opts)
    if rc != 0:
        failures.append(f"preview {src} {' '.join(opts)}: exit {rc}: {err}")
        return None, err
    return png_read(out), err


OK, ECORRUPT, ENOTFOUND, UPSTREAM = (46, 160, 67), (214, 39, 40), (31, 119, 180), (255, 165, 0)


def panels_of(err):
    """{put name: (x, y, rows, cols, per, cell)} from the status map's stderr lines."""
    out = {}
    for m in re.finditer(r'status map: put "([^"]+)" at (\d+),(\d+): (\d+) x (\d+) chunks, '
                         r"(\d+) per square of (\d+) px", err):
        out[m.group(1)] = tuple(int(v) for v in m.groups()[1:])
    return out


def square(img, panel, r, c):
    x, y, _, _, per, cell = panel
    return tuple(img[y + (r // per) * cell + cell // 2, x + (c // per) * cell + cell // 2])


def check_status_map(tmp):
    src = os.path.join(tmp, "m.zarr")
    rc, _, err = run("generate", src, "--shape", "2,64,96", "--chunks", "1,16,16", "--format", "v2")
    expect(rc == 0, f"generate: {err}")
    open(os.path.join(src, "1.2.3"), "wb").write(b"garbage")
    os.remove(os.path.join(src, "0.0.5"))
    png = os.path.join(tmp, "map.png")
    report = os.path.join(tmp, "report.json")
    rc, _, err = run("copy", src, os.path.join(tmp, "c.zarr"), "--missing-is-error",
                     "--status-map", png, "--report", report)
    schema = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                         "docs", "report.schema.json")))
    rep = json.load(open(report)) if os.path.exists(report) else {}
    problems = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(rep)]
    expect(not problems, f"the report validates against docs/report.schema.json: {problems[:3]}")
    if not problems:
        expect(rep["summary"]["journal_s"] > 0,
               f"the journal beside --report is timed: {rep['summary']}")
        put = rep["puts"][0]
        got = sorted((tuple(f["chunk"]), f["code"]) for f in put["failures"])
        expect(put["grid"] == [2, 4, 6] and got == [((0, 0, 5), "ENOTFOUND"),
                                                   ((1, 2, 3), "ECORRUPT")],
               f"the report names the map's failed chunks in its grid: {put}")
    panels = panels_of(err)
    expect(rc == 1 and "output" in panels, f"copy with 2 failed chunks draws a map: {err}")
    if "output" in panels:
        img = png_read(png)
        p = panels["output"]
        expect(p[2:4] == (4, 6), f"the map of a 2 x 4 x 6 grid is 4 x 6 squares: {p}")
        for r in range(4):
            for c in range(6):
                want = ENOTFOUND if (r, c) == (0, 5) else ECORRUPT if (r, c) == (2, 3) else OK
                got = square(img, p, r, c)
                expect(got == want, f"square {r},{c} of the copy is {got}, expected {want}")
        below = img[p[1] + 4 * p[5]:, :]
        colours = {tuple(v) for v in below.reshape(-1, 3)}
        expect({OK, ECORRUPT, ENOTFOUND} <= colours, "the legend shows the three outcomes")
    # A pyramid: level 1 reads the failed chunks' blocks, so its squares there are upstream.
    rc, _, err = run("pyramid", src, os.path.join(tmp, "p.zarr"), "--levels", "2",
                     "--factors", "1,2,2", "--missing-is-error", "--status-map", png)
    panels = panels_of(err)
    expect(rc == 1 and len(panels) == 2, f"a 2-level pyramid draws two panels: {err}")
    if len(panels) == 2:
        img = png_read(png)
        (n0, p0), (n1, p1) = sorted(panels.items(), key=lambda kv: kv[1][1])
        expect(square(img, p0, 2, 3) == ECORRUPT and square(img, p0, 0, 5) == ENOTFOUND,
               f"level 0 ({n0}) shows both failures")
        expect(p1[2:4] == (2, 3), f"level 1 ({n1}) is 2 x 3 chunks: {p1}")
        for r in range(2):
            for c in range(3):
                want = UPSTREAM if (r, c) in ((0, 2), (1, 1)) else OK
                got = square(img, p1, r, c)
                expect(got == want, f"level 1 square {r},{c} is {got}, expected {want}")
    rc, _, err = run("copy", src, os.path.join(tmp, "d.zarr"), "--status-map",
                     os.path.join(tmp, "no", "map.png"))
    expect(rc == 2 and "--status-map" in err, f"an unwritable --status-map is refused first: {err}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_status_map(tmp)
        # a[z, y, x] in 0..255, so --range 0,255 maps values to grey levels as they are
        z, y, x = np.meshgrid(np.arange(4), np.arange(50), np.arange(60), indexing="ij")
        vals = ((y * 3 + x * 2 + z * 40) % 256).astype(np.uint16)
        src = os.path.join(tmp, "a.zarr")
        arr = zarr.open(src, mode="w", shape=vals.shape, chunks=(1, 16, 16), dtype="u2")
        arr[:] = vals
        arr.attrs["_ARRAY_DIMENSIONS"] = ["z", "y", "x"]
        png = os.path.join(tmp, "p.png")

        img, _ = preview(src, png, "--index", "2", "--range", "0,255")
        expect(img is not None and img.shape == (50, 60) and (img == vals[2]).all(),
               "a plane at a positional index reads back equal")
        img, _ = preview(src, png, "--axes", "2,1", "--range", "0,255")
        expect(img is not None and img.shape == (60, 50) and (img == vals[0].T).all(),
               "--axes x,y draws the plane transposed")
        img, _ = preview(src, png, "--along", "0", "--range", "0,255")
        expect(img is not None and (img == vals.max(axis=0)).all(), "max projection along z")
        img, _ = preview(src, png, "--along", "0", "--project", "min", "--range", "0,255")
        expect(img is not None and (img == vals.min(axis=0)).all(), "min projection along z")
        img, _ = preview(src, png, "--along", "0", "--project", "mean", "--range", "0,255")
        want = np.rint(vals.astype(np.float64).mean(axis=0))
        expect(img is not None and np.abs(img - want).max() <= 1, "mean projection along z")
        # fit: 60 columns to at most 20 -> factor 3 on both sides: 17 x 20
        img, _ = preview(src, png, "--index", "1", "--max-size", "20", "--range", "0,255")
        expect(img is not None and img.shape == (17, 20),
               f"--max-size 20 keeps the aspect: {None if img is None else img.shape}")
        if img is not None and img.shape == (17, 20):
            plane = vals[1].astype(np.float64)
            for (r, c) in ((0, 0), (5, 7), (16, 19), (10, 3)):
                block = plane[3 * r:3 * r + 3, 3 * c:3 * c + 3]
                expect(abs(img[r, c] - np.rint(block.mean())) <= 1,
                       f"fit pixel {r},{c}: {img[r, c]} vs block mean {block.mean()}")
        # percentiles: the defaults stretch to the full grey range
        img, err = preview(src, png)
        expect(img is not None and img.min() == 0 and img.max() == 255 and "black" in err,
               f"default contrast spans black to white: {err}")
        lo, hi = np.percentile(vals[0], [10, 90])
        img, err = preview(src, png, "--contrast", "10,90")
        expect(img is not None and f"black {lo:g}" in err and f"white {hi:g}" in err,
               f"--contrast 10,90 takes the plane's percentiles {lo:g}, {hi:g}: {err}")

        # a multiscale group: the coarsest level that still fills --max-size
        pyr = os.path.join(tmp, "pyr.zarr")
        big = os.path.join(tmp, "big.zarr")
        rc, _, err = run("generate", big, "--shape", "2,256,256", "--chunks", "1,64,64")
        expect(rc == 0, f"generate: {err}")
        rc, _, err = run("pyramid", big, pyr, "--levels", "4", "--factors", "1,2,2")
        expect(rc == 0, f"pyramid: {err}")
        img, err = preview(pyr, png, "--max-size", "64")
        expect(img is not None and img.shape == (64, 64) and "from level 2 of 4" in err,
               f"a multiscale group is read at level 2 for 64 pixels: {err}")
        rc, _, err = run("preview", pyr, "-o", png, "--max-size", "64", "--level", "0")
        expect(rc == 0 and "from level 0 of 4" in err and png_read(png).shape == (64, 64),
               f"--level 0 reads level 0 and fits it: {err}")
        # the same level 2 picture as previewing the level itself
        img2, _ = preview(os.path.join(pyr, "2"), png, "--max-size", "64")
        expect(img is not None and img2 is not None and (img == img2).all(),
               "level 2 of the group and the array itself give one picture")
        # z=1 in level 0 coordinates; the pyramid keeps z (factor 1)
        img3, _ = preview(pyr, png, "--max-size", "64", "--index", "1")
        img4, _ = preview(os.path.join(pyr, "2"), png, "--max-size", "64", "--index", "1")
        expect(img3 is not None and img4 is not None and (img3 == img4).all(),
               "an index in level 0 coordinates maps to the level read")

        # usage errors
        one = os.path.join(tmp, "one.zarr")
        zarr.open(one, mode="w", shape=(10,), chunks=(5,), dtype="u1")[:] = 1
        grp = os.path.join(tmp, "grp.zarr")
        zarr.open_group(grp, mode="w")
        for args, text in ((["preview", one, "-o", png], "needs at least 2"),
                           (["preview", grp, "-o", png], "without OME-Zarr multiscales"),
                           (["preview", src, "-o", png, "--index", "9"], "not an index of axis 0"),
                           (["preview", src, "-o", png, "--index", "q=1"], 'no axis "q"'),
                           (["preview", src, "-o", png, "--index", "z=1,0"], "by name or none"),
                           (["preview", src, "-o", png, "--along", "y"], "shown in the picture"),
                           (["preview", src, "-o", png, "--project", "max"], "needs --along"),
                           (["preview", src, "-o", png, "--contrast", "90,10"], "LO < HI"),
                           (["preview", src, "-o", png, "--level", "1"], "multiscale groups"),
                           (["preview", pyr, "-o", png, "--level", "7"], "4 levels"),
                           (["preview", src], "-o OUT.png is missing")):
            rc, _, err = run(*args)
            expect(rc == 2 and text in err, f"{' '.join(args[2:])}: exit 2 with {text!r}: {err}")
        rc, _, err = run("preview", src, "-o", os.path.join(tmp, "no", "dir", "p.png"))
        expect(rc == 1 and "cannot write" in err, f"an unwritable output fails: {err}")

    return finish()


if __name__ == "__main__":
    sys.exit(main())
