// TextStream against its definition (expected_stop_outcome in utf8_oracle.h):
// whatever bytes arrive in whatever pieces, and whatever the stop sequences,
// the pieces it returns concatenate to text(), text() is the bytes up to the
// first stop (made valid UTF-8), it never contains a stop sequence, and no
// piece splits a character of valid input.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "engine/text/text_stream.h"
#include "tests/support/text_generators.h"
#include "tests/support/utf8_oracle.h"

namespace {

using astrai::TextStream;
using namespace astrai::test;

// Feeds the pieces (stopping, as the engine does, once a stop appeared) and
// finishes; returns every returned piece.
std::vector<std::string> feed(TextStream& stream, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const auto& p : pieces) {
    out.push_back(stream.push(p));
    if (stream.stopped()) break;
  }
  out.push_back(stream.finish());
  return out;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string all;
  for (const auto& p : pieces) all += p;
  return all;
}

}  // namespace

TEST_CASE("TextStream on known inputs", "[text][stream]") {
  SECTION("a stop sequence split over three pieces is never shown") {
    TextStream s({"STOP"});
    CHECK(s.push("Hello S") == "Hello ");
    CHECK(s.push("T") == "");
    CHECK(s.push("OP and more") == "");
    CHECK(s.stopped());
    CHECK(s.matched_stop() == "STOP");
    CHECK(s.text() == "Hello ");
    CHECK(s.finish() == "");
    CHECK(s.push("ignored") == "");
  }
  SECTION("text held for a stop that does not come is shown when it is ruled out, or at the end") {
    TextStream s({"STOP"});
    CHECK(s.push("ST") == "");
    CHECK(s.push("AR") == "STAR");
    CHECK(s.push("S") == "");
    CHECK(s.finish() == "S");
    CHECK(!s.stopped());
    CHECK(s.text() == "STARS");
  }
  SECTION("a character split over pieces is shown whole") {
    TextStream s;
    CHECK(s.push("caf\xC3") == "caf");
    CHECK(s.push("\xA9!") == "\xC3\xA9!");
    CHECK(s.push("\xF0\x9F") == "");
    CHECK(s.push("\x98") == "");
    CHECK(s.push("\x80") == "\xF0\x9F\x98\x80");
  }
  SECTION("bytes that can never become a character are replaced, not held") {
    TextStream s;
    CHECK(s.push("a\xFF") == "a\xEF\xBF\xBD");
    CHECK(s.push("\xC3") == "");
    CHECK(s.finish() == "\xEF\xBF\xBD");
  }
  SECTION("the stop that completes first wins, whatever the pieces; of two ending together, the longer") {
    TextStream a({"ab", "abc"});
    CHECK(a.push("xabcd") == "x");
    CHECK(a.matched_stop() == "ab");  // "ab" is complete one character before "abc"
    TextStream b({"bc", "abcd"});
    CHECK(b.push("abcd") == "a");  // "bc" completes first, though "abcd" starts earlier
    CHECK(b.matched_stop() == "bc");
    TextStream c({"b", "xab"});
    CHECK(c.push("xabc") == "");  // both end at the same byte: the longer, none of it shown
    CHECK(c.matched_stop() == "xab");
    // The case a fresh-clone run found: "aa" completes inside "baab" before it
    // does, so one character per piece and the whole text at once both cut
    // before "aa" (the old rule cut whole texts before "baab").
    for (const bool whole : {false, true}) {
      TextStream d({"baab", "aa"});
      const std::string text = "\n..baab\n\n\n\na.";
      std::string shown;
      if (whole) shown = d.push(text);
      else
        for (const char ch : text)
          if (!d.stopped()) shown += d.push(std::string(1, ch));
      shown += d.finish();
      CHECK(shown == "\n..b");
      CHECK(d.matched_stop() == "aa");
    }
  }
  SECTION("empty stop sequences are ignored") {
    TextStream s({""});
    CHECK(s.push("abc") == "abc");
    CHECK(!s.stopped());
  }
}

