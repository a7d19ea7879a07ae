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
checks=$(workload_uuids check)
small=$(workload_uuids bench "b256-")
big=$(workload_uuids bench "b4096-\|b65536-")
variant_rows=$(workload_uuids bench "b4096-zipf\|b65536-zipf")
detect_torch

validate_step
bench_step --files "bench_$task" --pass "bench: every target PASSED (check workloads and the B = 256 bench workloads)" \
  bench 60 "naive,expert,library$torch" "$checks,$small"
variants_step --show 8 25 "$variant_rows"
starter_verdict 8 --workloads "$checks"
# The dump holds 134 MB for the 33.5M-value check workload: golden_step removes it after.
golden_step --pass "vs torch.bincount" --show 13 8 "$checks" $helpers/golden_check.py
sanitize memcheck 20 "$checks"
insns="LDG\.E\.EF\.128|LDG\.E\.128[A-Z.]*|ATOMS\.[A-Z0-9.]*|MATCH\.ANY[A-Z0-9.]*|RED[A-Z0-9.]*|ATOMG[A-Z0-9.]*"
for so in expert expert_match_any; do sass_counts --so $so "$insns"; done

if [[ $extras == *" big "* ]]; then
  budget=$((SECONDS + 400))  # an extra: its own allowance
  bench_step --pass "bench B = 4096, 65536: every target PASSED" --fail "bench B = 4096, 65536 (see bench_big.log)" \
    bench_big 400 "naive,expert,library$torch" "$big" --quiet
fi
echo "t-hist: $fails failure(s)"
exit "$fails"
