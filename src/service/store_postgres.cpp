// The queue on PostgreSQL, for several hosts: the schema of store_schema.h, claims with
// `FOR UPDATE SKIP LOCKED` (two workers never lock the same row; a row another claim holds is
// skipped, not waited for), lease deadlines on the database's clock (hosts' clocks may differ).
#include <fmt/core.h>
#include <pqxx/pqxx>

#include <mutex>

#include "service/codec.h"
#include "service/store.h"
#include "service/store_schema.h"

namespace d2k::service {

namespace {

constexpr const char* kNow = "EXTRACT(EPOCH FROM clock_timestamp())::float8";

class PostgresStore final : public Store {
 public:
  explicit PostgresStore(const std::string& conninfo) try : c_(conninfo) {
    pqxx::work w(c_);
    w.exec("SELECT pg_advisory_xact_lock(8390)");  // concurrent first starts create the tables once
    for (const char* sql : kSchema) w.exec(sql);
    w.commit();
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("--db postgresql: {}", e.what()));
  }

  SubmitOutcome submit(const NewJob& j) override {
    std::lock_guard lock(mu_);
    pqxx::work w(c_);
    // Serialises submissions of one token, so that the quota count and the key lookup hold.
    w.exec_params("SELECT pg_advisory_xact_lock(hashtext($1))", j.token_hash);
    SubmitOutcome out;
    if (!j.idempotency_key.empty()) {
      auto r = w.exec_params("SELECT id, spec_sha256 FROM jobs WHERE token_hash = $1 AND idem_key = $2", j.token_hash,
                             j.idempotency_key);
      if (!r.empty()) {
        out.id = r[0][0].as<std::string>();
        out.mismatch = r[0][1].as<std::string>() != j.spec_sha256;
        return out;
      }
    }
    if (j.max_active > 0) {
      auto r = w.exec_params("SELECT COUNT(*) FROM jobs WHERE token_hash = $1 AND state != 'done'", j.token_hash);
      if (r[0][0].as<long>() >= j.max_active) {
        out.over_quota = true;
        return out;
      }
    }
    out.id = "ev_" + random_hex(12);
    const char* idem = j.idempotency_key.empty() ? nullptr : j.idempotency_key.c_str();
    w.exec_params(fmt::format("INSERT INTO jobs (id, token_hash, idem_key, spec_sha256, spec, state, max_attempts, "
                              "created_at) VALUES ($1, $2, $3, $4, $5, 'queued', $6, {})", kNow),
                  out.id, j.token_hash, idem, j.spec_sha256, j.spec_json, j.max_attempts);
    w.commit();
    out.created = true;
    return out;
  }

  std::optional<JobRow> get(const std::string& id) override {
    std::lock_guard lock(mu_);
    pqxx::read_transaction w(c_);
    auto r = w.exec_params(
        "SELECT j.id, j.token_hash, j.state, j.verdict, j.spec, j.progress, j.worker, j.attempts, j.max_attempts,"
        " j.created_at, j.started_at, j.finished_at, r.body FROM jobs j LEFT JOIN results r ON r.job_id = j.id"
        " WHERE j.id = $1", id);
    if (r.empty()) return std::nullopt;
    auto row = r[0];
    JobRow j;
    j.id = row[0].as<std::string>(), j.token_hash = row[1].as<std::string>(), j.state = row[2].as<std::string>();
    j.verdict = row[3].as<std::string>(), j.spec_json = row[4].as<std::string>(), j.progress = row[5].as<std::string>();
    j.worker = row[6].as<std::string>(), j.attempts = row[7].as<int>(), j.max_attempts = row[8].as<int>();
    j.created_at = row[9].as<double>(), j.started_at = row[10].as<double>(), j.finished_at = row[11].as<double>();
    if (!row[12].is_null()) j.result_json = row[12].as<std::string>();
    return j;
  }

  std::optional<Claim> claim(const std::string& worker, double lease_s) override {
    std::lock_guard lock(mu_);
    pqxx::work w(c_);
    const double now = w.exec(fmt::format("SELECT {}", kNow))[0][0].as<double>();
    reap_in(w, now);
    auto r = w.exec_params(
        "SELECT id, spec, attempts FROM jobs WHERE state = 'queued' OR (state = 'running' AND lease_until < $1)"
        " ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED", now);
    if (r.empty()) {
      w.commit();
      return std::nullopt;
    }
    Claim c{r[0][0].as<std::string>(), r[0][1].as<std::string>(), r[0][2].as<int>() + 1};
    w.exec_params("UPDATE jobs SET state = 'running', attempts = $2, worker = $3, lease_until = $4, started_at = $5,"
                  " progress = '' WHERE id = $1", c.id, c.attempt, worker, now + lease_s, now);
    w.commit();
    return c;
  }

  bool heartbeat(const std::string& id, const std::string& worker, int attempt, double lease_s,
                 const std::string& progress) override {
    std::lock_guard lock(mu_);
    pqxx::work w(c_);
    auto r = w.exec_params(fmt::format("UPDATE jobs SET lease_until = {} + $4, progress = $5 WHERE id = $1 AND "
                                       "state = 'running' AND worker = $2 AND attempts = $3", kNow),
                           id, worker, attempt, lease_s, progress);
    w.commit();
    return r.affected_rows() == 1;
  }

