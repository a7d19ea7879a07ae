#include "exec/symbols.h"

#include <elf.h>
#include <fnmatch.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "exec/error.h"

namespace d2k {

namespace {

/// The file in memory, with bounds-checked reads: a malformed table is a clear error, never
/// an out-of-bounds read.
class ElfImage {
 public:
  ElfImage(std::filesystem::path path, std::string bytes)
      : path_(std::move(path)), bytes_(std::move(bytes)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ExecError(Status::INVALID_SUBMISSION,
                    fmt::format("{}: not a valid shared library: {}", path_.string(), what));
  }

  template <class T>
  T read(std::uint64_t off, const char* what) const {
    if (off > bytes_.size() || bytes_.size() - off < sizeof(T))
      fail(fmt::format("{} at offset {} lies outside the file", what, off));
    T v;
    std::memcpy(&v, bytes_.data() + off, sizeof(T));
    return v;
  }

  /// NUL-terminated string at `off` within [base, base + size).
  std::string str(std::uint64_t base, std::uint64_t size, std::uint64_t off) const {
    if (off >= size) fail(fmt::format("string offset {} beyond the string table ({} bytes)", off, size));
    std::uint64_t begin = base + off, end = base + size;
    if (end > bytes_.size()) fail("string table extends past the end of the file");
    const char* p = bytes_.data() + begin;
    const void* nul = std::memchr(p, 0, end - begin);
    if (!nul) fail("unterminated string in the string table");
    return std::string(p, static_cast<const char*>(nul));
  }

  std::size_t size() const { return bytes_.size(); }

 private:
  std::filesystem::path path_;
  std::string bytes_;
};

struct Segment {
  std::uint64_t vaddr, offset, filesz;
};

bool glob_match(const std::string& pattern, const std::string& s) {
  return fnmatch(pattern.c_str(), s.c_str(), 0) == 0;
}

bool any_match(const std::vector<std::string>& patterns, const std::string& s) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return glob_match(p, s); });
}

}  // namespace

namespace {

/// What the loader reads of a shared object: the PT_LOAD segments (to map the dynamic section's
/// virtual addresses to file offsets), the dynamic entries and the dynamic string table.
struct DynamicView {
  explicit DynamicView(const ElfImage& image) : img(image) {}
  const ElfImage& img;
  std::vector<Segment> loads;
  std::map<std::int64_t, std::uint64_t> tags;  // single-valued tags
  std::vector<std::uint64_t> needed_off, runpath_off;
  std::uint64_t strtab = 0, strsz = 0;

  std::optional<std::uint64_t> tag(std::int64_t t) const {
    auto it = tags.find(t);
    if (it == tags.end()) return std::nullopt;
    return it->second;
  }
  std::uint64_t to_offset(std::uint64_t vaddr, const char* what) const {
    for (const Segment& s : loads)
      if (vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) return s.offset + (vaddr - s.vaddr);
    img.fail(fmt::format("{} address {:#x} is not in any loaded segment", what, vaddr));
  }
  std::string str(std::uint64_t off) const { return img.str(strtab, strsz, off); }
};

/// Phase 1: the ELF header, the program headers, the dynamic entries, the string table.
DynamicView read_dynamic_view(const ElfImage& img) {
  auto eh = img.read<Elf64_Ehdr>(0, "ELF header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) img.fail("no ELF magic");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) img.fail("not a 64-bit ELF file");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) img.fail("not little-endian");
  if (eh.e_type != ET_DYN) img.fail("not a shared object (e_type is not ET_DYN)");
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) img.fail("unexpected program header size");

  DynamicView v(img);
  std::optional<Elf64_Phdr> dynamic;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    auto ph = img.read<Elf64_Phdr>(eh.e_phoff + std::uint64_t(i) * sizeof(Elf64_Phdr), "program header");
    if (ph.p_type == PT_LOAD) v.loads.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
    if (ph.p_type == PT_DYNAMIC) dynamic = ph;
  }
  if (!dynamic) img.fail("no PT_DYNAMIC segment");

