#!/usr/bin/env bash
# run.sh — builds test_cpp.cpp (the C++ binding, include/pe.hpp) with g++
# as C++17 and clang++ as C++20 (std::span), each with -Wall -Wextra -Werror
# and ASan + UBSan, against the library built here, and runs both.
#   run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d /tmp/pe-cpp-XXXXXX)
trap 'rm -rf "$work"' EXIT
flags=(-g -O1 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all
       -I"$src/include" -I"$build/include")
export LSAN_OPTIONS=suppressions=$src/tests/lsan.supp
export ASAN_OPTIONS=detect_leaks=1
for pair in "gcc g++ c++17" "clang clang++ c++20"; do
  set -- $pair
  "$1" -std=gnu11 "${flags[@]}" -c "$src/tests/cpp/prices_c.c" -o "$work/prices_c_$1.o"
  "$2" -std="$3" "${flags[@]}" "$src/tests/cpp/test_cpp.cpp" "$work/prices_c_$1.o" \
       -L"$build" -lpe -Wl,-rpath,"$build" -o "$work/test_cpp_$1"
  echo "== $2 -std=$3"
  "$work/test_cpp_$1"
done
