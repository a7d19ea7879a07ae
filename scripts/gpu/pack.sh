#!/usr/bin/env bash
# Collects what a GPU session needs from a build tree into one small folder (the build tree itself
# is too large to send): the d2k binary, every implementation library, the GPU test binaries.
# Usage: scripts/gpu/pack.sh BUILD_DIR DEST
set -euo pipefail
build=$1; dest=$2
rm -rf "$dest"; mkdir -p "$dest/gpu_tests"
cp "$build/src/cli/d2k" "$dest/"
cp -r "$build/impl" "$dest/impl"
find "$build/tests/gpu" -maxdepth 3 -type f -executable -name '*test*' -exec cp {} "$dest/gpu_tests/" \; 2>/dev/null || true
# Debian libraries the GPU machine's image may lack (it has CUDA's own).
mkdir -p "$dest/lib"
for lib in $(ldd "$dest/d2k" | awk '/=> \//{print $3}' | grep -E 'libfmt|libseccomp'); do cp -L "$lib" "$dest/lib/"; done
du -sh "$dest"
