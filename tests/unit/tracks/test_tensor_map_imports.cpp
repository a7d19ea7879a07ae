// The tensor-map allowance (docs/isolation.md, "The driver's tensor-map encoders"): solutions
// compiled the way the cuda and cutlass tracks compile them, checked against the tracks' own
// symbol policies. A direct call of the driver's tensor-map encoder links and passes; every other
// driver function and every run-time look-up of one stays refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "exec/compile.h"
#include "exec/symbols.h"
#include "tracks/track.h"
#include "unit/exec/exec_test_util.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;

const fs::path& shared_cache() {
  static test::TempDir dir("d2k-tma-cache");
  return dir.path();
}

/// The track's own compile options, with the test's cache and include folders.
CompileOptions track_options(const Track& track, const TrackSpec& spec) {
  CompileOptions o = track.compile_options(spec);
  o.cache_dir = shared_cache();
  o.include_dir = test::source_dir() / "include";
  for (const fs::path& d : test::extra_include_dirs()) o.extra_include_dirs.push_back(d);
  return o;
}

struct Checked {
  CompileResult compile;
  SymbolReport symbols;
};

/// Compiles `dir` for `track` and checks its symbols against the track's policy, as
/// Track::build does.
Checked build_on(const std::string& track_name, const fs::path& dir) {
  const Track& track = find_track(track_name);
  const TrackSpec spec = track.default_spec();
  Checked c;
  c.compile = compile_solution(dir, track_options(track, spec));
  if (c.compile.status == Status::PASSED) c.symbols = check_symbols(c.compile.library, track.symbol_policy(spec));
  return c;
}

bool has_rule(const SymbolReport& r, const std::string& rule, const std::string& symbol_prefix) {
  return std::any_of(r.violations.begin(), r.violations.end(), [&](const SymbolViolation& v) {
    return v.rule == rule && v.symbol.rfind(symbol_prefix, 0) == 0;
  });
}

bool imports(const SymbolReport& r, const std::string& name) {
  return std::any_of(r.info.imports.begin(), r.info.imports.end(), [&](const ElfSymbol& s) { return s.name == name; });
}

