#!/usr/bin/env bash
# GPU checks of the seams branch (issues #10, #11), from a build packed by scripts/gpu/pack.sh:
#  1. the CuTe rmsnorm (tests/fixtures/solutions/rmsnorm_cute) passes through bench --track cutlass;
#  2. --targets solution times only the solution (naive runs untimed as the bench reference);
#  3. d2k run executes a request JSON on the GPU and writes one trace per (target, workload),
#     with the expert variant expert:generic (expert_generic.so) as a target;
#  4. check --impl reference runs the fp64 golden on the host pipeline (never on device tensors);
#  5. --device 0 selects the device (CUDA_VISIBLE_DEVICES narrowed) and the run still passes.
# Usage (repository root): scripts/gpu/checks/seams.sh CARRY OUT   (about 90 s)
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
out=$(cd "$out" && pwd)
d2k="$carry/d2k"
fails=0
verdict() {  # verdict NAME OK(0/1) DETAIL
  if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}
run() {  # run NAME SECONDS CMD...: log in $out/NAME.log, exit code in $rc
  local name=$1 secs=$2; shift 2
  timeout "$secs" "$@" > "$out/$name.log" 2>&1; rc=$?
}

# 1. The cutlass track end to end: build with the CUTLASS/CuTe headers, check, time.
run cute_bench 120 "$d2k" bench --task fused_add_rmsnorm --targets solution --track cutlass \
  --solution-dir tests/fixtures/solutions/rmsnorm_cute --quiet --json "$out/cute_bench.jsonl"
npass=$(grep -c '"status":"PASSED"' "$out/cute_bench.jsonl" 2>/dev/null || echo 0)
nall=$(wc -l < "$out/cute_bench.jsonl" 2>/dev/null || echo 0)
verdict "cutlass track: rmsnorm_cute passes every workload ($npass/$nall PASSED, rc=$rc)" \
  $([ "$rc" -eq 0 ] && [ "$npass" -gt 0 ] && [ "$npass" -eq "$nall" ]; echo $?) "see $out/cute_bench.log"
grep -E " bench " "$out/cute_bench.log" | cut -c1-160 | head -6

# 2. Only what was asked is timed: no naive record when naive is not a target.
nnaive=$(grep -c '"target":"naive"' "$out/cute_bench.jsonl" 2>/dev/null); nnaive=${nnaive:-0}
verdict "--targets solution records no naive trace (found $nnaive)" $([ "$nnaive" -eq 0 ]; echo $?) "naive was timed"

# 3. d2k run of a request JSON.
cat > "$out/request.json" <<JSON
{"task": "fused_add_rmsnorm",
 "targets": [{"name": "expert:generic"}, {"name": "solution", "track": "cutlass", "dir": "$PWD/tests/fixtures/solutions/rmsnorm_cute"}],
 "workloads": ["fused_add_rmsnorm-check-7x264", "fused_add_rmsnorm-bench-16384x8192"],
 "options": {"rounds": 1, "bench_rounds": 1, "max_time_s": 1}}
JSON
run run_request 120 "$d2k" run "$out/request.json" --out "$out/run_traces.jsonl" --quiet
nrun=$(grep -c '"status":"PASSED"' "$out/run_traces.jsonl" 2>/dev/null || echo 0)
verdict "d2k run: 4 traces, all PASSED ($nrun PASSED, rc=$rc)" $([ "$rc" -eq 0 ] && [ "$nrun" -eq 4 ]; echo $?) \
  "see $out/run_request.log (a missing bench uuid shows as fewer traces)"

# 4. The golden reference stays on the host pipeline with a GPU present.
run check_reference 60 "$d2k" check --task fused_add_rmsnorm --impl reference --quiet --rounds 1
verdict "check --impl reference on a GPU machine (rc=$rc)" \
  $([ "$rc" -eq 0 ] && grep -q "reference .*PASSED" "$out/check_reference.log"; echo $?) "see $out/check_reference.log"

# 5. Device selection.
run device0 60 "$d2k" check --task fused_add_rmsnorm --impl naive --device 0 --quiet --rounds 1
verdict "check --device 0 (rc=$rc)" $([ "$rc" -eq 0 ]; echo $?) "see $out/device0.log"
run device_bad 30 "$d2k" check --task fused_add_rmsnorm --impl naive --device 99 --quiet
verdict "check --device 99 refused (rc=$rc)" $([ "$rc" -eq 2 ] || [ "$rc" -eq 1 ]; echo $?) "see $out/device_bad.log"

echo "seams: $fails failure(s)"
exit $((fails > 0))
