// Finds the pages that already hold the K/V of a prompt's leading tokens.
//
// Only full pages are registered. The key of page i of a sequence is a hash
// chained over the token ids of that page and of every page before it:
//   h_0 = hash(kRootPrefixHash, tokens[0, P)),  h_i = hash(h_{i-1}, tokens[iP, (i+1)P))
// so equal keys mean (up to collisions) equal whole prefixes, and K/V, which
// depend on every earlier token, can be reused. A hash is only a candidate:
// each entry keeps its page's tokens and the page holding the page before it
// (its parent), and a match walks the chain checking both, so a collision can
// cost time but can never return another prompt's pages.
//
// Removing a page also removes every page registered after it (its
// descendants): without their parent they can never be matched again.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace astrai {

// hash(parent_hash, page_tokens) -> chained hash of the prefix ending with this page.
using PrefixHash = std::function<uint64_t(uint64_t parent_hash, std::span<const int> page_tokens)>;

inline constexpr uint64_t kRootPrefixHash = 0x243f6a8885a308d3ULL;  // the "parent hash" of a first page

// Mixes each token into the parent hash with the splitmix64 finalizer.
uint64_t default_prefix_hash(uint64_t parent_hash, std::span<const int> page_tokens);

class PrefixCache {
 public:
  // Pages are numbered [0, n_pages). Throws std::invalid_argument when
  // n_pages < 1, page_size < 1 or the hash function is empty.
  PrefixCache(int n_pages, int page_size, PrefixHash hash = default_prefix_hash);

  int page_size() const { return page_size_; }

  // The pages holding the longest registered prefix of `tokens`, at most
  // max_pages of them: result[i] holds tokens [i*P, (i+1)*P).
  std::vector<int> match(std::span<const int> tokens, int max_pages) const;

  // Registers `page` as holding `page_tokens` (exactly page_size of them)
  // right after the registered page `parent` (-1: the first page of a
  // sequence). Returns false and changes nothing when that same prefix is
  // already registered on another page. Throws std::logic_error when `page`
  // is already registered or `parent` is not.
  bool insert(int page, int parent, std::span<const int> page_tokens);

  // Unregisters `page` and all its descendants; returns them, `page` first.
  // Throws std::logic_error when `page` is not registered.
  std::vector<int> erase(int page);

  bool contains(int page) const { return page >= 0 && page < int(entries_.size()) && entries_[size_t(page)]; }
  int size() const { return n_entries_; }

  // Throws std::logic_error naming the first inconsistency between the
  // entries, the hash index and the parent/child links.
  void check_invariants() const;

 private:
  struct Entry {
    uint64_t hash = 0;
    int parent = -1;
    std::vector<int> tokens;
    std::vector<int> children;
  };
  // The registered page whose prefix hash, parent and tokens are all these, or nullopt.
  std::optional<int> find(uint64_t hash, int parent, std::span<const int> tokens) const;
  void check_page(int page) const;

  int page_size_;
  PrefixHash hash_;
  std::vector<std::optional<Entry>> entries_;       // by page
  std::unordered_multimap<uint64_t, int> by_hash_;  // chained hash -> page
  int n_entries_ = 0;
};

}  // namespace astrai
