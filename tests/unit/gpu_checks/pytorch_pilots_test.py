"""The PyTorch-table check of the pilots (scripts/gpu/checks/pytorch-pilots.sh, pytorch-pilots/
do_bench.py and table.py) on a machine without torch or a GPU:
- do_bench.py --dry-run resolves every pilot's bench calls as d2k's shim would make them (the
  keyword names run() takes, the shapes, the scalars; axes and unused scalars left out), and bad
  arguments are errors naming the file;
- its input generators, on tiny shapes with a numpy stand-in for torch: hash_join's key structure
  (distinct build keys in the domain, a match_rate share of probes that hit, misses outside the
  build set) through both key paths, the workload's generator overrides;
- its timing path against numpy stand-ins for torch and triton.testing (no GPU): pytorch.py loaded
  through d2k's shim in both modes, prepared on every shape in workloads.jsonl's order before any
  timed call, the workload's scalars reaching run(), do_bench's times summarised per mode;
- table.py's 10 % verdicts, and the whole script against stand-ins for d2k and for the Python with
  torch: the targets it benches, the rows it skips, PASS when the stand-ins agree, FAIL when not.
Usage: pytorch_pilots_test.py SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1])
HERE = os.path.join(SRC, "scripts", "gpu", "checks", "pytorch-pilots")
sys.path.insert(0, HERE)
import do_bench  # noqa: E402

errors = []


def check(ok, what):
    if not ok:
        errors.append(what)
        print("ERROR:", what)


def run(*args, env=None, cwd=None):
    p = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    return p.returncode, p.stdout, p.stderr


# ---- the dry run over the pilots


def test_dry_run():
    rc, out, err = run(sys.executable, os.path.join(HERE, "do_bench.py"), "--dry-run",
                       "fused_add_rmsnorm", "muon_optimizer_step", "hash_join")
    check(rc == 0, "dry run of the pilots: rc %d: %s" % (rc, err))
    for task in ("fused_add_rmsnorm", "muon_optimizer_step", "hash_join"):
        with open(os.path.join(SRC, "dataset", task, "workloads.jsonl")) as f:
            for line in f:
                w = json.loads(line)
                if w["role"] == "bench":
                    check("%s %s: run(" % (task, w["uuid"]) in out, "dry run: no call for %s" % w["uuid"])
    calls = {line.split(": run(")[0]: line for line in out.splitlines() if ": run(" in line}
    rms = calls.get("fused_add_rmsnorm fused_add_rmsnorm-bench-128x7168", "")
    check("x=bfloat16[128, 7168] normal(mean=0, std=1)" in rms and "eps=1e-06" in rms and "T=" not in rms,
          "rmsnorm call: %s" % rms)
    muon = calls.get("muon_optimizer_step muon-16x1024x1024", "")
    check("param=float32[16, 1024, 1024]" in muon and "momentum_beta=0.95" in muon and "B=" not in muon,
          "muon call: %s" % muon)
    hj = calls.get("hash_join hash_join-bench-r1m-s100m-range2x", "")
    check("build_keys=int32[1048576] unique_keys(low=0, high=2097152)" in hj, "hash_join's range override: %s" % hj)
    check("count=int64[1] output" in hj and "match_rate=" not in hj.replace("match_rate=0.5)", ""),
          "hash_join call: count output, no match_rate argument (run() does not take it): %s" % hj)
    check("muon-8192x8192" in out.split("torch.compile prepared on")[2].splitlines()[0],
          "the compile order lists every selected shape")


def test_errors():
    rc, _, err = run(sys.executable, os.path.join(HERE, "do_bench.py"), "--dry-run", "no_such_task")
    check(rc == 1 and "no_such_task/definition.json: no such file" in err, "unknown task: rc %d %s" % (rc, err))
    rc, _, err = run(sys.executable, os.path.join(HERE, "do_bench.py"), "--dry-run", "hash_join=hash_join-check-x")
    check(rc == 1 and "workloads.jsonl: no bench workload hash_join-check-x" in err, "unknown workload: %s" % err)
    rc, _, err = run(sys.executable, os.path.join(HERE, "do_bench.py"), "--dry-run", "--rep-ms", "0", "hash_join")
    check(rc == 2 and "--rep-ms" in err, "rep 0 refused: %s" % err)
    with tempfile.TemporaryDirectory() as d:
        t = os.path.join(d, "toy")
        os.makedirs(t)
        with open(os.path.join(t, "definition.json"), "w") as f:
            json.dump({"name": "toy", "axes": {"N": {"type": "var"}, "M": {"type": "expr", "expr": "N / 3"}},
                       "scalars": {"alpha": {"type": "float", "value": 2}},
                       "inputs": {"x": {"shape": ["M"], "dtype": "fp32", "generator": {"kind": "normal"}}},
                       "outputs": {"y": {"shape": ["M"], "dtype": "fp32"}}}, f)
        with open(os.path.join(t, "workloads.jsonl"), "w") as f:
            f.write('{"uuid": "toy-1", "role": "bench", "axes": {"N": 10}, "scalars": {"alpha": 3}}\n')
        with open(os.path.join(t, "pytorch.py"), "w") as f:
            f.write("def run(**kw):\n    pass\n")
        rc, out, err = run(sys.executable, os.path.join(HERE, "do_bench.py"), "--dry-run", "--dataset", d, "toy")
        check(rc == 0 and "x=float32[3] normal()" in out and "alpha=3.0" in out and "N=10" in out and "M=3" in out,
              "**kwargs gets every scalar and axis; expr axis with C division; workload scalar: %s %s" % (out, err))
        with open(os.path.join(t, "pytorch.py"), "w") as f:
            f.write("def other(x):\n    pass\n")
        rc, _, err = run(sys.executable, os.path.join(HERE, "do_bench.py"), "--dry-run", "--dataset", d, "toy")
        check(rc == 1 and "pytorch.py defines no module-level run" in err, "no run(): %s" % err)
        with open(os.path.join(t, "pytorch.py"), "w") as f:
            f.write("def run(x, y, beta):\n    pass\n")
        rc, _, err = run(sys.executable, os.path.join(HERE, "do_bench.py"), "--dry-run", "--dataset", d, "toy")
        check(rc != 0 and "beta" in err, "run() naming a parameter the task lacks is an error: rc %d %s" % (rc, err))


# ---- the generators on a numpy stand-in


class NumpyArrays:
    """do_bench.TorchArrays' operations in numpy (float32 for bfloat16: numpy has none)."""

    def __init__(self, np, seed):
        self.np, self.rng = np, np.random.default_rng(seed)

    def normal(self, n):
        return self.rng.standard_normal(n, dtype=self.np.float32)

    def rand(self, n):
        return self.rng.random(n, dtype=self.np.float32)

    def randint(self, low, high, n):
        return self.rng.integers(low, high, n, dtype=self.np.int64)

    def randperm(self, n):
        return self.rng.permutation(n)

    def unique(self, x):
        return self.np.unique(x)

    def member(self, sorted_keys, x):
        pos = self.np.searchsorted(sorted_keys, x).clip(max=sorted_keys.shape[0] - 1)
        return sorted_keys[pos] == x

    def where(self, mask, a, b):
        return self.np.where(mask, a, b)

    def cat(self, parts):
        return self.np.concatenate(parts)

    def arange(self, n):
        return self.np.arange(n, dtype=self.np.float64)

    def full(self, n, value):
        return self.np.full(n, value, dtype=self.np.float64)

    def finish(self, x, dtype, shape):
        return x.astype({"bfloat16": "float32"}.get(dtype, dtype)).reshape(shape)

    def empty(self, dtype, shape):
        return self.np.empty(shape, dtype={"bfloat16": "float32"}.get(dtype, dtype))


