#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reductions against numpy: sl_reduce_block and the state path on random arrays.

Each case draws a method, an input dtype (bool, every integer, float32,
float64), an output dtype, a shape of rank 1 to 4 (extents of 0 now and
then, a long axis now and then), the reduced axes (all of them now and
then), axes stored reversed, and ddof 0 or 1 for std and var.  Float values
include NaN, +-inf, -0.0, 1e300; integers their type's extremes.
reduce_numpy (reduce_numpy_main.c) reduces the array directly and through
partial states cut at random places, in the method's natural dtype
(numpy's default; float64 for float results) and in the drawn dtype.

Checks per case:
  1. the natural direct result against numpy (np.sum, np.prod, np.mean,
     np.std, np.var, np.min, np.max, np.any, np.all, np.count_nonzero,
     np.nansum, np.nanmean, np.nanmin, np.nanmax on x, or on
     x.astype(float64) for float sums, products and moments): exact for
     integer, min/max (by value: numpy's sign of a zero result depends on
     positions, see ops/README.md), any, all and count methods; for the
     others within 1e-12 relative or numpy's own rounding error bound
     (pairwise summation: about log2(n) eps sum|x|, as a multiple of
     which sluice's compensated sum is never worse);
  2. the drawn-dtype result equals the natural one through the cast rules;
  3. the state path's natural result equals the direct one (exactly, or
     within the same tolerance for float methods), and its drawn-dtype
     result equals its natural one through the cast rules.
min, max, nanmin and nanmax of an empty extent must fail, as numpy raises.

Run by meson test: check_reduce_numpy.py REDUCE_NUMPY.  Exits 77 (skipped)
with a message when numpy is not installed.  Fixed seed; a few seconds.
"""
import os
import subprocess
import sys
import warnings

# numpy_reference exits 77 (skipped) without numpy.
from numpy_reference import (DTYPES, INEXACT, METHODS, cast_rules, close, error_bound,
                             natural_dtype, read_raw, reference, run_cases, same, shape_arg,
                             write_raw)
import numpy as np

DRIVER = sys.argv[1]
N_CASES = 500
EMPTY_FAILS = {"min", "max", "nanmin", "nanmax"}


def values(dtype, shape, method, rng):
    """Random values of `dtype` with the awkward ones mixed in."""
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        p = rng.choice([0.1, 0.5, 0.95])
        return (rng.random(n) < p).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True).astype(dt)
        special = np.array([x for x in (0, 1, -1, 2, 255, 2 ** 31, 2 ** 53 + 1, info.max,
                                        info.min) if info.min <= x <= info.max], dtype=dt)
        pick = rng.random(n) < 0.2
        v[pick] = rng.choice(special, int(pick.sum()))
        big = rng.random(n) < 0.1
        v[big] = rng.integers(info.min, info.max, int(big.sum()), endpoint=True, dtype=dt)
        if rng.random() < 0.3:
            v[rng.random(n) < 0.5] = 0
        return v.reshape(shape)
    if method == "prod":  # keep products inside the range, mostly
        v = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])
        pick = rng.random(n) < (0.3 if rng.random() < 0.3 else 0.0)
    else:
        v = rng.normal(0, 40, n) + (rng.choice([0.0, 1e6]) if rng.random() < 0.2 else 0.0)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -2.5, 1e30, -1e-30, 3.0e38,
                            1e300, 2.0 ** 60, 1.0])
        pick = rng.random(n) < rng.choice([0.0, 0.05, 0.3])
    v = np.where(pick, rng.choice(special, n), v)
    with np.errstate(all="ignore"):
        return v.astype(dt).reshape(shape)


def draw_shape(rng):
    rank = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, 7)) for _ in range(rank)]
    if rng.random() < 0.15:
        shape[int(rng.integers(rank))] = int(rng.integers(300, 1200))
    if rng.random() < 0.06:
        shape[int(rng.integers(rank))] = 0
    while np.prod(shape) > 6000:
        shape[int(np.argmax(shape))] //= 2
    return tuple(shape)


def first_bad(ok, got, want, what):
    idx = tuple(int(i) for i in np.argwhere(~ok)[0])
    return (f"{what}: {int((~ok).sum())} elements differ, first at {idx}: "
            f"got {got[idx]!r}, want {want[idx]!r}")


def run_case(tmp, case, rng):
    method = METHODS[int(rng.integers(len(METHODS)))]
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    out_dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    shape = draw_shape(rng)
    rank = len(shape)
    mask = (1 << rank) - 1 if rng.random() < 0.3 else int(rng.integers(1, 1 << rank))
    axes = tuple(a for a in range(rank) if mask >> a & 1)
    flips = int(rng.integers(0, 1 << rank)) if rng.random() < 0.4 else 0
    ddof = float(rng.integers(0, 2)) if method in ("std", "var") else 0.0
    x = values(dtype, shape, method, rng)
    stored = np.flip(x, [a for a in range(rank) if flips >> a & 1]) if flips else x
    files = [os.path.join(tmp, n) for n in ("in", "direct", "natural", "state", "state_nat")]
    write_raw(files[0], stored, dtype)
    args = [DRIVER, method, dtype, out_dtype, shape_arg(shape), str(mask), str(flips), str(ddof),
            str(int(rng.integers(1, 2 ** 62)))] + files
    what = (f"case {case}: {method} of {dtype} {shape} along {axes} (flips {flips}, ddof {ddof})"
            f" to {out_dtype}")
    p = subprocess.run(args, capture_output=True, text=True)
    empty_out = any(shape[a] == 0 for a in range(rank) if a not in axes)
    if method in EMPTY_FAILS and any(shape[a] == 0 for a in axes) and not empty_out:
        if p.returncode == 4 and "of an empty extent" in p.stdout:
            return None
        return f"{what}: expected 'of an empty extent', got exit {p.returncode}: {p.stdout}"
    if p.returncode != 0:
        return f"{what}: reduce_numpy exited {p.returncode}: {p.stdout}{p.stderr}"
    oshape = tuple(1 if a in axes else shape[a] for a in range(rank))
    nat = natural_dtype(method, dtype)
    direct, natural = read_raw(files[1], out_dtype, oshape), read_raw(files[2], nat, oshape)
    state, state_nat = read_raw(files[3], out_dtype, oshape), read_raw(files[4], nat, oshape)
    want = reference(method, x, axes, ddof)
    inexact = method in INEXACT and nat.kind == "f"
    if inexact:
        bound = error_bound(method, x, axes, want)
        ok = close(natural, want, bound, method)
        ok_state = close(state_nat, natural, 2 * bound, method)
    else:
        ok = same(natural, want)
        ok_state = same(state_nat, natural)
    if not ok.all():
        return first_bad(ok, natural, want, what + ", direct against numpy")
    if not ok_state.all():
        return first_bad(ok_state, state_nat, natural, what + ", states against direct")
    for got, nat_got, name in ((direct, natural, "direct"), (state, state_nat, "states")):
        cast = cast_rules(nat_got, out_dtype)
        ok = same(got, cast) if np.dtype(out_dtype).kind != "f" or nat.kind != "f" else \
            same(got, nat_got.astype(out_dtype))
        if not ok.all():
            return first_bad(ok, got, cast, f"{what}, {name} through the cast rules")
    return None


def main():
    warnings.simplefilter("ignore")  # numpy's "Mean of empty slice" and the like
    return run_cases(N_CASES, 20240612, run_case)


if __name__ == "__main__":
    sys.exit(main())
