#include "engine/text/text_stream.h"

#include <algorithm>

#include "engine/text/utf8.h"

namespace astrai {

TextStream::TextStream(std::vector<std::string> stop_sequences) {
  for (auto& s : stop_sequences)
    if (!s.empty()) stops_.push_back(sanitize_utf8(s));
}

// Shows the first n pending bytes (a character boundary: see push()).
std::string TextStream::emit(size_t n) {
  std::string piece = pending_.substr(0, n);
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

// Ends the text before the stop sequence that completed first in pending_,
// if one did: the occurrence that ends first (a stop counts once it is
// complete, as a server checking after each token sees it), and of those
// ending at the same byte the longest, so none of it is shown. The outcome
// is then the same whatever pieces the text came in. Invariant: text
// already shown never ends with the start of a stop sequence, so any
// occurrence lies wholly inside pending_.
bool TextStream::cut_at_stop() {
  size_t start = std::string::npos, end = std::string::npos;
  for (const auto& stop : stops_) {
    const size_t at = pending_.find(stop);  // a stop's first occurrence is also the first to end
    if (at == std::string::npos) continue;
    if (at + stop.size() < end || (at + stop.size() == end && stop.size() > matched_stop_.size())) {
      start = at;
      end = at + stop.size();
      matched_stop_ = stop;
    }
  }
  if (start == std::string::npos) return false;
  pending_.resize(start);
  unfinished_.clear();
  return true;
}

std::string TextStream::push(std::string_view bytes) {
  if (stopped()) return "";
  // Everything but a character still being completed is final: made valid
  // UTF-8 now, so stop sequences are matched against the text as shown.
  std::string raw = std::move(unfinished_);
  raw.append(bytes);
  const size_t tail = incomplete_utf8_tail(raw);
  pending_ += sanitize_utf8(std::string_view(raw).substr(0, raw.size() - tail));
  unfinished_ = raw.substr(raw.size() - tail);
  if (cut_at_stop()) return emit(pending_.size());
  // pending_ and the stops are valid UTF-8, so a held stop prefix starts on a
  // character boundary and no shown piece splits a character.
  return emit(pending_.size() - held_for_stop_prefix());
}

std::string TextStream::finish() {
  if (stopped()) return "";
  // The unfinished character will never complete: it is shown as U+FFFD,
  // which may complete a stop sequence.
  pending_ += sanitize_utf8(unfinished_);
  unfinished_.clear();
  cut_at_stop();
  return emit(pending_.size());
}

}  // namespace astrai
