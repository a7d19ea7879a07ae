#!/usr/bin/env bash
# GPU check of the evaluation service (docs/service.md): d2k serve + d2k worker on GPU 0 with a
# SQLite queue, then d2k submit of the fused_add_rmsnorm cuda starter and of the expert; each
# verdict must come back with the bench table, and the wall time from submit to verdict is set
# beside `d2k bench` of the same targets alone (the service's overhead).
# Usage (repository root): scripts/gpu/checks/service.sh CARRY OUT   (about 100 s)
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
pass=0; fail=0
result() {  # result NAME RC
  if [ "$2" -eq 0 ]; then echo "PASS $1"; pass=$((pass + 1)); else echo "FAIL $1 (rc=$2)"; fail=$((fail + 1)); fi
}
now() { date +%s.%N; }
svc="$out/service"; rm -rf "$svc"; mkdir -p "$svc"
port=18390
"$d2k" serve --db "$svc/queue.sqlite" --listen 127.0.0.1:$port --gpus 0 --token-file "$svc/token" \
  --work-dir "$svc/jobs" --poll 0.2 > "$svc/serve.log" 2>&1 &
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null; wait $serve_pid 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/healthz" > /dev/null; result "d2k serve --gpus 0 answers /healthz" $?

starter=dataset/fused_add_rmsnorm/starter/cuda
submit() {  # submit NAME ARGS...: d2k submit, its wall time into $svc/NAME.wall
  local name=$1; shift
  local t0; t0=$(now)
  timeout 50 "$d2k" submit "$@" --task fused_add_rmsnorm --server "http://127.0.0.1:$port" \
    --token-file "$svc/token" --max-time 2 > "$svc/$name.out" 2> "$svc/$name.err"
  local rc=$?
  awk -v a="$(now)" -v b="$t0" 'BEGIN{printf "%.1f\n", a - b}' > "$svc/$name.wall"
  # A verdict came back (0 passed, 1 a record failed) and the bench table was printed.
  { [ $rc -eq 0 ] || [ $rc -eq 1 ]; } && grep -q "fused_add_rmsnorm" "$svc/$name.out"
  result "submit $name: verdict $(grep -o 'ev_[0-9a-f]* [A-Z_]*' "$svc/$name.err" | tail -1) (exit $rc) in $(cat "$svc/$name.wall") s" $?
  [ $rc -le 1 ] || tail -20 "$svc/$name.err"
}
bench() {  # bench NAME ARGS...: d2k bench alone, its wall time into $svc/NAME.bench_wall
  local name=$1; shift
  local t0; t0=$(now)
  timeout 50 "$d2k" bench --task fused_add_rmsnorm --quiet --max-time 2 "$@" > "$svc/$name.bench" 2>&1
  local rc=$?
  awk -v a="$(now)" -v b="$t0" 'BEGIN{printf "%.1f\n", a - b}' > "$svc/$name.bench_wall"
  { [ $rc -eq 0 ] || [ $rc -eq 1 ]; }; result "bench $name alone (exit $rc) in $(cat "$svc/$name.bench_wall") s" $?
}
submit starter "$starter" --targets solution
submit expert --targets expert
bench starter --targets solution --solution-dir "$starter"
bench expert --targets expert
cat "$svc/starter.out"
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^d2k_(jobs|evaluation_seconds_(sum|count)|retries)' > "$svc/metrics.txt"
cat "$svc/metrics.txt"
for n in starter expert; do
  echo "wall $n: submit->verdict $(cat "$svc/$n.wall") s, d2k bench alone $(cat "$svc/$n.bench_wall") s"
done
echo "service checks: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
