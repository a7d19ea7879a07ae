#!/usr/bin/env bash
# Runs the measurement GPU tests and the calibration probe on a GPU machine from prebuilt
# binaries. Usage: tests/gpu/measure/run_h200.sh CARRY_DIR OUT_DIR
#   CARRY_DIR holds measure_gpu_tests, d2k_measure_probe and lib/ (libfmt), as made by
#   tests/gpu/measure/pack.sh.
set -uo pipefail
carry=$1; out=$2
mkdir -p "$out/cache"
# CUDA libraries (cudart, cupti, cublasLt) from the machine's toolkit; libfmt from the carry.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
for lib in libcupti.so.13 libcublasLt.so.13; do
  if ! ldconfig -p | grep -q "$lib" && ! ls ${LD_LIBRARY_PATH//:/ } 2>/dev/null | grep -q "$lib"; then
    f=$(find /usr/local /opt -name "$lib" 2>/dev/null | head -1)
    [ -n "$f" ] && export LD_LIBRARY_PATH="$(dirname "$f"):$LD_LIBRARY_PATH"
  fi
done
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$carry/measure_gpu_tests" "$carry/d2k_measure_probe" | grep -E "cud|cupti|cublas|fmt|not found"
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

echo "== calibrate probe"
SECONDS=0
D2K_CACHE_DIR="$out/cache" "$carry/d2k_measure_probe" "$out/calibrate.json" > "$out/probe.log" 2>&1
echo "probe rc=$? wall_s=$SECONDS"
tail -n 3 "$out/probe.log"

echo "== gpu tests"
D2K_TEST_OUT="$out" "$carry/measure_gpu_tests" --gtest_output="json:$out/gtest.json" > "$out/gpu_tests.log" 2>&1
rc=$?
echo "measure_gpu_tests rc=$rc"
grep -E "^\[|^  |Failure|Expected|Which is|actual|evaluates" "$out/gpu_tests.log" | grep -v "^\[ RUN\|^\[----------\]" | head -80
exit $rc
