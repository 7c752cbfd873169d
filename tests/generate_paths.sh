#!/bin/bash
# skelgen generate TRACE_DIR folds the merge order it chose while choosing
# it (the judge's fold) instead of folding a third time: its skeleton must
# be the one made stage by stage (merge, compress, generate FILE.skf), but
# for the header's input line. The trace must be one whose two merge orders
# differ (the ring's), or the path is not taken and the test says so.
#   generate_paths.sh SKELGEN TRACE_DIR WORK
set -u
skelgen=$1 trace=$2 work=$3
rm -rf "$work" && mkdir -p "$work/direct" "$work/staged"  # the same file name: the skeleton is named after it
"$skelgen" generate "$trace" -K 10 -o "$work/direct/skel.c" > "$work/direct.log" 2>&1 || { cat "$work/direct.log"; exit 1; }
grep -q "while choosing the order" "$work/direct.log" || {
  echo "FAIL: the judge's fold was not used (do the two merge orders still differ here?)"; cat "$work/direct.log"; exit 1; }
"$skelgen" merge "$trace" -o "$work/staged.skm" -q &&
  "$skelgen" compress "$work/staged.skm" -o "$work/staged.skf" -q &&
  "$skelgen" generate "$work/staged.skf" -K 10 -o "$work/staged/skel.c" -q || exit 1
strip() { grep -v -E '^ \* (traced|from): ' "$1"; }
if ! diff <(strip "$work/direct/skel.c") <(strip "$work/staged/skel.c") > "$work/diff.txt"; then
  echo "FAIL: the skeleton from the trace directory differs from the one made stage by stage"; head -20 "$work/diff.txt"
  exit 1
fi
echo "PASS: $(wc -l < "$work/direct/skel.c") lines, the same both ways"
