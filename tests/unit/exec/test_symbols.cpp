#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "exec/error.h"
#include "exec/symbols.h"
#include "exec_test_util.h"

namespace d2k {
namespace {

const std::filesystem::path kFixtures = test::fixture_lib_dir(D2K_EXEC_FIXTURE_DIR);

bool has_rule(const SymbolReport& r, const std::string& rule, const std::string& symbol_prefix) {
  return std::any_of(r.violations.begin(), r.violations.end(), [&](const SymbolViolation& v) {
    return v.rule == rule && v.symbol.rfind(symbol_prefix, 0) == 0;
  });
}

std::vector<std::string> names(const std::vector<ElfSymbol>& syms) {
  std::vector<std::string> out;
  for (const auto& s : syms) out.push_back(s.name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Symbols, HonestHostLibraryExportsExactlyTheEntryPoints) {
  DynamicInfo info = read_dynamic_info(kFixtures / "host_good.so");
  EXPECT_EQ(names(info.exports), (std::vector<std::string>{"d2k_abi_version", "d2k_run", "d2k_workspace_size"}));
  // Imports carry the library version they were linked against.
  auto it = std::find_if(info.imports.begin(), info.imports.end(),
                         [](const ElfSymbol& s) { return s.name == "__cxa_begin_catch"; });
  ASSERT_NE(it, info.imports.end());
  EXPECT_EQ(it->version.rfind("CXXABI_", 0), 0u) << it->version;
  EXPECT_EQ(it->library, "libstdc++.so.6");
  SymbolReport r = check_symbols(kFixtures / "host_good.so", SymbolPolicy::candidate());
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.status(), Status::PASSED);
}

TEST(Symbols, ForbiddenImportsAreNamedWithTheirRule) {
  SymbolReport r = check_symbols(kFixtures / "forbidden.so", SymbolPolicy::candidate());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status(), Status::INVALID_SUBMISSION);
  EXPECT_TRUE(has_rule(r, "timing", "clock_gettime")) << r.summary();
  EXPECT_TRUE(has_rule(r, "timing", "cudaEventElapsedTime")) << r.summary();
  EXPECT_TRUE(has_rule(r, "dynamic_loading", "dlopen")) << r.summary();
  EXPECT_TRUE(has_rule(r, "threads", "pthread_create")) << r.summary();
  EXPECT_TRUE(has_rule(r, "memory_protection", "mprotect")) << r.summary();
  EXPECT_TRUE(has_rule(r, "network", "socket")) << r.summary();
  EXPECT_TRUE(has_rule(r, "host_callback", "cudaLaunchHostFunc")) << r.summary();
  EXPECT_TRUE(has_rule(r, "vendor_library", "cublasCreate_v2")) << r.summary();
  EXPECT_TRUE(has_rule(r, "allocator_override", "malloc")) << r.summary();
  EXPECT_TRUE(has_rule(r, "interposition", "cudaLaunchKernel")) << r.summary();
  EXPECT_TRUE(has_rule(r, "extra_export", "helper_export")) << r.summary();
  EXPECT_TRUE(has_rule(r, "runpath", "/")) << r.summary();
  EXPECT_TRUE(has_rule(r, "needed_library", "libnot_allowed")) << r.summary();
  // No rule fires on the legitimate entry points.
  EXPECT_FALSE(has_rule(r, "extra_export", "d2k_")) << r.summary();
}

TEST(Symbols, TrackPolicyAllowsNamedVendorLibraries) {
  SymbolReport strict = check_symbols(kFixtures / "forbidden.so", SymbolPolicy::candidate());
  SymbolReport lib = check_symbols(kFixtures / "forbidden.so", SymbolPolicy::candidate({"cublas"}));
  EXPECT_TRUE(has_rule(strict, "vendor_library", "cublasCreate_v2"));
  EXPECT_FALSE(has_rule(lib, "vendor_library", "cublasCreate_v2")) << lib.summary();
  // Allowing cublas does not allow the other rules.
  EXPECT_TRUE(has_rule(lib, "timing", "clock_gettime"));
}

TEST(Symbols, MissingEntryPointIsReported) {
  SymbolReport r = check_symbols(kFixtures / "missing_entry.so", SymbolPolicy::candidate());
  EXPECT_TRUE(has_rule(r, "missing_entry_point", "d2k_workspace_size")) << r.summary();
  EXPECT_FALSE(has_rule(r, "missing_entry_point", "d2k_run")) << r.summary();
}

TEST(Symbols, WeakStdExportsOnlyForTrustedBuilds) {
  DynamicInfo info = read_dynamic_info(kFixtures / "weak_std.so");
  const bool has_weak_std = std::any_of(info.exports.begin(), info.exports.end(), [](const ElfSymbol& s) {
    return (s.weak || s.unique) && s.name.rfind("_ZNSt", 0) == 0;
  });
  if (!has_weak_std) GTEST_SKIP() << "this compiler hid every std:: instantiation; nothing to test";
  EXPECT_TRUE(check_symbols(kFixtures / "weak_std.so", SymbolPolicy::trusted()).ok());
  SymbolReport cand = check_symbols(kFixtures / "weak_std.so", SymbolPolicy::candidate());
  EXPECT_TRUE(has_rule(cand, "extra_export", "_ZNSt")) << cand.summary();
}

TEST(Symbols, NotAnElfFileIsInvalidSubmission) {
  test::TempDir tmp;
  const auto bogus = tmp.path() / "bogus.so";
  std::ofstream(bogus) << "this is not an ELF file, only text that is long enough to read a header from";
  try {
    read_dynamic_info(bogus);
    FAIL() << "expected ExecError";
  } catch (const ExecError& e) {
    EXPECT_EQ(e.status, Status::INVALID_SUBMISSION);
    EXPECT_NE(std::string(e.what()).find("no ELF magic"), std::string::npos) << e.what();
  }
  // Truncated: an ELF header cut short.
  std::string head;
  {
    std::ifstream in(kFixtures / "host_good.so", std::ios::binary);
    head.resize(40);
    in.read(head.data(), 40);
  }
  std::ofstream(tmp.path() / "cut.so", std::ios::binary) << head;
  EXPECT_THROW(read_dynamic_info(tmp.path() / "cut.so"), ExecError);
  EXPECT_THROW(read_dynamic_info(tmp.path() / "absent.so"), ExecError);
}

TEST(Symbols, ReadsSystemLibraries) {
  // A large real library: the parser agrees that libc defines malloc and needs the loader.
  for (const char* libc : {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
    if (!std::filesystem::exists(libc)) continue;
    DynamicInfo info = read_dynamic_info(libc);
    EXPECT_GT(info.exports.size(), 1000u);
    EXPECT_TRUE(std::any_of(info.exports.begin(), info.exports.end(), [](const ElfSymbol& s) { return s.name == "malloc"; }));
    EXPECT_EQ(info.soname, "libc.so.6");
    return;
  }
  GTEST_SKIP() << "no libc.so.6 at the Debian path";
}

}  // namespace
}  // namespace d2k
