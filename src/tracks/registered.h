#pragma once
/// The tracks registry's members (one file each); only track.cpp's registry() uses these.
#include "tracks/track.h"

namespace d2k::tracks_detail {

const Track& cuda_track();
const Track& cutlass_track();
const Track& triton_track();         // python_track.h: the Python tracks
const Track& torch_eager_track();
const Track& torch_compile_track();

}  // namespace d2k::tracks_detail
