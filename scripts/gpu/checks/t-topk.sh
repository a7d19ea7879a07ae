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
detect_torch

validate_step
targets=naive,expert
[ -f "$carry/impl/$task/expert_matchany.so" ] && targets+=,expert:matchany
targets+=$torch
bench_step --pass "bench: every target PASSED ($targets)" --show 16 bench 75 $targets "" --quiet
starter_verdict 10

sanitize memcheck 30 topk_topp_mask-check-5x37-vsmallerthank,topk_topp_mask-check-33x32007-odd,topk_topp_mask-check-4x40000-bigties,topk_topp_mask-check-16x4096-shifted,topk_topp_mask-check-3x262144-gemma

# The dump of every check workload is large: golden_step removes it after.
golden_step --dump-s 15 --show 20 20 "" $helpers/golden_check.py --dataset dataset
sass_counts "MATCH\.ANY[A-Z0-9.]*|ATOMS\.[A-Z0-9.]*|(LDG|STG)\.E[A-Z.]*\.128[A-Z.]*|MUFU\.EX2|DFMA|SHFL\.[A-Z]+"
echo "t-topk: $fails failure(s)"
exit "$fails"
