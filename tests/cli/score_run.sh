#!/usr/bin/env bash
# score_run.sh D2K FAKE_JUDGE_SERVER SOURCE_DIR: `d2k score --run` and `d2k design draft` end to
# end against the fake judge (tests/unit/capability/fake_judge.h), without a key or a network.
# A run folder with rmsnorm's expert (its own design and code) and naive baseline; the judge's
# fixture encodes "expert 75-100, naive <= 25"; score.json per attempt and score.json + score.md
# for the run must say so, and a second scoring must make no judge call (the cache).
set -euo pipefail
d2k=$1 server=$2 src=$3
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

start_judge() {  # FIXTURE
  [ -n "$pid" ] && { kill "$pid"; wait "$pid" 2>/dev/null || true; }
  rm -f "$work/port"
  "$server" "$1" "$work/port" 120 & pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
  [ -s "$work/port" ] || fail "the fake judge did not start"
  cat > "$work/judge.toml" <<TOML
[judge]
api = "openai"
base_url = "http://127.0.0.1:$(cat "$work/port")/v1"
model = "fake"
api_key_env = "D2K_TEST_JUDGE_KEY"
backoff_s = 0.0
cache_dir = "$work/cache-$(basename "$1" .json)"
TOML
}
export D2K_TEST_JUDGE_KEY=test-key

# --- the run folder ---
task=fused_add_rmsnorm
for which in expert naive; do
  level=$([ $which = expert ] && echo design || echo baseline)
  ws="$work/runs/r1/attempts/${task}__cuda__${level}__1/workspace"
  mkdir -p "$ws/solution"
  cp "$src/dataset/$task/$which.cu" "$ws/solution/solution.cu"
  printf '{"task":"%s","track":"cuda","level":"%s"}\n' $task $level > "$ws/manifest.json"
  if [ $which = expert ]; then
    python3 - "$src/dataset/$task/design.json" > "$ws/design.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for n, k in enumerate([k for k in d if k.startswith("level_")], 1):
    print(f"## L{n}\n")
    for it in d[k]: print(f"- {it['id']}: {it['statement']}")
    print()
PY
  else
    printf '## L1\n\nThree kernels: add, reduce, scale.\n' > "$ws/design.md"
  fi
done

start_judge "$src/tests/fixtures/judge/pilots.json"
out=$("$d2k" --dataset "$src/dataset" score --run r1 --runs-dir "$work/runs" --judge "$work/judge.toml" --no-build --samples 1)
echo "$out"
[ -s "$work/runs/r1/score.json" ] && [ -s "$work/runs/r1/score.md" ] || fail "no run score.json/score.md"
for a in "$work"/runs/r1/attempts/*; do [ -s "$a/score.json" ] || fail "no score.json in $a"; done
python3 - "$work/runs/r1/score.json" <<'PY' || fail "the run summary does not say expert >= 75, naive <= 25"
import json, sys
s = json.load(open(sys.argv[1]))
by = {a["level"]: a for a in s["attempts"]}
assert all(v >= 75 for v in by["design"]["design_levels"] + by["design"]["impl_levels"]), by["design"]
assert all(v <= 25 for v in by["baseline"]["design_levels"] + by["baseline"]["impl_levels"]), by["baseline"]
assert s["overall"]["attempts"] == 2 and s["judge"]["calls"] == 12, s["overall"]
PY
grep -q "| fused_add_rmsnorm | design | 1 |" "$work/runs/r1/score.md" || fail "score.md has no per-level row"
grep -q '"status": "unknown"' "$work"/runs/r1/attempts/*design__1/score.json || fail "--no-build must leave the evidence unknown"

out=$("$d2k" --dataset "$src/dataset" score --run r1 --runs-dir "$work/runs" --judge "$work/judge.toml" --no-build)
echo "$out" | grep -q "(0 judge call(s))" || fail "a second scoring made judge calls: $out"

# --- one workspace alone: score.json inside it, from the same cache ---
ws=$(ls -d "$work"/runs/r1/attempts/*baseline__1/workspace)
out=$("$d2k" --dataset "$src/dataset" score --workspace "$ws" --judge "$work/judge.toml" --no-build)
echo "$out" | grep -q "JS_design 0.0 JS_impl 25.0" || fail "--workspace: $out"
[ -s "$ws/score.json" ] || fail "--workspace wrote no score.json"

# --- bad arguments name what is wrong ---
if "$d2k" --dataset "$src/dataset" score --run nope --runs-dir "$work/runs" --judge "$work/judge.toml" 2>"$work/err"; then fail "a missing run passed"; fi
grep -q "no such run" "$work/err" || fail "missing run message: $(cat "$work/err")"

# --- design draft: a valid draft (one statement changed) and an invalid one ---
python3 - "$src/dataset/$task/design.json" "$work/draft_ok.json" "$work/draft_bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["level_1_high_level_algorithmic_insights"][0]["statement"] = "DRAFTED STATEMENT"
json.dump({"rules": [{"part": "other", "text": "```json\n" + json.dumps(d, indent=2) + "\n```"}]}, open(sys.argv[2], "w"))
d["level_3_low_level_optimization_tricks"][0]["evidence"] = {"sass": ["ldg.e.128"]}
json.dump({"rules": [{"part": "other", "text": json.dumps(d)}]}, open(sys.argv[3], "w"))
PY
start_judge "$work/draft_ok.json"
"$d2k" --dataset "$src/dataset" design draft --task $task --judge "$work/judge.toml" --out "$work/draft.json" > "$work/diff" 2>"$work/err" \
  || fail "a valid draft failed: $(cat "$work/err")"
grep -q '^+.*DRAFTED STATEMENT' "$work/diff" || fail "the diff does not show the drafted line: $(cat "$work/diff")"
grep -q '^-.*"statement": "The operation does about' "$work/diff" || fail "the diff does not show the replaced line"
[ -s "$work/draft.json" ] || fail "--out was not written"
start_judge "$work/draft_bad.json"
if "$d2k" --dataset "$src/dataset" design draft --task $task --judge "$work/judge.toml" --out "$work/draft2.json" >/dev/null 2>"$work/err"; then
  fail "a draft breaking the design rules passed"
fi
grep -q "level_3_low_level_optimization_tricks\[0\].evidence.sass\[0\]" "$work/err" || fail "the rule message: $(cat "$work/err")"
echo "score_run: PASS"
