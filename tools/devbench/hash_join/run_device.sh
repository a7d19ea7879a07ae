#!/usr/bin/env bash
# One device run: GPU facts, the devbench driver over every workload and implementation, the
# PyTorch eager baseline, and the naive probe's SASS atomics. Logs go to $OUT (or ./out).
#   tools/devbench/hash_join/run_device.sh [max-samples] [driver seconds]
set -uo pipefail
out="${OUT:-out}"; mkdir -p "$out"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
b="$root/build/hash_join"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; } > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
timeout "${2:-120}" "$b/hj_devbench" "$b/impl" --max-samples "${1:-20}" 2>&1 | tee "$out/devbench.txt"
PYTHONUNBUFFERED=1 timeout 50 python3 "$root/tools/devbench/hash_join/torch_eager.py" 2>&1 | tee "$out/torch.txt"
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass "$b/impl/naive.so" > "$out/naive.sass" 2>&1
  cuobjdump --dump-sass "$b/impl/expert.so" > "$out/expert.sass" 2>&1
  echo "naive SASS atomics:"; grep -cE "ATOMG|REDG|ATOM\." "$out/naive.sass"; grep -E "VOTE|POPC|ATOMG|REDG|REDUX" "$out/naive.sass" | head -12
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv >> "$out/gpu.txt" 2>&1