  const std::uint64_t n_dyn = dynamic->p_filesz / sizeof(Elf64_Dyn);
  for (std::uint64_t i = 0; i < n_dyn; ++i) {
    auto d = img.read<Elf64_Dyn>(dynamic->p_offset + i * sizeof(Elf64_Dyn), "dynamic entry");
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_NEEDED)
      v.needed_off.push_back(d.d_un.d_val);
    else if (d.d_tag == DT_RPATH || d.d_tag == DT_RUNPATH)
      v.runpath_off.push_back(d.d_un.d_val);
    else
      v.tags[d.d_tag] = d.d_un.d_val;
  }
  if (!v.tag(DT_STRTAB) || !v.tag(DT_STRSZ)) img.fail("no dynamic string table");
  v.strtab = v.to_offset(*v.tag(DT_STRTAB), "DT_STRTAB");
  v.strsz = *v.tag(DT_STRSZ);
  return v;
}

/// Phase 2: the symbol count is not stored directly; the hash table tells it, as for the loader.
std::uint64_t count_symbols(const DynamicView& v) {
  const ElfImage& img = v.img;
  std::uint64_t nsyms = 0;
  if (auto h = v.tag(DT_HASH)) {
    nsyms = img.read<std::uint32_t>(v.to_offset(*h, "DT_HASH") + 4, "DT_HASH nchain");
  } else if (auto g = v.tag(DT_GNU_HASH)) {
    const std::uint64_t base = v.to_offset(*g, "DT_GNU_HASH");
    const auto nbuckets = img.read<std::uint32_t>(base, "GNU hash");
    const auto symoffset = img.read<std::uint32_t>(base + 4, "GNU hash");
    const auto bloom_size = img.read<std::uint32_t>(base + 8, "GNU hash");
    const std::uint64_t buckets = base + 16 + std::uint64_t(bloom_size) * 8;
    const std::uint64_t chains = buckets + std::uint64_t(nbuckets) * 4;
    std::uint32_t last = 0;
    for (std::uint32_t b = 0; b < nbuckets; ++b)
      last = std::max(last, img.read<std::uint32_t>(buckets + 4ull * b, "GNU hash bucket"));
    if (last < symoffset) {
      nsyms = symoffset;
    } else {
      // Walk the chain of the highest bucket to its end (low bit set).
      for (std::uint64_t i = last;; ++i) {
        if (i - last > (img.size() / 4)) img.fail("unterminated GNU hash chain");
        auto c = img.read<std::uint32_t>(chains + 4 * (i - symoffset), "GNU hash chain");
        if (c & 1u) {
          nsyms = i + 1;
          break;
        }
      }
    }
  } else {
    img.fail("no DT_HASH or DT_GNU_HASH: cannot size the symbol table");
  }
  if (nsyms > img.size() / sizeof(Elf64_Sym)) img.fail("symbol count larger than the file");
  return nsyms;
}

/// Version index -> (version, file). 0 and 1 are local and global (unversioned).
using VersionNames = std::map<std::uint16_t, std::pair<std::string, std::string>>;

/// Phase 3: the version names, required (DT_VERNEED: which file provides each) and defined.
VersionNames read_versions(const DynamicView& v) {
  const ElfImage& img = v.img;
  VersionNames versions;
  if (auto vn = v.tag(DT_VERNEED)) {
    std::uint64_t off = v.to_offset(*vn, "DT_VERNEED");
    const std::uint64_t count = v.tag(DT_VERNEEDNUM).value_or(0);
    for (std::uint64_t i = 0; i < count && i < 4096; ++i) {
      auto need = img.read<Elf64_Verneed>(off, "version requirement");
      const std::string file = v.str(need.vn_file);
      std::uint64_t aoff = off + need.vn_aux;
      for (unsigned k = 0; k < need.vn_cnt && k < 4096; ++k) {
        auto aux = img.read<Elf64_Vernaux>(aoff, "version requirement entry");
        versions[aux.vna_other & 0x7fff] = {v.str(aux.vna_name), file};
        if (!aux.vna_next) break;
        aoff += aux.vna_next;
      }
      if (!need.vn_next) break;
      off += need.vn_next;
    }
  }
  if (auto vd = v.tag(DT_VERDEF)) {
    std::uint64_t off = v.to_offset(*vd, "DT_VERDEF");
    const std::uint64_t count = v.tag(DT_VERDEFNUM).value_or(0);
    for (std::uint64_t i = 0; i < count && i < 4096; ++i) {
      auto def = img.read<Elf64_Verdef>(off, "version definition");
      if (def.vd_cnt > 0 && !(def.vd_flags & VER_FLG_BASE)) {
        auto aux = img.read<Elf64_Verdaux>(off + def.vd_aux, "version definition entry");
        versions[def.vd_ndx & 0x7fff] = {v.str(aux.vda_name), ""};
      }
      if (!def.vd_next) break;
      off += def.vd_next;
    }
  }
  return versions;
}

