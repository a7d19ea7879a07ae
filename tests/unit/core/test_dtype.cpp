#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.h"
#include "core/tensor.h"
#include "d2k/solution.h"

namespace d2k {
namespace {

// The narrow formats through the one codec (store_from_double / load_as_double, which are
// data/dtype_bits.h): encode a float, decode bits.
template <class Bits>
Bits encode_as(DType t, float f) {
  Bits b{};
  store_from_double(t, &b, f);
  return b;
}
template <class Bits>
float decode_as(DType t, Bits b) {
  return static_cast<float>(load_as_double(t, &b));
}
std::uint16_t float_to_bf16_bits(float f) { return encode_as<std::uint16_t>(DType::bf16, f); }
float bf16_bits_to_float(std::uint16_t b) { return decode_as(DType::bf16, b); }
std::uint16_t float_to_f16_bits(float f) { return encode_as<std::uint16_t>(DType::f16, f); }
float f16_bits_to_float(std::uint16_t b) { return decode_as(DType::f16, b); }
std::uint8_t float_to_e4m3_bits(float f) { return encode_as<std::uint8_t>(DType::f8e4m3, f); }
float e4m3_bits_to_float(std::uint8_t b) { return decode_as(DType::f8e4m3, b); }
std::uint8_t float_to_e5m2_bits(float f) { return encode_as<std::uint8_t>(DType::f8e5m2, f); }
float e5m2_bits_to_float(std::uint8_t b) { return decode_as(DType::f8e5m2, b); }

float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// An independent bf16 rounding: add the rounding bias to the float's bits (ties to even).
std::uint16_t bf16_by_bias(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

TEST(DType, NamesSizesAndDLPack) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp8_e4m3"), DType::f8e4m3);
  EXPECT_EQ(parse_dtype("float8_e5m2"), DType::f8e5m2);
  EXPECT_EQ(parse_dtype("bool"), DType::boolean);
  EXPECT_FALSE(parse_dtype("bfloat17").has_value());
  EXPECT_EQ(dtype_name(DType::u32), "uint32");
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(to_dlpack(DType::bf16).code, kDLBfloat);
  EXPECT_EQ(to_dlpack(DType::bf16).bits, 16);
  EXPECT_EQ(to_dlpack(DType::f8e4m3).code, D2K_DL_FLOAT8_E4M3FN);
  EXPECT_EQ(to_dlpack(DType::boolean).code, D2K_DL_BOOL);
  EXPECT_EQ(to_dlpack(DType::u8).code, kDLUInt);
  EXPECT_TRUE(is_floating(DType::f8e5m2));
  EXPECT_FALSE(is_floating(DType::i32));
  EXPECT_TRUE(is_integer(DType::u32));
  EXPECT_FALSE(is_integer(DType::boolean));
  for (int t = 0; t <= static_cast<int>(DType::boolean); ++t)
    EXPECT_EQ(parse_dtype(dtype_name(static_cast<DType>(t))), static_cast<DType>(t));
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3F80);         // tie, even stays
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3F82);     // tie, odd rounds up
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to Inf
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()), 0x7FFF);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x00018000u)), 0x0002);  // subnormal tie, odd up
  // Every 251st float bit pattern against the bias formula.
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 251) {
    const float f = bits_float(static_cast<std::uint32_t>(u));
    ASSERT_EQ(float_to_bf16_bits(f), bf16_by_bias(f)) << std::hex << u;
  }
}

TEST(DType, F16RoundsToNearestEven) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00);  // tie between max and 2^16: even is Inf
  EXPECT_EQ(float_to_f16_bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(0x1p-25f), 0x0000);  // tie with zero
  EXPECT_EQ(float_to_f16_bits(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(std::numeric_limits<float>::quiet_NaN()), 0x7FFF);
  EXPECT_EQ(float_to_f16_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
#if defined(__FLT16_MAX__)
  // The compiler's own _Float16 conversion (IEEE round to nearest even) as a second opinion.
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 257) {
    const float f = bits_float(static_cast<std::uint32_t>(u));
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    std::uint16_t hb;
    std::memcpy(&hb, &h, sizeof hb);
    ASSERT_EQ(float_to_f16_bits(f), hb) << std::hex << u;
  }
#endif
}

