#!/usr/bin/env bash
# adam_8bit_blockwise on the H200 (issue #18): validation; d2k bench of naive, expert and PyTorch
# eager (bitsandbytes is not installed there: pytorch.py is the torch-ops flow) on the check
# workloads and both bench rows (1e8, 1e9), with the table; the expert's variants (`// %VARIANT%`
# lines of expert.cu: bsearch, scalar) beside the expert on the 1e8 row; the starter's verdict
# (must be INCORRECT_*); the golden cross-check against a PyTorch float64 step on `d2k check
# --dump` inputs (t-adam8/golden_check.py); the expert under compute-sanitizer memcheck on the
# check workloads; the expert's SASS counts (design.json's "recognise" fields). Fits the 150 s
# deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget
# (ADAM8_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-adam8.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=adam_8bit_blockwise
helpers=scripts/gpu/checks/t-adam8
budget=${ADAM8_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
benches=$(workload_uuids bench)
row_1e8=$(workload_uuids bench "1e8")
detect_torch

validate_step
bench_step --files "bench_$task" --pass "bench: every target PASSED (check workloads, 1e8 and 1e9)" \
  bench 70 "naive,expert$torch" "$checks,$benches"
variants_step --show 6 20 "$row_1e8"
starter_verdict 8 --workloads "$checks"
golden_step --pass "vs a PyTorch float64 step" --show 12 10 "$checks" $helpers/golden_check.py
sanitize memcheck 20 "$checks"

insns="LDG\.E\.EF\.128|LDG\.E\.128|LDG\.E\.EF\.64|LDG\.E\.64|STG\.E\.EF\.128|STG\.E\.EF\.64|LDS[A-Z0-9.]*|SHFL\.BFLY[A-Z0-9.]*|LDL[A-Z0-9.]*|STL[A-Z0-9.]*"
for so in expert expert_bsearch expert_scalar; do sass_counts --so $so "$insns"; done
echo "t-adam8: $fails failure(s)"
exit "$fails"
