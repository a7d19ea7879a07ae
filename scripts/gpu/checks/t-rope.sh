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
has_torch=0
python3 -c "import torch" 2> /dev/null && has_torch=1

step validate 8 "$d2k" tasks validate $task && pass validate || fail validate
targets=naive,expert
[ $has_torch = 1 ] && targets=$targets,torch_eager || echo "SKIP torch_eager: no torch on this machine"
if step bench 45 "$d2k" bench --task $task --targets $targets --quiet --json "$out/bench.jsonl" \
    --markdown "$out/bench.md"; then
  pass "bench: every target PASSED ($targets)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-220 | tail -10

decode=rope_qk_norm-bench-256x32x8-qwen3-8b-decode
step graph 12 "$d2k" bench --task $task --targets naive,expert --graph --workloads $decode --quiet \
  --json "$out/graph.jsonl" && pass "graph: decode row timed with CUDA-graph replay" || fail "graph (see graph.log)"
grep -i "graph\|expert\|naive" "$out/graph.log" | cut -c1-220 | tail -4

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  vt=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 20 "$d2k" bench --task $task --targets "${vt%,}" --quiet --json "$out/variants.jsonl" \
    --workloads rope_qk_norm-bench-8192x32x8-qwen3-8b-prefill,rope_qk_norm-bench-32768x32x8-qwen3-8b-prefill \
    || fail "variants bench (see variants.log)"
  python3 $helpers/variant_table.py "$out/bench.jsonl" "$out/graph.jsonl" "$out/variants.jsonl" \
    > "$out/variant_table.md" 2>&1 && pass "table: every target and variant PASSED" || fail "table (see variant_table.md)"
  cat "$out/variant_table.md"
else
  fail "no expert variants built under $carry/impl/$task"
fi

step starter 15 "$d2k" bench --task $task --targets solution --solution-dir dataset/$task/starter/cuda --quiet \
  --workloads rope_qk_norm-check-7x32x8-qwen3-8b
grep -q "INCORRECT_" "$out/starter.log" && pass "starter fails with INCORRECT_*" || fail "starter verdict (see starter.log)"

if [ $has_torch = 1 ]; then
  step dump 12 "$d2k" check --task $task --impl expert --quiet --rounds 1 --dump "$out/dump"
  step golden 10 python3 $helpers/golden_check.py "$out/dump" --dataset dataset --pytorch \
    && pass "golden cross-check" || fail "golden cross-check (see golden.log)"
  tail -9 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the errors
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

# compute-sanitizer memcheck: the expert loaded into d2k itself (no worker), three check workloads.
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step memcheck 20 "$sanitizer" --tool memcheck --error-exitcode 99 "$d2k" check --task $task --impl expert \
    --isolation none --rounds 1 --quiet \
    --workloads rope_qk_norm-check-1x1x1,rope_qk_norm-check-5x3x1-odd,rope_qk_norm-check-300x40x8-qwen3-14b-tail
  mrc=$?
  if [ $mrc -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$out/memcheck.log"; then
    pass "memcheck: expert clean on three check workloads"
  else
    fail "memcheck rc=$mrc (see memcheck.log)"
  fi
  grep "ERROR SUMMARY" "$out/memcheck.log"
else
  echo "SKIP memcheck: no compute-sanitizer"
fi

if [[ $extras == *" compile "* && $has_torch = 1 ]]; then
  budget=$((SECONDS + 90))  # an extra: its own allowance
  step torch_compile 90 "$d2k" bench --task $task --targets torch_compile --quiet --json "$out/torch_compile.jsonl" \
    && pass "torch_compile PASSED" || fail "torch_compile (see torch_compile.log)"
  grep -v " check \|hidden:" "$out/torch_compile.log" | cut -c1-220 | tail -5
fi

# SASS of the expert: what design.json's "recognise" fields name.
objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "(LDG|STG|LDL|STL)\.E?\.?[0-9A-Z.]*|SHFL\.BFLY|F2FP\.[A-Z0-9.]+|BAR\.SYNC" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi
echo "t-rope: $fails failure(s)"
exit "$fails"
