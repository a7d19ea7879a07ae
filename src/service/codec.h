#pragma once
/// Byte encodings the service needs, on OpenSSL's libcrypto: base64 for file contents in JSON,
/// SHA-256 for tokens at rest and idempotency fingerprints, random tokens and ids.
#include <optional>
#include <string>
#include <string_view>

namespace d2k::service {

std::string base64_encode(std::string_view bytes);
/// Strict: only the standard alphabet with '=' padding, length a multiple of 4; nullopt otherwise.
std::optional<std::string> base64_decode(std::string_view text);
/// Lower-case hex of SHA-256(bytes).
std::string sha256_hex(std::string_view bytes);
/// `n` bytes from the OS's CSPRNG as lower-case hex (2n characters).
std::string random_hex(int n);

}  // namespace d2k::service
