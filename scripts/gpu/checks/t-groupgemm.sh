#!/usr/bin/env bash
# moe_grouped_gemm on the H200 (issue #16): validation; d2k bench of naive (cuBLAS per expert),
# library (cublasGemmGroupedBatchedEx), expert (CUTLASS grouped GEMM) and torch_eager
# (torch._grouped_mm) on the check and bench workloads, with the table and the targets checked
# (t-groupgemm/targets.py: expert >= library and >= torch_eager on every bench row, >= 70% of SOL
# on the Mixtral row); the starter's verdict (must be INCORRECT_*); the golden cross-check against
# PyTorch float64 on `d2k check --dump` inputs (t-groupgemm/golden_check.py); the expert under
# compute-sanitizer memcheck on the check workloads (empty and one-row groups, E = 1, both tile
# paths); the expert's SASS counts (design.json's "recognise" fields: HGMMA, UTMALDG, UTMASTG).
# Fits 150 s: each step gets what is left of a 145 s budget (GROUPGEMM_BUDGET_S).
# Extra after OUT (not run by run_checks.sh): `variants` benches the expert's variants (tile128,
# noswap) beside the expert on the bench rows, with its own allowance of 200 s.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-groupgemm.sh CARRY OUT [variants]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=moe_grouped_gemm
helpers=scripts/gpu/checks/t-groupgemm
extras=" ${*:3} "
budget=${GROUPGEMM_BUDGET_S:-145}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
benches=$(uuids bench "")
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 80 "$d2k" bench --task $task --targets naive,library,expert$torch --workloads "$checks,$benches" \
    --json "$out/bench.jsonl" --markdown "$out/bench.md"; then
  pass "bench: every target PASSED (naive, library, expert$torch)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -12
python3 $helpers/targets.py "$out/bench.jsonl" | tee "$out/targets.log"
grep -q "^FAIL" "$out/targets.log" && fail "expert short of a target (targets.log)"
grep -q "^PASS" "$out/targets.log" && ! grep -q "^FAIL" "$out/targets.log" && pass "expert meets every measured target"

starter_verdict 10 --workloads "$checks"

sanitize memcheck 20 "$checks"

if [ -n "$torch" ]; then
  step dump 10 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 10 python3 $helpers/golden_check.py "$out/dump" \
    && pass "golden cross-check vs PyTorch float64" || fail "golden cross-check (see golden.log)"
  tail -8 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the errors
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "HGMMA\.[0-9x]+\.F32\.BF16|UTMALDG\.[0-9A-Z.]*|UTMASTG\.[0-9A-Z.]*|UTMACCTL[.A-Z]*|SHFL\.UP" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
  gzip -f "$out/expert.sass"
fi

if [[ $extras == *" variants "* ]]; then
  budget=$((SECONDS + 200))  # an extra: its own allowance
  targets=expert
  for v in tile128 noswap; do
    [ -f "$carry/impl/$task/expert_$v.so" ] && targets+=,expert:$v
  done
  step variants 200 "$d2k" bench --task $task --targets $targets --workloads "$benches" \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED ($targets)" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -8
fi
echo "t-groupgemm: $fails failure(s)"
exit "$fails"
