#!/usr/bin/env bash
# end_to_end.sh SOURCE_DIR PECC PE_IR BIN_DIR — pecc end to end:
#  1. the extractor's corpus and the examples give the checked-in IR
#     (corpus/*.expected, corpus/examples/*.expected);
#  2. leakloop built through CMake with pecc (and -Wl,--gc-sections) prints
#     the values of the plain build, and its live arrays stay flat where the
#     plain build's grow; its source literal is compiled into the kernel, its
#     computed scalar stays a parameter; pe-ir finds its IR, as text and JSON;
#  3. a long loop without reads: with pecc its batches are cut at the loop
#     header and the trace cache hits every one after the first; the same
#     value without pecc;
#     a read is computed into the caller's buffer (readlast.c), with the
#     values of the plain build, and where it is the value's last use the
#     value is released after it;
#     branches, early returns, goto, break and continue (departures.c) and
#     the Black-Scholes example print the same with and without pecc;
#     a code reuse section (macro.c) gives the same values, body runs and
#     replays with and without pecc;
#     Black-Scholes written naturally (natural.c: a scope, names never
#     released, nested calls): with pecc every intermediate, named or
#     anonymous, is released at its last use — one kernel writing exactly
#     the two values read, none left an expression, nothing alive at the
#     scope's end — and the values are the plain build's and C's;
#  4. a source libclang cannot parse still compiles, with a warning; a
#     source that never includes pe.h compiles to the plain compiler's very
#     object, one reaching it through its own header gets its IR, and so
#     does one reaching it through a computed #include (a -D or #define
#     naming the header), while one whose computed #include's macro is
#     defined nowhere keeps the plain object;
#  5. a shared library, a -fPIE object and an -flto executable built with
#     pecc carry the IR;
#  6. the trace cache persists: a second run runs the program generator 0
#     times and compiles nothing; a damaged saved file is removed with a
#     warning and rebuilt, with the same values.
set -euo pipefail
src=$1 pecc=$2 pe_ir=$3 bin=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cd "$src"
for c in tests/pecc/corpus/*.c; do
  "$pecc" --print-ir gcc -I include -c "$c" -o "$work/corpus.o" | sed -e '1s/ (pecc .*)$//' >"$work/got.txt"
  diff -u "${c%.c}.expected" "$work/got.txt" || fail "$c: IR differs from ${c%.c}.expected"
done
for c in examples/*.c; do
  expected=tests/pecc/corpus/examples/$(basename "${c%.c}").expected
  extra=()
  case $(basename "$c") in mpi_*) # MPI's headers: where mpicc finds them
    command -v mpicc >/dev/null || continue
    read -r -a extra <<<"$(mpicc --showme:compile)" ;;
  esac
  "$pecc" --print-ir gcc -I include "${extra[@]}" -c "$c" -o "$work/corpus.o" | sed -e '1s/ (pecc .*)$//' >"$work/got.txt"
  diff -u "$expected" "$work/got.txt" || fail "$c: IR differs from $expected"
done
echo "corpus ok"

"$bin/leakloop_plain" 300 >"$work/plain.txt" 2>/dev/null
"$bin/leakloop_pecc" 300 >"$work/pecc.txt" 2>/dev/null
grep values "$work/plain.txt" | diff - <(grep values "$work/pecc.txt") || fail "leakloop: values differ with pecc"
plain_growth=$(awk '/growth/ {print $2}' "$work/plain.txt")
pecc_growth=$(awk '/growth/ {print $2}' "$work/pecc.txt")
echo "leakloop: live arrays grew by $plain_growth without pecc, $pecc_growth with"
[ "$plain_growth" -gt 0 ] || fail "the plain build should leak its temporaries"
[ "$pecc_growth" -eq 0 ] || fail "with pecc the live arrays should stay flat"
"$pe_ir" "$bin/leakloop_pecc" | grep -q "variable e (last use)" || fail "pe-ir: no last use of e"
# the source literal 2.0f is compiled into the kernel; 0.001f * it stays a parameter
PE_LOG=debug "$bin/leakloop_pecc" 12 2>"$work/kernels.txt" >/dev/null
grep -q "literal f32 = 2$" "$work/kernels.txt" || fail "the literal 2.0f was not specialised"
grep -q "scalar f32$" "$work/kernels.txt" || fail "the non-literal scalar should stay a parameter"
PE_LOG=debug "$bin/leakloop_plain" 12 2>"$work/kernels_plain.txt" >/dev/null
if grep -q "literal f32" "$work/kernels_plain.txt"; then fail "a plain build specialised a literal"; fi
"$pe_ir" "$bin/leakloop_pecc" --json | python3 -c 'import json,sys; u=json.load(sys.stdin); assert u[0]["functions"][0]["name"]=="main", u'
if "$pe_ir" "$bin/leakloop_plain" 2>"$work/err.txt"; then fail "pe-ir found IR in a plain build"; fi
grep -q "no pe_ir section" "$work/err.txt" || fail "pe-ir: no clear message for a plain build"

# 5000 iterations of a loop without reads: cut at half the queue limit, with
# pecc always at the loop header (the same iterations in every batch)
PE_CACHE_DIR="$work/lk_plain_cache" "$bin/loopkeys_plain" 5000 >"$work/lk_plain.txt"
PE_CACHE_DIR="$work/lk_pecc_cache" "$bin/loopkeys_pecc" 5000 >"$work/lk_pecc.txt"
grep value "$work/lk_plain.txt" | diff - <(grep value "$work/lk_pecc.txt") || fail "loopkeys: values differ with pecc"
read -r hits lookups < <(awk '/loop trace/ {split($3, a, "/"); print a[1], a[2]}' "$work/lk_pecc.txt")
echo "loopkeys: trace cache $hits hits of $lookups lookups with pecc; without: $(awk '/loop trace/ {print $3}' "$work/lk_plain.txt")"
# the first batch (with the work before the loop), the second (the first of the loop's own) and the
# last, shorter one miss; every other batch hits
[ "$lookups" -ge 5 ] && [ "$hits" -ge $((lookups - 3)) ] || fail "loop batches should hit from the second on"

# a read that is the value's last use: computed straight into the caller's buffer
"$bin/readlast_plain" 200000 5 >"$work/rl_plain.txt" 2>/dev/null
"$bin/readlast_pecc" 200000 5 >"$work/rl_pecc.txt" 2>/dev/null
grep values "$work/rl_plain.txt" | diff - <(grep values "$work/rl_pecc.txt") || fail "readlast: values differ with pecc"
grep -q "in place 5" "$work/rl_pecc.txt" || fail "readlast: reads not computed in place with pecc"
grep -q "in place 5" "$work/rl_plain.txt" || fail "readlast: a plain build did not read in place"
grep -q "live arrays 2$" "$work/rl_pecc.txt" || fail "readlast: pecc's last uses did not release the values read"

"$bin/departures_plain" >"$work/dep_plain.txt" 2>/dev/null
"$bin/departures_pecc" >"$work/dep_pecc.txt" 2>"$work/dep_err.txt" || fail "departures with pecc: $(cat "$work/dep_err.txt")"
diff "$work/dep_plain.txt" "$work/dep_pecc.txt" || fail "departures: values differ with pecc"
grep -q "ir_releases [1-9]" "$work/dep_err.txt" || fail "departures: the IR released nothing"

"$bin/natural_plain" 50000 >"$work/nat_plain.txt" || fail "natural (plain): values off C's"
"$bin/natural_pecc" 50000 >"$work/nat_pecc.txt" || fail "natural (pecc): values off C's"
grep values "$work/nat_plain.txt" | diff - <(grep values "$work/nat_pecc.txt") || fail "natural: values differ with pecc"
grep -qx "black-scholes: kernels 1 outputs 2 deferred 0 alive at scope end 0" "$work/nat_pecc.txt" ||
  fail "natural with pecc: $(grep black-scholes "$work/nat_pecc.txt")"
grep -qx "held: kernels 1 outputs 1 deferred 0 alive at scope end 0" "$work/nat_pecc.txt" ||
  fail "natural with pecc: $(grep held "$work/nat_pecc.txt")"
grep -q "black-scholes: kernels 1 outputs 2 deferred [1-9][0-9]* alive at scope end [1-9]" "$work/nat_plain.txt" ||
  fail "natural without pecc: $(grep black-scholes "$work/nat_plain.txt")"
echo "natural Black-Scholes with pecc:$(grep black-scholes "$work/nat_pecc.txt" | cut -d: -f2); without:$(grep black-scholes "$work/nat_plain.txt" | cut -d: -f2)"

# a code reuse section (macro.c): the same values, one body run per control value, every
# other execution a replay, only the loop's arrays alive at the end, with and without pecc
"$bin/macro_plain" 200 >"$work/mac_plain.txt" || fail "macro (plain) failed"
"$bin/macro_pecc" 200 >"$work/mac_pecc.txt" || fail "macro (pecc) failed"
diff -u "$work/mac_plain.txt" "$work/mac_pecc.txt" || fail "macro: the pecc build differs"
grep -qx "body runs 2" "$work/mac_pecc.txt" && grep -qx "replays 198" "$work/mac_pecc.txt" &&
  grep -qx "live arrays 0" "$work/mac_pecc.txt" || fail "macro: $(tr '\n' ' ' <"$work/mac_pecc.txt")"
echo "macro section: $(tr '\n' ' ' <"$work/mac_pecc.txt")"

"$bin/blackscholes_plain" 50000 >"$work/bs_plain.txt"
"$bin/blackscholes_pecc" 50000 >"$work/bs_pecc.txt"
diff "$work/bs_plain.txt" "$work/bs_pecc.txt" || fail "Black-Scholes differs with pecc"
echo "examples identical with and without pecc"

cat >"$work/nested_function.c" <<'C'
#include <pe.h>
int twice(int x) { int inner(int y) { return 2 * y; } return inner(x); } /* GNU C: gcc compiles it, clang cannot */
C
"$pecc" gcc -I include -c "$work/nested_function.c" -o "$work/nested.o" 2>"$work/warn.txt" || fail "pecc must still compile"
grep -q "compiled without static IR" "$work/warn.txt" || fail "no warning for a unit libclang cannot parse"
[ -s "$work/nested.o" ] || fail "no object"

