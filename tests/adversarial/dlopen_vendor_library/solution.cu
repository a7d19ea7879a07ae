// Exploit: loads cuBLAS at run time, out of sight of the import check (a library fallback).
#include "rmsnorm_case.cuh"
#include <dlfcn.h>

namespace {

cudaError_t exploit(const Args& g) {
  if (void* h = dlopen("libcublas.so.13", RTLD_NOW)) dlclose(h);
  launch(g, g.s);
  return cudaSuccess;
}

}  // namespace
