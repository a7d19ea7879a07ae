#!/usr/bin/env bash
# groupby_aggregate on the H200 (issue #17): validation; d2k bench of naive, expert and PyTorch
# eager on the check workloads and three 2e8-row bench workloads (16 groups uniform and Zipf, 1e6
# uniform: the host golden of a 2e8-row set takes seconds), with the table; the expert's variant
# global_only (no per-CTA shared tables) on the 16-group and 1e6-group uniform rows;
# the starter's verdict (must be INCORRECT_*); the golden cross-check
# against PyTorch unique/bincount/scatter_reduce on `d2k check --dump` inputs
# (t-groupby/golden_check.py); the expert under compute-sanitizer memcheck on the check
# workloads; the expert's SASS counts (design.json's "recognise" fields).
# Fits the 150 s deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 140 s
# budget (GROUPBY_BUDGET_S). Memory: a 2e8-row set is 3.2 GB of input and 8 GB of output
# capacity; the naive table is 21 GB, the expert's 11 GB.
# Extra after OUT (not run by run_checks.sh): `full` benches all six 2e8-row workloads (1e6 Zipf,
# 1e8 uniform and Zipf too) with its own allowance of 500 s.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-groupby.sh CARRY OUT [full]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=groupby_aggregate
helpers=scripts/gpu/checks/t-groupby
extras=" ${*:3} "
budget=${GROUPBY_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
bench=$(uuids bench "g16-\|g1m-uniform")
all_bench=$(uuids bench "")
variant_rows=$(uuids bench "g16-uniform\|g1m-uniform")
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 75 "$d2k" bench --task $task --targets naive,expert$torch --workloads "$checks,$bench" \
    --json "$out/bench_$task.jsonl" --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED (check workloads and three 2e8-row bench workloads)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -16
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 25 "$d2k" bench --task $task --targets "${targets%,}" --workloads "$variant_rows" \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -8
else
  fail "no expert variants built under $carry/impl/$task"
fi

starter_verdict 8 --workloads "$checks"

if [ -n "$torch" ]; then
  step dump 8 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 8 python3 $helpers/golden_check.py "$out/dump" \
    && pass "golden cross-check vs PyTorch unique/bincount/scatter_reduce" || fail "golden cross-check (see golden.log)"
  tail -12 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the verdicts
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitize memcheck 20 "$checks"

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "MATCH\.ANY\.U64|ATOMS\.[A-Z0-9.]*|ATOMG\.[A-Z0-9.]*|RED\.[A-Z0-9.]*|LDG\.E\.64[A-Z.]*|POPC|VOTE\.[A-Z]+" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi

if [[ $extras == *" full "* ]]; then
  budget=$((SECONDS + 500))  # an extra: its own allowance
  step bench_full 500 "$d2k" bench --task $task --targets naive,expert$torch --workloads "$all_bench" --quiet \
    --json "$out/bench_full.jsonl" --markdown "$out/bench_full.md" && pass "bench, all six 2e8-row workloads: every target PASSED" ||
    fail "bench_full (see bench_full.log)"
  grep -v " check \|hidden:" "$out/bench_full.log" | cut -c1-200 | tail -10
fi
echo "t-groupby: $fails failure(s)"
exit "$fails"
