#!/usr/bin/env bash
# Collects the measurement GPU test binary, the calibration probe (when built), the timing-fidelity
# tool with the fused_add_rmsnorm naive library, and the Debian libraries the GPU machine's image
# may lack (libfmt, libseccomp) into one small folder.
# Usage: tests/gpu/measure/pack.sh BUILD_DIR DEST
set -euo pipefail
build=$1; dest=$2
rm -rf "$dest"; mkdir -p "$dest/lib"
cp "$build/tests/gpu/measure/measure_gpu_tests" "$dest/"
[ -x "$build/tests/gpu/measure/d2k_measure_probe" ] && cp "$build/tests/gpu/measure/d2k_measure_probe" "$dest/"
cp "$build/tools/fidelity/d2k_fidelity" "$dest/"
cp "$build/impl/fused_add_rmsnorm/naive.so" "$dest/naive.so"
for lib in $(ldd "$dest"/measure_gpu_tests "$dest"/d2k_fidelity "$dest"/naive.so | awk '/=> \//{print $3}' | grep -E 'libfmt|libseccomp' | sort -u); do
  cp -L "$lib" "$dest/lib/"
done
du -sh "$dest"
