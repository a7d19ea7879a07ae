#!/usr/bin/env bash
# Collects what a GPU session needs from a build tree into one small folder (the build tree itself
# is too large to send): the d2k binary, every implementation library, the GPU test binaries and
# the Debian libraries the GPU machine's image lacks.
# Usage: scripts/gpu/pack.sh BUILD_DIR DEST
set -euo pipefail
build=$1; dest=$2
rm -rf "$dest"; mkdir -p "$dest/gpu_tests" "$dest/lib"
cp "$build/src/cli/d2k" "$dest/"
cp -r "$build/impl" "$dest/impl"
for t in tests/gpu/data_check/test_gpu_generators tests/gpu/data_check/test_gpu_compare tests/gpu/measure/measure_gpu_tests; do
  [ -x "$build/$t" ] && cp "$build/$t" "$dest/gpu_tests/"
done
# exec's GPU test runs beside its worker program; dlpack.h for compiling solutions there.
mkdir -p "$dest/exec" "$dest/dlpack-include/dlpack"
cp "$build/tests/gpu/exec/exec_gpu_test" "$build/tests/gpu/exec/exec_gpu_worker" "$dest/exec/"
cp /usr/include/dlpack/dlpack.h "$dest/dlpack-include/dlpack/"
for lib in $(ldd "$dest/d2k" "$dest"/gpu_tests/* "$dest"/exec/* | awk '/=> \//{print $3}' | grep -E 'libfmt|libseccomp' | sort -u); do
  cp -L "$lib" "$dest/lib/"
done
du -sh "$dest"