def hash_join_plan(low, high, R=1000, S=20000):
    definition, _ = do_bench.read_task(os.path.join(SRC, "dataset"), "hash_join")
    w = {"uuid": "t", "role": "bench", "axes": {"R": R, "S": S}}
    if low is not None:
        w["inputs"] = {"build_keys": {"generator": {"kind": "unique_keys", "low": low, "high": high}}}
    return do_bench.plan(definition, w)


def check_keys(np, xp, p, what):
    t = do_bench.make_inputs(xp, p)
    gen = [g for n, _, _, g in p["inputs"] if n == "build_keys"][0]
    low, high = gen["low"], gen["high"]
    b, probe = t["build_keys"], t["probe_keys"]
    check(b.dtype == np.int32 and t["probe_payload"].dtype == np.int32, what + ": int32 columns")
    check(len(np.unique(b)) == len(b), what + ": build keys distinct")
    check(b.min() >= low and b.max() < high, what + ": build keys in [%d, %d)" % (low, high))
    check(not np.all(np.diff(b.astype(np.int64)) > 0), what + ": build keys in random order, not sorted")
    hit = np.isin(probe, b)
    share = hit.mean()
    check(0.47 < share < 0.53, what + ": probe match share %.3f (match_rate 0.5)" % share)
    check(probe.min() >= low and probe.max() < high, what + ": probe keys in the domain")
    check(len(np.unique(probe[hit])) > 0.9 * len(b), what + ": hits spread over the build keys")
    check(len(np.unique(t["probe_payload"])) > 0.99 * len(probe), what + ": random payloads, not zeros")