  bool complete(const std::string& id, const std::string& worker, int attempt, const std::string& verdict,
                const std::string& result_json) override {
    std::lock_guard lock(mu_);
    pqxx::work w(c_);
    auto r = w.exec_params(fmt::format("UPDATE jobs SET state = 'done', verdict = $4, finished_at = {}, lease_until = 0"
                                       " WHERE id = $1 AND state = 'running' AND worker = $2 AND attempts = $3", kNow),
                           id, worker, attempt, verdict);
    if (r.affected_rows() != 1) return false;  // aborted on scope exit: nothing written
    w.exec_params(fmt::format("INSERT INTO results (job_id, attempt, verdict, body, written_at) VALUES ($1, $2, $3, $4, {})",
                              kNow), id, attempt, verdict, result_json);
    w.commit();
    return true;
  }

  int reap() override {
    std::lock_guard lock(mu_);
    pqxx::work w(c_);
    const int n = reap_in(w, w.exec(fmt::format("SELECT {}", kNow))[0][0].as<double>());
    w.commit();
    return n;
  }

  int active_jobs(const std::string& token_hash) override {
    std::lock_guard lock(mu_);
    pqxx::read_transaction w(c_);
    return w.exec_params("SELECT COUNT(*) FROM jobs WHERE token_hash = $1 AND state != 'done'", token_hash)[0][0].as<int>();
  }

  QueueStats stats() override {
    std::lock_guard lock(mu_);
    pqxx::read_transaction w(c_);
    QueueStats q;
    for (auto row : w.exec("SELECT state, COUNT(*) FROM jobs GROUP BY state"))
      q.by_state[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    for (auto row : w.exec("SELECT verdict, COUNT(*) FROM jobs WHERE state = 'done' GROUP BY verdict"))
      q.by_verdict[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    for (auto row : w.exec("SELECT worker, COUNT(*) FROM jobs WHERE state = 'running' GROUP BY worker"))
      q.running_by_worker[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    q.retries = w.exec("SELECT COALESCE(SUM(attempts - 1), 0) FROM jobs WHERE attempts > 1")[0][0].as<std::int64_t>();
    auto t = w.exec("SELECT COUNT(*), COALESCE(SUM(finished_at - started_at), 0) FROM jobs WHERE state = 'done' AND started_at > 0");
    q.eval_count = t[0][0].as<std::int64_t>(), q.eval_sum_s = t[0][1].as<double>();
    for (double b : kEvalBuckets) {
      q.bucket_bounds.push_back(b);
      q.bucket_counts.push_back(w.exec_params("SELECT COUNT(*) FROM jobs WHERE state = 'done' AND started_at > 0 AND "
                                              "finished_at - started_at <= $1", b)[0][0].as<std::int64_t>());
    }
    return q;
  }

  void add_token(const TokenRow& t) override {
    std::lock_guard lock(mu_);
    pqxx::work w(c_);
    w.exec_params("INSERT INTO tokens (hash, name, quota, rate_per_min) VALUES ($1, $2, $3, $4)", t.hash, t.name, t.quota,
                  t.rate_per_min);
    w.commit();
  }

  std::optional<TokenRow> find_token(const std::string& hash) override {
    std::lock_guard lock(mu_);
    pqxx::read_transaction w(c_);
    auto r = w.exec_params("SELECT hash, name, quota, rate_per_min FROM tokens WHERE hash = $1", hash);
    if (r.empty()) return std::nullopt;
    return TokenRow{r[0][0].as<std::string>(), r[0][1].as<std::string>(), r[0][2].as<int>(), r[0][3].as<double>()};
  }

 private:
  int reap_in(pqxx::work& w, double now) {
    auto dead = w.exec_params(
        "UPDATE jobs SET state = 'done', verdict = $2, finished_at = $1, lease_until = 0 WHERE id IN ("
        " SELECT id FROM jobs WHERE state = 'running' AND lease_until < $1 AND attempts >= max_attempts"
        " FOR UPDATE SKIP LOCKED) RETURNING id, attempts", now, std::string(kVerdictLeaseLost));
    for (auto row : dead) {
      const int attempts = row[1].as<int>();
      const std::string body = fmt::format(
          R"({{"verdict":"{}","attempts":{},"message":"the worker running it stopped answering {} time(s) (killed, out of memory, host or GPU fault): no attempt left"}})",
          kVerdictLeaseLost, attempts, attempts);
      w.exec_params("INSERT INTO results (job_id, attempt, verdict, body, written_at) VALUES ($1, $2, $3, $4, $5)",
                    row[0].as<std::string>(), attempts, std::string(kVerdictLeaseLost), body, now);
    }
    return int(dead.size());
  }

  pqxx::connection c_;
  std::mutex mu_;
};

}  // namespace

std::unique_ptr<Store> open_postgres_store(const std::string& conninfo) { return std::make_unique<PostgresStore>(conninfo); }

}  // namespace d2k::service
