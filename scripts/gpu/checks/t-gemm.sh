#!/usr/bin/env bash
# gemm_bias_gelu on the H200 (issue #16): validation; d2k bench of every built-in target (naive =
# cuBLAS + bias/GELU kernel, library = cuBLASLt GELU_BIAS epilogue, expert = CUTLASS sm90 fused
# epilogue) and PyTorch eager on the check and the three bench workloads, with the table (the
# targets: expert >= library on every bench workload, >= 75% of SOL on the first two); the
# expert's variants (`// %VARIANT%` lines of expert.cu: prev, t192) beside the expert
# and the library on the two large bench workloads (the M > 128 kernel they change; the bar is
# read from that one run), each variant also under compute-sanitizer memcheck on two small check
# workloads with M > 128 (131x200x72: two M tiles, tails in M, N and K; 257x392x1032: three M
# tiles, so a half-empty cluster, 17 k-blocks with a partial last one); the starter's verdict (must be INCORRECT_*); the golden
# cross-check against PyTorch float64 on `d2k check --dump` inputs (t-gemm/golden_check.py, which
# also prints the expert's measured rel_l2); the expert under compute-sanitizer memcheck on four
# check workloads (both kernels: stream-K for M <= 128, the clustered tiled kernel above); the
# expert's SASS counts (design.json's "recognise" fields). Fits the 150 s deadline of
# scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget (GEMM_BUDGET_S).
# The variant sweep for issue #16 (<= 120 s: variants 70 s, each memcheck 15 s):
#   D2K_CHECK_STEPS=variants,memcheck_gelu_lean,memcheck_gelu_newton,memcheck_gelu_newton_epi64 \
#     GEMM_BUDGET_S=120 scripts/gpu/checks/t-gemm.sh CARRY OUT
# What it must show: PASS on every line; in variants.md, each variant's time on the 8192^3 and
# 16384x14336x4096 rows against the expert's and the library's of the same run (vs_library).
# The twelfth session's sweep (t192: 128x192x64 tile; prev is built too and timed beside it):
#   D2K_CHECK_STEPS=variants,memcheck_t192 GEMM_BUDGET_S=100 scripts/gpu/checks/t-gemm.sh CARRY OUT
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-gemm.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=gemm_bias_gelu
helpers=scripts/gpu/checks/t-gemm
budget=${GEMM_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
bench=$(workload_uuids bench)
large=$(workload_uuids bench "8192x8192x8192\|16384x14336x4096")
variant_checks=$(workload_uuids check "131x200x72\|257x392x1032")
sanitized=$(workload_uuids check "1x8x8\|131x200x72\|257x392x1032\|37x520x4096")
detect_torch

validate_step
bench_step --files "bench_$task" --pass "bench: every target PASSED (check and bench workloads)" --show 12 \
  bench 60 "naive,expert,library$torch" "$checks,$bench"
# A run of every step (run_checks.sh, 140 s in all) gives the variants 30 s and no memcheck of
# them; the sweep, which selects its steps by name, gives them the time above.
sweep=0
[ -n "${D2K_CHECK_STEPS:-}" ] && sweep=1
# The variants beside the expert and the library (the bar of issue #16 is expert >= library, so
# both are timed in the variants' run).
variants_step --with library --show 12 $((sweep ? 70 : 30)) "$large" --max-time 0.3 --bench-rounds 1
starter_verdict 8 --workloads "$checks"
golden_step --pass "vs PyTorch float64" 10 "$checks" $helpers/golden_check.py
sanitize memcheck 25 "$sanitized"
if [ "$sweep" = 1 ]; then
  for v in $variants; do sanitize --impl "expert:$v" memcheck 15 "$variant_checks"; done
fi
sass_counts "HGMMA\.64x256x16\.F32\.BF16|UTMALDG[A-Z0-9.]*|UTMASTG[A-Z0-9.]*|MUFU\.(EX2|RCP|TANH)|USETMAXREG|CALL\.[A-Z.]*" HGMMA
rm -f "$out/expert.sass"
echo "t-gemm: $fails failure(s)"
exit "$fails"
