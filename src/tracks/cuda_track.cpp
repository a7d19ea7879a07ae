// The cuda track: CUDA C++ compiled by nvcc, the CUDA runtime only (no vendor libraries unless
// the task links them).
#include "tracks/registered.h"

namespace d2k::tracks_detail {

namespace {
class CudaTrack final : public Track {
 public:
  std::string_view name() const override { return "cuda"; }
  std::string_view summary() const override { return "CUDA C++ (nvcc, sm_90a), the CUDA runtime only"; }
};
}  // namespace

const Track& cuda_track() {
  static const CudaTrack t;
  return t;
}

}  // namespace d2k::tracks_detail
