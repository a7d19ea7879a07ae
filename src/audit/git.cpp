#include "audit/git.h"

#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace d2k::audit {

namespace fs = std::filesystem;

namespace {

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string git_command(const fs::path& root, const std::vector<std::string>& args) {
  std::string cmd = fmt::format("git -C {}", sh_quote(root.string()));
  for (const auto& a : args) fmt::format_to(std::back_inserter(cmd), " {}", sh_quote(a));
  return cmd;
}

struct PipeCloser {
  void operator()(FILE* f) const {
    if (f) ::pclose(f);
  }
};

}  // namespace

std::string git_output(const fs::path& root, const std::vector<std::string>& args) {
  const std::string cmd = git_command(root, args);
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) throw std::runtime_error(fmt::format("cannot run {}", cmd));
  std::string out;
  char buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int st = ::pclose(p);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    throw std::runtime_error(fmt::format("{} failed (exit {})", cmd, WIFEXITED(st) ? WEXITSTATUS(st) : -1));
  return out;
}

bool is_git_checkout(const fs::path& root) {
  try {
    return git_output(root, {"rev-parse", "--is-inside-work-tree"}).starts_with("true");
  } catch (const std::runtime_error&) {
    return false;
  }
}

std::vector<std::string> split_nul(std::string_view s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t end = s.find('\0', pos);
    if (end == std::string_view::npos) end = s.size();
    if (end > pos) out.emplace_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::vector<TreeEntry> ls_tree(const fs::path& root, const std::string& commit) {
  std::vector<TreeEntry> out;
  // "<mode> SP <type> SP <sha> SP+ <size> TAB <path>"
  for (const auto& rec : split_nul(git_output(root, {"ls-tree", "-r", "-l", "-z", commit}))) {
    const auto tab = rec.find('\t');
    if (tab == std::string::npos) continue;
    char type[16] = {}, sha[65] = {}, size[32] = {};
    if (std::sscanf(rec.c_str(), "%*s %15s %64s %31s", type, sha, size) != 3 || std::string_view(type) != "blob") continue;
    out.push_back({sha, rec.substr(tab + 1), static_cast<std::size_t>(std::strtoull(size, nullptr, 10))});
  }
  return out;
}

void cat_blobs(const fs::path& root, const std::vector<std::string>& shas,
               const std::function<void(const std::string&, std::string_view)>& on_blob) {
  if (shas.empty()) return;
  std::string tmpl_s = (fs::temp_directory_path() / "d2k-audit-XXXXXX").string();
  char* tmpl = tmpl_s.data();
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file for git cat-file");
  ::close(fd);
  {
    std::ofstream list(tmpl);
    for (const auto& s : shas) list << s << "\n";
  }
  const std::string cmd = git_command(root, {"cat-file", "--batch"}) + " < " + sh_quote(tmpl) + " 2>/dev/null";
  std::unique_ptr<FILE, PipeCloser> p(::popen(cmd.c_str(), "r"));
  if (!p) {
    ::unlink(tmpl);
    throw std::runtime_error(fmt::format("cannot run {}", cmd));
  }
  // Each answer: "<sha> blob <size>\n<bytes>\n", or "<sha> missing\n".
  char header[256];
  std::string bytes;
  while (std::fgets(header, sizeof header, p.get())) {
    char sha[65] = {}, type[16] = {};
    unsigned long long size = 0;
    if (std::sscanf(header, "%64s %15s %llu", sha, type, &size) != 3) continue;
    bytes.resize(size);
    if (size && std::fread(bytes.data(), 1, size, p.get()) != size) break;
    std::fgetc(p.get());  // the newline after the bytes
    on_blob(sha, bytes);
  }
  ::unlink(tmpl);
}

}  // namespace d2k::audit
