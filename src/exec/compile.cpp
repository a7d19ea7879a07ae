#include "exec/compile.h"

#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/error.h"
#include "exec/sandbox.h"
#include "exec/sha256.h"
#include "exec/symbols.h"

#ifndef D2K_DEFAULT_INCLUDE_DIR
#define D2K_DEFAULT_INCLUDE_DIR ""
#endif
#ifndef D2K_DEFAULT_CUTLASS_INCLUDE_DIR
#define D2K_DEFAULT_CUTLASS_INCLUDE_DIR ""
#endif
#ifndef D2K_NVCC_FALLBACK
#define D2K_NVCC_FALLBACK ""
#endif
#ifndef D2K_CUDA_INCLUDE_DIR
#define D2K_CUDA_INCLUDE_DIR ""
#endif

namespace d2k {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxFiles = 256;
constexpr std::size_t kMaxBytes = 16u << 20;
constexpr const char* kVersionScriptToken = "@VERSION_SCRIPT@";
// Only the ABI entry points leave the library; everything else, including the vague-linkage
// std:: instantiations g++ exports whatever -fvisibility says, becomes local.
constexpr const char* kVersionScript =
    "{\n  global:\n    d2k_abi_version;\n    d2k_workspace_size;\n    d2k_run;\n  local:\n    *;\n};\n";

bool has_ext(const fs::path& p, std::initializer_list<const char*> exts) {
  const std::string e = p.extension().string();
  return std::any_of(exts.begin(), exts.end(), [&](const char* x) { return e == x; });
}

bool is_header(const fs::path& p) {
  return has_ext(p, {".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc", ".ipp", ".tcc"});
}
bool is_source(const fs::path& p) { return has_ext(p, {".cu", ".cpp"}); }

bool safe_name(const std::string& rel) {
  if (rel.empty() || rel[0] == '-' || rel[0] == '.') return false;
  for (char c : rel)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/')) return false;
  return rel.find("/.") == std::string::npos && rel.find("/-") == std::string::npos;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, std::string_view content) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", p.string()));
}

std::string getenv_str(const char* n) {
  const char* v = std::getenv(n);
  return v ? v : "";
}

/// Runs a trusted tool without isolation and returns its stdout+stderr ("" on failure).
std::string capture(const std::vector<std::string>& argv) {
  SandboxOptions o;
  o.pid_namespace = o.net_namespace = o.ipc_namespace = o.uts_namespace = o.mount_namespace = false;
  o.user_namespace_if_unprivileged = false;
  o.fs = FsIsolation::none;
  o.drop_privileges = false;
  o.drop_capabilities = false;
  o.seccomp = false;
  o.no_new_privs = false;
  o.rlimits = Rlimits{};
  o.rlimits.processes = 0;
  o.stage_timeouts = {{"start", 60.0}};
  ProcessResult r = run_sandboxed(argv, o);
  if (r.status != Status::PASSED) return "";
  return r.stdout_tail + r.stderr_tail;
}

/// Fingerprint of the folders whose headers the solution includes.
std::string include_fingerprint(const CompileOptions& opts, const fs::path& include_dir,
                                const fs::path& cutlass_dir) {
  Sha256 h;
  h.update_field(include_dir.string());
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(include_dir, ec))
    for (auto it = fs::recursive_directory_iterator(include_dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file()) files.push_back(it->path());
    }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    h.update_field(fs::relative(f, include_dir).string());
    h.update_field(read_file(f));
  }
  for (const fs::path& dir : opts.extra_include_dirs) {
    h.update_field(dir.string());
    std::vector<fs::path> extra;
    if (fs::is_directory(dir, ec))
      for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it->is_regular_file() && it->file_size() < (1u << 20)) extra.push_back(it->path());
      }
    std::sort(extra.begin(), extra.end());
    for (const fs::path& f : extra) {
      h.update_field(fs::relative(f, dir).string());
      h.update_field(read_file(f));
    }
  }
  if (opts.cutlass) {
    // CUTLASS is large: its version header stands for the whole tree.
    h.update_field(cutlass_dir.string());
    h.update_field(read_file(cutlass_dir / "cutlass" / "version.h"));
  }
  return h.hex_digest();
}

