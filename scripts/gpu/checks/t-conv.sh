#!/usr/bin/env bash
# causal_conv1d on the H200 (issue #15): validation; d2k bench of the built-in targets (naive,
# expert; no library target) and, where the machine's Python has torch, the PyTorch targets
# torch_eager and torch_compile of dataset/causal_conv1d/pytorch.py, with the table; the expert's
# variants (`// %VARIANT%` lines of expert.cu: steps2, steps8, flat) checked and timed; the starter's
# verdict (must be INCORRECT_*); compute-sanitizer memcheck of the expert on every public check
# workload (both its kernels) and of the flat variant on those with L % 8 == 0; the golden
# cross-check against PyTorch float64 on `d2k check --dump` inputs (t-conv/golden_check.py); the
# expert's SASS counts. Each step gets what is left of a
# 140 s budget (the 150 s of scripts/gpu/run_checks.sh).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-conv.sh CARRY OUT [compile]
# `compile` adds the torch_compile target (its own 90 s allowance beyond the budget).
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=causal_conv1d
aux=scripts/gpu/checks/t-conv
budget=${CONV_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
# The machine's Python with torch (the PyTorch targets and the golden cross-check).
detect_torch venv

validate_step

targets=naive,expert,expert:steps2,expert:steps8,expert:flat
bench_step --files "bench_$task" --fail "bench $targets (see bench.log)" --show 16 \
  bench 75 $targets "" --max-time 0.5 --quiet

starter_verdict 10

# memcheck over every public check workload: the 16-byte path (L % 8 == 0: one tile, several
# tiles, rows shorter than a warp span) and the 2-byte path (odd L, L < W). The same run dumps
# inputs and golden outputs for the cross-check (golden_step dumps them itself when it did not).
checks=$(workload_uuids check)
nchecks=$(echo "$checks" | tr , '\n' | wc -l)
sanitize memcheck 30 "$checks" --dump "$out/dump"
sanitize --impl expert:flat memcheck 20 \
  causal_conv1d-check-2x64x2056,causal_conv1d-check-1x4x65544,causal_conv1d-check-4x2048x64-mamba370m
golden_step --dump-s 15 --show $((nchecks + 1)) 15 "$checks" $aux/golden_check.py --dataset dataset

# PyTorch targets on the bench workloads (naive is checked alongside: bench outputs are judged
# against it). torch_compile traces and compiles each shape first: the `compile` extra.
if [ $have_torch = 1 ]; then
  ptargets=torch_eager
  [[ " ${*:3} " == *" compile "* ]] && { ptargets=torch_eager,torch_compile; budget=$((budget + 90)); }
  bench_step --files "torch_$task" --pass "PyTorch targets PASSED ($ptargets)" \
    --fail "PyTorch targets $ptargets (see torch.log)" --show 8 \
    torch 25 $ptargets "$(workload_uuids bench)" --max-time 0.5 --quiet
fi

# SASS of the expert: what design.json's "recognise" fields name.
sass_counts "(LDG|STG)\.E[A-Z.]*128[A-Z.]*|MUFU\.(EX2|RCP)|SHFL\.IDX|F2FP[A-Z0-9.]*|BAR\.SYNC"
echo "t-conv: $fails failure(s)"
exit "$fails"
