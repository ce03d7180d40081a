// Tokenizer::load_llama2c: a well-formed file loads with the types llama2.c's
// layout implies; missing, truncated and corrupt files throw an exception
// naming the file, the id and the byte offset, and never crash.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "engine/tokenizer/tokenizer.h"
#include "tests/support/shared_data.h"

namespace {

using astrai::Tokenizer;

// Little-endian bytes of an int32 or float32, written by hand rather than by
// the loader's own reading code.
template <typename T>
void append_le(std::string& out, T value) {
  unsigned char bytes[4];
  std::memcpy(bytes, &value, 4);
  out.append(reinterpret_cast<const char*>(bytes), 4);
}

struct Entry {
  float score;
  std::string piece;
};

// <unk>, <s>, </s>, the 256 byte pieces, then " ", "a", "b", " a", "ab".
std::vector<Entry> small_vocab() {
  std::vector<Entry> entries{{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}};
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) entries.push_back({0, std::string{'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'}});
  for (const auto& [piece, score] : std::vector<std::pair<std::string, float>>{
           {" ", -10}, {"a", -10}, {"b", -10}, {" a", -2}, {"ab", -1}})
    entries.push_back({score, piece});
  return entries;
}

std::string llama2c_bytes(int32_t max_token_length, const std::vector<Entry>& entries) {
  std::string out;
  append_le(out, max_token_length);
  for (const auto& e : entries) {
    append_le(out, e.score);
    append_le(out, int32_t(e.piece.size()));
    out += e.piece;
  }
  return out;
}

std::string write_scratch(const std::string& name, const std::string& bytes) {
  const auto path = (astrai::test::scratch_dir() / name).string();
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

// Byte offset of id `id`'s score field in llama2c_bytes(...).
size_t offset_of_id(const std::vector<Entry>& entries, int id) {
  size_t offset = 4;
  for (int i = 0; i < id; ++i) offset += 8 + entries[size_t(i)].piece.size();
  return offset;
}

void set_le(std::string& bytes, size_t offset, int32_t value) { std::memcpy(bytes.data() + offset, &value, 4); }

}  // namespace

TEST_CASE("load_llama2c reads pieces, scores and llama2.c's token types", "[tokenizer][load]") {
  const auto entries = small_vocab();
  const auto path = write_scratch("good.bin", llama2c_bytes(6, entries) + "trailing bytes are ignored");
  const Tokenizer tok = Tokenizer::load_llama2c(path, int(entries.size()));
  REQUIRE(tok.vocab_size() == int(entries.size()));
  for (size_t id = 0; id < entries.size(); ++id) {
    CHECK(tok.piece(int(id)) == entries[id].piece);
    CHECK(tok.score(int(id)) == entries[id].score);
  }
  CHECK(tok.type(0) == astrai::TokenType::Unknown);
  CHECK(tok.type(1) == astrai::TokenType::Control);
  CHECK(tok.type(2) == astrai::TokenType::Control);
  CHECK(tok.type(3 + 0x41) == astrai::TokenType::Byte);
  CHECK(tok.type(259) == astrai::TokenType::Normal);
  // " ", "a", "b" -> "ab" (-1) beats " a" (-2) -> [" ", "ab"]; " ab" is no piece.
  CHECK(tok.encode("ab") == std::vector<int>{1, 259, 263});
  CHECK(tok.decode(tok.encode("ab\n")) == "ab\n");
  // Reading fewer pieces than the file holds is allowed (bos/eos still fit).
  CHECK(Tokenizer::load_llama2c(path, 3).vocab_size() == 3);
}

TEST_CASE("load_llama2c: missing file or bad vocab_size", "[tokenizer][load]") {
  const auto missing = (astrai::test::scratch_dir() / "no-such-tokenizer.bin").string();
  CHECK_THROWS_WITH(Tokenizer::load_llama2c(missing, 32), Catch::Contains(missing) && Catch::Contains("cannot open"));
  const auto path = write_scratch("good2.bin", llama2c_bytes(6, small_vocab()));
  CHECK_THROWS_AS(Tokenizer::load_llama2c(path, 2), std::invalid_argument);
  CHECK_THROWS_AS(Tokenizer::load_llama2c(path, -5), std::invalid_argument);
  CHECK_THROWS_WITH(Tokenizer::load_llama2c(path, int(small_vocab().size()) + 1),
                    Catch::Contains("id 264") && Catch::Contains("truncated"));
}

