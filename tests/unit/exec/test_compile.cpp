#include <algorithm>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

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
  // -isystem and its folder are two arguments: nvcc 13 rejects "-isystem/path" glued.
  const auto cf = nvcc_flags(c);
  auto at = std::find(cf.begin(), cf.end(), std::string("-isystem"));
  ASSERT_NE(at, cf.end());
  ASSERT_NE(at + 1, cf.end());
  EXPECT_TRUE(fs::exists(fs::path(*(at + 1)) / "cute" / "tensor.hpp")) << *(at + 1);
  for (const auto& fl : cf) {
    EXPECT_FALSE(fl.rfind("-isystem", 0) == 0 && fl.size() > 8) << fl;
  }
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

TEST(CompileLog, TrimKeepsTheFirstErrorsAndReportsTheRealSize) {
  // 10,000 errors; the sandbox keeps the output's first MiB (here: its first 64 KiB).
  std::string log;
  for (int e = 1; e <= 10000; ++e)
    log += "/scratch/src/solution.cu(" + std::to_string(e) + "): error: identifier \"u" + std::to_string(e) + "\" is undefined\n";
  const std::string head = log.substr(0, 64 << 10);
  std::string t = trim_compiler_log(head, 4096, {"/scratch/src/"}, log.size());
  EXPECT_LE(t.size(), 4096u);
  EXPECT_EQ(t.rfind("solution.cu(1): error", 0), 0u) << t.substr(0, 200);
  EXPECT_NE(t.find("solution.cu(2): error"), std::string::npos);
  EXPECT_EQ(t.find("solution.cu(9496)"), std::string::npos);
  EXPECT_NE(t.find("full log " + std::to_string(log.size()) + " bytes"), std::string::npos) << t.substr(t.size() - 300);
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


/// A solution folder whose solution.cu is `source`.
fs::path write_solution(const fs::path& root, const std::string& name, const std::string& source) {
  const fs::path dir = root / name;
  fs::create_directories(dir);
  std::ofstream(dir / "solution.cu") << source;
  return dir;
}

TEST(CompileLayout, NamesAreEscapedAndLinksNamedNotFollowed) {
  test::TempDir tmp;
  // A newline in a header name once forged an "OK: compiled ..." line in the output.
  copy_folder(test::fixture_solution("vector_add"), tmp.path() / "newline");
  std::ofstream(tmp.path() / "newline" / "a\nOK: compiled x.h") << "// header\n";
  try {
    read_solution_files(tmp.path() / "newline");
    ADD_FAILURE() << "a name with a newline must be refused";
  } catch (const ExecError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find("a\\nOK: compiled x.h"), std::string::npos) << m;
  }
  EXPECT_EQ(escape_file_name("a\tb\x01\xff\\"), "a\\tb\\x01\\xff\\\\");

  // solution.cu -> /etc/passwd names the link, not its target, and never reads it.
  fs::create_directories(tmp.path() / "link");
  fs::create_symlink("/etc/passwd", tmp.path() / "link" / "solution.cu");
  try {
    read_solution_files(tmp.path() / "link");
    ADD_FAILURE() << "a linked solution.cu must be refused";
  } catch (const ExecError& e) {
    EXPECT_NE(std::string(e.what()).find("solution.cu is a symbolic link"), std::string::npos) << e.what();
  }
  // A linked sub-folder is refused too; a device node named like a header is not read.
  copy_folder(test::fixture_solution("vector_add"), tmp.path() / "dirlink");
  fs::create_directory_symlink("/etc", tmp.path() / "dirlink" / "inc");
  EXPECT_THROW(read_solution_files(tmp.path() / "dirlink"), ExecError);
}

/// A header swapped between a regular file and a link to a secret, in a tight loop, while the
/// folder is read: the secret's bytes never enter the copy (the race won on attempt 216 before
/// the folder was read through descriptors with O_NOFOLLOW).
TEST(CompileLayout, SymlinkSwapRaceNeverCopiesTheTarget) {
  test::TempDir tmp;
  const fs::path secret = tmp.path() / "secret.txt";
  std::ofstream(secret) << "TOP-SECRET-BYTES";
  const fs::path dir = tmp.path() / "sol";
  copy_folder(test::fixture_solution("vector_add"), dir);
  std::ofstream(dir / "leak.cuh") << "// regular\n";
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const fs::path leak = dir / "leak.cuh", as_link = dir / ".swap-link", as_file = dir / ".swap-file";
    while (!stop.load()) {
      std::error_code ec;
      fs::create_symlink(secret, as_link, ec);
      fs::rename(as_link, leak, ec);
      std::ofstream(as_file) << "// regular\n";
      fs::rename(as_file, leak, ec);
    }
  });
  int links_seen = 0, read_ok = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  for (int i = 0; i < 50000 && std::chrono::steady_clock::now() < until; ++i) {
    try {
      SolutionFiles f = read_solution_files(dir);
      ++read_ok;
      for (const auto& [name, content] : f.files)
        ASSERT_EQ(content.find("TOP-SECRET"), std::string::npos) << "attempt " << i << " copied the link's target";
    } catch (const ExecError& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.find("symbolic link") != std::string::npos || m.find("cannot read") != std::string::npos) << m;
      links_seen += m.find("leak.cuh is a symbolic link") != std::string::npos;
    }
  }
  stop = true;
  swapper.join();
  std::cout << read_ok << " reads, " << links_seen << " refused as links\n";
  EXPECT_GT(read_ok + links_seen, 100);
}

