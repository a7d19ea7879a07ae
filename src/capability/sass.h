#pragma once
/// Machine code of a built library: `cuobjdump -sass` and its opcode histogram, per kernel and in
/// all. The disassembler comes from the nvidia-cuda-cuobjdump wheel that scripts/setup.sh unpacks
/// (the CUDA toolkit package lacks it), else the toolkit's, else PATH.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace d2k::capability {

/// One kernel's SASS opcodes: the full mnemonic with its modifiers ("LDG.E.128.CONSTANT",
/// "HGMMA.64x128x16.F32.BF16") -> count.
struct SassKernel {
  std::string name;  ///< as cuobjdump prints it (mangled)
  std::map<std::string, std::int64_t> opcodes;
};

struct SassListing {
  std::vector<SassKernel> kernels;
  std::map<std::string, std::int64_t> total;  ///< summed over kernels
};

/// Parses `cuobjdump -sass` output. Predicates (@P0, @!UPT) are not part of the opcode.
SassListing parse_sass(std::string_view text);

/// True when `opcode` is `prefix` or starts with `prefix` followed by '.' (so LDG.E.128 matches
/// LDG.E.128.CONSTANT but not LDG.E.1280, and HGMMA matches HGMMA.64x128x16.F32).
bool opcode_matches(std::string_view opcode, std::string_view prefix);

/// Count of opcodes matching `prefix` in `opcodes`.
std::int64_t count_matching(const std::map<std::string, std::int64_t>& opcodes, std::string_view prefix);

/// The cuobjdump to use: $D2K_CUOBJDUMP, the wheel's under the build's third-party folder, the
/// CUDA toolkit's (/usr/local/cuda/bin, $CUDA_HOME/bin), then PATH. nullopt when none exists.
std::optional<std::filesystem::path> find_cuobjdump();

/// The outcome of disassembling one library.
struct SassResult {
  std::optional<SassListing> listing;  ///< set when the disassembly ran and found device code
  std::string error;                   ///< why not (no tool, no device code, timeout, ...)
  std::string tool;                    ///< the cuobjdump that ran
};

/// Runs `cuobjdump -sass` on `library` (read only; the library is never loaded), with a deadline
/// and a bound on its output, so a hostile file cannot hang or exhaust the scorer.
SassResult disassemble(const std::filesystem::path& library, double timeout_s = 120);

}  // namespace d2k::capability
