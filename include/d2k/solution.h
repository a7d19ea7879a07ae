/* D2K-Bench solution ABI, version 1.
 *
 * This header is the whole contract between the harness and an implementation
 * (reference, naive, expert, library or a candidate). An implementation is a
 * shared library that exports exactly the entry points declared below, in
 * destination-passing style: the harness allocates every input, output and the
 * scratch workspace; the implementation reads the inputs and writes the outputs
 * with work issued on the given stream only.
 *
 * C-compatible on purpose: candidates may be written in C, C++ or CUDA C++, and
 * other front ends (Triton through a C shim) can speak it.
 */
#ifndef D2K_SOLUTION_H
#define D2K_SOLUTION_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes; d2k_abi_version() must return it. */
#define D2K_ABI_VERSION 1u

/* DLPack 0.6 (Debian's) predates bool and fp8 codes; these use the values that
 * later DLPack releases assigned, so tensors stay exchangeable. */
#define D2K_DL_BOOL 6u          /**< kDLBool in DLPack >= 0.8, bits = 8 */
#define D2K_DL_FLOAT8_E4M3FN 10u /**< kDLFloat8_e4m3fn in DLPack 1.1, bits = 8 */
#define D2K_DL_FLOAT8_E5M2 12u  /**< kDLFloat8_e5m2 in DLPack 1.1, bits = 8 */

/** Status codes an entry point returns. Anything but D2K_OK is a failure that
 * the harness reports as RUNTIME_ERROR with the message the solution wrote. */
typedef enum d2k_status {
  D2K_OK = 0,
  D2K_ERR_BAD_ARGS = 1,    /**< shapes, dtypes or counts the solution does not support */
  D2K_ERR_CUDA = 2,        /**< a CUDA call failed */
  D2K_ERR_WORKSPACE = 3,   /**< workspace smaller than d2k_workspace_size asked for */
  D2K_ERR_INTERNAL = 4
} d2k_status;

/** A named scalar: every axis value of the workload (integer) and every scalar
 * parameter of the task (for example eps or a learning rate). */
typedef struct d2k_scalar {
  const char* name;
  int32_t is_float; /**< 1: use f; 0: use i */
  int32_t reserved;
  int64_t i;
  double f;
} d2k_scalar;

/** Everything one call receives. The harness owns all memory behind it. */
typedef struct d2k_args {
  uint32_t abi_version;   /**< == D2K_ABI_VERSION */
  uint32_t num_inputs;
  uint32_t num_outputs;
  uint32_t num_scalars;
  const DLTensor* inputs; /**< read-only; order and names as in definition.json */
  const char* const* input_names;
  const DLTensor* outputs; /**< preallocated; the solution writes every element */
  const char* const* output_names;
  const d2k_scalar* scalars;
  void* workspace;        /**< device (or host, for the host backend) scratch */
  uint64_t workspace_bytes;
  void* stream;           /**< cudaStream_t; NULL for host implementations */
  char* error;            /**< the solution may write a message here on failure */
  uint64_t error_capacity;
} d2k_args;

/* ---- Entry points an implementation exports (and nothing else) ---- */

/** Returns D2K_ABI_VERSION the library was built against. */
uint32_t d2k_abi_version(void);

/** Writes the scratch bytes a call with these shapes and scalars needs. Tensor
 * data pointers and the stream are NULL here: decide from shapes only. */
int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes);

/** Computes the outputs. All device work goes on args->stream. */
int32_t d2k_run(const d2k_args* args);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* Shared libraries built by d2k are compiled with hidden visibility; this marks
 * the three entry points as the only exported symbols. */
#if defined(__GNUC__) || defined(__clang__)
#define D2K_EXPORT __attribute__((visibility("default")))
#else
#define D2K_EXPORT
#endif

