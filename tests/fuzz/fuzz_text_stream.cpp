// Fuzz target: the stop-sequence holdback of the streaming path (TextStream).
//
// Input layout (easy to write by hand for the seed corpus):
//   byte 0: the number of stop strings, mod 4;
//   then each stop string, then each text piece, as [length mod 16][bytes];
//   the last piece takes whatever is left.
// Pieces and stop strings are any bytes (a model may emit anything; a stop
// string that is not UTF-8 is matched as it would be shown, with U+FFFD).
//
// Properties, against an oracle written here from the definition, with its
// own UTF-8 rules (not engine/text/utf8.h): text is shown with every byte that
// does not start a well-formed character replaced by U+FFFD; a character that
// may still be completed by later bytes is not decided yet. Generation stops
// at the first piece after which the decided text contains a stop string, and
// the answer is that text cut before the stop that completed first (the
// occurrence that ends first; of those ending at one byte, the longest);
// otherwise it is all bytes, decided at the end.
//  1. the pieces returned by push() and finish() concatenate to text();
//  2. text() equals the oracle's answer, and stopped() whether it stopped;
//  3. text() and every streamed piece are valid UTF-8; text() contains no
//     stop string;
//  4. after a stop, push() returns "".
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/text_stream.h"
#include "tests/fuzz/fuzz_support.h"

namespace astrai::fuzz {
namespace {

struct StreamCase {
  std::vector<std::string> stops;
  std::vector<std::string> pieces;
};

StreamCase decode_stream_case(const uint8_t* data, size_t size) {
  StreamCase c;
  size_t at = 0;
  auto next_string = [&] {
    const size_t length = at < size ? data[at++] % 16 : 0;
    const size_t n = std::min(length, size - at);
    std::string s(reinterpret_cast<const char*>(data + at), n);
    at += n;
    return s;
  };
  const size_t n_stops = size > 0 ? data[at++] % 4 : 0;
  for (size_t i = 0; i < n_stops; ++i) c.stops.push_back(next_string());
  while (at < size) c.pieces.push_back(next_string());
  return c;
}

// The byte length a lead byte announces (1 to 4), or 0 for a byte no
// character starts with.
size_t announced_length(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 0;
}

// One U+FFFD for each byte that does not start a well-formed character.
std::string shown_form(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = announced_length(static_cast<unsigned char>(s[i]));
    if (n != 0 && i + n <= s.size() && is_valid_utf8(s.substr(i, n))) {
      out += s.substr(i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// The length of the trailing bytes that some further bytes could still make
// into a well-formed character (0 if none): tried by brute force.
size_t undecided_tail(std::string_view s) {
  for (size_t len = 1; len <= 3 && len <= s.size(); ++len) {
    const std::string tail(s.substr(s.size() - len));
    const auto lead = static_cast<unsigned char>(tail[0]);
    if ((lead & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t n = announced_length(lead);
    if (n <= len) return 0;
    for (int second = 0x80; second <= 0xBF; ++second) {
      std::string completed = tail;
      if (len == 1) completed += char(second);
      while (completed.size() < n) completed += '\x80';
      if (is_valid_utf8(completed)) return len;
      if (len > 1) break;  // the second byte is given: one try decides
    }
    return 0;
  }
  return 0;
}

struct Expected {
  std::string text;
  bool stopped = false;
};

// Where the text ends: before the occurrence that ends first (a stop counts
// when it is complete), the longest of those ending at the same byte.
size_t earliest_stop(const std::string& text, const std::vector<std::string>& shown_stops) {
  size_t cut = std::string::npos, end = std::string::npos;
  for (const auto& stop : shown_stops) {
    const size_t at = stop.empty() ? std::string::npos : text.find(stop);
    if (at == std::string::npos) continue;
    if (at + stop.size() < end || (at + stop.size() == end && at < cut)) {
      end = at + stop.size();
      cut = at;
    }
  }
  return cut;
}

// The definition, computed the slow, obvious way.
Expected oracle(const StreamCase& c) {
  std::vector<std::string> shown_stops;
  for (const auto& stop : c.stops) shown_stops.push_back(shown_form(stop));
  std::string raw;
  for (const auto& piece : c.pieces) {
    raw += piece;
    const std::string decided = shown_form(std::string_view(raw).substr(0, raw.size() - undecided_tail(raw)));
    if (const size_t cut = earliest_stop(decided, shown_stops); cut != std::string::npos)
      return {decided.substr(0, cut), true};
  }
  const std::string all = shown_form(raw);
  if (const size_t cut = earliest_stop(all, shown_stops); cut != std::string::npos) return {all.substr(0, cut), true};
  return {all, false};
}

}  // namespace

int fuzz_text_stream(const uint8_t* data, size_t size) {
  const StreamCase c = decode_stream_case(data, size);

  TextStream stream(c.stops);
  std::string streamed;
  bool stopped_before = false;
  for (const auto& piece : c.pieces) {
    const std::string shown = stream.push(piece);
    if (stopped_before) check(shown.empty(), "push after a stop returns nothing");
    check(is_valid_utf8(shown), "every streamed piece is valid UTF-8 (no character split)");
    streamed += shown;
    stopped_before = stream.stopped();
  }
  const std::string last = stream.finish();
  check(is_valid_utf8(last), "the piece finish() returns is valid UTF-8");
  streamed += last;

  check(streamed == stream.text(), "streamed pieces concatenate to text()");
  const Expected want = oracle(c);
  check(stream.stopped() == want.stopped, "stopped() iff a stop string occurred");
  check(stream.text() == want.text, "text() equals the non-streamed answer");
  check(is_valid_utf8(stream.text()), "text() is valid UTF-8");
  for (const auto& stop : c.stops)
    if (!stop.empty())
      check(stream.text().find(shown_form(stop)) == std::string::npos, "text() contains no stop string");
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_text_stream)
