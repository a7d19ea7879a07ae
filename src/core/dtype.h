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
/// Stores `v` at `p` as type `t`, rounding to nearest even for floating types.
void store_from_double(DType t, void* p, double v);

/// IEEE-style conversions used on the host, bit-compatible with CUDA's __float2bfloat16_rn etc.
std::uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(std::uint16_t b);
std::uint16_t float_to_f16_bits(float f);
float f16_bits_to_float(std::uint16_t b);
std::uint8_t float_to_e4m3_bits(float f);
float e4m3_bits_to_float(std::uint8_t b);
std::uint8_t float_to_e5m2_bits(float f);
float e5m2_bits_to_float(std::uint8_t b);

}  // namespace d2k
