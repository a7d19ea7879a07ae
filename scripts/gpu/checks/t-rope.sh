#!/usr/bin/env bash
# rope_qk_norm on the H200 (issue #15): validation; d2k bench of naive, expert and torch_eager (the
# task's pytorch.py; skipped without torch) with the table; the decode row (T = 256, launch-bound)
# again with CUDA-graph replay; the expert's variants (`// %VARIANT%` lines of expert.cu, built as
# impl/<task>/expert_<name>.so); the starter's verdict (must be INCORRECT_*); the golden
# cross-check against PyTorch float64 on `d2k check --dump` inputs; the expert under
# compute-sanitizer memcheck on check workloads; the expert's SASS counts. Each step gets what is
# left of a 140 s budget (the 150 s deadline of scripts/gpu/run_checks.sh).
# Extra after OUT: `compile` adds a torch_compile bench (its own allowance, about 90 s).
# Helpers: scripts/gpu/checks/t-rope/{golden_check.py,variant_table.py}.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-rope.sh CARRY OUT [compile]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
out=$(cd "$out" && pwd)
d2k="$carry/d2k"
task=rope_qk_norm
helpers=scripts/gpu/checks/t-rope
extras=" ${*:3} "
budget=${ROPE_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
detect_torch

validate_step 8
targets=naive,expert$torch
bench_step --pass "bench: every target PASSED ($targets)" bench 45 $targets "" --quiet

bench_step --pass "graph: decode row timed with CUDA-graph replay" --show 4 \
  graph 12 naive,expert rope_qk_norm-bench-256x32x8-qwen3-8b-decode --graph --quiet

variants_step --only --pass "" --fail "variants bench (see variants.log)" --show 0 20 \
  rope_qk_norm-bench-8192x32x8-qwen3-8b-prefill,rope_qk_norm-bench-32768x32x8-qwen3-8b-prefill --quiet
if [ -n "$variants" ]; then
  python3 $helpers/variant_table.py "$out/bench.jsonl" "$out/graph.jsonl" "$out/variants.jsonl" \
    > "$out/variant_table.md" 2>&1 && pass "table: every target and variant PASSED" || fail "table (see variant_table.md)"
  cat "$out/variant_table.md"
fi

starter_verdict 15 --workloads rope_qk_norm-check-7x32x8-qwen3-8b
golden_step --dump-s 12 --show 9 10 "" $helpers/golden_check.py --dataset dataset --pytorch

# memcheck: the expert loaded into d2k itself (no worker), three check workloads.
sanitize memcheck 20 rope_qk_norm-check-1x1x1,rope_qk_norm-check-5x3x1-odd,rope_qk_norm-check-300x40x8-qwen3-14b-tail

if [[ $extras == *" compile "* && $have_torch = 1 ]]; then
  budget=$((SECONDS + 90))  # an extra: its own allowance
  bench_step --pass "torch_compile PASSED" --fail "torch_compile (see torch_compile.log)" --show 5 \
    torch_compile 90 torch_compile "" --quiet
fi

# SASS of the expert: what design.json's "recognise" fields name.
sass_counts "(LDG|STG|LDL|STL)\.E?\.?[0-9A-Z.]*|SHFL\.BFLY|F2FP\.[A-Z0-9.]+|BAR\.SYNC"
echo "t-rope: $fails failure(s)"
exit "$fails"
