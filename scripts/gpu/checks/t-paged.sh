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
checks=$(workload_uuids check)
small_checks=$(echo "$checks" | tr ',' '\n' | grep -v -- "-16k" | paste -sd,)
benches=$(workload_uuids bench)
detect_torch

validate_step
bench_step --files "bench_$task" --pass "bench: every target PASSED (check and bench workloads)" \
  bench 60 "naive,expert$torch" "$checks,$benches"
variants_step --show 8 25 "$benches"
starter_verdict 8 --workloads "$small_checks"
# The dump holds 270 MB for the 16k check workload: golden_step removes it after.
golden_step --dump-s 10 --pass "vs PyTorch float64 (and pytorch.py)" 12 "$checks" $helpers/golden_check.py --pytorch
sanitize memcheck 20 "$small_checks"
sass_counts "LDG\.E\.EF\.128|LDG\.E\.128[A-Z.]*|ATOMG[A-Z0-9.]*|RED\.[A-Z0-9.]*|MUFU\.EX2|LDL[A-Z0-9.]*|STL[A-Z0-9.]*" \
  "LDG\.E\.EF\.128" "\bLDL|\bSTL"  # 16-byte streaming loads, no local-memory spills
echo "t-paged: $fails failure(s)"
exit "$fails"
