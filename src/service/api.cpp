// Routes of `d2k serve`. Each handler authenticates, reads or writes the queue in one call and
// answers JSON; every refusal is an ApiError rendered as {"code", "message"}.
#include "service/api.h"

#include <fmt/core.h>
#include <httplib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include <sys/socket.h>

#include "service/auth.h"
#include "service/codec.h"
#include "service/metrics.h"

namespace d2k::service {

namespace fs = std::filesystem;
using nlohmann::json;

struct ApiServer::State {
  RateLimiter rate;
  std::mutex mu;
  ApiCounters counters;
  std::atomic<bool> stopping{false};
};

namespace {

/// httplib listens with a backlog of 5 (fixed when the library was built): fifty clients
/// connecting at once lose SYNs and wait a second for the retransmit. Linux takes a second
/// listen() on the socket as a new backlog.
struct ListeningServer : httplib::Server {
  void widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }
};

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.http, e.body());
  if (e.http == 429) res.set_header("Retry-After", "1");
}

/// A job as a client sees it; the result (traces, exit code) once it is done.
json job_view(const JobRow& r) {
  json spec = json::parse(r.spec_json, nullptr, false);
  json j = {{"id", r.id},
            {"state", r.state},
            {"verdict", r.verdict},
            {"attempts", r.attempts},
            {"max_attempts", r.max_attempts},
            {"progress", r.progress},
            {"created_at", r.created_at},
            {"started_at", r.started_at},
            {"finished_at", r.finished_at}};
  if (spec.is_object()) {
    for (const char* k : {"task", "track", "targets"})
      if (spec.contains(k)) j[k] = spec[k];
  }
  if (r.result_json) {
    json res = json::parse(*r.result_json, nullptr, false);
    j["result"] = res.is_discarded() ? json(*r.result_json) : res;
  }
  return j;
}

/// The spec from a JSON body or a multipart form (a part "request" with the JSON, one part
/// "file" per file, its filename the path inside the solution folder).
JobSpec parse_submission(const httplib::Request& req, const Limits& lim) {
  if (req.body.size() > lim.max_body_bytes)
    throw ApiError(413, "PAYLOAD_TOO_LARGE", fmt::format("body: more than {} bytes", lim.max_body_bytes));
  if (!req.is_multipart_form_data()) {
    const std::string ct = req.get_header_value("Content-Type");
    if (!ct.empty() && ct.rfind("application/json", 0) != 0)
      throw ApiError(415, "UNSUPPORTED_MEDIA_TYPE",
                     fmt::format("Content-Type: '{}' (application/json or multipart/form-data)", ct.substr(0, 64)));
    return spec_from_json_body(req.body, lim);
  }
  json meta = json::object();
  std::size_t n_request = 0;
  for (auto& [name, part] : req.files) {
    if (name == "request") {
      if (++n_request > 1) throw ApiError(400, "INVALID_FIELD", "request: given twice");
      meta = json::parse(part.content, nullptr, false);
      if (meta.is_discarded()) throw ApiError(400, "INVALID_JSON", "request: the part is not valid JSON");
    } else if (name != "file") {
      throw ApiError(400, "UNKNOWN_FIELD", fmt::format("{}: unknown part (request, file)", name.substr(0, 64)));
    }
  }
  JobSpec s = spec_from_json(meta, lim, /*files_base64=*/false);
  std::size_t total = 0;
  for (auto& [name, part] : req.files) {
    if (name != "file") continue;
    const std::string field = fmt::format("file[\"{}\"]", part.filename.substr(0, 64));
    check_file_name(part.filename, lim, field);
    if (s.files.size() >= lim.max_files) throw ApiError(413, "TOO_MANY_FILES", fmt::format("file: at most {}", lim.max_files));
    if (part.content.size() > lim.max_file_bytes) throw ApiError(413, "FILE_TOO_LARGE", field + ": too large");
    if ((total += part.content.size()) > lim.max_total_file_bytes)
      throw ApiError(413, "FILES_TOO_LARGE", fmt::format("file: more than {} bytes in all", lim.max_total_file_bytes));
    if (!s.files.emplace(part.filename, part.content).second) throw ApiError(400, "INVALID_FIELD", field + ": given twice");
  }
  if (std::find(s.targets.begin(), s.targets.end(), "solution") != s.targets.end() && s.files.empty())
    throw ApiError(400, "MISSING_FIELD", "file: the target 'solution' needs the solution's files");
  return s;
}

