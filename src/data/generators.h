#pragma once
/// Input generators: every element is a pure function of (seed, stream id, element index), so
/// the host and the device produce the same bits and any element can be made on its own.
/// docs/generators.md documents the stream layout and each kind.
///
/// Kinds implemented (GeneratorSpec::kind, fields of GeneratorSpec::params):
///   normal          {mean = 0, std = 1}
///   uniform         {low = 0, high = 1}                 values in [low, high]
///   randint         {low, high}                         integers in [low, high)
///   const           {value}
///   arange          {start = 0, step = 1}               start + i * step
///   unique_keys     {low = 0, high = low + count}       distinct keys: low + perm(i) of [low, high)
///   join_probe_keys {build, match_rate, low?, high?}    build: name of a unique_keys input
///   zipf            {n, s = 1}                          ranks in [0, n), P(k) ~ (k + 1)^-s
///   ragged_offsets  {total, skew = 1}                   count = groups + 1; 0 = o[0] <= ... <= o[G] = total
///   powerlaw_csr    {part: "row_offsets", nnz, alpha = 1.5} | {part: "col_indices", cols}
///   tpch_lineitem   {column, sf = 1, table = "lineitem"}
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/dtype.h"
#include "core/task.h"
#include "core/tensor.h"

namespace d2k {

/// The input a dependent generator refers to (join_probe_keys: the build side).
struct GenRef {
  std::string name;          ///< the referenced input's name (for messages)
  GeneratorSpec spec;        ///< its generator
  std::uint64_t stream = 0;  ///< its stream id
  std::int64_t count = 0;    ///< its element count
};

/// Everything that determines one generated tensor.
struct GenRequest {
  GeneratorSpec spec;
  DType dtype = DType::f32;
  std::int64_t count = 0;              ///< elements to generate
  std::vector<std::int64_t> shape;     ///< the tensor's shape (empty: {count})
  std::uint64_t seed = 0;
  std::uint64_t stream = 0;            ///< stream id, normally input_stream_id(name, position)
  std::optional<GenRef> ref;           ///< for dependent kinds (see generator_dependency)
  std::string where;                   ///< context for error messages, e.g. "hash_join: inputs.probe.generator"
};

/// Stream id of the input `name` at `position` in the definition's input order:
/// 64-bit FNV-1a over the name's bytes, continued over the position's 4 little-endian bytes.
std::uint64_t stream_id(std::string_view name, std::uint32_t position);

/// Names of the implemented kinds.
std::vector<std::string> generator_kinds();

/// Checks a generator's kind, field names, field types and values for an input of type `dtype`;
/// throws std::invalid_argument naming `where` and the field.
void validate_generator(const GeneratorSpec& spec, DType dtype, std::string_view where);

/// The input a generator depends on (join_probe_keys: params.build), if any.
std::optional<std::string> generator_dependency(const GeneratorSpec& spec);

/// Fills `out` (dtype, shape and bytes are set from the request). Throws std::invalid_argument
/// on a bad request. Uses several host threads for large counts.
void generate_host(const GenRequest& req, HostTensor& out);

/// Writes req.count elements of req.dtype at `dst` (host memory).
void generate_host(const GenRequest& req, void* dst);

/// Writes req.count elements of req.dtype at device pointer `dptr`, asynchronously on `stream`;
/// bit-identical to generate_host. Throws std::invalid_argument on a bad request and
/// std::runtime_error on a CUDA error.
void generate_device(const GenRequest& req, void* dptr, cudaStream_t stream);

}  // namespace d2k