def test_generators():
    try:
        import numpy as np
    except ImportError:
        print("SKIP generators: no numpy")
        return
    xp = NumpyArrays(np, 7)
    check_keys(np, xp, hash_join_plan(0, 2000), "range2x (permutation path)")
    check_keys(np, xp, hash_join_plan(None, None), "wide domain 2^31 (rejection path)")
    saved = do_bench.PERMUTATION_MAX
    do_bench.PERMUTATION_MAX = 1000  # a 2R domain above it: rejection with half the draws taken
    try:
        check_keys(np, xp, hash_join_plan(0, 2000), "range2x through the rejection path")
    finally:
        do_bench.PERMUTATION_MAX = saved
    definition, workloads = do_bench.read_task(os.path.join(SRC, "dataset"), "fused_add_rmsnorm")
    p = do_bench.plan(definition, {"uuid": "t", "axes": {"T": 64, "H": 256},
                                   "inputs": {"x": {"generator": {"std": 3}},
                                              "residual": {"generator": {"kind": "uniform", "low": 5, "high": 6}}}})
    gens = {n: g for n, _, _, g in p["inputs"]}
    check(gens["x"] == {"kind": "normal", "mean": 0, "std": 3}, "same-kind override merges: %s" % gens["x"])
    check(gens["residual"] == {"kind": "uniform", "low": 5, "high": 6}, "other-kind override replaces: %s" % gens["residual"])
    t = do_bench.make_inputs(xp, p)
    check(t["x"].shape == (64, 256) and 2.5 < t["x"].std() < 3.5, "x: normal std 3, shape [T, H]")
    check(5 <= t["residual"].min() and t["residual"].max() <= 6, "residual: uniform [5, 6]")
    w = t["weight"]
    check(w.shape == (256,) and 0.5 <= w.min() and w.max() <= 1.5 and w.std() > 0.1, "weight: uniform [0.5, 1.5]")


# ---- the timing path against a numpy stand-in for torch and triton.testing

FAKE_TORCH = r"""
import contextlib, json, os
import numpy as np
__version__ = "stand-in"


class dtype:
    def __init__(self, name, np_dtype, floating, itemsize):
        self.name, self.np, self.is_floating_point, self.itemsize = name, np_dtype, floating, itemsize


float32, float64 = dtype("float32", np.float32, True, 4), dtype("float64", np.float64, True, 8)
bfloat16, float16 = dtype("bfloat16", np.float32, True, 2), dtype("float16", np.float16, True, 2)
int32, int64, bool = dtype("int32", np.int32, False, 4), dtype("int64", np.int64, False, 8), dtype("bool", np.bool_, False, 1)


class Tensor(np.ndarray):
    def to(self, dt):
        return self.astype(dt.np).view(Tensor)

    def clamp_(self, max=None):
        np.minimum(self, max, out=self)
        return self


def _t(a):
    return np.asarray(a).view(Tensor)


def _shape(s):
    return (s,) if isinstance(s, int) else tuple(s)


class Generator:
    def __init__(self, device=None):
        self.rng = np.random.default_rng(0)

    def manual_seed(self, seed):
        self.rng = np.random.default_rng(seed)
        return self


_default = Generator()
randn = lambda s, device=None, generator=None, dtype=None: _t((generator or _default).rng.standard_normal(_shape(s)).astype(np.float32))
rand = lambda s, device=None, generator=None: _t((generator or _default).rng.random(_shape(s), dtype=np.float32))
randint = lambda lo, hi, s, device=None, generator=None, dtype=int64: _t((generator or _default).rng.integers(lo, hi, _shape(s)).astype(dtype.np))
randperm = lambda n, device=None, generator=None: _t((generator or _default).rng.permutation(n))
zeros = lambda s, device=None, dtype=float32: _t(np.zeros(_shape(s), dtype.np))
empty = lambda s, dtype=float32, device=None: _t(np.full(_shape(s), 7, dtype.np))
full = lambda s, v, device=None, dtype=float32: _t(np.full(_shape(s), v, dtype.np))
arange = lambda n, device=None, dtype=int64: _t(np.arange(n, dtype=dtype.np))
unique = lambda x: _t(np.unique(x))
searchsorted = lambda s, x: _t(np.searchsorted(s, x))
where = lambda m, a, b: _t(np.where(m, a, b))
cat = lambda parts: _t(np.concatenate(parts))


def compile(fn, dynamic=None):
    def compiled(**kw):
        with open(os.environ["RUNLOG"], "a") as f:
            f.write(json.dumps({"compiled": True}) + "\n")
        return fn(**kw)
    return compiled


class _Cuda:
    Stream = ExternalStream = lambda self=None, *a: object()

    @staticmethod
    @contextlib.contextmanager
    def stream(s):
        yield

    is_available = staticmethod(lambda: True)
    synchronize = staticmethod(lambda: None)
    empty_cache = staticmethod(lambda: None)
    get_device_name = staticmethod(lambda: "stand-in GPU")


cuda = _Cuda()
"""

