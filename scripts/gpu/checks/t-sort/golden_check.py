"""Independent cross-check of radix_sort_pairs' golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump` wrote: for every dumped workload, torch.sort(keys as int64, stable=True) and the
values gathered by its permutation (on the CPU) must equal expected.keys_out and
expected.values_out bit for bit (the task's exact rule). The dumped outputs of the target
(`<target>.keys_out.npy`, e.g. the expert) are compared the same way. Where the values are the
input indices, it also checks stability directly: within every run of equal keys the values rise.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import argparse
import os
import sys

import numpy as np
import torch

TASK = "radix_sort_pairs"


def as_i64(a):
    return torch.from_numpy(np.asarray(a).astype(np.int64))


def same_pairs(label, d, keys, values):
    """Rows of <label>.keys_out / values_out must equal PyTorch's sorted pairs bit for bit."""
    path = os.path.join(d, f"{label}.keys_out.npy")
    if not os.path.exists(path):
        return None
    for out, want in (("keys_out", keys), ("values_out", values)):
        got = as_i64(np.load(os.path.join(d, f"{label}.{out}.npy")).reshape(-1))
        if got.numel() != want.numel():
            return f"{label} {out} has {got.numel()} elements, not {want.numel()}"
        if not torch.equal(got, want):
            bad = int((got != want).nonzero()[0])
            return f"{label} {out} differs first at {bad}: {int(got[bad])} != {int(want[bad])}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    a = ap.parse_args()
    root = os.path.join(a.dump, TASK)
    n_ok = n = 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.keys_out.npy")):
            continue
        keys = as_i64(np.load(os.path.join(d, "input.keys.npy")).reshape(-1))
        values = as_i64(np.load(os.path.join(d, "input.values.npy")).reshape(-1))
        sorted_keys, order = torch.sort(keys, stable=True)
        sorted_values = values[order]
        problems = []
        if torch.equal(values, torch.arange(values.numel())):
            same = sorted_keys[1:] == sorted_keys[:-1]
            if bool((sorted_values[1:][same] <= sorted_values[:-1][same]).any()):
                problems.append("torch.sort(stable=True) left equal keys out of input order")
        labels = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".keys_out.npy")} - {"expected"})
        problems += [p for p in (same_pairs(x, d, sorted_keys, sorted_values) for x in ["expected"] + labels) if p]
        repeated = int((sorted_keys[1:] == sorted_keys[:-1]).sum())
        n += 1
        n_ok += not problems
        print(f"{'PASS' if not problems else 'FAIL'} {uuid}: {keys.numel()} pairs, {repeated} equal-key neighbours"
              + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} equal PyTorch's"))
    print(f"golden cross-check: {n_ok}/{n} workloads agree with torch.sort(stable=True) + gather")
    sys.exit(0 if n and n_ok == n else 1)


if __name__ == "__main__":
    main()
