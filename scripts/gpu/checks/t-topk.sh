#!/usr/bin/env bash
# topk_topp_mask on the H200 (issue #15): validation; d2k bench of naive, expert, the expert's
# matchany variant and torch_eager (where torch is installed) with the table; the starter's
# verdict (must be INCORRECT_*); step `variants`: the expert and every built variant timed on the
# bench rows, the variants with their own memory accesses under memcheck; the golden cross-check
# against PyTorch float64 (the task's pytorch.py on the CPU) on `d2k check --dump` inputs; the
# expert under compute-sanitizer memcheck on small check workloads (in-process: --isolation
# none); the expert's SASS counts (what design.json's "recognise" fields name: MATCH + ATOMS,
# 128-bit accesses).
# step `next`: the default (leanrow3's configuration since 2026-12-03) beside the previous default
# (occ2_prev) and the Qwen-row subsets (lean, rowhist, leanrow) in one d2k bench, step
# `memcheck_leanrow`: that variant under memcheck (the default's memcheck is the `memcheck` step);
# step `profile` (only when named): per-kernel times of the default and occ2_prev under nsys.
# Fits 270 s: each step gets what is left of a 265 s budget (TOPK_BUDGET_S); the variants step
# alone (D2K_CHECK_STEPS=variants, a build with -DD2K_EXPERT_VARIANTS=ON) fits 120 s, so do
# D2K_CHECK_STEPS=next,memcheck_leanrow,memcheck with TOPK_BUDGET_S=120.
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
budget=${TOPK_BUDGET_S:-265}
source "$(dirname "$0")/lib/steps.sh"
detect_torch

validate_step
targets=naive,expert
[ -f "$carry/impl/$task/expert_matchany.so" ] && targets+=,expert:matchany
targets+=$torch
bench_step --pass "bench: every target PASSED ($targets)" --show 16 bench 75 $targets "" --quiet
starter_verdict 10

# The expert and its variants (expert.cu's %VARIANT% lines; a build with -DD2K_EXPERT_VARIANTS=ON)
# timed on the three bench rows, each first checked there and on the check workloads whose rows
# take the other paths (kept tie groups read again, refined digits, unaligned rows): at most 85 s.
# Then the variants whose memory accesses differ from the expert's (fused output, the persistent
# reread kernel and its waits) under memcheck on two tie workloads (4x40000-bigties: 3 slices a
# row for reread, so CTAs wait for their row's bin; refined digits; a kept tie group too large to
# list): at most 10 s each. Alone, with D2K_CHECK_STEPS=variants, the step fits 120 s.
variant_rows=$(workload_uuids bench),$(workload_uuids check "16x4096-ties\"\|4x40000-bigties\|33x32007-odd")
variants_step --show 12 85 "$variant_rows" --max-time 0.3 --bench-rounds 1 --quiet
if selected variants; then
  for v in fused reread reread256; do
    [[ " $(echo $variants) " == *" $v "* ]] || continue
    D2K_CHECK_STEPS="" sanitize --impl "expert:$v" memcheck 10 topk_topp_mask-check-16x4096-ties,topk_topp_mask-check-4x40000-bigties
  done
fi

# The Qwen-row variants of 2026-12-02 (docs/results/topk_topp_mask.md "Variants for the next run
# (2026-12-02)"; leanrow3 became the default on 2026-12-03, the previous default is occ2_prev and
# lean, rowhist, leanrow are the default's subsets at 2 CTAs per SM), step `next`: the default and
# those of them that are built, in ONE d2k bench (ratios hold within one call) on the three bench rows, each
# first checked there and on the check workloads whose rows take the other paths (kept tie groups,
# refined digits, unaligned rows): at most 70 s. Step `memcheck_leanrow`: the default's code at
# 2 CTAs per SM, which holds all the new code (the batched statistics loop with its unaligned head and
# tail, the float compare, the row histogram in L2, the block bin pick and statistics merge) under
# memcheck on four check workloads: V < k (head and tail only), 16 rows of 4096 ties (one CTA a
# row), 4 x 40000 big ties (9 CTAs a row, refined digits, a kept tie group read again) and the
# odd V (rows not 16-byte aligned, 7 CTAs a row): at most 20 s each. Alone,
# D2K_CHECK_STEPS=next,memcheck_leanrow fits 90 s (TOPK_BUDGET_S=120).
next_targets=expert
for v in occ2_prev lean rowhist leanrow; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && next_targets+=,expert:$v
done
bench_step --show 16 --pass "next: every target PASSED ($next_targets)" next 70 "$next_targets" "$variant_rows" \
  --max-time 0.3 --bench-rounds 1 --quiet
for v in leanrow; do
  [ -f "$carry/impl/$task/expert_$v.so" ] || continue
  sanitize --impl "expert:$v" memcheck 20 topk_topp_mask-check-5x37-vsmallerthank,topk_topp_mask-check-16x4096-ties,topk_topp_mask-check-4x40000-bigties,topk_topp_mask-check-33x32007-odd
done

# Step `profile` (optional; not part of a default run's budget): the GPU time of each kernel of the
# default and of occ2_prev (the default before 2026-12-03) on the Qwen bench row under Nsight Systems, where nsys is installed, so
# that the next variants aim at the kernel that holds the time (d2k times the whole call only).
# One nsys run per target (the kernels of the two libraries share their names): at most 30 s each;
# OUT/profile_NAME.csv has the per-kernel sums (cuda_gpu_kern_sum) and the memset.
if selected profile && [ -z "${D2K_CHECK_STEPS:-}" ]; then
  echo "== profile only when named in D2K_CHECK_STEPS"
elif selected profile; then
  if command -v nsys > /dev/null; then
    for t in expert expert:occ2_prev; do
      name=profile_${t#expert:}
      [ "$t" = expert ] && name=profile_expert
      D2K_CHECK_STEPS=$name step "$name" 30 nsys profile --trace=cuda --force-overwrite=true -o "$out/$name" \
        "$d2k" bench --task "$task" --targets "$t" --workloads topk_topp_mask-bench-256x151936-qwen2.5 \
        --isolation none --max-time 0.1 --bench-rounds 1 --quiet &&
        nsys stats --report cuda_gpu_kern_sum,cuda_gpu_mem_time_sum --format csv --output "$out/$name" \
          "$out/$name.nsys-rep" > /dev/null 2>&1 && pass "profile: $t" || fail "profile: $t (see $name.log)"
      rm -f "$out/$name.nsys-rep" "$out/$name.sqlite"
    done
  else
    echo "SKIP profile: no nsys"
  fi
fi

sanitize memcheck 30 topk_topp_mask-check-5x37-vsmallerthank,topk_topp_mask-check-33x32007-odd,topk_topp_mask-check-4x40000-bigties,topk_topp_mask-check-16x4096-shifted,topk_topp_mask-check-3x262144-gemma

# The dump of every check workload is large: golden_step removes it after.
golden_step --dump-s 15 --show 20 20 "" $helpers/golden_check.py --dataset dataset
sass_counts "MATCH\.ANY[A-Z0-9.]*|ATOMS\.[A-Z0-9.]*|(LDG|STG)\.E[A-Z.]*\.128[A-Z.]*|MUFU\.EX2|DFMA|SHFL\.[A-Z]+"
echo "t-topk: $fails failure(s)"
exit "$fails"