/* ---- C++ convenience: typed, checked accessors so kernel code stays readable ---- */
#ifdef __cplusplus
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace d2k {

/** Thrown by the accessors below; D2K_ENTRY turns it into D2K_ERR_BAD_ARGS. */
struct abi_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** Thrown by Workspace::take when the workspace is smaller than the carve-up needs;
 * D2K_ENTRY turns it into D2K_ERR_WORKSPACE. */
struct workspace_error : abi_error {
  using abi_error::abi_error;
};

inline int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

inline const DLTensor& find_tensor(const DLTensor* ts, const char* const* names, uint32_t n,
                                   const char* name, const char* what) {
  for (uint32_t k = 0; k < n; ++k)
    if (std::strcmp(names[k], name) == 0) return ts[k];
  throw abi_error(std::string("no ") + what + " named '" + name + "'");
}

/** The input tensor called `name` in definition.json. */
inline const DLTensor& input(const d2k_args* a, const char* name) {
  return find_tensor(a->inputs, a->input_names, a->num_inputs, name, "input");
}
/** The output tensor called `name` in definition.json. */
inline const DLTensor& output(const d2k_args* a, const char* name) {
  return find_tensor(a->outputs, a->output_names, a->num_outputs, name, "output");
}

/** Typed data pointer (byte_offset applied). */
template <class T>
inline T* data(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

inline const d2k_scalar& scalar(const d2k_args* a, const char* name) {
  for (uint32_t k = 0; k < a->num_scalars; ++k)
    if (std::strcmp(a->scalars[k].name, name) == 0) return a->scalars[k];
  throw abi_error(std::string("no scalar named '") + name + "'");
}
/** Integer scalar or axis value. */
inline int64_t scalar_i(const d2k_args* a, const char* name) {
  const d2k_scalar& s = scalar(a, name);
  return s.is_float ? static_cast<int64_t>(s.f) : s.i;
}
/** Floating scalar (integers convert). */
inline double scalar_f(const d2k_args* a, const char* name) {
  const d2k_scalar& s = scalar(a, name);
  return s.is_float ? s.f : static_cast<double>(s.i);
}

/* ---- Argument checks: one call per tensor instead of a hand-written check in every file ---- */

/** DLPack dtypes by name (lanes = 1): d2k::dl::bf16, ... */
namespace dl {
inline constexpr DLDataType bf16 = {kDLBfloat, 16, 1};
inline constexpr DLDataType f16 = {kDLFloat, 16, 1};
inline constexpr DLDataType f32 = {kDLFloat, 32, 1};
inline constexpr DLDataType f64 = {kDLFloat, 64, 1};
inline constexpr DLDataType i32 = {kDLInt, 32, 1};
inline constexpr DLDataType i64 = {kDLInt, 64, 1};
inline constexpr DLDataType u8 = {kDLUInt, 8, 1};
}  // namespace dl

inline std::string dtype_name(DLDataType t) {
  const char* code = t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint" : t.code == kDLFloat ? "float"
                     : t.code == kDLBfloat ? "bfloat" : "code";
  std::string s(code);
  s += std::to_string(t.bits);
  if (t.lanes != 1) {
    s += 'x';
    s += std::to_string(t.lanes);
  }
  return s;
}

inline std::string shape_string(const int64_t* shape, int ndim) {
  std::string s(1, '[');
  for (int d = 0; d < ndim; ++d) {
    if (d) s += ',';
    s += std::to_string(shape[d]);
  }
  s += ']';
  return s;
}

/** Checks that tensor `name` lives on `device` (kDLCUDA for GPU implementations, kDLCPU for host
 * ones), has `dtype` and exactly `shape`, and is contiguous row-major (strides NULL or compact).
 * Throws abi_error naming the tensor and what differs, e.g.
 * "tensor 'x': shape [4,7] does not match [4,8]". */
inline void expect_tensor(const DLTensor& t, const char* name, DLDeviceType device, DLDataType dtype,
                          std::initializer_list<int64_t> shape) {
  const std::string n = std::string("tensor '") + name + "': ";
  if (t.device.device_type != device)
    throw abi_error(n + (device == kDLCPU ? "must be a host tensor" : "must be a CUDA tensor"));
  if (t.dtype.code != dtype.code || t.dtype.bits != dtype.bits || t.dtype.lanes != dtype.lanes)
    throw abi_error(n + "dtype " + dtype_name(t.dtype) + " is not " + dtype_name(dtype));
  const int ndim = static_cast<int>(shape.size());
  if (t.ndim != ndim || !std::equal(shape.begin(), shape.end(), t.shape))
    throw abi_error(n + "shape " + shape_string(t.shape, t.ndim) + " does not match " +
                    shape_string(shape.begin(), ndim));
  if (t.strides) {
    int64_t compact = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (t.shape[d] != 1 && t.strides[d] != compact) throw abi_error(n + "must be contiguous");
      compact *= t.shape[d];
    }
  }
}

/** The input called `name`, checked as expect_tensor does. */
inline const DLTensor& input(const d2k_args* a, const char* name, DLDeviceType device, DLDataType dtype,
                             std::initializer_list<int64_t> shape) {
  const DLTensor& t = input(a, name);
  expect_tensor(t, name, device, dtype, shape);
  return t;
}
/** The output called `name`, checked as expect_tensor does. */
inline const DLTensor& output(const d2k_args* a, const char* name, DLDeviceType device, DLDataType dtype,
                              std::initializer_list<int64_t> shape) {
  const DLTensor& t = output(a, name);
  expect_tensor(t, name, device, dtype, shape);
  return t;
}

/* ---- Workspace carving: one carve-up function serves both entry points ---- */

/** Hands out aligned slices of the workspace in order. Write the carve-up once, as a function
 * taking a Workspace&, and call it from both entry points:
 *   d2k_workspace_size:  d2k::Workspace ws;             carve(ws, shapes); *bytes = ws.bytes();
 *   d2k_run:             d2k::Workspace ws(args);       Buffers b = carve(ws, shapes);
 * A counting Workspace (no base) returns null pointers; a bound one throws workspace_error when
 * the harness's workspace is smaller than the slices taken, so the two can never disagree
 * silently. Slices start on `align`-byte boundaries (default 256: what cuBLAS, TMA and vector
 * loads want) relative to the workspace's base, which the harness aligns. */
class Workspace {
 public:
  /** Counting only: sizes the carve-up in d2k_workspace_size. */
  explicit Workspace(uint64_t align = 256) : align_(align) {}
  /** Bound to the call's workspace, in d2k_run. */
  explicit Workspace(const d2k_args* a, uint64_t align = 256)
      : base_(static_cast<char*>(a->workspace)), capacity_(a->workspace_bytes), bound_(true), align_(align) {}

  /** `count` elements of T, starting on an aligned offset. */
  template <class T>
  T* take(uint64_t count) {
    return static_cast<T*>(take_bytes(count * sizeof(T)));
  }
  void* take_bytes(uint64_t bytes) {
    const uint64_t at = (used_ + align_ - 1) / align_ * align_;
    used_ = at + bytes;
    if (!bound_) return nullptr;
    if (used_ > capacity_ || (bytes && !base_))
      throw workspace_error("workspace of " + std::to_string(capacity_) + " bytes is smaller than the " +
                            std::to_string(used_) + " the carve-up needs");
    return base_ + at;
  }
  /** Bytes the slices taken so far span (the value d2k_workspace_size reports). */
  uint64_t bytes() const { return used_; }

 private:
  char* base_ = nullptr;
  uint64_t capacity_ = 0;
  bool bound_ = false;
  uint64_t align_;
  uint64_t used_ = 0;
};

/** Writes a message into the error buffer the harness supplied. */
inline void set_error(const d2k_args* a, const char* msg) {
  if (a && a->error && a->error_capacity) std::snprintf(a->error, a->error_capacity, "%s", msg);
}

}  // namespace d2k

