"""scripts/gpu/checks/lib/golden.py on the host, without torch: it reads a dump in the layout
`d2k check --dump` writes (made here by d2k itself on the CPU path where D2K is given, and by a
fixture otherwise as well), finds the golden and every target's outputs, applies the task's
rules, and its report passes a dump that agrees and fails one that does not.
Usage: python3 golden_lib_test.py SOURCE_DIR [D2K]
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

SOURCE = os.path.abspath(sys.argv[1])
D2K = sys.argv[2] if len(sys.argv) > 2 else ""
sys.modules["torch"] = None  # any `import torch` in the module now raises: it must not need torch
sys.path.insert(0, os.path.join(SOURCE, "scripts", "gpu", "checks", "lib"))
import golden  # noqa: E402

failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run_report(check):
    """Runs check(report) the way a golden_check.py main does: (exit status, printed text)."""
    out = io.StringIO()
    code = None
    with contextlib.redirect_stdout(out):
        try:
            report = golden.Report()
            check(report)
            report.finish("agree with numpy")
        except SystemExit as e:
            code = e.code
    return code, out.getvalue()


def histogram_check(dump, gold):
    """What t-hist/golden_check.py does, with numpy's bincount standing in for torch's."""
    def check(report):
        for w in golden.workloads(dump, "histogram", "counts", golden=gold):
            bins = w.load(gold, "counts").size
            values = w.input("values", np.int64).reshape(-1)
            want = np.bincount(values[values < bins], minlength=bins)[:bins]
            problems = []
            for label in w.labels("counts"):
                bad = golden.first_difference(w.load(label, "counts", np.int64), want)
                if bad is not None:
                    problems.append(f"{label} differs first at bin {bad}")
            report.line(w.uuid, not problems, "; ".join(problems) or "equal")
    return check


def fixture_dump(root):
    """A dump as dump_tensors writes it: two workloads, the golden (`expected`) and a target."""
    rng = np.random.default_rng(7)
    for uuid, n, b in (("histogram-w1", 1000, 16), ("histogram-w2", 77, 5)):
        d = os.path.join(root, "histogram", uuid)
        os.makedirs(d)
        values = rng.integers(0, b + 3, n).astype(np.uint32)
        counts = np.bincount(values[values < b], minlength=b)[:b].astype(np.uint32)
        np.save(os.path.join(d, "input.values.npy"), values)
        np.save(os.path.join(d, "expected.counts.npy"), counts)
        np.save(os.path.join(d, "expert.counts.npy"), counts)
    # a folder without the golden's output (e.g. a workload whose golden failed) is not one
    os.makedirs(os.path.join(root, "histogram", "histogram-empty"))


def check_fixture(tmp):
    dump = os.path.join(tmp, "fixture")
    fixture_dump(dump)
    ws = list(golden.workloads(dump, "histogram", "counts"))
    expect([w.uuid for w in ws] == ["histogram-w1", "histogram-w2"], "workloads: the dumped ones with a golden, in order")
    expect(ws[0].labels("counts") == ["expected", "expert"], "labels: the golden first, then the targets")
    code, text = run_report(histogram_check(dump, "expected"))
    expect(code == 0 and "PASS histogram-w1" in text and "2/2 workloads" in text, "agreeing fixture dump passes")
    bad = os.path.join(dump, "histogram", "histogram-w2", "expert.counts.npy")
    c = np.load(bad)
    c[3] += 1
    np.save(bad, c)
    code, text = run_report(histogram_check(dump, "expected"))
    expect(code == 1 and "FAIL histogram-w2: expert differs first at bin 3" in text and "1/2 workloads" in text,
           "a target one count off fails, naming the target and the bin")
    code, text = run_report(lambda report: None)
    expect(code == 1 and "0/0 workloads" in text, "no workload checked is a failure")


def check_measures_and_rules(tmp):
    expect(golden.rel_l2([1.0, 2.0], [1.0, 2.0]) == 0.0, "rel_l2 of equal arrays is 0")
    expect(abs(golden.rel_l2([3.0, 4.0], [0.0, 4.0]) - 3.0 / 4.0) < 1e-12, "rel_l2 is relative to the second array")
    expect(golden.rel_l2([1.0], [0.0]) == float("inf"), "rel_l2 against an all-zero array that differs is inf")
    err, n = golden.over_tol([1.0, 100.0], [1.5, 100.5], {"atol": 0.1, "rtol": 0.01})
    expect(n == 1 and err.max() == 0.5, "over_tol: an element fails only past both atol and rtol")
    ok, _ = golden.allclose([1.0, 2.0, 3.5], [1.0, 2.0, 3.0], {"atol": 0.1, "rtol": 0.0, "matched_ratio": 0.6})
    expect(ok, "allclose: matched_ratio lets the allowed share fail")
    ok, _ = golden.allclose([1.0, 2.0, 3.5], [1.0, 2.0, 3.0], {"atol": 0.1, "rtol": 0.0, "matched_ratio": 0.9})
    expect(not ok, "allclose: past the allowed share fails")
    ok, _ = golden.allclose([1.0, 9.0], [1.0, 2.0], {"atol": 0.1, "rtol": 0.0, "matched_ratio": 0.5, "max_error_cap": 1.0})
    expect(not ok, "allclose: max_error_cap fails an allowed element that is too far off")
    ds = os.path.join(tmp, "dataset")
    os.makedirs(os.path.join(ds, "t"))
    with open(os.path.join(ds, "t", "definition.json"), "w") as f:
        json.dump({"outputs": {"y": {"compare": {"rule": "rel_l2", "tol": 0.01}}},
                   "scalars": {"eps": {"value": 1e-6}, "k": {"value": 4}}}, f)
    with open(os.path.join(ds, "t", "workloads.jsonl"), "w") as f:
        f.write(json.dumps({"uuid": "a"}) + "\n\n")
        f.write(json.dumps({"uuid": "b", "compare": {"y": {"tol": 0.05}}, "scalars": {"k": 8}}) + "\n")
    per, base = golden.compare_rules(ds, "t")
    expect(per["a"]["y"]["tol"] == 0.01 and per["b"]["y"] == {"rule": "rel_l2", "tol": 0.05} and base["y"]["tol"] == 0.01,
           "compare_rules: a workload's override replaces the definition's field only")
    sc, base_sc = golden.scalar_values(ds, "t")
    expect(sc["b"] == {"eps": 1e-6, "k": 8} and sc["a"] == base_sc, "scalar_values: a workload's scalars override")


def check_d2k_dump(tmp):
    """The layout as d2k writes it: `d2k check --dump` on the CPU path runs the golden as the
    target `reference`."""
    dump = os.path.join(tmp, "d2k")
    uuid = "histogram-check-n4099-b256"
    r = subprocess.run([D2K, "check", "--task", "histogram", "--impl", "reference", "--workloads", uuid,
                        "--dump", dump], cwd=SOURCE, capture_output=True, text=True, timeout=240)
    folder = os.path.join(dump, "histogram", uuid)
    expect(os.path.isdir(folder), f"d2k check --dump wrote {folder} (rc {r.returncode}: {r.stderr[-800:]})")
    if not os.path.isdir(folder):
        return
    print("     d2k wrote: " + ", ".join(sorted(os.listdir(folder))))
    ws = list(golden.workloads(dump, "histogram", "counts", golden="reference"))
    expect([w.uuid for w in ws] == [uuid], "workloads finds d2k's dump")
    code, text = run_report(histogram_check(dump, "reference"))
    expect(code == 0 and f"PASS {uuid}" in text, "d2k's golden dump agrees with numpy's bincount")
    path = os.path.join(folder, "reference.counts.npy")
    c = np.load(path)
    expect(c.dtype == np.uint32 and c.shape == (256,), "counts dumped as uint32 [B] (the definition's dtype and shape)")
    c[0] += 1
    np.save(path, c)
    code, text = run_report(histogram_check(dump, "reference"))
    expect(code == 1 and f"FAIL {uuid}" in text, "a count changed in d2k's dump fails")


with tempfile.TemporaryDirectory() as tmp:
    check_fixture(tmp)
    check_measures_and_rules(tmp)
    if D2K:
        check_d2k_dump(tmp)
    else:
        print("skip d2k check --dump: no d2k given")
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
