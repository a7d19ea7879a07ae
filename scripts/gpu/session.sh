#!/usr/bin/env bash
# One session's checks and timings on a GPU machine, from prebuilt binaries in CARRY (made by
# scripts/gpu/pack.sh): calibrate, the GPU tests, then d2k bench on each pilot task (three
# targets, sandboxed workers) with its wall time, and once in-process (what isolation costs);
# then every scripts/gpu/checks/*.sh present (each area's own GPU checks), each under a deadline,
# with one summary line per script at the end.
# Usage (repository root): scripts/gpu/session.sh CARRY OUT
#   SESSION_ONLY_CHECKS=1   skip this script's own steps, run the checks only
#   CHECK_DEADLINE_S=150    wall-clock limit of one check script
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/env.sh" "$carry" "$out"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; date -u; } | tee "$out/gpu.txt"
d2k="$carry/d2k"
ldd "$d2k" | grep "not found"

step() {  # step NAME SECONDS CMD... : runs with a deadline, log in $out/NAME.log
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  echo "== $name rc=$? wall_s=$((SECONDS - t0))"
}

if [ "${SESSION_ONLY_CHECKS:-0}" = 1 ]; then exec "$(dirname "$0")/run_checks.sh" "$carry" "$out"; fi

step calibrate 90 "$d2k" calibrate
for t in "$carry"/gpu_tests/*; do
  step "$(basename "$t")" 90 env D2K_TEST_OUT="$out" "$t" --gtest_brief=1
  grep -E "^\[  (PASSED|FAILED) " "$out/$(basename "$t").log" | head -12
done
step exec_gpu_test 90 "$carry/exec/exec_gpu_test" --gtest_brief=1
grep -E "^\[  (PASSED|FAILED) " "$out/exec_gpu_test.log" | head -12
for task in fused_add_rmsnorm hash_join muon_optimizer_step; do
  step "bench_$task" 200 "$d2k" bench --task "$task" --targets naive,expert,library --quiet --json "$out/bench_$task.jsonl"
  grep -v " check \|hidden:" "$out/bench_$task.log" | cut -c1-200 | tail -14
done
# What the isolation and the per-call checks cost: the same bench without the checks, then also
# without the workers.
step bench_fused_add_rmsnorm_nochecks 200 "$d2k" bench --task fused_add_rmsnorm --targets naive,expert,library \
  --quiet --no-sample-checks --json "$out/bench_fused_add_rmsnorm_nochecks.jsonl"
step bench_fused_add_rmsnorm_inprocess 200 "$d2k" bench --task fused_add_rmsnorm --targets naive,expert,library \
  --quiet --no-sample-checks --isolation none --json "$out/bench_fused_add_rmsnorm_inprocess.jsonl"
grep -v " check \|hidden:" "$out/bench_fused_add_rmsnorm_inprocess.log" | cut -c1-200 | tail -8
# The CUDA-graph column (flush captured inside the graph) beside the eager time.
step bench_fused_add_rmsnorm_graph 200 "$d2k" bench --task fused_add_rmsnorm --targets naive,expert --graph \
  --quiet --json "$out/bench_fused_add_rmsnorm_graph.jsonl"
grep -v " check \|hidden:" "$out/bench_fused_add_rmsnorm_graph.log" | cut -c1-220 | tail -8
"$(dirname "$0")/run_checks.sh" "$carry" "$out"