/** Wraps an entry-point body so that accessor errors and C++ exceptions become
 * status codes with a message, never an exception across the C boundary.
 * Variadic so that commas in the body (kernel launches, templates) need no extra parentheses. */
#define D2K_ENTRY(args, ...)                             \
  do {                                                   \
    try {                                                \
      __VA_ARGS__                                        \
    } catch (const d2k::workspace_error& e_) {           \
      d2k::set_error((args), e_.what());                 \
      return D2K_ERR_WORKSPACE;                          \
    } catch (const d2k::abi_error& e_) {                 \
      d2k::set_error((args), e_.what());                 \
      return D2K_ERR_BAD_ARGS;                           \
    } catch (const std::exception& e_) {                 \
      d2k::set_error((args), e_.what());                 \
      return D2K_ERR_INTERNAL;                           \
    }                                                    \
  } while (0)

#ifdef __CUDACC__
/** Checks a CUDA call inside an entry point; on failure writes the call and the
 * error into args->error and returns D2K_ERR_CUDA. */
#define D2K_CUDA_TRY(args, call)                                                        \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      if ((args) && (args)->error && (args)->error_capacity)                            \
        std::snprintf((args)->error, (args)->error_capacity, "%s:%d %s: %s", __FILE__,  \
                      __LINE__, #call, cudaGetErrorString(e_));                         \
      return D2K_ERR_CUDA;                                                              \
    }                                                                                   \
  } while (0)
#endif

#endif /* __cplusplus */

#endif /* D2K_SOLUTION_H */
