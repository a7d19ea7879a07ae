#!/usr/bin/env bash
# adam_8bit_blockwise on the H200 (issue #18): validation; d2k bench of naive, expert and PyTorch
# eager (bitsandbytes is not installed there: pytorch.py is the torch-ops flow) on the check
# workloads and both bench rows (1e8, 1e9), with the table; the expert's variants (`// %VARIANT%`
# lines of expert.cu: bsearch, scalar) beside the expert on the 1e8 row; the starter's verdict
# (must be INCORRECT_*); the golden cross-check against a PyTorch float64 step on `d2k check
# --dump` inputs (t-adam8/golden_check.py); the expert under compute-sanitizer memcheck on the
# check workloads; the expert's SASS counts (design.json's "recognise" fields). Fits the 150 s
# deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget
# (ADAM8_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-adam8.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=adam_8bit_blockwise
helpers=scripts/gpu/checks/t-adam8
budget=${ADAM8_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
benches=$(uuids bench "")
row_1e8=$(uuids bench "1e8")
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 70 "$d2k" bench --task $task --targets naive,expert$torch --workloads "$checks,$benches" \
    --json "$out/bench_$task.jsonl" --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED (check workloads, 1e8 and 1e9)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -10
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 20 "$d2k" bench --task $task --targets "expert,${targets%,}" --workloads "$row_1e8" \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -6
else
  fail "no expert variants built under $carry/impl/$task"
fi

starter_verdict 8 --workloads "$checks"

if [ -n "$torch" ]; then
  step dump 10 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 10 python3 $helpers/golden_check.py "$out/dump" \
    && pass "golden cross-check vs a PyTorch float64 step" || fail "golden cross-check (see golden.log)"
  tail -12 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the verdicts
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitize memcheck 20 "$checks"

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  for so in expert expert_bsearch expert_scalar; do
    [ -f "$carry/impl/$task/$so.so" ] || continue
    "$objdump" --dump-sass "$carry/impl/$task/$so.so" > "$out/$so.sass" 2>&1
    echo "$so SASS:" $(grep -oE "LDG\.E\.EF\.128|LDG\.E\.128|LDG\.E\.EF\.64|LDG\.E\.64|STG\.E\.EF\.128|STG\.E\.EF\.64|LDS[A-Z0-9.]*|SHFL\.BFLY[A-Z0-9.]*|LDL[A-Z0-9.]*|STL[A-Z0-9.]*" \
      "$out/$so.sass" | sort | uniq -c | awk '{print $2"x"$1}')
  done
fi
echo "t-adam8: $fails failure(s)"
exit "$fails"
