#include <algorithm>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "exec/compile.h"
#include "exec/error.h"
#include "exec/loader.h"
#include "exec/symbols.h"
#include "exec_test_util.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;

/// One compile cache for the whole test program, so that a second compile of the same folder
/// is a cache hit.
const fs::path& shared_cache() {
  static test::TempDir dir("d2k-exec-cache");
  return dir.path();
}

CompileOptions options() {
  CompileOptions o;
  o.cache_dir = shared_cache();
  o.include_dir = test::source_dir() / "include";
  o.extra_include_dirs = test::extra_include_dirs();
  return o;
}

void copy_folder(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

TEST(CompileKey, StableForSameInputsAndSensitiveToEachInput) {
  SolutionFiles f = read_solution_files(test::fixture_solution("multi_file"));
  ASSERT_EQ(f.sources, (std::vector<std::string>{"kernels.cu", "solution.cu"}));
  ASSERT_EQ(f.files.size(), 3u);  // both sources and include/vector_add.cuh
  EXPECT_EQ(f.files[0].first, "include/vector_add.cuh");
  const auto flags = nvcc_flags(options());
  const std::string k = compile_cache_key(f, flags, "nvcc 13.0", "inc");
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, compile_cache_key(f, flags, "nvcc 13.0", "inc"));

  SolutionFiles edited = f;
  edited.files[1].second += "\n// a comment changes the key";
  EXPECT_NE(k, compile_cache_key(edited, flags, "nvcc 13.0", "inc"));
  SolutionFiles renamed = f;
  renamed.files[1].first = "kernels2.cu";
  EXPECT_NE(k, compile_cache_key(renamed, flags, "nvcc 13.0", "inc"));
  auto more_flags = flags;
  more_flags.push_back("-DEXTRA");
  EXPECT_NE(k, compile_cache_key(f, more_flags, "nvcc 13.0", "inc"));
  EXPECT_NE(k, compile_cache_key(f, flags, "nvcc 13.1", "inc"));
  EXPECT_NE(k, compile_cache_key(f, flags, "nvcc 13.0", "inc2"));

  // The flags name no scratch path (the version script appears as its token; include folders are
  // the source tree's, wherever it lives), and the cutlass track adds its include.
  const auto tmp = fs::temp_directory_path().string();
  for (const auto& fl : flags) {
    if (fl.rfind("-I", 0) != 0) {
      EXPECT_EQ(fl.find(tmp), std::string::npos) << fl;
    }
  }
  EXPECT_NE(std::find(flags.begin(), flags.end(), std::string("--version-script=@VERSION_SCRIPT@")), flags.end());
  CompileOptions c = options();
  c.cutlass = true;
  EXPECT_NE(nvcc_flags(c), flags);
}

