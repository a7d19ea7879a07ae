#!/usr/bin/env bash
# w4a16_gemv on the H200 (issue #15): validation; d2k bench of the built-in targets (naive,
# expert, library) and, where the machine's Python has torch, torch_eager of
# dataset/w4a16_gemv/pytorch.py, with the table; the expert's variants (every `// %VARIANT%` line
# of expert.cu) checked and timed at B = 1; the starter's verdict (must be INCORRECT_*);
# compute-sanitizer memcheck of the expert on the check workloads (its B = 1 path is the row
# stream, its chunks on the tensor cores since 2026-12-03; every other B the tensor-core path) and
# racecheck of its row stream; memcheck of the row-stream variants rs_ffma (the FFMA chunk form
# before) and persist (persistent CTAs), with racecheck of both and memcheck of persist on a
# multi-wave bench row; memcheck of prev (the q - 8 codes before the tenth session);
# the golden cross-check against PyTorch float64 on `d2k check --dump` inputs
# (t-w4a16/golden_check.py);
# the expert's SASS counts. Each step gets what is left of a 140 s budget (the 150 s of
# scripts/gpu/run_checks.sh).
# What it must show: every line PASS; in bench.md, expert >= 75% of SOL at B = 1 on the three
# shapes and faster than library (dequantise + cuBLAS) and naive at every B; in
# variants_w4a16_gemv.md, which variant is fastest on each B = 1 row: the sweep for issue #15
# (expert, library and the variants packed in the carry; the round two of 2026-12-03 chose the
# default; the tenth session's sweep made the offset codes the default: docs/results/w4a16_gemv.md):
#   D2K_CHECK_STEPS=variants,memcheck,racecheck,memcheck_prev W4A16_BUDGET_S=135 scripts/gpu/checks/t-w4a16.sh CARRY OUT
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-w4a16.sh CARRY OUT [compile]
# `compile` adds the torch_compile target (its own 90 s allowance beyond the budget).
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=w4a16_gemv
helpers=scripts/gpu/checks/t-w4a16
budget=${W4A16_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
# The machine's Python with torch (the PyTorch targets and the golden cross-check).
detect_torch venv

validate_step

# Nine bench workloads: half a second of timing per target and workload and one fresh-input round
# of the check workloads (the memcheck and golden steps below check again) keep the step in budget.
targets=naive,expert,library
bench_step --files "bench_$task" --fail "bench $targets (see bench.log)" --show 30 \
  bench 70 $targets "" --max-time 0.5 --rounds 1 --quiet

# The expert, the library and every built variant (`// %VARIANT%` lines of expert.cu) on the
# three B = 1 rows (issue #15's bar), in one d2k run: 0.3 s of timing and one correctness round per
# target and row, 9 targets x 3 rows, a 75 s budget. Alone: D2K_CHECK_STEPS=variants
# scripts/gpu/checks/t-w4a16.sh CARRY OUT
variants_step --with library --files "variants_$task" --pass "variants PASSED (B = 1)" --show 40 \
  75 "$(workload_uuids bench '"B": 1,')" --max-time 0.3 --bench-rounds 1 --quiet

if [ $have_torch = 1 ]; then
  ptargets=torch_eager
  [[ " ${*:3} " == *" compile "* ]] && { ptargets=torch_eager,torch_compile; budget=$((budget + 90)); }
  bench_step --files "torch_$task" --pass "PyTorch targets PASSED ($ptargets)" \
    --fail "PyTorch targets $ptargets (see torch.log)" --show 18 \
    torch 25 $ptargets "$(workload_uuids bench)" --max-time 1 --quiet
fi

starter_verdict 10 --workloads $task-check-3x37x384

# memcheck: the tensor-core path with one n8 tile (B <= 8) and two (B = 16), N not a multiple of
# 32, K split over all eight warps; the row stream (B = 1) at K = 128 (one chunk with one live
# group: lanes 4..31 load nothing; 31 of the CTA's 32 rows clamped to row 0) and K = 28672 (112 KB
# of x in shared memory, 28 chunks through the register ring, 64 rows: two CTAs).
sanitize memcheck 20 $task-check-1x1x128,$task-check-1x64x28672,$task-check-3x37x384,$task-check-16x100x1152,$task-check-5x257x8192

# racecheck of the row stream (the default's B = 1 path): every warp reads x that all of its CTA's
# threads staged, one barrier between. Naive's cuBLAS kernels (run first on every check workload,
# in the same process) are left out: their split-K GEMM draws hazards that say nothing about the
# expert.
sanitize --exclude nvjet racecheck 12 $task-check-1x1x128,$task-check-1x64x28672
# The row-stream variants: rs_ffma (the FFMA chunk form, the default until 2026-12-03) and persist
# (persistent CTAs), under memcheck on the two B = 1 shapes above (K = 28672: 16 rows per CTA, four
# CTAs) and B = 3 (the tensor-core path), each judged against the golden. On these check workloads
# each warp gets at most one row block; the persistent cursors crossing blocks (mid-turn of the
# ring: 8 chunks per row) run on the bench row 1x28672x8192 (7168 row blocks on 2112 warps), under
# memcheck once and judged against naive.
for v in rs_ffma persist; do
  [ -f "$carry/impl/$task/expert_$v.so" ] &&
    sanitize --impl "expert:$v" memcheck 12 $task-check-1x1x128,$task-check-1x64x28672,$task-check-3x37x384
done
for v in persist; do
  [ -f "$carry/impl/$task/expert_$v.so" ] &&
    sanitize --impl "expert:$v" --name "memcheck_${v}_bench" memcheck 20 $task-bench-1x28672x8192
done
# racecheck of the persistent kernel (x staged once, read by every warp of the CTA for all of its
# row blocks after one barrier) and of the FFMA form's staging (the default's tensor-core staging,
# x as {a0, a0, a2, a2} vectors, is the racecheck above).
for v in rs_ffma persist; do
  [ -f "$carry/impl/$task/expert_$v.so" ] &&
    sanitize --impl "expert:$v" --exclude nvjet racecheck 12 $task-check-1x1x128,$task-check-1x64x28672
done
# The previous default's row stream (`prev`, codes q - 8; the offset form is the default since the
# tenth session's sweep) under memcheck on the B = 1 check shapes and B = 3.
[ -f "$carry/impl/$task/expert_prev.so" ] &&
  sanitize --impl "expert:prev" memcheck 12 $task-check-1x1x128,$task-check-1x64x28672,$task-check-3x37x384

golden_step --dump-s 15 --show 9 15 "$(workload_uuids check)" $helpers/golden_check.py --dataset dataset

# SASS of the expert: what design.json's "recognise" fields name (HMMA, 16-byte loads, the
# magic-number conversion's LOP3/HFMA2, PRMT for x, no local memory).
insns="HMMA\.[0-9A-Z.]*|LDG\.E[A-Z0-9.]*128[A-Z.]*|HFMA2\.BF16[A-Z0-9_.]*|PRMT|I2F[A-Z0-9.]*|LDL|STL|BAR\.SYNC"
sass_counts "$insns"
for v in $(built_variants); do sass_counts --so "expert_$v" "$insns" "HMMA" "LDL|STL"; done
echo "t-w4a16: $fails failure(s)"
exit "$fails"
