#!/usr/bin/env bash
# hash_join on the H200 (issue #17's open pilot item): validation; d2k bench of naive and expert on
# the check workloads and the four bench rows, with the table; the expert's variants beside it on
# the 64M-build row and on the 1M range2x row: `prev` (the global-table path on every size, the
# default until the tenth session; the bar is 2x prev on the 64M row), `sync` (the passes'
# register prefetch, the tenth session's default) and `async_j16` (the default's ring passes with
# 16-pair join tiles), which must tie the expert on the 1M row where every form falls back to the
# global-table path; the starter's verdict (must be INCORRECT_*); compute-sanitizer memcheck of the
# expert, `prev` and `async_j16` on the check workloads and of `partitioned_all` (the partitioned
# path forced on every build size: the check workloads are below its 2^22-row threshold),
# racecheck of it on the range4x and range2x ones (its shared-memory tables, tile histograms,
# staging tiles and input rings are filled and read across warps; range2x gives the scatter passes
# several bins and slices); the SASS of the expert and the variants without local memory, the ring
# builds with cp.async (LDGSTS). Retired variants' flags still build them, and the loops below
# check any expert_<name>.so the carry holds (e.g. partitioned_all_p14_async: 2^14-key
# partitions). Each step gets what is left of a 150 s budget (HASH_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh with -DD2K_EXPERT_VARIANTS=ON):
#   scripts/gpu/checks/t-hash.sh CARRY OUT
# The default's checks (the ring passes since the eleventh session) and the sweep beside `prev`,
# then where its time goes per kernel (Nsight Compute; only by name), beside the global-table
# path's:
#   D2K_CHECK_STEPS=memcheck_partitioned_all,racecheck_partitioned_all,memcheck_async_j16,variants,ncu,ncu_prev \
#     HASH_BUDGET_S=150 scripts/gpu/checks/t-hash.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=hash_join
budget=${HASH_BUDGET_S:-150}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
bench=$(workload_uuids bench)
variant_rows=$(workload_uuids bench "r64m-\|r1m-s100m-range2x")
race_rows=$(workload_uuids check "range")

validate_step
bench_step --files "bench_$task" --pass "bench: every target PASSED (check workloads and the four bench rows)" \
  bench 50 "naive,expert" "$checks,$bench"
variants_step --show 16 70 "$variant_rows" --max-time 0.5 --bench-rounds 1
starter_verdict 8 --workloads "$checks"
sanitize memcheck 10 "$checks"
for v in partitioned_all partitioned_all_p14_async async_j16 prev; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && sanitize --impl "expert:$v" memcheck 12 "$checks"
done
for v in partitioned_all partitioned_all_p14_async; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && sanitize --impl "expert:$v" racecheck 25 "$race_rows"
done
insns="LDG\.E\.EF\.128|LDG\.E[A-Z0-9.]*|LDGSTS[A-Z0-9.]*|ATOMS\.[A-Z0-9.]*|ATOMG[A-Z0-9.]*|RED[A-Z0-9.]*|SHFL\.[A-Z]*"
sass_counts "$insns" "ATOMS LDGSTS" "LDL|STL"
for v in sync partitioned_1slice partitioned_j16 partitioned_p14; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && sass_counts --so "expert_$v" "$insns" "ATOMS" "LDL|STL"
done
# The ring variants must copy with cp.async (LDGSTS), without the spills their first form had.
for v in async_j16 partitioned_async partitioned_p14_async; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && sass_counts --so "expert_$v" "$insns" "ATOMS LDGSTS" "LDL|STL"
done
# Where the partitioned join's time goes (its kernels' durations and DRAM bytes on the 64M row),
# beside the global-table path's: only where D2K_CHECK_STEPS names ncu / ncu_prev.
big_row=$(workload_uuids bench "r64m-")
ncu_kernels 60 "hj_(build|probe|part|join)" "$big_row"
[ -f "$carry/impl/$task/expert_prev.so" ] && ncu_kernels --impl expert:prev 60 "hj_(build|probe|part|join)" "$big_row"
for v in sync async_j16; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && ncu_kernels --impl "expert:$v" 60 "hj_(build|probe|part|join)" "$big_row"
done
echo "t-hash: $fails failure(s)"
exit "$fails"
