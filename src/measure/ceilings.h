#pragma once
/// The hardware ceilings the roofline divides by: copy bandwidth and peak rates per execution
/// unit, measured by calibrate() and cached per device, or taken from a datasheet table.
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace d2k::measure {

/// Cost-model unit names (definition.json `cost.flops` keys) that ceilings carry.
inline constexpr std::string_view kUnits[] = {"bf16_tensor", "fp16_tensor", "fp8_tensor", "tf32_tensor",
                                              "fp32",        "fp64",        "int32"};

/// Which device a set of ceilings belongs to.
struct DeviceIdentity {
  std::string name;        ///< "NVIDIA H200"
  std::string uuid;        ///< "GPU-xxxxxxxx-..." (empty if unknown)
  std::string pci_bus_id;  ///< "0000:18:00.0"
  std::string driver;      ///< driver version ("580.159.04") or "cuda-driver-13000"
  /// Cache key: name | uuid (or PCI id when no uuid) | driver.
  std::string key() const;
};

/// Bytes of output write-back left after the end of a streaming kernel of `write_bytes` writes.
struct DeferredWrite {
  double write_bytes = 0;
  double deferred_bytes = 0;
};

/// Ceilings of one device.
struct Ceilings {
  DeviceIdentity device;
  std::string source;   ///< "calibrated" or "datasheet"
  std::string created;  ///< UTC time of calibration, ISO 8601 ("" for datasheet entries)
  double copy_bw = 0;   ///< device-to-device copy bandwidth, bytes read + written per second
  double read_bw = 0;   ///< read-only kernel bandwidth, bytes/s (0 when not measured)
  double write_bw = 0;  ///< write-only kernel bandwidth, bytes/s (0 when not measured)
  /// Write rate inside a read + write stream: what a copy's written half moves at once its read
  /// half runs at read_bw, 1 / (2 / copy_bw - 1 / read_bw). 0 when not measured.
  double stream_write_bw = 0;
  /// Output write-back that lands after a streaming kernel ends (dirty lines the L2 still holds),
  /// by write size, measured with the timer's cold-L2 protocol: the memory floor does not charge
  /// these bytes (docs/measurement.md, "Memory floor"). Sorted by write_bytes.
  std::vector<DeferredWrite> deferred_writes;
  /// Peak rate per unit (kUnits), operations per second; an FMA counts as 2.
  std::map<std::string, double> peak;
  std::size_t l2_bytes = 0;
  int sm_count = 0;
  double sm_clock_mhz = 0;  ///< median SM clock during calibration (0 if unknown)
  std::string notes;
  nlohmann::json details = nlohmann::json::object();  ///< per-measurement detail (algos, times)

  /// Peak of `unit`; throws measure_error naming the unit when absent.
  double peak_of(std::string_view unit) const;
};

void to_json(nlohmann::json& j, const DeviceIdentity& d);
void from_json(const nlohmann::json& j, DeviceIdentity& d);
void to_json(nlohmann::json& j, const Ceilings& c);
void from_json(const nlohmann::json& j, Ceilings& c);

/// $D2K_CACHE_DIR/calibration.json, else $HOME/.cache/d2k/calibration.json, else
/// ./.d2k-cache/calibration.json.
std::filesystem::path calibration_cache_path();

/// Cached ceilings for `key`, if the cache file holds them. A malformed cache file throws
/// measure_error naming the file.
std::optional<Ceilings> load_cached_ceilings(const std::string& key,
                                             const std::filesystem::path& file = calibration_cache_path());
/// Adds or replaces `c` under c.device.key() in the cache file (written atomically).
void store_ceilings(const Ceilings& c, const std::filesystem::path& file = calibration_cache_path());

/// Datasheet ceilings (dense rates) for a device name, labelled source "datasheet";
/// nullopt for a device the table lacks. Known: H100 SXM, H100 PCIe, H200 SXM.
std::optional<Ceilings> datasheet_ceilings(const DeviceIdentity& device);
/// The device names the datasheet table knows.
std::vector<std::string> datasheet_devices();

/// Cached calibration for `device` if any, else its datasheet entry; throws measure_error
/// (saying to run `d2k calibrate`) when neither exists.
Ceilings ceilings_for(const DeviceIdentity& device,
                      const std::filesystem::path& file = calibration_cache_path());

}  // namespace d2k::measure
