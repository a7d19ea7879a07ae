#!/usr/bin/env bash
# One device run: GPU facts, the devbench driver over every workload and implementation, the
# PyTorch eager baseline, the naive probe's SASS atomics, and (optional, when ncu works there)
# Nsight Compute counters of the expert probe kernel at the R = 1M workloads. Logs go to $OUT.
#   tools/devbench/hash_join/run_device.sh [max-samples] [driver seconds] [ncu seconds]
set -uo pipefail
out="${OUT:-out}"; mkdir -p "$out"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
b="$root/build/hash_join"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; } > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
timeout "${2:-120}" "$b/hj_devbench" "$b/impl" --max-samples "${1:-20}" 2>&1 | tee "$out/devbench.txt"
PYTHONUNBUFFERED=1 timeout 45 python3 "$root/tools/devbench/hash_join/torch_eager.py" 2>&1 | tee "$out/torch.txt"
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass "$b/impl/naive.so" > "$out/naive.sass" 2>&1
  cuobjdump --dump-sass "$b/impl/expert.so" > "$out/expert.sass" 2>&1
  echo "naive SASS atomics:"; grep -E "VOTE|POPC|ATOMG|REDG|REDUX" "$out/naive.sass" | head -12
fi
if [ "${3:-0}" -gt 0 ] && command -v ncu >/dev/null; then
  timeout "$3" ncu --clock-control none -k regex:hj_probe_global -c 3 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --metrics lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
    "$b/hj_devbench" "$b/impl" --filter bench-r1m --impls expert --max-samples 1 > "$out/ncu.txt" 2>&1
  grep -E "==PROF==|hj_probe_global|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Hit|L2 Hit|lts__t|dram__bytes|Mem Busy|Max Bandwidth" "$out/ncu.txt" | head -60
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv >> "$out/gpu.txt" 2>&1
