"""Independent cross-check of histogram's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, torch.bincount of the values below B (on
the CPU, int64) must equal expected.counts exactly (the task's exact rule), and so must the dumped
counts of the target (`<target>.counts.npy`, e.g. the expert).
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import argparse
import os
import sys

import numpy as np
import torch

TASK = "histogram"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    a = ap.parse_args()
    root = os.path.join(a.dump, TASK)
    n_ok = n = 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        path = os.path.join(d, "expected.counts.npy")
        if not os.path.exists(path):
            continue
        expected = np.load(path).astype(np.int64).reshape(-1)
        bins = expected.size
        values = torch.from_numpy(np.load(os.path.join(d, "input.values.npy")).astype(np.int64).reshape(-1))
        kept = values[values < bins]
        torch_counts = torch.bincount(kept, minlength=bins)[:bins]
        labels = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".counts.npy")} - {"expected"})
        problems = []
        for label in ["expected"] + labels:
            got = torch.from_numpy(np.load(os.path.join(d, f"{label}.counts.npy")).astype(np.int64).reshape(-1))
            if not torch.equal(got, torch_counts):
                bad = int((got != torch_counts).nonzero()[0])
                problems.append(f"{label} differs first at bin {bad}: {int(got[bad])} != {int(torch_counts[bad])}")
        n += 1
        n_ok += not problems
        print(f"{'PASS' if not problems else 'FAIL'} {uuid}: N={values.numel()} B={bins}, {kept.numel()} counted"
              + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} equal torch.bincount"))
    print(f"golden cross-check: {n_ok}/{n} workloads agree with torch.bincount")
    sys.exit(0 if n and n_ok == n else 1)


if __name__ == "__main__":
    main()
