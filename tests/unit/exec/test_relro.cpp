// relro_hash: the GOT tripwire of the worker (issue #24) sees a write to relocation-read-only pages.
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include "exec/worker.h"

namespace d2k {
namespace {

/// The main executable's relro range (the first object dl_iterate_phdr reports).
std::pair<unsigned char*, std::size_t> own_relro() {
  std::pair<unsigned char*, std::size_t> r{nullptr, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& out = *static_cast<std::pair<unsigned char*, std::size_t>*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            out = {reinterpret_cast<unsigned char*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr), info->dlpi_phdr[i].p_memsz};
            return 1;
          }
        return 0;
      },
      &r);
  return r;
}

TEST(Relro, HashSeesAWriteToTheRelroPages) {
  const std::uint64_t h0 = relro_hash();
  EXPECT_EQ(relro_hash(), h0);  // stable while nothing changes
  auto [p, n] = own_relro();
  if (!p || n == 0) GTEST_SKIP() << "this binary has no PT_GNU_RELRO";
  const long page = sysconf(_SC_PAGESIZE);
  unsigned char* last = p + n - 1;  // the range's last byte: the GOT's tail, not used by the hash loop
  auto* base = reinterpret_cast<unsigned char*>(reinterpret_cast<std::uintptr_t>(last) & ~static_cast<std::uintptr_t>(page - 1));
  ASSERT_EQ(mprotect(base, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE), 0);  // what the exploit did
  const unsigned char saved = *last;
  *last = static_cast<unsigned char>(saved ^ 0x5A);
  const std::uint64_t h1 = relro_hash();
  *last = saved;
  mprotect(base, static_cast<std::size_t>(page), PROT_READ);
  EXPECT_NE(h1, h0);
  EXPECT_EQ(relro_hash(), h0);
}

}  // namespace
}  // namespace d2k