fs::path effective_include_dir(const CompileOptions& opts) {
  return opts.include_dir.empty() ? fs::path(D2K_DEFAULT_INCLUDE_DIR) : opts.include_dir;
}
fs::path effective_cutlass_dir(const CompileOptions& opts) {
  return opts.cutlass_include_dir.empty() ? fs::path(D2K_DEFAULT_CUTLASS_INCLUDE_DIR) : opts.cutlass_include_dir;
}

std::string random_suffix() {
  std::random_device rd;
  return fmt::format("{}-{:08x}", getpid(), rd());
}

/// Line classification for the log trimmer.
enum class LineKind { continuation, error, warning, trailer };

LineKind classify(const std::string& line) {
  auto has = [&](const char* s) { return line.find(s) != std::string::npos; };
  if (line.empty()) return LineKind::continuation;
  if (has(" errors detected in the compilation") || has(" error detected in the compilation") ||
      has("compilation terminated"))
    return LineKind::trailer;
  if (line[0] == ' ' || line[0] == '\t' || line[0] == '^') return LineKind::continuation;
  if (has("): error") || has(": error:") || has(": fatal error") || has("): catastrophic error") ||
      has("ptxas fatal") || has("nvlink error") || has("undefined reference") ||
      has("collect2: error") || line.rfind("error:", 0) == 0 || line.rfind("ptxas error", 0) == 0)
    return LineKind::error;
  if (has("): warning") || has(": warning:") || has("): remark") || has(": note:") ||
      has("In function") || has("In instantiation of") || has("required from"))
    return LineKind::warning;
  return LineKind::continuation;
}

bool is_instantiation_line(const std::string& line) {
  return line.find("detected during") != std::string::npos ||
         line.find("instantiation of") != std::string::npos ||
         line.find("required from") != std::string::npos ||
         line.find("required by substitution") != std::string::npos;
}

}  // namespace

std::string trim_compiler_log(std::string_view log, std::size_t limit,
                              const std::vector<std::string>& strip_prefixes) {
  std::string text(log);
  // Longest prefixes first, so that a folder and its sub-folder both disappear.
  std::vector<std::string> prefixes = strip_prefixes;
  std::sort(prefixes.begin(), prefixes.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const std::string& p : prefixes) {
    if (p.empty()) continue;
    for (std::size_t at; (at = text.find(p)) != std::string::npos;) text.erase(at, p.size());
  }
  const std::size_t full_size = text.size();

  // Lines, each cut to a readable width.
  constexpr std::size_t kLineWidth = 400;
  std::vector<std::string> lines;
  {
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(start, nl - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.size() > kLineWidth) line = line.substr(0, kLineWidth) + " [...]";
      lines.push_back(std::move(line));
      start = nl + 1;
    }
  }

  // Blocks: a diagnostic head and its continuation lines; instantiation chains cut short.
  struct Block {
    LineKind kind;
    std::vector<std::string> lines;
    std::size_t bytes() const {
      std::size_t n = 0;
      for (const auto& l : lines) n += l.size() + 1;
      return n;
    }
  };
  std::vector<Block> blocks;
  std::vector<std::string> trailer;
  int chain = 0, chain_cut = 0;
  auto flush_chain = [&] {
    if (chain_cut && !blocks.empty())
      blocks.back().lines.push_back(fmt::format("          [... {} more instantiation lines]", chain_cut));
    chain = chain_cut = 0;
  };
  for (std::string& line : lines) {
    LineKind k = classify(line);
    if (k == LineKind::trailer) {
      flush_chain();
      trailer.push_back(std::move(line));
      continue;
    }
    if (k == LineKind::error || k == LineKind::warning || blocks.empty()) {
      flush_chain();
      blocks.push_back({k == LineKind::continuation ? LineKind::warning : k, {std::move(line)}});
      continue;
    }
    if (is_instantiation_line(line)) {
      if (++chain > 3) {
        ++chain_cut;
        continue;
      }
    } else {
      flush_chain();
    }
    if (blocks.back().lines.size() >= 24) continue;  // a runaway block: the head says enough
    blocks.back().lines.push_back(std::move(line));
  }
  flush_chain();

  std::size_t trailer_bytes = 0;
  for (const auto& t : trailer) trailer_bytes += t.size() + 1;
  const std::size_t reserve = 160 + trailer_bytes;
  const std::size_t budget = limit > reserve ? limit - reserve : limit / 2;

  // Errors first (in order), then warnings while room is left; output in original order.
  std::vector<bool> keep(blocks.size(), false);
  std::size_t used = 0;
  int dropped_errors = 0, dropped_other = 0;
  for (LineKind pass : {LineKind::error, LineKind::warning}) {
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].kind != pass) continue;
      std::size_t b = blocks[i].bytes();
      if (used + b <= budget) {
        keep[i] = true;
        used += b;
      } else if (pass == LineKind::error && used < budget && blocks[i].lines.size() > 1) {
        // Room for the head line at least.
        Block head{pass, {blocks[i].lines.front(), "          [... rest of this error cut]"}};
        if (used + head.bytes() <= budget) {
          blocks[i] = std::move(head);
          keep[i] = true;
          used += blocks[i].bytes();
        } else {
          ++dropped_errors;
        }
      } else {
        (pass == LineKind::error ? dropped_errors : dropped_other) += 1;
      }
    }
  }
  std::string out;
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (keep[i])
      for (const auto& l : blocks[i].lines) out += l + "\n";
  for (const auto& t : trailer) out += t + "\n";
  if (dropped_errors || dropped_other)
    out += fmt::format("[log trimmed: {} more error(s) and {} other message(s) not shown; full log {} bytes]\n",
                       dropped_errors, dropped_other, full_size);
  if (out.size() > limit) out = out.substr(0, limit > 32 ? limit - 32 : limit) + "\n[log cut at the size limit]\n";
  return out;
}

