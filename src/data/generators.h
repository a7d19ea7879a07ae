#pragma once
/// Input generators: every element is a pure function of (seed, stream id, element index), so
/// the host and the device produce the same bits and any element can be made on its own.
/// docs/generators.md documents the stream layout and each kind.
///
/// The kinds and their fields: data/gen_schema.h, the one schema that generation, validation
/// and docs/generators.md read.
#include <cstdint>
#include <optional>
#include <stdexcept>
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
  std::int64_t rows = 0;     ///< its leading dimension (the element count of a 1-d or 0-d input)
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

/// A bad generator field. `field` is the full path (`where` and the field, e.g.
/// inputs.x.generator.std), `message` what is wrong; what() is `field: message`.
struct GeneratorError : std::invalid_argument {
  std::string field, message;
  GeneratorError(std::string f, std::string m)
      : std::invalid_argument(f + ": " + m), field(std::move(f)), message(std::move(m)) {}
};

/// Stream id of the input `name` at `position` in the definition's input order:
/// 64-bit FNV-1a over the name's bytes, continued over the position's 4 little-endian bytes.
std::uint64_t stream_id(std::string_view name, std::uint32_t position);

/// Names of the implemented kinds.
std::vector<std::string> generator_kinds();

/// Checks a generator's kind, field names, field types and values for an input of type `dtype`
/// (count-independent checks only); throws GeneratorError naming `where` and the field.
void validate_generator(const GeneratorSpec& spec, DType dtype, std::string_view where);

/// Checks a whole request (kind, fields, ranges, the element count and dtype, the referenced
/// input) exactly as generation does, without making data; throws GeneratorError.
void validate_request(const GenRequest& req);

/// The input a generator depends on (join_probe_keys: params.build; layer_stack_offsets:
/// params.buffer; ragged_offsets: params.rows_of when given), if any.
std::optional<std::string> generator_dependency(const GeneratorSpec& spec);
/// The field that names that input for `kind` ("build", "buffer", "rows_of"), or nullopt.
std::optional<std::string> generator_dependency_field(std::string_view kind);

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
