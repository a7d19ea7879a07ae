// Narrow float conversions and typed element stores.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "data/dtype_bits.h"

using namespace d2k;
using namespace d2k::data;

namespace {
std::uint16_t f16_reference(float f) {
  // GCC's _Float16 conversion (libgcc, round to nearest even) as an independent reference.
  _Float16 h = static_cast<_Float16>(f);
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float f32(std::uint32_t u) { return float_of(u); }
}  // namespace

TEST(DtypeBits, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(f32(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16_bits(f32(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16_bits(f32(0x3F808001)), 0x3F81);
  EXPECT_EQ(f32_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_bf16_bits(f32(0x7F7FFFFF)), 0x7F80);  // rounds to inf
  EXPECT_EQ(f32_to_bf16_bits(std::nanf("")), 0x7FFF);
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7F80) == 0x7F80 && (b & 0x7F)) continue;  // NaN
    ASSERT_EQ(f32_to_bf16_bits(bf16_bits_to_f32(static_cast<std::uint16_t>(b))), b);
  }
}

TEST(DtypeBits, F16MatchesReferenceAndRoundTrips) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7C00) == 0x7C00 && (b & 0x3FF)) continue;  // NaN
    const float f = small_bits_to_f32(b, kF16);
    ASSERT_EQ(f32_to_small_bits(f, kF16), b) << std::hex << b;
    ASSERT_EQ(f16_reference(f), b) << std::hex << b;
  }
  std::mt19937 rng(3);
  for (int i = 0; i < 2000000; ++i) {
    std::uint32_t u = rng();
    // Concentrate on the f16 range (exponents 100..145) including subnormals and overflow.
    u = (u & 0x807FFFFFu) | ((100u + (u >> 24) % 46u) << 23);
    const float f = f32(u);
    ASSERT_EQ(f32_to_small_bits(f, kF16), f16_reference(f)) << std::hex << u;
  }
}

TEST(DtypeBits, Fp8E4M3) {
  for (std::uint32_t b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(small_bits_to_f32(b, kE4M3)));
      continue;
    }
    ASSERT_EQ(f32_to_small_bits(small_bits_to_f32(b, kE4M3), kE4M3), b) << b;
  }
  EXPECT_EQ(small_bits_to_f32(0x7E, kE4M3), 448.0f);
  EXPECT_EQ(small_bits_to_f32(0x01, kE4M3), std::ldexp(1.0f, -9));
  EXPECT_EQ(small_bits_to_f32(0x38, kE4M3), 1.0f);
  EXPECT_EQ(f32_to_small_bits(1000.0f, kE4M3), 0x7Eu);           // saturates
  EXPECT_EQ(f32_to_small_bits(-INFINITY, kE4M3), 0xFEu);
  EXPECT_EQ(f32_to_small_bits(1.0625f, kE4M3), 0x38u);           // tie to even (1.0)
  EXPECT_EQ(f32_to_small_bits(1.1875f, kE4M3), 0x3Au);           // tie to even (1.25)
  EXPECT_EQ(f32_to_small_bits(std::ldexp(1.0f, -10), kE4M3), 0u);  // half the smallest subnormal: to even 0
  EXPECT_EQ(f32_to_small_bits(std::ldexp(1.5f, -10), kE4M3), 1u);
}

TEST(DtypeBits, Fp8E5M2) {
  for (std::uint32_t b = 0; b < 256; ++b) {
    if ((b & 0x7C) == 0x7C) continue;  // inf / NaN
    ASSERT_EQ(f32_to_small_bits(small_bits_to_f32(b, kE5M2), kE5M2), b) << b;
  }
  EXPECT_EQ(small_bits_to_f32(0x7B, kE5M2), 57344.0f);
  EXPECT_TRUE(std::isinf(small_bits_to_f32(0x7C, kE5M2)));
  EXPECT_EQ(f32_to_small_bits(1e6f, kE5M2), 0x7Cu);  // overflow to Inf (__NV_NOSAT), as core
  EXPECT_EQ(small_bits_to_f32(0x3C, kE5M2), 1.0f);
}

TEST(DtypeBits, StoresSaturateAndRound) {
  std::int8_t i8[2];
  store_int(DType::i8, i8, 0, 1000);
  store_real(DType::i8, i8, 1, -2.5);
  EXPECT_EQ(i8[0], 127);
  EXPECT_EQ(i8[1], -2);  // round half to even, as core's store_from_double
  std::uint32_t u32;
  store_int(DType::u32, &u32, 0, -5);
  EXPECT_EQ(u32, 0u);
  std::uint8_t b;
  store_real(DType::boolean, &b, 0, 0.25);
  EXPECT_EQ(b, 1);
  store_real(DType::boolean, &b, 0, NAN);
  EXPECT_EQ(b, 1);
  store_real(DType::i8, i8, 0, 2.5);
  EXPECT_EQ(i8[0], 2);
  store_real(DType::i8, i8, 0, 3.5);
  EXPECT_EQ(i8[0], 4);
  store_real(DType::i8, i8, 0, NAN);
  EXPECT_EQ(i8[0], 0);
  float f;
  store_real(DType::f32, &f, 0, 0.1);
  EXPECT_EQ(f, 0.1f);
  std::uint16_t h;
  store_int(DType::bf16, &h, 0, 3);
  EXPECT_EQ(h, 0x4040);
  EXPECT_EQ(load_double(DType::bf16, &h, 0), 3.0);
  std::int64_t big = (std::int64_t{1} << 60) + 1;
  EXPECT_EQ(load_i64(DType::i64, &big, 0), big);
}
