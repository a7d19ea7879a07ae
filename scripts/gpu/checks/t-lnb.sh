#!/usr/bin/env bash
# layernorm_backward on the H200 (issue #15): validation; d2k bench of naive, expert and
# torch_eager (pytorch.py, where torch is installed) with the table and the issue's bars; the
# expert's variants (`// %VARIANT%` lines of expert.cu) timed beside the default on the bench rows,
# each under compute-sanitizer on check workloads; the starter's verdict (must be INCORRECT_*);
# the golden cross-check against PyTorch float64 on `d2k check --dump` inputs; compute-sanitizer
# memcheck of the expert on check workloads of both paths; the expert's SASS counts. Each step gets
# what is left of a 140 s budget (run_checks.sh kills a script at 150 s), the variants last.
# Extras after OUT (not run by run_checks.sh): `aten` times aten::native_layer_norm_backward in bf16
# and pytorch.py's fp32 program outside d2k (about 30 s); `compile` adds torch_compile to a second
# d2k bench (about 60 s of compilation).
# Helpers: scripts/gpu/checks/t-lnb/{bench_table.py,golden_check.py,aten_bars.py}.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-lnb.sh CARRY OUT [aten] [compile]
# The variants' sweep (the default and every built variant x 4 bench rows; the eighth round's
# whole_rounds, cluster_pairs and pairs_whole, retired after the eleventh session's run, still
# build from their flags and are checked by name when the carry holds them: memcheck of
# cluster_pairs on the one-team check shape and 8192x8192 in at most 20 s; pairs_whole's dx against
# the default's and its dx, dgamma and dbeta over two runs, each on 8192x8192 and 64x4104 with the
# same seed, in at most 2 x 2 x 10 s):
#   LNB_BUDGET_S=140 LNB_VARIANTS_S=75 \
#     D2K_CHECK_STEPS=variants,memcheck_cluster_pairs,same_pairs_whole,repro_pairs_whole \
#     scripts/gpu/checks/t-lnb.sh CARRY OUT
# (By name also: memcheck_pairs_whole, same_/repro_ of whole_rounds and cluster_pairs,
# racecheck_cluster_pairs; the sixth round's memcheck_flags, same_flags, same_shared_partials;
# dynamic's memcheck_dynamic, racecheck_dynamic with LNB_SWEEP naming it; and ncu: Nsight Compute's
# counters of stage 1 and 2 on 16384x4096.)
# LNB_SWEEP (space-separated variant names) limits the sweep to those variants where the carry holds
# more (default "all": every built one).
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
detect_torch
# Only the variants of this sweep, even where the carry holds older ones: the budget is per target.
sweep=${LNB_SWEEP:-all}
if [ "$sweep" != all ]; then
  eval "$(declare -f built_variants | sed '1s/built_variants/built_variants_all/')"
  built_variants() { built_variants_all | grep -xF -f <(tr ' ' '\n' <<< "$sweep"); }
fi

validate_step
targets=naive,expert$torch
bench_step --pass "bench ($targets): every target PASSED" --show 16 bench 70 $targets "" --quiet
starter_verdict 20
golden_step --show 11 15 "" $helpers/golden_check.py --dataset dataset

# memcheck on one check workload of each path: vector with several teams per CTA, vector with one
# team, generic (odd H).
sanitize memcheck 30 $task-check-300x768,$task-check-64x4104,$task-check-33x1001

# The expert's variants last: the bars and the correctness steps above come first in the budget.
# One d2k run times the default expert and every variant on the bench rows (one check round each,
# 0.3 s of timing per target and row: 4 targets x 4 rows, about 58 s by the seventh session's
# 14.6 s a target; d2k writes the records when it ends, so a cut step keeps none), so that their
# ratios come from the same session; each variant is then checked for correctness under
# compute-sanitizer on small vector-path check workloads.
variants_step --fail "variants bench (see variants.log)" --show 0 "${LNB_VARIANTS_S:-70}" "$(workload_uuids bench)" \
  --max-time 0.3 --bench-rounds 1 --quiet
# The row queue (dynamic): fewer rows than teams (7 rows, 8 one-warp teams per CTA: most teams take
# a row past the end at once), one 256-thread team per CTA with a partial last vector (64x4104),
# 2053 rows over 8 one-warp teams per CTA (the __syncwarp hand-over); racecheck for the hand-over
# of the next row through shared memory and the ring slots.
dyn_checks=$task-check-7x1000,$task-check-64x4104,$task-check-2053x64
for v in $(built_variants | grep '^dynamic'); do
  sanitize --impl "expert:$v" memcheck 10 "$dyn_checks"
  sanitize --impl "expert:$v" racecheck 12 "$task-check-7x1000,$task-check-64x4104"
