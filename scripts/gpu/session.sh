#!/usr/bin/env bash
# One session's checks and timings on a GPU machine, from prebuilt binaries in $1 (a folder with
# d2k, impl/ and the GPU test binaries, as scripts/gpu/pack.sh makes it). Logs go to $2.
# Usage: scripts/gpu/session.sh CARRY_DIR OUT_DIR [TASKS]
set -uo pipefail
carry=$1; out=$2; tasks=${3:-fused_add_rmsnorm,hash_join,muon_optimizer_step}
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}" D2K_IMPL_DIR="$carry/impl" D2K_CACHE_DIR="$out/cache" D2K_DATASET="$PWD/dataset"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"

echo "== calibrate"
"$carry/d2k" calibrate > "$out/calibrate.json" 2> "$out/calibrate.err"; echo "calibrate rc=$?"

echo "== gpu tests"
rc_all=0
for t in "$carry"/gpu_tests/*; do
  [ -x "$t" ] || continue
  "$t" --gtest_brief=1 > "$out/$(basename "$t").log" 2>&1; rc=$?
  echo "$(basename "$t") rc=$rc"; [ $rc -eq 0 ] || rc_all=1
done

echo "== suite"
start=$(date +%s)
"$carry/d2k" suite --tasks "$tasks" --quiet --max-time 3 --json "$out/suite.jsonl" --markdown "$out/suite.md" \
  > "$out/suite.txt" 2> "$out/suite.err"; echo "suite rc=$? wall_s=$(( $(date +%s) - start ))"
tail -c 6000 "$out/suite.txt"; tail -c 1500 "$out/suite.err"
exit $rc_all