FAKE_TRITON_TESTING = r"""
import json, os


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    with open(os.environ["RUNLOG"], "a") as f:
        f.write(json.dumps({"do_bench": [warmup, rep, return_mode]}) + "\n")
    for _ in range(3):
        fn()
    return [0.010, 0.030, 0.020, 0.040, 0.050] if return_mode == "all" else 0.03
"""

TOY_RUN = r"""import json, os
import torch


def run(x, keys, probe, y, alpha):
    with open(os.environ["RUNLOG"], "a") as f:
        f.write(json.dumps({"shape": list(x.shape), "alpha": alpha, "x_std": float(x.std()),
                            "keys_distinct": len(set(keys.tolist())) == keys.size}) + "\n")
    y[...] = x * alpha
"""


def test_timing_path():
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("SKIP timing path: no numpy")
        return
    with tempfile.TemporaryDirectory() as d:
        for rel, text in (("fake/torch/__init__.py", FAKE_TORCH), ("fake/triton/__init__.py", "__version__ = 'stand-in'\n"),
                          ("fake/triton/testing.py", FAKE_TRITON_TESTING), ("data/toy/pytorch.py", TOY_RUN)):
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        with open(os.path.join(d, "data/toy/definition.json"), "w") as f:
            json.dump({"name": "toy", "axes": {"N": {"type": "var"}}, "scalars": {"alpha": {"type": "float", "value": 2}},
                       "inputs": {"x": {"shape": ["N"], "dtype": "bfloat16", "generator": {"kind": "normal"}},
                                  "keys": {"shape": [64], "dtype": "int32", "generator": {"kind": "unique_keys", "high": 128}},
                                  "probe": {"shape": ["N"], "dtype": "int32",
                                            "generator": {"kind": "join_probe_keys", "build": "keys", "match_rate": 0.5}}},
                       "outputs": {"y": {"shape": ["N"], "dtype": "bfloat16"}}}, f)
        with open(os.path.join(d, "data/toy/workloads.jsonl"), "w") as f:
            f.write('{"uuid": "toy-c", "role": "check", "axes": {"N": 5}}\n')
            f.write('{"uuid": "toy-b", "role": "bench", "axes": {"N": 300}, "scalars": {"alpha": 3}}\n')
            f.write('{"uuid": "toy-a", "role": "bench", "axes": {"N": 100}}\n')
        runlog, out_json = os.path.join(d, "run.log"), os.path.join(d, "db.jsonl")
        env = dict(os.environ, RUNLOG=runlog, PYTHONPATH=os.path.join(d, "fake"))
        rc, out, err = run(sys.executable, os.path.join(HERE, "do_bench.py"), "--dataset", os.path.join(d, "data"),
                           "--rep-ms", "123", "--warm-calls", "2", "--json", out_json, "toy=toy-a,toy-b", env=env)
        check(rc == 0, "timing path: rc %d\n%s\n%s" % (rc, out, err))
        with open(runlog) as f:
            log = [json.loads(line) for line in f]
        with open(out_json) as f:
            recs = [json.loads(line) for line in f]
        check([(r["workload"], r["mode"]) for r in recs] ==
              [("toy-b", "eager"), ("toy-b", "compile"), ("toy-a", "eager"), ("toy-a", "compile")],
              "one line per workload and mode, in workloads.jsonl's order: %s" % recs)
        check(all(r["median_us"] == 30.0 and r["reps"] == 5 and r["p10_us"] == 10.0 and r["p90_us"] == 50.0
                  for r in recs), "median, quantiles and reps of do_bench's times: %s" % recs[:1])
        check(out.count('"mode"') == 4, "the JSON lines also go to stdout")
        calls = [e for e in log if "shape" in e]
        # eager: prepare on both shapes (stand-ins: alpha from the definition), then compile's prepare,
        # then per workload 2 warm calls + 3 in do_bench per mode.
        check([c["shape"] for c in calls[:4]] == [[300], [100], [300], [100]], "prepare in workloads.jsonl's order: %s" % calls[:4])
        real = calls[4:]
        check(len(real) == 2 * 2 * (2 + 3), "warm calls and do_bench calls: %d" % len(real))
        check([c["alpha"] for c in real] == [3.0] * 10 + [2.0] * 10, "the workload's scalar override reaches run()")
        check(all(c["x_std"] > 0.5 and c["keys_distinct"] for c in real), "random inputs, distinct keys")
        check(sum(1 for e in log if e.get("compiled")) == 2 + 2 * 5, "compile mode runs torch.compile's function")
        check([e["do_bench"] for e in log if "do_bench" in e] == [[50.0, 123.0, "all"]] * 4, "do_bench's warmup and rep")