TEST_CASE("load_llama2c: every truncation throws, naming the file", "[tokenizer][load]") {
  const auto entries = small_vocab();
  const std::string bytes = llama2c_bytes(6, entries);
  // Every cut inside the header and the first pieces, then a spread to the
  // end (each written file costs a few milliseconds on slow disks).
  std::vector<size_t> sizes;
  for (size_t size = 0; size < 64; ++size) sizes.push_back(size);
  for (size_t size = 64; size < bytes.size(); size += 61) sizes.push_back(size);
  for (size_t size = bytes.size() - 16; size < bytes.size(); ++size) sizes.push_back(size);
  for (const size_t size : sizes) {
    const auto path = write_scratch("truncated.bin", bytes.substr(0, size));
    CHECK_THROWS_WITH(Tokenizer::load_llama2c(path, int(entries.size())),
                      Catch::Contains(path) && Catch::Contains("truncated"));
  }
}

TEST_CASE("load_llama2c: corrupt fields name the id and the byte offset", "[tokenizer][load]") {
  const auto entries = small_vocab();
  const int n = int(entries.size());
  const std::string good = llama2c_bytes(6, entries);
  const size_t id5 = offset_of_id(entries, 5);  // score at id5, length at id5 + 4

  struct Corruption {
    const char* name;
    size_t offset;
    int32_t value;
    std::vector<std::string> message_parts;
  };
  float nan = std::nanf("");
  int32_t nan_bits;
  std::memcpy(&nan_bits, &nan, 4);
  const std::vector<Corruption> corruptions{
      {"negative length", id5 + 4, -3, {"id 5", "byte offset " + std::to_string(id5 + 4), "-3"}},
      {"huge length", id5 + 4, 0x7fffffff, {"id 5", "byte offset " + std::to_string(id5 + 4), "2147483647"}},
      {"length over max_token_length", id5 + 4, 7, {"id 5", "max_token_length 6"}},
      {"NaN score", id5, nan_bits, {"id 5", "byte offset " + std::to_string(id5), "NaN"}},
      {"negative max_token_length", 0, -1, {"header", "byte offset 0", "max_token_length -1"}},
  };
  for (const auto& c : corruptions) {
    INFO(c.name);
    std::string bytes = good;
    set_le(bytes, c.offset, c.value);
    const auto path = write_scratch("corrupt.bin", bytes);
    try {
      Tokenizer::load_llama2c(path, n);
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      const std::string message = e.what();
      CHECK_THAT(message, Catch::Contains(path));
      for (const auto& part : c.message_parts) CHECK_THAT(message, Catch::Contains(part));
    }
  }
}

TEST_CASE("load_llama2c: random corruption loads or throws, never crashes", "[tokenizer][load][property]") {
  const auto entries = small_vocab();
  const std::string good = llama2c_bytes(6, entries);
  const auto path = (astrai::test::scratch_dir() / "fuzzed.bin").string();
  rc::prop("flipped bytes and truncation", [&] {
    std::string bytes = good;
    const auto flips = *rc::gen::container<std::vector<std::pair<size_t, uint8_t>>>(
        rc::gen::pair(rc::gen::inRange<size_t>(0, good.size()), rc::gen::arbitrary<uint8_t>()));
    for (const auto& [at, value] : flips) bytes[at] = char(value);
    bytes.resize(*rc::gen::inRange<size_t>(0, bytes.size() + 1));
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    try {
      const Tokenizer tok = Tokenizer::load_llama2c(path, int(entries.size()));
      const auto ids = tok.encode("ab a\xC3\xA9");
      for (const int id : ids) RC_ASSERT(id >= 0 && id < tok.vocab_size());
      (void)tok.decode(ids);
    } catch (const std::runtime_error& e) {
      RC_ASSERT(std::string(e.what()).find(path) != std::string::npos);
    }
  });
}

TEST_CASE("load_llama2c: the shared tokenizers load, every prefix of tok512.bin throws", "[tokenizer][load][shared]") {
  ASTRAI_REQUIRE_SHARED(tok512, "models/stories260K/tok512.bin");
  std::ifstream in(tok512, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() == 6227);
  CHECK(Tokenizer::load_llama2c(tok512.string(), 512).vocab_size() == 512);
  for (size_t size = 0; size < bytes.size(); size += 211) {
    const auto path = write_scratch("tok512-prefix.bin", bytes.substr(0, size));
    CHECK_THROWS_AS(Tokenizer::load_llama2c(path, 512), std::runtime_error);
  }
}

TEST_CASE("load_llama2c with vocab_size 0 reads every piece in the file", "[tokenizer][load][shared]") {
  ASTRAI_REQUIRE_SHARED(tok512, "models/stories260K/tok512.bin");
  ASTRAI_REQUIRE_SHARED(llama2, "models/llama2-tokenizer/tokenizer.bin");
  CHECK(Tokenizer::load_llama2c(tok512.string(), 0).vocab_size() == 512);
  const Tokenizer all = Tokenizer::load_llama2c(llama2.string(), 0);
  CHECK(all.vocab_size() == 32000);
  CHECK(all.pieces() == Tokenizer::load_llama2c(llama2.string(), 32000).pieces());
}
