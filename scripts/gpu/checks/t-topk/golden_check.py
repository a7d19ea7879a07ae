"""Independent cross-check of topk_topp_mask's fp64 golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped check workload, the task's pytorch.py
program (softmax in float64, torch.sort, cumsum, the tie rule by value) runs on the CPU and its
output is compared with expected.probs under the task's rule (definition.json with the workload's
overrides from workloads.jsonl: allclose, atol 0, so the kept sets must be identical).
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import importlib.util
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "topk_topp_mask"


def rules(dataset):
    cmp, base_cmp = golden.compare_rules(dataset, TASK)
    scalars, base_scalars = golden.scalar_values(dataset, TASK)
    return {uuid: (scalars[uuid], cmp[uuid]["probs"]) for uuid in cmp}, (base_scalars, base_cmp["probs"])


def load_program(dataset):
    spec = importlib.util.spec_from_file_location("topk_pytorch", os.path.join(dataset, TASK, "pytorch.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.run


def main():
    a = golden.parse_args(dataset=True)
    per, default = rules(a.dataset)
    run = load_program(a.dataset)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "probs"):
        sc, cmp = per.get(w.uuid, default)
        x = torch.from_numpy(w.input("logits"))
        expected = torch.from_numpy(w.load(golden.GOLDEN, "probs")).to(torch.float64)
        out = torch.empty_like(x)
        run(x, out, int(sc["k"]), float(sc["top_p"]), float(sc["temperature"]))
        got = out.to(torch.float64)
        err, nbad = golden.over_tol(expected, got, cmp)
        set_diff = int(((got != 0) != (expected != 0)).sum())
        rel = float((torch.from_numpy(err) / expected.abs().clamp_min(1e-300))[expected != 0].max()) if (expected != 0).any() else 0.0
        report.line(w.uuid, nbad == 0, f"kept-set differences {set_diff}, max rel err {rel:.3g}, {nbad} over tol")
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