/// Phase 4: the global symbols, split into imports (undefined, with the library their version
/// names) and exports (defined, default or protected visibility).
void read_symbols(const DynamicView& v, std::uint64_t symtab, std::uint64_t nsyms, const VersionNames& versions,
                  DynamicInfo& info) {
  const ElfImage& img = v.img;
  std::optional<std::uint64_t> versym;
  if (auto t = v.tag(DT_VERSYM)) versym = v.to_offset(*t, "DT_VERSYM");
  for (std::uint64_t i = 1; i < nsyms; ++i) {
    auto sym = img.read<Elf64_Sym>(symtab + i * sizeof(Elf64_Sym), "symbol");
    const unsigned bind = ELF64_ST_BIND(sym.st_info);
    const unsigned vis = ELF64_ST_VISIBILITY(sym.st_other);
    if (bind == STB_LOCAL) continue;
    ElfSymbol s;
    s.name = v.str(sym.st_name);
    if (s.name.empty()) continue;
    s.defined = sym.st_shndx != SHN_UNDEF;
    s.weak = bind == STB_WEAK;
    s.unique = bind == STB_GNU_UNIQUE;
    s.type = ELF64_ST_TYPE(sym.st_info);
    if (versym) {
      auto idx = static_cast<std::uint16_t>(img.read<std::uint16_t>(*versym + 2 * i, "DT_VERSYM") & 0x7fff);
      if (auto it = versions.find(idx); it != versions.end()) {
        s.version = it->second.first;
        if (!s.defined) s.library = it->second.second;
      }
    }
    if (!s.defined) {
      info.imports.push_back(std::move(s));
    } else if (vis == STV_DEFAULT || vis == STV_PROTECTED) {
      info.exports.push_back(std::move(s));
    }
  }
}

}  // namespace

DynamicInfo read_dynamic_info(const std::filesystem::path& so) {
  std::ifstream in(so, std::ios::binary);
  if (!in) throw ExecError(Status::INVALID_SUBMISSION, fmt::format("{}: cannot open", so.string()));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const ElfImage img(so, std::move(bytes));
  const DynamicView v = read_dynamic_view(img);

  DynamicInfo info;
  info.has_textrel = v.tag(DT_TEXTREL).has_value() || (v.tag(DT_FLAGS).value_or(0) & DF_TEXTREL) != 0;
  for (auto off : v.needed_off) info.needed.push_back(v.str(off));
  for (auto off : v.runpath_off) info.runpath.push_back(v.str(off));
  if (auto s = v.tag(DT_SONAME)) info.soname = v.str(*s);

  if (!v.tag(DT_SYMTAB)) return info;  // no symbols at all
  if (v.tag(DT_SYMENT).value_or(sizeof(Elf64_Sym)) != sizeof(Elf64_Sym)) img.fail("unexpected DT_SYMENT");
  const std::uint64_t symtab = v.to_offset(*v.tag(DT_SYMTAB), "DT_SYMTAB");
  const std::uint64_t nsyms = count_symbols(v);
  read_symbols(v, symtab, nsyms, read_versions(v), info);
  return info;
}

