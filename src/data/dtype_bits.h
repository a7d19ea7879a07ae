#pragma once
/// Element loads, stores and floating-point format conversions shared by host and device: the
/// one dtype codec (core's load_as_double / store_from_double call it). Narrow float formats are
/// rounded from double in one round-to-nearest-even step (for float inputs, the same bits as
/// CUDA's conversion intrinsics). Decodes are exact.
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

/// A binary floating format narrower than float: `man` mantissa bits, exponent `bias`.
struct SmallFloatFormat {
  int man, exp_bits, bias;
  std::uint32_t max_finite;  ///< code of the largest finite magnitude
  std::uint32_t nan_code;    ///< code returned for NaN
  bool has_inf;              ///< false: exponent all-ones still encodes finite values (e4m3fn)
  bool saturate;             ///< overflow and Inf give max_finite instead of Inf (satfinite)
  bool nan_signed;           ///< NaN keeps the input's sign (fp8, as __nv_cvt_float_to_fp8)
};
constexpr SmallFloatFormat kBF16{7, 8, 127, 0x7F7Fu, 0x7FFFu, true, false, false};
constexpr SmallFloatFormat kF16{10, 5, 15, 0x7BFFu, 0x7FFFu, true, false, false};
constexpr SmallFloatFormat kE4M3{3, 4, 7, 0x7Eu, 0x7Fu, false, true, true};
constexpr SmallFloatFormat kE5M2{2, 5, 15, 0x7Bu, 0x7Eu, true, false, true};

/// double -> narrow format in one rounding (to nearest, ties to even). For a float input this
/// equals CUDA's __float2bfloat16_rn / __float2half_rn / __nv_cvt_float_to_fp8 (e4m3:
/// __NV_SATFINITE, e5m2: __NV_NOSAT), and it is core's store_from_double.
D2K_HD std::uint32_t f64_to_small_bits(double v, SmallFloatFormat fm) {
  const std::uint64_t x = bits_of(v);
  const std::uint32_t sign = static_cast<std::uint32_t>(x >> 63) << (fm.man + fm.exp_bits);
  const std::uint64_t ax = x & 0x7FFFFFFFFFFFFFFFull;
  if (ax > 0x7FF0000000000000ull) return fm.nan_signed ? (sign | fm.nan_code) : fm.nan_code;
  const std::uint32_t inf_code = ((1u << fm.exp_bits) - 1u) << fm.man;
  const std::uint32_t overflow = fm.saturate || !fm.has_inf ? fm.max_finite : inf_code;
  const int e = static_cast<int>(ax >> 52);
  if (e == 0) return sign;  // zero or double subnormal: far below every narrow subnormal
  const int E = e - 1023;
  if (E > 2 * fm.bias + 2) return sign | overflow;  // far beyond the range (also Inf)
  const int min_normal = 1 - fm.bias;
  const std::uint64_t mant = (ax & 0x000FFFFFFFFFFFFFull) | 0x0010000000000000ull;  // value = mant * 2^(E-52)
  int shift;
  std::uint64_t code;
  if (E >= min_normal) {
    shift = 52 - fm.man;
    code = (static_cast<std::uint64_t>(E + fm.bias - 1) << fm.man) + (mant >> shift);
  } else {
    shift = 52 - fm.man + (min_normal - E);
    if (shift >= 64) return sign;  // below a quarter of the smallest subnormal
    code = mant >> shift;
  }
  const std::uint64_t rem = mant & ((1ull << shift) - 1ull), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (code & 1u))) ++code;  // a carry into the exponent is right
  if (code > fm.max_finite) return sign | overflow;
  return sign | static_cast<std::uint32_t>(code);
}

/// float -> narrow format (float -> double is exact, so this is one rounding too).
D2K_HD std::uint32_t f32_to_small_bits(float f, SmallFloatFormat fm) {
  return f64_to_small_bits(static_cast<double>(f), fm);
}

/// float -> bfloat16 bits, round to nearest even; NaN -> 0x7FFF.
D2K_HD std::uint16_t f32_to_bf16_bits(float f) { return static_cast<std::uint16_t>(f32_to_small_bits(f, kBF16)); }
D2K_HD float bf16_bits_to_f32(std::uint16_t b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

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
    case DType::u8: return static_cast<double>(static_cast<std::uint8_t>(b));
    case DType::boolean: return b != 0 ? 1.0 : 0.0;
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
    case DType::u8: return static_cast<std::uint8_t>(b);
    case DType::boolean: return b != 0 ? 1 : 0;
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

/// Round to nearest integer, ties to even (as nearbyint in the default mode).
D2K_HD double rint_even(double x) {
  if (!(abs_d(x) < 4503599627370496.0)) return x;  // >= 2^52 (or NaN): already integral
  const double t = floor_d(x);
  const double frac = (xd(x) - t).v;  // exact
  if (frac > 0.5) return (xd(t) + 1.0).v;
  if (frac == 0.5 && (double_to_i64_trunc(t) & 1)) return (xd(t) + 1.0).v;
  return t;
}

/// Stores a real value (core's store_from_double): floats round to nearest even
/// in one step from double; integer types round to nearest even and saturate (NaN -> 0);
/// bool is (v != 0), NaN included.
D2K_HD void store_real(DType t, void* base, std::int64_t i, double v) {
  switch (t) {
    case DType::f64: store_bits(t, base, i, bits_of(v)); return;
    case DType::f32: store_bits(t, base, i, bits_of_f(double_to_float_rn(v))); return;
    case DType::bf16: store_bits(t, base, i, f64_to_small_bits(v, kBF16)); return;
    case DType::f16: store_bits(t, base, i, f64_to_small_bits(v, kF16)); return;
    case DType::f8e4m3: store_bits(t, base, i, f64_to_small_bits(v, kE4M3)); return;
    case DType::f8e5m2: store_bits(t, base, i, f64_to_small_bits(v, kE5M2)); return;
    case DType::boolean: store_bits(t, base, i, v != 0 ? 1u : 0u); return;
    default: break;
  }
  std::int64_t lo, hi;
  int_range(t, &lo, &hi);
  std::int64_t iv;
  const double r = rint_even(v);
  if (is_nan(v)) iv = 0;
  else if (r <= i64_to_double(lo)) iv = lo;
  else if (r >= i64_to_double(hi)) iv = hi;
  else iv = double_to_i64_trunc(r);
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
