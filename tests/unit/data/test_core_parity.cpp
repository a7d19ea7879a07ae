// The shared host/device conversions (data/dtype_bits.h) agree bit for bit with core's
// dtype.cpp (store_from_double, load_as_double, float_to_*_bits), so generated inputs are what
// the rest of the system would store.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/dtype.h"
#include "data/dtype_bits.h"

using namespace d2k;

namespace {
const DType kAll[] = {DType::bf16, DType::f16, DType::f32, DType::f64, DType::i8,  DType::i16,    DType::i32,
                      DType::i64,  DType::u8,  DType::u32, DType::f8e4m3, DType::f8e5m2, DType::boolean};

bool same_double(double a, double b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 8) == 0; }
}  // namespace

TEST(CoreParity, StoreMatchesStoreFromDouble) {
  std::mt19937_64 rng(17);
  std::vector<double> vals = {0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 3.5, 1e-45, -1e-300, 65504, 65520, 448, 464, 57344, 61440,
                              1e10, -1e10, 9.3e18, -9.3e18, 4294967295.5, 255.5, INFINITY, -INFINITY, NAN, -NAN};
  for (int i = 0; i < 400000; ++i) {
    const std::uint64_t r = rng();
    double v;
    switch (i % 4) {
      case 0: v = std::ldexp(static_cast<double>(r >> 11), static_cast<int>(rng() % 80) - 100); break;  // tiny..big
      case 1: v = static_cast<double>(static_cast<std::int64_t>(r)) / static_cast<double>(1 + (rng() % 1000)); break;
      case 2: {  // exact float-representable values and their midpoints
        float f;
        const std::uint32_t u = static_cast<std::uint32_t>(r);
        std::memcpy(&f, &u, 4);
        v = std::isfinite(f) ? static_cast<double>(f) : 1.0;
        break;
      }
      default: std::memcpy(&v, &r, 8); break;  // any bit pattern
    }
    vals.push_back((i & 8) ? -v : v);
  }
  for (DType t : kAll)
    for (double v : vals) {
      std::uint64_t mine = 0, core = 0;
      data::store_real(t, &mine, 0, v);
      store_from_double(t, &core, v);
      ASSERT_EQ(mine, core) << dtype_name(t) << " v=" << v;
    }
}

TEST(CoreParity, LoadMatchesLoadAsDouble) {
  for (DType t : {DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2, DType::i8, DType::u8, DType::boolean, DType::i16})
    for (std::uint32_t b = 0; b < (data::elem_bytes(t) == 1 ? 256u : 65536u); ++b) {
      const std::uint64_t raw = b;
      ASSERT_TRUE(same_double(data::load_double(t, &raw, 0), load_as_double(t, &raw))) << dtype_name(t) << " " << b;
    }
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t raw = rng();
    for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64, DType::u32})
      ASSERT_TRUE(same_double(data::load_double(t, &raw, 0), load_as_double(t, &raw))) << dtype_name(t);
  }
}

TEST(CoreParity, FloatConversionsMatch) {
  std::mt19937 rng(5);
  for (int i = 0; i < 1000000; ++i) {
    const std::uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    ASSERT_EQ(data::f32_to_bf16_bits(f), float_to_bf16_bits(f)) << std::hex << u;
    ASSERT_EQ(data::f32_to_small_bits(f, data::kF16), float_to_f16_bits(f)) << std::hex << u;
    ASSERT_EQ(data::f32_to_small_bits(f, data::kE4M3), float_to_e4m3_bits(f)) << std::hex << u;
    ASSERT_EQ(data::f32_to_small_bits(f, data::kE5M2), float_to_e5m2_bits(f)) << std::hex << u;
  }
  EXPECT_EQ(data::elem_bytes(DType::bf16), dtype_size(DType::bf16));
  for (DType t : kAll) EXPECT_EQ(data::elem_bytes(t), dtype_size(t)) << dtype_name(t);
}
