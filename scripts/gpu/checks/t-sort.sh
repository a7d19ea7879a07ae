#!/usr/bin/env bash
# radix_sort_pairs on the H200 (issue #17): validation; d2k bench of every built-in target (naive,
# expert, library = CUB DeviceRadixSort::SortPairs) and PyTorch eager on the check workloads, the
# 1e6 row and the two 2.5e8 rows (uniform: a target row; Zipf 8-bit: the low-entropy row), with the
# table; the expert's variants (`// %VARIANT%` lines of expert.cu) beside the expert on the 2.5e8
# uniform row; the starter's verdict (must be INCORRECT_*); the golden cross-check against
# torch.sort(stable=True) on `d2k check --dump` inputs (t-sort/golden_check.py); the expert under
# compute-sanitizer memcheck on the check workloads and racecheck on the one-tile one; the expert's
# SASS counts (design.json's "recognise" fields). Fits the 150 s deadline of
# scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget (SORT_BUDGET_S).
# Extra after OUT (not run by run_checks.sh): `big` benches the 1e9 row (naive, expert, library,
# and torch_eager where torch is installed; 8 GB in and 8 GB out per set, 8 GB more of workspace),
# with its own allowance of 400 s.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-sort.sh CARRY OUT [big]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=radix_sort_pairs
helpers=scripts/gpu/checks/t-sort
extras=" ${*:3} "
budget=${SORT_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
small=$(uuids bench "n1e6-\|n2.5e8-")
big=$(uuids bench "n1e9-")
variant_rows=$(uuids bench "n2.5e8-uniform")
race_rows=$(uuids check "n4099-uniform")  # racecheck instruments every shared access: one tile only
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 60 "$d2k" bench --task $task --targets naive,expert,library$torch --workloads "$checks,$small" \
    --json "$out/bench_$task.jsonl" --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED (check workloads, the 1e6 and the 2.5e8 bench workloads)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -12
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 18 "$d2k" bench --task $task --targets "expert,${targets%,}" --workloads "$variant_rows" \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -6
else
  fail "no expert variants built under $carry/impl/$task"
fi

starter_verdict 8 --workloads "$checks"

if [ -n "$torch" ]; then
  step dump 8 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 8 python3 $helpers/golden_check.py "$out/dump" \
    && pass "golden cross-check vs torch.sort(stable=True)" || fail "golden cross-check (see golden.log)"
  tail -11 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the verdicts
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitize memcheck 15 "$checks"
sanitize racecheck 15 "$race_rows"

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "MATCH\.ANY[A-Z0-9.]*|POPC|VOTE\.[A-Z]+|LDG\.E\.EF\.128|LDG\.E\.128[A-Z.]*|LDG\.E\.EF|LDG\.E\.STRONG\.GPU|ATOMS\.[A-Z0-9.]*|ATOMG[A-Z0-9.]*|RED[A-Z0-9.]*" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi

if [[ $extras == *" big "* ]]; then
  budget=$((SECONDS + 400))  # an extra: its own allowance
  step bench_big 400 "$d2k" bench --task $task --targets naive,expert,library$torch --workloads "$big" \
    --json "$out/bench_big.jsonl" --markdown "$out/bench_big.md" && pass "bench 1e9 pairs: every target PASSED" ||
    fail "bench 1e9 pairs (see bench_big.log)"
  grep -v " check \|hidden:" "$out/bench_big.log" | cut -c1-200 | tail -6
fi
echo "t-sort: $fails failure(s)"
exit "$fails"
