#!/usr/bin/env bash
# stream_compaction on the H200 (issue #17): validation; d2k bench of every built-in target (naive,
# expert, library) and PyTorch eager on the check workloads and the three 1e8-row bench workloads,
# with the table; the expert's variants (`// %VARIANT%` lines of expert.cu) on the 1e8 rows at 1%
# and 50%; the
# starter's verdict (must be INCORRECT_*); the golden cross-check against PyTorch boolean indexing
# on `d2k check --dump` inputs (t-compact/golden_check.py); the expert under compute-sanitizer
# memcheck on the check workloads; the expert's SASS counts (design.json's "recognise" fields).
# Fits the 150 s deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 140 s
# budget (COMPACT_BUDGET_S).
# Extra after OUT (not run by run_checks.sh): `big` benches the two 1e9-row workloads (naive,
# expert, library; 12 GB of input and 12 GB of output capacity per set; PyTorch eager would need
# ~20 GB more beside d2k's sets), with its own allowance of 400 s.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-compact.sh CARRY OUT [big]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=stream_compaction
helpers=scripts/gpu/checks/t-compact
extras=" ${*:3} "
budget=${COMPACT_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
small=$(uuids bench n1e8)
big=$(uuids bench n1e9)
variant_rows=$(uuids bench "n1e8-[15]0*pct")  # 1%: late materialisation matters; 50%: the SOL target
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 70 "$d2k" bench --task $task --targets naive,expert,library$torch --workloads "$checks,$small" --quiet \
    --json "$out/bench_$task.jsonl" --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED (check workloads and the 1e8-row bench workloads)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -16
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 30 "$d2k" bench --task $task --targets "${targets%,}" --workloads "$variant_rows" --quiet \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -8
else
  fail "no expert variants built under $carry/impl/$task"
fi

step starter 8 "$d2k" bench --task $task --targets solution --solution-dir dataset/$task/starter/cuda \
  --workloads "$checks" --quiet
grep -q "INCORRECT_" "$out/starter.log" && pass "starter fails with INCORRECT_*" || fail "starter verdict (see starter.log)"

if [ -n "$torch" ]; then
  step dump 8 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 8 python3 $helpers/golden_check.py "$out/dump" --dataset dataset \
    && pass "golden cross-check vs PyTorch boolean indexing" || fail "golden cross-check (see golden.log)"
  tail -12 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the verdicts
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
  step memcheck 20 "$sanitizer" --tool memcheck --error-exitcode 99 "$d2k" check --task $task --impl expert \
    --isolation none --workloads "$checks" --quiet --rounds 1
  mrc=$?
  grep -E "ERROR SUMMARY|Invalid|PASSED|FAILED" "$out/memcheck.log" | sort | uniq -c | head -6
  [ "$mrc" -eq 0 ] && pass "memcheck: expert clean on the check workloads" || fail "memcheck rc=$mrc (see memcheck.log)"
else
  echo "SKIP memcheck: no compute-sanitizer"
fi

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "LDG\.E\.128[A-Z.]*|LDG\.E\.64\.STRONG\.GPU|STG\.E[A-Z0-9.]*|POPC|VOTE\.[A-Z]+|SHFL\.UP|LDS[A-Z0-9.]*|STS[A-Z0-9.]*" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi

if [[ $extras == *" big "* ]]; then
  budget=$((SECONDS + 400))  # an extra: its own allowance
  step bench_big 400 "$d2k" bench --task $task --targets expert,library,naive --workloads "$big" --quiet \
    --json "$out/bench_big.jsonl" --markdown "$out/bench_big.md" && pass "bench 1e9 rows: every target PASSED" ||
    fail "bench 1e9 rows (see bench_big.log)"
  grep -v " check \|hidden:" "$out/bench_big.log" | cut -c1-200 | tail -10
fi
echo "t-compact: $fails failure(s)"
exit "$fails"
