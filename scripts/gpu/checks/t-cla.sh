#!/usr/bin/env bash
# chunked_linear_attention on the H200 (issue #16): validation; d2k bench of naive (the token
# recurrence, a CTA per head), expert (chunkwise mma.sync, value dimension split) and PyTorch eager
# (Mamba-2's minimal SSD program, pytorch.py) on the check workloads and the three bench workloads,
# with the table (%SOL against the memory roof: the cost model is memory-bound at every bench
# shape); the expert's variants (`// %VARIANT%` lines of expert.cu: dv64, dv16) beside the expert on
# the check workloads and the first bench workload; the starter's verdict (must be INCORRECT_*);
# the golden cross-check against PyTorch float64 on `d2k check --dump` inputs
# (t-cla/golden_check.py); the expert under compute-sanitizer memcheck on three small check
# workloads; the expert's SASS counts (design.json's "recognise" fields: HMMA, MUFU.EX2, SHFL.UP,
# no LDL/STL). Each step gets what is left of a 140 s budget (CLA_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-cla.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=chunked_linear_attention
helpers=scripts/gpu/checks/t-cla
budget=${CLA_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
bench=$(uuids bench "")
first=$(uuids bench "2x16x8192")
small_checks=$(uuids check "1x1x1x64\|2x3x77\|strong-decay")
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 50 "$d2k" bench --task $task --targets naive,expert$torch --workloads "$checks,$bench" \
    --json "$out/bench.jsonl" --markdown "$out/bench.md"; then
  pass "bench: every target PASSED (check workloads and the three bench workloads)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -10
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 25 "$d2k" bench --task $task --targets "expert,${targets%,}" --workloads "$checks,$first" \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -6
else
  fail "no expert variants built under $carry/impl/$task"
fi

starter_verdict 8 --workloads "$small_checks"

if [ -n "$torch" ]; then
  step dump 8 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 20 python3 $helpers/golden_check.py "$out/dump" \
    && pass "golden cross-check vs PyTorch float64" || fail "golden cross-check (see golden.log)"
  tail -9 "$out/golden.log"
  rm -rf "$out/dump"
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitize memcheck 12 "$small_checks"

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
[ -x "$objdump" ] || objdump=third_party/cuda-tools/bin/cuobjdump
if [ -x "$objdump" ]; then
  for so in expert $(for v in $variants; do echo "expert_$v"; done); do
    [ -f "$carry/impl/$task/$so.so" ] || continue
    "$objdump" --dump-sass "$carry/impl/$task/$so.so" > "$out/$so.sass" 2>&1
    echo "$so SASS:" $(grep -oE "HMMA\.[A-Z0-9.]*|MUFU\.EX2|SHFL\.UP|LDG\.E\.128[A-Z.]*|LDL|STL" \
      "$out/$so.sass" | sort | uniq -c | awk '{print $2"x"$1}')
  done
fi
echo "t-cla: $fails failure(s)"
exit "$fails"