# ---- table.py


def trace(uuid, target, median, status="PASSED"):
    rec = {"workload": {"uuid": uuid, "role": "bench", "axes": {}}, "target": target, "status": status}
    if status == "PASSED":
        rec["performance"] = {"median_us": median, "timer": "events_corrected", "rel_noise": 0.004, "samples": 900}
    return json.dumps(rec)


def test_table():
    with tempfile.TemporaryDirectory() as d:
        d2k, db = os.path.join(d, "d2k.jsonl"), os.path.join(d, "db.jsonl")
        with open(d2k, "w") as f:
            for uuid, eager, comp in (("w1", 100.0, 50.0), ("w2", 200.0, 80.0)):
                for target, m in (("naive", 400.0), ("expert", 30.0), ("torch_eager", eager), ("torch_compile", comp)):
                    f.write(trace(uuid, target, m) + "\n")
        with open(db, "w") as f:
            for uuid, mode, m in (("w1", "eager", 95.0), ("w1", "compile", 40.0), ("w2", "eager", 210.0)):
                f.write(json.dumps({"task": "t", "workload": uuid, "mode": mode, "median_us": m, "reps": 50}) + "\n")
            f.write(json.dumps({"task": "other", "workload": "w2", "mode": "compile", "median_us": 80.0}) + "\n")
        rc, out, _ = run(sys.executable, os.path.join(HERE, "table.py"), "--task", "t", d2k, db)
        lines = out.splitlines()
        check(any(l.startswith("| w1 | 400.00 | 30.00 | - | 100.00 | 50.00 | 95.00 | 40.00 | 1.053 | 1.250 |") for l in lines),
              "table row w1:\n" + out)
        check(any(l.startswith("PASS w1 torch_eager within 10% of do_bench eager") for l in lines), "w1 eager PASS")
        check(any(l.startswith("FAIL w1 torch_compile within 10% of do_bench compile") for l in lines), "w1 compile FAIL")
        check(any(l.startswith("PASS w2 torch_eager") for l in lines), "w2 eager PASS (0.952x)")
        check(any(l.startswith("FAIL w2 torch_compile: no do_bench figure") for l in lines),
              "w2 compile: no do_bench figure (another task's line is not read)")
        check(rc == 2, "exit status 2 (two FAIL lines), got %d:\n%s" % (rc, out))
        with open(d2k, "a") as f:
            f.write(trace("w1", "library", 0, status="INCORRECT_NUMERICAL") + "\n")
        rc, out, _ = run(sys.executable, os.path.join(HERE, "table.py"), "--task", "t", d2k, os.path.join(d, "none"))
        check("NOT PASSED library w1: INCORRECT_NUMERICAL" in out and "NOT MEASURED" in out and rc == 6,
              "failed record and missing do_bench file counted: rc %d\n%s" % (rc, out))


# ---- the whole script against stand-ins

STAND_IN_D2K = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
with open(os.environ["CALLS"], "a") as f:
    f.write("d2k " + " ".join(a) + "\n")
