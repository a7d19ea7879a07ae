#include "service/codec.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <stdexcept>

namespace d2k::service {

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (c == '=') {
      if (i + 2 < text.size()) return std::nullopt;  // '=' only in the last two places
      ++pad;
    } else if (!alpha || pad > 0) {
      return std::nullopt;
    }
  }
  if (text.empty()) return std::string();
  std::string out(3 * (text.size() / 4), '\0');
  // EVP_DecodeBlock counts the padding as zero bytes: take them off again.
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: EVP_Digest failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += hex[md[i] >> 4], out += hex[md[i] & 15];
  return out;
}

std::string random_hex(int n) {
  std::string raw(static_cast<std::size_t>(n), '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), n) != 1)
    throw std::runtime_error("random: RAND_bytes failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) out += hex[c >> 4], out += hex[c & 15];
  return out;
}

}  // namespace d2k::service
