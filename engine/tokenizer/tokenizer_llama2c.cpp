// Tokenizer::load_llama2c: llama2.c's tokenizer.bin. Layout (little-endian):
//   int32 max_token_length
//   vocab_size times: float32 score, int32 length, `length` bytes of the piece
// The file carries no count and no token types: the caller says how many
// pieces to read (the model's vocab_size; bytes after them are ignored), and
// the types follow llama2.c's layout: id 0 <unk>, 1 <s>, 2 </s>, <0xXX> bytes.
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "engine/tokenizer/byte_piece.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/text/read_file.h"

namespace astrai {

namespace {

static_assert(std::endian::native == std::endian::little, "tokenizer.bin is read as little-endian");

// Reads fields from the file's bytes, naming the file, the id and the byte
// offset of whatever does not fit.
class Llama2cReader {
 public:
  Llama2cReader(std::string path, std::string bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}

  size_t offset() const { return offset_; }
  size_t size() const { return bytes_.size(); }

  [[noreturn]] void fail(const std::string& where, size_t at, const std::string& problem) const {
    throw std::runtime_error("tokenizer file '" + path_ + "': " + where + " at byte offset " + std::to_string(at) +
                             ": " + problem);
  }

  template <typename T>
  T read(const std::string& where, const char* field) {
    T value;
    take(where, field, sizeof value, &value);
    return value;
  }

  std::string read_bytes(const std::string& where, size_t count) {
    check_available(where, "piece bytes", count);  // before allocating: count comes from the file
    std::string text(count, '\0');
    take(where, "piece bytes", count, text.data());
    return text;
  }

 private:
  void check_available(const std::string& where, const char* field, size_t count) const {
    if (bytes_.size() - offset_ < count)
      fail(where, offset_, std::string("file truncated: ") + field + " needs " + std::to_string(count) +
                               " bytes but only " + std::to_string(bytes_.size() - offset_) + " remain");
  }

  void take(const std::string& where, const char* field, size_t count, void* out) {
    check_available(where, field, count);
    std::memcpy(out, bytes_.data() + offset_, count);
    offset_ += count;
  }

  std::string path_;
  std::string bytes_;
  size_t offset_ = 0;
};

TokenType llama2c_type(int id, const std::string& piece) {
  if (id == 0) return TokenType::Unknown;
  if (id == 1 || id == 2) return TokenType::Control;
  if (parse_byte_piece(piece)) return TokenType::Byte;
  return TokenType::Normal;
}

}  // namespace

Tokenizer Tokenizer::load_llama2c(const std::string& path, int vocab_size) {
  if (vocab_size != 0 && vocab_size < 3)
    throw std::invalid_argument("Tokenizer::load_llama2c('" + path + "'): vocab_size " + std::to_string(vocab_size) +
                                " is too small (ids 0, 1, 2 are <unk>, <s>, </s>)");
  Llama2cReader reader(path, read_whole_file(path, "tokenizer file '" + path + "'"));
  const int32_t max_token_length = reader.read<int32_t>("header", "max_token_length");
  if (max_token_length < 0)
    reader.fail("header", 0, "max_token_length " + std::to_string(max_token_length) + " is negative");

  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<TokenType> types;
  // vocab_size 0: every piece the file holds (the file carries no count).
  for (int id = 0; vocab_size == 0 ? reader.offset() < reader.size() : id < vocab_size; ++id) {
    const std::string where = "id " + std::to_string(id);
    const size_t score_at = reader.offset();
    const float score = reader.read<float>(where, "score");
    if (std::isnan(score)) reader.fail(where, score_at, "score is NaN");
    const size_t length_at = reader.offset();
    const int32_t length = reader.read<int32_t>(where, "piece length");
    if (length < 0 || length > max_token_length)
      reader.fail(where, length_at, "piece length " + std::to_string(length) + " is outside [0, max_token_length " +
                                        std::to_string(max_token_length) + "]");
    pieces.push_back(reader.read_bytes(where, size_t(length)));
    scores.push_back(score);
    types.push_back(llama2c_type(id, pieces.back()));
  }
  if (pieces.size() < 3) reader.fail("end", reader.offset(), "fewer than 3 pieces (<unk>, <s>, </s>)");
  return Tokenizer(std::move(pieces), std::move(scores), std::move(types));
}

}  // namespace astrai
