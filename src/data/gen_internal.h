#pragma once
/// Host-side parsing of a GenRequest into a GenPlan; shared by generators.cpp and the device path.
#include "data/gen_plan.h"
#include "data/generators.h"

namespace d2k::data {

/// Validates `req` and digests it. Throws std::invalid_argument naming req.where and the field.
GenPlan make_gen_plan(const GenRequest& req);

/// The request that regenerates a graph_csr col_idx input's row pointer (its GenRequest::ref) as int64.
GenRequest graph_row_ptr_request(const GenRequest& req);

/// Largest group count (count - 1) ragged_offsets accepts: weights stay below 2^41 each, so
/// their sum stays below 2^63.
inline constexpr std::int64_t kMaxRaggedGroups = std::int64_t{1} << 22;

}  // namespace d2k::data
