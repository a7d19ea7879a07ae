#!/usr/bin/env bash
# topk_topp_mask on the H200 (issue #15): validation; d2k bench of naive, expert, the expert's
# matchany variant and torch_eager (where torch is installed) with the table; the starter's
# verdict (must be INCORRECT_*); the golden cross-check against PyTorch float64 (the task's
# pytorch.py on the CPU) on `d2k check --dump` inputs; the expert under compute-sanitizer memcheck
# on small check workloads (in-process: --isolation none); the expert's SASS counts (what
# design.json's "recognise" fields name: MATCH + ATOMS, 128-bit accesses).
# Fits 150 s: each step gets what is left of a 145 s budget (TOPK_BUDGET_S).
# Helpers: scripts/gpu/checks/t-topk/golden_check.py.
# Usage (repository root, build packed by scripts/gpu/pack.sh): scripts/gpu/checks/t-topk.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=topk_topp_mask
helpers=scripts/gpu/checks/t-topk
budget=${TOPK_BUDGET_S:-145}
source "$(dirname "$0")/lib/steps.sh"
have_torch=0
python3 -c "import torch" 2> /dev/null && have_torch=1

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
targets=naive,expert
[ -f "$carry/impl/$task/expert_matchany.so" ] && targets+=,expert:matchany
[ "$have_torch" = 1 ] && targets+=,torch_eager
if step bench 75 "$d2k" bench --task $task --targets $targets --quiet --json "$out/bench.jsonl" \
    --markdown "$out/bench.md"; then
  pass "bench: every target PASSED ($targets)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -16
step starter 10 "$d2k" bench --task $task --targets solution --solution-dir dataset/$task/starter/cuda --quiet
grep -q "INCORRECT_" "$out/starter.log" && pass "starter fails with INCORRECT_*" || fail "starter verdict (see starter.log)"

small=topk_topp_mask-check-5x37-vsmallerthank,topk_topp_mask-check-33x32007-odd,topk_topp_mask-check-4x40000-bigties,topk_topp_mask-check-16x4096-shifted,topk_topp_mask-check-3x262144-gemma
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step memcheck 30 "$sanitizer" --tool memcheck --error-exitcode 1 "$d2k" check --task $task --impl expert \
    --isolation none --workloads $small --rounds 1 --quiet
  rc=$?
  if [ $rc -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$out/memcheck.log"; then
    pass "memcheck: expert clean on $(echo $small | tr ',' '\n' | wc -l) check workloads"
  else
    fail "memcheck rc=$rc (see memcheck.log)"
  fi
  tail -3 "$out/memcheck.log"
else
  fail "no compute-sanitizer"
fi

if [ "$have_torch" = 1 ]; then
  step dump 15 "$d2k" check --task $task --impl expert --quiet --rounds 1 --dump "$out/dump"
  step golden 20 python3 $helpers/golden_check.py "$out/dump" --dataset dataset \
    && pass "golden cross-check" || fail "golden cross-check (see golden.log)"
  tail -20 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload: large; golden.log keeps the errors
else
  echo "SKIP golden cross-check: no torch on this machine"
fi
objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "MATCH\.ANY[A-Z0-9.]*|ATOMS\.[A-Z0-9.]*|(LDG|STG)\.E[A-Z.]*\.128[A-Z.]*|MUFU\.EX2|DFMA|SHFL\.[A-Z]+" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi
echo "t-topk: $fails failure(s)"
exit "$fails"
