#pragma once
/// The durable queue: one interface, two implementations with the same schema (store_schema.h):
/// SQLite in WAL mode on one machine, PostgreSQL for several hosts. Every state change is one
/// transaction. The job life cycle (docs/service.md, "Failure model"):
///
///   queued --claim--> running --complete--> done (a result row, written once)
///                        |  lease expires (worker died): queued again via the next claim,
///                        |  attempts += 1; after max_attempts: done, RUNTIME_ERROR with the reason
///
/// A claim is a lease held by one worker for one attempt; heartbeats extend it. complete() and
/// heartbeat() name the (worker, attempt) that holds the lease and change nothing when the lease
/// has moved on, so a worker that comes back from the dead cannot write a second result.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace d2k::service {

struct NewJob {
  std::string token_hash;
  std::string idempotency_key;  ///< empty: none
  std::string spec_json;
  std::string spec_sha256;      ///< tells a retried POST from a different one under the same key
  int max_attempts = 3;
  int max_active = 0;           ///< the token's quota of jobs queued or running (0: no limit)
};

struct SubmitOutcome {
  std::string id;
  bool created = false;   ///< false: an earlier POST with the same key made it
  bool mismatch = false;  ///< the key was used for a different body (no job made)
  bool over_quota = false; ///< the token has max_active jobs in flight (no job made)
};

struct JobRow {
  std::string id, token_hash, state, verdict, spec_json, progress, worker;
  int attempts = 0, max_attempts = 0;
  double created_at = 0, started_at = 0, finished_at = 0;
  std::optional<std::string> result_json;  ///< the results row, once done
};

struct Claim {
  std::string id, spec_json;
  int attempt = 0;
};

struct TokenRow {
  std::string hash, name;
  int quota = 0;             ///< jobs queued or running at once (0: no limit)
  double rate_per_min = 0;   ///< submissions per minute (0: no limit)
};

/// What /metrics reports, read from the queue (so it covers every worker, on every host).
struct QueueStats {
  std::map<std::string, std::int64_t> by_state;    ///< queued, running, done
  std::map<std::string, std::int64_t> by_verdict;  ///< of done jobs
  std::map<std::string, std::int64_t> running_by_worker;
  std::int64_t retries = 0;                        ///< attempts beyond the first, over all jobs
  std::vector<double> bucket_bounds;               ///< evaluation seconds (le), ascending
  std::vector<std::int64_t> bucket_counts;         ///< cumulative, one per bound
  std::int64_t eval_count = 0;
  double eval_sum_s = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual SubmitOutcome submit(const NewJob& j) = 0;
  /// The job, or nullopt. Callers check the token themselves (a token sees only its jobs).
  virtual std::optional<JobRow> get(const std::string& id) = 0;
  /// The oldest queued job, or one whose lease expired, now leased to `worker` for `lease_s`.
  /// Expired jobs that have used every attempt are finished here (RUNTIME_ERROR) instead.
  virtual std::optional<Claim> claim(const std::string& worker, double lease_s) = 0;
  /// Extends the lease; false when (worker, attempt) no longer holds it (stop the job).
  virtual bool heartbeat(const std::string& id, const std::string& worker, int attempt, double lease_s,
                         const std::string& progress) = 0;
  /// Writes the result once; false (nothing written) when the lease was lost.
  virtual bool complete(const std::string& id, const std::string& worker, int attempt, const std::string& verdict,
                        const std::string& result_json) = 0;
  /// Finishes expired jobs with no attempt left; returns how many.
  virtual int reap() = 0;
  virtual int active_jobs(const std::string& token_hash) = 0;
  virtual QueueStats stats() = 0;
  virtual void add_token(const TokenRow& t) = 0;
  virtual std::optional<TokenRow> find_token(const std::string& hash) = 0;
};

/// "postgresql://..." or "postgres://...": PostgreSQL; "sqlite:PATH" or a plain path: SQLite.
std::unique_ptr<Store> open_store(const std::string& url);
std::unique_ptr<Store> open_sqlite_store(const std::string& path);
std::unique_ptr<Store> open_postgres_store(const std::string& conninfo);

/// Wall-clock seconds since the epoch (lease deadlines on one host; PostgreSQL uses its own clock).
double now_s();
/// The verdict of a job whose attempts all lost their lease.
inline constexpr const char* kVerdictLeaseLost = "RUNTIME_ERROR";

}  // namespace d2k::service