done
# The sixth round's variants change the end of the call and nothing of its arithmetic or order:
# each must give the default's dx, dgamma and dbeta bit for bit. (team_slices, the default since
# 2026-12-03, was memchecked on 7x1000, 300x768, 2053x64 and 16x2048 and racechecked on 300x768
# and 16x2048 as a variant; the default's memcheck and racecheck steps cover it now.)
# flags (stage 2 loads each partial row once its CTA's flag shows the call's epoch, instead of
# after griddepcontrol.wait): one CTA and one partial row (1x8), fewer rows than teams (7x1000),
# one 256-thread team with a 513-vector row (64x4104), 257 partial rows, 33 per stage-2 slice
# (2053x64: the most rows the flagged stage 2 holds per thread at this SM count).
for v in $(built_variants | grep -x flags); do
  sanitize --impl "expert:$v" memcheck 10 "$task-check-1x8,$task-check-7x1000,$task-check-64x4104,$task-check-2053x64"
done
# equal_check STEP REF IMPL WORKLOADS TENSORS: `d2k check --dump` of REF and of IMPL (expert or
# expert:VARIANT) with the same seed; every workload's files of TENSORS (of dx, dgamma, dbeta) must
# be equal bit for bit. same_VARIANT: the default against the variant; repro_VARIANT: the variant
# against itself (an order that does not depend on timing).
equal_check() {
  local name=$1 ref=$2 impl=$3 wl=$4 tensors=$5 ok=1 n_same=0 n_want d f g t
  selected "$name" || { echo "== $name not selected (D2K_CHECK_STEPS)"; return 125; }
  local a="$out/${name}_a" b="$out/${name}_b"
  # a dump's files are named after the target: expert.dx.npy, or expert?NAME.dx.npy for a variant
  lnb_dump_glob() { [ "$1" = expert ] && echo "expert.$2.npy" || echo "expert?*.$2.npy"; }
  rm -rf "$a" "$b"
  step "$name" 10 "$d2k" check --task "$task" --impl "$ref" --isolation none --seed 7 --rounds 1 \
    --bench-rounds 1 --workloads "$wl" --quiet --dump "$a" || ok=0
  cp "$out/$name.log" "$out/${name}_a.log" 2> /dev/null
  step "$name" 10 "$d2k" check --task "$task" --impl "$impl" --isolation none --seed 7 --rounds 1 \
    --bench-rounds 1 --workloads "$wl" --quiet --dump "$b" || ok=0
  n_want=$(($(wc -w <<< "$tensors") * $(echo "$wl" | tr ',' '\n' | wc -l)))
  for t in $tensors; do
    for f in $(cd "$a" 2> /dev/null && find . -name "$(lnb_dump_glob "$ref" "$t")"); do
      d=$(dirname "$f")
      g=$(cd "$b" 2> /dev/null && ls "$d"/$(lnb_dump_glob "$impl" "$t") 2> /dev/null | head -1)
      if [ -n "$g" ] && cmp -s "$a/$f" "$b/$g"; then n_same=$((n_same + 1)); else ok=0; echo "differs: $f"; fi
    done
  done
  [ "$ok" = 1 ] && [ "$n_same" -eq "$n_want" ] \
    && pass "$name: $tensors of $impl bit-identical to $ref's ($n_same files)" \
    || fail "$name: $impl against $ref (n_same=$n_same of $n_want, see ${name}*.log)"
  rm -rf "$a" "$b"  # inputs of a bench row: nothing to bring back
}
same_check() { equal_check "same_$1" expert "expert:$1" "$2" "dx dgamma dbeta"; }
# On a bench row the stage-1 CTAs finish at different times while stage 2 runs (flags).
for v in $(built_variants | grep -x -E 'shared_partials|flags'); do
  same_check "$v" "$task-bench-16384x4096-opt6.7b,$task-check-2053x64"
