#!/bin/bash
# skelgen predict and place on the shipped SimGrid platforms (predict/platforms/).
# Checks:
#   - predict --simgrid: two invocations give bit-identical predictions, and the
#     runs inside one invocation agree (min = max);
#   - the heterogeneous platform, ranks spread over its subnets (100 Mb/s and two
#     100 us uplinks between them), predicts a longer runtime than the homogeneous
#     one with the same hosts (1 Gb/s everywhere). The ranks' CPUs are equally
#     fast on both, so the difference is the network's alone and does not depend
#     on how long the traced computation took (a slow CI machine traced 5x more
#     of it, and a relative margin failed): it must be at least the 200 us extra
#     latency of one message between the subnets;
#   - place --candidates ranks the three candidates by those predictions, and
#     interleaves their runs (-r 2: its progress lines name candidates A B C
#     A B C, "run 1/2" then "run 2/2"; each has both runs in --json);
#   - place --inventory (the heterogeneous platform's nodes) never prefers the
#     subnet of slower CPUs, and --confirm runs the skeleton on every group's
#     choice, the slow subnet predicting no faster than the others;
#   - every temporary file goes under $TMPDIR and is gone afterwards, also
#     when predict is stopped (SIGTERM) in the middle of its runs.
#   run_predict_simgrid_test.sh SKELGEN MERGED.skm WORK NP PLATFORM_DIR
set -euo pipefail
skelgen=$1 trace=$2 work=$3 np=$4 platforms=$5
rm -rf "$work" && mkdir -p "$work/tmp"
export TMPDIR="$work/tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp_empty() { [ -z "$(ls -A "$TMPDIR")" ] || fail "temporary files left after $1: $(ls -A "$TMPDIR")"; }
"$skelgen" generate "$trace" -K 10 -o "$work/skel.c" -q > /dev/null

# one rank per subnet, round robin: node-0 node-4 node-8 node-12 node-1 ...
for i in $(seq 0 $((np - 1))); do echo "node-$(( (i % 4) * 4 + i / 4 ))"; done > "$work/spread.hosts"
predicted() { python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["predicted_min_s"]==j["predicted_max_s"], j; print(repr(j["predicted_s"]))'; }
homo1=$("$skelgen" predict "$work/skel.c" --simgrid "$platforms/homogeneous16.xml" --hostfile "$work/spread.hosts" --json -q | predicted)
homo2=$("$skelgen" predict "$work/skel.c" --simgrid "$platforms/homogeneous16.xml" --hostfile "$work/spread.hosts" --json -q -r 2 | predicted)
hetero=$("$skelgen" predict "$work/skel.c" --simgrid "$platforms/heterogeneous16.xml" --hostfile "$work/spread.hosts" --json -q | predicted)
echo "predicted: homogeneous $homo1 s (again: $homo2 s), heterogeneous spread over subnets $hetero s"
[ "$homo1" = "$homo2" ] || fail "two predictions differ: $homo1 vs $homo2"
python3 -c "import sys; sys.exit(0 if $hetero - $homo1 >= 200e-6 else 1)" ||
  fail "heterogeneous ($hetero s) not at least one message's extra latency (200 us) longer than homogeneous ($homo1 s)"

cat > "$work/candidates.ini" <<EOF
# relative paths are taken from this file's directory
[hetero-spread]
platform = $platforms/heterogeneous16.xml
hostfile = spread.hosts
[homogeneous]
platform = $platforms/homogeneous16.xml
hostfile = spread.hosts
[hetero-default]
kind = simgrid
platform = $platforms/heterogeneous16.xml
EOF
"$skelgen" place "$work/skel.c" --candidates "$work/candidates.ini" -r 1 -q | tee "$work/place.txt"
"$skelgen" place "$work/skel.c" --candidates "$work/candidates.ini" -r 2 --json > "$work/place.json" 2> "$work/place.err"
python3 - "$work/place.err" <<'PY'
import re, sys
runs = re.findall(r"^skelgen place: (\S+): run (\d)/2:", open(sys.argv[1]).read(), re.M)
want = [(c, n) for n in "12" for c in ("hetero-spread", "homogeneous", "hetero-default")]
assert runs == want, f"place's runs {runs}, want them interleaved {want}"
PY
python3 - "$work/place.json" "$homo1" "$hetero" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
homo, hetero = float(sys.argv[2]), float(sys.argv[3])
r = j["ranking"]
assert j["failed"] == [], j["failed"]
assert [x["rank"] for x in r] == [1, 2, 3], r
assert all(x["runs"] == 2 and len(x["each"]) == 2 for x in r), r
assert r[-1]["name"] == "hetero-spread", [x["name"] for x in r]
assert [x["predicted_s"] for x in r] == sorted(x["predicted_s"] for x in r)
by = {x["name"]: x["predicted_s"] for x in r}
assert by["homogeneous"] == homo and by["hetero-spread"] == hetero, (by, homo, hetero)
PY

# the heterogeneous platform's nodes as an inventory (subnet-3: 15 % slower CPUs)
{
  echo "name cores ghz cache_mb memory_gb group"
  for i in $(seq 0 15); do
    s=$((i / 4)); ghz=4.0; [ $s = 3 ] && ghz=3.4
    echo "node-$i 1 $ghz 8 16 subnet-$s"
  done
} > "$work/inventory.txt"
"$skelgen" place "$work/skel.c" --inventory "$work/inventory.txt" --np "$np" --confirm \
  --simgrid "$platforms/heterogeneous16.xml" -r 1 -q | tee "$work/model.txt"
"$skelgen" place "$work/skel.c" --inventory "$work/inventory.txt" --np "$np" --confirm \
  --simgrid "$platforms/heterogeneous16.xml" -r 1 -q --json > "$work/model.json"
python3 - "$work/model.json" "$np" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
np = int(sys.argv[2])
g = j["groups"]
assert len(g) == 4, g
assert g[-1]["group"] == "subnet-3", [x["group"] for x in g]
assert g[0]["group"] != "subnet-3"
for x in g:
    assert x["cores"] == np and len(x["nodes"]) == np, x
    assert "prediction" in x, x
slow = g[-1]["prediction"]["predicted_s"]
for x in g[:-1]:
    assert x["prediction"]["predicted_s"] <= slow, (x, slow)
PY
tmp_empty "predict and place --confirm"
# stopped in the middle of its runs: its files were under $TMPDIR (a private
# directory), it exits 143 and leaves nothing behind
"$skelgen" predict "$work/skel.c" --simgrid "$platforms/homogeneous16.xml" -r 1000 -q > /dev/null 2> "$work/sigint.err" &
pid=$!
sleep 1.5
during=$(ls -A "$TMPDIR")
kill -TERM $pid  # a background job ignores SIGINT; SIGTERM takes the same path
rc=0
wait $pid || rc=$?
[[ $during == skelgen-predict-* ]] || fail "predict's temporary files were not in a private directory under \$TMPDIR: '$during'"
[ $rc = 143 ] || fail "predict stopped by SIGTERM exited $rc: $(cat "$work/sigint.err")"
tmp_empty "predict stopped by SIGTERM"
echo "ok"
