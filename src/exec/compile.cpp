#include "exec/compile.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <sys/stat.h>
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
std::string include_fingerprint(const CompileOptions& opts, const fs::path& include_dir) {
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
  for (const SystemHeaders& sh : opts.system_headers) {
    // Large trees: the stamp (a version header) stands for the whole tree.
    h.update_field(sh.dir.string());
    h.update_field(read_file(sh.dir / sh.stamp));
  }
  return h.hex_digest();
}

/// A folder's canonical path where it exists (the sandbox binds canonical paths: a flag that
/// named a link outside them would not resolve inside), else the path as given.
fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p, ec);
  return ec ? p : c;
}

fs::path solution_include_dir_or_given(const CompileOptions& opts);

fs::path effective_include_dir(const CompileOptions& opts) { return canonical_or_same(solution_include_dir_or_given(opts)); }

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
                              const std::vector<std::string>& strip_prefixes, std::uint64_t full_bytes) {
  std::string text(log);
  // Longest prefixes first, so that a folder and its sub-folder both disappear.
  std::vector<std::string> prefixes = strip_prefixes;
  std::sort(prefixes.begin(), prefixes.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const std::string& p : prefixes) {
    if (p.empty()) continue;
    for (std::size_t at; (at = text.find(p)) != std::string::npos;) text.erase(at, p.size());
  }
  // The size the reader is told: the whole output's (a log that is only its start says so).
  const std::uint64_t full_size = std::max<std::uint64_t>(full_bytes, text.size());
  const bool only_start = full_bytes > log.size();

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
  if (dropped_errors || dropped_other || only_start)
    out += fmt::format("[log trimmed: {} more error(s) and {} other message(s) not shown{}; full log {} bytes]\n",
                       dropped_errors, dropped_other, only_start ? ", nor the output past its first MiB" : "",
                       full_size);
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

std::string escape_file_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (unsigned char c : name) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c >= 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}

namespace {

/// A descriptor closed when it goes out of scope.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

/// Reads a solution folder once, through descriptors: every entry is opened relative to its
/// folder with O_NOFOLLOW and judged by fstat on what was opened, so no name is resolved twice
/// and a link swapped in between is refused, not followed.
class SolutionFolderReader {
 public:
  explicit SolutionFolderReader(const fs::path& dir) : shown_(escape_file_name(dir.string())) {}

  SolutionFiles read(const fs::path& dir) {
    // The folder itself may be reached through links (it is the user's own path); nothing in it.
    UniqueFd root(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0)
      throw invalid(errno == ENOENT || errno == ENOTDIR ? "not a folder" : fmt::format("cannot open: {}", std::strerror(errno)));
    struct stat st;
    if (fstatat(root.get(), "solution.cu", &st, AT_SYMLINK_NOFOLLOW) != 0) throw invalid("no solution.cu in the folder");
    if (S_ISLNK(st.st_mode)) throw invalid("solution.cu is a symbolic link; links are not allowed");
    if (!S_ISREG(st.st_mode)) throw invalid("solution.cu is not a regular file");
    walk(root.get(), "", 0);
    std::sort(out_.files.begin(), out_.files.end());
    std::sort(out_.sources.begin(), out_.sources.end());
    return std::move(out_);
  }

 private:
  ExecError invalid(const std::string& what) const {
    return ExecError(Status::INVALID_SUBMISSION, fmt::format("{}: {}", shown_, what));
  }
  ExecError is_link(const std::string& rel) const {
    return invalid(fmt::format("{} is a symbolic link; links are not allowed", escape_file_name(rel)));
  }

