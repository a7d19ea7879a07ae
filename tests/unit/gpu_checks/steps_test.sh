#!/usr/bin/env bash
# The steps of scripts/gpu/checks/lib/steps.sh without a GPU: workload_uuids against every dataset
# task (compared with a JSON parser's reading of workloads.jsonl), and bench_step, variants_step,
# golden_step, sanitize, starter_verdict, sass_counts, ncu_kernels and detect_torch against stand-in
# programs (d2k, python, cuobjdump, compute-sanitizer, ncu) that record their arguments and answer
# as told.
# Usage: steps_test.sh SOURCE_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
cd "$src" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
errors=0
bad() { echo "ERROR: $*"; errors=$((errors + 1)); }
# expect WHAT GOT WANT
expect() { [ "$2" = "$3" ] || bad "$1: got '$2', want '$3'"; }
# expect_has WHAT TEXT PATTERN (fixed string)
expect_has() { grep -qF -- "$3" <<< "$2" || bad "$1: '$3' not in: $2"; }
expect_not() { grep -qF -- "$3" <<< "$2" && bad "$1: '$3' unexpected in: $2"; }

out=$work/out budget=1000
mkdir -p "$out"
source scripts/gpu/checks/lib/steps.sh

# ---- workload_uuids: the grep reading equals a JSON parser's, for every task, role and a pattern.
# One JSON reading of every task: "TASK ROLE UUID,UUID,..." lines.
ntasks=0
while read -r task role want; do
  [ "$role" = check ] && ntasks=$((ntasks + 1))
  expect "workload_uuids $role ($task)" "$(workload_uuids "$role")" "$want"
