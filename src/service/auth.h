#pragma once
/// Bearer tokens: only their SHA-256 is stored (a copy of the database gives no access), each with
/// a quota of jobs in flight and a rate of submissions per minute.
#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "service/store.h"

namespace d2k::service {

/// A fresh token ("d2k_" and 48 hex digits from the OS's CSPRNG).
std::string new_token();
/// The token row behind an `Authorization: Bearer <token>` header; ApiError 401 UNAUTHORIZED when
/// the header is missing, malformed or names no token.
TokenRow authenticate(Store& store, const std::string& authorization);

/// Submissions per minute per token: a token bucket holding up to one minute's worth.
class RateLimiter {
 public:
  /// true: allowed (and counted). rate_per_min <= 0: no limit.
  bool allow(const std::string& token_hash, double rate_per_min);

 private:
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point at;
  };
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace d2k::service
