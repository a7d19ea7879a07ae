#include "service/auth.h"

#include <algorithm>

#include "service/api_error.h"
#include "service/codec.h"

namespace d2k::service {

std::string new_token() { return "d2k_" + random_hex(24); }

TokenRow authenticate(Store& store, const std::string& authorization) {
  static const std::string prefix = "Bearer ";
  if (authorization.empty())
    throw ApiError(401, "UNAUTHORIZED", "Authorization: missing (send 'Authorization: Bearer <token>')");
  if (authorization.rfind(prefix, 0) != 0 || authorization.size() == prefix.size() || authorization.size() > 512)
    throw ApiError(401, "UNAUTHORIZED", "Authorization: expected 'Bearer <token>'");
  auto row = store.find_token(sha256_hex(authorization.substr(prefix.size())));
  if (!row) throw ApiError(401, "UNAUTHORIZED", "Authorization: unknown token");
  return *row;
}

bool RateLimiter::allow(const std::string& token_hash, double rate_per_min) {
  if (rate_per_min <= 0) return true;
  const auto now = std::chrono::steady_clock::now();
  const double capacity = std::max(1.0, rate_per_min);
  std::lock_guard lock(mu_);
  auto [it, fresh] = buckets_.try_emplace(token_hash, Bucket{capacity, now});
  Bucket& b = it->second;
  if (!fresh) {
    const double dt = std::chrono::duration<double>(now - b.at).count();
    b.tokens = std::min(capacity, b.tokens + dt * rate_per_min / 60.0);
    b.at = now;
  }
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

}  // namespace d2k::service
