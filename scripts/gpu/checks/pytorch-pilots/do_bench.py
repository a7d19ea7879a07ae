"""A task's pytorch.py timed by triton.testing.do_bench: the independent figure that d2k's
torch_eager and torch_compile targets are checked against (issue #14, docs/tracks.md).

For each bench workload named, the inputs d2k would draw (shapes, dtypes, generators and scalars
from definition.json and the workload's overrides in workloads.jsonl; fresh random values from this
process's own generator, not d2k's seeds) are built on the GPU, pytorch.py is loaded the way d2k's
worker loads it (src/tracks/python/d2k_shim.py: `load` imports it and wraps `run` in torch.compile
with Inductor's emulate_precision_casts for the compiled mode, `prepare` calls it once per workload
shape in workloads.jsonl's order on stand-in tensors, `_kwargs` maps the task's names onto run's
parameters), and each mode is timed by `triton.testing.do_bench` (a 256 MB buffer zeroed before
every timed call: cold L2; CUDA events around each call). Nothing of d2k's timer is used: the shim
contributes only the loading and the argument mapping, so that both sides run the same program.

Output, one JSON line per workload and mode:
  {"task", "workload", "mode": "eager"|"compile", "median_us", "p10_us", "p90_us", "reps",
   "warm_s", "prepare_s"}  (or "error" instead of the times; prepare_s: d2k_shim.prepare over every
   selected shape, torch.compile's compilations included)
Exit status: the number of workload-mode pairs that failed.

--dry-run needs only python3 (no torch, no GPU): it resolves every workload's call (the keyword
arguments run() gets, each tensor's shape, dtype and generator, the scalars) and prints it.

Usage: do_bench.py [--dataset DIR] [--rep-ms MS] [--warmup-ms MS] [--seed N] [--json FILE]
                   [--dry-run] TASK[=UUID,UUID...] ...     (no UUIDs: every bench workload of TASK)
"""
import argparse
import ast
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.environ.get("D2K_PYTHON_SHIM_DIR") or os.path.join(REPO, "src", "tracks", "python"))
import d2k_shim  # noqa: E402  (loading and argument mapping only: no timer)

# definition.json's dtype aliases (src/core/dtype.cpp parse_dtype).
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64",
                 "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}
# unique_keys domains up to this size are drawn as a prefix of a random permutation of the whole
# domain (a set that is exact and cheap: 2 GB of int64 at 2^28); wider ones by rejection.
PERMUTATION_MAX = 1 << 28


class TaskError(Exception):
    """Bad task files or arguments: the message names the file, field or argument."""


# ---- the task's files ------------------------------------------------------------------------