std::vector<VendorLinkFailure> vendor_link_failures(std::string_view log, const std::vector<std::string>& linked) {
  // The name a diagnostic gives: GNU ld quotes it `x' (or with typographic quotes in a UTF-8
  // locale), lld writes it bare after "undefined symbol: ".
  auto symbol_after = [](std::string_view rest) {
    for (std::string_view open : {"`", "\xE2\x80\x98", "'", "\""})
      if (rest.substr(0, open.size()) == open) {
        rest.remove_prefix(open.size());
        break;
      }
    std::size_t end = 0;
    while (end < rest.size() && rest[end] != '\'' && rest[end] != '\n' && rest[end] != '"' &&
           rest.substr(end, 3) != "\xE2\x80\x99")
      ++end;
    std::string name(rest.substr(0, end));
    // Drop a version (name@VER) and a demangled C++ argument list (name(int)).
    if (auto at = name.find_first_of("@("); at != std::string::npos) name.resize(at);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    return name;
  };
  std::vector<VendorLinkFailure> out;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t nl = log.find('\n', start);
    if (nl == std::string_view::npos) nl = log.size();
    const std::string_view line = log.substr(start, nl - start);
    start = nl + 1;
    std::string name;
    for (std::string_view marker : {"undefined reference to ", "undefined symbol: "})
      if (auto at = line.find(marker); at != std::string_view::npos) {
        name = symbol_after(line.substr(at + marker.size()));
        break;
      }
    if (name.empty()) continue;
    // Longest matching prefix names the library (cublasLt before cublas).
    const VendorLibrary* best = nullptr;
    std::size_t best_len = 0;
    for (const VendorLibrary& lib : known_vendor_libraries()) {
      if (lib.name == "cuda_driver") continue;
      for (const std::string& prefix : lib.prefixes)
        if (prefix.size() > best_len && fnmatch((prefix + "*").c_str(), name.c_str(), 0) == 0) {
          best = &lib;
          best_len = prefix.size();
        }
    }
    if (!best || std::find(linked.begin(), linked.end(), best->name) != linked.end()) continue;
    if (std::none_of(out.begin(), out.end(), [&](const VendorLinkFailure& f) { return f.symbol == name; }))
      out.push_back({name, best->name});
  }
  return out;
}

fs::path default_compile_cache_dir() {
  if (auto d = getenv_str("D2K_CACHE_DIR"); !d.empty()) return fs::path(d) / "solutions";
  if (auto x = getenv_str("XDG_CACHE_HOME"); !x.empty()) return fs::path(x) / "d2k" / "solutions";
  if (auto h = getenv_str("HOME"); !h.empty()) return fs::path(h) / ".cache" / "d2k" / "solutions";
  return fs::temp_directory_path() / "d2k-cache" / "solutions";
}

