"""Independent cross-check of stream_compaction's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, PyTorch's boolean indexing
(`col[l_shipdate < date_lt]`, on the CPU) gives the kept rows and their count, which must equal
expected.count and rows [0, count) of expected.out_* bit for bit (the task's exact rule). The
dumped outputs of the target (`<target>.out_*.npy`, e.g. the expert) are compared the same way.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "stream_compaction"
COLUMNS = (("l_shipdate", "out_shipdate"), ("l_extendedprice", "out_extendedprice"), ("l_partkey", "out_partkey"))


def date_lt_per_workload(dataset):
    per, base = golden.scalar_values(dataset, TASK)
    return {uuid: sc["date_lt"] for uuid, sc in per.items()}, base["date_lt"]


def same_rows(label, w, kept, n):
    """kept: PyTorch's rows per column; rows [0, n) of <label>.out_* must equal them bit for bit."""
    if not os.path.exists(w.path(label, "count")):
        return None
    count = int(w.load(label, "count").reshape(-1)[0])
    if count != n:
        return f"{label} count {count} != {n}"
    for (_, out), k in zip(COLUMNS, kept):
        got = torch.from_numpy(w.load(label, out)[:n].copy())
        if not torch.equal(got.view(torch.int32), k.view(torch.int32)):
            bad = int((got.view(torch.int32) != k.view(torch.int32)).nonzero()[0])
            return f"{label} {out} differs first at row {bad}"
    return ""


def main():
    a = golden.parse_args(dataset=True)
    per, default = date_lt_per_workload(a.dataset)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "count"):
        cols = [torch.from_numpy(w.input(c)) for c, _ in COLUMNS]
        mask = cols[0] < int(per.get(w.uuid, default))
        kept = [c[mask] for c in cols]
        rows = int(mask.sum())
        labels = w.targets("count")
        problems = [p for p in (same_rows(x, w, kept, rows) for x in w.labels("count")) if p]
        report.line(w.uuid, not problems, f"{rows} of {cols[0].numel()} rows kept"
                    + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} equal PyTorch's"))
    report.finish("agree with PyTorch boolean indexing")


if __name__ == "__main__":
    main()
