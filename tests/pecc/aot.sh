#!/usr/bin/env bash
# aot.sh BIN_DIR — the compile ahead of closed regions' op lists (jit/aot/aot.c):
#  1. aotloop built with pecc, f32 data, a fresh PE_CACHE_DIR: the loop's
#     first batch compiles nothing on the application's path, its kernel
#     came from the background compile (aot_kernels_used >= 1); the values
#     are those of PE_AOT=0 and of the plain build;
#  2. f64 data (the speculation guesses f32): the guessed kernels go unused,
#     the values are still those of PE_AOT=0 and of the plain build;
#  3. PE_AOT=0 compiles nothing ahead; a run never prints a warning.
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
stat() { awk -v k="$1" '$1 == k {print $2}' "$2"; }

for dtype in f32 f64; do
  for mode in aot noaot plain; do
    exe=$bin/aotloop_pecc; aot=1
    [ $mode = noaot ] && aot=0
    [ $mode = plain ] && exe=$bin/aotloop_plain
    PE_AOT=$aot PE_LOG=warn PE_CACHE_DIR="$work/cache_${dtype}_$mode" "$exe" 200000 6 $dtype \
      >"$work/$dtype.$mode.out" 2>"$work/$dtype.$mode.err" || fail "aotloop $dtype $mode: $(cat "$work/$dtype.$mode.err")"
    if grep -q "warning" "$work/$dtype.$mode.err"; then fail "aotloop $dtype $mode warned: $(cat "$work/$dtype.$mode.err")"; fi
  done
  diff "$work/$dtype.aot.out" "$work/$dtype.noaot.out" || fail "$dtype: values differ with PE_AOT=1 and PE_AOT=0"
  diff "$work/$dtype.aot.out" "$work/$dtype.plain.out" || fail "$dtype: values differ with pecc and without"
  [ "$(stat aot_kernels_compiled "$work/$dtype.noaot.err")" -eq 0 ] || fail "$dtype: PE_AOT=0 compiled ahead"
  [ "$(stat aot_kernels_compiled "$work/$dtype.plain.err")" -eq 0 ] || fail "$dtype: a plain build compiled ahead"
done
# (with f64 data nothing waits for the guessed kernel: pe_shutdown may stop its compile before it starts)
[ "$(stat aot_kernels_compiled "$work/f32.aot.err")" -ge 1 ] || fail "f32: nothing compiled ahead"
[ "$(stat first_batch_kernels_compiled "$work/f32.aot.err")" -eq 0 ] ||
  fail "f32: the first batch compiled $(stat first_batch_kernels_compiled "$work/f32.aot.err") kernels itself"
[ "$(stat first_batch_aot_used "$work/f32.aot.err")" -ge 1 ] || fail "f32: the first batch used no kernel compiled ahead"
[ "$(stat first_batch_kernels_compiled "$work/f32.noaot.err")" -ge 1 ] || fail "f32: PE_AOT=0 should compile on the first batch"
[ "$(stat aot_kernels_used "$work/f64.aot.err")" -eq 0 ] || fail "f64: a kernel guessed for f32 data was used"
echo "aot: f32 first batch took $(stat first_batch_aot_used "$work/f32.aot.err") kernel(s) compiled ahead, compiled 0 itself; f64 (wrong guess) same values"
