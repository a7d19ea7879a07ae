#!/usr/bin/env bash
# histogram on the H200 (issue #18): validation; d2k bench of every built-in target (naive, expert,
# library = CUB DeviceHistogram::HistogramEven) and PyTorch eager on the check workloads and the two
# B = 256 bench workloads (the %SOL target row and its Zipf twin), with the table; the expert's
# variants (`// %VARIANT%` lines of expert.cu: match_any, copies1) beside the expert on the Zipf
# rows at B = 4096 and 65536, where skew matters; the starter's verdict (must be INCORRECT_*); the
# golden cross-check against torch.bincount on `d2k check --dump` inputs (t-hist/golden_check.py);
# the expert under compute-sanitizer memcheck on the check workloads; the expert's SASS counts
# (design.json's "recognise" fields). Fits the 150 s deadline of scripts/gpu/run_checks.sh: each
# step gets what is left of a 140 s budget (HIST_BUDGET_S).
# Extra after OUT (not run by run_checks.sh): `big` benches the four bench workloads at B = 4096
# and 65536 (naive, expert, library, and torch_eager where torch is installed; 4 GB of values per
# input set), with its own allowance of 400 s.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-hist.sh CARRY OUT [big]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=histogram
helpers=scripts/gpu/checks/t-hist
extras=" ${*:3} "
budget=${HIST_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
small=$(uuids bench "b256-")
big=$(uuids bench "b4096-\|b65536-")
variant_rows=$(uuids bench "b4096-zipf\|b65536-zipf")
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 60 "$d2k" bench --task $task --targets naive,expert,library$torch --workloads "$checks,$small" \
    --json "$out/bench_$task.jsonl" --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED (check workloads and the B = 256 bench workloads)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -10
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 25 "$d2k" bench --task $task --targets "expert,${targets%,}" --workloads "$variant_rows" \
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
    && pass "golden cross-check vs torch.bincount" || fail "golden cross-check (see golden.log)"
  tail -13 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload (134 MB for the 33.5M-value one); golden.log keeps the verdicts
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitize memcheck 20 "$checks"

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  for so in expert expert_match_any; do
    [ -f "$carry/impl/$task/$so.so" ] || continue
    "$objdump" --dump-sass "$carry/impl/$task/$so.so" > "$out/$so.sass" 2>&1
    echo "$so SASS:" $(grep -oE "LDG\.E\.EF\.128|LDG\.E\.128[A-Z.]*|ATOMS\.[A-Z0-9.]*|MATCH\.ANY[A-Z0-9.]*|RED[A-Z0-9.]*|ATOMG[A-Z0-9.]*" \
      "$out/$so.sass" | sort | uniq -c | awk '{print $2"x"$1}')
  done
fi

if [[ $extras == *" big "* ]]; then
  budget=$((SECONDS + 400))  # an extra: its own allowance
  step bench_big 400 "$d2k" bench --task $task --targets naive,expert,library$torch --workloads "$big" --quiet \
    --json "$out/bench_big.jsonl" --markdown "$out/bench_big.md" && pass "bench B = 4096, 65536: every target PASSED" ||
    fail "bench B = 4096, 65536 (see bench_big.log)"
  grep -v " check \|hidden:" "$out/bench_big.log" | cut -c1-200 | tail -10
fi
echo "t-hist: $fails failure(s)"
exit "$fails"
