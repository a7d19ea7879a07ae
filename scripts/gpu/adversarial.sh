#!/usr/bin/env bash
# The run-time exploit corpus on a GPU machine, from prebuilt binaries in CARRY
# (scripts/gpu/pack.sh): every case of tests/adversarial with an expect_run.json, compiled 12 at
# a time, then run one at a time through d2k bench. Table in OUT/adversarial_table.md, each
# case's staged folder, traces and logs in OUT/adversarial.tgz.
# Usage (repository root): scripts/gpu/adversarial.sh CARRY OUT
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/env.sh" "$carry" "$out"
keep="$(cd "$out" && pwd)/adversarial"
t0=$SECONDS
timeout 560 python3 tests/adversarial/run_runtime.py --d2k "$carry/d2k" --jobs 12 --case-timeout 120 \
  --out "$out/adversarial_table.md" --keep "$keep" > "$out/adversarial.log" 2>&1
echo "== adversarial rc=$? wall_s=$((SECONDS - t0))"
cat "$out/adversarial_table.md" 2>/dev/null || tail -30 "$out/adversarial.log"
tar -C "$out" -czf "$out/adversarial.tgz" adversarial adversarial.log && rm -rf "$keep"
