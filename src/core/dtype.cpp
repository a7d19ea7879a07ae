#include "core/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>
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

// A binary floating format narrower than float: sign, `exp_bits`, `man_bits`.
// Encoding rounds a double to nearest, ties to even, in one step; float inputs convert to
// double exactly, so one rounding from float gives the same bits as CUDA's float conversions.
struct MiniFloat {
  int exp_bits, man_bits;
  bool has_inf;              // IEEE-style all-ones exponent = Inf/NaN (not e4m3fn)
  bool saturate;             // overflow and Inf give the largest finite value (satfinite)
  std::uint32_t max_finite;  // bits of the largest finite magnitude
  std::uint32_t overflow;    // bits for an overflowing magnitude when not saturating
};

constexpr MiniFloat kBF16{8, 7, true, false, 0x7F7F, 0x7F80};
constexpr MiniFloat kF16{5, 10, true, false, 0x7BFF, 0x7C00};
// e4m3fn has no Inf; CUDA's __NV_SATFINITE clamps overflow and Inf to +-448.
constexpr MiniFloat kE4M3{4, 3, false, true, 0x7E, 0x7F};
// e5m2 follows IEEE (like __NV_NOSAT and PyTorch's cast): overflow becomes Inf.
constexpr MiniFloat kE5M2{5, 2, true, false, 0x7B, 0x7C};

std::uint32_t encode(double v, const MiniFloat& f, std::uint32_t nan_bits) {
  const int total = 1 + f.exp_bits + f.man_bits;
  const std::uint32_t sign = std::signbit(v) ? (1u << (total - 1)) : 0u;
  if (std::isnan(v)) return nan_bits;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | (f.saturate ? f.max_finite : f.overflow);
  if (a == 0.0) return sign;

  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int emin = 1 - bias;  // exponent of the smallest normal
  int e2 = 0;
  std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  const int e = e2 - 1;
  // Far above the range: overflow without forming a huge quotient.
  if (e > (1 << f.exp_bits)) return sign | (f.saturate ? f.max_finite : f.overflow);

  // Subnormals share the quantum of the smallest normal binade.
  const int quantum_exp = (e < emin ? emin : e) - f.man_bits;
  const double q = std::ldexp(a, -quantum_exp);  // exact: scaling by a power of two
  double n = std::floor(q);
  const double frac = q - n;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(n, 2.0) != 0.0)) n += 1.0;
  const auto ni = static_cast<std::uint32_t>(n);

  // The encoding is contiguous in magnitude: a carry out of the mantissa bumps the exponent.
  std::uint32_t bits = 0;
  if (e < emin) {
    bits = ni;
  } else {
    bits = (static_cast<std::uint32_t>(e + bias) << f.man_bits) + (ni - (1u << f.man_bits));
  }
  if (bits > f.max_finite) bits = f.saturate ? f.max_finite : f.overflow;
  return sign | bits;
}

double decode(std::uint32_t bits, const MiniFloat& f) {
  const int total = 1 + f.exp_bits + f.man_bits;
  const bool neg = (bits >> (total - 1)) & 1u;
  const std::uint32_t exp_field = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1u);
  const std::uint32_t man = bits & ((1u << f.man_bits) - 1u);
  const std::uint32_t exp_all = (1u << f.exp_bits) - 1u;
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  double r = 0;
  if (f.has_inf && exp_field == exp_all) {
    r = man == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.has_inf && exp_field == exp_all && man == (1u << f.man_bits) - 1u) {
    r = std::numeric_limits<double>::quiet_NaN();  // e4m3fn: S.1111.111 is the only NaN
  } else if (exp_field == 0) {
    r = std::ldexp(static_cast<double>(man), 1 - bias - f.man_bits);
  } else {
    r = std::ldexp(static_cast<double>(man | (1u << f.man_bits)),
                   static_cast<int>(exp_field) - bias - f.man_bits);
  }
  return neg ? -r : r;
}

