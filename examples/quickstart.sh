#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: install what is missing, build sluice, and run the demo.
#
#   examples/quickstart.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. tests/deps.sh
# shellcheck disable=SC2086
sl_need_packages $SL_BUILD_PACKAGES

build=${SL_BUILD_DIR:-build}
[ -d "$build" ] || meson setup "$build" -Dbuildtype=release -Dtests=false >/dev/null
meson compile -C "$build" >/dev/null
"$build"/launcher/sluice --version
