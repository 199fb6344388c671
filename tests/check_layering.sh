#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check the #include lines of every source file against the layering of
# docs/ARCHITECTURE.md: which module may use which public headers, which private
# headers and which external libraries.  Prints each violation with file
# and line; exits 1 when there is any.
#
#   tests/check_layering.sh [SOURCE_ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# Public headers (include/sluice/NAME.h) by owning module.
declare -A owner
for h in alloc block checked common dtype error grid md5 parallel region sha256 status version view; do owner[$h]=core; done
for h in pool task topo; do owner[$h]=runtime; done
for h in ops op_registry expr filter reduce stats; do owner[$h]=ops; done
for h in fs remote store buf codec array array_io array_iter zarr txn batch ome; do owner[$h]=io; done
for h in graph graph_json graph_node journal plan plugin pyramid; do owner[$h]=graph; done

# Modules each module may use (itself included).
declare -A allowed
allowed[core]="core"
allowed[runtime]="core runtime"
allowed[ops]="core ops"
allowed[io]="core io"
allowed[graph]="core runtime ops io graph"

# io's sub-libraries (one folder each) and those below each of them.
declare -A io_below
io_below[store]=""
io_below[codec]=""
io_below[zarr]="store codec"
io_below[txn]="zarr store codec"
io_below[batch]="zarr store codec"

# External headers by module that may include them (regex on the name).
declare -A external
external[runtime]='^(hwloc\.h|hwloc/.*|ck_.*\.h|pthread\.h|sched\.h|linux/futex\.h|sys/syscall\.h)$'
external[io]='^(zstd\.h|zstd_errors\.h|jansson\.h|zlib\.h|blosc\.h|curl/curl\.h)$'
external[graph]='^(jansson\.h|pthread\.h)$'
external[launcher]='^(mpi\.h|png\.h)$'
forbidden_external='^(hwloc\.h|hwloc/.*|ck_.*\.h|zstd\.h|zstd_errors\.h|jansson\.h|zlib\.h|blosc\.h|mpi\.h)$'

# Private headers of a module's sub-folders (graph/json/load_json_internal.h):
# open to that folder's files and to the module's tests only.
declare -A subprivate
while IFS= read -r h; do
    subprivate[$(basename "$h")]=$(dirname "$h")
done < <(find core runtime ops io graph -mindepth 2 -name '*_internal.h' 2>/dev/null)

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
            python) ;; # the extension may use every public header
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
            local dir
            dir=$(dirname "$file")
            # io's sub-libraries: io/<sub>/io_<sub>.h is what the folders
            # above <sub> may use; io/io_fill.h is the one io header graph
            # may use; every other header of a folder is private to it.
            if [[ $inc =~ ^io_([a-z]+)\.h$ && -n ${io_below[${BASH_REMATCH[1]}]+x} ]]; then
                local sub=${BASH_REMATCH[1]} from=${dir#io/}
                if [[ $dir == io/* && ( $from == "$sub" || " ${io_below[$from]:-} " == *" $sub "* ) ]]; then
                    [[ -f io/$sub/$inc ]] || complain "$file" "$n" "\"$inc\" is not a file of io/$sub/"
                else
                    complain "$file" "$n" "$dir/ may not use io's $sub sub-library (\"$inc\"; see docs/ARCHITECTURE.md)"
                fi
                continue
            fi
            if [[ $inc == io_fill.h ]]; then
                [[ $dir == io/zarr || $module == graph ]] ||
                    complain "$file" "$n" "only io/zarr/ and graph/ use \"io_fill.h\""
                uses_io=1
                continue
            fi
            # Private headers: <module>_internal.h, a sub-folder's own, or a
            # file of the same folder.
            local sub=${subprivate[$(basename "$inc")]:-}
            if [[ -n $sub ]]; then
                [[ $(dirname "$file") == "$sub" ]] ||
                    complain "$file" "$n" "\"$inc\" is private to $sub/"
            elif [[ $inc =~ ^([a-z]+)_internal\.h$ && -n ${allowed[${BASH_REMATCH[1]}]:-} ]]; then
                local mod=${BASH_REMATCH[1]}
                # A module's private header is its own; core's is the one
                # every library module shares (core/core_internal.h says so).
                case $module in
                launcher | examples | python)
                    complain "$file" "$n" "$module may not include private header \"$inc\"" ;;
                *)
                    [[ $mod == "$module" || ( $mod == core && " ${allowed[$module]} " == *" core "* ) ]] ||
                        complain "$file" "$n" "$module may not include $mod's private header \"$inc\"" ;;
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
        [[ $file == graph/exec/exec* ]] ||
            complain "$file" 1 "only graph/exec/exec*.c sees runtime, io and ops together"
    fi
}

for module in core runtime ops io graph launcher examples python; do
    [[ -d $module ]] || continue
    while IFS= read -r f; do
        check_file "$module" "$f"
    done < <(find "$module" -name '*.[ch]' | sort)
done
# Tests: a sub-folder's private header only in the suites of its module.
while IFS=: read -r f n line; do
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]] || continue
    sub=${subprivate[$(basename "${BASH_REMATCH[1]}")]:-}
    [[ -n $sub && $f != tests/${sub%%/*}/* && ! ( $sub == io/* && $f == tests/fuzz/* ) ]] &&
        complain "$f" "$n" "\"${BASH_REMATCH[1]}\" is private to $sub/ (and tests/${sub%%/*}/)"
done < <(grep -rn --include='*.[ch]' '#[[:space:]]*include[[:space:]]*"' tests)
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
    echo "layering: every #include follows docs/ARCHITECTURE.md"
fi
exit $fail