TEST(DType, Fp8E4m3SaturatesToFinite) {
  EXPECT_EQ(float_to_e4m3_bits(1.0f), 0x38);
  EXPECT_EQ(float_to_e4m3_bits(0.5f), 0x30);
  EXPECT_EQ(float_to_e4m3_bits(448.0f), 0x7E);
  EXPECT_EQ(float_to_e4m3_bits(464.0f), 0x7E);  // tie between 448 and 480: even
  EXPECT_EQ(float_to_e4m3_bits(465.0f), 0x7E);  // satfinite
  EXPECT_EQ(float_to_e4m3_bits(1e9f), 0x7E);
  EXPECT_EQ(float_to_e4m3_bits(-1e9f), 0xFE);
  EXPECT_EQ(float_to_e4m3_bits(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(float_to_e4m3_bits(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(float_to_e4m3_bits(0x1p-9f), 0x01);   // smallest subnormal
  EXPECT_EQ(float_to_e4m3_bits(0x1p-10f), 0x00);  // tie with zero
  EXPECT_EQ(float_to_e4m3_bits(1.5f * 0x1p-10f), 0x01);
  EXPECT_EQ(float_to_e4m3_bits(1.0625f), 0x38);   // tie between 1 and 1.125: even
  EXPECT_EQ(float_to_e4m3_bits(1.1875f), 0x3A);   // tie between 1.125 and 1.25: even (up)
  EXPECT_FLOAT_EQ(e4m3_bits_to_float(0x7E), 448.0f);
  EXPECT_FLOAT_EQ(e4m3_bits_to_float(0x01), 0x1p-9f);
  EXPECT_FLOAT_EQ(e4m3_bits_to_float(0x08), 0x1p-6f);
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0xFF)));
}

TEST(DType, Fp8E5m2OverflowsToInf) {
  EXPECT_EQ(float_to_e5m2_bits(1.0f), 0x3C);
  EXPECT_EQ(float_to_e5m2_bits(57344.0f), 0x7B);
  EXPECT_EQ(float_to_e5m2_bits(61439.0f), 0x7B);
  EXPECT_EQ(float_to_e5m2_bits(61440.0f), 0x7C);  // tie between max and 2^16: even is Inf
  EXPECT_EQ(float_to_e5m2_bits(std::numeric_limits<float>::infinity()), 0x7C);
  EXPECT_EQ(float_to_e5m2_bits(0x1p-16f), 0x01);
  EXPECT_TRUE(std::isinf(e5m2_bits_to_float(0x7C)));
  EXPECT_TRUE(std::isnan(e5m2_bits_to_float(0x7E)));
  EXPECT_TRUE(std::isnan(e5m2_bits_to_float(float_to_e5m2_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DType, EveryNarrowValueRoundTrips) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float bf = bf16_bits_to_float(static_cast<std::uint16_t>(b));
    if (!std::isnan(bf)) {
      ASSERT_EQ(float_to_bf16_bits(bf), b) << std::hex << b;
    }
    const float h = f16_bits_to_float(static_cast<std::uint16_t>(b));
    if (!std::isnan(h)) {
      ASSERT_EQ(float_to_f16_bits(h), b) << std::hex << b;
    }
  }
  for (std::uint32_t b = 0; b < 0x100; ++b) {
    const float e4 = e4m3_bits_to_float(static_cast<std::uint8_t>(b));
    if (!std::isnan(e4)) {
      ASSERT_EQ(float_to_e4m3_bits(e4), b) << std::hex << b;
    }
    const float e5 = e5m2_bits_to_float(static_cast<std::uint8_t>(b));
    if (!std::isnan(e5)) {
      ASSERT_EQ(float_to_e5m2_bits(e5), b) << std::hex << b;
    }
  }
}

TEST(DType, LoadAndStore) {
  std::uint8_t buf[8];
  store_from_double(DType::i8, buf, 300.0);
  EXPECT_EQ(load_as_double(DType::i8, buf), 127.0);
  store_from_double(DType::i8, buf, -3.5);
  EXPECT_EQ(load_as_double(DType::i8, buf), -4.0);  // ties to even
  store_from_double(DType::i32, buf, 2.5);
  EXPECT_EQ(load_as_double(DType::i32, buf), 2.0);
  store_from_double(DType::u8, buf, -1.0);
  EXPECT_EQ(load_as_double(DType::u8, buf), 0.0);
  store_from_double(DType::i64, buf, 9007199254740993.0);
  EXPECT_EQ(load_as_double(DType::i64, buf), 9007199254740992.0);
  store_from_double(DType::boolean, buf, 0.3);
  EXPECT_EQ(buf[0], 1);
  store_from_double(DType::f64, buf, 0.1);
  EXPECT_EQ(load_as_double(DType::f64, buf), 0.1);
  // One rounding from double: 1 + 2^-8 + 2^-30 is above the bf16 tie, though it rounds to the
  // tie as a float; going through float would give 0x3F80.
  store_from_double(DType::bf16, buf, 1.0 + 0x1p-8 + 0x1p-30);
  std::uint16_t b16;
  std::memcpy(&b16, buf, 2);
  EXPECT_EQ(b16, 0x3F81);
  store_from_double(DType::f8e4m3, buf, 1000.0);
  EXPECT_EQ(load_as_double(DType::f8e4m3, buf), 448.0);
  store_from_double(DType::f16, buf, 0.333251953125);  // exactly representable
  EXPECT_EQ(load_as_double(DType::f16, buf), 0.333251953125);
}

TEST(HostTensor, ShapeBytesAndView) {
  HostTensor t("x", DType::bf16, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 12u);
  store_from_double(DType::bf16, t.as<std::uint16_t>() + 4, 1.5);
  EXPECT_EQ(t.at(4), 1.5);
  EXPECT_THROW(t.at(6), std::out_of_range);
  DLTensor v = t.view();
  EXPECT_EQ(v.ndim, 2);
  EXPECT_EQ(v.shape[1], 3);
  EXPECT_EQ(v.dtype.code, kDLBfloat);
  EXPECT_EQ(v.device.device_type, kDLCPU);
  EXPECT_EQ(v.data, t.data());
  EXPECT_EQ(HostTensor("e", DType::f32, {4, 0}).nbytes(), 0u);
  EXPECT_THROW(HostTensor("bad", DType::f32, {2, -1}), std::invalid_argument);
}

}  // namespace
}  // namespace d2k
