#!/usr/bin/env bash
# Runs the measurement GPU tests, then the timing-fidelity session (scripts/gpu/fidelity.sh), on a
# GPU machine from prebuilt binaries, and bundles the logs so that few files come back.
# Usage: tests/gpu/measure/run_h200.sh CARRY_DIR OUT_DIR     (CARRY_DIR made by pack.sh)
#   RUN_PROBE=1 also runs the calibration probe.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
here=$(cd "$(dirname "$0")/../../.." && pwd)
work=$out/work
mkdir -p "$work/cache"
export LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$carry/measure_gpu_tests" "$carry/d2k_fidelity" | grep -E "cud|cupti|cublas|fmt|seccomp|not found"
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

if [ "${RUN_PROBE:-0}" = 1 ] && [ -x "$carry/d2k_measure_probe" ]; then
  echo "== calibrate probe"
  D2K_CACHE_DIR="$work/cache" "$carry/d2k_measure_probe" "$work/calibrate.json" > "$work/probe.log" 2>&1
  echo "probe rc=$?"
fi

echo "== gpu tests"
SECONDS=0
D2K_TEST_OUT="$work" timeout 180 "$carry/measure_gpu_tests" --gtest_output="json:$work/gtest.json" > "$out/gpu_tests.log" 2>&1
rc=$?
echo "measure_gpu_tests rc=$rc wall_s=$SECONDS"
grep -E "^\[ +(OK|FAILED|PASSED) |\] timer=|^\[nvml\]|^  |Failure|Expected|Which is|actual|evaluates" "$out/gpu_tests.log" | head -120

echo "== fidelity"
bash "$here/scripts/gpu/fidelity.sh" "$carry" "$work/fidelity"
cp "$work/fidelity/table.md" "$out/table.md" 2>/dev/null
tar czf "$out/logs.tgz" -C "$out" work && rm -rf "$work"
ls -la "$out"
exit $rc
