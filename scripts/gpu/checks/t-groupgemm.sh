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
checks=$(workload_uuids check)
benches=$(workload_uuids bench)
detect_torch

validate_step
bench_step --pass "bench: every target PASSED (naive, library, expert$torch)" --show 12 \
  bench 80 "naive,library,expert$torch" "$checks,$benches"
python3 $helpers/targets.py "$out/bench.jsonl" | tee "$out/targets.log"
grep -q "^FAIL" "$out/targets.log" && fail "expert short of a target (targets.log)"
grep -q "^PASS" "$out/targets.log" && ! grep -q "^FAIL" "$out/targets.log" && pass "expert meets every measured target"

starter_verdict 10 --workloads "$checks"
sanitize memcheck 20 "$checks"
golden_step --pass "vs PyTorch float64" 10 "$checks" $helpers/golden_check.py
sass_counts "HGMMA\.[0-9x]+\.F32\.BF16|UTMALDG\.[0-9A-Z.]*|UTMASTG\.[0-9A-Z.]*|UTMACCTL[.A-Z]*|SHFL\.UP"
[ -f "$out/expert.sass" ] && gzip -f "$out/expert.sass"

if [[ $extras == *" variants "* ]]; then
  budget=$((SECONDS + 200))  # an extra: its own allowance
  targets=expert
  for v in tile128 noswap; do
    [ -f "$carry/impl/$task/expert_$v.so" ] && targets+=,expert:$v
  done
  bench_step --pass "variants: every variant PASSED ($targets)" --show 8 variants 200 $targets "$benches"
fi
echo "t-groupgemm: $fails failure(s)"
exit "$fails"
