#include "measure/kernel_set.h"

#include <algorithm>
#include <map>

namespace d2k::measure {

bool is_harness_kernel(const std::string& n) {
  return n.find("blocking_spin") != std::string::npos || n.find("l2_flush_") != std::string::npos;
}

std::set<std::string> distinct_kernels(const KernelNames& names) {
  std::set<std::string> out;
  for (const auto& n : names)
    if (!n.empty() && n.front() != '[' && !is_harness_kernel(n)) out.insert(n);
  return out;
}

std::set<std::string> reference_kernels(const std::vector<KernelNames>& reference) {
  std::map<std::string, std::size_t> count;
  for (const auto& call : reference)
    for (const auto& n : distinct_kernels(call)) ++count[n];
  std::set<std::string> out;
  for (const auto& [n, c] : count)
    if (2 * c > reference.size()) out.insert(n);
  return out;
}

KernelSetVerdict judge_kernel_sets(const std::vector<KernelNames>& samples, const std::vector<KernelNames>& reference) {
  std::vector<std::set<std::string>> sets;
  sets.reserve(samples.size());
  std::map<std::set<std::string>, std::size_t> freq;
  for (const auto& s : samples) ++freq[sets.emplace_back(distinct_kernels(s))];
  KernelSetVerdict v;
  // The most common non-empty set: a sample whose records were all lost has an empty set, and
  // many of them must not make "nothing" the norm.
  const std::set<std::string>* mode = nullptr;
  std::size_t best = 0;
  for (const auto& [set, n] : freq)
    if (!set.empty() && n > best) best = n, mode = &set;
  if (mode) v.expected = *mode;
  // The reference calls cannot have lost a record: what most of them ran is expected even when
  // the timed samples' windows usually miss it.
  for (const auto& n : reference_kernels(reference)) v.expected.insert(n);
  if (samples.empty()) return v;
  const std::set<std::string>* exemplar = nullptr;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const bool extra = std::any_of(sets[i].begin(), sets[i].end(),
                                   [&](const std::string& n) { return v.expected.count(n) == 0; });
    if (extra) {
      v.deviating.push_back(i);
      continue;
    }
    if (sets[i].size() < v.expected.size()) {
      v.incomplete.push_back(i);
    } else if (!exemplar) {
      exemplar = &sets[i];
      v.names = samples[i];
    }
  }
  // No sample holds the whole set (every one lost a record): name the most common one.
  if (!exemplar && mode)
    for (std::size_t i = 0; i < sets.size(); ++i)
      if (sets[i] == *mode) {
        v.names = samples[i];
        break;
      }
  return v;
}

}  // namespace d2k::measure
