#pragma once
/// A folder's content as one digest: the version stamp of a dataset (d2k pack) and of a task in
/// a workspace manifest. One listing rule for both, so that the same files give the same stamp.
#include <filesystem>
#include <string_view>
#include <vector>

#include "exec/sha256.h"

namespace d2k {

/// Regular files under `dir`, relative paths in sorted order; hidden files and folders and
/// __pycache__ are left out (editor and Python droppings are not part of a task).
std::vector<std::filesystem::path> tree_files(const std::filesystem::path& dir);

/// Adds each of tree_files(dir) to `h` as two length-prefixed fields: `prefix` + its generic
/// relative path, then its bytes. No renaming or re-splitting of bytes between files collides.
void update_tree(Sha256& h, const std::filesystem::path& dir, std::string_view prefix = "");

}  // namespace d2k
