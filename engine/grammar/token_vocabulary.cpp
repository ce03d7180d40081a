#include "engine/grammar/token_vocabulary.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace astrai::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int> end_ids) {
  auto body = std::make_shared<Body>();
  body->token_bytes = std::move(token_bytes);
  std::sort(end_ids.begin(), end_ids.end());
  end_ids.erase(std::unique(end_ids.begin(), end_ids.end()), end_ids.end());
  for (const int id : end_ids)
    if (id < 0 || size_t(id) >= body->token_bytes.size())
      throw std::invalid_argument("TokenVocabulary: end id " + std::to_string(id) + " out of range");
  body->end_ids = std::move(end_ids);
  const auto& tb = body->token_bytes;
  for (size_t id = 0; id < tb.size(); ++id)
    if (!tb[id].empty() && !std::binary_search(body->end_ids.begin(), body->end_ids.end(), int(id)))
      body->sorted_ids.push_back(int32_t(id));
  std::sort(body->sorted_ids.begin(), body->sorted_ids.end(),
            [&](int32_t a, int32_t b) { return tb[size_t(a)] != tb[size_t(b)] ? tb[size_t(a)] < tb[size_t(b)] : a < b; });
  body->rank.assign(tb.size(), -1);
  for (size_t k = 0; k < body->sorted_ids.size(); ++k) body->rank[size_t(body->sorted_ids[k])] = int32_t(k);

  // The trie in preorder from the sorted tokens: each token shares its longest
  // common prefix with the previous one; nodes below that prefix are closed.
  auto& trie = body->trie;
  trie.push_back({0, 0, 0, 0});
  std::vector<int32_t> path{0};  // path[d]: the node of the current token's first d bytes
  const std::string* prev = nullptr;
  for (size_t k = 0; k < body->sorted_ids.size(); ++k) {
    const std::string& t = tb[size_t(body->sorted_ids[k])];
    size_t common = 0;
    if (prev) {
      const size_t limit = std::min(prev->size(), t.size());
      while (common < limit && (*prev)[common] == t[common]) ++common;
    }
    while (path.size() > common + 1) {
      trie[size_t(path.back())].subtree_end = int32_t(trie.size());
      path.pop_back();
    }
    for (size_t d = common; d < t.size(); ++d) {
      path.push_back(int32_t(trie.size()));
      trie.push_back({uint8_t(t[d]), 0, int32_t(k), 0});
    }
    TrieNode& end = trie[size_t(path.back())];
    if (end.token_count == 0) end.first_token = int32_t(k);
    ++end.token_count;
    prev = &t;
  }
  while (!path.empty()) {
    trie[size_t(path.back())].subtree_end = int32_t(trie.size());
    path.pop_back();
  }
  body_ = std::move(body);
}

bool TokenVocabulary::is_end(int id) const {
  return std::binary_search(body_->end_ids.begin(), body_->end_ids.end(), id);
}

}  // namespace astrai::grammar
