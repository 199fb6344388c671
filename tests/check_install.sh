#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the build into a scratch DESTDIR, then, using only what
# `pkg-config --cflags --libs sluice` says, build and run against the
# installed library: a program that checks the version, the README's C
# example, and every program of examples/ (those that need no server or
# fixture are run).  Also checks that sluice.pc leaks no dependency's flags
# and that the example plugin loads.
#
#   tests/check_install.sh SOURCE_ROOT BUILD_ROOT
set -eu
src=$1
build=$2
dest=$(mktemp -d "${TMPDIR:-/tmp}/sluice-install-XXXXXX")
trap 'rm -rf "$dest"' EXIT

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
pcdir=$(dirname "$(find "$dest" -name sluice.pc | head -n 1)")
[ -n "$pcdir" ] || { echo "sluice.pc was not installed" >&2; exit 1; }

# DESTDIR installs keep the configured prefix inside $dest: let pkg-config
# prepend it to the paths it prints, as a cross-compiling sysroot.
export PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs sluice)
echo "pkg-config --cflags --libs sluice: $flags"
# The prefix pkg-config derives from the .pc location must be inside DESTDIR.
case $flags in *"$dest"*) ;; *) echo "flags do not point into the install tree" >&2; exit 1 ;; esac
# Only the include directory: no -D or -I of a dependency (no public header
# includes one).
cflags=$(pkg-config --cflags sluice)
for f in $cflags; do
    case $f in
    -I"$dest"*) ;;
    *) echo "pkg-config --cflags sluice leaks $f (all: $cflags)" >&2; exit 1 ;;
    esac
done

cat >"$dest/prog.c" <<'C'
#include <sluice.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    struct sl_grid g;
    const uint64_t shape[] = {100, 60}, chunk[] = {32, 32};
    if (sl_grid_init_regular(&g, 2, shape, chunk, NULL) != SL_OK || g.n_total != 8)
        return 1;
    printf("sluice %s: %llu chunks\n", sl_version(), (unsigned long long)g.n_total);
    return strcmp(sl_version(), SL_VERSION_STRING) != 0;
}
C
# A sanitized build installs an instrumented library: link the program the same way.
san=$(meson configure "$build" 2>/dev/null | awk '$1 == "b_sanitize" {print $2}')
extra=""
[ -n "$san" ] && [ "$san" != none ] && extra="-fsanitize=$san"
cc -std=c11 -Wall -Wextra -Werror $extra -o "$dest/prog" "$dest/prog.c" $flags
libdir=$(pkg-config --variable=libdir sluice)
LD_LIBRARY_PATH=$libdir "$dest/prog"
# The README's C example, as printed there.
awk '/<!-- c-example -->/ {f = 1; next} f && /^```c$/ {p = 1; next} p && /^```$/ {exit} p' \
    "$src/README.md" >"$dest/readme_example.c"
[ -s "$dest/readme_example.c" ] || { echo "README.md has no C example after <!-- c-example -->" >&2; exit 1; }
cc -std=c11 -Wall -Wextra -Werror $extra -o "$dest/readme_example" "$dest/readme_example.c" $flags
LD_LIBRARY_PATH=$libdir "$dest/readme_example"
# Every example, out of the tree; those that run alone are run small (the
# others need a server or fixtures, and tests/examples runs them in-tree).
for c in "$src"/examples/*.c; do
    name=$(basename "$c" .c)
    cc -std=c11 -Wall -Wextra -Werror $extra -o "$dest/$name" "$c" $flags -lm
    case $name in
    katdal_getter) LD_LIBRARY_PATH=$libdir "$dest/$name" 128 200 >/dev/null ;;
    blockwise) LD_LIBRARY_PATH=$libdir "$dest/$name" 150 230 >/dev/null ;;
    shard_txn) LD_LIBRARY_PATH=$libdir "$dest/$name" "$dest/shard-txn.zarr" >/dev/null ;;
    *) continue ;;
    esac
    echo "example $name: built against the installed library, ran"
done
# The example plugin, built out of tree as the README's "Writing a plugin"
# shows, loads into the installed sluice.
cc -std=c11 -Wall -Wextra -Werror $extra -shared -fPIC -o "$dest/libinvert.so" \
    "$src/examples/plugins/invert.c" $(pkg-config --cflags sluice)
exe=$(find "$dest" -name sluice -type f -perm -u+x | head -n 1)
LD_LIBRARY_PATH=$libdir "$exe" ops --allow-plugins --plugin "$dest/libinvert.so" |
    grep -q '^invert (map, plugin ' || { echo "the installed sluice did not load the plugin" >&2; exit 1; }
# The Python package, when built, imports from where meson installed it
# (not under a sanitizer: the interpreter is not instrumented) and reads
# what the installed example wrote.
ext=$(find "$dest" -name '_sluice*.so' | head -n 1)
if [ -n "$ext" ] && { [ -z "$san" ] || [ "$san" = none ]; }; then
    site=$(dirname "$(dirname "$ext")")
    PYTHONPATH=$site LD_LIBRARY_PATH=$libdir /usr/bin/python3 -c '
import sys, sluice
assert sluice.__file__.startswith(sys.argv[1]), sluice.__file__
a = sluice.open(sys.argv[2])
print("python package: imported from the install tree, read", a.shape, a.dtype)
' "$site" "$dest/shard-txn.zarr"
fi
# The library exports sl_ symbols only: sl__ internals stay hidden.
so=$(find "$dest" -name 'libsluice.so.*' -type f | head -n 1)
leaked=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -E '^sl_[a-z]' | grep -v -E '^_' || true)
internal=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -E '^sl__' || true)
if [ -n "$leaked$internal" ]; then
    echo "libsluice exports symbols outside the sl_ API:" >&2
    echo "$leaked $internal" >&2
    exit 1
fi
echo "install check passed"