SolutionFiles read_solution_files(const fs::path& solution_dir) {
  auto invalid = [&](const std::string& what) {
    return ExecError(Status::INVALID_SUBMISSION, fmt::format("{}: {}", solution_dir.string(), what));
  };
  std::error_code ec;
  if (!fs::is_directory(solution_dir, ec)) throw invalid("not a folder");
  if (!fs::is_regular_file(solution_dir / "solution.cu", ec) || fs::is_symlink(solution_dir / "solution.cu", ec))
    throw invalid("no solution.cu in the folder");
  SolutionFiles out;
  std::size_t total = 0;
  auto it = fs::recursive_directory_iterator(solution_dir, fs::directory_options::none, ec);
  if (ec) throw invalid(fmt::format("cannot list: {}", ec.message()));
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw invalid(fmt::format("cannot list: {}", ec.message()));
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (!name.empty() && name[0] == '.') {  // hidden files and folders (.git, editor state)
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
      continue;
    }
    if (it.depth() > 8) throw invalid("folders nested more than 8 deep");
    const std::string rel = fs::relative(p, solution_dir).generic_string();
    if (it->is_symlink()) {
      if (is_header(p) || is_source(p) || it->is_directory())
        throw invalid(fmt::format("{} is a symbolic link; links are not allowed", rel));
      continue;
    }
    if (!it->is_regular_file()) continue;
    const bool root_level = it.depth() == 0;
    if (!(is_header(p) || is_source(p))) continue;  // notes, data: not part of the build
    if (!safe_name(rel))
      throw invalid(fmt::format("file name '{}' is not allowed (letters, digits, '_', '-', '.', '/' only; "
                                "not starting with '-' or '.')", rel));
    if (out.files.size() >= kMaxFiles) throw invalid(fmt::format("more than {} source files", kMaxFiles));
    std::string content = read_file(p);
    total += content.size();
    if (total > kMaxBytes) throw invalid(fmt::format("sources larger than {} MiB in all", kMaxBytes >> 20));
    if (root_level && is_source(p)) out.sources.push_back(rel);
    out.files.emplace_back(rel, std::move(content));
  }
  std::sort(out.files.begin(), out.files.end());
  std::sort(out.sources.begin(), out.sources.end());
  return out;
}

std::vector<std::string> nvcc_flags(const CompileOptions& opts) {
  std::vector<std::string> f = {
      "-O3", "-shared", "-std=c++20", "-gencode=arch=compute_90a,code=sm_90a",
      "-Xcompiler", "-fPIC,-fvisibility=hidden,-fvisibility-inlines-hidden",
      "--expt-relaxed-constexpr", "-lineinfo",
      // The shared CUDA runtime: the harness and the solution share one runtime instance, and
      // the solution's runtime calls stay visible as imports to the symbol check.
      "--cudart", "shared",
      "-I" + effective_include_dir(opts).string()};
  for (const fs::path& dir : opts.extra_include_dirs) f.push_back("-I" + dir.string());
  if (opts.cutlass) f.push_back("-isystem" + effective_cutlass_dir(opts).string());
  f.insert(f.end(), {"-Xlinker", "--no-undefined", "-Xlinker", std::string("--version-script=") + kVersionScriptToken});
  for (const std::string& lib : opts.link_libraries) f.push_back("-l" + lib);
  f.insert(f.end(), opts.extra_flags.begin(), opts.extra_flags.end());
  return f;
}

std::string compile_cache_key(const SolutionFiles& files, const std::vector<std::string>& flags,
                              std::string_view toolchain, std::string_view include_fp) {
  Sha256 h;
  h.update_field("d2k-compile-v1");
  h.update_field(kVersionScript);
  h.update_field(toolchain);
  h.update_field(include_fp);
  h.update_field(std::to_string(flags.size()));
  for (const std::string& f : flags) h.update_field(f);
  h.update_field(std::to_string(files.files.size()));
  for (const auto& [name, content] : files.files) {
    h.update_field(name);
    h.update_field(content);
  }
  return h.hex_digest();
}

std::string resolve_nvcc(const CompileOptions& opts) {
  if (!opts.nvcc.empty()) return opts.nvcc;
  if (auto e = getenv_str("D2K_NVCC"); !e.empty()) return e;
  std::string path = getenv_str("PATH");
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    fs::path cand = fs::path(path.substr(start, end - start)) / "nvcc";
    if (!path.substr(start, end - start).empty() && access(cand.c_str(), X_OK) == 0) return cand.string();
    start = end + 1;
  }
  return D2K_NVCC_FALLBACK;
}

