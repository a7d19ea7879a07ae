#!/usr/bin/env bash
# fp8_blockwise_gemm on the H200 (issue #16): validation; d2k bench of the built-in targets (naive =
# dequantise + cuBLAS bf16, library = cuBLASLt fp8 with BLK128x128 / VEC128 block scaling, expert)
# on the three DeepSeek-V3 bench workloads, plus torch_eager where torch is installed, with the
# table; the expert's `streamk` variant (expert.cu's `// %VARIANT%` line) beside the expert; the
# bf16 comparison the issue's target is stated against: a bf16 cuBLAS GEMM of the same shape
# (torch.matmul on bf16 operands, cold L2) timed by t-fp8/bf16_gemm.py — a separate measurement,
# not a d2k target, since a bf16 GEMM is no implementation of this task; the starter's verdict
# (must be INCORRECT_*); the golden cross-check against PyTorch float64 on `d2k check --dump`
# inputs (t-fp8/golden_check.py); the expert under compute-sanitizer memcheck on the small check
# workloads; the expert's SASS counts (QGMMA, UTMALDG, UTMASTG; design.json's "recognise" fields).
# Each step gets what is left of a 140 s budget (FP8_BUDGET_S), inside run_checks.sh's 150 s.
# What it must show: every line PASS; the ratio lines "expert vs bf16 cuBLAS" >= 1.5 on the two
# large shapes (8192x7168x2048, 4096x24576x1536) and "expert vs naive" >= 3 on all three.
# If the library target fails with "cuBLASLt has no fp8 algorithm with 128x128 / 1x128 block
# scaling", cuBLASLt refuses these modes on this GPU/driver: report it and drop library.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-fp8.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=fp8_blockwise_gemm
helpers=scripts/gpu/checks/t-fp8
budget=${FP8_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
benches=$(workload_uuids bench)
small_checks=$(workload_uuids check "1x8x128\|77x200x256\|130x136x128\|256x384x1536")
detect_torch venv

validate_step

# Bench: one round of the check workloads (golden) and half a second of timing per bench workload.
bench_step --files "bench_$task" --pass "bench: every target PASSED (naive,expert,library)" --show 12 \
  bench 40 naive,expert,library "" --max-time 0.5 --rounds 1
# torch_eager on its own: the operands reach pytorch.py through DLPack as float8_e4m3fn (DLPack
# code 10), which needs a torch whose from_dlpack knows float8; a failure here says so in torch.log.
if [ -n "$torch" ]; then
  bench_step --files "torch_$task" --pass "torch_eager PASSED" --fail "torch_eager (see torch.log)" --show 4 \
    torch 15 torch_eager "$benches" --max-time 0.5
fi

if [ -f "$carry/impl/$task/expert_streamk.so" ]; then
  bench_step --files "variants_$task" --pass "variants: expert:streamk PASSED" --show 6 \
    variants 15 expert,expert:streamk "$benches" --max-time 0.5
else
  fail "no expert_streamk.so under $carry/impl/$task (build with -DD2K_EXPERT_VARIANTS=ON)"
fi

# The issue's comparison: a bf16 cuBLAS GEMM of each bench shape (separate measurement), and the
# ratios against the expert's and naive's medians from bench_$task.jsonl.
if [ -n "$torch" ]; then
  step bf16 15 "$py" $helpers/bf16_gemm.py --bench "$out/bench_$task.jsonl" --dataset dataset \
    --json "$out/bf16_gemm.jsonl" && pass "bf16 cuBLAS comparison measured" || fail "bf16 comparison (see bf16.log)"
  tail -8 "$out/bf16.log"
else
  fail "bf16 cuBLAS comparison: no torch for $py"
fi

starter_verdict 8 --workloads "$(workload_uuids check 77x200x256)"
golden_step --dump-s 8 --pass "vs PyTorch float64" --show 10 10 "$checks" $helpers/golden_check.py --dataset dataset
sanitize memcheck 20 "$small_checks"
sass_counts "QGMMA\.[0-9A-Zx.]*|HGMMA\.[0-9A-Zx.]*|UTMALDG[A-Z0-9.]*|UTMASTG[A-Z0-9.]*|LDGSTS[A-Z0-9.]*|LDL|STL"
echo "t-fp8: $fails failure(s)"
exit "$fails"
