// Prompt templates from files, {{placeholder}} substitution, and the balanced anchor order.
#include "capability/prompt.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/task.h"

namespace d2k::capability {

namespace fs = std::filesystem;

fs::path prompts_dir(const fs::path& explicit_dir) {
  fs::path dir = explicit_dir;
  if (dir.empty()) {
    if (const char* env = std::getenv("D2K_PROMPTS_DIR"); env && *env) dir = env;
  }
  // An installed tree: <prefix>/bin/d2k beside <prefix>/share/d2k/prompts (CMakeLists.txt).
  if (dir.empty()) {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    const fs::path installed = self.parent_path().parent_path() / "share" / "d2k" / "prompts";
    if (!ec && fs::is_regular_file(installed / "design_level.md", ec)) dir = installed;
  }
#ifdef D2K_SOURCE_DIR
  if (dir.empty()) dir = fs::path(D2K_SOURCE_DIR) / "capability" / "prompts";
#endif
  if (dir.empty() || !fs::is_regular_file(dir / "design_level.md"))
    throw std::runtime_error(fmt::format("no prompt templates in '{}' (give --prompts DIR or set D2K_PROMPTS_DIR to "
                                         "the checkout's capability/prompts)",
                                         dir.string()));
  return dir;
}

std::string load_template(const fs::path& dir, std::string_view name) {
  const fs::path file = dir / (std::string(name) + ".md");
  std::ifstream in(file);
  if (!in) throw std::runtime_error(fmt::format("cannot read prompt template {}", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string render_template(std::string_view tmpl, const std::map<std::string, std::string>& vars, std::string_view what) {
  std::string out;
  out.reserve(tmpl.size());
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = tmpl.find("{{", pos);
    if (open == std::string_view::npos) break;
    const std::size_t close = tmpl.find("}}", open + 2);
    if (close == std::string_view::npos)
      throw std::runtime_error(fmt::format("prompt template {}: '{{{{' without '}}}}'", what));
    const std::string key(tmpl.substr(open + 2, close - open - 2));
    auto it = vars.find(key);
    if (it == vars.end()) throw std::runtime_error(fmt::format("prompt template {}: no value for {{{{{}}}}}", what, key));
    out.append(tmpl.substr(pos, open - pos));
    out += it->second;
    pos = close + 2;
  }
  out.append(tmpl.substr(pos));
  return out;
}

int AnchorOrder::position_of(int s) const {
  for (int p = 0; p < 5; ++p)
    if (score[p] == s) return p;
  return -1;
}

AnchorOrder balanced_order(int index) {
  const int i = ((index % 10) + 10) % 10;
  const int shift = i % 5;
  const bool descending = i >= 5;
  AnchorOrder o{};
  for (int p = 0; p < 5; ++p) {
    const int k = (p + shift) % 5;
    o.score[p] = kRubricAnchors[descending ? 4 - k : k];
  }
  return o;
}

std::string render_anchors(const std::map<int, std::string>& anchors, const AnchorOrder& order) {
  std::string out;
  for (int s : order.score) {
    auto it = anchors.find(s);
    out += fmt::format("- score {}: {}\n", s, it == anchors.end() ? std::string("(no anchor text)") : it->second);
  }
  return out;
}

}  // namespace d2k::capability
