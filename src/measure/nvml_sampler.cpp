#include "measure/nvml_sampler.h"

#include <dlfcn.h>

#include <algorithm>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nvml.h>

#include "measure/statistics.h"

namespace d2k::measure {

namespace {

// The NVML entry points used here, resolved once per process with dlopen/dlsym.
struct NvmlApi {
  bool ok = false;
  std::string status;
  nvmlReturn_t (*init)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, nvmlClockType_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, nvmlClockType_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;

  std::string err(nvmlReturn_t r) const {
    return error_string ? error_string(r) : fmt::format("NVML error {}", int(r));
  }

  static const NvmlApi& get() {
    static const NvmlApi api = load();
    return api;
  }

  static NvmlApi load() {
    NvmlApi a;
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      a.status = fmt::format("unavailable: cannot load libnvidia-ml.so.1 ({})", e ? e : "?");
      return a;
    }
    auto sym = [&](const char* name) { return dlsym(h, name); };
    a.init = reinterpret_cast<decltype(a.init)>(sym("nvmlInit_v2"));
    a.error_string = reinterpret_cast<decltype(a.error_string)>(sym("nvmlErrorString"));
    a.by_pci = reinterpret_cast<decltype(a.by_pci)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    a.clock = reinterpret_cast<decltype(a.clock)>(sym("nvmlDeviceGetClockInfo"));
    a.max_clock = reinterpret_cast<decltype(a.max_clock)>(sym("nvmlDeviceGetMaxClockInfo"));
    a.temperature = reinterpret_cast<decltype(a.temperature)>(sym("nvmlDeviceGetTemperature"));
    a.power = reinterpret_cast<decltype(a.power)>(sym("nvmlDeviceGetPowerUsage"));
    // The "clock event" name replaced "throttle" in newer drivers; take whichever exists.
    a.reasons = reinterpret_cast<decltype(a.reasons)>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
    if (!a.reasons)
      a.reasons = reinterpret_cast<decltype(a.reasons)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    a.driver = reinterpret_cast<decltype(a.driver)>(sym("nvmlSystemGetDriverVersion"));
    a.uuid = reinterpret_cast<decltype(a.uuid)>(sym("nvmlDeviceGetUUID"));
    if (!a.init || !a.by_pci || !a.clock) {
      a.status = "unavailable: libnvidia-ml.so.1 lacks nvmlInit_v2/nvmlDeviceGetHandleByPciBusId_v2/nvmlDeviceGetClockInfo";
      return a;
    }
    const nvmlReturn_t r = a.init();
    if (r != NVML_SUCCESS) {
      a.status = "unavailable: nvmlInit: " + a.err(r);
      return a;
    }
    // The library stays loaded and initialised for the life of the process.
    a.ok = true;
    a.status = "ok";
    return a;
  }
};

struct ReasonName {
  std::uint64_t bit;
  const char* name;
};
constexpr ReasonName kReasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};
// Reasons that lower clocks under load; idle, application and display settings are not throttling.
constexpr std::uint64_t kThrottleMask = 0x4 | 0x8 | 0x10 | 0x20 | 0x40 | 0x80;

}  // namespace

std::vector<std::string> clock_event_reason_names(std::uint64_t bits) {
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (const auto& r : kReasons) {
    known |= r.bit;
    if (bits & r.bit) out.emplace_back(r.name);
  }
  if (bits & ~known) out.push_back(fmt::format("unknown_0x{:x}", bits & ~known));
  return out;
}

bool is_throttle(std::uint64_t bits) { return (bits & kThrottleMask) != 0; }

void to_json(nlohmann::json& j, const ClockSummary& s) {
  j = nlohmann::json{{"available", s.available},
                     {"status", s.status},
                     {"readings", s.readings},
                     {"sm_mhz_min", s.sm_mhz_min},
                     {"sm_mhz_median", s.sm_mhz_median},
                     {"sm_mhz_max", s.sm_mhz_max},
                     {"mem_mhz_median", s.mem_mhz_median},
                     {"temp_c_max", s.temp_c_max},
                     {"power_w_median", s.power_w_median},
                     {"power_w_max", s.power_w_max},
                     {"sm_mhz_device_max", s.sm_mhz_device_max},
                     {"reasons_seen", s.reasons_seen},
                     {"reason_names", s.reason_names},
                     {"throttled", s.throttled}};
}

