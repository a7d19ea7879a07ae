#!/usr/bin/env bash
# chunked_linear_attention on the H200 (issue #16): validation; d2k bench of naive (the token
# recurrence, a CTA per head), expert (chunkwise mma.sync, value dimension split) and PyTorch eager
# (Mamba-2's minimal SSD program, pytorch.py) on the check workloads and the three bench workloads,
# with the table (%SOL against the memory roof: the cost model is memory-bound at every bench
# shape); the expert's variants (`// %VARIANT%` lines of expert.cu: prefetch, one_walk, chunkpar,
# prev) beside the expert and PyTorch eager on the check workloads and the three bench
# workloads, in one d2k run; the starter's verdict (must be INCORRECT_*); the golden cross-check
# against PyTorch float64 on `d2k check --dump` inputs (t-cla/golden_check.py); the expert and the
# variants one_walk, chunkpar and prev under compute-sanitizer memcheck on three small check
# workloads (the chunk-parallel form, which the expert takes there since their grids are smaller
# than the SM count, crosses segment boundaries: 2 and 4 one-chunk segments), racecheck of the
# expert and of one_walk (their shared arrays are written and read across warps);
# the SASS counts of the expert and every variant (design.json's "recognise" fields: HMMA,
# MUFU.EX2, SHFL.UP, no LDL/STL). Each step gets what is left of a 140 s budget (CLA_BUDGET_S).
# The default's sanitizer steps and the variants (the sweep of 2026-12-03 that chose the default:
# docs/results/chunked_linear_attention.md, "Round two measured"):
#   D2K_CHECK_STEPS=variants,memcheck,racecheck,memcheck_one_walk,racecheck_one_walk \
#     CLA_BUDGET_S=120 scripts/gpu/checks/t-cla.sh CARRY OUT
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-cla.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=chunked_linear_attention
helpers=scripts/gpu/checks/t-cla
budget=${CLA_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
bench=$(workload_uuids bench)
small_checks=$(workload_uuids check "1x32x1x64\|2x3x77\|strong-decay")
detect_torch

validate_step
bench_step --files bench --pass "bench: every target PASSED (check workloads and the three bench workloads)" \
  bench 50 "naive,expert$torch" "$checks,$bench"
# One run: the variants beside the expert and PyTorch eager on every bench row (and judged on the
# check workloads); --max-time bounds each bench row's timing (the expert takes ~5 ms a call at
# 1 x 64 x 32768 x 128, PyTorch eager ~42 ms).
variants_step --with "${torch#,}" --show 12 75 "$checks,$bench" --max-time 0.5 --bench-rounds 1
starter_verdict 8 --workloads "$small_checks"
golden_step --dump-s 8 --pass "vs PyTorch float64" 20 "$checks" $helpers/golden_check.py
sanitize memcheck 12 "$small_checks"
sanitize racecheck 20 "$small_checks"
for v in one_walk chunkpar prev; do sanitize --impl "expert:$v" memcheck 12 "$small_checks"; done
sanitize --impl "expert:one_walk" racecheck 20 "$small_checks"

insns="HMMA\.[A-Z0-9.]*|MUFU\.EX2|SHFL\.UP|LDG\.E\.128[A-Z.]*|LDL|STL"
sass_counts "$insns" "HMMA MUFU.EX2 SHFL.UP" "LDL|STL"
for v in $(built_variants); do sass_counts --so "expert_$v" "$insns" "HMMA" "LDL|STL"; done
echo "t-cla: $fails failure(s)"
exit "$fails"
