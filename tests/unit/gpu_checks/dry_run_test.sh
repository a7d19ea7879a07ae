#!/usr/bin/env bash
# Every per-task GPU check script (scripts/gpu/checks/t-*.sh, task-*.sh of one task) run end to end on the host against
# stand-ins: a d2k that logs its calls and answers PASSED, a cuobjdump with a few instructions, a
# compute-sanitizer with a clean summary, a Python with torch that logs its calls. A script must
# finish without a shell error (unbound variable, unknown command or option), end with its
# "t-NAME: N failure(s)" line and exit with N, the number of its FAIL lines. flash_attention_forward
# must memcheck expert:mma_sync and judge the SASS of expert and expert_mma_sync.
# Runs in a copy of scripts/gpu/checks with a stub env.sh (the real one changes folder permissions).
# Usage: dry_run_test.sh SOURCE_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/root/scripts/gpu" "$w/root/src/tracks/python" "$w/bin" "$w/carry/impl"
cp -r "$src/scripts/gpu/checks" "$w/root/scripts/gpu/"
echo ': # stand-in for env.sh' > "$w/root/scripts/gpu/env.sh"
ln -s "$src/dataset" "$w/root/dataset"
cat > "$w/carry/d2k" << 'EOF'
#!/usr/bin/env bash
echo "d2k $*" >> "$DRY_LOG"
for ((i = 1; i <= $#; i++)); do [ "${!i}" = --dump ] && { j=$((i + 1)); mkdir -p "${!j}"; }; done
echo "| t | expert | t-bench-1 | PASSED |"
EOF
cat > "$w/bin/cuobjdump" << 'EOF'
#!/bin/sh
echo "cuobjdump $*" >> "$DRY_LOG"
case $2 in
  */expert.so) echo "HGMMA.64x128x16.F32.BF16 UTMALDG.2D SYNCS.ARRIVE.TRANS64" ;;
  *) echo "HMMA.16816.F32.BF16 LDSM.16.M88.4 LDGSTS.E.BYPASS.128" ;;
esac
EOF
cat > "$w/bin/compute-sanitizer" << 'EOF'
#!/bin/sh
echo "sanitizer $*" >> "$DRY_LOG"
shift 4
"$@"
echo "========= ERROR SUMMARY: 0 errors"
EOF
cat > "$w/bin/python3" << 'EOF'
#!/bin/sh
echo "python $*" >> "$DRY_LOG"
EOF
chmod +x "$w/carry/d2k" "$w/bin"/*
errors=0
bad() { echo "ERROR: $*"; errors=$((errors + 1)); }
cd "$w/root" || exit 1
n=0
for f in scripts/gpu/checks/t-*.sh scripts/gpu/checks/task-*.sh; do
  name=$(basename "$f" .sh)
  task=$(sed -n 's/^task=//p' "$f" | head -1)
  [[ $name == task-* && -z $task ]] && continue  # a script over several tasks (task-tpch.sh)
  [ -d "dataset/$task" ] || { bad "$name: task '$task' is not a dataset folder"; continue; }
  mkdir -p "$w/carry/impl/$task"
  touch "$w/carry/impl/$task/expert.so" "$w/carry/impl/$task/expert_mma_sync.so"
  export DRY_LOG=$w/$name.calls
  : > "$DRY_LOG"
  PATH="$w/bin:$PATH" timeout 60 bash "$f" "$w/carry" "$w/out/$name" > "$w/$name.log" 2>&1
  rc=$?
  n=$((n + 1))
  nfail=$(grep -c "^FAIL" "$w/$name.log")
  if grep -qiE "unbound variable|command not found|syntax error|unknown option|bad substitution" "$w/$name.log"; then
    bad "$name: shell error: $(grep -iE "unbound|not found|syntax|unknown option|bad substitution" "$w/$name.log" | head -2)"
  fi
  [ "$rc" -eq "$nfail" ] || bad "$name: exit status $rc, but $nfail FAIL line(s)"
  tail -1 "$w/$name.log" | grep -qx "$name: $nfail failure(s)" || bad "$name: last line '$(tail -1 "$w/$name.log")'"
  calls=("d2k tasks validate $task" "d2k bench --task $task" "cuobjdump --dump-sass")
  [[ $name == t-* ]] && calls+=("sanitizer --tool memcheck")
  for call in "${calls[@]}"; do
    grep -qF -- "$call" "$DRY_LOG" || bad "$name: never ran '$call'"
  done
  grep -q "^PASS validate" "$w/$name.log" || bad "$name: no PASS validate"
  # the first script with an error: its whole log
  [ "$errors" -gt 0 ] && [ ! -f "$w/shown" ] && { echo "--- $name.log"; cat "$w/$name.log"; touch "$w/shown"; }
done
[ "$n" -ge 20 ] || bad "only $n task check scripts ran"

log=$w/t-fa.log
grep -qF -- "--impl expert:mma_sync" "$w/t-fa.calls" || bad "t-fa: no check of expert:mma_sync"
grep -qx "PASS memcheck: expert:mma_sync clean on 3 check workload(s)" "$log" || bad "t-fa: no memcheck PASS for expert:mma_sync"
grep -qx "PASS expert SASS has HGMMA, UTMALDG, SYNCS" "$log" || bad "t-fa: expert SASS not judged on HGMMA, UTMALDG, SYNCS"
grep -qx "PASS expert_mma_sync SASS has HMMA, LDSM, LDGSTS" "$log" || bad "t-fa: expert_mma_sync SASS not judged on HMMA, LDSM, LDGSTS"
grep -q "wgmma" "$w/t-fa.calls" && bad "t-fa: still names a wgmma variant: $(grep wgmma "$w/t-fa.calls" | head -1)"

if [ "$errors" -eq 0 ]; then echo "OK: $n task check scripts ran end to end against stand-ins"; fi
exit "$errors"