TEST(CompileLayout, RejectsBadFolders) {
  test::TempDir tmp;
  auto expect_invalid = [](const fs::path& dir, const std::string& needle) {
    try {
      read_solution_files(dir);
      ADD_FAILURE() << dir << " should be rejected";
    } catch (const ExecError& e) {
      EXPECT_EQ(e.status, Status::INVALID_SUBMISSION);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_invalid(tmp.path() / "absent", "not a folder");
  fs::create_directories(tmp.path() / "empty");
  expect_invalid(tmp.path() / "empty", "no solution.cu");

  copy_folder(test::fixture_solution("vector_add"), tmp.path() / "link");
  fs::create_symlink("/etc/hostname", tmp.path() / "link" / "secret.h");
  expect_invalid(tmp.path() / "link", "symbolic link");

  copy_folder(test::fixture_solution("vector_add"), tmp.path() / "odd");
  std::ofstream(tmp.path() / "odd" / "-Xlinker.cu") << "// flag injection\n";
  expect_invalid(tmp.path() / "odd", "not allowed");

  // Notes and hidden folders are ignored, not errors.
  copy_folder(test::fixture_solution("vector_add"), tmp.path() / "notes");
  std::ofstream(tmp.path() / "notes" / "design.md") << "# design\n";
  fs::create_directories(tmp.path() / "notes" / ".git");
  std::ofstream(tmp.path() / "notes" / ".git" / "x.h") << "junk";
  SolutionFiles f = read_solution_files(tmp.path() / "notes");
  EXPECT_EQ(f.files.size(), 1u);
  EXPECT_EQ(f.sources, std::vector<std::string>{"solution.cu"});
}

TEST(Compile, GoodSolutionBuildsOnceThenHitsTheCache) {
  CompileResult r = compile_solution(test::fixture_solution("vector_add"), options());
  ASSERT_EQ(r.status, Status::PASSED) << r.message << "\n" << r.log;
  EXPECT_TRUE(fs::is_regular_file(r.library));
  EXPECT_EQ(r.library.filename(), "solution.so");
  EXPECT_EQ(r.library.parent_path().filename(), r.key);
  EXPECT_FALSE(r.cache_hit);
  std::cout << "compile took " << r.seconds << " s; sandbox layers:";
  for (const auto& l : r.sandbox_layers) std::cout << " " << l;
  std::cout << "\n";

  // Exactly the three entry points leave the library, and the candidate policy passes it.
  SymbolReport s = check_symbols(r.library, SymbolPolicy::candidate());
  EXPECT_TRUE(s.ok()) << s.summary();
  EXPECT_EQ(s.info.exports.size(), 3u);
  EXPECT_NE(std::find(s.info.needed.begin(), s.info.needed.end(), "libcudart.so.13"), s.info.needed.end())
      << "the solution must use the shared CUDA runtime";

  CompileResult again = compile_solution(test::fixture_solution("vector_add"), options());
  ASSERT_EQ(again.status, Status::PASSED);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.library, r.library);
  EXPECT_LT(again.seconds, r.seconds);
}

TEST(Compile, MultiFileSolution) {
  CompileResult r = compile_solution(test::fixture_solution("multi_file"), options());
  ASSERT_EQ(r.status, Status::PASSED) << r.message << "\n" << r.log;
  SymbolReport s = check_symbols(r.library, SymbolPolicy::candidate());
  EXPECT_TRUE(s.ok()) << s.summary();
}

TEST(Compile, SyntaxErrorGivesATrimmedRelativeLog) {
  CompileOptions o = options();
  o.log_limit_bytes = 2048;
  CompileResult r = compile_solution(test::fixture_solution("syntax_error"), o);
  EXPECT_EQ(r.status, Status::COMPILE_ERROR);
  EXPECT_LE(r.log.size(), 2048u);
  EXPECT_NE(r.log.find("solution.cu("), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("undeclared_value"), std::string::npos) << r.log;
  // No absolute path of the scratch build folder or the fixture folder leaks into the log.
  EXPECT_EQ(r.log.find(shared_cache().string()), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find(test::fixture_solution("syntax_error").string()), std::string::npos) << r.log;
  EXPECT_NE(r.message.find("compilation failed"), std::string::npos) << r.message;
}

TEST(Compile, MissingEntryPointCompilesButFailsTheChecks) {
  CompileResult r = compile_solution(test::fixture_solution("missing_entry"), options());
  ASSERT_EQ(r.status, Status::PASSED) << r.message << "\n" << r.log;
  SymbolReport s = check_symbols(r.library, SymbolPolicy::candidate());
  EXPECT_EQ(s.status(), Status::INVALID_SUBMISSION);
  bool missing_run = false, extra = false;
  for (const auto& v : s.violations) {
    missing_run |= v.rule == "missing_entry_point" && v.symbol == "d2k_run";
    extra |= v.symbol == "d2k_runn";
  }
  EXPECT_TRUE(missing_run) << s.summary();
  // The version script keeps the misspelled function local: it is simply not there.
  EXPECT_FALSE(extra) << s.summary();
}

TEST(Compile, ForbiddenTimerIsCaughtByTheSymbolCheck) {
  CompileResult r = compile_solution(test::fixture_solution("forbidden_timer"), options());
  ASSERT_EQ(r.status, Status::PASSED) << r.message << "\n" << r.log;
  SymbolReport s = check_symbols(r.library, SymbolPolicy::candidate());
  ASSERT_FALSE(s.ok());
  bool timing = false;
  for (const auto& v : s.violations) timing |= v.rule == "timing" && v.symbol.rfind("cudaEventElapsedTime", 0) == 0;
  EXPECT_TRUE(timing) << s.summary();
  // cudaEventRecord and cudaEventSynchronize are allowed (multi-stream synchronisation).
  for (const auto& v : s.violations) {
    EXPECT_EQ(v.symbol.find("cudaEventRecord"), std::string::npos) << v.symbol;
    EXPECT_EQ(v.symbol.find("cudaEventSynchronize"), std::string::npos) << v.symbol;
  }
}

TEST(Compile, VendorLibraryImportIsARewardHackUnlessTheTrackLinksIt) {
  test::TempDir tmp;
  copy_folder(test::fixture_solution("vector_add"), tmp.path() / "sol");
  std::ofstream(tmp.path() / "sol" / "extra.cpp")
      << "extern \"C\" int cublasCreate_v2(void**);\nint call_cublas() { void* h; return cublasCreate_v2(&h); }\n";
  CompileOptions o = options();
  o.track = "cuda";
  CompileResult r = compile_solution(tmp.path() / "sol", o);
  // The link fails (--no-undefined, no -lcublas), and the missing symbol is cuBLAS's: an attempt
  // to use what the track forbids, not a compile error to fix.
  EXPECT_EQ(r.status, Status::REWARD_HACK) << r.message << "\n" << r.log;
  EXPECT_EQ(r.rule, "vendor_library");
  EXPECT_NE(r.message.find("cublasCreate_v2"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("cuda track"), std::string::npos) << r.message;
  EXPECT_NE(r.log.find("cublasCreate_v2"), std::string::npos) << r.log;  // the log is kept

  // A track that links cuBLAS builds it, and the symbol check allows the import there.
  o.link_libraries = {"cublas"};
  o.track = "cublas";
  CompileResult linked = compile_solution(tmp.path() / "sol", o);
  ASSERT_EQ(linked.status, Status::PASSED) << linked.message << "\n" << linked.log;
  EXPECT_TRUE(linked.rule.empty());
  EXPECT_TRUE(check_symbols(linked.library, SymbolPolicy::candidate({"cublas"})).ok());
}

TEST(Compile, UndefinedOwnFunctionStaysACompileError) {
  test::TempDir tmp;
  copy_folder(test::fixture_solution("vector_add"), tmp.path() / "sol");
  std::ofstream(tmp.path() / "sol" / "extra.cpp")
      << "extern \"C\" int helper_defined_nowhere(int);\nint use_helper() { return helper_defined_nowhere(3); }\n";
  CompileResult r = compile_solution(tmp.path() / "sol", options());
  EXPECT_EQ(r.status, Status::COMPILE_ERROR) << r.message << "\n" << r.log;
  EXPECT_TRUE(r.rule.empty());
  EXPECT_NE(r.log.find("helper_defined_nowhere"), std::string::npos) << r.log;
}

TEST(CompileLog, VendorLinkFailuresNameVendorSymbolsOnly) {
  const std::string log =
      "/usr/bin/ld: solution.o: in function `run_gemm(int)':\n"
      "solution.cu:(.text+0x1c): undefined reference to `cublasSgemm_v2'\n"
      "solution.cu:(.text+0x2c): undefined reference to `cublasSgemm_v2'\n"  // once only
      "solution.cu:(.text+0x3c): undefined reference to `cublasLtMatmul@libcublasLt.so.13'\n"
      // Typographic quotes (a UTF-8 locale); the literal is split so that no hex escape runs on.
      "solution.cu:(.text+0x4c): undefined reference to \xE2\x80\x98" "curandGenerateNormal\xE2\x80\x99\n"
      "solution.cu:(.text+0x5c): undefined reference to `my_helper(int)'\n"
      "solution.cu:(.text+0x6c): undefined reference to `cuTensorMapEncodeTiled'\n"
      "ld.lld: error: undefined symbol: ncclAllReduce\n"
      "collect2: error: ld returned 1 exit status\n";
  auto f = vendor_link_failures(log);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].symbol, "cublasSgemm_v2");
  EXPECT_EQ(f[0].library, "cublas");
  EXPECT_EQ(f[1].symbol, "cublasLtMatmul");
  EXPECT_EQ(f[1].library, "cublasLt");  // the longest prefix wins
  EXPECT_EQ(f[2].symbol, "curandGenerateNormal");
  EXPECT_EQ(f[2].library, "curand");
  EXPECT_EQ(f[3].symbol, "ncclAllReduce");
  // A library the track links is not a violation; the driver API and own functions never are.
  auto linked = vendor_link_failures(log, {"cublas", "cublasLt", "curand", "nccl"});
  EXPECT_TRUE(linked.empty());
  EXPECT_TRUE(vendor_link_failures("undefined reference to `cuLaunchKernel'\n").empty());
  EXPECT_TRUE(vendor_link_failures("solution.cu(3): error: identifier \"cublasHandle_t\" is undefined\n").empty());
}

