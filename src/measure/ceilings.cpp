#include "measure/ceilings.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include <fmt/format.h>

#include "measure/error.h"

namespace d2k::measure {

namespace fs = std::filesystem;

std::string DeviceIdentity::key() const {
  return fmt::format("{}|{}|{}", name, uuid.empty() ? pci_bus_id : uuid, driver);
}

double Ceilings::peak_of(std::string_view unit) const {
  auto it = peak.find(std::string(unit));
  if (it == peak.end() || !(it->second > 0))
    throw measure_error(fmt::format("ceilings for '{}' ({}) have no peak rate for unit '{}'",
                                    device.name, source, unit));
  return it->second;
}

void to_json(nlohmann::json& j, const DeviceIdentity& d) {
  j = nlohmann::json{{"name", d.name}, {"uuid", d.uuid}, {"pci_bus_id", d.pci_bus_id}, {"driver", d.driver}};
}

void from_json(const nlohmann::json& j, DeviceIdentity& d) {
  d.name = j.at("name").get<std::string>();
  d.uuid = j.value("uuid", "");
  d.pci_bus_id = j.value("pci_bus_id", "");
  d.driver = j.value("driver", "");
}

void to_json(nlohmann::json& j, const Ceilings& c) {
  nlohmann::json deferred = nlohmann::json::array();
  for (const auto& d : c.deferred_writes)
    deferred.push_back({{"write_bytes", d.write_bytes}, {"deferred_bytes", d.deferred_bytes}});
  j = nlohmann::json{{"device", c.device},
                     {"key", c.device.key()},
                     {"source", c.source},
                     {"created", c.created},
                     {"copy_bw_Bps", c.copy_bw},
                     {"read_bw_Bps", c.read_bw},
                     {"write_bw_Bps", c.write_bw},
                     {"stream_write_bw_Bps", c.stream_write_bw},
                     {"deferred_writes", deferred},
                     {"peak_ops_per_s", c.peak},
                     {"l2_bytes", c.l2_bytes},
                     {"sm_count", c.sm_count},
                     {"sm_clock_mhz", c.sm_clock_mhz},
                     {"notes", c.notes},
                     {"details", c.details}};
}

void from_json(const nlohmann::json& j, Ceilings& c) {
  c.device = j.at("device").get<DeviceIdentity>();
  c.source = j.at("source").get<std::string>();
  c.created = j.value("created", "");
  c.copy_bw = j.at("copy_bw_Bps").get<double>();
  c.read_bw = j.value("read_bw_Bps", 0.0);
  c.write_bw = j.value("write_bw_Bps", 0.0);
  c.stream_write_bw = j.value("stream_write_bw_Bps", 0.0);
  c.deferred_writes.clear();
  for (const auto& d : j.value("deferred_writes", nlohmann::json::array()))
    c.deferred_writes.push_back({d.at("write_bytes").get<double>(), d.at("deferred_bytes").get<double>()});
  std::sort(c.deferred_writes.begin(), c.deferred_writes.end(),
            [](const DeferredWrite& a, const DeferredWrite& b) { return a.write_bytes < b.write_bytes; });
  c.peak = j.at("peak_ops_per_s").get<std::map<std::string, double>>();
  c.l2_bytes = j.value("l2_bytes", std::size_t{0});
  c.sm_count = j.value("sm_count", 0);
  c.sm_clock_mhz = j.value("sm_clock_mhz", 0.0);
  c.notes = j.value("notes", "");
  c.details = j.value("details", nlohmann::json::object());
}

fs::path calibration_cache_path() {
  if (const char* d = std::getenv("D2K_CACHE_DIR"); d && *d) return fs::path(d) / "calibration.json";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "d2k" / "calibration.json";
  return fs::path(".d2k-cache") / "calibration.json";
}

namespace {

nlohmann::json read_cache(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return nlohmann::json{{"version", 1}, {"devices", nlohmann::json::object()}};
  std::ifstream in(file);
  if (!in) throw measure_error(fmt::format("{}: cannot open calibration cache", file.string()));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw measure_error(fmt::format("{}: calibration cache is not valid JSON: {}", file.string(), e.what()));
  }
  if (!j.is_object() || !j.contains("devices") || !j["devices"].is_object())
    throw measure_error(fmt::format("{}: calibration cache lacks the object field 'devices'", file.string()));
  return j;
}

}  // namespace