TEST(CompileInclude, FoundFromTheEnvironmentAndBesideTheBinary) {
  test::TempDir tmp;
  const fs::path carry = tmp.path() / "carry";
  fs::create_directories(carry / "include" / "d2k");
  std::ofstream(carry / "include" / "d2k" / "solution.h") << "// packed\n";
  // A packed build: include/ beside the binary.
  EXPECT_EQ(solution_include_dir({}, carry), carry / "include");
  // An installed one: bin/d2k and include/.
  fs::create_directories(carry / "bin");
  EXPECT_EQ(solution_include_dir({}, carry / "bin"), carry / "include");
  // $D2K_INCLUDE_DIR wins over the binary's folder; a wrong one is an error naming it.
  const fs::path other = tmp.path() / "other";
  fs::create_directories(other / "d2k");
  std::ofstream(other / "d2k" / "solution.h") << "// env\n";
  setenv("D2K_INCLUDE_DIR", other.c_str(), 1);
  EXPECT_EQ(solution_include_dir({}, carry), other);
  setenv("D2K_INCLUDE_DIR", (tmp.path() / "nowhere").c_str(), 1);
  try {
    solution_include_dir({}, carry);
    ADD_FAILURE() << "a wrong $D2K_INCLUDE_DIR must be an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("D2K_INCLUDE_DIR"), std::string::npos) << e.what();
  }
  unsetenv("D2K_INCLUDE_DIR");
  // An explicit folder is used as given.
  EXPECT_EQ(solution_include_dir(other, carry), other);
}