NvmlSampler::NvmlSampler(int cuda_device) {
  const NvmlApi& api = NvmlApi::get();
  if (!api.ok) {
    status_ = api.status;
    return;
  }
  if (cuda_device < 0 && cudaGetDevice(&cuda_device) != cudaSuccess) {
    status_ = "unavailable: no current CUDA device";
    return;
  }
  // CUDA and NVML number devices differently; the PCI bus id names the same board in both.
  char pci[64] = {};
  if (cudaDeviceGetPCIBusId(pci, sizeof pci, cuda_device) != cudaSuccess) {
    status_ = fmt::format("unavailable: cudaDeviceGetPCIBusId failed for device {}", cuda_device);
    return;
  }
  nvmlDevice_t dev{};
  const nvmlReturn_t r = api.by_pci(pci, &dev);
  if (r != NVML_SUCCESS) {
    status_ = fmt::format("unavailable: nvmlDeviceGetHandleByPciBusId({}): {}", pci, api.err(r));
    return;
  }
  device_ = dev;
  if (api.max_clock) api.max_clock(dev, NVML_CLOCK_SM, &max_sm_mhz_);
  available_ = true;
  status_ = "ok";
}

NvmlSampler::~NvmlSampler() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<NvmlReading> NvmlSampler::read_now() const {
  if (!available_) return std::nullopt;
  const NvmlApi& api = NvmlApi::get();
  auto dev = static_cast<nvmlDevice_t>(device_);
  NvmlReading r;
  r.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  api.clock(dev, NVML_CLOCK_SM, &r.sm_mhz);
  api.clock(dev, NVML_CLOCK_MEM, &r.mem_mhz);
  if (api.temperature) api.temperature(dev, NVML_TEMPERATURE_GPU, &r.temp_c);
  unsigned mw = 0;
  if (api.power && api.power(dev, &mw) == NVML_SUCCESS) r.power_w = mw / 1000.0;
  unsigned long long reasons = 0;
  if (api.reasons && api.reasons(dev, &reasons) == NVML_SUCCESS) r.reasons = reasons;
  return r;
}

void NvmlSampler::start(std::chrono::milliseconds period) {
  if (!available_) return;
  if (thread_.joinable()) stop();
  {
    std::lock_guard lk(mu_);
    readings_.clear();
    stop_ = false;
  }
  t0_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this, period] { loop(period); });
}

void NvmlSampler::loop(std::chrono::milliseconds period) {
  std::unique_lock lk(mu_);
  while (!stop_) {
    lk.unlock();
    auto r = read_now();
    lk.lock();
    if (r) readings_.push_back(*r);
    cv_.wait_for(lk, period, [this] { return stop_; });
  }
}

ClockSummary NvmlSampler::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::lock_guard lk(mu_);
  return summarize_locked();
}

ClockSummary NvmlSampler::summarize_locked() const {
  ClockSummary s;
  s.available = available_;
  s.status = status_;
  s.sm_mhz_device_max = max_sm_mhz_;
  s.readings = readings_.size();
  if (readings_.empty()) return s;
  std::vector<double> sm, mem, power;
  for (const auto& r : readings_) {
    sm.push_back(r.sm_mhz);
    mem.push_back(r.mem_mhz);
    power.push_back(r.power_w);
    s.temp_c_max = std::max(s.temp_c_max, double(r.temp_c));
    s.reasons_seen |= r.reasons;
  }
  const Summary ssm = summarize(sm), smem = summarize(mem), spw = summarize(power);
  s.sm_mhz_min = ssm.min;
  s.sm_mhz_median = ssm.median;
  s.sm_mhz_max = ssm.max;
  s.mem_mhz_median = smem.median;
  s.power_w_median = spw.median;
  s.power_w_max = spw.max;
  s.reason_names = clock_event_reason_names(s.reasons_seen);
  s.throttled = is_throttle(s.reasons_seen);
  return s;
}

std::optional<NvmlReading> NvmlSampler::latest() const {
  std::lock_guard lk(mu_);
  if (readings_.empty()) return std::nullopt;
  return readings_.back();
}

std::string NvmlSampler::driver_version() const {
  const NvmlApi& api = NvmlApi::get();
  if (!api.ok || !api.driver) return {};
  char buf[96] = {};
  return api.driver(buf, sizeof buf) == NVML_SUCCESS ? std::string(buf) : std::string();
}

std::string NvmlSampler::uuid() const {
  const NvmlApi& api = NvmlApi::get();
  if (!available_ || !api.uuid) return {};
  char buf[96] = {};
  return api.uuid(static_cast<nvmlDevice_t>(device_), buf, sizeof buf) == NVML_SUCCESS ? std::string(buf)
                                                                                     : std::string();
}

}  // namespace d2k::measure