done < <(python3 -c '
import glob, json, os
for f in sorted(glob.glob("dataset/*/workloads.jsonl")):
    rows = [json.loads(l) for l in open(f) if l.strip()]
    for role in ("check", "bench"):
        print(os.path.basename(os.path.dirname(f)), role, ",".join(r["uuid"] for r in rows if r.get("role") == role))')
[ "$ntasks" -ge 10 ] || bad "only $ntasks dataset tasks found"
task=flash_attention_forward
want=$(python3 -c '
import json
rows = [json.loads(l) for l in open("dataset/flash_attention_forward/workloads.jsonl") if l.strip()]
print(",".join(r["uuid"] for r in rows if r["role"] == "bench" and "1x8192" in r["uuid"]))')
[ -n "$want" ] || bad "flash_attention_forward has no 1x8192 bench workload"
expect "workload_uuids bench 1x8192" "$(workload_uuids bench 1x8192)" "$want"
two=$(workload_uuids check "1x1x1x1\|2x77")
expect "workload_uuids check with an alternation: two uuids" "$(tr ',' '\n' <<< "$two" | wc -l)" 2
expect "workload_uuids: no match" "$(workload_uuids check no-such-workload-anywhere)" ""
task=no_such_task
msg=$(workload_uuids check 2>&1); rc=$?
expect "workload_uuids of a missing task: status" "$rc" 1
expect_has "workload_uuids of a missing task: message" "$msg" "dataset/no_such_task/workloads.jsonl"

# ---- stand-ins. d2k records its arguments (one a line) and answers from FAKE_* variables.
bin=$work/bin carry=$work/carry
mkdir -p "$bin" "$carry/impl/demo"
cat > "$bin/d2k" << 'EOF'
#!/usr/bin/env bash
printf '%s\n' "$@" > "$FAKE_ARGS"
case " $* " in
  *" check "*)
    for ((i = 1; i <= $#; i++)); do
      [ "${!i}" = --dump ] && [ -z "${FAKE_NODUMP:-}" ] && { j=$((i + 1)); mkdir -p "${!j}"; echo data > "${!j}/x.npy"; }
    done
    echo "${FAKE_CHECK_OUT:-}" ;;
  *" bench "*)
    echo "| task | target | workload | status |"
    echo "| demo | expert | demo-check-1 check | PASSED |"
    echo "| demo | expert | hidden:n=3 | PASSED |"
    echo "| demo | expert | demo-bench-1 | ${FAKE_STATUS:-PASSED} |" ;;
esac
exit "${FAKE_RC:-0}"
EOF
cat > "$bin/python3-fake" << 'EOF'
#!/usr/bin/env bash
# stand-in Python: `-c "import torch"` answers FAKE_TORCH; a golden script sees its dump folder.
[ "$1" = -c ] && exit "${FAKE_TORCH:-1}"
printf '%s\n' "$@" > "$FAKE_ARGS"
[ -f "$2/x.npy" ] && echo "dump seen: ok" || { echo "no dump at $2"; exit 3; }
EOF
cat > "$bin/cuobjdump" << 'EOF'
#!/usr/bin/env bash
printf '        /*0010*/  HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;\n'
printf '        /*0020*/  HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;\n'
printf '        /*0030*/  UTMALDG.2D [UR8], [UR4] ;\n'
printf '        /*0040*/  SYNCS.ARRIVE.TRANS64 RZ, [UR4], RZ ;\n'
printf '        /*0050*/  %s\n' "${FAKE_SASS_EXTRA:-NOP ;}"
EOF
cat > "$bin/compute-sanitizer" << 'EOF'
#!/usr/bin/env bash
# stand-in: --tool T --error-exitcode N CMD...: runs CMD, then the summary FAKE_SAN_ERRORS asks for
shift 4
"$@"
echo "========= ERROR SUMMARY: ${FAKE_SAN_ERRORS:-0} errors"
[ "${FAKE_SAN_ERRORS:-0}" = 0 ] || exit 99
EOF
chmod +x "$bin"/*
export PATH="$bin:$PATH" FAKE_ARGS=$work/args
d2k=$bin/d2k task=demo
args() { paste -sd' ' "$FAKE_ARGS"; }

# ---- bench_step: arguments, PASS on exit 0, FAIL on any other, table without check rows.
fails=0
o=$(bench_step bench 30 naive,expert demo-check-1,demo-bench-1 --quiet); rc=$?
expect "bench_step pass: status" "$rc" 0
expect_has "bench_step pass: PASS line" "$o" "PASS bench: every target PASSED (naive,expert)"
expect_has "bench_step: arguments" "$(args)" \
  "bench --task demo --targets naive,expert --workloads demo-check-1,demo-bench-1 --json $out/bench.jsonl --markdown $out/bench.md --quiet"
expect_has "bench_step: table shows bench rows" "$o" "demo-bench-1"
expect_not "bench_step: table hides check rows" "$o" "demo-check-1 check"
expect_not "bench_step: table hides hidden rows" "$o" "hidden:"
o=$(FAKE_RC=1 bench_step --files bench_demo --fail "bench naive (see bench.log)" bench 30 naive ""); rc=$?
expect "bench_step fail: status" "$rc" 1
expect_has "bench_step fail: FAIL line" "$o" "FAIL bench naive (see bench.log)"
expect_not "bench_step fail: no PASS line" "$o" "PASS bench"
expect_not "bench_step: empty WORKLOADS is every workload" "$(args)" "--workloads"
expect_has "bench_step --files" "$(args)" "--json $out/bench_demo.jsonl --markdown $out/bench_demo.md"
FAKE_RC=1 bench_step bench 30 naive "" > /dev/null
expect "bench_step fail: counted in \$fails" "$fails" 1
o=$(bench_step --pass "" --show 0 torch 30 torch_eager "")
expect "bench_step --pass '' --show 0: silent on success" "$(grep -c "^PASS\|demo-bench" <<< "$o")" 0
o=$(D2K_CHECK_STEPS=validate bench_step bench 30 naive ""); rc=$?
expect "bench_step not selected: status" "$rc" 125
expect_not "bench_step not selected: no FAIL" "$o" "FAIL"
o=$(bench_step --bogus x bench 30 naive "" 2>&1); rc=$?
expect "bench_step unknown option: status" "$rc" 2

# ---- variants_step: the built variants as targets; none built is a FAIL.
fails=0
o=$(variants_step 20 demo-bench-1); rc=$?
expect "variants_step, none built: status" "$rc" 1
expect_has "variants_step, none built: FAIL" "$o" "FAIL no expert variants built under $carry/impl/demo"
touch "$carry/impl/demo/expert.so" "$carry/impl/demo/expert_bn32.so" "$carry/impl/demo/expert_mma_sync.so"
o=$(variants_step --show 3 20 demo-bench-1 --max-time 1); rc=$?
expect "variants_step: status" "$rc" 0
expect_has "variants_step: targets" "$(args)" "--targets expert,expert:bn32,expert:mma_sync --workloads demo-bench-1"
expect_has "variants_step: ARGS passed on" "$(args)" "--json $out/variants.jsonl --markdown $out/variants.md --max-time 1"
expect_has "variants_step: PASS" "$o" "PASS variants: every variant PASSED"
o=$(variants_step --with library 20 demo-bench-1)
expect_has "variants_step --with: targets" "$(args)" "--targets expert,library,expert:bn32,expert:mma_sync --workloads demo-bench-1"
variants_step --only 20 "" > /dev/null
expect_has "variants_step --only: no expert" "$(args)" "--targets expert:bn32,expert:mma_sync --json"
expect "variants_step sets \$variants" "$(echo $variants)" "bn32 mma_sync"

# ---- detect_torch: the Python's answer to `import torch`.
D2K_PYTHON=$bin/python3-fake FAKE_TORCH=1
o=$(detect_torch); detect_torch > /dev/null
expect "detect_torch, no torch: have_torch" "$have_torch" 0
expect "detect_torch, no torch: torch" "$torch" ""
expect_has "detect_torch, no torch: SKIP" "$o" "SKIP torch_eager: no torch for $bin/python3-fake"
FAKE_TORCH=0 detect_torch
expect "detect_torch: have_torch" "$have_torch" 1
expect "detect_torch: torch" "$torch" ",torch_eager"
expect "detect_torch: py" "$py" "$bin/python3-fake"

# ---- golden_step: dump, the script on it under $py, the dump removed; no torch is a SKIP.
fails=0
o=$(golden_step --pass "vs PyTorch float64" 20 demo-check-1 golden.py --dataset dataset); rc=$?
expect "golden_step: status" "$rc" 0
expect_has "golden_step: PASS" "$o" "PASS golden cross-check vs PyTorch float64"
expect_has "golden_step: script arguments" "$(args)" "golden.py $out/dump --dataset dataset"
expect_has "golden_step: golden.log shown" "$o" "dump seen: ok"
[ -e "$out/dump" ] && bad "golden_step left the dump behind"
mkdir -p "$out/dump" && echo x > "$out/dump/x.npy"  # a sanitizer run with --dump made it
: > "$FAKE_ARGS"
golden_step 20 "" golden.py > /dev/null
expect_not "golden_step reuses an existing dump (no d2k check)" "$(cat "$work/args")" "check"
FAKE_RC=1 FAKE_NODUMP=1 golden_step 20 "" golden.py > /dev/null  # the dump fails: golden sees none
expect "golden_step: no dump is a FAIL" "$fails" 1
have_torch=0
o=$(golden_step 20 "" golden.py)
expect_has "golden_step without torch: SKIP" "$o" "SKIP golden cross-check: no torch for"
expect_not "golden_step without torch: no FAIL" "$o" "FAIL"
have_torch=1
o=$(D2K_CHECK_STEPS=golden golden_step 20 demo-check-1 golden.py)
expect_has "golden_step selected alone still dumps" "$o" "PASS golden cross-check"

# ---- sanitize: the tool's exit and summary; a variant gets its own step and log.
fails=0
o=$(sanitize memcheck 20 demo-check-1,demo-check-2 --dump "$out/d"); rc=$?
expect "sanitize: status" "$rc" 0
expect_has "sanitize: PASS" "$o" "PASS memcheck: expert clean on 2 check workload(s)"
expect_has "sanitize: d2k in-process" "$(args)" "check --task demo --impl expert --isolation none --rounds 1 --workloads demo-check-1,demo-check-2 --quiet --dump $out/d"
o=$(sanitize --impl expert:mma_sync memcheck 20 demo-check-1)
expect_has "sanitize --impl: PASS" "$o" "PASS memcheck: expert:mma_sync clean on 1 check workload(s)"
[ -f "$out/memcheck_mma_sync.log" ] || bad "sanitize --impl: no memcheck_mma_sync.log"
o=$(sanitize --name memcheck_rowsbench memcheck 20 demo-bench-1 --bench-rounds 1)
expect_has "sanitize --name: PASS" "$o" "PASS memcheck: expert clean on 1 check workload(s)"
[ -f "$out/memcheck_rowsbench.log" ] || bad "sanitize --name: no memcheck_rowsbench.log"
o=$(FAKE_SAN_ERRORS=3 sanitize memcheck 20 demo-check-1); rc=$?
expect "sanitize, errors: status" "$rc" 1
expect_has "sanitize, errors: FAIL" "$o" "FAIL memcheck rc=99 (see memcheck.log)"

# ---- starter_verdict: INCORRECT_* passes, anything else fails.
o=$(FAKE_STATUS=INCORRECT_NUMERICS starter_verdict 8 --workloads demo-check-1)
expect_has "starter_verdict: PASS" "$o" "PASS starter fails with INCORRECT_*"
expect_has "starter_verdict: arguments" "$(args)" "--targets solution --solution-dir dataset/demo/starter/cuda --quiet --workloads demo-check-1"
o=$(starter_verdict 8)
expect_has "starter_verdict: a PASSED starter is a FAIL" "$o" "FAIL starter verdict"

# ---- sass_counts: counts; required and forbidden instructions.
fails=0
o=$(sass_counts "HGMMA\.[0-9A-Zx.]*|UTMALDG[A-Z0-9.]*|SYNCS[A-Z0-9.]*|LDL")
expect_has "sass_counts: counts" "$o" "expert SASS: HGMMA.64x128x16.F32.BF16x2 SYNCS.ARRIVE.TRANS64x1 UTMALDG.2Dx1"
expect_not "sass_counts without REQUIRED: no verdict" "$o" "PASS"
o=$(sass_counts "HGMMA" "HGMMA UTMALDG SYNCS")
expect_has "sass_counts: required present" "$o" "PASS expert SASS has HGMMA, UTMALDG, SYNCS"
o=$(sass_counts --so expert_mma_sync "HMMA" "HMMA LDSM LDGSTS")
expect_has "sass_counts: required missing" "$o" "FAIL expert_mma_sync SASS: no HMMA LDSM LDGSTS"
o=$(FAKE_SASS_EXTRA="LDL.64 R2, [R1] ;" sass_counts "LDG" "HGMMA" "\bLDL|\bSTL")
expect_has "sass_counts: forbidden present" "$o" "FAIL expert SASS has"
o=$(sass_counts --so expert_q_smem "HGMMA")
expect_has "sass_counts: a variant not built is skipped" "$o" "SKIP expert_q_smem SASS: not built"
o=$(sass_counts --so expert_q_smem "HGMMA" "HGMMA")
expect_has "sass_counts: a required variant not built is a FAIL" "$o" "FAIL expert_q_smem SASS: no"

# ---- ncu_kernels: default metrics or sections, launches, printed columns, selection, verdict.
cat > "$bin/ncu" << 'EOF'
#!/usr/bin/env bash
# stand-in Nsight Compute: records its arguments, writes a raw CSV of one kernel to --log-file
printf '%s\n' "$@" > "$FAKE_ARGS.ncu"
while [ $# -gt 0 ]; do [ "$1" = --log-file ] && log=$2; shift; done
{ echo '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","smsp__average_warp_latency_issue_stalled_wait","smsp__average_warp_latency_issue_stalled_barrier"'
  echo '"","","ns","byte","",""'
  echo "\"0\",\"void ${FAKE_KERNEL:-hj_part_join}<8>(int)\",\"1450000\",\"2680000000\",\"7.25\",\"3.5\""; } > "$log"
EOF
chmod +x "$bin/ncu"
fails=0
o=$(ncu_kernels 60 "hj_(part|join)" demo-bench-1)
expect_has "ncu_kernels: not run unless named" "$o" "== ncu not selected (D2K_CHECK_STEPS)"
o=$(D2K_CHECK_STEPS=ncu ncu_kernels 60 "hj_(part|join)" demo-bench-1)
expect_has "ncu_kernels: default columns" "$o" "ncu hj_part_join gpu__time_duration.sum=1450000 dram__bytes_read.sum=2680000000"
expect_has "ncu_kernels: stalls printed" "$o" "ncu stall hj_part_join smsp__average_warp_latency_issue_stalled_wait 7.25"
expect_has "ncu_kernels: PASS" "$o" "PASS ncu: counters of expert on demo-bench-1"
a=$(paste -sd' ' "$FAKE_ARGS.ncu")
expect_has "ncu_kernels: default metrics and launches" "$a" \
  "--launch-count 20 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum"
expect_has "ncu_kernels: d2k check in its own process" "$a" "check --task demo --impl expert --isolation none"
o=$(D2K_CHECK_STEPS=ncu_gemm_db ncu_kernels --impl expert:db --name ncu_gemm_db --sections "SpeedOfLight WarpStateStats" \
  --launches 1 --show "duration" 60 device_kernel demo-bench-1)
a=$(paste -sd' ' "$FAKE_ARGS.ncu")
expect_has "ncu_kernels --sections" "$a" "--launch-count 1 --section SpeedOfLight --section WarpStateStats --csv"
expect_not "ncu_kernels --sections: no default metrics" "$a" "--metrics"
expect_has "ncu_kernels --impl" "$a" "--impl expert:db"
expect_has "ncu_kernels: a kernel outside the regex is a FAIL" "$o" "FAIL ncu_gemm_db"
o=$(FAKE_KERNEL=device_kernel D2K_CHECK_STEPS=ncu_gemm_db ncu_kernels --impl expert:db --name ncu_gemm_db \
  --sections SpeedOfLight --launches 1 --show "duration" 60 device_kernel demo-bench-1)
expect_has "ncu_kernels --show" "$o" "ncu device_kernel gpu__time_duration.sum=1450000"
expect_not "ncu_kernels --show: other columns left out" "$o" "dram__bytes_read.sum="

if [ "$errors" -eq 0 ]; then echo "OK: lib/steps.sh ($ntasks dataset tasks read by workload_uuids)"; fi
exit "$errors"
