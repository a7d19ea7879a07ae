#include "engine/devmem.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>

#include "core/cuda_util.h"

namespace d2k {

namespace {

// The driver API is reached through the runtime's entry-point query, so that the harness does
// not link libcuda: the binary must still start (and run its host pipeline) on machines without
// a GPU driver.
struct Driver {
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemExportToShareableHandle) export_handle = nullptr;
  decltype(&cuMemImportFromShareableHandle) import_handle = nullptr;
  decltype(&cuGetErrorName) error_name = nullptr;
};

template <class F>
void resolve(const char* name, F& fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  D2K_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || !p) throw std::runtime_error(std::string("CUDA driver entry point missing: ") + name);
  fn = reinterpret_cast<F>(p);
}

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    resolve("cuMemCreate", d.create);
    resolve("cuMemRelease", d.release);
    resolve("cuMemAddressReserve", d.reserve);
    resolve("cuMemAddressFree", d.address_free);
    resolve("cuMemMap", d.map);
    resolve("cuMemUnmap", d.unmap);
    resolve("cuMemSetAccess", d.set_access);
    resolve("cuMemGetAllocationGranularity", d.granularity);
    resolve("cuMemExportToShareableHandle", d.export_handle);
    resolve("cuMemImportFromShareableHandle", d.import_handle);
    resolve("cuGetErrorName", d.error_name);
  });
  return d;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = "?";
  driver().error_name(r, &name);
  throw std::runtime_error(std::string(what) + ": " + name);
}

int current_device() {
  int dev = 0;
  D2K_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

CUmemAllocationProp allocation_prop(int dev) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

std::size_t round_up(std::size_t n, std::size_t g) { return (n + g - 1) / g * g; }

}  // namespace

/// The ids of the allocations that exist now (DevMem::alive).
struct LiveIds {
  std::mutex m;
  std::unordered_set<std::uint64_t> ids;
};

LiveIds& live_ids() {
  static LiveIds l;
  return l;
}

struct DevMem::State {
  static inline std::atomic<std::uint64_t> next_id{1};
  std::uint64_t id = next_id.fetch_add(1);

  State() {
    LiveIds& l = live_ids();
    std::lock_guard lk(l.m);
    l.ids.insert(id);
  }
  bool vmm = false;          // a cuMemCreate/cuMemImport mapping (else cudaMalloc)
  void* ptr = nullptr;
  std::size_t bytes = 0;     // as asked
  std::size_t mapped = 0;    // rounded to the granularity (vmm)
  std::size_t guard = 0;     // reserved, never mapped, after the mapping (vmm): an access faults
  CUmemGenericAllocationHandle handle = 0;

  ~State() {
    {
      LiveIds& l = live_ids();
      std::lock_guard lk(l.m);
      l.ids.erase(id);
    }
    // No throw from a destructor: a failed release leaks at worst.
    if (!ptr) return;
    if (!vmm) {
      cudaFree(ptr);
      return;
    }
    const Driver& d = driver();
    // Unmapping while kernels may still read the range is undefined; finish the device's work.
    cudaDeviceSynchronize();
    d.unmap(reinterpret_cast<CUdeviceptr>(ptr), mapped);
    d.address_free(reinterpret_cast<CUdeviceptr>(ptr), mapped + guard);
    d.release(handle);
  }