std::optional<Ceilings> load_cached_ceilings(const std::string& key, const fs::path& file) {
  const nlohmann::json j = read_cache(file);
  const auto& devs = j["devices"];
  if (!devs.contains(key)) return std::nullopt;
  try {
    return devs[key].get<Ceilings>();
  } catch (const nlohmann::json::exception& e) {
    throw measure_error(fmt::format("{}: devices[\"{}\"]: {}", file.string(), key, e.what()));
  }
}

void store_ceilings(const Ceilings& c, const fs::path& file) {
  nlohmann::json j = read_cache(file);
  j["version"] = 1;
  j["devices"][c.device.key()] = c;
  std::error_code ec;
  if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
  if (ec) throw measure_error(fmt::format("{}: cannot create directory: {}", file.parent_path().string(), ec.message()));
  // Write a sibling file and rename it over the cache so a crash never leaves half a file.
  const fs::path tmp = file.string() + fmt::format(".tmp{}", static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp);
    if (!out) throw measure_error(fmt::format("{}: cannot write calibration cache", tmp.string()));
    out << j.dump(2) << "\n";
    if (!out) throw measure_error(fmt::format("{}: write failed", tmp.string()));
  }
  fs::rename(tmp, file, ec);
  if (ec) throw measure_error(fmt::format("{}: cannot replace calibration cache: {}", file.string(), ec.message()));
}

namespace {

struct DatasheetEntry {
  const char* label;
  bool (*matches)(std::string_view name);
  double bw;  // bytes/s
  double bf16, fp16, fp8, tf32, fp32, fp64, int32;  // dense, ops/s
  const char* notes;
};

bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// NVIDIA datasheet figures, dense (the datasheets print tensor rates with 2:4 sparsity; halved
// here). fp64 is the vector (non-tensor) rate. INT32 has no datasheet figure: Hopper issues
// INT32 at half the FP32 lane rate, so it is half the fp32 figure.
const DatasheetEntry kDatasheet[] = {
    {"NVIDIA H200 SXM",
     [](std::string_view n) { return has(n, "H200") && !has(n, "NVL"); },
     4.8e12, 989.5e12, 989.5e12, 1979e12, 494.5e12, 67e12, 34e12, 33.5e12,
     "H200 SXM datasheet; memory 4.8 TB/s is the datasheet figure, a device-to-device copy "
     "measures about 4.3 TB/s in practice, so % of SOL against it reads low: calibrate"},
    {"NVIDIA H100 SXM",
     [](std::string_view n) { return has(n, "H100") && (has(n, "SXM") || has(n, "HBM3")) && !has(n, "NVL"); },
     3.35e12, 989.5e12, 989.5e12, 1979e12, 494.5e12, 67e12, 34e12, 33.5e12,
     "H100 SXM5 80GB datasheet"},
    {"NVIDIA H100 PCIe",
     [](std::string_view n) { return has(n, "H100") && has(n, "PCIe"); },
     2.0e12, 756.5e12, 756.5e12, 1513e12, 378e12, 51e12, 26e12, 25.5e12,
     "H100 PCIe 80GB datasheet"},
};

}  // namespace

std::vector<std::string> datasheet_devices() {
  std::vector<std::string> out;
  for (const auto& e : kDatasheet) out.emplace_back(e.label);
  return out;
}

std::optional<Ceilings> datasheet_ceilings(const DeviceIdentity& device) {
  for (const auto& e : kDatasheet) {
    if (!e.matches(device.name)) continue;
    Ceilings c;
    c.device = device;
    c.source = "datasheet";
    c.copy_bw = e.bw;
    c.peak = {{"bf16_tensor", e.bf16}, {"fp16_tensor", e.fp16}, {"fp8_tensor", e.fp8},
              {"tf32_tensor", e.tf32}, {"fp32", e.fp32},        {"fp64", e.fp64},
              {"int32", e.int32}};
    c.l2_bytes = 50u << 20;
    c.sm_count = has(e.label, "PCIe") ? 114 : 132;
    c.notes = std::string(e.label) + ": " + e.notes;
    c.details = nlohmann::json{{"table_entry", e.label}};
    return c;
  }
  return std::nullopt;
}

Ceilings ceilings_for(const DeviceIdentity& device, const fs::path& file) {
  if (auto c = load_cached_ceilings(device.key(), file)) return *c;
  if (auto c = datasheet_ceilings(device)) return *c;
  std::string known;
  for (const auto& n : datasheet_devices()) known += (known.empty() ? "" : ", ") + n;
  throw measure_error(fmt::format(
      "no ceilings for device '{}': no calibration in {} and no datasheet entry (known: {}); "
      "run `d2k calibrate` on this device",
      device.name, file.string(), known));
}

}  // namespace d2k::measure