/// Tasks of the dataset: folders holding a definition.json, with the tracks they have starters for.
json task_list(const std::string& dataset) {
  json out = json::array();
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (auto& e : fs::directory_iterator(dataset, ec))
    if (e.is_directory() && fs::is_regular_file(e.path() / "definition.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (auto& d : dirs) {
    json tracks = json::array();
    for (auto& e : fs::directory_iterator(d / "starter", ec))
      if (e.is_directory()) tracks.push_back(e.path().filename().string());
    out.push_back({{"name", d.filename().string()}, {"tracks", tracks}});
  }
  return out;
}

}  // namespace

ApiServer::ApiServer(Store& store, ServerConfig cfg)
    : store_(store), cfg_(std::move(cfg)), http_(std::make_unique<ListeningServer>()), st_(std::make_unique<State>()) {
  const int threads = cfg_.threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  // httplib refuses a larger Content-Length with 413 before reading the body.
  http_->set_payload_max_length(cfg_.limits.max_body_bytes);
  http_->set_read_timeout(30, 0);
  guards();
  routes();
}

ApiServer::~ApiServer() { stop(); }

int ApiServer::bind(const std::string& host, int port) {
  int bound = port;
  if (port == 0) {
    bound = http_->bind_to_any_port(host);
    if (bound <= 0) throw std::runtime_error(fmt::format("--listen {}: cannot bind", host));
  } else if (!http_->bind_to_port(host, port)) {
    throw std::runtime_error(fmt::format("--listen {}:{}: cannot bind", host, port));
  }
  static_cast<ListeningServer*>(http_.get())->widen_backlog(1024);
  return bound;
}

bool ApiServer::serve() { return http_->listen_after_bind(); }

void ApiServer::stop() {
  st_->stopping = true;
  http_->stop();
}

/// What answers when no route does: exceptions, httplib's own statuses, oversized bodies.
void ApiServer::guards() {
  // Whatever a handler did not expect (the queue unreachable, a bug) is a 500 in the same shape.
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_json(res, 500, {{"code", "INTERNAL"}, {"message", what}});
  });
  // Statuses httplib sets itself (no route, 413 on a Content-Length over the limit, 400 on a
  // malformed request line) get a JSON body too.
  http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int s = res.status;
    if (s == 413) {
      std::lock_guard lock(st_->mu);
      ++st_->counters.rejected;
      send_json(res, 413, {{"code", "PAYLOAD_TOO_LARGE"},
                           {"message", fmt::format("body: the limit is {} bytes", cfg_.limits.max_body_bytes)}});
    } else if (s == 404) {
      send_json(res, 404, {{"code", "NOT_FOUND"}, {"message", fmt::format("{}: no such route", req.path.substr(0, 128))}});
    } else {
      send_json(res, s, {{"code", s < 500 ? "BAD_REQUEST" : "INTERNAL"}, {"message", fmt::format("HTTP {}", s)}});
    }
  });

  // A declared body over the limit is refused before it is read: httplib itself would read and
  // discard all of it (a gigabyte) before answering 413.
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const std::string cl = req.get_header_value("Content-Length");
    if (cl.empty()) return httplib::Server::HandlerResponse::Unhandled;
    errno = 0;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(cl.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0' && n <= cfg_.limits.max_body_bytes) return httplib::Server::HandlerResponse::Unhandled;
    {
      std::lock_guard lock(st_->mu);
      ++st_->counters.rejected;
    }
    res.set_header("Connection", "close");
    send_json(res, 413, {{"code", "PAYLOAD_TOO_LARGE"},
                         {"message", fmt::format("Content-Length: {}, the limit is {} bytes", cl.substr(0, 32),
                                                 cfg_.limits.max_body_bytes)}});
    return httplib::Server::HandlerResponse::Handled;
  });
}