  /// A mapping of `n` bytes on this process's device: sets `bytes` and `mapped` (rounded up to
  /// the allocation granularity); returns the allocation properties and the device.
  std::pair<CUmemAllocationProp, int> size_for(std::size_t n) {
    const int dev = current_device();
    CUmemAllocationProp prop = allocation_prop(dev);
    std::size_t gran = 0;
    check(driver().granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
    bytes = n ? n : 1;
    mapped = round_up(bytes, gran);
    guard = gran;
    return {prop, dev};
  }

  /// Takes ownership of the physical allocation `h` and maps it read-write for `dev`, with a
  /// guard zone of one granule of reserved, unmapped address space after it: a write or read
  /// past the mapping faults there instead of reaching another buffer. On failure everything
  /// is undone (the allocation released).
  void adopt(CUmemGenericAllocationHandle h, int dev) {
    const Driver& d = driver();
    CUdeviceptr va = 0;
    CUresult r = d.reserve(&va, mapped + guard, 0, 0, 0);
    if (r == CUDA_SUCCESS && (r = d.map(va, mapped, 0, h, 0)) != CUDA_SUCCESS) d.address_free(va, mapped + guard);
    if (r == CUDA_SUCCESS) {
      CUmemAccessDesc access{};
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = dev;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      if ((r = d.set_access(va, mapped, &access, 1)) != CUDA_SUCCESS) {
        d.unmap(va, mapped);
        d.address_free(va, mapped + guard);
      }
    }
    if (r != CUDA_SUCCESS) {
      d.release(h);
      check(r, "mapping a device allocation (cuMemAddressReserve, cuMemMap, cuMemSetAccess)");
    }
    handle = h;
    vmm = true;
    ptr = reinterpret_cast<void*>(va);
  }
};

DevMem::DevMem(std::size_t bytes, MemKind kind) : s_(std::make_unique<State>()) {
  if (kind == MemKind::local) {
    s_->bytes = bytes ? bytes : 1;
    D2K_CUDA_CHECK(cudaMalloc(&s_->ptr, s_->bytes));
    return;
  }
  auto [prop, dev] = s_->size_for(bytes);
  CUmemGenericAllocationHandle h = 0;
  check(driver().create(&h, s_->mapped, &prop, 0), "cuMemCreate");
  s_->adopt(h, dev);
}

DevMem DevMem::import_fd(int fd, std::size_t bytes) {
  DevMem m;
  m.s_ = std::make_unique<State>();
  const int dev = m.s_->size_for(bytes).second;
  CUmemGenericAllocationHandle h = 0;
  CUresult r = driver().import_handle(&h, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(fd);
  check(r, "cuMemImportFromShareableHandle");
  m.s_->adopt(h, dev);
  return m;
}

DevMem::DevMem() = default;
DevMem::~DevMem() = default;
DevMem::DevMem(DevMem&&) noexcept = default;
DevMem& DevMem::operator=(DevMem&&) noexcept = default;

void* DevMem::get() const { return s_ ? s_->ptr : nullptr; }
std::size_t DevMem::size() const { return s_ ? s_->bytes : 0; }
std::size_t DevMem::slack() const { return s_ && s_->vmm ? s_->mapped - s_->bytes : 0; }
std::size_t DevMem::guard() const { return s_ && s_->vmm ? s_->guard : 0; }

void DevMem::fill_slack(std::uint8_t canary, cudaStream_t s) const {
  if (slack() == 0) return;
  D2K_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(s_->ptr) + s_->bytes, canary, slack(), s));
}

std::vector<std::uint8_t> DevMem::read_slack(cudaStream_t s) const {
  std::vector<std::uint8_t> out(slack());
  if (out.empty()) return out;
  D2K_CUDA_CHECK(cudaMemcpyAsync(out.data(), static_cast<char*>(s_->ptr) + s_->bytes, out.size(), cudaMemcpyDeviceToHost, s));
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}
std::uint64_t DevMem::id() const { return s_ ? s_->id : 0; }

bool DevMem::alive(std::uint64_t id) {
  LiveIds& l = live_ids();
  std::lock_guard lk(l.m);
  return l.ids.count(id) > 0;
}

int DevMem::export_fd() const {
  if (!s_ || !s_->vmm) throw std::logic_error("DevMem::export_fd: not a shareable allocation");
  int fd = -1;
  check(driver().export_handle(&fd, s_->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "cuMemExportToShareableHandle");
  return fd;
}

}  // namespace d2k
