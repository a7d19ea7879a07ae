#pragma once
/// The queue's tables, in the SQL both SQLite and PostgreSQL accept: the one schema of the store
/// (store.h). Times are seconds since the epoch.
namespace d2k::service {

inline constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS tokens ("
    " hash TEXT PRIMARY KEY, name TEXT NOT NULL, quota INTEGER NOT NULL, rate_per_min DOUBLE PRECISION NOT NULL)",
    // idem_key is NULL when the client sent none (NULLs never collide under UNIQUE).
    "CREATE TABLE IF NOT EXISTS jobs ("
    " id TEXT PRIMARY KEY, token_hash TEXT NOT NULL, idem_key TEXT, spec_sha256 TEXT NOT NULL, spec TEXT NOT NULL,"
    " state TEXT NOT NULL, verdict TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0,"
    " max_attempts INTEGER NOT NULL, worker TEXT NOT NULL DEFAULT '', lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,"
    " progress TEXT NOT NULL DEFAULT '', created_at DOUBLE PRECISION NOT NULL,"
    " started_at DOUBLE PRECISION NOT NULL DEFAULT 0, finished_at DOUBLE PRECISION NOT NULL DEFAULT 0,"
    " UNIQUE (token_hash, idem_key))",
    "CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, created_at)",
    // One row per job, ever: the primary key is what makes a result exactly-once.
    "CREATE TABLE IF NOT EXISTS results ("
    " job_id TEXT PRIMARY KEY REFERENCES jobs (id), attempt INTEGER NOT NULL, verdict TEXT NOT NULL,"
    " body TEXT NOT NULL, written_at DOUBLE PRECISION NOT NULL)",
};

/// Upper bounds (seconds) of the evaluation-time histogram of /metrics.
inline constexpr double kEvalBuckets[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800};

}  // namespace d2k::service
