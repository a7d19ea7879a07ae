#pragma once
/// What the release audit looks for in one file (docs/release-audit.md): secrets by pattern and
/// by entropy in its text, and what its path or bytes say it is (a run record, a binary).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace d2k::audit {

/// One rule's hit in a file. `line` is 0 for rules about the whole file.
struct Hit {
  int line = 0;
  std::string rule;    ///< secret.<kind>, run-record, binary.elf, binary.object, binary.large, workspace-solution
  std::string detail;  ///< never the secret itself: its kind and a redacted prefix
};

/// Files larger than this are reported as binary.large (and their text is not scanned).
inline constexpr std::size_t kLargeFileBytes = 5u << 20;

/// Secrets in `text`, line by line: AWS access keys and secret keys, OpenAI, Anthropic, GitHub
/// and Slack tokens, Slack webhooks, private key blocks, and high-entropy strings assigned to a
/// name that says key, token, secret or password. Text with a NUL byte in its first 8 KiB is
/// binary and not scanned.
std::vector<Hit> scan_secrets(std::string_view text);

/// Rules on the path alone: run records (a top-level runs/ folder; *.trace.jsonl, usage.jsonl,
/// agent.log anywhere but docs/results/) and object files by name (.o, .a, .so, .so.N).
std::vector<Hit> scan_path(std::string_view path);

/// Rules on the bytes: an ELF header, a size over kLargeFileBytes. `size` is the whole file's
/// size; `head` may be only its beginning.
std::vector<Hit> scan_binary(std::string_view head, std::size_t size);

/// Shannon entropy of `s` in bits per character.
double shannon_entropy(std::string_view s);

}  // namespace d2k::audit
