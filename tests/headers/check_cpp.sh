#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compile tests/headers/cpp_api.cpp (every public header through <sluice.h>
# and every documented initializer) with g++ and clang++ as C++17 and C++20,
# -Wall -Wextra -Wpedantic -Werror.  Meson links and runs it with its own
# C++ compiler (tests cpp_api_c++17, cpp_api_c++20); this checks the other
# compiler too.  Fails when neither compiler is installed.
#
#   tests/headers/check_cpp.sh SOURCE_ROOT
set -euo pipefail
src=${1:?usage: check_cpp.sh SOURCE_ROOT}
found=0
for cxx in g++ clang++; do
    if ! command -v "$cxx" >/dev/null; then
        echo "check_cpp: $cxx is not installed (install g++ and clang)"
        continue
    fi
    found=$((found + 1))
    for std in c++17 c++20; do
        "$cxx" -std="$std" -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
            -I"$src/include" "$src/tests/headers/cpp_api.cpp"
        echo "check_cpp: $cxx -std=$std -Wall -Wextra -Wpedantic -Werror: clean"
    done
done
if [ "$found" -eq 0 ]; then
    echo "check_cpp: no C++ compiler found" >&2
    exit 1
fi
