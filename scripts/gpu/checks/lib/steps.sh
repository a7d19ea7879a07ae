# Sourced by the check scripts after they set `out` (the log folder) and `budget` (seconds for the
# whole script): PASS/FAIL lines, counted in $fails (the script's exit status), and step, which
# runs a command under min(SECONDS, what is left of the budget) with its output in $out/NAME.log.
# D2K_CHECK_STEPS=name,name...: run only the named steps (a first look at a new task: correctness
# steps before the timing ones); the others print "not selected" and return 125, and the task
# steps below print no PASS/FAIL line for a step that was not selected.
# The task steps below (one implementation each, shared by the t-*.sh scripts) also need $task
# (a folder of dataset/, read from the current directory), $d2k and $carry (impl/ of the build).
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# selected NAME: whether D2K_CHECK_STEPS (unset: every step) selects step NAME.
selected() { [ -z "${D2K_CHECK_STEPS:-}" ] || [[ ",$D2K_CHECK_STEPS," == *",$1,"* ]]; }
step() {  # step NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  if ! selected "$name"; then echo "== $name not selected (D2K_CHECK_STEPS)"; return 125; fi
  local left=$((budget - SECONDS))
  [ "$left" -lt "$secs" ] && secs=$left
  if [ "$secs" -lt 5 ]; then echo "== $name skipped: budget spent"; return 124; fi
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc wall_s=$((SECONDS - t0))"
  return $rc
}

# workload_uuids ROLE [PATTERN]: the comma-separated uuids of the workloads of dataset/$task/
# workloads.jsonl whose role is ROLE (check, bench) and whose line matches PATTERN (a grep basic
# regular expression over the whole line: uuid, axes, description; empty: every one). Nothing
# matched is an empty string; a task without workloads.jsonl is an error naming the file.
workload_uuids() {
  local role=$1 pattern=${2:-} file=dataset/$task/workloads.jsonl
  if [ ! -f "$file" ]; then echo "workload_uuids: no $file" >&2; return 1; fi
  grep "\"role\": \"$role\"" "$file" | grep -- "$pattern" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}

# detect_torch [venv]: sets py (the Python of the PyTorch targets and the golden cross-checks),
# have_torch (1 or 0) and torch (",torch_eager" or "", appended to a bench step's targets). With
# `venv`, the machine's torch environment (/opt/torch/.venv) where there is one, exported as
# D2K_PYTHON with the shim folder, so that d2k's PyTorch targets run in it too.
detect_torch() {
  if [ "${1:-}" = venv ]; then
    [ -x /opt/torch/.venv/bin/python3 ] && export D2K_PYTHON=/opt/torch/.venv/bin/python3
    export D2K_PYTHON_SHIM_DIR="$PWD/src/tracks/python"
  fi
  py=${D2K_PYTHON:-python3}
  have_torch=0 torch=""
  if "$py" -c "import torch" 2> /dev/null; then
    have_torch=1 torch=",torch_eager"
  else
    echo "SKIP torch_eager: no torch for $py"
  fi
}

# validate_step [SECONDS]: `d2k tasks validate` of the task.
validate_step() {
  selected validate || { echo "== validate not selected (D2K_CHECK_STEPS)"; return 125; }
  step validate "${1:-10}" "$d2k" tasks validate "$task" && pass validate || fail validate
}

# show_table LOG [LINES]: the last LINES (default 10) lines of a bench log that are not per-check
# rows (the bench rows and the summary), cut to 220 columns.
show_table() {
  grep -v " check \|hidden:" "$1" | cut -c1-220 | tail -"${2:-10}"
}

# bench_step [OPTIONS] NAME SECONDS TARGETS WORKLOADS [ARGS...]: `d2k bench` of TARGETS on
# WORKLOADS (comma-separated uuids; empty: every workload of the task) as step NAME, ARGS passed
# on, the traces in $out/STEM.jsonl and the table in $out/STEM.md; PASS when d2k exits 0 (every
# target PASSED), then the tail of the table. Options:
#   --files STEM   output stem (default NAME; the published results cite some stems)
#   --pass MSG     the PASS line (default "NAME: every target PASSED (TARGETS)"; "": none)
#   --fail MSG     the FAIL line (default "NAME (see NAME.log)")
#   --show N       lines of the table shown (default 10; 0: none)
# Returns d2k's exit status.
bench_step() {
  local stem="" pmsg=$'\x01' fmsg="" show=10
  while [[ ${1:-} == --* ]]; do
    case $1 in
      --files) stem=$2 ;;
      --pass) pmsg=$2 ;;
      --fail) fmsg=$2 ;;
      --show) show=$2 ;;
      *) echo "bench_step: unknown option $1" >&2; return 2 ;;
    esac
    shift 2
  done
  local name=$1 secs=$2 targets=$3 workloads=$4
  shift 4
  stem=${stem:-$name}
  [ "$pmsg" = $'\x01' ] && pmsg="$name: every target PASSED ($targets)"
  local wl=()
  [ -n "$workloads" ] && wl=(--workloads "$workloads")
  selected "$name" || { echo "== $name not selected (D2K_CHECK_STEPS)"; return 125; }
  step "$name" "$secs" "$d2k" bench --task "$task" --targets "$targets" "${wl[@]}" \
    --json "$out/$stem.jsonl" --markdown "$out/$stem.md" "$@"
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    [ -n "$pmsg" ] && pass "$pmsg"
  else
    fail "${fmsg:-$name (see $name.log)}"
  fi
  [ "$show" -gt 0 ] && [ -f "$out/$name.log" ] && show_table "$out/$name.log" "$show"
  return $rc
}

