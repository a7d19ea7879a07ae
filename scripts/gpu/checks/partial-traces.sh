#!/usr/bin/env bash
# A cut bench keeps what it finished (branch partial-traces): `d2k bench --json F` appends each
# GPU record the moment its target finished the workload, marked "partial": true, and rewrites F
# with the final records when the run ends (docs/report.md, "Trace files"). On the CPU the tests
# only see host records; here (1) a bench of fused_add_rmsnorm is killed with SIGTERM as soon as
# its first timed partial record is on disk: the file must hold whole lines, at least one PASSED record
# with a performance record, marked partial and without speed-ups; (2) the same bench run to its
# end: no partial line left, the speed-ups written, no F.tmp left behind.
# Usage: scripts/gpu/checks/partial-traces.sh CARRY OUT   (about 1-2 minutes; PARTIAL_BUDGET_S)
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
budget=${PARTIAL_BUDGET_S:-115}
task=fused_add_rmsnorm
source "$(dirname "$0")/lib/steps.sh"
wl="$(workload_uuids check | cut -d, -f1),$(workload_uuids bench | cut -d, -f1-3)"
bench=("$d2k" bench --task "$task" --targets naive,expert --workloads "$wl" --quiet --max-time 2)

# (1) cut: SIGTERM once the first partial record with a time is on disk (the check workloads'
# records come first and carry none).
cut="$out/cut.jsonl"
rm -f "$cut"
"${bench[@]}" --json "$cut" > "$out/cut.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep '"partial":true' "$cut" 2>/dev/null | grep -q '"median_us"' && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$pid" 2>/dev/null
wait "$pid"; rc=$?
echo "== cut rc=$rc (143: ended by SIGTERM)"
[ "$rc" -eq 143 ] && pass "the bench was cut by SIGTERM while running" || fail "the bench was not cut while running (rc=$rc, see cut.log)"
python3 - "$cut" <<'PY' && pass "the cut file keeps whole partial GPU records" || fail "the cut file (see above)"
import json, sys
text = open(sys.argv[1]).read()
recs = [json.loads(l) for l in text.splitlines() if l.strip()]  # a torn line fails here
part = [r for r in recs if r.get("partial") and r["status"] == "PASSED" and r.get("performance")]
print(f"cut file: {len(recs)} record(s), {len(part)} partial PASSED with a time")
ok = bool(part) and text.endswith("\n") and all("speedup_vs_naive" not in r.get("roofline", {}) for r in part)
sys.exit(0 if ok else 1)
PY

# (2) the same bench to its end: the final rewrite.
full="$out/full.jsonl"
step full 80 "${bench[@]}" --json "$full" && pass "the full bench ran" || fail "the full bench (see full.log)"
python3 - "$full" <<'PY' && pass "the finished file holds final records only, speed-ups written" || fail "the finished file (see above)"
import json, os, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
partial = sum(bool(r.get("partial")) for r in recs)
timed = [r for r in recs if r.get("performance") and r["workload"]["role"] == "bench"]
scored = sum("speedup_vs_naive" in r.get("roofline", {}) for r in timed)
print(f"full file: {len(recs)} record(s), {partial} partial, {scored}/{len(timed)} timed with speedup_vs_naive")
sys.exit(0 if recs and partial == 0 and timed and scored == len(timed) and not os.path.exists(sys.argv[1] + ".tmp") else 1)
PY
exit "$fails"
