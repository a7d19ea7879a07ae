"""prepare()'s stand-in tensors and release_cached()'s cache release (src/tracks/python/d2k_shim.py), with a stand-in torch that records
how each tensor was made (no torch on CI). Integer inputs must be zeros: random ones (an unsorted
offsets array) tripped a device-side assert in torch._grouped_mm that broke the worker's context."""
import json
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "tracks", "python"))
import d2k_shim  # noqa: E402


class DType:
    def __init__(self, name, floating, itemsize):
        self.name, self.is_floating_point, self.itemsize = name, floating, itemsize


class Tensor:
    def __init__(self, how, dims, dtype):
        self.how, self.dims, self.dtype = how, dims, dtype

    def to(self, dtype):
        return Tensor(self.how, self.dims, dtype)


def fake_torch():
    t = types.SimpleNamespace()
    t.float32, t.bfloat16, t.int32, t.int64 = (DType("float32", True, 4), DType("bfloat16", True, 2),
                                               DType("int32", False, 4), DType("int64", False, 8))
    t.bool = DType("bool", False, 1)
    t.cuda = types.SimpleNamespace(is_available=lambda: True, synchronize=lambda: None)
    t.randn = lambda dims, device=None, dtype=None: Tensor("randn", dims, dtype or t.float32)
    t.zeros = lambda dims, device=None, dtype=None: Tensor("zeros", dims, dtype or t.float32)
    t.randint = lambda lo, hi, dims, device=None, dtype=None: Tensor("randint", dims, dtype)
    return t


def main():
    seen = {}
    abi = {"inputs": [{"name": "x", "shape": ["T", "K"], "dtype": "bfloat16"},
                      {"name": "offsets", "shape": ["E + 1"], "dtype": "int32"},
                      {"name": "order", "shape": ["T"], "dtype": "int64"}],
           "outputs": [{"name": "y", "shape": ["T"], "dtype": "float32"}],
           "scalars": {}}
    loaded = types.SimpleNamespace(torch=fake_torch(), abi=abi, params=None, fn=lambda **kw: seen.update(kw))
    errors = d2k_shim.prepare(loaded, json.dumps([{"uuid": "w", "axes": {"T": 5, "K": 3, "E": 2}}]))
    assert errors is None, errors
    assert seen["x"].how == "randn" and seen["x"].dims == [5, 3], vars(seen["x"])
    for name, dims in (("offsets", [3]), ("order", [5])):
        assert seen[name].how == "zeros", "%s drawn by %s, not zeros" % (name, seen[name].how)
        assert seen[name].dims == dims, (name, seen[name].dims)
    # The workload's scalar overrides reach run() (torch.compile specialises on their values),
    # an int scalar as an int.
    seen.clear()
    abi["scalars"] = {"ignore_index": -100, "grad_scale": 1.0}
    shape = {"uuid": "w2", "axes": {"T": 2, "K": 3, "E": 1}, "scalars": {"ignore_index": 1.0, "grad_scale": 0.25}}
    errors = d2k_shim.prepare(loaded, json.dumps([shape]))
    assert errors is None, errors
    assert seen["ignore_index"] == 1 and isinstance(seen["ignore_index"], int), seen["ignore_index"]
    assert seen["grad_scale"] == 0.25, seen["grad_scale"]
    print("prepare: floats from randn, integers zero, the workload's scalars")
    release_cached()


def release_cached():
    """release_cached() empties PyTorch's caching allocator once CUDA is up, and does nothing where
    torch was never imported or never touched the GPU (a Triton solution without torch)."""
    calls = []
    t = types.SimpleNamespace(cuda=types.SimpleNamespace(
        is_initialized=lambda: True, synchronize=lambda: calls.append("sync"), empty_cache=lambda: calls.append("empty")))
    saved = sys.modules.get("torch")
    try:
        sys.modules["torch"] = t
        d2k_shim.release_cached()
        assert calls == ["sync", "empty"], calls
        calls.clear()
        t.cuda.is_initialized = lambda: False
        d2k_shim.release_cached()
        assert calls == [], calls
        del sys.modules["torch"]
        d2k_shim.release_cached()  # no torch: nothing to release, no import
        assert "torch" not in sys.modules
    finally:
        if saved is not None:
            sys.modules["torch"] = saved
    print("release_cached: empty_cache after a synchronize, only where torch's CUDA is up")


if __name__ == "__main__":
    main()
