#pragma once
/// The tracks registry's members (one file each); only track.cpp's registry() uses these.
#include "tracks/track.h"

namespace d2k::tracks_detail {

const Track& cuda_track();
const Track& cutlass_track();
// The Triton track joins here (triton_track.cpp), and in registry().

}  // namespace d2k::tracks_detail
