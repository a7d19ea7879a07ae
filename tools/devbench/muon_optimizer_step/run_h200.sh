#!/usr/bin/env bash
# One devbench run on the H200 (from the repository root, with build/muon_optimizer_step carried):
# correctness + timing of every implementation at every workload, PyTorch eager timing, a
# per-kernel breakdown under ncu, and the SASS instruction check. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/muon_out}
mkdir -p "$OUT"
B=build/muon_optimizer_step
IMPLS=${IMPLS:-naive,expert,expert_full,library}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
} 2>&1 | tee "$OUT/gpu.txt"
$B/muon_devbench --impl-dir $B/impl/muon_optimizer_step --impls "$IMPLS" --samples ${SAMPLES:-20} 2>&1 | tee "$OUT/devbench.log"
PYTHONUNBUFFERED=1 python3 tools/devbench/muon_optimizer_step/torch_eager.py 20 2>&1 | tee "$OUT/torch.log"
for so in expert expert_full; do
  [ -f $B/impl/muon_optimizer_step/$so.so ] || continue
  echo "$so SASS: HGMMA $(cuobjdump -sass $B/impl/muon_optimizer_step/$so.so | grep -c HGMMA)" \
       "UTMALDG $(cuobjdump -sass $B/impl/muon_optimizer_step/$so.so | grep -c UTMALDG)" \
       "UTMASTG $(cuobjdump -sass $B/impl/muon_optimizer_step/$so.so | grep -c UTMASTG)" | tee -a "$OUT/sass.txt"
done
for spec in ${NCU_SPECS:-expert:4096x4096 expert:16x1024 expert:8192x8192}; do
  impl=${spec%%:*}; wl=${spec#*:}
  timeout 60 ncu --clock-control none --csv --metrics gpu__time_duration.sum --launch-count 45 \
    $B/muon_devbench --impl-dir $B/impl/muon_optimizer_step --impls $impl --only $wl --samples 1 \
    > "$OUT/ncu_${impl}_${wl}.csv" 2>&1
  python3 - "$OUT/ncu_${impl}_${wl}.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    print(sys.argv[1], "no ncu rows"); sys.exit()
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); ii = h.index("ID")
seen = collections.OrderedDict()
for r in rows[1:]:
    try: v = float(r[vi].replace(",", ""))
    except ValueError: continue
    seen[int(r[ii])] = (r[ki][:60], v)
tot = collections.OrderedDict()
for i, (k, v) in seen.items():
    if i >= 40: break
    a = tot.setdefault(k, [0, 0.0]); a[0] += 1; a[1] += v
print(sys.argv[1].split("/")[-1])
for k, (c, v) in sorted(tot.items(), key=lambda x: -x[1][1]):
    print(f"  {v/1e3:10.1f} us  x{c:3d}  {k}")
PY
done 2>&1 | tee "$OUT/ncu_summary.txt"
