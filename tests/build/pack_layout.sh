#!/usr/bin/env bash
# scripts/gpu/pack.sh from this build: the carry must hold what a fresh GPU machine needs to run
# d2k and compile solutions there (include/ beside d2k, with dlpack.h), the fixtures the GPU tests
# read, the GPU test binaries and the implementation libraries with the expert variants.
# Usage (from the repository root): tests/build/pack_layout.sh BUILD_DIR CARRY VARIANTS
#   VARIANTS: the build's D2K_EXPERT_VARIANTS (ON: the variant libraries must be carried too)
set -euo pipefail
build=$1; carry=$2; variants=${3:-ON}
scripts/gpu/pack.sh "$build" "$carry" > /dev/null
fail() { echo "FAIL: carry lacks $*"; exit 1; }
for f in d2k include/d2k/solution.h include/dlpack/dlpack.h tests/fixtures/solutions/vector_add \
         tests/fixtures/tasks gpu_tests/measure_gpu_tests gpu_tests/test_gpu_generators \
         gpu_tests/test_gpu_compare exec/exec_gpu_test exec/exec_gpu_worker d2k_measure_probe \
         impl/fused_add_rmsnorm/naive.so impl/fused_add_rmsnorm/expert.so cuda-tools/cuobjdump \
         $(case $variants in ON|on|1|TRUE|true) echo impl/fused_add_rmsnorm/expert_generic.so impl/hash_join/expert_rows8_1cta.so;; esac); do
  [ -e "$carry/$f" ] || fail "$f"
done
[ -z "$(ls "$carry/gpu_tests" | grep -v -E '^(measure_gpu_tests|test_gpu_generators|test_gpu_compare)$')" ] ||
  { echo "FAIL: gpu_tests/ holds something that is not a gtest binary"; exit 1; }
echo "OK: carry has d2k, include/, tests/fixtures, the GPU tests and $(find "$carry/impl" -name '*.so' | wc -l) libraries"
rm -rf "$carry"
