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
[ -x /opt/torch/.venv/bin/python3 ] && export D2K_PYTHON=/opt/torch/.venv/bin/python3
export D2K_PYTHON_SHIM_DIR="$PWD/src/tracks/python"
py=${D2K_PYTHON:-python3}
have_torch=0
"$py" -c "import torch" 2> /dev/null && have_torch=1

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate

# Three bench rows; the naive launches 13 kernels per tensor (65000 at 5000 tensors, ~0.2 s a call),
# so half a second of timing per target and workload and one fresh-input round of the checks.
targets=naive,expert,library
if step bench 50 "$d2k" bench --task $task --targets $targets --max-time 0.5 --rounds 1 --quiet --json "$out/bench_$task.jsonl" \
    --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED ($targets)"
else
  fail "bench $targets (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-220 | tail -20

# ld4 and ctas8 matter on the streaming rows, twopass (ADAMW_ONE_READ=0) on the 1e7 row, where the
# expert otherwise keeps the grads in shared memory across a grid barrier.
step variants 20 "$d2k" bench --task $task --targets expert,expert:ld4,expert:ctas8,expert:twopass \
  --workloads $task-bench-1e8x300-llama3-8b,$task-bench-1e7x5000-qwen1.5-moe \
  --max-time 0.5 --quiet --json "$out/variants_$task.jsonl" && pass "variants PASSED (1e8 and 1e7 rows)" || fail "variants (see variants.log)"
grep -E "bench" "$out/variants.log" | cut -c1-200 | tail -8

if [ $have_torch = 1 ]; then
  ptargets=torch_eager
  [[ " ${*:3} " == *" compile "* ]] && { ptargets=torch_eager,torch_compile; budget=$((budget + 90)); }
  bench_wl=$(grep -o "\"uuid\": \"$task-bench-[^\"]*\"" dataset/$task/workloads.jsonl | cut -d'"' -f4 | paste -sd,)
  if step torch 25 "$d2k" bench --task $task --targets $ptargets --workloads "$bench_wl" --max-time 1 --quiet \
      --json "$out/torch_$task.jsonl" --markdown "$out/torch_$task.md"; then
    pass "PyTorch targets PASSED ($ptargets)"
  else
    fail "PyTorch targets $ptargets (see torch.log)"
  fi
  grep -E "bench" "$out/torch.log" | cut -c1-220 | tail -9
fi

starter_verdict 10 --workloads $task-check-7x3

# memcheck: in-process (--isolation none) so the sanitizer sees the kernels; P = 1 and 7 (tail
# only), P odd over a million (the cooperative one-read kernel: staged vectors and the tail),
# 5000 tiny segments (two passes).
sanitize memcheck 20 $task-check-1x1,$task-check-7x3,$task-check-1000003x291-llama3-8b,$task-check-20011x5000-qwen1.5-moe

if [ $have_torch = 1 ]; then
  checks=$(grep -o "\"uuid\": \"$task-check-[^\"]*\"" dataset/$task/workloads.jsonl | cut -d'"' -f4 | paste -sd,)
  step dump 15 "$d2k" check --task $task --impl expert --quiet --rounds 1 --workloads "$checks" --dump "$out/dump"
  step golden 20 "$py" $helpers/golden_check.py "$out/dump" --dataset dataset \
    && pass "golden cross-check" || fail "golden cross-check (see golden.log)"
  tail -9 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the errors
else
  echo "SKIP golden cross-check and PyTorch targets: no torch for $py"
fi

# SASS of the expert: what design.json's "recognise" fields name (16-byte evict-first loads and
# stores, 16-byte shared-memory staging, no local memory; one ATOM: the grid barrier's arrival).
objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "LDG\.E[A-Z.]*128[A-Z.]*|STG\.E[A-Z.]*128[A-Z.]*|LDS\.128|STS\.128|RED[A-Z0-9.]*|ATOM[A-Z0-9.]*|LDL|STL|MUFU\.[A-Z]*" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi
echo "t-adamw: $fails failure(s)"
exit "$fails"
