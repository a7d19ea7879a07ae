// The cutlass track: CUDA C++ with the CUTLASS and CuTe headers (header-only templates compiled
// into the solution; nothing is linked beyond what every nvcc compile links).
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "tracks/registered.h"

namespace d2k::tracks_detail {

namespace {
namespace fs = std::filesystem;

/// Where the CUTLASS/CuTe headers are: $D2K_CUTLASS_INCLUDE_DIR, else `cutlass-include/` beside
/// the d2k binary (a packed or installed build on another machine), else the build's own copy.
fs::path cutlass_include_dir() {
  if (const char* env = std::getenv("D2K_CUTLASS_INCLUDE_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "cutlass-include";
  if (!ec && fs::exists(beside / "cutlass" / "version.h", ec)) return beside;
  return D2K_CUTLASS_INCLUDE_DIR;
}

class CutlassTrack final : public Track {
 public:
  std::string_view name() const override { return "cutlass"; }
  std::string_view summary() const override { return "CUDA C++ with the CUTLASS/CuTe headers (nvcc, sm_90a)"; }
  TrackSpec default_spec() const override { return TrackSpec{{"cutlass"}, {}, false}; }
  std::vector<std::string> known_headers() const override { return {"cutlass"}; }

  CompileOptions compile_options(const TrackSpec& spec) const override {
    CompileOptions co = Track::compile_options(spec);
    // The CUTLASS tree holds cute/ beside cutlass/; its version header stands for both in the
    // compile cache's key.
    for (const std::string& h : spec.headers)
      if (h == "cutlass") co.system_headers.push_back({cutlass_include_dir(), "cutlass/version.h"});
    // CUTLASS's SM90 TMA collectives encode their tensor maps with cuTensorMapEncodeTiled. By
    // default cutlass/cuda_host_adapter.hpp looks it up through cudaGetDriverEntryPoint, which the
    // symbol check refuses (dynamic_loading); with this define it calls the encoder directly, an
    // import the check allows (tensor_map_driver_functions(), docs/isolation.md).
    co.extra_flags.push_back("-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1");
    return co;
  }
};
}  // namespace

const Track& cutlass_track() {
  static const CutlassTrack t;
  return t;
}

}  // namespace d2k::tracks_detail
