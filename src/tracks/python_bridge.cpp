// The embedded interpreter (python_bridge.h): start-up, DLPack capsules over the ABI's tensors,
// and the entry points the engine's timer calls.
#include "tracks/python_bridge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "exec/error.h"

namespace d2k::py {

namespace {

Bridge* g_bridge = nullptr;
const PythonApi* g_api = nullptr;

/// A DLManagedTensor that owns copies of a DLTensor's shape and strides (the ABI's arrays live
/// only for the call; a consumer may keep the tensor longer). The data stays the parent's.
struct OwnedTensor {
  DLManagedTensor managed{};
  std::vector<int64_t> shape, strides;
};

void delete_owned(DLManagedTensor* m) { delete static_cast<OwnedTensor*>(m->manager_ctx); }

/// PyCapsule destructor: a capsule still named "dltensor" was never consumed, so its tensor is
/// released here; a consumer renames it "used_dltensor" and calls the deleter itself (DLPack's
/// protocol).
void capsule_destructor(Obj capsule) {
  if (!g_api->PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* m = static_cast<DLManagedTensor*>(g_api->PyCapsule_GetPointer(capsule, "dltensor"));
  if (m && m->deleter) m->deleter(m);
}

Obj make_capsule(const PythonApi& api, const DLTensor& t) {
  auto owned = std::make_unique<OwnedTensor>();
  owned->shape.assign(t.shape, t.shape + t.ndim);
  if (t.strides) owned->strides.assign(t.strides, t.strides + t.ndim);
  DLTensor& d = owned->managed.dl_tensor;
  d = t;
  d.shape = owned->shape.data();
  d.strides = t.strides ? owned->strides.data() : nullptr;
  owned->managed.manager_ctx = owned.get();
  owned->managed.deleter = delete_owned;
  Obj cap = api.PyCapsule_New(&owned->managed, "dltensor", capsule_destructor);
  if (cap) owned.release();
  return cap;
}

/// [(name, capsule)] for `n` tensors.
Obj tensor_list(const PythonApi& api, uint32_t n, const DLTensor* tensors, const char* const* names) {
  Obj list = api.PyList_New(n);
  if (!list) return nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    Obj pair = api.PyTuple_New(2);
    Obj cap = make_capsule(api, tensors[i]);
    Obj name = api.PyUnicode_FromString(names[i]);
    if (!pair || !cap || !name) {
      if (pair) api.Py_DecRef(pair);
      if (cap) api.Py_DecRef(cap);
      if (name) api.Py_DecRef(name);
      api.Py_DecRef(list);
      return nullptr;
    }
    api.PyTuple_SetItem(pair, 0, name);  // steals
    api.PyTuple_SetItem(pair, 1, cap);
    api.PyList_SetItem(list, i, pair);
  }
  return list;
}

Obj scalar_dict(const PythonApi& api, const d2k_args& a) {
  Obj dict = api.PyDict_New();
  if (!dict) return nullptr;
  for (uint32_t i = 0; i < a.num_scalars; ++i) {
    const d2k_scalar& s = a.scalars[i];
    Obj v = s.is_float ? api.PyFloat_FromDouble(s.f) : api.PyLong_FromLongLong(s.i);
    if (!v || api.PyDict_SetItemString(dict, s.name, v) != 0) {
      if (v) api.Py_DecRef(v);
      api.Py_DecRef(dict);
      return nullptr;
    }
    api.Py_DecRef(v);
  }
  return dict;
}

/// Holds the GIL for a scope (the timer's thread is not the one that started Python).
class Gil {
 public:
  explicit Gil(const PythonApi& api) : api_(api), state_(api.PyGILState_Ensure()) {}
  ~Gil() { api_.PyGILState_Release(state_); }

