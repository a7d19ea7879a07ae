// Design items against the machine code: built / not built, and whether a kernel that ran holds it.
#include "capability/evidence.h"

#include <cxxabi.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/cupti_timer.h"

namespace d2k::capability {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

// The audit names a kernel demangled (the timer's CUPTI records), maybe cut to its base name; the
// listing has it mangled. Two names are one kernel when the raw, the demangled or the base names
// (no return type, no argument list: measure::function_base_name) agree.
bool same_kernel(const std::string& listed, const std::string& ran) {
  if (listed == ran) return true;
  const std::string d = demangle(listed);
  return d == ran || measure::function_base_name(d) == measure::function_base_name(ran);
}

std::vector<std::string> matching(const std::map<std::string, std::int64_t>& ops, const std::vector<std::string>& prefixes) {
  std::vector<std::string> out;
  for (const auto& [op, n] : ops)
    for (const auto& p : prefixes)
      if (opcode_matches(op, p)) {
        out.push_back(fmt::format("{} x{}", op, n));
        break;
      }
  return out;
}

}  // namespace

std::optional<std::vector<std::string>> kernels_that_ran(const fs::path& check_json) {
  std::ifstream in(check_json);
  if (!in) return std::nullopt;
  std::set<std::string> solution, any;
  std::string line;
  while (std::getline(in, line)) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    auto perf = j.find("performance");
    if (perf == j.end() || !perf->is_object()) continue;
    auto k = perf->find("kernels");
    if (k == perf->end() || !k->is_array()) continue;
    const bool is_solution = j.value("target", "") == "solution";
    for (const auto& name : *k) {
      if (!name.is_string()) continue;
      any.insert(name.get<std::string>());
      if (is_solution) solution.insert(name.get<std::string>());
    }
  }
  const auto& pick = solution.empty() ? any : solution;
  if (pick.empty()) return std::nullopt;
  return std::vector<std::string>(pick.begin(), pick.end());
}

std::vector<ItemEvidence> collect_evidence(const Design& design, const std::optional<SassListing>& listing,
                                           const std::optional<std::vector<std::string>>& ran) {
  std::vector<ItemEvidence> out;
  for (int l = 0; l < 3; ++l) {
    for (const DesignItem& it : design.level[l]) {
      if (it.evidence.sass.empty() && it.evidence.sass_absent.empty()) continue;
      ItemEvidence e;
      e.id = it.id;
      e.level = l + 1;
      e.sass = it.evidence.sass;
      e.sass_absent = it.evidence.sass_absent;
      if (listing) {
        e.found = matching(listing->total, e.sass);
        e.forbidden = matching(listing->total, e.sass_absent);
        const bool present = e.sass.empty() || !e.found.empty();
        e.status = present && e.forbidden.empty() ? "built" : "not_built";
        if (ran && e.status == "built" && !e.sass.empty()) {
          for (const auto& k : listing->kernels) {
            if (matching(k.opcodes, e.sass).empty()) continue;
            for (const auto& r : *ran)
              if (same_kernel(k.name, r)) {
                e.ran_in.push_back(k.name);
                break;
              }
          }
          e.ran = !e.ran_in.empty();
        }
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

std::string evidence_for_prompt(const std::vector<ItemEvidence>& items, int level, const std::string& unavailable_reason) {
  std::string out;
  for (const auto& e : items) {
    if (e.level != level) continue;
    std::string sig;
    if (!e.sass.empty()) sig += fmt::format("one of {}", fmt::join(e.sass, ", "));
    if (!e.sass_absent.empty()) sig += fmt::format("{}none of {}", sig.empty() ? "" : "; ", fmt::join(e.sass_absent, ", "));
    std::string what;
    if (e.status == "unknown") what = "unknown (" + (unavailable_reason.empty() ? "no machine code" : unavailable_reason) + ")";
    else if (e.status == "built") what = "present in the built library" + (e.found.empty() ? "" : ": " + fmt::format("{}", fmt::join(e.found, ", ")));
    else {
      what = "NOT present in the built library";
      if (e.found.empty() && !e.sass.empty()) what += fmt::format(" (no {})", fmt::join(e.sass, " or "));
      if (!e.forbidden.empty()) what += fmt::format(" (found {})", fmt::join(e.forbidden, ", "));
    }
    if (e.ran) what += *e.ran ? "; executed by a kernel the audit saw run" : "; not in any kernel the audit saw run";
    out += fmt::format("- {} [SASS: {}]: {}\n", e.id, sig, what);
  }
  if (out.empty()) out = "(no design item of this level has a machine-code signature)\n";
  return out;
}

json to_json(const ItemEvidence& e) {
  json j{{"id", e.id}, {"level", e.level}, {"status", e.status}, {"found", e.found}, {"forbidden", e.forbidden}};
  if (!e.sass.empty()) j["sass"] = e.sass;
  if (!e.sass_absent.empty()) j["sass_absent"] = e.sass_absent;
  j["ran"] = e.ran ? json(*e.ran) : json(nullptr);
  if (!e.ran_in.empty()) j["ran_in"] = e.ran_in;
  return j;
}

json histogram_json(const SassListing& l) {
  std::map<std::string, std::int64_t> mnemonic;
  for (const auto& [op, n] : l.total) mnemonic[op.substr(0, op.find('.'))] += n;
  json kernels = json::array();
  for (const auto& k : l.kernels) {
    std::int64_t n = 0;
    for (const auto& [op, c] : k.opcodes) n += c;
    kernels.push_back({{"name", k.name}, {"instructions", n}});
  }
  return {{"kernels", kernels}, {"mnemonics", mnemonic}, {"opcodes", l.total}};
}

}  // namespace d2k::capability
