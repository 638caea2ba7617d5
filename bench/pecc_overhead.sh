#!/usr/bin/env bash
# pecc_overhead.sh — what pecc costs on a C project that never calls PE
# (issue 23: a launcher users leave on for a whole tree): the project built
# with CC=gcc and with CC="pecc gcc", ROUNDS times each, alternating, from a
# clean tree; prints the medians of wall and CPU (user + sys) time, their
# ratio, whether the project's own tests pass with each build, and whether
# every object of the pecc build is byte-identical to gcc's.
#   pecc_overhead.sh PECC PROJECT_DIR [ROUNDS] [TEST_COMMAND]
# PROJECT_DIR: an autotools-style tree (./configure; make -j2; make test),
# e.g. a clone of zlib, or a tree with a plain Makefile that takes CC= on
# make's command line (make -j2 CC=...), e.g. Lua's.  TEST_COMMAND (default
# "make test") runs in the built tree, through sh -c.
set -euo pipefail
pecc=$(realpath "$1") dir=$(realpath "$2") rounds=${3:-3} tests=${4:-make test}
work=$(mktemp -d /tmp/pecc-overhead-XXXXXX)
trap 'rm -rf "$work"' EXIT
build() { # $1: label, $2...: CC; prints "wall cpu"
  local label=$1; shift
  rm -rf "$work/$label" && cp -r "$dir" "$work/$label"
  local make_cc=()
  if [ -x "$work/$label/configure" ]; then
    (cd "$work/$label" && CC="$*" ./configure >/dev/null 2>&1)
  else
    make_cc=("CC=$*")
  fi
  local t0 c0 t1 c1
  t0=$(date +%s.%N); c0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
  (cd "$work/$label" && make -j2 "${make_cc[@]}" >/dev/null 2>&1)
  t1=$(date +%s.%N)
  # children's CPU time: cutime + cstime of this shell (ticks)
  c1=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
  echo "$(echo "$t1 - $t0" | bc) $(echo "($c1 - $c0) / $(getconf CLK_TCK)" | bc -l)"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$work/gcc.txt"; : >"$work/pecc.txt"
for r in $(seq "$rounds"); do
  build gcc gcc >>"$work/gcc.txt"
  build pecc "$pecc" gcc >>"$work/pecc.txt"
done
gw=$(cut -d' ' -f1 "$work/gcc.txt" | median) gc=$(cut -d' ' -f2 "$work/gcc.txt" | median)
pw=$(cut -d' ' -f1 "$work/pecc.txt" | median) pc=$(cut -d' ' -f2 "$work/pecc.txt" | median)
printf 'build of %s, median of %s: gcc %.2f s wall %.2f s CPU; pecc gcc %.2f s wall %.2f s CPU; ratio %.2fx wall %.2fx CPU\n' \
  "$(basename "$dir")" "$rounds" "$gw" "$gc" "$pw" "$pc" "$(echo "$pw / $gw" | bc -l)" "$(echo "$pc / $gc" | bc -l)"
failed=0
for label in gcc pecc; do
  if (cd "$work/$label" && sh -c "$tests" >"$work/$label-tests.log" 2>&1); then
    echo "its tests pass with the $label build ($tests)"
  else
    echo "its tests FAIL with the $label build ($tests); the log's end:"; tail -n 5 "$work/$label-tests.log"; failed=1
  fi
done
differ=0 objects=0
while read -r o; do
  objects=$((objects + 1))
  cmp -s "$work/gcc/$o" "$work/pecc/$o" || { echo "differs: $o"; differ=$((differ + 1)); }
done < <(cd "$work/gcc" && find . -name '*.o')
echo "objects that differ from gcc's: $differ of $objects"
[ "$failed" -eq 0 ] && [ "$differ" -eq 0 ] && [ "$objects" -gt 0 ]
