// Fuzz target: the tokenizer on any input. The first byte picks the mode:
//  - even: the rest is text. encode never fails, gives ids in range, BOS first
//    when asked, and decode(encode(text)) == text (with and without BOS);
//  - odd: the rest is a sequence of ids (2 bytes each, mapped onto
//    [-4, vocab + 4) so both valid and invalid ids occur). decode throws
//    std::invalid_argument exactly when an id is out of range; otherwise its
//    text survives a round trip: decode(encode(decode(ids))) == decode(ids).
// The vocabulary is the synthetic one (specials, 256 byte pieces, ASCII,
// words) plus multi-byte UTF-8 pieces, so merges across code points happen.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/synthetic_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

namespace astrai::fuzz {
namespace {

const Tokenizer& fuzz_vocabulary() {
  static const Tokenizer tokenizer = [] {
    const Tokenizer base = make_synthetic_tokenizer(700);
    std::vector<std::string> pieces = base.pieces();
    std::vector<float> scores = base.scores();
    std::vector<TokenType> types = base.types();
    // é, " é", €, "é€", an emoji, and a lone lead byte as a Normal piece.
    const char* extras[] = {"\xC3\xA9", " \xC3\xA9", "\xE2\x82\xAC", "\xC3\xA9\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                            "\xC3", " a\xC3\xA9", "ab"};  // "ab" repeats an existing piece
    float score = -1000.0f;
    for (const char* e : extras) {
      pieces.emplace_back(e);
      scores.push_back(score--);
      types.push_back(TokenType::Normal);
    }
    return Tokenizer(std::move(pieces), std::move(scores), std::move(types), 1, 2, 0);
  }();
  return tokenizer;
}

void check_encode(const Tokenizer& tok, std::string_view text) {
  for (const bool bos : {true, false}) {
    const std::vector<int> ids = tok.encode(text, bos);
    for (const int id : ids) check(id >= 0 && id < tok.vocab_size(), "encode gives ids in range");
    if (bos) check(!ids.empty() && ids[0] == tok.bos_id(), "encode(text, true) starts with BOS");
    check(tok.decode(ids) == text, "decode(encode(text)) == text");
  }
}

void check_decode(const Tokenizer& tok, const uint8_t* data, size_t size) {
  std::vector<int> ids;
  bool all_in_range = true;
  const int span = tok.vocab_size() + 8;
  for (size_t i = 0; i + 1 < size; i += 2) {
    const int raw = int(data[i]) | (int(data[i + 1]) << 8);
    ids.push_back(raw % span - 4);
    all_in_range = all_in_range && ids.back() >= 0 && ids.back() < tok.vocab_size();
  }
  std::string text;
  try {
    text = tok.decode(ids);
  } catch (const std::invalid_argument&) {
    check(!all_in_range, "decode rejects only out-of-range ids");
    return;
  }
  check(all_in_range, "decode rejects every out-of-range id");
  check(tok.decode(tok.encode(text)) == text, "decoded text survives encode + decode");
}

}  // namespace

int fuzz_tokenizer(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Tokenizer& tok = fuzz_vocabulary();
  if (data[0] % 2 == 0)
    check_encode(tok, std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  else
    check_decode(tok, data + 1, size - 1);
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_tokenizer)
