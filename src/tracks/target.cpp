#include "tracks/target.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "core/workload.h"

namespace d2k {

namespace {
constexpr std::string_view kVariantPrefix = "expert:";

bool valid_variant(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}
}  // namespace

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names{"reference", "naive", "expert", "library"};
  return names;
}

bool is_pytorch_target(const std::string& name) { return name == "torch_eager" || name == "torch_compile"; }

bool is_builtin_name(const std::string& name) {
  if (is_pytorch_target(name)) return true;
  for (const auto& n : builtin_names())
    if (n == name) return true;
  return name.rfind(kVariantPrefix, 0) == 0 && valid_variant(std::string_view(name).substr(kVariantPrefix.size()));
}

WorkloadShape workload_shape(const Definition& def, const Workload& w) {
  return {w.uuid, resolve_axes(def, w), w.scalars};
}

nlohmann::json shapes_to_json(const std::vector<WorkloadShape>& shapes) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& s : shapes) {
    nlohmann::json e = {{"uuid", s.uuid}, {"axes", s.axes}};
    if (!s.scalars.empty()) e["scalars"] = s.scalars;
    j.push_back(std::move(e));
  }
  return j;
}

std::vector<WorkloadShape> shapes_from_json(const nlohmann::json& j) {
  if (!j.is_array()) throw std::invalid_argument("shapes: expected an array");
  std::vector<WorkloadShape> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    try {
      WorkloadShape s{j[i].at("uuid").get<std::string>(), j[i].at("axes").get<std::map<std::string, std::int64_t>>(), {}};
      if (auto it = j[i].find("scalars"); it != j[i].end()) s.scalars = it->get<std::map<std::string, double>>();
      out.push_back(std::move(s));
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(fmt::format("shapes[{}]: {}", i, e.what()));
    }
  }
  return out;
}

std::filesystem::path builtin_impl_dir() {
  if (const char* env = std::getenv("D2K_IMPL_DIR"); env && *env) return env;
  // The d2k binary lives at <build>/src/cli/d2k; implementations at <build>/impl.
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (std::filesystem::is_directory(dir / "impl")) return dir / "impl";
  }
  return std::filesystem::path(D2K_BUILD_DIR) / "impl";
}

ImplTarget builtin_target(const std::string& task, const std::string& impl) {
  if (!is_builtin_name(impl))
    throw std::invalid_argument(
        fmt::format("unknown target '{}' (reference, naive, expert, expert:<variant>, library, solution)", impl));
  ImplTarget t;
  t.name = impl;
  std::string file = impl;
  if (impl.rfind(kVariantPrefix, 0) == 0) file = "expert_" + impl.substr(kVariantPrefix.size());
  t.so = builtin_impl_dir() / task / (file + ".so");
  return t;
}

}  // namespace d2k