TEST_CASE("TextStream pieces concatenate to text(), which follows the stop rule and never holds a stop",
          "[text][stream][property]") {
  rc::prop("any bytes in any pieces, any stops", [] {
    const std::string bytes = *gen_mixed_bytes();
    const std::vector<std::string> pieces = random_split(bytes);
    const std::vector<std::string> stops = *gen_stops();
    TextStream stream(stops);
    const std::vector<std::string> out = feed(stream, pieces);
    const StopOutcome expected = expected_stop_outcome(pieces, stops);

    RC_ASSERT(joined(out) == stream.text());
    RC_ASSERT(stream.text() == expected.text);
    RC_ASSERT(stream.matched_stop() == expected.matched);
    RC_ASSERT(stream.stopped() == !expected.matched.empty());
    RC_ASSERT(is_valid_utf8(stream.text()));
    for (const auto& stop : stops)
      if (!stop.empty()) RC_ASSERT(stream.text().find(stop) == std::string::npos);
  });
  rc::prop("valid UTF-8 input: every piece is valid UTF-8 by itself (no character is split)", [] {
    const std::string text = *rc::gen::oneOf(gen_valid_utf8(), rc::gen::map(gen_mixed_bytes(), [](std::string s) {
      return oracle_sanitize(s);
    }));
    const std::vector<std::string> stops = *gen_stops();
    TextStream stream(stops);
    const std::vector<std::string> out = feed(stream, random_split(text));
    for (const auto& piece : out) RC_ASSERT(is_valid_utf8(piece));
    // Nothing was replaced: the text is a prefix of the input.
    RC_ASSERT(text.compare(0, stream.text().size(), stream.text()) == 0);
  });
}

// Self-overlapping stop strings ("...", "\n\n\n", "aab", "abab"), stops that
// are prefixes of one another, text over a tiny alphabet arriving one
// character per token, in three pieces or in random pieces. The model, from
// the definition: after the input so far, P, the text shown is P up to the
// stop that completed first (first_completed_stop: the occurrence that ends
// first, not the one that starts first) when there is one, else P less its
// longest suffix that is a proper prefix of some stop
// (that suffix may still become a stop: it must not show; anything shorter
// held back would be shown late). A hold-back that forgets the earlier
// candidates after a partial mismatch (no KMP failure links) shows "a" of
// "aaab" too early and then misses "aab".
namespace {

const std::vector<std::string> kOverlappingStops = {"...", "\n\n\n", "aab", "abab", "aa", "aba", "aaba", "a.a", "baab"};

std::string first_stop_cut(const std::string& text, const std::vector<std::string>& stops) {
  const size_t first = first_completed_stop(text, stops).first;
  return first == std::string::npos ? text : text.substr(0, first);
}

// What may be shown of `input` while generation goes on.
std::string model_shown(const std::string& input, const std::vector<std::string>& stops) {
  const std::string cut = first_stop_cut(input, stops);
  if (cut.size() < input.size()) return cut;
  size_t held = 0;
  for (const auto& s : stops)
    for (size_t len = 1; len < s.size() && len <= input.size(); ++len)
      if (input.compare(input.size() - len, len, s, 0, len) == 0) held = std::max(held, len);
  return input.substr(0, input.size() - held);
}

rc::Gen<std::string> gen_tiny_text(int max_len) {
  return rc::gen::map(rc::gen::container<std::vector<char>>(rc::gen::element('a', 'a', 'b', '.', '\n')),
                      [max_len](std::vector<char> cs) {
                        if (cs.size() > size_t(max_len)) cs.resize(size_t(max_len));
                        return std::string(cs.begin(), cs.end());
                      });
}

// 1 to 3 stops: self-overlapping ones, random tiny words, and a prefix or an
// extension of another stop.
std::vector<std::string> gen_overlapping_stops() {
  const auto n = *rc::gen::inRange(1, 4);
  std::vector<std::string> stops;
  for (int i = 0; i < n; ++i) {
    switch (*rc::gen::inRange(0, 4)) {
      case 0: stops.push_back(*rc::gen::elementOf(kOverlappingStops)); break;
      case 1: {
        const std::string w = *gen_tiny_text(5);
        stops.push_back(w.empty() ? "ab" : w);
        break;
      }
      default:
        if (stops.empty()) {
          stops.push_back(*rc::gen::elementOf(kOverlappingStops));
        } else {
          const std::string& other = stops[*rc::gen::inRange<size_t>(0, stops.size())];
          if (other.size() > 1 && *rc::gen::arbitrary<bool>())
            stops.push_back(other.substr(0, *rc::gen::inRange<size_t>(1, other.size())));
          else
            stops.push_back(other + *rc::gen::elementOf(std::string("ab.\n")));
        }
    }
  }
  return stops;
}

// Pushes the pieces one by one, checking each returned piece against the
// model; returns everything shown, finish() included.
std::string stream_checked(const std::vector<std::string>& pieces, const std::vector<std::string>& stops) {
  TextStream stream(stops);
  std::string input, shown;
  for (const auto& p : pieces) {
    input += p;
    shown += stream.push(p);
    // Never ahead of the model (nothing that may be withdrawn), never behind it.
    RC_ASSERT(shown == model_shown(input, stops));
    RC_ASSERT(stream.stopped() == (first_stop_cut(input, stops).size() < input.size()));
    if (stream.stopped()) break;
  }
  shown += stream.finish();
  RC_ASSERT(shown == stream.text());
  return shown;
}

}  // namespace

