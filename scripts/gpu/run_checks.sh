#!/usr/bin/env bash
# Runs every check script in CHECKS_DIR (default scripts/gpu/checks/*.sh: each area adds its own)
# as `bash SCRIPT CARRY OUT/checks/NAME`, one at a time, each under a wall-clock deadline, and ends
# with one summary line per script: PASS (exit 0), FAIL rc=N with the script's last output line,
# or TIMEOUT. Exit status: the number of scripts that did not pass (0: all passed).
# Usage (repository root, on the GPU machine): scripts/gpu/run_checks.sh CARRY OUT [CHECKS_DIR]
#   CHECK_DEADLINE_S=150   the deadline of one script, in seconds
set -uo pipefail
carry=$1; out=$2; dir=${3:-$(dirname "$0")/checks}
deadline=${CHECK_DEADLINE_S:-150}
mkdir -p "$out/checks"
summary=(); failed=0
for f in "$dir"/*.sh; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .sh)
  log=$out/checks/$name.log
  mkdir -p "$out/checks/$name"
  t0=$SECONDS
  timeout --kill-after=10 "$deadline" bash "$f" "$carry" "$out/checks/$name" > "$log" 2>&1
  rc=$?
  wall=$((SECONDS - t0))
  last=$(grep -v '^[[:space:]]*$' "$log" | tail -1 | cut -c1-120)
  case $rc in
    0) summary+=("check $name: PASS wall_s=$wall") ;;
    124|137) summary+=("check $name: TIMEOUT after ${deadline}s (log checks/$name.log)"); failed=$((failed + 1)) ;;
    *) summary+=("check $name: FAIL rc=$rc wall_s=$wall: $last"); failed=$((failed + 1)) ;;
  esac
  echo "== check $name rc=$rc wall_s=$wall"
  grep -iE "pass|fail" "$log" | head -20
done
echo "== checks summary"
[ ${#summary[@]} -eq 0 ] && echo "no check scripts in $dir"
for line in "${summary[@]}"; do echo "$line"; done
exit "$failed"
