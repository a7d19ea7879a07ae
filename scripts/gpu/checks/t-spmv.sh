#!/usr/bin/env bash
# spmv_csr on the H200 (issue #18): validation; d2k bench of every built-in target (naive scalar
# CSR, expert, library = cuSPARSE SpMV) and PyTorch eager on the check workloads and the four bench
# matrices (power-law, dense rows, road_usa, banded), with the table; the expert's variants
# (`// %VARIANT%` lines of expert.cu; by default `prev`, the default before the packed coalesced
# 16-byte tile of 2026-12-03; binned and merge_d when named in SPMV_VARIANTS)
# under compute-sanitizer memcheck on the check workloads (steps memcheck_<variant>), then timed
# beside the expert (merge path since 2026-12-02), cuSPARSE (library) and naive (unless
# SPMV_VARIANTS_NAIVE=0: every row is still judged against naive's outputs) on the four bench
# matrices in one call (step variants: the ratios of #18's bar are only valid within one call);
# the graph_csr generator's device == host test; the
# starter's verdict (must be INCORRECT_*); the golden cross-check
# against PyTorch float64 on `d2k check --dump` inputs (t-spmv/golden_check.py); the expert under
# compute-sanitizer memcheck on the check workloads; the expert's SASS counts (design.json's
# "recognise" fields: LDGSTS (cp.async), LDG.E.CONSTANT (x), SHFL, ATOMS, RED/ATOMG; no spills). Fits the 150 s deadline of
# scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget (SPMV_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-spmv.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=spmv_csr
helpers=scripts/gpu/checks/t-spmv
budget=${SPMV_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
benches=$(workload_uuids bench)
detect_torch

validate_step
# The graph_csr generator (new in #18): device bits == host bits, for every kind (graph_csr rows:
# row_ptr with heavy rows, 24e6-row equal lengths, col_idx by binary search on the device).
if ! selected generators; then
  echo "== generators not selected (D2K_CHECK_STEPS)"
elif [ -x "$carry/gpu_tests/test_gpu_generators" ]; then
  step generators 10 "$carry/gpu_tests/test_gpu_generators" --gtest_filter='GpuGenerators.DeviceEqualsHostForEveryKind' \
    && pass "generators: device == host for every kind (graph_csr included)" || fail "generators (see generators.log)"
else
  fail "no gpu_tests/test_gpu_generators in $carry (scripts/gpu/pack.sh copies it when built)"
fi
bench_step --files "bench_$task" --pass "bench: every target PASSED (check workloads and the four bench matrices)" \
  --show 12 bench 60 "naive,expert,library$torch" "$checks,$benches"
# The variants of this round (SPMV_VARIANTS; only those built in the carry: a stale .so of an
# earlier round is not timed): memcheck each on the check workloads first, then one d2k bench of
# library, the variants and the expert on the four bench matrices.
variants=""
for v in ${SPMV_VARIANTS:-prev}; do
  [ -f "$carry/impl/$task/expert_$v.so" ] && variants+=" $v"
done
if [ -z "$variants" ]; then
  selected variants && fail "no expert variants of this round built under $carry/impl/$task"
else
  for v in $variants; do sanitize --impl "expert:$v" memcheck 20 "$checks"; done
  # shared-memory hazards of the tile kernel (cp.async staging, columns aliased with the row sums
  # until the first barrier, shared atomics): racecheck on small check workloads, only when
  # selected by name (racecheck_<variant>): not part of a default run
  small=$(workload_uuids check "n3-three\|n1000-powerlaw\|n4099-dense\|n100003-road\|n200000-empty")
  for v in $variants; do
    [[ ",${D2K_CHECK_STEPS:-}," == *",racecheck_$v,"* ]] && sanitize --impl "expert:$v" racecheck 30 "$small"
  done
  # target by target (a run cut by its time limit keeps the finished targets' records): the bar
  # (library), the variants, the default expert, then naive (the slowest, least needed; its
  # outputs judge every row whether or not it is timed)
  vtargets=library
  for v in $variants; do vtargets+=,expert:$v; done
  vtargets+=,expert
  [ "${SPMV_VARIANTS_NAIVE:-1}" = 1 ] && vtargets+=,naive
  bench_step --pass "variants: expert, library and every variant PASSED on the four bench matrices" --show 20 \
    variants 100 "$vtargets" "$benches" --bench-rounds 1 --max-time 0.3
fi
starter_verdict 8 --workloads "$checks"
golden_step --pass "vs torch float64" --show 14 10 "$checks" $helpers/golden_check.py
sanitize memcheck 20 "$checks"
sass_counts "LDGSTS[A-Z0-9.]*|LDG\.E\.CONSTANT[A-Z0-9.]*|STG\.E\.EF|SHFL\.[A-Z]*|RED[A-Z0-9.]*|ATOMS[A-Z0-9.]*|ATOMG[A-Z0-9.]*" \
  "LDGSTS" "LDL|STL"
# the variants: the same counts, and no local memory (spills); the v16 variants' 16-byte
# L1-bypassing copies (LDGSTS.E.BYPASS.128); the prefetching variants' bulk L2 prefetches of the
# next tile (cp.async.bulk.prefetch.L2: UBLKPF.L2)
for v in $variants; do
  req=""
  [[ $v == merge_v16* || $v == prev ]] && req="LDGSTS\.E\.BYPASS\.128"
  [[ $v == merge_v16*pf ]] && req+=" UBLKPF\.L2"
  sass_counts --so "expert_$v" "LDG\.E\.EF[A-Z0-9.]*|LDGSTS[A-Z0-9.]*|LDG\.E\.CONSTANT[A-Z0-9.]*|UBLKPF[A-Z0-9.]*|STG\.E\.EF|SHFL\.[A-Z]*|RED[A-Z0-9.]*|ATOMS[A-Z0-9.]*|BAR\.SYNC" \
    "$req" "LDL|STL"
done
echo "t-spmv: $fails failure(s)"
exit "$fails"
