// cuobjdump -sass: locating the tool, running it on a library, and the opcode histogram.
#include "capability/sass.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "capability/subprocess.h"

namespace d2k::capability {

namespace fs = std::filesystem;

namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

// An instruction line: spaces, "/*0140*/", spaces, an optional predicate ("@P0 ", "@!UPT "), the
// opcode, its operands, ";", the encoding comment. Returns the opcode or an empty view.
std::string_view instruction_opcode(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && is_space(line[i])) ++i;
  if (line.compare(i, 2, "/*") != 0) return {};
  const std::size_t end = line.find("*/", i + 2);
  if (end == std::string_view::npos || end == i + 2) return {};
  for (std::size_t k = i + 2; k < end; ++k)
    if (!std::isxdigit(static_cast<unsigned char>(line[k]))) return {};
  i = end + 2;
  while (i < line.size() && is_space(line[i])) ++i;
  if (i < line.size() && line[i] == '{') {  // dual-issue bundle marker of older architectures
    ++i;
    while (i < line.size() && is_space(line[i])) ++i;
  }
  if (i < line.size() && line[i] == '@') {
    while (i < line.size() && !is_space(line[i])) ++i;
    while (i < line.size() && is_space(line[i])) ++i;
  }
  const std::size_t b = i;
  if (b >= line.size() || !std::isupper(static_cast<unsigned char>(line[b]))) return {};
  while (i < line.size() && !is_space(line[i]) && line[i] != ';') ++i;
  return line.substr(b, i - b);
}

}  // namespace

SassListing parse_sass(std::string_view text) {
  SassListing out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (const auto f = line.find("Function : "); f != std::string_view::npos) {
      std::string_view name = line.substr(f + 11);
      while (!name.empty() && (is_space(name.back()) || name.back() == '\r')) name.remove_suffix(1);
      out.kernels.push_back({std::string(name), {}});
      continue;
    }
    const std::string_view op = instruction_opcode(line);
    if (op.empty() || out.kernels.empty()) continue;
    ++out.kernels.back().opcodes[std::string(op)];
    ++out.total[std::string(op)];
  }
  return out;
}

bool opcode_matches(std::string_view opcode, std::string_view prefix) {
  if (prefix.empty() || opcode.size() < prefix.size() || opcode.compare(0, prefix.size(), prefix) != 0) return false;
  return opcode.size() == prefix.size() || opcode[prefix.size()] == '.';
}

std::int64_t count_matching(const std::map<std::string, std::int64_t>& opcodes, std::string_view prefix) {
  std::int64_t n = 0;
  for (const auto& [op, c] : opcodes)
    if (opcode_matches(op, prefix)) n += c;
  return n;
}

std::optional<fs::path> find_cuobjdump() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("D2K_CUOBJDUMP"); env && *env) return fs::path(env);
  // Beside the binary first: a packed or installed tree carries cuda-tools/ (scripts/gpu/pack.sh).
  std::error_code self_ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", self_ec);
  if (!self_ec) candidates.emplace_back(self.parent_path() / "cuda-tools" / "cuobjdump");
#ifdef D2K_CUDA_TOOLS_DIR
  candidates.emplace_back(fs::path(D2K_CUDA_TOOLS_DIR) / "cuobjdump");
#endif
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) candidates.emplace_back(fs::path(home) / "bin" / "cuobjdump");
  candidates.emplace_back("/usr/local/cuda/bin/cuobjdump");
  if (const char* path = std::getenv("PATH")) {
    std::string_view p = path;
    while (!p.empty()) {
      const auto colon = p.find(':');
      const std::string_view dir = p.substr(0, colon);
      if (!dir.empty()) candidates.emplace_back(fs::path(std::string(dir)) / "cuobjdump");
      if (colon == std::string_view::npos) break;
      p.remove_prefix(colon + 1);
    }
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec) && ::access(c.c_str(), X_OK) == 0) return c;
  }
  return std::nullopt;
}

SassResult disassemble(const fs::path& library, double timeout_s) {
  SassResult r;
  const auto tool = find_cuobjdump();
  if (!tool) {
    r.error = "no cuobjdump (scripts/setup.sh unpacks it into the third-party folder; or set D2K_CUOBJDUMP)";
    return r;
  }
  r.tool = tool->string();
  if (!fs::is_regular_file(library)) {
    r.error = fmt::format("no library at {}", library.string());
    return r;
  }
  // 512 MiB of listing is far beyond any honest library (the largest pilot's is 2.5 MB).
  const ToolResult t = run_tool({r.tool, "-sass", library.string()}, timeout_s, 512ull << 20);
  if (t.timed_out) r.error = fmt::format("cuobjdump ran past {} s", timeout_s);
  else if (t.truncated) r.error = "cuobjdump's listing passed 512 MiB";
  else if (t.exit_code != 0 && t.out.find("Function : ") == std::string::npos)
    r.error = fmt::format("cuobjdump: {}", t.err.empty() ? fmt::format("exit {}", t.exit_code) : t.err.substr(0, 300));
  if (!r.error.empty()) {
    while (!r.error.empty() && (r.error.back() == '\n' || r.error.back() == ' ')) r.error.pop_back();
    return r;
  }
  SassListing l = parse_sass(t.out);
  if (l.kernels.empty()) {
    r.error = "the library holds no SASS (no kernel, or PTX only)";
    return r;
  }
  r.listing = std::move(l);
  return r;
}

}  // namespace d2k::capability