# a unit that never includes pe.h: the compiler alone, the same object as
# without pecc; one that reaches it through a header of its own: its IR
mkdir -p "$work/proj/inc"
printf 'static int twice(int x) { return 2 * x; }\nint add(int a, int b) { return twice(a) + b; }\n' >"$work/proj/plain.c"
printf '#include "pe.h"\n' >"$work/proj/inc/app.h"
printf '#include <app.h>\nint f(void) { pe_array a = pe_f32_1d((float[]){1}, 1); pe_release(a); return 0; }\n' >"$work/proj/uses.c"
gcc -O2 -c "$work/proj/plain.c" -o "$work/proj/plain_gcc.o"
"$pecc" gcc -O2 -c "$work/proj/plain.c" -o "$work/proj/plain_pecc.o"
cmp -s "$work/proj/plain_gcc.o" "$work/proj/plain_pecc.o" || fail "pecc changed the object of a unit without pe.h"
"$pecc" gcc -O2 -I include -I "$work/proj/inc" -c "$work/proj/uses.c" -o "$work/proj/uses.o"
"$pe_ir" "$work/proj/uses.o" | grep -q "pe_f32_1d_at" || fail "no IR for a unit reaching pe.h through its own header"
# computed #includes (Lua's `#include LUA_USER_H`): followed through the
# macro's definitions (-D, #define, macros naming macros); one whose macro
# is defined nowhere is compiled out: the compiler alone, the same object
printf '#include "pe.h"\n' >"$work/proj/user.h"
printf '#define USER_HEADER "user.h"\n#define CHOSEN USER_HEADER /* a macro naming a macro */\n' >"$work/proj/config.h"
printf 'int f(void) { pe_array a = pe_f32_1d((float[]){1}, 1); pe_release(a); return 0; }\n' >"$work/proj/body.txt"
{ printf '#include "config.h"\n#include CHOSEN\n'; cat "$work/proj/body.txt"; } >"$work/proj/by_define.c"
{ printf '#include LUA_USER_H\n'; cat "$work/proj/body.txt"; } >"$work/proj/by_flag.c"
printf '#if defined(LUA_USER_H)\n#include LUA_USER_H\n#endif\nint g(int x) { return x + 1; }\n' >"$work/proj/undefined.c"
"$pecc" gcc -O2 -I include -c "$work/proj/by_define.c" -o "$work/proj/by_define.o"
"$pe_ir" "$work/proj/by_define.o" | grep -q "pe_f32_1d_at" || fail "no IR for a unit reaching pe.h through a #defined computed #include"
"$pecc" gcc -O2 -I include '-DLUA_USER_H="user.h"' -c "$work/proj/by_flag.c" -o "$work/proj/by_flag.o"
"$pe_ir" "$work/proj/by_flag.o" | grep -q "pe_f32_1d_at" || fail "no IR for a unit reaching pe.h through a -D computed #include"
gcc -O2 -c "$work/proj/undefined.c" -o "$work/proj/undefined_gcc.o"
"$pecc" gcc -O2 -c "$work/proj/undefined.c" -o "$work/proj/undefined_pecc.o"
cmp -s "$work/proj/undefined_gcc.o" "$work/proj/undefined_pecc.o" || fail "pecc changed the object of a unit whose computed #include is compiled out"
echo "units without pe.h untouched"

