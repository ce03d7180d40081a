// The UTF-8 helpers against an independent decoder (utf8_oracle.h):
// sanitize_utf8 always yields valid UTF-8, is the identity on valid input and
// replaces exactly the bytes that start no well-formed character;
// incomplete_utf8_tail holds back exactly a proper prefix of some character.
#include <string>

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "engine/text/utf8.h"
#include "tests/engine/text/text_generators.h"
#include "tests/engine/text/utf8_oracle.h"

namespace {

using astrai::incomplete_utf8_tail;
using astrai::sanitize_utf8;
using namespace astrai::test;

}  // namespace

TEST_CASE("The UTF-8 oracle agrees with known encodings", "[text][utf8]") {
  CHECK(encode_utf8(0x24) == "$");
  CHECK(encode_utf8(0xA2) == "\xC2\xA2");
  CHECK(encode_utf8(0x20AC) == "\xE2\x82\xAC");
  CHECK(encode_utf8(0x10348) == "\xF0\x90\x8D\x88");
  CHECK(is_valid_utf8("\xF4\x8F\xBF\xBF"));    // U+10FFFF
  CHECK(!is_valid_utf8("\xF4\x90\x80\x80"));   // U+110000
  CHECK(!is_valid_utf8("\xED\xA0\x80"));       // a surrogate
  CHECK(!is_valid_utf8("\xC0\xAF"));           // overlong '/'
  CHECK(!is_valid_utf8("\xE0\x80\xAF"));       // overlong '/'
  CHECK(!is_valid_utf8("\xC3"));               // truncated
}

TEST_CASE("sanitize_utf8 on known inputs", "[text][utf8]") {
  CHECK(sanitize_utf8("") == "");
  CHECK(sanitize_utf8("h\xC3\xA9llo") == "h\xC3\xA9llo");
  CHECK(sanitize_utf8("a\xFF" "b") == "a\xEF\xBF\xBD" "b");
  CHECK(sanitize_utf8("\xC3") == "\xEF\xBF\xBD");
  // An overlong form: both bytes are bad, each its own replacement.
  CHECK(sanitize_utf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  // A truncated 3-byte character before ASCII: two replacements, then the ASCII.
  CHECK(sanitize_utf8("\xE2\x82(") == "\xEF\xBF\xBD\xEF\xBF\xBD(");
}

TEST_CASE("sanitize_utf8 yields valid UTF-8, is the identity on valid input and replaces bad bytes one by one",
          "[text][utf8][property]") {
  rc::prop("any bytes: valid output equal to the oracle's replacement, and idempotent", [] {
    const std::string bytes = *rc::gen::oneOf(gen_mixed_bytes(), rc::gen::arbitrary<std::string>(),
                                              rc::gen::map(rc::gen::container<std::vector<unsigned char>>(
                                                               rc::gen::arbitrary<unsigned char>()),
                                                           [](const std::vector<unsigned char>& b) {
                                                             return std::string(b.begin(), b.end());
                                                           }));
    const std::string clean = sanitize_utf8(bytes);
    RC_ASSERT(is_valid_utf8(clean));
    RC_ASSERT(clean == oracle_sanitize(bytes));
    RC_ASSERT(sanitize_utf8(clean) == clean);
  });
  rc::prop("valid UTF-8 passes unchanged", [] {
    const std::string text = *gen_valid_utf8();
    RC_ASSERT(is_valid_utf8(text));
    RC_ASSERT(sanitize_utf8(text) == text);
  });
}

TEST_CASE("incomplete_utf8_tail holds back exactly an unfinished character", "[text][utf8][property]") {
  CHECK(incomplete_utf8_tail("") == 0);
  CHECK(incomplete_utf8_tail("abc") == 0);
  CHECK(incomplete_utf8_tail("a\xC3") == 1);
  CHECK(incomplete_utf8_tail("a\xF0\x9F\x98") == 3);
  CHECK(incomplete_utf8_tail("\xF0\x9F\x98\x80") == 0);
  CHECK(incomplete_utf8_tail("a\xC0") == 0);          // can never complete
  CHECK(incomplete_utf8_tail("a\xED\xA0") == 0);      // would be a surrogate
  CHECK(incomplete_utf8_tail("a\xF4\x90") == 0);      // would be past U+10FFFF
  rc::prop("valid text cut inside its last character: the cut part is held", [] {
    const std::string text = *gen_valid_utf8();
    const std::string last = encode_utf8(*rc::gen::suchThat(gen_code_point(), [](uint32_t cp) { return cp >= 0x80; }));
    const size_t keep = *rc::gen::inRange<size_t>(1, last.size());
    RC_ASSERT(incomplete_utf8_tail(text) == 0u);
    RC_ASSERT(incomplete_utf8_tail(text + last.substr(0, keep)) == keep);
  });
  rc::prop("any bytes: the held tail is the one suffix that is a proper prefix of a character", [] {
    const std::string bytes = *gen_mixed_bytes();
    RC_ASSERT(incomplete_utf8_tail(bytes) == unfinished_tail(bytes));
  });
}
