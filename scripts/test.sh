#!/usr/bin/env bash
# Builds everything (CUDA included) and runs every test that needs no GPU (what CI runs).
# GPU tests carry the ctest label `gpu` (`ctest -L '^gpu$'`) and run on a machine with one, from a
# build packed by scripts/gpu/pack.sh: scripts/gpu/session.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset ci ${D2K_THIRD_PARTY:+-DD2K_THIRD_PARTY="$D2K_THIRD_PARTY"} \
  ${D2K_EXPERT_VARIANTS:+-DD2K_EXPERT_VARIANTS="$D2K_EXPERT_VARIANTS"}
cmake --build --preset ci -j "$(nproc)"
ctest --preset ci
