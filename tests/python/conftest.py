# SPDX-License-Identifier: MIT
"""pytest setup for the Python package's tests (tests/python).

meson runs them with PYTHONPATH=BUILD/python, so `import sluice` is the
package of this build; run by hand:

    PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
"""

import os
import threading

import numpy as np
import pytest

import sluice

# Every dtype sluice stores, as numpy names them.
DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def random_values(rng, shape, dtype):
    """Random values of `dtype` covering its range (NaN-free floats)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return (rng.standard_normal(shape) * 1000).astype(dt)


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name, so a failure repeats."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)


@pytest.fixture
def sluice_exe():
    exe = os.environ.get("SL_SLUICE_EXE")
    if not exe or not os.path.exists(exe):
        pytest.skip("SL_SLUICE_EXE is not set (meson test sets it)")
    return exe


@pytest.fixture
def source_root():
    return os.environ.get(
        "SL_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    )


def make_array(path, values, chunks, **kwargs):
    """A sluice array holding `values`."""
    a = sluice.create(path, shape=values.shape, chunks=chunks, dtype=values.dtype, **kwargs)
    a[...] = values
    return a


def in_threads(fn, n):
    """Run fn(0) .. fn(n - 1) on n threads at once; raise the first error."""
    errors = []

    def run(k):
        try:
            fn(k)
        except BaseException as e:  # noqa: BLE001 - raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
