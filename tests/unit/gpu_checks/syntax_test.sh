#!/usr/bin/env bash
# Every GPU check script parses (`bash -n`): they run only on the GPU machine, where a syntax error
# would cost a session. The per-task scripts (t-*.sh) take their repeated steps from lib/steps.sh
# rather than a copy of their own.
# Usage: syntax_test.sh SOURCE_DIR
set -uo pipefail
cd "$1/scripts/gpu/checks" || exit 1
bad=0
n=0
for f in *.sh lib/*.sh; do
  n=$((n + 1))
  if ! err=$(bash -n "$f" 2>&1); then echo "FAIL $f: $err"; bad=$((bad + 1)); fi
done
[ "$n" -ge 20 ] || { echo "FAIL only $n scripts found under scripts/gpu/checks"; bad=$((bad + 1)); }
# Code lines (comments stripped) of a task script that re-implement a lib step.
for f in t-*.sh; do
  grep -q 'source "$(dirname "$0")/lib/steps.sh"' "$f" || { echo "FAIL $f does not source lib/steps.sh"; bad=$((bad + 1)); }
  code=$(sed 's/^[[:space:]]*#.*//' "$f")
  for pat in 'uuids() {' 'cuobjdump' 'compute-sanitizer' 'import torch' 'ls expert_' '--dump-sass' '--solution-dir'; do
    if grep -qF -- "$pat" <<< "$code"; then echo "FAIL $f re-implements a lib step ('$pat'): use lib/steps.sh"; bad=$((bad + 1)); fi
  done
done
# The Python helpers parse too (ast, so that nothing is written beside them), and every golden
# cross-check reads its dump through lib/golden.py rather than a copy of its own.
py=0
for f in lib/*.py t-*/*.py; do
  py=$((py + 1))
  if ! err=$(python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f" 2>&1); then
    echo "FAIL $f: $err"; bad=$((bad + 1))
  fi
done
for f in t-*/golden_check.py; do
  grep -q '^import golden' "$f" || { echo "FAIL $f does not import lib/golden.py"; bad=$((bad + 1)); }
  grep -qE 'os\.listdir|np\.load\(|argparse' "$f" && { echo "FAIL $f re-implements lib/golden.py (listing, loading or arguments)"; bad=$((bad + 1)); }
done
[ "$bad" -eq 0 ] && echo "OK: $n check scripts and $py Python files parse; the task scripts use lib/steps.sh, the golden checks lib/golden.py"
exit "$bad"
