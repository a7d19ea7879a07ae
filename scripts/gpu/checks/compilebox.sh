#!/usr/bin/env bash
# The compile sandbox on the GPU machine, from a packed build: the solution include folder is
# found beside the binary (no build-time path), bubblewrap binds the canonical CUDA folder
# (/usr/local/cuda is a link there), the sandbox is named, the memory limit stops a bomb, and a
# compiled solution runs. Usage: scripts/gpu/checks/compilebox.sh CARRY OUT (repository root).
set -uo pipefail
source scripts/gpu/env.sh "$1" "$2"
log="$out/compilebox"; mkdir -p "$log"
pass=0; fail=0
check() {  # check NAME COMMAND...: runs it, logs it, prints a pass/fail line
  local name=$1; shift
  if "$@" >"$log/$name.log" 2>&1; then echo "PASS $name"; pass=$((pass + 1));
  else echo "FAIL $name (log: $log/$name.log)"; tail -5 "$log/$name.log" | sed 's/^/    /'; fail=$((fail + 1)); fi
}
d2k="$carry/d2k"
# 1. include/ beside the binary: the packed build must carry it (scripts/gpu/pack.sh).
check include_carried test -f "$carry/include/d2k/solution.h"
# 2. A solution compiles with no build-time include path reachable, in the sandbox d2k picks;
#    --verbose names it (bwrap where installed: /usr/local/cuda -> cuda-13.0 must bind).
sol=$(mktemp -d); cp -r tests/fixtures/solutions/vector_add/. "$sol/"; chmod -R o+rX "$sol"
chmod o+x "$(dirname "$sol")"
check compile_verbose bash -c "env -u D2K_INCLUDE_DIR '$d2k' validate submission '$sol' --verbose | tee /dev/stderr | grep -q '\"sandbox\":\"\(bwrap\|mount_namespace\)\"'"
# 3. A cache hit still names the sandbox the entry was built in.
check compile_cached bash -c "'$d2k' validate submission '$sol' --verbose | grep -q 'cache_hit\":true'"
# 4. A memory bomb is the candidate's COMPILE_ERROR(resource_limit: memory), within the deadline.
bomb=$(mktemp -d); printf '#include "/dev/zero"\n' > "$bomb/solution.cu"; chmod -R o+rX "$bomb"
check memory_limit bash -c "timeout 100 '$d2k' validate submission '$bomb' 2>&1 | tee /dev/stderr | grep -q 'COMPILE_ERROR(resource_limit: memory)'"
# 5. A host file cannot be included (its bytes never reach the log).
leak=$(mktemp -d); printf '#include "%s/README.md"\n' "$PWD" > "$leak/solution.cu"; chmod -R o+rX "$leak"
check host_file_hidden bash -c "! '$d2k' validate submission '$leak' 2>&1 | tee /dev/stderr | grep -q 'D2K-Bench'"
# 6. A solution compiled in the sandbox runs and passes on the GPU (the task's naive, as a folder).
run=$(mktemp -d); cp dataset/fused_add_rmsnorm/naive.cu "$run/solution.cu"; chmod -R o+rX "$run"
check solution_runs timeout 110 "$d2k" check --task fused_add_rmsnorm --impl "$run" --quiet
rm -rf "$sol" "$bomb" "$leak" "$run"
echo "compilebox: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
