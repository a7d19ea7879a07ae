#include "measure/cupti_timer.h"

#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "measure/kernel_origin.h"

namespace d2k::measure {

namespace {

// Activity buffers: small, recycled, and zeroed by us off the timed path. CUPTI otherwise zeroes
// every new buffer itself on the launching thread, and after each per-sample flush that stall
// (about 0.5 ms for 8 MB buffers, once per stream) landed between the call's launches.
constexpr std::size_t kBufferBytes = 1u << 20;  // ~5000 kernel records
constexpr std::size_t kPoolMax = 64;

// Never destroyed, like the collector: CUPTI may hand buffers back from its exit handler.
struct BufferPool {
  std::mutex mu;
  std::vector<std::uint8_t*> free;
};
BufferPool& pool() {
  static BufferPool* p = new BufferPool();
  return *p;
}

std::string cupti_error_text(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return fmt::format("CUPTI error {}", int(r));
  return s;
}

const char* copy_kind_name(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "other";
  }
}

}  // namespace

std::string function_base_name(const std::string& demangled) {
  std::string s = demangled.substr(0, demangled.find('('));
  // A return type in front ("void ns::f<...>"): keep what follows the last space outside <>.
  int depth = 0;
  std::size_t cut = std::string::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>') --depth;
    else if (s[i] == ' ' && depth == 0) cut = i;
  }
  if (cut != std::string::npos) s = s.substr(cut + 1);
  return s;
}

// C callbacks CUPTI calls; they forward to the singleton.
struct CuptiCallbacks {
  static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    std::uint8_t* b = nullptr;
    {
      std::lock_guard lk(pool().mu);
      if (!pool().free.empty()) {
        b = pool().free.back();
        pool().free.pop_back();
      }
    }
    // calloc: zeroed, and 16-byte aligned (CUPTI needs 8).
    if (!b) b = static_cast<std::uint8_t*>(std::calloc(1, kBufferBytes));
    *buffer = b;
    *size = b ? kBufferBytes : 0;
    *max_records = 0;  // as many as fit
  }
  static void CUPTIAPI completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size,
                                 size_t valid_size) {
    auto& c = CuptiCollector::instance();
    c.parse(buffer, valid_size);
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped) {
      std::lock_guard lk(c.mu_);
      c.dropped_ += dropped;
    }
    // Back to the pool zeroed: CUPTI was told that buffers arrive zeroed.
    std::memset(buffer, 0, valid_size);
    std::lock_guard lk(pool().mu);
    if (pool().free.size() < kPoolMax)
      pool().free.push_back(buffer);
    else
      std::free(buffer);
  }
};

CuptiCollector& CuptiCollector::instance() {
  // Never destroyed: CUPTI may deliver buffers from its own exit handler after static
  // destructors have run.
  static CuptiCollector* c = new CuptiCollector();
  return *c;
}

CuptiCollector::CuptiCollector() {
  if (const char* off = std::getenv("D2K_DISABLE_CUPTI"); off && *off && std::string(off) != "0") {
    set_unavailable("disabled by D2K_DISABLE_CUPTI");
    return;
  }
  const CUptiResult r = cuptiActivityRegisterCallbacks(&CuptiCallbacks::requested, &CuptiCallbacks::completed);
  if (r != CUPTI_SUCCESS) {
    set_unavailable("cuptiActivityRegisterCallbacks: " + cupti_error_text(r));
    return;
  }
  std::uint8_t zeroed = 1;
  std::size_t len = sizeof zeroed;
  const CUptiResult za = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &len, &zeroed);
  (void)za;  // older CUPTI lacks the attribute: it then zeroes buffers itself (slower, still correct)
  available_ = true;
  status_ = "ok";
}

void CuptiCollector::set_unavailable(std::string why) {
  available_ = false;
  status_ = std::move(why);
}

namespace {
// CONCURRENT_KERNEL (not KERNEL): records every kernel without serialising them.
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};
}  // namespace

