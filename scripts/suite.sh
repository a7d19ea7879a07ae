#!/usr/bin/env bash
# Builds d2k and runs the suite: on a GPU machine naive, expert and library of every task are
# checked and timed; without a GPU, every task is validated and every golden reference runs
# through the host pipeline on its check workloads (d2k says what it skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release ${D2K_THIRD_PARTY:+-DD2K_THIRD_PARTY="$D2K_THIRD_PARTY"}
cmake --build --preset release -j "$(nproc)"
exec ./build/release/src/cli/d2k suite "$@"
