#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Expressions against numpy: sl_expr on random arrays, element for element.

Each case draws an expression from the lists below, a working type
(float32 or float64), an output dtype, an output shape of rank 1 to 5 and
three inputs a, b, c of random dtypes (bool, uint8, uint16, int32, int64,
float32, float64) whose shapes broadcast to it the numpy way (fewer
dimensions, extents of 1) and whose axes are sometimes stored reversed.
Values include NaN, +-inf, -0.0, zeros (for division) and integers past
2^24 and 2^53.  expr_numpy (expr_numpy_main.c) evaluates the expression
through stride-0 and negative-stride views; numpy evaluates it on
`x.astype(working)` with its ufuncs (np.maximum, np.remainder, ...), every
literal a scalar of the working type, and the result goes through the cast
rules of ops/README.md (written out below).

EXACT expressions must match bit for bit (NaN matches any NaN).  ULP
expressions apply one transcendental function (or **) to exactly computed
arguments and must lie within 1 ulp of the correctly rounded value,
computed in long double: numpy's own float32 exp/log and its AVX-512
float64 sin/cos are themselves up to 2-3 ulp off, so they cannot be the
reference.

Run by meson test: check_expr_numpy.py EXPR_NUMPY.  Exits 77 (skipped)
with a message when numpy is not installed.  Fixed seed; a few seconds.
"""
import os
import subprocess
import sys

# numpy_reference exits 77 (skipped) without numpy.
from numpy_reference import cast_rules, read_raw, run_cases, shape_arg, write_raw
import numpy as np

DRIVER = sys.argv[1]
N_CASES = 400
IN_DTYPES = ["bool", "uint8", "uint16", "int32", "int64", "float32", "float64"]
OUT_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64"]

# Helpers for the references: T is the working type, k(x) a literal in it.
def tf(x, T):
    """A comparison or logical result as 1/0 in T."""
    return np.asarray(x).astype(T)


def nz(x):
    return x != 0  # NaN is nonzero, as bool(nan) is True


def via(x, dtype, T):
    """Conversion through `dtype` by the cast rules, back into T."""
    return cast_rules(x, dtype).astype(T)


# (expression, reference(a, b, c, k, T)), bit-exact in the working type.
EXACT = [
    ("(a - b) / max(c, 1)", lambda a, b, c, k, T: (a - b) / np.maximum(c, k(1))),
    ("a + b * c", lambda a, b, c, k, T: a + b * c),
    ("a * b - c", lambda a, b, c, k, T: a * b - c),
    ("(a + 1) * (b - 2) / (c + 0.5)", lambda a, b, c, k, T: (a + k(1)) * (b - k(2)) / (c + k(0.5))),
    ("-a", lambda a, b, c, k, T: -a),
    ("+a - -b", lambda a, b, c, k, T: a - (-b)),
    ("a / b", lambda a, b, c, k, T: a / b),
    ("a / 0 + 0 / b", lambda a, b, c, k, T: a / k(0) + k(0) / b),
    ("a % b", lambda a, b, c, k, T: np.remainder(a, b)),
    ("a % 3", lambda a, b, c, k, T: np.remainder(a, k(3))),
    ("-7.5 % b", lambda a, b, c, k, T: np.remainder(k(-7.5), b)),
    ("a % -0.25", lambda a, b, c, k, T: np.remainder(a, k(-0.25))),
    ("a < b", lambda a, b, c, k, T: tf(a < b, T)),
    ("a <= 2.5", lambda a, b, c, k, T: tf(a <= k(2.5), T)),
    ("a > b", lambda a, b, c, k, T: tf(a > b, T)),
    ("a >= c", lambda a, b, c, k, T: tf(a >= c, T)),
    ("a == b", lambda a, b, c, k, T: tf(a == b, T)),
    ("a != c", lambda a, b, c, k, T: tf(a != c, T)),
    ("a and b", lambda a, b, c, k, T: tf(nz(a) & nz(b), T)),
    ("a or not b", lambda a, b, c, k, T: tf(nz(a) | ~nz(b), T)),
    ("not a < b and c", lambda a, b, c, k, T: tf(~(a < b) & nz(c), T)),
    ("where(a > b, a, c)", lambda a, b, c, k, T: np.where(a > b, a, c)),
    ("where(a, 1, b)", lambda a, b, c, k, T: np.where(nz(a), k(1), b)),
    ("where(c, a, -1)", lambda a, b, c, k, T: np.where(nz(c), a, k(-1))),
    ("where(a, 2, 3)", lambda a, b, c, k, T: np.where(nz(a), k(2), k(3))),
    ("clip(a, b, c)", lambda a, b, c, k, T: np.clip(a, b, c)),
    ("clip(a, 0, 100)", lambda a, b, c, k, T: np.clip(a, k(0), k(100))),
    ("min(a, b)", lambda a, b, c, k, T: np.minimum(a, b)),
    ("max(a, b) + min(c, 2)", lambda a, b, c, k, T: np.maximum(a, b) + np.minimum(c, k(2))),
    ("max(a, nan)", lambda a, b, c, k, T: np.maximum(a, k(np.nan))),
    ("abs(a - b)", lambda a, b, c, k, T: np.abs(a - b)),
    ("floor(a / 3)", lambda a, b, c, k, T: np.floor(a / k(3))),
    ("ceil(a * 0.3)", lambda a, b, c, k, T: np.ceil(a * k(0.3))),
    ("round(a * 0.5)", lambda a, b, c, k, T: np.round(a * k(0.5))),
    ("trunc(b / 7)", lambda a, b, c, k, T: np.trunc(b / k(7))),
    ("sign(a - b)", lambda a, b, c, k, T: np.sign(a - b)),
    ("isnan(a / b)", lambda a, b, c, k, T: tf(np.isnan(a / b), T)),
    ("isfinite(a * b)", lambda a, b, c, k, T: tf(np.isfinite(a * b), T)),
    ("sqrt(abs(a))", lambda a, b, c, k, T: np.sqrt(np.abs(a))),
    ("sqrt(a - b)", lambda a, b, c, k, T: np.sqrt(a - b)),
    ("2 * 3 + a", lambda a, b, c, k, T: k(6) + a),
    ("a * (1 / 3)", lambda a, b, c, k, T: a * (k(1) / k(3))),
    ("-2 ** 2 * a", lambda a, b, c, k, T: k(-4) * a),
    ("uint8(a) + b", lambda a, b, c, k, T: via(a, "uint8", T) + b),
    ("int16(a * 300) / 7", lambda a, b, c, k, T: via(a * k(300), "int16", T) / k(7)),
    ("bool(a) + bool(b)", lambda a, b, c, k, T: via(a, "bool", T) + via(b, "bool", T)),
    ("float32(a) * b", lambda a, b, c, k, T: a.astype(np.float32).astype(T) * b),
    ("int64(a) - uint64(b)", lambda a, b, c, k, T: via(a, "int64", T) - via(b, "uint64", T)),
    ("a", lambda a, b, c, k, T: a),
    ("1.5", lambda a, b, c, k, T: np.full(a.shape, k(1.5))),
]

# (expression, argument(a, b, c, k, T) computed exactly, function on long doubles).
ULP = [
    ("exp(a / 100)", lambda a, b, c, k, T: (a / k(100),), np.exp),
    ("log(abs(a) + 1)", lambda a, b, c, k, T: (np.abs(a) + k(1),), np.log),
    ("log1p(abs(b))", lambda a, b, c, k, T: (np.abs(b),), np.log1p),
    ("expm1(a / 50)", lambda a, b, c, k, T: (a / k(50),), np.expm1),
    ("log10(abs(a))", lambda a, b, c, k, T: (np.abs(a),), np.log10),
    ("log2(abs(c))", lambda a, b, c, k, T: (np.abs(c),), np.log2),
    ("sin(a)", lambda a, b, c, k, T: (a,), np.sin),
    ("cos(b / 3)", lambda a, b, c, k, T: (b / k(3),), np.cos),
    ("tan(a / 10)", lambda a, b, c, k, T: (a / k(10),), np.tan),
    ("a ** 2", lambda a, b, c, k, T: (a, k(2)), np.power),
    ("abs(a) ** 0.5", lambda a, b, c, k, T: (np.abs(a), k(0.5)), np.power),
    ("b ** -1", lambda a, b, c, k, T: (b, k(-1)), np.power),
    ("2 ** (a / 30)", lambda a, b, c, k, T: (k(2), a / k(30)), np.power),
    ("abs(a) ** (b / 100)", lambda a, b, c, k, T: (np.abs(a), b / k(100)), np.power),
]


def values(dtype, shape, rng):
    """Random values of `dtype` with the awkward ones mixed in."""
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True).astype(dt)
        special = np.array([x for x in (0, 1, -1, 7, 255, 256, 2 ** 24 + 1, 2 ** 53 + 1, info.max,
                                        info.min) if info.min <= x <= info.max], dtype=dt)
        pick = rng.random(n) < 0.25
        v[pick] = rng.choice(special, int(pick.sum()))
        big = rng.random(n) < 0.15
        v[big] = rng.integers(info.min, info.max, int(big.sum()), endpoint=True, dtype=dt)
        return v.reshape(shape)
    v = rng.normal(0, 40, n)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, 1.5, -2.5, 1e30, -1e-30, 3.0e38,
                        1e300, 2.0 ** 60, 1.0, -1.0])
    pick = rng.random(n) < 0.3
    v = np.where(pick, rng.choice(special, n), v)
    halves = rng.random(n) < 0.1
    v = np.where(halves, np.round(v) + 0.5, v)
    with np.errstate(all="ignore"):
        return v.astype(dt).reshape(shape)


def input_shape(out_shape, rng):
    """A shape that broadcasts to out_shape: leading axes dropped, some extents 1."""
    drop = rng.integers(0, len(out_shape) + 1) if rng.random() < 0.4 else 0
    s = list(out_shape[drop:])
    for i in range(len(s)):
        if rng.random() < 0.25:
            s[i] = 1
    return tuple(s)


def out_shape_for(rng):
    if rng.random() < 0.1:  # long rows: several tiles per row
        return (int(rng.integers(1, 4)), int(rng.integers(500, 1300)))
    rank = int(rng.integers(1, 6))
    shape = [int(rng.integers(1, 8)) for _ in range(rank)]
    while np.prod(shape) > 3000:
        shape[int(np.argmax(shape))] //= 2
    return tuple(shape)


def ordered(x):
    """Floats as integers in the order of the reals (-0.0 = +0.0)."""
    i = x.view(np.int32 if x.dtype == np.float32 else np.int64).astype(np.int64)
    mag = i & (0x7FFFFFFF if x.dtype == np.float32 else 0x7FFFFFFFFFFFFFFF)
    return np.where(i < 0, -mag, mag)


def compare_exact(got, want):
    if want.dtype.kind == "f":
        both_nan = np.isnan(got) & np.isnan(want)
        g, w = np.ascontiguousarray(got), np.ascontiguousarray(want)
        same = (g.view(np.uint8).reshape(g.shape + (-1,)) ==
                w.view(np.uint8).reshape(w.shape + (-1,))).all(axis=-1)
        return same | both_nan
    return got == want


def compare_ulp(got, want_t, out_dtype, T):
    """Within 1 ulp, measured in the coarser of the working and output types."""
    coarse = np.float32 if np.float32 in (T, np.dtype(out_dtype).type) else np.float64
    with np.errstate(all="ignore"):
        g, w = got.astype(coarse), want_t.astype(coarse)
    nan = np.isnan(g) | np.isnan(w)
    ok = np.isnan(g) == np.isnan(w)
    fin = ~nan & np.isfinite(w)
    dist = np.abs(ordered(g) - ordered(w))
    return ok & (nan | (fin & (dist <= 1)) | (~fin & (g == w)))


def run_case(tmp, case, rng):
    ulp = rng.random() < 0.3
    if ulp:
        text, arg_fn, fn = ULP[int(rng.integers(len(ULP)))]
    else:
        text, ref = EXACT[int(rng.integers(len(EXACT)))]
    compute = rng.choice(["float32", "float64"])
    T = np.dtype(compute).type
    out_dtype = rng.choice(["float32", "float64"] if ulp else OUT_DTYPES)
    oshape = out_shape_for(rng)
    args = [DRIVER, text, compute, out_dtype, shape_arg(oshape), os.path.join(tmp, "out")]
    views = []
    for name in "abc":
        dtype = rng.choice(IN_DTYPES)
        shape = input_shape(oshape, rng)
        arr = values(dtype, shape, rng)
        flips = int(rng.integers(0, 2 ** len(shape))) if shape and rng.random() < 0.4 else 0
        stored = np.flip(arr, [i for i in range(len(shape)) if flips & (1 << i)]) if flips else arr
        path = os.path.join(tmp, name)
        write_raw(path, stored, dtype)
        args += [name, dtype, shape_arg(shape), str(flips), path]
        with np.errstate(all="ignore"):
            views.append(np.broadcast_to(arr, oshape).astype(T))
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return f"{text!r}: expr_numpy exited {p.returncode}: {p.stdout}{p.stderr}"
    got = read_raw(os.path.join(tmp, "out"), out_dtype, oshape)
    k = lambda v: T(v)
    a, b, c = views
    with np.errstate(all="ignore"):
        if ulp:
            xs = [np.broadcast_to(x, oshape) for x in arg_fn(a, b, c, k, T)]
            want_t = fn(*[x.astype(np.longdouble) for x in xs]).astype(T)
            ok = compare_ulp(got, want_t, out_dtype, T)
        else:
            want_t = np.broadcast_to(np.asarray(ref(a, b, c, k, T)).astype(T), oshape)
            ok = compare_exact(got, cast_rules(want_t, out_dtype))
    if ok.all():
        return None
    bad = np.argwhere(~ok)[0]
    idx = tuple(int(i) for i in bad)
    inputs = ", ".join(f"{n}={v[idx]!r}" for n, v in zip("abc", views))
    return (f"case {case}: {text!r} in {compute} to {out_dtype}, shape {oshape}: "
            f"{int((~ok).sum())} elements differ, first at {idx}: got {got[idx]!r}, "
            f"numpy {want_t[idx]!r} ({inputs}); canonical {p.stdout.strip()!r}")


def main():
    return run_cases(N_CASES, 20240611, run_case)


if __name__ == "__main__":
    sys.exit(main())