bool CuptiCollector::enable_kinds() {
  for (CUpti_ActivityKind k : kKinds) {
    const CUptiResult r = cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) {
      set_unavailable(fmt::format("cuptiActivityEnable({}): {}", int(k), cupti_error_text(r)));
      active_ = 0;
      recording_ = false;
      return false;
    }
  }
  recording_ = true;
  return true;
}

void CuptiCollector::disable_kinds() {
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  recording_ = false;
}

void CuptiCollector::start() {
  // ctl_mu_ only: CUPTI may deliver buffers (taking mu_) from inside its own calls.
  std::lock_guard lk(ctl_mu_);
  if (!available_) return;
  if (active_++ > 0) return;
  {
    std::lock_guard plk(mu_);
    pending_.clear();
  }
  enable_kinds();
}

void CuptiCollector::stop() {
  std::lock_guard lk(ctl_mu_);
  if (!available_ || active_ == 0) return;
  if (--active_ > 0) return;
  if (recording_) disable_kinds();
}

void CuptiCollector::set_recording(bool on) {
  std::lock_guard lk(ctl_mu_);
  if (!available_ || active_ == 0 || on == recording_) return;
  if (on)
    enable_kinds();
  else
    disable_kinds();
}

std::vector<ActivityRecord> CuptiCollector::drain() {
  if (!available_) return {};
  // Forced flush: every buffer, also ones not yet full. The caller synchronised the device
  // before, so every record of work issued before the synchronisation is complete.
  const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard lk(mu_);
  if (r != CUPTI_SUCCESS) {
    set_unavailable("cuptiActivityFlushAll: " + cupti_error_text(r));
    return {};
  }
  std::vector<ActivityRecord> out;
  out.swap(pending_);
  return out;
}

std::uint64_t CuptiCollector::dropped() const {
  std::lock_guard lk(mu_);
  return dropped_;
}

std::uint64_t CuptiCollector::now() const {
  std::uint64_t t = 0;
  if (available_ && cuptiGetTimestamp(&t) == CUPTI_SUCCESS) return t;
  return 0;
}

std::optional<std::uint32_t> CuptiCollector::stream_id(CUstream_st* stream) const {
  std::uint32_t id = 0;
  if (available_ && cuptiGetStreamIdEx(nullptr, stream, 0, &id) == CUPTI_SUCCESS) return id;
  return std::nullopt;
}

void CuptiCollector::parse(std::uint8_t* buffer, std::size_t valid_size) {
  // Demangling is costly; kernel names repeat, and CUPTI keeps one name string per kernel.
  // Keyed by the name's text, not its pointer: a pointer could be reused after a module unloads.
  static thread_local std::unordered_map<std::string, std::string> demangled;
  std::vector<ActivityRecord> got;
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &rec) == CUPTI_SUCCESS) {
    ActivityRecord a;
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        a.kind = ActivityRecord::Kind::kernel;
        a.start_ns = k->start;
        a.end_ns = k->end;
        a.raw_name = k->name ? k->name : "";
        auto it = demangled.find(a.raw_name);
        if (it == demangled.end()) it = demangled.emplace(a.raw_name, demangle(a.raw_name)).first;
        a.name = it->second;
        a.stream_id = k->streamId;
        a.correlation_id = k->correlationId;
        a.device_id = k->deviceId;
        a.graph_node_id = k->graphNodeId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        a.kind = ActivityRecord::Kind::memcpy;
        a.start_ns = m->start;
        a.end_ns = m->end;
        a.name = fmt::format("[memcpy {}]", copy_kind_name(m->copyKind));
        a.stream_id = m->streamId;
        a.correlation_id = m->correlationId;
        a.device_id = m->deviceId;
        a.graph_node_id = m->graphNodeId;
        a.bytes = m->bytes;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        a.kind = ActivityRecord::Kind::memset;
        a.start_ns = m->start;
        a.end_ns = m->end;
        a.name = "[memset]";
        a.stream_id = m->streamId;
        a.correlation_id = m->correlationId;
        a.device_id = m->deviceId;
        a.graph_node_id = m->graphNodeId;
        a.bytes = m->bytes;
        break;
      }
      default:
        continue;
    }
    got.push_back(std::move(a));
  }
  std::lock_guard lk(mu_);
  for (auto& a : got) pending_.push_back(std::move(a));
}

