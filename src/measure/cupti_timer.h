#pragma once
/// CUPTI activity collection: every kernel, memcpy and memset the process runs on the GPU, on any
/// stream, with device timestamps. One collector per process (CUPTI's activity buffers are global).
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

namespace d2k::measure {

/// One GPU activity as CUPTI reported it.
struct ActivityRecord {
  enum class Kind { kernel, memcpy, memset };
  Kind kind = Kind::kernel;
  std::uint64_t start_ns = 0, end_ns = 0;  ///< CUPTI timestamps (same clock as CuptiCollector::now)
  std::string name;       ///< demangled kernel name, or "[memcpy DtoD]" / "[memset]"
  std::string raw_name;   ///< the kernel's mangled name as reported (empty for copies)
  std::uint32_t stream_id = 0, correlation_id = 0, device_id = 0;
  std::uint64_t graph_node_id = 0;  ///< 0 unless launched from a graph
  std::uint64_t bytes = 0;          ///< memcpy/memset size
};

/// What one timed sample ran, from the records that started inside its window.
struct WindowActivity {
  double span_s = 0;              ///< last end - first start over every counted activity; 0 if none
  std::uint64_t first_start_ns = 0, last_end_ns = 0;
  /// Per CUPTI stream id: the latest end of a counted activity on it, and that activity's name.
  std::map<std::uint32_t, std::pair<std::uint64_t, std::string>> last_end_by_stream;
  std::vector<std::string> names; ///< counted activities' names in start order
  std::size_t kernels = 0, memcpys = 0, memsets = 0;
  std::size_t excluded = 0;       ///< records dropped by `exclude_first` or outside the window
  /// Per activity: name and busy time (end - start) in seconds, in start order.
  std::vector<std::pair<std::string, double>> busy;
};

/// Counts the records whose start lies in [t_begin_ns, t_end_ns]; for each name in
/// `exclude_first`, the earliest kernel record with that raw (or demangled) name is left out (the harness's own
/// blocking kernel or in-graph flush kernels). Pure function, for the timer and for tests.
WindowActivity analyze_window(std::span<const ActivityRecord> records, std::uint64_t t_begin_ns,
                              std::uint64_t t_end_ns, const std::vector<std::string>& exclude_first);

/// The qualified function name of a demangled kernel name: no return type, no argument list
/// ("void ns::k<int>(float*)" -> "ns::k<int>").
std::string function_base_name(const std::string& demangled);

/// Whether a sample's work was all joined onto the harness stream.
struct JoinCheck {
  bool unjoined = false;  ///< some counted activity ended after the join timestamp (+ slack)
  double late_s = 0;      ///< last end minus the join timestamp (negative: ended before it)
  std::string name;       ///< the activity that ended last, when unjoined
};

/// `t_join_ns`: the CUPTI timestamp taken right after cudaStreamSynchronize(harness stream)
/// returned. Work the call joined onto that stream ended before it; anything that ends later
/// (by more than `slack_ns`, for timestamp conversion) ran on a stream the call left unjoined.
/// `harness_stream`: CUPTI's id of the harness stream, when known. Its own records are left out:
/// the synchronisation returned after them by definition, so a late end there is a timestamp
/// artifact, not unjoined work (only other streams' work can be left unjoined).
JoinCheck check_join(const WindowActivity& w, std::uint64_t t_join_ns, std::uint64_t slack_ns,
                     std::optional<std::uint32_t> harness_stream = std::nullopt);

/// Process-wide CUPTI activity collector. Thread-safe.
class CuptiCollector {
 public:
  /// The collector; CUPTI is initialised on first use. Never throws: check available().
  static CuptiCollector& instance();

  /// True when CUPTI initialised and activity records can be collected.
  bool available() const { return available_; }
  /// "ok", or why CUPTI is unavailable (the CUPTI error text).
  const std::string& status() const { return status_; }

  /// Enables kernel/memcpy/memset activity recording. Nested calls are counted.
  void start();
  /// Disables recording when the last start() is matched.
  void stop();
  /// Between start() and stop(): pauses (false) or resumes (true) recording. Kernels launched
  /// while paused are not instrumented by CUPTI and leave no records.
  void set_recording(bool on);
  /// Delivers every completed record and returns the ones delivered since the last drain.
  /// Call after a device synchronisation to get everything that ran before it.
  std::vector<ActivityRecord> drain();
  /// Records CUPTI reported as dropped (buffer overflow) since the process started.
  std::uint64_t dropped() const;

  /// Current CUPTI timestamp in ns (0 when unavailable).
  std::uint64_t now() const;
  /// CUPTI's id of `stream` (what its records carry as stream_id), when CUPTI can tell.
  std::optional<std::uint32_t> stream_id(CUstream_st* stream) const;

  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

 private:
  CuptiCollector();
  friend struct CuptiCallbacks;
  void parse(std::uint8_t* buffer, std::size_t valid_size);
  void set_unavailable(std::string why);
  bool enable_kinds();   ///< under ctl_mu_
  void disable_kinds();  ///< under ctl_mu_

  bool available_ = false;
  std::string status_;
  mutable std::mutex mu_;      ///< guards pending_ and dropped_
  std::mutex ctl_mu_;          ///< guards active_
  std::vector<ActivityRecord> pending_;
  int active_ = 0;
  bool recording_ = false;     ///< the activity kinds are enabled (guarded by ctl_mu_)
  std::uint64_t dropped_ = 0;
};

}  // namespace d2k::measure