const std::vector<VendorLibrary>& known_vendor_libraries() {
  static const std::vector<VendorLibrary> libs = {
      {"cublas", {"cublas"}, {"libcublas.so*"}},
      {"cublasLt", {"cublasLt"}, {"libcublasLt.so*"}},
      {"cudnn", {"cudnn"}, {"libcudnn*.so*"}},
      {"cusparse", {"cusparse"}, {"libcusparse.so*"}},
      {"cusparseLt", {"cusparseLt"}, {"libcusparseLt.so*"}},
      {"cufft", {"cufft"}, {"libcufft*.so*"}},
      {"cusolver", {"cusolver"}, {"libcusolver*.so*"}},
      {"curand", {"curand"}, {"libcurand.so*"}},
      {"cutensor", {"cutensor"}, {"libcutensor*.so*"}},
      {"nccl", {"nccl"}, {"libnccl.so*"}},
      {"nvrtc", {"nvrtc"}, {"libnvrtc*.so*"}},
      {"nvjitlink", {"nvJitLink", "__nvJitLink"}, {"libnvJitLink.so*"}},
      {"nvshmem", {"nvshmem", "nvshmemx"}, {"libnvshmem*.so*"}},
      {"npp", {"npp"}, {"libnpp*.so*"}},
      // The driver API (libcuda): cuLaunchKernel and friends, named cu + capital letter.
      {"cuda_driver", {"cu[A-Z]"}, {"libcuda.so*"}},
  };
  return libs;
}

const std::vector<std::string>& tensor_map_driver_functions() {
  static const std::vector<std::string> names = {
      "cuTensorMapEncodeTiled",    "cuTensorMapEncodeIm2col", "cuTensorMapEncodeIm2colWide",
      "cuTensorMapReplaceAddress", "cuGetErrorString",        "cuGetErrorName"};
  return names;
}

std::vector<SymbolRule> default_forbidden_imports() {
  return {
      {"timing",
       {"cudaEventElapsedTime*", "cuEventElapsedTime*", "clock_gettime", "gettimeofday", "time",
        "clock", "timespec_get", "ftime", "times", "getrusage", "_ZNSt6chrono*3now*"},
       "solution code never reads a timer: the harness alone measures time"},
      {"profiler",
       {"cupti*", "cuProfiler*", "cudaProfiler*", "nvtx*"},
       "profiler and tracing APIs belong to the harness"},
      {"dynamic_loading",
       {"dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo", "dl_iterate_phdr",
        "_dl_*", "__libc_dl*", "_r_debug", "cudaGetDriverEntryPoint*", "cuGetProcAddress*",
        "cudaGetExportTable", "cuGetExportTable"},
       "loading code or looking up symbols at run time bypasses the import check"},
      {"memory_protection",
       {"mprotect", "pkey_*", "mseal", "mmap", "mmap64", "munmap", "mremap", "remap_file_pages",
        "memfd_create", "shm_open"},
       "changing page protections or mapping memory by hand is how code patching starts; "
       "use the workspace or cudaMalloc"},
      {"tracing",
       {"ptrace", "process_vm_readv", "process_vm_writev", "prctl", "syscall", "seccomp",
        "personality", "kill", "tgkill", "tkill", "sigqueue", "pidfd_*"},
       "tracing, raw system calls and signalling other processes are not allowed"},
      {"processes",
       {"fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl",
        "execlp", "execle", "fexecve", "posix_spawn*", "system", "popen", "daemon", "setsid",
        "setpgid"},
       "a solution may not start processes"},
      {"threads",
       {"pthread_create", "thrd_create", "_ZNSt6thread*", "GOMP_*", "omp_*", "__kmpc_*"},
       "host threads could finish work after the call returns; issue all work on the stream"},
      {"host_callback",
       {"cudaLaunchHostFunc*", "cudaStreamAddCallback*", "cuLaunchHostFunc*"},
       "host callbacks run candidate code outside the call on a driver thread"},
      {"signals",
       {"signal", "sigaction", "__sysv_signal", "bsd_signal", "sigset", "sigaltstack",
        "setitimer", "alarm", "ualarm", "timer_create"},
       "signal handlers and timers are the harness's"},
      {"network",
       {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto",
        "sendmsg", "recvfrom", "recvmsg", "getaddrinfo", "gethostbyname*"},
       "no network access"},
      {"file_access",
       {"open", "open64", "openat", "openat64", "__open_2", "__open64_2", "__openat_2",
        "__openat64_2", "fopen", "fopen64", "freopen*", "creat", "creat64", "opendir",
        "fdopendir", "readlink", "readlinkat", "_ZNSt13basic_filebuf*", "_ZNSt14basic_ifstream*",
        "_ZNSt14basic_ofstream*", "_ZNSt13basic_fstream*", "_ZNSt10filesystem*",
        "_ZNKSt10filesystem*"},
       "a solution reads its inputs, not files"},
      {"cuda_context",
       {"cudaDeviceReset", "cudaSetDevice", "cudaSetDeviceFlags", "cudaSetValidDevices",
        "cudaInitDevice", "cudaDeviceSetLimit"},
       "the harness owns the device and its context"},
      {"l2_persistence",
       {"cudaStreamSetAttribute*", "cudaCtxResetPersistingL2Cache", "cudaGraphKernelNodeSetAttribute*"},
       "persisting-L2 windows survive the harness's cache flush"},
      {"cuda_ipc",
       {"cudaIpc*"},
       "inter-process memory handles could reach memory outside the call"},
  };
}

