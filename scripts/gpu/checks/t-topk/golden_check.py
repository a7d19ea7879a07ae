"""Independent cross-check of topk_topp_mask's fp64 golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped check workload, the task's pytorch.py
program (softmax in float64, torch.sort, cumsum, the tie rule by value) runs on the CPU and its
output is compared with expected.probs under the task's rule (definition.json with the workload's
overrides from workloads.jsonl: allclose, atol 0, so the kept sets must be identical).
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import importlib.util
import json
import os
import sys

import numpy as np
import torch

TASK = "topk_topp_mask"


def rules(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    base_scalars = {k: v["value"] for k, v in d["scalars"].items()}
    base_cmp = d["outputs"]["probs"]["compare"]
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if not line.strip():
            continue
        w = json.loads(line)
        per[w["uuid"]] = (dict(base_scalars, **w.get("scalars", {})),
                          dict(base_cmp, **w.get("compare", {}).get("probs", {})))
    return per, (base_scalars, base_cmp)


def load_program(dataset):
    spec = importlib.util.spec_from_file_location("topk_pytorch", os.path.join(dataset, TASK, "pytorch.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    per, default = rules(a.dataset)
    run = load_program(a.dataset)
    root = os.path.join(a.dump, TASK)
    bad_workloads = 0
    n = 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.probs.npy")):
            continue
        sc, cmp = per.get(uuid, default)
        x = torch.from_numpy(np.load(os.path.join(d, "input.logits.npy")))
        expected = torch.from_numpy(np.load(os.path.join(d, "expected.probs.npy"))).to(torch.float64)
        out = torch.empty_like(x)
        run(x, out, int(sc["k"]), float(sc["top_p"]), float(sc["temperature"]))
        got = out.to(torch.float64)
        err = (got - expected).abs()
        bad = (err > cmp["atol"]) & (err > cmp["rtol"] * expected.abs())
        set_diff = int(((got != 0) != (expected != 0)).sum())
        rel = float((err / expected.abs().clamp_min(1e-300))[expected != 0].max()) if (expected != 0).any() else 0.0
        ok = int(bad.sum()) == 0
        bad_workloads += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: kept-set differences {set_diff}, max rel err {rel:.3g}, "
              f"{int(bad.sum())} over tol")
    print(f"golden cross-check: {n - bad_workloads}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if bad_workloads or n == 0 else 0)


if __name__ == "__main__":
    main()
