#pragma once
/// GET /metrics: the Prometheus text exposition, read from the queue at scrape time (so it covers
/// workers on every host) and serialised by prometheus-cpp.
#include <string>

#include "service/store.h"

namespace d2k::service {

/// Counters the API process keeps itself (what never reaches the queue).
struct ApiCounters {
  std::int64_t rejected = 0;  ///< submissions refused with a 4xx
};

std::string metrics_text(const QueueStats& q, const ApiCounters& api);

}  // namespace d2k::service
