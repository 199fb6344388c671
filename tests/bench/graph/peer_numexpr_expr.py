#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""numexpr's side of bench_graph_expr's kernel case: the flat-field
expression alone, on in-memory buffers, on one thread.  numexpr has no
max(), so max(flat, 1) is where(flat > 1, flat, 1) (the same for every flat
but NaN).  It gets what sluice's kernel gets: the uint16 raw (4, 1024, 1024)
and the float32 dark and flat (1024, 1024), broadcast by numexpr itself,
into a preallocated float32 output, so both convert the raw.

usage:
  peer_numexpr_expr.py KERNEL_DIR REPS OUT
      KERNEL_DIR holds raw.u16, dark.f32 and flat.f32 (peer_dask_expr.py setup);
      prints numexpr_expr_kernel (median of REPS timed evaluations after two
      untimed ones) and numexpr_expr_kernel_best in ms, the working type
      numexpr chose and its program; writes the result to OUT (float32).
      Exits 3, saying why, when numexpr cannot be imported.
"""
import os
import sys
import time

import numpy as np

EXPR = "(raw - dark) / where(flat > 1, flat, 1)"
PLANES, NY, NX = 4, 1024, 1024


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kdir, reps, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    try:
        import numexpr as ne
        from numexpr import necompiler
    except Exception as e:  # any failure to import means the peer cannot run
        print(f"numexpr cannot be imported: {e}")
        sys.exit(3)
    ne.set_num_threads(1)
    raw = np.fromfile(os.path.join(kdir, "raw.u16"), dtype="<u2").reshape(PLANES, NY, NX)
    dark = np.fromfile(os.path.join(kdir, "dark.f32"), dtype="<f4").reshape(NY, NX)
    flat = np.fromfile(os.path.join(kdir, "flat.f32"), dtype="<f4").reshape(NY, NX)
    out = np.empty(raw.shape, dtype=np.float32)
    local = {"raw": raw, "dark": dark, "flat": flat}
    for _ in range(2):
        ne.evaluate(EXPR, local_dict=local, out=out)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        ne.evaluate(EXPR, local_dict=local, out=out)
        times.append(time.perf_counter() - t0)
    times.sort()
    sig = [(n, necompiler.getType(local[n])) for n in ("raw", "dark", "flat")]
    prog = ne.NumExpr(EXPR, sig)
    ops = " ".join(op[0].decode() for op in ne.disassemble(prog) if op[0] != b"noop")
    as_numpy = {"bool": "bool", "int": "int32", "long": "int64", "float": "float32",
                "double": "float64"}
    kinds = ", ".join(f"{n} {local[n].dtype} as {as_numpy.get(necompiler.type_to_kind[t], t)}"
                      for n, t in sig)
    print(f"# numexpr {ne.__version__}, {ne.get_num_threads()} thread, VML "
          f"{'on' if ne.use_vml else 'off'}: {EXPR}")
    print(f"# numexpr working type: {ne.evaluate(EXPR, local_dict=local).dtype} "
          f"(inputs {kinds}; program: {ops})")
    print(f"numexpr_expr_kernel: {times[len(times) // 2] * 1e3:.4g} ms")
    print(f"numexpr_expr_kernel_best: {times[0] * 1e3:.4g} ms")
    out.tofile(out_path)


if __name__ == "__main__":
    main()
