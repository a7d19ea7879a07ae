#include "agent/batch_template.h"

#include <fmt/core.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

namespace d2k::agent {

namespace fs = std::filesystem;

const std::vector<std::string>& builtin_placeholders() {
  static const std::vector<std::string> names = {"workspace", "instruction", "instruction_text", "model",
                                                 "max_turns", "wall_s",      "task",             "track",
                                                 "level",     "attempt",     "run"};
  return names;
}

AgentTemplate parse_template(const std::string& text, const std::string& name, const std::string& file) {
  toml::table tbl;
  try {
    tbl = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(fmt::format("{}:{}:{}: {}", file, e.source().begin.line, e.source().begin.column,
                                         e.description()));
  }
  AgentTemplate t;
  t.name = name;
  t.description = tbl["description"].value_or(std::string());
  const toml::array* cmd = tbl["command"].as_array();
  if (!cmd || cmd->empty())
    throw std::runtime_error(fmt::format("{}: command: required, a non-empty array of strings", file));
  for (const auto& el : *cmd) {
    auto s = el.value<std::string>();
    if (!s) throw std::runtime_error(fmt::format("{}: command: every element must be a string", file));
    t.command.push_back(*s);
  }
  if (t.command.front().empty()) throw std::runtime_error(fmt::format("{}: command[0]: empty program name", file));
  t.stdin_file = tbl["stdin"].value_or(std::string());
  t.turns_marker = tbl["turns_marker"].value_or(std::string());
  if (const toml::table* env = tbl["env"].as_table())
    for (const auto& [k, v] : *env) {
      auto s = v.value<std::string>();
      if (!s) throw std::runtime_error(fmt::format("{}: env.{}: must be a string", file, std::string(k.str())));
      t.env[std::string(k.str())] = *s;
    }
  for (const auto& [k, v] : tbl) {
    const std::string key(k.str());
    if (key != "description" && key != "command" && key != "stdin" && key != "turns_marker" && key != "env")
      throw std::runtime_error(
          fmt::format("{}: {}: unknown field (description, command, stdin, env, turns_marker)", file, key));
  }
  return t;
}

AgentTemplate load_template(const std::string& name_or_path, const fs::path& templates_dir) {
  fs::path file = name_or_path;
  if (file.extension() != ".toml") file = templates_dir / (name_or_path + ".toml");
  std::ifstream f(file);
  if (!f) {
    std::string known;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(templates_dir, ec))
      if (e.path().extension() == ".toml") known += (known.empty() ? "" : ", ") + e.path().stem().string();
    throw std::runtime_error(fmt::format("--agent {}: no template {} (templates in {}: {})", name_or_path,
                                         file.string(), templates_dir.string(), known.empty() ? "none" : known));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_template(ss.str(), file.stem().string(), file.string());
}

nlohmann::json to_json(const AgentTemplate& t) {
  return {{"name", t.name},   {"description", t.description}, {"command", t.command},
          {"stdin", t.stdin_file}, {"env", t.env},            {"turns_marker", t.turns_marker}};
}

AgentTemplate template_from_json(const nlohmann::json& j) {
  AgentTemplate t;
  t.name = j.value("name", "");
  t.description = j.value("description", "");
  t.command = j.at("command").get<std::vector<std::string>>();
  t.stdin_file = j.value("stdin", "");
  t.env = j.value("env", std::map<std::string, std::string>{});
  t.turns_marker = j.value("turns_marker", "");
  return t;
}

std::string expand(const std::string& s, const std::map<std::string, std::string>& vars, const std::string& where) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "{{") == 0 || s.compare(i, 2, "}}") == 0) {
      out += s[i++];
      continue;
    }
    if (s[i] != '{') {
      out += s[i];
      continue;
    }
    const auto close = s.find('}', i);
    if (close == std::string::npos) throw std::runtime_error(fmt::format("{}: unclosed '{{' in \"{}\"", where, s));
    const std::string name = s.substr(i + 1, close - i - 1);
    auto it = vars.find(name);
    if (it == vars.end())
      throw std::runtime_error(fmt::format("{}: unknown placeholder {{{}}} in \"{}\" (give it with --var {}=VALUE)",
                                           where, name, s, name));
    out += it->second;
    i = close;
  }
  return out;
}

void check_template(const AgentTemplate& t, const std::map<std::string, std::string>& vars) {
  const std::string where = fmt::format("agent template {}", t.name);
  for (const auto& a : t.command) expand(a, vars, where + ": command");
  expand(t.stdin_file, vars, where + ": stdin");
  for (const auto& [k, v] : t.env) expand(v, vars, where + ": env." + k);
}

}  // namespace d2k::agent
