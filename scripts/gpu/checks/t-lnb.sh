#!/usr/bin/env bash
# layernorm_backward on the H200 (issue #15): validation; d2k bench of naive, expert and
# torch_eager (pytorch.py, where torch is installed) with the table and the issue's bars; the
# expert's variants (`// %VARIANT%` lines of expert.cu); the starter's verdict (must be INCORRECT_*);
# the golden cross-check against PyTorch float64 on `d2k check --dump` inputs; compute-sanitizer
# memcheck of the expert on check workloads of both paths; the expert's SASS counts. Each step gets
# what is left of a 140 s budget (run_checks.sh kills a script at 150 s), the variants last.
# Extras after OUT (not run by run_checks.sh): `aten` times aten::native_layer_norm_backward in bf16
# and pytorch.py's fp32 program outside d2k (about 30 s); `compile` adds torch_compile to a second
# d2k bench (about 60 s of compilation).
# Helpers: scripts/gpu/checks/t-lnb/{bench_table.py,golden_check.py,aten_bars.py}.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-lnb.sh CARRY OUT [aten] [compile]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=layernorm_backward
helpers=scripts/gpu/checks/t-lnb
extras=" ${*:3} "
budget=${LNB_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
have_torch=0
python3 -c "import torch" 2> /dev/null && have_torch=1

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
targets=naive,expert
[ $have_torch = 1 ] && targets=$targets,torch_eager
if step bench 70 "$d2k" bench --task $task --targets $targets --quiet --json "$out/bench.jsonl" \
    --markdown "$out/bench.md"; then
  pass "bench ($targets): every target PASSED"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-220 | tail -16

step starter 20 "$d2k" bench --task $task --targets solution --solution-dir dataset/$task/starter/cuda --quiet
grep -q "INCORRECT_" "$out/starter.log" && pass "starter fails with INCORRECT_*" || fail "starter verdict (see starter.log)"

if [ $have_torch = 1 ]; then
  step dump 15 "$d2k" check --task $task --impl expert --quiet --rounds 1 --dump "$out/dump"
  step golden 15 python3 $helpers/golden_check.py "$out/dump" --dataset dataset \
    && pass "golden cross-check" || fail "golden cross-check (see golden.log)"
  tail -11 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the errors
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

# compute-sanitizer memcheck of the expert in d2k's own process (--isolation none), on one check
# workload of each path: vector with several teams per CTA, vector with one team, generic (odd H).
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
wls=$task-check-300x768,$task-check-64x4104,$task-check-33x1001
if [ -x "$sanitizer" ]; then
  step memcheck 30 "$sanitizer" --tool memcheck --error-exitcode 99 "$d2k" check --task $task --impl expert \
    --isolation none --workloads $wls --rounds 1 --quiet
  rc=$?
  if [ $rc = 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$out/memcheck.log"; then
    pass "memcheck: 0 errors ($wls)"
  else
    fail "memcheck rc=$rc (see memcheck.log)"
  fi
  grep -E "ERROR SUMMARY|PASSED|INCORRECT|Invalid" "$out/memcheck.log" | head -8
else
  fail "no compute-sanitizer"
fi

# The expert's variants last: the bars and the correctness steps above come first in the budget.
variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
vjson=()
if [ -n "$variants" ]; then
  vt=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 40 "$d2k" bench --task $task --targets "${vt%,}" --quiet --json "$out/variants.jsonl" \
    || fail "variants bench (see variants.log)"
  [ -f "$out/variants.jsonl" ] && vjson=("$out/variants.jsonl")
else
  fail "no expert variants built under $carry/impl/$task"
fi
python3 $helpers/bench_table.py "$out/bench.jsonl" "${vjson[@]}" > "$out/bench_table.md" 2>&1 \
  && pass "bars: expert >= 80% of SOL and >= 2x naive and torch_eager on every bench workload; variants PASSED" \
  || fail "bars or statuses (see bench_table.md)"
cat "$out/bench_table.md"

if [[ $extras == *" aten "* ]] && [ $have_torch = 1 ]; then
  budget=$((SECONDS + 60))  # an extra: its own allowance
  step aten 50 python3 $helpers/aten_bars.py --samples 20
  grep -E "^\||torch " "$out/aten.log"
fi
if [[ $extras == *" compile "* ]] && [ $have_torch = 1 ]; then
  budget=$((SECONDS + 150))
  step torch_compile 140 "$d2k" bench --task $task --targets torch_compile --quiet --json "$out/torch_compile.jsonl" \
    || fail "torch_compile bench (see torch_compile.log)"
  python3 $helpers/bench_table.py "$out/bench.jsonl" "$out/torch_compile.jsonl" | grep -E "^\||expert "
fi

# SASS of the expert: what design.json's "recognise" fields name.
objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "(LDG|STG|LDS|STS)\.E?\.?[0-9A-Z.]*128[A-Z.]*|SHFL\.BFLY|F2FP\.BF16[A-Z0-9.]*|ATOM[A-Z.]*|RED\.[A-Z.]*|BAR\.SYNC[A-Z.]*" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi
echo "t-lnb: $fails failure(s)"
exit "$fails"