done
# The eighth round (aimed at 8192x8192): whole rounds change the grid (256 CTAs there instead of
# 264), pairs the partial rows (one per cluster of two CTAs, summed over distributed shared
# memory): dgamma and dbeta take another fixed order, dx is the default's bit for bit. pair_partials
# exchanges 32 KB per CTA with st.async under an mbarrier at 8192 columns; 64x4104 is the one-team
# check shape (64 CTAs, 32 pairs, a 513-vector row: the last vector in one thread of 256).
lnb_pairs_wl="$task-bench-8192x8192-falcon40b,$task-check-64x4104"
for v in $(built_variants | grep -x -E 'cluster_pairs|pairs_whole'); do
  sanitize --impl "expert:$v" memcheck 20 "$task-check-64x4104,$task-bench-8192x8192-falcon40b"
  sanitize --impl "expert:$v" racecheck 20 "$task-check-64x4104"
done
for v in $(built_variants | grep -x -E 'whole_rounds|cluster_pairs|pairs_whole'); do
  equal_check "same_$v" expert "expert:$v" "$lnb_pairs_wl" "dx"
  equal_check "repro_$v" "expert:$v" "expert:$v" "$lnb_pairs_wl" "dx dgamma dbeta"
done

# Nsight Compute's counters of stage 1 and 2 (duration, DRAM bytes read and written, L2 write
# sectors) on 16384x4096 (step ncu, by name only): the kernels' own time beside d2k's per call
# (102.3 + 7.5 us on the H200, 2026-12-03, against a 112.2 us cold median).
lnb_ncu_row="$task-bench-16384x4096-opt6.7b"
ncu_kernels 15 "ln_bwd" "$lnb_ncu_row"

if selected bench; then
  python3 $helpers/bench_table.py "$out/bench.jsonl" > "$out/bench_table.md" 2>&1 \
    && pass "bars: expert >= 80% of SOL and >= 2x naive and torch_eager on every bench workload" \
    || fail "bars or statuses (see bench_table.md)"
  cat "$out/bench_table.md"
fi
if selected variants && [ -f "$out/variants.jsonl" ]; then
  # which form to keep as the default: FASTEST names it; a variant that did not pass is listed
  # (and already a FAIL of the variants step)
  python3 $helpers/bench_table.py --variants "$out/variants.jsonl" > "$out/variants_table.md" 2>&1
  cat "$out/variants_table.md"
fi

if [[ $extras == *" aten "* ]] && [ $have_torch = 1 ]; then
  budget=$((SECONDS + 60))  # an extra: its own allowance
  step aten 50 python3 $helpers/aten_bars.py --samples 20
  grep -E "^\||torch " "$out/aten.log"
fi
if [[ $extras == *" compile "* ]] && [ $have_torch = 1 ]; then
  budget=$((SECONDS + 150))
  bench_step --pass "" --fail "torch_compile bench (see torch_compile.log)" --show 0 \
    torch_compile 140 torch_compile "" --quiet
  python3 $helpers/bench_table.py "$out/bench.jsonl" "$out/torch_compile.jsonl" | grep -E "^\||expert "
fi

# SASS of the expert: what design.json's "recognise" fields name.
sass_counts "(LDG|STG|LDS|STS)\.E?\.?[0-9A-Z.]*128[A-Z.]*|SHFL\.BFLY|F2FP\.BF16[A-Z0-9.]*|ATOM[A-Z.]*|RED\.[A-Z.]*|BAR\.SYNC[A-Z.]*"
# The variants' ring kernels: cp.async into shared memory, 16-byte reads back, no local memory
# (spills).
for v in $(built_variants | grep -x -E 'dynamic|shared_partials|flags|whole_rounds|cluster_pairs|pairs_whole'); do
  sass_counts --so "expert_$v" "LDGSTS[A-Z0-9.]*|LDS\.128|DEPBAR[A-Z.]*|STG\.E[A-Z.]*128" "LDGSTS" "LDL|STL"
done
# pair_partials: st.async into the other CTA (STAS), its mbarrier (SYNCS), relaxed cluster barriers
# (UCGABAR) and no MEMBAR (a release barrier would wait for the last dx stores).
for v in $(built_variants | grep -x -E 'cluster_pairs|pairs_whole'); do
  sass_counts --so "expert_$v" "STAS[A-Z0-9.]*|SYNCS[A-Z0-9.]*|UCGABAR_[A-Z]*|MEMBAR[A-Z.]*" "STAS UCGABAR_ARV" "LDL|STL|MEMBAR"
done
echo "t-lnb: $fails failure(s)"
exit "$fails"
