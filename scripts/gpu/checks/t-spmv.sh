#!/usr/bin/env bash
# spmv_csr on the H200 (issue #18): validation; d2k bench of every built-in target (naive scalar
# CSR, expert, library = cuSPARSE SpMV) and PyTorch eager on the check workloads and the four bench
# matrices (power-law, dense rows, road_usa, banded), with the table; the expert's variants
# (`// %VARIANT%` lines of expert.cu: no_stream, long_row_16k) beside the expert on the power-law
# and dense-row matrices; the graph_csr generator's device == host test; the starter's verdict (must be INCORRECT_*); the golden cross-check
# against PyTorch float64 on `d2k check --dump` inputs (t-spmv/golden_check.py); the expert under
# compute-sanitizer memcheck on the check workloads; the expert's SASS counts (design.json's
# "recognise" fields: LDG.E.EF, SHFL, RED/ATOMG). Fits the 150 s deadline of
# scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget (SPMV_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-spmv.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=spmv_csr
helpers=scripts/gpu/checks/t-spmv
budget=${SPMV_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
benches=$(uuids bench "")
variant_rows=$(uuids bench "powerlaw\|denserows")
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
# The graph_csr generator (new in #18): device bits == host bits, for every kind (graph_csr rows:
# row_ptr with heavy rows, 24e6-row equal lengths, col_idx by binary search on the device).
if [ -x "$carry/gpu_tests/test_gpu_generators" ]; then
  step generators 10 "$carry/gpu_tests/test_gpu_generators" --gtest_filter='GpuGenerators.DeviceEqualsHostForEveryKind' \
    && pass "generators: device == host for every kind (graph_csr included)" || fail "generators (see generators.log)"
else
  fail "no gpu_tests/test_gpu_generators in $carry (scripts/gpu/pack.sh copies it when built)"
fi
if step bench 60 "$d2k" bench --task $task --targets naive,expert,library$torch --workloads "$checks,$benches" \
    --json "$out/bench_$task.jsonl" --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED (check workloads and the four bench matrices)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -12
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 15 "$d2k" bench --task $task --targets "expert,${targets%,}" --workloads "$variant_rows" \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -8
else
  fail "no expert variants built under $carry/impl/$task"
fi

starter_verdict 8 --workloads "$checks"

if [ -n "$torch" ]; then
  step dump 10 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 10 python3 $helpers/golden_check.py "$out/dump" \
    && pass "golden cross-check vs torch float64" || fail "golden cross-check (see golden.log)"
  tail -14 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the verdicts
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitize memcheck 20 "$checks"

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "LDG\.E\.EF[A-Z0-9.]*|LDG\.E\.CONSTANT[A-Z0-9.]*|SHFL\.[A-Z]*|RED[A-Z0-9.]*|ATOMG[A-Z0-9.]*" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi
echo "t-spmv: $fails failure(s)"
exit "$fails"
