# SPDX-License-Identifier: MIT
# Sourced by examples/quickstart.sh, tests/run.sh and tests/bench/run.sh:
# install Debian packages, but only those that are missing.
#
#   . tests/deps.sh; sl_need_packages pkg ...
#
# Lists of what each script needs (nodejs and npm: `npm ci --prefix tests/tools`
# installs zarrita, the JavaScript reader the launcher tests check with, and
# s3rver, the S3 server of tests/remote/s3serve.py; nginx-light serves the
# remote-store tests, tests/remote/serve.py; curl's --aws-sigv4 is the
# independent SigV4 signer of tests/remote/check_s3serve.py; python3-jsonschema
# validates `sluice info --json` against docs/info.schema.json; python3-scipy is
# what tests/ops/check_filter_scipy.py checks the filters against; linux-perf and
# binutils' nm give bench_graph_downsample its profile of sluice's CPU time;
# python3-dev builds the Python package, python/, whose tests in tests/python
# run under python3-pytest and hand arrays to python3-dask and its
# python3-distributed):
SL_BUILD_PACKAGES="gcc g++ meson ninja-build pkg-config libhwloc-dev libck-dev libzstd-dev
  libjansson-dev zlib1g-dev libblosc-dev libcurl4-openssl-dev libpng-dev"
SL_TEST_PACKAGES="$SL_BUILD_PACKAGES libcriterion-dev clang-format python3 python3-numpy python3-scipy
  python3-zarr python3-numcodecs python3-numexpr python3-jsonschema python3-dev python3-pytest python3-dask python3-distributed strace util-linux libopenmpi-dev openmpi-bin clang
  libclang-rt-14-dev nodejs npm nginx-light curl"
SL_BENCH_PACKAGES="$SL_BUILD_PACKAGES python3 python3-numpy python3-zarr python3-numcodecs
  python3-dask python3-numexpr python3-aiohttp python3-fsspec nodejs npm nginx-light libtbb-dev libomp-dev clang time zstd
  linux-perf binutils"

sl_need_packages() {
    local missing=() p
    for p in "$@"; do
        # NodeSource's nodejs bundles npm and conflicts with Debian's npm.
        [ "$p" = npm ] && command -v npm >/dev/null && continue
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "${SL_NO_INSTALL:-0}" = 1 ]; then
        echo "missing packages (SL_NO_INSTALL=1 set, not installing): ${missing[*]}" >&2
        return 1
    fi
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || {
            echo "need root or sudo to install: ${missing[*]}" >&2
            return 1
        }
        sudo=sudo
    fi
    echo "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq || return 1
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || return 1
}
