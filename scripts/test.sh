#!/usr/bin/env bash
# Builds everything (CUDA included) and runs every test that needs no GPU.
# GPU tests carry the ctest label `gpu` and run on a machine with one: scripts/gpu-tests.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset ci
cmake --build --preset ci -j "$(nproc)"
ctest --preset ci
