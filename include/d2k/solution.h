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
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace d2k {

/** Thrown by the accessors below; D2K_ENTRY turns it into D2K_ERR_BAD_ARGS. */
struct abi_error : std::runtime_error {
  using std::runtime_error::runtime_error;
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
