"""The Python side of d2k's Python tracks (triton, torch_eager, torch_compile).

The d2k worker embeds the machine's interpreter and calls four functions of this module:
warm_runtime() once before any of the candidate's code (the worker's thread baseline is taken
after it), load() once, prepare() once per workload shape before the sandbox's lockdown
(Triton's JIT and autotuning, torch.compile), and call() for every timed or checked call. Tensors arrive
as DLPack capsules over buffers the d2k parent owns (zero copy); the timer is d2k's, in C++,
around call(). Every function returns an error string instead of raising: the C side turns it
into the call's status message.
"""

import ctypes
import importlib.util
import inspect
import json
import os
import sys
import traceback

# ---- DLPack without torch: a view of the capsule's DLManagedTensor (used when torch is absent,
# e.g. by the CPU tests, and for solutions that take raw pointers).


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class DLView:
    """What a DLPack capsule describes: data pointer, device, dtype, shape, strides (in elements)."""

    __slots__ = ("data_ptr", "device", "dtype", "shape", "strides", "nbytes")

    def __init__(self, capsule):
        m = _DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
        t = m.dl_tensor
        self.data_ptr = (t.data or 0) + t.byte_offset
        self.device = (t.device.device_type, t.device.device_id)
        self.dtype = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        self.strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
        n = 1
        for s in self.shape:
            n *= s
        self.nbytes = n * t.dtype.bits * t.dtype.lanes // 8

    def __repr__(self):
        return "DLView(ptr=0x%x, device=%s, dtype=%s, shape=%s, strides=%s)" % (
            self.data_ptr, self.device, self.dtype, self.shape, self.strides)


def _torch():
    try:
        import torch  # noqa: F401
        return torch
    except ImportError:
        return None


def _warm_triton():
    """JIT-compiles and launches a one-element Triton kernel (what a first launch starts)."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _one(p):
        tl.store(p, tl.load(p) + 1)

    t = torch.zeros(1, device="cuda")
    _one[(1,)](t)
    torch.cuda.synchronize()


def _warm_compile():
    """Compiles a one-line function with torch.compile: inductor's compile pools start here."""
    import torch
    try:
        from torch._inductor.async_compile import AsyncCompile
        AsyncCompile.warm_pool()
    except (ImportError, AttributeError):
        pass
    f = torch.compile(lambda x: x * 2 + 1)
    f(torch.zeros(8, device="cuda"))
    torch.cuda.synchronize()


def warm_runtime(mode):
    """Starts what the runtime starts at first use (torch's CUDA state, Triton's JIT, inductor's
    pools) before any of the candidate's code runs, so that every thread they leave running is in
    the worker's thread baseline and every thread beyond it is the candidate's. Returns None or
    the errors seen (not fatal: without a GPU there is nothing to warm)."""
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return None
    try:
        (torch.zeros(8, device="cuda") + 1).sum().item()
        # The autograd engine starts its CUDA device thread at the first backward: a program
        # that calls backward (softmax_cross_entropy's pytorch.py) left it running after its
        # first call, flagged as the candidate's thread on the H200.
        w = torch.ones(8, device="cuda", requires_grad=True)
        (w * 2).sum().backward()
        torch.cuda.synchronize()
        if mode == "triton":
            _warm_triton()
        elif mode == "torch_compile":
            _warm_compile()
        return None
    except BaseException as e:  # noqa: B902 - the runtime may raise anything here
        return _failure("warming the %s runtime" % mode, e)


class Loaded:
    """A solution (or a task's pytorch.py) loaded for one mode."""

    def __init__(self, path, mode, fn, params, abi):
        self.path, self.mode, self.fn, self.params, self.abi = path, mode, fn, params, abi
        self.torch = _torch()
        self.streams = {}
        self.prepare_errors = []  # why prepare could not run a shape (reported with a failed call)


