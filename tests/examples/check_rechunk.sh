#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run examples/rechunk.c on a zarr-python fixture and check the copy holds
# the same contents.  Skips (77) without the shared fixtures.
set -euo pipefail
rechunk=$1
sluice=$2
src=${SL_FIXTURES_DIR:-}/zarr-python/v3/data.zarr/3d.chunked.i2
if [ ! -d "$src" ]; then
    echo "skipped: fixtures not found at $src"
    exit 77
fi
dst=$(mktemp -d "${TMPDIR:-/tmp}/sluice-rechunk-XXXXXX")
trap 'rm -rf "$dst"' EXIT
"$rechunk" "$src" "$dst/out" 1,2,2
want=$("$sluice" checksum "$src" | cut -d' ' -f1)
got=$("$sluice" checksum "$dst/out" | cut -d' ' -f1)
[ "$want" = "$got" ] || { echo "rechunked copy differs: $got vs $want"; exit 1; }
"$sluice" info "$dst/out" | grep -q 'chunks: *\[1, 2, 2\]' || { echo "chunks not changed"; exit 1; }
echo "rechunk example: contents equal, chunks [1, 2, 2]"
