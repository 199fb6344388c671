#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the libFuzzer targets (clang, ASan+UBSan, -Dfuzz=enabled) in
# build-fuzz, then run each on its seed corpus for SL_FUZZ_SECONDS, two
# targets at a time, with every allocation over 256 MiB, every input slower
# than 10 s and every sanitizer report a failure.  tests/run.sh calls this as
# its `fuzz` stage.
#
#   tests/fuzz/run.sh                        every target, 60 s each (CI)
#   tests/fuzz/run.sh meta_v3 key            only these targets
#   SL_FUZZ_SECONDS=3600 tests/fuzz/run.sh   soak: one CPU-hour per target
#   SL_FUZZ_JOBS=1                           targets fuzzed at once (default 2)
#
# Inputs that add coverage go to build-fuzz/fuzz-corpus/<target>/ and are
# kept, so a later run (or a soak) starts where the last one stopped; a
# failing input goes to build-fuzz/fuzz-artifacts/.  See tests/fuzz/README.md
# for what to do with one.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${SL_FUZZ_SECONDS:-60}
jobs=${SL_FUZZ_JOBS:-2}
build=build-fuzz
corpus=tests/fuzz/corpus

options=(-Dfuzz=enabled -Dwerror=true -Dbuildtype=debugoptimized -Dbench=false
    -Db_sanitize=address,undefined -Db_lundef=false
    -Dc_args=-fno-sanitize-recover=all -Dcpp_args=-fno-sanitize-recover=all)
# Quiet unless something fails.
quiet() {
    local out
    if ! out=$("$@" 2>&1); then
        echo "$out" >&2
        echo "fuzz: failed: $*" >&2
        exit 1
    fi
}
[ -d "$build" ] && options+=(--reconfigure)
CC=clang CXX=clang++ quiet meson setup "$build" "${options[@]}"
quiet meson compile -C "$build" -j "$(nproc 2>/dev/null || echo 2)" fuzz-targets

if [ $# -gt 0 ]; then
    targets=("$@")
else
    targets=()
    for d in "$corpus"/*/; do targets+=("$(basename "$d")"); done
fi
mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts" "$build/fuzz-logs"
# fuzz_graph_json looks up the arrays its inputs name under the source tree.
export SL_SOURCE_ROOT=$root
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Fuzz target $1; its log and exit status land in build-fuzz/fuzz-logs.
fuzz_one() {
    local t=$1 bin=$build/tests/fuzz/fuzz_$1 dict=()
    [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
    mkdir -p "$build/fuzz-corpus/$t"
    local rc=0
    "$bin" -max_total_time="$secs" -malloc_limit_mb=256 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$t-" "${dict[@]}" \
        "$build/fuzz-corpus/$t" "$corpus/$t" >"$build/fuzz-logs/$t.log" 2>&1 || rc=$?
    echo "$rc" >"$build/fuzz-logs/$t.rc"
}

for t in "${targets[@]}"; do
    if [ ! -x "$build/tests/fuzz/fuzz_$t" ] || [ ! -d "$corpus/$t" ]; then
        echo "fuzz: no target fuzz_$t with a corpus in $corpus/$t" >&2
        exit 2
    fi
done
echo "fuzzing ${#targets[@]} targets for ${secs}s each, $jobs at a time"
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    fuzz_one "$t" &
    running=$((running + 1))
done
wait

stat() { sed -n "s/^stat::$1: *//p" "$build/fuzz-logs/$2.log" | tail -1; }
failed=0
printf '%-14s %12s %10s %10s %8s  %s\n' target executions exec/s new_units rss_mb result
for t in "${targets[@]}"; do
    rc=$(cat "$build/fuzz-logs/$t.rc")
    result=ok
    if [ "$rc" != 0 ]; then
        result="FAILED (exit $rc)"
        failed=1
    fi
    printf '%-14s %12s %10s %10s %8s  %s\n' "$t" "$(stat number_of_executed_units "$t")" \
        "$(stat average_exec_per_sec "$t")" "$(stat new_units_added "$t")" \
        "$(stat peak_rss_mb "$t")" "$result"
done
if [ "$failed" != 0 ]; then
    for t in "${targets[@]}"; do
        [ "$(cat "$build/fuzz-logs/$t.rc")" = 0 ] && continue
        echo
        echo "===== $t: $build/fuzz-logs/$t.log (last lines) ====="
        grep -v -E '^#[0-9]+' "$build/fuzz-logs/$t.log" | tail -40
    done
    echo
    echo "failing inputs: $(ls "$build"/fuzz-artifacts/ 2>/dev/null | tr '\n' ' ')"
    exit 1
fi
