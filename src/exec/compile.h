#pragma once
/// Compiles a candidate solution folder into a shared library with nvcc, in a sandbox, into a
/// content-addressed cache.
///
/// Solution folder layout (docs/isolation.md, "Submissions"):
///   solution.cu              required; the entry points live in some .cu/.cpp of the root
///   *.cu, *.cpp              every one in the folder root is compiled into the one library
///   *.h *.cuh *.hpp *.inl ... headers, in the root or in sub-folders, included relatively
///   anything else            ignored (notes, design documents)
/// Names may use letters, digits, '_', '-', '.' and '/' only, must not start with '-' or '.',
/// and may not be symbolic links. At most 256 source/header files and 16 MiB in all.
///
/// The folder is read once, through descriptors (openat with O_NOFOLLOW, checked with fstat
/// after the open), and only that copy is compiled, in a sandbox that sees nothing else of the
/// host but the toolchain and the include folders (docs/isolation.md, "The compile stage").
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "exec/sandbox.h"

namespace d2k {

/// A folder of third-party headers a track adds (nvcc -isystem DIR). Such trees are large: one
/// stamp file (a version header) stands for the whole tree in the cache key.
struct SystemHeaders {
  std::filesystem::path dir;
  std::filesystem::path stamp;  ///< relative to dir; must exist (e.g. cutlass/version.h)
};

/// How to compile.
struct CompileOptions {
  std::filesystem::path cache_dir;    ///< empty: default_compile_cache_dir()
  std::filesystem::path include_dir;  ///< empty: the project's include/ (holds d2k/solution.h)
  /// Third-party header trees the track adds (the CUTLASS/CuTe headers on the cutlass track).
  std::vector<SystemHeaders> system_headers;
  /// More include folders (-I), e.g. a vendored dlpack/ where the system has none. Their
  /// contents are part of the cache key.
  std::vector<std::filesystem::path> extra_include_dirs;
  /// Vendor libraries to link (-l<name>), for tracks that allow them: cublas, cublasLt, ...
  /// Without them an import of such a library fails to link (the library links with
  /// --no-undefined), before the symbol check even runs.
  std::vector<std::string> link_libraries;
  /// The track being compiled for (src/tracks/); only named in messages.
  std::string track;
  std::vector<std::string> extra_flags;  ///< appended to nvcc's flags (trusted callers only)
  std::string nvcc;                   ///< empty: $D2K_NVCC, else nvcc on PATH, else the build's
  double timeout_seconds = 300;       ///< nvcc's whole process group is killed after this
  bool use_cache = true;
  bool sandbox = true;                ///< run nvcc sandboxed (no network, read-only fs, nobody)
  /// Which sandbox builds the compile's root (automatic: bwrap where installed, else a mount
  /// namespace). Either shows only the toolchain, the include folders and the build folder.
  FsIsolation sandbox_fs = FsIsolation::automatic;
  /// Where the chosen sandbox cannot be built here, use a weaker one instead of failing with a
  /// harness error. Also switched on by $D2K_SANDBOX_FALLBACK=1. The result names what ran.
  bool sandbox_fallback = false;
  /// RLIMIT_AS and RLIMIT_DATA of every process of the compile. 0: $D2K_COMPILE_MEMORY_MB,
  /// else 8 GiB, 1.6 times the largest pilot's peak (docs/isolation.md, "The compile stage").
  std::uint64_t memory_limit_bytes = 0;
  std::uint64_t file_size_limit_bytes = 1ull << 30;  ///< RLIMIT_FSIZE: any one file the compile writes
  std::uint64_t max_processes = 256;                 ///< RLIMIT_NPROC (processes and threads)
  std::uint64_t max_library_bytes = 256ull << 20;    ///< a larger library is refused, not cached
  /// The compile cache's size budget: least recently used entries are removed past it.
  /// 0: $D2K_CACHE_BUDGET_MB, else 4 GiB.
  std::uint64_t cache_budget_bytes = 0;
  std::size_t log_limit_bytes = 8192;
};

/// The outcome of compile_solution.
struct CompileResult {
  /// PASSED, COMPILE_ERROR, TIMEOUT, INVALID_SUBMISSION (folder layout), or REWARD_HACK when
  /// the link failed on a vendor library the track does not link (rule "vendor_library").
  Status status = Status::COMPILE_ERROR;
  /// REWARD_HACK's rule ("vendor_library"); COMPILE_ERROR's resource limit
  /// ("resource_limit: memory", ...); else empty.
  std::string rule;
  std::filesystem::path library;      ///< the .so in the cache (valid when PASSED)
  std::string key;                    ///< the cache key (SHA-256 hex)
  bool cache_hit = false;
  std::string log;                    ///< compiler output, trimmed, paths relative to the folder
  std::string message;                ///< one line for the implementer
  std::vector<std::string> command;   ///< the nvcc command line that ran (or would have)
  double seconds = 0;
  std::string sandbox;                      ///< the sandbox nvcc ran in: bwrap, mount_namespace, none
  std::vector<std::string> sandbox_layers;  ///< layers nvcc ran under
  std::uint64_t log_bytes = 0;              ///< the compiler's whole output, before trimming
};

/// Compiles `solution_dir`. Never throws for anything the submission does; throws
/// std::runtime_error for harness faults (no nvcc, cache folder not writable, the sandbox
/// cannot be built). A compile stopped by a resource limit is COMPILE_ERROR with rule
/// "resource_limit: memory" (or "output_size", "processes", "cpu_time") and a message naming
/// the limit.
CompileResult compile_solution(const std::filesystem::path& solution_dir, const CompileOptions& opts = {});

/// A symbol the linker could not resolve that belongs to a vendor library.
struct VendorLinkFailure {
  std::string symbol;   ///< as the linker named it (version and C++ argument list removed)
  std::string library;  ///< the vendor library (a name from known_vendor_libraries())
};

/// The undefined references in a linker log (GNU ld's "undefined reference to `x'", lld's
/// "undefined symbol: x") that name a vendor library not in `linked` (known_vendor_libraries()'s
/// prefixes, longest match). The CUDA driver API (cu[A-Z]...) is not counted: every compile
/// links the driver's stub (honest Hopper code calls cuTensorMapEncodeTiled), so its functions
/// link and the symbol check judges them by name; a driver name the stub lacks stays a compile
/// error. Each symbol once, in log order.
std::vector<VendorLinkFailure> vendor_link_failures(std::string_view log, const std::vector<std::string>& linked = {});

/// The files of a solution folder, read once (the compile uses exactly these bytes).
struct SolutionFiles {
  std::vector<std::pair<std::string, std::string>> files;  ///< (relative path, content), sorted
  std::vector<std::string> sources;                         ///< root .cu/.cpp, sorted
};

/// Reads and validates the layout. Throws ExecError(INVALID_SUBMISSION) naming the problem.
/// Each file is opened relative to its folder's descriptor with O_NOFOLLOW and checked after
/// the open (a regular file, within the size cap), so swapping a file for a link while it is
/// read yields "is a symbolic link", never the link target's bytes.
SolutionFiles read_solution_files(const std::filesystem::path& solution_dir);

/// A file name as messages print it: printable ASCII as is, '\\', '\n', '\t' and "\xNN"
/// for the rest, so that a name cannot start a line of its own in a log.
std::string escape_file_name(std::string_view name);

/// The folder that holds d2k/solution.h: `explicit_dir` if set; else $D2K_INCLUDE_DIR; else
/// beside the running binary (`exe_dir`/include, as a packed build carries it, then
/// `exe_dir`/../include, as installed); else the source tree this was built from. Throws
/// std::runtime_error naming every place it looked.
std::filesystem::path solution_include_dir(const std::filesystem::path& explicit_dir = {},
                                           const std::filesystem::path& exe_dir = {});

/// Removes least recently used entries (by the mtime of their folder, refreshed on every use)
/// from `cache_dir` until its entries total at most `budget_bytes`; never removes `keep`
/// (a key). Returns the keys removed.
std::vector<std::string> evict_compile_cache(const std::filesystem::path& cache_dir, std::uint64_t budget_bytes,
                                             const std::string& keep = {});

/// nvcc's flags, with the version script's path as the token @VERSION_SCRIPT@ (the cache key
/// must not depend on where the scratch folder is).
std::vector<std::string> nvcc_flags(const CompileOptions& opts);

/// The cache key: SHA-256 over the file names and contents, the flags, the toolchain version
/// text and the contents of the include folder.
std::string compile_cache_key(const SolutionFiles& files, const std::vector<std::string>& flags,
                              std::string_view toolchain, std::string_view include_fingerprint);

/// `nvcc --version` and the host compiler's version line (cached per nvcc path).
std::string toolchain_version(const std::string& nvcc);

/// The nvcc this options object selects: opts.nvcc, $D2K_NVCC, nvcc on PATH, the build's.
std::string resolve_nvcc(const CompileOptions& opts);

/// Shortens a compiler log to at most `limit` bytes: strips the given path prefixes, cuts
/// very long lines and template-instantiation chains, keeps the first error blocks (in order)
/// before warnings, and ends with a note of what was left out. `full_bytes`: the size of the
/// whole output when `log` is only its start (0: log.size()).
std::string trim_compiler_log(std::string_view log, std::size_t limit,
                              const std::vector<std::string>& strip_prefixes = {}, std::uint64_t full_bytes = 0);

/// $D2K_CACHE_DIR/solutions, else $XDG_CACHE_HOME/d2k/solutions, else ~/.cache/d2k/solutions.
std::filesystem::path default_compile_cache_dir();

}  // namespace d2k