# built_variants: the names of the expert variants built beside the expert (impl/$task/
# expert_NAME.so of the carry, one `// %VARIANT%` line of expert.cu each), one a line.
built_variants() {
  (cd "$carry/impl/$task" 2> /dev/null && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
}

# variants_step [--only] [--with TARGETS] [bench_step OPTIONS] SECONDS WORKLOADS [ARGS...]:
# bench_step `variants` of the expert and every built variant (expert:NAME; --only: the variants
# without the expert; --with: more targets in the same run, e.g. the library a bar is read against),
# default PASS line "variants: every variant PASSED". Sets $variants (the names). A build without
# variants (-DD2K_EXPERT_VARIANTS=OFF) is a FAIL.
variants_step() {
  local only=0 with="" opts=()
  while [[ ${1:-} == --* ]]; do
    case $1 in
      --only) only=1; shift ;;
      --with) with=$2; shift 2 ;;
      *) opts+=("$1" "$2"); shift 2 ;;
    esac
  done
  local secs=$1 workloads=$2
  shift 2
  variants=$(built_variants)
  selected variants || { echo "== variants not selected (D2K_CHECK_STEPS)"; return 125; }
  if [ -z "$variants" ]; then
    fail "no expert variants built under $carry/impl/$task"
    return 1
  fi
  local targets v
  [ "$only" = 0 ] && targets=expert
  [ -n "$with" ] && targets+=${targets:+,}$with
  for v in $variants; do targets+=${targets:+,}expert:$v; done
  bench_step --pass "variants: every variant PASSED" "${opts[@]}" variants "$secs" "$targets" "$workloads" "$@"
}

# golden_step [OPTIONS] SECONDS WORKLOADS SCRIPT [ARGS...]: the golden cross-check. `d2k check
# --dump` of the expert on WORKLOADS (empty: every check workload) writes inputs and golden
# outputs to $out/dump (a dump an earlier step left there, e.g. a sanitizer run with --dump, is
# used as it is); SCRIPT DUMP ARGS... (a t-*/golden_check.py: its task's float64 PyTorch reference
# on lib/golden.py, which reads the dump and prints the verdicts) recomputes them under $py (step
# `golden`); the
# .npy files are removed after (golden.log keeps the verdicts). Needs detect_torch: no torch is a
# SKIP. Options:
#   --dump-s N   seconds of the dump step (default SECONDS)
#   --pass MSG   what the PASS line adds to "golden cross-check" (e.g. "vs PyTorch float64")
#   --show N     lines of golden.log shown (default 8)
golden_step() {
  local dsecs="" what="" show=8
  while [[ ${1:-} == --* ]]; do
    case $1 in
      --dump-s) dsecs=$2 ;;
      --pass) what=$2 ;;
      --show) show=$2 ;;
      *) echo "golden_step: unknown option $1" >&2; return 2 ;;
    esac
    shift 2
  done
  local secs=$1 workloads=$2 script=$3
  shift 3
  if ! selected golden; then
    echo "== golden not selected (D2K_CHECK_STEPS)"; rm -rf "$out/dump"; return 125
  fi
  if [ "${have_torch:-0}" != 1 ]; then
    echo "SKIP golden cross-check: no torch for ${py:-python3}"
    rm -rf "$out/dump"
    return 0
  fi
  if [ ! -d "$out/dump" ]; then
    local wl=()
    [ -n "$workloads" ] && wl=(--workloads "$workloads")
    # the dump belongs to the golden step: selecting `golden` selects it too
    D2K_CHECK_STEPS="" step dump "${dsecs:-$secs}" "$d2k" check --task "$task" --impl expert "${wl[@]}" --quiet --rounds 1 \
      --dump "$out/dump"
  fi
  local rc=0
  step golden "$secs" "$py" "$script" "$out/dump" "$@" && pass "golden cross-check${what:+ $what}" ||
    { rc=1; fail "golden cross-check (see golden.log)"; }
  [ -f "$out/golden.log" ] && tail -"$show" "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload (hundreds of MB for the largest); golden.log keeps the verdicts
  return $rc
}