TEST(CompileCache, LeastRecentlyUsedEntriesGoPastTheBudget) {
  test::TempDir tmp;
  auto entry = [&](char c, std::size_t bytes, int age_s) {
    const std::string key(64, c);
    fs::create_directories(tmp.path() / key);
    std::ofstream(tmp.path() / key / "solution.so") << std::string(bytes, 'x');
    fs::last_write_time(tmp.path() / key, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
    return key;
  };
  const std::string oldest = entry('a', 4000, 300), old = entry('b', 4000, 200), fresh = entry('c', 4000, 100);
  const std::string kept = entry('d', 4000, 400);  // the oldest, but the one in use
  fs::create_directories(tmp.path() / ".build-x");  // not an entry: never counted nor removed
  auto removed = evict_compile_cache(tmp.path(), 9000, kept);
  EXPECT_EQ(removed, (std::vector<std::string>{oldest, old}));
  EXPECT_TRUE(fs::exists(tmp.path() / fresh));
  EXPECT_TRUE(fs::exists(tmp.path() / kept));
  EXPECT_TRUE(fs::exists(tmp.path() / ".build-x"));
  EXPECT_TRUE(evict_compile_cache(tmp.path(), 9000, kept).empty());
}

TEST(CompileLimits, LibraryOverItsSizeCapIsRefusedAndNotCached) {
  test::TempDir cache("d2k-exec-cache-cap");
  CompileOptions o = options();
  o.cache_dir = cache.path();
  o.max_library_bytes = 4096;
  CompileResult r = compile_solution(test::fixture_solution("vector_add"), o);
  EXPECT_EQ(r.status, Status::COMPILE_ERROR) << r.message << "\n" << r.log;
  EXPECT_EQ(r.rule, "resource_limit: output_size");
  EXPECT_NE(r.message.find("library"), std::string::npos) << r.message;
  EXPECT_FALSE(fs::exists(cache.path() / r.key)) << "a refused library is not cached";
}

/// The compile's memory limit stops `source` within seconds, as the compile's own error.
void expect_memory_limit(const std::string& name, const std::string& source) {
  test::TempDir tmp;
  CompileOptions o = options();
  o.use_cache = false;
  o.memory_limit_bytes = 2ull << 30;  // the default (8 GiB) behaves the same, four times slower
  CompileResult r = compile_solution(write_solution(tmp.path(), name, source), o);
  EXPECT_EQ(r.status, Status::COMPILE_ERROR) << r.message << "\n" << r.log;
  EXPECT_EQ(r.rule, "resource_limit: memory") << r.message << "\n" << r.log;
  EXPECT_NE(r.message.find("2 GiB memory limit"), std::string::npos) << r.message;
  EXPECT_LT(r.seconds, 90.0);
  std::cout << name << ": stopped after " << r.seconds << " s: " << r.message << "\n";
}

TEST(CompileLimits, DevZeroIncludeIsStoppedByTheMemoryLimit) {
  expect_memory_limit("dev_zero", "#include \"/dev/zero\"\n");
}

TEST(CompileLimits, MacroDoublingBombIsStoppedByTheMemoryLimit) {
  // Each level doubles its argument twice, and arguments are expanded in memory before they
  // are substituted: 2^(2^8) tokens.
  std::string bomb = "#define D0(x) x x\n";
  for (int i = 1; i <= 8; ++i) bomb += "#define D" + std::to_string(i) + "(x) D" + std::to_string(i - 1) + "(D" + std::to_string(i - 1) + "(x))\n";
  bomb += "D8(y)\n";
  expect_memory_limit("macro_bomb", bomb);
}

/// The file-system isolation modes this machine can build.
std::vector<FsIsolation> compile_modes() {
  std::vector<FsIsolation> m{FsIsolation::mount_namespace};
  if (bwrap_available()) m.push_back(FsIsolation::bwrap);
  return m;
}

class CompileSandbox : public ::testing::TestWithParam<FsIsolation> {};

/// An include of a host file fails, and its bytes never reach the log, in every sandbox mode:
/// the compile sees its own copied folder, the toolchain and the include folders only.
TEST_P(CompileSandbox, HostFilesCannotBeIncluded) {
  // World-readable, outside /tmp (a private tmpfs in every mode), beside the test binary.
  const fs::path host_file = test::exe_dir() / "d2k-host-secret.h";
  std::ofstream(host_file) << "int host_secret_marker = HOST_SECRET_UNDECLARED_42;\n";
  fs::permissions(host_file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                 fs::perms::others_read);
  const fs::path readme = test::source_dir() / "README.md";
  test::TempDir tmp;
  CompileOptions o = options();
  o.use_cache = false;
  o.sandbox_fs = GetParam();
  for (const fs::path& target : {host_file, fs::path("/etc/passwd"), readme}) {
    CompileResult r = compile_solution(
        write_solution(tmp.path(), "inc_" + target.filename().string(), "#include \"" + target.string() + "\"\n"), o);
    EXPECT_EQ(r.status, Status::COMPILE_ERROR) << target << ": " << r.message << "\n" << r.log;
    EXPECT_EQ(r.sandbox, GetParam() == FsIsolation::bwrap ? "bwrap" : "mount_namespace") << r.sandbox;
    EXPECT_EQ(r.log.find("HOST_SECRET_UNDECLARED_42"), std::string::npos) << r.log;
    EXPECT_EQ(r.log.find("root:x:0"), std::string::npos) << r.log;
    EXPECT_EQ(r.log.find("D2K-Bench"), std::string::npos) << r.log;
    // The preprocessor did not find it (gcc's words, or EDG's where cudafe++ looks first).
    EXPECT_TRUE(r.log.find("No such file or directory") != std::string::npos ||
                r.log.find("cannot open source file") != std::string::npos)
        << r.log;
  }
  fs::remove(host_file);
}

INSTANTIATE_TEST_SUITE_P(Modes, CompileSandbox, ::testing::ValuesIn(compile_modes()),
                         [](const auto& info) { return info.param == FsIsolation::bwrap ? std::string("bwrap") : std::string("mount_namespace"); });

TEST(CompileSandboxSetup, UnreachableFolderIsAHarnessErrorUnlessFallbackIsAsked) {
  if (!bwrap_available() || geteuid() != 0) GTEST_SKIP() << "needs root and a usable bwrap";
  // An include folder only root can enter: bubblewrap (unprivileged) cannot bind it.
  test::TempDir locked("d2k-locked");
  fs::create_directories(locked.path() / "inc");
  chmod(locked.path().c_str(), 0700);
  CompileOptions o = options();
  o.use_cache = false;
  o.extra_include_dirs.push_back(locked.path() / "inc");
  try {
    compile_solution(test::fixture_solution("vector_add"), o);
    ADD_FAILURE() << "a sandbox that cannot be built must not fall back silently";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach"), std::string::npos) << e.what();
  }
}

TEST(Compile, CuteSolutionCompilesOnTheCutlassTrack) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "cute";
  copy_folder(test::fixture_solution("vector_add"), dir);
  // CuTe's layout algebra on the host side of the library: enough to pull in its headers.
  std::ofstream(dir / "cute_use.cu") << "#include <cute/tensor.hpp>\n"
                                        "int cute_layout_size() {\n"
                                        "  auto layout = cute::make_layout(cute::make_shape(cute::Int<8>{}, cute::Int<4>{}));\n"
                                        "  return int(cute::size(layout));\n"
                                        "}\n";
  CompileOptions o = options();
  o.cutlass = true;
  o.track = "cutlass";
  CompileResult r = compile_solution(dir, o);
  ASSERT_EQ(r.status, Status::PASSED) << r.message << "\n" << r.log;
  std::cout << "CuTe compile: " << r.seconds << " s under the default memory limit\n";
}

}  // namespace
}  // namespace d2k
