#pragma once
/// Element loads, stores and floating-point format conversions shared by host and device.
/// Narrow float formats are reached through float with one round-to-nearest-even step, the
/// same rounding as CUDA's __float2bfloat16_rn / __float2half_rn and
/// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...); fp8 values beyond the largest finite one
/// saturate to it. Decodes are exact.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "data/exact_math.h"
#include "data/hd.h"

namespace d2k::data {

D2K_HD std::uint32_t bits_of_f(float x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__float_as_uint(x));
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
D2K_HD float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

/// float -> bfloat16 bits, round to nearest even; NaN -> 0x7FFF.
D2K_HD std::uint16_t f32_to_bf16_bits(float f) {
  const std::uint32_t u = bits_of_f(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFu;
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
D2K_HD float bf16_bits_to_f32(std::uint16_t b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

/// A binary floating format narrower than float: `man` mantissa bits, exponent `bias`.
struct SmallFloatFormat {
  int man, exp_bits, bias;
  std::uint32_t max_finite;  ///< code of the largest finite magnitude
  std::uint32_t nan_code;    ///< code returned for NaN (no sign)
  bool has_inf;              ///< false: exponent all-ones still encodes finite values (e4m3fn)
  bool saturate;             ///< overflow gives max_finite instead of inf
};
constexpr SmallFloatFormat kF16{10, 5, 15, 0x7BFFu, 0x7FFFu, true, false};
constexpr SmallFloatFormat kE4M3{3, 4, 7, 0x7Eu, 0x7Fu, false, true};
constexpr SmallFloatFormat kE5M2{2, 5, 15, 0x7Bu, 0x7Fu, true, true};

/// float -> narrow format, round to nearest even.
D2K_HD std::uint32_t f32_to_small_bits(float f, SmallFloatFormat fm) {
  const std::uint32_t x = bits_of_f(f);
  const std::uint32_t sign = (x >> 31) << (fm.man + fm.exp_bits);
  const std::uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return fm.nan_code;
  const int e = static_cast<int>(ax >> 23);
  if (e == 0) return sign;  // zero or float subnormal: below half the smallest narrow subnormal
  const int E = e - 127;
  const int min_normal = 1 - fm.bias;
  const std::uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;  // value = mant * 2^(E-23)
  std::uint32_t code;
  int shift;
  if (E >= min_normal) {
    if (E > 2 * fm.bias + 2) {  // far beyond range (also +inf): no shifting games
      code = 0xFFFFFFFFu;
      shift = 0;
    } else {
      shift = 23 - fm.man;
      code = (static_cast<std::uint32_t>(E + fm.bias - 1) << fm.man) + (mant >> shift);
    }
  } else {
    shift = 23 - fm.man + (min_normal - E);
    if (shift >= 32) return sign;
    code = mant >> shift;
  }
  if (shift > 0 && code != 0xFFFFFFFFu) {
    const std::uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (code & 1u))) ++code;
  }
  if (code > fm.max_finite) {
    if (fm.saturate || !fm.has_inf) code = fm.max_finite;
    else code = static_cast<std::uint32_t>(((1u << fm.exp_bits) - 1u) << fm.man);  // inf
  }
  return sign | code;
}

/// Narrow format -> float, exact.
D2K_HD float small_bits_to_f32(std::uint32_t b, SmallFloatFormat fm) {
  const int sign_shift = fm.man + fm.exp_bits;
  const std::uint32_t sign = ((b >> sign_shift) & 1u) << 31;
  const std::uint32_t expf = (b >> fm.man) & ((1u << fm.exp_bits) - 1u);
  const std::uint32_t man = b & ((1u << fm.man) - 1u);
  const std::uint32_t all_ones = (1u << fm.exp_bits) - 1u;
  if (fm.has_inf && expf == all_ones) return float_of(sign | 0x7F800000u | (man ? 0x400000u : 0u));
  if (!fm.has_inf && expf == all_ones && man == (1u << fm.man) - 1u)  // e4m3fn: S.1111.111 is NaN
    return float_of(sign | 0x7FC00000u);
  if (expf == 0) {
    // man * 2^(1 - bias - man): a float multiplication by a power of two is exact here.
    const float scale = float_of(static_cast<std::uint32_t>(127 + 1 - fm.bias - fm.man) << 23);
    const float v = static_cast<float>(man) * scale;
    return float_of(sign | bits_of_f(v));
  }
  return float_of(sign | ((expf - fm.bias + 127) << 23) | (man << (23 - fm.man)));
}

/// Bytes per element.
D2K_HD std::size_t elem_bytes(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::bf16: case DType::f16: case DType::i16: return 2;
    default: return 1;
  }
}
D2K_HD bool is_float_type(DType t) {
  return t == DType::bf16 || t == DType::f16 || t == DType::f32 || t == DType::f64 || t == DType::f8e4m3 ||
         t == DType::f8e5m2;
}

/// Raw bits of element i (zero-extended).
D2K_HD std::uint64_t load_bits(DType t, const void* base, std::int64_t i) {
  switch (elem_bytes(t)) {
    case 8: return static_cast<const std::uint64_t*>(base)[i];
    case 4: return static_cast<const std::uint32_t*>(base)[i];
    case 2: return static_cast<const std::uint16_t*>(base)[i];
    default: return static_cast<const std::uint8_t*>(base)[i];
  }
}
D2K_HD void store_bits(DType t, void* base, std::int64_t i, std::uint64_t b) {
  switch (elem_bytes(t)) {
    case 8: static_cast<std::uint64_t*>(base)[i] = b; break;
    case 4: static_cast<std::uint32_t*>(base)[i] = static_cast<std::uint32_t>(b); break;
    case 2: static_cast<std::uint16_t*>(base)[i] = static_cast<std::uint16_t>(b); break;
    default: static_cast<std::uint8_t*>(base)[i] = static_cast<std::uint8_t>(b); break;
  }
}

/// Element i as double (exact for every format; int64 beyond 2^53 rounds).
D2K_HD double load_double(DType t, const void* base, std::int64_t i) {
  const std::uint64_t b = load_bits(t, base, i);
  switch (t) {
    case DType::f64: return double_of(b);
    case DType::f32: return float_of(static_cast<std::uint32_t>(b));
    case DType::bf16: return bf16_bits_to_f32(static_cast<std::uint16_t>(b));
    case DType::f16: return small_bits_to_f32(static_cast<std::uint32_t>(b), kF16);
    case DType::f8e4m3: return small_bits_to_f32(static_cast<std::uint32_t>(b), kE4M3);
    case DType::f8e5m2: return small_bits_to_f32(static_cast<std::uint32_t>(b), kE5M2);
    case DType::i8: return static_cast<std::int8_t>(b);
    case DType::i16: return static_cast<std::int16_t>(b);
    case DType::i32: return static_cast<std::int32_t>(b);
    case DType::i64: return i64_to_double(static_cast<std::int64_t>(b));
    case DType::u8: case DType::boolean: return static_cast<double>(static_cast<std::uint8_t>(b));
    case DType::u32: return static_cast<double>(static_cast<std::uint32_t>(b));
  }
  return 0;
}

/// Element i of an integer (or bool) tensor as int64, exactly.
D2K_HD std::int64_t load_i64(DType t, const void* base, std::int64_t i) {
  const std::uint64_t b = load_bits(t, base, i);
  switch (t) {
    case DType::i8: return static_cast<std::int8_t>(b);
    case DType::i16: return static_cast<std::int16_t>(b);
    case DType::i32: return static_cast<std::int32_t>(b);
    case DType::i64: return static_cast<std::int64_t>(b);
    case DType::u8: case DType::boolean: return static_cast<std::uint8_t>(b);
    case DType::u32: return static_cast<std::uint32_t>(b);
    default: return double_to_i64_trunc(load_double(t, base, i));
  }
}

/// Smallest and largest value of an integer type.
D2K_HD void int_range(DType t, std::int64_t* lo, std::int64_t* hi) {
  switch (t) {
    case DType::i8: *lo = -128; *hi = 127; break;
    case DType::i16: *lo = -32768; *hi = 32767; break;
    case DType::i32: *lo = -2147483648ll; *hi = 2147483647ll; break;
    case DType::u8: *lo = 0; *hi = 255; break;
    case DType::u32: *lo = 0; *hi = 4294967295ll; break;
    case DType::boolean: *lo = 0; *hi = 1; break;
    default: *lo = static_cast<std::int64_t>(0x8000000000000000ull); *hi = 0x7FFFFFFFFFFFFFFFll; break;
  }
}

/// Stores a real value: floats round to nearest even (via float for 16- and 8-bit formats);
/// integer types take floor(v), saturated (NaN -> 0); bool is (v != 0).
D2K_HD void store_real(DType t, void* base, std::int64_t i, double v) {
  switch (t) {
    case DType::f64: store_bits(t, base, i, bits_of(v)); return;
    case DType::f32: store_bits(t, base, i, bits_of_f(double_to_float_rn(v))); return;
    case DType::bf16: store_bits(t, base, i, f32_to_bf16_bits(double_to_float_rn(v))); return;
    case DType::f16: store_bits(t, base, i, f32_to_small_bits(double_to_float_rn(v), kF16)); return;
    case DType::f8e4m3: store_bits(t, base, i, f32_to_small_bits(double_to_float_rn(v), kE4M3)); return;
    case DType::f8e5m2: store_bits(t, base, i, f32_to_small_bits(double_to_float_rn(v), kE5M2)); return;
    case DType::boolean: store_bits(t, base, i, (v != 0 && !is_nan(v)) ? 1u : 0u); return;
    default: break;
  }
  std::int64_t lo, hi;
  int_range(t, &lo, &hi);
  std::int64_t iv;
  if (is_nan(v)) iv = 0;
  else if (v <= i64_to_double(lo)) iv = lo;
  else if (v >= i64_to_double(hi)) iv = hi;
  else iv = double_to_i64_trunc(floor_d(v));
  store_bits(t, base, i, static_cast<std::uint64_t>(iv));
}

/// Stores an integer value: integer types saturate, bool is (v != 0), floats round to nearest.
D2K_HD void store_int(DType t, void* base, std::int64_t i, std::int64_t v) {
  if (is_float_type(t)) {
    store_real(t, base, i, i64_to_double(v));
    return;
  }
  if (t == DType::boolean) {
    store_bits(t, base, i, v != 0 ? 1u : 0u);
    return;
  }
  std::int64_t lo, hi;
  int_range(t, &lo, &hi);
  store_bits(t, base, i, static_cast<std::uint64_t>(v < lo ? lo : (v > hi ? hi : v)));
}

}  // namespace d2k::data
