#pragma once
/// The machine's Python, loaded at run time (never linked): the parent asks `python3` where its
/// libpython and its module path are (PythonInstall), the worker dlopens that libpython with
/// RTLD_GLOBAL (so that extension modules such as torch's bind to it) and calls only functions
/// of the stable ABI (PEP 384, 3.10 and later), resolved by name (PythonApi). One binary thus
/// works with whatever minor version the machine has.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace d2k::py {

/// Where the machine's Python lives, as its own sysconfig reports it.
struct PythonInstall {
  std::filesystem::path executable;       ///< $D2K_PYTHON, else python3 on PATH (resolved)
  std::filesystem::path libpython;        ///< LIBDIR/LDLIBRARY (or INSTSONAME when that is absent)
  std::string home;                       ///< sys.base_prefix[:sys.base_exec_prefix] (PYTHONHOME)
  std::vector<std::string> sys_path;      ///< the interpreter's sys.path (a venv's site-packages included)
  std::vector<std::filesystem::path> roots;  ///< folders a sandboxed child must see read-only
  std::string version;                    ///< "3.11.7"
};
nlohmann::json install_to_json(const PythonInstall& p);
/// Throws std::invalid_argument naming the field.
PythonInstall install_from_json(const nlohmann::json& j);

/// Runs the machine's python3 once (cached) and reads its sysconfig. Throws std::runtime_error
/// naming the interpreter when there is none, it is older than 3.10, or it has no shared
/// libpython (a static build cannot be embedded).
const PythonInstall& find_python();
/// What find_python does for the interpreter `python` (a path or a name on PATH), uncached.
PythonInstall query_python(const std::string& python);

/// The environment variable that carries an install (as JSON) from the parent to the worker.
inline constexpr const char* kInstallEnv = "D2K_PYTHON_INSTALL";

/// PyObject*, opaque: only the stable ABI's functions touch it.
using Obj = void*;

/// The stable-ABI functions the bridge uses, resolved from a dlopened libpython.
struct PythonApi {
  void (*Py_InitializeEx)(int);
  int (*Py_IsInitialized)();
  void* (*PyEval_SaveThread)();
  int (*PyGILState_Ensure)();
  void (*PyGILState_Release)(int);
  Obj (*PyImport_ImportModule)(const char*);
  Obj (*PyObject_GetAttrString)(Obj, const char*);
  Obj (*PyObject_CallObject)(Obj, Obj);
  Obj (*PyObject_Str)(Obj);
  int (*PyObject_SetAttrString)(Obj, const char*, Obj);
  int (*PyObject_IsTrue)(Obj);
  Obj (*PyTuple_New)(long);
  int (*PyTuple_SetItem)(Obj, long, Obj);
  Obj (*PyTuple_GetItem)(Obj, long);
  long (*PyTuple_Size)(Obj);
  Obj (*PyList_New)(long);
  int (*PyList_SetItem)(Obj, long, Obj);
  Obj (*PyDict_New)();
  int (*PyDict_SetItemString)(Obj, const char*, Obj);
  Obj (*PyUnicode_FromString)(const char*);
  const char* (*PyUnicode_AsUTF8AndSize)(Obj, long*);
  Obj (*PyLong_FromLongLong)(long long);
  Obj (*PyLong_FromUnsignedLongLong)(unsigned long long);
  long long (*PyLong_AsLongLong)(Obj);
  Obj (*PyFloat_FromDouble)(double);
  Obj (*PyCapsule_New)(void*, const char*, void (*)(Obj));
  void* (*PyCapsule_GetPointer)(Obj, const char*);
  int (*PyCapsule_IsValid)(Obj, const char*);
  Obj (*PyErr_Occurred)();
  void (*PyErr_Fetch)(Obj*, Obj*, Obj*);
  void (*PyErr_Clear)();
  void (*Py_IncRef)(Obj);
  void (*Py_DecRef)(Obj);
  Obj Py_None;
};

/// dlopens `libpython` (RTLD_NOW | RTLD_GLOBAL) once per process and resolves PythonApi.
/// Throws std::runtime_error naming the library and the first missing symbol.
const PythonApi& load_python_api(const std::filesystem::path& libpython);

}  // namespace d2k::py