"$pecc" gcc -I include -fPIC -shared tests/pecc/leakloop.c -Dmain=leakloop_main -o "$work/libleak.so"
"$pe_ir" "$work/libleak.so" | grep -q "function main\|function leakloop_main" || fail "no IR in the shared library"
"$pecc" gcc -I include -fPIE -c tests/pecc/leakloop.c -o "$work/pie.o"
"$pe_ir" "$work/pie.o" | grep -q "pe_exp_at" || fail "no IR in the -fPIE object"
"$pecc" gcc -O2 -flto -I include -c tests/pecc/leakloop.c -o "$work/lto.o"
gcc -O2 -flto "$work/lto.o" -o "$work/lto" -Wl,--unresolved-symbols=ignore-all
"$pe_ir" "$work/lto" | grep -q "variable e (last use)" || fail "no IR in the -flto executable"
cache="$work/cache"
PE_CACHE_DIR=$cache "$bin/leakloop_pecc" 50 >"$work/run1.txt" 2>"$work/run1.err"
PE_CACHE_DIR=$cache "$bin/leakloop_pecc" 50 >"$work/run2.txt" 2>"$work/run2.err"
grep -q "proggen_runs [1-9]" "$work/run1.err" || fail "the first run should run the program generator"
grep -q "proggen_runs 0" "$work/run2.err" || fail "second run: $(tr '\n' ' ' <"$work/run2.err")"
grep -q "kernels_compiled 0" "$work/run2.err" || fail "second run compiled kernels"
diff "$work/run1.txt" "$work/run2.txt" || fail "the second run printed other values"
saved=$(ls "$cache"/traces-*.petc)
printf '\001\000' | dd of="$saved" bs=1 seek=4 conv=notrunc status=none # changed outside PE: its MAC no longer fits
PE_CACHE_DIR=$cache PE_LOG=debug "$bin/leakloop_pecc" 50 >"$work/run4.txt" 2>"$work/run4.err"
grep -q "traces-.* not sealed with this user's key: removed, it is rebuilt" "$work/run4.err" || fail "a changed trace file was not set aside"
! grep -q "saved trace cache .* is unusable" "$work/run4.err" || fail "an older trace file was taken for a damaged one"
grep -q "proggen_runs [1-9]" "$work/run4.err" || fail "an older trace file was used"
diff "$work/run1.txt" "$work/run4.txt" || fail "values changed after an older trace file"
saved=$(ls "$cache"/traces-*.petc) || fail "the trace file was not saved again"
head -c 60 "$saved" >"$saved.cut" && mv "$saved.cut" "$saved"
PE_CACHE_DIR=$cache PE_LOG=warn "$bin/leakloop_pecc" 50 >"$work/run3.txt" 2>"$work/run3.err"
grep -q "traces-.* is truncated, corrupt or not sealed" "$work/run3.err" || fail "no warning for a damaged trace file"
grep -q "proggen_runs [1-9]" "$work/run3.err" || fail "a damaged trace file was used"
diff "$work/run1.txt" "$work/run3.txt" || fail "values changed after a damaged trace file"
echo "persistent trace cache ok"
echo "pecc end to end ok"
