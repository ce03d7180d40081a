#include "engine/text/text_stream.h"

#include <algorithm>

#include "engine/text/utf8.h"

namespace astrai {

TextStream::TextStream(std::vector<std::string> stop_sequences) {
  for (auto& s : stop_sequences)
    if (!s.empty()) stops_.push_back(std::move(s));
}

// Shows the first n pending bytes.
std::string TextStream::emit(size_t n) {
  std::string piece = sanitize_utf8(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  emitted_ += piece;
  return piece;
}

// The longest suffix of pending_ that is a proper prefix of some stop
// sequence: it may grow into that stop sequence, so it must wait.
size_t TextStream::held_for_stop_prefix() const {
  size_t held = 0;
  for (const auto& stop : stops_) {
    const size_t longest = std::min(stop.size() - 1, pending_.size());
    for (size_t len = longest; len > held; --len)
      if (std::string_view(pending_).substr(pending_.size() - len) == std::string_view(stop).substr(0, len)) {
        held = len;
        break;
      }
  }
  return held;
}

std::string TextStream::push(std::string_view bytes) {
  if (stopped()) return "";
  pending_.append(bytes);
  // Invariant: text already shown never ends with the start of a stop
  // sequence, so any occurrence lies wholly inside pending_.
  size_t first = std::string::npos;
  for (const auto& stop : stops_) {
    const size_t at = pending_.find(stop);
    if (at < first || (at == first && at != std::string::npos && stop.size() > matched_stop_.size())) {
      first = at;
      matched_stop_ = stop;
    }
  }
  if (first != std::string::npos) {
    std::string piece = emit(first);
    pending_.clear();
    return piece;
  }
  const size_t held = std::max(held_for_stop_prefix(), incomplete_utf8_tail(pending_));
  return emit(pending_.size() - held);
}

std::string TextStream::finish() {
  if (stopped()) return "";
  return emit(pending_.size());
}

}  // namespace astrai
