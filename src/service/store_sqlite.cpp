// The queue on SQLite: WAL mode (readers never wait for the writer), synchronous=FULL (a 202 means
// the job is on disk), BEGIN IMMEDIATE for every change (writers queue on the file lock, across
// processes, for up to busy_timeout). One connection per Store, guarded by a mutex.
#include <fmt/core.h>
#include <sqlite3.h>

#include <mutex>
#include <stdexcept>

#include "service/codec.h"
#include "service/store.h"
#include "service/store_schema.h"

namespace d2k::service {

namespace {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw std::runtime_error(fmt::format("sqlite: {}: {}", sqlite3_errmsg(db), sql));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& v) { return check(sqlite3_bind_text(s_, i, v.data(), int(v.size()), SQLITE_TRANSIENT)); }
  Stmt& bind(int i, double v) { return check(sqlite3_bind_double(s_, i, v)); }
  Stmt& bind(int i, int v) { return check(sqlite3_bind_int(s_, i, v)); }
  Stmt& bind_null(int i) { return check(sqlite3_bind_null(s_, i)); }
  /// true: a row is ready.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(fmt::format("sqlite: {}", sqlite3_errmsg(db_)));
  }
  std::string text(int c) {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s_, c))) : std::string();
  }
  bool null(int c) { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  double real(int c) { return sqlite3_column_double(s_, c); }
  std::int64_t integer(int c) { return sqlite3_column_int64(s_, c); }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) throw std::runtime_error(fmt::format("sqlite: bind: {}", sqlite3_errmsg(db_)));
    return *this;
  }
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error(fmt::format("--db {}: cannot open: {}", path, msg));
    }
    sqlite3_busy_timeout(db_, 30000);
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=FULL");
    exec("PRAGMA foreign_keys=ON");
    Tx tx(*this);
    for (const char* sql : kSchema) exec(sql);
    tx.commit();
  }
  ~SqliteStore() override { sqlite3_close(db_); }

  SubmitOutcome submit(const NewJob& j) override {
    std::lock_guard lock(mu_);
    Tx tx(*this);
    SubmitOutcome out;
    if (!j.idempotency_key.empty()) {
      Stmt s(db_, "SELECT id, spec_sha256 FROM jobs WHERE token_hash = ?1 AND idem_key = ?2");
      s.bind(1, j.token_hash).bind(2, j.idempotency_key);
      if (s.step()) {
        out.id = s.text(0);
        out.mismatch = s.text(1) != j.spec_sha256;
        return out;  // rolled back: nothing changed
      }
    }
    if (j.max_active > 0) {
      Stmt s(db_, "SELECT COUNT(*) FROM jobs WHERE token_hash = ?1 AND state != 'done'");
      s.bind(1, j.token_hash).step();
      if (s.integer(0) >= j.max_active) {
        out.over_quota = true;
        return out;
      }
    }
    out.id = "ev_" + random_hex(12);
    Stmt s(db_,
           "INSERT INTO jobs (id, token_hash, idem_key, spec_sha256, spec, state, max_attempts, created_at)"
           " VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7)");
    s.bind(1, out.id).bind(2, j.token_hash).bind(4, j.spec_sha256).bind(5, j.spec_json).bind(6, j.max_attempts)
        .bind(7, now_s());
    if (j.idempotency_key.empty()) s.bind_null(3);
    else s.bind(3, j.idempotency_key);
    s.step();
    tx.commit();
    out.created = true;
    return out;
  }

  std::optional<JobRow> get(const std::string& id) override {
    std::lock_guard lock(mu_);
    Stmt s(db_,
           "SELECT j.id, j.token_hash, j.state, j.verdict, j.spec, j.progress, j.worker, j.attempts, j.max_attempts,"
           " j.created_at, j.started_at, j.finished_at, r.body FROM jobs j LEFT JOIN results r ON r.job_id = j.id"
           " WHERE j.id = ?1");
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    JobRow r;
    r.id = s.text(0), r.token_hash = s.text(1), r.state = s.text(2), r.verdict = s.text(3), r.spec_json = s.text(4);
    r.progress = s.text(5), r.worker = s.text(6);
    r.attempts = int(s.integer(7)), r.max_attempts = int(s.integer(8));
    r.created_at = s.real(9), r.started_at = s.real(10), r.finished_at = s.real(11);
    if (!s.null(12)) r.result_json = s.text(12);
    return r;
  }

  std::optional<Claim> claim(const std::string& worker, double lease_s) override {
    std::lock_guard lock(mu_);
    const double now = now_s();
    {
      // An idle worker polls: look without the write lock first, so that polling never queues
      // behind (or in front of) submissions.
      Stmt any(db_, "SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued' OR (state = 'running' AND lease_until < ?1))");
      any.bind(1, now).step();
      if (any.integer(0) == 0) return std::nullopt;
    }
    Tx tx(*this);
    reap_locked(now);
    Stmt pick(db_,
              "SELECT id, spec, attempts FROM jobs WHERE state = 'queued' OR (state = 'running' AND lease_until < ?1)"
              " ORDER BY created_at, id LIMIT 1");
    pick.bind(1, now);
    if (!pick.step()) {
      tx.commit();
      return std::nullopt;
    }
    Claim c{pick.text(0), pick.text(1), int(pick.integer(2)) + 1};
    Stmt up(db_,
            "UPDATE jobs SET state = 'running', attempts = ?2, worker = ?3, lease_until = ?4, started_at = ?5,"
            " progress = '' WHERE id = ?1");
    up.bind(1, c.id).bind(2, c.attempt).bind(3, worker).bind(4, now + lease_s).bind(5, now).step();
    tx.commit();
    return c;
  }

  bool heartbeat(const std::string& id, const std::string& worker, int attempt, double lease_s,
                 const std::string& progress) override {
    std::lock_guard lock(mu_);
    Tx tx(*this);
    Stmt s(db_,
           "UPDATE jobs SET lease_until = ?4, progress = ?5 WHERE id = ?1 AND state = 'running' AND worker = ?2"
           " AND attempts = ?3");
    s.bind(1, id).bind(2, worker).bind(3, attempt).bind(4, now_s() + lease_s).bind(5, progress).step();
    const bool held = sqlite3_changes(db_) == 1;
    tx.commit();
    return held;
  }

  bool complete(const std::string& id, const std::string& worker, int attempt, const std::string& verdict,
                const std::string& result_json) override {
    std::lock_guard lock(mu_);
    Tx tx(*this);
    const double now = now_s();
    Stmt s(db_,
           "UPDATE jobs SET state = 'done', verdict = ?4, finished_at = ?5, lease_until = 0"
           " WHERE id = ?1 AND state = 'running' AND worker = ?2 AND attempts = ?3");
    s.bind(1, id).bind(2, worker).bind(3, attempt).bind(4, verdict).bind(5, now).step();
    if (sqlite3_changes(db_) != 1) return false;  // the lease moved on: roll back, write nothing
    insert_result(id, attempt, verdict, result_json, now);
    tx.commit();
    return true;
  }

  int reap() override {
    std::lock_guard lock(mu_);
    Tx tx(*this);
    const int n = reap_locked(now_s());
    tx.commit();
    return n;
  }

  int active_jobs(const std::string& token_hash) override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "SELECT COUNT(*) FROM jobs WHERE token_hash = ?1 AND state != 'done'");
    s.bind(1, token_hash).step();
    return int(s.integer(0));
  }

  QueueStats stats() override {
    std::lock_guard lock(mu_);
    QueueStats q;
    for (Stmt s(db_, "SELECT state, COUNT(*) FROM jobs GROUP BY state"); s.step();) q.by_state[s.text(0)] = s.integer(1);
    for (Stmt s(db_, "SELECT verdict, COUNT(*) FROM jobs WHERE state = 'done' GROUP BY verdict"); s.step();)
      q.by_verdict[s.text(0)] = s.integer(1);
    for (Stmt s(db_, "SELECT worker, COUNT(*) FROM jobs WHERE state = 'running' GROUP BY worker"); s.step();)
      q.running_by_worker[s.text(0)] = s.integer(1);
    {
      Stmt s(db_, "SELECT COALESCE(SUM(attempts - 1), 0) FROM jobs WHERE attempts > 1");
      s.step();
      q.retries = s.integer(0);
    }
    {
      Stmt s(db_, "SELECT COUNT(*), COALESCE(SUM(finished_at - started_at), 0) FROM jobs WHERE state = 'done'"
                  " AND started_at > 0");
      s.step();
      q.eval_count = s.integer(0), q.eval_sum_s = s.real(1);
    }
    for (double b : kEvalBuckets) {
      Stmt s(db_, "SELECT COUNT(*) FROM jobs WHERE state = 'done' AND started_at > 0 AND finished_at - started_at <= ?1");
      s.bind(1, b).step();
      q.bucket_bounds.push_back(b);
      q.bucket_counts.push_back(s.integer(0));
    }
    return q;
  }

  void add_token(const TokenRow& t) override {
    std::lock_guard lock(mu_);
    Tx tx(*this);
    Stmt s(db_, "INSERT INTO tokens (hash, name, quota, rate_per_min) VALUES (?1, ?2, ?3, ?4)");
    s.bind(1, t.hash).bind(2, t.name).bind(3, t.quota).bind(4, t.rate_per_min).step();
    tx.commit();
  }

  std::optional<TokenRow> find_token(const std::string& hash) override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "SELECT hash, name, quota, rate_per_min FROM tokens WHERE hash = ?1");
    s.bind(1, hash);
    if (!s.step()) return std::nullopt;
    return TokenRow{s.text(0), s.text(1), int(s.integer(2)), s.real(3)};
  }

 private:
  /// BEGIN IMMEDIATE ... COMMIT; rolled back when left without commit (an exception, an early return).
  struct Tx {
    SqliteStore& st;
    bool done = false;
    explicit Tx(SqliteStore& s) : st(s) { st.exec("BEGIN IMMEDIATE"); }
    void commit() {
      st.exec("COMMIT");
      done = true;
    }
    ~Tx() {
      if (!done) sqlite3_exec(st.db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
  };

  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(fmt::format("sqlite: {}: {}", msg, sql));
    }
  }

  void insert_result(const std::string& id, int attempt, const std::string& verdict, const std::string& body, double now) {
    Stmt r(db_, "INSERT INTO results (job_id, attempt, verdict, body, written_at) VALUES (?1, ?2, ?3, ?4, ?5)");
    r.bind(1, id).bind(2, attempt).bind(3, verdict).bind(4, body).bind(5, now).step();
  }

  /// Jobs whose lease expired with no attempt left end here, each with its one result row.
  int reap_locked(double now) {
    std::vector<std::pair<std::string, int>> dead;
    {
      Stmt s(db_, "SELECT id, attempts FROM jobs WHERE state = 'running' AND lease_until < ?1 AND attempts >= max_attempts");
      s.bind(1, now);
      while (s.step()) dead.emplace_back(s.text(0), int(s.integer(1)));
    }
    for (auto& [id, attempts] : dead) {
      Stmt s(db_, "UPDATE jobs SET state = 'done', verdict = ?2, finished_at = ?3, lease_until = 0 WHERE id = ?1");
      s.bind(1, id).bind(2, std::string(kVerdictLeaseLost)).bind(3, now).step();
      const std::string body = fmt::format(
          R"({{"verdict":"{}","attempts":{},"message":"the worker running it stopped answering {} time(s) (killed, out of memory, host or GPU fault): no attempt left"}})",
          kVerdictLeaseLost, attempts, attempts);
      insert_result(id, attempts, kVerdictLeaseLost, body, now);
    }
    return int(dead.size());
  }

  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

}  // namespace

std::unique_ptr<Store> open_sqlite_store(const std::string& path) { return std::make_unique<SqliteStore>(path); }

}  // namespace d2k::service