TEST(Compile, DeadlineKillsTheCompiler) {
  CompileOptions o = options();
  o.timeout_seconds = 0.3;  // nvcc's start-up alone takes longer
  o.use_cache = false;
  CompileResult r = compile_solution(test::fixture_solution("multi_file"), o);
  EXPECT_EQ(r.status, Status::TIMEOUT) << r.message << "\n" << r.log;
  EXPECT_NE(r.message.find("deadline"), std::string::npos) << r.message;
  EXPECT_LT(r.seconds, 5.0);
}

TEST(CompileLog, TrimKeepsErrorsFirstAndCutsInstantiationChains) {
  std::string log;
  log += "/scratch/src/solution.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n";
  log += "      int x;\n          ^\n\n";
  for (int e = 0; e < 40; ++e) {
    log += "/scratch/src/solution.cu(" + std::to_string(10 + e) + "): error: no instance of function template matches\n";
    log += "          detected during:\n";
    for (int i = 0; i < 30; ++i)
      log += "            instantiation of \"void cute::copy<" + std::string(300, 'T') + ">\" at line " + std::to_string(i) + "\n";
  }
  log += "40 errors detected in the compilation of \"/scratch/src/solution.cu\".\n";
  std::string t = trim_compiler_log(log, 4096, {"/scratch/src/"});
  EXPECT_LE(t.size(), 4096u);
  EXPECT_EQ(t.find("/scratch/src/"), std::string::npos);
  EXPECT_NE(t.find("solution.cu(10): error"), std::string::npos) << t;
  EXPECT_NE(t.find("more instantiation lines"), std::string::npos) << t;
  EXPECT_NE(t.find("40 errors detected"), std::string::npos) << t;
  EXPECT_NE(t.find("[log trimmed:"), std::string::npos) << t;
  // The warning lost its place to the errors.
  EXPECT_EQ(t.find("warning #177"), std::string::npos) << t;

  // A short log passes through (paths stripped) unchanged otherwise.
  std::string small = "/b/solution.cu(2): error: expected a \";\"\n";
  EXPECT_EQ(trim_compiler_log(small, 8192, {"/b/"}), "solution.cu(2): error: expected a \";\"\n");
}

}  // namespace
}  // namespace d2k
