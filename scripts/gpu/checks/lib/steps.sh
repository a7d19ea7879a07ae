# Sourced by the check scripts after they set `out` (the log folder) and `budget` (seconds for the
# whole script): PASS/FAIL lines, counted in $fails (the script's exit status), and step, which
# runs a command under min(SECONDS, what is left of the budget) with its output in $out/NAME.log.
# D2K_CHECK_STEPS=name,name...: run only the named steps (a first look at a new task: correctness
# steps before the timing ones); the others print "not selected" and return 125.
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  if [ -n "${D2K_CHECK_STEPS:-}" ] && [[ ",$D2K_CHECK_STEPS," != *",$name,"* ]]; then
    echo "== $name not selected (D2K_CHECK_STEPS)"; return 125
  fi
  local left=$((budget - SECONDS))
  [ "$left" -lt "$secs" ] && secs=$left
  if [ "$secs" -lt 5 ]; then echo "== $name skipped: budget spent"; return 124; fi
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc wall_s=$((SECONDS - t0))"
  return $rc
}

# sanitize TOOL SECONDS WORKLOADS [ARGS...]: `d2k check` of the task's expert under
# compute-sanitizer TOOL (memcheck, racecheck), in d2k's own process (--isolation none) so that the
# sanitizer sees the kernels. PASS only when the tool exits 0 and its summary says 0 errors or 0
# hazards; a machine without compute-sanitizer is a FAIL, not a skip. Needs $d2k and $task.
sanitize() {
  local tool=$1 secs=$2 workloads=$3
  shift 3
  local san
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ ! -x "$san" ]; then fail "$tool: no compute-sanitizer"; return 1; fi
  step "$tool" "$secs" "$san" --tool "$tool" --error-exitcode 99 "$d2k" check --task "$task" --impl expert \
    --isolation none --rounds 1 --workloads "$workloads" --quiet "$@"
  local rc=$?
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/$tool.log" | tail -2
  if [ "$rc" -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards" "$out/$tool.log"; then
    pass "$tool: expert clean on $(echo "$workloads" | tr ',' '\n' | wc -l) check workload(s)"
  else
    fail "$tool rc=$rc (see $tool.log)"
    return 1
  fi
}

# starter_verdict SECONDS [ARGS...]: the task's cuda starter compiles, runs and is judged
# INCORRECT_* (it never crashes the evaluator and never passes). Needs $d2k and $task.
starter_verdict() {
  local secs=$1
  shift
  step starter "$secs" "$d2k" bench --task "$task" --targets solution --solution-dir "dataset/$task/starter/cuda" \
    --quiet "$@"
  grep -q "INCORRECT_" "$out/starter.log" && pass "starter fails with INCORRECT_*" || fail "starter verdict (see starter.log)"
}