TEST_CASE("Self-overlapping stop strings in any pieces: shown as soon as ruled out, never in part",
          "[text][stream][property]") {
  rc::prop("one character per piece, three pieces, random pieces: the model's text at every step", [] {
    const std::string text = *gen_tiny_text(40);
    const std::vector<std::string> stops = gen_overlapping_stops();
    std::vector<std::string> pieces;
    switch (*rc::gen::inRange(0, 3)) {
      case 0:
        for (const char c : text) pieces.emplace_back(1, c);
        break;
      case 1: {
        size_t i = *rc::gen::inRange<size_t>(0, text.size() + 1), j = *rc::gen::inRange<size_t>(0, text.size() + 1);
        if (i > j) std::swap(i, j);
        pieces = {text.substr(0, i), text.substr(i, j - i), text.substr(j)};
        break;
      }
      default: pieces = random_split(text);
    }
    RC_LOG() << "stops " << nlohmann::json(stops).dump() << "\n";
    const std::string streamed = stream_checked(pieces, stops);
    // The oracle: the text up to the stop that completed first.
    RC_ASSERT(streamed == first_stop_cut(text, stops));
    // Non-streamed: the whole text at once.
    TextStream whole(stops);
    std::string at_once = whole.push(text);
    at_once += whole.finish();
    RC_ASSERT(streamed == at_once);
  });
}

TEST_CASE("Each self-overlapping stop split into three pieces at every pair of places", "[text][stream]") {
  for (const std::string& stop : kOverlappingStops) {
    // The stop right after text that starts it over and over: "aaab" for "aab".
    for (const std::string& text : {stop.substr(0, stop.size() - 1) + stop + "z", "x" + stop.substr(0, 1) + stop,
                                    stop.substr(0, stop.size() - 1) + "z" + stop, stop + stop}) {
      for (size_t i = 0; i <= text.size(); ++i)
        for (size_t j = i; j <= text.size(); ++j) {
          INFO("stop " << nlohmann::json(stop).dump() << " text " << nlohmann::json(text).dump() << " cut at " << i
                       << ", " << j);
          TextStream s({stop});
          std::string input, shown;
          for (const std::string& p : {text.substr(0, i), text.substr(i, j - i), text.substr(j)}) {
            input += p;
            shown += s.push(p);
            CHECK(shown == model_shown(input, {stop}));
            if (s.stopped()) break;
          }
          shown += s.finish();
          CHECK(shown == text.substr(0, text.find(stop)));
          CHECK(s.matched_stop() == stop);
        }
    }
  }
}
