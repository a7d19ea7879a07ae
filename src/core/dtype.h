#pragma once
/// Element types of task tensors, their names in definition.json and their DLPack codes.
#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace d2k {

enum class DType : std::uint8_t {
  bf16, f16, f32, f64,
  i8, i16, i32, i64,
  u8, u32,
  f8e4m3, f8e5m2,
  boolean,
};

/// Bytes per element.
std::size_t dtype_size(DType t);
/// Name as written in definition.json: "bfloat16", "float16", "float32", "float64",
/// "int8", "int16", "int32", "int64", "uint8", "uint32", "float8_e4m3fn", "float8_e5m2", "bool".
std::string_view dtype_name(DType t);
/// Parses a definition.json dtype name; also accepts the short aliases bf16, fp16, fp32, fp64,
/// fp8_e4m3, fp8_e5m2. nullopt if unknown.
std::optional<DType> parse_dtype(std::string_view s);
/// DLPack type descriptor (lanes = 1).
DLDataType to_dlpack(DType t);
bool is_floating(DType t);
bool is_integer(DType t);

/// Converts one element at `p` of type `t` to double (exact for every integer up to 2^53).
double load_as_double(DType t, const void* p);
/// Stores `v` at `p` as type `t`: floats round to nearest even in one step from double,
/// integers round to nearest even and saturate (NaN -> 0). Both use data/dtype_bits.h.
void store_from_double(DType t, void* p, double v);

}  // namespace d2k
