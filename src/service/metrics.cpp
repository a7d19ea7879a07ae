#include "service/metrics.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <limits>
#include <sstream>

namespace d2k::service {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric gauge(double v, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = v;
  return m;
}

ClientMetric counter(double v, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = v;
  return m;
}

}  // namespace

std::string metrics_text(const QueueStats& q, const ApiCounters& api) {
  std::vector<MetricFamily> f;
  auto state = [&](const char* s) {
    auto it = q.by_state.find(s);
    return it == q.by_state.end() ? 0.0 : double(it->second);
  };
  f.push_back({"d2k_queue_depth", "Evaluations waiting for a worker", MetricType::Gauge, {gauge(state("queued"))}});
  MetricFamily jobs{"d2k_jobs", "Evaluations by state", MetricType::Gauge, {}};
  for (const char* s : {"queued", "running", "done"}) jobs.metric.push_back(gauge(state(s), {{"state", s}}));
  f.push_back(jobs);
  MetricFamily verdicts{"d2k_jobs_done_total", "Finished evaluations by verdict", MetricType::Counter, {}};
  for (auto& [v, n] : q.by_verdict) verdicts.metric.push_back(counter(double(n), {{"verdict", v}}));
  f.push_back(verdicts);
  MetricFamily busy{"d2k_worker_busy", "Evaluations running per worker (one worker per GPU)", MetricType::Gauge, {}};
  for (auto& [w, n] : q.running_by_worker) busy.metric.push_back(gauge(double(n), {{"worker", w}}));
  f.push_back(busy);
  f.push_back({"d2k_retries_total", "Attempts beyond the first (a worker lost its lease)", MetricType::Counter,
               {counter(double(q.retries))}});
  f.push_back({"d2k_rejected_total", "Submissions refused by this API process (4xx)", MetricType::Counter,
               {counter(double(api.rejected))}});
  ClientMetric h;
  h.histogram.sample_count = std::uint64_t(q.eval_count);
  h.histogram.sample_sum = q.eval_sum_s;
  for (std::size_t i = 0; i < q.bucket_bounds.size(); ++i)
    h.histogram.bucket.push_back({std::uint64_t(q.bucket_counts[i]), q.bucket_bounds[i]});
  h.histogram.bucket.push_back({std::uint64_t(q.eval_count), std::numeric_limits<double>::infinity()});
  f.push_back({"d2k_evaluation_seconds", "Claim to result, per finished evaluation", MetricType::Histogram, {h}});
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, f);
  return os.str();
}

}  // namespace d2k::service
