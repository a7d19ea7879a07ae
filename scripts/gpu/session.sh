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
step exec_gpu_test 90 env D2K_SOURCE_DIR="$PWD" D2K_EXTRA_INCLUDE_DIRS="$carry/dlpack-include" \
  D2K_NVCC=/usr/local/cuda/bin/nvcc "$carry/exec/exec_gpu_test" --gtest_brief=1
grep -E "^\[  (PASSED|FAILED) " "$out/exec_gpu_test.log" | head -12
step suite 300 "$d2k" suite --tasks fused_add_rmsnorm,muon_optimizer_step --quiet --max-time 2 --bench-rounds 1 \
  --json "$out/suite.jsonl" --markdown "$out/suite.md"
cat "$out/suite.log" | cut -c1-220 | tail -40
# hash_join: the three 1e8-row workloads (the 2.7e8-row one needs a device multiset comparator
# to fit a session: host sorts of 2.7e8 rows take minutes).
step hash_join 200 "$d2k" bench --task hash_join --targets naive,expert --quiet --max-time 2 --bench-rounds 1 \
  --workloads hash_join-check-r1000-s4097-wide,hash_join-check-r65537-s200003-range2x,hash_join-check-r5000-s12345-range4x,hash_join-check-r100003-s300007-wide,hash_join-bench-r1m-s100m-range2x,hash_join-bench-r1m-s100m-wide,hash_join-bench-r4096-s100m-range2x \
  --json "$out/hash_join.jsonl" --markdown "$out/hash_join.md"
cat "$out/hash_join.log" | cut -c1-220 | tail -25
