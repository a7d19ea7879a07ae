// Shared by the timer-forgery cases of issue #24: with no forbidden import (raw `syscall`
// instructions only), find the d2k program's GOT through the auxiliary vector, make a slot
// writable with a raw mprotect (else write it through /proc/self/mem) and point it at a hook.
// Hooks: cudaEventElapsedTime (scales the elapsed time), cuptiActivityEnable/Disable (track
// whether CUPTI is recording: an audit sample), recvmsg (spots the parent's commands).
// A case sets the knobs below before including this header, and calls forge_arm() from d2k_run.
#pragma once
#include <cuda_runtime.h>
#include <elf.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <cstdint>
#include <cstring>

namespace {

long raw_syscall3(long nr, long a, long b, long c) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}

long raw_syscall4(long nr, long a, long b, long c, long d) {
  long ret;
  register long r10 asm("r10") = d;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
}

// Points the main program's GOT slot of `name` at `hook`, after storing the old target in
// `*original`. Returns whether it did.
bool patch_program_got(const char* name, void* hook, void** original) {
  const auto* ph = reinterpret_cast<const Elf64_Phdr*>(getauxval(AT_PHDR));
  const size_t phnum = getauxval(AT_PHNUM);
  uintptr_t bias = 0;
  const Elf64_Dyn* dyn = nullptr;
  for (size_t i = 0; i < phnum; ++i)
    if (ph[i].p_type == PT_PHDR) bias = reinterpret_cast<uintptr_t>(ph) - ph[i].p_vaddr;
  for (size_t i = 0; i < phnum; ++i)
    if (ph[i].p_type == PT_DYNAMIC) dyn = reinterpret_cast<const Elf64_Dyn*>(bias + ph[i].p_vaddr);
  if (!dyn) return false;
  auto addr = [&](uint64_t p) { return p < bias ? p + bias : p; };
  const Elf64_Sym* symtab = nullptr;
  const char* strtab = nullptr;
  const Elf64_Rela* tables[2] = {nullptr, nullptr};
  size_t sizes[2] = {0, 0};
  for (const Elf64_Dyn* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = reinterpret_cast<const Elf64_Sym*>(addr(d->d_un.d_ptr));
    if (d->d_tag == DT_STRTAB) strtab = reinterpret_cast<const char*>(addr(d->d_un.d_ptr));
    if (d->d_tag == DT_JMPREL) tables[0] = reinterpret_cast<const Elf64_Rela*>(addr(d->d_un.d_ptr));
    if (d->d_tag == DT_PLTRELSZ) sizes[0] = d->d_un.d_val;
    if (d->d_tag == DT_RELA) tables[1] = reinterpret_cast<const Elf64_Rela*>(addr(d->d_un.d_ptr));
    if (d->d_tag == DT_RELASZ) sizes[1] = d->d_un.d_val;
  }
  if (!symtab || !strtab) return false;
  for (int t = 0; t < 2; ++t) {
    for (size_t i = 0; tables[t] && i < sizes[t] / sizeof(Elf64_Rela); ++i) {
      const Elf64_Rela& r = tables[t][i];
      const unsigned type = ELF64_R_TYPE(r.r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      if (std::strcmp(strtab + symtab[ELF64_R_SYM(r.r_info)].st_name, name) != 0) continue;
      void** slot = reinterpret_cast<void**>(bias + r.r_offset);
      *original = *slot;
      const long page = static_cast<long>(reinterpret_cast<uintptr_t>(slot) & ~uintptr_t(4095));
      if (raw_syscall3(10, page, 4096, 3) == 0) {  // mprotect(page, 4096, PROT_READ | PROT_WRITE)
        *slot = hook;
        raw_syscall3(10, page, 4096, 1);  // back to PROT_READ
        return true;
      }
      const long fd = raw_syscall4(257, -100, reinterpret_cast<long>("/proc/self/mem"), 2, 0);  // openat, O_RDWR
      if (fd < 0) return false;
      const long wrote = raw_syscall4(18, fd, reinterpret_cast<long>(&hook), sizeof hook,
                                      static_cast<long>(reinterpret_cast<uintptr_t>(slot)));  // pwrite64
      raw_syscall3(3, fd, 0, 0);
      return wrote == sizeof hook;
    }
  }
  return false;
}

using ElapsedFn = cudaError_t (*)(float*, cudaEvent_t, cudaEvent_t);
using CuptiToggleFn = int (*)(int);
using RecvmsgFn = ssize_t (*)(int, struct msghdr*, int);
ElapsedFn real_elapsed = nullptr;
CuptiToggleFn real_enable = nullptr, real_disable = nullptr;
RecvmsgFn real_recvmsg = nullptr;
volatile bool cupti_recording = false;

cudaError_t forged_elapsed(float* ms, cudaEvent_t a, cudaEvent_t b) {
  const cudaError_t r = real_elapsed(ms, a, b);
  if (r == cudaSuccess && ms && (!cupti_recording || kForgeAudited)) *ms *= kForgeFactor;
  return r;
}
int tracking_enable(int kind) {
  cupti_recording = true;
  return real_enable(kind);
}
int tracking_disable(int kind) {
  cupti_recording = false;
  return real_disable(kind);
}
// Round-trip sabotage: a sleep inside the parent's requests that a cross-check might subtract.
ssize_t sleeping_recvmsg(int fd, struct msghdr* mh, int flags) {
  const ssize_t n = real_recvmsg(fd, mh, flags);
  if (kSabotageSleepNs > 0 && n > 0 && mh->msg_iovlen > 0) {
    const char* p = static_cast<const char*>(mh->msg_iov[0].iov_base);
    const size_t len = static_cast<size_t>(n);
    static const char kA[] = "\"cmd\":\"batch_run\"", kB[] = "\"cmd\":\"throughput\"";
    if (memmem(p, len, kA, sizeof kA - 1) || memmem(p, len, kB, sizeof kB - 1)) {
      const long ts[2] = {kSabotageSleepNs / 1000000000L, kSabotageSleepNs % 1000000000L};
      raw_syscall3(35, reinterpret_cast<long>(ts), 0, 0);  // nanosleep
    }
  }
  return n;
}

// Arms the forgery once `calls` calls of one shape have been made (after the parent's untimed
// checks of that workload, during the timing loop), so that a check of the GOT after untimed
// calls sees nothing until the next workload. Returns whether the hooks are in.
bool forge_arm(int64_t T, int64_t H, int calls) {
  static int64_t shape_t = -1, shape_h = -1;
  static int seen = 0;
  static bool armed = false;
  if (T != shape_t || H != shape_h) {
    shape_t = T;
    shape_h = H;
    seen = 0;
  }
  if (armed || ++seen < calls) return armed;
  armed = patch_program_got("cudaEventElapsedTime", reinterpret_cast<void*>(&forged_elapsed), reinterpret_cast<void**>(&real_elapsed));
  patch_program_got("cuptiActivityEnable", reinterpret_cast<void*>(&tracking_enable), reinterpret_cast<void**>(&real_enable));
  patch_program_got("cuptiActivityDisable", reinterpret_cast<void*>(&tracking_disable), reinterpret_cast<void**>(&real_disable));
  if (kSabotageSleepNs > 0)
    patch_program_got("recvmsg", reinterpret_cast<void*>(&sleeping_recvmsg), reinterpret_cast<void**>(&real_recvmsg));
  return armed;
}

}  // namespace
