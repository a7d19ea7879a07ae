// generate_device must equal generate_host bit for bit, for every kind and several dtypes.
#include <gtest/gtest.h>

#include <cstring>

#include "data/dtype_bits.h"
#include "data/generators.h"
#include "gpu_util.h"

using namespace d2k;

namespace {

struct Case {
  const char* kind;
  ordered_json params;
  DType dtype;
  std::int64_t count;
};

GenRequest make(const Case& c, std::uint64_t seed) {
  GenRequest r;
  r.spec.kind = c.kind;
  r.spec.params = c.params;
  r.dtype = c.dtype;
  r.count = c.count;
  r.seed = seed;
  r.stream = stream_id(c.kind, 3);
  r.where = std::string("gpu test ") + c.kind;
  if (std::string(c.kind) == "join_probe_keys") {
    r.ref = GenRef{"build", GeneratorSpec{"unique_keys", {{"low", 100}, {"high", 100 + 4 * 300000}}},
                   stream_id("build", 0), 300000};
  }
  if (std::string(c.kind) == "graph_csr" && c.params.contains("row_ptr"))  // 300001 rows, 3e6 entries
    r.ref = GenRef{"row_ptr", GeneratorSpec{"graph_csr", {{"part", "row_ptr"}, {"nnz", 3000000}, {"alpha", 1.3},
                                                         {"heavy_rows", 3}, {"heavy_len", 100000}}},
                   stream_id("row_ptr", 0), 300002};
  if (std::string(c.kind) == "layer_stack_offsets")  // a 1e9-element flat parameter buffer
    r.ref = GenRef{"param", GeneratorSpec{"normal", {}}, stream_id("param", 0), 1000000000};
  return r;
}

/// Generates on both sides; returns the first differing element or -1.
std::int64_t first_difference(const GenRequest& r) {
  HostTensor h;
  generate_host(r, h);
  data::DeviceBuffer d(h.bytes.size());
  generate_device(r, d.get(), nullptr);
  D2K_DATA_CUDA_CHECK(cudaDeviceSynchronize());
  const auto back = test::to_host(d, h.bytes.size());
  const std::size_t es = data::elem_bytes(r.dtype);
  for (std::int64_t i = 0; i < r.count; ++i)
    if (std::memcmp(h.bytes.data() + i * es, back.data() + i * es, es) != 0) {
      ADD_FAILURE() << r.where << " " << dtype_name(r.dtype) << ": element " << i << " host "
                    << data::load_double(r.dtype, h.data(), i) << " device "
                    << data::load_double(r.dtype, back.data(), i);
      return i;
    }
  return -1;
}

std::vector<Case> cases() {
  const std::int64_t n = 1000003;  // odd: not a multiple of any block size
  std::vector<Case> c;
  for (DType t : {DType::f64, DType::f32, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2})
    c.push_back({"normal", {{"mean", 0.25}, {"std", 1.5}}, t, n});
  for (DType t : {DType::f64, DType::f32, DType::bf16}) c.push_back({"uniform", {{"low", -3}, {"high", 0.5}}, t, n});
  for (DType t : {DType::i32, DType::i64, DType::i8, DType::i16, DType::f32})
    c.push_back({"randint", {{"low", -50}, {"high", 100}}, t, n});
  c.push_back({"randint", {{"low", 0}, {"high", 4000000000ll}}, DType::u32, n});
  c.push_back({"randint", {{"low", 0}, {"high", 2}}, DType::boolean, n});
  c.push_back({"randint", {{"low", -(std::int64_t{1} << 62)}, {"high", std::int64_t{1} << 62}}, DType::i64, n});
  c.push_back({"const", {{"value", 0.3}}, DType::bf16, 1000});
  c.push_back({"const", {{"value", -9}}, DType::i32, 1000});
  c.push_back({"arange", {{"start", 5}, {"step", 3}}, DType::i64, n});
  c.push_back({"arange", {{"start", 0.5}, {"step", 0.1}}, DType::f32, n});
  c.push_back({"unique_keys", {{"low", 0}, {"high", 3 * n}}, DType::i32, n});
  c.push_back({"unique_keys", {{"low", -7}}, DType::i64, n});
  c.push_back({"unique_keys", {{"low", 0}, {"high", std::int64_t{1} << 45}}, DType::i64, n});
  for (double m : {0.0, 0.5, 1.0}) c.push_back({"join_probe_keys", {{"build", "build"}, {"match_rate", m}}, DType::i32, n});
  for (double s : {0.8, 1.0, 1.3}) c.push_back({"zipf", {{"n", 65536}, {"s", s}}, DType::i32, n});
  c.push_back({"zipf", {{"n", 1000000000}, {"s", 1.1}}, DType::i64, n});
  for (double sk : {0.0, 1.5}) c.push_back({"ragged_offsets", {{"total", 100000000}, {"skew", sk}}, DType::i64, 1001});
  c.push_back({"ragged_offsets", {{"total", 2000000000}, {"skew", 2}}, DType::i32, (1 << 20) + 1});
  c.push_back({"ragged_offsets", {{"total", 0}}, DType::i32, 1});
  c.push_back({"layer_stack_offsets", {{"buffer", "param"}, {"hidden", 8192}, {"intermediate", 28672}, {"kv_dim", 1024},
               {"vocab", 128256}}, DType::i64, 1001});
  c.push_back({"layer_stack_offsets", {{"buffer", "param"}, {"hidden", 2048}, {"intermediate", 1408},
               {"vocab", 151936}, {"experts", 60}}, DType::i32, 5001});
  for (const char* map : {"signed", "unsigned"})
    c.push_back({"dynamic_map_codes", {{"map", map}, {"std", 0.35}}, DType::u8, n});
  c.push_back({"powerlaw_csr", {{"part", "row_offsets"}, {"nnz", 24000000}, {"alpha", 1.3}}, DType::i64, 100001});
  c.push_back({"powerlaw_csr", {{"part", "col_indices"}, {"cols", 1000000}}, DType::i32, n});
  c.push_back({"graph_csr", {{"part", "row_ptr"}, {"nnz", 3000000}, {"alpha", 1.3}, {"heavy_rows", 3},
               {"heavy_len", 100000}}, DType::i32, 300002});
  c.push_back({"graph_csr", {{"part", "row_ptr"}, {"nnz", 57600000}, {"alpha", 0}}, DType::i64, 24000001});
  c.push_back({"graph_csr", {{"part", "col_idx"}, {"row_ptr", "row_ptr"}, {"cols", 300001}, {"band", 16}}, DType::i32,
               3000000});
  for (const char* col : {"l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_returnflag", "l_linestatus",
                          "l_shipdate", "l_commitdate", "l_receiptdate", "l_orderdate", "l_partkey"})
    c.push_back({"tpch_lineitem", {{"column", col}, {"sf", 10}}, DType::i64, n});
  c.push_back({"tpch_lineitem", {{"column", "l_extendedprice"}}, DType::f64, n});
  c.push_back({"tpch_lineitem", {{"column", "l_discount"}}, DType::f32, n});
  c.push_back({"tpch_lineitem", {{"column", "l_returnflag"}}, DType::u8, n});
  c.push_back({"tpch_lineitem", {{"column", "l_shipdate"}}, DType::i32, n});
  return c;
}

}  // namespace

