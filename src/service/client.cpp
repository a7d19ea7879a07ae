#include "service/client.h"

#include <fmt/core.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "report/trace.h"
#include "score/suite.h"
#include "service/codec.h"
#include "service/verdict.h"

namespace d2k::service {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

httplib::Headers auth_headers(const SubmitOptions& o) { return {{"Authorization", "Bearer " + o.token}}; }

httplib::Client make_client(const SubmitOptions& o) {
  httplib::Client c(o.server);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(60, 0);
  c.set_write_timeout(60, 0);
  return c;
}

[[noreturn]] void throw_refusal(const httplib::Result& r, const std::string& what) {
  json body = json::parse(r->body, nullptr, false);
  if (body.is_object() && body.contains("code"))
    throw ApiError(r->status, body.value("code", ""), body.value("message", ""));
  throw ApiError(r->status, "HTTP_" + std::to_string(r->status), fmt::format("{}: HTTP {}", what, r->status));
}

}  // namespace

std::map<std::string, std::string> read_solution_dir(const std::string& dir, const Limits& lim) {
  std::map<std::string, std::string> files;
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("{}: not a folder", dir));
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), dir).generic_string();
    if (it->path().filename().string().front() == '.') {  // .git, editor files: not part of a solution
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    check_file_name(rel, lim, fmt::format("{}/{}", dir, rel));
    std::ifstream f(it->path(), std::ios::binary);
    files[rel] = std::string(std::istreambuf_iterator<char>(f), {});
  }
  return files;
}

std::string submit_evaluation(const SubmitOptions& o) {
  const std::string key = o.idempotency_key.empty() ? random_hex(16) : o.idempotency_key;
  auto headers = auth_headers(o);
  headers.emplace("Idempotency-Key", key);
  const std::string body = to_json(o.spec).dump();
  auto cli = make_client(o);
  for (int attempt = 0;; ++attempt) {
    auto r = cli.Post("/v1/evaluations", headers, body, "application/json");
    if (r && r->status == 202) return json::parse(r->body).at("id").get<std::string>();
    if (r && r->status != 503 && r->status != 429) throw_refusal(r, "POST /v1/evaluations");
    if (attempt >= o.connect_retries) {
      if (r) throw_refusal(r, "POST /v1/evaluations");
      // A server refuses a body over its limit from the Content-Length and closes; a client
      // still writing sees a broken connection, not the 413: name the size so the cause shows.
      throw NoAnswer(fmt::format("{}: no answer ({}) to a {}-byte body; a body over the server's limit "
                                 "(16 MiB unless configured) is refused before it is read",
                                 o.server, httplib::to_string(r.error()), body.size()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200 * (1 << std::min(attempt, 4))));
  }
}

json wait_evaluation(const SubmitOptions& o, const std::string& id,
                     const std::function<void(const std::string&)>& progress) {
  auto cli = make_client(o);
  const auto t0 = std::chrono::steady_clock::now();
  std::string last;
  int misses = 0;
  for (;;) {
    auto r = cli.Get("/v1/evaluations/" + id, auth_headers(o));
    if (r && r->status == 200) {
      misses = 0;
      json v = json::parse(r->body);
      if (v.value("state", "") == "done") return v;
      const std::string line = fmt::format("{} {} (attempt {}) {}", id, v.value("state", ""), v.value("attempts", 0),
                                           v.value("progress", ""));
      if (line != last) progress(last = line);
    } else if (r && r->status != 503) {
      throw_refusal(r, "GET /v1/evaluations/" + id);
    } else if (++misses > 120) {  // the server restarts: keep asking for a minute or so
      throw NoAnswer(fmt::format("{}: no answer while waiting for {}", o.server, id));
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > o.timeout_s)
      throw std::runtime_error(fmt::format("{}: not done after {} s (--timeout)", id, o.timeout_s));
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
}

int submit_main(const SubmitOptions& o_in, bool quiet) {
  SubmitOptions o = o_in;
  if (!o.dir.empty()) o.spec.files = read_solution_dir(o.dir, Limits{});
  const auto t0 = std::chrono::steady_clock::now();
  const std::string id = submit_evaluation(o);
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  json v = wait_evaluation(o, id, [&](const std::string& line) {
    if (quiet) return;
    if (tty) std::cerr << "\r\033[K" << line.substr(0, 160) << std::flush;
    else std::cerr << line << '\n';
  });
  if (!quiet && tty) std::cerr << "\r\033[K" << std::flush;
  const json& result = v.contains("result") ? v["result"] : json::object();
  std::vector<Trace> traces;
  if (result.contains("traces"))
    for (auto& t : result["traces"]) traces.push_back(trace_from_json(t));
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out);
    if (!f) throw std::runtime_error("--json: cannot write " + o.json_out);
    for (auto& t : traces) f << to_json(t).dump() << "\n";
  }
  // The same table and summary as `d2k bench`.
  std::cout << format_table(traces, TableFormat::text);
  std::map<std::string, SuiteSummary> by_target;
  for (auto& t : traces) by_target[t.target];
  for (auto& [name, s] : by_target) s = summarize(traces, name);
  const bool timed = std::any_of(traces.begin(), traces.end(), [](const Trace& t) { return t.performance.has_value(); });
  if (timed) std::cout << "\n" << format_summary(by_target, TableFormat::text);
  const std::string verdict = v.value("verdict", "");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(stderr, "d2k submit: {} {} after {:.1f} s ({} attempt(s))\n", id, verdict, wall, v.value("attempts", 0));
  if (verdict != "PASSED" && result.contains("message")) fmt::print(stderr, "d2k submit: {}\n", result.value("message", ""));
  if ((verdict == "ERROR" || verdict == "RUNTIME_ERROR") && result.contains("log_tail"))
    fmt::print(stderr, "d2k submit: the evaluator's log ends with:\n{}\n", result.value("log_tail", ""));
  return exit_for_verdict(verdict);
}

}  // namespace d2k::service
