#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "measure/ceilings.h"
#include "measure/error.h"

using namespace d2k::measure;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("d2k-measure-test-" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Ceilings sample(const std::string& name, const std::string& uuid, double bw) {
  Ceilings c;
  c.device = {name, uuid, "0000:18:00.0", "580.159.04"};
  c.source = "calibrated";
  c.created = "2026-11-30T10:00:00Z";
  c.copy_bw = bw;
  c.read_bw = bw * 1.07;
  c.peak = {{"bf16_tensor", 7.8e14}, {"fp32", 6.1e13}};
  c.l2_bytes = 52428800;
  c.sm_count = 132;
  c.sm_clock_mhz = 1980;
  c.details = {{"copy", {{"memcpy_Bps", bw}}}};
  return c;
}

}  // namespace

TEST(Ceilings, CacheRoundTripKeepsEveryField) {
  TempDir dir;
  const fs::path file = dir.path() / "sub" / "calibration.json";
  const Ceilings a = sample("NVIDIA H200", "GPU-aaaa", 4.3e12);
  store_ceilings(a, file);
  const auto back = load_cached_ceilings(a.device.key(), file);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->device.name, "NVIDIA H200");
  EXPECT_EQ(back->device.uuid, "GPU-aaaa");
  EXPECT_EQ(back->source, "calibrated");
  EXPECT_DOUBLE_EQ(back->copy_bw, 4.3e12);
  EXPECT_DOUBLE_EQ(back->read_bw, 4.3e12 * 1.07);
  EXPECT_DOUBLE_EQ(back->peak_of("bf16_tensor"), 7.8e14);
  EXPECT_EQ(back->l2_bytes, 52428800u);
  EXPECT_EQ(back->sm_count, 132);
  EXPECT_DOUBLE_EQ(back->details["copy"]["memcpy_Bps"].get<double>(), 4.3e12);
}

TEST(Ceilings, CacheHoldsSeveralDevicesAndReplaces) {
  TempDir dir;
  const fs::path file = dir.path() / "calibration.json";
  store_ceilings(sample("NVIDIA H200", "GPU-1", 4.3e12), file);
  store_ceilings(sample("NVIDIA H200", "GPU-2", 4.2e12), file);
  store_ceilings(sample("NVIDIA H200", "GPU-1", 4.4e12), file);  // replaces GPU-1
  EXPECT_DOUBLE_EQ(load_cached_ceilings(sample("NVIDIA H200", "GPU-1", 0).device.key(), file)->copy_bw, 4.4e12);
  EXPECT_DOUBLE_EQ(load_cached_ceilings(sample("NVIDIA H200", "GPU-2", 0).device.key(), file)->copy_bw, 4.2e12);
  EXPECT_FALSE(load_cached_ceilings("nope", file).has_value());
}

TEST(Ceilings, MissingCacheIsEmptyMalformedCacheNamesTheFile) {
  TempDir dir;
  EXPECT_FALSE(load_cached_ceilings("k", dir.path() / "absent.json").has_value());
  const fs::path bad = dir.path() / "bad.json";
  std::ofstream(bad) << "{not json";
  try {
    (void)load_cached_ceilings("k", bad);
    FAIL() << "expected measure_error";
  } catch (const measure_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos);
  }
  const fs::path nodev = dir.path() / "nodev.json";
  std::ofstream(nodev) << R"({"version": 1})";
  EXPECT_THROW((void)load_cached_ceilings("k", nodev), measure_error);
}

TEST(Ceilings, DatasheetFallbackIsLabelled) {
  TempDir dir;
  const fs::path file = dir.path() / "calibration.json";
  DeviceIdentity h200{"NVIDIA H200", "GPU-x", "0000:01:00.0", "580.159.04"};
  const Ceilings c = ceilings_for(h200, file);
  EXPECT_EQ(c.source, "datasheet");
  EXPECT_DOUBLE_EQ(c.copy_bw, 4.8e12);
  EXPECT_NEAR(c.peak_of("bf16_tensor"), 989.5e12, 1e9);
  EXPECT_NEAR(c.peak_of("fp8_tensor") / c.peak_of("bf16_tensor"), 2.0, 1e-3);
  EXPECT_NE(c.notes.find("4.3"), std::string::npos);  // says what a copy measures in practice
  for (auto unit : kUnits) EXPECT_GT(c.peak_of(unit), 0) << unit;

  DeviceIdentity h100{"NVIDIA H100 80GB HBM3", "GPU-y", "", "580"};
  const auto d = datasheet_ceilings(h100);
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(d->copy_bw, 3.35e12);
  DeviceIdentity pcie{"NVIDIA H100 PCIe", "GPU-z", "", "580"};
  EXPECT_DOUBLE_EQ(datasheet_ceilings(pcie)->copy_bw, 2.0e12);
}

TEST(Ceilings, CalibrationWinsOverDatasheet) {
  TempDir dir;
  const fs::path file = dir.path() / "calibration.json";
  const Ceilings a = sample("NVIDIA H200", "GPU-x", 4.31e12);
  store_ceilings(a, file);
  const Ceilings c = ceilings_for(a.device, file);
  EXPECT_EQ(c.source, "calibrated");
  EXPECT_DOUBLE_EQ(c.copy_bw, 4.31e12);
  // Another driver is another key: back to the datasheet.
  DeviceIdentity other = a.device;
  other.driver = "590.1";
  EXPECT_EQ(ceilings_for(other, file).source, "datasheet");
}

TEST(Ceilings, UnknownDeviceSaysToCalibrate) {
  TempDir dir;
  DeviceIdentity gpu{"Some Future GPU", "GPU-q", "", "1"};
  try {
    (void)ceilings_for(gpu, dir.path() / "calibration.json");
    FAIL() << "expected measure_error";
  } catch (const measure_error& e) {
    EXPECT_NE(std::string(e.what()).find("d2k calibrate"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Some Future GPU"), std::string::npos);
  }
}

TEST(Ceilings, CachePathFollowsEnvironment) {
  const char* old = std::getenv("D2K_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("D2K_CACHE_DIR", "/tmp/d2k-cache-test", 1);
  EXPECT_EQ(calibration_cache_path(), fs::path("/tmp/d2k-cache-test/calibration.json"));
  if (old)
    setenv("D2K_CACHE_DIR", saved.c_str(), 1);
  else
    unsetenv("D2K_CACHE_DIR");
}

TEST(Ceilings, PeakOfMissingUnitNamesIt) {
  const Ceilings c = sample("X", "GPU-1", 1e12);
  try {
    (void)c.peak_of("fp8_tensor");
    FAIL();
  } catch (const measure_error& e) {
    EXPECT_NE(std::string(e.what()).find("fp8_tensor"), std::string::npos);
  }
}
