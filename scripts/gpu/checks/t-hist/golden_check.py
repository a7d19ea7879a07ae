"""Independent cross-check of histogram's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, torch.bincount of the values below B (on
the CPU, int64) must equal expected.counts exactly (the task's exact rule), and so must the dumped
counts of the target (`<target>.counts.npy`, e.g. the expert).
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "histogram"


def main():
    a = golden.parse_args()
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "counts"):
        bins = w.load(golden.GOLDEN, "counts").size
        values = torch.from_numpy(w.input("values", np.int64).reshape(-1))
        kept = values[values < bins]
        torch_counts = torch.bincount(kept, minlength=bins)[:bins]
        labels = w.targets("counts")
        problems = []
        for label in w.labels("counts"):
            got = w.load(label, "counts", np.int64).reshape(-1)
            bad = golden.first_difference(got, torch_counts.numpy())
            if bad is not None:
                problems.append(f"{label} differs first at bin {bad}: {int(got[bad])} != {int(torch_counts[bad])}")
        report.line(w.uuid, not problems, f"N={values.numel()} B={bins}, {kept.numel()} counted"
                    + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} equal torch.bincount"))
    report.finish("agree with torch.bincount")


if __name__ == "__main__":
    main()
