#!/usr/bin/env bash
# stencil_3d_7pt on the H200 (issue #18): validation; d2k bench of naive, expert and expert:single
# (T single-step passes of the expert's kernel, the issue's "eight single-step passes") and, where
# the machine's Python has torch, torch_eager (pytorch.py), with the table and the issue's bars
# (t-stencil/bench_table.py: expert >= 85% of SOL at T = 1, >= 3x expert:single at T = 8, faster
# than naive and torch_eager everywhere); the starter's verdict (must be INCORRECT_*);
# compute-sanitizer memcheck of the expert on every public check workload (passes of 4, 2 and 1
# steps, sizes below 3, X = 1, Z chunks) and racecheck on two (the parity-buffered shared planes);
# the golden cross-check against PyTorch float64 on `d2k check --dump` inputs
# (t-stencil/golden_check.py); the expert's SASS counts. Each step gets what is left of a 140 s
# budget (run_checks.sh kills a script at 150 s).
# Extras after OUT (not run by run_checks.sh): `variants` benches the other variants (expert:k2,
# expert:zchunk128; its own 60 s allowance); `compile` adds torch_compile to a second bench (its
# own 150 s allowance).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-stencil.sh CARRY OUT [variants] [compile]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=stencil_3d_7pt
helpers=scripts/gpu/checks/t-stencil
extras=" ${*:3} "
budget=${STENCIL_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
# The machine's Python with torch (the PyTorch targets and the golden cross-check).
detect_torch venv

validate_step

targets=naive,expert,expert:single$torch
bench_step --pass "bench ($targets): every target PASSED" --fail "bench $targets (see bench.log)" --show 16 \
  bench 65 $targets "" --max-time 0.5 --quiet

starter_verdict 20

# memcheck over every public check workload; the same run dumps inputs and golden outputs for the
# cross-check (golden_step dumps them itself when it did not). racecheck on one workload with
# passes of 4 and 1 steps over several tiles, and one with a pass of 2 over two Z chunks.
checks=$(workload_uuids check)
nchecks=$(echo "$checks" | tr , '\n' | wc -l)
sanitize memcheck 25 "$checks" --dump "$out/dump"
sanitize racecheck 15 $task-check-13x37x71-T5,$task-check-67x20x45-T2
golden_step --dump-s 15 --show $((nchecks + 1)) 10 "$checks" $helpers/golden_check.py --dataset dataset

# The other variants (an extra: the bars and the correctness steps above fill the budget).
vjson=()
if [[ $extras == *" variants "* ]]; then
  budget=$((SECONDS + 60))  # an extra: its own allowance
  bench_step --pass "" --fail "variants bench (see variants.log)" --show 0 \
    variants 55 expert:k2,expert:zchunk128 "" --max-time 0.5 --quiet
  [ -f "$out/variants.jsonl" ] && vjson=("$out/variants.jsonl")
fi
if [[ $extras == *" compile "* ]] && [ $have_torch = 1 ]; then
  budget=$((SECONDS + 150))  # an extra: its own allowance for torch.compile's compilation
  bench_step --pass "" --fail "torch_compile bench (see torch_compile.log)" --show 0 \
    torch_compile 140 torch_compile "" --max-time 0.5 --quiet
  [ -f "$out/torch_compile.jsonl" ] && vjson+=("$out/torch_compile.jsonl")
fi
python3 $helpers/bench_table.py "$out/bench.jsonl" "${vjson[@]}" > "$out/bench_table.md" 2>&1 \
  && pass "bars: expert >= 85% of SOL at T = 1, >= 3x expert:single at T = 8, faster than naive and torch_eager; variants PASSED" \
  || fail "bars or statuses (see bench_table.md)"
cat "$out/bench_table.md"

# SASS of the expert: what design.json's "recognise" fields name.
sass_counts "LDG\.E[A-Z0-9.]*|STG\.E[A-Z0-9.]*|LDS[A-Z0-9.]*|STS[A-Z0-9.]*|BAR\.SYNC[A-Z.]*|LDL[A-Z0-9.]*|STL[A-Z0-9.]*"
echo "t-stencil: $fails failure(s)"
exit "$fails"
