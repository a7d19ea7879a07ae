#include "exec/tree_digest.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace d2k {

namespace fs = std::filesystem;

namespace {

bool hidden_or_cache(const fs::path& rel) {
  for (const auto& part : rel)
    if (part.string().starts_with(".") || part == "__pycache__") return true;
  return false;
}

}  // namespace

std::vector<fs::path> tree_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) {
      fs::path rel = fs::relative(e.path(), dir);
      if (!hidden_or_cache(rel)) out.push_back(rel);
    }
  std::sort(out.begin(), out.end());
  return out;
}

void update_tree(Sha256& h, const fs::path& dir, std::string_view prefix) {
  for (const auto& rel : tree_files(dir)) {
    std::ifstream in(dir / rel, std::ios::binary);
    if (!in) throw std::runtime_error((dir / rel).string() + ": cannot read");
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    h.update_field(std::string(prefix) + rel.generic_string());
    h.update_field(bytes);
  }
}

}  // namespace d2k