class _CDiv(ast.NodeTransformer):
    """d2k's expression language divides integers with truncation (docs/task-format.md)."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Div):
            return ast.copy_location(ast.Call(ast.Name("_div", ast.Load()), [node.left, node.right], []), node)
        return node


def _div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


EXPR_FUNCS = {"min": min, "max": max, "floor": lambda x: int(math.floor(x)), "ceil": lambda x: int(math.ceil(x)),
              "ceil_div": lambda a, b: -(-a // b), "log2": math.log2, "sqrt": math.sqrt, "_div": _div}


def evaluate(expr, env, where):
    """An axis or shape expression (an int, an axis name, or arithmetic over axes) at `env`."""
    if isinstance(expr, int):
        return expr
    try:
        tree = ast.fix_missing_locations(_CDiv().visit(ast.parse(str(expr), mode="eval")))
        value = eval(compile(tree, where, "eval"), {"__builtins__": {}}, {**EXPR_FUNCS, **env})  # the task's own files
    except Exception as e:
        raise TaskError("%s: cannot evaluate %r: %s" % (where, expr, e)) from None
    return int(value) if isinstance(value, float) and value.is_integer() else value


def read_task(dataset, task):
    """(definition, [workload, ...] in file order) of dataset/TASK."""
    folder = os.path.join(dataset, task)
    path = os.path.join(folder, "definition.json")
    if not os.path.isfile(path):
        raise TaskError("%s: no such file (is %r a task of %s?)" % (path, task, dataset))
    try:
        with open(path) as f:
            definition = json.load(f)
    except json.JSONDecodeError as e:
        raise TaskError("%s: %s" % (path, e)) from None
    workloads = []
    wpath = os.path.join(folder, "workloads.jsonl")
    if not os.path.isfile(wpath):
        raise TaskError("%s: no such file" % wpath)
    with open(wpath) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    workloads.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise TaskError("%s:%d: %s" % (wpath, n, e)) from None
    return definition, workloads


def select_workloads(workloads, wanted, path):
    """The bench workloads named in `wanted` (all of them when empty), in workloads.jsonl's order:
    the order d2k's prepare step compiles them in, which decides torch.compile's recompilations."""
    benches = [w for w in workloads if w.get("role") == "bench"]
    known = {w["uuid"] for w in benches}
    unknown = [u for u in wanted if u not in known]
    if unknown:
        raise TaskError("%s: no bench workload %s (bench workloads: %s)" % (path, ", ".join(unknown), ", ".join(sorted(known))))
    return [w for w in benches if not wanted or w["uuid"] in wanted]


def resolve_axes(definition, workload):
    """Every axis value at `workload`: var axes from the workload, const values, expr axes."""
    axes = {}
    for name, spec in definition.get("axes", {}).items():
        kind = spec.get("type")
        if kind == "var":
            if name not in workload.get("axes", {}):
                raise TaskError("workloads.jsonl: %s: axes.%s: missing" % (workload["uuid"], name))
            axes[name] = int(workload["axes"][name])
        elif kind == "const":
            axes[name] = int(spec["value"])
    for name, spec in definition.get("axes", {}).items():
        if spec.get("type") == "expr":
            axes[name] = evaluate(spec["expr"], axes, "definition.json: axes.%s.expr" % name)
    return axes


def effective_generator(spec, override, where):
    """The definition's generator with the workload's override merged field by field; an override
    that names another kind replaces it (docs/task-format.md, `effective_generator`)."""
    gen = dict(spec.get("generator") or {})
    if override:
        gen = dict(override) if "kind" in override and override["kind"] != gen.get("kind") else {**gen, **override}
    if "kind" not in gen:
        raise TaskError("%s: no generator" % where)
    return gen


def plan(definition, workload):
    """What one call of the workload gets: {"inputs": [(name, dtype, shape, generator)],
    "outputs": [(name, dtype, shape)], "scalars": {name: value} (the axes, then the task's scalars)}."""
    axes = resolve_axes(definition, workload)
    overrides = workload.get("inputs", {})

    def tensors(section, with_generator):
        out = []
        for name, spec in definition.get(section, {}).items():
            where = "definition.json: %s.%s" % (section, name)
            dtype = DTYPE_ALIASES.get(spec["dtype"], spec["dtype"])
            shape = [evaluate(d, axes, where + ".shape") for d in spec["shape"]]
            if with_generator:
                gen = effective_generator(spec, overrides.get(name, {}).get("generator"), where)
                out.append((name, dtype, shape, gen))
            else:
                out.append((name, dtype, shape))
        return out

    scalars = dict(axes)  # every axis, then the task's scalars (src/engine/plan.cpp)
    for name, spec in definition.get("scalars", {}).items():
        value = workload.get("scalars", {}).get(name, spec["value"])
        scalars[name] = float(value) if spec.get("type") == "float" else int(value)
    return {"inputs": tensors("inputs", True), "outputs": tensors("outputs", False), "scalars": scalars}


def abi_of(definition):
    """The abi.json d2k writes beside a Python target (src/tracks/python_track.cpp python_abi_json)."""
    def tensors(section):
        return [{"name": n, "dtype": DTYPE_ALIASES.get(s["dtype"], s["dtype"]), "shape": s["shape"]}
                for n, s in definition.get(section, {}).items()]
    scalars = {n: (float(s["value"]) if s.get("type") == "float" else int(s["value"]))
               for n, s in definition.get("scalars", {}).items()}
    return {"task": definition.get("name"), "inputs": tensors("inputs"), "outputs": tensors("outputs"), "scalars": scalars}


def run_params(path):
    """run()'s keyword names in `path` read without importing it (the dry run has no torch), as
    d2k_shim._signature reads them: None when run takes **kwargs."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            if node.args.kwarg is not None:
                return None
            return [a.arg for a in node.args.args + node.args.kwonlyargs]
    raise TaskError("%s defines no module-level run(...)" % path)


def call_kwargs(loaded, tensors, scalars):
    """The keyword arguments d2k's shim passes: tensors by name, the task's scalars, axes only
    where run() names them (d2k_shim._kwargs, the same function)."""
    return d2k_shim._kwargs(loaded, list(tensors), list(tensors.values()), scalars)


# ---- inputs ----------------------------------------------------------------------------------


class TorchArrays:
    """The array operations the generators need, on the GPU with torch."""

    def __init__(self, torch, device, seed):
        self.t, self.device = torch, device
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed)

    def normal(self, n):
        return self.t.randn(n, device=self.device, generator=self.gen)

    def rand(self, n):
        return self.t.rand(n, device=self.device, generator=self.gen)

    def randint(self, low, high, n):
        return self.t.randint(low, high, (n,), device=self.device, generator=self.gen, dtype=self.t.int64)

    def randperm(self, n):
        return self.t.randperm(n, device=self.device, generator=self.gen)

    def unique(self, x):
        return self.t.unique(x)  # sorted

    def member(self, sorted_keys, x):
        """Whether each element of x is in sorted_keys (a sorted, non-empty 1-D tensor)."""
        pos = self.t.searchsorted(sorted_keys, x).clamp_(max=sorted_keys.shape[0] - 1)
        return sorted_keys[pos] == x

    def where(self, mask, a, b):
        return self.t.where(mask, a, b)

    def cat(self, parts):
        return self.t.cat(parts)

    def arange(self, n):
        return self.t.arange(n, device=self.device, dtype=self.t.float64)

    def full(self, n, value):
        return self.t.full((n,), value, device=self.device, dtype=self.t.float64)

    def finish(self, x, dtype, shape):
        return x.to(getattr(self.t, dtype)).reshape(shape)

    def empty(self, dtype, shape):
        return self.t.empty(shape, dtype=getattr(self.t, dtype), device=self.device)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _unique_keys(xp, gen, n, name):
    """n distinct keys of [low, high) in random order; returns (keys as int64, domain state for a
    join_probe_keys input that names this one). d2k draws low + perm(i) with a keyed Feistel
    permutation of the domain; here a prefix of a random permutation (domains up to 2^28), or
    random draws with duplicates removed and the survivors shuffled (wider domains). Both give n
    uniformly chosen distinct keys in random order; only the generator differs."""
    low = int(gen.get("low", 0))
    domain = int(gen.get("high", low + n)) - low
    if domain < n:
        raise TaskError("%s: unique_keys: [low, high) holds %d keys, fewer than %d" % (name, domain, n))
    if domain <= PERMUTATION_MAX:
        perm = xp.randperm(domain)
        return perm[:n] + low, {"low": low, "domain": domain, "n": n, "perm": perm}
    chosen = xp.unique(xp.randint(0, domain, n + n // 16 + 64))
    while chosen.shape[0] < n:  # collisions: about n^2 / (2 domain) of them
        chosen = xp.unique(xp.cat([chosen, xp.randint(0, domain, n - chosen.shape[0] + 64)]))
    ranks = chosen[xp.randperm(chosen.shape[0])[:n]]
    return ranks + low, {"low": low, "domain": domain, "n": n, "sorted": xp.unique(ranks)}


def _join_probe_keys(xp, gen, n, state, name):
    """A match_rate share of build keys (drawn with repetition), the rest keys of the build's
    domain that are not build keys, as d2k's join_probe_keys draws them."""
    if state is None:
        raise TaskError("%s: join_probe_keys: build %r is not a unique_keys input drawn before it" % (name, gen.get("build")))
    match = xp.rand(n) < float(gen["match_rate"])
    hits = state["keys"][xp.randint(0, state["n"], n)]
    others = state["domain"] - state["n"]
    if others <= 0:
        return hits
    if "perm" in state:
        misses = state["perm"][state["n"] + xp.randint(0, others, n)] + state["low"]
        return xp.where(match, hits, misses)
    misses = xp.randint(0, state["domain"], n)
    for _ in range(64):  # redraw the draws that hit a build key (a share n/domain of them)
        taken = xp.member(state["sorted"], misses)
        if not bool(taken.any()):
            break
        misses = xp.where(taken, xp.randint(0, state["domain"], n), misses)
    return xp.where(match, hits, misses + state["low"])


def make_inputs(xp, p):
    """{name: array} for the inputs of plan `p`, drawn with `xp` (TorchArrays, or a stand-in)."""
    out, keys = {}, {}
    for name, dtype, shape, gen in p["inputs"]:
        n, kind = _numel(shape), gen["kind"]
        if kind == "normal":
            x = xp.normal(n) * float(gen.get("std", 1)) + float(gen.get("mean", 0))
        elif kind == "uniform":
            low = float(gen.get("low", 0))
            x = xp.rand(n) * (float(gen.get("high", 1)) - low) + low
        elif kind == "randint":
            x = xp.randint(int(gen["low"]), int(gen["high"]), n)
        elif kind == "const":
            x = xp.full(n, gen["value"])
        elif kind == "arange":
            x = xp.arange(n) * gen.get("step", 1) + gen.get("start", 0)
        elif kind == "unique_keys":
            x, keys[name] = _unique_keys(xp, gen, n, name)
            keys[name]["keys"] = x
        elif kind == "join_probe_keys":
            x = _join_probe_keys(xp, gen, n, keys.get(gen.get("build")), name)
        else:
            raise TaskError("definition.json: inputs.%s.generator.kind: %r is not drawn by do_bench.py "
                            "(normal, uniform, randint, const, arange, unique_keys, join_probe_keys)" % (name, kind))
        out[name] = xp.finish(x, dtype, shape)
    return out


# ---- the dry run -----------------------------------------------------------------------------


def _describe(gen):
    fields = ", ".join("%s=%s" % (k, v) for k, v in gen.items() if k != "kind")
    return "%s(%s)" % (gen["kind"], fields)


def dry_run(task, pytorch_py, definition, selected, args):
    """Prints each workload's call without torch: the keyword arguments, shapes and generators."""
    loaded = d2k_shim.Loaded(pytorch_py, "torch_eager", None, run_params(pytorch_py), abi_of(definition))
    order = ", ".join(w["uuid"] for w in selected)
    print("%s: pytorch.py %s; run(%s)" % (task, pytorch_py, ", ".join(loaded.params or ["**kwargs"])))
    print("%s: torch.compile prepared on %d shape(s) in this order: %s" % (task, len(selected), order))
    for w in selected:
        p = plan(definition, w)
        desc = {n: "%s%s %s" % (dt, shape, _describe(g)) for n, dt, shape, g in p["inputs"]}
        desc.update({n: "%s%s output" % (dt, shape) for n, dt, shape in p["outputs"]})
        kw = call_kwargs(loaded, desc, p["scalars"])
        nbytes = sum(_numel(s) * _itemsize(dt) for _, dt, s, *_ in p["inputs"] + p["outputs"])
        print("%s %s: run(%s)  [%.1f MB of tensors]" % (task, w["uuid"], ", ".join("%s=%s" % kv for kv in kw.items()),
                                                        nbytes / 1e6))
        for mode, fn in (("eager", "run"), ("compile", "torch.compile(run)")):
            print("  %s: %d calls, then do_bench(lambda: %s(**kw), warmup=%g, rep=%g, return_mode='all')" % (
                mode, args.warm_calls, fn, args.warmup_ms, args.rep_ms))


def _itemsize(dtype):
    return {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
            "uint8": 1, "uint32": 4, "float8_e4m3fn": 1, "float8_e5m2": 1, "bool": 1}.get(dtype, 4)


# ---- timing ----------------------------------------------------------------------------------


def load_modes(torch, pytorch_py, definition, selected, stream):
    """{mode: (Loaded, prepare_s)}: pytorch.py loaded as d2k's two targets and prepared on every
    selected shape, as d2k's worker does before its first call (compile time outside the timing)."""
    modes = {}
    # d2k's prepare gets each workload's var axes as given (src/tracks/target.h WorkloadShape).
    shapes = json.dumps([{"uuid": w["uuid"], "axes": w.get("axes", {})} for w in selected])
    for mode, shim_mode in (("eager", "torch_eager"), ("compile", "torch_compile")):
        loaded, err = d2k_shim.load(pytorch_py, shim_mode)
        if err:
            raise TaskError(err)
        loaded.abi = abi_of(definition)
        t0 = time.time()
        with torch.cuda.stream(stream):
            err = d2k_shim.prepare(loaded, shapes)
        torch.cuda.synchronize()
        if err:
            print("%s prepare: %s" % (mode, err.splitlines()[0]), file=sys.stderr)
        modes[mode] = (loaded, time.time() - t0)
    return modes


def do_bench_times(triton, fn, args):
    """do_bench's per-call times (ms): every one where this Triton can return them, else its median."""
    try:
        times = triton.testing.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="all")
        if isinstance(times, (list, tuple)):
            return list(times)
    except (AssertionError, TypeError, ValueError):
        pass
    return [triton.testing.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median")]


def time_one(torch, triton, loaded, kw, stream, args):
    """{median_us, p10_us, p90_us, reps, warm_s} of one mode: a few calls first (torch.compile's
    recompilation on the real inputs' guards happens there), then do_bench."""
    def fn():
        loaded.fn(**kw)

    with torch.cuda.stream(stream):
        t0 = time.time()
        for _ in range(args.warm_calls):
            fn()
        torch.cuda.synchronize()
        warm_s = time.time() - t0
        times = sorted(do_bench_times(triton, fn, args))
    q = (lambda f: times[min(len(times) - 1, int(f * len(times)))])
    return {"median_us": statistics.median(times) * 1e3, "p10_us": q(0.1) * 1e3, "p90_us": q(0.9) * 1e3,
            "reps": len(times), "warm_s": round(warm_s, 3)}


def emit(rec, args):
    line = json.dumps(rec)
    print(line, flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(line + "\n")


def bench_task(task, pytorch_py, definition, selected, args):
    """Times both modes on every selected workload; prints a JSON line each; returns the failures."""
    import torch
    import triton
    import triton.testing  # noqa: F401

    print("do_bench.py: %s: torch %s, triton %s, %s" % (task, torch.__version__, triton.__version__,
                                                        torch.cuda.get_device_name()), file=sys.stderr)
    stream = torch.cuda.Stream()
    modes = load_modes(torch, pytorch_py, definition, selected, stream)
    xp = TorchArrays(torch, "cuda", args.seed)
    failures = 0
    for w in selected:
        p = plan(definition, w)
        tensors = make_inputs(xp, p)
        tensors.update({n: xp.empty(dt, shape) for n, dt, shape in p["outputs"]})
        torch.cuda.synchronize()
        for mode, (loaded, prepare_s) in modes.items():
            rec = {"task": task, "workload": w["uuid"], "mode": mode}
            try:
                rec.update(time_one(torch, triton, loaded, call_kwargs(loaded, tensors, p["scalars"]), stream, args))
                rec["prepare_s"] = round(prepare_s, 3)
            except Exception as e:  # noqa: BLE001 - one failed mode must not lose the others' lines
                rec["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                failures += 1
            emit(rec, args)
        del tensors
        torch.cuda.empty_cache()
    return failures


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="+", metavar="TASK[=UUID,UUID...]")
    ap.add_argument("--dataset", default=os.environ.get("D2K_DATASET") or os.path.join(REPO, "dataset"))
    ap.add_argument("--rep-ms", type=float, default=300, help="do_bench's rep: ms of timed calls per mode")
    ap.add_argument("--warmup-ms", type=float, default=50, help="do_bench's warmup, ms")
    ap.add_argument("--warm-calls", type=int, default=3, help="calls before do_bench (recompilations land here)")
    ap.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    ap.add_argument("--json", help="also append the JSON lines to this file (written line by line: a timeout keeps "
                    "the workloads done)")
    ap.add_argument("--dry-run", action="store_true", help="print each call and its shapes; no torch needed")
    args = ap.parse_args(argv)
    if args.rep_ms <= 0 or args.warmup_ms < 0:
        ap.error("--rep-ms must be > 0 and --warmup-ms >= 0")
    return args


def main(argv):
    args = parse_args(argv)
    failures = 0
    for spec in args.specs:
        task, _, uuids = spec.partition("=")
        try:
            definition, workloads = read_task(args.dataset, task)
            pytorch_py = os.path.join(args.dataset, task, "pytorch.py")
            if not os.path.isfile(pytorch_py):
                raise TaskError("%s: no such file (the task has no PyTorch program)" % pytorch_py)
            selected = select_workloads(workloads, [u for u in uuids.split(",") if u],
                                        os.path.join(args.dataset, task, "workloads.jsonl"))
            if args.dry_run:
                dry_run(task, pytorch_py, definition, selected, args)
            else:
                failures += bench_task(task, pytorch_py, definition, selected, args)
        except TaskError as e:
            print("do_bench.py: %s" % e, file=sys.stderr)
            failures += 1
    return failures


if __name__ == "__main__":
    sys.exit(min(main(sys.argv[1:]), 125))
