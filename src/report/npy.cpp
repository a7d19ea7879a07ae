#include "report/npy.h"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace d2k {

namespace {

/// NumPy's dtype string; empty for the types NumPy lacks.
std::string descr(DType t) {
  switch (t) {
    case DType::f16: return "<f2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::i8: return "|i1";
    case DType::i16: return "<i2";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::u8: return "|u1";
    case DType::u32: return "<u4";
    case DType::boolean: return "|b1";
    default: return "";
  }
}

}  // namespace

void write_npy(const std::filesystem::path& path, const HostTensor& t) {
  std::string d = descr(t.dtype);
  const bool widen = d.empty();
  if (widen) d = "<f4";
  std::string shape;
  for (auto s : t.shape) shape += std::to_string(s) + ",";
  if (t.shape.size() > 1) shape.pop_back();  // (3,) for one dimension, (2,3) otherwise
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", d, shape);
  // Magic (6) + version (2) + header length (2) + header + '\n', padded to a multiple of 64.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  f.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  const char len_le[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
  f.write(len_le, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (!widen) {
    f.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
  } else {
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  }
  if (!f) throw std::runtime_error("write failed: " + path.string());
}

}  // namespace d2k
