#pragma once
/// GPU clocks, temperature, power and clock-event (throttle) reasons from NVML, read on a
/// background thread during a measurement. NVML is loaded with dlopen at run time, so programs
/// build and run where no driver library exists; then every reading says "unavailable".
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace d2k::measure {

/// One NVML reading.
struct NvmlReading {
  double t_s = 0;                ///< seconds since the sampler started
  unsigned sm_mhz = 0, mem_mhz = 0;
  unsigned temp_c = 0;
  double power_w = 0;
  std::uint64_t reasons = 0;     ///< nvmlClocksEventReason* bits
};

/// Summary of the readings over one measurement.
struct ClockSummary {
  bool available = false;
  std::string status;            ///< "ok" or why NVML is unavailable
  std::size_t readings = 0;
  double sm_mhz_min = 0, sm_mhz_median = 0, sm_mhz_max = 0;
  double mem_mhz_median = 0;
  double temp_c_max = 0;
  double power_w_median = 0, power_w_max = 0;
  unsigned sm_mhz_device_max = 0;   ///< the device's maximum SM clock
  std::uint64_t reasons_seen = 0;   ///< OR of every reading's reason bits
  std::vector<std::string> reason_names;
  bool throttled = false;           ///< a throttle reason (power, thermal, slowdown, sync boost) was seen
};

void to_json(nlohmann::json& j, const ClockSummary& s);

/// Names of the set bits ("gpu_idle", "sw_power_cap", "hw_slowdown", ...).
std::vector<std::string> clock_event_reason_names(std::uint64_t bits);
/// True when `bits` holds a reason that lowers clocks under load (not idle, application or
/// display clock settings).
bool is_throttle(std::uint64_t bits);

/// Reads NVML for one CUDA device (matched by PCI bus id).
class NvmlSampler {
 public:
  /// `cuda_device` -1: the current device. Never throws for a missing NVML: check available().
  explicit NvmlSampler(int cuda_device = -1);
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  bool available() const { return available_; }
  const std::string& status() const { return status_; }

  /// Starts the background thread (readings every `period`).
  void start(std::chrono::milliseconds period = std::chrono::milliseconds(10));
  /// Stops the thread and summarises the readings taken since start().
  ClockSummary stop();
  /// The most recent background reading, if any.
  std::optional<NvmlReading> latest() const;
  /// One reading now (nullopt when unavailable).
  std::optional<NvmlReading> read_now() const;

  /// Maximum SM clock (MHz), 0 when unknown.
  unsigned max_sm_mhz() const { return max_sm_mhz_; }
  /// Driver version string ("580.159.04"), empty when unknown.
  std::string driver_version() const;
  /// NVML's UUID string for the device ("GPU-..."), empty when unknown.
  std::string uuid() const;

 private:
  void loop(std::chrono::milliseconds period);
  ClockSummary summarize_locked() const;

  bool available_ = false;
  std::string status_;
  void* device_ = nullptr;  // nvmlDevice_t
  unsigned max_sm_mhz_ = 0;
  std::chrono::steady_clock::time_point t0_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::vector<NvmlReading> readings_;
};

}  // namespace d2k::measure
