#pragma once
/// The few git plumbing commands the release audit reads through (run with popen, output read
/// whole or streamed): file lists, commits, trees and blobs.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace d2k::audit {

/// Runs `git -C root ARGS` (arguments shell-quoted here) and returns its stdout; throws with the
/// command and its exit status when it fails.
std::string git_output(const std::filesystem::path& root, const std::vector<std::string>& args);
/// True when `root` is inside a git work tree.
bool is_git_checkout(const std::filesystem::path& root);
/// Splits NUL-terminated records (`-z` output).
std::vector<std::string> split_nul(std::string_view s);

/// One entry of `git ls-tree -r -l -z`.
struct TreeEntry {
  std::string sha, path;
  std::size_t size = 0;
};
/// The blobs of `commit` (submodule entries left out).
std::vector<TreeEntry> ls_tree(const std::filesystem::path& root, const std::string& commit);

/// Streams the blobs `shas` through one `git cat-file --batch`: `on_blob(sha, bytes)` for each.
void cat_blobs(const std::filesystem::path& root, const std::vector<std::string>& shas,
               const std::function<void(const std::string&, std::string_view)>& on_blob);

}  // namespace d2k::audit
