#!/usr/bin/env bash
# The measurement GPU tests with their detail lines, then the timing-fidelity session
# (scripts/gpu/fidelity.sh), on a GPU machine from a carry made by scripts/gpu/pack.sh (from a
# build with -DD2K_BUILD_TOOLS=ON, for d2k_fidelity); bundles the logs so that few files come back.
# Usage (repository root): scripts/gpu/timing.sh CARRY OUT
#   RUN_PROBE=1 also runs the calibration probe.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/env.sh" "$1" "$2"
work=$out/work
mkdir -p "$work/cache"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$carry/gpu_tests/measure_gpu_tests" "$carry/d2k_fidelity" | grep -E "cud|cupti|cublas|fmt|seccomp|not found"
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

if [ "${RUN_PROBE:-0}" = 1 ] && [ -x "$carry/d2k_measure_probe" ]; then
  echo "== calibrate probe"
  D2K_CACHE_DIR="$work/cache" "$carry/d2k_measure_probe" "$work/calibrate.json" > "$work/probe.log" 2>&1
  echo "probe rc=$?"
fi

echo "== gpu tests"
SECONDS=0
D2K_TEST_OUT="$work" timeout 180 "$carry/gpu_tests/measure_gpu_tests" --gtest_output="json:$work/gtest.json" \
  > "$out/gpu_tests.log" 2>&1
rc=$?
echo "measure_gpu_tests rc=$rc wall_s=$SECONDS"
grep -E "^\[ +(OK|FAILED|PASSED) |\] timer=|^\[nvml\]|^  |Failure|Expected|Which is|actual|evaluates" \
  "$out/gpu_tests.log" | head -120

echo "== fidelity"
bash "$here/fidelity.sh" "$carry" "$work/fidelity"
cp "$work/fidelity/table.md" "$out/table.md" 2>/dev/null
tar czf "$out/logs.tgz" -C "$out" work && rm -rf "$work"
ls -la "$out"
exit $rc