std::string toolchain_version(const std::string& nvcc) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(nvcc); it != cache.end()) return it->second;
  std::string v = capture({nvcc, "--version"});
  if (v.empty()) throw std::runtime_error(fmt::format("cannot run '{} --version'", nvcc));
  std::string host = capture({"gcc", "--version"});
  v += "\nhost: " + host.substr(0, host.find('\n'));
  cache[nvcc] = v;
  return v;
}

CompileResult compile_solution(const fs::path& solution_dir_in, const CompileOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  CompileResult res;
  const fs::path solution_dir = fs::absolute(solution_dir_in);

  SolutionFiles files;
  try {
    files = read_solution_files(solution_dir);
  } catch (const ExecError& e) {
    res.status = e.status;
    res.message = e.what();
    res.seconds = elapsed();
    return res;
  }
  if (files.sources.empty()) {
    res.status = Status::INVALID_SUBMISSION;
    res.message = fmt::format("{}: no .cu or .cpp file in the folder root", solution_dir.string());
    return res;
  }

  const std::string nvcc = resolve_nvcc(opts);
  if (nvcc.empty()) throw std::runtime_error("no nvcc: set D2K_NVCC or put nvcc on PATH");
  const fs::path include_dir = effective_include_dir(opts);
  const fs::path cutlass_dir = effective_cutlass_dir(opts);
  if (!fs::exists(include_dir / "d2k" / "solution.h"))
    throw std::runtime_error(fmt::format("{}: no d2k/solution.h (set CompileOptions::include_dir)", include_dir.string()));
  if (opts.cutlass && !fs::exists(cutlass_dir / "cutlass" / "cutlass.h"))
    throw std::runtime_error(fmt::format("{}: no cutlass/cutlass.h (run scripts/setup.sh)", cutlass_dir.string()));

  const std::vector<std::string> flags = nvcc_flags(opts);
  res.key = compile_cache_key(files, flags, toolchain_version(nvcc), include_fingerprint(opts, include_dir, cutlass_dir));
  const fs::path cache = opts.cache_dir.empty() ? default_compile_cache_dir() : opts.cache_dir;
  const fs::path entry = cache / res.key;
  const fs::path lib = entry / "solution.so";

  res.command = {nvcc};
  res.command.insert(res.command.end(), flags.begin(), flags.end());
  res.command.insert(res.command.end(), files.sources.begin(), files.sources.end());
  res.command.insert(res.command.end(), {"-o", "../solution.so"});

  std::error_code ec;
  if (opts.use_cache && fs::is_regular_file(lib, ec)) {
    res.status = Status::PASSED;
    res.cache_hit = true;
    res.library = lib;
    res.log = read_file(entry / "build.log");
    res.message = "compiled (cache hit)";
    res.seconds = elapsed();
    return res;
  }

  // A private build folder: the exact bytes that were hashed, a version script, nothing else.
  fs::create_directories(cache, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create the compile cache {}: {}", cache.string(), ec.message()));
  const fs::path build = cache / fmt::format(".build-{}-{}", res.key.substr(0, 16), random_suffix());
  const fs::path src = build / "src";
  fs::create_directories(src);
  for (const auto& [name, content] : files.files) {
    fs::create_directories((src / name).parent_path());
    write_file(src / name, content);
  }
  write_file(build / "exports.map", kVersionScript);

  std::vector<std::string> argv = {nvcc};
  for (const std::string& f : flags) {
    std::string a = f;
    if (auto at = a.find(kVersionScriptToken); at != std::string::npos)
      a.replace(at, std::strlen(kVersionScriptToken), (build / "exports.map").string());
    argv.push_back(a);
  }
  argv.insert(argv.end(), files.sources.begin(), files.sources.end());
  argv.insert(argv.end(), {"-o", (build / "solution.so").string()});

  SandboxOptions so;
  so.scratch_dir = build;
  so.keep_scratch = true;
  so.working_dir = src;
  so.gpu_devices = false;
  so.stage_timeouts = {{"start", opts.timeout_seconds}};
  so.rlimits.processes = 256;
  so.rlimits.file_size_bytes = 4ull << 30;
  so.rlimits.cpu_seconds = static_cast<std::uint64_t>(opts.timeout_seconds * 2 + 10);
  so.output_tail_bytes = 1u << 20;
  // nvcc's toolkit, and the one this build found (its headers may live elsewhere), stay visible.
  so.ro_paths = {include_dir, fs::path(nvcc).parent_path().parent_path()};
  if (const fs::path cuda_inc = D2K_CUDA_INCLUDE_DIR; !cuda_inc.empty() && fs::exists(cuda_inc, ec))
    so.ro_paths.push_back(fs::canonical(cuda_inc, ec));
  if (opts.cutlass) so.ro_paths.push_back(cutlass_dir);
  for (const fs::path& dir : opts.extra_include_dirs) so.ro_paths.push_back(dir);
  if (!opts.sandbox) {
    so.pid_namespace = so.net_namespace = so.ipc_namespace = so.uts_namespace = so.mount_namespace = false;
    so.fs = FsIsolation::none;
    so.drop_privileges = false;
    so.seccomp = false;
  } else if (geteuid() == 0) {
    // nvcc runs as nobody: it must be able to read what it compiles.
    for (auto it = fs::recursive_directory_iterator(build); it != fs::recursive_directory_iterator(); ++it)
      if (chown(it->path().c_str(), so.uid, so.gid) < 0) break;
  }
  ProcessResult pr = run_sandboxed(argv, so);
  res.sandbox_layers = pr.layers;
  res.seconds = elapsed();
  const std::string raw = pr.stdout_tail + pr.stderr_tail;
  res.log = trim_compiler_log(raw, opts.log_limit_bytes,
                              {(src / "").string(), (build / "").string(), (solution_dir / "").string()});

  auto cleanup = [&] { fs::remove_all(build, ec); };
  if (pr.status == Status::TIMEOUT) {
    res.status = Status::TIMEOUT;
    res.message = fmt::format("compilation exceeded its {:g} s deadline", opts.timeout_seconds);
    cleanup();
    return res;
  }
  if (pr.setup_failed) {
    cleanup();
    throw std::runtime_error(fmt::format("cannot run nvcc: {}", pr.cause));
  }
  if (pr.status != Status::PASSED || !fs::is_regular_file(build / "solution.so", ec)) {
    // A link that failed on a vendor library the track does not link is an attempt to use what
    // the track forbids (docs/design.md, "Anti-cheat rules"), not a mistake to fix: the same verdict the symbol check
    // gives an import it sees. The log (with the undefined references) is kept.
    if (const auto vendor = vendor_link_failures(raw, opts.link_libraries); !vendor.empty() && !pr.signal) {
      std::string more;
      if (vendor.size() > 1) more = fmt::format(" (and {} more vendor symbol(s))", vendor.size() - 1);
      res.status = Status::REWARD_HACK;
      res.rule = "vendor_library";
      res.message = fmt::format("calls {}{}, from the {} library, which the {} track does not link (undefined "
                                "reference at link time)",
                                vendor.front().symbol, more, vendor.front().library,
                                opts.track.empty() ? (opts.cutlass ? "cutlass" : "cuda") : opts.track);
      cleanup();
      return res;
    }
    res.status = Status::COMPILE_ERROR;
    res.message = pr.signal ? fmt::format("the compiler was {}", pr.cause)
                            : fmt::format("compilation failed ({})", pr.cause);
    cleanup();
    return res;
  }

  // Publish atomically: a complete entry folder appears under its key, or nothing does.
  const fs::path staged = cache / fmt::format(".entry-{}-{}", res.key.substr(0, 16), random_suffix());
  fs::create_directories(staged);
  fs::rename(build / "solution.so", staged / "solution.so");
  write_file(staged / "build.log", res.log);
  nlohmann::json meta = {{"key", res.key}, {"files", nlohmann::json::array()}, {"flags", flags},
                         {"toolchain", toolchain_version(nvcc)}, {"seconds", res.seconds}};
  for (const auto& [name, content] : files.files) meta["files"].push_back({{"name", name}, {"bytes", content.size()}});
  write_file(staged / "meta.json", meta.dump(2));
  fs::rename(staged, entry, ec);
  if (ec) fs::remove_all(staged, ec);  // another process published the same key first
  cleanup();
  res.status = Status::PASSED;
  res.library = lib;
  res.message = "compiled";
  return res;
}

}  // namespace d2k
