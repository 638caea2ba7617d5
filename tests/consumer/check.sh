#!/usr/bin/env bash
# tests/consumer/check.sh SCRATCH [PREFIX] — builds the consumer programs of
# this folder against an installed PE and runs them, with no LD_LIBRARY_PATH:
# with pkg-config (shared and --static) and with find_package(PE) (shared,
# static, C++, and through pecc).  PREFIX: where PE was installed (it may have
# been moved since); without it, PE is looked up where the system keeps
# packages (the Debian packages of scripts/package).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scratch=$1
prefix=${2:-}
rm -rf "$scratch" && mkdir -p "$scratch"
unset LD_LIBRARY_PATH
cmake_args=()
if [ -n "$prefix" ]; then
  export PKG_CONFIG_PATH=$(ls -d "$prefix"/lib*/pkgconfig "$prefix"/lib/*/pkgconfig 2>/dev/null | paste -sd:)
  cmake_args+=(-DCMAKE_PREFIX_PATH="$prefix")
fi

expect_14() {  # run a built program; it must print 14 and exit 0
  local out
  out=$("$@") || { echo "check.sh: $1 failed (exit $?)" >&2; exit 1; }
  [ "$out" = 14 ] || { echo "check.sh: $1 printed '$out', not 14" >&2; exit 1; }
  echo "ok: $1"
}

cc "$here/main.c" -o "$scratch/app_pc" $(pkg-config --cflags --libs pe)
expect_14 "$scratch/app_pc"
# A static link as the pkg-config documentation says, libpe.a named explicitly
# (beside libpe.so, -lpe would take the shared one).
static_libs=$(pkg-config --static --libs pe | sed 's/-lpe\b/-l:libpe.a/')
cc "$here/main.c" -o "$scratch/app_pc_static" $(pkg-config --cflags pe) $static_libs
expect_14 "$scratch/app_pc_static"
if readelf -d "$scratch/app_pc_static" | grep -q 'libpe\.so'; then
  echo "check.sh: the static link still needs libpe.so" >&2; exit 1
fi

cmake -S "$here" -B "$scratch/cmake" "${cmake_args[@]}" >/dev/null
cmake --build "$scratch/cmake" >/dev/null
expect_14 "$scratch/cmake/app"
expect_14 "$scratch/cmake/app_static"
expect_14 "$scratch/cmake/app_cpp"
# pe_enable_ir built app through pecc: the installed pe-ir finds its static IR.
pe_ir=${prefix:+$prefix/bin/}pe-ir
if ! "$pe_ir" "$scratch/cmake/app" | grep -q "s = pe_sum_at op sum"; then
  echo "check.sh: $pe_ir finds no static IR in app: pe_enable_ir did not reach pecc" >&2; exit 1
fi
echo "ok: $pe_ir reads the IR pecc embedded"
echo "ok: pkg-config and find_package(PE)${prefix:+ from $prefix}"
