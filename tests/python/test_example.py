# SPDX-License-Identifier: MIT
"""examples/python/pyramid_and_read.py runs, and what it prints agrees with
the `sluice` program and numpy."""

import os
import subprocess
import sys

import numpy as np

import sluice


def test_pyramid_and_read_example(tmp_path, source_root, sluice_exe):
    script = os.path.join(source_root, "examples", "python", "pyramid_and_read.py")
    out = subprocess.run([sys.executable, script, str(tmp_path), "64"], check=True,
                         capture_output=True, text=True, timeout=300).stdout
    assert "level 2: shape (16, 16, 16)" in out, out
    checksum = out.strip().splitlines()[-1].split()[-1]
    cli = subprocess.run([sluice_exe, "checksum", str(tmp_path / "pyramid.zarr" / "0")],
                         check=True, capture_output=True, text=True).stdout.split()[0]
    assert checksum == cli
    image = sluice.open(tmp_path / "image.zarr")[...]
    np.testing.assert_array_equal(sluice.open(tmp_path / "pyramid.zarr" / "0")[...], image)
    line = [ln for ln in out.splitlines() if ln.startswith("stats:")][0]
    assert "min %d max %d" % (image.min(), image.max()) in line
    assert sluice.open(tmp_path / "image.zarr").checksum() == checksum
