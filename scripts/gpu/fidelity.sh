#!/usr/bin/env bash
# Timing fidelity on a GPU machine: d2k_fidelity 5 times (5 separate processes: the spread of d2k's
# medians), the timer's per-sample overhead, then Nsight Compute (--clock-control none, every cache
# flushed before each kernel) on each workload, diagnostics for multi-kernel calls (ncu without
# cache flushes; d2k with events only, without the flush, without the blocking kernel, with every sample under CUPTI), and the tables (scripts/gpu/fidelity_table.py).
# Usage (repository root): scripts/gpu/fidelity.sh CARRY OUT
#   CARRY made by scripts/gpu/pack.sh from a build with -DD2K_BUILD_TOOLS=ON (d2k_fidelity; the
#   fused_add_rmsnorm naive library from impl/); OUT receives the logs.
set -uo pipefail
carry=$1; out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
tool=$carry/d2k_fidelity
so=$carry/impl/fused_add_rmsnorm/naive.so
reps=${FIDELITY_NCU_REPS:-5}
export FIDELITY_NCU_REPS=$reps
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
} > "$out/env.txt" 2>&1

for r in 1 2 3 4 5; do
  SECONDS=0
  timeout 100 "$tool" --naive-so "$so" --json "$out/run$r.jsonl" > "$out/run$r.log" 2>&1
  echo "fidelity run $r rc=$? wall_s=$SECONDS"
done
SECONDS=0
timeout 60 "$tool" --overhead --json "$out/overhead.jsonl" > "$out/overhead.log" 2>&1
echo "overhead rc=$? wall_s=$SECONDS"

ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$ncu" ]; then
  echo "ncu not found: no Nsight Compute comparison"
else
  "$ncu" --version > "$out/ncu_version.txt" 2>&1
  "$tool" --list --naive-so "$so" | while read -r w vis; do
    [ "$vis" = ncu ] || continue
    SECONDS=0
    timeout 100 "$ncu" --clock-control none --cache-control all --metrics gpu__time_duration.sum --profile-from-start off \
      --csv --page raw --print-units base --log-file "$out/ncu_$w.csv" \
      "$tool" --ncu --reps "$reps" --only "$w" --naive-so "$so" > "$out/ncu_$w.log" 2>&1
    echo "ncu $w rc=$? wall_s=$SECONDS rows=$(grep -c '^"[0-9]' "$out/ncu_$w.csv" 2>/dev/null)"
  done
fi
# Diagnostics for calls of several kernels: ncu without its per-kernel cache flush (the kernels of
# one call then see each other's L2 lines, as under d2k), and d2k with CUDA events only (no CUPTI).
multi=$("$tool" --list --naive-so "$so" | awk '/^rmsnorm/{print $1}' | paste -sd, -)
if [ -n "$ncu" ] && [ -n "$multi" ]; then
  for w in ${multi//,/ }; do
    timeout 100 "$ncu" --clock-control none --cache-control none --metrics gpu__time_duration.sum --profile-from-start off \
      --csv --page raw --print-units base --log-file "$out/ncunocache_$w.csv" \
      "$tool" --ncu --reps "$reps" --only "$w" --naive-so "$so" > "$out/ncunocache_$w.log" 2>&1
    echo "ncu --cache-control none $w rc=$?"
  done
fi
if [ -n "$multi" ]; then
  # The same calls under d2k with one part of the timer changed at a time.
  for v in "events_only --no-cupti" "no_flush --no-flush" "no_blocking --no-blocking" "all_cupti --all-cupti"; do
    set -- $v
    timeout 60 "$tool" "$2" --only "copy_kernel_1GiB,$multi" --naive-so "$so" --json "$out/variant_$1.jsonl" \
      > "$out/variant_$1.log" 2>&1
    echo "variant $1 rc=$?"
  done
fi
python3 "$here/scripts/gpu/fidelity_table.py" "$out" | tee "$out/table.md"
