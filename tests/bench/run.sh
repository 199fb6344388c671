#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every benchmark (or those whose name matches PATTERN) in a release
# build, installing the peers (dask, zarr-python, TBB, OpenMP) when missing,
# and print a summary table of their `name: value unit` lines.
#
#   tests/bench/run.sh [PATTERN]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. tests/deps.sh
# shellcheck disable=SC2086
sl_need_packages $SL_BENCH_PACKAGES

pattern=${1:-}
build=${SL_BENCH_BUILD:-build-bench}
if [ -d "$build" ]; then
    meson setup --reconfigure "$build" -Dbuildtype=release -Dbench=true >/dev/null
else
    meson setup "$build" -Dbuildtype=release -Dbench=true >/dev/null
fi
targets="bench launcher/sluice"
# The Python package, when this build has it (bench_py_read imports it).
meson introspect "$build" --targets | grep -q '"name": "python-package"' && targets="$targets python-package"
# shellcheck disable=SC2086
meson compile -C "$build" $targets >/dev/null

out=$(mktemp)
trap 'rm -f "$out"' EXIT
export SL_BENCH_SOURCE_ROOT=$root SL_BENCH_BUILD_ROOT=$root/$build
export SL_SLUICE_EXE=$root/$build/launcher/sluice
export SL_BENCH_DATA=${SL_BENCH_DATA:-/tmp/sluice-bench-data}
mkdir -p "$SL_BENCH_DATA"
for exe in $(find "$build/tests/bench" -name "bench_*" -type f -perm -u+x | sort); do
    [ -x "$exe" ] && [ -f "$exe" ] || continue
    name=$(basename "$exe")
    [ -n "$pattern" ] && [[ $name != *$pattern* ]] && continue
    echo "=== $name"
    "$exe" | tee -a "$out"
done

# Benchmarks of the sluice program itself, written in Python.
for script in $(find tests/bench -name "bench_*.py" -type f | sort); do
    name=$(basename "$script" .py)
    [ -n "$pattern" ] && [[ $name != *$pattern* ]] && continue
    echo "=== $name"
    /usr/bin/python3 "$script" | tee -a "$out"
done

echo
echo "=== summary ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
awk -F': ' '/^[A-Za-z0-9_.-]+: [-0-9.e+]+ /{split($2, v, " "); printf "%-52s %14s  %s\n", $1, v[1], substr($2, length(v[1]) + 2)}' "$out"