bool needs(const SymbolReport& r, const std::string& prefix) {
  return std::any_of(r.info.needed.begin(), r.info.needed.end(),
                     [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

/// vector_add plus one more source file.
fs::path vector_add_with(const test::TempDir& tmp, const std::string& extra_cpp) {
  const fs::path sol = tmp.path() / "sol";
  fs::create_directories(sol);
  fs::copy(test::fixture_solution("vector_add"), sol, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::ofstream(sol / "extra.cpp") << extra_cpp;
  return sol;
}

TEST(TensorMapImports, DirectEncoderCallPassesOnTheCudaAndCutlassTracks) {
  for (const std::string track : {"cuda", "cutlass"}) {
    Checked c = build_on(track, test::fixture_solution("tma_encode"));
    ASSERT_EQ(c.compile.status, Status::PASSED) << track << ": " << c.compile.message << "\n" << c.compile.log;
    EXPECT_TRUE(c.symbols.ok()) << track << ":\n" << c.symbols.summary();
    EXPECT_TRUE(imports(c.symbols, "cuTensorMapEncodeTiled")) << track;
    EXPECT_TRUE(imports(c.symbols, "cuGetErrorString")) << track;
    EXPECT_TRUE(needs(c.symbols, "libcuda.so")) << track;
    EXPECT_TRUE(c.symbols.info.runpath.empty()) << track;
  }
}

TEST(TensorMapImports, ASolutionThatCallsNoDriverFunctionDoesNotNeedTheDriver) {
  Checked c = build_on("cuda", test::fixture_solution("vector_add"));
  ASSERT_EQ(c.compile.status, Status::PASSED) << c.compile.message << "\n" << c.compile.log;
  EXPECT_TRUE(c.symbols.ok()) << c.symbols.summary();
  EXPECT_FALSE(needs(c.symbols, "libcuda.so"));  // -lcuda under --as-needed
}

TEST(TensorMapImports, OtherDriverFunctionsStayVendorLibrary) {
  test::TempDir tmp;
  const fs::path sol = vector_add_with(tmp, R"(#include <cuda.h>
int launch_by_hand(CUfunction f) { return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr); }
int alloc_by_hand() { CUdeviceptr p; return cuMemAlloc(&p, 64); }
)");
  for (const std::string track : {"cuda", "cutlass"}) {
    Checked c = build_on(track, sol);
    // The driver links (its stub), so the symbol check, not the linker, names what is refused.
    ASSERT_EQ(c.compile.status, Status::PASSED) << track << ": " << c.compile.message << "\n" << c.compile.log;
    EXPECT_TRUE(has_rule(c.symbols, "vendor_library", "cuLaunchKernel")) << track << ":\n" << c.symbols.summary();
    EXPECT_TRUE(has_rule(c.symbols, "vendor_library", "cuMemAlloc")) << track << ":\n" << c.symbols.summary();
    EXPECT_TRUE(has_rule(c.symbols, "needed_library", "libcuda.so")) << track << ":\n" << c.symbols.summary();
    // The message names what may be called instead.
    EXPECT_NE(c.symbols.summary().find("only cuTensorMapEncodeTiled"), std::string::npos) << c.symbols.summary();
  }
}

TEST(TensorMapImports, EncoderBesideALaunchDoesNotMakeTheDriverAllowed) {
  test::TempDir tmp;
  const fs::path sol = vector_add_with(tmp, R"(#include <cuda.h>
int encode_and_launch(CUtensorMap* m, void* p, CUfunction f) {
  cuuint64_t dims[1] = {256};
  cuuint32_t box[1] = {256}, strides[1] = {1};
  if (cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, p, dims, nullptr, box, strides,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
    return 1;
  return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
}
)");
  Checked c = build_on("cuda", sol);
  ASSERT_EQ(c.compile.status, Status::PASSED) << c.compile.message << "\n" << c.compile.log;
  EXPECT_FALSE(has_rule(c.symbols, "vendor_library", "cuTensorMapEncodeTiled")) << c.symbols.summary();
  EXPECT_TRUE(has_rule(c.symbols, "vendor_library", "cuLaunchKernel")) << c.symbols.summary();
  EXPECT_TRUE(has_rule(c.symbols, "needed_library", "libcuda.so")) << c.symbols.summary();
}

TEST(TensorMapImports, DriverEntryPointLookUpStaysDynamicLoading) {
  test::TempDir tmp;
  const fs::path sol = vector_add_with(tmp, R"(#include <cuda_runtime.h>
void* find_encoder() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &q);
  return fn;
}
)");
  for (const std::string track : {"cuda", "cutlass"}) {
    Checked c = build_on(track, sol);
    ASSERT_EQ(c.compile.status, Status::PASSED) << track << ": " << c.compile.message << "\n" << c.compile.log;
    EXPECT_TRUE(has_rule(c.symbols, "dynamic_loading", "cudaGetDriverEntryPoint")) << track << ":\n"
                                                                                    << c.symbols.summary();
  }
}

TEST(TensorMapImports, CuteTmaCopyBuiltOnTheHostPassesOnTheCutlassTrack) {
  Checked c = build_on("cutlass", test::fixture_solution("tma_cute"));
  ASSERT_EQ(c.compile.status, Status::PASSED) << c.compile.message << "\n" << c.compile.log;
  EXPECT_TRUE(c.symbols.ok()) << c.symbols.summary();
  // CUTLASS calls the encoder directly (CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL), not through
  // cudaGetDriverEntryPoint, and imports nothing else of the driver.
  EXPECT_TRUE(imports(c.symbols, "cuTensorMapEncodeTiled"));
  for (const ElfSymbol& s : c.symbols.info.imports) {
    EXPECT_EQ(s.name.rfind("cudaGetDriverEntryPoint", 0), std::string::npos) << s.name;
    const bool driver_api =
        s.name.size() > 2 && s.name.rfind("cu", 0) == 0 && std::isupper(static_cast<unsigned char>(s.name[2]));
    if (driver_api) {
      const auto& allowed = tensor_map_driver_functions();
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), s.name), allowed.end()) << s.name;
    }
  }
}

}  // namespace
}  // namespace d2k
