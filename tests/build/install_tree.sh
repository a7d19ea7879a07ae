#!/usr/bin/env bash
# `cmake --install` of this build into a scratch prefix gives a self-contained tree: bin/d2k,
# impl/<task>/<impl>.so (where d2k looks: the nearest impl/ above the binary) and
# include/d2k/solution.h.
# Usage: tests/build/install_tree.sh BUILD_DIR PREFIX
set -euo pipefail
build=$1; prefix=$2
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > /dev/null
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$prefix/bin/d2k" ] || fail "no bin/d2k"
[ -f "$prefix/include/d2k/solution.h" ] || fail "no include/d2k/solution.h"
[ -f "$prefix/impl/fused_add_rmsnorm/reference.so" ] || fail "no impl/fused_add_rmsnorm/reference.so"
[ -f "$prefix/impl/fused_add_rmsnorm/naive.so" ] || fail "no impl/fused_add_rmsnorm/naive.so"
[ -f "$prefix/share/d2k/prompts/design_level.md" ] || fail "no share/d2k/prompts (d2k score's templates)"
n=$(find "$prefix/impl" -name '*.so' | wc -l)
echo "OK: installed bin/d2k, include/d2k/solution.h and $n implementation libraries under $prefix"
rm -rf "$prefix"