 private:
  const PythonApi& api_;
  int state_;
};

/// A new reference released at scope end.
class Ref {
 public:
  Ref(const PythonApi& api, Obj o) : api_(api), o_(o) {}
  ~Ref() {
    if (o_) api_.Py_DecRef(o_);
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Obj get() const { return o_; }
  Obj release() { return std::exchange(o_, nullptr); }

 private:
  const PythonApi& api_;
  Obj o_;
};

int32_t entry_workspace_size(const d2k_args*, uint64_t* bytes) {
  *bytes = 0;  // Python solutions allocate through their framework
  return D2K_OK;
}

int32_t entry_run(const d2k_args* args) {
  if (!g_bridge) return D2K_ERR_INTERNAL;
  return g_bridge->run(args);
}

void entry_release() {
  if (g_bridge) g_bridge->release_cached();
}

void write_error(const d2k_args* a, const std::string& msg) {
  if (!a->error || a->error_capacity == 0) return;
  const std::size_t n = std::min<std::size_t>(msg.size(), a->error_capacity - 1);
  std::memcpy(a->error, msg.data(), n);
  a->error[n] = '\0';
}

}  // namespace

std::filesystem::path shim_dir() {
  if (const char* env = std::getenv("D2K_PYTHON_SHIM_DIR"); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (std::filesystem::is_regular_file(dir / "python" / "d2k_shim.py")) return dir / "python";
  return D2K_PYTHON_SHIM_SOURCE_DIR;
}

const char* mode_name(PyMode m) {
  switch (m) {
    case PyMode::triton: return "triton";
    case PyMode::torch_eager: return "torch_eager";
    case PyMode::torch_compile: return "torch_compile";
  }
  return "?";
}

Bridge* Bridge::current() { return g_bridge; }

Bridge& Bridge::start(const PythonInstall& install, const std::filesystem::path& shim) {
  if (g_bridge) return *g_bridge;
  const PythonApi& api = load_python_api(install.libpython);
  g_api = &api;
  // The interpreter finds its standard library from PYTHONHOME (an embedded one has no
  // executable to search from); no bytecode is written (the lockdown forbids it later anyway).
  ::setenv("PYTHONHOME", install.home.c_str(), 1);
  ::setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
  ::setenv("PYTHONNOUSERSITE", "1", 1);
  if (!api.Py_IsInitialized()) api.Py_InitializeEx(0);  // 0: d2k keeps its own signal handlers
  auto* b = new Bridge(api);
  std::string error;
  {
    // Py_InitializeEx left the GIL with this thread; Gil's Ensure/Release nest inside it.
    Gil gil(api);
    Ref sys(api, api.PyImport_ImportModule("sys"));
    Ref path(api, api.PyList_New(0));
    if (!sys.get() || !path.get()) {
      error = b->fetch_error();
    } else {
      std::vector<std::string> entries{shim.string()};
      entries.insert(entries.end(), install.sys_path.begin(), install.sys_path.end());
      Ref list(api, api.PyList_New(static_cast<long>(entries.size())));
      for (std::size_t i = 0; i < entries.size(); ++i)
        api.PyList_SetItem(list.get(), static_cast<long>(i), api.PyUnicode_FromString(entries[i].c_str()));
      if (api.PyObject_SetAttrString(sys.get(), "path", list.get()) != 0) error = b->fetch_error();
      if (error.empty()) {
        b->shim_ = api.PyImport_ImportModule("d2k_shim");
        if (!b->shim_) error = "cannot import d2k_shim from " + shim.string() + ": " + b->fetch_error();
      }
    }
  }
  if (!error.empty()) {
    delete b;
    throw std::runtime_error(fmt::format("Python {} ({}): {}", install.version, install.libpython.string(), error));
  }
  api.PyEval_SaveThread();  // release the GIL: every later entry takes it with PyGILState_Ensure
  g_bridge = b;
  return *b;
}

std::string Bridge::text(Obj o) {
  if (!o) return "";
  Ref s(api_, api_.PyObject_Str(o));
  if (!s.get()) {
    api_.PyErr_Clear();
    return "<unprintable>";
  }
  long n = 0;
  const char* c = api_.PyUnicode_AsUTF8AndSize(s.get(), &n);
  if (!c) {
    api_.PyErr_Clear();
    return "<unprintable>";
  }
  return std::string(c, static_cast<std::size_t>(n));
}

std::string Bridge::fetch_error() {
  if (!api_.PyErr_Occurred()) return "unknown Python error";
  Obj type = nullptr, value = nullptr, tb = nullptr;
  api_.PyErr_Fetch(&type, &value, &tb);
  std::string msg = value ? text(value) : text(type);
  if (type) api_.Py_DecRef(type);
  if (value) api_.Py_DecRef(value);
  if (tb) api_.Py_DecRef(tb);
  return msg;
}

Obj Bridge::call_shim(const char* fn, Obj args_tuple) {
  Ref args(api_, args_tuple);
  if (!args.get()) throw std::runtime_error(std::string("d2k_shim.") + fn + ": " + fetch_error());
  Ref f(api_, api_.PyObject_GetAttrString(shim_, fn));
  if (!f.get()) throw std::runtime_error(std::string("d2k_shim.") + fn + ": " + fetch_error());
  Obj r = api_.PyObject_CallObject(f.get(), args.get());
  if (!r) throw std::runtime_error(std::string("d2k_shim.") + fn + ": " + fetch_error());
  return r;
}

std::string Bridge::warm_runtime(PyMode mode) {
  Gil gil(api_);
  Obj args = api_.PyTuple_New(1);
  if (args) api_.PyTuple_SetItem(args, 0, api_.PyUnicode_FromString(mode_name(mode)));
  Ref r(api_, call_shim("warm_runtime", args));
  return r.get() == api_.Py_None ? "" : text(r.get());
}

void Bridge::load(const std::filesystem::path& file, PyMode mode) {
  Gil gil(api_);
  Obj args = api_.PyTuple_New(2);
  if (args) {
    api_.PyTuple_SetItem(args, 0, api_.PyUnicode_FromString(file.c_str()));
    api_.PyTuple_SetItem(args, 1, api_.PyUnicode_FromString(mode_name(mode)));
  }
  Ref r(api_, call_shim("load", args));  // (Loaded, None) or (None, error)
  Obj handle = api_.PyTuple_GetItem(r.get(), 0);
  Obj err = api_.PyTuple_GetItem(r.get(), 1);
  if (!handle || !err) throw std::runtime_error("d2k_shim.load returned no pair: " + fetch_error());
  if (err != api_.Py_None) throw ExecError(Status::INVALID_SUBMISSION, text(err));
  api_.Py_IncRef(handle);
  if (loaded_) api_.Py_DecRef(loaded_);  // a second load replaces the first (tests load several)
  loaded_ = handle;
}

std::string Bridge::prepare(const std::string& shapes_json) {
  if (!loaded_) throw std::logic_error("Bridge::prepare before load");
  Gil gil(api_);
  Obj args = api_.PyTuple_New(2);
  if (args) {
    api_.Py_IncRef(loaded_);
    api_.PyTuple_SetItem(args, 0, loaded_);
    api_.PyTuple_SetItem(args, 1, api_.PyUnicode_FromString(shapes_json.c_str()));
  }
  Ref r(api_, call_shim("prepare", args));
  return r.get() == api_.Py_None ? "" : text(r.get());
}

void Bridge::release_cached() {
  if (!loaded_) return;
  Gil gil(api_);
  // Best effort: a failure here only leaves the memory cached, and the next sizing says so.
  try {
    Ref r(api_, call_shim("release_cached", api_.PyTuple_New(0)));
  } catch (const std::exception&) {
  }
}

int32_t Bridge::run(const d2k_args* a) {
  if (!loaded_) {
    write_error(a, "no Python solution is loaded");
    return D2K_ERR_INTERNAL;
  }
  Gil gil(api_);
  try {
    Obj args = api_.PyTuple_New(5);
    if (!args) throw std::runtime_error(fetch_error());
    Ref guard(api_, args);
    Obj ins = tensor_list(api_, a->num_inputs, a->inputs, a->input_names);
    Obj outs = tensor_list(api_, a->num_outputs, a->outputs, a->output_names);
    Obj scalars = scalar_dict(api_, *a);
    Obj stream = api_.PyLong_FromUnsignedLongLong(reinterpret_cast<std::uintptr_t>(a->stream));
    api_.Py_IncRef(loaded_);
    api_.PyTuple_SetItem(args, 0, loaded_);
    // SetItem steals even a null (it fails then); check afterwards so nothing leaks.
    Obj parts[] = {ins, outs, scalars, stream};
    bool ok = true;
    for (long i = 0; i < 4; ++i) {
      if (!parts[i]) {
        ok = false;
        continue;
      }
      api_.PyTuple_SetItem(args, i + 1, parts[i]);
    }
    if (!ok) throw std::runtime_error("cannot build the call's arguments: " + fetch_error());
    Ref r(api_, call_shim("call", guard.release()));
    if (r.get() == api_.Py_None) return D2K_OK;
    write_error(a, text(r.get()));
    return D2K_ERR_INTERNAL;
  } catch (const std::exception& e) {
    write_error(a, e.what());
    return D2K_ERR_INTERNAL;
  }
}

LoadedImpl Bridge::entry_points(const std::filesystem::path& file) const {
  return LoadedImpl::from_entry_points(file, entry_workspace_size, entry_run, entry_release);
}

}  // namespace d2k::py
