#!/usr/bin/env bash
# The report on real traces (#22): a short bench on the H200 writes traces whose roofline record
# carries the cost and ceilings (flops, bytes, copy_bw, peaks); `d2k report` renders them with a
# roofline point per timed trace; compare, export and import run on them.
# Usage: scripts/gpu/checks/report.sh CARRY OUT (repository root). About 60 s.
set -uo pipefail
source scripts/gpu/env.sh "$1" "$2"
log="$out/report"; mkdir -p "$log"
pass=0; fail=0
check() {  # check NAME COMMAND...: runs it, logs it, prints a pass/fail line
  local name=$1; shift
  if "$@" >"$log/$name.log" 2>&1; then echo "PASS $name"; pass=$((pass + 1));
  else echo "FAIL $name (log: $log/$name.log)"; tail -5 "$log/$name.log" | sed 's/^/    /'; fail=$((fail + 1)); fi
}
d2k="$carry/d2k"
check calibrate timeout 100 "$d2k" calibrate
for r in a b; do
  check "bench_$r" timeout 100 "$d2k" bench --task fused_add_rmsnorm --targets naive,expert --quiet --max-time 0.3 \
    --json "$log/run_$r.jsonl"
done
# Every PASSED bench trace names its cost and ceilings.
check trace_has_cost python3 -c "
import json, sys
n = 0
for l in open('$log/run_a.jsonl'):
    t = json.loads(l)
    if t['status'] == 'PASSED' and 'performance' in t:
        r = t['roofline']; n += 1
        assert r['bytes'] > 0 and r['copy_bw'] > 1e12 and r['flops'].get('fp32', 0) > 0 and r['peaks']['fp32'] > 1e12, r
assert n >= 4, n
print(n, 'timed traces with cost and ceilings')"
check report "$d2k" report "$log/run_a.jsonl" "$log/run_b.jsonl" --html "$log/report.html" --markdown "$log/report.md"
check roofline_points python3 -c "
import json, re
page = open('$log/report.html').read()
n = sum(1 for f in ('a', 'b') for l in open(f'$log/run_{f}.jsonl') if json.loads(l)['status'] == 'PASSED' and 'performance' in json.loads(l))
m = re.search(r'<svg id=\"roofline-fused_add_rmsnorm\"[^>]*data-points=\"(\d+)\"', page)
assert m and int(m.group(1)) == n, (m and m.group(1), n)
print(n, 'points')"
check compare bash -c "'$d2k' report --compare '$log/run_a.jsonl' '$log/run_b.jsonl' | tee /dev/stderr | grep -Eq 'SAME|FASTER|SLOWER'"
check export_import bash -c "'$d2k' export --format flashinfer-trace '$log/run_a.jsonl' --out '$log/fi' && \
  '$d2k' import --format flashinfer-trace '$log/fi/traces/fused_add_rmsnorm.jsonl' --out '$log/back.jsonl' && \
  python3 -c \"import json; a=[json.loads(l) for l in open('$log/run_a.jsonl')]; b=[json.loads(l) for l in open('$log/back.jsonl')]; assert a == b, 'round trip differs'\""
echo "report: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
