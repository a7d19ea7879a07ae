#include "pack/pack.h"

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/diagnostics.h"
#include "core/task.h"
#include "core/task_loader.h"
#include "exec/tree_digest.h"

namespace d2k::pack {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read", p.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ordered_json parse_json_file(const fs::path& p) {
  try {
    return ordered_json::parse(read_file(p));
  } catch (const ordered_json::parse_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", p.string(), e.what()));
  }
}

ordered_json parse_jsonl_file(const fs::path& p) {
  ordered_json rows = ordered_json::array();
  std::istringstream in(read_file(p));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      rows.push_back(ordered_json::parse(line));
    } catch (const ordered_json::parse_error& e) {
      throw std::runtime_error(fmt::format("{}:{}: {}", p.string(), n, e.what()));
    }
  }
  return rows;
}

/// A JSON string of `j`; text that is not UTF-8 is an error naming `what`.
std::string dump(const ordered_json& j, const std::string& what) {
  try {
    return j.dump();
  } catch (const ordered_json::type_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace

std::string dataset_version(const fs::path& dataset) {
  Sha256 h;
  update_tree(h, dataset);
  return h.hex_digest().substr(0, 16);
}

ordered_json task_row(const fs::path& task_dir, std::string_view framework, const std::string& version) {
  const std::string task = task_dir.filename().string();
  const fs::path starter_dir = task_dir / "starter" / std::string(framework);
  if (!fs::is_directory(starter_dir)) throw std::runtime_error(fmt::format("{}: no such folder", starter_dir.string()));
  const ordered_json def = parse_json_file(task_dir / "definition.json");
  const ordered_json design = parse_json_file(task_dir / "design.json");
  ordered_json starter = ordered_json::object();
  for (const auto& rel : tree_files(starter_dir)) starter[rel.generic_string()] = read_file(starter_dir / rel);

  ordered_json row;
  row["task_id"] = task + "__" + std::string(framework);
  row["op_type"] = def.value("op_type", "");
  row["description"] = def.value("description", "");
  row["spec"] = read_file(task_dir / "spec.md");
  row["starter"] = dump(starter, starter_dir.string());
  for (std::size_t i = 0; i < kDesignLevelKeys.size(); ++i) {
    const std::string key(kDesignLevelKeys[i]);
    if (!design.contains(key)) throw std::runtime_error(fmt::format("{}: no {}", (task_dir / "design.json").string(), key));
    row[fmt::format("design_level_{}", i + 1)] = dump(design[key], (task_dir / "design.json").string());
  }
  row["rubric"] = dump(parse_json_file(task_dir / "rubric.json"), (task_dir / "rubric.json").string());
  row["workloads"] = dump(parse_jsonl_file(task_dir / "workloads.jsonl"), (task_dir / "workloads.jsonl").string());
  row["definition"] = dump(def, (task_dir / "definition.json").string());
  row["dataset_version"] = version;
  // The row and kColumns are one definition: a column added to one and not the other fails here.
  std::size_t i = 0;
  for (const auto& [k, v] : row.items())
    if (i >= kColumns.size() || k != kColumns[i++])
      throw std::logic_error(fmt::format("pack row column '{}' out of step with kColumns", k));
  return row;
}

std::vector<PackedTable> pack(const fs::path& dataset, const fs::path& out, const std::vector<std::string>& only) {
  Diagnostics diag;
  const DesignLevels levels = load_design_levels(dataset / "design_levels.json", diag);
  std::vector<Task> tasks = load_dataset(dataset, diag);
  for (const auto& name : only)
    if (std::none_of(tasks.begin(), tasks.end(), [&](const Task& t) { return t.dir.filename() == name; }))
      throw std::runtime_error(fmt::format("--tasks: no task '{}' in {}", name, dataset.string()));
  if (!only.empty())
    std::erase_if(tasks, [&](const Task& t) {
      return std::find(only.begin(), only.end(), t.dir.filename().string()) == only.end();
    });
  for (const Task& t : tasks) validate_task(t, levels, diag);
  if (!diag.ok()) throw std::runtime_error("the dataset does not validate; nothing packed:\n" + diag.format());

  const std::string version = dataset_version(dataset);
  fs::create_directories(out);
  std::vector<PackedTable> written;
  for (std::string_view fw : kFrameworks) {
    PackedTable table{std::string(fw), out / fmt::format("frontier_sol_{}.jsonl", fw), 0};
    std::string text;
    for (const Task& t : tasks)
      if (fs::is_directory(t.dir / "starter" / std::string(fw))) {
        text += task_row(t.dir, fw, version).dump() + "\n";
        ++table.rows;
      }
    // Written whole then renamed, so a reader never sees half a table.
    const fs::path tmp = table.jsonl.string() + ".tmp";
    std::ofstream(tmp, std::ios::binary) << text;
    fs::rename(tmp, table.jsonl);
    written.push_back(table);
  }
  return written;
}

}  // namespace d2k::pack
