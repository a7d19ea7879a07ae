#include "core/dtype.h"

#include <stdexcept>

#include "d2k/solution.h"

namespace d2k {

namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t size;
  std::uint8_t dl_code;
};

constexpr DTypeInfo kInfo[] = {
    {DType::bf16, "bfloat16", 2, kDLBfloat},
    {DType::f16, "float16", 2, kDLFloat},
    {DType::f32, "float32", 4, kDLFloat},
    {DType::f64, "float64", 8, kDLFloat},
    {DType::i8, "int8", 1, kDLInt},
    {DType::i16, "int16", 2, kDLInt},
    {DType::i32, "int32", 4, kDLInt},
    {DType::i64, "int64", 8, kDLInt},
    {DType::u8, "uint8", 1, kDLUInt},
    {DType::u32, "uint32", 4, kDLUInt},
    {DType::f8e4m3, "float8_e4m3fn", 1, D2K_DL_FLOAT8_E4M3FN},
    {DType::f8e5m2, "float8_e5m2", 1, D2K_DL_FLOAT8_E5M2},
    {DType::boolean, "bool", 1, D2K_DL_BOOL},
};

const DTypeInfo& info(DType t) {
  for (const auto& i : kInfo)
    if (i.type == t) return i;
  throw std::invalid_argument("invalid DType value");
}

}  // namespace

std::size_t dtype_size(DType t) { return info(t).size; }

std::string_view dtype_name(DType t) { return info(t).name; }

std::optional<DType> parse_dtype(std::string_view s) {
  for (const auto& i : kInfo)
    if (i.name == s) return i.type;
  struct Alias {
    std::string_view name;
    DType type;
  };
  static constexpr Alias kAliases[] = {
      {"bf16", DType::bf16},         {"fp16", DType::f16},          {"fp32", DType::f32},
      {"fp64", DType::f64},          {"fp8_e4m3", DType::f8e4m3},   {"fp8_e5m2", DType::f8e5m2},
  };
  for (const auto& a : kAliases)
    if (a.name == s) return a.type;
  return std::nullopt;
}

DLDataType to_dlpack(DType t) {
  const auto& i = info(t);
  DLDataType d;
  d.code = i.dl_code;
  d.bits = static_cast<std::uint8_t>(i.size * 8);
  d.lanes = 1;
  return d;
}

bool is_floating(DType t) {
  switch (t) {
    case DType::bf16: case DType::f16: case DType::f32: case DType::f64:
    case DType::f8e4m3: case DType::f8e5m2:
      return true;
    default:
      return false;
  }
}

bool is_integer(DType t) {
  switch (t) {
    case DType::i8: case DType::i16: case DType::i32: case DType::i64:
    case DType::u8: case DType::u32:
      return true;
    default:
      return false;
  }
}

}  // namespace d2k
