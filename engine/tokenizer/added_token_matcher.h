// Finds added tokens in text as tokenizers' AddedVocabulary does: scanning
// left to right, at each position the longest token that starts there
// (leftmost-longest Aho-Corasick). Tokens are bucketed by their first byte so
// that a position looks only at those that can start there.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace astrai {

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // (content, id) pairs; empty contents are ignored.
  explicit AddedTokenMatcher(std::vector<std::pair<std::string, int>> tokens) : tokens_(std::move(tokens)) {
    std::erase_if(tokens_, [](const auto& t) { return t.first.empty(); });
    std::stable_sort(tokens_.begin(), tokens_.end(),
                     [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
    for (size_t k = 0; k < tokens_.size(); ++k) by_first_byte_[uint8_t(tokens_[k].first[0])].push_back(k);
  }

  bool empty() const { return tokens_.empty(); }

  // Calls on_text(segment, offset) for the text between tokens (empty
  // segments included, offset into `text`) and on_token(id) for each token,
  // in text order.
  template <class OnText, class OnToken>
  void split(std::string_view text, OnText&& on_text, OnToken&& on_token) const {
    size_t segment = 0;
    for (size_t pos = 0; pos < text.size();) {
      const std::pair<std::string, int>* hit = nullptr;
      for (const size_t k : by_first_byte_[uint8_t(text[pos])])
        if (text.substr(pos).starts_with(tokens_[k].first)) {
          hit = &tokens_[k];
          break;
        }
      if (!hit) {
        ++pos;
        continue;
      }
      on_text(text.substr(segment, pos - segment), segment);
      on_token(hit->second);
      pos += hit->first.size();
      segment = pos;
    }
    on_text(text.substr(segment), segment);
  }

 private:
  std::vector<std::pair<std::string, int>> tokens_;  // longest first
  std::array<std::vector<size_t>, 256> by_first_byte_;
};

}  // namespace astrai
