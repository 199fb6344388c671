#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The test command: install what is missing, check formatting, layering and
# the public headers' doc comments, build twice (plain with -Werror, then
# ASan+UBSan) and run every suite in both; then run the runtime's stress
# suites under ThreadSanitizer.
#
#   tests/run.sh            everything (what .ci/run calls)
#   SL_NO_INSTALL=1 tests/run.sh   never call apt-get
#   SL_TEST_STAGES="plain"  only some stages (plain asan tsan format fuzz)
#   SL_FUZZ_SECONDS=600     fuzz stage: seconds per libFuzzer target (default 30)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. tests/deps.sh
# shellcheck disable=SC2086
sl_need_packages $SL_TEST_PACKAGES
# zarrita (pinned in tests/tools/package-lock.json), the launcher tests'
# second reader, and s3rver, the S3 server of tests/remote/s3serve.py:
# installed here, and required (SL_REQUIRE_ZARRITA, SL_REQUIRE_S3RVER), so
# a run cannot pass with their checks silently skipped.
npm ci --prefix tests/tools --no-audit --no-fund --loglevel=error
export SL_REQUIRE_ZARRITA=1 SL_REQUIRE_S3RVER=1

stages=${SL_TEST_STAGES:-"format plain asan tsan fuzz"}
jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)

stage() { printf '\n===== %s (%ss elapsed) =====\n' "$1" $(($(date +%s) - start)); }

# Configure (or reconfigure) build dir $1 with extra options, build, test.
build_and_test() {
    local dir=$1
    shift
    local suites=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do suites+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    if [ -d "$dir" ]; then
        meson setup --reconfigure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@" >/dev/null
    fi
    meson compile -C "$dir" -j "$jobs"
    local args=(-C "$dir" --no-rebuild --print-errorlogs --verbose --num-processes "$jobs")
    for s in "${suites[@]}"; do args+=(--suite "$s"); done
    meson test "${args[@]}"
}

for s in $stages; do
    case $s in
    format)
        stage "format check (.clang-format)"
        files=$(git ls-files '*.c' '*.h' '*.cpp' 2>/dev/null || find . -name '*.[ch]' -not -path './build*')
        # shellcheck disable=SC2086
        clang-format --dry-run --Werror $files
        echo "format: $(echo "$files" | wc -w) files formatted per .clang-format"
        tests/check_headers.sh
        ;;
    plain)
        stage "plain build, -Werror"
        # The plain build also runs the MPI tests (1, 2 and 3 ranks) and
        # builds the benchmarks, so they compile under -Werror.
        build_and_test build-ci -- -Dwerror=true -Dbuildtype=debugoptimized -Dmpi=enabled -Dbench=true
        ;;
    asan)
        stage "ASan + UBSan build"
        export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
        export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
        # The kill and crash suites run their full counts in the plain stage;
        # here each kill costs two to four times as long, and the sanitizers
        # check the recovery paths, which fewer kills still take.
        export SL_KILL_COUNT=${SL_KILL_COUNT:-100} SL_RESUME_KILLS=${SL_RESUME_KILLS:-50}
        export SL_TXN_CRASH_KILLS=${SL_TXN_CRASH_KILLS:-400}
        build_and_test build-asan -- -Dwerror=true -Dbuildtype=debug \
            -Db_sanitize=address,undefined -Db_lundef=false \
            -Dc_args=-fno-sanitize-recover=all -Dcpp_args=-fno-sanitize-recover=all \
            -Dbench=false
        ;;
    tsan)
        stage "ThreadSanitizer: runtime stress suites"
        export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
        build_and_test build-tsan stress -- -Dwerror=true -Dbuildtype=debugoptimized \
            -Db_sanitize=thread -Db_lundef=false -Dbench=false
        ;;
    fuzz)
        # 30 s a target keeps the whole run under 30 minutes on 2 cores; the
        # soak (tests/fuzz/README.md) runs for hours.
        export SL_FUZZ_SECONDS=${SL_FUZZ_SECONDS:-30}
        stage "libFuzzer targets, ${SL_FUZZ_SECONDS}s each (tests/fuzz/run.sh)"
        tests/fuzz/run.sh
        ;;
    *)
        echo "unknown stage $s" >&2
        exit 2
        ;;
    esac
done
stage "all stages passed"
