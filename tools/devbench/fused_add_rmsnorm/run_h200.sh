#!/usr/bin/env bash
# One H200 session of the fused_add_rmsnorm bench: GPU info, driver (checks + timings of every
# implementation), the expert's variant sweep, PyTorch eager, optional extras. Logs go to $OUT.
# Run from the repository root with the build folder built here (sm_90a) and carried.
#   tools/devbench/fused_add_rmsnorm/run_h200.sh [build/fused_add_rmsnorm] [extras...]
set -o pipefail
B=${1:-build/fused_add_rmsnorm}
OUT=${OUT:-/tmp/far_out}
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.draw --format=csv; } 2>&1 | tee "$OUT/gpu.txt"
"$B/far_driver" --root . --impl-dir "$B/impl/fused_add_rmsnorm" --samples 50 --md "$OUT/driver_table.md" 2>&1 | tee "$OUT/driver.log"
echo "driver rc=$?"
if [[ " $* " == *" variants "* ]]; then
  "$B/far_variants" --samples 60 > "$OUT/variants.log" 2>&1; echo "variants rc=$?"
  grep -E "FAIL|ALL PASS|FAILURES" "$OUT/variants.log"
fi
if [[ " $* " == *" torch "* ]]; then
  PYTHONUNBUFFERED=1 python3 tools/devbench/fused_add_rmsnorm/torch_eager.py --samples 50 > "$OUT/torch.log" 2>&1; echo "torch rc=$?"
fi
if [[ " $* " == *" sanitizer "* ]]; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$B/far_driver" --root . --impl-dir "$B/impl/fused_add_rmsnorm" \
      --checks-only > "$OUT/sanitizer_one.log" 2>&1
    echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|correctness" "$OUT/sanitizer_one.log"
    { echo "=== compute-sanitizer --tool $tool"; cat "$OUT/sanitizer_one.log"; } >> "$OUT/sanitizer.log"; rm -f "$OUT/sanitizer_one.log"
  done
fi
if [[ " $* " == *" ncu "* ]]; then
  for wl in bench-4096x4096 bench-16384x8192 bench-128x7168; do
    ncu --clock-control none -k regex:rmsnorm_rows_in_registers -c 1 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      "$B/far_driver" --root . --impl-dir "$B/impl/fused_add_rmsnorm" --only "$wl" --samples 1 --warmup 0 \
      > "$OUT/ncu_one.log" 2>&1
    echo "ncu $wl rc=$?"
    grep -E "DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Registers Per|Mem Busy|Max Bandwidth" "$OUT/ncu_one.log" | head -12
    { echo "=== ncu $wl"; cat "$OUT/ncu_one.log"; } >> "$OUT/ncu.log"; rm -f "$OUT/ncu_one.log"
  done
fi
echo "=== variants (cold L2 medians) ==="; sed -n '/^| T x H/,$p' "$OUT/variants.log" 2>/dev/null | grep -v "^variants" | cut -c1-110
echo "=== torch eager ==="; grep -E "^\||kernels|torch " "$OUT/torch.log" 2>/dev/null | cut -c1-300
echo "=== driver ==="; sed -n '/^SOL:/,$p' "$OUT/driver.log"
