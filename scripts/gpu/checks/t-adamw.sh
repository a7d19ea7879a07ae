#!/usr/bin/env bash
# fused_adamw on the H200 (issue #18): validation; d2k bench of the built-in targets (naive,
# expert, library: CUB TransformReduce + DeviceFor) and, where the machine's Python has torch,
# torch_eager of dataset/fused_adamw/pytorch.py,
# with the table; the expert's variants (`// %VARIANT%` lines of expert.cu: ld4, ctas8, twopass)
# checked and timed on the 1e8 and 1e7 rows; the starter's verdict (must be INCORRECT_*); compute-sanitizer memcheck of
# the expert on the check workloads (both of its paths: the 1000003-element one takes the
# cooperative one-read kernel); the golden cross-check against PyTorch float64 on
# `d2k check --dump` inputs (t-adamw/golden_check.py); the expert's SASS counts. Each step gets
# what is left of a 140 s budget (the 150 s of scripts/gpu/run_checks.sh).
# What it must show: every line PASS; in bench.md the expert >= 85% of SOL on every row and faster
# than naive and library everywhere; in torch.md the expert >= 1.5x torch_eager on every row and
# >= 10x on the 1e7x5000 row (expert times from bench.md).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-adamw.sh CARRY OUT [compile]
# `compile` adds the torch_compile target (its own 90 s allowance beyond the budget).
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=fused_adamw
helpers=scripts/gpu/checks/t-adamw
budget=${ADAMW_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
detect_torch venv

validate_step

# Three bench rows; the naive launches 13 kernels per tensor (65000 at 5000 tensors, ~0.2 s a call),
# so half a second of timing per target and workload and one fresh-input round of the checks.
targets=naive,expert,library
bench_step --files "bench_$task" --fail "bench $targets (see bench.log)" --show 20 \
  bench 50 $targets "" --max-time 0.5 --rounds 1 --quiet

# ld4 and ctas8 matter on the streaming rows, twopass (ADAMW_ONE_READ=0) on the 1e7 row, where the
# expert otherwise keeps the grads in shared memory across a grid barrier.
bench_step --files "variants_$task" --pass "variants PASSED (1e8 and 1e7 rows)" --show 8 \
  variants 20 expert,expert:ld4,expert:ctas8,expert:twopass \
  $task-bench-1e8x300-llama3-8b,$task-bench-1e7x5000-qwen1.5-moe --max-time 0.5 --quiet

if [ $have_torch = 1 ]; then
  ptargets=torch_eager
  [[ " ${*:3} " == *" compile "* ]] && { ptargets=torch_eager,torch_compile; budget=$((budget + 90)); }
  bench_step --files "torch_$task" --pass "PyTorch targets PASSED ($ptargets)" \
    --fail "PyTorch targets $ptargets (see torch.log)" --show 9 \
    torch 25 $ptargets "$(workload_uuids bench)" --max-time 1 --quiet
fi

starter_verdict 10 --workloads $task-check-7x3

# memcheck: P = 1 and 7 (tail only), P odd over a million (the cooperative one-read kernel: staged
# vectors and the tail), 5000 tiny segments (two passes).
sanitize memcheck 20 $task-check-1x1,$task-check-7x3,$task-check-1000003x291-llama3-8b,$task-check-20011x5000-qwen1.5-moe

golden_step --dump-s 15 --show 9 20 "$(workload_uuids check)" $helpers/golden_check.py --dataset dataset

# SASS of the expert: what design.json's "recognise" fields name (16-byte evict-first loads and
# stores, 16-byte shared-memory staging, no local memory; one ATOM: the grid barrier's arrival).
sass_counts "LDG\.E[A-Z.]*128[A-Z.]*|STG\.E[A-Z.]*128[A-Z.]*|LDS\.128|STS\.128|RED[A-Z0-9.]*|ATOM[A-Z0-9.]*|LDL|STL|MUFU\.[A-Z]*"
echo "t-adamw: $fails failure(s)"
exit "$fails"
