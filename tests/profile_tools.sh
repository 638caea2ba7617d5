#!/usr/bin/env bash
# profile_tools.sh PE_PROF PROFILE_APP SOURCE_DIR [ARTIFACTS] — pe-prof end to
# end: two profiled runs of profile_app (the second with a planted
# slowdown), then report (its summary must name the line whose value was
# stored and never read, with its bytes; its top lines must rank the line
# that only waited, with its wait in its own column and at least the kernel
# time it waited for; pool utilisation within (0, 100%]; the macro cache's
# real counters), diff (must flag the planted line and exit 1), trace
# (validated by check_trace_json.py), html (rendered by headless Chromium:
# a screenshot into ARTIFACTS, default the working directory, and the DOM
# checked by check_profile_html.py: the kernel table with the profile's
# kernels, the waits, labels that fit), and a truncated database (rejected,
# exit 2).  Without chromium the HTML checks cannot run: after all the
# others pass, exit 77 (ctest: skipped).
set -euo pipefail
pe_prof=$1 app=$2 src=$3 artifacts=${4:-$PWD}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
planted=$(grep -n 'PLANTED' "$src/tests/profile_app.c" | tail -1 | cut -d: -f1)
unread=$(grep -n 'UNREAD:' "$src/tests/profile_app.c" | tail -1 | cut -d: -f1)
waited=$(grep -n '/\* WAITED \*/' "$src/tests/profile_app.c" | tail -1 | cut -d: -f1)
chain=$(grep -n '/\* CHAIN \*/' "$src/tests/profile_app.c" | tail -1 | cut -d: -f1)
macro_runs=$(sed -n 's/^#define MACRO_RUNS \([0-9]*\)$/\1/p' "$src/tests/profile_app.c")

PE_PROFILE=$work/a.pep "$app" >/dev/null 2>"$work/a.err"
PE_PROFILE=$work/b.pep "$app" slow >/dev/null 2>"$work/b.err"
grep -q "profile written to $work/a.pep" "$work/a.err"

"$pe_prof" report "$work/a.pep" --by line >"$work/report.txt"
for section in "PE profile summary" "== time by line" "== compute" "== I/O" "== runtime counters"; do
  grep -q "$section" "$work/report.txt" || { echo "report lacks '$section'"; cat "$work/report.txt"; exit 1; }
done
grep -q "profile_app.c:$planted" "$work/report.txt"
# 2^20 f32 values: 4194304 bytes
"$pe_prof" report "$work/a.pep" --only summary >"$work/summary.txt"
grep -q "stored, never read: 4.194 MB (1 value) at 1 line: profile_app.c:$unread (4.194 MB)$" "$work/summary.txt" ||
  { echo "the summary does not name line $unread as stored, never read"; cat "$work/summary.txt"; exit 1; }
"$pe_prof" report "$work/a.pep" --by function --only compute | grep -q "pow"

# top lines rank by compute + direct + waited, a column each: the line that
# read the chain's sum computes nothing and waited at least the chain's time
"$pe_prof" report "$work/a.pep" --only compute >"$work/compute.txt"
chain_ms=$(awk -v at="profile_app.c:$chain " 'index($0, at) { t += $1; n++ } END { if (n) print t }' "$work/compute.txt")
[ -n "$chain_ms" ] || { echo "no kernel covers the chain's line $chain"; cat "$work/compute.txt"; exit 1; }
awk -v line="profile_app.c:$waited" -v chain_ms="$chain_ms" '
  /top lines/ { top = 1; next }
  top && /^ +[0-9.]+ +[0-9.]+% / {
    total = $1; compute = $3; direct = $4; waited_ms = $5
    if (rows++ && total > last + 0.0005) { print "top lines not ranked by total: " total " after " last; bad = 1 }
    if (total - (compute + direct + waited_ms) > 0.002 || (compute + direct + waited_ms) - total > 0.002) {
      print "total " total " is not compute + direct + waited"; bad = 1
    }
    last = total
    if (substr($NF, length($NF) - length(line) + 1) == line) {
      found = 1
      if (compute != 0 || waited_ms + 0.0005 < chain_ms) {
        print line ": compute " compute " ms, waited " waited_ms " ms; expected 0 and at least " chain_ms; bad = 1
      }
    }
  }
  END {
    if (!found) print "top lines lack " line
    exit !(found && !bad)
  }' "$work/summary.txt" || { cat "$work/summary.txt"; exit 1; }

