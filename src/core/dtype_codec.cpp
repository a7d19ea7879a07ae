// Element loads and stores on the host. One codec for host and device: data/dtype_bits.h
// (header-only, shared with the generators' CUDA code), so what the host stores and what the
// device generates are the same bits. (A file of its own: include/d2k/solution.h declares a
// function d2k::data that the namespace d2k::data would clash with.)
#include "core/dtype.h"
#include "data/dtype_bits.h"

namespace d2k {

double load_as_double(DType t, const void* p) {
  (void)dtype_size(t);  // an invalid DType value throws here
  return data::load_double(t, p, 0);
}

void store_from_double(DType t, void* p, double v) {
  (void)dtype_size(t);
  data::store_real(t, p, 0, v);
}

}  // namespace d2k
