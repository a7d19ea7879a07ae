#!/usr/bin/env bash
# groupby_aggregate on the H200 (issue #17): validation; d2k bench of naive, expert and PyTorch
# eager on the check workloads and three 2e8-row bench workloads (16 groups uniform and Zipf, 1e6
# uniform: the host golden of a 2e8-row set takes seconds), with the table; the expert's variant
# global_only (no per-CTA shared tables) on the 16-group and 1e6-group uniform rows;
# the starter's verdict (must be INCORRECT_*); the golden cross-check
# against PyTorch unique/bincount/scatter_reduce on `d2k check --dump` inputs
# (t-groupby/golden_check.py); the expert under compute-sanitizer memcheck on the check
# workloads; the expert's SASS counts (design.json's "recognise" fields).
# Fits the 150 s deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 140 s
# budget (GROUPBY_BUDGET_S). Memory: a 2e8-row set is 3.2 GB of input and 8 GB of output
# capacity; the naive table is 21 GB, the expert's 11 GB.
# Extra after OUT (not run by run_checks.sh): `full` benches all six 2e8-row workloads (1e6 Zipf,
# 1e8 uniform and Zipf too) with its own allowance of 500 s.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-groupby.sh CARRY OUT [full]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=groupby_aggregate
helpers=scripts/gpu/checks/t-groupby
extras=" ${*:3} "
budget=${GROUPBY_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
bench=$(workload_uuids bench "g16-\|g1m-uniform")
all_bench=$(workload_uuids bench)
variant_rows=$(workload_uuids bench "g16-uniform\|g1m-uniform")
detect_torch

validate_step
bench_step --files "bench_$task" --pass "bench: every target PASSED (check workloads and three 2e8-row bench workloads)" \
  --show 16 bench 75 "naive,expert$torch" "$checks,$bench"
variants_step --only --show 8 25 "$variant_rows"
starter_verdict 8 --workloads "$checks"
golden_step --pass "vs PyTorch unique/bincount/scatter_reduce" --show 12 8 "$checks" $helpers/golden_check.py
sanitize memcheck 20 "$checks"
sass_counts "MATCH\.ANY\.U64|ATOMS\.[A-Z0-9.]*|ATOMG\.[A-Z0-9.]*|RED\.[A-Z0-9.]*|LDG\.E\.64[A-Z.]*|POPC|VOTE\.[A-Z]+"

if [[ $extras == *" full "* ]]; then
  budget=$((SECONDS + 500))  # an extra: its own allowance
  bench_step --pass "bench, all six 2e8-row workloads: every target PASSED" \
    bench_full 500 "naive,expert$torch" "$all_bench" --quiet
fi
echo "t-groupby: $fails failure(s)"
exit "$fails"