WindowActivity analyze_window(std::span<const ActivityRecord> records, std::uint64_t t_begin_ns,
                              std::uint64_t t_end_ns, const std::vector<std::string>& exclude_first) {
  std::vector<const ActivityRecord*> in;
  WindowActivity w;
  for (const auto& r : records) {
    if (r.start_ns >= t_begin_ns && r.start_ns <= t_end_ns)
      in.push_back(&r);
    else
      ++w.excluded;
  }
  std::stable_sort(in.begin(), in.end(),
                   [](const ActivityRecord* a, const ActivityRecord* b) { return a->start_ns < b->start_ns; });
  for (const auto& name : exclude_first) {
    // The harness's names come from cudaFuncGetName; matched mangled, demangled, or by the
    // qualified function name alone, so a different spelling of the argument list cannot make
    // the harness's own kernel count as the call's.
    const std::string want_base = function_base_name(demangle(name));
    auto it = std::find_if(in.begin(), in.end(), [&](const ActivityRecord* r) {
      return r->kind == ActivityRecord::Kind::kernel &&
             (r->raw_name == name || r->name == name ||
              (!want_base.empty() && function_base_name(r->name) == want_base));
    });
    if (it != in.end()) {
      in.erase(it);
      ++w.excluded;
    }
  }
  bool first = true;
  for (const ActivityRecord* r : in) {
    if (first || r->start_ns < w.first_start_ns) w.first_start_ns = r->start_ns;
    if (first || r->end_ns > w.last_end_ns) w.last_end_ns = r->end_ns;
    auto [on_stream, fresh] = w.last_end_by_stream.try_emplace(r->stream_id, r->end_ns, r->name);
    if (!fresh && r->end_ns > on_stream->second.first) on_stream->second = {r->end_ns, r->name};
    first = false;
    w.names.push_back(r->name);
    w.busy.emplace_back(r->name, r->end_ns > r->start_ns ? (r->end_ns - r->start_ns) * 1e-9 : 0.0);
    switch (r->kind) {
      case ActivityRecord::Kind::kernel: ++w.kernels; break;
      case ActivityRecord::Kind::memcpy: ++w.memcpys; break;
      case ActivityRecord::Kind::memset: ++w.memsets; break;
    }
  }
  if (!in.empty() && w.last_end_ns > w.first_start_ns) w.span_s = (w.last_end_ns - w.first_start_ns) * 1e-9;
  return w;
}

JoinCheck check_join(const WindowActivity& w, std::uint64_t t_join_ns, std::uint64_t slack_ns,
                     std::optional<std::uint32_t> harness_stream) {
  JoinCheck j;
  if (w.names.empty() || t_join_ns == 0) return j;
  // The latest end off the harness stream (every stream when its id is unknown).
  std::uint64_t last = 0;
  const std::string* name = nullptr;
  for (const auto& [stream, end] : w.last_end_by_stream) {
    if (harness_stream && stream == *harness_stream) continue;
    if (!name || end.first > last) {
      last = end.first;
      name = &end.second;
    }
  }
  if (!name) return j;  // all of it on the harness stream: joined by the synchronisation
  j.late_s = (static_cast<double>(last) - static_cast<double>(t_join_ns)) * 1e-9;
  if (last > t_join_ns + slack_ns) {
    j.unjoined = true;
    j.name = *name;
  }
  return j;
}

}  // namespace d2k::measure
