// TextStream against its definition (expected_stop_outcome in utf8_oracle.h):
// whatever bytes arrive in whatever pieces, and whatever the stop sequences,
// the pieces it returns concatenate to text(), text() is the bytes up to the
// first stop (made valid UTF-8), it never contains a stop sequence, and no
// piece splits a character of valid input.
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "engine/text/text_stream.h"
#include "tests/engine/text/text_generators.h"
#include "tests/engine/text/utf8_oracle.h"

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
  SECTION("of two stops at the same place the longer one is reported; the earlier one wins otherwise") {
    TextStream a({"ab", "abc"});
    CHECK(a.push("xabcd") == "x");
    CHECK(a.matched_stop() == "abc");
    TextStream b({"bc", "abcd"});
    CHECK(b.push("abc") == "a");  // "bc" completes first
    CHECK(b.matched_stop() == "bc");
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
