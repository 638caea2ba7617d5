#!/usr/bin/env bash
# run.sh — builds test_cpp.cpp (the C++ binding, include/pe.hpp) and the C++
# example examples/blackscholes.cpp with g++ as C++17 and clang++ as C++20
# (std::span), each with -Wall -Wextra -Werror and ASan + UBSan, against the
# library built here, and runs them.  A run passes with exit code 0 and
# nothing on stderr: a destructor after the session's end, a leak or a
# sanitizer finding would print there.
#   run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d /tmp/pe-cpp-XXXXXX)
trap 'rm -rf "$work"' EXIT
flags=(-g -O1 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all
       -I"$src/include" -I"$build/include")
link=(-L"$build" -lpe -Wl,-rpath,"$build")
export LSAN_OPTIONS=suppressions=$src/tests/lsan.supp:print_suppressions=0 # libgccjit's own, silently
export ASAN_OPTIONS=detect_leaks=1
# runs a program; fails on a nonzero exit or anything it wrote to stderr
quiet_run() {
  local rc=0
  "$@" 2>"$work/stderr" || rc=$?
  if [ "$rc" -ne 0 ] || [ -s "$work/stderr" ]; then
    cat "$work/stderr" >&2
    echo "run.sh: $1 exited with $rc; stderr above (a passing run writes nothing there)" >&2
    exit 1
  fi
}
for pair in "gcc g++ c++17" "clang clang++ c++20"; do
  set -- $pair
  if ! command -v "$2" >/dev/null; then
    echo "run.sh: $2 is not installed; the binding must build with g++ and clang++" >&2
    exit 1
  fi
  "$1" -std=gnu11 "${flags[@]}" -c "$src/tests/cpp/prices_c.c" -o "$work/prices_c_$1.o"
  "$2" -std="$3" "${flags[@]}" "$src/tests/cpp/test_cpp.cpp" "$work/prices_c_$1.o" "${link[@]}" -o "$work/test_cpp_$1"
  "$2" -std="$3" "${flags[@]}" "$src/examples/blackscholes.cpp" "${link[@]}" -o "$work/blackscholes_$1"
  echo "== $2 -std=$3"
  quiet_run "$work/test_cpp_$1"
  quiet_run "$work/blackscholes_$1" 20000
done
