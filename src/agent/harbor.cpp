#include "agent/harbor.h"

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <vector>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace d2k::agent {

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, const std::string& text, bool executable = false) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write", p.string()));
  f << text;
  f.close();
  if (executable)
    fs::permissions(p, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
}

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c < 0x20) out += fmt::format("\\u{:04X}", c);
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

}  // namespace

std::string render_harbor_task_toml(const Task& task, const std::string& track, const LevelInfo& level,
                                    const std::string& version) {
  // Harbor reads [task].name as org/name; the name carries track and level so that every
  // workspace is its own task.
  const std::string name = fmt::format("d2k-bench/{}__{}__{}", task.def.name, track, level.folder);
  std::string o;
  o += "schema_version = \"1.1\"\n\n";
  o += "[task]\n";
  o += "name = " + toml_string(name) + "\n";
  o += "description = " + toml_string(task.def.description) + "\n";
  std::vector<std::string> keywords = {"gpu-kernel", "cuda", task.def.op_type, track};
  std::sort(keywords.begin(), keywords.end());
  keywords.erase(std::unique(keywords.begin(), keywords.end()), keywords.end());
  std::string kw;
  for (const auto& k : keywords) kw += (kw.empty() ? "" : ", ") + toml_string(k);
  o += "keywords = [" + kw + "]\n\n";
  o += "[metadata]\n";
  o += "benchmark = \"D2K-Bench\"\n";
  o += "d2k_task = " + toml_string(task.def.name) + "\n";
  o += "d2k_track = " + toml_string(track) + "\n";
  o += "d2k_level = " + toml_string(std::string(level.name)) + "\n";
  o += "dataset_version = " + toml_string(version) + "\n";
  o += "category = \"gpu-kernel-optimization\"\n\n";
  o += "[verifier]\n";
  o += "timeout_sec = 1800.0\n";
  o += "\n";
  o += "[agent]\n";
  o += "timeout_sec = 7200.0\n\n";
  o += "[environment]\n";
  o += "build_timeout_sec = 1800.0\n";
  o += "cpus = 4\n";
  o += "memory_mb = 16384\n";
  o += "storage_mb = 20480\n";
  o += "gpus = 0\n";
  o += "allow_internet = true\n";
  // The service the workspace's check and the verifier submit to, from the host's environment.
  o += "env = { D2K_SERVER = \"${D2K_SERVER}\", D2K_TOKEN = \"${D2K_TOKEN}\" }\n";
  return o;
}

std::string render_harbor_dockerfile() {
  return R"SH(# The agent's container: d2k's client side and the workspace in /app. The container needs no GPU:
# /app/check sends the solution to the evaluation service named by D2K_SERVER (docs/service.md).
# Before building, put a d2k install tree built on Debian 12 in client/ beside this file:
#   cmake --install build/release --prefix <this folder>/client
FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates wget \
 && wget -q https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb \
 && dpkg -i cuda-keyring_1.1-1_all.deb && rm cuda-keyring_1.1-1_all.deb && apt-get update \
 && apt-get install -y --no-install-recommends cuda-cudart-13-0 cuda-cupti-13-0 libcublas-13-0 \
      libseccomp2 libfmt9 libcpp-httplib0.11 libsqlite3-0 libssl3 libprometheus-cpp-core1.0 libpqxx-6.4 \
 && rm -rf /var/lib/apt/lists/*
COPY client/ /opt/d2k/
ENV PATH=/opt/d2k/bin:/usr/local/cuda/bin:$PATH \
    LD_LIBRARY_PATH=/usr/local/cuda/lib64 \
    D2K=/opt/d2k/bin/d2k \
    D2K_CHECK_MODE=remote
COPY app/ /app/
WORKDIR /app
)SH";
}

std::string render_harbor_test_script(const std::string& task, const std::string& track) {
  return fmt::format(R"SH(#!/bin/bash
# Harbor's verifier: evaluates /app/solution with d2k itself (not the workspace's check script,
# which the agent could have edited) and writes the reward: 1 when every record passed, else 0. The traces and the table
# stay in /logs/verifier for the scorer.
set -u
mkdir -p /logs/verifier
d2k=${{D2K:-/opt/d2k/bin/d2k}}
args=(submit /app/solution --task {task} --track {track} --json /logs/verifier/check.jsonl)
if [ -n "${{D2K_TOKEN_FILE:-}}" ]; then args+=(--token-file "$D2K_TOKEN_FILE"); fi
"$d2k" "${{args[@]}}" > /logs/verifier/check.log 2>&1
rc=$?
echo "$rc" > /logs/verifier/check_exit_code
if [ "$rc" -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
exit 0
)SH",
                     fmt::arg("task", task), fmt::arg("track", track));
}

void export_harbor(const Task& task, const std::string& track, const LevelInfo& level, const std::string& version,
                   const fs::path& workspace_dir, const fs::path& dir, bool force) {
  if (fs::exists(dir)) {
    if (!force) throw std::runtime_error(fmt::format("{}: exists (--force replaces it)", dir.string()));
    fs::remove_all(dir);
  }
  fs::create_directories(dir);
  write_file(dir / "task.toml", render_harbor_task_toml(task, track, level, version));
  fs::copy_file(workspace_dir / "instruction.md", dir / "instruction.md");
  write_file(dir / "environment" / "Dockerfile", render_harbor_dockerfile());
  copy_tree(workspace_dir, dir / "environment" / "app");
}

void write_harbor_tests(const fs::path& dir) {
  const fs::path manifest = dir / "environment" / "app" / "manifest.json";
  std::ifstream f(manifest);
  if (!f) throw std::runtime_error(fmt::format("{}: no such file (not a Harbor task written by d2k workspace build --harbor)",
                                               manifest.string()));
  const auto m = nlohmann::json::parse(f, nullptr, false);
  if (!m.is_object() || !m.contains("task") || !m.contains("track"))
    throw std::runtime_error(fmt::format("{}: expected an object with task and track", manifest.string()));
  write_file(dir / "tests" / "test.sh",
             render_harbor_test_script(m["task"].get<std::string>(), m["track"].get<std::string>()), true);
}

}  // namespace d2k::agent