void ApiServer::routes() {
  auto guarded = [this](auto handler) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      try {
        handler(req, res);
      } catch (const ApiError& e) {
        if (e.http >= 400 && e.http < 500 && req.method == "POST") {
          std::lock_guard lock(st_->mu);
          ++st_->counters.rejected;
        }
        send_error(res, e);
      }
    };
  };
  http_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    store_.active_jobs("");  // a query that fails (500) when the queue is unreachable
    send_json(res, 200, {{"ok", true}});
  });

  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    ApiCounters c;
    {
      std::lock_guard lock(st_->mu);
      c = st_->counters;
    }
    res.set_content(metrics_text(store_.stats(), c), "text/plain; version=0.0.4");
  });

  http_->Get("/v1/tasks", guarded([this](const httplib::Request& req, httplib::Response& res) {
    authenticate(store_, req.get_header_value("Authorization"));
    send_json(res, 200, {{"tasks", task_list(cfg_.dataset)}});
  }));

  http_->Post("/v1/evaluations", guarded([this](const httplib::Request& req, httplib::Response& res) {
    const TokenRow tok = authenticate(store_, req.get_header_value("Authorization"));
    if (!st_->rate.allow(tok.hash, tok.rate_per_min))
      throw ApiError(429, "RATE_LIMITED", fmt::format("Authorization: more than {} submissions per minute", tok.rate_per_min));
    const std::string key = req.get_header_value("Idempotency-Key");
    if (key.size() > 128 || std::any_of(key.begin(), key.end(), [](char c) { return c < 0x21 || c > 0x7e; }))
      throw ApiError(400, "INVALID_FIELD", "Idempotency-Key: at most 128 printable characters");
    JobSpec spec = parse_submission(req, cfg_.limits);
    if (!cfg_.dataset.empty() && !fs::is_regular_file(fs::path(cfg_.dataset) / spec.task / "definition.json"))
      throw ApiError(404, "UNKNOWN_TASK", fmt::format("task: no task '{}' (GET /v1/tasks lists them)", spec.task));
    NewJob nj;
    nj.token_hash = tok.hash;
    nj.idempotency_key = key;
    nj.spec_json = to_json(spec).dump();
    nj.spec_sha256 = sha256_hex(nj.spec_json);
    nj.max_attempts = cfg_.max_attempts;
    nj.max_active = tok.quota;
    const SubmitOutcome out = store_.submit(nj);
    if (out.mismatch)
      throw ApiError(409, "IDEMPOTENCY_KEY_REUSED", "Idempotency-Key: already used for a different submission");
    if (out.over_quota)
      throw ApiError(429, "QUOTA_EXCEEDED", fmt::format("Authorization: {} evaluations already queued or running", tok.quota));
    res.set_header("Location", "/v1/evaluations/" + out.id);
    send_json(res, 202, {{"id", out.id}, {"state", "queued"}, {"created", out.created}});
  }));

  // A job of another token is "not found": its existence is not revealed.
  auto own_job = [this](const httplib::Request& req) {
    const TokenRow tok = authenticate(store_, req.get_header_value("Authorization"));
    const std::string id = req.matches[1];
    auto row = store_.get(id);
    if (!row || row->token_hash != tok.hash)
      throw ApiError(404, "NOT_FOUND", fmt::format("id: no evaluation '{}'", id.substr(0, 64)));
    return *row;
  };

  http_->Get(R"(/v1/evaluations/([A-Za-z0-9_]{1,64}))", guarded([this, own_job](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, job_view(own_job(req)));
  }));

  http_->Get(R"(/v1/evaluations/([A-Za-z0-9_]{1,64})/events)",
             guarded([this, own_job](const httplib::Request& req, httplib::Response& res) {
    const std::string id = own_job(req).id;
    auto last = std::make_shared<std::string>();
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [this, id, last](std::size_t, httplib::DataSink& sink) {
      // One event per change of state, attempt or progress line; the last one is `done`.
      while (!st_->stopping) {
        if (!sink.is_writable()) return false;
        auto row = store_.get(id);
        if (!row) return false;
        json v = job_view(*row);
        const bool done = row->state == "done";
        if (!done) v.erase("result");
        const std::string data = v.dump();
        if (data != *last) {
          *last = data;
          const std::string ev = fmt::format("event: {}\ndata: {}\n\n", done ? "done" : "progress", data);
          if (!sink.write(ev.data(), ev.size())) return false;
        }
        if (done) {
          sink.done();
          return true;
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(cfg_.poll_s));
      }
      return false;
    });
  }));
}

}  // namespace d2k::service
