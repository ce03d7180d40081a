// The UTF-8 module against an independent decoder (utf8_oracle.h), which
// decodes code points and checks their ranges where engine/text/utf8 checks
// byte patterns: encode_utf8 of every code point decodes back to it;
// decode_utf8_at finds the oracle's character at every position of any
// bytes; sanitize_utf8 always yields valid UTF-8, is the identity on valid
// input and replaces exactly the bytes that start no well-formed character;
// incomplete_utf8_tail holds back exactly a proper prefix of some character.
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include "engine/text/utf8.h"
#include "tests/support/text_generators.h"
#include "tests/support/utf8_oracle.h"

namespace {

using astrai::append_utf8;
using astrai::decode_utf8;
using astrai::decode_utf8_at;
using astrai::encode_utf8;
using astrai::incomplete_utf8_tail;
using astrai::sanitize_utf8;
using namespace astrai::test;

}  // namespace

TEST_CASE("The UTF-8 oracle and encoder agree with known encodings", "[text][utf8]") {
  // RFC 3629's examples, and the last code point of each length.
  CHECK(encode_utf8(0x24) == "$");
  CHECK(encode_utf8(0xA2) == "\xC2\xA2");
  CHECK(encode_utf8(0x20AC) == "\xE2\x82\xAC");
  CHECK(encode_utf8(0x10348) == "\xF0\x90\x8D\x88");
  CHECK(encode_utf8(0x7F) == "\x7F");
  CHECK(encode_utf8(0x7FF) == "\xDF\xBF");
  CHECK(encode_utf8(0xFFFF) == "\xEF\xBF\xBF");
  CHECK(encode_utf8(0x10FFFF) == "\xF4\x8F\xBF\xBF");
  CHECK(encode_utf8(U"a\u00E9\u20AC\U0001F600") == "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  CHECK(decode_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") == U"a\u00E9\u20AC\U0001F600");
  CHECK(is_valid_utf8("\xF4\x8F\xBF\xBF"));    // U+10FFFF
  CHECK(!is_valid_utf8("\xF4\x90\x80\x80"));   // U+110000
  CHECK(!is_valid_utf8("\xED\xA0\x80"));       // a surrogate
  CHECK(!is_valid_utf8("\xC0\xAF"));           // overlong '/'
  CHECK(!is_valid_utf8("\xE0\x80\xAF"));       // overlong '/'
  CHECK(!is_valid_utf8("\xC3"));               // truncated
}

TEST_CASE("encode_utf8 of every code point is the one the oracle decodes back", "[text][utf8]") {
  // All 1,114,112 values: exhaustive, so nothing is left to chance.
  int wrong = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const std::string s = encode_utf8(cp);
    if (cp >= 0xD800 && cp <= 0xDFFF) {  // no UTF-8 form: U+FFFD instead
      wrong += s == "\xEF\xBF\xBD" ? 0 : 1;
      continue;
    }
    const auto back = decode_at(s, 0);
    wrong += back && back->first == cp && back->second == s.size() ? 0 : 1;
  }
  CHECK(wrong == 0);
  for (const char32_t beyond : {char32_t(0x110000), char32_t(0x7FFFFFFF), char32_t(0xFFFFFFFF)})
    CHECK(encode_utf8(beyond) == "\xEF\xBF\xBD");
}

TEST_CASE("decode_utf8_at finds the oracle's character at every position", "[text][utf8][property]") {
  // Every string of one or two bytes, exhaustively.
  int wrong = 0;
  for (int a = 0; a < 256; ++a)
    for (int b = -1; b < 256; ++b) {
      std::string s(1, char(a));
      if (b >= 0) s += char(b);
      const auto got = decode_utf8_at(s, 0);
      const auto want = decode_at(s, 0);
      wrong += bool(got) == bool(want) && (!got || (got->code_point == want->first && got->length == want->second))
                   ? 0 : 1;
    }
  CHECK(wrong == 0);
  rc::prop("any bytes, every position", [] {
    const std::string bytes = *rc::gen::oneOf(gen_mixed_bytes(), gen_any_bytes(), gen_valid_utf8());
    for (size_t i = 0; i < bytes.size(); ++i) {
      const auto got = decode_utf8_at(bytes, i);
      const auto want = decode_at(bytes, i);
      RC_ASSERT(bool(got) == bool(want));
      if (got) RC_ASSERT(got->code_point == want->first && got->length == want->second);
    }
  });
  rc::prop("decoding then encoding is the oracle's replacement", [] {
    const std::string bytes = *rc::gen::oneOf(gen_mixed_bytes(), gen_any_bytes());
    RC_ASSERT(encode_utf8(decode_utf8(bytes)) == oracle_sanitize(bytes));
  });
  rc::prop("decoding valid text gives back its code points", [] {
    const auto cps = *rc::gen::container<std::vector<uint32_t>>(
        rc::gen::oneOf(gen_code_point_near_edges(), gen_code_point_of_scripts()));
    std::string s;
    for (const uint32_t cp : cps) append_utf8(s, cp);
    RC_ASSERT(decode_utf8(s) == std::u32string(cps.begin(), cps.end()));
  });
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
    const std::string last = encode_utf8(*rc::gen::suchThat(gen_code_point_near_edges(), [](uint32_t cp) { return cp >= 0x80; }));
    const size_t keep = *rc::gen::inRange<size_t>(1, last.size());
    RC_ASSERT(incomplete_utf8_tail(text) == 0u);
    RC_ASSERT(incomplete_utf8_tail(text + last.substr(0, keep)) == keep);
  });
  rc::prop("any bytes: the held tail is the one suffix that is a proper prefix of a character", [] {
    const std::string bytes = *gen_mixed_bytes();
    RC_ASSERT(incomplete_utf8_tail(bytes) == unfinished_tail(bytes));
  });
}