TEST(GpuGenerators, DeviceEqualsHostForEveryKind) {
  D2K_REQUIRE_GPU();
  int checked = 0;
  for (const Case& c : cases())
    for (std::uint64_t seed : {1ull, 0xDEADBEEFCAFEull}) {
      EXPECT_EQ(first_difference(make(c, seed)), -1) << c.kind << " " << c.params.dump();
      ++checked;
    }
  EXPECT_GT(checked, 90);
}

TEST(GpuGenerators, DeviceIsDeterministicAndSeedSensitive) {
  D2K_REQUIRE_GPU();
  const GenRequest r = make({"normal", {}, DType::f32, 1 << 22}, 5);
  data::DeviceBuffer a(4u << 22), b(4u << 22), c(4u << 22);
  generate_device(r, a.get(), nullptr);
  generate_device(r, b.get(), nullptr);
  GenRequest r2 = r;
  r2.seed = 6;
  generate_device(r2, c.get(), nullptr);
  D2K_DATA_CUDA_CHECK(cudaDeviceSynchronize());
  const auto ha = test::to_host(a, 4u << 22), hb = test::to_host(b, 4u << 22), hc = test::to_host(c, 4u << 22);
  EXPECT_EQ(ha, hb);
  EXPECT_NE(ha, hc);
}

TEST(GpuGenerators, LargeCountUsesGridStride) {
  D2K_REQUIRE_GPU();
  // More elements than one grid covers (4096 blocks x 256 threads): the tail must match too.
  const GenRequest r = make({"uniform", {}, DType::bf16, (4096 * 256) * 3 + 17}, 11);
  EXPECT_EQ(first_difference(r), -1);
}

TEST(GpuGenerators, StreamOrderedOnANonDefaultStream) {
  D2K_REQUIRE_GPU();
  cudaStream_t s;
  D2K_DATA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const GenRequest r = make({"ragged_offsets", {{"total", 5000000}, {"skew", 1}}, DType::i64, 5001}, 3);
  HostTensor h;
  generate_host(r, h);
  data::DeviceBuffer d(h.bytes.size());
  generate_device(r, d.get(), s);
  std::vector<std::byte> back(h.bytes.size());
  D2K_DATA_CUDA_CHECK(cudaMemcpyAsync(back.data(), d.get(), back.size(), cudaMemcpyDeviceToHost, s));
  D2K_DATA_CUDA_CHECK(cudaStreamSynchronize(s));
  D2K_DATA_CUDA_CHECK(cudaStreamDestroy(s));
  EXPECT_EQ(back, h.bytes);
}
