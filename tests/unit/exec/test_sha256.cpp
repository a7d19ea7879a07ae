#include <gtest/gtest.h>

#include <string>

#include "exec/sha256.h"

namespace d2k {
namespace {

TEST(Sha256, KnownVectors) {
  // FIPS 180-4 examples and the empty message.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around the 55/56/64-byte padding edges, against values from a reference tool.
  EXPECT_EQ(sha256_hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256_hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string msg;
  for (int i = 0; i < 1000; ++i) msg += static_cast<char>(i * 7 + 3);
  for (std::size_t split : {0u, 1u, 63u, 64u, 65u, 500u, 999u}) {
    Sha256 h;
    h.update(msg.substr(0, split));
    h.update(msg.substr(split));
    EXPECT_EQ(h.hex_digest(), sha256_hex(msg)) << "split at " << split;
  }
}

TEST(Sha256, FieldsAreLengthPrefixed) {
  Sha256 a, b;
  a.update_field("ab");
  a.update_field("c");
  b.update_field("a");
  b.update_field("bc");
  EXPECT_NE(a.hex_digest(), b.hex_digest());
}

TEST(Sha256, DigestTwiceThrows) {
  Sha256 h;
  h.update("x");
  h.digest();
  EXPECT_THROW(h.digest(), std::logic_error);
}

}  // namespace
}  // namespace d2k
