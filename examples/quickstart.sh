#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: install what is missing, build sluice, and run the demo:
# generate a sample 5-D (TCZYX) microscopy-like image, build its 4-level
# OME-Zarr pyramid with `sluice run` on examples/graphs/pyramid.json (a
# progress bar on a terminal, a status map of every chunk), describe the
# result with `sluice info` and draw it with `sluice preview`.
#
#   examples/quickstart.sh            demo output in $SL_DEMO_DIR (default /tmp/sluice-demo)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. tests/deps.sh
# shellcheck disable=SC2086
sl_need_packages $SL_BUILD_PACKAGES

build=${SL_BUILD_DIR:-build-release}
if [ ! -d "$build" ]; then
    meson setup "$build" -Dbuildtype=release -Dtests=false -Dbench=false >/dev/null
fi
echo "== building sluice in $build"
meson compile -C "$build" >/dev/null
sluice=$root/$build/launcher/sluice
"$sluice" --version

demo=${SL_DEMO_DIR:-/tmp/sluice-demo}
mkdir -p "$demo"
cp examples/graphs/pyramid.json "$demo/"
cd "$demo"
echo
echo "== generating a sample TCZYX image: 2 time points x 2 channels x 32 x 1024 x 1024 uint16"
"$sluice" generate tczyx.zarr --shape 2,2,32,1024,1024 --chunks 1,1,32,256,256 --overwrite
echo
echo "== building its pyramid: sluice run pyramid.json"
"$sluice" validate pyramid.json
"$sluice" run pyramid.json --report pyramid-report.json --status-map pyramid-status.png
echo
echo "== the result: sluice info out/tczyx_pyramid.zarr"
"$sluice" info out/tczyx_pyramid.zarr
echo
echo "== a picture of it: the maximum along z of t=0, c=1 (sluice preview)"
"$sluice" preview out/tczyx_pyramid.zarr -o preview.png --index t=0,c=1 --along z --max-size 512
echo
echo "demo files are in $demo (the run's report: $demo/pyramid-report.json, its status"
echo "map: $demo/pyramid-status.png, the preview: $demo/preview.png)"
