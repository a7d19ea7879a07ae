#!/usr/bin/env python3
"""Tables for scripts/gpu/fidelity.sh: d2k medians over repeated runs (spread), d2k vs Nsight Compute,
and the timer's per-sample overhead. Usage: fidelity_table.py DIR (holding run*.jsonl, ncu_*.csv, overhead.jsonl)."""
import csv
import glob
import json
import os
import re
import statistics
import sys

REPS = int(os.environ.get("FIDELITY_NCU_REPS", "5"))
UNIT_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


def load_runs(d):
    runs = []
    for path in sorted(glob.glob(os.path.join(d, "run*.jsonl")), key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0)):
        rows = {}
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    j = json.loads(line)
                    rows[j["workload"]] = j
        runs.append(rows)
    return runs


def ncu_per_call_us(path):
    """Median over reps of the per-call sum of gpu__time_duration.sum, in us; kernels per call."""
    lines = [l for l in open(path, errors="replace") if not l.startswith("==")]
    header_at = next((i for i, l in enumerate(lines) if "gpu__time_duration.sum" in l and "Kernel Name" in l), None)
    if header_at is None:
        return None, 0, "no ncu rows"
    rows = list(csv.reader(lines[header_at:]))
    head = rows[0]
    col = head.index("gpu__time_duration.sum")
    scale = 1.0
    body = rows[1:]
    if body and not re.match(r"^[\d.,]+$", body[0][col].strip()):  # the units row
        scale = UNIT_NS.get(body[0][col].strip(), 1.0)
        body = body[1:]
    vals = [float(r[col].replace(",", "")) * scale for r in body if len(r) > col and r[col].strip()]
    if not vals or len(vals) % REPS:
        return None, len(vals), f"{len(vals)} kernel rows, not a multiple of {REPS} reps"
    k = len(vals) // REPS
    per_call = [sum(vals[i * k:(i + 1) * k]) for i in range(REPS)]
    return statistics.median(per_call) / 1e3, k, ""


def ncu_per_kernel_us(path):
    """Per position within a call: median over reps of each kernel's duration (us)."""
    if not os.path.exists(path):
        return None
    lines = [l for l in open(path, errors="replace") if not l.startswith("==")]
    header_at = next((i for i, l in enumerate(lines) if "gpu__time_duration.sum" in l and "Kernel Name" in l), None)
    if header_at is None:
        return None
    rows = list(csv.reader(lines[header_at:]))
    col = rows[0].index("gpu__time_duration.sum")
    body = rows[1:]
    scale = 1.0
    if body and not re.match(r"^[\d.,]+$", body[0][col].strip()):
        scale = UNIT_NS.get(body[0][col].strip(), 1.0)
        body = body[1:]
    vals = [float(r[col].replace(",", "")) * scale / 1e3 for r in body if len(r) > col and r[col].strip()]
    if not vals or len(vals) % REPS:
        return None
    k = len(vals) // REPS
    return [statistics.median(vals[p::k]) for p in range(k)]


VARIANTS = [("events_only", "CUDA events only"), ("no_flush", "no L2 flush (warm)"), ("no_blocking", "no blocking kernel"),
            ("all_cupti", "every sample under CUPTI, span")]


def load_jsonl(path):
    rows = {}
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("{"):
                j = json.loads(line)
                rows[j["workload"]] = j
    return rows


def diagnostics(d, runs):
    variants = {k: load_jsonl(os.path.join(d, f"variant_{k}.jsonl")) for k, _ in VARIANTS}
    multi = [n for n in (runs[0] if runs else {}) if len(runs[0][n].get("kernel_times", [])) > 1]
    if multi:
        print("\n## Per kernel: d2k (run 1, median per kernel) vs ncu (cache flushed before each kernel / not flushed)\n")
        print("| workload | # | kernel | d2k µs | d2k no-flush µs | ncu µs (--cache-control all) | ncu µs (none) | d2k / ncu(all) | no-flush / ncu(none) |")
        print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for n in multi:
            kt = runs[0][n]["kernel_times"]
            nf = variants["no_flush"].get(n, {}).get("kernel_times", [])
            all_ = ncu_per_kernel_us(os.path.join(d, f"ncu_{n}.csv")) or []
            none = ncu_per_kernel_us(os.path.join(d, f"ncunocache_{n}.csv")) or []
            for i, k in enumerate(kt):
                a = all_[i] if i < len(all_) else None
                b = none[i] if i < len(none) else None
                c = nf[i]["median_us"] if i < len(nf) else None
                f = lambda x: "" if x is None else f"{x:.2f}"
                r1 = "" if a is None else f"{k['median_us'] / a:.4f}"
                r2 = "" if (b is None or c is None) else f"{c / b:.4f}"
                print(f"| {n} | {i} | {k['name'][:60]} | {k['median_us']:.2f} | {f(c)} | {f(a)} | {f(b)} | {r1} | {r2} |")
    if any(variants.values()):
        print("\n## d2k with one part of the timer changed (medians, µs)\n")
        print("| workload | default (run 1) | timer | launch offset | audit spans | " + " | ".join(t for _, t in VARIANTS) + " |")
        print("| --- | ---: | --- | ---: | ---: | " + " | ".join("---:" for _ in VARIANTS) + " |")
        names = []
        for rows in variants.values():
            names += [n for n in rows if n not in names]
        for n in names:
            r1 = runs[0].get(n, {}) if runs else {}
            cells = [f"{variants[k][n]['median_us']:.2f}" if n in variants[k] else "" for k, _ in VARIANTS]
            print(f"| {n} | {r1.get('median_us', float('nan')):.2f} | {r1.get('timer', '')} | {r1.get('launch_offset_us', float('nan')):.2f} | "
                  f"{r1.get('cupti_median_us', float('nan')):.2f} | " + " | ".join(cells) + " |")


