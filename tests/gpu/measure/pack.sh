#!/usr/bin/env bash
# Collects the measurement GPU test binary, the calibration probe and the Debian libraries the
# GPU machine's image may lack (libfmt) into one small folder.
# Usage: tests/gpu/measure/pack.sh BUILD_DIR DEST
set -euo pipefail
build=$1; dest=$2
rm -rf "$dest"; mkdir -p "$dest/lib"
cp "$build/tests/gpu/measure/measure_gpu_tests" "$build/tests/gpu/measure/d2k_measure_probe" "$dest/"
for lib in $(ldd "$dest/measure_gpu_tests" "$dest/d2k_measure_probe" | awk '/=> \//{print $3}' | grep -E 'libfmt' | sort -u); do
  cp -L "$lib" "$dest/lib/"
done
du -sh "$dest"
