#!/usr/bin/env bash
# Configures a copy of the source tree that is read-only, with third-party headers elsewhere
# (-DD2K_THIRD_PARTY) and the build folder outside it, and fails if the configure step wrote
# anything into the source tree. Root ignores permission bits, so the tree is also compared
# before and after (file list, sizes, modification times).
# Usage: tests/build/readonly_configure.sh SOURCE_DIR THIRD_PARTY_DIR [WORK_DIR]
set -euo pipefail
src=$(cd "$1" && pwd); tp=$(cd "$2" && pwd)
work=${3:-$(mktemp -d)}
rm -rf "$work"; mkdir -p "$work"
copy=$work/src; build=$work/build
# The tracked sources only: no build folders, no third_party/ (it is the point of the test).
mkdir -p "$copy"
tar -C "$src" --exclude=./build --exclude=./third_party --exclude=./.git -cf - . | tar -C "$copy" -xf -
chmod -R a-w "$copy"
snapshot() { (cd "$copy" && find . -printf '%p %s %T@\n' | sort); }
before=$(snapshot)
rc=0
cmake -S "$copy" -B "$build" -G Ninja -DD2K_THIRD_PARTY="$tp" -DD2K_BUILD_TESTS=ON -DD2K_BUILD_TOOLS=ON \
  -DCMAKE_CUDA_COMPILER="${CUDACXX:-nvcc}" > "$work/configure.log" 2>&1 || rc=$?
after=$(snapshot)
chmod -R u+w "$copy"
if [ "$rc" -ne 0 ]; then
  tail -20 "$work/configure.log"
  echo "FAIL: configure of the read-only tree failed (rc=$rc)"; exit 1
fi
if [ "$before" != "$after" ]; then
  diff <(echo "$before") <(echo "$after") | head -20
  echo "FAIL: configure wrote into the source tree"; exit 1
fi
grep -q "D2K_THIRD_PARTY:PATH=$tp" "$build/CMakeCache.txt" || { echo "FAIL: D2K_THIRD_PARTY not in the cache"; exit 1; }
rm -rf "$work"
echo "OK: read-only source tree configured with D2K_THIRD_PARTY=$tp"
