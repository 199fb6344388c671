#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check the #include lines of every source file against the layering of
# DESIGN.md: which module may use which public headers, which private
# headers and which external libraries.  Prints each violation with file
# and line; exits 1 when there is any.
#
#   tests/check_layering.sh [SOURCE_ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# Public headers (include/sluice/NAME.h) by owning module.
declare -A owner
for h in alloc block checked common dtype error grid parallel region sha256 status version view; do owner[$h]=core; done
for h in pool topo; do owner[$h]=runtime; done
for h in ops; do owner[$h]=ops; done
for h in store buf codec array array_iter zarr txn batch; do owner[$h]=io; done
for h in graph graph_json pyramid; do owner[$h]=graph; done

# Modules each module may use (itself included).
declare -A allowed
allowed[core]="core"
allowed[runtime]="core runtime"
allowed[ops]="core ops"
allowed[io]="core io"
allowed[graph]="core runtime ops io graph"

# External headers by module that may include them (regex on the name).
declare -A external
external[runtime]='^(hwloc\.h|hwloc/.*|ck_.*\.h|pthread\.h|sched\.h|linux/futex\.h|sys/syscall\.h)$'
external[io]='^(zstd\.h|zstd_errors\.h|jansson\.h|zlib\.h|blosc\.h)$'
external[graph]='^(jansson\.h|pthread\.h)$'
external[launcher]='^mpi\.h$'
forbidden_external='^(hwloc\.h|hwloc/.*|ck_.*\.h|zstd\.h|zstd_errors\.h|jansson\.h|zlib\.h|blosc\.h|mpi\.h)$'

fail=0
complain() {
    printf '%s:%s: %s\n' "$1" "$2" "$3"
    fail=1
}

check_file() {
    local module=$1 file=$2
    local n=0 line inc uses_rt=0 uses_io=0 uses_ops=0
    while IFS= read -r line; do
        n=$((n + 1))
        [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*([\<\"])([^\>\"]+)[\>\"] ]] || continue
        inc=${BASH_REMATCH[2]}
        local quote=${BASH_REMATCH[1]}
        if [[ $inc == sluice.h ]]; then
            [[ $module == launcher || $module == examples ]] ||
                complain "$file" "$n" "library code includes the umbrella <sluice.h>; include the module headers it uses"
            continue
        fi
        if [[ $inc == sluice/* ]]; then
            local name=${inc#sluice/}
            name=${name%.h}
            local mod=${owner[$name]:-}
            if [[ -z $mod ]]; then
                complain "$file" "$n" "<$inc> is not listed in tests/check_layering.sh"
                continue
            fi
            case $module in
            launcher | examples)
                complain "$file" "$n" "$module uses <sluice.h> only, not <$inc>" ;;
            *)
                [[ " ${allowed[$module]} " == *" $mod "* ]] ||
                    complain "$file" "$n" "$module may not use $mod (<$inc>)" ;;
            esac
            [[ $mod == runtime ]] && uses_rt=1
            [[ $mod == io ]] && uses_io=1
            [[ $mod == ops ]] && uses_ops=1
            continue
        fi
        if [[ $quote == '"' ]]; then
            # Private headers: <module>_internal.h or a file of the same folder.
            if [[ $inc =~ ^([a-z]+)_internal\.h$ && -n ${allowed[${BASH_REMATCH[1]}]:-} ]]; then
                local mod=${BASH_REMATCH[1]}
                case $module in
                launcher | examples)
                    complain "$file" "$n" "$module may not include private header \"$inc\"" ;;
                *)
                    [[ " ${allowed[$module]} " == *" $mod "* ]] ||
                        complain "$file" "$n" "$module may not use $mod (\"$inc\")" ;;
                esac
                [[ $mod == runtime ]] && uses_rt=1
                [[ $mod == io ]] && uses_io=1
                [[ $mod == ops ]] && uses_ops=1
            elif [[ ! -f $(dirname "$file")/$inc ]]; then
                complain "$file" "$n" "\"$inc\" is not a file of $(dirname "$file")/"
            fi
            continue
        fi
        if [[ $inc =~ $forbidden_external ]]; then
            local ok=${external[$module]:-'^$'}
            [[ $inc =~ $ok ]] || complain "$file" "$n" "$module may not use <$inc>"
        fi
    done <"$file"
    if [[ $module == graph && $file == graph/* && $uses_rt == 1 && $uses_io == 1 && $uses_ops == 1 ]]; then
        [[ $(basename "$file") == exec* ]] ||
            complain "$file" 1 "only graph/exec*.c sees runtime, io and ops together"
    fi
}

for module in core runtime ops io graph launcher examples; do
    [[ -d $module ]] || continue
    while IFS= read -r f; do
        check_file "$module" "$f"
    done < <(find "$module" -name '*.[ch]' | sort)
done
# Public headers may include only core headers and their own module's.
for h in include/sluice/*.h; do
    name=$(basename "$h" .h)
    mod=${owner[$name]:-}
    if [[ -z $mod ]]; then
        complain "$h" 1 "public header not listed in tests/check_layering.sh"
        continue
    fi
    check_file "$mod" "$h"
done

if [[ $fail == 0 ]]; then
    echo "layering: every #include follows DESIGN.md"
fi
exit $fail
