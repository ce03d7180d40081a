// Fuzz target: a llama2.c tokenizer.bin of any bytes. Tokenizer::load_llama2c
// either rejects it with a clean error or gives a vocabulary that encodes and
// decodes text; a piece length claimed in the file never allocates before it
// was checked against the bytes that remain.
#include <string>

#include "engine/tokenizer/tokenizer.h"
#include "tests/fuzz/expected_errors.h"
#include "tests/fuzz/fuzz_support.h"

namespace astrai::fuzz {

int fuzz_tokenizer_file(const uint8_t* data, size_t size) {
  const std::string& path = input_file().write(data, size);
  expect_clean_errors([&] {
    const Tokenizer all = Tokenizer::load_llama2c(path, 0);  // every piece in the file
    const int n = all.vocab_size();
    check(n >= 3, "a loaded vocabulary has <unk>, <s>, </s>");
    // Reading exactly n pieces gives the same vocabulary; n + 1 is one too many.
    check(Tokenizer::load_llama2c(path, n).pieces() == all.pieces(), "load(n) equals load(all)");
    bool too_many_rejected = false;
    try {
      (void)Tokenizer::load_llama2c(path, n + 1);
    } catch (const std::runtime_error&) {
      too_many_rejected = true;
    }
    check(too_many_rejected, "asking for more pieces than the file holds is an error");
    const auto ids = all.encode("Once upon a time, \xC3\xA9t\xC3\xA9 \xE2\x82\xAC\x01", true);
    for (const int id : ids) check(id >= 0 && id < n, "encode gives ids in range");
    (void)all.decode(ids);
  });
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_tokenizer_file)