# pool utilisation: busy <= capacity, from the run's own counters; the macro cache's counters
"$pe_prof" report "$work/a.pep" --only runtime >"$work/runtime.txt"
awk '$1 == "pool_busy_ns" { busy = $2 } $1 == "pool_capacity_ns" { cap = $2 }
     $1 == "pool" && $2 == "utilisation" { pct = $3 + 0 }
     END { exit !(busy > 0 && busy <= cap && pct > 0 && pct <= 100) }' "$work/runtime.txt" ||
  { echo "pool utilisation out of (0, 100%]"; cat "$work/runtime.txt"; exit 1; }
grep -Eq "^  macro_hits +$((macro_runs - 1))$" "$work/runtime.txt" &&
  grep -Eq "^  macro_records +1$" "$work/runtime.txt" &&
  grep -q "macro cache            $((macro_runs - 1))/$macro_runs hits" "$work/runtime.txt" ||
  { echo "the macro cache's counters are not the run's"; cat "$work/runtime.txt"; exit 1; }
grep -q "macro cache $((macro_runs - 1))/$macro_runs hits" "$work/summary.txt"

set +e
"$pe_prof" diff "$work/a.pep" "$work/b.pep" --threshold 50 >"$work/diff.txt"
rc=$?
set -e
cat "$work/diff.txt"
[ $rc -eq 1 ] || { echo "diff exit status $rc, expected 1"; exit 1; }
grep -E "profile_app.c:$planted +<-- SLOWER" "$work/diff.txt" >/dev/null || { echo "planted line $planted not flagged"; exit 1; }
grep -E "sin.*profile_app.c:$planted.*<-- SLOWER" "$work/diff.txt" >/dev/null || { echo "planted kernel not flagged"; exit 1; }
"$pe_prof" diff "$work/a.pep" "$work/a.pep" >/dev/null || { echo "a run compared with itself was flagged"; exit 1; }

"$pe_prof" trace "$work/a.pep" -o "$work/run.json"
python3 "$src/tests/check_trace_json.py" "$work/run.json"

head -c 100 "$work/a.pep" >"$work/cut.pep"
set +e
"$pe_prof" report "$work/cut.pep" 2>"$work/cut.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "cut.pep: not a readable PE profile" "$work/cut.err" || { echo "truncated file: exit $rc"; cat "$work/cut.err"; exit 1; }

# the page, drawn by headless Chromium: a screenshot (the test's artifact)
# and the DOM, at two widths (the layout must fit both)
"$pe_prof" html "$work/a.pep" -o "$artifacts/profile_tools.html"
chromium=${CHROMIUM:-chromium} # CHROMIUM: another browser binary (or a missing one, to see the skip)
if ! command -v "$chromium" >/dev/null 2>&1; then
  echo "SKIP: $chromium is not installed (scripts/setup installs chromium): the HTML page was not checked"
  exit 77
fi
"$pe_prof" report "$work/a.pep" --only compute --by kernel |
  sed -n '/^== time by kernel/,$p' | sed -nE 's/^ +[0-9.]+ +[0-9.]+% +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +//p' >"$work/kernels.txt"
[ -s "$work/kernels.txt" ] || { echo "no kernels in the report"; exit 1; }
page="file://$artifacts/profile_tools.html"
chrome() { timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/chromium" "$@" 2>/dev/null; }
for size in 1280,2400 860,2400; do
  w=${size%,*} h=${size#*,}
  chrome --window-size="$size" --screenshot="$artifacts/profile_tools.$w.png" "$page" >/dev/null
  chrome --window-size="$size" --dump-dom "$page" >"$artifacts/profile_tools.$w.dom.html"
  echo "rendered at $w px: $(grep -o '<body[^>]*>' "$artifacts/profile_tools.$w.dom.html")"
  python3 "$src/tests/check_profile_html.py" "$artifacts/profile_tools.$w.dom.html" "$work/kernels.txt" \
    "profile_app.c:$waited" "$chain_ms" "$artifacts/profile_tools.$w.png" "$w" "$h"
done
echo "profile tools ok"
