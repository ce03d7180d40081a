// PrefixCache: the chained-hash index of full pages, verified by tokens.
#include "engine/kv_cache/prefix_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "reference/splitmix64.h"

namespace astrai {

namespace {

std::string page_name(int page) { return "page " + std::to_string(page); }

}  // namespace

uint64_t default_prefix_hash(uint64_t parent_hash, std::span<const int> page_tokens) {
  uint64_t h = parent_hash;
  for (const int token : page_tokens) h = splitmix64_mix(h + kSplitmix64Gamma + uint32_t(token));
  return h;
}

PrefixCache::PrefixCache(int n_pages, int page_size, PrefixHash hash)
    : page_size_(page_size), hash_(std::move(hash)) {
  if (n_pages < 1)
    throw std::invalid_argument("PrefixCache: n_pages must be at least 1, got " + std::to_string(n_pages));
  if (page_size < 1)
    throw std::invalid_argument("PrefixCache: page_size must be at least 1, got " + std::to_string(page_size));
  if (!hash_) throw std::invalid_argument("PrefixCache: the prefix hash function is empty");
  entries_.resize(size_t(n_pages));
}

void PrefixCache::check_page(int page) const {
  if (page < 0 || page >= int(entries_.size()))
    throw std::invalid_argument("PrefixCache: " + page_name(page) + " is outside [0, " +
                                std::to_string(entries_.size()) + ")");
}

std::optional<int> PrefixCache::find(uint64_t hash, int parent, std::span<const int> tokens) const {
  const auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const Entry& entry = *entries_[size_t(it->second)];
    if (entry.parent == parent && std::equal(tokens.begin(), tokens.end(), entry.tokens.begin(), entry.tokens.end()))
      return it->second;
  }
  return std::nullopt;
}

std::vector<int> PrefixCache::match(std::span<const int> tokens, int max_pages) const {
  std::vector<int> pages;
  const size_t n_full = std::min(tokens.size() / size_t(page_size_), size_t(std::max(max_pages, 0)));
  uint64_t hash = kRootPrefixHash;
  int parent = -1;
  for (size_t i = 0; i < n_full; ++i) {
    const std::span<const int> chunk = tokens.subspan(i * size_t(page_size_), size_t(page_size_));
    hash = hash_(hash, chunk);
    const std::optional<int> page = find(hash, parent, chunk);
    if (!page) break;
    pages.push_back(*page);
    parent = *page;
  }
  return pages;
}

bool PrefixCache::insert(int page, int parent, std::span<const int> page_tokens) {
  check_page(page);
  if (contains(page)) throw std::logic_error("PrefixCache: " + page_name(page) + " is already registered");
  if (parent != -1 && !contains(parent))
    throw std::logic_error("PrefixCache: parent " + page_name(parent) + " of " + page_name(page) +
                           " is not registered");
  if (int(page_tokens.size()) != page_size_)
    throw std::invalid_argument("PrefixCache: a page holds " + std::to_string(page_size_) + " tokens, got " +
                                std::to_string(page_tokens.size()));
  const uint64_t hash = hash_(parent == -1 ? kRootPrefixHash : entries_[size_t(parent)]->hash, page_tokens);
  if (find(hash, parent, page_tokens)) return false;
  entries_[size_t(page)] = Entry{hash, parent, std::vector<int>(page_tokens.begin(), page_tokens.end()), {}};
  if (parent != -1) entries_[size_t(parent)]->children.push_back(page);
  by_hash_.emplace(hash, page);
  ++n_entries_;
  return true;
}

std::vector<int> PrefixCache::erase(int page) {
  check_page(page);
  if (!contains(page)) throw std::logic_error("PrefixCache: cannot erase " + page_name(page) + ": not registered");
  const int parent = entries_[size_t(page)]->parent;
  if (parent != -1) std::erase(entries_[size_t(parent)]->children, page);
  // Breadth-first over the subtree; `removed` doubles as the queue.
  std::vector<int> removed{page};
  for (size_t next = 0; next < removed.size(); ++next) {
    Entry& entry = *entries_[size_t(removed[next])];
    removed.insert(removed.end(), entry.children.begin(), entry.children.end());
    const auto [first, last] = by_hash_.equal_range(entry.hash);
    for (auto it = first; it != last; ++it) {
      if (it->second == removed[next]) {
        by_hash_.erase(it);
        break;
      }
    }
  }
  for (const int p : removed) entries_[size_t(p)].reset();
  n_entries_ -= int(removed.size());
  return removed;
}

void PrefixCache::check_invariants() const {
  auto fail = [](const std::string& what) { throw std::logic_error("PrefixCache invariant broken: " + what); };
  int n = 0;
  for (int p = 0; p < int(entries_.size()); ++p) {
    if (!entries_[size_t(p)]) continue;
    ++n;
    const Entry& entry = *entries_[size_t(p)];
    if (int(entry.tokens.size()) != page_size_) fail(page_name(p) + " holds a partial page");
    if (entry.parent != -1 && !contains(entry.parent)) fail(page_name(p) + " has an unregistered parent");
    const uint64_t parent_hash = entry.parent == -1 ? kRootPrefixHash : entries_[size_t(entry.parent)]->hash;
    if (entry.hash != hash_(parent_hash, entry.tokens)) fail(page_name(p) + " has a stale chained hash");
    if (find(entry.hash, entry.parent, entry.tokens) != p) fail(page_name(p) + " is not found by its own key");
    for (const int child : entry.children)
      if (!contains(child) || entries_[size_t(child)]->parent != p) fail(page_name(p) + " lists a wrong child");
    if (entry.parent != -1) {
      const auto& siblings = entries_[size_t(entry.parent)]->children;
      if (std::count(siblings.begin(), siblings.end(), p) != 1) fail(page_name(p) + " missing from its parent");
    }
  }
  if (n != n_entries_ || int(by_hash_.size()) != n) fail("entry counts disagree with the hash index");
}

}  // namespace astrai
