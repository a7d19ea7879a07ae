"""Independent cross-check of radix_sort_pairs' golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump` wrote: for every dumped workload, torch.sort(keys as int64, stable=True) and the
values gathered by its permutation (on the CPU) must equal expected.keys_out and
expected.values_out bit for bit (the task's exact rule). The dumped outputs of the target
(`<target>.keys_out.npy`, e.g. the expert) are compared the same way. Where the values are the
input indices, it also checks stability directly: within every run of equal keys the values rise.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "radix_sort_pairs"


def as_i64(a):
    return torch.from_numpy(np.asarray(a).astype(np.int64))


def same_pairs(label, w, keys, values):
    """Rows of <label>.keys_out / values_out must equal PyTorch's sorted pairs bit for bit."""
    if not os.path.exists(w.path(label, "keys_out")):
        return None
    for out, want in (("keys_out", keys), ("values_out", values)):
        got = as_i64(w.load(label, out).reshape(-1))
        if got.numel() != want.numel():
            return f"{label} {out} has {got.numel()} elements, not {want.numel()}"
        if not torch.equal(got, want):
            bad = int((got != want).nonzero()[0])
            return f"{label} {out} differs first at {bad}: {int(got[bad])} != {int(want[bad])}"
    return ""


def main():
    a = golden.parse_args()
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "keys_out"):
        keys = as_i64(w.input("keys").reshape(-1))
        values = as_i64(w.input("values").reshape(-1))
        sorted_keys, order = torch.sort(keys, stable=True)
        sorted_values = values[order]
        problems = []
        if torch.equal(values, torch.arange(values.numel())):
            same = sorted_keys[1:] == sorted_keys[:-1]
            if bool((sorted_values[1:][same] <= sorted_values[:-1][same]).any()):
                problems.append("torch.sort(stable=True) left equal keys out of input order")
        labels = w.targets("keys_out")
        problems += [p for p in (same_pairs(x, w, sorted_keys, sorted_values) for x in w.labels("keys_out")) if p]
        repeated = int((sorted_keys[1:] == sorted_keys[:-1]).sum())
        report.line(w.uuid, not problems, f"{keys.numel()} pairs, {repeated} equal-key neighbours"
                    + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} equal PyTorch's"))
    report.finish("agree with torch.sort(stable=True) + gather")


if __name__ == "__main__":
    main()
