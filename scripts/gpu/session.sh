#!/usr/bin/env bash
# One session's checks and timings on a GPU machine, from prebuilt binaries in CARRY (made by
# scripts/gpu/pack.sh): calibrate, the GPU tests, then d2k suite/bench on the pilot tasks.
# Usage (repository root): scripts/gpu/session.sh CARRY OUT
set -uo pipefail
carry=$1; out=$2
mkdir -p "$out"
# CUDA libraries from the machine's toolkit; Debian ones (libfmt, libseccomp) from the carry.
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
export D2K_IMPL_DIR="$carry/impl" D2K_CACHE_DIR="$out/cache" D2K_DATASET="$PWD/dataset"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; date -u; } | tee "$out/gpu.txt"
d2k="$carry/d2k"
ldd "$d2k" | grep "not found"

step() {  # step NAME SECONDS CMD... : runs with a deadline, log in $out/NAME.log
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  echo "== $name rc=$? wall_s=$((SECONDS - t0))"
}

step calibrate 90 "$d2k" calibrate
for t in "$carry"/gpu_tests/*; do
  step "$(basename "$t")" 90 env D2K_TEST_OUT="$out" "$t" --gtest_brief=1
  grep -E "^\[  (PASSED|FAILED) " "$out/$(basename "$t").log" | head -12
done
# exec: sandboxed CUDA workers run as nobody, so every folder above the carry must be searchable.
d=$(cd "$carry" && pwd); while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
step exec_gpu_test 90 env D2K_SOURCE_DIR="$PWD" D2K_EXTRA_INCLUDE_DIRS="$(cd "$carry" && pwd)/dlpack-include" \
  D2K_NVCC=/usr/local/cuda/bin/nvcc "$carry/exec/exec_gpu_test" --gtest_brief=1
grep -E "^\[  (PASSED|FAILED) " "$out/exec_gpu_test.log" | head -12
step suite 400 "$d2k" suite --quiet --max-time 2 --bench-rounds 1 --json "$out/suite.jsonl" --markdown "$out/suite.md"
cut -c1-200 "$out/suite.log" | grep -v " check \|hidden:" | tail -40