SymbolPolicy SymbolPolicy::candidate(std::vector<std::string> allowed_libraries) {
  SymbolPolicy p;
  p.forbidden_imports = default_forbidden_imports();
  p.allowed_libraries = std::move(allowed_libraries);
  return p;
}

SymbolPolicy SymbolPolicy::trusted() {
  SymbolPolicy p = candidate();
  p.allow_weak_std_exports = true;
  for (const VendorLibrary& lib : known_vendor_libraries())
    if (lib.name != "cuda_driver") p.allowed_libraries.push_back(lib.name);
  return p;
}

std::string SymbolReport::summary() const {
  std::string s;
  for (const SymbolViolation& v : violations) s += fmt::format("{}: {}: {}\n", v.rule, v.symbol, v.message);
  return s;
}

namespace {

bool is_allocator_name(const std::string& n) {
  static const std::vector<std::string> kAlloc = {
      "malloc", "free", "calloc", "realloc", "reallocarray", "aligned_alloc", "posix_memalign",
      "memalign", "valloc", "pvalloc", "malloc_usable_size", "_Znwm*", "_Znam*", "_ZdlPv*",
      "_ZdaPv*", "cudaMalloc*", "cudaFree*", "cudaHostAlloc*", "cuMemAlloc*", "cuMemFree*"};
  return any_match(kAlloc, n);
}

bool is_interposing_name(const std::string& n) {
  // Names of the runtimes a process loads: an export with such a name would shadow them for
  // any library resolved after this one in a global scope.
  static const std::vector<std::string> kRuntime = {
      "cuda*", "__cuda*", "cu[A-Z]*", "cupti*", "nvtx*", "pthread_*", "dl*", "_dl_*", "__libc_*",
      "clock_*", "gettimeofday", "time", "mmap*", "mprotect", "ptrace", "execve", "fork",
      "__cxa_*", "_Unwind_*", "__gxx_*"};
  return any_match(kRuntime, n);
}

bool is_std_vague_linkage(const ElfSymbol& s) {
  if (!(s.weak || s.unique)) return false;
  // std:: names: St (std::), and the abbreviations Sa, Sb, Ss, Si, So, Sd; local entities of
  // std:: functions (_ZZ...); and the inline placement forms of operator new/delete.
  static const std::vector<std::string> kStd = {
      "_ZNS[tabsiod]*", "_ZNKS[tabsiod]*", "_ZS[tabsiod]*", "_ZTVS[tabsiod]*", "_ZTIS[tabsiod]*",
      "_ZTSS[tabsiod]*", "_ZN9__gnu_cxx*", "_ZNK9__gnu_cxx*", "_ZGVZNS[tabsiod]*",
      "_ZZNS[tabsiod]*", "_ZZNKS[tabsiod]*", "_ZnwmPv", "_ZnamPv", "_ZdlPvS_", "_ZdaPvS_"};
  return any_match(kStd, s.name);
}

bool is_tensor_map_function(const std::string& name) {
  const auto& names = tensor_map_driver_functions();
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// The vendor library a symbol belongs to (longest matching prefix), if any.
const VendorLibrary* vendor_of(const std::string& name) {
  const VendorLibrary* best = nullptr;
  std::size_t best_len = 0;
  for (const VendorLibrary& lib : known_vendor_libraries()) {
    for (const std::string& prefix : lib.prefixes) {
      // A prefix may end in a bracket class (cu[A-Z]); match it as a glob with a trailing *.
      if (glob_match(prefix + "*", name) && prefix.size() > best_len) {
        best = &lib;
        best_len = prefix.size();
      }
    }
  }
  return best;
}

}  // namespace

SymbolReport check_symbols(const std::filesystem::path& so, const SymbolPolicy& policy) {
  SymbolReport r;
  r.info = read_dynamic_info(so);
  auto add = [&](std::string sym, std::string rule, std::string msg) {
    r.violations.push_back({std::move(sym), std::move(rule), std::move(msg)});
  };

  for (const std::string& req : policy.required_exports) {
    bool found = std::any_of(r.info.exports.begin(), r.info.exports.end(),
                             [&](const ElfSymbol& s) { return s.name == req && s.type == STT_FUNC; });
    if (!found)
      add(req, "missing_entry_point",
          fmt::format("the library does not export the function {} (declare it extern \"C\" "
                      "and mark it D2K_EXPORT)", req));
  }

  for (const ElfSymbol& s : r.info.exports) {
    if (any_match(policy.allowed_exports, s.name)) continue;
    if (policy.allow_weak_std_exports && is_std_vague_linkage(s)) continue;
    if (is_allocator_name(s.name))
      add(s.name, "allocator_override",
          "the library defines an allocator function; allocator overrides are not allowed");
    else if (is_interposing_name(s.name))
      add(s.name, "interposition",
          "the library defines a symbol of the C, C++ or CUDA runtime; interposing runtime "
          "functions is not allowed");
    else
      add(s.name, "extra_export",
          "only d2k_abi_version, d2k_workspace_size and d2k_run may be exported "
          "(compile with hidden visibility)");
  }

  // Driver-API imports outside the tensor-map list: while there is one, libcuda may not be
  // NEEDED either (the list is what makes the driver library safe to load).
  bool other_driver_imports = false;
  for (const ElfSymbol& s : r.info.imports) {
    const std::string shown = s.version.empty() ? s.name : s.name + "@" + s.version;
    bool hit = false;
    for (const SymbolRule& rule : policy.forbidden_imports) {
      if (any_match(rule.patterns, s.name)) {
        add(shown, rule.name, rule.message);
        hit = true;
        break;
      }
    }
    if (hit) continue;
    // The tensor-map functions of the driver API are allowed on every track (and libcuda.so* as
    // DT_NEEDED while they are its only imports); every other driver-API import stays
    // vendor_library.
    if (is_tensor_map_function(s.name)) continue;
    if (const VendorLibrary* lib = vendor_of(s.name)) {
      if (lib->name == "cuda_driver") other_driver_imports = true;
      bool allowed = std::find(policy.allowed_libraries.begin(), policy.allowed_libraries.end(),
                               lib->name) != policy.allowed_libraries.end();
      if (!allowed)
        add(shown, "vendor_library",
            fmt::format("calls the {} library, which this track does not allow{}", lib->name,
                        lib->name == "cuda_driver"
                            ? fmt::format(" (of the driver API only {} may be called)",
                                          fmt::join(tensor_map_driver_functions(), ", "))
                            : ""));
    }
  }

  for (const std::string& n : r.info.needed) {
    if (any_match(policy.allowed_needed, n)) continue;
    bool allowed = false;
    for (const VendorLibrary& lib : known_vendor_libraries()) {
      if (!any_match(lib.needed, n)) continue;
      allowed = std::find(policy.allowed_libraries.begin(), policy.allowed_libraries.end(),
                          lib.name) != policy.allowed_libraries.end();
      // The driver library for the tensor-map encoders alone (tensor_map_driver_functions()).
      if (lib.name == "cuda_driver" && !other_driver_imports) allowed = true;
      if (allowed) break;
    }
    if (!allowed)
      add(n, "needed_library", "the library depends on a shared library this track does not allow");
  }

  if (!policy.allow_runpath)
    for (const std::string& rp : r.info.runpath)
      add(rp, "runpath", "an RPATH/RUNPATH could redirect which runtime libraries are loaded");
  if (r.info.has_textrel)
    add("DT_TEXTREL", "text_relocation", "the library patches its own code at load time");
  return r;
}

}  // namespace d2k
