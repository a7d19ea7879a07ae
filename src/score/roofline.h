#pragma once
/// Speed of light (SOL) of a workload from its cost model and the device ceilings, % of SOL,
/// the SOL score, and the physical-floor verdict. Bad inputs throw std::invalid_argument naming
/// the field or unit.
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "measure/ceilings.h"
#include "measure/memory_floor.h"

namespace d2k::score {

using measure::Ceilings;

/// A workload's cost, already evaluated: operations per unit (kUnits names) and compulsory
/// DRAM bytes (each input read once, each output written once).
struct CostInputs {
  std::map<std::string, double> flops;
  double bytes = 0;
  /// The written part of `bytes` (outputs); < 0 when unknown, and then every byte is charged at
  /// copy bandwidth.
  double write_bytes = -1;
};

/// The cost of a workload from its evaluated cost model and its tensors: the written part of
/// `bytes` is taken in the proportion of the output tensors' bytes to all tensors' bytes.
CostInputs cost_inputs(const std::map<std::string, double>& flops, double bytes, double input_tensor_bytes,
                       double output_tensor_bytes);

/// T_SOL and its terms.
struct SolTime {
  double t_sol_s = 0;                       ///< max of every term below
  double memory_s = 0;                      ///< memory_floor() of the cost's bytes
  std::string memory_model;                 ///< MemoryFloor::model
  std::map<std::string, double> compute_s;  ///< per unit: flops / peak
  std::string bound;                        ///< "memory" or the unit with the largest term
};

/// T_SOL = max(max over units of flops_u / peak_u, memory floor of the bytes). Units with zero
/// operations are ignored; a unit with operations but no ceiling, or negative/non-finite inputs,
/// throw std::invalid_argument naming the unit or field.
SolTime sol_time(const CostInputs& cost, const Ceilings& ceilings);

/// 100 * T_SOL / T. Throws for t_s <= 0.
double percent_of_sol(double t_s, double t_sol_s);

/// SOL score S = 1 / (1 + (T - T_SOL) / (T_naive - T_SOL)): 1 at SOL, 0.5 at the naive time, toward 0
/// for slower. Edge cases: T <= T_SOL gives 1 (below_sol set: see the floor check); T_naive <= T_SOL
/// (naive already at SOL: the cost model undercounts) treats T_SOL as 0, i.e. S = 1 / (1 + T / T_naive),
/// with `degenerate` set.
struct SolScore {
  double score = 0;
  bool below_sol = false;
  bool degenerate = false;
};
SolScore sol_score(double t_s, double t_sol_s, double t_naive_s);

/// Physical-floor check options.
struct FloorOptions {
  /// A time is flagged only below T_floor * (1 - margin). 0.25 covers what an honest kernel can
  /// gain over the calibrated ceilings: a read-heavy kernel beats copy bandwidth by ~5-10%, a
  /// hand-written GEMM can beat the calibrated cuBLASLt shape by a few %, clocks and CUPTI spans
  /// of microsecond kernels move by a few %; every cheat this check exists for (skipped work,
  /// cached results) is off by a factor of 2 or more.
  double margin = 0.25;
  /// Writes the L2 can hold until after the kernel ends never reach DRAM inside the timed span:
  /// the memory term of the floor uses max(0, bytes - l2_bytes) (both directions counted).
  bool discount_l2 = true;
};

/// Verdict of the physical-floor check.
struct FloorVerdict {
  bool below_floor = false;
  double t_s = 0;
  double t_sol_s = 0;     ///< plain T_SOL
  double floor_s = 0;     ///< the bound a time must not go under (margin and L2 applied)
  double ratio = 0;       ///< T / T_SOL
  std::string bound;      ///< which term set the floor
  std::string message;    ///< one line, with the numbers
};
FloorVerdict physical_floor_check(double t_s, const CostInputs& cost, const Ceilings& ceilings,
                                  const FloorOptions& opts = {});

void to_json(nlohmann::json& j, const SolTime& s);
void to_json(nlohmann::json& j, const SolScore& s);
void to_json(nlohmann::json& j, const FloorVerdict& v);

}  // namespace d2k::score