// NaN keeps its sign in fp8, as __nv_cvt_float_to_fp8 does: e4m3fn S.1111.111, e5m2 a quiet
// NaN S.11111.10.
std::uint32_t e4m3_nan(double v) { return std::signbit(v) ? 0xFFu : 0x7Fu; }
std::uint32_t e5m2_nan(double v) { return std::signbit(v) ? 0xFEu : 0x7Eu; }

template <class T>
T saturating_round(double v) {
  // Integers: round to nearest (ties to even) and clamp to the type's range; NaN stores 0.
  if (std::isnan(v)) return T{0};
  const double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

template <class T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
void store(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
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

double load_as_double(DType t, const void* p) {
  switch (t) {
    case DType::bf16: return decode(load<std::uint16_t>(p), kBF16);
    case DType::f16: return decode(load<std::uint16_t>(p), kF16);
    case DType::f32: return load<float>(p);
    case DType::f64: return load<double>(p);
    case DType::i8: return load<std::int8_t>(p);
    case DType::i16: return load<std::int16_t>(p);
    case DType::i32: return load<std::int32_t>(p);
    case DType::i64: return static_cast<double>(load<std::int64_t>(p));
    case DType::u8: return load<std::uint8_t>(p);
    case DType::u32: return load<std::uint32_t>(p);
    case DType::f8e4m3: return decode(load<std::uint8_t>(p), kE4M3);
    case DType::f8e5m2: return decode(load<std::uint8_t>(p), kE5M2);
    case DType::boolean: return load<std::uint8_t>(p) != 0 ? 1.0 : 0.0;
  }
  throw std::invalid_argument("invalid DType value");
}

void store_from_double(DType t, void* p, double v) {
  switch (t) {
    // Narrow floats round once from double (no double rounding through float).
    case DType::bf16: store(p, static_cast<std::uint16_t>(encode(v, kBF16, 0x7FFF))); return;
    case DType::f16: store(p, static_cast<std::uint16_t>(encode(v, kF16, 0x7FFF))); return;
    case DType::f32: store(p, static_cast<float>(v)); return;
    case DType::f64: store(p, v); return;
    case DType::i8: store(p, saturating_round<std::int8_t>(v)); return;
    case DType::i16: store(p, saturating_round<std::int16_t>(v)); return;
    case DType::i32: store(p, saturating_round<std::int32_t>(v)); return;
    case DType::i64: store(p, saturating_round<std::int64_t>(v)); return;
    case DType::u8: store(p, saturating_round<std::uint8_t>(v)); return;
    case DType::u32: store(p, saturating_round<std::uint32_t>(v)); return;
    case DType::f8e4m3: store(p, static_cast<std::uint8_t>(encode(v, kE4M3, e4m3_nan(v)))); return;
    case DType::f8e5m2: store(p, static_cast<std::uint8_t>(encode(v, kE5M2, e5m2_nan(v)))); return;
    case DType::boolean: store(p, static_cast<std::uint8_t>(v != 0.0 ? 1 : 0)); return;
  }
  throw std::invalid_argument("invalid DType value");
}

// CUDA's host and device conversions return the canonical NaN 0x7FFF for bf16 and f16.
std::uint16_t float_to_bf16_bits(float f) { return static_cast<std::uint16_t>(encode(f, kBF16, 0x7FFF)); }
float bf16_bits_to_float(std::uint16_t b) { return static_cast<float>(decode(b, kBF16)); }
std::uint16_t float_to_f16_bits(float f) { return static_cast<std::uint16_t>(encode(f, kF16, 0x7FFF)); }
float f16_bits_to_float(std::uint16_t b) { return static_cast<float>(decode(b, kF16)); }

std::uint8_t float_to_e4m3_bits(float f) {
  return static_cast<std::uint8_t>(encode(f, kE4M3, e4m3_nan(f)));
}
float e4m3_bits_to_float(std::uint8_t b) { return static_cast<float>(decode(b, kE4M3)); }

std::uint8_t float_to_e5m2_bits(float f) {
  return static_cast<std::uint8_t>(encode(f, kE5M2, e5m2_nan(f)));
}
float e5m2_bits_to_float(std::uint8_t b) { return static_cast<float>(decode(b, kE5M2)); }

}  // namespace d2k