# sanitize [--impl IMPL] [--name STEP] [--exclude KERNEL_SUBSTRING] TOOL SECONDS WORKLOADS [ARGS...]: `d2k check` of the task's
# expert (or IMPL, e.g. expert:NAME: step TOOL_NAME; --name: step STEP, e.g. for a bench workload,
# which `d2k check` runs once against naive's outputs) under compute-sanitizer TOOL (memcheck, racecheck), in
# d2k's own process (--isolation none) so that the sanitizer sees the kernels. PASS only when the
# tool exits 0 and its summary says 0 errors or 0 hazards; a machine without compute-sanitizer is
# a FAIL, not a skip. Needs $d2k and $task.
sanitize() {
  local impl=expert step_name="" exclude=()
  while [[ ${1:-} == --impl || ${1:-} == --name || ${1:-} == --exclude ]]; do
    case $1 in
      --impl) impl=$2 ;;
      --name) step_name=$2 ;;
      # Kernels left out of the check by name substring: the trusted naive runs in the same
      # process on every check workload, and a vendor kernel of its (cuBLAS's nvjet split-K
      # GEMMs) draws racecheck reports that say nothing about the implementation under test.
      --exclude) exclude=(--kernel-name-exclude "kns=$2") ;;
    esac
    shift 2
  done
  local tool=$1 secs=$2 workloads=$3
  shift 3
  local name=$tool
  [ "$impl" != expert ] && name=${tool}_${impl#expert:}
  [ -n "$step_name" ] && name=$step_name
  selected "$name" || { echo "== $name not selected (D2K_CHECK_STEPS)"; return 125; }
  local san
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ ! -x "$san" ]; then fail "$name: no compute-sanitizer"; return 1; fi
  step "$name" "$secs" "$san" --tool "$tool" "${exclude[@]}" --error-exitcode 99 "$d2k" check --task "$task" --impl "$impl" \
    --isolation none --rounds 1 --workloads "$workloads" --quiet "$@"
  local rc=$?
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/$name.log" 2> /dev/null | tail -2
  if [ "$rc" -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards" "$out/$name.log"; then
    pass "$tool: $impl clean on $(echo "$workloads" | tr ',' '\n' | wc -l) check workload(s)"
  else
    fail "$name rc=$rc (see $name.log)"
    return 1
  fi
}

# starter_verdict SECONDS [ARGS...]: the task's cuda starter compiles, runs and is judged
# INCORRECT_* (it never crashes the evaluator and never passes). Needs $d2k and $task.
starter_verdict() {
  local secs=$1
  shift
  selected starter || { echo "== starter not selected (D2K_CHECK_STEPS)"; return 125; }
  step starter "$secs" "$d2k" bench --task "$task" --targets solution --solution-dir "dataset/$task/starter/cuda" \
    --quiet "$@"
  grep -q "INCORRECT_" "$out/starter.log" 2> /dev/null && pass "starter fails with INCORRECT_*" ||
    fail "starter verdict (see starter.log)"
}

# sass_counts [--so NAME] REGEX [REQUIRED [FORBIDDEN]]: the SASS of impl/$task/NAME.so (default
# expert) in $out/NAME.sass and one line "NAME SASS: INSNxCOUNT ..." of the instructions REGEX (grep
# -E) names: what design.json's "recognise" fields say the kernel is built from. REQUIRED: regexes
# separated by spaces, each of which must occur (e.g. "HGMMA UTMALDG"); FORBIDDEN: one that must
# not (e.g. local-memory spills); either gives a PASS/FAIL line. A missing library is a FAIL for
# the expert or where something is required, else a SKIP (a variant not built); so is a missing
# cuobjdump where something is required (else a SKIP).
sass_counts() {
  local so=expert
  if [ "${1:-}" = --so ]; then so=$2; shift 2; fi
  local regex=$1 required=${2:-} forbidden=${3:-}
  local lib=$carry/impl/$task/$so.so sass=$out/$so.sass
  local objdump
  objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  if [ ! -x "$objdump" ]; then
    [ -n "$required$forbidden" ] && fail "$so SASS: no cuobjdump" || echo "SKIP $so SASS: no cuobjdump"
    return 0
  fi
  if [ ! -f "$lib" ]; then
    if [ "$so" = expert ] || [ -n "$required$forbidden" ]; then fail "$so SASS: no $lib"; else echo "SKIP $so SASS: not built"; fi
    return 0
  fi
  "$objdump" --dump-sass "$lib" > "$sass" 2>&1
  echo "$so SASS:" $(grep -oE "$regex" "$sass" | sort | uniq -c | awk '{print $2"x"$1}')
  [ -z "$required$forbidden" ] && return 0
  local missing="" r
  for r in $required; do grep -qE "$r" "$sass" || missing+=" $r"; done
  if [ -n "$missing" ]; then
    fail "$so SASS: no$missing (see $so.sass)"
  elif [ -n "$forbidden" ] && grep -qE "$forbidden" "$sass"; then
    fail "$so SASS has $forbidden (see $so.sass)"
  else
    pass "$so SASS has ${required// /, }${forbidden:+, no $forbidden}"
  fi
}

