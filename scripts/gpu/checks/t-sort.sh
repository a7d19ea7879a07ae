#!/usr/bin/env bash
# radix_sort_pairs on the H200 (issue #17): validation; d2k bench of every built-in target (naive,
# expert, library = CUB DeviceRadixSort::SortPairs) and PyTorch eager on the check workloads, the
# 1e6 row and the two 2.5e8 rows (uniform: a target row; Zipf 8-bit: the low-entropy row), with the
# table; the expert's variants (`// %VARIANT%` lines of expert.cu) beside the expert on the 2.5e8
# uniform row; the starter's verdict (must be INCORRECT_*); the golden cross-check against
# torch.sort(stable=True) on `d2k check --dump` inputs (t-sort/golden_check.py); the expert under
# compute-sanitizer memcheck on the check workloads and racecheck on the one-tile one; the expert's
# SASS counts (design.json's "recognise" fields). Fits the 150 s deadline of
# scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget (SORT_BUDGET_S).
# A sweep (D2K_CHECK_STEPS set, e.g. to the variant steps) times the variants beside the expert AND
# the library (CUB) in one d2k bench on the 2.5e8 uniform row (ratios hold only within one run),
# and runs each variant under memcheck on three check workloads (one tile; 17 tiles of uniform
# keys; 33 tiles of Zipf keys, whose look-backs walk past AGGREGATE words) and racecheck on the
# one-tile one (steps memcheck_NAME, racecheck_NAME; and its SASS without local memory):
#   D2K_CHECK_STEPS=variants,memcheck_prev24,racecheck_prev24 SORT_BUDGET_S=120 \
#     scripts/gpu/checks/t-sort.sh CARRY OUT
# (the sweep of 2026-12-03 that chose the default: expert.cu's header; the second sweep of that
# day, async / async32 / early, all slower, code removed: docs/results/radix_sort_pairs.md "Round
# two measured").
# Extra after OUT (not run by run_checks.sh): `big` benches the 1e9 row (naive, expert, library,
# and torch_eager where torch is installed; 8 GB in and 8 GB out per set, 8 GB more of workspace),
# with its own allowance of 400 s.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-sort.sh CARRY OUT [big]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=radix_sort_pairs
helpers=scripts/gpu/checks/t-sort
extras=" ${*:3} "
budget=${SORT_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
small=$(workload_uuids bench "n1e6-\|n2.5e8-")
big=$(workload_uuids bench "n1e9-")
variant_rows=$(workload_uuids bench "n2.5e8-uniform")
race_rows=$(workload_uuids check "n4099-uniform")  # racecheck instruments every shared access: one tile only
variant_checks=$(workload_uuids check "n4099-uniform\|n100003-uniform\|n200009-zipf8")
sweep=0
[ -n "${D2K_CHECK_STEPS:-}" ] && sweep=1
detect_torch

validate_step
bench_step --files "bench_$task" --pass "bench: every target PASSED (check workloads, the 1e6 and the 2.5e8 bench workloads)" \
  --show 12 bench 60 "naive,expert,library$torch" "$checks,$small"
if [ "$sweep" = 1 ]; then
  variants_step --with library --show 14 60 "$variant_rows" --max-time 0.3 --bench-rounds 1
else
  variants_step --show 12 18 "$variant_rows" --max-time 0.2 --bench-rounds 1
fi
starter_verdict 8 --workloads "$checks"
golden_step --pass "vs torch.sort(stable=True)" --show 11 8 "$checks" $helpers/golden_check.py
sanitize memcheck 15 "$checks"
sanitize racecheck 15 "$race_rows"
if [ "$sweep" = 1 ]; then
  for v in $(built_variants); do
    sanitize --impl "expert:$v" memcheck 12 "$variant_checks"
    sanitize --impl "expert:$v" racecheck 12 "$race_rows"
    sass_counts --so "expert_$v" "MATCH\.ANY|LD\.E\.STRONG\.GPU|ST\.E\.STRONG\.GPU|BAR\.SYNC[A-Z.]*" "MATCH.ANY" "LDL|STL"
  done
fi
sass_counts "MATCH\.ANY[A-Z0-9.]*|POPC|VOTE\.[A-Z]+|LDG\.E\.EF\.128|LDG\.E\.128[A-Z.]*|LDG\.E\.EF|LDG\.E\.STRONG\.GPU|ATOMS\.[A-Z0-9.]*|ATOMG[A-Z0-9.]*|RED[A-Z0-9.]*"

if [[ $extras == *" big "* ]]; then
  budget=$((SECONDS + 400))  # an extra: its own allowance
  bench_step --pass "bench 1e9 pairs: every target PASSED" --fail "bench 1e9 pairs (see bench_big.log)" --show 6 \
    bench_big 400 "naive,expert,library$torch" "$big"
fi
echo "t-sort: $fails failure(s)"
exit "$fails"
