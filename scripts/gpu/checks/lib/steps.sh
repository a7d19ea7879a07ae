# Sourced by the check scripts after they set `out` (the log folder) and `budget` (seconds for the
# whole script): PASS/FAIL lines, counted in $fails (the script's exit status), and step, which
# runs a command under min(SECONDS, what is left of the budget) with its output in $out/NAME.log.
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  local left=$((budget - SECONDS))
  [ "$left" -lt "$secs" ] && secs=$left
  if [ "$secs" -lt 5 ]; then echo "== $name skipped: budget spent"; return 124; fi
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc wall_s=$((SECONDS - t0))"
  return $rc
}
