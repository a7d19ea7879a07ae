// Finding the machine's Python (parent side) and loading its libpython (worker side).
#include "tracks/python_runtime.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace d2k::py {

namespace {

/// What the interpreter reports about itself; one JSON line on stdout.
constexpr const char* kQuery = R"PY(
import json, os, sys, sysconfig
v = sysconfig.get_config_var
lib = ''
for d, n in ((v('LIBDIR'), v('LDLIBRARY')), (v('LIBDIR'), v('INSTSONAME')), (v('LIBPL'), v('LDLIBRARY'))):
    if d and n and '.so' in n and os.path.exists(os.path.join(d, n)):
        lib = os.path.join(d, n); break
home = sys.base_prefix if sys.base_prefix == sys.base_exec_prefix else sys.base_prefix + ':' + sys.base_exec_prefix
roots = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, v('LIBDIR') or sys.prefix)})
print(json.dumps({'executable': os.path.realpath(sys.executable), 'libpython': lib, 'home': home,
                  'sys_path': [p for p in sys.path if p], 'roots': roots,
                  'version': '%d.%d.%d' % sys.version_info[:3], 'minor': sys.version_info[1]}))
)PY";

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

PythonInstall query_python(const std::string& python) {
  const std::string cmd = shell_quote(python) + " -c " + shell_quote(kQuery) + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) throw std::runtime_error(fmt::format("cannot run '{}' to find Python", python));
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int rc = pclose(f);
  if (rc != 0)
    throw std::runtime_error(fmt::format("'{}' did not report its installation (set D2K_PYTHON to a python3 "
                                         "of version 3.10 or later): {}", python, out.substr(0, 500)));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(out);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(fmt::format("'{}' printed something other than its installation: {}", python, out.substr(0, 500)));
  }
  if (j.value("minor", 0) < 10)
    throw std::runtime_error(fmt::format("'{}' is Python {}: the Python tracks need 3.10 or later (the stable ABI "
                                         "functions they call)", python, j.value("version", "?")));
  PythonInstall p = install_from_json(j);
  if (p.libpython.empty())
    throw std::runtime_error(fmt::format("'{}' (Python {}) has no shared libpython: it cannot be embedded "
                                         "(build it with --enable-shared, or set D2K_PYTHON to one that has)",
                                         python, p.version));
  return p;
}

nlohmann::json install_to_json(const PythonInstall& p) {
  std::vector<std::string> roots;
  for (auto& r : p.roots) roots.push_back(r.string());
  return {{"executable", p.executable.string()}, {"libpython", p.libpython.string()}, {"home", p.home},
          {"sys_path", p.sys_path}, {"roots", roots}, {"version", p.version}};
}

PythonInstall install_from_json(const nlohmann::json& j) {
  PythonInstall p;
  try {
    p.executable = j.at("executable").get<std::string>();
    p.libpython = j.at("libpython").get<std::string>();
    p.home = j.at("home").get<std::string>();
    p.sys_path = j.at("sys_path").get<std::vector<std::string>>();
    for (auto& r : j.at("roots").get<std::vector<std::string>>()) p.roots.emplace_back(r);
    p.version = j.at("version").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("python install: ") + e.what());
  }
  return p;
}

const PythonInstall& find_python() {
  static std::once_flag once;
  static PythonInstall install;
  static std::string error;
  std::call_once(once, [] {
    const char* env = std::getenv("D2K_PYTHON");
    try {
      install = query_python(env && *env ? env : "python3");
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw std::runtime_error(error);
  return install;
}

const PythonApi& load_python_api(const std::filesystem::path& libpython) {
  static std::once_flag once;
  static PythonApi api{};
  static std::string error;
  std::call_once(once, [&] {
    void* h = dlopen(libpython.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      error = fmt::format("cannot load {}: {}", libpython.string(), dlerror());
      return;
    }
    auto sym = [&](auto& fn, const char* name) {
      void* p = dlsym(h, name);
      if (!p && error.empty()) error = fmt::format("{} lacks {} (not a Python 3.10+ libpython?)", libpython.string(), name);
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
#define D2K_PY_SYM(name) sym(api.name, #name)
    D2K_PY_SYM(Py_InitializeEx);
    D2K_PY_SYM(Py_IsInitialized);
    D2K_PY_SYM(PyEval_SaveThread);
    D2K_PY_SYM(PyGILState_Ensure);
    D2K_PY_SYM(PyGILState_Release);
    D2K_PY_SYM(PyImport_ImportModule);
    D2K_PY_SYM(PyObject_GetAttrString);
    D2K_PY_SYM(PyObject_CallObject);
    D2K_PY_SYM(PyObject_Str);
    D2K_PY_SYM(PyObject_SetAttrString);
    D2K_PY_SYM(PyObject_IsTrue);
    D2K_PY_SYM(PyTuple_New);
    D2K_PY_SYM(PyTuple_SetItem);
    D2K_PY_SYM(PyTuple_GetItem);
    D2K_PY_SYM(PyTuple_Size);
    D2K_PY_SYM(PyList_New);
    D2K_PY_SYM(PyList_SetItem);
    D2K_PY_SYM(PyDict_New);
    D2K_PY_SYM(PyDict_SetItemString);
    D2K_PY_SYM(PyUnicode_FromString);
    D2K_PY_SYM(PyUnicode_AsUTF8AndSize);
    D2K_PY_SYM(PyLong_FromLongLong);
    D2K_PY_SYM(PyLong_FromUnsignedLongLong);
    D2K_PY_SYM(PyLong_AsLongLong);
    D2K_PY_SYM(PyFloat_FromDouble);
    D2K_PY_SYM(PyCapsule_New);
    D2K_PY_SYM(PyCapsule_GetPointer);
    D2K_PY_SYM(PyCapsule_IsValid);
    D2K_PY_SYM(PyErr_Occurred);
    D2K_PY_SYM(PyErr_Fetch);
    D2K_PY_SYM(PyErr_Clear);
    D2K_PY_SYM(Py_IncRef);
    D2K_PY_SYM(Py_DecRef);
#undef D2K_PY_SYM
    // Py_None is the address of the exported _Py_NoneStruct (part of the stable ABI).
    api.Py_None = dlsym(h, "_Py_NoneStruct");
    if (!api.Py_None && error.empty()) error = libpython.string() + " lacks _Py_NoneStruct";
  });
  if (!error.empty()) throw std::runtime_error(error);
  return api;
}

}  // namespace d2k::py
