#!/usr/bin/env bash
# The trace schema against timed traces (branch schemas, issue #21): on the CPU the tests only see
# traces without a performance record; here naive and expert of fused_add_rmsnorm are timed (with
# the CUDA-graph column) and every trace must validate against docs/schema/trace.schema.json.
# Needs Python's jsonschema on the GPU machine; without it the traces are left in OUT and the
# command that validates them elsewhere is printed.
# Usage: scripts/gpu/checks/schemas.sh CARRY OUT   (about 1 minute; SCHEMAS_BUDGET_S)
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
budget=${SCHEMAS_BUDGET_S:-110}
source "$(dirname "$0")/lib/steps.sh"

traces="$out/schemas_bench.jsonl"
step bench 90 "$d2k" bench --task fused_add_rmsnorm --targets naive,expert --graph --quiet --json "$traces" \
  && pass "fused_add_rmsnorm bench (naive, expert, graph column)" || fail "fused_add_rmsnorm bench (see bench.log)"
validate=(python3 tests/unit/schema/schema_test.py traces --schemas docs/schema "$traces")
if python3 -c "from jsonschema import Draft202012Validator" 2>/dev/null; then
  if "${validate[@]}" > "$out/schemas_validate.log" 2>&1; then pass "every trace validates against trace.schema.json"
  else fail "traces do not validate (see schemas_validate.log)"; fi
  tail -3 "$out/schemas_validate.log"
else
  echo "SKIP no Python jsonschema here: validate the returned traces with: ${validate[*]/#$out/OUT}"
fi
grep -c '"performance"' "$traces" 2>/dev/null | sed 's/^/timed traces: /'
exit "$fails"
