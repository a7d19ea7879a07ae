#!/usr/bin/env bash
# w4a16_gemv on the H200 (issue #15): validation; d2k bench of the built-in targets (naive,
# expert, library) and, where the machine's Python has torch, torch_eager of
# dataset/w4a16_gemv/pytorch.py, with the table; the expert's variants (`// %VARIANT%` lines of
# expert.cu: warps16, rows16) checked and timed at B = 1; the starter's verdict (must be
# INCORRECT_*); compute-sanitizer memcheck of the expert on the check workloads; the golden
# cross-check against PyTorch float64 on `d2k check --dump` inputs (t-w4a16/golden_check.py);
# the expert's SASS counts. Each step gets what is left of a 140 s budget (the 150 s of
# scripts/gpu/run_checks.sh).
# What it must show: every line PASS; in bench.md, expert >= 75% of SOL at B = 1 on the three
# shapes and faster than library (dequantise + cuBLAS) and naive at every B.
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
[ -x /opt/torch/.venv/bin/python3 ] && export D2K_PYTHON=/opt/torch/.venv/bin/python3
export D2K_PYTHON_SHIM_DIR="$PWD/src/tracks/python"
py=${D2K_PYTHON:-python3}
have_torch=0
"$py" -c "import torch" 2> /dev/null && have_torch=1

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate

# Nine bench workloads: half a second of timing per target and workload and one fresh-input round
# of the check workloads (the memcheck and golden steps below check again) keep the step in budget.
targets=naive,expert,library
if step bench 70 "$d2k" bench --task $task --targets $targets --max-time 0.5 --rounds 1 --quiet --json "$out/bench_$task.jsonl" \
    --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED ($targets)"
else
  fail "bench $targets (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-220 | tail -30

b1=$task-bench-1x8192x8192,$task-bench-1x28672x8192,$task-bench-1x8192x28672
step variants 20 "$d2k" bench --task $task --targets expert,expert:warps16,expert:rows16 --workloads "$b1" \
  --max-time 1 --quiet --json "$out/variants_$task.jsonl" && pass "variants PASSED (B = 1)" || fail "variants (see variants.log)"
grep -E "bench" "$out/variants.log" | cut -c1-200 | tail -9

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
  grep -E "bench" "$out/torch.log" | cut -c1-220 | tail -18
fi

step starter 10 "$d2k" bench --task $task --targets solution --solution-dir dataset/$task/starter/cuda --quiet \
  --workloads $task-check-3x37x384
grep -q "INCORRECT_" "$out/starter.log" && pass "starter fails with INCORRECT_*" || fail "starter verdict (see starter.log)"

# memcheck: in-process (--isolation none) so the sanitizer sees the kernel; one n8 tile (B <= 8)
# and two (B = 16), N not a multiple of 32, one group, K split over all eight warps.
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  wl=$task-check-1x1x128,$task-check-3x37x384,$task-check-16x100x1152,$task-check-5x257x8192
  step memcheck 20 "$sanitizer" --tool memcheck --error-exitcode 99 "$d2k" check --task $task --impl expert \
    --isolation none --rounds 1 --workloads $wl --quiet
  mrc=$?
  tail -3 "$out/memcheck.log"
  [ $mrc -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$out/memcheck.log" \
    && pass "memcheck: expert, 0 errors on 4 check workloads" || fail "memcheck rc=$mrc (see memcheck.log)"
else
  echo "SKIP memcheck: no compute-sanitizer on this machine"
fi

if [ $have_torch = 1 ]; then
  checks=$(grep -o "\"uuid\": \"$task-check-[^\"]*\"" dataset/$task/workloads.jsonl | cut -d'"' -f4 | paste -sd,)
  step dump 15 "$d2k" check --task $task --impl expert --quiet --rounds 1 --workloads "$checks" --dump "$out/dump"
  step golden 15 "$py" $helpers/golden_check.py "$out/dump" --dataset dataset \
    && pass "golden cross-check" || fail "golden cross-check (see golden.log)"
  tail -9 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the errors
else
  echo "SKIP golden cross-check and PyTorch targets: no torch for $py"
fi

# SASS of the expert: what design.json's "recognise" fields name (HMMA, 16-byte loads, the
# magic-number conversion's LOP3/HFMA2, PRMT for x, no local memory).
objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "HMMA\.[0-9A-Z.]*|LDG\.E[A-Z.]*128[A-Z.]*|HFMA2\.BF16[A-Z0-9_.]*|PRMT|I2F[A-Z0-9.]*|LDL|STL|BAR\.SYNC" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi
echo "t-w4a16: $fails failure(s)"
exit "$fails"
