#!/usr/bin/env bash
# paged_attention_decode on the H200 (issue #16): validation; d2k bench of naive (gather + cuBLAS
# GEMVs + softmax), expert (split-KV flash-decoding) and PyTorch eager (gather + SDPA) on the check
# workloads and the three Llama-3-8B bench workloads, with the table (%SOL target: expert >= 80%,
# >= 2.5x torch_eager); the expert's variants (`// %VARIANT%` lines of expert.cu: merge_separate,
# splits_fixed16, cp_async) beside the expert on the bench workloads; the starter's verdict (must be
# INCORRECT_*); the golden cross-check against PyTorch float64 on `d2k check --dump` inputs, with
# pytorch.py judged too (t-paged/golden_check.py); the expert under compute-sanitizer memcheck on
# the small check workloads (two of them take the fused multi-split merge); the expert's SASS
# counts (design.json evidence: LDG.E.EF.128, ATOMG; no LDL/STL spills).
# Fits the 150 s deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 140 s
# budget (PAGED_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-paged.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=paged_attention_decode
helpers=scripts/gpu/checks/t-paged
budget=${PAGED_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
small_checks=$(uuids check "" | tr ',' '\n' | grep -v -- "-16k" | paste -sd,)
benches=$(uuids bench "")
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 60 "$d2k" bench --task $task --targets naive,expert$torch --workloads "$checks,$benches" \
    --json "$out/bench_$task.jsonl" --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED (check and bench workloads)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -10
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 25 "$d2k" bench --task $task --targets "expert,${targets%,}" --workloads "$benches" \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -8
else
  fail "no expert variants built under $carry/impl/$task"
fi

starter_verdict 8 --workloads "$small_checks"

if [ -n "$torch" ]; then
  step dump 10 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 12 python3 $helpers/golden_check.py "$out/dump" --pytorch \
    && pass "golden cross-check vs PyTorch float64 (and pytorch.py)" || fail "golden cross-check (see golden.log)"
  tail -8 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload (270 MB for the 16k one); golden.log keeps the verdicts
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitize memcheck 20 "$small_checks"

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "LDG\.E\.EF\.128|LDG\.E\.128[A-Z.]*|ATOMG[A-Z0-9.]*|RED\.[A-Z0-9.]*|MUFU\.EX2|LDL[A-Z0-9.]*|STL[A-Z0-9.]*" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
  grep -q "LDG.E.EF.128" "$out/expert.sass" && ! grep -qE "\bLDL|\bSTL" "$out/expert.sass" &&
    pass "expert SASS: 16-byte streaming loads, no local-memory spills" || fail "expert SASS (see expert.sass)"
fi
echo "t-paged: $fails failure(s)"
exit "$fails"
