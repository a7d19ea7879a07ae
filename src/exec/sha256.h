#pragma once
/// SHA-256 (FIPS 180-4), for content-addressed compile caches. Not constant-time; not for secrets.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace d2k {

/// Incremental SHA-256: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256();
  /// Appends bytes to the message.
  void update(const void* data, std::size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  /// Appends a length-prefixed field, so that ("ab","c") and ("a","bc") hash differently.
  void update_field(std::string_view s);
  /// Finishes the message and returns the 32-byte digest; the object is spent afterwards.
  std::array<std::uint8_t, 32> digest();
  /// digest() as 64 lowercase hex digits.
  std::string hex_digest();

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
  bool done_ = false;
};

/// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace d2k