def _import_file(path):
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)  # a solution may import its sibling .py files
    spec = importlib.util.spec_from_file_location("d2k_solution", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["d2k_solution"] = module
    spec.loader.exec_module(module)
    return module


def _signature(fn):
    """The keyword names `fn` takes, or None when it takes **kwargs (everything is passed)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    names = []
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            return None
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.append(p.name)
    return names


def load(path, mode):
    """Imports `path` and finds its run(). Returns (Loaded, None) or (None, error)."""
    try:
        abi_path = os.path.join(os.path.dirname(os.path.abspath(path)), "abi.json")
        abi = None
        if os.path.exists(abi_path):
            with open(abi_path) as f:
                abi = json.load(f)
        module = _import_file(path)
        fn = getattr(module, "run", None)
        if fn is None or not callable(fn):
            return None, "%s defines no callable run(...)" % os.path.basename(path)
        params = _signature(fn)
        if mode == "torch_compile":
            torch = _torch()
            if torch is None:
                return None, "torch_compile: torch is not installed for %s" % sys.executable
            # Inductor keeps a low-precision cast's fp32 value unless told to round it: the task's
            # program rounds intermediates (e.g. rmsnorm's bf16 residual) and so must its compiled
            # form, or the comparison is of another program (measured: 20 % of elements 1 ulp off).
            try:
                import torch._inductor.config as inductor_config
                if hasattr(inductor_config, "emulate_precision_casts"):
                    inductor_config.emulate_precision_casts = True
            except ImportError:
                pass
            # One static graph per shape and scalar value, all traced, compiled and autotuned in
            # prepare: after the lockdown nothing can be written or executed, and a dynamic-shape
            # graph autotunes (and caches to disk) at the first call of each new size, which
            # failed with PermissionError on the H200 (causal_conv1d, rope_qk_norm, w4a16_gemv).
            # Static shapes are also torch.compile's fastest form of each workload.
            _raise_recompile_limits(torch)
            _capture_data_dependent_sizes(torch)
            fn = torch.compile(fn, dynamic=False)
        return Loaded(path, mode, fn, params, abi), None
    except BaseException as e:  # noqa: B902 - a candidate's import may raise anything, SystemExit included
        return None, _failure("importing %s (%s) failed" % (os.path.basename(path), mode), e)


def _raise_recompile_limits(torch):
    """Room for a graph per workload shape: past the limit Dynamo falls back to eager silently,
    and torch_compile would time eager PyTorch under its name."""
    try:
        import torch._dynamo.config as dynamo_config
    except ImportError:
        return
    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(dynamo_config, name):
            setattr(dynamo_config, name, max(getattr(dynamo_config, name), 1024))


def _capture_data_dependent_sizes(torch):
    """Traces an operator whose output size depends on the data (boolean indexing, nonzero,
    unique, bincount) into the graph with a symbolic size. Without it Dynamo breaks the graph
    there and compiles what follows for the size prepare's inputs gave (every row kept); a checked
    input keeps another number of rows, and the recompile it asks for fails after the lockdown
    (tpch_q1, stream_compaction, groupby_aggregate: RUNTIME_ERROR 'size mismatch' on the H200)."""
    try:
        import torch._dynamo.config as dynamo_config
    except ImportError:
        return
    if hasattr(dynamo_config, "capture_dynamic_output_shape_ops"):
        dynamo_config.capture_dynamic_output_shape_ops = True


def _recompile_reasons(loaded):
    """Dynamo's recorded guard failures (why a call recompiled), for a torch_compile call that
    failed: a compile after the lockdown fails, and the reason says which property of the real
    inputs the prepare step did not reproduce."""
    if loaded.mode != "torch_compile":
        return ""
    try:
        from torch._dynamo.utils import guard_failures
        reasons = [str(r) for failures in guard_failures.values() for r in failures]
    except (ImportError, AttributeError):
        return ""
    return ("\nrecompiled because: " + "; ".join(reasons[-4:])[:600]) if reasons else ""


def _prepare_errors(loaded):
    """What prepare could not run: a shape it did not compile is compiled at its first call,
    after the lockdown, where that fails with a PermissionError that hides this cause."""
    errors = loaded.prepare_errors
    return ("\nthe prepare step failed first: " + errors[0][-600:]) if errors else ""


def _failure(what, exc):
    """`what: ExcType: message` on the first line (the line tables print under a failed row), the
    traceback after it."""
    head = "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__
    return "%s: %s\n%s" % (what, head, traceback.format_exc(limit=8))


def _as_tensor(loaded, capsule):
    if loaded.torch is not None:
        return loaded.torch.from_dlpack(capsule)
    return DLView(capsule)


def _kwargs(loaded, names, values, scalars):
    """The call's keyword arguments: tensors and scalars by their definition.json names. Axis
    values (also scalars in the ABI) are passed only where run() names them or takes **kwargs."""
    kw = dict(zip(names, values))
    task_scalars = set(loaded.abi["scalars"]) if loaded.abi else set(scalars)
    for name, value in scalars.items():
        if name in task_scalars or loaded.params is None or name in loaded.params:
            kw[name] = value
    if loaded.params is not None:
        missing = [p for p in loaded.params if p not in kw]
        extra = [k for k in kw if k not in loaded.params]
        if missing:
            raise TypeError("run() takes %s, which the task does not have (it passes: %s)" % (
                ", ".join(missing), ", ".join(kw)))
        for k in extra:
            del kw[k]
    return kw


def _stream_context(loaded, stream):
    torch = loaded.torch
    if torch is None or not stream or not torch.cuda.is_available():
        return None
    s = loaded.streams.get(stream)
    if s is None:
        s = loaded.streams[stream] = torch.cuda.ExternalStream(stream)
    return torch.cuda.stream(s)


def call(loaded, inputs, outputs, scalars, stream):
    """One call: inputs/outputs are [(name, capsule)] in the ABI's order, scalars {name: value},
    stream the cudaStream_t as an int (0 on the host). Returns None or an error string."""
    try:
        names = [n for n, _ in inputs] + [n for n, _ in outputs]
        tensors = [_as_tensor(loaded, c) for _, c in inputs] + [_as_tensor(loaded, c) for _, c in outputs]
        kw = _kwargs(loaded, names, tensors, scalars)
        ctx = _stream_context(loaded, stream)
        if ctx is None:
            loaded.fn(**kw)
        else:
            with ctx:
                loaded.fn(**kw)
        return None
    except BaseException as e:  # noqa: B902
        return _failure("run() raised", e) + _recompile_reasons(loaded) + _prepare_errors(loaded)


def _dtype(torch, name):
    return getattr(torch, {"bool": "bool"}.get(name, name))


def _extent(expr, axes):
    try:
        return int(expr)
    except ValueError:
        return int(eval(expr, {"__builtins__": {}}, dict(axes)))  # the task's own definition


def release_cached():
    """Returns the framework's cached device memory to the driver: the engine freed a workload's
    buffers and will size the next one's by what the device has free, which PyTorch's caching
    allocator would otherwise keep (fused_adamw's 1e9 row did not fit after the 1e8 row)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def prepare(loaded, shapes_json):
    """Calls run() once per workload shape on tensors of that shape (random values), so that
    Triton compiles (and autotunes) and torch.compile traces before the lockdown. Returns None
    or the errors seen (they are reported, not fatal: the checked calls will say what fails)."""
    torch = loaded.torch
    if torch is None or loaded.abi is None or not torch.cuda.is_available():
        return None
    errors = []
    for shape in json.loads(shapes_json):
        axes = shape["axes"]
        try:
            kw = {}
            for spec in loaded.abi["inputs"] + loaded.abi["outputs"]:
                dims = [_extent(d, axes) for d in spec["shape"]]
                dt = _dtype(torch, spec["dtype"])
                if dt.is_floating_point and dt.itemsize > 1:
                    t = torch.randn(dims, device="cuda").to(dt)
                elif dt == torch.bool:
                    t = torch.zeros(dims, device="cuda", dtype=dt)
                elif dt.is_floating_point:
                    t = torch.zeros(dims, device="cuda").to(dt)
                else:
                    # Integers are indices, offsets, counts: zeros are in bounds and monotone for
                    # every one of them. Random ones (an unsorted offsets array) made
                    # torch._grouped_mm trip a device-side assert here, which left the worker's
                    # context broken for every call after (moe_grouped_gemm on the H200).
                    t = torch.zeros(dims, device="cuda", dtype=dt)
                kw[spec["name"]] = t
            scalars = dict(loaded.abi["scalars"])
            # The workload's own scalar values (torch.compile specialises on them), typed as the
            # task's defaults are (an int scalar stays an int).
            for name, value in shape.get("scalars", {}).items():
                default = scalars.get(name)
                scalars[name] = int(value) if isinstance(default, int) and not isinstance(default, bool) else value
            scalars.update(axes)
            names = list(kw)
            kw = _kwargs(loaded, names, [kw[n] for n in names], scalars)
            loaded.fn(**kw)
            torch.cuda.synchronize()
        except BaseException:  # noqa: B902
            errors.append("workload %s: %s" % (shape.get("uuid", "?"), traceback.format_exc(limit=4)))
    loaded.prepare_errors = errors
    return "\n".join(errors) if errors else None
