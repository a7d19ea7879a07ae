#!/usr/bin/env bash
# causal_conv1d on the H200 (issue #15): validation; d2k bench of the built-in targets (naive,
# expert; no library target) and, where the machine's Python has torch, the PyTorch targets
# torch_eager and torch_compile of dataset/causal_conv1d/pytorch.py, with the table; the expert and
# every built variant (`// %VARIANT%` lines of expert.cu) checked and timed on the three bench
# workloads (step `variants`); the starter's verdict (must be INCORRECT_*); compute-sanitizer
# memcheck of the expert on every public check workload (both its kernels) and of each variant on
# the check workloads that reach its own code (the expert's rows kernel also on the 64 x 2048 x 512
# bench row, the only public shape of its two-span form); the golden cross-check against PyTorch
# float64 on `d2k check --dump` inputs (t-conv/golden_check.py); the SASS counts of the expert and
# of every variant (no local memory). Each step gets what is left of a 140 s budget (the 150 s of
# scripts/gpu/run_checks.sh).
# The variants sweep alone (issue #15, the 64 x 2048 x 512 row; about 2-3 minutes):
#   D2K_CHECK_STEPS=variants,memcheck_rcpapprox,memcheck_rowsbench,memcheck_persistrcp,memcheck_cta64,sass \
#     CONV_BUDGET_S=300 scripts/gpu/checks/t-conv.sh CARRY OUT
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

targets=naive,expert
bench_step --files "bench_$task" --fail "bench $targets (see bench.log)" --show 16 \
  bench 60 $targets "" --max-time 0.5 --quiet

# The expert and every built variant on the three bench workloads: 0.3 s of timing and one
# fresh-input correctness round against naive per target and row (8 targets). The 64 x 2048 x 512
# row first, in its own run (a run cut by its allowance writes no table), then the two long rows.
# Alone: D2K_CHECK_STEPS=variants CONV_BUDGET_S=150 scripts/gpu/checks/t-conv.sh CARRY OUT
variants_step --files "variants_${task}_512" --pass "variants PASSED (64x2048x512)" --show 12 \
  40 "$(workload_uuids bench 64x2048x512)" --max-time 0.3 --bench-rounds 1 --quiet
variants_step --files "variants_${task}_long" --pass "variants PASSED (8x4096x4096, 1x8192x65536)" --show 20 \
  80 "$(workload_uuids bench '"L": [0-9]\{4,\}')" --max-time 0.3 --bench-rounds 1 --quiet

starter_verdict 10

# memcheck over every public check workload: the 16-byte path (L % 8 == 0: one tile, several
# tiles, rows shorter than a warp span) and the 2-byte path (odd L, L < W). The same run dumps
# inputs and golden outputs for the cross-check (golden_step dumps them itself when it did not).
checks=$(workload_uuids check)
nchecks=$(echo "$checks" | tr , '\n' | wc -l)
sanitize memcheck 30 "$checks" --dump "$out/dump"
sanitize --impl expert:flat memcheck 20 \
  causal_conv1d-check-2x64x2056,causal_conv1d-check-1x4x65544,causal_conv1d-check-4x2048x64-mamba370m
# The seventh session's variants, each on the check workloads that reach its own code (`d2k check`
# also judges their outputs against the golden): rcpapprox's arithmetic on SiLU's negative tail
# (16-byte path) and an odd L (2-byte path); rows' one-span kernel (rows of 64 and of 24); persist
# looping over more tiles than its grid holds warps (8192 one-tile rows) and over 5 tiles a row
# with halos and a partial last tile (L = 2056); cta64's grid of 2-warp CTAs on both paths.
variant_memcheck() {  # variant_memcheck NAME SECONDS WORKLOADS: only where the variant is built
  [ -f "$carry/impl/$task/expert_$1.so" ] && sanitize --impl "expert:$1" memcheck "$2" "$3"
}
variant_memcheck rcpapprox 15 causal_conv1d-check-2x64x1000-negative-tail,causal_conv1d-check-3x37x1001
variant_memcheck persistrcp 15 causal_conv1d-check-4x2048x64-mamba370m,causal_conv1d-check-2x64x2056
variant_memcheck cta64 15 causal_conv1d-check-2x64x2056,causal_conv1d-check-3x37x1001
# The expert's rows kernel (rowsrcp, the default since the seventh session) covers rows of 64 and
# 24 in the expert's memcheck above; its two-span form (257 <= L <= 512) has no public check
# workload: memcheck it on the bench
# row (`d2k check` of a bench workload: one round judged against naive's outputs, both under the
# sanitizer, no timing).
sanitize --name memcheck_rowsbench memcheck 40 causal_conv1d-bench-64x2048x512-mamba370m --bench-rounds 1
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

# SASS of the expert: what design.json's "recognise" fields name; of every variant the same counts
# (steps8 and flat keep a small stack frame around __frcp_rn's slow-path call: counted, not failed),
# and no local memory in the seventh session's variants.
if selected sass; then
  insns="(LDG|STG)\.E[A-Z.]*128[A-Z.]*|MUFU\.(EX2|RCP)|SHFL\.IDX|F2FP[A-Z0-9.]*|BAR\.SYNC|LDL|STL"
  sass_counts "$insns" "SHFL\\.IDX" "LDL|STL"
  for v in $(built_variants); do
    case $v in
      steps2 | steps8 | flat) sass_counts --so "expert_$v" "$insns" ;;
      *) sass_counts --so "expert_$v" "$insns" "SHFL\\.IDX" "LDL|STL" ;;
    esac
  done
fi
echo "t-conv: $fails failure(s)"
exit "$fails"