opt = lambda k: a[a.index(k) + 1]
with open(opt("--json"), "w") as f:
    for u in opt("--workloads").split(","):
        for t in opt("--targets").split(","):
            f.write(json.dumps({"workload": {"uuid": u, "role": "bench", "axes": {}}, "target": t,
                                "status": "PASSED", "performance": {"median_us": 100.0}}) + "\n")
'''

STAND_IN_PY = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
with open(os.environ["CALLS"], "a") as f:
    f.write("python " + " ".join(a) + "\n")
if a[0] == "-c":
    print("python 3.12 torch 2.11 triton 3.6 cuda True")
    sys.exit(0)
path, (task, wl) = a[a.index("--json") + 1], a[-1].split("=")
with open(path, "a") as f:
    for u in wl.split(","):
        for mode in ("eager", "compile"):
            f.write(json.dumps({"task": task, "workload": u, "mode": mode,
                                "median_us": 100.0 * float(os.environ["FACTOR"])}) + "\n")
'''


def test_script():
    with tempfile.TemporaryDirectory() as w:
        root = os.path.join(w, "root")
        os.makedirs(os.path.join(root, "scripts", "gpu"))
        shutil.copytree(os.path.join(SRC, "scripts", "gpu", "checks"), os.path.join(root, "scripts", "gpu", "checks"))
        with open(os.path.join(root, "scripts", "gpu", "env.sh"), "w") as f:
            f.write(": # stand-in for env.sh\n")
        os.symlink(os.path.join(SRC, "dataset"), os.path.join(root, "dataset"))
        os.makedirs(os.path.join(root, "src", "tracks"))
        os.symlink(os.path.join(SRC, "src", "tracks", "python"), os.path.join(root, "src", "tracks", "python"))
        carry = os.path.join(w, "carry")
        os.makedirs(carry)
        for path, text in ((os.path.join(carry, "d2k"), STAND_IN_D2K), (os.path.join(w, "py"), STAND_IN_PY)):
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        for factor, want in (("1.05", 0), ("1.25", 22)):
            calls = os.path.join(w, "calls" + factor)
            env = dict(os.environ, CALLS=calls, FACTOR=factor, D2K_PYTHON=os.path.join(w, "py"))
            env.pop("D2K_CHECK_STEPS", None)
            env.pop("PYTORCH_PILOTS_SKIP", None)
            rc, out, err = run("bash", "scripts/gpu/checks/pytorch-pilots.sh", carry, os.path.join(w, "out" + factor),
                               env=env, cwd=root)
            what = "script (do_bench at %sx d2k)" % factor
            check(rc == want, "%s: exit %d, want %d\n%s\n%s" % (what, rc, want, out, err))
            check(out.rstrip().endswith("pytorch-pilots: %d failure(s)" % want), what + ": last line")
            check("unbound variable" not in err + out and "command not found" not in err + out, what + ": shell error")
            cells = [l for l in out.splitlines() if " within 10% of do_bench " in l]
            check(len(cells) == 22, "%s: %d PyTorch cells (4 + 4 + 3 workloads, two each)" % (what, len(cells)))
            check(out.count("== bench_") == 3 and out.count("== do_bench_") == 3, what + ": wall per step printed")
            with open(calls) as f:
                log = f.read()
            check("SKIP muon_optimizer_step muon-8192x8192" in out and "muon-8192x8192" not in log,
                  what + ": muon's 8192x8192 row skipped")
            for task in ("fused_add_rmsnorm", "hash_join", "muon_optimizer_step"):
                bench = [l for l in log.splitlines() if l.startswith("d2k bench --task %s " % task)]
                lib = ",library" if task == "muon_optimizer_step" else ""
                check(len(bench) == 1 and "--targets naive,expert%s,torch_eager,torch_compile " % lib in bench[0],
                      "%s: bench targets: %s" % (task, bench))
                wl = bench[0].split("--workloads ")[1].split()[0] if bench else "?"
                check("python %s/do_bench.py --json" % "scripts/gpu/checks/pytorch-pilots" in log and
                      "%s=%s" % (task, wl) in log, "%s: do_bench.py on the bench's workloads %s" % (task, wl))


test_dry_run()
test_errors()
test_generators()
test_timing_path()
test_table()
test_script()
if errors:
    print("%d error(s)" % len(errors))
    sys.exit(1)
print("OK: dry run, errors, generators, table and script of the PyTorch pilots check")