  static std::vector<std::string> names_in(int dirfd) {
    std::vector<std::string> names;
    int dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) return names;
    DIR* d = fdopendir(dup_fd);
    if (!d) {
      close(dup_fd);
      return names;
    }
    while (const dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  void walk(int dirfd, const std::string& prefix, int depth) {
    for (const std::string& name : names_in(dirfd)) {
      if (name[0] == '.') continue;  // hidden files and folders (.git, editor state)
      const std::string rel = prefix + name;
      if (depth > 8) throw invalid("folders nested more than 8 deep");
      struct stat st;
      if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        throw invalid(fmt::format("cannot read {}: {}", escape_file_name(rel), std::strerror(errno)));
      const fs::path p(name);
      if (S_ISLNK(st.st_mode)) {
        struct stat target;
        if (is_header(p) || is_source(p) ||
            (fstatat(dirfd, name.c_str(), &target, 0) == 0 && S_ISDIR(target.st_mode)))
          throw is_link(rel);
        continue;  // a link to notes or data: not part of the build, never read
      }
      if (S_ISDIR(st.st_mode)) {
        UniqueFd sub(openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (sub.get() < 0) {
          if (errno == ELOOP || errno == ENOTDIR) throw is_link(rel);
          throw invalid(fmt::format("cannot open {}: {}", escape_file_name(rel), std::strerror(errno)));
        }
        walk(sub.get(), rel + "/", depth + 1);
        continue;
      }
      if (!(is_header(p) || is_source(p))) continue;  // notes, data: not part of the build
      if (!safe_name(rel))
        throw invalid(fmt::format("file name '{}' is not allowed (letters, digits, '_', '-', '.', '/' only; "
                                  "not starting with '-' or '.')", escape_file_name(rel)));
      if (out_.files.size() >= kMaxFiles) throw invalid(fmt::format("more than {} source files", kMaxFiles));
      std::string content = read_one(dirfd, name, rel);
      total_ += content.size();
      if (depth == 0 && is_source(p)) out_.sources.push_back(rel);
      out_.files.emplace_back(rel, std::move(content));
    }
  }

  /// One file: opened without following links, checked after the open, read up to the cap.
  std::string read_one(int dirfd, const std::string& name, const std::string& rel) {
    UniqueFd fd(openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ELOOP) throw is_link(rel);
      throw invalid(fmt::format("cannot read {}: {}", escape_file_name(rel), std::strerror(errno)));
    }
    struct stat st;
    if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
      throw invalid(fmt::format("{} is not a regular file", escape_file_name(rel)));
    const std::size_t room = kMaxBytes - std::min(kMaxBytes, total_);
    if (static_cast<std::uint64_t>(st.st_size) > room) throw too_large();
    std::string content;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd.get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw invalid(fmt::format("cannot read {}: {}", escape_file_name(rel), std::strerror(errno)));
      if (n == 0) break;
      content.append(buf, static_cast<std::size_t>(n));
      if (content.size() > room) throw too_large();  // it grew while being read
    }
    return content;
  }

  ExecError too_large() const { return invalid(fmt::format("sources larger than {} MiB in all", kMaxBytes >> 20)); }

  std::string shown_;
  SolutionFiles out_;
  std::size_t total_ = 0;
};

}  // namespace

SolutionFiles read_solution_files(const fs::path& solution_dir) {
  return SolutionFolderReader(solution_dir).read(solution_dir);
}

namespace {
/// nvcc_flags must not throw (it also serves messages and tests): where no folder is found,
/// the one asked for; compile_solution checks it and reports the harness error.
fs::path solution_include_dir_or_given(const CompileOptions& opts) {
  try {
    return solution_include_dir(opts.include_dir);
  } catch (const std::exception&) {
    return opts.include_dir.empty() ? fs::path(D2K_DEFAULT_INCLUDE_DIR) : opts.include_dir;
  }
}
}  // namespace

