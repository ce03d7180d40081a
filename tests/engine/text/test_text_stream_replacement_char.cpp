// Stop sequences are matched against the text as it is shown, after invalid
// bytes became U+FFFD: a stop sequence that contains U+FFFD (a client may send
// "\uFFFD" in a JSON stop list) must not appear in the text either, whether
// the invalid byte comes mid-stream or is an unfinished character flushed by
// finish(). Found by fuzzing (tests/fuzz/fuzz_text_stream, see
// docs/reliability.md): the stream matched raw bytes, so "a\xFF" + "b" was
// shown as "a\uFFFDb" despite the stop "a\uFFFDb".
#include <catch2/catch.hpp>

#include <string>

#include "engine/text/text_stream.h"

using astrai::TextStream;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}

TEST_CASE("A stop sequence containing U+FFFD matches an invalid byte shown as U+FFFD", "[text][stream]") {
  TextStream s({"a" + kReplacement + "b"});
  std::string shown = s.push("x a\xFF");
  shown += s.push("b and more");
  shown += s.finish();
  CHECK(s.stopped());
  CHECK(s.matched_stop() == "a" + kReplacement + "b");
  CHECK(shown == "x ");
  CHECK(s.text() == "x ");
}

TEST_CASE("A stop sequence ending in U+FFFD matches an unfinished character flushed at the end", "[text][stream]") {
  TextStream s({"z" + kReplacement});
  std::string shown = s.push("xyz\xC3");  // \xC3 may still become a character: held
  CHECK(s.text().find("z") == std::string::npos);
  shown += s.finish();  // now it is final: shown as U+FFFD, which completes the stop
  CHECK(s.stopped());
  CHECK(shown == "xy");
  CHECK(s.text() == "xy");
}

TEST_CASE("An unfinished character is not taken for U+FFFD while it can still complete", "[text][stream]") {
  TextStream s({kReplacement});
  std::string shown = s.push("caf\xC3");
  shown += s.push("\xA9!");  // completes é: nothing invalid, no stop
  shown += s.finish();
  CHECK_FALSE(s.stopped());
  CHECK(shown == "caf\xC3\xA9!");
}
