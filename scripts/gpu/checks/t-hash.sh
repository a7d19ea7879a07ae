#!/usr/bin/env bash
# hash_join on the H200 (issue #17's open pilot item): validation; d2k bench of naive and expert on
# the check workloads and the four bench rows, with the table; the expert's variants beside it on
# the 64M-build row and on the 1M range2x row: `prev` (the global-table path on every size, the
# default until the tenth session; the bar is 2x prev on the 64M row), `partitioned_1slice` (pass
# 2 one slice per tile), `partitioned_j16` (16-pair join tiles), `partitioned_async` (the passes'
# input through a cp.async ring), `partitioned_p14` (2^14-key partitions: two join CTAs per SM) and
# `partitioned_p14_async` (both), which must tie the expert on the 1M row where every form falls
# back to the global-table path; the starter's verdict (must be
# INCORRECT_*); compute-sanitizer memcheck of the expert and `prev` on the check workloads and of
# `partitioned_all` and `partitioned_all_p14_async` (the partitioned path forced on every build
# size: the check workloads are below its 2^22-row threshold; the second with the ring passes and
# the 98 KB join), racecheck of both on the range4x and range2x ones (their shared-memory tables,
# tile histograms, staging tiles and input rings are filled and read across warps; range2x gives
# the scatter passes several bins and slices); the SASS of the expert and the partitioned builds
# without local memory. Each step gets what is left of a 150 s budget (HASH_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh with -DD2K_EXPERT_VARIANTS=ON):
#   scripts/gpu/checks/t-hash.sh CARRY OUT
# The partitioned join's checks and where its time goes per kernel (Nsight Compute; only by name),
# beside the global-table path's (ncu_prev):
#   D2K_CHECK_STEPS=memcheck_partitioned_all,racecheck_partitioned_all,memcheck_prev,variants,ncu,ncu_prev \
#     HASH_BUDGET_S=150 scripts/gpu/checks/t-hash.sh CARRY OUT
# The eleventh session's variants (ring passes, 2^14-key partitions), their sanitizers first:
#   D2K_CHECK_STEPS=memcheck_partitioned_all_p14_async,racecheck_partitioned_all_p14_async,variants,ncu_partitioned_p14_async \
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
for v in partitioned_all partitioned_all_p14_async prev; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && sanitize --impl "expert:$v" memcheck 12 "$checks"
done
for v in partitioned_all partitioned_all_p14_async; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && sanitize --impl "expert:$v" racecheck 25 "$race_rows"
done
insns="LDG\.E\.EF\.128|LDG\.E[A-Z0-9.]*|LDGSTS[A-Z0-9.]*|ATOMS\.[A-Z0-9.]*|ATOMG[A-Z0-9.]*|RED[A-Z0-9.]*|SHFL\.[A-Z]*"
sass_counts "$insns" "ATOMS" "LDL|STL"
for v in partitioned_1slice partitioned_j16 partitioned_p14; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && sass_counts --so "expert_$v" "$insns" "ATOMS" "LDL|STL"
done
# The ring variants must copy with cp.async (LDGSTS), without the spills their first form had.
for v in partitioned_async partitioned_p14_async; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && sass_counts --so "expert_$v" "$insns" "ATOMS LDGSTS" "LDL|STL"
done
# Where the partitioned join's time goes (its kernels' durations and DRAM bytes on the 64M row),
# beside the global-table path's: only where D2K_CHECK_STEPS names ncu / ncu_prev.
big_row=$(workload_uuids bench "r64m-")
ncu_kernels 60 "hj_(build|probe|part|join)" "$big_row"
[ -f "$carry/impl/$task/expert_prev.so" ] && ncu_kernels --impl expert:prev 60 "hj_(build|probe|part|join)" "$big_row"
for v in partitioned_async partitioned_p14 partitioned_p14_async; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && ncu_kernels --impl "expert:$v" 60 "hj_(build|probe|part|join)" "$big_row"
done
echo "t-hash: $fails failure(s)"
exit "$fails"
