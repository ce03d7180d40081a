// Turns the bytes of generated tokens into text that is safe to show as it
// arrives:
//  - a UTF-8 character is never split across two pieces;
//  - a stop sequence is never shown, nor any text that might still turn out to
//    be the start of one: such text is held back until it is decided.
// Stop sequences are matched against the text as shown, after invalid bytes
// became U+FFFD, so a stop sequence containing U+FFFD is honoured too.
// The pieces returned by push() and finish() concatenate to text(), the whole
// non-streamed answer, so streamed and non-streamed output always agree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace astrai {

class TextStream {
 public:
  // Empty stop sequences are ignored; invalid UTF-8 in one is read as U+FFFD,
  // as it would be shown.
  explicit TextStream(std::vector<std::string> stop_sequences = {});

  // Adds the bytes of one token; returns the text that became safe to show
  // (possibly empty). After a stop sequence has appeared, returns "" and
  // ignores further bytes.
  std::string push(std::string_view bytes);

  // The end of generation: returns everything still held back (with invalid
  // UTF-8 replaced by U+FFFD). Nothing is held back after a stop sequence.
  std::string finish();

  bool stopped() const { return !matched_stop_.empty(); }
  // The stop sequence that ended the text, or "" when none did.
  const std::string& matched_stop() const { return matched_stop_; }
  // Everything returned so far.
  const std::string& text() const { return emitted_; }

 private:
  std::string emit(size_t n);
  size_t held_for_stop_prefix() const;
  bool cut_at_stop();

  std::vector<std::string> stops_;
  std::string pending_;     // text not shown yet: valid UTF-8, as it will be shown
  std::string unfinished_;  // the bytes of a character not complete yet (at most 3)
  std::string emitted_;
  std::string matched_stop_;
};

}  // namespace astrai
