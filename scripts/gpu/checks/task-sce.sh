#!/usr/bin/env bash
# softmax_cross_entropy on the H200 (issue #15): validation; d2k bench of every built-in target
# (naive, expert; the task has no library target) with the table; the starter's verdict (must be
# INCORRECT_*); the expert's SASS counts. Between the bench and the starter, the sweep of the
# expert's variants (the `// %VARIANT%` lines of expert.cu, built
# as impl/<task>/expert_<name>.so): checked and timed like the expert, one table of time and % of
# SOL against the datasheet and the calibrated copy bandwidth (task-sce/variant_table.py). Fits
# the 150 s deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget.
# Extras after OUT (not run by run_checks.sh): `pytorch` runs the golden cross-check against
# PyTorch float64 on `d2k check --dump` inputs and the task's pytorch.py as the torch_eager
# target (about 60 s; `compile` adds the torch_compile target, about 60 s of compilation); `variants` builds and runs task-sce/variants.cu (memcpy ceiling, two-pass
# kernel, expert; about 45 s).
# Helpers: scripts/gpu/checks/task-sce/{golden_check.py,variant_table.py,variants.cu}.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/task-sce.sh CARRY OUT [pytorch [compile]] [variants]
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=softmax_cross_entropy
helpers=scripts/gpu/checks/task-sce
extras=" ${*:3} "
budget=${SCE_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"

validate_step
bench_step --files "bench_$task" --pass "bench: every built-in target PASSED" --show 14 \
  bench 75 naive,expert,library "" --quiet

# The expert's variants. `--targets expert:<name>` where d2k resolves it; otherwise each variant's
# library is benched as `expert` from its own implementation folder (D2K_IMPL_DIR), holding copies
# of the task's libraries with expert.so replaced.
variants=$(built_variants)
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 90 "$d2k" bench --task $task --targets "${targets%,}" --quiet --json "$out/variants.jsonl"
  vrc=$?
  vjson=("$out/variants.jsonl")
  if grep -q "unknown target" "$out/variants.log"; then  # refused before any work
    echo "== variants: d2k has no expert:<name> targets; one implementation folder per variant"
    vjson=()
    for v in $variants; do
      vdir="$out/impl_$v"; mkdir -p "$vdir/$task"
      cp "$carry/impl/$task/"*.so "$vdir/$task/"
      cp "$carry/impl/$task/expert_$v.so" "$vdir/$task/expert.so"
      chmod -R o+rX "$vdir"
      step "variant_$v" 25 env D2K_IMPL_DIR="$vdir" "$d2k" bench --task $task --targets expert --quiet \
        --json "$out/variant_$v.jsonl" || fail "variant $v (see variant_$v.log)"
      sed -i "s/\"target\":\"expert\"/\"target\":\"expert:$v\"/g" "$out/variant_$v.jsonl" 2> /dev/null
      vjson+=("$out/variant_$v.jsonl")
      rm -rf "$vdir"
    done
  elif [ "$vrc" -ne 0 ]; then
    fail "variants bench (see variants.log)"
  fi
  python3 $helpers/variant_table.py "$out/bench_$task.jsonl" "${vjson[@]}" > "$out/variant_table.md" 2>&1 \
    && pass "variants: every variant PASSED its checks" || fail "variants (see variant_table.md)"
  cat "$out/variant_table.md"
else
  fail "no expert variants built under $carry/impl/$task"
fi
starter_verdict 25
# PyTorch steps (recorded in run 1, docs/results/softmax_cross_entropy.md): an extra, for the
# variant sweep to fit the budget.
if [[ $extras != *" pytorch "* ]]; then
  echo "== golden cross-check and PyTorch timings: not run (the pytorch extra)"
elif detect_torch && [ "$have_torch" = 1 ]; then
  budget=$((SECONDS + 60))  # an extra: its own allowance
  golden_step --show 12 15 "" $helpers/golden_check.py --dataset dataset
  # The task's pytorch.py as targets (F.cross_entropy fwd + bwd), timed like every other target.
  torch_targets=torch_eager
  if [[ $extras == *" compile "* ]]; then
    budget=$((budget + 90))  # an extra: its own allowance for torch.compile's compilation
    torch_targets+=,torch_compile
  fi
  step torch 120 "$d2k" bench --task $task --targets naive,$torch_targets --quiet --json "$out/torch.jsonl"
  grep -E "torch_" "$out/torch.log" | grep -v " check " | cut -c1-200
else
  echo "SKIP golden cross-check and PyTorch timings: no torch on this machine"
fi
if [[ $extras == *" variants "* ]]; then
  budget=$((SECONDS + 120))  # an extra: its own allowance
  step variants_cu_build 60 "$D2K_NVCC" -O3 -arch=sm_90a -std=c++20 --expt-relaxed-constexpr -Iinclude \
    -I"$carry/dlpack-include" $helpers/variants.cu -o "$out/sce_variants"
  step variants_cu 60 "$out/sce_variants" 20
  grep -E "^\|" "$out/variants_cu.log"
fi
# SASS of the expert: what design.json's "recognise" fields name (16-byte accesses, MUFU.EX2,
# shuffles, the cluster barrier).
sass_counts "(LDG|STG|LDS|STS)\.E?\.?[0-9A-Z.]*128[A-Z.]*|MUFU\.(EX2|LG2)|UCGABAR_[A-Z]+|SHFL\.BFLY"
echo "task-sce: $fails failure(s)"
exit "$fails"
