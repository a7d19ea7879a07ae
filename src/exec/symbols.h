#pragma once
/// Reads the dynamic symbol table of a shared library the way the dynamic loader does (through
/// PT_DYNAMIC, not the section headers, which a loader ignores) and checks it against a policy:
/// which symbols a solution may export and which it may import.
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"

namespace d2k {

/// One dynamic symbol.
struct ElfSymbol {
  std::string name;
  std::string version;  ///< symbol version (GLIBC_2.2.5, libcudart.so.13, ...); empty if none
  std::string library;  ///< imports with a version requirement: the DT_NEEDED file it names
  bool defined = false;
  bool weak = false;    ///< STB_WEAK
  bool unique = false;  ///< STB_GNU_UNIQUE (vague-linkage statics of inline functions)
  unsigned type = 0;    ///< STT_FUNC, STT_OBJECT, ...
};

/// What the dynamic section of a library says.
struct DynamicInfo {
  std::vector<ElfSymbol> exports;   ///< defined, non-local, default or protected visibility
  std::vector<ElfSymbol> imports;   ///< undefined, non-local
  std::vector<std::string> needed;  ///< DT_NEEDED entries, in order
  std::string soname;               ///< DT_SONAME, if any
  std::vector<std::string> runpath; ///< DT_RPATH and DT_RUNPATH entries
  bool has_textrel = false;         ///< DT_TEXTREL: text relocations (code patched at load)
};

/// Parses an ELF64 little-endian shared object. Throws ExecError(INVALID_SUBMISSION) naming
/// the file and what is malformed (not ELF, not 64-bit, not a shared object, truncated table).
DynamicInfo read_dynamic_info(const std::filesystem::path& so);

/// A named group of forbidden symbols.
struct SymbolRule {
  std::string name;                   ///< rule id reported with each violation, e.g. "timing"
  std::vector<std::string> patterns;  ///< fnmatch(3) globs on the symbol name (no @version)
  std::string message;                ///< why the rule exists, shown to the implementer
};

/// A vendor library a track may allow: its symbol prefixes and its DT_NEEDED names.
struct VendorLibrary {
  std::string name;                   ///< cublas, cublasLt, cudnn, ...
  std::vector<std::string> prefixes;  ///< symbol prefixes (longest match attributes a symbol)
  std::vector<std::string> needed;    ///< globs on DT_NEEDED, e.g. "libcublas.so*"
};

/// The vendor libraries the checker knows (CUDA math libraries, NCCL, NVRTC, the driver API).
const std::vector<VendorLibrary>& known_vendor_libraries();

/// The driver-API functions that only build or describe a tensor map (a TMA descriptor) on the
/// host: the encoders, cuTensorMapReplaceAddress and the error-text look-ups. Each reads host
/// memory and writes into the caller's buffer (a CUtensorMap is 128 bytes); none can launch,
/// allocate, synchronise or time anything. Honest Hopper TMA code needs one (CUTLASS's SM90
/// collectives, cute::make_tma_copy), so the cuda and cutlass tracks allow these imports, and
/// libcuda.so.1 as a DT_NEEDED library when these are all that is imported from it.
/// cuda.h (CUDA 12 and 13) declares them without versioned aliases (no _v2 names).
const std::vector<std::string>& tensor_map_driver_functions();

/// What a library may export and import.
struct SymbolPolicy {
  /// Exported names allowed (globs). The three ABI entry points; each must be present.
  std::vector<std::string> allowed_exports{"d2k_abi_version", "d2k_workspace_size", "d2k_run"};
  std::vector<std::string> required_exports{"d2k_abi_version", "d2k_workspace_size", "d2k_run"};
  /// Tolerate weak or unique exports of std:: / __gnu_cxx:: template instantiations. g++ gives
  /// them default visibility whatever -fvisibility says; d2k's own compile hides them with a
  /// version script, so only CMake-built (trusted) implementations need this.
  bool allow_weak_std_exports = false;
  std::vector<SymbolRule> forbidden_imports;
  /// Vendor libraries (names from known_vendor_libraries()) this track may call.
  std::vector<std::string> allowed_libraries;
  /// Globs on DT_NEEDED always allowed (C/C++ runtime, the CUDA runtime).
  std::vector<std::string> allowed_needed{"libcudart.so*", "libstdc++.so*", "libgcc_s.so*",
                                          "libc.so*",      "libm.so*",      "ld-linux-x86-64.so*"};
  bool allow_runpath = false;

  /// The policy for untrusted candidates (the cuda and cutlass tracks): every rule of
  /// default_forbidden_imports(), the tensor-map functions of the driver API, and the given
  /// vendor libraries allowed (empty for the plain CUDA track).
  static SymbolPolicy candidate(std::vector<std::string> allowed_libraries = {});
  /// The policy for the suite's own implementations built by CMake: weak std:: exports
  /// tolerated, every vendor library allowed, the same forbidden imports and tensor-map
  /// allowance.
  static SymbolPolicy trusted();
};

/// The default forbidden-import rules: timing, profiler, dynamic_loading, memory_protection,
/// tracing, processes, threads, host_callback, signals, network, file_access, cuda_context,
/// l2_persistence, cuda_ipc. docs/isolation.md gives the reason for each.
std::vector<SymbolRule> default_forbidden_imports();

/// One broken rule.
struct SymbolViolation {
  std::string symbol;   ///< symbol (or DT_NEEDED / runpath entry) that broke it
  std::string rule;     ///< rule id: a forbidden-import rule, vendor_library, extra_export,
                        ///< allocator_override, interposition, missing_entry_point,
                        ///< needed_library, runpath, text_relocation
  std::string message;  ///< one line for the implementer
};

/// The result of check_symbols.
struct SymbolReport {
  DynamicInfo info;
  std::vector<SymbolViolation> violations;
  bool ok() const { return violations.empty(); }
  /// PASSED, or INVALID_SUBMISSION when any rule is broken (caught before anything runs).
  Status status() const { return ok() ? Status::PASSED : Status::INVALID_SUBMISSION; }
  /// All violations, one per line: "rule: symbol: message".
  std::string summary() const;
};

/// Reads `so` and checks it against `policy`. Throws ExecError(INVALID_SUBMISSION) if the file
/// is not a readable ELF64 shared object.
SymbolReport check_symbols(const std::filesystem::path& so, const SymbolPolicy& policy);

}  // namespace d2k
