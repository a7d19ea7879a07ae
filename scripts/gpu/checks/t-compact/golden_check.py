"""Independent cross-check of stream_compaction's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, PyTorch's boolean indexing
(`col[l_shipdate < date_lt]`, on the CPU) gives the kept rows and their count, which must equal
expected.count and rows [0, count) of expected.out_* bit for bit (the task's exact rule). The
dumped outputs of the target (`<target>.out_*.npy`, e.g. the expert) are compared the same way.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

TASK = "stream_compaction"
COLUMNS = (("l_shipdate", "out_shipdate"), ("l_extendedprice", "out_extendedprice"), ("l_partkey", "out_partkey"))


def date_lt_per_workload(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    default = d["scalars"]["date_lt"]["value"]
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if line.strip():
            w = json.loads(line)
            per[w["uuid"]] = w.get("scalars", {}).get("date_lt", default)
    return per, default


def same_rows(label, d, kept, n):
    """kept: PyTorch's rows per column; rows [0, n) of <label>.out_* must equal them bit for bit."""
    path = os.path.join(d, f"{label}.count.npy")
    if not os.path.exists(path):
        return None
    count = int(np.load(path).reshape(-1)[0])
    if count != n:
        return f"{label} count {count} != {n}"
    for (_, out), k in zip(COLUMNS, kept):
        got = torch.from_numpy(np.load(os.path.join(d, f"{label}.{out}.npy"))[:n].copy())
        if not torch.equal(got.view(torch.int32), k.view(torch.int32)):
            bad = int((got.view(torch.int32) != k.view(torch.int32)).nonzero()[0])
            return f"{label} {out} differs first at row {bad}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    per, default = date_lt_per_workload(a.dataset)
    root = os.path.join(a.dump, TASK)
    n_ok = n = 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.count.npy")):
            continue
        cols = [torch.from_numpy(np.load(os.path.join(d, f"input.{c}.npy"))) for c, _ in COLUMNS]
        mask = cols[0] < int(per.get(uuid, default))
        kept = [c[mask] for c in cols]
        rows = int(mask.sum())
        labels = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".count.npy")} - {"expected"})
        problems = [p for p in (same_rows(x, d, kept, rows) for x in ["expected"] + labels) if p]
        n += 1
        n_ok += not problems
        print(f"{'PASS' if not problems else 'FAIL'} {uuid}: {rows} of {cols[0].numel()} rows kept"
              + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} equal PyTorch's"))
    print(f"golden cross-check: {n_ok}/{n} workloads agree with PyTorch boolean indexing")
    sys.exit(0 if n and n_ok == n else 1)


if __name__ == "__main__":
    main()