# ncu_kernels [--impl IMPL] [--name NAME] [--sections "S1 S2..."] [--launches N] [--show REGEX]
#   SECONDS KERNEL_REGEX WORKLOAD: Nsight Compute's counters of each kernel of one `d2k check` call
# of IMPL on one workload (in d2k's process: --isolation none), without changing the clocks and
# with caches flushed before each kernel. By default: duration, DRAM bytes read and written, L2
# write sectors of the first 20 launches of the regex (one call of every task so far): where the
# time of a call of several kernels goes, which d2k's timer (one time per call) does not say.
# --sections collects those sections instead of the four metrics (e.g. SpeedOfLight
# WarpStateStats), --launches bounds the launches profiled, --show picks the printed columns (a
# regex on the metric names; with WarpStateStats the eight largest stall columns are printed too).
# A step of its own that runs only where D2K_CHECK_STEPS names it (default name ncu, ncu_VARIANT
# for expert:VARIANT). The counters are the result, not the verdict under the profiler: a row of
# the regex is a PASS; every counter stays in NAME.csv.
ncu_kernels() {
  local impl=expert step_name="" sections="" launches=20
  local show="^(gpu__time_duration|dram__bytes_read|dram__bytes_write|lts__t_sectors_op_write)\\.sum$"
  while [[ ${1:-} == --* ]]; do
    case $1 in
      --impl) impl=$2 ;;
      --name) step_name=$2 ;;
      --sections) sections=$2 ;;
      --launches) launches=$2 ;;
      --show) show=$2 ;;
    esac
    shift 2
  done
  local secs=$1 regex=$2 workload=$3 name=ncu ncu what=() sec
  [ "$impl" != expert ] && name=ncu_${impl#expert:}
  [ -n "$step_name" ] && name=$step_name
  [ -n "${D2K_CHECK_STEPS:-}" ] && selected "$name" || { echo "== $name not selected (D2K_CHECK_STEPS)"; return 125; }
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
  if [ -z "$ncu" ]; then fail "$name: no ncu"; return 1; fi
  if [ -n "$sections" ]; then
    for sec in $sections; do what+=(--section "$sec"); done
  else
    what=(--metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum)
  fi
  step "$name" "$secs" "$ncu" --clock-control none --cache-control all --kernel-name "regex:$regex" \
    --launch-count "$launches" "${what[@]}" --csv --page raw --print-units base --log-file "$out/$name.csv" \
    "$d2k" check --task "$task" --impl "$impl" --isolation none --rounds 1 --bench-rounds 1 \
    --workloads "$workload" --quiet
  local rc=$?
  python3 - "$out/$name.csv" "$regex" "$show" << 'PY' 2> /dev/null | tee -a "$out/$name.log"
import csv, re, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next((r for r in rows if "Kernel Name" in r), None)
show = re.compile(sys.argv[3])
for r in rows if head else []:
    if len(r) != len(head) or r is head or not r[0].isdigit():
        continue
    vals = dict(zip(head, r))
    k = re.search(sys.argv[2] + r"\w*", vals["Kernel Name"])
    kernel = k.group(0) if k else "?"
    print("ncu", kernel, " ".join(f"{h}={v}" for h, v in vals.items() if show.search(h)))
    stalls = sorted(((float(v), h) for h, v in vals.items()
                     if h.startswith("smsp__average_warp_latency_issue_stalled") and re.match(r"^[0-9.]+$", v or "")),
                    reverse=True)[:8]
    for v, h in stalls:
        print("ncu stall", kernel, h, v)
PY
  if grep -qE "$regex" "$out/$name.csv" 2> /dev/null; then
    pass "$name: counters of $impl on $workload (d2k rc=$rc; see $name.csv)"
  else
    fail "$name rc=$rc (see $name.log, $name.csv)"
  fi
}
