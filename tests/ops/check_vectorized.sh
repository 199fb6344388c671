#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check that the uint16 mean kernel behind the 2x and 2x2x2 downsamples
# (mean_u16_32: 32-bit sums, f == 2 rows and power-of-two finalizing)
# compiles to packed SIMD at -O2 and -O3 with the flags ops/meson.build
# gives: widening loads (punpck*/pmovzx*), packed 32-bit adds (paddd) and
# packed shifts (psrld).  x86-64 gcc only; skipped (77) elsewhere.
#
#   tests/ops/check_vectorized.sh SOURCE_ROOT CC [CC ARGS...]
set -u
root=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for opt in -O2 -O3; do
    if ! "$@" -std=c11 "$opt" -fvect-cost-model=dynamic -D_GNU_SOURCE \
        -I"$root/include" -I"$root/core" -I"$root/ops" \
        -S -o "$tmp/reduce.s" "$root/ops/downsample_reduce.c"; then
        echo "cannot compile ops/downsample_reduce.c"
        exit 77
    fi
    body=$(awk '/^mean_u16_32:/{on=1} on{print} on && /\.size[ \t]+mean_u16_32,/{exit}' "$tmp/reduce.s")
    if [ -z "$body" ]; then
        echo "$opt: mean_u16_32 not found in the assembly"
        exit 1
    fi
    for insn in 'v?punpck[lh]wd|v?pmovzxwd' 'v?paddd' 'v?psrld'; do
        n=$(grep -cE "^[[:space:]]+($insn)[[:space:]]" <<<"$body")
        if [ "$n" -eq 0 ]; then
            echo "$opt: mean_u16_32 has no ($insn): the 2x mean loops are not vectorized"
            status=1
        else
            echo "$opt: mean_u16_32: $n x ($insn)"
        fi
    done
done
exit $status
