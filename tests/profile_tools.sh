#!/usr/bin/env bash
# profile_tools.sh PE_PROF PROFILE_APP SOURCE_DIR — pe-prof end to end: two
# profiled runs of profile_app (the second with a planted slowdown), then
# report (its summary must name the line whose value was stored and never
# read, with its bytes), diff (must flag the planted line and exit 1), trace (validated by
# check_trace_json.py), html (rendered by headless Chromium, which must have
# drawn), and a truncated database (rejected, exit 2).
set -euo pipefail
pe_prof=$1 app=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
planted=$(grep -n 'PLANTED' "$src/tests/profile_app.c" | tail -1 | cut -d: -f1)
unread=$(grep -n 'UNREAD:' "$src/tests/profile_app.c" | tail -1 | cut -d: -f1)

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

"$pe_prof" html "$work/a.pep" -o "$work/report.html"
dom=$(timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$work/chromium" \
      --dump-dom "file://$work/report.html" 2>/dev/null)
body=$(grep -o '<body[^>]*>' <<<"$dom")
echo "rendered: $body"
[[ $body =~ data-drawn=\"yes\" ]] || { echo "the page did not draw"; exit 1; }
[[ $body =~ data-events=\"([0-9]+)\" ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] || { echo "no timeline events drawn"; exit 1; }
[[ $body =~ data-bars=\"([0-9]+)\" ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] || { echo "no line bars drawn"; exit 1; }

head -c 100 "$work/a.pep" >"$work/cut.pep"
set +e
"$pe_prof" report "$work/cut.pep" 2>"$work/cut.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "cut.pep: not a readable PE profile" "$work/cut.err" || { echo "truncated file: exit $rc"; cat "$work/cut.err"; exit 1; }
echo "profile tools ok"
