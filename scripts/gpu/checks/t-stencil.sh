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
# The variants sweep (not in the default run: the steps above fill its budget): step `variants`
# benches the expert and every built variant (`// %VARIANT%` lines of expert.cu) on the three bench
# workloads, one correctness round and at most 0.3 s of timing per target and workload (70 s),
# memcheck runs the new variants on check workloads (X % 4 != 0 there: the scalar-load path; 20 s),
# racecheck the one-barrier block kernel (10 s), and memcheck strip_l2pf on the T = 1 bench workload
# (the 16-byte path and the bulk L2 prefetch; 20 s);
# bench_table.py then says what each variant would show as the default. Run it alone (<= 120 s):
#   D2K_CHECK_STEPS=variants,memcheck_strip_block,memcheck_strip_single,memcheck_strip_p8,racecheck_block_1bar,memcheck_strip_l2pf \
#     scripts/gpu/checks/t-stencil.sh CARRY OUT
# (or the extra `variants`, which adds the sweep to the full run with its own 120 s allowance).
# Extra `compile` adds torch_compile to a second bench (its own 150 s allowance).
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

# The variants sweep: selected by name (D2K_CHECK_STEPS) or by the extra `variants`.
vjson=()
if [ -n "${D2K_CHECK_STEPS:-}" ] || [[ $extras == *" variants "* ]]; then
  [[ $extras == *" variants "* ]] && budget=$((SECONDS + 120))  # an extra: its own allowance
  variants_step --show 0 70 "$(workload_uuids bench)" --bench-rounds 1 --max-time 0.3 --quiet
  [ -f "$out/variants.jsonl" ] && vjson=("$out/variants.jsonl")
  # a strip pass after a 3-plane block pass of 4 with the L2 prefetch (13x37x71-T5) and a block
  # pass of 2 (67x20x45-T2); eight strip passes over 18 Z chunks (70x30x130-T8); the 8-row strips;
  # racecheck of the one-barrier block kernel; the 16-byte path with the bulk L2 prefetch on the
  # T = 1 bench workload (512 MB, the longest)
  sanitize --impl expert:strip_block memcheck 8 $task-check-13x37x71-T5,$task-check-67x20x45-T2
  sanitize --impl expert:strip_single memcheck 6 $task-check-70x30x130-T8
  sanitize --impl expert:strip_p8 memcheck 6 $task-check-13x37x71-T5
  sanitize --impl expert:block_1bar racecheck 10 $task-check-13x37x71-T5,$task-check-67x20x45-T2
  sanitize --impl expert:strip_l2pf memcheck 20 $task-bench-512x512x512-T1 --bench-rounds 1
  # SASS of the variants where built (else a SKIP line): the strip kernel's 16-byte loads and
  # streaming stores, shuffles, bulk L2 prefetch and no barrier; the block kernel's L2 prefetch.
  variant_sass() {
    [ -f "$carry/impl/$task/expert_$1.so" ] || { echo "SKIP expert_$1 SASS: not built"; return 0; }
    sass_counts --so "expert_$1" "${@:2}"
  }
  variant_sass strip_l2pf "LDG\.E\.128[A-Z.]*|STG\.E\.EF\.128|UBLKPF[A-Z0-9.]*|SHFL\.[A-Z]+|LDL[A-Z0-9.]*|STL[A-Z0-9.]*" \
    "LDG\.E\.128 STG\.E\.EF\.128 UBLKPF\.L2 SHFL\.UP" "\bLDL|\bSTL"
  variant_sass block_l2pf "CCTL\.E\.PF2|BAR\.SYNC[A-Z.]*|LDL[A-Z0-9.]*|STL[A-Z0-9.]*" "CCTL\.E\.PF2" "\bLDL|\bSTL"
fi
if [[ $extras == *" compile "* ]] && [ $have_torch = 1 ]; then
  budget=$((SECONDS + 150))  # an extra: its own allowance for torch.compile's compilation
  bench_step --pass "" --fail "torch_compile bench (see torch_compile.log)" --show 0 \
    torch_compile 140 torch_compile "" --max-time 0.5 --quiet
  [ -f "$out/torch_compile.jsonl" ] && vjson+=("$out/torch_compile.jsonl")
fi
tables=()
selected bench && tables=("$out/bench.jsonl")
tables+=("${vjson[@]}")
if [ ${#tables[@]} -gt 0 ]; then
  python3 $helpers/bench_table.py "${tables[@]}" > "$out/bench_table.md" 2>&1 \
    && pass "bars: expert >= 85% of SOL at T = 1, >= 3x expert:single at T = 8, faster than naive and torch_eager; variants PASSED" \
    || fail "bars or statuses (see bench_table.md; a variants-only run fails the default's bars until a variant is made the default)"
  cat "$out/bench_table.md"
fi

# SASS of the expert: what design.json's "recognise" fields name.
sass_counts "LDG\.E[A-Z0-9.]*|STG\.E[A-Z0-9.]*|LDS[A-Z0-9.]*|STS[A-Z0-9.]*|BAR\.SYNC[A-Z.]*|LDL[A-Z0-9.]*|STL[A-Z0-9.]*"
echo "t-stencil: $fails failure(s)"
exit "$fails"
