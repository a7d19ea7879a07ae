#pragma once
/// Agent templates (agent/templates/<name>.toml, docs/batch.md): how to start one agent on one
/// workspace, as an argument vector with placeholders. The batch runner copies the template into
/// run.json at setup, so a run does not change when the template file does.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace d2k::agent {

struct AgentTemplate {
  std::string name, description;
  std::vector<std::string> command;          ///< argv; each element may hold placeholders
  std::string stdin_file;                    ///< a file fed to the agent's stdin (placeholders allowed); empty: /dev/null
  std::map<std::string, std::string> env;    ///< added to the agent's environment (placeholders allowed)
  std::string turns_marker;                  ///< a line of agent.log containing this counts one turn; empty: not counted
};

/// The placeholders every attempt defines: workspace, instruction, instruction_text, model,
/// max_turns, wall_s, task, track, level, attempt, run. Template variables (`--var k=v`) add more.
const std::vector<std::string>& builtin_placeholders();

/// `name_or_path` is a template name (<templates_dir>/<name>.toml) or a path to a .toml file.
/// Throws std::runtime_error naming the file and the field on a bad template.
AgentTemplate load_template(const std::string& name_or_path, const std::filesystem::path& templates_dir);
/// Parses a template from TOML text (`file` names it in errors).
AgentTemplate parse_template(const std::string& toml_text, const std::string& name, const std::string& file);

nlohmann::json to_json(const AgentTemplate& t);
AgentTemplate template_from_json(const nlohmann::json& j);

/// Replaces every {name} in `s` by vars[name]; `{{` and `}}` are literal braces. Throws
/// std::runtime_error naming `where` and the placeholder when a name has no value.
std::string expand(const std::string& s, const std::map<std::string, std::string>& vars, const std::string& where);

/// Expands every field once with placeholder values, so that a template naming an unknown
/// placeholder fails at setup, not at the first attempt.
void check_template(const AgentTemplate& t, const std::map<std::string, std::string>& vars);

}  // namespace d2k::agent
