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
[ -x /opt/torch/.venv/bin/python3 ] && export D2K_PYTHON=/opt/torch/.venv/bin/python3
export D2K_PYTHON_SHIM_DIR="$PWD/src/tracks/python"
py=${D2K_PYTHON:-python3}
have_torch=0
"$py" -c "import torch" 2> /dev/null && have_torch=1

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate

targets=naive,expert,expert:steps2,expert:steps8,expert:flat
if step bench 75 "$d2k" bench --task $task --targets $targets --max-time 0.5 --quiet --json "$out/bench_$task.jsonl" \
    --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED ($targets)"
else
  fail "bench $targets (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-220 | tail -16

step starter 10 "$d2k" bench --task $task --targets solution --solution-dir dataset/$task/starter/cuda --quiet
grep -q "INCORRECT_" "$out/starter.log" && pass "starter fails with INCORRECT_*" || fail "starter verdict (see starter.log)"

# memcheck, in-process (--isolation none) so the sanitizer sees the kernels, over every public check
# workload: the 16-byte path (L % 8 == 0: one tile, several tiles, rows shorter than a warp span) and
# the 2-byte path (odd L, L < W). The same run dumps inputs and golden outputs for the cross-check.
checks=$(grep -o '"uuid": "causal_conv1d-check-[^"]*"' dataset/$task/workloads.jsonl | cut -d'"' -f4 | paste -sd,)
nchecks=$(echo "$checks" | tr , '\n' | wc -l)
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step memcheck 30 "$sanitizer" --tool memcheck --error-exitcode 99 "$d2k" check --task $task --impl expert \
    --isolation none --rounds 1 --workloads "$checks" --quiet --dump "$out/dump"
  mrc=$?
  tail -3 "$out/memcheck.log"
  [ $mrc -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$out/memcheck.log" \
    && pass "memcheck: expert, 0 errors on the $nchecks check workloads" || fail "memcheck rc=$mrc (see memcheck.log)"
  flat_checks=causal_conv1d-check-2x64x2056,causal_conv1d-check-1x4x65544,causal_conv1d-check-4x2048x64-mamba370m
  step memcheck_flat 20 "$sanitizer" --tool memcheck --error-exitcode 99 "$d2k" check --task $task --impl expert:flat \
    --isolation none --rounds 1 --workloads "$flat_checks" --quiet
  mrc=$?
  [ $mrc -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$out/memcheck_flat.log" \
    && pass "memcheck: expert:flat, 0 errors" || fail "memcheck expert:flat rc=$mrc (see memcheck_flat.log)"
else
  echo "SKIP memcheck: no compute-sanitizer on this machine"
  step dump 15 "$d2k" check --task $task --impl expert --quiet --rounds 1 --workloads "$checks" --dump "$out/dump"
fi
if [ $have_torch = 1 ]; then
  step golden 15 "$py" $aux/golden_check.py "$out/dump" --dataset dataset \
    && pass "golden cross-check" || fail "golden cross-check (see golden.log)"
  tail -$((nchecks + 1)) "$out/golden.log"
else
  echo "SKIP golden cross-check: no torch for $py"
fi
rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the errors

# PyTorch targets on the bench workloads (naive is checked alongside: bench outputs are judged
# against it). torch_compile traces and compiles each shape first: the `compile` extra.
if [ $have_torch = 1 ]; then
  ptargets=torch_eager
  [[ " ${*:3} " == *" compile "* ]] && { ptargets=torch_eager,torch_compile; budget=$((budget + 90)); }
  bench_wl=$(grep -o '"uuid": "causal_conv1d-bench-[^"]*"' dataset/$task/workloads.jsonl | cut -d'"' -f4 | paste -sd,)
  if step torch 25 "$d2k" bench --task $task --targets $ptargets --workloads "$bench_wl" --max-time 0.5 --quiet \
      --json "$out/torch_$task.jsonl" --markdown "$out/torch_$task.md"; then
    pass "PyTorch targets PASSED ($ptargets)"
  else
    fail "PyTorch targets $ptargets (see torch.log)"
  fi
  grep -E "bench" "$out/torch.log" | cut -c1-220 | tail -8
fi

# SASS of the expert: what design.json's "recognise" fields name.
objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "(LDG|STG)\.E[A-Z.]*128[A-Z.]*|MUFU\.(EX2|RCP)|SHFL\.IDX|F2FP[A-Z0-9.]*|BAR\.SYNC" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi
echo "t-conv: $fails failure(s)"
exit "$fails"