fs::path solution_include_dir(const fs::path& explicit_dir, const fs::path& exe_dir_in) {
  std::vector<std::string> tried;
  auto holds = [&](const fs::path& d) {
    std::error_code ec;
    if (d.empty()) return false;
    tried.push_back(escape_file_name(d.string()));
    return fs::is_regular_file(d / "d2k" / "solution.h", ec);
  };
  auto none = [&](const std::string& why) {
    std::string list;
    for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
    return std::runtime_error(fmt::format("no d2k/solution.h in {} ({})", list, why));
  };
  if (!explicit_dir.empty()) {
    if (holds(explicit_dir)) return explicit_dir;
    throw none("the include folder asked for");
  }
  if (const std::string env = getenv_str("D2K_INCLUDE_DIR"); !env.empty()) {
    if (holds(env)) return env;
    throw none("$D2K_INCLUDE_DIR");
  }
  std::error_code ec;
  const fs::path exe_dir = exe_dir_in.empty() ? fs::read_symlink("/proc/self/exe", ec).parent_path() : exe_dir_in;
  // A packed build carries include/ beside the binary; an installed one has it beside bin/.
  for (const fs::path& d : {exe_dir / "include", exe_dir.parent_path() / "include"})
    if (!exe_dir.empty() && holds(d)) return d;
  if (holds(D2K_DEFAULT_INCLUDE_DIR)) return D2K_DEFAULT_INCLUDE_DIR;
  throw none("set $D2K_INCLUDE_DIR to the folder that holds d2k/solution.h");
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
  for (const fs::path& dir : opts.extra_include_dirs) f.push_back("-I" + canonical_or_same(dir).string());
  // -isystem and its folder as two arguments: nvcc 13 rejects them glued together.
  for (const SystemHeaders& sh : opts.system_headers) f.insert(f.end(), {"-isystem", canonical_or_same(sh.dir).string()});
  f.insert(f.end(), {"-Xlinker", "--no-undefined", "-Xlinker", std::string("--version-script=") + kVersionScriptToken});
  for (const std::string& lib : opts.link_libraries) f.push_back("-l" + lib);
  // The driver API, so that a direct call of a tensor-map encoder (cuTensorMapEncodeTiled)
  // links: the toolkit's stub libcuda, from the -L<toolkit>/lib64/stubs that nvcc's own
  // nvcc.profile adds. --as-needed: a solution that calls no driver function gets no DT_NEEDED
  // entry. No RUNPATH: the worker has already loaded the real libcuda.so.1. Which driver
  // imports pass is the symbol check's (tensor_map_driver_functions()); the others link here
  // and are refused there as vendor_library, by name. One -Xlinker argument: nvcc moves its
  // own -l options behind every -Xlinker option, which would take -lcuda out of --as-needed.
  f.insert(f.end(), {"-Xlinker", "--as-needed,-lcuda,--no-as-needed"});
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

std::vector<std::string> evict_compile_cache(const fs::path& cache_dir, std::uint64_t budget_bytes,
                                             const std::string& keep) {
  struct Entry {
    fs::file_time_type used;
    std::string key;
    std::uint64_t bytes = 0;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(cache_dir, ec)) {
    const std::string name = de.path().filename().string();
    // Entries only: 64 hex digits (staging and build folders start with '.').
    if (name.size() != 64 || !std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
      continue;
    if (!de.is_directory(ec) || de.is_symlink(ec)) continue;
    Entry e{fs::last_write_time(de.path(), ec), name, 0};
    for (const auto& f : fs::directory_iterator(de.path(), ec))
      if (f.is_regular_file(ec) && !f.is_symlink(ec)) e.bytes += f.file_size(ec);
    total += e.bytes;
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  std::vector<std::string> removed;
  for (const Entry& e : entries) {
    if (total <= budget_bytes) break;
    if (e.key == keep) continue;
    fs::remove_all(cache_dir / e.key, ec);
    if (ec) continue;
    total -= e.bytes;
    removed.push_back(e.key);
  }
  return removed;
}

namespace {

/// A size in MiB from the environment variable `name`, else `fallback` bytes.
std::uint64_t mib_from_env(const char* name, std::uint64_t fallback) {
  const std::string mb = getenv_str(name);
  if (mb.empty()) return fallback;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(mb.c_str(), &end, 10);
  if (end && *end == 0 && v > 0) return v << 20;
  throw std::runtime_error(fmt::format("${}: '{}' is not a positive number of MiB", name, mb));
}

std::uint64_t cache_budget(const CompileOptions& opts) {
  return opts.cache_budget_bytes ? opts.cache_budget_bytes : mib_from_env("D2K_CACHE_BUDGET_MB", 4ull << 30);
}

std::uint64_t memory_limit(const CompileOptions& opts) {
  return opts.memory_limit_bytes ? opts.memory_limit_bytes : mib_from_env("D2K_COMPILE_MEMORY_MB", 8ull << 30);
}

std::string gib(std::uint64_t bytes) {
  if (bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

/// The resource limit a failed compile ran into ("memory", "output_size", "processes",
/// "cpu_time"), judged from how the compiler ended and the lines its tools print when an
/// allocation, a write or a fork is refused; "" when none. Only whole lines written by the
/// tools count (a diagnostic quoting the candidate's text starts with its file name).
std::string resource_limit_hit(const ProcessResult& pr, std::string_view raw) {
  if (pr.signal == SIGXFSZ) return "output_size";
  if (pr.signal == SIGXCPU) return "cpu_time";
  std::size_t start = 0;
  while (start < raw.size()) {
    std::size_t nl = raw.find('\n', start);
    if (nl == std::string_view::npos) nl = raw.size();
    const std::string_view line = raw.substr(start, nl - start);
    start = nl + 1;
    auto begins = [&](std::string_view p) { return line.substr(0, p.size()) == p; };
    if (begins("cc1plus: out of memory") || begins("cc1: out of memory") || begins("virtual memory exhausted") ||
        begins("terminate called after throwing an instance of 'std::bad_alloc'") ||
        begins("LLVM ERROR: out of memory") || begins("LLVM ERROR: Cannot allocate memory") ||
        begins("Out of memory") || line.find("): catastrophic error: out of memory") != std::string_view::npos ||
        line.find("): catastrophic error: memory allocation failure") != std::string_view::npos)
      return "memory";
    if (begins("nvcc error   : '") && line.find("died due to signal 25") != std::string_view::npos) return "output_size";
    if (begins("nvcc error   : '") && line.find("died due to signal 24") != std::string_view::npos) return "cpu_time";
    if (begins("File size limit exceeded")) return "output_size";
    if ((begins("nvcc fatal") || begins("gcc: fatal") || begins("g++: fatal")) &&
        line.find("Resource temporarily unavailable") != std::string_view::npos)
      return "processes";
  }
  return "";
}

/// A build folder outside the cache, so that bubblewrap's unprivileged user can reach it
/// whatever the cache's parents allow (a 0700 home), holding exactly the bytes that were hashed.
fs::path make_build_folder(const SolutionFiles& files) {
  std::string tmpl = (fs::temp_directory_path() / "d2k-compile-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error(fmt::format("mkdtemp {}: {}", tmpl, std::strerror(errno)));
  const fs::path build = tmpl;
  const fs::path src = build / "src";
  fs::create_directories(src);
  for (const auto& [name, content] : files.files) {
    fs::create_directories((src / name).parent_path());
    write_file(src / name, content);
  }
  write_file(build / "exports.map", kVersionScript);
  return build;
}

SandboxOptions compile_sandbox_options(const CompileOptions& opts, const fs::path& build,
                                       const std::vector<fs::path>& ro_paths) {
  SandboxOptions so;
  so.scratch_dir = build;
  so.keep_scratch = true;
  so.working_dir = build / "src";
  so.gpu_devices = false;
  so.minimal_root = true;
  so.fs = opts.sandbox_fs;
  so.allow_fallback = opts.sandbox_fallback || getenv_str("D2K_SANDBOX_FALLBACK") == "1";
  so.stage_timeouts = {{"start", opts.timeout_seconds}};
  so.rlimits.processes = opts.max_processes;
  so.rlimits.file_size_bytes = opts.file_size_limit_bytes;
  so.rlimits.address_space_bytes = memory_limit(opts);
  so.rlimits.data_bytes = memory_limit(opts);
  so.rlimits.cpu_seconds = static_cast<std::uint64_t>(opts.timeout_seconds * 2 + 10);
  // The first errors explain the rest: keep the start of the output (and its end, for the
  // linker's and the driver's last words).
  so.output_head_bytes = 1u << 20;
  so.output_tail_bytes = 64u << 10;
  so.ro_paths = ro_paths;
  if (!opts.sandbox) {
    so.pid_namespace = so.net_namespace = so.ipc_namespace = so.uts_namespace = so.mount_namespace = false;
    so.fs = FsIsolation::none;
    so.minimal_root = false;
    so.drop_privileges = false;
    so.seccomp = false;
  } else if (geteuid() == 0) {
    // nvcc runs as an unprivileged uid: it must be able to read what it compiles.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(build, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
      if (lchown(it->path().c_str(), so.uid, so.gid) < 0) break;
  }
  return so;
}

/// The compiler's output as the log keeps it: the start of stdout and of stderr (their ends
/// where no start was kept), and the full size.
std::string compiler_output(const ProcessResult& pr, std::uint64_t& full_bytes) {
  full_bytes = pr.stdout_bytes + pr.stderr_bytes;
  const std::string& out = pr.stdout_head.empty() ? pr.stdout_tail : pr.stdout_head;
  const std::string& err = pr.stderr_head.empty() ? pr.stderr_tail : pr.stderr_head;
  return out + err;
}

/// A compile that produced no library: a resource limit, a vendor library the track does not
/// link, or an ordinary compile error.
void finish_failed_compile(CompileResult& res, const ProcessResult& pr, std::string_view raw, const CompileOptions& opts) {
  if (const std::string limit = resource_limit_hit(pr, raw); !limit.empty()) {
    std::string what;
    if (limit == "memory")
      what = fmt::format("the compiler ran out of its {} memory limit (RLIMIT_AS and RLIMIT_DATA, per process)",
                         gib(memory_limit(opts)));
    else if (limit == "output_size")
      what = fmt::format("the compiler wrote a file over its {} limit (RLIMIT_FSIZE)", gib(opts.file_size_limit_bytes));
    else if (limit == "processes")
      what = fmt::format("the compiler could not start a process past its limit of {} (RLIMIT_NPROC)", opts.max_processes);
    else
      what = "the compiler used up its CPU time limit (RLIMIT_CPU)";
    res.status = Status::COMPILE_ERROR;
    res.rule = "resource_limit: " + limit;
    res.message = what;
    return;
  }
  // A link that failed on a vendor library the track does not link is an attempt to use what
  // the track forbids (docs/design.md, "Anti-cheat rules"), not a mistake to fix: the same
  // verdict the symbol check gives an import it sees. The log (with the undefined references)
  // is kept.
  if (const auto vendor = vendor_link_failures(raw, opts.link_libraries); !vendor.empty() && !pr.signal) {
    std::string more;
    if (vendor.size() > 1) more = fmt::format(" (and {} more vendor symbol(s))", vendor.size() - 1);
    res.status = Status::REWARD_HACK;
    res.rule = "vendor_library";
    res.message = fmt::format("calls {}{}, from the {} library, which the {} track does not link (undefined "
                              "reference at link time)",
                              vendor.front().symbol, more, vendor.front().library,
                              opts.track.empty() ? std::string("cuda") : opts.track);
    return;
  }
  res.status = Status::COMPILE_ERROR;
  res.message = pr.signal ? fmt::format("the compiler was {}", pr.cause) : fmt::format("compilation failed ({})", pr.cause);
}

/// Visible read-only to the compile: nvcc's toolkit, the one this build found (its headers may
/// live elsewhere), the include folders. Nothing else of the host.
std::vector<fs::path> compile_read_only_paths(const CompileOptions& opts, const std::string& nvcc,
                                              const fs::path& include_dir) {
  std::error_code ec;
  std::vector<fs::path> ro_paths = {include_dir, fs::path(nvcc).parent_path().parent_path()};
  if (const fs::path cuda_inc = D2K_CUDA_INCLUDE_DIR; !cuda_inc.empty() && fs::exists(cuda_inc, ec))
    ro_paths.push_back(canonical_or_same(cuda_inc));
  for (const SystemHeaders& sh : opts.system_headers) ro_paths.push_back(canonical_or_same(sh.dir));
  for (const fs::path& dir : opts.extra_include_dirs) ro_paths.push_back(canonical_or_same(dir));
  return ro_paths;
}

/// A complete entry under the key is reused as it is; it is marked recently used (LRU).
bool take_cache_hit(const fs::path& entry, CompileResult& res) {
  std::error_code ec;
  const fs::path lib = entry / "solution.so";
  if (!fs::is_regular_file(lib, ec)) return false;
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);
  res.status = Status::PASSED;
  res.cache_hit = true;
  res.library = lib;
  res.log = read_file(entry / "build.log");
  res.message = "compiled (cache hit)";
  // The sandbox the entry was built in.
  const nlohmann::json meta = nlohmann::json::parse(read_file(entry / "meta.json"), nullptr, false);
  if (meta.is_object() && meta.contains("sandbox") && meta["sandbox"].is_string()) res.sandbox = meta["sandbox"];
  return true;
}

/// Stages the library, its log and meta.json in a hidden folder, then renames it to the key: a
/// reader sees a complete entry or none. Losing the race to another process is not an error.
void publish_cache_entry(const fs::path& cache, const fs::path& entry, const fs::path& built, const CompileResult& res,
                         const SolutionFiles& files, const std::vector<std::string>& flags, const std::string& toolchain) {
  std::error_code ec;
  const fs::path staged = cache / fmt::format(".entry-{}-{}", res.key.substr(0, 16), random_suffix());
  fs::create_directories(staged);
  fs::copy_file(built, staged / "solution.so", ec);
  if (ec) {
    fs::remove_all(staged, ec);
    throw std::runtime_error(fmt::format("cannot write the compile cache {}: {}", cache.string(), ec.message()));
  }
  write_file(staged / "build.log", res.log);
  nlohmann::json meta = {{"key", res.key}, {"files", nlohmann::json::array()}, {"flags", flags},
                         {"toolchain", toolchain}, {"seconds", res.seconds},
                         {"sandbox", res.sandbox}, {"layers", res.sandbox_layers}};
  for (const auto& [name, content] : files.files) meta["files"].push_back({{"name", name}, {"bytes", content.size()}});
  write_file(staged / "meta.json", meta.dump(2));
  fs::rename(staged, entry, ec);
  if (ec) fs::remove_all(staged, ec);  // another process published the same key first
}

}  // namespace

CompileResult compile_solution(const fs::path& solution_dir_in, const CompileOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  CompileResult res;
  const fs::path solution_dir = fs::absolute(solution_dir_in);

  // ---- the folder, read once ----
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
    res.message = fmt::format("{}: no .cu or .cpp file in the folder root", escape_file_name(solution_dir.string()));
    return res;
  }

  // ---- the toolchain and the include folders (harness faults throw) ----
  std::string nvcc = resolve_nvcc(opts);
  if (nvcc.empty()) throw std::runtime_error("no nvcc: set D2K_NVCC or put nvcc on PATH");
  nvcc = canonical_or_same(nvcc).string();
  const fs::path include_dir = canonical_or_same(solution_include_dir(opts.include_dir));
  for (const SystemHeaders& sh : opts.system_headers)
    if (!fs::exists(sh.dir / sh.stamp))
      throw std::runtime_error(fmt::format("{}: no {} (run scripts/setup.sh)", sh.dir.string(), sh.stamp.string()));

  const std::vector<std::string> flags = nvcc_flags(opts);
  res.key = compile_cache_key(files, flags, toolchain_version(nvcc), include_fingerprint(opts, include_dir));
  const fs::path cache = opts.cache_dir.empty() ? default_compile_cache_dir() : opts.cache_dir;
  const fs::path entry = cache / res.key;
  const fs::path lib = entry / "solution.so";

  res.command = {nvcc};
  res.command.insert(res.command.end(), flags.begin(), flags.end());
  res.command.insert(res.command.end(), files.sources.begin(), files.sources.end());
  res.command.insert(res.command.end(), {"-o", "../solution.so"});

  std::error_code ec;
  if (opts.use_cache && take_cache_hit(entry, res)) {
    res.seconds = elapsed();
    return res;
  }
  fs::create_directories(cache, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create the compile cache {}: {}", cache.string(), ec.message()));

  // ---- the compile, sandboxed ----
  const fs::path build = make_build_folder(files);
  auto cleanup = [&] { fs::remove_all(build, ec); };
  std::vector<std::string> argv = {nvcc};
  for (const std::string& f : flags) {
    std::string a = f;
    if (auto at = a.find(kVersionScriptToken); at != std::string::npos)
      a.replace(at, std::strlen(kVersionScriptToken), (build / "exports.map").string());
    argv.push_back(a);
  }
  argv.insert(argv.end(), files.sources.begin(), files.sources.end());
  argv.insert(argv.end(), {"-o", (build / "solution.so").string()});

  const std::vector<fs::path> ro_paths = compile_read_only_paths(opts, nvcc, include_dir);
  ProcessResult pr;
  try {
    pr = run_sandboxed(argv, compile_sandbox_options(opts, build, ro_paths));
  } catch (...) {
    cleanup();
    throw;
  }
  res.sandbox = pr.sandbox;
  res.sandbox_layers = pr.layers;
  res.seconds = elapsed();
  if (pr.setup_failed) {
    cleanup();
    const bool refused_fallback = pr.cause.find("is not allowed") != std::string::npos;
    throw std::runtime_error(fmt::format("cannot run nvcc in its sandbox: {}{}", pr.cause,
                                         refused_fallback ? " (set $D2K_SANDBOX_FALLBACK=1 to allow it)" : ""));
  }
  const std::string raw = compiler_output(pr, res.log_bytes);
  res.log = trim_compiler_log(raw, opts.log_limit_bytes,
                              {(build / "src" / "").string(), (build / "").string(), (solution_dir / "").string()},
                              res.log_bytes);

  if (pr.status == Status::TIMEOUT) {
    res.status = Status::TIMEOUT;
    res.message = fmt::format("compilation exceeded its {:g} s deadline", opts.timeout_seconds);
    cleanup();
    return res;
  }
  const fs::path built = build / "solution.so";
  if (pr.status != Status::PASSED || !fs::is_regular_file(built, ec)) {
    finish_failed_compile(res, pr, raw, opts);
    cleanup();
    return res;
  }
  if (const std::uint64_t size = fs::file_size(built, ec); size > opts.max_library_bytes) {
    res.status = Status::COMPILE_ERROR;
    res.rule = "resource_limit: output_size";
    res.message = fmt::format("the library is {} KiB, over the {} limit on a built library", size >> 10,
                              gib(opts.max_library_bytes));
    cleanup();
    return res;
  }

  // ---- publish atomically: a complete entry folder appears under its key, or nothing does ----
  try {
    publish_cache_entry(cache, entry, built, res, files, flags, toolchain_version(nvcc));
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  evict_compile_cache(cache, cache_budget(opts), res.key);
  res.status = Status::PASSED;
  res.library = lib;
  res.message = "compiled";
  return res;
}

}  // namespace d2k
