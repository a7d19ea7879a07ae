#!/usr/bin/env bash
# A short GPU check of the evaluation path from prebuilt binaries in CARRY (scripts/gpu/pack.sh):
# one task's bench through sandboxed workers and in-process, side by side, and an honest
# candidate compiled and run in a worker. Logs go to OUT.
# Usage (repository root): scripts/gpu/smoke.sh CARRY OUT [TASK]
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2; task=${3:-fused_add_rmsnorm}
mkdir -p "$out"
source "$(dirname "$0")/env.sh" "$carry" "$out"
d2k="$carry/d2k"
step() {  # step NAME SECONDS CMD... : runs with a deadline, log in $out/NAME.log
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  echo "== $name rc=$? wall_s=$((SECONDS - t0))"
}
step bench_worker 240 "$d2k" bench --task "$task" --targets naive,expert --quiet --max-time 0.5 --bench-rounds 1 \
  --json "$out/bench_worker.jsonl"
tail -25 "$out/bench_worker.log" | cut -c1-220
step bench_inproc 240 "$d2k" bench --task "$task" --targets naive,expert --quiet --max-time 0.5 --bench-rounds 1 \
  --isolation none --json "$out/bench_inproc.jsonl"
tail -25 "$out/bench_inproc.log" | cut -c1-220
# An honest candidate: compiled by d2k (sandboxed nvcc), run in a worker.
cand=$(mktemp -d); cp tests/adversarial/honest_control/solution.cu tests/adversarial/common/rmsnorm_case.cuh "$cand/"
chmod -R o+rX "$cand"; chmod o+x "$(dirname "$cand")"
step candidate 240 "$d2k" bench --task fused_add_rmsnorm --targets solution --solution-dir "$cand" --quiet --max-time 0.3 \
  --bench-rounds 1 --json "$out/candidate.jsonl"
tail -20 "$out/candidate.log" | cut -c1-220