def main(d):
    runs = load_runs(d)
    names = []
    for r in runs:
        for n in r:
            if n not in names:
                names.append(n)
    ok_spread = ok_ncu = True
    print(f"## d2k medians over {len(runs)} separate processes, and Nsight Compute\n")
    print("| workload | d2k median µs (median of runs) | runs min–max µs | spread | noise (run 1) | n (run 1) | stop (run 1) | events µs | busy µs (mean) | ncu µs/call (kernels) | d2k / ncu | bounds |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |")
    for n in names:
        meds = [r[n]["median_us"] for r in runs if n in r]
        first = next(r[n] for r in runs if n in r)
        m = statistics.median(meds)
        spread = (max(meds) - min(meds)) / m if m else float("nan")
        ev = statistics.median([r[n]["events_median_us"] for r in runs if n in r])
        ncu_path = os.path.join(d, f"ncu_{n}.csv")
        ncu_txt, ratio_txt, verdict = "n/a", "n/a", []
        verdict.append("spread ≤1%: " + ("yes" if spread <= 0.01 else "**no**"))
        if spread > 0.01:
            ok_spread = False
        if os.path.exists(ncu_path):
            t, k, why = ncu_per_call_us(ncu_path)
            log_path = os.path.join(d, f"ncu_{n}.log")
            if t is None and os.path.exists(log_path):  # the report went to stdout instead
                t, k, why = ncu_per_call_us(log_path)
            if t is None:
                ncu_txt = f"({why})"
            else:
                ncu_txt = f"{t:.2f} ({k})"
                ratio = m / t
                ratio_txt = f"{ratio:.4f}"
                if t >= 20:
                    good = abs(ratio - 1) <= 0.03
                    verdict.append("within 3%: " + ("yes" if good else "**no**"))
                    ok_ncu &= good
        print(f"| {n} | {m:.2f} | {min(meds):.2f}–{max(meds):.2f} | {100*spread:.2f}% | {100*first['rel_noise']:.2f}% | "
              f"{first['n']} | {first['stop']} | {ev:.2f} | {first.get('busy_mean_us', 0):.2f} | {ncu_txt} | {ratio_txt} | {'; '.join(verdict)} |")
    print()
    print(f"spread bound (≤ 1 %): {'met' if ok_spread else 'NOT met'}; ncu bound (≤ 3 % for ≥ 20 µs): {'met' if ok_ncu else 'NOT met'}")
    if runs:
        print("\n## Per-workload wall time and clocks (run 1)\n")
        print("| workload | wall s | settle s | warm-up calls | samples | per-sample µs | SM MHz median (min) | throttled | kernels |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |")
        for n in names:
            j = runs[0].get(n)
            if not j:
                continue
            print(f"| {n} | {j['wall_s']:.2f} | {j.get('settle_s', 0):.2f} | {j['warmup_calls']} | {j['n']} | {j['overhead']['per_sample_s']*1e6:.1f} | "
                  f"{j['sm_mhz_median']:.0f} ({j['sm_mhz_min']:.0f}) | {j['throttled']} | {len(j['kernels'])} |")
        print(f"\ntotal wall of run 1: {sum(j['wall_s'] for j in runs[0].values()):.2f} s for {len(runs[0])} workloads")
    diagnostics(d, runs)
    ov = os.path.join(d, "overhead.jsonl")
    if os.path.exists(ov):
        print("\n## Per-sample overhead (4 MiB copy, 1 s of sampling per configuration)\n")
        print("| configuration | samples/s | per sample µs | prepare | flush | idle (flush runs) | launch | sync (call runs) | cupti | check | drains | median µs | events µs |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for line in open(ov):
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            o = j["overhead"]
            us = lambda k: f"{o[k]*1e6:.1f}"
            print(f"| {j['config']} | {j['n']/max(j['wall_s'],1e-9):.0f} | {us('per_sample_s')} | {us('prepare_s')} | {us('flush_s')} | "
                  f"{us('idle_s')} | {us('launch_s')} | {us('sync_s')} | {us('cupti_s')} | {us('check_s')} | {j['cupti_drains']} | "
                  f"{j['median_us']:.2f} | {j['events_median_us']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
